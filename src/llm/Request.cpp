// Request/Completion helpers: validation, name tables and the JSON forms.
#include "llm/Request.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace ptxforge::llm {

const char *roleName(Role role) {
  switch (role) {
  case Role::System: return "system";
  case Role::User: return "user";
  case Role::Assistant: return "assistant";
  }
  return "user";
}

std::optional<Role> parseRole(std::string_view name) {
  if (name == "system")
    return Role::System;
  if (name == "user")
    return Role::User;
  if (name == "assistant")
    return Role::Assistant;
  return std::nullopt;
}

Result<void> validateRequest(const Request &request) {
  auto invalid = [](std::string message) { return makeError(ErrorKind::InvalidInput, "llm request: " + message); };
  if (request.prompt && !request.messages.empty())
    return invalid("has both a raw prompt and chat messages; use one");
  if (!request.prompt && request.messages.empty())
    return invalid("has neither chat messages nor a raw prompt");
  if (request.temperature && (!std::isfinite(*request.temperature) || *request.temperature < 0))
    return invalid("temperature must be a finite number >= 0");
  if (request.topP && (!std::isfinite(*request.topP) || *request.topP <= 0 || *request.topP > 1))
    return invalid("top_p must be in (0, 1]");
  if (request.maxTokens && *request.maxTokens <= 0)
    return invalid("max_tokens must be positive");
  for (const std::string &stop : request.stop)
    if (stop.empty())
      return invalid("a stop sequence is empty");
  return {};
}

const char *finishReasonName(FinishReason reason) {
  switch (reason) {
  case FinishReason::Stop: return "stop";
  case FinishReason::Length: return "length";
  case FinishReason::ContentFilter: return "content-filter";
  case FinishReason::ToolCall: return "tool-call";
  case FinishReason::Other: return "other";
  case FinishReason::Unknown: return "unknown";
  }
  return "unknown";
}

FinishReason normalizeFinishReason(std::string_view raw) {
  if (raw.empty())
    return FinishReason::Unknown;
  if (raw == "stop" || raw == "end_turn" || raw == "stop_sequence" || raw == "eos")
    return FinishReason::Stop;
  if (raw == "length" || raw == "max_tokens" || raw == "model_context_window_exceeded")
    return FinishReason::Length;
  if (raw == "content_filter" || raw == "refusal")
    return FinishReason::ContentFilter;
  if (raw == "tool_calls" || raw == "function_call" || raw == "tool_use")
    return FinishReason::ToolCall;
  return FinishReason::Other;
}

const char *completionStatusName(CompletionStatus status) {
  return status == CompletionStatus::Pending ? "pending" : "complete";
}

nlohmann::json completionToJson(const Completion &completion) {
  nlohmann::json json = nlohmann::json::object();
  json["text"] = completion.text;
  if (!completion.rawFinishReason.empty())
    json["finish_reason"] = completion.rawFinishReason;
  if (completion.usage.reported)
    json["usage"] = {{"prompt_tokens", completion.usage.promptTokens},
                     {"completion_tokens", completion.usage.completionTokens}};
  if (!completion.model.empty())
    json["model"] = completion.model;
  if (!completion.backend.empty())
    json["backend"] = completion.backend;
  json["latency_ms"] = completion.latencyMs;
  if (completion.firstTokenMs)
    json["first_token_ms"] = *completion.firstTokenMs;
  if (completion.attempts != 1)
    json["attempts"] = completion.attempts;
  return json;
}

Result<Completion> completionFromJson(const nlohmann::json &json) {
  auto invalid = [](std::string message) { return makeError(ErrorKind::InvalidInput, "completion JSON: " + message); };
  if (!json.is_object())
    return invalid("not an object");
  Completion completion;
  auto text = json.find("text");
  if (text == json.end() || !text->is_string())
    return invalid("missing string \"text\"");
  completion.text = text->get<std::string>();

  auto optionalString = [&](const char *key, std::string &out) -> Result<void> {
    auto it = json.find(key);
    if (it == json.end() || it->is_null())
      return {};
    if (!it->is_string())
      return invalid(std::string("\"") + key + "\" is not a string");
    out = it->get<std::string>();
    return {};
  };
  auto optionalNumber = [&](const char *key) -> Result<std::optional<double>> {
    auto it = json.find(key);
    if (it == json.end() || it->is_null())
      return std::optional<double>();
    if (!it->is_number())
      return invalid(std::string("\"") + key + "\" is not a number");
    return std::optional<double>(it->get<double>());
  };

  if (auto r = optionalString("finish_reason", completion.rawFinishReason); !r)
    return r.error();
  completion.finishReason = normalizeFinishReason(completion.rawFinishReason);
  if (auto r = optionalString("model", completion.model); !r)
    return r.error();
  if (auto r = optionalString("backend", completion.backend); !r)
    return r.error();
  auto latency = optionalNumber("latency_ms");
  if (!latency)
    return latency.error();
  completion.latencyMs = latency->value_or(0);
  auto firstToken = optionalNumber("first_token_ms");
  if (!firstToken)
    return firstToken.error();
  completion.firstTokenMs = *firstToken;
  auto attempts = optionalNumber("attempts");
  if (!attempts)
    return attempts.error();
  completion.attempts = static_cast<int>(attempts->value_or(1));

  if (auto usage = json.find("usage"); usage != json.end() && !usage->is_null()) {
    if (!usage->is_object())
      return invalid("\"usage\" is not an object");
    for (auto [key, slot] : {std::pair{"prompt_tokens", &completion.usage.promptTokens},
                             std::pair{"completion_tokens", &completion.usage.completionTokens}}) {
      auto it = usage->find(key);
      if (it == usage->end() || it->is_null())
        continue;
      if (!it->is_number_integer())
        return invalid(std::string("\"usage.") + key + "\" is not an integer");
      *slot = it->get<int64_t>();
    }
    completion.usage.reported = true;
  }
  return completion;
}

std::string dumpJson(const nlohmann::json &json) {
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace ptxforge::llm
