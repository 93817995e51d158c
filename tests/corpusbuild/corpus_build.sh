#!/usr/bin/env bash
# `ptxforge corpus build` end to end on the sample corpus (corpus/kernels, the
# tasks' references) plus tests/corpusbuild/inputs, whose files each trip one
# filter stage, under test-config.toml (2 flag sets x sm_80): the counts per
# stage, a second build that compiles nothing and writes the same files,
# `corpus stats`, and the errors of a bad config and a missing source.
#   corpus_build.sh PTXFORGE WORK_DIR      (run from the source tree's root)
set -euo pipefail
bin=$1
work=$2
out=$work/out
rm -rf "$work"
mkdir -p "$work"
sources=(corpus/kernels tasks tests/corpusbuild/inputs)
config=tests/corpusbuild/test-config.toml

"$bin" corpus build "${sources[@]}" --config "$config" --out "$out" -j 2 --format json > "$work/first.json"
python3 - "$work/first.json" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
stages = {s["stage"]: (s["in"], s["dropped"]) for s in summary["stages"]}
# Which input trips each stage (46 files x 2 flag sets = 92 compiles):
expected = {
    "nvrtc": (92, 2),           # inputs/nvrtc_error.cu, both flag sets
    # inputs/lint_error.cu (an opcode that does not exist, in inline asm) and
    # tma_transpose_2d (cp.async.bulk.tensor and mbarrier waits need sm_90; this config is sm_80)
    # and fp8_gemm_e4m3 (cvt from e4m3x2 needs sm_89)
    "lint": (144, 6),
    "compile": (138, 2),        # inputs/compile_error.cu: 80 KB of static shared memory
    "size": (136, 6),           # > 1500 PTX lines: inputs/big_unrolled.cu, conv2d_3x3, hgemm
    "spill": (130, 1),          # sgemm_register_4x4 under -maxrregcount=32
    "exact-dedupe": (129, 10),  # inputs/duplicate_elementwise.cu: 5 kernels x 2 flag sets
    "near-dedupe": (119, 2),    # reduce_sum_tree<256> next to reduce_sum_tree<128>
}
assert stages == expected, f"stage counts {stages} != {expected}"
assert summary["units"] == 92 and summary["compiled"] == 92 and summary["cached"] == 0, summary
assert summary["rows"] == 117 and summary["shards"] == 3, summary
assert summary["sources"] == 46, summary
print("first build: counts per stage as expected")
PY
for f in "$out"/data/train-0000{0,1,2}-of-00003.jsonl "$out/README.md" "$out/build.json" "$out/rejected.jsonl"; do
  test -s "$f" || { echo "missing or empty: $f"; exit 1; }
done
grep -q 'load_dataset("json"' "$out/README.md"
grep -q '| near-dedupe |' "$out/README.md"
grep -q '"stage": "lint"' "$out/build.json"
cp -r "$out/data" "$work/data-first"
cp "$out/README.md" "$work/README-first.md"

# The second build of the same sources compiles nothing and writes the same rows and card.
"$bin" corpus build "${sources[@]}" --config "$config" --out "$out" -j 2 > "$work/second.txt" 2> "$work/second.err"
grep -q "compiled 0, cached 92" "$work/second.txt" || { cat "$work/second.txt"; exit 1; }
grep -q "compiles (compiled 0, cached 92)" "$work/second.err" || { echo "no progress line:"; cat "$work/second.err"; exit 1; }
diff -r "$work/data-first" "$out/data"
cmp "$work/README-first.md" "$out/README.md"
echo "second build: compiled 0, cached 92, same output"

# A cache entry someone edited (well-formed JSON, wrong fields) and one cut short are compiled
# again, and the output is still the same.
entries=($(find "$out/cache" -name '*.json' | sort))
[ "${#entries[@]}" = 92 ] || { echo "${#entries[@]} cache entries, not 92"; exit 1; }
printf '{"format": "ptxforge-corpus-cache-2", "nvrtc_error": null, "kernels": [{"entry": 1}]}' > "${entries[0]}"
head -c 100 "${entries[1]}" > "$work/cut" && mv "$work/cut" "${entries[1]}"
"$bin" corpus build "${sources[@]}" --config "$config" --out "$out" -j 2 -q > "$work/third.txt"
grep -q "compiled 2, cached 90" "$work/third.txt" || { cat "$work/third.txt"; exit 1; }
diff -r "$work/data-first" "$out/data"
echo "third build: two damaged cache entries compiled again, same output"

"$bin" corpus stats "$out" > "$work/stats.txt"
grep -Eq "^117 rows in 3 shards" "$work/stats.txt" || { cat "$work/stats.txt"; exit 1; }
grep -Eq "^opcode coverage: [0-9]+ of [0-9]+ instruction-table entries" "$work/stats.txt"
grep -q "near-dedupe: 119 in, 2 dropped, 117 kept" "$work/stats.txt"
"$bin" corpus stats "$out" --format json > "$work/stats.json"
python3 - "$work/stats.json" <<'PY'
import json, sys
stats = json.load(open(sys.argv[1]))
assert stats["rows"] == 117 and stats["by_target"] == {"sm_80": 117}, stats["by_target"]
coverage = stats["opcode_coverage"]
assert coverage["used"] >= 30 and coverage["unknown_instructions"] == 0, coverage
for name in ("ld", "st", "fma", "bar", "atom", "shfl", "wmma.mma", "cp.async"):
    assert name in coverage["uses"], f"{name} not among the opcodes used: {sorted(coverage['uses'])}"
assert stats["registers"]["count"] == 117 and stats["registers"]["max"] <= 255
assert stats["ptx_lines"]["max"] <= 1500
print("corpus stats: rows, targets, opcode coverage as expected")
PY

# Errors: a config with a typo, a source that does not exist, stats of an empty folder.
printf '[dedupe]\nthreshhold = 0.9\n' > "$work/typo.toml"
if "$bin" corpus build corpus/kernels --config "$work/typo.toml" --out "$work/never" 2> "$work/typo.err"; then
  echo "a bad config was accepted"; exit 1
fi
grep -q "typo.toml:2:1: unknown key 'threshhold' in \[dedupe\]" "$work/typo.err" || { cat "$work/typo.err"; exit 1; }
set +e
"$bin" corpus build "$work/missing.cu" --out "$work/never" 2> "$work/missing.err"; rc=$?
set -e
[ "$rc" = 2 ] && grep -q "missing.cu: no such file or folder" "$work/missing.err" || { echo "rc $rc"; cat "$work/missing.err"; exit 1; }
mkdir -p "$work/empty"
if "$bin" corpus stats "$work/empty" 2> "$work/empty.err"; then echo "stats of an empty folder succeeded"; exit 1; fi
grep -q "no-corpus" "$work/empty.err"
echo "errors: located and exit 2"
