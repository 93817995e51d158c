#!/usr/bin/env bash
# run_dump.sh PTXFORGE INPUTS: `ptxforge run` on the emulator with inputs read
# from raw files (@FILE) and the output written raw (--dump NAME=PATH); the
# bytes written must be the float32 sums, element for element.
set -euo pipefail
ptxforge=$1; inputs=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
python3 - "$work" <<'PY'
import struct, sys
work = sys.argv[1]
open(f"{work}/a.bin", "wb").write(struct.pack("<6f", 0.5, 1.5, -2, 1e6, 3.25, -0.125))
open(f"{work}/b.bin", "wb").write(struct.pack("<6f", 1, 2, 3, 4, 5, 6))
PY
"$ptxforge" run "$inputs/vector_add.ptx" --kernel vadd --grid 2 --block 4 --executor emu \
  --buffer "a=f32:6:@$work/a.bin" --buffer "b=f32:6:@$work/b.bin" --buffer c=f32:6:random:3 --scalar n=u32:6 \
  --dump "c=$work/c.bin" > "$work/out.txt"
grep -q "c (f32\[6\]) written to $work/c.bin" "$work/out.txt" || { cat "$work/out.txt"; exit 1; }
python3 - "$work" <<'PY'
import struct, sys
work = sys.argv[1]
c = struct.unpack("<6f", open(f"{work}/c.bin", "rb").read())
want = [1.5, 3.5, 1.0, 1000004.0, 8.25, 5.875]
if list(c) != want:
    sys.exit(f"c is {c}, expected {want}")
PY
