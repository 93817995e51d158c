#!/usr/bin/env bash
# Installs what ptxforge needs on Debian 12 with the CUDA toolkit under
# /usr/local/cuda: compilers, CMake/Ninja, the Debian -dev libraries, and
# nvdisasm from PyPI (for SASS statistics; optional at run time).
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

packages=(build-essential cmake ninja-build ccache clang python3 python3-pip
          libcli11-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev
          libgtest-dev libgmock-dev libbenchmark-dev
          libcurl4-openssl-dev libcpp-httplib-dev libsqlite3-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -x /usr/local/cuda/bin/ptxas ] || [ ! -f /usr/local/cuda/include/nvJitLink.h ]; then
  echo "install-deps: the CUDA toolkit (ptxas, nvJitLink) is expected under /usr/local/cuda" >&2
  exit 1
fi

# The Python package (python/, built in the main tree with -DPTXFORGE_PYTHON=ON)
# and its tests: nanobind to build it, pytest to run them, ray for ptxforge.ray,
# datasets to load the exports (docs/datasets.md) as a trainer does, llguidance
# to match the PTX grammar (docs/guided.md; a 30 MB wheel with no dependencies).
pip_install() {
  python3 -m pip install -q "$@" || python3 -m pip install -q --break-system-packages "$@"
}
python3 -c 'import nanobind, pytest, ray, datasets, llguidance' 2> /dev/null \
  || pip_install nanobind pytest ray datasets llguidance \
  || echo "install-deps: nanobind/pytest/ray/datasets/llguidance could not be installed; the Python package is not built" >&2

# nvdisasm (SASS statistics). Not in the CUDA toolkit image here; PyPI has it.
if [ -z "$(bash "$(dirname "$0")/find-nvdisasm.sh" 2>/dev/null)" ]; then
  python3 -m pip install -q nvidia-cuda-nvdisasm || python3 -m pip install -q --break-system-packages nvidia-cuda-nvdisasm \
    || echo "install-deps: nvdisasm could not be installed; SASS statistics will be reported as unavailable" >&2
fi
