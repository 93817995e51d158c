#!/usr/bin/env bash
# The README's tour, run from the repository root after `bash scripts/build.sh ptxforge`:
# each command as the README gives it, its exit status, wall time and the first lines of
# its output (a transcript for docs/results). No GPU and no model server needed: the
# emulator and the scripted model stand in. Stores and outputs go to a fresh folder.
#   bash scripts/readme-tour.sh [LINES]    # LINES of output kept per command (default 25)
set -uo pipefail
cd "$(dirname "$0")/.."
lines=${1:-25}
pf=./build/ptxforge
work=$(mktemp -d /tmp/ptxforge-tour.XXXXXX)
export PTXFORGE_STORE="$work/runs.db"
step() {
  local shown="$1"; shift
  echo "\$ $shown"
  local start=$(date +%s.%N)
  local output; output=$("$@" 2>&1); local rc=$?
  printf '%s\n' "$output" | head -n "$lines"
  local total=$(printf '%s\n' "$output" | wc -l)
  [ "$total" -gt "$lines" ] && echo "... ($((total - lines)) more lines)"
  printf '[exit %d, %.1f s]\n\n' "$rc" "$(echo "$(date +%s.%N) - $start" | bc)"
}
step "ptxforge lint examples/saxpy.ptx" $pf lint examples/saxpy.ptx
step "ptxforge lint examples/broken.ptx" $pf lint examples/broken.ptx
step "ptxforge compile examples/saxpy.ptx" $pf compile examples/saxpy.ptx
step "ptxforge tasks --level 1" $pf tasks --level 1
step "ptxforge task show vector_add" $pf task show vector_add
$pf reference vector_add > "$work/va.ptx" 2> /dev/null
step "ptxforge reference vector_add > va.ptx && ptxforge check va.ptx --task vector_add" $pf check "$work/va.ptx" --task vector_add
step "ptxforge check va.ptx --task vector_add --profile" $pf check "$work/va.ptx" --task vector_add --profile
step "ptxforge solve vector_add --model exec:tests/solve/scripted_model.py --strategy zero-shot,few-shot" \
  $pf solve vector_add --model exec:tests/solve/scripted_model.py --strategy zero-shot,few-shot --out "$work/solve"
step "ptxforge runs" $pf runs
step "ptxforge show 1" $pf show 1
step "ptxforge eval --model exec:tests/solve/scripted_model.py --suite vector_add,saxpy --samples 2 --rounds 2 --strategy zero-shot,few-shot" \
  $pf eval --model exec:tests/solve/scripted_model.py --suite vector_add,saxpy --samples 2 --rounds 2 --strategy zero-shot,few-shot --out "$work/eval"
step "ptxforge eval leaderboard --suite vector_add,saxpy" $pf eval leaderboard --suite vector_add,saxpy
step "ptxforge run tests/cli/inputs/vector_add.ptx --kernel vadd --grid 1 --block 8 --executor emu --buffer a=f32:4:1,2,3,4 --buffer b=f32:4:iota --buffer c=f32:4 --scalar n=u32:4 --dump c" \
  $pf run tests/cli/inputs/vector_add.ptx --kernel vadd --grid 1 --block 8 --executor emu --buffer a=f32:4:1,2,3,4 \
  --buffer b=f32:4:iota --buffer c=f32:4 --scalar n=u32:4 --dump c
port=$((20000 + RANDOM % 20000))
$pf serve --port $port > "$work/serve.log" 2>&1 &
serve=$!
for _ in $(seq 50); do curl -s "localhost:$port/healthz" > /dev/null && break; sleep 0.2; done
step "ptxforge serve --port $port &  # then POST /v1/check with vector_add's reference" bash -c \
  "python3 -c 'import json; print(json.dumps({\"task\": \"vector_add\", \"ptx\": open(\"$work/va.ptx\").read()}))' | curl -s localhost:$port/v1/check -d @- | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[\"verdict\"], d[\"summary\"])'"
kill $serve 2> /dev/null; wait $serve 2> /dev/null
rm -rf "$work"
