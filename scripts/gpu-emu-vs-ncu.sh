#!/usr/bin/env bash
# On a machine with a GPU and Nsight Compute: every task's reference checked
# against itself with --profile on the largest small shape (no drawn shapes,
# no benchmark), so that the emulator's profile (run beside the GPU with its
# sanitizers) and ncu's counters describe the same launch; then the table.
#   bash scripts/gpu-emu-vs-ncu.sh OUT_DIR [BUILD_DIR]
# On the device tool's machine, first `source scripts/device-setup.sh`; or set
# $PTXFORGE to a ptxforge built elsewhere to skip the build (scripts/gpu-ptxforge.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-emu-vs-ncu.sh OUT_DIR [BUILD_DIR]}
build=${2:-build-gpu}
mkdir -p "$out"
source scripts/gpu-ptxforge.sh
gpu_ptxforge "$out" "$build"
for t in ${TASKS:-vector_add saxpy relu gelu copy_f32x4 f16_scale_bias transpose_2d sum_reduction dot_product softmax_rows layernorm rmsnorm argmax_rows histogram_256 inclusive_scan_i32 sgemm hgemm gemv batched_gemm conv2d_3x3 attention_fwd}; do
  "$pf" reference "$t" > "$out/$t.ptx" 2> /dev/null
  timeout 120 "$pf" check "$out/$t.ptx" --task "$t" --executor auto --profile --shapes small --drawn-shapes 0 --no-bench \
    --seed 7 --format json > "$out/$t.json" 2> "$out/$t.err"
  echo "$t exit $?"
done
python3 scripts/emu-vs-ncu-table.py "$out" | tee "$out/table.md"
