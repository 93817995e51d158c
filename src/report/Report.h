// Reports of a solve run, from what the store recorded: Markdown for a
// terminal or a pull request, and one self-contained HTML page (inline CSS and
// SVG, no scripts, nothing fetched) to open in a browser.
//
// What a report shows:
//   - the run: task, model, strategies, parameters, provenance, status, budget use
//   - a chart of the best speedup over nvcc per round (SVG line chart;
//     rounds with no correct, timed candidate are drawn as gaps; a dashed
//     line at 1.0x; a note instead when nothing was timed)
//   - the stage funnel: per round and overall, how many candidates fell out at
//     each stage: no completion, no PTX (extract), lint, compile, correctness
//     (wrong, crashed, timeout, launch-error, rejected), not verified yet,
//     correct but untimed (CPU emulator), correct but slower than nvcc, on par,
//     correct and at least as fast; plus how many were duplicates
//   - the most frequent diagnostic codes across failed candidates
//   - every attempt in one table (round, slot, kind, tendency, temperature,
//     verdict, speedup, registers, summary)
//   - the best kernel: its PTX (with launch directives), its resources and SASS
//     statistics next to nvcc's reference (summary["reference"]), and timings
//
// Everything taken from the store (model text, PTX, summaries, diagnostic
// messages) is escaped for the output format: HTML entities in the page, code
// fences that cannot be closed early in Markdown.
#pragma once

#include "store/Store.h"
#include "verify/Check.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>

#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::report {

/// The run summary keys a report reads (written by the solve loop):
///   summary["best"]       {candidate_id, round, slot, speedup|null, verdict}
///   summary["rounds"]     [{round, best_speedup|null, counts: {verdict: n}}]
///   summary["reference"]  {registers, spill_store_bytes, spill_load_bytes,
///                          shared_bytes, sass: SassCounts JSON|null,
///                          timing_ms: number|null}
///   summary["tokens"]     {prompt, completion}
///   summary["wall_s"], summary["stopped_because"]
/// Each result's JSON is verify::toJson(CheckResult) plus "sass": SassCounts
/// JSON|null; it is decoded once with verify::checkResultFromJson (decodeResult).
/// Missing keys, odd types and a result document that does not decode are
/// shown as "n/a", never invented, and neither report function throws.
///
/// Per-round figures and the funnel come from the attempts themselves;
/// summary["rounds"] only adds rows for rounds without a recorded attempt.
/// The best kernel is the one summary["best"] names, else the fastest correct
/// attempt (timed before untimed, earliest on a tie).

/// A stored result read into verify's types once, at the boundary where the
/// store's text becomes enums (the store sits below verify and keeps text).
struct StoredResult {
  const store::ResultRecord *record = nullptr;
  /// The verdict and stage columns; none for text this build does not know.
  std::optional<verify::Verdict> verdict;
  std::optional<verify::Stage> stage;
  /// The result JSON through verify::checkResultFromJson; none when it does
  /// not decode (hand-edited, truncated). Its verdict and stage are the
  /// columns' when those parse: one row never holds two verdicts.
  std::optional<verify::CheckResult> check;
  /// result["sass"]["instructions"] (solve stores the SASS counts beside the codec's document).
  std::optional<int> sassInstructions;

  bool is(verify::Verdict wanted) const { return verdict == wanted; }
};

StoredResult decodeResult(const store::ResultRecord &record);

/// Where an attempt stopped, in the order a candidate meets the stages:
///   NoCompletion  no completion, or its status is not complete (pending, error)
///   Extract       no candidate, an extract error, empty PTX, or verdict no-ptx
///   Lint          verdict lint-error
///   Compile       verdict compile-error
///   Correctness   verdict wrong, crashed, timeout, launch-error or rejected
///   Unverified    a candidate without a result yet, verdict not-verified, or
///                 a verdict this build does not know
///   Untimed       correct without a speedup (the CPU emulator does not time)
///   Slower        correct, and even the top of the speedup's noise band
///                 (verify's headline benchmark) is below 1.0
///   OnPar         correct, with 1.0 inside the noise band
///   Faster        correct, and even the bottom of the noise band is above 1.0
/// Without a band (a result that does not decode) the median speedup decides:
/// >= 1.0 faster. A duplicate (candidate.duplicateOf set) carries a copy of its
/// original's result and counts under that result's stage like any other; the
/// funnel table counts duplicates in an extra column. A "skeleton" prompt
/// without a candidate (the first half of the skeleton strategy) is no attempt
/// of the funnel: the reports list it but do not count it.
enum class FunnelStage { NoCompletion, Extract, Lint, Compile, Correctness, Unverified, Untimed, Slower, OnPar, Faster };
inline constexpr size_t kFunnelStageCount = 10;

/// The stable name ("no-completion", "on-par"); the one name table.
const char *funnelStageName(FunnelStage stage);
/// The inverse of funnelStageName; nullopt for any other text.
std::optional<FunnelStage> parseFunnelStage(std::string_view name);
/// JSON as the stage's name (ADL for nlohmann).
void to_json(nlohmann::json &json, FunnelStage stage);

/// The stage of `attempt` judged by `result` (its own decoded result, or for a
/// duplicate recorded without one, its original's); null: no result.
FunnelStage funnelStage(const store::AttemptRow &attempt, const StoredResult *result);
/// The stage of `attempt` judged by its own result.
FunnelStage funnelStage(const store::AttemptRow &attempt);

/// GitHub-flavoured Markdown: tables, and the best PTX in a fence longer than
/// any backtick run inside it.
std::string markdownReport(const store::RunData &data);
/// One self-contained HTML5 page: inline CSS and SVG, no script, no URL.
std::string htmlReport(const store::RunData &data);

/// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string htmlEscape(std::string_view text);

// Building blocks the run report and the eval report (report/EvalReport.h) share.

/// Escapes text for one line of Markdown (a table cell, a heading, a list
/// item): HTML's &, <, > as entities, Markdown punctuation with backslashes,
/// line breaks as spaces. An underscore between two letters or digits stays
/// as it is (`vector_add`): no renderer reads it as emphasis.
std::string markdownText(std::string_view text);

/// A Markdown table, every cell escaped with markdownText; rightAligned[i]
/// right-aligns column i. Ends with a blank line.
std::string markdownTable(const std::vector<std::string> &header, const std::vector<bool> &rightAligned,
                          const std::vector<std::vector<std::string>> &rows);

/// The CSS both HTML reports start from: page, headings, tables, notes, and
/// chart axes, grid, reference line and labels.
std::string_view basePageStyle();

/// <tag class="cssClass">text, escaped</tag>.
std::string htmlElement(std::string_view tag, std::string_view text, std::string_view cssClass = {});

/// A table of text cells; `numeric[i]` marks column i as numbers (right-aligned).
struct Table {
  std::vector<std::string> header;
  std::vector<bool> numeric;
  std::vector<std::vector<std::string>> rows;
};

/// `table` as HTML in a wrapper that scrolls a table wider than the page;
/// `classOf(row, column)`, when given, names the class of a cell that is not numeric.
void htmlTable(std::string &out, const Table &table, std::string_view cssClass = {},
               const std::function<std::string(size_t, size_t)> &classOf = {});

/// A whole page: basePageStyle() and then `style` inline, and nothing that
/// loads or runs (a Content-Security-Policy says so).
std::string htmlPage(std::string_view title, std::string_view style, std::string_view body);

/// 1, 2, 2.5 or 5 times a power of ten, at least `raw`: a chart's grid step.
double niceStep(double raw);

} // namespace ptxforge::report
