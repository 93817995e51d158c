#!/usr/bin/env python3
"""Plays the OpenAI Batch API for tests: reads a batch request file that the
`batch` backend wrote, answers every line with scripted_model.py, and writes a
Batch-API output file (one {"custom_id", "response": {"status_code", "body"}}
line per request).

usage: batch_answer.py BATCH_IN.jsonl RESULTS_OUT.jsonl
"""
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
with open(sys.argv[1]) as requests, open(sys.argv[2], "w") as results:
    for line in requests:
        if not line.strip():
            continue
        item = json.loads(line)
        body = item["body"]
        run = subprocess.run([sys.executable, os.path.join(here, "scripted_model.py")],
                             input=json.dumps(body), capture_output=True, text=True, check=True)
        answer = json.loads(run.stdout)
        completion = {"id": "chatcmpl-" + item["custom_id"][:12], "object": "chat.completion",
                      "model": answer.get("model", "scripted-1"),
                      "choices": [{"index": 0, "message": {"role": "assistant", "content": answer["text"]},
                                   "finish_reason": answer.get("finish_reason", "stop")}],
                      "usage": {"prompt_tokens": answer["usage"]["prompt_tokens"],
                                "completion_tokens": answer["usage"]["completion_tokens"],
                                "total_tokens": answer["usage"]["prompt_tokens"] + answer["usage"]["completion_tokens"]}}
        results.write(json.dumps({"id": "batch_req_" + item["custom_id"][:8], "custom_id": item["custom_id"],
                                  "response": {"status_code": 200, "body": completion}, "error": None}) + "\n")
