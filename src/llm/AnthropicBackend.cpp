// The anthropic backend: Messages API bodies, content blocks and stream events.
#include "llm/AnthropicBackend.h"

#include <nlohmann/json.hpp>

namespace ptxforge::llm {

namespace {

const char *kDefaultBaseUrl = "https://api.anthropic.com";

int64_t integerField(const nlohmann::json &object, const char *key) {
  auto it = object.find(key);
  return it != object.end() ? jsonTokenCount(*it) : 0;
}

/// Input tokens as billed: fresh input plus cache writes and reads.
void readInputUsage(const nlohmann::json &usage, Completion &completion) {
  if (!usage.is_object())
    return;
  completion.usage.promptTokens =
      addTokenCounts(addTokenCounts(integerField(usage, "input_tokens"), integerField(usage, "cache_creation_input_tokens")),
                     integerField(usage, "cache_read_input_tokens"));
  if (usage.contains("output_tokens"))
    completion.usage.completionTokens = integerField(usage, "output_tokens");
  completion.usage.reported = true;
}

void readStopReason(const nlohmann::json &owner, Completion &completion) {
  auto reason = owner.find("stop_reason");
  if (reason != owner.end() && reason->is_string()) {
    completion.rawFinishReason = reason->get<std::string>();
    completion.finishReason = normalizeFinishReason(completion.rawFinishReason);
  }
}

void readModel(const nlohmann::json &owner, Completion &completion) {
  auto model = owner.find("model");
  if (model != owner.end() && model->is_string() && !model->get<std::string>().empty())
    completion.model = model->get<std::string>();
}

class AnthropicStreamDecoder final : public StreamDecoder {
public:
  std::optional<DecodeFailure> onEvent(const SseEvent &event, Completion &completion,
                                       const std::function<void(std::string_view)> &emitText) override {
    if (event.data.empty())
      return std::nullopt; // "event: ping" without data
    nlohmann::json data = nlohmann::json::parse(event.data, nullptr, false);
    if (!data.is_object())
      return DecodeFailure{"malformed stream event `" + event.event +
                               "` (not a JSON object): " + event.data.substr(0, 200),
                           false};
    // The event name is repeated in data.type; trust data when they differ.
    std::string type = stringField(data, "type", event.event);
    if (type == "message_start") {
      auto message = data.find("message");
      if (message == data.end() || !message->is_object())
        return DecodeFailure{"malformed stream: message_start without message", false};
      readModel(*message, completion);
      if (auto usage = message->find("usage"); usage != message->end())
        readInputUsage(*usage, completion);
    } else if (type == "content_block_delta") {
      auto delta = data.find("delta");
      if (delta == data.end() || !delta->is_object())
        return DecodeFailure{"malformed stream: content_block_delta without delta", false};
      if (stringField(*delta, "type") == "text_delta") {
        auto text = delta->find("text");
        if (text == delta->end() || !text->is_string())
          return DecodeFailure{"malformed stream: text_delta without text", false};
        emitText(text->get_ref<const std::string &>());
      }
      // thinking_delta, signature_delta, input_json_delta: not part of the answer text.
    } else if (type == "message_delta") {
      if (auto delta = data.find("delta"); delta != data.end() && delta->is_object())
        readStopReason(*delta, completion);
      if (auto usage = data.find("usage"); usage != data.end() && usage->is_object()) {
        if (usage->contains("output_tokens"))
          completion.usage.completionTokens = integerField(*usage, "output_tokens");
        completion.usage.reported = true;
      }
    } else if (type == "message_stop") {
      done_ = true;
    } else if (type == "error") {
      std::string errorType;
      if (auto error = data.find("error"); error != data.end() && error->is_object())
        errorType = stringField(*error, "type");
      bool retryable = errorType == "overloaded_error" || errorType == "api_error";
      return DecodeFailure{"error event in stream: " + serverErrorMessage(event.data) +
                               (errorType.empty() ? "" : " (" + errorType + ")"),
                           retryable};
    }
    // content_block_start/stop, ping and unknown events carry nothing we need.
    return std::nullopt;
  }

