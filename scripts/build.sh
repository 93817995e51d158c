#!/usr/bin/env bash
# Configures and builds ptxforge into ./build (Release with debug info).
#   bash scripts/build.sh            # everything: the CLI, its worker, tests, benchmarks
#   bash scripts/build.sh TARGET...  # only these targets (the README's main job: ptxforge)
# ccache is used when it is installed (scripts/install-deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" > /dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j"$(nproc)" "${targets[@]}"
