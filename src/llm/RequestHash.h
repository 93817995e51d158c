// The request hash: a stable name for "the same question", used as the key of
// replay records, the custom_id of Batch-API lines and the exec protocol's
// request_hash.
//
// requestHash(r) = lowercase hex SHA-256 of canonicalRequestText(r), which is
// the compact JSON (keys sorted, no spaces, UTF-8, invalid UTF-8 replaced by
// U+FFFD) of an object with exactly these fields:
//
//   "v"           1 (the version of this canonical form)
//   "model"       r.model, only when the caller set it (non-empty). A backend's
//                 default model (from its spec) is NOT hashed, so that a run
//                 recorded from any backend replays with `replay:FILE`.
//   "messages"    [{"content": ..., "role": "system"|"user"|"assistant"}, ...]
//                 in order (chat requests), or
//   "prompt"      the raw prompt (completions requests)
//   "temperature" number, when set
//   "top_p"       number, when set
//   "max_tokens"  integer, when set
//   "seed"        integer, when set
//   "stop"        [strings] in order, when non-empty
//
// Not hashed: `stream` (it does not change the answer), the backend, base URL,
// timeouts and retries. Unset fields are omitted, not null. Numbers print in
// nlohmann-json's shortest round-trip form (0.7 → 0.7, 1.0 → 1.0).
//
// Two requests that should produce different samples must differ in a hashed
// field: give each candidate its own seed.
#pragma once

#include "llm/Request.h"

#include <string>
#include <string_view>

namespace ptxforge::llm {

/// The canonical JSON object described above.
nlohmann::json canonicalRequestJson(const Request &request);
/// Its compact text, the exact bytes that are hashed.
std::string canonicalRequestText(const Request &request);
/// Lowercase hex SHA-256 (64 characters) of canonicalRequestText(request).
std::string requestHash(const Request &request);

} // namespace ptxforge::llm