  std::optional<DecodeFailure> finish(Completion &) override {
    if (!done_)
      return DecodeFailure{"truncated stream: ended without message_stop", true};
    return std::nullopt;
  }

private:
  bool done_ = false;
};

} // namespace

nlohmann::json anthropicRequestBody(const Request &request, const std::string &model, int defaultMaxTokens) {
  nlohmann::json body = nlohmann::json::object();
  body["model"] = model;
  body["max_tokens"] = request.maxTokens.value_or(defaultMaxTokens);
  std::string system;
  nlohmann::json messages = nlohmann::json::array();
  for (const Message &message : request.messages) {
    if (message.role == Role::System) {
      if (!system.empty())
        system += "\n\n";
      system += message.content;
      continue;
    }
    messages.push_back({{"role", roleName(message.role)}, {"content", message.content}});
  }
  body["messages"] = std::move(messages);
  if (!system.empty())
    body["system"] = system;
  if (request.temperature)
    body["temperature"] = *request.temperature;
  if (request.topP)
    body["top_p"] = *request.topP;
  if (!request.stop.empty())
    body["stop_sequences"] = request.stop;
  if (request.stream)
    body["stream"] = true;
  return body;
}

Result<std::unique_ptr<Backend>> AnthropicBackend::create(const std::string &model, const BackendOptions &options) {
  std::string url = options.baseUrl;
  if (url.empty())
    url = readEnvironment(options, "ANTHROPIC_BASE_URL").value_or(kDefaultBaseUrl); // the vendor SDKs' variable
  Result<std::string> base = normalizeBaseUrl("anthropic", url);
  if (!base)
    return base.error();
  std::string variable = options.apiKeyVariable.empty() ? "ANTHROPIC_API_KEY" : options.apiKeyVariable;
  std::optional<std::string> key = readEnvironment(options, variable);
  // Anthropic's own API needs a key; a server of the same API elsewhere (a
  // local proxy, a gateway on loopback) may not, and then gets no x-api-key.
  const bool vendor = base->find("://api.anthropic.com") != std::string::npos;
  if (!key && vendor)
    return makeError(ErrorKind::InvalidInput,
                     "anthropic: no API key: set " + variable + " in the environment (keys are never taken from "
                     "the command line or files)");
  return std::unique_ptr<Backend>(new AnthropicBackend("anthropic", model, *base, options, key.value_or("")));
}

Result<HttpRequest> AnthropicBackend::buildHttpRequest(const Request &request, const std::string &model) const {
  if (request.isRawPrompt())
    return makeError(ErrorKind::InvalidInput,
                     "anthropic: raw prompts are not supported by the Messages API; send chat messages, or use an "
                     "openai: backend for the completions endpoint");
  bool hasTurn = false;
  for (const Message &message : request.messages)
    hasTurn = hasTurn || message.role != Role::System;
  if (!hasTurn)
    return makeError(ErrorKind::InvalidInput, "anthropic: the request has only system messages; the Messages API "
                                              "needs at least one user message");
  HttpRequest http;
  http.url = baseUrl() + "/v1/messages";
  http.body = dumpJson(anthropicRequestBody(request, model, options().anthropicDefaultMaxTokens));
  http.headers.push_back({"Content-Type", "application/json"});
  http.headers.push_back({"Accept", request.stream ? "text/event-stream" : "application/json"});
  http.headers.push_back({"anthropic-version", options().anthropicVersion});
  if (!apiKey().empty())
    http.headers.push_back({"x-api-key", apiKey()});
  return http;
}

std::unique_ptr<StreamDecoder> AnthropicBackend::newStreamDecoder(const Request &) const {
  return std::make_unique<AnthropicStreamDecoder>();
}

std::optional<DecodeFailure> AnthropicBackend::decodeBody(const Request &, const nlohmann::json &body,
                                                          Completion &completion) const {
  auto malformed = [](std::string what) { return DecodeFailure{"malformed response: " + what, false}; };
  if (!body.is_object())
    return malformed("not a JSON object");
  if (stringField(body, "type") == "error")
    return DecodeFailure{"server reported an error: " + serverErrorMessage(dumpJson(body)), false};
  auto content = body.find("content");
  if (content == body.end())
    return malformed("missing content");
  if (!content->is_array())
    return malformed("content is not an array");
  for (size_t i = 0; i < content->size(); ++i) {
    const nlohmann::json &block = (*content)[i];
    if (!block.is_object())
      return malformed("content[" + std::to_string(i) + "] is not an object");
    if (stringField(block, "type") != "text")
      continue;
    auto text = block.find("text");
    if (text == block.end() || !text->is_string())
      return malformed("missing content[" + std::to_string(i) + "].text");
    completion.text += text->get<std::string>();
  }
  readStopReason(body, completion);
  readModel(body, completion);
  if (auto usage = body.find("usage"); usage != body.end())
    readInputUsage(*usage, completion);
  return std::nullopt;
}

} // namespace ptxforge::llm
