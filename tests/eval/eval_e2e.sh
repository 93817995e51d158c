#!/usr/bin/env bash
# End-to-end `ptxforge eval` on the CPU emulator with the scripted model of
# tests/solve (exec, recorded; then replayed; then through the batch backend),
# every metric checked against values computed by hand for that model.
#
# usage: eval_e2e.sh PTXFORGE
set -euo pipefail
ptxforge="$1"
here="$(cd "$(dirname "$0")" && pwd)"
model="exec:$here/../solve/scripted_model.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
common=(--suite vector_add,relu --samples 5 --k 1,2 --strategy zero-shot,few-shot --executor emu -q --store e.db)

# 1. One round, recorded. Each task's five samples make the five mistakes of
#    scripted_model.py (seeds 1..5: no PTX, compile error, wrong, crash, lint).
"$ptxforge" eval --model "$model" "${common[@]}" --rounds 1 --record rec.jsonl --format json > one.json
# 2. The recording replayed: the same document, figure for figure.
"$ptxforge" eval --model "replay:rec.jsonl" "${common[@]}" --rounds 1 --format json > replay.json
# 3. Two rounds: every sample is repaired to nvcc's kernel in round 2 (correct@k
#    after 2 rounds; correct@k itself counts first attempts only).
"$ptxforge" eval --model "$model" "${common[@]}" --rounds 2 --record rec2.jsonl --format json > two.json
# 4. The same through the batch backend: one invocation per round.
# A pending eval exits 5: waiting for batch results is not a finished eval.
set +e
"$ptxforge" eval --model batch:scripted "${common[@]}" --rounds 2 --batch-file b1.jsonl --format json > b1.json
rc=$?
set -e
[ "$rc" = 5 ] || { echo "FAIL: a pending batch eval exits $rc, not 5" >&2; exit 1; }
python3 "$here/../solve/batch_answer.py" b1.jsonl o1.jsonl
"$ptxforge" eval --resume 4 --executor emu -q --store e.db --batch-file b2.jsonl --batch-results o1.jsonl \
  --format json > b2.json || [ $? = 5 ]
python3 "$here/../solve/batch_answer.py" b2.jsonl o2.jsonl
"$ptxforge" eval --resume 4 --executor emu -q --store e.db --batch-file b3.jsonl --batch-results o1.jsonl \
  --batch-results o2.jsonl --format json > batch.json

# 5. Step 3's recording replayed after its round-2 requests changed, as a GPU
#    run's optimize prompts change (they quote the times measured in their run):
#    answered by their place in the run, the same figures as step 3; strictly by
#    request (PTXFORGE_REPLAY_BY_POSITION=0) every sample lacks its round-2 answer.
python3 - <<'EOF'
import json
changed = 0
with open("rec2.jsonl") as src, open("moved.jsonl", "w") as dst:
    for line in src:
        record = json.loads(line)
        if "/round 2/" in record.get("position", ""):
            record["request_hash"] = f"changed-{changed}"
            changed += 1
        dst.write(json.dumps(record) + "\n")
if changed != 10:
    raise SystemExit(f"FAIL: {changed} round-2 requests recorded with a position, not 10")
EOF
moved=(--suite vector_add,relu --samples 5 --k 1,2 --strategy zero-shot,few-shot --executor emu -q --store m.db --rounds 2)
"$ptxforge" eval --model replay:moved.jsonl "${moved[@]}" --format json > moved.json 2> moved.err
grep -q "^replay: 10 request(s) not in the recording were answered with the completion recorded at the same place" \
  moved.err || { cat moved.err; echo "FAIL: no note of the requests answered by position" >&2; exit 1; }
set +e
PTXFORGE_REPLAY_BY_POSITION=0 "$ptxforge" eval --model replay:moved.jsonl "${moved[@]}" --format json > strict.json 2> /dev/null
rc=$?
set -e
[ "$rc" = 4 ] || { echo "FAIL: a replay strictly by request exits $rc, not 4 (no sample scored)" >&2; exit 1; }

python3 - <<'EOF'
import json, math

one = json.load(open("one.json"))
replay = json.load(open("replay.json"))
two = json.load(open("two.json"))
moved = json.load(open("moved.json"))
strict = json.load(open("strict.json"))
b1 = json.load(open("b1.json"))
batch = json.load(open("batch.json"))

def close(a, b):
    return a is not None and abs(a - b) < 1e-9

def check(cond, what):
    if not cond:
        raise SystemExit("FAIL: " + what)

m = one["metrics"]
check(one["status"] == "complete", "eval 1 status")
# What the first attempt's prompt carried (docs/prompts.md): few-shot adds the recipe.
check(one["parameters"]["prompt_parts"] == ["description", "hints", "reference-source", "reference-ptx"],
      "prompt_parts " + str(one["parameters"].get("prompt_parts")))
