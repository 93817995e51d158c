#!/usr/bin/env bash
# check_json.sh GOLDEN PTXFORGE -- CHECK ARGS...
# Runs `PTXFORGE check ... --format json` and compares the document with
# GOLDEN after taking out what varies from run to run (wall times, the
# compiler's own timing); everything else (verdict, stage, summary,
# diagnostics, resources, every trial and output, the seed) must be exactly
# the same, but for the coordinates of the CTA a hang or race was seen in. With PTXFORGE_UPDATE_GOLDEN=1 it writes GOLDEN instead (then review
# the diff): `PTXFORGE_UPDATE_GOLDEN=1 ctest -R '^verify\.json\.'`.
set -u
golden=$1; ptxforge=$2; shift 2
[ "${1:-}" = "--" ] && shift
out=$(mktemp); trap 'rm -f "$out"' EXIT
"$ptxforge" check "$@" --format json > "$out" 2>/dev/null
normalized=$(python3 - "$out" <<'PY'
import json, re, sys
doc = json.load(open(sys.argv[1]))
doc.pop("timings_ms", None)       # wall times of the stages
doc.pop("file", None)             # the path the test ran from
if isinstance(doc.get("resources"), dict):
    doc["resources"].pop("compile_ms", None)
# Where a hang is stopped (which instruction of the loop, which CTA) and
# which CTA a race is seen in depend on the host's scheduling and speed.
for d in doc.get("diagnostics") or []:
    if d.get("code") == "timeout":
        d["line"] = d["column"] = 0
text = json.dumps(doc, indent=1, sort_keys=True)
text = re.sub(r"(of|that) block \(\d+,\d+,\d+\)", r"\1 block (.)", text)
text = re.sub(r"last at line \d+ \(`[^`]*`\)", "last at line (.)", text)
text = re.sub(r"in thread \(\d+,\d+,\d+\)", "in thread (.)", text)
print(text)
PY
)
if [ "${PTXFORGE_UPDATE_GOLDEN:-}" = 1 ]; then printf '%s\n' "$normalized" > "$golden"; fi
if ! diff -u "$golden" <(printf '%s\n' "$normalized"); then echo "check --format json differs from $golden"; exit 1; fi
