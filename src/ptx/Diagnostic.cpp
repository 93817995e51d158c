// Text rendering, output limits and helpers for Diagnostic.
#include "ptx/Diagnostic.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <unordered_map>

namespace ptxforge::ptx {

namespace {

bool isContinuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

/// Length of the well-formed UTF-8 sequence starting at text[i] (1 for
/// printable ASCII and tab), or 0 when the byte there must be escaped: ASCII
/// controls, DEL, C1 controls (U+0080–U+009F, which some terminals obey as
/// escapes) and anything that is not valid UTF-8.
size_t printableLength(std::string_view text, size_t i) {
  auto at = [&](size_t k) -> unsigned char { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0; };
  unsigned char lead = at(0);
  if (lead < 0x80) return (lead >= 0x20 && lead != 0x7F) || lead == '\t' ? 1 : 0;
  auto inRange = [&](size_t k, unsigned char low, unsigned char high) { return at(k) >= low && at(k) <= high; };
  if (lead >= 0xC2 && lead <= 0xDF) {
    if (lead == 0xC2 && inRange(1, 0x80, 0x9F)) return 0; // C1 control
    return inRange(1, 0x80, 0xBF) ? 2 : 0;
  }
  if (lead >= 0xE0 && lead <= 0xEF) {
    unsigned char low = lead == 0xE0 ? 0xA0 : 0x80, high = lead == 0xED ? 0x9F : 0xBF;
    return inRange(1, low, high) && inRange(2, 0x80, 0xBF) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    unsigned char low = lead == 0xF0 ? 0x90 : 0x80, high = lead == 0xF4 ? 0x8F : 0xBF;
    return inRange(1, low, high) && inRange(2, 0x80, 0xBF) && inRange(3, 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

void appendEscapedByte(std::string &out, unsigned char byte) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "\\x%02x", byte);
  out += buffer;
}

std::string escapeUnprintable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t length = printableLength(text, i);
    if (length == 0) {
      appendEscapedByte(out, static_cast<unsigned char>(text[i]));
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

// A quoted token longer than this is shortened in messages: a 20,000-character
// identifier would otherwise be repeated in every message that names it.
constexpr size_t kMaxWordBytes = 96;
constexpr size_t kWordHeadBytes = 64;
constexpr size_t kWordTailBytes = 24;

/// Shortens each space-separated word over kMaxWordBytes. `text` is valid UTF-8
/// (escaped first), so cuts are moved off continuation bytes.
std::string shortenLongWords(const std::string &text) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string_view word(text.data() + start, end - start);
    if (word.size() > kMaxWordBytes) {
      size_t head = kWordHeadBytes, tail = word.size() - kWordTailBytes;
      while (head > 0 && isContinuation(static_cast<unsigned char>(word[head]))) --head;
      while (tail < word.size() && isContinuation(static_cast<unsigned char>(word[tail]))) ++tail;
      out.append(word.substr(0, head));
      out += "...";
      out.append(word.substr(tail));
    } else {
      out.append(word);
    }
    if (end == text.size()) break;
    out += ' ';
    start = end + 1;
  }
  return out;
}

/// Byte offsets where each line starts, computed once per rendering: looking
/// each line up from the start of the source made rendering N diagnostics of
/// an N-line file quadratic.
class LineIndex {
public:
  explicit LineIndex(std::string_view source) : source_(source) {
    starts_.push_back(0);
    for (size_t i = source.find('\n'); i != std::string_view::npos; i = source.find('\n', i + 1)) starts_.push_back(i + 1);
  }

