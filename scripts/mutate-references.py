#!/usr/bin/env python3
"""Mutation testing of the gate: small edits of each task's reference PTX, checked on the emulator.

Each mutant is the reference (`ptxforge reference TASK`) with one edit: an instruction deleted
(not a branch, return or barrier), a `setp` comparison moved by one (lt<->le, gt<->ge, eq<->ne,
lo<->ls, hi<->hs), or an immediate operand plus one. A mutant the gate judges `correct` is either
equivalent for the task's shapes and launch (dead code, a benign duplicate store, a boundary no
input reaches) or a hole in the gate: read its diff (printed with --show) and decide.

    scripts/mutate-references.py [--ptxforge build/ptxforge] [--tasks a,b] [--per-task 25]
                                 [--seed 1] [--check-seed 9] [--jobs 2] [--out DIR] [--show]

Writes DIR/TASK_N.ptx and DIR/mutants.tsv (task, n, edit, line, verdict, summary); prints the
verdicts per task. Used on 2026-12-05 to find that the emulator's small shapes left a blocked
kernel's second block row unchecked (hgemm) and to measure the wider drawn shape.
"""
import argparse
import concurrent.futures
import difflib
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter

COMPARISONS = {"lt": "le", "le": "lt", "gt": "ge", "ge": "gt", "eq": "ne", "ne": "eq",
               "lo": "ls", "ls": "lo", "hi": "hs", "hs": "hi"}


def edits(lines):
    """Every (kind, line index, argument) edit of the reference's instructions."""
    out = []
    for i, line in enumerate(lines):
        text = line.strip()
        if not line.startswith("\t") or not text.endswith(";") or text.startswith((".", "//", "{", "}")):
            continue
        if not re.search(r"\b(bra|ret|exit|bar|barrier)\b", text):
            out.append(("delete", i, None))
        match = re.search(r"setp\.(\w+)\.", text)
        if match and match.group(1) in COMPARISONS:
            out.append(("compare", i, match.group(1)))
        if re.search(r",\s*-?\d+;", text) and not text.startswith("ld.param"):
            out.append(("immediate", i, None))
    return out


def apply(lines, edit):
    kind, i, argument = edit
    mutated = list(lines)
    if kind == "delete":
        mutated[i] = "\t// deleted: " + lines[i].strip()
    elif kind == "compare":
        mutated[i] = lines[i].replace("setp." + argument + ".", "setp." + COMPARISONS[argument] + ".", 1)
    else:
        mutated[i] = re.sub(r"(,\s*)(-?\d+)(;)", lambda m: m.group(1) + str(int(m.group(2)) + 1) + m.group(3),
                            lines[i], count=1)
    return mutated


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ptxforge", default="build/ptxforge")
    parser.add_argument("--tasks", default="", help="comma-separated; default: every task")
    parser.add_argument("--per-task", type=int, default=25)
    parser.add_argument("--seed", type=int, default=1, help="which edits are drawn")
    parser.add_argument("--check-seed", type=int, default=9)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default="build/mutants")
    parser.add_argument("--show", action="store_true", help="print the diff of every mutant judged correct")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tasks = [t for t in args.tasks.split(",") if t]
    if not tasks:
        listing = subprocess.run([args.ptxforge, "tasks", "--format", "json"], capture_output=True, text=True)
        tasks = [t["name"] for t in json.loads(listing.stdout)]
    rng = random.Random(args.seed)
    jobs = []
    references = {}
    for task in tasks:
        reference = subprocess.run([args.ptxforge, "reference", task], capture_output=True, text=True, check=True).stdout
        lines = reference.split("\n")
        references[task] = lines
        candidates = edits(lines)
        rng.shuffle(candidates)
        for n, edit in enumerate(candidates[:args.per_task]):
            path = os.path.join(args.out, f"{task}_{n}.ptx")
            with open(path, "w") as f:
                f.write("\n".join(apply(lines, edit)))
            jobs.append((task, n, edit, path))

    def check(job):
        task, n, edit, path = job
        try:
            run = subprocess.run([args.ptxforge, "check", path, "--task", task, "--executor", "emu",
                                  "--seed", str(args.check_seed), "--format", "json"],
                                 capture_output=True, text=True, timeout=600)
            result = json.loads(run.stdout)
            return job, result.get("verdict"), (result.get("summary") or "")[:160]
        except Exception as error:  # a crash of the CLI or a time-out is a finding too
            return job, "error", str(error)[:160]

    counts = {task: Counter() for task in tasks}
    with open(os.path.join(args.out, "mutants.tsv"), "w") as tsv, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for (task, n, edit, path), verdict, summary in pool.map(check, jobs):
            counts[task][verdict] += 1
            tsv.write(f"{task}\t{n}\t{edit[0]}\t{edit[1] + 1}\t{verdict}\t{summary}\n")
            if verdict == "correct" and args.show:
                with open(path) as f:
                    mutated = f.read().split("\n")
                diff = [d for d in difflib.unified_diff(references[task], mutated, lineterm="", n=0)][2:]
                print(f"== {task} #{n} ({edit[0]}, line {edit[1] + 1}) judged correct:\n" + "\n".join(diff))
    for task in tasks:
        print(f"{task:20} " + ", ".join(f"{verdict} {count}" for verdict, count in sorted(counts[task].items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
