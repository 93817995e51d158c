#!/usr/bin/env bash
# expect.sh RC PATTERN [--stdin FILE] -- COMMAND...
# Runs COMMAND, checks its exit code is RC and that its combined output
# matches the extended regex PATTERN (every line of PATTERN separated by
# '&&' must match somewhere). Prints the output on failure.
set -u
expected_rc=$1; pattern=$2; shift 2
stdin_file=/dev/null
if [ "${1:-}" = "--stdin" ]; then stdin_file=$2; shift 2; fi
[ "${1:-}" = "--" ] && shift
output=$("$@" < "$stdin_file" 2>&1); rc=$?
fail=0
if [ "$rc" -ne "$expected_rc" ]; then echo "exit code $rc, expected $expected_rc"; fail=1; fi
IFS='&' read -ra parts <<< "${pattern//&&/&}"
for part in "${parts[@]}"; do
  [ -z "$part" ] && continue
  if ! grep -Eq -- "$part" <<< "$output"; then echo "output does not match: $part"; fail=1; fi
done
if [ "$fail" -ne 0 ]; then printf '%s\n' "--- output of: $*" "$output"; exit 1; fi
exit 0
