// The openai backend: request bodies, response and stream decoding.
#include "llm/OpenAiBackend.h"

#include <nlohmann/json.hpp>

namespace ptxforge::llm {

namespace {

const char *kDefaultBaseUrl = "https://api.openai.com/v1";

/// Usage from an OpenAI "usage" object; false when absent or null.
bool readUsage(const nlohmann::json &owner, Completion &completion) {
  auto usage = owner.find("usage");
  if (usage == owner.end() || !usage->is_object())
    return false;
  auto prompt = usage->find("prompt_tokens");
  auto generated = usage->find("completion_tokens");
  if (prompt != usage->end() && prompt->is_number_integer())
    completion.usage.promptTokens = jsonTokenCount(*prompt);
  if (generated != usage->end() && generated->is_number_integer())
    completion.usage.completionTokens = jsonTokenCount(*generated);
  completion.usage.reported = true;
  return true;
}

void readModel(const nlohmann::json &owner, Completion &completion) {
  auto model = owner.find("model");
  if (model != owner.end() && model->is_string() && !model->get<std::string>().empty())
    completion.model = model->get<std::string>();
}

void readFinishReason(const nlohmann::json &choice, Completion &completion) {
  auto reason = choice.find("finish_reason");
  if (reason != choice.end() && reason->is_string()) {
    completion.rawFinishReason = reason->get<std::string>();
    completion.finishReason = normalizeFinishReason(completion.rawFinishReason);
  }
}

/// An "error" object inside a 200 body or a stream chunk (vLLM, proxies).
std::optional<DecodeFailure> embeddedError(const nlohmann::json &json) {
  auto error = json.find("error");
  if (error == json.end() || error->is_null())
    return std::nullopt;
  return DecodeFailure{"server reported an error: " + serverErrorMessage(json.dump()), false};
}

class OpenAiStreamDecoder final : public StreamDecoder {
public:
  explicit OpenAiStreamDecoder(bool rawPrompt) : rawPrompt_(rawPrompt) {}

  std::optional<DecodeFailure> onEvent(const SseEvent &event, Completion &completion,
                                       const std::function<void(std::string_view)> &emitText) override {
    if (done_)
      return std::nullopt; // nothing is expected after [DONE]; ignore rather than fail
    if (event.data == "[DONE]") {
      done_ = true;
      return std::nullopt;
    }
    if (event.data.empty())
      return std::nullopt;
    nlohmann::json chunk = nlohmann::json::parse(event.data, nullptr, false);
    if (!chunk.is_object())
      return DecodeFailure{"malformed stream chunk (not a JSON object): " + event.data.substr(0, 200), false};
    if (auto error = embeddedError(chunk))
      return error;
    readModel(chunk, completion);
    readUsage(chunk, completion);
    auto choices = chunk.find("choices");
    if (choices == chunk.end() || !choices->is_array() || choices->empty())
      return std::nullopt; // e.g. the final usage chunk
    const nlohmann::json &choice = (*choices)[0];
    if (!choice.is_object())
      return DecodeFailure{"malformed stream chunk: choices[0] is not an object", false};
    if (rawPrompt_) {
      auto text = choice.find("text");
      if (text != choice.end() && text->is_string())
        emitText(text->get_ref<const std::string &>());
    } else {
      auto delta = choice.find("delta");
      if (delta != choice.end() && delta->is_object()) {
        auto content = delta->find("content");
        if (content != delta->end() && content->is_string())
          emitText(content->get_ref<const std::string &>());
      }
    }
    readFinishReason(choice, completion);
    return std::nullopt;
  }

