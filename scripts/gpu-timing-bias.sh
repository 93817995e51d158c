#!/usr/bin/env bash
# On a machine with a GPU: does the gate's timing favour one side when both
# sides run the same code? Each task's reference is checked against itself
#   1. in one fresh `check` process per seed (the eval's timed shape), and
#   2. inside an eval's process (the replay eval's record step, whose repairs
#      are nvcc's PTX of the reference: docs/results/eval-h200-*.md),
# once with each side on its own buffers (PTXFORGE_GATE_SWAP=0, the protocol
# before 2026-12-05) and once with the buffers swapped within every round
# (the default). A speedup of a copy of the reference must be 1.00 in both.
#
#   bash scripts/gpu-timing-bias.sh OUT_DIR [BUILD_DIR] [checks|eval|all]
# Tasks and the shape index checked from $TASKS (default
# attention_fwd:1,sgemm:1,conv2d_3x3:0,softmax_rows:0, the large shapes),
# seeds from $SEEDS (default 1 2 3 4). Writes OUT_DIR/bias.tsv (one row per
# check: mode, context, task, seed, speedup, band) and the raw JSON.
# On the device tool's machine, first `source scripts/device-setup.sh`; or set
# $PTXFORGE to a ptxforge built elsewhere to skip the build (scripts/gpu-ptxforge.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-timing-bias.sh OUT_DIR [BUILD_DIR] [checks|eval|all]}
build=${2:-build-gpu}
what=${3:-all}
mkdir -p "$out"
source scripts/gpu-ptxforge.sh
gpu_ptxforge "$out" "$build"
IFS=, read -ra tasks <<< "${TASKS:-attention_fwd:1,sgemm:1,conv2d_3x3:0,softmax_rows:0}"
seeds=(${SEEDS:-1 2 3 4})
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt" 2>&1
row() { # mode context task seed json
  python3 - "$@" >> "$out/bias.tsv" <<'PY'
import json, sys
mode, context, task, seed, path = sys.argv[1:6]
try:
    result = json.load(open(path))
except Exception as error:
    print(f"{mode}\t{context}\t{task}\t{seed}\terror: {error}")
    sys.exit()
for bench in result.get("timing") or []:
    low, high = bench["speedup_band"]
    print(f"{mode}\t{context}\t{task}\t{seed}\t{bench['speedup']:.4f}\t{low:.4f}\t{high:.4f}\t"
          f"{bench['baseline']['median_ms']:.4f}\t{bench['candidate']['median_ms']:.4f}\t{json.dumps(bench['shape'])}")
PY
}
if [ "$what" = checks ] || [ "$what" = all ]; then
  for entry in "${tasks[@]}"; do
    task=${entry%%:*} shape=${entry##*:}
    "$pf" reference "$task" > "$out/ref_$task.ptx"
    for seed in "${seeds[@]}"; do
      for mode in 0 1; do
        PTXFORGE_GATE_SWAP=$mode "$pf" check "$out/ref_$task.ptx" --task "$task" --executor gpu --drawn-shapes 0 \
          --shapes "$shape" --seed "$seed" --format json > "$out/check-$mode-$task-$seed.json" 2> "$out/check-$mode-$task-$seed.err"
        row "swap=$mode" check "$task" "$seed" "$out/check-$mode-$task-$seed.json"
      done
    done
  done
fi
if [ "$what" = eval ] || [ "$what" = all ]; then
  for mode in 0 1; do
    mkdir -p "$out/eval-$mode"
    PTXFORGE_GATE_SWAP=$mode "$pf" eval --model exec:tests/solve/scripted_model.py --suite "${SUITE:-core}" --samples 5 \
      --k 1 --rounds 2 --strategy zero-shot,spec,few-shot --executor gpu --timing-rounds 5 \
      --store "$out/eval-$mode/record.db" --out "$out/eval-$mode/record" > "$out/eval-$mode/record.txt" 2> "$out/eval-$mode/progress.log"
    echo "eval swap=$mode: exit $?" >> "$out/eval.txt"
    python3 - "$out/eval-$mode/record.db" "swap=$mode" >> "$out/bias.tsv" <<'PY'
import json, sqlite3, sys
db, mode = sys.argv[1:3]
con = sqlite3.connect(db)
query = ("select runs.task, results.result from results join candidates on candidates.id = results.candidate_id "
         "join runs on runs.id = candidates.run_id")
for task, text in con.execute(query):
    try:
        result = json.loads(text)
    except Exception:
        continue
    for bench in result.get("timing") or []:
        low, high = bench["speedup_band"]
        print(f"{mode}\teval\t{task}\t-\t{bench['speedup']:.4f}\t{low:.4f}\t{high:.4f}\t"
              f"{bench['baseline']['median_ms']:.4f}\t{bench['candidate']['median_ms']:.4f}\t{json.dumps(bench['shape'])}")
PY
  done
fi
sort "$out/bias.tsv" | head -400 # (the device image has no `column`)
