// Completion parsing: see Extract.h for the rules. Works line by line; a
// model's answer is markdown-ish text, not something a real markdown parser
// would help with (fences are often unclosed, mislabelled or indented).
#include "prompt/Extract.h"

#include "support/Text.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <tuple>

namespace ptxforge::prompt {
namespace {

constexpr const char *kExpected = "expected one ```ptx fenced block containing .version, .target and an .entry";


std::vector<std::string_view> splitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (end == text.size()) break;
    start = end + 1;
  }
  return lines;
}

bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

/// `.word` as a token (not `.entry_point`, not `foo.entry`).
bool hasDirective(std::string_view line, std::string_view word) {
  size_t pos = 0;
  while ((pos = line.find(word, pos)) != std::string_view::npos) {
    bool before = pos == 0 || !isIdentChar(line[pos - 1]);
    size_t after = pos + word.size();
    bool afterOk = after >= line.size() || !isIdentChar(line[after]);
    if (before && afterOk) return true;
    pos = after;
  }
  return false;
}

/// The code part of a PTX line (a `//` comment cut off).
std::string_view codePart(std::string_view line) {
  size_t comment = line.find("//");
  return comment == std::string_view::npos ? line : line.substr(0, comment);
}

/// A `// @ptxforge ...` directive written outside the block, normalized to a
/// PTX comment; nullopt when the line is something else. Backticks around it
/// (inline code in markdown) are dropped.
std::optional<std::string> outsideDirective(std::string_view line) {
  std::string_view text = trim(line);
  while (!text.empty() && text.front() == '`') text.remove_prefix(1);
  while (!text.empty() && text.back() == '`') text.remove_suffix(1);
  text = trim(text);
  if (text.starts_with("//")) text = trim(text.substr(2));
  if (!text.starts_with("@ptxforge")) return std::nullopt;
  return "// " + std::string(text);
}

struct Candidate {
  size_t firstLine = 0; ///< 0-based index of the first module line
  size_t lastLine = 0;  ///< inclusive
  size_t fenceLine = 0; ///< the opening fence (fenced only)
  bool fenced = false;
  std::string language;
  bool closed = true;   ///< closing fence seen (fenced) / closing brace seen (unfenced)
  bool complete = true; ///< closed, or an unclosed fence whose braces balance
  bool hasEntry = false;
  bool hasVersion = false;
  bool inThinking = false;
};

/// Braces balance and at least one function body closed: the module is whole
/// even if its fence was never closed.
bool bracesBalance(const std::vector<std::string_view> &lines, size_t first, size_t last) {
  int depth = 0;
  bool closedBody = false;
  for (size_t i = first; i <= last && i < lines.size(); ++i) {
    for (char c : codePart(lines[i])) {
      if (c == '{') ++depth;
      if (c == '}') {
        --depth;
        if (depth == 0) closedBody = true;
      }
    }
  }
  return depth == 0 && closedBody;
}

void scanContent(const std::vector<std::string_view> &lines, Candidate &candidate) {
  for (size_t i = candidate.firstLine; i <= candidate.lastLine && i < lines.size(); ++i) {
    std::string_view code = codePart(lines[i]);
    candidate.hasEntry = candidate.hasEntry || hasDirective(code, ".entry");
    candidate.hasVersion = candidate.hasVersion || hasDirective(code, ".version");
  }
}

/// Fence opening: ``` or ~~~ (3 or more), its length and info string.
std::optional<std::pair<std::string, std::string>> fenceOpen(std::string_view line) {
  std::string_view text = trim(line);
  if (text.size() < 3) return std::nullopt;
  char c = text.front();
  if (c != '`' && c != '~') return std::nullopt;
  size_t n = 0;
  while (n < text.size() && text[n] == c) ++n;
  if (n < 3) return std::nullopt;
  std::string_view info = trim(text.substr(n));
  // An info string never holds the fence character (`` ```ptx``` `` on one line is inline code).
  if (info.find(c) != std::string_view::npos) return std::nullopt;
  std::string language;
  for (char ch : info) {
    if (std::isspace(static_cast<unsigned char>(ch)) || ch == '{') break;
    language.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  }
  return std::make_pair(std::string(text.substr(0, n)), language);
}