  std::optional<DecodeFailure> finish(Completion &) override {
    if (!done_)
      return DecodeFailure{"truncated stream: ended without `data: [DONE]`", true};
    return std::nullopt;
  }

private:
  bool rawPrompt_;
  bool done_ = false;
};

} // namespace

const char *openAiEndpoint(const Request &request) {
  return request.isRawPrompt() ? "/completions" : "/chat/completions";
}

nlohmann::json openAiRequestBody(const Request &request, const std::string &model, bool stream,
                                 bool streamIncludeUsage) {
  nlohmann::json body = nlohmann::json::object();
  body["model"] = model;
  if (request.prompt) {
    body["prompt"] = *request.prompt;
  } else {
    nlohmann::json messages = nlohmann::json::array();
    for (const Message &message : request.messages)
      messages.push_back({{"role", roleName(message.role)}, {"content", message.content}});
    body["messages"] = std::move(messages);
  }
  if (request.temperature)
    body["temperature"] = *request.temperature;
  if (request.topP)
    body["top_p"] = *request.topP;
  if (request.maxTokens)
    body["max_tokens"] = *request.maxTokens;
  if (request.seed)
    body["seed"] = *request.seed;
  if (!request.stop.empty())
    body["stop"] = request.stop;
  if (stream) {
    body["stream"] = true;
    if (streamIncludeUsage)
      body["stream_options"] = {{"include_usage", true}};
  }
  return body;
}

std::optional<DecodeFailure> decodeOpenAiResponse(const Request &request, const nlohmann::json &body,
                                                  Completion &completion) {
  auto malformed = [](std::string what) { return DecodeFailure{"malformed response: " + what, false}; };
  if (!body.is_object())
    return malformed("not a JSON object");
  if (auto error = embeddedError(body))
    return error;
  auto choices = body.find("choices");
  if (choices == body.end())
    return malformed("missing choices");
  if (!choices->is_array() || choices->empty())
    return malformed("choices is not a non-empty array");
  const nlohmann::json &choice = (*choices)[0];
  if (!choice.is_object())
    return malformed("choices[0] is not an object");
  if (request.isRawPrompt()) {
    auto text = choice.find("text");
    if (text == choice.end())
      return malformed("missing choices[0].text");
    if (!text->is_string())
      return malformed("choices[0].text is not a string");
    completion.text = text->get<std::string>();
  } else {
    auto message = choice.find("message");
    if (message == choice.end() || !message->is_object())
      return malformed("missing choices[0].message");
    auto content = message->find("content");
    if (content == message->end())
      return malformed("missing choices[0].message.content");
    // null content: the model produced no text (e.g. all tokens went to
    // reasoning, or a refusal); that is an empty answer, not a broken response.
    if (!content->is_string() && !content->is_null())
      return malformed("choices[0].message.content is not a string");
    completion.text = content->is_string() ? content->get<std::string>() : std::string();
  }
  readFinishReason(choice, completion);
  readModel(body, completion);
  readUsage(body, completion);
  return std::nullopt;
}

Result<void> addGuidedGrammar(nlohmann::json &body, std::string_view flavour, const std::string &grammar) {
  // Field names from each server's documentation (docs/guided.md).
  if (flavour == "vllm")
    body["structured_outputs"] = {{"grammar", grammar}};
  else if (flavour == "vllm-legacy")
    body["guided_grammar"] = grammar;
  else if (flavour == "sglang")
    body["ebnf"] = grammar;
  else if (flavour == "llamacpp")
    body["grammar"] = grammar;
  else
    return makeError(ErrorKind::InvalidInput, "unknown server flavour '" + std::string(flavour) +
                                                  "' (valid: vllm, vllm-legacy, sglang, llamacpp)");
  return {};
}

void addContinueFinalMessage(nlohmann::json &body, std::string_view flavour) {
  // Field names from each server's request schema (docs/guided.md): vLLM
  // refuses continue_final_message together with add_generation_prompt, whose
  // default is true; SGLang has no add_generation_prompt; llama.cpp's server
  // continues a final assistant message unless started with
  // --no-prefill-assistant, and takes no field.
  if (flavour == "vllm" || flavour == "vllm-legacy") {
    body["continue_final_message"] = true;
    body["add_generation_prompt"] = false;
  } else if (flavour == "sglang") {
    body["continue_final_message"] = true;
  }
}

Result<std::unique_ptr<Backend>> OpenAiBackend::create(const std::string &model, const BackendOptions &options) {
  nlohmann::json probe = nlohmann::json::object();
  if (Result<void> known = addGuidedGrammar(probe, options.serverFlavour, ""); !known)
    return known.error();
  std::string url = options.baseUrl;
  if (url.empty())
    url = readEnvironment(options, "OPENAI_BASE_URL").value_or(kDefaultBaseUrl); // the vendor SDKs' variable
  Result<std::string> base = normalizeBaseUrl("openai", url);
  if (!base)
    return base.error();
  std::string variable = options.apiKeyVariable.empty() ? "OPENAI_API_KEY" : options.apiKeyVariable;
  std::string key = readEnvironment(options, variable).value_or("");
  return std::unique_ptr<Backend>(new OpenAiBackend("openai", model, *base, options, std::move(key)));
}

Result<HttpRequest> OpenAiBackend::buildHttpRequest(const Request &request, const std::string &model) const {
  HttpRequest http;
  http.url = baseUrl() + openAiEndpoint(request);
  nlohmann::json body = openAiRequestBody(request, model, request.stream, options().streamIncludeUsage);
  if (!options().guidedGrammar.empty())
    if (Result<void> added = addGuidedGrammar(body, options().serverFlavour, options().guidedGrammar); !added)
      return added.error();
  if (!request.isRawPrompt() && !request.messages.empty() && request.messages.back().role == Role::Assistant)
    addContinueFinalMessage(body, options().serverFlavour);
  http.body = dumpJson(body);
  http.headers.push_back({"Content-Type", "application/json"});
  http.headers.push_back({"Accept", request.stream ? "text/event-stream" : "application/json"});
  if (!apiKey().empty())
    http.headers.push_back({"Authorization", "Bearer " + apiKey()});
  return http;
}

std::unique_ptr<StreamDecoder> OpenAiBackend::newStreamDecoder(const Request &request) const {
  return std::make_unique<OpenAiStreamDecoder>(request.isRawPrompt());
}

std::optional<DecodeFailure> OpenAiBackend::decodeBody(const Request &request, const nlohmann::json &body,
                                                       Completion &completion) const {
  return decodeOpenAiResponse(request, body, completion);
}

} // namespace ptxforge::llm
