#!/usr/bin/env bash
# expect_exact.sh RC GOLDEN [--stdin FILE] -- COMMAND...
# Runs COMMAND, checks its exit code is RC and that its stdout followed by its
# stderr is exactly the text of GOLDEN. With PTXFORGE_UPDATE_GOLDEN=1 it
# writes GOLDEN instead (then review the diff): `PTXFORGE_UPDATE_GOLDEN=1 ctest -R "^cli\." -L golden`.
set -u
expected_rc=$1; golden=$2; shift 2
stdin_file=/dev/null
if [ "${1:-}" = "--stdin" ]; then stdin_file=$2; shift 2; fi
[ "${1:-}" = "--" ] && shift
err=$(mktemp); trap 'rm -f "$err"' EXIT
output=$("$@" < "$stdin_file" 2>"$err"; echo "rc=$?")
rc=${output##*rc=}; output=${output%rc=*}
output="$output$(cat "$err")"
if [ "${PTXFORGE_UPDATE_GOLDEN:-}" = 1 ]; then printf '%s' "$output" > "$golden"; fi
fail=0
if [ "$rc" -ne "$expected_rc" ]; then echo "exit code $rc, expected $expected_rc"; fail=1; fi
if ! diff -u "$golden" <(printf '%s' "$output"); then echo "output differs from $golden"; fail=1; fi
exit $fail
