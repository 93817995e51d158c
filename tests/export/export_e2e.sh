#!/usr/bin/env bash
# `ptxforge export` end to end on the CPU emulator: the solve and eval runs of
# tests/solve and tests/eval (the scripted model through the exec backend, the
# recording replayed), and a model whose answers to one prompt differ (pairs),
# exported as sft, rl and pairs; every record checked against what the runs
# did, the rewards against serve's formula and a `ptxforge serve` on loopback.
# The exports are left in OUT for tests/export/test_datasets.py.
#
# usage: export_e2e.sh PTXFORGE OUT
set -euo pipefail
ptxforge="$1"
out="$2"
here="$(cd "$(dirname "$0")" && pwd)"
scripted="exec:$here/../solve/scripted_model.py"
mixed="exec:$here/mixed_model.py"
work="$(mktemp -d)"
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2> /dev/null || true; wait "$server" 2> /dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
rm -rf "$out"
mkdir -p "$out"
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
common=(--strategy zero-shot,few-shot --executor emu -q)

# Runs 1-3 in s.db: the scripted model's five mistakes then repairs (recorded),
# the recording replayed, and correct and wrong answers to one prompt.
"$ptxforge" solve vector_add --model "$scripted" "${common[@]}" --rounds 3 -n 5 --record rec.jsonl --store s.db \
  --out s1 > /dev/null
"$ptxforge" solve vector_add --model "replay:rec.jsonl" "${common[@]}" --rounds 3 -n 5 --store s.db --out s2 > /dev/null
"$ptxforge" solve vector_add --model "$mixed" "${common[@]}" --tendency "correct first" --rounds 2 -n 4 --store s.db \
  --out s3 > /dev/null
# Eval 1 in e.db: two tasks, five samples each, repaired in round 2.
"$ptxforge" eval --model "$scripted" --suite vector_add,relu --samples 5 --k 1 "${common[@]}" --rounds 2 --store e.db \
  --out e1 > /dev/null

for format in sft rl pairs; do
  "$ptxforge" export runs --format "$format" --out "$out/runs-$format.jsonl" --store s.db > "runs-$format.txt"
  "$ptxforge" export evals --format "$format" --out "$out/evals-$format.jsonl" --store e.db > "evals-$format.txt"
done
grep -q "^38 rl record(s) from 3 run(s) (38 attempts)" runs-rl.txt || fail "runs rl summary: $(cat runs-rl.txt)"
grep -q "^2 sft record(s) from 2 run(s)" evals-sft.txt || fail "evals sft summary: $(cat evals-sft.txt)"
# Chosen ids, and other weights (serve's /v1/reward "weights").
"$ptxforge" export runs 3 1 --format rl --out - --store s.db --reward-weights '{"correct": 1, "rejected": -1}' \
  > weighted.jsonl 2> weighted.txt
grep -q "^23 rl record(s) from 2 run(s)" weighted.txt || fail "export runs 3 1: $(cat weighted.txt)"
"$ptxforge" show 1 --store s.db --format json --full > show-full.json
"$ptxforge" show 1 --store s.db --format json > show.json

# Refusals: exit 2 and a message that names the problem; no file left behind.
refuse() { # pattern args...
  local pattern="$1"
  shift
  set +e
  "$ptxforge" export "$@" > refused.txt 2>&1
  local rc=$?
  set -e
  [ "$rc" = 2 ] || fail "export $* exited $rc, not 2"
  grep -q "$pattern" refused.txt || fail "export $*: no '$pattern' in: $(cat refused.txt)"
}
refuse "no run 9" runs 9 --format rl --out bad.jsonl --store s.db
refuse "no eval 4" evals 4 --format rl --out bad.jsonl --store e.db
refuse "dpo not in" runs --format dpo --out bad.jsonl --store s.db
refuse "no run store" runs --format rl --out bad.jsonl --store nowhere.db
refuse "unknown weight 'corect'" runs --format rl --out bad.jsonl --store s.db --reward-weights '{"corect": 1}'
refuse "is a folder" runs --format rl --out . --store s.db
[ ! -e bad.jsonl ] || fail "a refused export left bad.jsonl"
ls bad.jsonl.tmp-* > /dev/null 2>&1 && fail "a refused export left a temporary file"

