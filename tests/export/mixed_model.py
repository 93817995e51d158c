#!/usr/bin/env python3
"""A model for the exec backend whose answers to one prompt differ: nvcc's
kernel (from the few-shot prompt) for even request seeds, the same kernel
with its output store dropped (wrong) for odd ones. Slots of a round share a
prompt (given one --tendency) and get consecutive seeds, so a round holds
correct and wrong answers to the same messages: what `export --format pairs`
pairs up. The seed is in each answer's chatter, so no two texts are equal.
The helpers are tests/solve/scripted_model.py's.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "solve"))
import scripted_model  # noqa: E402


def main():
    request = json.load(sys.stdin)
    user = "\n".join(m["content"] for m in request.get("messages", []) if m["role"] == "user")
    ptx = scripted_model.reference_ptx(user)
    if ptx is None:
        scripted_model.answer("I need an example of the PTX to work from.")
        return
    seed = int(request.get("seed", 0))
    # The seed in the chatter: no two answers have the same text.
    if seed % 2 == 0:
        scripted_model.answer(scripted_model.fenced(ptx, f"Here is the kernel (take {seed})."))
    else:
        scripted_model.answer(scripted_model.fenced(scripted_model.mistake(ptx, 3), f"A first try (take {seed})."))


if __name__ == "__main__":
    main()
