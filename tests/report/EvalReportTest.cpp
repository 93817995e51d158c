// Eval reports of hand-written eval documents: the Markdown tables, the HTML
// page and its charts, the comparison of two evals, the leaderboard, escaping
// of hostile names, and empty, pending or odd documents.
#include "report/EvalReport.h"

#include "Golden.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <string>
#include <vector>

namespace ptxforge::report {
namespace {

using nlohmann::json;

// Two levels, three tasks of two samples each, ks [1, 2], two rounds, timed on a GPU.
//   vector_add (L1): both samples correct, 1.2x, and 0.9x at first then 1.3x after its optimize turn
//   relu       (L1): one correct at 2.5x, one that never compiled
//   softmax    (L2): nothing passed lint
// The correct samples' speedups after 2 rounds fall in two bins of the
// histogram: [1.19x, 1.41x) holds 1.2x and 1.3x, [2.38x, 2.83x) holds 2.5x.
// The stray speedup of a wrong sample and the null of an untimed one are not counted.
const char *const kDocument = R"json({
  "eval": 7, "created_at": "2024-05-01T10:00:00Z", "model": "openai:gpt-test", "suite": "core",
  "suite_version": "core@1a2b3c4d5e6f", "status": "complete",
  "parameters": {"samples": 2, "ks": [1, 2], "rounds": 2, "strategies": ["repair", "optimize"],
                 "temperature": 0.7},
  "provenance": {"executor": "gpu", "device": "NVIDIA H200", "arch": "sm_90", "ptxforge": "0.1.0"},
  "metrics": {
    "ks": [1, 2], "rounds": 2, "timed": true,
    "overall": {"name": "overall", "tasks": 3, "samples": 6, "no_completion": 0, "no_completion_reasons": {},
                "lint_at_k": {"1": 0.6666666666666666, "2": 0.6666666666666666},
                "compile_at_k": {"1": 0.5, "2": 0.6666666666666666},
                "correct_at_k": {"1": 0.5, "2": 0.6666666666666666},
                "fast_p": {"0": 0.5, "1": 0.3333333333333333, "1.5": 0.16666666666666666,
                           "2": 0.16666666666666666},
                "fast_p_low": {"1": 0.3333333333333333, "1.5": 0.16666666666666666, "2": 0.16666666666666666},
                "fast_p_at_k": {"1": {"0": 0.5, "1": 0.3333333333333333, "1.5": 0.16666666666666666,
                                      "2": 0.16666666666666666},
                                "2": {"0": 0.6666666666666666, "1": 0.6666666666666666, "1.5": 0.3333333333333333,
                                      "2": 0.3333333333333333}},
                "after_rounds": {"rounds": 2, "correct_at_k": {"1": 0.5, "2": 0.6666666666666666},
                                 "fast_p": {"0": 0.5, "1": 0.5, "1.5": 0.16666666666666666,
                                            "2": 0.16666666666666666},
                                 "fast_p_low": {"1": 0.5, "1.5": 0.16666666666666666, "2": 0.16666666666666666}},
                "geomean_speedup": 1.5, "register_ratio": 0.95, "instruction_ratio": 1.05,
                "correct_samples": 3, "spilling_where_nvcc_does_not": 0,
                "stages": {"faster": 2, "lint": 2, "compile": 3, "extract": 1, "slower": 1, "zz-new": 1},
                "diagnostic_codes": {"PTX-LINT-UNDECLARED": 2, "PTXAS-ERROR": 3, "a|b": 1}},
    "levels": [
      {"name": "L1", "tasks": 2, "samples": 4, "no_completion": 0, "no_completion_reasons": {},
       "lint_at_k": {"1": 1.0, "2": 1.0}, "compile_at_k": {"1": 0.75, "2": 1.0},
       "correct_at_k": {"1": 0.75, "2": 1.0},
       "fast_p": {"0": 0.75, "1": 0.5, "1.5": 0.25, "2": 0.25},
       "fast_p_low": {"1": 0.5, "1.5": 0.25, "2": 0.25},
       "fast_p_at_k": {"1": {"0": 0.75, "1": 0.5, "1.5": 0.25, "2": 0.25},
                       "2": {"0": 1.0, "1": 1.0, "1.5": 0.5, "2": 0.5}},
       "after_rounds": {"rounds": 2, "correct_at_k": {"1": 0.75, "2": 1.0},
                        "fast_p": {"0": 0.75, "1": 0.75, "1.5": 0.25, "2": 0.25},
                        "fast_p_low": {"1": 0.75, "1.5": 0.25, "2": 0.25}},
       "geomean_speedup": 1.5741, "register_ratio": 0.95, "instruction_ratio": 1.05,
       "correct_samples": 3, "spilling_where_nvcc_does_not": 0,
       "stages": {"faster": 2, "compile": 3, "slower": 1}, "diagnostic_codes": {"PTXAS-ERROR": 3}},
      {"name": "L2", "tasks": 1, "samples": 2, "no_completion": 0, "no_completion_reasons": {},
       "lint_at_k": {"1": 0.0, "2": 0.0}, "compile_at_k": {"1": 0.0, "2": 0.0},
       "correct_at_k": {"1": 0.0, "2": 0.0},
       "fast_p": {"0": 0.0, "1": null, "1.5": null, "2": null},
       "fast_p_low": {"1": null, "1.5": null, "2": null},
       "fast_p_at_k": {"1": {"0": 0.0, "1": null, "1.5": null, "2": null},
                       "2": {"0": 0.0, "1": null, "1.5": null, "2": null}},
       "after_rounds": {"rounds": 2, "correct_at_k": {"1": 0.0, "2": 0.0},
                        "fast_p": {"0": 0.0, "1": null, "1.5": null, "2": null},
                        "fast_p_low": {"1": null, "1.5": null, "2": null}},
       "geomean_speedup": null, "register_ratio": null, "instruction_ratio": null,
       "correct_samples": 0, "spilling_where_nvcc_does_not": 0,
       "stages": {"lint": 2, "extract": 1}, "diagnostic_codes": {"PTX-LINT-UNDECLARED": 2}}
    ],
    "tasks": [
      {"task": "vector_add", "level": 1, "run": 11, "samples": 2, "no_completion": 0, "no_completion_reasons": {},
       "lint_passed": 2, "compile_passed": 2, "correct": 2,
       "lint_at_k": {"1": 1.0, "2": 1.0}, "compile_at_k": {"1": 1.0, "2": 1.0}, "correct_at_k": {"1": 1.0, "2": 1.0},
       "fast_p": {"0": 1.0, "1": 0.5, "1.5": 0.0, "2": 0.0}, "fast_p_low": {"1": 0.5, "1.5": 0.0, "2": 0.0},
       "fast_p_at_k": {"1": {"0": 1.0, "1": 0.5, "1.5": 0.0, "2": 0.0}, "2": {"0": 1.0, "1": 1.0, "1.5": 0.0, "2": 0.0}},
       "after_rounds": {"rounds": 2, "correct": 2, "correct_at_k": {"1": 1.0, "2": 1.0},
                        "fast_p": {"0": 1.0, "1": 1.0, "1.5": 0.0, "2": 0.0},
                        "fast_p_low": {"1": 1.0, "1.5": 0.0, "2": 0.0}},
       "best_speedup": 1.3, "geomean_speedup": 1.249, "timed": true,
       "speedup_spread": {"median": 1.2, "p10": 1.2, "p90": 1.3, "min": 1.2, "max": 1.3, "samples": 2},
       "instruction_spread": {"median": 40, "p10": 40, "p90": 44, "min": 40, "max": 44, "samples": 2},
       "nvcc": {"registers": 16, "instructions": 42, "spill_bytes": 0},
       "register_ratio": 0.9, "instruction_ratio": 1.0, "spilling_where_nvcc_does_not": 0,
       "stages": {"faster": 1, "compile": 1, "slower": 1}, "diagnostic_codes": {"PTXAS-ERROR": 1},
       "sample_outcomes": [
         {"slot": 0, "no_completion": null, "lint": true, "compile": true, "correct": true, "speedup": 1.2,
          "speedup_low": 1.1,
          "after_rounds": {"lint": true, "compile": true, "correct": true, "speedup": 1.2, "speedup_low": 1.1},
          "registers": 14, "sass_instructions": 40, "spill_bytes": 0, "attempts": 2},
         {"slot": 1, "no_completion": null, "lint": true, "compile": true, "correct": true, "speedup": 0.9,
          "speedup_low": 0.85,
          "after_rounds": {"lint": true, "compile": true, "correct": true, "speedup": 1.3, "speedup_low": 1.2},
          "registers": 15, "sass_instructions": 44, "spill_bytes": 0, "attempts": 2}]},
      {"task": "relu", "level": 1, "run": 12, "samples": 2, "no_completion": 0, "no_completion_reasons": {},
       "lint_passed": 2, "compile_passed": 1, "correct": 1,
       "lint_at_k": {"1": 1.0, "2": 1.0}, "compile_at_k": {"1": 0.5, "2": 1.0}, "correct_at_k": {"1": 0.5, "2": 1.0},
       "fast_p": {"0": 0.5, "1": 0.5, "1.5": 0.5, "2": 0.5}, "fast_p_low": {"1": 0.5, "1.5": 0.5, "2": 0.5},
       "fast_p_at_k": {"1": {"0": 0.5, "1": 0.5, "1.5": 0.5, "2": 0.5}, "2": {"0": 1.0, "1": 1.0, "1.5": 1.0, "2": 1.0}},
       "after_rounds": {"rounds": 2, "correct": 1, "correct_at_k": {"1": 0.5, "2": 1.0},
                        "fast_p": {"0": 0.5, "1": 0.5, "1.5": 0.5, "2": 0.5},
                        "fast_p_low": {"1": 0.5, "1.5": 0.5, "2": 0.5}},
       "best_speedup": 2.5, "geomean_speedup": 2.5, "timed": true,
       "speedup_spread": {"median": 2.5, "p10": 2.5, "p90": 2.5, "min": 2.5, "max": 2.5, "samples": 1},
       "instruction_spread": null,
       "nvcc": {"registers": 8, "instructions": null, "spill_bytes": 0},
       "register_ratio": 1.0, "instruction_ratio": null, "spilling_where_nvcc_does_not": 0,
       "stages": {"faster": 1, "compile": 2}, "diagnostic_codes": {"PTXAS-ERROR": 2},
       "sample_outcomes": [
         {"slot": 0, "no_completion": null, "lint": true, "compile": true, "correct": true, "speedup": 2.5,
          "speedup_low": 2.2,
          "after_rounds": {"lint": true, "compile": true, "correct": true, "speedup": 2.5, "speedup_low": 2.2},
          "registers": 8, "sass_instructions": null, "spill_bytes": 0, "attempts": 1},
         {"slot": 1, "no_completion": null, "lint": true, "compile": false, "correct": false, "speedup": 9.0,
          "speedup_low": null,
          "after_rounds": {"lint": true, "compile": false, "correct": false, "speedup": 9.0, "speedup_low": null},
          "registers": null, "sass_instructions": null, "spill_bytes": null, "attempts": 2}]},
      {"task": "softmax", "level": 2, "run": 13, "samples": 2, "no_completion": 0, "no_completion_reasons": {},
       "lint_passed": 0, "compile_passed": 0, "correct": 0,
       "lint_at_k": {"1": 0.0, "2": 0.0}, "compile_at_k": {"1": 0.0, "2": 0.0}, "correct_at_k": {"1": 0.0, "2": 0.0},
       "fast_p": {"0": 0.0, "1": null, "1.5": null, "2": null}, "fast_p_low": {"1": null, "1.5": null, "2": null},
       "fast_p_at_k": {"1": {"0": 0.0}, "2": {"0": 0.0}},
       "after_rounds": {"rounds": 2, "correct": 0, "correct_at_k": {"1": 0.0, "2": 0.0},
                        "fast_p": {"0": 0.0}, "fast_p_low": {}},
       "best_speedup": null, "geomean_speedup": null, "timed": false,
       "speedup_spread": null, "instruction_spread": null,
       "nvcc": {"registers": 20, "instructions": 120, "spill_bytes": 0},
       "register_ratio": null, "instruction_ratio": null, "spilling_where_nvcc_does_not": 0,
       "stages": {"lint": 2, "extract": 1}, "diagnostic_codes": {"PTX-LINT-UNDECLARED": 2},
       "sample_outcomes": [
         {"slot": 0, "lint": false, "compile": false, "correct": false, "speedup": null, "attempts": 2},
         {"slot": 1, "lint": false, "compile": false, "correct": true, "speedup": null, "attempts": 1}]}
    ]
  }
})json";