python3 - "$out" <<'EOF'
import json, math, sys
from collections import defaultdict

out = sys.argv[1]
def load(path):
    return [json.loads(line) for line in open(path)]
def check(cond, what):
    if not cond:
        raise SystemExit("FAIL: " + what)

rl = load(out + "/runs-rl.jsonl")
sft = load(out + "/runs-sft.jsonl")
pairs = load(out + "/runs-pairs.jsonl")
weighted = load("weighted.jsonl")
show_full = json.load(open("show-full.json"))
show = json.load(open("show.json"))

# --- rl: one record per verified attempt ---------------------------------
common = {"schema_version", "run_id", "eval_id", "task", "level", "model", "arch"}
rl_fields = common | {"attempt_id", "candidate_id", "round", "slot", "kind", "temperature", "strategies", "prompt",
                      "completion", "ptx", "extract_error", "duplicate_of", "verdict", "speedup", "speedup_low",
                      "speedup_high", "timed", "reward", "stage", "summary", "diagnostics", "correct",
                      "reward_stages", "reward_weights"}
for r in rl:
    check(set(r) == rl_fields, "rl fields: " + str(sorted(set(r) ^ rl_fields)))
    check(r["schema_version"] == 1 and r["task"] == "vector_add" and r["level"] == 1 and r["eval_id"] == 0, "rl ids")
    check(not any(v is None for v in r.values()), "a null in " + json.dumps(r)[:200])
    check([m["role"] for m in r["prompt"]] == ["system", "user"], "rl prompt roles")
    check(len(r["completion"]) == 1 and r["completion"][0]["role"] == "assistant", "rl completion")
check([sum(1 for r in rl if r["run_id"] == run) for run in (1, 2, 3)] == [15, 15, 8], "rl records per run")
check(len({r["attempt_id"] for r in rl}) == len(rl), "attempt ids are unique")

# The verdicts the scripted model's mistakes give (tests/solve/solve_e2e.sh).
expected = {(1, s): v for s, v in enumerate(["no-ptx", "compile-error", "wrong", "crashed", "lint-error"])}
for run in (1, 2):
    got = {(r["round"], r["slot"]): r["verdict"] for r in rl if r["run_id"] == run}
    for (rnd, slot), verdict in got.items():
        want = expected.get((rnd, slot), "correct")
        check(verdict == want, f"run {run} r{rnd} s{slot}: {verdict}, not {want}")
    for r in rl:
        if r["run_id"] == run and r["verdict"] == "no-ptx":
            check(r["ptx"] == "" and r["extract_error"], "no-ptx has no PTX and says why")
        if r["run_id"] == run and r["verdict"] == "lint-error":
            check(any(d["code"] == "undeclared-register" for d in r["diagnostics"]), "lint diagnostics")
        if r["run_id"] == run and r["verdict"] == "crashed":
            check(any(d["code"] == "memcheck" for d in r["diagnostics"]), "memcheck diagnostic")
mixed = {(r["round"], r["slot"]): r["verdict"] for r in rl if r["run_id"] == 3}
check(mixed == {(1, 0): "wrong", (1, 1): "correct", (1, 2): "wrong", (1, 3): "correct",
                (2, 0): "wrong", (2, 1): "correct", (2, 2): "wrong", (2, 3): "correct"}, "run 3 verdicts: " + str(mixed))

# The replay saw the same prompts, gave the same answers and verdicts.
def content(run):
    return sorted((r["round"], r["slot"], r["kind"], json.dumps(r["prompt"]), r["completion"][0]["content"], r["verdict"],
                   r["reward"]) for r in rl if r["run_id"] == run)
check(content(1) == content(2), "the replayed run's records differ from the recorded run's")

# Rewards: serve's staged formula (docs/serve.md) with the default weights;
# the emulator does not time, so no speed reward and no speedup.
def staged(r, w):
    v = r["verdict"]
    extract = v != "no-ptx"
    lint = extract and v != "lint-error"
    compiled = lint and v not in ("compile-error",) and r["stage"] not in ("extract", "lint", "compile")
    stages = [w["extract"] * extract, w["lint"] * lint, w["compile"] * compiled, w["correct"] * (v == "correct"),
              w["rejected"] * (v == "rejected")]
    return sum(stages)
