// HtmlReport: the report as one self-contained HTML5 page: inline CSS, an
// inline SVG chart of the best speedup per round, CSS bars for the stage
// funnel, the tables of the Markdown report and the best PTX. No script, no
// URL, nothing fetched; a Content-Security-Policy says so to the browser as a
// second line of defence behind htmlEscape, which every stored string passes.
#include "report/Report.h"
#include "report/ReportModel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>

namespace ptxforge::report {

namespace {

using detail::ReportModel;

/// What the run report adds to basePageStyle().
constexpr std::string_view kStyle = R"(
svg .line { fill: none; stroke: #2864c7; stroke-width: 2; }
svg .point circle { fill: #2864c7; }
svg .gap text { fill: #8a93a3; }
table.bars td.bar-cell { width: 24rem; }
.bar { height: 0.9rem; min-width: 1px; background: #8a93a3; }
.s-no-completion, .s-extract, .s-lint, .s-compile, .s-correctness { background: #d9534f; }
.s-unverified, .s-untimed { background: #8a93a3; }
.s-slower { background: #e0a030; }
.s-on-par { background: #8fb3d9; }
.s-faster { background: #3c9d5a; }
td.v-faster { color: #23773d; } td.v-slower { color: #9a6400; }
td.v-no-completion, td.v-extract, td.v-lint, td.v-compile, td.v-correctness { color: #b52b27; }
)";


void fieldTable(std::string &out, const std::vector<detail::Field> &fields) {
  out += "<table>\n<tbody>\n";
  for (const detail::Field &field : fields)
    out += "<tr>" + htmlElement("th", field.label) + htmlElement("td", field.value) + "</tr>\n";
  out += "</tbody>\n</table>\n";
}

// ---------------------------------------------------------------------------
// The speedup chart

constexpr double kWidth = 640, kHeight = 280;
constexpr double kLeft = 64, kRight = 24, kTop = 16, kBottom = 48;
constexpr double kInset = 16; ///< keeps the first and last rounds off the axes


std::string chartNote(std::string_view note) {
  return fmt::format("<svg class=\"chart\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
                     "aria-label=\"best speedup per round\">\n"
                     "<rect x=\"{2}\" y=\"{3}\" width=\"{4}\" height=\"{5}\" fill=\"none\" class=\"axis\"/>\n"
                     "<text class=\"chart-note\" x=\"{6}\" y=\"{7}\" text-anchor=\"middle\">{8}</text>\n</svg>\n",
                     kWidth, kHeight, kLeft, kTop, kWidth - kLeft - kRight, kHeight - kTop - kBottom,
                     (kLeft + kWidth - kRight) / 2, (kTop + kHeight - kBottom) / 2, htmlEscape(note));
}

std::string speedupChart(const ReportModel &model) {
  if (!model.anyTiming) return chartNote(model.chartNote);
  const std::vector<detail::RoundRow> &rounds = model.rounds;

  // y range: every speedup and the 1.0x line, padded, on tick boundaries.
  double low = 1.0, high = 1.0;
  for (const detail::RoundRow &row : rounds)
    if (row.bestSpeedup) {
      low = std::min(low, *row.bestSpeedup);
      high = std::max(high, *row.bestSpeedup);
    }
  double pad = std::max((high - low) * 0.1, 0.1);
  // Not below zero unless a (nonsensical) negative speedup must be shown.
  low = low >= 0 && low - pad < 0 ? 0.0 : low - pad;
  high += pad;
  double step = niceStep((high - low) / 5);
  low = std::floor(low / step) * step;
  high = std::ceil(high / step) * step;
  // Enough decimals for the step: 0.25 needs two, 0.5 one, 2 none.
  int exponent = static_cast<int>(std::floor(std::log10(step) + 1e-9));
  bool quarter = std::fabs(step / std::pow(10.0, exponent) - 2.5) < 1e-9;
  int decimals = std::clamp(-exponent + (quarter ? 1 : 0), 0, 3);

  double plotLeft = kLeft + kInset, plotRight = kWidth - kRight - kInset;
  double plotTop = kTop, plotBottom = kHeight - kBottom;
  int firstRound = rounds.front().round, lastRound = rounds.back().round;
  auto x = [&](int round) {
    if (lastRound == firstRound) return (plotLeft + plotRight) / 2;
    return plotLeft + (plotRight - plotLeft) * (round - firstRound) / static_cast<double>(lastRound - firstRound);
  };
  auto y = [&](double speedup) { return plotBottom - (plotBottom - plotTop) * (speedup - low) / (high - low); };

  std::string svg = fmt::format("<svg class=\"chart\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" "
                                "role=\"img\" aria-label=\"best speedup over nvcc per round\">\n",
                                kWidth, kHeight);
  // y grid, ticks and labels.
  int yTicks = static_cast<int>(std::lround((high - low) / step));
  for (int i = 0; i <= yTicks; ++i) {
    double value = low + i * step, at = y(value);
    svg += fmt::format("<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", kLeft, at,
                       kWidth - kRight, at);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{:.{}f}x</text>\n", kLeft - 6, at + 4,
                       value, decimals);
  }
  // x ticks: every round, or every k-th when there are many.
  int span = lastRound - firstRound + 1;
  int roundStep = std::max(1, (span + 11) / 12);
  for (int round = firstRound; round <= lastRound; round += roundStep) {
    double at = x(round);
    svg += fmt::format("<line class=\"axis\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>\n", at,
                       plotBottom, plotBottom + 5);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", at, plotBottom + 18,
                       round);
  }
  svg += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", kLeft, plotTop,
                     plotBottom);
  svg += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n", kLeft, plotBottom,
                     kWidth - kRight);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">round</text>\n",
                     (kLeft + kWidth - kRight) / 2, kHeight - 8);
  svg += fmt::format("<text x=\"14\" y=\"{0:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {0:.1f})\">"
                     "best speedup over nvcc</text>\n",
                     (plotTop + plotBottom) / 2);
  // The nvcc reference.
  double one = y(1.0);
  svg += fmt::format("<line class=\"ref\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", kLeft, one,
                     kWidth - kRight, one);
  svg += fmt::format("<text class=\"ref-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">nvcc 1.0x</text>\n",
                     kWidth - kRight - 2, one - 4);

  // The line, broken wherever a round has no timed correct candidate.
  std::vector<std::string> segment;
  auto flush = [&] {
    if (segment.size() >= 2) {
      svg += "<polyline class=\"line\" points=\"";
      for (size_t i = 0; i < segment.size(); ++i) svg += (i ? " " : "") + segment[i];
      svg += "\"/>\n";
    }
    segment.clear();
  };
  std::string marks;
  for (const detail::RoundRow &row : rounds) {
    double at = x(row.round);
    if (!row.bestSpeedup) {
      flush();
      marks += fmt::format("<g class=\"gap\"><title>round {}: no timed correct candidate</title>"
                           "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">&#215;</text></g>\n",
                           row.round, at, plotBottom - 4);
      continue;
    }
    double value = y(*row.bestSpeedup);
    segment.push_back(fmt::format("{:.1f},{:.1f}", at, value));
    marks += fmt::format("<g class=\"point\"><title>round {}: {}</title>"
                         "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\"/></g>\n",
                         row.round, detail::formatSpeedup(row.bestSpeedup), at, value);
  }
  flush();
  return svg + marks + "</svg>\n";
}

// ---------------------------------------------------------------------------
// Sections

void roundsSection(std::string &out, const ReportModel &model) {
  if (!model.untimedNote.empty()) {
    // Nothing was timed (the note under the run table says why): no empty chart, only the counts per round.
    out += "<section>\n<h2>Correct per round</h2>\n";
    htmlTable(out, detail::roundsTable(model));
    out += "</section>\n";
    return;
  }
  out += "<section>\n<h2>Best speedup per round</h2>\n";
  out += speedupChart(model);
  if (model.anyTiming) out += htmlElement("p", detail::kSpeedupDefinition, "caption") + "\n";
  if (!model.rounds.empty()) htmlTable(out, detail::roundsTable(model));
  out += "</section>\n";
}

void funnelSection(std::string &out, const ReportModel &model) {
  out += "<section>\n<h2>Stage funnel</h2>\n";
  if (model.rounds.empty()) {
    out += "<p class=\"note\">No candidates.</p>\n</section>\n";
    return;
  }
  const detail::FunnelCounts &total = model.funnelTotal;
  out += "<table class=\"bars\">\n<tbody>\n";
  for (size_t i = 0; i < kFunnelStageCount; ++i) {
    double percent = total.total > 0 ? 100.0 * total.stages[i] / total.total : 0.0;
    out += fmt::format("<tr><th>{0}</th><td class=\"bar-cell\"><div class=\"bar s-{0}\" style=\"width:{1:.1f}%\">"
                       "</div></td><td class=\"num\">{2}</td></tr>\n",
                       funnelStageName(static_cast<FunnelStage>(i)), percent, total.stages[i]);
  }
  out += "</tbody>\n</table>\n";
  out += htmlElement("p", detail::kFunnelDefinition, "caption") + "\n";
  out += fmt::format("<p class=\"note\">{} attempts, {} duplicate(s) among them (same PTX or SASS as an earlier "
                     "candidate), counted under the stage of their copied result.</p>\n",
                     total.total, total.duplicates);
  htmlTable(out, detail::funnelTable(model), "funnel");
  out += "</section>\n";
}

void diagnosticsSection(std::string &out, const ReportModel &model) {
  out += "<section>\n<h2>Top diagnostic codes</h2>\n";
  if (model.diagnostics.empty()) {
    out += "<p class=\"note\">No diagnostics from failed candidates.</p>\n</section>\n";
    return;
  }
  htmlTable(out, detail::diagnosticsTable(model));
  out += "</section>\n";
}

void attemptsSection(std::string &out, const ReportModel &model) {
  out += "<section>\n<h2>Attempts</h2>\n";
  if (model.attempts.empty()) {
    out += "<p class=\"note\">No candidates.</p>\n</section>\n";
    return;
  }
  constexpr size_t kVerdictColumn = 6; // coloured by the stage the attempt stopped at
  htmlTable(out, detail::attemptsTable(model), "attempts", [&model](size_t row, size_t column) {
    return column == kVerdictColumn ? "v-" + model.attempts[row].stage : std::string();
  });
  out += "</section>\n";
}

/// Only for runs with --guided-stream.
void streamCutsSection(std::string &out, const ReportModel &model) {
  if (model.streamNote.empty()) return;
  out += "<section>\n<h2>Streaming cuts</h2>\n" + htmlElement("p", model.streamNote + ".", "note") + "\n";
  if (!model.streamCuts.empty()) htmlTable(out, detail::streamCutsTable(model));
  out += "</section>\n";
}

void bestSection(std::string &out, const ReportModel &model) {
  out += "<section>\n";
  if (!model.best) {
    out += "<h2>Best kernel</h2>\n" + htmlElement("p", model.noBestNote, "note") + "\n</section>\n";
    return;
  }
  const detail::BestKernel &best = *model.best;
  out += htmlElement("h2", "Best kernel: " + best.title) + "\n";
  fieldTable(out, best.facts);

  out += "<h3>Resources and SASS</h3>\n";
  htmlTable(out, detail::resourcesTable(best));

  if (!model.untimedNote.empty()) {
    // No timings section: the note under the run table says why.
  } else if (best.timings.empty()) {
    out += "<h3>Timings</h3>\n<p class=\"note\">No timings.</p>\n";
  } else {
    out += "<h3>Timings</h3>\n";
    htmlTable(out, detail::timingsTable(best));
  }

  out += "<h3>PTX</h3>\n";
  if (best.ptx.empty())
    out += "<p class=\"note\">No PTX.</p>\n";
  else
    out += "<pre><code class=\"language-ptx\">" + htmlEscape(best.ptx) + "</code></pre>\n";
  out += "</section>\n";
}

std::string page(std::string_view title, std::string_view body) { return htmlPage(title, kStyle, body); }

} // namespace

std::string htmlReport(const store::RunData &data) {
  try {
    ReportModel model = detail::buildModel(data);
    std::string body = htmlElement("h1", model.title) + "\n<section>\n<h2>Run</h2>\n";
    fieldTable(body, model.run);
    if (!model.untimedNote.empty()) body += htmlElement("p", model.untimedNote, "note untimed") + "\n";
    body += "</section>\n";
    roundsSection(body, model);
    funnelSection(body, model);
    diagnosticsSection(body, model);
    attemptsSection(body, model);
    streamCutsSection(body, model);
    bestSection(body, model);
    return page(model.title, body);
  } catch (const std::exception &error) {
    // The model reads JSON defensively; this is the last line, so that a
    // report command writes a page rather than aborting.
    return page("ptxforge run report", htmlElement("p", std::string("The report could not be built: ") + error.what()));
  }
}

} // namespace ptxforge::report
