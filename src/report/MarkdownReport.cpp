// MarkdownReport: the report as GitHub-flavoured Markdown, for a terminal or a
// pull request. Markdown has no charts, so the speedup curve is a table. Text
// from the store is escaped so that it can neither start HTML, emphasis, links
// or code, nor break a table; the PTX goes into a fence longer than any
// backtick run inside it, so the model's text cannot close it early.
#include "report/Report.h"
#include "report/ReportModel.h"

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

void table(std::string &out, const detail::TableData &data) { out += markdownTable(data.header, data.numeric, data.rows); }

void fieldTable(std::string &out, const std::vector<detail::Field> &fields) {
  std::vector<std::vector<std::string>> rows;
  for (const detail::Field &field : fields) rows.push_back({field.label, field.value});
  out += markdownTable({"field", "value"}, {}, rows);
}

void roundsSection(std::string &out, const ReportModel &model) {
  if (!model.untimedNote.empty()) {
    // Nothing was timed (the note under the run table says why): only the counts per round.
    out += "## Correct per round\n\n";
    table(out, detail::roundsTable(model));
    return;
  }
  out += "## Best speedup per round\n\n";
  if (!model.chartNote.empty()) out += "*" + markdownText(model.chartNote) + "*\n\n";
  if (model.rounds.empty()) return;
  out += markdownText(detail::kSpeedupDefinition) + "\n\n";
  table(out, detail::roundsTable(model));
}

void funnelSection(std::string &out, const ReportModel &model) {
  out += "## Stage funnel\n\n";
  if (model.rounds.empty()) {
    out += "No candidates.\n\n";
    return;
  }
  out += "Where each attempt stopped. Duplicates (same PTX or SASS as an earlier candidate) are also counted "
         "under the stage of their copied result. " + markdownText(detail::kFunnelDefinition) + "\n\n";
  table(out, detail::funnelTable(model));
}

/// `title`'s section: `empty` when there is nothing to list, else the table.
void tableSection(std::string &out, std::string_view title, bool none, std::string_view empty,
                  const detail::TableData &data) {
  out += "## " + std::string(title) + "\n\n";
  if (none)
    out += std::string(empty) + "\n\n";
  else
    table(out, data);
}

/// Only for runs with --guided-stream.
void streamCutsSection(std::string &out, const ReportModel &model) {
  if (model.streamNote.empty()) return;
  out += "## Streaming cuts\n\n" + markdownText(model.streamNote) + ".\n\n";
  if (!model.streamCuts.empty()) table(out, detail::streamCutsTable(model));
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
  table(out, detail::resourcesTable(best));
  if (!model.untimedNote.empty()) {
    // No timings section: the note under the run table says why.
  } else if (best.timings.empty()) {
    out += "### Timings\n\nNo timings.\n\n";
  } else {
    out += "### Timings\n\n";
    table(out, detail::timingsTable(best));
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
    tableSection(out, "Top diagnostic codes", model.diagnostics.empty(), "No diagnostics from failed candidates.",
                 detail::diagnosticsTable(model));
    tableSection(out, "Attempts", model.attempts.empty(), "No candidates.", detail::attemptsTable(model));
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
