// Reports of hand-built runs: the funnel, the per-round figures, the speedup
// chart, the best kernel's tables, escaping of hostile stored text, and runs
// with missing or odd JSON.
#include "report/Report.h"

#include "Golden.h"
#include "verify/Check.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <limits>
#include <regex>
#include <string>
#include <vector>

namespace ptxforge::report {
namespace {

using nlohmann::json;
using store::AttemptRow;
using store::RunData;

// The best kernel's PTX carries everything a model could write to escape its
// code block: a longer backtick run than Markdown's usual fence and the HTML
// that would close <pre><code>.
const std::string kHostilePtx = "// @ptxforge block=(256) grid=((n+255)/256)\n"
                                ".version 8.0\n"
                                ".target sm_90\n"
                                "// ```` not a fence\n"
                                "// </code></pre><script>alert(1)</script>\n"
                                ".visible .entry vector_add() { ret; }";
const std::string kHostileSummary = "<img src=x onerror=alert(1)>";

AttemptRow attempt(int round, int slot, const std::string &kind = "initial") {
  AttemptRow row;
  row.prompt.id = round * 10 + slot;
  row.prompt.runId = 7;
  row.prompt.round = round;
  row.prompt.slot = slot;
  row.prompt.kind = kind;
  row.prompt.tendency = "balanced";
  row.prompt.temperature = 0.7;
  return row;
}

AttemptRow completed(int round, int slot, int64_t candidateId, const std::string &ptx,
                     const std::string &kind = "initial") {
  AttemptRow row = attempt(round, slot, kind);
  row.completion = store::CompletionRecord{};
  row.completion->promptId = row.prompt.id;
  row.completion->status = "complete";
  row.completion->text = "```ptx\n" + ptx + "\n```";
  row.candidate = store::CandidateRecord{};
  row.candidate->id = candidateId;
  row.candidate->promptId = row.prompt.id;
  row.candidate->round = round;
  row.candidate->slot = slot;
  row.candidate->ptx = ptx;
  return row;
}

ptx::Diagnostic diagnostic(const std::string &code, const std::string &message) {
  return {code, ptx::Severity::Error, 4, 3, message, ""};
}

verify::BenchmarkReport benchmark(double baselineMs, double bandLow, double bandHigh) {
  verify::BenchmarkReport b;
  b.shapeIndex = 1;
  b.shape = {{"n", 1048576}};
  b.baseline = {baselineMs, 0.0124, 0.0127, 0.0120, 0.0130, 50};
  b.speedupLow = bandLow;
  b.speedupHigh = bandHigh;
  return b;
}

/// The "timing" array verify::toJson writes for these benchmarks.
json timingJson(std::vector<verify::BenchmarkReport> benchmarks) {
  verify::CheckResult result;
  result.benchmarks = std::move(benchmarks);
  return verify::toJson(result)["timing"];
}

json timing(double candidateMs, double baselineMs) {
  verify::BenchmarkReport b = benchmark(baselineMs, 1.46, 1.57);
  b.candidate = {candidateMs, 0.0081, 0.0085, 0.0080, 0.0086, 50};
  b.speedup = baselineMs / candidateMs;
  b.gbps = 1510.2;
  b.baselineGbps = 1006.8;
  return timingJson({b});
}

/// A result as the solve loop stores it: verify::toJson of a CheckResult plus "sass".
void setResult(AttemptRow &row, const std::string &verdict, std::optional<double> speedup,
               std::vector<ptx::Diagnostic> diagnostics = {}, const std::string &summary = "") {
  verify::CheckResult check;
  check.verdict = verify::parseVerdict(verdict).value_or(verify::Verdict::NotVerified);
  check.stage = verdict == "correct" ? verify::Stage::Done : verify::Stage::Execute;
  check.summary = summary.empty() ? verdict : summary;
  check.diagnostics = std::move(diagnostics);
  row.result = store::ResultRecord{};
  row.result->candidateId = row.candidate->id;
  row.result->verdict = verdict; // the column keeps text this build may not know
  row.result->stage = verify::stageName(check.stage);
  row.result->summary = check.summary;
  row.result->speedup = speedup;
  row.result->result = verify::toJson(check);
  row.result->result["sass"] = nullptr;
}

std::string stageOf(const AttemptRow &row) { return funnelStageName(funnelStage(row)); }

/// Three rounds of four slots: every way an attempt can end.
///   round 1: correct 0.80x, no completion, no PTX, lint error
///   round 2: compile error, wrong, lint error, crashed      (no correct candidate)
///   round 3: correct 1.50x, its duplicate, correct 0.90x, not yet verified
RunData sampleRun() {
  RunData data;
  data.run.id = 7;
  data.run.task = "vector_add";
  data.run.model = "exec:./model.py";
  data.run.strategies = "zero-shot,repair";
  data.run.status = "done";
  data.run.createdAt = "2026-11-29T20:41:07Z";
  data.run.updatedAt = "2026-11-29T20:43:51Z";
  data.run.parameters = {{"rounds", 3}, {"candidates", 4}, {"seed", 1}};
  data.run.provenance = {{"device", "NVIDIA H200"}, {"arch", "sm_90"}};

  std::vector<AttemptRow> &a = data.attempts;
  // Round 1.
  a.push_back(completed(1, 0, 1, ".version 8.0 // slow"));
  setResult(a.back(), "correct", 0.8);
  a.push_back(attempt(1, 1));
  a.back().completion = store::CompletionRecord{};
  a.back().completion->status = "error";
  a.back().completion->error = "HTTP 429: rate limited";
  a.push_back(completed(1, 2, 2, ""));
  a.back().candidate->extractError = "no ```ptx block in the answer";
  a.push_back(completed(1, 3, 3, ".version 8.0 // lint"));
  setResult(a.back(), "lint-error", std::nullopt,
            {diagnostic("undeclared-register", "%r9 is not declared"),
             diagnostic("undeclared-register", "%r10 is not declared"),
             diagnostic("register-type-mismatch", "%f1 is .f32")});
  // Round 2.
  a.push_back(completed(2, 0, 4, ".version 8.0 // compile", "repair"));
  setResult(a.back(), "compile-error", std::nullopt, {diagnostic("ptxas-error", "ptxas fatal")});
  a.push_back(completed(2, 1, 5, ".version 8.0 // wrong", "repair"));
  setResult(a.back(), "wrong", std::nullopt, {}, kHostileSummary);
  a.push_back(completed(2, 2, 6, ".version 8.0 // lint again", "repair"));
  setResult(a.back(), "lint-error", std::nullopt, {diagnostic("undeclared-register", "%r3 is not declared")});
  a.push_back(completed(2, 3, 7, ".version 8.0 // crash", "repair"));
  setResult(a.back(), "crashed", std::nullopt, {}, "a | b\nc");
  // Round 3.
  a.push_back(completed(3, 0, 8, kHostilePtx, "optimize"));
  setResult(a.back(), "correct", 1.5);
  a.back().result->registers = 30;
  json &best = a.back().result->result;
  best["resources"] = {{"registers", 30},   {"spill_store_bytes", 0}, {"spill_load_bytes", 0}, {"stack_bytes", 0},
                       {"shared_bytes", 0}, {"local_bytes", 0},       {"barriers", 0},         {"compile_ms", 12.5},
                       {"known", true}};
  best["sass"] = {{"instructions", 96},         {"ffma", 0},        {"tensor_core_ops", 0},
                  {"spill_loads", 0},           {"spill_stores", 0}, {"barriers", 0},
                  {"global_load_widths", {{"32", 1}, {"128", 8}}},
                  {"global_store_widths", {{"128", 4}}}};
  best["timing"] = timing(0.0083333, 0.0125);
  best["provenance"]["device"] = "NVIDIA H200";
  best["provenance"]["arch"] = "sm_90";
  best["provenance"]["compiler"] = "nvJitLink 13.0";
  a.push_back(completed(3, 1, 9, kHostilePtx, "optimize"));
  a.back().candidate->duplicateOf = 8;
  a.back().result = a[8].result;
  a.back().result->candidateId = 9;
  a.push_back(completed(3, 2, 10, ".version 8.0 // slower", "optimize"));
  setResult(a.back(), "correct", 0.9);
  a.push_back(completed(3, 3, 11, ".version 8.0 // unchecked", "optimize"));

  data.run.summary = {
      {"best", {{"candidate_id", 8}, {"round", 3}, {"slot", 0}, {"speedup", 1.5}, {"verdict", "correct"}}},
      {"rounds", json::array({{{"round", 1}, {"best_speedup", 0.8}},
                              {{"round", 2}, {"best_speedup", nullptr}},
                              {{"round", 3}, {"best_speedup", 1.5}}})},
      {"reference",
       {{"registers", 24},
        {"spill_store_bytes", 0},
        {"spill_load_bytes", 0},
        {"shared_bytes", 0},
        {"sass",
         {{"instructions", 112},
          {"ffma", 0},
          {"tensor_core_ops", 0},
          {"global_load_widths", {{"128", 4}, {"32", 2}}}}},
        {"timing_ms", 0.0125}}},
      {"tokens", {{"prompt", 12000}, {"completion", 3400}}},
      {"wall_s", 42.5},
      {"stopped_because", "rounds " + kHostileSummary}};
  return data;
}

size_t countOf(const std::string &text, const std::string &needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++count;
  return count;
}

std::string svgOf(const std::string &html) {
  size_t begin = html.find("<svg");
  size_t end = html.find("</svg>", begin);
  EXPECT_NE(begin, std::string::npos);
  EXPECT_NE(end, std::string::npos);
  if (begin == std::string::npos || end == std::string::npos) return "";
  return html.substr(begin, end - begin);
}

/// Page is self-contained: no script, no URL outside the SVG namespace name, no
/// element that loads something.
void expectSelfContained(const std::string &html) {
  EXPECT_EQ(html.find("<script"), std::string::npos);
  std::string withoutNamespace = html;
  for (size_t at; (at = withoutNamespace.find("http://www.w3.org/2000/svg")) != std::string::npos;)
    withoutNamespace.erase(at, 26);
  EXPECT_EQ(withoutNamespace.find("http://"), std::string::npos);
  EXPECT_EQ(withoutNamespace.find("https://"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(<[a-zA-Z][^>]*\s(src|href)\s*=)")));
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
}

// ---------------------------------------------------------------------------
// funnelStage

TEST(FunnelStage, ClassifiesEveryAttemptOfTheSampleRun) {
  RunData data = sampleRun();
  std::vector<std::string> stages;
  for (const AttemptRow &row : data.attempts) stages.push_back(stageOf(row));
  std::vector<std::string> expected = {"slower",      "no-completion", "extract", "lint",       // round 1
                                       "compile",     "correctness",   "lint",    "correctness", // round 2
                                       "faster",      "faster",        "slower",  "unverified"}; // round 3
  EXPECT_EQ(stages, expected);
}

TEST(FunnelStage, EdgeCases) {
  AttemptRow row = attempt(1, 0);
  EXPECT_EQ(stageOf(row), "no-completion"); // nothing came back
  row.completion = store::CompletionRecord{};
  row.completion->status = "pending";
  EXPECT_EQ(stageOf(row), "no-completion"); // batch answer not in yet
  row = completed(1, 0, 1, ".version 8.0");
  row.candidate->extractError = "two modules";
  EXPECT_EQ(stageOf(row), "extract");
  row.candidate->extractError.clear();
  for (const char *verdict : {"wrong", "crashed", "timeout", "launch-error", "rejected"}) {
    setResult(row, verdict, std::nullopt);
    EXPECT_EQ(stageOf(row), "correctness") << verdict;
  }
  setResult(row, "no-ptx", std::nullopt);
  EXPECT_EQ(stageOf(row), "extract");
  setResult(row, "correct", 1.0);
  EXPECT_EQ(stageOf(row), "faster"); // no noise band recorded: the median decides
  setResult(row, "correct", 0.999);
  EXPECT_EQ(stageOf(row), "slower");
  // With the band of the largest shape (slowest baseline) recorded, only a
  // band entirely above or below 1.0 is faster or slower.
  auto withBand = [&](double low, double high) {
    setResult(row, "correct", (low + high) / 2);
    row.result->result["timing"] = timingJson({benchmark(0.01, 0.5, 0.6), benchmark(3.0, low, high)});
    return stageOf(row);
  };
  EXPECT_EQ(withBand(0.99, 1.01), "on-par");
  EXPECT_EQ(withBand(1.02, 1.10), "faster");
  EXPECT_EQ(withBand(0.90, 0.98), "slower");
  setResult(row, "correct", std::nullopt);
  EXPECT_EQ(stageOf(row), "untimed"); // the CPU emulator does not time
  setResult(row, "something-new", std::nullopt);
  EXPECT_EQ(stageOf(row), "unverified");
}

TEST(DecodeResult, TheColumnsWinOverAnOlderDocument) {
  // Rows written before the gate had a not-verified verdict of its own: the
  // column says not-verified, the JSON says rejected.
  AttemptRow row = completed(1, 0, 1, ".version 8.0");
  setResult(row, "rejected", std::nullopt);
  row.result->verdict = "not-verified";
  row.result->stage = "execute";
  StoredResult result = decodeResult(*row.result);
  ASSERT_TRUE(result.check.has_value());
  EXPECT_EQ(result.verdict, verify::Verdict::NotVerified);
  EXPECT_EQ(result.check->verdict, verify::Verdict::NotVerified);
  EXPECT_EQ(result.stage, verify::Stage::Execute);
  EXPECT_EQ(funnelStage(row, &result), FunnelStage::Unverified);
  // A document that does not decode leaves the columns.
  row.result->result = {{"verdict", "correct"}};
  result = decodeResult(*row.result);
  EXPECT_FALSE(result.check.has_value());
  EXPECT_EQ(result.verdict, verify::Verdict::NotVerified);
}

TEST(FunnelStage, NamesRoundTrip) {
  for (size_t i = 0; i < kFunnelStageCount; ++i) {
    auto stage = static_cast<FunnelStage>(i);
    EXPECT_EQ(parseFunnelStage(funnelStageName(stage)), stage);
    EXPECT_EQ(json(stage), funnelStageName(stage));
  }
  EXPECT_FALSE(parseFunnelStage("skeleton").has_value());
}

TEST(HtmlEscape, EscapesAllFiveCharacters) {
  EXPECT_EQ(htmlEscape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
  EXPECT_EQ(htmlEscape("plain"), "plain");
}

// ---------------------------------------------------------------------------
// Markdown

TEST(MarkdownReport, FunnelTableCountsEveryStagePerRoundAndInTotal) {
  std::string md = markdownReport(sampleRun());
  // Columns: no-completion extract lint compile correctness unverified untimed slower faster duplicates total
  EXPECT_NE(md.find("| round | no-completion | extract | lint | compile | correctness | unverified | untimed | "
                    "slower | on-par | faster | duplicates | total |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 1 | 1 | 1 | 1 | 0 | 0 | 0 | 0 | 1 | 0 | 0 | 0 | 4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 | 0 | 0 | 1 | 1 | 2 | 0 | 0 | 0 | 0 | 0 | 0 | 4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3 | 0 | 0 | 0 | 0 | 0 | 1 | 0 | 1 | 0 | 2 | 1 | 4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| total | 1 | 1 | 2 | 1 | 2 | 1 | 0 | 2 | 0 | 2 | 1 | 12 |"), std::string::npos) << md;
}

TEST(MarkdownReport, SkeletonStepIsListedButNotCounted) {
  RunData data = sampleRun();
  AttemptRow skeleton = attempt(1, 0, "skeleton");
  skeleton.completion = store::CompletionRecord{};
  skeleton.completion->status = "complete";
  skeleton.completion->text = "1. load a float4 ...";
  data.attempts.insert(data.attempts.begin(), skeleton);
  std::string md = markdownReport(data);
  EXPECT_NE(md.find("| 1 | 0 | skeleton | balanced | 0.7 | n/a | skeleton |"), std::string::npos) << md;
  EXPECT_NE(md.find("| total | 1 | 1 | 2 | 1 | 2 | 1 | 0 | 2 | 0 | 2 | 1 | 12 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 | 0.80x | 0.80x | 1 / 4 |"), std::string::npos) << md;
}

TEST(MarkdownReport, BestSpeedupPerRound) {
  std::string md = markdownReport(sampleRun());
  EXPECT_NE(md.find("| round | best speedup | best so far | correct / attempts |"), std::string::npos);
  EXPECT_NE(md.find("| 1 | 0.80x | 0.80x | 1 / 4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 | n/a | 0.80x | 0 / 4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3 | 1.50x | 1.50x | 3 / 4 |"), std::string::npos) << md;
}

TEST(MarkdownReport, TopDiagnosticCodesByFailedCandidates) {
  std::string md = markdownReport(sampleRun());
  size_t undeclared = md.find("| undeclared-register | error | 2 | 3 | %r9 is not declared |");
  size_t ptxas = md.find("| ptxas-error | error | 1 | 1 | ptxas fatal |");
  size_t mismatch = md.find("| register-type-mismatch | error | 1 | 1 |");
  ASSERT_NE(undeclared, std::string::npos) << md;
  ASSERT_NE(ptxas, std::string::npos) << md;
  ASSERT_NE(mismatch, std::string::npos) << md;
  EXPECT_LT(undeclared, ptxas);
  EXPECT_LT(undeclared, mismatch);
}

TEST(MarkdownReport, AttemptsTable) {
  std::string md = markdownReport(sampleRun());
  EXPECT_NE(md.find("| 1 | 1 | initial | balanced | 0.7 | n/a | completion error | n/a | n/a | "
                    "HTTP 429: rate limited |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 3 | 1 | optimize | balanced | 0.7 | #9 (duplicate of #8) | correct | 1.50x | 30 | correct |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 3 | 3 | optimize | balanced | 0.7 | #11 | not verified |"), std::string::npos) << md;
  // A summary cannot break the table: the pipe is escaped, the newline folded.
  EXPECT_NE(md.find("| a \\| b c |"), std::string::npos) << md;
}

TEST(MarkdownReport, BestKernelResourcesAgainstNvccAndTimings) {
  std::string md = markdownReport(sampleRun());
  EXPECT_NE(md.find("## Best kernel: candidate #8 (round 3, slot 0)"), std::string::npos) << md;
  EXPECT_NE(md.find("| registers | 30 | 24 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| spill stores (bytes) | 0 | 0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| SASS instructions | 96 | 112 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| LDG widths | 128-bit: 8, 32-bit: 1 | 128-bit: 4, 32-bit: 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| stack frame (bytes) | 0 | n/a |"), std::string::npos) << md; // the reference has none
  EXPECT_NE(md.find("| BAR instructions | 0 | n/a |"), std::string::npos) << md;
  EXPECT_NE(md.find("| median time (ms) | 0.008333 | 0.0125 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| {n=1048576} | 0.008333 | 0.0081–0.0085 | 0.0125 | 0.0124–0.0127 | 1.50x | 1.46–1.57x | "
                    "n/a | 1510.2 (nvcc 1006.8) |"),
            std::string::npos)
      << md;
}

TEST(MarkdownReport, PtxFenceIsLongerThanAnyBacktickRunInIt) {
  std::string md = markdownReport(sampleRun());
  // The PTX holds a run of four backticks, so the fence has five.
  std::string block = "`````ptx\n" + kHostilePtx + "\n`````\n";
  EXPECT_NE(md.find(block), std::string::npos) << md;
  EXPECT_EQ(md.find("``````"), std::string::npos);
}

TEST(MarkdownReport, StoredTextCannotInjectHtml) {
  std::string md = markdownReport(sampleRun());
  // Outside the fence nothing from the store reaches the output as a tag.
  std::string outsideFence = md.substr(0, md.find("`````ptx"));
  EXPECT_EQ(outsideFence.find("<img"), std::string::npos) << md;
  EXPECT_NE(outsideFence.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos) << md;
  EXPECT_EQ(outsideFence.find("<script"), std::string::npos);
}

TEST(MarkdownReport, RunTable) {
  std::string md = markdownReport(sampleRun());
  EXPECT_NE(md.find("# ptxforge run #7: vector_add"), std::string::npos) << md;
  EXPECT_NE(md.find("| parameters | candidates=4, rounds=3, seed=1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| best | candidate #8 (round 3, slot 0): correct, 1.50x |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tokens | 12000 prompt, 3400 completion |"), std::string::npos) << md;
  EXPECT_NE(md.find("| wall time | 42.5 s |"), std::string::npos) << md;
  EXPECT_NE(md.find("| attempts | 12 prompts, 10 candidates with PTX, 1 duplicate(s) |"), std::string::npos) << md;
}

// ---------------------------------------------------------------------------
// HTML

TEST(HtmlReport, IsOneSelfContainedPage) {
  std::string html = htmlReport(sampleRun());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  expectSelfContained(html);
}

TEST(HtmlReport, ChartHasOnePointPerTimedRoundAndAGapOtherwise) {
  std::string svg = svgOf(htmlReport(sampleRun()));
  EXPECT_EQ(countOf(svg, "<circle"), 2u) << svg; // rounds 1 and 3
  EXPECT_EQ(countOf(svg, "class=\"gap\""), 1u) << svg;
  EXPECT_NE(svg.find("<title>round 2: no timed correct candidate</title>"), std::string::npos);
  // Round 2 breaks the line, and a single point is no line.
  EXPECT_EQ(countOf(svg, "<polyline"), 0u) << svg;
  EXPECT_NE(svg.find("<title>round 1: 0.80x</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>round 3: 1.50x</title>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"ref\""), std::string::npos);
  EXPECT_NE(svg.find(">nvcc 1.0x</text>"), std::string::npos);
}

TEST(HtmlReport, ChartJoinsConsecutiveTimedRoundsAndPlacesThemAroundTheNvccLine) {
  RunData data = sampleRun();
  setResult(data.attempts[5], "correct", 1.1); // round 2 now has a timed correct candidate
  std::string svg = svgOf(htmlReport(data));
  EXPECT_EQ(countOf(svg, "<circle"), 3u) << svg;
  EXPECT_EQ(countOf(svg, "class=\"gap\""), 0u) << svg;
  ASSERT_EQ(countOf(svg, "<polyline"), 1u) << svg;

  std::smatch match;
  ASSERT_TRUE(std::regex_search(svg, match, std::regex(R"re(class="ref" x1="[\d.]+" y1="([\d.]+)")re")));
  double reference = std::stod(match[1]);
  std::vector<double> ys;
  const std::regex circle(R"re(<circle cx="([\d.]+)" cy="([\d.]+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle); it != std::sregex_iterator(); ++it)
    ys.push_back(std::stod((*it)[2]));
  ASSERT_EQ(ys.size(), 3u);
  // SVG y grows downwards: 0.80x below the 1.0x line, 1.10x and 1.50x above it, 1.50x highest.
  EXPECT_GT(ys[0], reference);
  EXPECT_LT(ys[1], reference);
  EXPECT_LT(ys[2], ys[1]);
}

TEST(HtmlReport, HostileTextIsEscaped) {
  std::string html = htmlReport(sampleRun());
  expectSelfContained(html);
  EXPECT_NE(html.find("&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_EQ(countOf(html, "</code></pre>"), 1u); // only the one closing the PTX
  EXPECT_NE(html.find("// ```` not a fence"), std::string::npos);
}

TEST(HtmlReport, FunnelBarsAndTables) {
  std::string html = htmlReport(sampleRun());
  EXPECT_NE(html.find("<tr><th>lint</th><td class=\"bar-cell\"><div class=\"bar s-lint\" style=\"width:16.7%\">"
                      "</div></td><td class=\"num\">2</td></tr>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td class=\"num\">24</td>"), std::string::npos); // nvcc's registers
  EXPECT_NE(html.find("<td class=\"v-faster\">correct</td>"), std::string::npos);
  EXPECT_NE(html.find("<pre><code class=\"language-ptx\">"), std::string::npos);
}

// ---------------------------------------------------------------------------
// Missing and odd data

TEST(Report, EmptyRunSaysSo) {
  RunData data;
  data.run.id = 3;
  data.run.task = "gemm";
  std::string md = markdownReport(data);
  std::string html = htmlReport(data);
  EXPECT_NE(md.find("| best | n/a |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tokens | n/a |"), std::string::npos) << md;
  EXPECT_NE(md.find("## Best kernel\n\nno candidates."), std::string::npos) << md;
  EXPECT_NE(md.find("No candidates."), std::string::npos);
  EXPECT_NE(html.find(">no candidates</text>"), std::string::npos) << html;
  EXPECT_NE(html.find("<p class=\"note\">no candidates</p>"), std::string::npos) << html;
  expectSelfContained(html);
}

TEST(Report, EmptySummaryShowsNotAvailable) {
  RunData data = sampleRun();
  data.run.summary = json::object();
  std::string md = markdownReport(data);
  std::string html = htmlReport(data);
  for (const char *field : {"best", "tokens", "wall time", "stopped because"})
    EXPECT_NE(md.find(std::string("| ") + field + " | n/a |"), std::string::npos) << field;
  // Without a reference every nvcc cell is n/a; the best kernel comes from the attempts.
  EXPECT_NE(md.find("| registers | 30 | n/a |"), std::string::npos) << md;
  EXPECT_NE(md.find("## Best kernel: candidate #8"), std::string::npos);
  EXPECT_EQ(countOf(svgOf(html), "<circle"), 2u);
}

TEST(Report, OddJsonTypesShowNotAvailableAndNeverThrow) {
  RunData data = sampleRun();
  data.run.summary = {{"best", "oops"},
                      {"rounds", 5},
                      {"reference", json::array({1, 2})},
                      {"tokens", {{"prompt", "many"}}},
                      {"wall_s", "slow"},
                      {"stopped_because", nullptr}};
  data.run.parameters = json::array({1});
  json &best = data.attempts[8].result->result;
  best["resources"] = "x";
  best["sass"] = 7;
  best["timing"] = json::array({json::object(), nullptr, {{"candidate", {{"median_ms", "fast"}}}, {"speedup", "big"}}});
  data.attempts[3].result->result["diagnostics"] = json::array({nullptr, {{"code", 5}}, {{"code", "ok-code"}}});
  data.attempts[4].result->result = nullptr;
  data.attempts[6].result->result = json::array();
  data.attempts[0].result->speedup = std::numeric_limits<double>::quiet_NaN();
  std::string md, html;
  ASSERT_NO_THROW(md = markdownReport(data));
  ASSERT_NO_THROW(html = htmlReport(data));
  EXPECT_NE(md.find("| tokens | n/a prompt, n/a completion |"), std::string::npos) << md;
  EXPECT_NE(md.find("| wall time | n/a |"), std::string::npos);
  EXPECT_NE(md.find("| registers | 30 | n/a |"), std::string::npos) << md; // from the result row
  // A document that does not decode counts by its columns alone: none of its
  // diagnostics, none of its timings.
  EXPECT_EQ(md.find("ok-code"), std::string::npos) << md;
  EXPECT_NE(md.find("No timings."), std::string::npos) << md;
  expectSelfContained(html);
}

TEST(Report, InvalidUtf8InStoredJsonDoesNotThrow) {
  RunData data = sampleRun();
  data.run.provenance["device"] = std::string("bad \xff byte");
  data.run.parameters["list"] = json::array({std::string("\xc3")});
  std::string md;
  ASSERT_NO_THROW(md = markdownReport(data));
  EXPECT_NE(md.find("| parameters |"), std::string::npos);
}

TEST(Report, EmulatorRunHasNoTimings) {
  RunData data;
  data.run.id = 9;
  data.run.task = "vector_add";
  for (int round = 1; round <= 2; ++round) {
    data.attempts.push_back(completed(round, 0, round, ".version 8.0"));
    setResult(data.attempts.back(), "correct", std::nullopt); // the CPU emulator checks but does not time
  }
  std::string md = markdownReport(data);
  std::string html = htmlReport(data);
  // One sentence says why, once; the empty speed chart, the speedup column and
  // the timings are left out, the counts per round stay.
  const std::string why = "Nothing was timed: this run checked its candidates on the CPU emulator, which verifies "
                          "results but measures no speed, so the speedup chart and the speed columns are left out.";
  EXPECT_NE(md.find("| stopped because | n/a |\n\n" + why + "\n\n## Correct per round\n\n| round | correct / "
                    "attempts |\n| ---: | ---: |\n| 1 | 1 / 1 |\n| 2 | 1 / 1 |\n"),
            std::string::npos)
      << md;
  EXPECT_EQ(countOf(md, "Nothing was timed"), 1u);
  EXPECT_NE(md.find("| total | 0 | 0 | 0 | 0 | 0 | 0 | 2 | 0 | 0 | 0 | 0 | 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| round | slot | kind | tendency | temperature | candidate | verdict | registers | summary |"),
            std::string::npos)
      << md;
  for (const char *gone : {"Best speedup per round", "### Timings", "No timings", "| speedup |"})
    EXPECT_EQ(md.find(gone), std::string::npos) << gone;
  EXPECT_NE(html.find("<p class=\"note untimed\">" + why + "</p>"), std::string::npos) << html;
  EXPECT_EQ(html.find("<svg"), std::string::npos); // no empty chart
  EXPECT_EQ(html.find("<h3>Timings</h3>"), std::string::npos);
  EXPECT_EQ(html.find("<th class=\"num\">speedup</th>"), std::string::npos);
  // The best kernel is still shown: correct, untimed.
  EXPECT_NE(md.find("| speedup over nvcc | n/a |"), std::string::npos) << md;
  // With the emulator profile's estimate in summary.best (solve ranks untimed
  // candidates by it), the report shows it, labelled as an estimate.
  RunData estimated = data;
  estimated.run.summary = {{"best",
                            {{"candidate_id", 2}, {"round", 2}, {"slot", 0}, {"speedup", nullptr},
                             {"estimated_speedup", 1.25}, {"ranked_by", "estimate"}, {"verdict", "correct"}}}};
  const std::string label =
      "\\~1.25x (not timed: the emulator profile's estimate, an estimate, not a measurement; ranked by it)";
  const std::string estimatedMd = markdownReport(estimated);
  EXPECT_NE(estimatedMd.find("| speedup over nvcc | " + label + " |"), std::string::npos) << estimatedMd;
  EXPECT_NE(estimatedMd.find("| best | candidate #2 (round 2, slot 0): correct, " + label + " |"), std::string::npos)
      << estimatedMd;
  // Without an estimate (no profile), still n/a.
  estimated.run.summary["best"]["estimated_speedup"] = nullptr;
  estimated.run.summary["best"]["ranked_by"] = "order";
  EXPECT_NE(markdownReport(estimated).find("| speedup over nvcc | n/a |"), std::string::npos);
  // On a GPU where nothing correct was timed, another reason.
  RunData gpu = data;
  gpu.run.provenance["executor"] = "gpu";
  for (auto &attempt : gpu.attempts) setResult(attempt, "wrong", std::nullopt);
  EXPECT_NE(markdownReport(gpu).find("Nothing was timed: no candidate of this run was both correct and timed, so"),
            std::string::npos);
}

// The whole run reports, exactly: the sample run (timed, three rounds) and one
// on the CPU emulator (nothing timed).
TEST(ReportGolden, SampleRun) {
  golden::expectGolden("run-gpu.md", markdownReport(sampleRun()));
  golden::expectGolden("run-gpu.html", htmlReport(sampleRun()));
}

TEST(ReportGolden, EmulatorRun) {
  RunData data;
  data.run.id = 9;
  data.run.task = "vector_add";
  data.run.provenance = {{"executor", "isolated-emu"}};
  for (int round = 1; round <= 2; ++round) {
    data.attempts.push_back(completed(round, 0, round, ".version 8.0"));
    setResult(data.attempts.back(), "correct", std::nullopt);
  }
  // As solve records it with nothing timed: the best by the emulator profile's estimate.
  data.run.summary = {{"best",
                       {{"candidate_id", 2}, {"round", 2}, {"slot", 0}, {"speedup", nullptr},
                        {"estimated_speedup", 1.1}, {"ranked_by", "estimate"}, {"verdict", "correct"}}}};
  golden::expectGolden("run-emu.md", markdownReport(data));
  golden::expectGolden("run-emu.html", htmlReport(data));
}

// Each chart of the run report states its metric's definition under it.
TEST(Report, ChartsStateTheirDefinitions) {
  std::string html = htmlReport(sampleRun());
  EXPECT_NE(html.find("</svg>\n<p class=\"caption\">best speedup: in each round, the highest speedup among its "
                      "correct, timed candidates; speedup = nvcc&#39;s median time / the candidate&#39;s median time"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<p class=\"caption\">Each attempt counts once, under the first stage it did not pass:"),
            std::string::npos);
  EXPECT_EQ(html.find("Nothing was timed"), std::string::npos);
  std::string md = markdownReport(sampleRun());
  EXPECT_NE(md.find("best speedup: in each round, the highest speedup"), std::string::npos);
}

} // namespace
} // namespace ptxforge::report
