// MarkdownReport: the report as GitHub-flavoured Markdown, for a terminal or a
// pull request. Markdown has no charts, so the speedup curve is a table. Text
// from the store is escaped so that it can neither start HTML, emphasis, links
// or code, nor break a table; the PTX goes into a fence longer than any
// backtick run inside it, so the model's text cannot close it early.
#include "report/Report.h"
#include "report/ReportModel.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

namespace ptxforge::report {

namespace {

using detail::ReportModel;

/// A fence of backticks longer than the longest backtick run in `code`.
std::string fenceFor(std::string_view code) {
  size_t longest = 0, run = 0;
  for (char c : code) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return std::string(std::max<size_t>(3, longest + 1), '`');
}

enum class Align { Left, Right };

void table(std::string &out, const std::vector<std::string> &header, const std::vector<Align> &align,
           const std::vector<std::vector<std::string>> &rows) {
  std::vector<bool> right;
  for (Align a : align) right.push_back(a == Align::Right);
  out += markdownTable(header, right, rows);
}

void fieldTable(std::string &out, const std::vector<detail::Field> &fields) {
  std::vector<std::vector<std::string>> rows;
  for (const detail::Field &field : fields) rows.push_back({field.label, field.value});
  table(out, {"field", "value"}, {}, rows);
}

void roundsSection(std::string &out, const ReportModel &model) {
  if (!model.untimedNote.empty()) {
    // Nothing was timed (the note under the run table says why): only the counts per round.
    out += "## Correct per round\n\n";
    std::vector<std::vector<std::string>> rows;
    for (const detail::RoundRow &row : model.rounds)
      rows.push_back({std::to_string(row.round), fmt::format("{} / {}", row.correct, row.attempts)});
    table(out, {"round", "correct / attempts"}, {Align::Right, Align::Right}, rows);
    return;
  }
  out += "## Best speedup per round\n\n";
  if (!model.chartNote.empty()) out += "*" + markdownText(model.chartNote) + "*\n\n";
  if (model.rounds.empty()) return;
  out += markdownText(detail::kSpeedupDefinition) + "\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const detail::RoundRow &row : model.rounds)
    rows.push_back({std::to_string(row.round), detail::formatSpeedup(row.bestSpeedup),
                    detail::formatSpeedup(row.bestSoFar), fmt::format("{} / {}", row.correct, row.attempts)});
  table(out, {"round", "best speedup", "best so far", "correct / attempts"},
        {Align::Right, Align::Right, Align::Right, Align::Right}, rows);
}

void funnelSection(std::string &out, const ReportModel &model) {
  out += "## Stage funnel\n\n";
  if (model.rounds.empty()) {
    out += "No candidates.\n\n";
    return;
  }
  out += "Where each attempt stopped. Duplicates (same PTX or SASS as an earlier candidate) are also counted "
         "under the stage of their copied result. " + markdownText(detail::kFunnelDefinition) + "\n\n";
  std::vector<std::string> header{"round"};
  for (size_t i = 0; i < kFunnelStageCount; ++i) header.emplace_back(funnelStageName(static_cast<FunnelStage>(i)));
  header.emplace_back("duplicates");
  header.emplace_back("total");
  std::vector<std::vector<std::string>> rows;
  for (const detail::RoundRow &row : model.rounds) rows.push_back(detail::funnelCells(std::to_string(row.round), row.funnel));
  rows.push_back(detail::funnelCells("total", model.funnelTotal));
  table(out, header, std::vector<Align>(header.size(), Align::Right), rows);
}

void diagnosticsSection(std::string &out, const ReportModel &model) {
  out += "## Top diagnostic codes\n\n";
  if (model.diagnostics.empty()) {
    out += "No diagnostics from failed candidates.\n\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const detail::DiagnosticRow &row : model.diagnostics)
    rows.push_back({row.code, row.severity, std::to_string(row.candidates), std::to_string(row.occurrences),
                    row.example});
  table(out, {"code", "severity", "failed candidates", "occurrences", "example"},
        {Align::Left, Align::Left, Align::Right, Align::Right, Align::Left}, rows);
}

void attemptsSection(std::string &out, const ReportModel &model) {
  out += "## Attempts\n\n";
  if (model.attempts.empty()) {
    out += "No candidates.\n\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  bool timed = model.untimedNote.empty(); // without timings the speedup column is n/a throughout: left out
  for (const detail::AttemptLine &a : model.attempts) {
    rows.push_back({a.round, a.slot, a.kind, a.tendency, a.temperature, a.candidate, a.verdict, a.speedup,
                    a.registers, a.summary});
    if (!timed) rows.back().erase(rows.back().begin() + 7);
  }
  std::vector<std::string> header{"round", "slot", "kind", "tendency", "temperature", "candidate", "verdict", "speedup",
                                  "registers", "summary"};
  std::vector<Align> align{Align::Right, Align::Right, Align::Left, Align::Left, Align::Right, Align::Left,
                           Align::Left, Align::Right, Align::Right, Align::Left};
  if (!timed) {
    header.erase(header.begin() + 7);
    align.erase(align.begin() + 7);
  }
  table(out, header, align, rows);
}

/// Only for runs with --guided-stream.
void streamCutsSection(std::string &out, const ReportModel &model) {
  if (model.streamNote.empty()) return;
  out += "## Streaming cuts\n\n" + markdownText(model.streamNote) + ".\n\n";
  if (model.streamCuts.empty()) return;
  std::vector<std::vector<std::string>> rows;
  for (const detail::StreamCutLine &c : model.streamCuts)
    rows.push_back({c.round, c.slot, c.kind, c.request, c.line, c.code, c.statement, c.message, c.tokens});
  table(out, {"round", "slot", "kind", "request", "line", "code", "statement", "message", "tokens before the cut"},
        {Align::Right, Align::Right, Align::Left, Align::Right, Align::Right, Align::Left, Align::Left, Align::Left,
         Align::Right},
        rows);
}

void bestSection(std::string &out, const ReportModel &model) {
  if (!model.best) {
    out += "## Best kernel\n\n" + markdownText(model.noBestNote) + ".\n";
    return;
  }
  const detail::BestKernel &best = *model.best;
  out += "## Best kernel: " + markdownText(best.title) + "\n\n";
  fieldTable(out, best.facts);

  out += "### Resources and SASS\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const detail::ComparisonRow &row : best.resources) rows.push_back({row.label, row.candidate, row.reference});
  table(out, {"", "candidate", "nvcc"}, {Align::Left, Align::Right, Align::Right}, rows);

  if (!model.untimedNote.empty()) {
    // No timings section: the note under the run table says why.
  } else if (best.timings.empty()) {
    out += "### Timings\n\nNo timings.\n\n";
  } else {
    out += "### Timings\n\n";
    rows.clear();
    for (const detail::TimingRow &t : best.timings)
      rows.push_back({t.shape, t.candidateMedian, t.candidateBand, t.baselineMedian, t.baselineBand, t.speedup,
                      t.speedupBand, t.gflops, t.gbps});
    table(out,
          {"shape", "candidate median (ms)", "candidate p10–p90", "nvcc median (ms)", "nvcc p10–p90", "speedup",
           "speedup band", "GFLOP/s", "GB/s"},
          {Align::Left, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right,
           Align::Right, Align::Right},
          rows);
  }

  out += "### PTX\n\n";
  if (best.ptx.empty()) {
    out += "No PTX.\n";
    return;
  }
  std::string fence = fenceFor(best.ptx);
  out += fence + "ptx\n" + best.ptx;
  if (best.ptx.back() != '\n') out += "\n";
  out += fence + "\n";
}

} // namespace

std::string markdownReport(const store::RunData &data) {
  try {
    ReportModel model = detail::buildModel(data);
    std::string out = "# " + markdownText(model.title) + "\n\n";
    out += "## Run\n\n";
    fieldTable(out, model.run);
    if (!model.untimedNote.empty()) out += markdownText(model.untimedNote) + "\n\n";
    roundsSection(out, model);
    funnelSection(out, model);
    diagnosticsSection(out, model);
    attemptsSection(out, model);
    streamCutsSection(out, model);
    bestSection(out, model);
    return out;
  } catch (const std::exception &error) {
    // The model reads JSON defensively; this is the last line, so that a
    // report command prints something rather than aborting.
    return "# ptxforge run report\n\nThe report could not be built: " + markdownText(error.what()) + "\n";
  }
}

} // namespace ptxforge::report
