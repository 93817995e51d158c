// Request/Completion helpers: validation, name tables and the JSON forms.
#include "llm/Request.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ptxforge::llm {

const char *roleName(Role role) {
  switch (role) {
  case Role::System: return "system";
  case Role::User: return "user";
  case Role::Assistant: return "assistant";
  }
  return "user";
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
  if (completion.usage.reported) {
    json["usage"] = {{"prompt_tokens", completion.usage.promptTokens},
                     {"completion_tokens", completion.usage.completionTokens}};
    if (!completion.usage.note.empty())
      json["usage"]["note"] = completion.usage.note;
  }
  if (!completion.model.empty())
    json["model"] = completion.model;
  if (!completion.backend.empty())
    json["backend"] = completion.backend;
  json["latency_ms"] = completion.latencyMs;
  if (completion.firstTokenMs)
    json["first_token_ms"] = *completion.firstTokenMs;
  if (completion.attempts != 1)
    json["attempts"] = completion.attempts;
  if (!completion.replayedBy.empty())
    json["replayed_by"] = completion.replayedBy;
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
      *slot = jsonTokenCount(*it); // never wrapped to a negative number
    }
    if (auto note = usage->find("note"); note != usage->end() && note->is_string())
      completion.usage.note = note->get<std::string>();
    completion.usage.reported = true;
  }
  return completion;
}

int64_t jsonTokenCount(const nlohmann::json &value) {
  if (!value.is_number_integer())
    return 0;
  if (value.is_number_unsigned())
    return static_cast<int64_t>(std::min<uint64_t>(value.get<uint64_t>(), static_cast<uint64_t>(INT64_MAX)));
  return value.get<int64_t>();
}

int64_t addTokenCounts(int64_t a, int64_t b) {
  if (a < 0 || b < 0)
    return std::min(a, b);
  return a > INT64_MAX - b ? INT64_MAX : a + b;
}

void sanitizeUsage(Completion &completion, const Request &request) {
  Usage &usage = completion.usage;
  if (!usage.reported)
    return;
  std::string note;
  auto replace = [&](const char *name, int64_t &count, int64_t instead, const char *why) {
    note += std::string(note.empty() ? "" : "; ") + name + " " + std::to_string(count) + " " + why + ", counted as " +
            std::to_string(instead);
    count = instead;
  };
  if (usage.promptTokens < 0) {
    size_t bytes = request.prompt ? request.prompt->size() : 0;
    for (const Message &message : request.messages)
      bytes += message.content.size();
    replace("prompt_tokens", usage.promptTokens,
            static_cast<int64_t>(std::min<size_t>(bytes, static_cast<size_t>(kMaxPlausibleTokens))), "is negative");
  } else if (usage.promptTokens > kMaxPlausibleTokens) {
    replace("prompt_tokens", usage.promptTokens, kMaxPlausibleTokens, "is implausible");
  }
  if (usage.completionTokens < 0) {
    int64_t instead = request.maxTokens ? *request.maxTokens
                                        : static_cast<int64_t>(std::min<size_t>(completion.text.size(),
                                                                                static_cast<size_t>(kMaxPlausibleTokens)));
    replace("completion_tokens", usage.completionTokens, instead, "is negative");
  } else if (usage.completionTokens > kMaxPlausibleTokens) {
    replace("completion_tokens", usage.completionTokens, kMaxPlausibleTokens, "is implausible");
  }
  if (!note.empty())
    usage.note = usage.note.empty() ? note : usage.note + "; " + note;
}

std::string dumpJson(const nlohmann::json &json) {
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace ptxforge::llm
