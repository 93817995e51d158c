#!/usr/bin/env bash
# On a machine with a GPU and Nsight Compute: `check --profile` on the
# references of sgemm, hgemm, transpose_2d and softmax_rows (checked against
# themselves) and on a planted slow candidate (a tiled transpose without the
# padding column: 32-way bank conflicts), one task shape each, and the
# Nsight Compute block of each result (docs/profile.md) in a table.
#   bash scripts/gpu-ncu-profile.sh OUT_DIR [BUILD_DIR]
# On the device tool's machine, first `source scripts/device-setup.sh`; or set
# $PTXFORGE to a ptxforge built elsewhere to skip the build (scripts/gpu-ptxforge.sh).
# Every ncu run's raw CSV is kept (OUT_DIR/ncu-raw.csv) through a wrapper
# named by PTXFORGE_NCU.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-ncu-profile.sh OUT_DIR [BUILD_DIR]}
build=${2:-build-gpu}
mkdir -p "$out"
out=$(cd "$out" && pwd)
start=$(date +%s)
source scripts/gpu-ptxforge.sh
gpu_ptxforge "$out" "$build"
echo "build: $(( $(date +%s) - start )) s"

ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
"$ncu" --version > "$out/ncu-version.txt" 2>&1; cat "$out/ncu-version.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt" 2>&1
cat > "$out/ncu-wrapper.sh" <<WRAP
#!/usr/bin/env bash
set -o pipefail
"$ncu" "\$@" | tee -a "$out/ncu-raw.csv"
WRAP
chmod +x "$out/ncu-wrapper.sh"
export PTXFORGE_NCU="$out/ncu-wrapper.sh"

# task:shape-index:candidate (empty: the task's reference)
runs=${NCU_RUNS:-"sgemm:0: hgemm:0: transpose_2d:0: softmax_rows:0: transpose_2d:0:tests/emu/ProfileKernels/transpose_2d_unpadded.ptx"}
for run in $runs; do
  IFS=: read -r task shape file <<< "$run"
  name=$task
  if [ -z "$file" ]; then
    file="$out/$task.reference.ptx"
    "$pf" reference "$task" > "$file"
  else
    name="$task.$(basename "$file" .ptx)"
  fi
  t0=$(date +%s.%N)
  "$pf" check "$file" --task "$task" --shapes "$shape" --no-sanitizer --seed 7 --profile --format json \
    > "$out/$name.json" 2> "$out/$name.err"
  echo "$name: exit $?, $(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s"
done

python3 - "$out" $runs > "$out/table.md" <<'PY'
import json, os, sys
out, runs = sys.argv[1], sys.argv[2:]
def fmt(v, unit):
    if v is None: return "-"
    if unit == "ns": return f"{v/1e3:.1f} us"
    if unit == "%": return f"{v:.1f}%"
    if unit == "sectors/request": return f"{v:.2f}"
    return f"{v:g}"
for run in runs:
    task, shape, file = run.split(":", 2)
    name = task if not file else f"{task}.{os.path.splitext(os.path.basename(file))[0]}"
    try:
        doc = json.load(open(os.path.join(out, name + ".json")))
    except Exception as e:
        print(f"## {name}\n\nno JSON: {e}\n"); continue
    ncu = (doc.get("profile") or {}).get("ncu")
    bench = (doc.get("timing") or [{}])[-1]
    print(f"## {name} on {ncu.get('shape') if ncu else '?'}: {doc.get('verdict')}, "
          f"{bench.get('speedup', 0):.2f}x the nvcc baseline (median {bench.get('candidate', {}).get('median_ms', 0):.4f} ms)\n")
    if not ncu:
        print("no profile.ncu\n"); continue
    if ncu.get("error"): print(f"error: {ncu['error']}\n")
    print("| metric | candidate | reference |\n|---|---|---|")
    for m in ncu.get("metrics", []):
        print(f"| {m['label']} | {fmt(m['candidate'], m['unit'])} | {fmt(m['reference'], m['unit'])} |")
    stalls = ", ".join(f"{s['reason']} {s['candidate'] or 0:.2f} vs {s['reference'] or 0:.2f}" for s in ncu.get("stalls", []))
    print(f"\nstalls (warps per issued instruction): {stalls}\n\nncu {ncu.get('version')}, {ncu.get('elapsed_ms', 0)/1e3:.1f} s for both runs\n")
PY
cat "$out/table.md"
