#!/usr/bin/env bash
# On a machine with a GPU and Nsight Compute: the shared- and global-memory
# counters of the access-pattern kernels in tests/emu/ProfileKernels/
# ncu_microbench.cu (one warp, one access per kernel), which the emulator's
# profile rules are held to (ProfileLaunch.AgreesWithNsightComputeOnAnH200).
#   bash scripts/gpu-ncu-microbench.sh OUT_DIR
# Writes OUT_DIR/ncu.csv (ncu's raw CSV), OUT_DIR/sass.txt (the SASS that ran)
# and OUT_DIR/table.tsv (kernel, shared ld wavefronts, ld conflicts, shared st
# wavefronts, st conflicts, global ld sectors, requests).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-ncu-microbench.sh OUT_DIR}
mkdir -p "$out"
nvcc -arch=sm_90 -o "$out/mb" tests/emu/ProfileKernels/ncu_microbench.cu || exit 1
cuobjdump --dump-sass "$out/mb" > "$out/sass.txt" 2>&1
metrics=l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
metrics+=,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
ncu --clock-control none --csv --metrics "$metrics" "$out/mb" > "$out/ncu.csv" 2> "$out/ncu.err"
echo "ncu: exit $?"
python3 - "$out/ncu.csv" > "$out/table.tsv" <<'PY'
import csv, sys
rows = {}
order = []
lines = [l for l in open(sys.argv[1]) if l.startswith('"')]
for r in csv.DictReader(lines):
    name = r["Kernel Name"].split("(")[0]
    if name not in rows:
        rows[name] = {}
        order.append(name)
    rows[name][r["Metric Name"]] = r["Metric Value"].replace(",", "")
keys = ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
print("kernel\tld_wavefronts\tld_conflicts\tst_wavefronts\tst_conflicts\tsectors\trequests")
for name in order:
    print("\t".join([name] + [rows[name].get(k, "?") for k in keys]))
PY
cat "$out/table.tsv"
