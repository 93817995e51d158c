// Backend::complete: the checks and bookkeeping every backend shares.
#include "llm/Backend.h"

#include "llm/RequestHash.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

extern char **environ;

namespace ptxforge::llm {

std::vector<std::string> environmentSecrets() {
  std::vector<std::string> secrets;
  const char *named = std::getenv("PTXFORGE_API_KEY_ENV");
  for (char **entry = environ; entry && *entry; ++entry) {
    std::string_view variable = *entry;
    size_t equals = variable.find('=');
    if (equals == std::string_view::npos)
      continue;
    std::string_view name = variable.substr(0, equals), value = variable.substr(equals + 1);
    bool secret = name == "OPENAI_API_KEY" || name == "ANTHROPIC_API_KEY" || (named && name == named);
    for (std::string_view suffix : {"_API_KEY", "_KEY_ID", "_SECRET", "_PASSWORD", "_TOKEN"})
      secret = secret || name.ends_with(suffix);
    if (secret && value.size() >= 8)
      secrets.emplace_back(value);
  }
  // Longest first: a key that contains another is replaced whole.
  std::sort(secrets.begin(), secrets.end(), [](const std::string &a, const std::string &b) { return a.size() > b.size(); });
  return secrets;
}

std::string scrubSecrets(std::string text, const std::vector<std::string> &secrets) {
  constexpr size_t kMinFragment = 16;
  const std::string redacted = "[redacted]";
  for (const std::string &secret : secrets) {
    for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + redacted.size()))
      text.replace(at, secret.size(), redacted);
    // A cut tail: the end of the secret at the start of the text or of a line.
    for (size_t length = secret.size() - 1; length >= kMinFragment && length < secret.size(); --length) {
      std::string_view fragment = std::string_view(secret).substr(secret.size() - length);
      for (size_t at = text.find(fragment); at != std::string::npos; at = text.find(fragment, at + 1))
        if (at == 0 || text[at - 1] == '\n') {
          text.replace(at, length, redacted);
          at += redacted.size() - 1;
        }
    }
  }
  return text;
}

Result<Completion> Backend::complete(const Request &request, const CallContext &context) {
  if (auto valid = validateRequest(request); !valid) {
    Error error = valid.error(); // keeps its code and location
    error.message = kind() + ": " + error.message;
    return error;
  }
  std::string hash = requestHash(request);
  Result<Completion> completion = completeValid(request, hash, context);
  std::vector<std::string> secrets = environmentSecrets();
  if (!completion) {
    Error error = completion.error();
    error.message = scrubSecrets(std::move(error.message), secrets);
    return error;
  }
  if (!secrets.empty()) {
    completion->text = scrubSecrets(std::move(completion->text), secrets);
    completion->model = scrubSecrets(std::move(completion->model), secrets);
  }
  {
    // Every backend's numbers, recorded or live, are added up against budgets.
    sanitizeUsage(*completion, request);
    completion->requestHash = hash;
    if (completion->backend.empty())
      completion->backend = kind();
  }
  return completion;
}

} // namespace ptxforge::llm
