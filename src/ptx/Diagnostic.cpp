// Text rendering and helpers for Diagnostic.
#include "ptx/Diagnostic.h"

#include <algorithm>

namespace ptxforge::ptx {

const char *severityName(Severity severity) {
  switch (severity) {
  case Severity::Error: return "error";
  case Severity::Warning: return "warning";
  case Severity::Note: return "note";
  }
  return "error";
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

static std::string_view sourceLine(std::string_view source, uint32_t line) {
  if (line == 0) return {};
  size_t start = 0;
  for (uint32_t current = 1; current < line; ++current) {
    size_t newline = source.find('\n', start);
    if (newline == std::string_view::npos) return {};
    start = newline + 1;
  }
  size_t end = source.find('\n', start);
  std::string_view text = source.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  return text;
}

std::string formatDiagnosticsText(const std::vector<Diagnostic> &diagnostics, std::string_view fileName,
                                  std::string_view source) {
  std::string out;
  for (const Diagnostic &d : diagnostics) {
    out += fileName;
    if (d.line) {
      out += ':' + std::to_string(d.line);
      if (d.column) out += ':' + std::to_string(d.column);
    }
    out += ": ";
    out += severityName(d.severity);
    out += '[' + d.code + "]: " + d.message + '\n';
    std::string_view text = sourceLine(source, d.line);
    if (!text.empty()) {
      out += "  ";
      out += text;
      out += "\n  ";
      // Keep tabs so the caret lines up under tab-indented PTX.
      for (uint32_t i = 1; i < d.column && i - 1 < text.size(); ++i) out += text[i - 1] == '\t' ? '\t' : ' ';
      out += "^\n";
    }
    if (!d.hint.empty()) out += "  hint: " + d.hint + '\n';
  }
  return out;
}

} // namespace ptxforge::ptx