bool fenceCloses(std::string_view line, const std::string &fence) {
  std::string_view text = trim(line);
  if (text.size() < fence.size()) return false;
  return std::all_of(text.begin(), text.end(), [&](char c) { return c == fence.front(); });
}

std::vector<Candidate> fencedCandidates(const std::vector<std::string_view> &lines, const std::vector<bool> &thinking) {
  std::vector<Candidate> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    auto open = fenceOpen(lines[i]);
    if (!open) continue;
    Candidate candidate;
    candidate.fenced = true;
    candidate.fenceLine = i;
    candidate.language = open->second;
    candidate.firstLine = i + 1;
    candidate.inThinking = thinking[i];
    size_t close = i + 1;
    while (close < lines.size() && !fenceCloses(lines[close], open->first)) ++close;
    candidate.closed = close < lines.size();
    if (candidate.firstLine >= close) {
      i = close;
      continue; // empty block
    }
    candidate.lastLine = close - 1;
    scanContent(lines, candidate);
    candidate.complete = candidate.closed || (candidate.hasEntry && bracesBalance(lines, candidate.firstLine, candidate.lastLine));
    if (!candidate.closed && candidate.complete) {
      // Drop trailing chatter-free blank lines of an unclosed block.
      while (candidate.lastLine > candidate.firstLine && trim(lines[candidate.lastLine]).empty()) --candidate.lastLine;
    }
    if (candidate.hasEntry || candidate.hasVersion) out.push_back(candidate);
    i = close;
  }
  return out;
}

bool startsModule(std::string_view line) {
  std::string_view text = trim(line);
  return text.starts_with(".version") || text.starts_with(".target") || text.starts_with(".address_size");
}

bool startsEntry(std::string_view line) {
  std::string_view text = trim(line);
  return (text.starts_with(".visible") || text.starts_with(".entry") || text.starts_with(".weak")) &&
         hasDirective(codePart(text), ".entry");
}

/// Bare PTX: each run that starts at a `.version` (or, without one, the first
/// module-level line) and ends at the last `}` line before the next start.
std::vector<Candidate> unfencedCandidates(const std::vector<std::string_view> &lines, const std::vector<bool> &thinking) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < lines.size(); ++i)
    if (trim(lines[i]).starts_with(".version")) starts.push_back(i);
  if (starts.empty()) {
    for (size_t i = 0; i < lines.size(); ++i)
      if (startsModule(lines[i]) || startsEntry(lines[i])) {
        starts.push_back(i);
        break;
      }
  }
  std::vector<Candidate> out;
  for (size_t s = 0; s < starts.size(); ++s) {
    size_t end = s + 1 < starts.size() ? starts[s + 1] : lines.size();
    Candidate candidate;
    candidate.firstLine = starts[s];
    // Comment lines just above belong to the module (nvcc's header, @ptxforge directives).
    while (candidate.firstLine > 0 && trim(lines[candidate.firstLine - 1]).starts_with("//")) --candidate.firstLine;
    candidate.inThinking = thinking[starts[s]];
    std::optional<size_t> lastBrace;
    for (size_t i = starts[s]; i < end; ++i)
      if (trim(lines[i]) == "}") lastBrace = i;
    candidate.closed = lastBrace.has_value();
    candidate.complete = candidate.closed;
    candidate.lastLine = lastBrace.value_or(end - 1);
    scanContent(lines, candidate);
    if (candidate.hasEntry || candidate.hasVersion) out.push_back(candidate);
  }
  return out;
}

/// Lines inside <think>…</think> (an unclosed <think> runs to the end).
std::vector<bool> thinkingLines(const std::vector<std::string_view> &lines) {
  std::vector<bool> thinking(lines.size(), false);
  bool inside = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    bool opens = lines[i].find("<think>") != std::string_view::npos;
    bool closes = lines[i].find("</think>") != std::string_view::npos;
    if (opens) inside = true;
    thinking[i] = inside;
    if (closes) inside = false;
  }
  return thinking;
}

Error noPtx(std::string detail) {
  return makeError(ErrorKind::InvalidInput, "the answer has no PTX module" + detail + ": " + kExpected);
}

} // namespace

