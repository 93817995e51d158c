#!/usr/bin/env bash
# On a machine with an sm_90 GPU: does the hardware misbehave where the emulator reports a
# Hopper hazard? tests/hopper/gen_bf16_gemm_wgmma.py writes the hand-written wgmma + TMA
# GEMM and, with --plant NAME, the same kernel with one synchronization step removed or
# moved. Each is checked twice on every shape of bf16_gemm:
#   gpu   --executor gpu --no-sanitizer: the GPU's results alone (does the race show?)
#   gate  --executor auto: the gate as it runs (the GPU plus the emulator's sanitizers;
#         --executor gpu alone skips them)
# with several seeds, writing OUT_DIR/plants.tsv (plant, mode, seed, verdict, stage,
# summary) and the JSON of each check.
#
#   bash scripts/gpu-hopper-plants.sh OUT_DIR [BUILD_DIR]
# Seeds from $SEEDS (default 1 2 3), trials per shape from $TRIALS (default 5), modes
# from $MODES (default gpu gate).
# On the device tool's machine, first `source scripts/device-setup.sh`; or set
# $PTXFORGE to a ptxforge built elsewhere to skip the build (scripts/gpu-ptxforge.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-hopper-plants.sh OUT_DIR [BUILD_DIR]}
build=${2:-build-gpu}
mkdir -p "$out"
source scripts/gpu-ptxforge.sh
gpu_ptxforge "$out" "$build"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt" 2>&1
seeds=(${SEEDS:-1 2 3})
: > "$out/plants.tsv"
for plant in none no-full-wait no-wgmma-wait early-release release-before-wait no-init-fence; do
  file="$out/bf16_gemm_wgmma_$plant.ptx"
  if [ "$plant" = none ]; then
    python3 tests/hopper/gen_bf16_gemm_wgmma.py > "$file"
  else
    python3 tests/hopper/gen_bf16_gemm_wgmma.py --plant "$plant" > "$file"
  fi
  for seed in "${seeds[@]}"; do
    for mode in ${MODES:-gpu gate}; do
      extra=(--executor auto)
      [ "$mode" = gpu ] && extra=(--executor gpu --no-sanitizer)
      json="$out/$plant-$mode-$seed.json"
      start=$(date +%s%N)
      "$pf" check "$file" --task bf16_gemm --arch sm_90a --seed "$seed" --no-bench \
        --trials "${TRIALS:-5}" --format json "${extra[@]}" > "$json" 2> "$out/$plant-$mode-$seed.err"
      millis=$(( ($(date +%s%N) - start) / 1000000 ))
      python3 - "$plant" "$mode" "$seed" "$json" "$millis" >> "$out/plants.tsv" <<'PY'
import json, sys
plant, mode, seed, path, millis = sys.argv[1:6]
try:
    d = json.load(open(path))
except Exception as error:
    print(f"{plant}\t{mode}\t{seed}\t(no JSON: {error})\t\t\t{millis}")
    sys.exit()
summary = (d.get("summary") or d.get("error") or "").replace("\t", " ").replace("\n", " ")[:300]
print(f"{plant}\t{mode}\t{seed}\t{d.get('verdict')}\t{d.get('stage')}\t{summary}\t{millis}")
PY
    done
  done
done
cat "$out/plants.tsv"
