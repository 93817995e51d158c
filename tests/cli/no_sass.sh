#!/usr/bin/env bash
# no_sass.sh PTXFORGE SCRIPTED_MODEL: `solve` and `eval` on the emulator with a
# fake nvdisasm that counts its calls. With --no-sass it never runs; without
# it, it runs once per distinct cubin (the SASS cache), and a second eval over
# the same answers runs it no more (the cache on disk).
set -euo pipefail
ptxforge=$1; model="exec:$2"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
cat > nvdisasm <<'SH'
#!/bin/sh
echo "$@" >> "$(dirname "$0")/calls"
echo '[{"SM":{"version":{"major":9,"minor":0}},"Producer":"fake"},[{"function-name":"k","sass-instructions":[{"opcode":"EXIT"}]}]]'
SH
chmod +x nvdisasm
export PTXFORGE_NVDISASM="$work/nvdisasm" PTXFORGE_CACHE_DIR="$work/cache"
calls() { [ -f calls ] && wc -l < calls || echo 0; }
fail() { echo "FAIL: $*"; exit 1; }
common=(--executor emu -q --strategy zero-shot,few-shot)

"$ptxforge" solve vector_add --model "$model" "${common[@]}" --rounds 2 -n 3 --no-sass --store s.db --out s1 > /dev/null || true
[ "$(calls)" -eq 0 ] || fail "solve --no-sass ran nvdisasm $(calls) times"
"$ptxforge" eval --model "$model" "${common[@]}" --suite vector_add --samples 3 --rounds 2 --no-sass --store e.db \
  --out e1 > /dev/null
[ "$(calls)" -eq 0 ] || fail "eval --no-sass ran nvdisasm $(calls) times"
python3 -c 'import json,sys; d=json.load(open("e1/eval.json")); sys.exit(0 if d["parameters"]["no_sass"] else "no_sass not recorded")'

"$ptxforge" eval --model "$model" "${common[@]}" --suite vector_add --samples 3 --rounds 2 --store e.db --out e2 > /dev/null
first=$(calls)
[ "$first" -gt 0 ] || fail "eval without --no-sass did not run the fake nvdisasm"
"$ptxforge" eval --model "$model" "${common[@]}" --suite vector_add --samples 3 --rounds 2 --store e.db --out e3 > /dev/null
[ "$(calls)" -eq "$first" ] || fail "a second eval over the same answers ran nvdisasm $(( $(calls) - first )) more times"
echo "ok: nvdisasm ran $first times for the first eval, 0 for the second and with --no-sass"
