#!/usr/bin/env bash
# On a machine with an sm_90 GPU (the device tool's H200): the bf16_gemm task end to end.
#   - the task's NVRTC reference checked against itself (correct, timed: nvcc's build);
#   - the hand-written wgmma + TMA kernel (tests/hopper/bf16_gemm_wgmma.ptx, sm_90a) checked
#     on every shape, timed against the reference at 8192^3 (the task's largest shape) and,
#     through a copy of the task without that shape, at 4096^3;
#   - `ptxforge baseline` for the cuBLAS column (cublasGemmEx bf16 -> f32) at both sizes;
#   - the emulator's wgmma layouts held to the hardware (PTXFORGE_WGMMA_ON_GPU=1 WgmmaTest.*).
# Prints a table of TFLOP/s (2 M N K / median time) and keeps every JSON under OUT_DIR.
#   bash scripts/gpu-wgmma-gemm.sh OUT_DIR [BUILD_DIR]
# On the device tool's machine, first `source scripts/device-setup.sh`.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-wgmma-gemm.sh OUT_DIR [BUILD_DIR]}
build=${2:-build-gpu}
mkdir -p "$out"
out=$(cd "$out" && pwd)
echo "start $(date -u +%FT%TZ)" | tee "$out/run.txt"
start=$(date +%s)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPTXFORGE_BENCH=OFF > "$out/build.log" 2>&1 &&
  cmake --build "$build" --target ptxforge ptxforge_exec_worker ptxforge_compile_worker emu_tests \
    -j"$(nproc)" >> "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s" | tee -a "$out/run.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv,noheader | tee -a "$out/run.txt"
pf="$build/ptxforge"
kernel=tests/hopper/bf16_gemm_wgmma.ptx

# The task without its 8192^3 shape: the gate times the largest checked shape, so this
# copy times 4096^3 (its shape list is otherwise the task's).
tasks4k="$out/tasks-4096"
mkdir -p "$tasks4k/L3"
cp -r tasks/L3/bf16_gemm "$tasks4k/L3/bf16_gemm_4096"
python3 - "$tasks4k/L3/bf16_gemm_4096/task.toml" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
text = text.replace('name = "bf16_gemm"', 'name = "bf16_gemm_4096"', 1)
text = text.replace('  { M = 8192, N = 8192, K = 8192 },\n', '', 1)
text = text.replace('small_shapes = [4, 5, 6]', 'small_shapes = [3, 4, 5]', 1)
open(path, "w").write(text)
PY

run() { # name, then the command (stdout to NAME.out); its exit code and seconds go to run.txt
  local name=$1; shift
  local t0=$(date +%s.%N)
  "$@" > "$out/$name.out" 2> "$out/$name.err"
  local rc=$?
  echo "$name: exit $rc, $(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s" | tee -a "$out/run.txt"
}
"$pf" reference bf16_gemm > "$out/reference.ptx"
run reference-8192 "$pf" check "$out/reference.ptx" --task bf16_gemm --seed 7 --format json
run wgmma-8192 "$pf" check "$kernel" --task bf16_gemm --arch sm_90a --seed 7 --format json
run wgmma-4096 "$pf" check "$kernel" --task bf16_gemm_4096 --tasks-dir "$tasks4k" --arch sm_90a --seed 7 --format json
run baseline-8192 "$pf" baseline bf16_gemm --seed 7 --json "$out/baseline-8192.json"
run baseline-4096 "$pf" baseline bf16_gemm_4096 --tasks-dir "$tasks4k" --seed 7 --json "$out/baseline-4096.json"
PTXFORGE_WGMMA_ON_GPU=1 "$build/tests/emu/emu_tests" --gtest_filter='WgmmaTest.*' > "$out/wgmma-on-gpu.txt" 2>&1
echo "WgmmaTest on the GPU: exit $?, $(grep -E '^\[  (PASSED|FAILED) ' "$out/wgmma-on-gpu.txt" | tr '\n' ' ')" | tee -a "$out/run.txt"

python3 - "$out" > "$out/table.md" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(name):  # a check's --format json output (NAME.out), or baseline's --json file
    path = os.path.join(out, name + (".json" if name.startswith("baseline") else ".out"))
    try:
        return json.load(open(path))
    except Exception as error:
        return {"error": str(error)}
def rate(shape, ms):
    return f"{2.0 * shape['M'] * shape['N'] * shape['K'] / (ms * 1e-3) / 1e12:.0f} TFLOP/s ({ms:.3f} ms)"
print("| shape | wgmma + TMA (PTX) | nvcc reference | cuBLAS | wgmma / nvcc | wgmma / cuBLAS | wgmma verdict |")
print("|---|---|---|---|---|---|---|")
for size in ("4096", "8192"):
    check, base = load(f"wgmma-{size}"), load(f"baseline-{size}")
    row = [f"{size}^3", "-", "-", "-", "-", "-", check.get("verdict", check.get("error", "?"))]
    timing = (check.get("timing") or [None])[0]
    vendor = (base[0] if isinstance(base, list) and base else {}).get("vendor") or {}
    if timing:
        shape, mine, nvcc = timing["shape"], timing["candidate"]["median_ms"], timing["baseline"]["median_ms"]
        row[1], row[2], row[4] = rate(shape, mine), rate(shape, nvcc), f"{nvcc / mine:.2f}x"
        if vendor.get("timing") and vendor.get("shape") == shape:
            cublas = vendor["timing"]["median_ms"]
            row[3], row[5] = rate(shape, cublas), f"{cublas / mine:.2f}x"
    print("| " + " | ".join(row) + " |")
PY
cat "$out/table.md"
echo "end $(date -u +%FT%TZ)" | tee -a "$out/run.txt"
