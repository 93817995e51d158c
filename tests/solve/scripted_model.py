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

SCRIPTED_MODEL_SLIP=KIND makes first attempts the correct module with one
slip instead (for streaming checks and grammars, docs/guided.md):
  opcode    a hallucinated opcode (`ld.global...` written `load.global...`)
  type      an impossible type suffix (`add.f32` written `add.f33`)
  modifier  an invalid modifier chain (`setp.ge` written `setp.gte`)
  register  an undeclared register (which no grammar or prefix check sees)
  mixed     by request seed modulo 5: opcode, type, modifier, register, none
An answer continued after a cut (a final assistant message, or a raw prompt,
that ends in the checker's `// ptxforge: stopped at line ...` comment) goes on
with the correct module from the line that was cut. In this mode usage counts
the prompt as its bytes / 4 (repair prompts, which quote the failed attempt,
cost what they would).

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


PROMPT_TOKENS = 1000  # SCRIPTED_MODEL_SLIP: the request's bytes / 4 (main sets it)


def answer(text, finish="stop"):
    json.dump({"text": text, "finish_reason": finish, "model": "scripted-1",
               "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": max(1, len(text) // 4)}}, sys.stdout)


SLIPS = ["opcode", "type", "modifier", "register", "none"]


def slip(ptx, kind):
    """The module with one mistake of `kind` (see the file comment)."""
    lines = ptx.split("\n")
    def first(pattern, fix):
        for i, line in enumerate(lines):
            if re.match(pattern, line):
                lines[i] = fix(line)
                return "\n".join(lines)
        return ptx
    if kind == "opcode":
        return first(r"\s*ld\.(global|param)\.", lambda l: l.replace("ld.", "load.", 1))
    if kind == "type":
        return first(r"\s*(add|sub|mul|mad|fma|max|min)\.\S*(f32|s32|u32|s64|u64)\s",
                     lambda l: re.sub(r"(f32|s32|u32|s64|u64)(\s)", lambda m: m.group(1)[0] + "33" + m.group(2), l, count=1))
    if kind == "modifier":
        return first(r"\s*setp\.[a-z]+\.", lambda l: re.sub(r"setp\.[a-z]+\.", "setp.gte.", l, count=1))
    if kind == "register":
        return mistake(ptx, 0)
    return ptx


def continued(prefill, ptx):
    """The rest of the correct answer after a cut: the prefill is the kept
    text, then the checker's comment line."""
    kept = prefill.rsplit("\n", 1)[0]
    full = fenced(ptx).split("\n")
    return "\n" + "\n".join(full[len(kept.split("\n")):])


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
    global PROMPT_TOKENS
    messages = request.get("messages", [])
    user = "\n".join(m["content"] for m in messages if m["role"] == "user")
    slip_kind = os.environ.get("SCRIPTED_MODEL_SLIP", "")
    prefill = None
    if "prompt" in request:  # the completions endpoint: the chat as text, then the answer so far
        user = request["prompt"]
        if "\nAssistant:\n" in user:
            prefill = user.rsplit("\nAssistant:\n", 1)[1]
    elif messages and messages[-1]["role"] == "assistant":
        prefill = messages[-1]["content"]
    if slip_kind:
        PROMPT_TOKENS = max(1, (len(request.get("prompt", "")) + sum(len(m["content"]) for m in messages)) // 4)
    ptx = reference_ptx(user)
    if ptx is None:
        answer("I need an example of the PTX to work from.")
        return
    seed = int(request.get("seed", 0))
    if prefill is not None and "// ptxforge: stopped at line" in prefill.rsplit("\n", 1)[-1]:
        answer(continued(prefill, ptx))
    elif "# First, only the skeleton" in user:
        answer(fenced(skeleton(ptx), "The skeleton:"))
    elif "# Your previous attempt failed" in user:
        answer(fenced(ptx, "Fixed: the problems the checker found are gone."))
    elif "# Make your correct kernel faster" in user:
        relaid = "// unrolled variant\n" + "\n".join("  " + l.strip() for l in ptx.split("\n")) + "\n"
        answer(fenced(relaid, "<think>try the same code again</think>A faster version:"))
    elif "# Now fill in your skeleton" in user:
        answer(fenced(ptx))
    elif slip_kind:
        kind = SLIPS[seed % 5] if slip_kind == "mixed" else slip_kind
        answer(fenced(slip(ptx, kind)))
    else:
        kind = seed % 5
        if kind == 1:
            answer("To add two vectors you would launch one thread per element and have each thread add its pair.")
        else:
            answer(fenced(mistake(ptx, kind)))


if __name__ == "__main__":
    main()
