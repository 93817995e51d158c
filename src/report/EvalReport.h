// Eval reports: the Markdown table, the self-contained HTML page with charts,
// the side-by-side comparison of two evals and the leaderboard. They live in
// report, not eval: eval's metrics build on report's funnel, so report stays
// below eval and reads eval documents, never eval's types. All of them
// render an *eval document* (below), so they work the same on a fresh eval,
// on one read back from the store, and on a JSON file someone sent.
//
// Eval document (what `ptxforge eval --json` writes and the store keeps):
//   {"eval": ID, "created_at": "...", "model": "openai:...", "suite": "core",
//    "suite_version": "core@1a2b3c4d5e6f", "status": "done"|"pending"|...,
//    "parameters": {"samples", "ks", "rounds", "strategies", "temperature", ...},
//    "provenance": {"executor", "device", "arch", "ptxforge", "reference_compiler", ...},
//    "metrics": eval::toJson(EvalMetrics)   (eval/Metrics.h documents its keys)}
//
// Every value may be missing or null (pending evals, the emulator's absent
// timings, hand-edited files): it is shown as "n/a", never invented, and
// nothing throws. Strings from the document are escaped for the output format.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ptxforge::report {

/// Headline table (overall and per level: tasks, samples, lint@k, compile@k,
/// correct@k for each k, fast_0/1/1.5/2, geomean speedup, register and
/// instruction ratios), the per-task table, the error taxonomy (stages and the
/// most frequent diagnostic codes), stability (speedup and instruction spreads
/// per task) and the provenance.
std::string evalMarkdown(const nlohmann::json &document);

/// One HTML5 page, inline CSS and SVG only (no scripts, no URLs): the same
/// tables, plus charts: per-level bars of correct@1 and fast_1 (fast_0 when not
/// timed), the stage funnel over all attempts, and the distribution of speedups
/// of correct samples (a histogram on a log2 axis with a line at 1.0x; the chart
/// says "no timings (CPU emulator)" when the eval was not timed).
std::string evalHtml(const nlohmann::json &document);

/// Two evals side by side (A, B, B − A) for the headline figures overall and
/// per level, and per task for correct@1, best speedup and geomean. Says so at
/// the top when the suite versions differ (the figures are then not comparable
/// task for task; tasks in only one of them are listed as such).
std::string compareMarkdown(const nlohmann::json &a, const nlohmann::json &b);

/// Every eval of one suite version, best first by correct@1 then fast_1 then
/// geomean: model, date, samples, rounds, strategies, executor, correct@1,
/// fast_0, fast_1, geomean speedup. Documents of another suite version than
/// `suiteVersion` are left out (and counted in a note under the table).
std::string leaderboardMarkdown(const std::vector<nlohmann::json> &documents, const std::string &suiteVersion);

} // namespace ptxforge::report
