// Streaming checks with backtracking (GuidedStream.h): the cutter's scan of a
// growing answer, the continuation request, and the loop that joins the
// segments of one answer.
#include "solve/GuidedStream.h"

#include "llm/RequestHash.h"
#include "ptx/Prefix.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace ptxforge::solve {

namespace {

std::string_view trimLeft(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  return text;
}

std::string_view trimRight(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

bool isFence(std::string_view trimmed) { return trimmed.starts_with("```") || trimmed.starts_with("~~~"); }

/// The fence's info string, lower case: "```PTX  " → "ptx".
std::string fenceLanguage(std::string_view trimmed) {
  std::string_view info = trimRight(trimLeft(trimmed.substr(3)));
  while (!info.empty() && (info.front() == '`' || info.front() == '~')) info.remove_prefix(1);
  std::string language(trimLeft(info));
  if (size_t space = language.find_first_of(" \t{"); space != std::string::npos) language.resize(space);
  for (char &c : language) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return language;
}

/// One line of text for a comment: line breaks and control bytes become spaces.
std::string oneLine(std::string_view text, size_t limit) {
  std::string line;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    line.push_back(u < 0x20 || u == 0x7f ? ' ' : c);
    if (line.size() >= limit) {
      line += "...";
      break;
    }
  }
  return std::string(trimRight(line));
}

void addUsage(llm::Usage &total, const llm::Usage &usage) {
  if (!usage.reported) return;
  total.reported = true;
  total.promptTokens = llm::addTokenCounts(total.promptTokens, usage.promptTokens);
  total.completionTokens = llm::addTokenCounts(total.completionTokens, usage.completionTokens);
  if (!usage.note.empty()) total.note += (total.note.empty() ? "" : "; ") + usage.note;
}

} // namespace

const char *continueModeName(ContinueMode mode) {
  return mode == ContinueMode::Prefill ? "prefill" : "completions";
}

std::optional<ContinueMode> parseContinueMode(std::string_view name) {
  if (name == "prefill") return ContinueMode::Prefill;
  if (name == "completions") return ContinueMode::Completions;
  return std::nullopt;
}

// --- StreamCutter -----------------------------------------------------------

StreamCutter::StreamCutter(std::string kept, ptx::LintOptions lint) : lint_(std::move(lint)) {
  // The limits are the prefix checker's business; its first error is all we use.
  replaying_ = true;
  (void)feed(kept);
  replaying_ = false;
  protectedEnd_ = text_.size();
}

std::optional<StreamCut> StreamCutter::feed(std::string_view delta) {
  text_.append(delta);
  // Whole lines only: a statement's boundary is followed by its line's end,
  // and checking once per line costs one parse per line of the answer.
  for (size_t newline = text_.find('\n', lineStart_); newline != std::string::npos;
       newline = text_.find('\n', lineStart_)) {
    size_t start = lineStart_;
    lineStart_ = newline + 1;
    if (std::optional<StreamCut> cut = processLine(start, newline + 1)) return cut;
  }
  return std::nullopt;
}

std::optional<StreamCut> StreamCutter::processLine(size_t lineStart, size_t lineEnd) {
  std::string_view line(text_.data() + lineStart, lineEnd - lineStart);
  std::string_view trimmed = trimRight(trimLeft(line));
  switch (state_) {
  case State::Prose:
    if (trimmed.find("<think>") != std::string_view::npos &&
        trimmed.find("</think>") == std::string_view::npos) {
      state_ = State::Think;
    } else if (isFence(trimmed)) {
      ptxStart_ = lineEnd;
      if (fenceLanguage(trimmed) == "ptx") {
        state_ = State::PtxFence;
        sawPtx_ = true;
      } else {
        state_ = State::Fence; // PTX when its first line looks like PTX
      }
    } else if (trimmed.starts_with(".version") || trimmed.starts_with(".target")) {
      state_ = State::PtxBare;
      ptxStart_ = lineStart;
      sawPtx_ = true;
      return check(lineEnd);
    }
    return std::nullopt;
  case State::Think:
    if (trimmed.find("</think>") != std::string_view::npos) state_ = State::Prose;
    return std::nullopt;
  case State::Fence:
    if (trimmed.empty()) return std::nullopt;
    if (isFence(trimmed)) {
      state_ = State::Prose;
    } else if (trimmed.starts_with(".") || trimmed.starts_with("//")) {
      state_ = State::PtxFence;
      sawPtx_ = true;
      return check(lineEnd);
    } else {
      state_ = State::Code;
    }
    return std::nullopt;
  case State::Code:
    if (isFence(trimmed)) state_ = State::Prose;
    return std::nullopt;
  case State::PtxFence:
    if (isFence(trimmed)) {
      state_ = State::Prose;
      return check(lineStart); // the block as closed
    }
    return check(lineEnd);
  case State::PtxBare:
    if (isFence(trimmed)) {
      state_ = State::Prose;
      return check(lineStart);
    }
    return check(lineEnd);
  }
  return std::nullopt;
}

