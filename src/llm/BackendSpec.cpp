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

constexpr std::array<const char *, 4> kFlavours = {"vllm", "vllm-legacy", "sglang", "llamacpp"};

constexpr std::array<BackendOptionDoc, 22> kOptionTable = {{
    {"--model", "PTXFORGE_MODEL", "model backend as BACKEND:NAME (openai:MODEL, anthropic:MODEL, exec:COMMAND, "
                                  "replay:FILE.jsonl, batch:MODEL)"},
    {"--base-url", "PTXFORGE_BASE_URL", "endpoint root of an openai or anthropic server (default: the vendor's API)"},
    {"--connect-timeout", "PTXFORGE_CONNECT_TIMEOUT", "seconds to wait for a connection (default 10)"},
    {"--request-timeout", "PTXFORGE_REQUEST_TIMEOUT", "seconds one attempt (or one exec run) may take (default 600)"},
    {"--stall-timeout", "PTXFORGE_STALL_TIMEOUT", "seconds a stream may go silent before the attempt is retried "
                                                  "(default 60)"},
    {"--retries", "PTXFORGE_RETRIES", "retries on 429, 5xx, broken connections and stalls (default 4)"},
    {"--retry-backoff", "PTXFORGE_RETRY_BACKOFF", "seconds before the first retry, doubling up to 30 (default 1)"},
    {"--max-retry-after", "PTXFORGE_MAX_RETRY_AFTER", "longest Retry-After in seconds that is waited out "
                                                      "(default 120)"},
    {"--api-key-env", "PTXFORGE_API_KEY_ENV", "name of the environment variable that holds the API key"},
    {"--record", "PTXFORGE_RECORD", "append every completion to this JSONL file (replay it with replay:FILE)"},
    {"--batch-file", "PTXFORGE_BATCH_FILE", "batch: where to write the requests not answered yet "
                                            "(default ptxforge-batch.jsonl)"},
    {"--batch-results", "PTXFORGE_BATCH_RESULTS", "batch: Batch-API output/error files to answer from "
                                                  "(':'-separated in the environment)"},
    {"--anthropic-version", "PTXFORGE_ANTHROPIC_VERSION", "anthropic-version header (default 2023-06-01)"},
    {"--guided", "PTXFORGE_GUIDED", "openai: constrain decoding with the PTX grammar (`ptxforge grammar`), sent in "
                                    "the field of --server-flavour (docs/guided.md)"},
    {"--server-flavour", "PTXFORGE_SERVER_FLAVOUR", "openai with --guided: vllm (structured_outputs.grammar), "
                                                    "vllm-legacy (guided_grammar), sglang (ebnf), llamacpp (grammar); "
                                                    "default vllm"},
    {"--guided-format", "PTXFORGE_GUIDED_FORMAT", "openai with --guided: the grammar's format, gbnf, lark or ebnf "
                                                  "(default: gbnf for llamacpp, ebnf for the others)"},
    {"", "PTXFORGE_MAX_RESPONSE_BYTES", "largest HTTP response body, streamed or not, e.g. 256M (default 64M)"},
    {"", "PTXFORGE_MAX_SSE_LINE_BYTES", "largest line or event of a streamed answer, e.g. 64M (default 8M)"},
    {"", "OPENAI_BASE_URL", "openai: base URL when neither --base-url nor PTXFORGE_BASE_URL is given"},
    {"", "ANTHROPIC_BASE_URL", "anthropic: base URL when neither --base-url nor PTXFORGE_BASE_URL is given"},
    {"", "OPENAI_API_KEY", "openai and batch: API key (environment only; never stored or logged)"},
    {"", "ANTHROPIC_API_KEY", "anthropic: API key (environment only; never stored or logged)"},
}};

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

std::span<const char *const> backendKinds() { return kKinds; }

std::span<const BackendOptionDoc> backendOptionTable() { return kOptionTable; }

std::span<const char *const> serverFlavours() { return kFlavours; }

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
