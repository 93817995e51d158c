#!/usr/bin/env bash
# run.sh [--json PATH] [--only TASK[,TASK...]] BUILD_DIR|PTXFORGE [extra check args...]
#
# The planted-candidate bench for the verification gate: runs
# `ptxforge check FILE --task TASK --format json [extra args]` on every
# tests/planted/<task>/*.ptx, compares the verdict with the file's first line
# (`// expect: correct` or `// expect: not-correct`), prints a table and writes
# the rows as JSON. Exits 1 when any verdict disagrees with its expectation
# (a false accept, a false reject, or a file the gate could not verify), 2 on
# a usage error.
#
#   --json PATH   where the JSON rows go (env PLANTED_JSON; default: none)
#   --only LIST   only these task folders, comma-separated (env PLANTED_ONLY)
#
# Extra args go to every check, e.g. `--executor emu`. A file may add its own
# on a line `// args: ...` among its first five lines.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
json_out=${PLANTED_JSON:-}
only=${PLANTED_ONLY:-}
while [ $# -gt 0 ]; do
  case $1 in
    --json) json_out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--json PATH] [--only TASKS] BUILD_DIR [extra check args...]" >&2; exit 2; }
build=$1; shift
# BUILD_DIR may also be the ptxforge binary itself (CTest passes $<TARGET_FILE:ptxforge>).
if [ -f "$build" ]; then pf=$build; else pf=$build/ptxforge; [ -x "$pf" ] || pf=$build/tools/ptxforge/ptxforge; fi
[ -x "$pf" ] || { echo "run.sh: no ptxforge binary under $build" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

files=()
for dir in "$here"/*/; do
  task=$(basename "$dir")
  if [ -n "$only" ] && [[ ",$only," != *",$task,"* ]]; then continue; fi
  for f in "$dir"*.ptx; do [ -e "$f" ] && files+=("$f"); done
done
[ ${#files[@]} -gt 0 ] || { echo "run.sh: no planted files selected (--only '$only')" >&2; exit 2; }

i=0
for f in "${files[@]}"; do
  task=$(basename "$(dirname "$f")")
  own=$(head -5 "$f" | sed -n 's|^// args: ||p')
  start=$(date +%s%N)
  # shellcheck disable=SC2086  # $own is a list of words by design
  "$pf" check "$f" --task "$task" --format json "$@" $own > "$work/$i.json" 2> "$work/$i.err"
  echo "$? $(( ($(date +%s%N) - start) / 1000000 ))" > "$work/$i.rc"
  printf '%s\n' "$f" > "$work/$i.file"
  i=$((i + 1))
done

python3 - "$work" "$i" "$here" "$json_out" <<'PY'
import json, os, re, sys
work, count, root, json_out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = []
for i in range(count):
    path = open(f"{work}/{i}.file").read().strip()
    rc, ms = open(f"{work}/{i}.rc").read().split()
    seconds = int(ms) / 1000
    head = open(path).read().splitlines()[:5]
    expect = next((m.group(1) for l in head if (m := re.match(r"//\s*expect:\s*(\S+)", l))), None)
    klass = next((m.group(1) for l in head if (m := re.match(r"//\s*class:\s*(.*)", l))), "")
    verdict, summary = None, ""
    try:
        result = json.load(open(f"{work}/{i}.json"))
        verdict = result.get("verdict")
        summary = result.get("summary") or result.get("error") or ""
    except (json.JSONDecodeError, OSError):
        summary = (open(f"{work}/{i}.err").read().strip().splitlines() or ["no output"])[-1]
    if verdict is None:
        status = "UNVERIFIED"
    elif (verdict == "correct") == (expect == "correct"):
        status = "ok"
    else:
        status = "FALSE-ACCEPT" if verdict == "correct" else "FALSE-REJECT"
    if expect not in ("correct", "not-correct"):
        status = "BAD-EXPECT"
    rows.append({"file": os.path.relpath(path, root), "task": os.path.basename(os.path.dirname(path)),
                 "class": int(klass.split()[0]) if klass[:1].isdigit() else None, "expected": expect,
                 "verdict": verdict, "status": status, "exit": int(rc), "seconds": round(float(seconds), 2),
                 "summary": summary})

width = max(len(r["file"]) for r in rows)
print(f"{'file':<{width}}  {'task':<18} {'expected':<11} {'verdict':<13} {'status':<12} summary")
for r in rows:
    s = r["summary"] if len(r["summary"]) <= 110 else r["summary"][:107] + "..."
    print(f"{r['file']:<{width}}  {r['task']:<18} {r['expected'] or '?':<11} {r['verdict'] or '-':<13} "
          f"{r['status']:<12} {s}")
bad = [r for r in rows if r["status"] != "ok"]
total = sum(r["seconds"] for r in rows)
print(f"\n{len(rows)} files, {len(rows) - len(bad)} as expected, {len(bad)} not "
      f"({sum(r['status'] == 'FALSE-ACCEPT' for r in bad)} false accepts, "
      f"{sum(r['status'] == 'FALSE-REJECT' for r in bad)} false rejects, "
      f"{sum(r['status'] in ('UNVERIFIED', 'BAD-EXPECT') for r in bad)} unverified); {total:.1f} s of checks")
if json_out:
    with open(json_out, "w") as f:
        json.dump({"files": len(rows), "disagreements": len(bad), "seconds": round(total, 2), "rows": rows}, f, indent=2)
        f.write("\n")
sys.exit(1 if bad else 0)
PY
