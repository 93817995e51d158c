#!/usr/bin/env bash
# End-to-end `ptxforge solve --guided-stream` on the CPU emulator with the
# scripted model (tests/solve/scripted_model.py, SCRIPTED_MODEL_SLIP): its
# first answers hold one slip; the stream is cut at the slip and the model
# continues from the line before it.
#
# usage: stream_e2e.sh PTXFORGE SCENARIO
#   exec        the exec backend (answers arrive whole: cut after the fact):
#               round 1 is correct with --guided-stream, and costs fewer tokens
#               than the repair round the same model needs without it; the
#               cuts are in the store and in `show`; the recording replays
#   http        the fake OpenAI-compatible server (stream_server.py): a real
#               SSE stream stopped at the cut, the continuation sent with
#               continue_final_message, fewer tokens generated than one whole
#               answer; --stream-continue completions goes to /completions
#   grammar     --guided on the fake server, which enforces the grammar with
#               llguidance: the hallucinated opcode never reaches the gate
#               (skipped when llguidance does not load)
set -euo pipefail
ptxforge="$1"
scenario="$2"
here="$(cd "$(dirname "$0")" && pwd)"
model_script="$here/../solve/scripted_model.py"
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
common=(vector_add --strategy zero-shot,few-shot --executor emu -q --format json)

fail() { echo "FAIL: $*" >&2; exit 1; }

# "round slot kind verdict" per attempt of run $2 in store $1.
verdicts() {
  "$ptxforge" show "$2" --store "$1" --format json | python3 -c '
import json, sys
for a in json.load(sys.stdin)["attempts"]:
    print(a["round"], a["slot"], a["kind"], a.get("result", {}).get("verdict", "-"))'
}

# prompt+completion tokens of the run whose `solve --format json` output is in $1.
tokens() { python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["summary"]["tokens"]; print(t["prompt"] + t["completion"])' "$1"; }

# "seq mode code" per stream segment in store $1.
segments() {
  python3 - "$1" <<'EOF'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for prompt, seq, mode, cut, diagnostic in db.execute(
        "SELECT prompt_id, seq, mode, cut_at, diagnostic FROM stream_segments ORDER BY prompt_id, seq"):
    d = json.loads(diagnostic)
    print(prompt, seq, mode, d["code"] if d else "-")
EOF
}

start_server() {
  python3 "$here/stream_server.py" --model "$model_script" --port-file port --log server.jsonl &
  server_pid=$!
  for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
  [ -s port ] || fail "the fake server did not start"
  base="http://127.0.0.1:$(cat port)/v1"
}

case "$scenario" in
exec)
  export SCRIPTED_MODEL_SLIP=opcode
  model="exec:$model_script"
  # Without streaming checks: the slip is a lint error, and a repair round fixes it.
  "$ptxforge" solve "${common[@]}" -n 2 --rounds 2 --model "$model" --store plain.db > plain.json || true
  got="$(verdicts plain.db 1)"
  [ "$got" = "1 0 initial lint-error
1 1 initial lint-error
2 0 repair correct
2 1 repair correct" ] || fail "without --guided-stream: $got"
  # With them: cut at the slip, continued, correct in round 1.
  "$ptxforge" solve "${common[@]}" -n 2 --rounds 1 --model "$model" --store guided.db --guided-stream \
    --record guided.jsonl > guided.json || fail "solve --guided-stream found no kernel"
  got="$(verdicts guided.db 1)"
  [ "$got" = "1 0 initial correct
1 1 initial correct" ] || fail "with --guided-stream: $got"
  got="$(segments guided.db)"
  [ "$got" = "1 0 stream unknown-instruction
1 1 prefill -
2 0 stream unknown-instruction
2 1 prefill -" ] || fail "segments: $got"
  plain_tokens="$(tokens plain.json)"
  guided_tokens="$(tokens guided.json)"
  echo "tokens to two correct kernels: $guided_tokens with --guided-stream (round 1), $plain_tokens with a repair round"
  [ "$guided_tokens" -lt "$plain_tokens" ] ||
    fail "--guided-stream cost $guided_tokens tokens, the repair round $plain_tokens: expected fewer"
  "$ptxforge" show 1 --store guided.db | grep -q "^## Streaming cuts" || fail "show has no Streaming cuts section"
  "$ptxforge" show 1 --store guided.db | grep -q "2 answers checked while streaming (--guided-stream): 2 cuts in 4 requests" ||
    fail "show does not count the cuts"
  # The recording replays: the same cuts, no model program.
  unset SCRIPTED_MODEL_SLIP
  "$ptxforge" solve "${common[@]}" -n 2 --rounds 1 --model replay:guided.jsonl --store replay.db --guided-stream > /dev/null ||
    fail "the replay found no kernel"
  [ "$(segments replay.db)" = "$(segments guided.db)" ] || fail "the replay cut elsewhere: $(segments replay.db)"
  # Refused combinations.
  if "$ptxforge" solve "${common[@]}" --model openai:m --base-url http://127.0.0.1:9/v1 --store x.db --guided-stream --guided > err.txt 2>&1; then
    fail "--guided-stream with --guided was accepted"
  fi
  grep -q "do not go together" err.txt || fail "no reason given: $(cat err.txt)"
  ;;
http)
  export SCRIPTED_MODEL_SLIP=opcode
  start_server
  "$ptxforge" solve "${common[@]}" --rounds 1 -n 1 --model openai:scripted --base-url "$base" --store http.db \
    --guided-stream > http.json || fail "solve --guided-stream over HTTP found no kernel"
  [ "$(verdicts http.db 1)" = "1 0 initial correct" ] || fail "verdicts: $(verdicts http.db 1)"
  # The first request was cut by the client; the second continued it.
  python3 - server.jsonl <<'EOF' || fail "server log: $(cat server.jsonl)"
import json, sys
log = [json.loads(line) for line in open(sys.argv[1])]
assert len(log) == 2, log
assert log[0]["cut"] and not log[1]["cut"], log
print(f"generated: {log[0]['generated_tokens']} tokens cut + {log[1]['generated_tokens']} continued")
assert log[0]["generated_tokens"] < 200, log  # the slip is on the first instruction line
EOF
  # Through the completions endpoint.
  : > server.jsonl
  "$ptxforge" solve "${common[@]}" --rounds 1 -n 1 --model openai:scripted --base-url "$base" --store comp.db \
    --guided-stream --stream-continue completions > /dev/null || fail "--stream-continue completions found no kernel"
  python3 -c '
import json, sys
log = [json.loads(l) for l in open("server.jsonl")]
assert [e["path"] for e in log] == ["/v1/chat/completions", "/v1/completions"], log' || fail "paths: $(cat server.jsonl)"
  ;;
grammar)
  if ! python3 -c "import llguidance" 2>/dev/null; then
    echo "SKIP: llguidance does not load (pip install llguidance)"
    exit 0
  fi
  export SCRIPTED_MODEL_SLIP=opcode
  start_server
  "$ptxforge" solve "${common[@]}" --rounds 1 -n 1 --model openai:scripted --base-url "$base" --store g.db \
    --guided --guided-format lark > /dev/null || fail "--guided found no kernel"
  [ "$(verdicts g.db 1)" = "1 0 initial correct" ] || fail "verdicts: $(verdicts g.db 1)"
  python3 -c '
import json
log = [json.loads(l) for l in open("server.jsonl")]
assert len(log) == 1 and log[0]["grammar"] and log[0]["replaced_lines"] == 1, log' || fail "server log: $(cat server.jsonl)"
  ;;
*) fail "unknown scenario $scenario" ;;
esac
echo "ok: $scenario"
