// Report: a stored result decoded into verify's types, the funnel
// classification of one attempt, and escaping: the pieces of the report library
// that callers (the CLI, eval's metrics, tests) use on their own.
// The reports themselves are MarkdownReport.cpp and HtmlReport.cpp, both laid
// out from ReportModel.
#include "report/Report.h"

#include "report/JsonRead.h"

#include <array>
#include <cmath>
#include <optional>
#include <utility>

namespace ptxforge::report {

namespace {

constexpr std::array<const char *, kFunnelStageCount> kFunnelStageNames = {
    "no-completion", "extract", "lint", "compile", "correctness", "unverified", "untimed", "slower", "on-par", "faster"};

FunnelStage correctStage(const StoredResult &result) {
  const std::optional<double> &speedup = result.record->speedup;
  if (!speedup || std::isnan(*speedup)) return FunnelStage::Untimed;
  // Judged by the noise band of the headline benchmark when there is one:
  // a kernel is faster or slower only when the whole band says so.
  const verify::BenchmarkReport *headline = result.check ? verify::headlineBenchmark(*result.check) : nullptr;
  if (headline == nullptr) return *speedup >= 1.0 ? FunnelStage::Faster : FunnelStage::Slower;
  if (headline->speedupLow > 1.0) return FunnelStage::Faster;
  if (headline->speedupHigh < 1.0) return FunnelStage::Slower;
  return FunnelStage::OnPar;
}

} // namespace

StoredResult decodeResult(const store::ResultRecord &record) {
  StoredResult result;
  result.record = &record;
  result.verdict = verify::parseVerdict(record.verdict);
  result.stage = verify::parseStage(record.stage);
  if (Result<verify::CheckResult> check = verify::checkResultFromJson(record.result)) {
    result.check = std::move(*check);
    // The columns win over the document. Rows written before the gate had a
    // not-verified verdict of its own hold `not-verified` in the column and
    // `rejected` in the JSON; the column is what the solve loop decided.
    if (result.verdict) result.check->verdict = *result.verdict;
    if (result.stage) result.check->stage = *result.stage;
  }
  result.sassInstructions = read::countOf(read::member(read::member(record.result, "sass"), "instructions"));
  return result;
}

const char *funnelStageName(FunnelStage stage) { return kFunnelStageNames[static_cast<size_t>(stage)]; }

std::optional<FunnelStage> parseFunnelStage(std::string_view name) {
  for (size_t i = 0; i < kFunnelStageCount; ++i)
    if (name == kFunnelStageNames[i]) return static_cast<FunnelStage>(i);
  return std::nullopt;
}

void to_json(nlohmann::json &json, FunnelStage stage) { json = funnelStageName(stage); }

FunnelStage funnelStage(const store::AttemptRow &attempt, const StoredResult *result) {
  if (!attempt.completion || attempt.completion->completionStatus() != store::CompletionStatus::Complete)
    return FunnelStage::NoCompletion;
  // An empty module is what the store keeps when extraction failed.
  if (!attempt.candidate || !attempt.candidate->extractError.empty() || attempt.candidate->ptx.empty())
    return FunnelStage::Extract;
  if (result == nullptr || !result->verdict) return FunnelStage::Unverified; // none yet, or unknown text
  switch (*result->verdict) {
  case verify::Verdict::NoPtx: return FunnelStage::Extract;
  case verify::Verdict::LintError: return FunnelStage::Lint;
  case verify::Verdict::CompileError: return FunnelStage::Compile;
  case verify::Verdict::Wrong:
  case verify::Verdict::Crashed:
  case verify::Verdict::Timeout:
  case verify::Verdict::LaunchError:
  case verify::Verdict::Rejected: return FunnelStage::Correctness;
  case verify::Verdict::NotVerified: return FunnelStage::Unverified;
  case verify::Verdict::Correct: return correctStage(*result);
  }
  return FunnelStage::Unverified;
}

FunnelStage funnelStage(const store::AttemptRow &attempt) {
  if (!attempt.result) return funnelStage(attempt, nullptr);
  StoredResult result = decodeResult(*attempt.result);
  return funnelStage(attempt, &result);
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
h1 { font-size: 1.5rem; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #d8dde6; }
h3 { font-size: 1rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #d8dde6; padding: 0.2rem 0.5rem; vertical-align: top; text-align: left; }
th { background: #f3f5f9; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; padding: 0.2rem 0.4rem; }
td:not(.num) { overflow-wrap: anywhere; }
.table-wrap { max-width: 100%; overflow-x: auto; }
.note { color: #5a6270; font-style: italic; }
p.caption { font-size: 0.85rem; color: #3a4150; max-width: 640px; margin-top: 0.25rem; } /* a chart's definitions */
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

void htmlTable(std::string &out, const Table &table, std::string_view cssClass,
               const std::function<std::string(size_t, size_t)> &classOf) {
  auto isNumeric = [&table](size_t i) { return i < table.numeric.size() && table.numeric[i]; };
  out += cssClass.empty() ? "<div class=\"table-wrap\"><table>\n<thead><tr>"
                          : "<div class=\"table-wrap\"><table class=\"" + std::string(cssClass) + "\">\n<thead><tr>";
  for (size_t i = 0; i < table.header.size(); ++i) out += htmlElement("th", table.header[i], isNumeric(i) ? "num" : "");
  out += "</tr></thead>\n<tbody>\n";
  for (size_t r = 0; r < table.rows.size(); ++r) {
    out += "<tr>";
    for (size_t i = 0; i < table.rows[r].size(); ++i)
      out += htmlElement("td", table.rows[r][i], isNumeric(i) ? "num" : classOf ? classOf(r, i) : "");
    out += "</tr>\n";
  }
  out += "</tbody>\n</table></div>\n";
}

std::string htmlPage(std::string_view title, std::string_view style, std::string_view body) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += htmlElement("title", title) + "\n<style>" + std::string(basePageStyle()) + std::string(style) +
         "</style>\n</head>\n<body>\n";
  out += body;
  out += "</body>\n</html>\n";
  return out;
}

double niceStep(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / magnitude;
  return magnitude * (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 2.5 ? 2.5 : fraction <= 5 ? 5 : 10);
}

} // namespace ptxforge::report
