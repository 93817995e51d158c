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

} // namespace ptxforge::report