std::optional<StreamCut> StreamCutter::check(size_t end) {
  if (done_ || replaying_ || end <= ptxStart_) return std::nullopt;
  // Nothing new but blanks or a comment line: the answer is the last one's.
  std::string_view added = end > checkedUpTo_ && checkedUpTo_ >= ptxStart_
                               ? std::string_view(text_).substr(checkedUpTo_, end - checkedUpTo_)
                               : std::string_view(text_).substr(ptxStart_, end - ptxStart_);
  std::string_view addedTrimmed = trimRight(trimLeft(added));
  checkedUpTo_ = end;
  if (addedTrimmed.empty() || (addedTrimmed.starts_with("//") && addedTrimmed.find('\n') == std::string_view::npos))
    return std::nullopt;
  ++checks_;
  ptx::PrefixCheck result = ptx::checkPrefix(std::string_view(text_).substr(ptxStart_, end - ptxStart_), lint_);
  if (!result.error) return std::nullopt;
  done_ = true;
  size_t keep = ptxStart_ + result.validBytes;
  // An error in text already accepted (the kept part of an earlier cut) is
  // not this stream's to cut: the gate will judge it.
  if (keep < protectedEnd_) return std::nullopt;
  StreamCut cut;
  cut.keepBytes = keep;
  cut.diagnostic = *result.error;
  size_t lineEnd = text_.find('\n', keep);
  cut.statement = std::string(trimRight(trimLeft(
      std::string_view(text_).substr(keep, lineEnd == std::string::npos ? std::string::npos : lineEnd - keep))));
  return cut;
}

// --- continuation ------------------------------------------------------------

std::string cutComment(const StreamCut &cut) {
  const ptx::Diagnostic &d = cut.diagnostic;
  std::string comment = fmt::format("// ptxforge: stopped at line {}, `{}`: {}: {}", d.line, oneLine(cut.statement, 160),
                                    d.code, oneLine(d.message, 400));
  if (!d.hint.empty()) comment += "; hint: " + oneLine(d.hint, 300);
  comment += ". Continuing from here with that line corrected.";
  return comment;
}

std::string renderChat(const std::vector<llm::Message> &messages) {
  std::string text;
  for (const llm::Message &message : messages) {
    std::string_view role = message.role == llm::Role::System ? "System"
                            : message.role == llm::Role::User ? "User"
                                                              : "Assistant";
    text += fmt::format("{}:\n{}\n\n", role, message.content);
  }
  return text + "Assistant:\n";
}

llm::Request continuationRequest(const llm::Request &original, std::string_view kept, const StreamCut &cut,
                                 ContinueMode mode) {
  llm::Request next = original;
  // The comment ends the prefill: no trailing blank (the Messages API refuses
  // a final assistant message that ends with whitespace).
  std::string prefill = std::string(trimRight(kept)) + "\n" + cutComment(cut);
  if (original.isRawPrompt()) {
    next.prompt = *original.prompt + prefill;
  } else if (mode == ContinueMode::Completions) {
    next.prompt = renderChat(original.messages) + prefill;
    next.messages.clear();
  } else {
    next.messages.push_back({llm::Role::Assistant, std::move(prefill)});
  }
  return next;
}

nlohmann::json cutToJson(const StreamCut &cut) {
  const ptx::Diagnostic &d = cut.diagnostic;
  return {{"code", d.code},       {"severity", ptx::severityName(d.severity)},
          {"line", d.line},       {"column", d.column},
          {"message", d.message}, {"hint", d.hint},
          {"statement", cut.statement}};
}

