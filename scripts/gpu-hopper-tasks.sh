#!/usr/bin/env bash
# On a machine with a GPU: the Hopper-era tasks of issue 19 that have a CUDA
# reference, fp8_gemm_e4m3 and attention_fwd_bf16:
#   1. `ptxforge check` of each reference against itself on every shape (GPU,
#      with the emulator's sanitizers on the small shapes): verdict correct;
#   2. `ptxforge baseline` of both (nvcc's build of the reference timed; the
#      fp8 GEMM's [vendor] op, cuBLASLt's e4m3 matmul, checked and timed beside it);
#   3. the reference timed on each large shape with `check --shapes I`.
# writing JSON and text results under OUT_DIR (docs/results/hopper-tasks-h200-2026-12-02.md).
#
#   bash scripts/gpu-hopper-tasks.sh OUT_DIR [BUILD_DIR]
# On the device tool's machine, first `source scripts/device-setup.sh`; or set
# $PTXFORGE to a ptxforge built elsewhere to skip the build (scripts/gpu-ptxforge.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-hopper-tasks.sh OUT_DIR [BUILD_DIR]}
build=${2:-build-gpu}
mkdir -p "$out"
start=$(date +%s)
source scripts/gpu-ptxforge.sh
gpu_ptxforge "$out" "$build" ptxforge ptxforge_exec_worker
echo "build: $(( $(date +%s) - start )) s"
tasks=(fp8_gemm_e4m3 attention_fwd_bf16)

for task in "${tasks[@]}"; do
  "$pf" reference "$task" > "$out/$task.ptx" 2> "$out/$task.reference.err"
  "$pf" check "$out/$task.ptx" --task "$task" --format json --seed 1 --no-bench > "$out/$task.check.json" 2> "$out/$task.check.err"
  echo "check $task: exit $? $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("verdict"), "|", d.get("summary", "")[:300])' "$out/$task.check.json" 2>&1)"
done

"$pf" baseline "${tasks[@]}" --seed 1 --json "$out/baseline.json" > "$out/baseline.md" 2> "$out/baseline.err"
echo "baseline: exit $?"
cat "$out/baseline.md"; tail -5 "$out/baseline.err"

# The reference's time on the other large shapes (its own baseline: self speedup ~1).
for pair in fp8_gemm_e4m3:1 fp8_gemm_e4m3:2 attention_fwd_bf16:0 attention_fwd_bf16:1 attention_fwd_bf16:2; do
  task=${pair%%:*} shape=${pair##*:}
  "$pf" check "$out/$task.ptx" --task "$task" --format json --seed 1 --shapes "$shape" --drawn-shapes 0 \
    --no-sanitizer > "$out/$task.shape$shape.json" 2> "$out/$task.shape$shape.err"
  echo "timed $task shape $shape: exit $? $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("verdict"), "|", d.get("summary", "")[:200])' "$out/$task.shape$shape.json" 2>&1)"
done
echo "total: $(( $(date +%s) - start )) s"
