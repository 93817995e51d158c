#!/usr/bin/env bash
# `solve --gate URL` and `eval --gate URL` against a `ptxforge serve` on a free
# loopback port (the emulator): the candidates are checked by the service (its
# /metrics counts their verdicts), the run records the service's device, and a
# URL nobody answers is an error before anything is asked.
#   gate_e2e.sh PTXFORGE SOURCE_DIR
set -euo pipefail
ptxforge=$1
source_dir=$2
work=$(mktemp -d)
trap 'kill "$server" 2> /dev/null || true; wait "$server" 2> /dev/null || true; rm -rf "$work"' EXIT
cd "$source_dir"
"$ptxforge" serve --port 0 --executor emu --workers 2 2> "$work/serve.err" &
server=$!
for _ in $(seq 100); do grep -q "listening on" "$work/serve.err" && break; sleep 0.1; done
port=$(grep -o "127.0.0.1:[0-9]*" "$work/serve.err" | cut -d: -f2)
[ -n "$port" ] || { cat "$work/serve.err"; echo "FAIL: serve did not start"; exit 1; }
url="http://127.0.0.1:$port"
verdicts() { curl -s "$url/metrics" | awk -F' ' '/^ptxforge_verdicts_total/ {n += $2} END {print n + 0}'; }

"$ptxforge" solve vector_add --model exec:tests/solve/scripted_model.py --strategy zero-shot,few-shot --rounds 2 -n 2 \
  --store "$work/runs.db" --out "$work/solve" --gate "$url" -q > "$work/solve.txt" 2>&1 \
  || { cat "$work/solve.txt"; echo "FAIL: solve --gate"; exit 1; }
grep -q "best: candidate" "$work/solve.txt" || { cat "$work/solve.txt"; echo "FAIL: no correct kernel through the gate"; exit 1; }
after_solve=$(verdicts)
[ "$after_solve" -ge 2 ] || { echo "FAIL: the service counted $after_solve verdicts after solve"; exit 1; }
"$ptxforge" show 1 --store "$work/runs.db" --format json | grep -q "via $url" \
  || { echo "FAIL: the run does not record the service's device"; exit 1; }

"$ptxforge" eval --model exec:tests/solve/scripted_model.py --suite vector_add,saxpy --samples 2 --rounds 2 \
  --strategy zero-shot,few-shot --store "$work/runs.db" --out "$work/eval" --gate "$url" -q > "$work/eval.txt" 2>&1 \
  || { cat "$work/eval.txt"; echo "FAIL: eval --gate"; exit 1; }
after_eval=$(verdicts)
[ "$after_eval" -gt "$after_solve" ] || { cat "$work/eval.txt"; echo "FAIL: eval's candidates did not reach the service"; exit 1; }

# Nobody there: refused at once, nothing asked.
if "$ptxforge" solve vector_add --model exec:tests/solve/scripted_model.py --store "$work/other.db" \
     --out "$work/other" --gate http://127.0.0.1:1 -q > "$work/lost.txt" 2>&1; then
  echo "FAIL: solve with an unreachable gate succeeded"; exit 1
fi
grep -q "gate-unreachable" "$work/lost.txt" || { cat "$work/lost.txt"; echo "FAIL: no gate-unreachable error"; exit 1; }
echo "ok: solve and eval checked through $url ($after_eval verdicts)"
