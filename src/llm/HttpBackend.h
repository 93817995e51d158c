// HttpBackend: what the openai and anthropic backends share — one attempt
// (POST, optional SSE stream, status and error handling), retries, error
// messages with the URL and the server's own words, and key redaction.
// Internal to the llm library.
#pragma once

#include "llm/BackendSpec.h"
#include "llm/HttpClient.h"
#include "llm/Retry.h"
#include "llm/SseParser.h"

#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ptxforge::llm {

/// Why a stream or a response body could not be turned into a completion.
struct DecodeFailure {
  std::string message; ///< without the "KIND: " prefix, e.g. "malformed stream chunk: ..."
  bool retryable = false;
};

/// Turns one attempt's SSE events into a completion. One per attempt.
class StreamDecoder {
public:
  virtual ~StreamDecoder() = default;
  /// Consumes one event, appending text through `emitText` and recording
  /// finish reason, usage and model in `completion`.
  virtual std::optional<DecodeFailure> onEvent(const SseEvent &event, Completion &completion,
                                               const std::function<void(std::string_view)> &emitText) = 0;
  /// The stream ended: fails when it ended before the protocol's last event.
  virtual std::optional<DecodeFailure> finish(Completion &completion) = 0;
};

/// The server's error message from an error response body: error.message
/// (OpenAI, Anthropic), a string "error", "message" or "detail" (vLLM, proxies),
/// else the body itself, shortened to one line.
std::string serverErrorMessage(std::string_view body);

/// object[key] when it is a string, else `fallback` (never throws).
std::string stringField(const nlohmann::json &object, const char *key, std::string fallback = {});

/// Replaces every occurrence of each secret in `text` by "[redacted]".
std::string redactSecrets(std::string text, const std::vector<std::string> &secrets);

class HttpBackend : public Backend {
public:
  std::string kind() const override { return kind_; }
  std::string describe() const override;

protected:
  HttpBackend(std::string kind, std::string model, std::string baseUrl, const BackendOptions &options,
              std::string apiKey);

  /// The URL, headers and JSON body for `request`, sent to `model`.
  virtual Result<HttpRequest> buildHttpRequest(const Request &request, const std::string &model) const = 0;
  virtual std::unique_ptr<StreamDecoder> newStreamDecoder(const Request &request) const = 0;
  /// Decodes a complete (non-streamed) 2xx JSON response into `completion`.
  virtual std::optional<DecodeFailure> decodeBody(const Request &request, const nlohmann::json &body,
                                                  Completion &completion) const = 0;

  const std::string &baseUrl() const { return baseUrl_; }
  const std::string &apiKey() const { return apiKey_; }
  const BackendOptions &options() const { return options_; }

  Result<Completion> completeValid(const Request &request, const std::string &hash,
                                   const CallContext &context) final;

private:
  AttemptResult attemptOnce(const Request &request, const HttpRequest &httpRequest, const std::string &model,
                            const CallContext &context);
  Error failure(const std::string &message) const;

  std::string kind_;
  std::string model_;
  std::string baseUrl_;
  BackendOptions options_;
  std::string apiKey_; ///< from the environment; never printed (see redactSecrets)
  HttpClient client_;
};

/// Checks and normalizes a base URL (http:// or https://, no trailing '/').
Result<std::string> normalizeBaseUrl(std::string_view kind, std::string_view url);

/// `variable` from options.environment (or the process environment); unset
/// and empty are both std::nullopt. Used for keys and vendor base URLs.
std::optional<std::string> readEnvironment(const BackendOptions &options, const std::string &variable);

} // namespace ptxforge::llm
