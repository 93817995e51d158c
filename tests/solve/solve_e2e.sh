#!/usr/bin/env bash
# End-to-end `ptxforge solve` on the CPU emulator with a scripted model that
# first makes the typical mistakes (no PTX, lint error, compile error, wrong
# result, out-of-bounds access) and fixes them after the feedback.
#
# usage: solve_e2e.sh PTXFORGE SCENARIO [TASK]
#   exec      the exec backend, recorded; checks verdicts, dedupe, files, runs/show/report
#   replay    the recording replayed: the same verdicts, no model program
#   budget    a candidate budget stops the run; a resume with a larger one finishes it
#   interrupt SIGINT mid-round; the run is "interrupted" and a resume finishes it
#   skeleton  the skeleton strategy: a skeleton request per slot before its first kernel
#   batch     the batch backend: a round per invocation, answered by a fake Batch API
set -euo pipefail
ptxforge="$1"
scenario="$2"
task="${3:-vector_add}"
here="$(cd "$(dirname "$0")" && pwd)"
model="exec:$here/scripted_model.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
common=(--strategy zero-shot,few-shot --rounds 3 -n 5 --executor emu -q)

fail() { echo "FAIL: $*" >&2; exit 1; }

# "round slot kind verdict" per attempt of run $2 in store $1.
verdicts() {
  "$ptxforge" show "$2" --store "$1" --format json | python3 -c '
import json, sys
for a in json.load(sys.stdin)["attempts"]:
    print(a["round"], a["slot"], a["kind"], a.get("result", {}).get("verdict", "-"))'
}

# What the scripted model's mistakes give on the emulator (seed 1, 5 slots):
# round 1 slot s gets mistake (1 + s) % 5; rounds 2 and 3 are correct.
expected="1 0 initial no-ptx
1 1 initial compile-error
1 2 initial wrong
1 3 initial crashed
1 4 initial lint-error
2 0 repair correct
2 1 repair correct
2 2 repair correct
2 3 repair correct
2 4 repair correct
3 0 optimize correct
3 1 optimize correct
3 2 optimize correct
3 3 optimize correct
3 4 optimize correct"

check_verdicts() { # store run
  got="$(verdicts "$1" "$2")"
  [ "$got" = "$expected" ] || fail "verdicts of run $2 in $1:
$got
expected:
$expected"
}

case "$scenario" in
exec)
  "$ptxforge" solve "$task" --model "$model" "${common[@]}" --record rec.jsonl --store a.db --out out --format json > solve.json
  python3 - solve.json <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
assert d["status"] == "done", d["status"]
assert s["counts"] == {"no-ptx": 1, "compile-error": 1, "wrong": 1, "crashed": 1, "lint-error": 1, "correct": 10}, s["counts"]
assert [r["round"] for r in s["rounds"]] == [1, 2, 3]
assert not s["rounds"][0]["has_correct"] and s["rounds"][1]["has_correct"]
assert s["best"]["verdict"] == "correct" and s["best"]["speedup"] is None  # the emulator does not time
# ... so the best is ranked by the emulator profile's estimate, and says so.
assert s["best"]["ranked_by"] == "estimate" and s["best"]["estimated_speedup"] > 0, s["best"]
assert d["best_estimated_speedup"] == s["best"]["estimated_speedup"], d
assert s["tokens"]["prompt"] == 15 * 1000, s["tokens"]
assert s["reference"]["registers"] > 0
EOF
  check_verdicts a.db 1
  # Nothing is timed on the emulator: the optimize prompts carry the profile's estimate instead.
  "$ptxforge" show 1 --store a.db --full --format json | python3 -c '
import json, sys
prompts = [m["content"] for a in json.load(sys.stdin)["attempts"] if a["kind"] == "optimize"
           for m in a["messages"] if m["role"] == "user"]
assert len(prompts) == 5, len(prompts)
for p in prompts:
    assert "the figures below are the emulator'"'"'s estimate, not a measurement" in p, p
    assert "Current speedup on the largest shape: not measured; estimated" in p, p' || fail "optimize prompts lack the estimate"
  # The five repairs and five optimizations are one kernel: verified once.
  dups="$("$ptxforge" show 1 --store a.db --format json | python3 -c '
import json, sys
print(sum(1 for a in json.load(sys.stdin)["attempts"] if a.get("candidate", {}).get("duplicate_of")))')"
  [ "$dups" = 9 ] || fail "expected 9 duplicates, got $dups"
  [ "$(wc -l < rec.jsonl)" -eq 15 ] || fail "expected 15 recorded completions"
  grep -q "\.entry $task" out/best.ptx || fail "best.ptx lacks the entry"
  grep -q "Stage funnel" out/report.md || fail "report.md lacks the funnel"
  grep -q "prompt_parts.*description.*hints.*reference-source" out/report.md || fail "report.md lacks the prompt parts"
  # The emulator times nothing: no empty speedup chart, one sentence that says why.
  grep -q "Nothing was timed: this run checked its candidates on the CPU emulator" out/report.html ||
    fail "report.html does not say why nothing was timed"
  if grep -q "<svg" out/report.html; then fail "report.html has an empty speedup chart"; fi
  if grep -qi "<script" out/report.html; then fail "report.html has a script"; fi
  grep -q '"status": "done"' out/summary.json || fail "summary.json"
  "$ptxforge" runs --store a.db | grep -q "$task .*done" || fail "runs does not list the run"
  "$ptxforge" report 1 --store a.db --out rep > /dev/null
  cmp -s rep/report.md out/report.md || fail "report differs from the one solve wrote"
  # The repair prompt carried the feedback: the lint code and the memcheck finding.
  grep -q "undeclared-register" rec.jsonl || fail "no lint feedback in any recorded request"
  grep -q "memcheck" rec.jsonl || fail "no memcheck feedback in any recorded request"
  ;;
