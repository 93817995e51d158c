#!/usr/bin/env bash
# expect_no_store.sh DIR CHECKER ARGS...
# Removes DIR, runs CHECKER ARGS... (expect.sh or expect_json.sh), and fails
# unless DIR still does not exist afterwards: a command that only reads the run
# store must create neither the database nor its folder.
set -u
dir=$1; checker=$2; shift 2
rm -rf -- "$dir"
"$checker" "$@"; rc=$?
if [ -e "$dir" ]; then echo "the command created $dir:"; find "$dir"; rc=1; fi
exit $rc
