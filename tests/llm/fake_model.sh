#!/bin/sh
# A scripted model for the exec backend tests (tests/llm/ExecTest.cpp).
# Usage: fake_model.sh MODE [FILE]. It reads the request JSON on stdin unless
# the mode says otherwise.
mode="${1:-echo}"
case "$mode" in
  echo)       # plain text naming the request hash
    input=$(cat)
    hash=$(printf '%s' "$input" | sed -n 's/.*"request_hash":"\([0-9a-f]*\)".*/\1/p')
    printf 'ANSWER %s\n' "$hash" ;;
  json)       # the JSON answer form with usage
    cat > /dev/null
    printf '{"text": "json answer", "finish_reason": "stop", "model": "fake-1", "usage": {"prompt_tokens": 7, "completion_tokens": 3}}\n' ;;
  save)       # keeps the request for the test to read
    cat > "$2"
    printf 'saved' ;;
  fail)
    cat > /dev/null
    echo "fake model: loading weights" >&2
    echo "fake model: out of memory" >&2
    exit 3 ;;
  sleep)      # never answers; leaves a grandchild holding stdout open
    cat > /dev/null
    sleep 30 &
    sleep 30 ;;
  no-read)    # answers without reading its input
    printf 'answered without reading' ;;
  error-json)
    cat > /dev/null
    printf '{"error": "quota exhausted"}' ;;
  bad-json)
    cat > /dev/null
    printf '{"txt": "typo"}' ;;
  *)
    echo "fake_model.sh: unknown mode $mode" >&2
    exit 2 ;;
esac
