// Streaming checks with backtracking (solve/eval --guided-stream,
// docs/guided.md): the PTX of an answer is checked at each statement boundary
// as it streams in; at the first error no continuation can fix
// (ptx::checkPrefix), the stream is stopped and the model continues from the
// last valid statement, told the error, instead of writing a whole module and
// paying for a repair round.
//
//   StreamCutter        finds the PTX in the text as it grows (a ```ptx fence,
//                       another fence that opens with PTX, or bare PTX from a
//                       `.version`/`.target` line; not inside <think>) and
//                       checks it statement by statement: the pure logic.
//   continuationRequest the request that continues from a cut: the kept text
//                       ends in a PTX comment with the diagnostic, sent as the
//                       assistant's prefill (a final assistant message) or,
//                       for plain completions, appended to the rendered chat.
//   completeWithStreamChecks  the loop: stream, cut, continue, at most
//                       maxBacktracks cuts per answer; every request a segment.
#pragma once

#include "llm/Backend.h"
#include "ptx/Diagnostic.h"
#include "ptx/Lint.h"
#include "support/Result.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::solve {

/// How a cut answer continues.
enum class ContinueMode {
  Prefill,     ///< the chat plus a final assistant message holding the kept text (Anthropic, vLLM, SGLang, llama.cpp)
  Completions, ///< a raw prompt: the chat rendered as text, then the kept text (the completions endpoint)
};
const char *continueModeName(ContinueMode mode);
std::optional<ContinueMode> parseContinueMode(std::string_view name);

struct GuidedStreamOptions {
  bool enabled = false;
  /// Cuts per answer; after that many the answer streams to its end unchecked
  /// and the gate judges it as it is.
  int maxBacktracks = 3;
  ContinueMode continueMode = ContinueMode::Prefill;
};

/// Where an answer was cut.
struct StreamCut {
  size_t keepBytes = 0;        ///< bytes of the answer kept: up to the start of the error's line
  ptx::Diagnostic diagnostic;  ///< located in the PTX block (line 1 = the block's first line)
  std::string statement;       ///< the line that holds the error, as the model wrote it
};

/// Checks the PTX of a growing answer. Feed it the text as it arrives; it
/// says where to cut at the first complete statement with an unfixable error.
/// Checks run once per line (and at a closing fence), so an answer fed in one
/// piece is cut exactly where the same answer streamed token by token would be.
class StreamCutter {
public:
  /// `kept`: text already accepted (the kept part of a cut answer): scanned
  /// for where the PTX is, but never cut again; errors inside it do not count.
  explicit StreamCutter(std::string kept = {}, ptx::LintOptions lint = {});

  /// Appends `delta`; a cut when the PTX now holds an unfixable error. After a
  /// cut, further text is appended but not checked.
  std::optional<StreamCut> feed(std::string_view delta);
  /// The text so far (kept + everything fed).
  const std::string &text() const { return text_; }
  /// Whether a PTX block has been found (open or closed).
  bool sawPtx() const { return sawPtx_; }
  /// Checks run (checkPrefix calls), for tests and the record.
  int checks() const { return checks_; }

private:
  enum class State { Prose, Think, Fence, Code, PtxFence, PtxBare };
  std::optional<StreamCut> processLine(size_t lineStart, size_t lineEnd);
  std::optional<StreamCut> check(size_t end);

  std::string text_;
  size_t protectedEnd_ = 0;  ///< bytes that are never cut
  size_t lineStart_ = 0;     ///< start of the line not yet processed as complete
  State state_ = State::Prose;
  size_t ptxStart_ = 0;      ///< where the current PTX block's text begins
  size_t checkedUpTo_ = 0;   ///< the block's bytes already covered by a check (absolute)
  bool sawPtx_ = false;
  bool done_ = false;        ///< cut, or an error in the protected part: no more checks
  bool replaying_ = false;   ///< scanning `kept`: no checks
  int checks_ = 0;
  ptx::LintOptions lint_;
};

/// The text of a PTX comment that tells the model why its answer was cut,
/// one line: "// ptxforge: the line `...` was cut: line 12: unknown-instruction: ...; hint: ...".
std::string cutComment(const StreamCut &cut);

/// The request that continues `original` after a cut: `kept` (the answer up
/// to the cut, trailing blanks dropped) then a newline and cutComment(cut), as
/// a final assistant message (Prefill) or appended to the chat rendered as
/// text (Completions: "System:\n…\n\nUser:\n…\n\nAssistant:\n" then the text).
/// The sampling parameters, seed and stream flag are the original's.
llm::Request continuationRequest(const llm::Request &original, std::string_view kept, const StreamCut &cut,
                                 ContinueMode mode);

/// The chat of `request` as plain text, as Completions mode sends it.
std::string renderChat(const std::vector<llm::Message> &messages);

/// One request of a checked answer.
struct StreamSegment {
  int seq = 0;
  ContinueMode mode = ContinueMode::Prefill; ///< how a continuation (seq > 0) was sent
  llm::Request request;
  std::string requestHash;
  std::optional<llm::Completion> completion; ///< none when the request failed
  std::string error;                         ///< the backend's message when it failed
  std::string text;                          ///< what arrived
  std::optional<StreamCut> cut;
  size_t cutAt = 0; ///< with a cut: bytes of the joined answer kept (cut->keepBytes)
};

/// Calls the backend with streaming checks: `request` is sent streamed; at a
/// cut the stream is stopped (CallContext::stopAfter; an answer that arrives
/// in one piece is cut after the fact) and the continuation sent, up to
/// options.maxBacktracks times. `onSegment` is told each request when it ends
/// (to record it). The completion returned is the joined answer: the kept
/// text of each cut segment and the last segment's text, with the usage of
/// every request added up and the latencies summed; the model, backend and
/// finish reason are the last request's. `summary` (when given) gets
/// {"requests", "cuts", "checks", "cut_codes": [...]}. An error when a request
/// fails (its segment is still reported) or a batch backend answers pending.
Result<llm::Completion> completeWithStreamChecks(llm::Backend &backend, const llm::Request &request,
                                                 const GuidedStreamOptions &options, const llm::CallContext &context,
                                                 const std::function<void(const StreamSegment &)> &onSegment,
                                                 nlohmann::json *summary = nullptr);

/// A cut's diagnostic as stored ({code, severity, line, column, message, hint, statement}).
nlohmann::json cutToJson(const StreamCut &cut);

} // namespace ptxforge::solve
