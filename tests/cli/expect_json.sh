#!/usr/bin/env bash
# expect_json.sh RC PATTERN -- COMMAND...
# Runs COMMAND, checks its exit code is RC, that its stdout is exactly one JSON
# document, and that stdout matches every '&&'-separated extended regex of PATTERN.
set -u
expected_rc=$1; pattern=$2; shift 2
[ "${1:-}" = "--" ] && shift
output=$("$@" < /dev/null 2>/dev/null); rc=$?
fail=0
if [ "$rc" -ne "$expected_rc" ]; then echo "exit code $rc, expected $expected_rc"; fail=1; fi
if ! python3 -c 'import json,sys; json.loads(sys.stdin.read())' <<< "$output"; then echo "stdout is not one JSON document"; fail=1; fi
IFS='&' read -ra parts <<< "${pattern//&&/&}"
for part in "${parts[@]}"; do
  [ -z "$part" ] && continue
  if ! grep -Eq -- "$part" <<< "$output"; then echo "stdout does not match: $part"; fail=1; fi
done
if [ "$fail" -ne 0 ]; then printf '%s\n' "--- stdout of: $*" "$output"; exit 1; fi
exit 0