check(m["ks"] == [1, 2] and m["timed"] is False and m["rounds"] == 1, "ks / timed / rounds")
check([t["task"] for t in m["tasks"]] == ["relu", "vector_add"], "suite order")
for t in m["tasks"]:
    # n = 5; lint passed by the compile error, the wrong and the crashing
    # sample (3); compile passed by the wrong and the crashing one (2).
    check(t["samples"] == 5 and t["no_completion"] == 0 and t["lint_passed"] == 3 and t["compile_passed"] == 2
          and t["correct"] == 0,
          "counts of " + t["task"] + ": " + json.dumps(t)[:300])
    # pass@1 = c/n; pass@2 = 1 - C(n-c,2)/C(n,2): lint 1 - 1/10, compile 1 - 3/10.
    check(close(t["lint_at_k"]["1"], 0.6) and close(t["lint_at_k"]["2"], 0.9), "lint@k of " + t["task"])
    check(close(t["compile_at_k"]["1"], 0.4) and close(t["compile_at_k"]["2"], 0.7), "compile@k of " + t["task"])
    check(t["correct_at_k"]["1"] == 0 and t["correct_at_k"]["2"] == 0, "correct@k of " + t["task"])
    check(t["best_speedup"] is None and t["geomean_speedup"] is None and not t["timed"], "no speed on the emulator")
    check(t["stages"] == {"extract": 1, "lint": 1, "compile": 1, "correctness": 2}, "stages of " + t["task"] + ": " + json.dumps(t["stages"]))
    check(t["diagnostic_codes"].get("undeclared-register") == 1 and t["diagnostic_codes"].get("memcheck") == 1
          and t["diagnostic_codes"].get("compile-arch") == 1, "codes of " + t["task"] + ": " + json.dumps(t["diagnostic_codes"]))
o = m["overall"]
check(o["tasks"] == 2 and o["samples"] == 10, "overall size")
check(close(o["lint_at_k"]["1"], 0.6) and close(o["compile_at_k"]["2"], 0.7) and o["correct_at_k"]["1"] == 0, "overall rates")
check(o["fast_p"]["0"] == 0 and o["fast_p"]["1"] is None and o["fast_p"]["2"] is None, "overall fast_p: " + json.dumps(o["fast_p"]))
check(o["fast_p_low"]["1"] is None and o["fast_p_at_k"]["2"]["0"] == 0 and o["after_rounds"] is None, "overall fast figures")
check(o["no_completion"] == 0, "no sample without a completion")
check(o["stages"] == {"extract": 2, "lint": 2, "compile": 2, "correctness": 4}, "overall stages")
check([g["name"] for g in m["levels"]] == ["L1"], "levels")

# The same figures; only the run ids differ.
strip = lambda metrics: [{k: v for k, v in t.items() if k != "run"} for t in metrics["tasks"]]
same = lambda a, b: strip(a) == strip(b) and a["overall"] == b["overall"] and a["levels"] == b["levels"]
check(same(replay["metrics"], one["metrics"]), "the replay's metrics differ from the recorded eval's")

m = two["metrics"]
check(two["status"] == "complete" and m["rounds"] == 2, "two rounds: status / rounds")
for t in m["tasks"]:
    # correct@k counts first attempts only: round 1's five mistakes, as in eval 1.
    check(t["lint_passed"] == 3 and t["compile_passed"] == 2 and t["correct"] == 0, "two rounds: " + t["task"])
    check(t["correct_at_k"]["1"] == 0 and t["correct_at_k"]["2"] == 0, "two rounds correct@k")
    # Every sample ends correct after its repair: correct@k after 2 rounds.
    a = t["after_rounds"]
    check(a["rounds"] == 2 and a["correct"] == 5, "two rounds after: " + json.dumps(a))
    check(a["correct_at_k"]["1"] == 1 and a["correct_at_k"]["2"] == 1, "two rounds correct@k after 2 rounds")
    # Round 1's five failures plus round 2's five correct, untimed attempts.
    check(t["stages"] == {"extract": 1, "lint": 1, "compile": 1, "correctness": 2, "untimed": 5},
          "two rounds stages: " + json.dumps(t["stages"]))
    # nvcc's own kernel: the same registers (and SASS, when nvdisasm is there).
    check(close(t["register_ratio"], 1.0), "register ratio " + str(t["register_ratio"]))
    check(t["instruction_ratio"] is None or close(t["instruction_ratio"], 1.0), "instruction ratio")
check(m["overall"]["fast_p"]["0"] == 0 and m["overall"]["fast_p"]["1"] is None, "two rounds fast_p")
check(m["overall"]["after_rounds"]["fast_p"]["0"] == 1 and m["overall"]["after_rounds"]["fast_p"]["1"] is None,
      "two rounds fast_p after 2 rounds")
check(m["overall"]["correct_samples"] == 10, "correct samples")

check(b1["status"] == "pending", "batch: first invocation pending, not " + b1["status"])
check(b1["metrics"]["overall"]["correct_at_k"]["1"] is None, "batch: a pending eval has no figures yet")
check(batch["status"] == "complete", "batch: complete after two rounds, not " + batch["status"])
check(same(batch["metrics"], two["metrics"]), "batch metrics differ from the exec eval's")
check(moved["status"] == "complete", "replay by position: " + moved["status"])
check(same(moved["metrics"], two["metrics"]), "replay by position: metrics differ from the recorded eval's")
check(strict["status"] == "infra-error" and strict["metrics"]["overall"]["no_completion"] == 10,
      "replay strictly by request: " + strict["status"])
print("ok: metrics")
EOF

# Reports, comparison and the leaderboard.
# The files land beside the store: eval-N/eval.{json,md,html}.
grep -q "correct@1" e-eval-1/eval.md || { echo "FAIL: e-eval-1/eval.md" >&2; exit 1; }
grep -q "<svg" e-eval-1/eval.html || { echo "FAIL: e-eval-1/eval.html has no chart" >&2; exit 1; }
"$ptxforge" eval compare 1 3 --store e.db > compare.md
grep -q "correct@1" compare.md || { echo "FAIL: compare lacks correct@1" >&2; exit 1; }
"$ptxforge" eval leaderboard --suite vector_add,relu --store e.db > board.md
[ "$(grep -c "scripted" board.md)" -ge 3 ] || { echo "FAIL: leaderboard lists fewer than 3 evals" >&2; cat board.md; exit 1; }
if grep -qi "<script" e-eval-1/eval.html; then echo "FAIL: script in eval.html" >&2; exit 1; fi
echo "ok: eval"