default = {"extract": 0.05, "lint": 0.05, "compile": 0.1, "correct": 0.6, "speed": 0.2, "speed_cap": 4.0, "rejected": 0.0}
for r in rl:
    check(r["reward_weights"] == default, "default weights")
    check(math.isclose(r["reward"], staged(r, default), abs_tol=1e-12), f"reward of {r['verdict']}: {r['reward']}")
    check(math.isclose(r["reward"], sum(r["reward_stages"].values()), abs_tol=1e-12), "stages add up to the reward")
    check(r["timed"] is False and r["speedup"] == r["speedup_low"] == r["speedup_high"] == 0.0
          and r["reward_stages"]["speed"] == 0, "untimed")
    check(r["correct"] == (r["verdict"] == "correct"), "correct flag")
by_verdict = {r["verdict"]: r["reward"] for r in rl}
check({k: round(v, 12) for k, v in by_verdict.items()} ==
      {"no-ptx": 0.0, "lint-error": 0.05, "compile-error": 0.1, "wrong": 0.2, "crashed": 0.2, "correct": 0.8},
      "reward by verdict: " + str(by_verdict))
heavy = dict(default, correct=1.0, rejected=-1.0)
check(sorted({r["run_id"] for r in weighted}) == [1, 3], "export runs 3 1 takes those runs")
# In the order given, but for the first record: one whose diagnostics are not
# empty leads an rl file (so that `datasets` types that column from its first block).
check(weighted[0]["diagnostics"] and [r["run_id"] for r in weighted[1:]] == sorted(r["run_id"] for r in weighted[1:])[::-1],
      "ids in the order given")
for records in (rl, weighted):
    check(records[0]["diagnostics"], "an rl file starts with a record that has diagnostics")
order = [(r["run_id"], r["round"], r["slot"]) for r in rl[1:]]
check(order == sorted(order), "rl records after the first are in attempt order")
for r in weighted:
    check(r["reward_weights"] == heavy and math.isclose(r["reward"], staged(r, heavy), abs_tol=1e-12), "weighted reward")

# --- show --full carries what rl exports ----------------------------------
check(len(show["attempts"]) == len(show_full["attempts"]) == 15, "show attempts")
check(all("messages" not in a and "text" not in a.get("completion", {}) for a in show["attempts"]), "show stays lean")
by_attempt = {(r["round"], r["slot"]): r for r in rl if r["run_id"] == 1}
for a in show_full["attempts"]:
    r = by_attempt[(a["round"], a["slot"])]
    check(a["messages"] == r["prompt"], "show --full messages")
    check(a["completion"]["text"] == r["completion"][0]["content"], "show --full completion")
    check(a["candidate"]["ptx"] == r["ptx"], "show --full ptx")

# --- sft: the best correct PTX of each run, with its slot's task prompt -----
check([r["run_id"] for r in sft] == [1, 2, 3], "one sft record per run")
for r in sft:
    check(r["verdict"] == "correct" and ".entry vector_add" in r["ptx"], "sft kernel")
    check(r["completion"][0]["content"] == "```ptx\n" + r["ptx"] + "```\n", "sft completion is the fenced PTX")
    source = next(x for x in rl if x["attempt_id"] == r["attempt_id"])
    asked = next(x for x in rl if x["attempt_id"] == r["prompt_attempt_id"])
    check(source["verdict"] == "correct" and source["ptx"] == r["ptx"], "sft PTX is the attempt's")
    check(asked["run_id"] == r["run_id"] and asked["slot"] == source["slot"] and asked["kind"] == "initial"
          and asked["round"] == 1 and asked["prompt"] == r["prompt"], "sft prompt is the slot's initial prompt")
    # Untimed everywhere: the first correct attempt in (round, slot) order.
    first = min((x for x in rl if x["run_id"] == r["run_id"] and x["correct"]), key=lambda x: (x["round"], x["slot"]))
    check(source["attempt_id"] == first["attempt_id"], "sft takes the first correct attempt when nothing was timed")
check((sft[0]["round"], sft[0]["slot"], sft[0]["kind"]) == (2, 0, "repair"), "run 1's best is round 2 slot 0's repair")
check((sft[2]["round"], sft[2]["slot"]) == (1, 1), "run 3's best is round 1 slot 1")