json document() { return json::parse(kDocument); }

/// The same eval on the CPU emulator: correct, but nothing timed.
json untimedDocument() {
  json doc = document();
  json &metrics = doc["metrics"];
  metrics["timed"] = false;
  doc["provenance"]["executor"] = "emulator";
  auto untime = [](json &figures) {
    for (const char *p : {"1", "1.5", "2"}) {
      figures["fast_p"][p] = nullptr;
      figures["fast_p_low"][p] = nullptr;
      for (json &shares : figures["fast_p_at_k"]) shares[p] = nullptr;
      figures["after_rounds"]["fast_p"][p] = nullptr;
      figures["after_rounds"]["fast_p_low"][p] = nullptr;
    }
  };
  for (json *group : {&metrics["overall"], &metrics["levels"][0], &metrics["levels"][1]}) {
    (*group)["geomean_speedup"] = nullptr;
    untime(*group);
  }
  for (json &task : metrics["tasks"]) {
    task["best_speedup"] = nullptr;
    task["geomean_speedup"] = nullptr;
    task["timed"] = false;
    task["speedup_spread"] = nullptr;
    untime(task);
    for (json &sample : task["sample_outcomes"]) {
      sample["speedup"] = nullptr;
      if (sample.contains("after_rounds")) sample["after_rounds"]["speedup"] = nullptr;
    }
  }
  return doc;
}