replay)
  "$ptxforge" solve "$task" --model "$model" "${common[@]}" --record rec.jsonl --store a.db > /dev/null
  "$ptxforge" solve "$task" --model "replay:rec.jsonl" "${common[@]}" --store b.db > /dev/null
  check_verdicts b.db 1
  # Two stores in one folder, no --out: each run's files in a folder of its own.
  [ -f a-run-1/report.md ] && [ -f b-run-1/report.md ] || fail "two stores' default output folders: $(ls)"
  grep -q "replay" b-run-1/report.md || fail "b.db's report is not its own run's"
  # Every request of the replay was found in the recording.
  "$ptxforge" show 1 --store b.db --format json | python3 -c '
import json, sys
bad = [a for a in json.load(sys.stdin)["attempts"] if a["completion"]["status"] != "complete"]
assert not bad, bad'
  ;;
budget)
  set +e
  "$ptxforge" solve "$task" --model "$model" "${common[@]}" -j 1 --max-candidates 7 --store a.db --format json > first.json
  set -e
  python3 -c '
import json, sys
d = json.load(open("first.json"))
assert d["status"] == "budget", d["status"]
assert d["summary"]["candidates"] == 7, d["summary"]["candidates"]
assert "candidate budget of 7" in d["stopped_because"], d["stopped_because"]'
  "$ptxforge" solve "$task" --resume 1 --max-candidates 0 --executor emu -q -j 1 --store a.db --format json > second.json
  python3 -c '
import json
d = json.load(open("second.json"))
assert d["status"] == "done", d["status"]
assert d["summary"]["resumes"][0]["status_before"] == "budget"'
  check_verdicts a.db 1
  ;;
interrupt)
  SCRIPTED_MODEL_DELAY=0.5 "$ptxforge" solve "$task" --model "$model" "${common[@]}" -j 2 --store a.db \
    --format json > first.json &
  pid=$!
  sleep 3
  kill -INT "$pid"
  set +e
  wait "$pid"
  set -e
  python3 -c '
import json
d = json.load(open("first.json"))
assert d["status"] == "interrupted", d["status"]'
  "$ptxforge" solve "$task" --resume 1 --executor emu -q --store a.db --format json > second.json
  python3 -c '
import json
d = json.load(open("second.json"))
assert d["status"] == "done", d["status"]'
  check_verdicts a.db 1
  ;;
skeleton)
  "$ptxforge" solve "$task" --model "$model" --strategy zero-shot,few-shot,skeleton --rounds 2 -n 5 --executor emu -q \
    --store a.db --out out > /dev/null
  "$ptxforge" show 1 --store a.db --format json | python3 -c '
import json, sys
attempts = json.load(sys.stdin)["attempts"]
skeletons = [a for a in attempts if a["kind"] == "skeleton"]
assert len(skeletons) == 5, len(skeletons)
assert all(a["round"] == 1 and "candidate" not in a for a in skeletons)
# The skeleton is filled in: every first kernel is correct.
first = [a for a in attempts if a["round"] == 1 and a["kind"] == "initial"]
assert [a["result"]["verdict"] for a in first] == ["correct"] * 5, first
second = [a for a in attempts if a["round"] == 2]
assert all(a["kind"] == "optimize" for a in second), second'
  # The fill request showed the skeleton with what the lint said of it.
  "$ptxforge" show 1 --store a.db | grep -q "skeleton" || fail "show does not list the skeleton requests"
  ;;
batch)
  args=(--model batch:scripted --strategy zero-shot,few-shot --rounds 3 -n 5 --executor emu -q --store a.db)
  "$ptxforge" solve "$task" "${args[@]}" --batch-file b1.jsonl --format json > r1.json
  grep -q '"status": "pending"' r1.json || fail "round 1 should be pending"
  [ "$(wc -l < b1.jsonl)" -eq 5 ] || fail "expected 5 batch requests"
  python3 "$here/batch_answer.py" b1.jsonl o1.jsonl
  "$ptxforge" solve "$task" --resume 1 --executor emu -q --store a.db --batch-file b2.jsonl --batch-results o1.jsonl \
    --format json > r2.json
  grep -q '"status": "pending"' r2.json || fail "round 2 should be pending"
  python3 "$here/batch_answer.py" b2.jsonl o2.jsonl
  "$ptxforge" solve "$task" --resume 1 --executor emu -q --store a.db --batch-file b3.jsonl \
    --batch-results o1.jsonl --batch-results o2.jsonl --format json > r3.json
  python3 "$here/batch_answer.py" b3.jsonl o3.jsonl
  "$ptxforge" solve "$task" --resume 1 --executor emu -q --store a.db --batch-file b4.jsonl \
    --batch-results o1.jsonl --batch-results o2.jsonl --batch-results o3.jsonl --format json > r4.json
  grep -q '"status": "done"' r4.json || fail "the run should be done after three rounds of batches"
  [ ! -s b4.jsonl ] || fail "nothing should be left to submit"
  check_verdicts a.db 1
  ;;
*)
  fail "unknown scenario $scenario"
  ;;
esac
echo "ok: $scenario"