// --- the loop -------------------------------------------------------------------

Result<llm::Completion> completeWithStreamChecks(llm::Backend &backend, const llm::Request &request,
                                                 const GuidedStreamOptions &options, const llm::CallContext &context,
                                                 const std::function<void(const StreamSegment &)> &onSegment,
                                                 nlohmann::json *summary) {
  llm::Request original = request;
  original.stream = true;
  llm::Request current = original;
  std::string kept; // the answer accepted so far (empty before the first cut)
  int cuts = 0, checks = 0;
  nlohmann::json cutCodes = nlohmann::json::array();
  llm::Completion joined;
  double latencyMs = 0;
  int attempts = 0;
  llm::Usage usage;

  for (int seq = 0;; ++seq) {
    const bool checking = cuts < std::max(0, options.maxBacktracks);
    std::optional<StreamCutter> cutter;
    std::optional<StreamCut> cut;
    size_t fed = 0; // bytes of this request's text given to the cutter
    auto restart = [&] {
      cutter.emplace(kept);
      cut.reset();
      fed = 0;
    };
    restart();
    auto give = [&](std::string_view delta) {
      if (delta.empty()) return;
      // A continuation goes on after the comment line that ended the prefill.
      if (seq > 0 && fed == 0 && delta.front() != '\n' && delta.front() != '\r') (void)cutter->feed("\n");
      fed += delta.size();
      std::optional<StreamCut> found = cutter->feed(delta);
      if (checking && found && !cut) cut = std::move(found);
    };
    llm::CallContext call;
    call.stop = context.stop;
    call.position = context.position;
    call.onRetry = [&](const llm::RetryNotice &notice) {
      restart(); // the text starts over
      if (context.onRetry) context.onRetry(notice);
    };
    call.onText = [&](std::string_view delta) {
      give(delta);
      if (context.onText) context.onText(delta);
    };
    call.stopAfter = [&](std::string_view) { return cut.has_value(); };

    StreamSegment segment;
    segment.seq = seq;
    segment.mode = options.continueMode;
    segment.request = current;
    segment.requestHash = llm::requestHash(current);
    Result<llm::Completion> completion = backend.complete(current, call);
    if (!completion) {
      segment.error = completion.error().message;
      if (onSegment) onSegment(segment);
      return completion.error();
    }
    if (completion->pending())
      return makeError(ErrorKind::InvalidInput,
                       "--guided-stream needs answers as they are written; a batch backend answers later");
    // A backend that does not pass its text to onText (or passed part of it).
    if (fed < completion->text.size()) give(std::string_view(completion->text).substr(fed));
    checks += cutter->checks();
    segment.completion = *completion;
    segment.text = completion->text;
    addUsage(usage, completion->usage);
    latencyMs += completion->latencyMs;
    attempts += completion->attempts;
    if (seq == 0) joined.firstTokenMs = completion->firstTokenMs;
    joined.backend = completion->backend;
    joined.model = completion->model;
    joined.finishReason = completion->finishReason;
    joined.rawFinishReason = completion->rawFinishReason;
    if (cut) {
      segment.cut = cut;
      segment.cutAt = cut->keepBytes;
      ++cuts;
      cutCodes.push_back(cut->diagnostic.code);
      if (onSegment) onSegment(segment);
      kept = std::string(trimRight(std::string_view(cutter->text()).substr(0, cut->keepBytes)));
      current = continuationRequest(original, kept, *cut, options.continueMode);
      continue;
    }
    if (onSegment) onSegment(segment);
    joined.text = cutter->text();
    if (summary)
      *summary = {{"requests", seq + 1},
                  {"cuts", cuts},
                  {"checks", checks},
                  {"cut_codes", cutCodes},
                  {"mode", continueModeName(options.continueMode)}};
    break;
  }
  // The deltas the cutter saw are not scrubbed (Backend.h); the joined answer is.
  std::vector<std::string> secrets = llm::environmentSecrets();
  if (!secrets.empty()) joined.text = llm::scrubSecrets(std::move(joined.text), secrets);
  joined.usage = usage;
  joined.latencyMs = latencyMs;
  joined.attempts = attempts;
  joined.requestHash = llm::requestHash(request);
  return joined;
}

} // namespace ptxforge::solve
