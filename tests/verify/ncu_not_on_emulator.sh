#!/usr/bin/env bash
# ncu_not_on_emulator.sh PTXFORGE PTX
# `check --profile --executor emu` gives the emulator's profile and never runs
# Nsight Compute: a stand-in ncu (PTXFORGE_NCU) that would leave a mark is
# not run, and the JSON has no profile.ncu (nor a text block).
set -u
ptxforge=$1; ptx=$2
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
printf '#!/bin/sh\ntouch "%s/ran"\n' "$dir" > "$dir/ncu"
chmod +x "$dir/ncu"
export PTXFORGE_NCU="$dir/ncu"
"$ptxforge" check "$ptx" --task transpose_2d --executor emu --seed 7 --profile --format json > "$dir/out.json" || {
  echo "FAIL: check exited with status $?"; exit 1; }
"$ptxforge" check "$ptx" --task transpose_2d --executor emu --seed 7 --profile > "$dir/out.txt" || {
  echo "FAIL: check (text) exited with status $?"; exit 1; }
[ -e "$dir/ran" ] && { echo "FAIL: ncu was run on the emulator"; exit 1; }
python3 - "$dir/out.json" <<'PY' || exit 1
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["verdict"] == "correct", doc["verdict"]
profile = doc.get("profile")
assert isinstance(profile, dict) and "executor" in profile, "no emulator profile"
assert "ncu" not in profile, "profile.ncu on the emulator"
PY
grep -q "Nsight Compute" "$dir/out.txt" && { echo "FAIL: an Nsight Compute block on the emulator"; exit 1; }
echo "ok: the emulator's profile, and ncu not run"
