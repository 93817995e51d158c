// Canonical request JSON and its hash (support/Sha256.h).
#include "llm/RequestHash.h"

#include "support/Sha256.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>

namespace ptxforge::llm {

nlohmann::json canonicalRequestJson(const Request &request) {
  // nlohmann::json objects keep keys sorted, which makes the dump canonical.
  nlohmann::json json = nlohmann::json::object();
  json["v"] = 1;
  if (!request.model.empty())
    json["model"] = request.model;
  if (request.prompt) {
    json["prompt"] = *request.prompt;
  } else {
    nlohmann::json messages = nlohmann::json::array();
    for (const Message &message : request.messages)
      messages.push_back({{"role", roleName(message.role)}, {"content", message.content}});
    json["messages"] = std::move(messages);
  }
  if (request.temperature)
    json["temperature"] = *request.temperature;
  if (request.topP)
    json["top_p"] = *request.topP;
  if (request.maxTokens)
    json["max_tokens"] = *request.maxTokens;
  if (request.seed)
    json["seed"] = *request.seed;
  if (!request.stop.empty())
    json["stop"] = request.stop;
  return json;
}

std::string canonicalRequestText(const Request &request) { return dumpJson(canonicalRequestJson(request)); }

std::string requestHash(const Request &request) { return sha256Hex(canonicalRequestText(request)); }

} // namespace ptxforge::llm
