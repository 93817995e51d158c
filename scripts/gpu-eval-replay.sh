#!/usr/bin/env bash
# On a machine with a GPU: the replay eval of docs/results/eval-h200-*.md.
#   1. the scripted model (tests/solve/scripted_model.py) answers live and
#      every answer is recorded (its first attempt is a scripted mistake, its
#      repair nvcc's PTX of the reference: a model that copies nvcc);
#   2. the recorded completions are scored again without the model.
# Both runs' reports, progress lines and the leaderboard land in OUT_DIR.
#
#   bash scripts/gpu-eval-replay.sh OUT_DIR [BUILD_DIR] [STEP]
# STEP: all (default), record (step 1 only) or replay (step 2 only, with
# OUT_DIR/completions.jsonl from an earlier step 1). Extra eval flags from
# $EVAL_ARGS, the suite from $SUITE (default core; task names separated by commas
# for a quick look).
# On the device tool's machine, first `source scripts/device-setup.sh`; or set
# $PTXFORGE to a ptxforge built elsewhere to skip the build (scripts/gpu-ptxforge.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-eval-replay.sh OUT_DIR [BUILD_DIR] [all|record|replay]}
build=${2:-build-gpu}
step=${3:-all}
mkdir -p "$out"
source scripts/gpu-ptxforge.sh
gpu_ptxforge "$out" "$build"
common=(--suite "${SUITE:-core}" --samples 5 --k 1,2 --rounds 2 --strategy zero-shot,spec,few-shot --executor gpu
        --timing-rounds 5 ${EVAL_ARGS:-})
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt" 2>&1
git log -1 --format='%H %cI' > "$out/commit.txt" 2>/dev/null || true
if [ "$step" = all ] || [ "$step" = record ]; then
  start=$(date +%s)
  "$pf" eval --model exec:tests/solve/scripted_model.py "${common[@]}" --record "$out/completions.jsonl" \
    --store "$out/record.db" --out "$out/record" > "$out/record.txt" 2> "$out/record-progress.log"
  echo "record: exit $? in $(( $(date +%s) - start )) s"
fi
if [ "$step" = all ] || [ "$step" = replay ]; then
  start=$(date +%s)
  "$pf" eval --model "replay:$out/completions.jsonl" "${common[@]}" \
    --store "$out/replay.db" --out "$out/replay" > "$out/replay.txt" 2> "$out/replay-progress.log"
  echo "replay: exit $? in $(( $(date +%s) - start )) s"
  "$pf" eval leaderboard --suite "${SUITE:-core}" --store "$out/replay.db" > "$out/leaderboard.md" 2>&1
fi
