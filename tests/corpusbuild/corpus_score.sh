#!/usr/bin/env bash
# `corpus build --score`: kernels whose name and parameters match a task (the
# vector_add and relu variants of corpus/kernels/task_variants.cu, and the
# vector_add reference) are checked through the gate, here on the emulator;
# an sm_90a row is checked as sm_90a. Every scored row must come out correct.
#   corpus_score.sh PTXFORGE WORK_DIR      (run from the source tree's root)
set -euo pipefail
bin=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
printf '[matrix]\nflags = ["-O3"]\ntargets = ["sm_80", "sm_90a"]\n' > "$work/config.toml"
"$bin" corpus build corpus/kernels/task_variants.cu tasks/L1/vector_add/reference.cu --config "$work/config.toml" \
  --out "$work/out" --score --executor emu --trials 1 > "$work/build.txt" 2> "$work/build.err"
grep -q "scored 6 rows through the gate" "$work/build.txt" || { cat "$work/build.txt" "$work/build.err"; exit 1; }
python3 - "$work/out/data/train-00000-of-00001.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert len(rows) == 6, len(rows)
for row in rows:
    score = row["score"]
    assert row["task"] in ("vector_add", "relu"), row["task"]
    assert score["scored"] and score["task"] == row["task"], score
    assert score["verdict"] == "correct", (row["source_path"], row["target"], score)
    assert "emulator" in score["executor"], score
print("scored: 6 rows correct on the emulator")
PY