# --- pairs: the rule applied independently to the rl records ---------------
groups = defaultdict(list)
for r in rl:
    groups[(r["run_id"], json.dumps(r["prompt"]))].append(r)
want = []
for members in groups.values():
    members.sort(key=lambda x: (x["round"], x["slot"], x["attempt_id"]))
    taken = set()
    for c in members:
        for j in members:
            texts = (c["completion"][0]["content"], j["completion"][0]["content"])
            if c["correct"] and not j["correct"] and texts[0] != texts[1] and texts not in taken:
                taken.add(texts)
                want.append((c["attempt_id"], j["attempt_id"]))
got = [(p["chosen_attempt_id"], p["rejected_attempt_id"]) for p in pairs]
check(sorted(got) == sorted(want), f"pairs {got} != {want}")
check(len(got) == len(set(got)), "no pair twice")
run3 = [p for p in pairs if p["run_id"] == 3]
check(len(run3) == 4 and all(p["chosen_round"] == p["rejected_round"] == 1 for p in run3), "run 3: 4 pairs in round 1")
for p in pairs:
    c = next(x for x in rl if x["attempt_id"] == p["chosen_attempt_id"])
    j = next(x for x in rl if x["attempt_id"] == p["rejected_attempt_id"])
    check(p["prompt"] == c["prompt"] == j["prompt"], "a pair shares its prompt")
    check(p["chosen"] == c["completion"] and p["rejected"] == j["completion"], "pair completions")
    check(p["chosen_verdict"] == "correct" and p["rejected_verdict"] != "correct", "chosen is correct")
    check(p["chosen_reward"] == c["reward"] and p["rejected_reward"] == j["reward"], "pair rewards")

# --- evals: the eval's runs, with its id ------------------------------------
erl = load(out + "/evals-rl.jsonl")
esft = load(out + "/evals-sft.jsonl")
check(len(erl) == 20 and all(r["eval_id"] == 1 and r["level"] == 1 for r in erl), "eval rl: 2 tasks x 5 samples x 2 rounds")
check(sorted({r["task"] for r in erl}) == ["relu", "vector_add"], "eval tasks")
check(sum(r["correct"] for r in erl) == 10 and all(r["correct"] == (r["round"] == 2) for r in erl), "eval verdicts")
check(sorted(r["task"] for r in esft) == ["relu", "vector_add"] and all(r["eval_id"] == 1 for r in esft), "eval sft")
print(f"ok: {len(rl)} rl, {len(sft)} sft, {len(pairs)} pairs records from runs; {len(erl)} rl from the eval")
EOF

# The rewards of run 1's distinct answers, asked of `ptxforge serve` (POST
# /v1/reward, the emulator): the same verdicts and rewards as the export's.
"$ptxforge" serve --port 0 --executor emu --workers 2 2> serve.err &
server=$!
for _ in $(seq 100); do grep -q "listening on" serve.err && break; sleep 0.1; done
port=$(grep -o "127.0.0.1:[0-9]*" serve.err | head -1 | cut -d: -f2)
[ -n "$port" ] || { cat serve.err; fail "serve did not start"; }
python3 - "$out/runs-rl.jsonl" "http://127.0.0.1:$port" <<'EOF'
import json, math, sys, urllib.request
records = [json.loads(line) for line in open(sys.argv[1])]
seen = {}
for r in records:
    if r["run_id"] == 1:
        seen.setdefault(r["completion"][0]["content"], r)
for text, r in seen.items():
    body = json.dumps({"task": r["task"], "answer": text, "seed": 1}).encode()
    request = urllib.request.Request(sys.argv[2] + "/v1/reward", body, {"Content-Type": "application/json"})
    answer = json.load(urllib.request.urlopen(request, timeout=120))
    if answer["verdict"] != r["verdict"] or not math.isclose(answer["reward"], r["reward"], abs_tol=1e-12):
        raise SystemExit(f"FAIL: serve says {answer['verdict']} {answer['reward']}, the export {r['verdict']} {r['reward']}")
print(f"ok: serve agrees on the {len(seen)} distinct answers of run 1")
EOF
echo "ok: export"
