// ReportModel: what a report shows, taken out of a RunData once and formatted
// as plain text (numbers as "1.23x", "0.01234 ms", missing values as "n/a"),
// so that the Markdown and HTML writers only lay it out and escape it; the
// tables both show are built here once (TableData).
// Internal to the report library.
#pragma once

#include "report/Report.h"
#include "store/Store.h"

#include <nlohmann/json.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::report::detail {

/// What the report prints for anything that is missing or of an odd type.
inline constexpr std::string_view kNotAvailable = "n/a";

struct FunnelCounts {
  std::array<int, kFunnelStageCount> stages{}; ///< indexed by FunnelStage
  int duplicates = 0; ///< attempts whose candidate is a duplicate (also counted under their stage)
  int total = 0;
};

struct RoundRow {
  int round = 0;
  std::optional<double> bestSpeedup; ///< best timed correct candidate of this round
  std::optional<double> bestSoFar;   ///< best up to and including this round
  int correct = 0;
  int attempts = 0;
  FunnelCounts funnel;
};

struct DiagnosticRow {
  std::string code, severity, example;
  int candidates = 0;  ///< failed candidates that reported the code
  int occurrences = 0; ///< times it was reported in all
};

/// One attempt, every cell already text (not yet escaped).
struct AttemptLine {
  std::string round, slot, kind, tendency, temperature, candidate, verdict, speedup, registers, summary;
  std::string stage; ///< funnelStage, for styling
};

/// One cut of an answer written with --guided-stream (docs/guided.md).
struct StreamCutLine {
  std::string round, slot, kind, request, line, code, statement, message, tokens;
};

/// A label and its value, both plain text.
struct Field {
  std::string label, value;
};

/// One row of the best kernel's resources next to nvcc's.
struct ComparisonRow {
  std::string label, candidate, reference;
};

struct TimingRow {
  std::string shape, candidateMedian, candidateBand, baselineMedian, baselineBand, speedup, speedupBand, gflops,
      gbps;
};

struct BestKernel {
  std::string title; ///< "candidate #9 (round 3, slot 0)"
  std::vector<Field> facts;
  std::vector<ComparisonRow> resources;
  std::vector<TimingRow> timings;
  std::string ptx;
};

struct ReportModel {
  std::string title; ///< "ptxforge run #12: vector_add"
  std::vector<Field> run;
  std::vector<RoundRow> rounds; ///< ascending by round
  FunnelCounts funnelTotal;
  std::vector<DiagnosticRow> diagnostics; ///< most frequent first, at most kTopDiagnostics
  std::vector<AttemptLine> attempts;
  std::optional<BestKernel> best;
  std::vector<StreamCutLine> streamCuts; ///< empty for runs without --guided-stream
  std::string streamNote;                ///< "3 answers checked while streaming: 2 cuts in 5 requests"
  bool anyTiming = false;  ///< some round has a best speedup
  bool anyUntimed = false; ///< some correct candidate has no timing (CPU emulator)
  /// Why the speedup chart is empty; "" when it has points.
  std::string chartNote;
  /// When candidates were recorded but none was timed (the CPU emulator, or
  /// nothing correct): one sentence on why the speed chart and columns are
  /// left out of the report; "" otherwise.
  std::string untimedNote;
  /// Says what the best-kernel section shows when `best` is empty.
  std::string noBestNote;
};

inline constexpr size_t kTopDiagnostics = 10;

/// What the speedup chart plots, stated under it.
inline constexpr std::string_view kSpeedupDefinition =
    "best speedup: in each round, the highest speedup among its correct, timed candidates; speedup = nvcc's median "
    "time / the candidate's median time on the task's largest timed shape (1.0x is nvcc, above it is faster).";
/// What the funnel's stages are, stated under it.
inline constexpr std::string_view kFunnelDefinition =
    "Each attempt counts once, under the first stage it did not pass: no-completion (no answer), extract (no PTX), "
    "unverified (not checked), lint, compile, correctness (wrong, crashed, timed out or rejected); a correct one "
    "under untimed (not timed), slower or faster (its whole speedup noise band below or above 1.0x) or on-par.";

/// Builds the model; never throws on odd or missing JSON.
ReportModel buildModel(const store::RunData &data);

/// A table as both writers show it: plain-text cells, `numeric[i]`
/// right-aligns column i.
using TableData = report::Table;

/// Per round: best speedup, best so far and correct / attempts; only the
/// counts when nothing was timed (`untimedNote` set).
TableData roundsTable(const ReportModel &model);
/// Per round and in total: each stage's count, the duplicates, the total.
TableData funnelTable(const ReportModel &model);
TableData diagnosticsTable(const ReportModel &model);
/// The attempts; without the speedup column when nothing was timed.
TableData attemptsTable(const ReportModel &model);
TableData streamCutsTable(const ReportModel &model);
/// The best kernel's resources next to nvcc's, and its timings per shape.
TableData resourcesTable(const BestKernel &best);
TableData timingsTable(const BestKernel &best);

/// "1.23x"; "n/a" when absent or not finite.
std::string formatSpeedup(std::optional<double> speedup);
/// Milliseconds with 4 significant digits ("0.01235", "12.35", "1235").
std::string formatMs(double ms);

} // namespace ptxforge::report::detail
