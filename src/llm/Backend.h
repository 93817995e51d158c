// Backend: the one interface every model backend implements (openai,
// anthropic, exec, replay, batch, and the recording wrapper). Create one with
// openBackend()/createBackend() in BackendSpec.h.
//
// Thread safety: every backend is safe to call from several threads at once
// (the solve loop runs requests concurrently). complete() blocks the calling
// thread; callbacks in CallContext run on that thread.
#pragma once

#include "llm/Request.h"

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::llm {

/// Told to CallContext::onRetry before a retry's back-off wait.
struct RetryNotice {
  int attempt = 0;                 ///< the attempt that failed (1-based)
  std::chrono::milliseconds delay; ///< the wait before the next attempt
  std::string reason;              ///< the failed attempt's error message (keys redacted)
};

/// Per-call hooks. All optional.
struct CallContext {
  /// Text as it arrives: each delta of a streamed answer; one call with the
  /// whole text for answers that are not streamed. On a retry the text starts
  /// over (onRetry is called first).
  std::function<void(std::string_view delta)> onText;
  /// Called before each retry (429, 5xx, broken connection, stalled stream).
  std::function<void(const RetryNotice &)> onRetry;
  /// Cancels the call: a running transfer or child process is stopped, a
  /// back-off wait ends early, and complete() returns an Io error "... cancelled".
  std::stop_token stop;
  /// Streams only (openai, anthropic with Request::stream): asked after each
  /// text delta, with the answer so far; true ends the stream there (the
  /// connection is closed, so the server stops generating). complete() then
  /// returns the text that arrived, finish reason Other ("cut"), and usage as
  /// far as the server reported it: the completion tokens are the deltas
  /// received when it reported none (Usage::note says so). Backends that
  /// answer in one piece (exec, replay, batch) never ask it.
  std::function<bool(std::string_view textSoFar)> stopAfter;
  /// Where the request stands in a run ("task/round R/slot S/kind/strategies",
  /// set by solve). A recording keeps it beside the request hash; a replay
  /// answers by it when the request itself was not recorded (ReplayBackend.h).
  std::string position;
};

/// The values to keep out of everything stored or printed: those of
/// OPENAI_API_KEY, ANTHROPIC_API_KEY, the variable PTXFORGE_API_KEY_ENV names,
/// and every variable whose name ends in _API_KEY, _KEY_ID, _SECRET, _PASSWORD
/// or _TOKEN; values shorter than 8 bytes are left alone (they would scrub
/// ordinary words). Read from the process environment on each call.
std::vector<std::string> environmentSecrets();

/// Replaces each secret in `text` by "[redacted]", and also the tail of a
/// secret (16 bytes or more) at the start of the text or of a line: what is
/// left of a key when an output's tail was cut inside it.
std::string scrubSecrets(std::string text, const std::vector<std::string> &secrets);

/// A model behind some protocol. See the file comment for thread safety.
class Backend {
public:
  virtual ~Backend() = default;

  /// Validates `request` (validateRequest), asks the model, and fills in the
  /// completion's requestHash and backend. Expected failures (network, HTTP
  /// errors, malformed answers, a missing replay record) are Errors whose
  /// message starts with the backend's kind, e.g.
  /// "openai: HTTP 429 from http://host/v1/chat/completions: Rate limit reached".
  /// API keys never appear in messages: the values of the key variables in
  /// the environment (environmentSecrets()) are scrubbed from every error
  /// message and from the completion's text and model before they are
  /// returned, whichever backend produced them (an exec program may print a
  /// key to stderr; a server may echo one). Streamed deltas passed to onText
  /// are not scrubbed (a key may be split across them).
  Result<Completion> complete(const Request &request, const CallContext &context = {});

  /// The backend's kind: "openai", "anthropic", "exec", "replay", "batch".
  virtual std::string kind() const = 0;
  /// One line for people: kind, model and endpoint/file (never a key).
  virtual std::string describe() const = 0;

protected:
  /// The backend's work; `request` is valid and `hash` is requestHash(request).
  virtual Result<Completion> completeValid(const Request &request, const std::string &hash,
                                           const CallContext &context) = 0;
};

} // namespace ptxforge::llm
