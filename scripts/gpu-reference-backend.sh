#!/usr/bin/env bash
# On a machine with a GPU: how much the reference's compiler matters. The gate
# compiles candidates and, by default, the reference with nvJitLink, which
# compiles PTX as relocatable code (like `ptxas -c`); `nvcc -O3` builds a
# whole program, and the register counts differ on half the tasks
# (docs/register-counts.md). `ptxforge baseline` with
# PTXFORGE_REFERENCE_BACKEND=ptxas times each task's reference PTX built by
# nvJitLink (the "candidate") against the same PTX built whole-program by
# ptxas (the "baseline"), interleaved in one run: a speedup below 1 means the
# nvJitLink build is slower than what nvcc would run.
#
#   bash scripts/gpu-reference-backend.sh OUT_DIR [BUILD_DIR] [TASK...]
# On the device tool's machine, first `source scripts/device-setup.sh`; or set
# $PTXFORGE to a ptxforge built elsewhere to skip the build (scripts/gpu-ptxforge.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-reference-backend.sh OUT_DIR [BUILD_DIR] [TASK...]}
build=${2:-build-gpu}
shift 2 || shift $#
mkdir -p "$out"
source scripts/gpu-ptxforge.sh
gpu_ptxforge "$out" "$build"
PTXFORGE_REFERENCE_BACKEND=ptxas "$pf" baseline --json "$out/baseline-ptxas.json" "$@" \
  > "$out/baseline-ptxas.txt" 2>&1
echo "baseline (nvJitLink build vs ptxas whole-program reference): exit $?"
cat "$out/baseline-ptxas.txt"
