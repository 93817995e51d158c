#!/usr/bin/env bash
# `ptxforge solve` on a GPU with the scripted model of tests/solve (it makes the
# typical mistakes first, then writes nvcc's PTX of the reference): the loop,
# the gate's GPU path, the store and the reports end to end. Writes the store,
# each run's files and the logs under OUT (default ./gpu-solve-out).
#
# usage: scripts/gpu-solve.sh [PTXFORGE] [TASK...]   (default tasks: sgemm softmax_rows)
set -euo pipefail
cd "$(dirname "$0")/.."
ptxforge="${1:-./build/ptxforge}"
shift || true
tasks=("$@")
[ "${#tasks[@]}" -gt 0 ] || tasks=(sgemm softmax_rows)
out="${OUT:-gpu-solve-out}"
mkdir -p "$out"
model="exec:$PWD/tests/solve/scripted_model.py"
for task in "${tasks[@]}"; do
  echo "== solve $task"
  start=$(date +%s)
  set +e
  "$ptxforge" solve "$task" --model "$model" --strategy zero-shot,spec,few-shot --rounds 3 -n 5 --executor gpu \
    --store "$out/runs.db" --out "$out/$task" --record "$out/$task.record.jsonl" --format json \
    > "$out/$task.json" 2> "$out/$task.progress.log"
  rc=$?
  set -e
  echo "exit $rc after $(( $(date +%s) - start )) s"
  tail -n 5 "$out/$task.progress.log"
done
"$ptxforge" runs --store "$out/runs.db" | tee "$out/runs.txt"
