#!/usr/bin/env bash
# `ptxforge eval`'s run status end to end on the CPU emulator (docs/eval.md,
# "Run status"): what each infrastructure failure gives as status, exit code,
# figures and leaderboard entry.
#   1. a dead server: infra-error, exit 4, every figure null
#   2. Ctrl-C mid-eval: interrupted, exit 130; a resume completes it, exit 0
#   3. a recording replayed with more samples than it holds: incomplete, exit 3
#   4. the leaderboard ranks complete evals only; --all lists the others unranked
#
# usage: eval_status_e2e.sh PTXFORGE
set -euo pipefail
ptxforge="$1"
here="$(cd "$(dirname "$0")" && pwd)"
model="exec:$here/../solve/scripted_model.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
common=(--suite vector_add --k 1 --strategy zero-shot,few-shot --executor emu --trials 1 --no-sass -q --store e.db)

fail() { echo "FAIL: $*" >&2; exit 1; }
# Runs a command and sets $rc to its exit code (set -e would stop at a non-zero one).
run() { set +e; "$@"; rc=$?; set -e; }
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

# 1. A port nothing listens on: every request is refused, nothing is scored.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
run "$ptxforge" eval --model openai:test-model --base-url "http://127.0.0.1:$port/v1" --retries 0 \
  -n 2 "${common[@]}" --format json > dead.json
[ "$rc" = 4 ] || fail "dead server: exit $rc, not 4"
[ "$(field dead.json 'd["status"]')" = infra-error ] || fail "dead server: status $(field dead.json 'd["status"]')"
[ "$(field dead.json 'd["metrics"]["overall"]["no_completion"]')" = 2 ] || fail "dead server: no_completion"
[ "$(field dead.json 'd["metrics"]["overall"]["correct_at_k"]["1"]')" = None ] || fail "dead server: correct@1 is not null"
echo "ok: dead server"

# 2. Ctrl-C while the model thinks: exit 130, status interrupted; the resume finishes it.
SCRIPTED_MODEL_DELAY=1 "$ptxforge" eval --model "$model" -n 4 -j 1 "${common[@]}" --format json > interrupted.json &
pid=$!
sleep 2.5
kill -INT "$pid"
set +e
wait "$pid"
rc=$?
set -e
[ "$rc" = 130 ] || fail "Ctrl-C: exit $rc, not 130"
[ "$(field interrupted.json 'd["status"]')" = interrupted ] || fail "Ctrl-C: status $(field interrupted.json 'd["status"]')"
missing=$(field interrupted.json 'd["metrics"]["overall"]["no_completion"]')
[ "$missing" -ge 1 ] || fail "Ctrl-C: no sample without a completion"
run "$ptxforge" eval --resume 2 --executor emu -q --store e.db --format json > resumed.json
[ "$rc" = 0 ] || fail "resume after Ctrl-C: exit $rc"
[ "$(field resumed.json 'd["status"]')" = complete ] || fail "resume: status $(field resumed.json 'd["status"]')"
[ "$(field resumed.json 'd["metrics"]["overall"]["samples"]')" = 4 ] || fail "resume: samples"
echo "ok: Ctrl-C and resume"

# 2b. kill -9 while the model thinks: the resume asks only what was never answered (the
# request in flight at most), never a sample whose answer is stored.
printf '#!/bin/sh\necho call >> "%s/calls.log"\nexec python3 "%s/../solve/scripted_model.py"\n' "$work" "$here" > counting_model.sh
chmod +x counting_model.sh
: > calls.log
SCRIPTED_MODEL_DELAY=1 "$ptxforge" eval --model "exec:$work/counting_model.sh" -n 6 -j 1 "${common[@]}" \
  --format json > killed.json &
pid=$!
sleep 3.5
kill -KILL "$pid"
set +e; wait "$pid"; set -e
before=$(wc -l < calls.log)
[ "$before" -ge 2 ] || fail "kill -9: only $before model calls before the kill"
run "$ptxforge" eval --resume 3 --executor emu -q --store e.db --format json > killed_resumed.json
[ "$rc" = 0 ] || fail "resume after kill -9: exit $rc"
[ "$(field killed_resumed.json 'd["metrics"]["overall"]["samples"]')" = 6 ] || fail "resume after kill -9: samples"
total=$(wc -l < calls.log)
# 6 samples, one request each: at most the one in flight is asked twice.
[ "$total" -le 7 ] || fail "kill -9 and resume: $total model calls for 6 requests ($before before the kill)"
echo "ok: kill -9 and resume ($before calls before the kill, $total in all)"

# 3. Recorded with 2 samples, replayed with 3: the third request misses.
"$ptxforge" eval --model "$model" -n 2 "${common[@]}" --record rec.jsonl --format json > recorded.json
run "$ptxforge" eval --model replay:rec.jsonl -n 3 "${common[@]}" --format json > replayed.json
[ "$rc" = 3 ] || fail "replay miss: exit $rc, not 3"
[ "$(field replayed.json 'd["status"]')" = incomplete ] || fail "replay miss: status"
[ "$(field replayed.json 'd["metrics"]["overall"]["samples"]')" = 2 ] || fail "replay miss: samples scored"
[ "$(field replayed.json 'd["metrics"]["overall"]["no_completion"]')" = 1 ] || fail "replay miss: no_completion"
"$ptxforge" eval show 5 --store e.db | grep -q "1 of 3 samples had no completion (error 1)" || fail "show: no note"
echo "ok: replay miss"

# 4. Evals 2 and 3 (resumed) and 4 are complete; 1 (infra-error) and 5 (incomplete) are not.
"$ptxforge" eval leaderboard --suite vector_add --store e.db > board.md
grep -q "| 1 | #" board.md || fail "leaderboard: nothing ranked"
grep -q "infra-error\|incomplete" board.md && fail "leaderboard lists evals that are not complete"
grep -q "2 evals that are not complete left out" board.md || { cat board.md; fail "leaderboard: no note"; }
"$ptxforge" eval leaderboard --suite vector_add --store e.db --all > all.md
grep -q "| – | #1 | openai:test-model | infra-error |" all.md || { cat all.md; fail "--all: no infra-error row"; }
grep -q "| – | #5 | replay:rec.jsonl | incomplete |" all.md || { cat all.md; fail "--all: no incomplete row"; }
echo "ok: leaderboard"
