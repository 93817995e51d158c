#!/usr/bin/env python3
"""Measures --guided-stream and --guided on the scripted model (docs/results/guided-2026-12-01.md).

  python3 tests/guided/stream_measure.py PTXFORGE [--tasks vector_add,relu,saxpy] [--out DIR]

The model is tests/solve/scripted_model.py with SCRIPTED_MODEL_SLIP=mixed:
each first answer is the task's nvcc module with one slip chosen by the
request seed (a hallucinated opcode, an impossible type suffix, an invalid
modifier chain, an undeclared register, or none); repair prompts and
continuations get the correct module. Every run is `ptxforge solve` on the
CPU emulator, 5 slots (one per slip kind), seed 1.

1. tokens and requests per correct kernel, with and without --guided-stream
   (2 rounds: a slip the stream does not cut is repaired in round 2), counting
   each slot's requests up to its first correct kernel (an optimize request
   after it is not on the way to a correct kernel; a slot never correct
   counts all of its requests):
   - exec: the model as an exec program, answers arrive whole (cut after the
     fact: a cut answer's tokens were all generated); tokens as the model
     reports them (prompt bytes / 4, answer bytes / 4).
   - http: the model behind the fake OpenAI-compatible server (stream_server.py),
     answers streamed 4 bytes a token; tokens as the server counts them
     (prompt bytes / 4, tokens it sent before the client closed the stream).
2. lint@1 with and without --guided on the fake server enforcing the grammar
   with llguidance (1 round): the share of first answers that pass the lint.

Prints a Markdown table and writes measure.json to --out.
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "solve", "scripted_model.py")


def solve(ptxforge, task, store, model, extra, env, rounds):
    cmd = [ptxforge, "solve", task, "--strategy", "zero-shot,few-shot", "--executor", "emu", "-q", "--format", "json",
           "-n", "5", "--rounds", str(rounds), "--seed", "1", "--store", store, "--model", model, *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stdout[-2000:]} {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def first_correct_rounds(store, run_id):
    """slot -> the round of its first correct candidate (slots never correct are absent)."""
    db = sqlite3.connect(store)
    first = {}
    for rnd, slot in db.execute("SELECT p.round, p.slot FROM prompts p JOIN candidates k ON k.prompt_id = p.id "
                                "JOIN results r ON r.candidate_id = k.id WHERE p.run_id = ? AND r.verdict = 'correct'",
                                (run_id,)):
        first[slot] = min(rnd, first.get(slot, rnd))
    return first


def needed(first, rnd, slot):
    """Whether a request of (round, slot) was on the way to the slot's first correct kernel."""
    return slot not in first or rnd <= first[slot]


def store_figures(store, run_id):
    """(tokens, completion tokens, requests) up to each slot's first correct kernel, as the model reported them."""
    db = sqlite3.connect(store)
    first = first_correct_rounds(store, run_id)
    tokens = completion = requests = 0
    for rnd, slot, meta in db.execute("SELECT p.round, p.slot, c.meta FROM prompts p JOIN completions c ON c.prompt_id = p.id "
                                      "WHERE p.run_id = ? AND c.status = 'complete'", (run_id,)):
        if not needed(first, rnd, slot):
            continue
        meta = json.loads(meta)
        usage = meta.get("usage", {})
        tokens += usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
        completion += usage.get("completion_tokens", 0)
        requests += meta.get("guided_stream", {}).get("requests", 1)
    return tokens, completion, requests, len(first)


def lint_passes(store, run_id):
    db = sqlite3.connect(store)
    first = [v for (v,) in db.execute("SELECT r.verdict FROM prompts p LEFT JOIN candidates k ON k.prompt_id = p.id "
                                      "LEFT JOIN results r ON r.candidate_id = k.id WHERE p.run_id = ? AND p.round = 1",
                                      (run_id,))]
    return sum(1 for v in first if v not in (None, "lint-error", "no-ptx")), len(first)


