#!/usr/bin/env bash
# On a machine with a GPU: builds ptxforge and runs the gate over
#   1. every task's reference against itself (verdict correct, speedup ~1.00),
#   2. the planted broken candidates in tests/gpu/candidates (each with the
#      verdict named in its first line), plus a shared-memory race made by
#      deleting the barriers from sum_reduction's reference,
#   3. the planted families of tests/planted (tests/planted/run.sh: every
#      not-correct file must not be judged correct, every correct one must),
#      through `check --executor auto`: the GPU with the emulator's sanitizers,
# writing one JSON result per check and summary.md (planted.json, planted.txt).
#
#   bash scripts/gpu-check.sh OUT_DIR [BUILD_DIR] [refs|planted|all]
# On the device tool's machine, first `source scripts/device-setup.sh`; or set
# $PTXFORGE to a ptxforge built elsewhere to skip the build (scripts/gpu-ptxforge.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-check.sh OUT_DIR [BUILD_DIR]}
build=${2:-build-gpu}
what=${3:-all}
mkdir -p "$out"
source scripts/gpu-ptxforge.sh
gpu_ptxforge "$out" "$build"

run_check() { # name task file [extra args]
  local name=$1 task=$2 file=$3; shift 3
  local start=$(date +%s%N)
  "$pf" check "$file" --task "$task" --format json "$@" > "$out/$name.json" 2> "$out/$name.err"
  local rc=$?
  echo "$name $task $rc $(( ($(date +%s%N) - start) / 1000000 ))" >> "$out/runs.txt"
}

if [ "$what" = planted ] || [ "$what" = all ]; then
  # Small shapes keep the 63 checks to minutes; timing still runs (on the
  # largest small shape) and its launches are verified as on any shape.
  start=$(date +%s)
  bash tests/planted/run.sh --json "$out/planted.json" "$pf" --shapes small > "$out/planted.txt" 2>&1
  echo "planted: exit $? in $(( $(date +%s) - start )) s" >> "$out/planted.txt"
  tail -3 "$out/planted.txt"
  [ "$what" = planted ] && exit 0
fi

: > "$out/runs.txt"
for dir in tasks/L*/*/; do
  task=$(basename "$dir")
  "$pf" reference "$task" > "$out/ref_$task.ptx" 2> "$out/ref_$task.err"
  run_check "self_$task" "$task" "$out/ref_$task.ptx"
done
# The same candidate twice in one run: the two timings must agree.
run_check "self_saxpy_again" saxpy "$out/ref_saxpy.ptx"

for file in tests/gpu/candidates/*.ptx; do
  name=$(basename "$file" .ptx)
  run_check "planted_$name" saxpy "$file" --timeout-ms 3000
done
"$pf" reference sum_reduction | sed '/bar\.sync/d; /barrier\.sync/d' > "$out/sum_reduction_race.ptx"
run_check planted_sum_reduction_race sum_reduction "$out/sum_reduction_race.ptx"

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
rows = []
for line in open(os.path.join(out, "runs.txt")):
    name, task, rc, millis = line.split()
    seconds = int(millis) / 1000
    try:
        d = json.load(open(os.path.join(out, name + ".json")))
    except Exception as e:
        rows.append(f"| {name} | {task} | (no JSON: exit {rc}) | | | | | {float(seconds):.1f} |")
        continue
    t = d.get("timing") or []
    if t:
        b = t[0]
        timing = f"{b['candidate']['median_ms']:.4f} / {b['baseline']['median_ms']:.4f}"
        speed = f"{b['speedup']:.3f} [{b['speedup_band'][0]:.3f}, {b['speedup_band'][1]:.3f}]"
        rate = " ".join(x for x in [f"{b['gbps']:.0f} GB/s" if b.get('gbps') else "",
                                    f"{b['gflops']:.0f} GFLOP/s" if b.get('gflops') else ""] if x)
    else:
        timing = speed = rate = ""
    summary = (d.get("summary") or d.get("error") or "").replace("|", "/")[:160]
    rows.append(f"| {name} | {task} | {d.get('verdict')} | {d.get('stage')} | {timing} | {speed} | {rate} | {float(seconds):.1f} | {summary} |")
with open(os.path.join(out, "summary.md"), "w") as f:
    f.write("| check | task | verdict | stage | candidate / baseline ms (median) | speedup [noise band] | achieved | wall s | summary |\n")
    f.write("|---|---|---|---|---|---|---|---|---|\n")
    f.write("\n".join(rows) + "\n")
print(open(os.path.join(out, "summary.md")).read())
PY
