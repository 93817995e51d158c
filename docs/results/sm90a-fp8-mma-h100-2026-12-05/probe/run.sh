#!/bin/bash
# run.sh PTXFORGE OUTDIR EXECUTOR: each fp8 mma probe's D, as JSON.
pf=$1; out=$2; ex=$3; here=$(dirname "$0")
for p in e4m3_e4m3 e4m3_e5m2 e5m2_e5m2; do
  at=${p%_*}; bt=${p#*_}
  "$pf" run $here/mma_$p.ptx --kernel k --grid 1 --block 32 --executor $ex --format json \
    --buffer a=u32:128:@$here/a_$at.bin --buffer b=u32:64:@$here/b_$bt.bin --buffer c=f32:128:@$here/c.bin \
    --buffer d=f32:128 --dump d > $out/mma_${p}_$ex.json 2> $out/mma_${p}_$ex.err
done
