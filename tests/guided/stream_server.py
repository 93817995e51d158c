#!/usr/bin/env python3
"""A fake OpenAI-compatible server on loopback for --guided and --guided-stream
(docs/guided.md): the "model" behind it is tests/solve/scripted_model.py (run
once per request, as the exec backend runs it), its answer sent as a real SSE
stream of 4-byte tokens (or as one JSON body).

- A chat whose last message is the assistant's is continued only when the
  request asks to continue it (vLLM's continue_final_message with
  add_generation_prompt false): otherwise HTTP 400, so a client that forgets
  the fields fails loudly.
- A client that closes the stream (a cut) stops generation: what was sent is
  what was generated; the log records it.
- With a grammar in the request (structured_outputs.grammar, guided_grammar,
  ebnf or grammar; Lark when it holds %llguidance, else GBNF) decoding is
  constrained with llguidance, one token per byte: the answer is the scripted
  model's bare module, line by line; a line the grammar refuses is replaced by
  the model's second choice, the same line of its correct module (as when a
  mask removes the likeliest token and the next is taken); when that is
  refused too, generation stops there.

Every request appends one JSON line to --log: path, seed, prompt_tokens
(request bytes / 4), generated_tokens, cut (the client closed the stream), grammar,
replaced_lines, stopped_by_grammar.

usage: stream_server.py --model SCRIPT --port-file FILE --log FILE
"""
import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN_BYTES = 4
# Seconds per token: a server generates at some speed, and a client's close is
# noticed at the next write; a pause per token keeps that within a token or two.
TOKEN_SECONDS = float(os.environ.get("STREAM_SERVER_TOKEN_SECONDS", "0.0005"))
ARGS = None
LOG_LOCK = threading.Lock()


def log(entry):
    with LOG_LOCK, open(ARGS.log, "a") as out:
        out.write(json.dumps(entry) + "\n")


def scripted(request, slip=None):
    """The scripted model's answer text to an exec-style request."""
    env = dict(os.environ)
    if slip is not None:
        env["SCRIPTED_MODEL_SLIP"] = slip
    done = subprocess.run([sys.executable, ARGS.model], input=json.dumps(request), capture_output=True, text=True,
                          env=env, check=True)
    out = done.stdout.strip()
    return json.loads(out)["text"] if out.startswith("{") else done.stdout


def bare_module(text):
    blocks = re.findall(r"```ptx\n(.*?)\n```", text, re.S)
    return (blocks[-1] + "\n") if blocks else text


_MATCHER = None


def grammar_matcher(grammar):
    import llguidance
    from llguidance.gbnf_to_lark import gbnf_to_lark

    class ByteTokenizer:
        eos_token_id = 256
        bos_token_id = None
        tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
        special_token_ids = [256]

        def __call__(self, text):
            return list(text if isinstance(text, bytes) else text.encode())

    global _MATCHER
    if _MATCHER is None:
        _MATCHER = llguidance.LLTokenizer(llguidance.TokenizerWrapper(ByteTokenizer()), slices=[])
    lark = grammar if "%llguidance" in grammar else gbnf_to_lark(grammar)
    matcher = llguidance.LLMatcher(_MATCHER, llguidance.LLMatcher.grammar_from_lark(lark), log_level=0)
    if matcher.is_error():
        raise ValueError(matcher.get_error())
    return matcher


def constrained(request, grammar, entry):
    """The answer as a grammar-constrained decoder would give it (see the file comment)."""
    first = bare_module(scripted(request)).split("\n")
    second = bare_module(scripted(request, slip="none")).split("\n")
    matcher = grammar_matcher(grammar)
    out = []
    for i, line in enumerate(first):
        piece = (line + "\n") if i + 1 < len(first) else line
        for choice, is_second in ((piece, False), ((second[i] + ("\n" if i + 1 < len(second) else "")) if i < len(second) else None, True)):
            if choice is None:
                continue
            trial = matcher.deep_copy()
            data = choice.encode()
            if trial.try_consume_tokens(list(data)) == len(data):
                matcher = trial
                out.append(choice)
                entry["replaced_lines"] += int(is_second)
                break
        else:
            entry["stopped_by_grammar"] = True
            break
    return "".join(out)


def grammar_of(body):
    for key in ("guided_grammar", "ebnf", "grammar"):
        if isinstance(body.get(key), str):
            return body[key]
    so = body.get("structured_outputs")
    if isinstance(so, dict) and isinstance(so.get("grammar"), str):
        return so["grammar"]
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        chat = self.path.endswith("/chat/completions")
        messages = body.get("messages", [])
        request = {"seed": body.get("seed", 0)}
        if chat:
            request["messages"] = messages
            if messages and messages[-1].get("role") == "assistant" and not (
                    body.get("continue_final_message") and body.get("add_generation_prompt") is False):
                self.reply_json(400, {"error": {"message": "a final assistant message without continue_final_message "
                                                           "and add_generation_prompt false starts a new message"}})
                return
        else:
            request["prompt"] = body.get("prompt", "")
        prompt_bytes = len(body.get("prompt", "")) + sum(len(m.get("content", "")) for m in messages)
        entry = {"path": self.path, "seed": body.get("seed"), "prompt_tokens": max(1, prompt_bytes // TOKEN_BYTES), "generated_tokens": 0,
                 "cut": False, "grammar": False, "replaced_lines": 0, "stopped_by_grammar": False}
        grammar = grammar_of(body)
        try:
            if grammar is not None:
                entry["grammar"] = True
                text = constrained(request, grammar, entry)
            else:
                text = scripted(request)
        except Exception as error:  # the model program or the grammar failed: the client sees a 500
            self.reply_json(500, {"error": {"message": str(error)}})
            return
        tokens = [text[i:i + TOKEN_BYTES] for i in range(0, len(text), TOKEN_BYTES)]
        model = body.get("model", "scripted")
        if not body.get("stream"):
            entry["generated_tokens"] = len(tokens)
            log(entry)
            choice = {"index": 0, "finish_reason": "stop"}
            choice.update({"message": {"role": "assistant", "content": text}} if chat else {"text": text})
            self.reply_json(200, {"model": model, "choices": [choice],
                                  "usage": {"prompt_tokens": entry["prompt_tokens"], "completion_tokens": len(tokens)}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(obj):
            data = ("data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n").encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        try:
            for token in tokens:
                delta = {"delta": {"content": token}} if chat else {"text": token}
                send({"model": model, "choices": [{"index": 0, **delta}]})
                entry["generated_tokens"] += 1
                time.sleep(TOKEN_SECONDS)
            send({"model": model, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            if (body.get("stream_options") or {}).get("include_usage"):
                send({"model": model, "choices": [],
                      "usage": {"prompt_tokens": entry["prompt_tokens"], "completion_tokens": len(tokens)}})
            send("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            entry["cut"] = True
            self.close_connection = True
        log(entry)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log", required=True)
    ARGS = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(ARGS.port_file + ".tmp", "w") as out:
        out.write(str(server.server_address[1]))
    os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
