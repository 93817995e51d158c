#!/usr/bin/env bash
# `ptxforge eval --shard I/N` and `eval merge` end to end on the CPU emulator
# with the scripted model of tests/solve: the same model and seeds, sharded
# 1/2 + 2/2 into two store files (at different -j) and merged, give the
# unsharded eval's figures sample for sample; so do shards 1/3..3/3 replayed
# from the unsharded eval's recording into one store. Merges that are not one
# eval are refused with exit 2 and a message that says why, and the
# leaderboard ranks the merged eval once, never its shards.
#
# usage: eval_shard_e2e.sh PTXFORGE
set -euo pipefail
ptxforge="$1"
here="$(cd "$(dirname "$0")" && pwd)"
model="exec:$here/../solve/scripted_model.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
common=(--suite vector_add,relu --samples 5 --k 1,2 --strategy zero-shot,few-shot --executor emu --rounds 2)
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. Unsharded, recorded; then the two shards with the scripted model, one per store file.
"$ptxforge" eval --model "$model" "${common[@]}" -q --store whole.db --record rec.jsonl --format json > whole.json
"$ptxforge" eval --model "$model" "${common[@]}" --store s1.db --shard 1/2 -j 2 --price 3,15 --format json \
  > s1.json 2> s1.err
"$ptxforge" eval --model "$model" "${common[@]}" -q --store s2.db --shard 2/2 -j 8 --format json > s2.json
# The progress line (not -q): done/total samples of the shard's share, tokens and the cost.
grep -q '^\[eval\] 5/5 samples (100%), 10/10 attempts .* tokens [0-9]* (in [0-9]*, out [0-9]*)  cost \$' s1.err \
  || { cat s1.err >&2; fail "no final progress line"; }

# 2. Merged from the two store files into a third: the unsharded figures.
"$ptxforge" eval merge --store s1.db s2.db --into merged.db --out merged --format json > merged.json
[ -s merged/eval.md ] || fail "merge wrote no report"

# 3. Three shards replayed from the unsharded recording into one store, merged into it.
for i in 1 2 3; do
  "$ptxforge" eval --model replay:rec.jsonl "${common[@]}" -q --store one.db --shard "$i/3" > /dev/null
done
"$ptxforge" eval merge 1 2 3 --store one.db --format json > one.json

python3 - <<'EOF'
import json

def check(cond, what):
    if not cond:
        raise SystemExit("FAIL: " + what)

def figures(document):
    metrics = document["metrics"]
    tasks = [{k: v for k, v in t.items() if k != "run"} for t in metrics["tasks"]]
    return tasks, metrics["overall"], metrics["levels"]

whole = json.load(open("whole.json"))
s1, s2 = json.load(open("s1.json")), json.load(open("s2.json"))
check(whole["status"] == "complete", "whole eval status " + whole["status"])
check(s1["parameters"]["shard"] == {"index": 1, "count": 2}, "shard 1/2 recorded")
# Ten (task, sample) pairs dealt out in turn: five each.
check(s1["metrics"]["overall"]["samples"] == 5 and s2["metrics"]["overall"]["samples"] == 5, "shard sizes")
for name in ("merged.json", "one.json"):
    merged = json.load(open(name))
    check(merged["status"] == "complete", name + " status " + merged["status"])
    check("shard" not in merged["parameters"], name + ": the merged eval is not a shard")
    check(merged["suite_version"] == whole["suite_version"], name + ": suite version")
    check(figures(merged) == figures(whole), name + ": figures differ from the unsharded eval's")
    # Repairs made every sample correct after 2 rounds; first attempts none.
    overall = merged["metrics"]["overall"]
    check(overall["samples"] == 10 and overall["correct_at_k"]["1"] == 0, name + ": first attempts")
    check(overall["after_rounds"]["correct_at_k"]["1"] == 1, name + ": after 2 rounds")
print("ok: merged figures equal the unsharded eval's")
EOF

# 4. Refusals, exit 2 with a reason.
refused() { # expected-text command...
  local expected="$1"; shift
  set +e; "$@" > out.txt 2> err.txt; local rc=$?; set -e
  [ "$rc" = 2 ] || { cat out.txt err.txt >&2; fail "'$*' exits $rc, not 2"; }
  grep -qF -- "$expected" err.txt || { cat err.txt >&2; fail "'$*' does not say: $expected"; }
}
refused "shard 3/3 missing (given: 1/3, 2/3)" "$ptxforge" eval merge 1 2 --store one.db
refused "these shards were merged before: eval 4" "$ptxforge" eval merge 1 2 3 --store one.db
"$ptxforge" eval --model replay:rec.jsonl "${common[@]}" -q --store one.db --shard 2/3 > /dev/null
refused "shard 2/3 is given twice" "$ptxforge" eval merge 1 2 3 5 --store one.db
refused "model replay:rec.jsonl vs exec:" "$ptxforge" eval merge s1.db:1 one.db:1 --store s1.db --store one.db
refused "is not a shard" "$ptxforge" eval merge s1.db:1 whole.db:1 --store s1.db --store whole.db
refused "name each eval as STORE:ID" "$ptxforge" eval merge 1 2 --store s1.db --store s2.db
# Replayed: at another temperature every request misses the recording, so the
# shard ends infra-error (exit 4), which is finished and may merge, but not with s1.
set +e
"$ptxforge" eval --model replay:rec.jsonl "${common[@]}" -q --store s3.db --shard 2/2 --temperature 0.2 > /dev/null
rc=$?
set -e
[ "$rc" = 4 ] || fail "a shard whose every request missed exits $rc, not 4"
refused "option temperature 0.2 vs 0.7" "$ptxforge" eval merge --store s1.db s3.db --into m3.db

# 5. The leaderboard ranks the merged eval once; the shards only with --all, unranked.
"$ptxforge" eval leaderboard --suite vector_add,relu --store one.db > board.md
[ "$(grep -c '^| [0-9]* | #' board.md)" = 1 ] || { cat board.md >&2; fail "one ranked entry expected"; }
grep -q '^| 1 | #4 ' board.md || { cat board.md >&2; fail "the merged eval (4) is not ranked first"; }
grep -q "4 shards of evals left out" board.md || { cat board.md >&2; fail "shards not counted as left out"; }
"$ptxforge" eval leaderboard --suite vector_add,relu --store one.db --all > all.md
grep -q "complete (shard 1/3)" all.md || { cat all.md >&2; fail "--all does not list the shards"; }
echo "ok: shards"
