#!/usr/bin/env bash
# with_nvdisasm.sh SCRIPT ARGS...: runs SCRIPT (e.g. expect.sh) with
# PTXFORGE_NVDISASM set to scripts/find-nvdisasm.sh's answer; without an
# nvdisasm, skips (exit 77, the test's SKIP_RETURN_CODE) and says why.
set -u
here=$(cd "$(dirname "$0")" && pwd)
nvdisasm=$(bash "$here/../../scripts/find-nvdisasm.sh")
if [ -z "$nvdisasm" ]; then
  echo "SKIP: no nvdisasm (PATH, the CUDA toolkit or pip's nvidia-cuda-nvdisasm); the SASS loops need it"
  exit 77
fi
export PTXFORGE_NVDISASM="$nvdisasm"
exec "$@"
