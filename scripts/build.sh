#!/usr/bin/env bash
# Configures and builds ptxforge into ./build (Release with debug info).
#   bash scripts/build.sh            # everything: the CLI, its workers, tests, benchmarks, the Python extension
#   bash scripts/build.sh TARGET...  # only these targets (the README's main job: ptxforge)
# ccache is used when it is installed (scripts/install-deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# The Python package's extension is built (and its tests run) where nanobind is installed.
python=OFF
if python3 -c 'import nanobind' 2> /dev/null; then python=ON; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPTXFORGE_PYTHON=$python "${launcher[@]}" > /dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j"$(nproc)" "${targets[@]}"