const char *ptxSourceName(PtxSource source) {
  switch (source) {
  case PtxSource::PtxFence: return "ptx-fence";
  case PtxSource::OtherFence: return "other-fence";
  case PtxSource::Unfenced: return "unfenced";
  }
  return "?";
}

Result<ExtractedPtx> extractPtx(std::string_view completion) {
  if (trim(completion).empty())
    return makeError(ErrorKind::InvalidInput, std::string("the answer is empty: ") + kExpected);

  std::vector<std::string_view> lines = splitLines(completion);
  std::vector<bool> thinking = thinkingLines(lines);
  std::vector<Candidate> candidates = fencedCandidates(lines, thinking);
  bool unfenced = candidates.empty();
  if (unfenced) candidates = unfencedCandidates(lines, thinking);
  if (candidates.empty()) {
    bool anyFence = std::any_of(lines.begin(), lines.end(), [](std::string_view l) { return fenceOpen(l).has_value(); });
    return noPtx(anyFence ? " (no code block holds .version or .entry)" : "");
  }

  // Answer text over thinking, whole over cut off, kernels over fragments,
  // ```ptx over other fences, later over earlier.
  auto rank = [](const Candidate &c) {
    return std::make_tuple(!c.inThinking, c.complete, c.hasEntry, c.language == "ptx", c.firstLine);
  };
  const Candidate &best = *std::max_element(candidates.begin(), candidates.end(),
                                            [&](const Candidate &a, const Candidate &b) { return rank(a) < rank(b); });

  if (!best.complete) {
    std::string where = best.fenced ? "the ```" + best.language + " block opened at line " + std::to_string(best.fenceLine + 1) +
                                          " is never closed and its braces do not balance"
                                    : "the PTX starting at line " + std::to_string(best.firstLine + 1) +
                                          " ends before the closing `}` of its kernel";
    return makeError(ErrorKind::InvalidInput,
                     "the answer's PTX module is cut off: " + where +
                         " (the answer probably hit the token limit); send the whole module again, " + kExpected);
  }

  ExtractedPtx out;
  out.source = !best.fenced ? PtxSource::Unfenced : best.language == "ptx" ? PtxSource::PtxFence : PtxSource::OtherFence;
  out.fenceLanguage = best.fenced ? best.language : "";
  out.firstLine = best.firstLine + 1;
  out.lastLine = best.lastLine + 1;
  out.candidateBlocks = candidates.size();
  if (candidates.size() > 1)
    out.notes.push_back(std::to_string(candidates.size()) + " PTX blocks in the answer; took the one at lines " +
                        std::to_string(out.firstLine) + "-" + std::to_string(out.lastLine));
  if (best.inThinking) out.notes.push_back("the only PTX was inside the thinking text");
  if (best.fenced && !best.closed) out.notes.push_back("the fence was never closed; the module itself is whole");

  std::string body;
  bool bodyHasDirective = false;
  for (size_t i = best.firstLine; i <= best.lastLine; ++i) {
    body.append(lines[i]);
    body.push_back('\n');
    bodyHasDirective = bodyHasDirective || lines[i].find("@ptxforge") != std::string_view::npos;
  }

  // A directive written just above the fence: part of the candidate, so move it in.
  if (best.fenced) {
    std::vector<std::string> directives;
    size_t i = best.fenceLine;
    while (i > 0 && trim(lines[i - 1]).empty()) --i;
    while (i > 0) {
      std::optional<std::string> directive = outsideDirective(lines[i - 1]);
      if (!directive) break;
      directives.insert(directives.begin(), *directive);
      --i;
    }
    if (!directives.empty() && bodyHasDirective) {
      out.notes.push_back("ignored the @ptxforge line before the fence: the module has its own");
    } else if (!directives.empty()) {
      std::string prefix;
      for (const std::string &directive : directives) prefix += directive + "\n";
      body = prefix + body;
      out.directiveMoved = true;
      out.notes.push_back("moved the @ptxforge line before the fence into the module");
    }
  }
  out.ptx = std::move(body);
  return out;
}

} // namespace ptxforge::prompt
