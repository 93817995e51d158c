// Report: the funnel classification of one attempt and HTML escaping, the two
// pieces of the report library that callers (the CLI, tests) use on their own.
// The reports themselves are MarkdownReport.cpp and HtmlReport.cpp, both laid
// out from ReportModel.
#include "report/Report.h"

#include <cmath>

namespace ptxforge::report {

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
    return *speedup >= 1.0 ? "faster" : "slower";
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
