// Eval reports: the Markdown table, the self-contained HTML page with charts,
// the side-by-side comparison of two evals and the leaderboard. They live in
// report, not eval: eval's metrics build on report's funnel, so report stays
// below eval and reads eval documents, never eval's types. All of them
// render an *eval document* (below), so they work the same on a fresh eval,
// on one read back from the store, and on a JSON file someone sent.
//
// Eval document (what `ptxforge eval --json` writes and the store keeps):
//   {"eval": ID, "created_at": "...", "model": "openai:...", "suite": "core",
//    "suite_version": "core@1a2b3c4d5e6f",
//    "status": "complete"|"incomplete"|"interrupted"|"infra-error"|"pending"|"running",
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

/// The status when it is not complete (what it means for the figures), the
/// headline tables (overall and per level): first attempts (tasks, samples,
/// samples with no completion, lint@k, compile@k, correct@k for each k,
/// fast_0/1/1.5/2, fast_1/1.5/2_low, geomean speedup, register and instruction
/// ratios), fast_p@k, and with R > 1 the figures after R rounds (correct@k,
/// fast_p, fast_p_low), each table with its formulas; the per-task table, the
/// error taxonomy (stages and the most frequent diagnostic codes), stability
/// (speedup and instruction spreads per task) and the provenance.
std::string evalMarkdown(const nlohmann::json &document);

/// One HTML5 page, inline CSS and SVG only (no scripts, no URLs): the same
/// tables, plus charts: per-level bars of correct@1 and fast_1 (fast_0 when not
/// timed), the stage funnel over all attempts, and the distribution of speedups
/// of correct samples (a histogram on a log2 axis with a line at 1.0x; the chart
/// says "no timings (CPU emulator)" when the eval was not timed).
std::string evalHtml(const nlohmann::json &document);

/// Two evals side by side (A, B, B − A) for every group figure overall and
/// per level, and per task for correct@1, best speedup and geomean. Says so at
/// the top when the suite versions differ (the figures are then not comparable
/// task for task; tasks in only one of them are listed as such), when either
/// eval is not complete, and when their rounds differ.
std::string compareMarkdown(const nlohmann::json &a, const nlohmann::json &b);

/// The complete evals of one suite version, ranked best first by correct@1
/// then fast_1 then geomean: model, status, date, samples, rounds, strategies,
/// executor, correct@1, fast_0, fast_1, fast_1_low, correct@1 after R rounds,
/// geomean speedup. Evals that are not complete, and the shards of sharded
/// evals (parameters.shard; their merge is ranked), are left out and counted
/// in a note, or with `all` listed unranked below the ranked ones. Documents of
/// another suite version than `suiteVersion` are left out (and counted).
std::string leaderboardMarkdown(const std::vector<nlohmann::json> &documents, const std::string &suiteVersion,
                                bool all = false);

/// "12 of 105 samples had no completion (error 10, unasked 2): left out of
/// every figure." from the document's metrics.overall; "" when every sample
/// has its completions (or the document has no such counts).
std::string noCompletionSentence(const nlohmann::json &document);

} // namespace ptxforge::report
