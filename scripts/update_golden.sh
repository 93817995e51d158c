#!/usr/bin/env bash
# Regenerates tests/golden/lint/*.expected from the current build of
# golden_runner. Expected outputs are never edited by hand: change the lint or
# the .ptx input, run this script, and review the diff.
#
#   scripts/update_golden.sh [BUILD_DIR]      (default: build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${PTXFORGE_BUILD_DIR:-$root/build}}"
runner="$build/tests/golden/golden_runner"
if [[ ! -x "$runner" ]]; then
  echo "update_golden.sh: $runner not found; build it first: cmake --build $build --target golden_runner" >&2
  exit 1
fi
status=0
for input in "$root"/tests/golden/lint/*.ptx; do
  expected="${input%.ptx}.expected"
  # --update still verifies the `// expect:` comments and fails when one is lost.
  if ! "$runner" --update "$input" "$expected"; then status=1; fi
done
echo "updated $(ls "$root"/tests/golden/lint/*.expected | wc -l) expected files"
exit $status