  std::string_view line(uint32_t number) const {
    if (number == 0 || number > starts_.size()) return {};
    size_t start = starts_[number - 1];
    size_t end = number < starts_.size() ? starts_[number] - 1 : source_.size();
    std::string_view text = source_.substr(start, end - start);
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    return text;
  }

private:
  std::string_view source_;
  std::vector<size_t> starts_;
};

/// Appends the quoted line and the caret line under it. A line longer than
/// `width` bytes is cut to a window around the column, marked with `...`.
void appendExcerpt(std::string &out, std::string_view line, uint32_t column, size_t width) {
  size_t caret = column ? column - 1 : 0;
  size_t begin = 0, end = line.size();
  if (width && line.size() > width) {
    size_t anchor = std::min(caret, line.size());
    begin = anchor > width / 2 ? anchor - width / 2 : 0;
    end = std::min(line.size(), begin + width);
    begin = end > width ? end - width : 0;
    // Do not cut a UTF-8 sequence in two: step over at most the three
    // continuation bytes one sequence has. A run of stray continuation bytes
    // (each shown escaped) may be cut anywhere; an unbounded step here walked
    // `end` below zero on a line that starts with one.
    for (int k = 0; k < 3 && begin > 0 && begin < end && isContinuation(static_cast<unsigned char>(line[begin])); ++k)
      ++begin;
    for (int k = 0; k < 3 && end > begin && end < line.size() && isContinuation(static_cast<unsigned char>(line[end]));
         ++k)
      --end;
  }
  std::string caretLine = "  ";
  out += "  ";
  if (begin > 0) {
    out += "...";
    caretLine += "   ";
  }
  for (size_t i = begin; i < end;) {
    size_t length = printableLength(line, i);
    // Keep tabs so the caret lines up under tab-indented PTX.
    std::string_view pad = line[i] == '\t' ? "\t" : length == 0 ? "    " : " ";
    if (length == 0) {
      appendEscapedByte(out, static_cast<unsigned char>(line[i]));
      length = 1;
    } else {
      out.append(line.substr(i, length));
    }
    if (i < caret) caretLine += pad;
    i += length;
  }
  if (end < line.size()) out += "...";
  out += '\n';
  out += caretLine;
  out += "^\n";
}

size_t environmentSize(const char *name, size_t fallback) {
  const char *value = std::getenv(name);
  if (!value || !*value) return fallback;
  char *end = nullptr;
  unsigned long long parsed = std::strtoull(value, &end, 10);
  if (*end != '\0' || value[0] == '-') return fallback;
  return static_cast<size_t>(parsed);
}

} // namespace

const char *severityName(Severity severity) {
  switch (severity) {
  case Severity::Error: return "error";
  case Severity::Warning: return "warning";
  case Severity::Note: return "note";
  }
  return "error";
}

DiagnosticLimits DiagnosticLimits::fromEnvironment() {
  DiagnosticLimits limits;
  limits.maxPerModule = environmentSize("PTXFORGE_MAX_DIAGNOSTICS", limits.maxPerModule);
  limits.maxRepeats = environmentSize("PTXFORGE_MAX_REPEATS", limits.maxRepeats);
  limits.excerptColumns = environmentSize("PTXFORGE_EXCERPT_COLUMNS", limits.excerptColumns);
  return limits;
}

bool hasErrors(const std::vector<Diagnostic> &diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic &d) { return d.severity == Severity::Error; });
}

void sortByLocation(std::vector<Diagnostic> &diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const Diagnostic &a, const Diagnostic &b) {
    if (a.line != b.line) return a.line < b.line;
    return a.column < b.column;
  });
}

std::string sanitizeDiagnosticText(std::string_view text) { return shortenLongWords(escapeUnprintable(text)); }

void applyDiagnosticLimits(std::vector<Diagnostic> &diagnostics, const DiagnosticLimits &limits) {
  std::unordered_map<std::string, size_t> timesSeen; // code + '\0' + message
  std::vector<Diagnostic> kept;
  size_t repeats = 0, overLimit = 0;
  const Diagnostic *firstDropped = nullptr;
  for (Diagnostic &d : diagnostics) {
    if (limits.maxRepeats && ++timesSeen[d.code + '\0' + d.message] > limits.maxRepeats) {
      ++repeats;
      if (!firstDropped) firstDropped = &d;
      continue;
    }
    if (limits.maxPerModule && kept.size() >= limits.maxPerModule) {
      ++overLimit;
      if (!firstDropped) firstDropped = &d;
      continue;
    }
    d.message = sanitizeDiagnosticText(d.message);
    d.hint = sanitizeDiagnosticText(d.hint);
    kept.push_back(std::move(d));
  }
  if (firstDropped) {
    size_t dropped = repeats + overLimit;
    std::string message = std::to_string(dropped) + " more diagnostic" + (dropped == 1 ? "" : "s") + " not shown (";
    if (overLimit) message += std::to_string(overLimit) + " past the limit of " + std::to_string(limits.maxPerModule) + " per module";
    if (overLimit && repeats) message += ", ";
    if (repeats)
      message += std::to_string(repeats) + " repeating a finding already shown " + std::to_string(limits.maxRepeats) +
                 " time" + (limits.maxRepeats == 1 ? "" : "s");
    message += ")";
    kept.push_back(Diagnostic{kDiagnosticsSuppressedCode, Severity::Note, firstDropped->line, firstDropped->column,
                              std::move(message),
                              "fix the findings shown and lint again, or raise the limits with "
                              "PTXFORGE_MAX_DIAGNOSTICS=N and PTXFORGE_MAX_REPEATS=N (0: no limit)"});
  }
  diagnostics = std::move(kept);
}

std::string formatDiagnosticsText(const std::vector<Diagnostic> &diagnostics, std::string_view fileName,
                                  std::string_view source, size_t excerptColumns) {
  std::string out;
  std::string shownName = escapeUnprintable(fileName);
  std::optional<LineIndex> lines;
  for (const Diagnostic &d : diagnostics) {
    out += shownName;
    if (d.line) {
      out += ':' + std::to_string(d.line);
      if (d.column) out += ':' + std::to_string(d.column);
    }
    out += ": ";
    out += severityName(d.severity);
    out += '[' + sanitizeDiagnosticText(d.code) + "]: " + sanitizeDiagnosticText(d.message) + '\n';
    if (d.line && !source.empty()) {
      if (!lines) lines.emplace(source);
      std::string_view text = lines->line(d.line);
      if (!text.empty()) appendExcerpt(out, text, d.column, excerptColumns);
    }
    if (!d.hint.empty()) out += "  hint: " + sanitizeDiagnosticText(d.hint) + '\n';
  }
  return out;
}

} // namespace ptxforge::ptx
