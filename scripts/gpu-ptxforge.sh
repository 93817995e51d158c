# Sourced by the scripts/gpu-*.sh that run a ptxforge on the GPU machine:
#
#   source scripts/gpu-ptxforge.sh
#   gpu_ptxforge OUT_DIR BUILD_DIR [TARGET...]
#
# sets $pf to the absolute path of a ptxforge: $PTXFORGE when it is set (a
# ptxforge built elsewhere, its workers beside it, as .gpu/bin carries them),
# else one built in BUILD_DIR (Release, no tests or benchmarks; TARGETs, by
# default ptxforge and so its workers), the build's log in OUT_DIR/cmake.log.
# A failed build prints the log's tail and exits the calling script.
gpu_ptxforge() {
  local out=$1 build=$2
  shift 2
  if [ -n "${PTXFORGE:-}" ]; then
    pf=$(realpath "$PTXFORGE")
    return 0
  fi
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPTXFORGE_TESTS=OFF -DPTXFORGE_BENCH=OFF \
      > "$out/cmake.log" 2>&1 &&
    cmake --build "$build" --target "${@:-ptxforge}" -j"$(nproc)" >> "$out/cmake.log" 2>&1 || {
    tail -30 "$out/cmake.log"
    exit 1
  }
  pf="$(cd "$build" && pwd)/ptxforge"
}
