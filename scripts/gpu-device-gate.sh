#!/usr/bin/env bash
# On a machine with a GPU: confirms that the gate's device kernels
# (verify/DeviceGate.h: inputs made and outputs compared on the GPU) judge as
# the host path does.
#   1. `ptxforge crosscheck` of every task: the GPU side's inputs are made on
#      the device, the emulator's on the host; identical outputs of the
#      elementwise tasks mean identical inputs.
#   2. Every planted candidate of tests/planted checked twice with one seed,
#      PTXFORGE_DEVICE_GATE=1 and =0: the verdicts and the summaries (which
#      carry the mismatch counts, first index and largest errors) must agree.
#
#   bash scripts/gpu-device-gate.sh OUT_DIR [BUILD_DIR]
# On the device tool's machine, first `source scripts/device-setup.sh`; or set
# $PTXFORGE to a ptxforge built elsewhere to skip the build (scripts/gpu-ptxforge.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-device-gate.sh OUT_DIR [BUILD_DIR]}
build=${2:-build-gpu}
mkdir -p "$out"
source scripts/gpu-ptxforge.sh
gpu_ptxforge "$out" "$build"

if [ -z "${DG_SKIP_CROSSCHECK:-}" ]; then
  "$pf" crosscheck --json "$out/crosscheck.json" > "$out/crosscheck.txt" 2>&1
  echo "crosscheck: exit $?"
  tail -5 "$out/crosscheck.txt"
fi

: > "$out/device_vs_host.tsv"
for file in tests/planted/*/*.ptx; do
  task=$(basename "$(dirname "$file")")
  extra=$(head -5 "$file" | sed -n 's|^// args: ||p')
  name="$task.$(basename "$file" .ptx)"
  for mode in 1 0; do
    PTXFORGE_DEVICE_GATE=$mode "$pf" check "$file" --task "$task" --format json --seed 7 --shapes small $extra \
      > "$out/$name.gate$mode.json" 2> "$out/$name.gate$mode.err"
  done
  python3 - "$out/$name.gate1.json" "$out/$name.gate0.json" "$name" >> "$out/device_vs_host.tsv" <<'PY'
import json, sys
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return {}
a, b, name = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3]
# A correct verdict's summary carries the timing, which differs run to run:
# correct ones must agree on the verdict, the others on the summary too.
va, vb = a.get("verdict"), b.get("verdict")
same = va == vb and (va == "correct" or a.get("summary") == b.get("summary"))
t1, t0 = (a.get("timings_ms") or {}).get("total", 0), (b.get("timings_ms") or {}).get("total", 0)
print(f"{name}\t{va}\t{vb}\t{'same' if same else 'DIFFERENT'}\t{t1:.0f}\t{t0:.0f}")
if not same:
    print(f"  device: {a.get('summary', '')[:400]}\n  host:   {b.get('summary', '')[:400]}")
PY
done
echo "planted, device gate vs host: $(grep -c "	same	" "$out/device_vs_host.tsv") same, $(grep -c "	DIFFERENT	" "$out/device_vs_host.tsv") different"
grep -A2 "	DIFFERENT	" "$out/device_vs_host.tsv" | head -60
