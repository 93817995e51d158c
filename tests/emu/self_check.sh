#!/usr/bin/env bash
# self_check.sh PTXFORGE TASK [SED_SCRIPT]
# The emulator end to end on one task of the suite: NVRTC compiles the task's
# reference to PTX, and `ptxforge check --executor emu` runs that PTX against
# the reference on the task's small shapes. Without SED_SCRIPT the verdict
# must be `correct`; with one (a planted bug made by editing the reference,
# e.g. deleting its barriers) the output is printed for the caller to match.
set -uo pipefail
pf=$1 task=$2 edit=${3:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$pf" reference "$task" > "$dir/ref.ptx" || { echo "reference of $task failed"; exit 2; }
if [ -n "$edit" ]; then
  sed "$edit" "$dir/ref.ptx" > "$dir/cand.ptx"
  "$pf" check "$dir/cand.ptx" --task "$task" --executor emu
  exit $?
fi
out=$("$pf" check "$dir/ref.ptx" --task "$task" --executor emu 2>&1); rc=$?
printf '%s\n' "$out"
if [ $rc -ne 0 ] || ! grep -q "correct on" <<< "$out"; then
  echo "FAIL: the reference of $task is not correct against itself in the emulator (exit $rc)"
  exit 1
fi
