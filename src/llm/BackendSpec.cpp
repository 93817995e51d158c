// Spec parsing, options and their environment twins, and the backend factory.
#include "llm/BackendSpec.h"

#include "llm/AnthropicBackend.h"
#include "llm/BatchBackend.h"
#include "llm/ExecBackend.h"
#include "llm/OpenAiBackend.h"
#include "llm/ReplayBackend.h"
#include "support/InputReader.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace ptxforge::llm {

namespace {

constexpr std::array<const char *, 5> kKinds = {"openai", "anthropic", "exec", "replay", "batch"};

Result<std::chrono::milliseconds> parseSeconds(const std::string &variable, const std::string &text) {
  double seconds = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(seconds) || seconds < 0 ||
      seconds > 1e7)
    return makeError(ErrorKind::InvalidInput,
                     variable + "=" + text + ": expected a number of seconds, e.g. 30 or 0.5");
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000)));
}

} // namespace

const char *defaultGrammarFormat(std::string_view flavour) { return flavour == "llamacpp" ? "gbnf" : "ebnf"; }

Result<BackendSpec> parseBackendSpec(std::string_view text) {
  auto kindsList = [] {
    std::string list;
    for (const char *kind : kKinds)
      list += std::string(list.empty() ? "" : ", ") + kind;
    return list;
  };
  size_t colon = text.find(':');
  if (colon == std::string_view::npos)
    return makeError(ErrorKind::InvalidInput, "model spec `" + std::string(text) +
                                                  "` is not BACKEND:NAME (e.g. openai:gpt-4o); backends: " +
                                                  kindsList());
  BackendSpec spec{std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
  bool known = false;
  for (const char *kind : kKinds)
    known = known || spec.backend == kind;
  if (!known)
    return makeError(ErrorKind::InvalidInput,
                     "unknown model backend `" + spec.backend + "` in `" + std::string(text) + "`; backends: " +
                         kindsList());
  if (spec.name.find_first_not_of(" \t") == std::string::npos) {
    const char *what = spec.backend == "exec"     ? "a command, e.g. exec:./my-model.sh"
                       : spec.backend == "replay" ? "a recording, e.g. replay:run.jsonl"
                                                  : "a model name, e.g. openai:gpt-4o";
    return makeError(ErrorKind::InvalidInput, "model spec `" + std::string(text) + "` needs " + what);
  }
  return spec;
}

EnvironmentLookup processEnvironment() {
  return [](const std::string &name) -> std::optional<std::string> {
    const char *value = std::getenv(name.c_str());
    if (!value)
      return std::nullopt;
    return std::string(value);
  };
}

Result<BackendOptions> optionsFromEnvironment(const EnvironmentLookup &environment) {
  BackendOptions options;
  options.environment = environment;
  auto get = [&](const char *name) -> std::optional<std::string> {
    std::optional<std::string> value = environment(name);
    if (value && value->empty())
      return std::nullopt;
    return value;
  };
  // OPENAI_BASE_URL / ANTHROPIC_BASE_URL are read by their backends at creation.
  if (auto value = get("PTXFORGE_BASE_URL"))
    options.baseUrl = *value;
  for (auto [name, slot] : {std::pair{"PTXFORGE_CONNECT_TIMEOUT", &options.connectTimeout},
                            std::pair{"PTXFORGE_REQUEST_TIMEOUT", &options.requestTimeout},
                            std::pair{"PTXFORGE_STALL_TIMEOUT", &options.stallTimeout},
                            std::pair{"PTXFORGE_RETRY_BACKOFF", &options.initialBackoff},
                            std::pair{"PTXFORGE_MAX_RETRY_AFTER", &options.maxRetryAfter}}) {
    if (auto value = get(name)) {
      auto parsed = parseSeconds(name, *value);
      if (!parsed)
        return parsed.error();
      *slot = *parsed;
    }
  }
  if (auto value = get("PTXFORGE_RETRIES")) {
    int retries = 0;
    auto [end, error] = std::from_chars(value->data(), value->data() + value->size(), retries);
    if (error != std::errc() || end != value->data() + value->size() || retries < 0 || retries > 100)
      return makeError(ErrorKind::InvalidInput, "PTXFORGE_RETRIES=" + *value + ": expected an integer 0..100");
    options.maxRetries = retries;
  }
  for (auto [name, slot] : {std::pair{"PTXFORGE_MAX_RESPONSE_BYTES", &options.maxResponseBytes},
                            std::pair{"PTXFORGE_MAX_SSE_LINE_BYTES", &options.maxSseLineBytes}}) {
    if (auto value = get(name)) {
      Result<size_t> bytes = parseByteSize(*value);
      if (!bytes)
        return makeError(ErrorKind::InvalidInput,
                         std::string(name) + "=" + *value + ": expected a byte count such as 65536, 64M or 1G");
      *slot = *bytes;
    }
  }
  if (auto value = get("PTXFORGE_API_KEY_ENV"))
    options.apiKeyVariable = *value;
  if (auto value = get("PTXFORGE_RECORD"))
    options.recordPath = *value;
  if (auto value = get("PTXFORGE_BATCH_FILE"))
    options.batchFile = *value;
  if (auto value = get("PTXFORGE_BATCH_RESULTS")) {
    std::string_view rest = *value;
    while (!rest.empty()) {
      size_t colon = rest.find(':');
      if (colon != 0)
        options.batchResults.emplace_back(rest.substr(0, colon));
      if (colon == std::string_view::npos)
        break;
      rest.remove_prefix(colon + 1);
    }
  }
  if (auto value = get("PTXFORGE_ANTHROPIC_VERSION"))
    options.anthropicVersion = *value;
  if (auto value = get("PTXFORGE_SERVER_FLAVOUR"))
    options.serverFlavour = *value; // checked when the openai backend is created
  return options;
}

std::optional<std::string> modelSpecFromEnvironment(const EnvironmentLookup &environment) {
  std::optional<std::string> value = environment("PTXFORGE_MODEL");
  if (value && value->empty())
    return std::nullopt;
  return value;
}

Result<std::unique_ptr<Backend>> createBackend(const BackendSpec &spec, const BackendOptions &options) {
  Result<std::unique_ptr<Backend>> backend = makeError(ErrorKind::InvalidInput, "unknown backend " + spec.backend);
  if (!options.guidedGrammar.empty() && spec.backend != "openai")
    return makeError(ErrorKind::InvalidInput, "--guided sends a grammar to an OpenAI-compatible server (vLLM, SGLang, "
                                              "llama.cpp): it needs the openai backend, not " + spec.backend);
  if (spec.backend == "openai")
    backend = OpenAiBackend::create(spec.name, options);
  else if (spec.backend == "anthropic")
    backend = AnthropicBackend::create(spec.name, options);
  else if (spec.backend == "exec")
    backend = ExecBackend::create(spec.name, options);
  else if (spec.backend == "replay")
    backend = ReplayBackend::create(spec.name);
  else if (spec.backend == "batch")
    backend = BatchBackend::create(spec.name, options);
  if (!backend || options.recordPath.empty())
    return backend;
  return RecordingBackend::create(std::move(*backend), options.recordPath);
}

Result<std::unique_ptr<Backend>> openBackend(std::string_view spec, const BackendOptions &options) {
  Result<BackendSpec> parsed = parseBackendSpec(spec);
  if (!parsed)
    return parsed.error();
  return createBackend(*parsed, options);
}

} // namespace ptxforge::llm
