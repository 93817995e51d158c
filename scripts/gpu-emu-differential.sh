#!/usr/bin/env bash
# gpu-emu-differential.sh OUT [BUILD_DIR]
#
# The emulator beside the GPU, instruction by instruction: every op of
# scripts/emu-differential.py (scalar, f16/bf16, f64, conversions, the warp's
# collectives, atomics, ldmatrix/stmatrix/movmatrix, nvcc's WMMA tiles) runs
# on 4096 threads on both executors, and OUT/differential.txt lists each op
# whose outputs differ (OUT/differential.json has every op and examples).
# Needs python3 with numpy, ptxas and nvcc on PATH. The ops' inputs and raw
# outputs stay in a temporary folder (about 60 MB).
set -euo pipefail
out=$1 build=${2:-build-gpu}
mkdir -p "$out"
source "$(dirname "$0")/gpu-ptxforge.sh"
gpu_ptxforge "$out" "$build"
ops=$(mktemp -d)
trap 'rm -rf "$ops"' EXIT
here=$(dirname "$0")
python3 "$here/emu-differential.py" gen "$ops" 2> "$out/gen.log" | tee -a "$out/gen.log"
for executor in gpu emu; do
  start=$SECONDS
  python3 "$here/emu-differential.py" run "$pf" "$ops" "$executor"
  echo "$executor: $((SECONDS - start)) s" >> "$out/times.txt"
done
python3 "$here/emu-differential.py" compare "$ops" --json "$out/differential.json" | tee "$out/differential.txt"
