#!/usr/bin/env bash
# On a machine with a GPU: builds ptxforge (Release) and runs
# bench/serve_bench.py: a warm `ptxforge serve` against cold `ptxforge check`
# on L1 task references, and KernelBench's load_inline loop on vector_add.
#
#   bash scripts/gpu-serve-bench.sh OUT_DIR [BUILD_DIR] [serve_bench.py args...]
# On the device tool's machine, first `source scripts/device-setup.sh`; or set
# $PTXFORGE to a ptxforge built elsewhere to skip the build (scripts/gpu-ptxforge.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-serve-bench.sh OUT_DIR [BUILD_DIR] [bench args]}
build=${2:-build-gpu}
shift 2 || shift $#
mkdir -p "$out"
source scripts/gpu-ptxforge.sh
gpu_ptxforge "$out" "$build"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt" 2>&1
python3 bench/serve_bench.py --ptxforge "$pf" --json "$out/serve_bench.json" "$@" 2>&1 | tee "$out/serve_bench.txt"