size_t countOf(const std::string &text, const std::string &needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++count;
  return count;
}

/// Every <svg>…</svg> of a page, in order.
std::vector<std::string> svgsOf(const std::string &html) {
  std::vector<std::string> svgs;
  for (size_t begin = html.find("<svg"); begin != std::string::npos; begin = html.find("<svg", begin + 1)) {
    size_t end = html.find("</svg>", begin);
    if (end == std::string::npos) break;
    svgs.push_back(html.substr(begin, end - begin));
  }
  return svgs;
}

/// No script, no URL, nothing that loads: "http" only in the CSP meta's http-equiv.
void expectSelfContained(const std::string &html) {
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(countOf(html, "http"), countOf(html, "http-equiv"));
  EXPECT_EQ(countOf(html, "http-equiv"), 1u);
  EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(<[a-zA-Z][^>]*\s(src|href)\s*=)")));
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

struct Bin {
  std::string range;
  int samples = 0;
  double height = 0;
};

/// The histogram's bars: their ranges and counts (from their titles) and heights.
std::vector<Bin> binsOf(const std::string &svg) {
  std::vector<Bin> bins;
  const std::regex bar(
      R"re(<rect class="bin" x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)"><title>([^<]*): (\d+) samples?</title>)re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar); it != std::sregex_iterator(); ++it)
    bins.push_back({(*it)[2], std::stoi((*it)[3]), std::stod((*it)[1])});
  return bins;
}

// ---------------------------------------------------------------------------
// Markdown