def start_server(work, env):
    port_file = os.path.join(work, "port")
    log = os.path.join(work, "server.jsonl")
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "stream_server.py"), "--model", MODEL,
                               "--port-file", port_file, "--log", log], env=env)
    for _ in range(200):
        if os.path.exists(port_file):
            break
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{open(port_file).read()}/v1", log


def server_figures(log, since, first, slots=5, seed=1):
    """(tokens, generated tokens, requests, cuts) up to each slot's first correct kernel, as the server counted them."""
    tokens = generated = requests = cuts = 0
    for e in [json.loads(line) for line in open(log)][since:]:
        rnd, slot = (e["seed"] - seed) // slots + 1, (e["seed"] - seed) % slots
        if not needed(first, rnd, slot):
            continue
        tokens += e["prompt_tokens"] + e["generated_tokens"]
        generated += e["generated_tokens"]
        requests += 1
        cuts += e["cut"]
    return tokens, generated, requests, cuts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ptxforge")
    parser.add_argument("--tasks", default="vector_add,relu,saxpy")
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    tasks = args.tasks.split(",")
    env = dict(os.environ, SCRIPTED_MODEL_SLIP="mixed")
    results = {"tasks": tasks, "rows": []}
    with tempfile.TemporaryDirectory() as work:
        server, base, log = start_server(work, env)
        try:
            for backend in ("exec", "http"):
                for guided in (False, True):
                    totals = {"correct": 0, "tokens": 0, "requests": 0, "generated": 0, "cuts": 0, "slots": 0}
                    for task in tasks:
                        store = os.path.join(work, f"{backend}-{guided}-{task}.db")
                        extra = ["--guided-stream"] if guided else []
                        since = sum(1 for _ in open(log)) if os.path.exists(log) else 0
                        model = f"exec:{MODEL}" if backend == "exec" else "openai:scripted"
                        if backend == "http":
                            extra += ["--base-url", base]
                        out = solve(args.ptxforge, task, store, model, extra, env, rounds=2)
                        totals["slots"] += 5
                        if backend == "exec":
                            tokens, generated, requests, correct = store_figures(store, out["run"])
                        else:
                            first = first_correct_rounds(store, out["run"])
                            correct = len(first)
                            tokens, generated, requests, cuts = server_figures(log, since, first)
                            totals["cuts"] += cuts
                        totals["correct"] += correct
                        totals["tokens"] += tokens
                        totals["generated"] += generated
                        totals["requests"] += requests
                    totals.update(backend=backend, guided_stream=guided)
                    results["rows"].append(totals)
            lint = {}
            for grammar in (False, True):
                passed = total = 0
                for task in tasks:
                    store = os.path.join(work, f"lint-{grammar}-{task}.db")
                    extra = ["--base-url", base] + (["--guided", "--guided-format", "lark"] if grammar else [])
                    out = solve(args.ptxforge, task, store, "openai:scripted", extra, env, rounds=1)
                    ok, attempts = lint_passes(store, out["run"])
                    passed += ok
                    total += attempts
                lint["with" if grammar else "without"] = {"passed": passed, "attempts": total}
            results["lint_at_1"] = lint
        finally:
            server.terminate()
    print("| model | --guided-stream | correct kernels | requests | tokens | completion tokens | "
          "tokens per correct kernel | requests per correct kernel |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in results["rows"]:
        per = row["tokens"] / row["correct"] if row["correct"] else float("nan")
        rper = row["requests"] / row["correct"] if row["correct"] else float("nan")
        print(f"| {row['backend']} | {'yes' if row['guided_stream'] else 'no'} | {row['correct']} / {row['slots']} | "
              f"{row['requests']} | {row['tokens']} | {row['generated']} | {per:.0f} | {rper:.2f} |")
    print()
    print("| grammar (--guided) | first answers passing the lint | lint@1 |")
    print("| --- | ---: | ---: |")
    for key in ("without", "with"):
        entry = results["lint_at_1"][key]
        print(f"| {key} | {entry['passed']} / {entry['attempts']} | {entry['passed'] / entry['attempts']:.2f} |")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "measure.json"), "w") as out:
        json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
