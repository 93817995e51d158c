// Report: the funnel classification of one attempt and HTML escaping, the two
// pieces of the report library that callers (the CLI, tests) use on their own.
// The reports themselves are MarkdownReport.cpp and HtmlReport.cpp, both laid
// out from ReportModel.
#include "report/Report.h"

#include <cmath>
#include <optional>
#include <utility>

namespace ptxforge::report {

namespace {

/// speedup_band of the benchmark with the slowest baseline (the largest
/// shape), as verify::toJson writes it; none when absent or malformed.
std::optional<std::pair<double, double>> headlineBand(const nlohmann::json &result) {
  if (!result.is_object() || !result.contains("timing") || !result["timing"].is_array()) return std::nullopt;
  const nlohmann::json *headline = nullptr;
  double slowest = -1;
  for (const nlohmann::json &timing : result["timing"]) {
    if (!timing.is_object() || !timing.contains("baseline") || !timing["baseline"].is_object()) continue;
    const nlohmann::json &median = timing["baseline"].contains("median_ms") ? timing["baseline"]["median_ms"]
                                                                             : nlohmann::json(nullptr);
    if (median.is_number() && median.get<double>() > slowest) {
      slowest = median.get<double>();
      headline = &timing;
    }
  }
  if (!headline || !headline->contains("speedup_band")) return std::nullopt;
  const nlohmann::json &band = (*headline)["speedup_band"];
  if (!band.is_array() || band.size() != 2 || !band[0].is_number() || !band[1].is_number()) return std::nullopt;
  return std::pair{band[0].get<double>(), band[1].get<double>()};
}

} // namespace

std::string funnelStage(const store::AttemptRow &attempt) {
  if (!attempt.completion || attempt.completion->status != "complete") return "no-completion";
  // An empty module is what the store keeps when extraction failed.
  if (!attempt.candidate || !attempt.candidate->extractError.empty() || attempt.candidate->ptx.empty())
    return "extract";
  if (!attempt.result) return "unverified";
  const std::string &verdict = attempt.result->verdict;
  if (verdict == "no-ptx") return "extract";
  if (verdict == "lint-error") return "lint";
  if (verdict == "compile-error") return "compile";
  if (verdict == "wrong" || verdict == "crashed" || verdict == "timeout" || verdict == "launch-error" ||
      verdict == "rejected")
    return "correctness";
  if (verdict == "correct") {
    const std::optional<double> &speedup = attempt.result->speedup;
    if (!speedup || std::isnan(*speedup)) return "untimed";
    // Judged by the noise band of the headline benchmark when there is one:
    // a kernel is faster or slower only when the whole band says so.
    std::optional<std::pair<double, double>> band = headlineBand(attempt.result->result);
    if (!band) return *speedup >= 1.0 ? "faster" : "slower";
    if (band->first > 1.0) return "faster";
    if (band->second < 1.0) return "slower";
    return "on-par";
  }
  return "unverified"; // a verdict this build does not know
}

std::string htmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
    }
  }
  return out;
}

namespace {

bool isAsciiAlnum(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

} // namespace

std::string markdownText(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '_' && i > 0 && i + 1 < text.size() && isAsciiAlnum(text[i - 1]) && isAsciiAlnum(text[i + 1])) {
      out += c;
      continue;
    }
    switch (c) {
    // Entities rather than backslashes for HTML: renderers agree on them.
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '\\': case '`': case '*': case '_': case '[': case ']': case '|': case '~':
      out += '\\';
      out += c;
      break;
    case '\n': case '\r': case '\t': out += ' '; break;
    default: out += c;
    }
  }
  return out;
}

std::string markdownTable(const std::vector<std::string> &header, const std::vector<bool> &rightAligned,
                          const std::vector<std::vector<std::string>> &rows) {
  std::string out;
  auto line = [&out](const std::vector<std::string> &cells) {
    out += "|";
    for (const std::string &cell : cells) out += " " + markdownText(cell) + " |";
    out += "\n";
  };
  line(header);
  out += "|";
  for (size_t i = 0; i < header.size(); ++i) out += i < rightAligned.size() && rightAligned[i] ? " ---: |" : " --- |";
  out += "\n";
  for (const auto &row : rows) line(row);
  out += "\n";
  return out;
}

std::string_view basePageStyle() {
  return R"(
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 80rem;
       padding: 0 1rem; color: #1d2330; background: #fff; line-height: 1.4; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #d8dde6; }
h3 { font-size: 1rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #d8dde6; padding: 0.2rem 0.5rem; vertical-align: top; text-align: left; }
th { background: #f3f5f9; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.note { color: #5a6270; font-style: italic; }
pre { background: #f6f8fa; border: 1px solid #d8dde6; padding: 0.75rem; overflow: auto; font-size: 0.8rem; }
svg.chart { max-width: 100%; height: auto; font-size: 11px; }
svg .axis { stroke: #5a6270; stroke-width: 1; }
svg .grid { stroke: #e5e8ee; stroke-width: 1; }
svg .ref { stroke: #c0392b; stroke-width: 1.5; stroke-dasharray: 6 4; }
svg .ref-label { fill: #c0392b; }
svg text { fill: #3a4150; }
svg .chart-note { fill: #5a6270; font-size: 14px; font-style: italic; }
)";
}

std::string htmlElement(std::string_view tag, std::string_view text, std::string_view cssClass) {
  std::string out = "<" + std::string(tag);
  if (!cssClass.empty()) out += " class=\"" + std::string(cssClass) + "\"";
  out += ">" + htmlEscape(text) + "</" + std::string(tag) + ">";
  return out;
}

} // namespace ptxforge::report