TEST(EvalReportMarkdown, HeadlineTablesHaveAColumnPerKAndARowPerGroup) {
  std::string md = evalMarkdown(document());
  // First attempts: pass@k per k, fast_0 and resources (from every round, labelled so); then their speed.
  EXPECT_NE(md.find("### First attempts\n\n| group | tasks | samples | no completion | lint@1 | lint@2 | compile@1 | "
                    "compile@2 | correct@1 | correct@2 | fast_0 |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| overall | 3 | 6 | 0 | 66.7% | 66.7% | 50.0% | 66.7% | 50.0% | 66.7% | 50.0% |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| L1 | 2 | 4 | 0 | 100.0% | 100.0% | 75.0% | 100.0% | 75.0% | 100.0% | 75.0% |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("### Resources of correct kernels\n\n| group | register ratio after 2 rounds | instruction ratio "
                    "after 2 rounds |\n| --- | ---: | ---: |\n| overall | 0.95 | 1.05 |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("### First attempts: speed\n\n| group | fast_1 | fast_1.5 | fast_2 | fast_1_low | fast_1.5_low | "
                    "fast_2_low | geomean speedup after 2 rounds |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| overall | 33.3% | 16.7% | 16.7% | 33.3% | 16.7% | 16.7% | 1.50x |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| L1 | 50.0% | 25.0% | 25.0% | 50.0% | 25.0% | 25.0% | 1.57x |\n"), std::string::npos) << md;
  // L2's null figures (a document from before the eval-wide timed flag) are n/a.
  EXPECT_NE(md.find("| L2 | 1 | 2 | 0 | 0.0% | 0.0% | 0.0% | 0.0% | 0.0% | 0.0% | 0.0% |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| L2 | n/a | n/a | n/a | n/a | n/a | n/a | n/a |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("### fast_p@k\n\n| group | fast_1@1 | fast_1.5@1 | fast_2@1 | fast_1@2 | fast_1.5@2 | fast_2@2 |\n"),
            std::string::npos);
  EXPECT_NE(md.find("| overall | 33.3% | 16.7% | 16.7% | 66.7% | 33.3% | 33.3% |\n"), std::string::npos);
  EXPECT_NE(md.find("### After 2 rounds\n\n| group | correct@1 after 2 rounds | correct@2 after 2 rounds | fast_0 after "
                    "2 rounds | fast_1 after 2 rounds | fast_1.5 after 2 rounds | fast_2 after 2 rounds | fast_1_low "
                    "after 2 rounds | fast_1.5_low after 2 rounds | fast_2_low after 2 rounds |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| L1 | 75.0% | 100.0% | 75.0% | 75.0% | 25.0% | 25.0% | 75.0% | 25.0% | 25.0% |\n"),
            std::string::npos);
  // Each table states its figures as formulas.
  EXPECT_NE(md.find("1 − C(n−c, k) / C(n, k)"), std::string::npos);
  EXPECT_NE(md.find("strictly faster than p × nvcc (speedup &gt; p)"), std::string::npos);
  EXPECT_NE(md.find("fast_p@k: the unbiased best-of-k estimator"), std::string::npos);
  EXPECT_NE(md.find("After 2 rounds: each sample's attempts over all 2 rounds (its first attempt and the 1 repair or "
                    "optimize turn after it)"),
            std::string::npos);
  EXPECT_NE(md.find("speedup: nvcc's median time / the candidate's on the task's largest timed shape"),
            std::string::npos);
  EXPECT_EQ(md.find("Nothing was timed"), std::string::npos);
  // Complete, every sample scored: no status note, no count of missing samples.
  EXPECT_EQ(md.find("**Note:**"), std::string::npos);
  EXPECT_EQ(md.find("had no completion"), std::string::npos);
}

TEST(EvalReportMarkdown, OneRoundHasNoFiguresAfterRounds) {
  json doc = document();
  doc["metrics"]["rounds"] = 1;
  std::string md = evalMarkdown(doc);
  EXPECT_EQ(md.find("after 1 round"), std::string::npos);
  EXPECT_EQ(md.find("### After"), std::string::npos);
  EXPECT_NE(md.find("| fast_2_low | geomean speedup |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| group | register ratio | instruction ratio |\n"), std::string::npos) << md;
}

TEST(EvalReportMarkdown, SamplesWithoutACompletionAreCountedBesideTheFigures) {
  json doc = document();
  doc["status"] = "incomplete";
  json &overall = doc["metrics"]["overall"];
  overall["no_completion"] = 2;
  overall["no_completion_reasons"] = {{"error", 1}, {"unasked", 1}};
  std::string md = evalMarkdown(doc);
  EXPECT_NE(md.find("> **Note:** Status incomplete: 2 of 8 samples had no completion (error 1, unasked 1): left out "
                    "of every figure. \\`ptxforge eval --resume 7\\` asks them again. Not ranked on the leaderboard "
                    "until complete.\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| overall | 3 | 6 | 2 | 66.7%"), std::string::npos);
  EXPECT_EQ(noCompletionSentence(doc), "2 of 8 samples had no completion (error 1, unasked 1): left out of every figure.");
  EXPECT_EQ(noCompletionSentence(document()), "");
  EXPECT_EQ(noCompletionSentence(json()), "");
  doc["status"] = "infra-error";
  EXPECT_NE(evalMarkdown(doc).find("Status infra-error: no sample could be scored"), std::string::npos);
  doc["status"] = "interrupted";
  EXPECT_NE(evalMarkdown(doc).find("Status interrupted: stopped before every task ran."), std::string::npos);
  std::string html = evalHtml(doc);
  EXPECT_NE(html.find("<p class=\"note status\">Status interrupted: stopped before every task ran. 2 of 8 samples"),
            std::string::npos)
      << html;
}

// On the emulator nothing is timed: the speed tables and columns, all n/a, are
// left out, and one sentence says why.
TEST(EvalReportMarkdown, UntimedEvalLeavesTheSpeedTablesOutAndSaysWhy) {
  std::string md = evalMarkdown(untimedDocument());
  EXPECT_NE(md.find("Nothing was timed: this eval ran on the CPU emulator, which checks correctness but measures no "
                    "speed, so the speed figures (speedups, fast_p for p &gt; 0, fast_p_low, fast_p@k) and the "
                    "speedup histogram are left out; fast_0 is the share of correct first attempts.\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| overall | 3 | 6 | 0 | 66.7% | 66.7% | 50.0% | 66.7% | 50.0% | 66.7% | 50.0% |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| overall | 0.95 | 1.05 |\n"), std::string::npos) << md;
  for (const char *gone : {"### First attempts: speed", "### fast_p@k", "fast_1_low", "geomean speedup", "best speedup",
                           "## Speedups of correct samples", "speedup median", "timed samples"})
    EXPECT_EQ(md.find(gone), std::string::npos) << gone << " in\n" << md;
  // After 2 rounds: correct@k and fast_0 only.
  EXPECT_NE(md.find("| group | correct@1 after 2 rounds | correct@2 after 2 rounds | fast_0 after 2 rounds |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| overall | 50.0% | 66.7% | 50.0% |\n"), std::string::npos);
  EXPECT_NE(md.find("| vector_add | L1 | 2 | 0 | 2 | 2 | 2 | 100.0% | 100.0% | 100.0% | 100.0% | 0.90 | 1.00 | 0 |\n"),
            std::string::npos)
      << md;
  // Not timed on a GPU: the same tables, another reason.
  json gpu = untimedDocument();
  gpu["provenance"]["executor"] = "gpu";
  EXPECT_NE(evalMarkdown(gpu).find("Nothing was timed: no sample of this eval has a correct, timed attempt, so"),
            std::string::npos);
}

TEST(EvalReportMarkdown, SpeedupHistogramAsATableOfRanges) {
  std::string md = evalMarkdown(document());
  EXPECT_NE(md.find("## Speedups of correct samples\n\n"), std::string::npos) << md;
  EXPECT_NE(md.find("Bins are a quarter of a doubling (×1.19) wide.\n\n| speedup range | correct samples |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| \\[0.84x, 1.00x) | 0 |\n| \\[1.00x, 1.19x) | 0 |\n| \\[1.19x, 1.41x) | 2 |\n"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| \\[2.38x, 2.83x) | 1 |\n"), std::string::npos) << md;
}

TEST(EvalReportMarkdown, TasksTable) {
  std::string md = evalMarkdown(document());
  EXPECT_NE(md.find("| task | level | samples | no completion | lint | compile | correct | correct@1 | correct@2 | "
                    "fast_1 | fast_1_low | correct@1 after 2 rounds | correct@2 after 2 rounds | best speedup after 2 "
                    "rounds | geomean speedup after 2 rounds | register ratio after 2 rounds | instruction ratio after "
                    "2 rounds | spilling (nvcc not) |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| vector_add | L1 | 2 | 0 | 2 | 2 | 2 | 100.0% | 100.0% | 50.0% | 50.0% | 100.0% | 100.0% | "
                    "1.30x | 1.25x | 0.90 | 1.00 | 0 |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| relu | L1 | 2 | 0 | 2 | 1 | 1 | 50.0% | 100.0% | 50.0% | 50.0% | 50.0% | 100.0% | 2.50x | "
                    "2.50x | 1.00 | n/a | 0 |\n"),
            std::string::npos);
  EXPECT_NE(md.find("| softmax | L2 | 2 | 0 | 0 | 0 | 0 | 0.0% | 0.0% | n/a | n/a | 0.0% | 0.0% | n/a | n/a | n/a | "
                    "n/a | 0 |\n"),
            std::string::npos);
}

TEST(EvalReportMarkdown, TaxonomyListsStagesInFunnelOrderAndCodesByFrequency) {
  std::string md = evalMarkdown(document());
  EXPECT_NE(md.find("| stage | attempts | share |\n| --- | ---: | ---: |\n| extract | 1 | 10.0% |\n"
                    "| lint | 2 | 20.0% |\n| compile | 3 | 30.0% |\n| slower | 1 | 10.0% |\n"
                    "| faster | 2 | 20.0% |\n| zz-new | 1 | 10.0% |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| PTXAS-ERROR | 3 |\n| PTX-LINT-UNDECLARED | 2 |\n| a\\|b | 1 |\n"), std::string::npos) << md;
}

TEST(EvalReportMarkdown, StabilityAndProvenance) {
  std::string md = evalMarkdown(document());
  EXPECT_NE(md.find("| vector_add | 2 | 1.20x | 1.20x–1.30x | 1.20x–1.30x | 2 | 40 | 40–44 | 40–44 |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| relu | 1 | 2.50x | 2.50x–2.50x | 2.50x–2.50x | n/a | n/a | n/a | n/a |\n"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("| softmax | n/a"), std::string::npos); // no correct sample, no spread
  EXPECT_NE(md.find("| device | NVIDIA H200 |\n"), std::string::npos);
  EXPECT_NE(md.find("| strategies | repair, optimize |\n"), std::string::npos);
  EXPECT_NE(md.find("# ptxforge eval #7: openai:gpt-test on core@1a2b3c4d5e6f\n"), std::string::npos) << md;
}

TEST(EvalReportMarkdown, HostileNamesAreEscaped) {
  json doc = document();
  doc["model"] = "<img onerror=x>";
  doc["metrics"]["tasks"][0]["task"] = "a|b\nc";
  doc["metrics"]["levels"][0]["name"] = "<script>";
  doc["metrics"]["tasks"][2]["task"] = "_em_ *b* `c` [l](x) snake_case";
  std::string md = evalMarkdown(doc);
  // Underscores inside a word cannot open emphasis and stay readable.
  EXPECT_NE(md.find("| \\_em\\_ \\*b\\* \\`c\\` \\[l\\](x) snake_case | L2 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("<img"), std::string::npos);
  EXPECT_EQ(md.find("<script"), std::string::npos);
  EXPECT_NE(md.find("&lt;img onerror=x&gt;"), std::string::npos);
  EXPECT_NE(md.find("| a\\|b c | L1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| &lt;script&gt; | 2 | 4 |"), std::string::npos);
}

// ---------------------------------------------------------------------------
// HTML

TEST(EvalReportHtml, IsOneSelfContainedPageWithThreeCharts) {
  std::string html = evalHtml(document());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  expectSelfContained(html);
  std::vector<std::string> svgs = svgsOf(html);
  ASSERT_EQ(svgs.size(), 3u);
  EXPECT_NE(svgs[0].find("aria-label=\"correct and fast per level\""), std::string::npos);
  EXPECT_NE(svgs[1].find("aria-label=\"stage funnel over all attempts\""), std::string::npos);
  EXPECT_NE(svgs[2].find("aria-label=\"speedups of correct samples over nvcc\""), std::string::npos);
  EXPECT_NE(html.find("<td>overall</td><td class=\"num\">3</td><td class=\"num\">6</td>"), std::string::npos);
  // Each chart states its metric's definition under it.
  for (const char *caption :
       {"</svg>\n<p class=\"caption\">correct@1: the unbiased pass@1 of each task&#39;s first attempts",
        "</svg>\n<p class=\"caption\">Each attempt of every scored sample, counted once under",
        "</svg>\n<p class=\"caption\">speedup: nvcc&#39;s median time / the sample&#39;s median time"})
    EXPECT_NE(html.find(caption), std::string::npos) << caption;
  EXPECT_NE(html.find("fast_1: over all the group&#39;s scored samples, the share whose first attempt is correct and "
                      "strictly faster than nvcc (speedup &gt; 1;"),
            std::string::npos);
}

TEST(EvalReportHtml, LevelChartHasCorrectAndFastBarsPerGroup) {
  std::string svg = svgsOf(evalHtml(document()))[0];
  EXPECT_EQ(countOf(svg, "<rect class=\"b-correct\" x="), 3u) << svg; // L1, L2, overall
  EXPECT_EQ(countOf(svg, "<rect class=\"b-fast\" x="), 2u) << svg;    // L2's fast_1 is null
  EXPECT_NE(svg.find("<title>L1 correct@1: 75.0%</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>overall fast_1 (first attempts correct and faster than nvcc): 33.3%</title>"),
            std::string::npos);
  EXPECT_EQ(countOf(svg, ">n/a</text>"), 1u);
}

TEST(EvalReportHtml, FunnelChartHasABarPerStageInFunnelOrder) {
  std::string svg = svgsOf(evalHtml(document()))[1];
  std::vector<std::string> order;
  const std::regex bar(R"re(<rect class="s-([a-z-]+)"[^>]*><title>([^:<]+): (\d+) )re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar); it != std::sregex_iterator(); ++it)
    order.push_back((*it)[2].str() + "=" + (*it)[3].str() + "/" + (*it)[1].str());
  EXPECT_EQ(order, (std::vector<std::string>{"extract=1/extract", "lint=2/lint", "compile=3/compile",
                                             "slower=1/slower", "faster=2/faster", "zz-new=1/other"}))
      << svg;
}

TEST(EvalReportHtml, HistogramCountsEveryCorrectTimedSample) {
  std::string svg = svgsOf(evalHtml(document()))[2];
  std::vector<Bin> bins = binsOf(svg);
  ASSERT_EQ(bins.size(), 2u) << svg;
  EXPECT_EQ(bins[0].range, "[1.19x, 1.41x)");
  EXPECT_EQ(bins[0].samples, 2);
  EXPECT_EQ(bins[1].range, "[2.38x, 2.83x)");
  EXPECT_EQ(bins[1].samples, 1);
  EXPECT_NEAR(bins[0].height, 2 * bins[1].height, 0.2); // heights proportional to counts
  EXPECT_NE(svg.find("class=\"ref\""), std::string::npos);
  EXPECT_NE(svg.find(">nvcc 1.0x</text>"), std::string::npos);
  // Every bin edge is labelled with its speedup, 0.84x to 2.83x: the axis reads as bin ranges.
  for (const char *edge : {">0.84x</text>", ">1.00x</text>", ">1.19x</text>", ">1.41x</text>", ">2.38x</text>",
                           ">2.83x</text>"})
    EXPECT_NE(svg.find(edge), std::string::npos) << edge;
  EXPECT_NE(svg.find("speedup over nvcc: bins [low, high), each a quarter of a doubling (×1.19) wide"),
            std::string::npos);
  // Counts above the bars.
  EXPECT_TRUE(std::regex_search(svg, std::regex(R"(text-anchor="middle">2</text>)"))) << svg;
}

TEST(EvalReportHtml, HistogramBinsSpanWideRanges) {
  json doc = document();
  json &samples = doc["metrics"]["tasks"][2]["sample_outcomes"];
  samples[0] = {{"slot", 0}, {"correct", true}, {"speedup", 0.001}};
  samples[1] = {{"slot", 1}, {"correct", true}, {"speedup", 1000.0}};
  std::string svg = svgsOf(evalHtml(doc))[2];
  int total = 0;
  for (const Bin &bin : binsOf(svg)) total += bin.samples;
  EXPECT_EQ(total, 5) << svg;
  EXPECT_LE(countOf(svg, "<rect class=\"bin\""), 5u);
}

TEST(EvalReportHtml, UntimedEvalLeavesTheHistogramOutSaysWhyAndChartsFast0) {
  std::string html = evalHtml(untimedDocument());
  expectSelfContained(html);
  std::vector<std::string> svgs = svgsOf(html);
  ASSERT_EQ(svgs.size(), 2u); // the level chart and the funnel; no empty histogram
  EXPECT_EQ(html.find("Speedups of correct samples"), std::string::npos);
  EXPECT_EQ(html.find("First attempts: speed"), std::string::npos);
  EXPECT_NE(html.find("<p class=\"note untimed\">Nothing was timed: this eval ran on the CPU emulator"),
            std::string::npos);
  EXPECT_EQ(countOf(html, "Nothing was timed"), 1u); // one sentence, once
  EXPECT_NE(svgs[0].find("<title>L1 fast_0 (first attempts correct; not timed): 75.0%</title>"), std::string::npos);
  EXPECT_EQ(countOf(svgs[0], "<rect class=\"b-fast\" x="), 3u);
  EXPECT_NE(html.find("fast_0: over all the group&#39;s scored samples, the share whose first attempt is correct "
                      "(nothing was timed"),
            std::string::npos);
}

TEST(EvalReportHtml, TimedFlagWithoutSpeedupsSaysNoTimings) {
  json doc = untimedDocument();
  doc["metrics"]["timed"] = true;
  EXPECT_NE(svgsOf(evalHtml(doc))[2].find("no correct sample was timed"), std::string::npos);
}

// The headline's widest table, of an eval with k = 1, 5, 10 and two rounds, fits
// a 1400 px window: the page's content is at most 80rem (1280 px) wide, and the table's
// narrowest layout (each column as wide as its longest unbreakable word: header
// cells wrap at spaces, figures never) at the 0.9rem (14.4 px) table font, with
// 1rem of padding and a border per cell, stays inside it. Character widths are
// bounded from above at 0.62 em (system-ui's digits are 0.55-0.6 em).
TEST(EvalReportHtml, HeadlineTablesFitA1400PxWindow) {
  json doc = document();
  doc["metrics"]["ks"] = {1, 5, 10};
  doc["model"] = "openai:a-very-long-organisation-name/and-an-even-longer-model-name-that-has-no-spaces-at-all-v2";
  std::string html = evalHtml(doc);
  EXPECT_NE(html.find("max-width: 80rem"), std::string::npos);
  EXPECT_NE(html.find("td:not(.num) { overflow-wrap: anywhere; }"), std::string::npos); // long names wrap
  EXPECT_NE(html.find("h1 { font-size: 1.5rem; overflow-wrap: anywhere; }"), std::string::npos);
  EXPECT_NE(html.find(".table-wrap { max-width: 100%; overflow-x: auto; }"), std::string::npos);
  const double charPx = 0.62 * 14.4, cellExtraPx = 16 + 1, pagePx = 1280;
  size_t tables = 0;
  for (size_t at = html.find("<h3>"); at != std::string::npos; at = html.find("<h3>", at + 1)) {
    size_t table = html.find("<table>", at), end = html.find("</table>", at);
    if (table == std::string::npos || end == std::string::npos || table > end) continue;
    std::string header = html.substr(table, html.find("</thead>", table) - table);
    std::vector<size_t> widest;
    const std::regex cell(R"(<th[^>]*>([^<]*)</th>)");
    for (auto it = std::sregex_iterator(header.begin(), header.end(), cell);
         it != std::sregex_iterator(); ++it) {
      size_t longestWord = 0, word = 0;
      for (char c : (*it)[1].str() + " ") word = c == ' ' ? (longestWord = std::max(longestWord, word), 0) : word + 1;
      widest.push_back(std::max<size_t>(longestWord, 7)); // figures: "100.0%" and "1.57x" are 6-7 characters
    }
    double px = 1;
    for (size_t columns : widest) px += static_cast<double>(columns) * charPx + cellExtraPx;
    EXPECT_LT(px, pagePx) << html.substr(at, 80) << ": " << widest.size() << " columns, about " << px << " px";
    ++tables;
  }
  EXPECT_GE(tables, 4u);
}

TEST(EvalReportHtml, HostileNamesAreEscaped) {
  json doc = document();
  doc["model"] = "<img onerror=x>";
  doc["metrics"]["tasks"][1]["task"] = "</td><script>alert(1)</script>";
  doc["metrics"]["levels"][0]["name"] = "<img onerror=x>";
  doc["metrics"]["overall"]["stages"]["<b>\"x\""] = 4;
  doc["provenance"]["device"] = "https://evil.example/x.png";
  std::string html = evalHtml(doc);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;img onerror=x&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;&quot;x&quot;"), std::string::npos);
  // A URL from the document is text, not a link: nothing loads it.
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(<[a-zA-Z][^>]*\s(src|href)\s*=)")));
}

// ---------------------------------------------------------------------------
// Comparison

json betterDocument() {
  json doc = document();
  doc["eval"] = 8;
  doc["model"] = "openai:gpt-next";
  json &overall = doc["metrics"]["overall"];
  overall["correct_at_k"]["1"] = 0.625;
  overall["geomean_speedup"] = 1.65;
  overall["register_ratio"] = 1.0;
  overall["tasks"] = 3;
  json &tasks = doc["metrics"]["tasks"];
  tasks[0]["correct_at_k"]["1"] = 0.5;
  tasks[0]["best_speedup"] = 1.43;
  tasks[0]["geomean_speedup"] = nullptr;
  tasks[2]["task"] = "gelu"; // softmax only in A, gelu only in B
  return doc;
}

TEST(EvalReportCompare, DifferencesInPointsAndRatios) {
  std::string md = compareMarkdown(document(), betterDocument());
  EXPECT_NE(md.find("| figure | A | B | B − A |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| correct@1 | 50.0% | 62.5% | +12.5 pp |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| correct@2 | 66.7% | 66.7% | +0.0 pp |\n"), std::string::npos);
  EXPECT_NE(md.find("| geomean speedup after 2 rounds | 1.50x | 1.65x | x1.10 |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| register ratio after 2 rounds | 0.95 | 1.00 | +0.05 |\n"), std::string::npos);
  EXPECT_NE(md.find("| fast_1_low | 33.3% | 33.3% | +0.0 pp |\n"), std::string::npos);
  EXPECT_NE(md.find("| fast_1@2 | 66.7% | 66.7% | +0.0 pp |\n"), std::string::npos);
  EXPECT_NE(md.find("| correct@1 after 2 rounds | 50.0% | 50.0% | +0.0 pp |\n"), std::string::npos);
  EXPECT_NE(md.find("| no completion | 0 | 0 | +0 |\n"), std::string::npos);
  EXPECT_NE(md.find("| tasks | 3 | 3 | +0 |\n"), std::string::npos);
  EXPECT_NE(md.find("| fast_1 | n/a | n/a | n/a |\n"), std::string::npos) << md; // L2's row
  EXPECT_NE(md.find("### L1\n"), std::string::npos);
  EXPECT_NE(md.find("| vector_add | L1 | 100.0% | 50.0% | -50.0 pp | 1.30x | 1.43x | x1.10 | 1.25x | n/a | n/a |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| relu | L1 | 50.0% | 50.0% | +0.0 pp | 2.50x | 2.50x | x1.00 | 2.50x | 2.50x | x1.00 |\n"),
            std::string::npos);
  EXPECT_NE(md.find("Only in A (1): softmax.\n"), std::string::npos);
  EXPECT_NE(md.find("Only in B (1): gelu.\n"), std::string::npos);
  // Same suite version, different models: no note.
  EXPECT_EQ(md.find("**Note:**"), std::string::npos);
  EXPECT_NE(md.find("| model | openai:gpt-test | openai:gpt-next |\n"), std::string::npos);
  // What each eval's prompts carried, side by side (n/a for evals recorded before prompt_parts).
  EXPECT_NE(md.find("| prompt_parts | n/a | n/a |\n"), std::string::npos) << md;
  json hinted = betterDocument();
  hinted["parameters"]["prompt_parts"] = {"description", "hints"};
  json bare = document();
  bare["parameters"]["prompt_parts"] = {"description"};
  EXPECT_NE(compareMarkdown(bare, hinted).find("| prompt_parts | description | description, hints |\n"),
            std::string::npos);
}

TEST(EvalReportCompare, NotesDifferentRoundsAndStatuses) {
  json b = betterDocument();
  b["metrics"]["rounds"] = 1;
  b["status"] = "incomplete";
  b["metrics"]["overall"]["no_completion"] = 1;
  std::string md = compareMarkdown(document(), b);
  EXPECT_NE(md.find("> **Note:** B: Status incomplete: 1 of 7 samples had no completion: left out of every figure."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("> **Note:** The evals ran a different number of rounds (A: 2, B: 1)"), std::string::npos);
  EXPECT_NE(md.find("| correct@1 after all rounds | 50.0% | 50.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| geomean speedup after all rounds | 1.50x | 1.65x | x1.10 |\n"), std::string::npos);
}

TEST(EvalReportCompare, NotesDifferentSuiteVersionsAndTheSameModel) {
  json b = document();
  b["suite_version"] = "core@ffffffffffff";
  std::string md = compareMarkdown(document(), b);
  size_t note = md.find("> **Note:** The suite versions differ (A: core@1a2b3c4d5e6f, B: core@ffffffffffff)");
  EXPECT_NE(note, std::string::npos) << md;
  EXPECT_LT(note, md.find("## Overall"));
  EXPECT_NE(md.find("> **Note:** Both evals are of the same model (openai:gpt-test)"), std::string::npos);
}

TEST(EvalReportCompare, PendingOrEmptyEvalsCompareAsNotAvailable) {
  json pending = document();
  pending["status"] = "pending";
  pending["metrics"] = nullptr;
  std::string md;
  ASSERT_NO_THROW(md = compareMarkdown(document(), pending));
  EXPECT_NE(md.find("B has no metrics: No metrics (status: pending)."), std::string::npos) << md;
  EXPECT_NE(md.find("| correct@1 | 50.0% | n/a | n/a |\n"), std::string::npos);
  EXPECT_NE(md.find("Only in A (3): vector_add, relu, softmax.\n"), std::string::npos);
  ASSERT_NO_THROW(md = compareMarkdown(json::object(), json()));
  EXPECT_NE(md.find("| eval | n/a | n/a |\n"), std::string::npos);
}

// ---------------------------------------------------------------------------
// Leaderboard

json leaderboardEntry(int id, const std::string &model, const std::string &version, const std::string &createdAt,
                      double correct, double fast1, double geomean) {
  json doc = document();
  doc["eval"] = id;
  doc["model"] = model;
  doc["suite_version"] = version;
  doc["created_at"] = createdAt;
  json &overall = doc["metrics"]["overall"];
  overall["correct_at_k"]["1"] = correct;
  overall["fast_p"]["1"] = fast1;
  overall["geomean_speedup"] = geomean;
  return doc;
}

TEST(EvalReportLeaderboard, BestFirstTiesByDateOtherVersionsLeftOut) {
  json pending = leaderboardEntry(6, "m-pending", "v1", "2024-05-06T00:00:00Z", 0, 0, 0);
  pending["status"] = "pending";
  pending["metrics"] = nullptr;
  json incomplete = leaderboardEntry(7, "m-incomplete", "v1", "2024-05-07T00:00:00Z", 0.99, 0.99, 5.0);
  incomplete["status"] = "incomplete";
  json infraError = leaderboardEntry(8, "m-dead-server", "v1", "2024-05-08T00:00:00Z", 0, 0, 0);
  infraError["status"] = "infra-error";
  std::vector<json> documents = {
      leaderboardEntry(1, "m-late-tie", "v1", "2024-05-02T00:00:00Z", 0.5, 0.25, 1.2),
      leaderboardEntry(2, "m-early-tie", "v1", "2024-05-01T00:00:00Z", 0.5, 0.25, 1.2),
      leaderboardEntry(3, "m-best", "v1", "2024-05-03T00:00:00Z", 0.75, 0.0, 0.9),
      leaderboardEntry(4, "m-other-version", "v2", "2024-05-04T00:00:00Z", 0.99, 0.99, 9.0),
      leaderboardEntry(5, "m-faster", "v1", "2024-05-05T00:00:00Z", 0.5, 0.5, 1.0),
      pending,
      incomplete,
      infraError,
      json::array({1, 2}),
  };
  std::string md = leaderboardMarkdown(documents, "v1");
  EXPECT_NE(md.find("| rank | eval | model | status | date | samples | rounds | strategies | executor | correct@1 | "
                    "fast_0 | fast_1 | fast_1_low | correct@1 after R rounds | geomean speedup |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 1 | #3 | m-best | complete | 2024-05-03T00:00:00Z | 2 | 2 | repair, optimize | gpu | 75.0% | "
                    "50.0% | 0.0% | 33.3% | 50.0% | 0.90x |\n"),
            std::string::npos)
      << md;
  std::vector<size_t> at;
  for (const char *model : {"m-best", "m-faster", "m-early-tie", "m-late-tie"}) at.push_back(md.find(model));
  for (size_t i = 0; i < at.size(); ++i) ASSERT_NE(at[i], std::string::npos) << i;
  for (size_t i = 1; i < at.size(); ++i) EXPECT_LT(at[i - 1], at[i]) << md;
  // Only complete evals are ranked: the pending, incomplete and infra-error ones are left out and counted.
  for (const char *model : {"m-pending", "m-incomplete", "m-dead-server", "m-other-version"})
    EXPECT_EQ(md.find(model), std::string::npos) << model;
  EXPECT_NE(md.find("3 evals that are not complete left out (`--all` lists them).\n"), std::string::npos) << md;
  // The v2 eval and the non-object document.
  EXPECT_NE(md.find("2 evals of other suite versions left out.\n"), std::string::npos) << md;

  // --all: the others follow the ranked ones, unranked, with their status.
  md = leaderboardMarkdown(documents, "v1", true);
  EXPECT_NE(md.find("| 4 | #1 | m-late-tie | complete |"), std::string::npos) << md;
  EXPECT_NE(md.find("| – | #7 | m-incomplete | incomplete |"), std::string::npos) << md;
  EXPECT_NE(md.find("| – | #6 | m-pending | pending | 2024-05-06T00:00:00Z | 2 | 2 | repair, optimize | gpu | n/a | "
                    "n/a | n/a | n/a | n/a | n/a |\n"),
            std::string::npos)
      << md;
  EXPECT_LT(md.find("m-late-tie"), md.find("m-incomplete")); // 99% correct@1, still below every complete eval
  EXPECT_EQ(md.find("not complete left out"), std::string::npos);
}

TEST(EvalReportLeaderboard, NoEvalsOfTheVersion) {
  std::string md = leaderboardMarkdown({leaderboardEntry(1, "m", "v2", "2024", 0.5, 0.5, 1.0)}, "v1");
  EXPECT_NE(md.find("No complete evals of this suite version.\n"), std::string::npos);
  EXPECT_NE(md.find("1 eval of another suite version left out.\n"), std::string::npos);
  md = leaderboardMarkdown({}, "v|1");
  EXPECT_NE(md.find("# Leaderboard: v\\|1\n"), std::string::npos);
  EXPECT_EQ(md.find("left out"), std::string::npos);
}

// ---------------------------------------------------------------------------
// Empty, pending and odd documents

TEST(EvalReport, EmptyDocumentsRenderWithoutThrowing) {
  for (const json &doc : {json(), json::object(), json::array({1}), json("text")}) {
    std::string md, html;
    ASSERT_NO_THROW(md = evalMarkdown(doc));
    ASSERT_NO_THROW(html = evalHtml(doc));
    EXPECT_NE(md.find("| eval | n/a |\n"), std::string::npos) << md;
    EXPECT_NE(md.find("No metrics."), std::string::npos);
    EXPECT_NE(md.find("No provenance."), std::string::npos);
    expectSelfContained(html);
    EXPECT_EQ(svgsOf(html).size(), 2u); // no metrics: no histogram
  }
}

TEST(EvalReport, PendingEvalWithNullMetrics) {
  json doc = document();
  doc["status"] = "pending";
  doc["metrics"] = nullptr;
  std::string md = evalMarkdown(doc), html = evalHtml(doc);
  EXPECT_NE(md.find("No metrics (status: pending)."), std::string::npos) << md;
  EXPECT_NE(md.find("| device | NVIDIA H200 |"), std::string::npos);
  EXPECT_NE(html.find("No metrics (status: pending)."), std::string::npos);
  expectSelfContained(html);
  std::vector<std::string> svgs = svgsOf(html);
  ASSERT_EQ(svgs.size(), 2u);
  for (const std::string &svg : svgs) EXPECT_NE(svg.find(">no metrics</text>"), std::string::npos);
}

TEST(EvalReport, OddTypesShowNotAvailableAndNeverThrow) {
  json doc = document();
  doc["eval"] = json::object();
  doc["parameters"] = "x";
  doc["provenance"] = json::array();
  doc["created_at"] = 5;
  json &metrics = doc["metrics"];
  metrics["ks"] = "one";
  metrics["timed"] = "yes";
  metrics["overall"]["tasks"] = "three";
  metrics["overall"]["correct_at_k"] = json::array({0.5});
  metrics["overall"]["fast_p"] = {{"zero", 1}, {"1", "half"}};
  metrics["overall"]["stages"] = {{"lint", "many"}, {"compile", nullptr}, {"faster", -2}};
  metrics["overall"]["diagnostic_codes"] = json::array({"x"});
  metrics["levels"] = {{"L1", 1}};
  metrics["tasks"] = json::array({nullptr, 5, {{"task", 5}, {"level", "high"}, {"sample_outcomes", "x"}},
                                  {{"task", "t"}, {"speedup_spread", {{"median", "x"}}}, {"sample_outcomes", {7}}}});
  std::string md, html, compare, board;
  ASSERT_NO_THROW(md = evalMarkdown(doc));
  ASSERT_NO_THROW(html = evalHtml(doc));
  ASSERT_NO_THROW(compare = compareMarkdown(doc, document()));
  ASSERT_NO_THROW(board = leaderboardMarkdown({doc, json(), document()}, "core@1a2b3c4d5e6f"));
  // ks falls back to the keys of overall.correct_at_k (none here): no k columns. A timed flag that is
  // not true means untimed: no speed tables.
  EXPECT_NE(md.find("| group | tasks | samples | no completion | fast_0 |\n| --- | ---: | ---: | ---: | ---: |\n"
                    "| overall | n/a | 6 | 0 | n/a |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| overall | 0.95 | 1.05 |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| 5 | high | n/a |"), std::string::npos) << md;
  EXPECT_NE(md.find("| lint | n/a | n/a |\n| compile | n/a | n/a |\n| faster | -2 | n/a |\n"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| created | 5 |\n"), std::string::npos);
  expectSelfContained(html);
  EXPECT_EQ(svgsOf(html).size(), 2u);
  EXPECT_NE(html.find("Nothing was timed: no sample of this eval has a correct, timed attempt"), std::string::npos);
}

// The whole reports, exactly: a GPU eval of two rounds, the same on the CPU
// emulator (nothing timed), and a GPU eval with k = 1, 5, 10 and a long model name.
TEST(EvalReportGolden, GpuEval) {
  golden::expectGolden("eval-gpu.md", evalMarkdown(document()));
  golden::expectGolden("eval-gpu.html", evalHtml(document()));
}

TEST(EvalReportGolden, EmulatorEval) {
  json doc = untimedDocument();
  doc["provenance"]["executor"] = "isolated-emu";
  golden::expectGolden("eval-emu.md", evalMarkdown(doc));
  golden::expectGolden("eval-emu.html", evalHtml(doc));
}

TEST(EvalReportGolden, ManyKsAndALongModelName) {
  json doc = document();
  doc["metrics"]["ks"] = {1, 5, 10};
  doc["model"] = "openai:a-very-long-organisation-name/and-an-even-longer-model-name-that-has-no-spaces-at-all-v2";
  // Speedups from 0.001x to 1000x: many bins, slanted edge labels.
  json &samples = doc["metrics"]["tasks"][2]["sample_outcomes"];
  samples[0] = {{"slot", 0}, {"correct", true}, {"speedup", 0.001}};
  samples[1] = {{"slot", 1}, {"correct", true}, {"speedup", 1000.0}};
  golden::expectGolden("eval-wide.html", evalHtml(doc));
}

TEST(EvalReport, InvalidUtf8DoesNotThrow) {
  json doc = document();
  doc["parameters"]["list"] = json::array({std::string("\xc3"), json::object({{"k", std::string("\xff")}})});
  doc["metrics"]["tasks"][0]["task"] = std::string("bad \xff byte");
  std::string md;
  ASSERT_NO_THROW(md = evalMarkdown(doc));
  ASSERT_NO_THROW(evalHtml(doc));
  ASSERT_NO_THROW(compareMarkdown(doc, doc));
  EXPECT_NE(md.find("| list |"), std::string::npos);
}

} // namespace
} // namespace ptxforge::report
