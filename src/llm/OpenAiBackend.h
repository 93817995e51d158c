// The `openai` backend: any OpenAI-compatible server — vLLM, SGLang,
// llama.cpp's server, Ollama (/v1), commercial APIs.
//
//   chat requests  → POST {base}/chat/completions, answer in choices[0].message.content
//   raw prompts    → POST {base}/completions,      answer in choices[0].text
//
// Sent: model, messages | prompt, and temperature, top_p, max_tokens, seed,
// stop when set; "stream": true plus stream_options.include_usage when the
// request streams; with --guided, the PTX grammar in the flavour's field; a
// chat ending with an assistant message asks to continue it
// (addContinueFinalMessage). Headers: Authorization: Bearer $OPENAI_API_KEY when the key
// is set (local servers usually need none).
//
// Streams are SSE: `data: {chunk}` lines with choices[0].delta.content (chat)
// or choices[0].text (completions), finish_reason in the last choice chunk,
// usage in a final chunk with empty choices, and `data: [DONE]`. A stream that
// ends without [DONE] is a truncated answer: an error, retried like a broken
// connection. A server that ignores "stream" and answers JSON is accepted.
#pragma once

#include "llm/HttpBackend.h"

namespace ptxforge::llm {

/// The JSON body of an OpenAI chat-completions or completions request (also
/// the "body" of a Batch-API line).
nlohmann::json openAiRequestBody(const Request &request, const std::string &model, bool stream,
                                 bool streamIncludeUsage);

/// Adds a guided-decoding grammar to a request body in the field the server
/// flavour reads (BackendOptions::serverFlavour): vLLM
/// `structured_outputs.grammar` (`guided_grammar` for vllm-legacy), SGLang
/// `ebnf`, llama.cpp `grammar`. InvalidInput for an unknown flavour.
Result<void> addGuidedGrammar(nlohmann::json &body, std::string_view flavour, const std::string &grammar);

/// Asks the server to continue a chat's final assistant message (a prefill)
/// instead of starting a new one, in the flavour's fields: vLLM (and
/// vllm-legacy) `continue_final_message: true` with `add_generation_prompt:
/// false`, SGLang `continue_final_message: true`; llama.cpp needs none (its
/// server continues a final assistant message by default). The backend adds
/// it to every chat request whose last message is the assistant's.
void addContinueFinalMessage(nlohmann::json &body, std::string_view flavour);

/// The endpoint path under the base URL: "/chat/completions" or "/completions".
const char *openAiEndpoint(const Request &request);

/// Decodes a non-streamed chat-completions or completions response. A failure
/// names the missing or mistyped field, e.g. "missing choices[0].message.content".
std::optional<DecodeFailure> decodeOpenAiResponse(const Request &request, const nlohmann::json &body,
                                                  Completion &completion);

class OpenAiBackend final : public HttpBackend {
public:
  /// `model` from the spec; the base URL and key come from `options`.
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
