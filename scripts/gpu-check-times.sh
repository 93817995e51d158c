#!/usr/bin/env bash
# On a machine with a GPU: builds ptxforge (Release) and prints where the time
# of one `ptxforge check` goes (its timings_ms), for a few tasks' references,
# with and without timing and the emulator's sanitizers, cold from the shell.
#
#   bash scripts/gpu-check-times.sh OUT_DIR [BUILD_DIR] [TASK...]
# On the device tool's machine, first `source scripts/device-setup.sh`; or set
# $PTXFORGE to a ptxforge built elsewhere to skip the build (scripts/gpu-ptxforge.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-check-times.sh OUT_DIR [BUILD_DIR] [TASK...]}
build=${2:-build-gpu}
shift 2 || shift $#
tasks=("$@")
[ ${#tasks[@]} -eq 0 ] && tasks=(vector_add softmax_rows sgemm)
mkdir -p "$out"
source scripts/gpu-ptxforge.sh
gpu_ptxforge "$out" "$build"
summary() { # json task label rc wall
  python3 - "$@" <<'PY'
import json, sys
path, task, label, rc, wall = sys.argv[1:]
try:
    d = json.load(open(path))
except Exception:
    print(f"{task:14} {label:34} rc={rc} wall={wall} ms (no JSON)")
    sys.exit()
t = d.get("timings_ms") or {}
stages = " ".join(f"{k}={v:.0f}" for k, v in t.items())
print(f"{task:14} {label:34} {d.get('verdict')} wall={wall} ms  {stages}")
PY
}
run() { # task label env-assignment... -- check args...
  local task=$1 label=$2; shift 2
  local env=()
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  local name="$task.${label//[^a-z0-9]/_}"
  local start=$(date +%s%N)
  env "${env[@]}" "$pf" check "$out/$task.ptx" --task "$task" --format json "$@" > "$out/$name.json" 2> "$out/$name.err"
  local rc=$?
  summary "$out/$name.json" "$task" "$label" "$rc" $(( ($(date +%s%N) - start) / 1000000 ))
}
for task in "${tasks[@]}"; do
  "$pf" reference "$task" > "$out/$task.ptx"
  run "$task" "full" -- 
  run "$task" "full, again" --
  run "$task" "no bench, no sanitizer" -- --no-bench --no-sanitizer
  run "$task" "full, staging not pinned" PTXFORGE_EXEC_NO_PIN=1 --
  run "$task" "full, host inputs+compare" PTXFORGE_DEVICE_GATE=0 --
  run "$task" "full, all on the host" PTXFORGE_DEVICE_GATE=0 PTXFORGE_DEVICE_DIGEST=0 --
  # Where the executor's time goes: every request, summed by operation.
  PTXFORGE_TRACE_EXEC=1 "$pf" check "$out/$task.ptx" --task "$task" --format json > /dev/null 2> "$out/$task.trace"
  python3 - "$out/$task.trace" <<'PY'
import collections, sys
ops = collections.defaultdict(lambda: [0, 0, 0.0])
for line in open(sys.argv[1]):
    if not line.startswith("ptxforge exec-trace:"):
        continue
    _, _, op, nbytes, ms = line.split()
    row = ops[op]
    row[0] += 1; row[1] += int(nbytes); row[2] += float(ms)
for op, (n, b, ms) in sorted(ops.items(), key=lambda kv: -kv[1][2]):
    print(f"    {op:24} {n:6} calls {b / 2**20:10.1f} MiB {ms:9.1f} ms")
PY
done
