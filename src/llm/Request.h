// Request and Completion: the data that flows between a caller (the solve loop)
// and a model backend, and their JSON forms (replay records, the exec protocol).
#pragma once

#include "support/Result.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::llm {

/// Who speaks a chat message.
enum class Role { System, User, Assistant };

/// "system", "user" or "assistant" (the wire names of both HTTP APIs).
const char *roleName(Role role);

/// One chat message.
struct Message {
  Role role = Role::User;
  std::string content;
};

/// What a caller asks a model. Either a chat (`messages`) or a raw prompt
/// (`prompt`, sent to the plain completions endpoint), never both.
///
/// Unset optionals are not sent, so the server's defaults apply. `model` is
/// normally left empty: the backend then uses the model of its spec
/// (`openai:gpt-4o` → "gpt-4o"); a non-empty `model` overrides it.
struct Request {
  std::vector<Message> messages;
  std::optional<std::string> prompt;
  std::string model;
  std::optional<double> temperature;
  std::optional<double> topP;
  std::optional<int> maxTokens;
  std::optional<int64_t> seed;
  std::vector<std::string> stop;
  /// Ask the server to stream the answer (SSE). The completion is the same
  /// either way; streaming adds a stall timeout, time-to-first-token and live
  /// text through CallContext::onText.
  bool stream = false;

  bool isRawPrompt() const { return prompt.has_value(); }
};

/// Checks the invariants every backend relies on: chat xor raw prompt, no
/// empty stop sequence, sampling parameters in range. InvalidInput otherwise.
Result<void> validateRequest(const Request &request);

/// Why generation stopped, normalized over the APIs. The server's own word is
/// kept in Completion::rawFinishReason.
enum class FinishReason {
  Stop,          ///< natural end or a stop sequence (openai "stop", anthropic "end_turn"/"stop_sequence")
  Length,        ///< token limit (openai "length", anthropic "max_tokens")
  ContentFilter, ///< refused or filtered
  ToolCall,      ///< the model asked for a tool
  Other,         ///< a word this library does not know
  Unknown,       ///< not reported
};

/// Maps a server's finish/stop reason (OpenAI or Anthropic vocabulary).
FinishReason normalizeFinishReason(std::string_view raw);

/// Token accounting as the server reported it. `reported` is false when the
/// server sent none (then the counts are 0, not estimates).
struct Usage {
  int64_t promptTokens = 0;
  int64_t completionTokens = 0;
  bool reported = false;
  /// Set when the server's numbers could not be believed and were replaced
  /// (sanitizeUsage): what it sent and what is counted instead.
  std::string note;
};

/// The most tokens one request is believed to use, per count; a server that
/// reports more (2^63-1, say) is clamped to it, so that sums cannot overflow
/// and a token budget still ends the run.
inline constexpr int64_t kMaxPlausibleTokens = 100'000'000;

/// Complete: `text` is the model's answer. Pending: no answer yet — the batch
/// backend wrote the request to its batch file and the caller should end the
/// round cleanly (see BatchBackend.h).
enum class CompletionStatus { Complete, Pending };

const char *completionStatusName(CompletionStatus status);

/// What a backend returns for one request.
struct Completion {
  CompletionStatus status = CompletionStatus::Complete;
  std::string text;
  FinishReason finishReason = FinishReason::Unknown;
  std::string rawFinishReason;
  Usage usage;
  /// Wall time of the attempt that produced the answer, request sent to last
  /// byte (retries and back-off waits not included; see `attempts`).
  double latencyMs = 0;
  /// Streams only: request sent to the first text delta.
  std::optional<double> firstTokenMs;
  /// HTTP attempts made (1 when the first succeeded).
  int attempts = 1;
  /// The backend that answered: "openai", "anthropic", "exec", "replay", "batch".
  std::string backend;
  /// The model as the server reported it (e.g. "gpt-4o-2024-08-06"); the
  /// requested name when the server reports none.
  std::string model;
  /// requestHash() of the request this answers (RequestHash.h).
  std::string requestHash;
  /// Replays only: "position" when the answer was recorded for another request
  /// at the same place in the run (CallContext::position), not for this one.
  std::string replayedBy;

  bool pending() const { return status == CompletionStatus::Pending; }
};

/// A token count from a server's JSON: an integer (one above INT64_MAX reads
/// as INT64_MAX, never wrapped); 0 for anything else. sanitizeUsage judges it.
int64_t jsonTokenCount(const nlohmann::json &value);

/// a + b for token counts: negative when either is (unknown), else saturating.
int64_t addTokenCounts(int64_t a, int64_t b);

/// Makes reported usage safe to add up against a budget. A negative count is
/// not a count: the prompt's is replaced by the request's size in bytes (no
/// tokenizer makes more tokens than bytes), the completion's by the request's
/// max_tokens (else the answer's size in bytes). A count above
/// kMaxPlausibleTokens is clamped to it. Usage.note says what was replaced.
/// Backend::complete applies it to every completion.
void sanitizeUsage(Completion &completion, const Request &request);

/// JSON form of a completion, as stored in replay records and accepted from an
/// exec model (text, finish_reason, usage{prompt_tokens, completion_tokens},
/// model, backend, latency_ms, first_token_ms, attempts; absent values omitted).
nlohmann::json completionToJson(const Completion &completion);
/// Inverse of completionToJson. Only "text" is required; InvalidInput names
/// the offending field otherwise.
Result<Completion> completionFromJson(const nlohmann::json &json);

/// Serializes JSON compactly; invalid UTF-8 (a model can emit it) is replaced
/// by U+FFFD instead of throwing.
std::string dumpJson(const nlohmann::json &json);

} // namespace ptxforge::llm
