#!/usr/bin/env bash
# Builds ptxforge (if needed) and runs every test this machine can run.
# Tests that need something absent (nvdisasm) skip and say why; see the
# summary at the end. Labels: unit, golden, corpus, jit, sass, cli.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PTXFORGE_NVDISASM:-}" ]; then
  PTXFORGE_NVDISASM="$(bash scripts/find-nvdisasm.sh || true)"
  [ -n "$PTXFORGE_NVDISASM" ] && export PTXFORGE_NVDISASM
fi
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
