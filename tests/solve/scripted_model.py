#!/usr/bin/env python3
"""A scripted "model" for the exec backend: it writes PTX the way a model
that makes the typical mistakes would, then fixes them when shown the
checker's feedback. Deterministic: the answer depends only on the request.

It needs the few-shot strategy (its correct kernel is nvcc's PTX from the
prompt). First attempts, by request seed modulo 5:
  0  a lint error: an undeclared register
  1  no PTX at all: an explanation instead of code
  2  a compile error that passes the lint: .target for a newer GPU
  3  wrong: the output store is dropped
  4  a memory error: the bounds check is dropped (memcheck on the emulator)
Repair prompts get the correct module; optimize prompts get the same module
re-indented with a comment (a duplicate after normalization). Skeleton
requests get the reference with everything but declarations and control
flow removed; a fill request gets the correct module.

Protocol: ExecBackend.h (request JSON on stdin, JSON answer on stdout).
"""
import json
import os
import re
import sys
import time


def reference_ptx(text):
    # The few-shot section: "```ptx\n<module>\n```" after the CUDA block.
    blocks = re.findall(r"```ptx\n(.*?)\n```", text, re.S)
    for block in blocks:
        if ".version" in block and ".entry" in block:
            return block
    return None


def answer(text, finish="stop"):
    json.dump({"text": text, "finish_reason": finish, "model": "scripted-1",
               "usage": {"prompt_tokens": 1000, "completion_tokens": max(1, len(text) // 4)}}, sys.stdout)


def fenced(ptx, chatter="Here is the kernel."):
    return chatter + "\n\n```ptx\n" + ptx.rstrip("\n") + "\n```\n"


def mistake(ptx, kind):
    if kind == 0:
        return ptx.replace("\tret;", "\tadd.s32 \t%r999, %r999, 1;\n\tret;", 1)
    if kind == 2:
        return re.sub(r"\.target sm_\d+a?", ".target sm_100a", ptx, count=1)
    if kind == 3:
        return "\n".join(l for l in ptx.split("\n") if not l.strip().startswith("st.global")) + "\n"
    if kind == 4:
        return "\n".join(l for l in ptx.split("\n") if not re.match(r"\s*@%p\d+ bra", l)) + "\n"
    return ptx


def skeleton(ptx):
    keep = []
    for line in ptx.split("\n"):
        s = line.strip()
        if (not s or s.startswith(".") or s.startswith("//") or s in ("{", "}", ")") or s.endswith(":")
                or " bra" in s or s.startswith("bra") or s.startswith("ret") or s.startswith("setp")
                or s.startswith(".param") or s.startswith(".reg")):
            keep.append(line)
    return "\n".join(keep) + "\n"


def main():
    request = json.load(sys.stdin)
    # SCRIPTED_MODEL_DELAY: seconds to think, so that a test can interrupt a run mid-round.
    time.sleep(float(os.environ.get("SCRIPTED_MODEL_DELAY", "0")))
    user = "\n".join(m["content"] for m in request.get("messages", []) if m["role"] == "user")
    ptx = reference_ptx(user)
    if ptx is None:
        answer("I need an example of the PTX to work from.")
        return
    seed = int(request.get("seed", 0))
    if "# First, only the skeleton" in user:
        answer(fenced(skeleton(ptx), "The skeleton:"))
    elif "# Your previous attempt failed" in user:
        answer(fenced(ptx, "Fixed: the problems the checker found are gone."))
    elif "# Make your correct kernel faster" in user:
        relaid = "// unrolled variant\n" + "\n".join("  " + l.strip() for l in ptx.split("\n")) + "\n"
        answer(fenced(relaid, "<think>try the same code again</think>A faster version:"))
    elif "# Now fill in your skeleton" in user:
        answer(fenced(ptx))
    else:
        kind = seed % 5
        if kind == 1:
            answer("To add two vectors you would launch one thread per element and have each thread add its pair.")
        else:
            answer(fenced(mistake(ptx, kind)))


if __name__ == "__main__":
    main()
