// The `anthropic` backend: the Messages API, POST {base}/v1/messages.
//
// Sent: model, max_tokens (the request's, else
// BackendOptions::anthropicDefaultMaxTokens, since the API requires it),
// messages (user/assistant), system (all system messages joined by a blank
// line — the API takes the system prompt separately), temperature, top_p,
// stop_sequences, stream. `seed` is hashed but not sent (the API has none).
// Raw prompts are refused: the Messages API has no completions endpoint.
// Headers: x-api-key: $ANTHROPIC_API_KEY (required), anthropic-version.
//
// Answers are content blocks; the text of every "text" block is joined.
// stop_reason maps to the finish reason; usage.input_tokens (plus cache
// reads/writes) and usage.output_tokens to Usage.
//
// Streams are SSE events: message_start (model, input tokens),
// content_block_delta with text_delta, message_delta (stop_reason, output
// tokens), message_stop (the end), ping, and error (overloaded_error and
// api_error are retried). A stream without message_stop is truncated: an
// error, retried like a broken connection.
#pragma once

#include "llm/HttpBackend.h"

namespace ptxforge::llm {

/// The JSON body of a Messages API request.
nlohmann::json anthropicRequestBody(const Request &request, const std::string &model, int defaultMaxTokens);

class AnthropicBackend final : public HttpBackend {
public:
  /// Fails when ANTHROPIC_API_KEY (or options.apiKeyVariable) is not set.
  static Result<std::unique_ptr<Backend>> create(const std::string &model, const BackendOptions &options);

protected:
  Result<HttpRequest> buildHttpRequest(const Request &request, const std::string &model) const override;
  std::unique_ptr<StreamDecoder> newStreamDecoder(const Request &request) const override;
  std::optional<DecodeFailure> decodeBody(const Request &request, const nlohmann::json &body,
                                          Completion &completion) const override;

private:
  using HttpBackend::HttpBackend;
};

} // namespace ptxforge::llm
