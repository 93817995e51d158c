// Choosing a backend: the `BACKEND:NAME` spec string, the options shared by all
// backends, their environment-variable twins, and the factory.
//
//   openai:MODEL        OpenAI-compatible server (chat/completions, completions)
//   anthropic:MODEL     Anthropic Messages API
//   exec:COMMAND [ARG…] a local program is the model (ExecBackend.h)
//   replay:FILE.jsonl   answers from a recording (ReplayBackend.h)
//   batch:MODEL         writes an OpenAI Batch-API file, resumes from its output (BatchBackend.h)
//
// Only the first ':' separates BACKEND from NAME, so `openai:llama3.1:8b` names
// the model "llama3.1:8b".
//
// API keys are read from the environment only (OPENAI_API_KEY,
// ANTHROPIC_API_KEY, or the variable named by apiKeyVariable), when the backend
// is created. They are never part of BackendOptions, never written to a file,
// and never appear in an error message or describe().
#pragma once

#include "llm/Backend.h"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::llm {

/// A parsed `BACKEND:NAME`.
struct BackendSpec {
  std::string backend; ///< "openai", "anthropic", "exec", "replay", "batch"
  std::string name;    ///< model, command line or file, depending on the backend
};

/// Parses `BACKEND:NAME`. InvalidInput names the valid backends when BACKEND
/// is unknown, and says what NAME should be when it is empty.
Result<BackendSpec> parseBackendSpec(std::string_view text);

/// Looks a variable up; std::nullopt when unset. Tests pass their own.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string &name)>;

/// The process environment (getenv).
EnvironmentLookup processEnvironment();

/// Options shared by the backends; each has an environment twin (the table in
/// docs/llm.md). Precedence: command-line flag > environment > default.
struct BackendOptions {
  /// Endpoint root. Empty: https://api.openai.com/v1 (openai),
  /// https://api.anthropic.com (anthropic). openai appends /chat/completions or
  /// /completions; anthropic appends /v1/messages.
  std::string baseUrl;
  std::chrono::milliseconds connectTimeout{10'000};
  /// Per attempt, whole request; also the exec backend's time limit.
  std::chrono::milliseconds requestTimeout{600'000};
  /// Streams only: no bytes for this long ends the attempt (then retried).
  std::chrono::milliseconds stallTimeout{60'000};
  /// Retries after the first attempt (429, 5xx, broken connection, stall).
  int maxRetries = 4;
  /// Back-off before retry k (0-based) is min(maxBackoff, initialBackoff·2^k),
  /// jittered to between half and all of that, and at least Retry-After.
  std::chrono::milliseconds initialBackoff{1'000};
  std::chrono::milliseconds maxBackoff{30'000};
  /// A Retry-After longer than this is not waited out: the 429/503 is returned.
  std::chrono::milliseconds maxRetryAfter{120'000};
  /// The NAME of the environment variable holding the API key; empty:
  /// OPENAI_API_KEY (openai, batch) or ANTHROPIC_API_KEY (anthropic).
  std::string apiKeyVariable;
  /// anthropic-version header.
  std::string anthropicVersion = "2023-06-01";
  /// anthropic requires max_tokens; used when the request sets none.
  int anthropicDefaultMaxTokens = 4096;
  /// openai streams: ask for usage in the final chunk (stream_options.include_usage).
  bool streamIncludeUsage = true;
  /// Non-empty: wrap the backend in a RecordingBackend appending to this file.
  std::string recordPath;
  /// batch: where this run writes the requests it cannot answer yet.
  std::string batchFile = "ptxforge-batch.jsonl";
  /// batch: Batch-API output (and error) files of earlier rounds to answer from.
  std::vector<std::string> batchResults;
  /// Bytes of one HTTP response body, streamed or not (PTXFORGE_MAX_RESPONSE_BYTES).
  size_t maxResponseBytes = size_t{64} << 20;
  /// Bytes of one SSE line, or of one event's data (PTXFORGE_MAX_SSE_LINE_BYTES).
  size_t maxSseLineBytes = size_t{8} << 20;
  /// Where API keys are read from; null means processEnvironment().
  EnvironmentLookup environment;
  /// openai: a grammar the server constrains decoding with (`--guided`,
  /// docs/guided.md), sent in the field `serverFlavour` names; empty: none.
  std::string guidedGrammar;
  /// openai: the server behind the endpoint, which decides that field: "vllm"
  /// (structured_outputs.grammar, vLLM 0.10.2 and later), "vllm-legacy"
  /// (guided_grammar, before 0.12), "sglang" (ebnf), "llamacpp" (grammar);
  /// PTXFORGE_SERVER_FLAVOUR.
  std::string serverFlavour = "vllm";
};

/// The grammar format a flavour's server reads by default: "gbnf" for
/// llama.cpp, "ebnf" (xgrammar's, which llguidance reads too) for the others.
const char *defaultGrammarFormat(std::string_view flavour);

/// Defaults overridden by the environment twins. InvalidInput names the
/// variable when a value does not parse (e.g. PTXFORGE_RETRIES=many).
Result<BackendOptions> optionsFromEnvironment(const EnvironmentLookup &environment = processEnvironment());

/// PTXFORGE_MODEL, when set and non-empty.
std::optional<std::string> modelSpecFromEnvironment(const EnvironmentLookup &environment = processEnvironment());

/// Creates the backend a spec names, wrapped in a RecordingBackend when
/// options.recordPath is set. Fails early (InvalidInput/Io) on what can be
/// checked without a request: a bad base URL, a missing ANTHROPIC_API_KEY, an
/// exec command that is not executable, an unreadable replay or batch file.
Result<std::unique_ptr<Backend>> createBackend(const BackendSpec &spec, const BackendOptions &options);

/// parseBackendSpec + createBackend.
Result<std::unique_ptr<Backend>> openBackend(std::string_view spec, const BackendOptions &options);

} // namespace ptxforge::llm
