// Eval metrics against values worked out by hand: the pass@k estimator, three
// hand-built runs of two rounds (two timed L1 tasks, one L3 task with correct
// but untimed samples, each with a sample that had no completion) checked field
// by field per task, per level and overall; fast_p, fast_p_low and fast_p@k on
// their own, among them a model that copies nvcc; correct@1 from first
// attempts only; samples without a completion; the JSON keys; and stored
// records that are odd or broken.
#include "eval/Metrics.h"
#include "verify/Check.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ptxforge::eval {
namespace {

using nlohmann::json;
using store::AttemptRow;
using store::RunData;

constexpr double kTolerance = 1e-12;

// --- pass@k -------------------------------------------------------------------

// 1 - C(n-c, k) / C(n, k), worked out by hand in each comment.
TEST(PassAtK, HandValues) {
  EXPECT_EQ(passAtK(5, 0, 1), 0.0);                  // no success: exactly 0
  EXPECT_EQ(passAtK(5, 5, 1), 1.0);                  // n - c = 0 < k: exactly 1
  EXPECT_NEAR(*passAtK(5, 3, 1), 0.6, kTolerance);   // 1 - C(2,1)/C(5,1) = 1 - 2/5
  EXPECT_NEAR(*passAtK(5, 3, 2), 0.9, kTolerance);   // 1 - C(2,2)/C(5,2) = 1 - 1/10
  EXPECT_NEAR(*passAtK(5, 2, 2), 0.7, kTolerance);   // 1 - C(3,2)/C(5,2) = 1 - 3/10
  EXPECT_NEAR(*passAtK(10, 1, 5), 0.5, kTolerance);  // 1 - C(9,5)/C(10,5) = 1 - 126/252
  EXPECT_EQ(passAtK(4, 1, 5), std::nullopt);         // n < k: unknown
  EXPECT_EQ(passAtK(1, 1, 1), 1.0);
  EXPECT_NEAR(*passAtK(20, 5, 3), 1.0 - 455.0 / 1140.0, kTolerance); // C(15,3) = 455, C(20,3) = 1140
  EXPECT_EQ(passAtK(0, 0, 1), std::nullopt);
}

TEST(PassAtK, StaysInRangeForLargeCounts) {
  // C(1000, 500) overflows a double; the product form does not.
  std::optional<double> rate = passAtK(1000, 3, 500);
  ASSERT_TRUE(rate.has_value());
  EXPECT_TRUE(std::isfinite(*rate));
  EXPECT_GT(*rate, 0.8);
  EXPECT_LE(*rate, 1.0);
  EXPECT_EQ(passAtK(1000, 501, 500), 1.0);
}

// --- hand-built runs -------------------------------------------------------------

/// One attempt as the solve loop records it, built fluently:
///   attempt(round, slot, verdict).kind("repair").speedup(1.2).registers(8).sass(40)
/// Verdict "" means the candidate has no result yet; a completion status other
/// than "complete" means no candidate ("none": no completion row at all);
/// verdict "no-ptx" means a candidate whose extraction failed.
struct AttemptSpec {
  int round = 1;
  int slot = 0;
  std::string kindName = "initial";
  std::string verdict = "correct";
  std::optional<double> speedupValue;
  std::optional<std::pair<double, double>> noiseBand; ///< the headline benchmark's speedup_low, speedup_high
  bool withCandidate = true; ///< false: a complete completion never checked (the process ended first)
  std::optional<int> registerCount;
  std::optional<int> sassInstructions;
  int spillStoreBytes = 0, spillLoadBytes = 0;
  std::vector<std::string> diagnosticCodes;
  std::optional<int64_t> duplicateOfId;
  std::string completionStatus = "complete";
  std::string stageName; ///< result["stage"]; "" picks the one the verdict implies

  AttemptSpec &kind(std::string value) { kindName = std::move(value); return *this; }
  AttemptSpec &speedup(double value) { speedupValue = value; return *this; }
  /// The speedup with a timed benchmark whose noise band is [low, high].
  AttemptSpec &speedup(double value, double low, double high) {
    speedupValue = value;
    noiseBand = {low, high};
    return *this;
  }
  AttemptSpec &unjudged() { withCandidate = false; return *this; }
  AttemptSpec &registers(int value) { registerCount = value; return *this; }
  AttemptSpec &sass(int instructions) { sassInstructions = instructions; return *this; }
  AttemptSpec &spill(int storeBytes, int loadBytes) {
    spillStoreBytes = storeBytes;
    spillLoadBytes = loadBytes;
    return *this;
  }
  AttemptSpec &codes(std::vector<std::string> value) { diagnosticCodes = std::move(value); return *this; }
  AttemptSpec &duplicateOf(int64_t candidateId) { duplicateOfId = candidateId; return *this; }
  AttemptSpec &completion(std::string status) { completionStatus = std::move(status); return *this; }
  AttemptSpec &stage(std::string value) { stageName = std::move(value); return *this; }
};

AttemptSpec attempt(int round, int slot, std::string verdict = "correct") {
  AttemptSpec spec;
  spec.round = round;
  spec.slot = slot;
  spec.verdict = std::move(verdict);
  return spec;
}

/// Appends the attempt and returns its candidate id (0 when it has none).
int64_t addAttempt(RunData &run, const AttemptSpec &spec) {
  AttemptRow row;
  int64_t index = static_cast<int64_t>(run.attempts.size()) + 1;
  row.prompt.id = run.run.id * 1000 + index;
  row.prompt.runId = run.run.id;
  row.prompt.round = spec.round;
  row.prompt.slot = spec.slot;
  row.prompt.kind = spec.kindName;
  if (spec.completionStatus == "none") {
    run.attempts.push_back(std::move(row));
    return 0;
  }
  row.completion = store::CompletionRecord{};
  row.completion->promptId = row.prompt.id;
  row.completion->status = spec.completionStatus;
  if (spec.completionStatus != "complete") {
    row.completion->error = "HTTP 500";
    run.attempts.push_back(std::move(row));
    return 0;
  }
  row.completion->text = "```ptx\n.version 8.0\n```";
  if (spec.kindName == "skeleton" || !spec.withCandidate) { // a skeleton request has no candidate
    run.attempts.push_back(std::move(row));
    return 0;
  }
  row.candidate = store::CandidateRecord{};
  row.candidate->id = run.run.id * 100 + index;
  row.candidate->runId = run.run.id;
  row.candidate->promptId = row.prompt.id;
  row.candidate->round = spec.round;
  row.candidate->slot = spec.slot;
  row.candidate->duplicateOf = spec.duplicateOfId;
  if (spec.verdict == "no-ptx")
    row.candidate->extractError = "no ```ptx block in the answer";
  else
    row.candidate->ptx = ".version 8.0\n.target sm_90\n.visible .entry k() { ret; }";
  if (!spec.verdict.empty()) {
    store::ResultRecord result;
    result.candidateId = row.candidate->id;
    result.verdict = spec.verdict;
    if (!spec.stageName.empty())
      result.stage = spec.stageName;
    else if (spec.verdict == "no-ptx")
      result.stage = "extract";
    else if (spec.verdict == "lint-error")
      result.stage = "lint";
    else if (spec.verdict == "compile-error")
      result.stage = "compile";
    else if (spec.verdict == "correct")
      result.stage = "done";
    else
      result.stage = "execute";
    result.speedup = spec.speedupValue;
    result.registers = spec.registerCount;
    // Written as the solve loop writes it: verify::toJson of a CheckResult plus
    // "sass". Older rows held "rejected" in the JSON where the column says
    // not-verified; the column wins.
    verify::CheckResult check;
    check.verdict = verify::parseVerdict(spec.verdict == "not-verified" ? "rejected" : spec.verdict)
                        .value_or(verify::Verdict::NotVerified);
    check.stage = verify::parseStage(result.stage).value_or(verify::Stage::Execute);
    if (spec.noiseBand) {
      verify::BenchmarkReport benchmark;
      benchmark.speedup = spec.speedupValue.value_or(0);
      benchmark.speedupLow = spec.noiseBand->first;
      benchmark.speedupHigh = spec.noiseBand->second;
      benchmark.baseline.median = 1.0;
      check.benchmarks.push_back(benchmark);
    }
    for (const std::string &code : spec.diagnosticCodes)
      check.diagnostics.push_back({code, ptx::Severity::Error, 1, 0, "m", ""});
    if (spec.registerCount) {
      check.compile = toolchain::CompileResult{};
      check.compile->resources.known = true;
      check.compile->resources.registers = *spec.registerCount;
      check.compile->resources.spillStoreBytes = spec.spillStoreBytes;
      check.compile->resources.spillLoadBytes = spec.spillLoadBytes;
    }
    result.result = verify::toJson(check);
    result.result["sass"] = spec.sassInstructions ? json{{"instructions", *spec.sassInstructions}} : json(nullptr);
    row.result = std::move(result);
  }
  int64_t id = row.candidate->id;
  run.attempts.push_back(std::move(row));
  return id;
}

RunData makeRun(int64_t id, const std::string &task, json reference) {
  RunData run;
  run.run.id = id;
  run.run.task = task;
  run.run.status = "done";
  if (!reference.is_null()) run.run.summary["reference"] = std::move(reference);
  return run;
}


/// Task A, level 1, timed, 4 samples, 2 rounds. nvcc: 16 registers, 20 SASS
/// instructions, no spills.
///   slot 0: (skeleton request) compile-error -> repair: correct 1.2x (band 1.1-1.3), 8 regs, 40 instr
///   slot 1: correct 0.8x (no band; 40 regs, 100 instr) -> optimize: correct 1.6x (band 1.4-1.8),
///           32 regs, 45 instr, 16 B spill
///   slot 2: lint-error -> repair: wrong
///   slot 3: the request failed (HTTP 500) -> a fresh attempt: no PTX. No completion: left out.
RunData taskA() {
  RunData run = makeRun(11, "vector_add",
                        {{"registers", 16}, {"spill_store_bytes", 0}, {"spill_load_bytes", 0}, {"shared_bytes", 0},
                         {"stack_bytes", 0}, {"sass", {{"instructions", 20}}}, {"timing_ms", 0.05}});
  addAttempt(run, attempt(1, 0).kind("skeleton"));
  addAttempt(run, attempt(1, 0, "compile-error").codes({"ptxas-error"}));
  addAttempt(run, attempt(1, 1).speedup(0.8).registers(40).sass(100));
  addAttempt(run, attempt(1, 2, "lint-error").codes({"undeclared-register", "undeclared-register", "bad-type"}));
  addAttempt(run, attempt(1, 3, "").completion("error"));
  // Diagnostics of a correct attempt are no failure's: not in the taxonomy.
  addAttempt(run, attempt(2, 0).kind("repair").speedup(1.2, 1.1, 1.3).registers(8).sass(40).codes({"unused-register"}));
  addAttempt(run, attempt(2, 1).kind("optimize").speedup(1.6, 1.4, 1.8).registers(32).sass(45).spill(8, 8));
  addAttempt(run, attempt(2, 2, "wrong").kind("repair").codes({"undeclared-register"}));
  addAttempt(run, attempt(2, 3, "no-ptx").codes({"no-ptx-code"}));
  return run;
}

/// Task B, level 1, timed, 3 samples, 2 rounds. nvcc: 32 registers, no SASS
/// counts, 4 B of spill stores.
///   slot 0: correct 2.5x (band 2.2-2.8), 40 regs, 200 instr, 8 B spill -> optimize: a duplicate of it
///   slot 1: a duplicate of slot 0's first candidate -> optimize: the batch answer is pending. Left out.
///   slot 2: timeout -> a superseded fresh attempt (an earlier pass's, its request failed), then the
///           repair that replaced it: not-verified after the gate reached "execute"
RunData taskB() {
  RunData run = makeRun(12, "softmax",
                        {{"registers", 32}, {"spill_store_bytes", 4}, {"spill_load_bytes", 0}, {"shared_bytes", 0},
                         {"stack_bytes", 0}, {"sass", nullptr}, {"timing_ms", nullptr}});
  int64_t original = addAttempt(run, attempt(1, 0).speedup(2.5, 2.2, 2.8).registers(40).sass(200).spill(8, 0));
  addAttempt(run, attempt(1, 1).speedup(2.5, 2.2, 2.8).registers(40).sass(200).spill(8, 0).duplicateOf(original));
  addAttempt(run, attempt(1, 2, "timeout"));
  addAttempt(run, attempt(2, 0).kind("optimize").speedup(2.5, 2.2, 2.8).registers(40).sass(200).spill(8, 0)
                      .duplicateOf(original));
  addAttempt(run, attempt(2, 1, "").kind("optimize").completion("pending"));
  addAttempt(run, attempt(2, 2, "").completion("error"));
  addAttempt(run, attempt(2, 2, "not-verified").kind("repair").codes({"emu-unsupported"}).stage("execute"));
  return run;
}

/// Task C, level 3, correct but untimed samples (in a timed eval: not fast), 3 samples, 2 rounds, no nvcc reference.
///   slot 0: correct, untimed, 10 regs, 50 instr -> optimize: correct, untimed, 12 regs
///   slot 1: not-verified at "lint" -> repair: rejected (timer read, at lint)
///   slot 2: its skeleton request failed, so round 1 had no attempt; round 2's fresh attempt is correct. Left out.
RunData taskC() {
  RunData run = makeRun(13, "relu", nullptr);
  addAttempt(run, attempt(1, 0).registers(10).sass(50));
  addAttempt(run, attempt(1, 1, "not-verified").codes({"emu-unsupported"}).stage("lint"));
  addAttempt(run, attempt(1, 2, "").kind("skeleton").completion("error"));
  addAttempt(run, attempt(2, 0).kind("optimize").registers(12).sass(52));
  addAttempt(run, attempt(2, 1, "rejected").kind("repair").codes({"timer-read"}).stage("lint"));
  addAttempt(run, attempt(2, 2).registers(10).sass(50));
  return run;
}

MetricsOptions handOptions() {
  MetricsOptions options;
  options.ks = {4, 1, 2, 2, 0}; // unsorted, repeated and invalid k are normalized to {1, 2, 4}
  options.rounds = 2;
  return options;
}

EvalMetrics handMetrics() { return evalMetrics({taskA(), taskB(), taskC()}, {1, 1, 3}, handOptions()); }

void expectSpread(const std::optional<Spread> &spread, double median, double p10, double p90, double min, double max,
                  size_t samples) {
  ASSERT_TRUE(spread.has_value());
  EXPECT_DOUBLE_EQ(spread->median, median);
  EXPECT_DOUBLE_EQ(spread->p10, p10);
  EXPECT_DOUBLE_EQ(spread->p90, p90);
  EXPECT_DOUBLE_EQ(spread->min, min);
  EXPECT_DOUBLE_EQ(spread->max, max);
  EXPECT_EQ(spread->samples, samples);
}

void expectRate(const std::optional<double> &rate, double expected) {
  ASSERT_TRUE(rate.has_value());
  EXPECT_NEAR(*rate, expected, kTolerance);
}

/// Every threshold's share, in kFastThresholds order (fast_p_low: the last three).
void expectShares(const FastShares &shares, const std::vector<std::optional<double>> &expected) {
  std::vector<double> thresholds = kFastThresholds;
  if (expected.size() == 3) thresholds.erase(thresholds.begin());
  ASSERT_EQ(shares.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("p = " + thresholdKey(thresholds[i]));
    ASSERT_EQ(shares.count(thresholds[i]), 1u);
    if (!expected[i]) EXPECT_EQ(shares.at(thresholds[i]), std::nullopt);
    else expectRate(shares.at(thresholds[i]), *expected[i]);
  }
}

void expectReach(const Reach &reach, bool lint, bool compile, bool correct, std::optional<double> speedup,
                 std::optional<double> speedupLow) {
  EXPECT_EQ(reach.lint, lint);
  EXPECT_EQ(reach.compile, compile);
  EXPECT_EQ(reach.correct, correct);
  EXPECT_EQ(reach.speedup, speedup);
  EXPECT_EQ(reach.speedupLow, speedupLow);
}

void expectResources(const SampleOutcome &sample, std::optional<int> registers, std::optional<int> instructions,
                     std::optional<int> spill, int attempts) {
  EXPECT_EQ(sample.registers, registers);
  EXPECT_EQ(sample.sassInstructions, instructions);
  EXPECT_EQ(sample.spillBytes, spill);
  EXPECT_EQ(sample.attempts, attempts);
}

using Counts = std::map<std::string, int>;

TEST(MetricsTask, TimedTaskWithRepairsAndAFailedRequest) {
  EvalMetrics metrics = handMetrics();
  ASSERT_EQ(metrics.tasks.size(), 3u);
  const TaskMetrics &a = metrics.tasks[0];
  EXPECT_EQ(a.task, "vector_add");
  EXPECT_EQ(a.level, 1);
  EXPECT_EQ(a.runId, 11);
  EXPECT_EQ(a.rounds, 2);

  ASSERT_EQ(a.sampleOutcomes.size(), 4u);
  const std::vector<SampleOutcome> &s = a.sampleOutcomes;
  // Slot 0: the first attempt lints clean but does not compile; the repair is correct.
  EXPECT_EQ(s[0].noCompletion, std::nullopt);
  expectReach(s[0].first, true, false, false, std::nullopt, std::nullopt);
  expectReach(s[0].final, true, true, true, 1.2, 1.1);
  expectResources(s[0], 8, 40, 0, 2);
  // Slot 1: correct but slower at first; the 1.6x optimize is its best and brings its resources.
  expectReach(s[1].first, true, true, true, 0.8, std::nullopt);
  expectReach(s[1].final, true, true, true, 1.6, 1.4);
  expectResources(s[1], 32, 45, 16, 2);
  // Slot 2: reaches lint only in its repair.
  expectReach(s[2].first, false, false, false, std::nullopt, std::nullopt);
  expectReach(s[2].final, true, true, false, std::nullopt, std::nullopt);
  // Slot 3: its first request failed. Left out, whatever its second attempt did.
  EXPECT_EQ(s[3].noCompletion, "error");
  expectReach(s[3].final, false, false, false, std::nullopt, std::nullopt);
  EXPECT_EQ(s[3].attempts, 2);

  EXPECT_EQ(a.samples, 3);
  EXPECT_EQ(a.noCompletion, 1);
  EXPECT_EQ(a.noCompletionReasons, (Counts{{"error", 1}}));
  // First attempts, n = 3: lint c = 2, compile c = 1, correct c = 1.
  EXPECT_EQ(a.lintPassed, 2);
  EXPECT_EQ(a.compilePassed, 1);
  EXPECT_EQ(a.correct, 1);
  expectRate(a.lintAtK.at(1), 2.0 / 3);
  expectRate(a.compileAtK.at(1), 1.0 / 3);
  expectRate(a.correctAtK.at(1), 1.0 / 3);
  expectRate(a.lintAtK.at(2), 1.0);         // n - c = 1 < 2
  expectRate(a.compileAtK.at(2), 2.0 / 3);  // 1 - C(2,2)/C(3,2) = 1 - 1/3
  expectRate(a.correctAtK.at(2), 2.0 / 3);
  EXPECT_EQ(a.correctAtK.at(4), std::nullopt); // n = 3 < 4
  EXPECT_EQ(a.lintAtK.size(), 3u);
  // fast_p: slot 1's first attempt is correct at 0.8x: fast_0 only.
  expectShares(a.fastP, {1.0 / 3, 0.0, 0.0, 0.0});
  expectShares(a.fastPLow, {0.0, 0.0, 0.0});
  expectShares(a.fastPAtK.at(1), {1.0 / 3, 0.0, 0.0, 0.0});
  expectShares(a.fastPAtK.at(2), {2.0 / 3, 0.0, 0.0, 0.0});
  expectShares(a.fastPAtK.at(4), {std::nullopt, std::nullopt, std::nullopt, std::nullopt});
  // After 2 rounds: slots 0 (1.2x, band low 1.1) and 1 (1.6x, low 1.4) are correct.
  EXPECT_EQ(a.correctAfterRounds, 2);
  expectRate(a.correctAtKAfterRounds.at(1), 2.0 / 3);
  expectRate(a.correctAtKAfterRounds.at(2), 1.0);
  expectShares(a.fastPAfterRounds, {2.0 / 3, 2.0 / 3, 1.0 / 3, 0.0});
  expectShares(a.fastPLowAfterRounds, {2.0 / 3, 0.0, 0.0});

  EXPECT_TRUE(a.timed);
  expectRate(a.bestSpeedup, 1.6);
  expectRate(a.geomeanSpeedup, std::sqrt(1.2 * 1.6)); // = sqrt(1.92)
  // spreadOf {1.2, 1.6}: nearest rank index q*(2-1)+0.5 -> p10 0, median 1, p90 1.
  expectSpread(a.speedupSpread, 1.6, 1.2, 1.6, 1.2, 1.6, 2);
  expectSpread(a.instructionSpread, 45, 40, 45, 40, 45, 2);

  EXPECT_EQ(a.nvccRegisters, 16);
  EXPECT_EQ(a.nvccInstructions, 20);
  EXPECT_EQ(a.nvccSpillBytes, 0);
  expectRate(a.registerRatio, 1.0);               // sqrt(8/16 * 32/16) = sqrt(0.5 * 2)
  expectRate(a.instructionRatio, std::sqrt(4.5)); // sqrt(40/20 * 45/20) = sqrt(2 * 2.25)
  EXPECT_EQ(a.spillingWhereNvccDoesNot, 1);       // slot 1 spills 16 B, nvcc 0 B

  // The 6 attempts of the scored samples (the skeleton request is none; slot 3 is left out):
  // compile-error, 1.2x (band above 1), 0.8x (no band: the median), 1.6x, lint-error, wrong.
  EXPECT_EQ(a.stages, (Counts{{"compile", 1}, {"faster", 2}, {"slower", 1}, {"lint", 1}, {"correctness", 1}}));
  // undeclared-register: twice in the lint-error (counted once) and in the
  // wrong attempt; unused-register is on a correct attempt; slot 3's no-ptx-code is left out.
  EXPECT_EQ(a.diagnosticCodes, (Counts{{"ptxas-error", 1}, {"undeclared-register", 2}, {"bad-type", 1}}));
}

TEST(MetricsTask, DuplicatesPendingAndASupersededRequest) {
  EvalMetrics metrics = handMetrics();
  const TaskMetrics &b = metrics.tasks[1];
  EXPECT_EQ(b.task, "softmax");
  ASSERT_EQ(b.sampleOutcomes.size(), 3u);
  const std::vector<SampleOutcome> &s = b.sampleOutcomes;
  expectReach(s[0].first, true, true, true, 2.5, 2.2);
  expectReach(s[0].final, true, true, true, 2.5, 2.2); // the duplicate ties: the earlier attempt stays
  expectResources(s[0], 40, 200, 8, 2);
  EXPECT_EQ(s[1].noCompletion, "pending"); // its first attempt was fine; its optimize is not in yet
  // The superseded fresh attempt (a failed request) does not count; the repair that replaced it does.
  EXPECT_EQ(s[2].noCompletion, std::nullopt);
  expectReach(s[2].first, true, true, false, std::nullopt, std::nullopt);
  EXPECT_EQ(s[2].attempts, 2);

  EXPECT_EQ(b.samples, 2);
  EXPECT_EQ(b.noCompletion, 1);
  EXPECT_EQ(b.noCompletionReasons, (Counts{{"pending", 1}}));
  EXPECT_EQ(b.lintPassed, 2);
  EXPECT_EQ(b.compilePassed, 2);
  EXPECT_EQ(b.correct, 1);
  expectRate(b.correctAtK.at(1), 0.5);
  expectRate(b.correctAtK.at(2), 1.0);
  EXPECT_EQ(b.correctAtK.at(4), std::nullopt);
  // Slot 0 is correct at 2.5x with its whole band above 2.
  expectShares(b.fastP, {0.5, 0.5, 0.5, 0.5});
  expectShares(b.fastPLow, {0.5, 0.5, 0.5});
  expectShares(b.fastPAtK.at(1), {0.5, 0.5, 0.5, 0.5});
  expectShares(b.fastPAtK.at(2), {1.0, 1.0, 1.0, 1.0});
  EXPECT_EQ(b.correctAfterRounds, 1);
  expectShares(b.fastPAfterRounds, {0.5, 0.5, 0.5, 0.5});

  EXPECT_TRUE(b.timed);
  expectRate(b.bestSpeedup, 2.5);
  expectRate(b.geomeanSpeedup, 2.5);
  expectSpread(b.speedupSpread, 2.5, 2.5, 2.5, 2.5, 2.5, 1);
  expectSpread(b.instructionSpread, 200, 200, 200, 200, 200, 1);
  EXPECT_EQ(b.nvccRegisters, 32);
  EXPECT_EQ(b.nvccInstructions, std::nullopt); // "sass": null
  EXPECT_EQ(b.nvccSpillBytes, 4);
  expectRate(b.registerRatio, 1.25);           // 40/32
  EXPECT_EQ(b.instructionRatio, std::nullopt); // no nvcc count to divide by
  EXPECT_EQ(b.spillingWhereNvccDoesNot, 0);    // nvcc spills too
  EXPECT_EQ(b.stages, (Counts{{"faster", 2}, {"correctness", 1}, {"unverified", 1}}));
  EXPECT_EQ(b.diagnosticCodes, (Counts{{"emu-unsupported", 1}}));
}

TEST(MetricsTask, CorrectButUntimedInATimedEval) {
  EvalMetrics metrics = handMetrics();
  const TaskMetrics &c = metrics.tasks[2];
  EXPECT_EQ(c.task, "relu");
  EXPECT_EQ(c.level, 3);
  ASSERT_EQ(c.sampleOutcomes.size(), 3u);
  const std::vector<SampleOutcome> &s = c.sampleOutcomes;
  // Correct but untimed: resources from the first correct attempt.
  expectReach(s[0].first, true, true, true, std::nullopt, std::nullopt);
  expectResources(s[0], 10, 50, 0, 2);
  // not-verified at "lint" reaches nothing, and so does "rejected" at "lint"
  // (the gate refuses a timer read before compiling): both go by their stage.
  expectReach(s[1].final, false, false, false, std::nullopt, std::nullopt);
  // Round 1 had only a failed skeleton request: left out, with round 2's correct attempt.
  EXPECT_EQ(s[2].noCompletion, "error");

  EXPECT_EQ(c.samples, 2);
  EXPECT_EQ(c.correct, 1);
  expectRate(c.lintAtK.at(1), 0.5);
  expectRate(c.correctAtK.at(2), 1.0);
  // The eval is timed: a correct sample without a timing is not fast, and counts in the denominator.
  expectShares(c.fastP, {0.5, 0.0, 0.0, 0.0});
  expectShares(c.fastPLow, {0.0, 0.0, 0.0});
  EXPECT_FALSE(c.timed);
  EXPECT_EQ(c.bestSpeedup, std::nullopt);
  EXPECT_EQ(c.geomeanSpeedup, std::nullopt);
  EXPECT_EQ(c.speedupSpread, std::nullopt);
  expectSpread(c.instructionSpread, 50, 50, 50, 50, 50, 1);
  EXPECT_EQ(c.nvccRegisters, std::nullopt);
  EXPECT_EQ(c.registerRatio, std::nullopt);
  EXPECT_EQ(c.stages, (Counts{{"untimed", 2}, {"unverified", 1}, {"correctness", 1}}));
  EXPECT_EQ(c.diagnosticCodes, (Counts{{"emu-unsupported", 1}, {"timer-read", 1}}));
}

TEST(MetricsGroup, LevelsAndOverall) {
  EvalMetrics metrics = handMetrics();
  EXPECT_EQ(metrics.ks, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(metrics.rounds, 2);
  EXPECT_TRUE(metrics.timed);
  ASSERT_EQ(metrics.levels.size(), 2u); // no L2 task

  // L1 = tasks A (n = 3) and B (n = 2).
  const GroupMetrics &l1 = metrics.levels[0];
  EXPECT_EQ(l1.name, "L1");
  EXPECT_EQ(l1.tasks, 2);
  EXPECT_EQ(l1.samples, 5);
  EXPECT_EQ(l1.noCompletion, 2);
  EXPECT_EQ(l1.noCompletionReasons, (Counts{{"error", 1}, {"pending", 1}}));
  expectRate(l1.lintAtK.at(1), 5.0 / 6);     // (2/3 + 1) / 2
  expectRate(l1.compileAtK.at(1), 2.0 / 3);  // (1/3 + 1) / 2
  expectRate(l1.correctAtK.at(1), 5.0 / 12); // (1/3 + 1/2) / 2
  expectRate(l1.compileAtK.at(2), 5.0 / 6);  // (2/3 + 1) / 2
  expectRate(l1.correctAtK.at(2), 5.0 / 6);
  EXPECT_EQ(l1.correctAtK.at(4), std::nullopt);
  // Per sample over the level's 5 samples: A's slot 1 (0.8x) and B's slot 0 (2.5x) are correct first attempts.
  expectShares(l1.fastP, {2.0 / 5, 1.0 / 5, 1.0 / 5, 1.0 / 5});
  expectShares(l1.fastPLow, {1.0 / 5, 1.0 / 5, 1.0 / 5});
  expectShares(l1.fastPAtK.at(1), {5.0 / 12, 1.0 / 4, 1.0 / 4, 1.0 / 4}); // (1/3 + 1/2)/2, (0 + 1/2)/2
  expectShares(l1.fastPAtK.at(2), {5.0 / 6, 1.0 / 2, 1.0 / 2, 1.0 / 2});  // (2/3 + 1)/2, (0 + 1)/2
  expectRate(l1.correctAtKAfterRounds.at(1), 7.0 / 12); // (2/3 + 1/2) / 2
  expectRate(l1.correctAtKAfterRounds.at(2), 1.0);
  // After 2 rounds: 1.2x (low 1.1), 1.6x (low 1.4) and 2.5x (low 2.2) of 5.
  expectShares(l1.fastPAfterRounds, {3.0 / 5, 3.0 / 5, 2.0 / 5, 1.0 / 5});
  expectShares(l1.fastPLowAfterRounds, {3.0 / 5, 1.0 / 5, 1.0 / 5});
  expectRate(l1.geomeanSpeedup, std::cbrt(1.2 * 1.6 * 2.5));
  expectRate(l1.registerRatio, std::cbrt(0.5 * 2 * 1.25));
  expectRate(l1.instructionRatio, std::sqrt(4.5)); // A's (2 * 2.25)^(1/2); B has no nvcc count
  EXPECT_EQ(l1.correctSamples, 3);                 // after all rounds: 2 + 1
  EXPECT_EQ(l1.spillingWhereNvccDoesNot, 1);
  EXPECT_EQ(l1.stages, (Counts{{"compile", 1}, {"faster", 4}, {"slower", 1}, {"lint", 1}, {"correctness", 2},
                               {"unverified", 1}}));
  EXPECT_EQ(l1.diagnosticCodes, (Counts{{"ptxas-error", 1}, {"undeclared-register", 2}, {"bad-type", 1},
                                        {"emu-unsupported", 1}}));

  // L3 = task C only (n = 2): correct but never timed, in a timed eval.
  const GroupMetrics &l3 = metrics.levels[1];
  EXPECT_EQ(l3.name, "L3");
  EXPECT_EQ(l3.samples, 2);
  EXPECT_EQ(l3.noCompletion, 1);
  expectRate(l3.correctAtK.at(1), 0.5);
  expectShares(l3.fastP, {0.5, 0.0, 0.0, 0.0});
  expectShares(l3.fastPAtK.at(2), {1.0, 0.0, 0.0, 0.0});
  EXPECT_EQ(l3.geomeanSpeedup, std::nullopt);
  EXPECT_EQ(l3.registerRatio, std::nullopt);
  EXPECT_EQ(l3.correctSamples, 1);

  // Overall = A, B, C: 7 scored samples, 3 left out.
  const GroupMetrics &all = metrics.overall;
  EXPECT_EQ(all.name, "overall");
  EXPECT_EQ(all.tasks, 3);
  EXPECT_EQ(all.samples, 7);
  EXPECT_EQ(all.noCompletion, 3);
  EXPECT_EQ(all.noCompletionReasons, (Counts{{"error", 2}, {"pending", 1}}));
  expectRate(all.lintAtK.at(1), 13.0 / 18);   // (2/3 + 1 + 1/2) / 3
  expectRate(all.compileAtK.at(1), 11.0 / 18); // (1/3 + 1 + 1/2) / 3
  expectRate(all.correctAtK.at(1), 4.0 / 9);   // (1/3 + 1/2 + 1/2) / 3
  expectRate(all.correctAtK.at(2), 8.0 / 9);   // (2/3 + 1 + 1) / 3
  EXPECT_EQ(all.correctAtK.at(4), std::nullopt);
  expectShares(all.fastP, {3.0 / 7, 1.0 / 7, 1.0 / 7, 1.0 / 7});
  expectShares(all.fastPLow, {1.0 / 7, 1.0 / 7, 1.0 / 7});
  expectShares(all.fastPAtK.at(1), {4.0 / 9, 1.0 / 6, 1.0 / 6, 1.0 / 6}); // (0 + 1/2 + 0) / 3
  expectRate(all.correctAtKAfterRounds.at(1), 5.0 / 9); // (2/3 + 1/2 + 1/2) / 3
  expectShares(all.fastPAfterRounds, {4.0 / 7, 3.0 / 7, 2.0 / 7, 1.0 / 7});
  expectShares(all.fastPLowAfterRounds, {3.0 / 7, 1.0 / 7, 1.0 / 7});
  expectRate(all.geomeanSpeedup, std::cbrt(4.8));
  EXPECT_EQ(all.correctSamples, 4);
  EXPECT_EQ(all.stages, (Counts{{"compile", 1}, {"faster", 4}, {"slower", 1}, {"lint", 1}, {"correctness", 3},
                                {"unverified", 2}, {"untimed", 2}}));
}

// --- fast_p, fast_p_low and fast_p@k on their own ------------------------------------

/// One round of correct samples with these speedups (and noise bands), nvcc's 16 registers.
RunData timedRun(int64_t id, const std::vector<std::array<double, 3>> &speedups) {
  RunData run = makeRun(id, "copy", {{"registers", 16}, {"spill_store_bytes", 0}, {"spill_load_bytes", 0}});
  for (size_t slot = 0; slot < speedups.size(); ++slot)
    addAttempt(run, attempt(1, static_cast<int>(slot)).speedup(speedups[slot][0], speedups[slot][1], speedups[slot][2])
                        .registers(16));
  return run;
}

// A model that copies nvcc's kernel: every sample correct, every speedup about
// 1.0x. KernelBench's fast_1 counts speedups strictly above 1: none here. (The
// old definition, a task with a sample >= 1x, gave this model 100%.)
TEST(MetricsFast, AModelThatCopiesNvccIsNotFast) {
  EvalMetrics metrics = evalMetrics({timedRun(31, {{{1.0, 0.96, 1.04}}, {{0.99, 0.95, 1.03}}, {{1.0, 0.97, 1.03}},
                                                   {{0.98, 0.94, 1.02}}, {{1.0, 0.95, 1.05}}})},
                                    {1}, MetricsOptions{});
  EXPECT_TRUE(metrics.timed);
  expectRate(metrics.overall.correctAtK.at(1), 1.0);
  expectShares(metrics.overall.fastP, {1.0, 0.0, 0.0, 0.0});
  expectShares(metrics.overall.fastPLow, {0.0, 0.0, 0.0});
  expectShares(metrics.overall.fastPAtK.at(1), {1.0, 0.0, 0.0, 0.0});
  expectRate(metrics.overall.geomeanSpeedup, std::pow(1.0 * 0.99 * 1.0 * 0.98 * 1.0, 0.2));
  EXPECT_EQ(metrics.overall.stages, (Counts{{"on-par", 5}}));
}

// The same copy timed on a noisy machine: medians straddle 1.0x, so fast_1
// counts the two that landed above by chance; fast_1_low, which needs the slow
// end of the noise band above 1.0x, counts none.
TEST(MetricsFast, NoiseAwareFastIgnoresMediansInsideTheBand) {
  EvalMetrics metrics = evalMetrics({timedRun(32, {{{0.99, 0.94, 1.04}}, {{1.01, 0.96, 1.06}}, {{1.003, 0.95, 1.05}},
                                                   {{0.995, 0.95, 1.04}}, {{1.0, 0.95, 1.05}}})},
                                    {1}, MetricsOptions{});
  expectShares(metrics.overall.fastP, {1.0, 2.0 / 5, 0.0, 0.0});
  expectShares(metrics.overall.fastPLow, {0.0, 0.0, 0.0});
}

// fast_p@k is pass@k with c = samples correct and faster than p: the unbiased best-of-k estimator.
TEST(MetricsFast, FastAtKIsTheUnbiasedBestOfK) {
  RunData run = timedRun(33, {{{2.5, 2.3, 2.7}}, {{1.2, 0.9, 1.5}}, {{0.9, 0.8, 1.0}}});
  addAttempt(run, attempt(1, 3));          // correct, not timed: never fast
  addAttempt(run, attempt(1, 4, "wrong")); // not correct
  MetricsOptions options;
  options.ks = {1, 2, 5};
  EvalMetrics metrics = evalMetrics({run}, {2}, options);
  const TaskMetrics &task = metrics.tasks[0];
  EXPECT_EQ(task.samples, 5);
  EXPECT_EQ(task.fast, (std::map<double, int>{{0.0, 4}, {1.0, 2}, {1.5, 1}, {2.0, 1}}));
  EXPECT_EQ(task.fastLow, (std::map<double, int>{{1.0, 1}, {1.5, 1}, {2.0, 1}}));
  expectShares(task.fastP, {4.0 / 5, 2.0 / 5, 1.0 / 5, 1.0 / 5});
  expectShares(task.fastPAtK.at(1), {4.0 / 5, 2.0 / 5, 1.0 / 5, 1.0 / 5}); // pass@1 = c/n
  // pass@2: fast_0 1 - C(1,2)/C(5,2) = 1 (n - c < k); fast_1 1 - C(3,2)/C(5,2) = 1 - 3/10;
  // fast_1.5 and fast_2 1 - C(4,2)/C(5,2) = 1 - 6/10.
  expectShares(task.fastPAtK.at(2), {1.0, 0.7, 0.4, 0.4});
  expectShares(task.fastPAtK.at(5), {1.0, 1.0, 1.0, 1.0}); // n - c < 5 for every c >= 1
  EXPECT_EQ(metrics.rounds, 1);
  // With one round the figures "after R rounds" are the first attempts'.
  EXPECT_EQ(task.fastPAfterRounds, task.fastP);
}

// --- correct@1 counts first attempts only -------------------------------------------------

// Every first attempt fails and every repair is correct: correct@1 is 0, not
// 100%; the repairs show as correct@1 after 2 rounds.
TEST(MetricsRounds, CorrectAt1IsFromFirstAttemptsOnly) {
  RunData run = makeRun(41, "vector_add", nullptr);
  for (int slot = 0; slot < 4; ++slot) {
    addAttempt(run, attempt(1, slot, slot % 2 ? "wrong" : "lint-error"));
    addAttempt(run, attempt(2, slot).kind("repair"));
  }
  MetricsOptions options;
  options.ks = {1, 2};
  options.rounds = 2;
  EvalMetrics metrics = evalMetrics({run}, {1}, options);
  const GroupMetrics &all = metrics.overall;
  EXPECT_EQ(all.samples, 4);
  expectRate(all.correctAtK.at(1), 0.0);
  expectRate(all.correctAtK.at(2), 0.0);
  expectRate(all.lintAtK.at(1), 0.5); // the two wrong ones linted clean
  expectShares(all.fastP, {0.0, std::nullopt, std::nullopt, std::nullopt}); // nothing timed
  expectRate(all.correctAtKAfterRounds.at(1), 1.0);
  expectShares(all.fastPAfterRounds, {1.0, std::nullopt, std::nullopt, std::nullopt});
  EXPECT_EQ(all.correctSamples, 4);
  EXPECT_FALSE(metrics.timed);
}

// --- samples without a completion ------------------------------------------------------------

TEST(MetricsNoCompletion, EveryKindOfMissingAnswerLeavesTheSampleOut) {
  RunData run = makeRun(51, "vector_add", nullptr);
  addAttempt(run, attempt(1, 0));                              // fine
  addAttempt(run, attempt(1, 1, "").completion("error"));      // the backend failed
  addAttempt(run, attempt(1, 2, "").completion("pending"));    // a batch answer not in yet
  addAttempt(run, attempt(1, 3, "").completion("none"));       // asked, never answered (killed)
  addAttempt(run, attempt(1, 4, "").unjudged());               // answered, never checked
  addAttempt(run, attempt(1, 5, "").kind("skeleton"));         // skeleton answered, its fill never sent
  addAttempt(run, attempt(1, 6, "wrong"));                     // fine
  // Slot 7 was never asked at all (an interrupted run): 8 samples were asked for.
  MetricsOptions options;
  options.samples = 8;
  TaskMetrics task = taskMetrics(run, 1, options);
  ASSERT_EQ(task.sampleOutcomes.size(), 8u);
  std::vector<std::optional<std::string>> reasons;
  for (const SampleOutcome &sample : task.sampleOutcomes) reasons.push_back(sample.noCompletion);
  EXPECT_EQ(reasons, (std::vector<std::optional<std::string>>{std::nullopt, "error", "pending", "unasked", "unjudged",
                                                               "unasked", std::nullopt, "unasked"}));
  EXPECT_EQ(task.samples, 2);
  EXPECT_EQ(task.noCompletion, 6);
  EXPECT_EQ(task.noCompletionReasons, (Counts{{"error", 1}, {"pending", 1}, {"unasked", 3}, {"unjudged", 1}}));
  expectRate(task.correctAtK.at(1), 0.5); // 1 of the 2 scored, not 1 of 8
  EXPECT_EQ(task.stages, (Counts{{"untimed", 1}, {"correctness", 1}}));
}

// A pending batch eval: nothing is answered yet, so every figure is n/a (null), not 0%.
TEST(MetricsNoCompletion, PendingEvalHasNoFiguresAtAll) {
  RunData run = makeRun(52, "vector_add", nullptr);
  for (int slot = 0; slot < 3; ++slot) addAttempt(run, attempt(1, slot, "").completion("pending"));
  MetricsOptions options;
  options.ks = {1, 2};
  EvalMetrics metrics = evalMetrics({run}, {1}, options);
  const GroupMetrics &all = metrics.overall;
  EXPECT_EQ(all.samples, 0);
  EXPECT_EQ(all.noCompletion, 3);
  EXPECT_EQ(all.correctAtK.at(1), std::nullopt);
  EXPECT_EQ(all.lintAtK.at(2), std::nullopt);
  expectShares(all.fastP, {std::nullopt, std::nullopt, std::nullopt, std::nullopt});
  expectShares(all.fastPAtK.at(1), {std::nullopt, std::nullopt, std::nullopt, std::nullopt});
  json document = toJson(metrics);
  EXPECT_TRUE(document["overall"]["correct_at_k"]["1"].is_null());
  EXPECT_TRUE(document["overall"]["fast_p"]["0"].is_null());
  EXPECT_EQ(document["overall"]["no_completion"], 3);
}

// A task with no scored sample is left out of the means over tasks, not counted as 0.
TEST(MetricsNoCompletion, TasksWithoutScoredSamplesAreNotAveragedIn) {
  RunData solved = makeRun(53, "vector_add", nullptr);
  addAttempt(solved, attempt(1, 0));
  addAttempt(solved, attempt(1, 1));
  RunData dead = makeRun(54, "relu", nullptr);
  addAttempt(dead, attempt(1, 0, "").completion("error"));
  addAttempt(dead, attempt(1, 1, "").completion("error"));
  MetricsOptions options;
  options.samples = 2;
  EvalMetrics metrics = evalMetrics({solved, dead}, {1, 1}, options, {{"gelu", 2}});
  ASSERT_EQ(metrics.tasks.size(), 3u);
  expectRate(metrics.overall.correctAtK.at(1), 1.0);
  EXPECT_EQ(metrics.overall.tasks, 3);
  EXPECT_EQ(metrics.overall.samples, 2);
  EXPECT_EQ(metrics.overall.noCompletion, 4); // relu's 2 and gelu's 2
  // The task that did not run: all its samples unasked, no run.
  const TaskMetrics &gelu = metrics.tasks[2];
  EXPECT_EQ(gelu.task, "gelu");
  EXPECT_EQ(gelu.level, 2);
  EXPECT_EQ(gelu.runId, 0);
  EXPECT_EQ(gelu.noCompletionReasons, (Counts{{"unasked", 2}}));
  EXPECT_EQ(toJson(metrics)["tasks"][2]["run"], nullptr);
  ASSERT_EQ(metrics.levels.size(), 2u);
  EXPECT_EQ(metrics.levels[1].correctAtK.at(1), std::nullopt);
}

// --- JSON ------------------------------------------------------------------------

std::set<std::string> keysOf(const json &object) {
  std::set<std::string> keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.insert(it.key());
  return keys;
}

TEST(MetricsJson, KeysAsDocumented) {
  json document = toJson(handMetrics());
  EXPECT_EQ(keysOf(document), (std::set<std::string>{"ks", "rounds", "timed", "overall", "levels", "tasks"}));
  EXPECT_EQ(document["ks"], json({1, 2, 4}));
  EXPECT_EQ(document["rounds"], 2);
  EXPECT_EQ(document["timed"], true);

  const std::set<std::string> groupKeys = {
      "name", "tasks", "samples", "no_completion", "no_completion_reasons", "lint_at_k", "compile_at_k",
      "correct_at_k", "fast_p", "fast_p_low", "fast_p_at_k", "after_rounds", "geomean_speedup", "register_ratio",
      "instruction_ratio", "correct_samples", "spilling_where_nvcc_does_not", "stages", "diagnostic_codes"};
  EXPECT_EQ(keysOf(document["overall"]), groupKeys);
  ASSERT_EQ(document["levels"].size(), 2u);
  for (const json &level : document["levels"]) EXPECT_EQ(keysOf(level), groupKeys);
  EXPECT_EQ(document["levels"][0]["name"], "L1");

  const json &overall = document["overall"];
  EXPECT_EQ(keysOf(overall["fast_p"]), (std::set<std::string>{"0", "1", "1.5", "2"}));
  EXPECT_EQ(keysOf(overall["fast_p_low"]), (std::set<std::string>{"1", "1.5", "2"}));
  EXPECT_EQ(keysOf(overall["fast_p_at_k"]), (std::set<std::string>{"1", "2", "4"}));
  EXPECT_EQ(keysOf(overall["fast_p_at_k"]["2"]), (std::set<std::string>{"0", "1", "1.5", "2"}));
  EXPECT_EQ(keysOf(overall["after_rounds"]), (std::set<std::string>{"rounds", "correct_at_k", "fast_p", "fast_p_low"}));
  EXPECT_EQ(overall["after_rounds"]["rounds"], 2);
  EXPECT_EQ(overall["no_completion"], 3);
  EXPECT_EQ(overall["no_completion_reasons"], json({{"error", 2}, {"pending", 1}}));
  EXPECT_TRUE(overall["correct_at_k"]["4"].is_null());

  ASSERT_EQ(document["tasks"].size(), 3u);
  const std::set<std::string> taskKeys = {
      "task", "level", "run", "samples", "no_completion", "no_completion_reasons", "lint_passed", "compile_passed",
      "correct", "lint_at_k", "compile_at_k", "correct_at_k", "fast_p", "fast_p_low", "fast_p_at_k", "after_rounds",
      "best_speedup", "geomean_speedup", "timed", "speedup_spread", "instruction_spread", "nvcc", "register_ratio",
      "instruction_ratio", "spilling_where_nvcc_does_not", "stages", "diagnostic_codes", "sample_outcomes"};
  for (const json &task : document["tasks"]) EXPECT_EQ(keysOf(task), taskKeys);

  const json &a = document["tasks"][0];
  EXPECT_EQ(a["task"], "vector_add");
  EXPECT_EQ(a["run"], 11);
  EXPECT_EQ(a["samples"], 3);
  EXPECT_EQ(a["no_completion"], 1);
  EXPECT_EQ(a["correct"], 1);
  EXPECT_EQ(a["after_rounds"]["correct"], 2);
  EXPECT_EQ(a["nvcc"], json({{"registers", 16}, {"instructions", 20}, {"spill_bytes", 0}}));
  ASSERT_EQ(a["sample_outcomes"].size(), 4u);
  EXPECT_EQ(a["sample_outcomes"][1],
            json({{"slot", 1}, {"no_completion", nullptr}, {"lint", true}, {"compile", true}, {"correct", true},
                  {"speedup", 0.8}, {"speedup_low", nullptr},
                  {"after_rounds",
                   {{"lint", true}, {"compile", true}, {"correct", true}, {"speedup", 1.6}, {"speedup_low", 1.4}}},
                  {"registers", 32}, {"sass_instructions", 45}, {"spill_bytes", 16}, {"attempts", 2}}));
  EXPECT_EQ(a["sample_outcomes"][3]["no_completion"], "error");

  // One round: no "after R rounds" figures anywhere.
  json one = toJson(evalMetrics({timedRun(34, {{{1.5, 1.2, 1.8}}})}, {1}, MetricsOptions{}));
  EXPECT_EQ(one["rounds"], 1);
  EXPECT_TRUE(one["overall"]["after_rounds"].is_null());
  EXPECT_TRUE(one["tasks"][0]["after_rounds"].is_null());
  EXPECT_TRUE(one["tasks"][0]["sample_outcomes"][0]["after_rounds"].is_null());
  EXPECT_EQ(one["tasks"][0]["sample_outcomes"][0]["speedup_low"], 1.2);
}

TEST(MetricsJson, NumbersSurviveARoundTrip) {
  EvalMetrics metrics = handMetrics();
  json parsed = json::parse(toJson(metrics).dump());
  // Doubles are written with enough digits to read back bit for bit.
  EXPECT_EQ(parsed["overall"]["geomean_speedup"].get<double>(), *metrics.overall.geomeanSpeedup);
  EXPECT_EQ(parsed["overall"]["register_ratio"].get<double>(), *metrics.overall.registerRatio);
  EXPECT_EQ(parsed["overall"]["lint_at_k"]["1"].get<double>(), *metrics.overall.lintAtK.at(1));
  EXPECT_EQ(parsed["overall"]["fast_p"]["1.5"].get<double>(), *metrics.overall.fastP.at(1.5));
  EXPECT_EQ(parsed["tasks"][0]["geomean_speedup"].get<double>(), *metrics.tasks[0].geomeanSpeedup);
  EXPECT_EQ(parsed["tasks"][0]["correct_at_k"]["2"].get<double>(), *metrics.tasks[0].correctAtK.at(2));
  EXPECT_EQ(parsed, toJson(metrics));
}

TEST(MetricsJson, NoRunsAtAll) {
  EvalMetrics metrics = evalMetrics({}, {}, MetricsOptions{});
  json document = toJson(metrics);
  EXPECT_EQ(document["overall"]["tasks"], 0);
  EXPECT_TRUE(document["overall"]["correct_at_k"]["1"].is_null());
  EXPECT_TRUE(document["overall"]["fast_p"]["0"].is_null());
  EXPECT_EQ(document["levels"], json::array());
  EXPECT_EQ(document["tasks"], json::array());
  EXPECT_EQ(document["timed"], false);
}

// --- odd records -------------------------------------------------------------------

TEST(MetricsRobustness, OddJsonCountsAsAbsent) {
  RunData run = makeRun(21, "odd", nullptr);
  run.run.summary = json::array({1, 2, 3}); // not an object: no reference
  addAttempt(run, attempt(1, 0).speedup(std::numeric_limits<double>::quiet_NaN()));
  run.attempts.back().result->result = "not an object";
  addAttempt(run, attempt(1, 1, "wrong"));
  run.attempts.back().result->result = {{"diagnostics", {{"code", "x"}}}, {"stage", 7}};
  addAttempt(run, attempt(1, 2, "lint-error"));
  run.attempts.back().result->result = {{"diagnostics", json::array({"code", 3, nullptr, {{"code", 5}}})}};

  TaskMetrics metrics;
  ASSERT_NO_THROW(metrics = taskMetrics(run, 2, MetricsOptions{}));
  EXPECT_EQ(metrics.samples, 3);
  EXPECT_EQ(metrics.correct, 1);
  const SampleOutcome &nan = metrics.sampleOutcomes[0];
  EXPECT_TRUE(nan.first.correct);
  EXPECT_EQ(nan.first.speedup, std::nullopt); // NaN is no speedup
  EXPECT_EQ(nan.registers, std::nullopt);
  EXPECT_EQ(nan.sassInstructions, std::nullopt);
  EXPECT_EQ(nan.spillBytes, std::nullopt);
  EXPECT_FALSE(metrics.timed);
  EXPECT_EQ(metrics.bestSpeedup, std::nullopt);
  EXPECT_EQ(metrics.nvccRegisters, std::nullopt);
  EXPECT_EQ(metrics.nvccSpillBytes, std::nullopt);
  EXPECT_TRUE(metrics.diagnosticCodes.empty());
  EXPECT_EQ(metrics.stages, (Counts{{"untimed", 1}, {"correctness", 1}, {"lint", 1}}));
  EXPECT_NO_THROW((void)toJson(evalMetrics({run}, {2}, MetricsOptions{})).dump());
}

TEST(MetricsRobustness, OddReferenceAndResources) {
  RunData run = makeRun(22, "odd", nullptr);
  run.run.summary["reference"] = {{"registers", "16"}, {"spill_store_bytes", -4}, {"spill_load_bytes", 0},
                                  {"sass", 20}};
  addAttempt(run, attempt(1, 0).speedup(1.5).registers(12).sass(30));
  store::ResultRecord &result = *run.attempts.back().result;
  result.registers.reset(); // only the JSON is left, and it says unknown
  result.result["resources"]["known"] = false;
  result.result["sass"] = {{"instructions", 30.5}};
  addAttempt(run, attempt(1, 1).speedup(std::numeric_limits<double>::infinity()));
  addAttempt(run, attempt(1, 2).speedup(-1.0));

  TaskMetrics metrics = taskMetrics(run, 1, MetricsOptions{});
  EXPECT_EQ(metrics.nvccRegisters, std::nullopt);
  EXPECT_EQ(metrics.nvccInstructions, std::nullopt);
  EXPECT_EQ(metrics.nvccSpillBytes, std::nullopt);
  EXPECT_EQ(metrics.sampleOutcomes[0].registers, std::nullopt);
  EXPECT_EQ(metrics.sampleOutcomes[0].sassInstructions, std::nullopt);
  EXPECT_EQ(metrics.sampleOutcomes[0].spillBytes, std::nullopt);
  EXPECT_EQ(metrics.sampleOutcomes[0].first.speedup, 1.5);
  // Infinite and negative speedups cannot enter a geometric mean: untimed.
  EXPECT_EQ(metrics.sampleOutcomes[1].first.speedup, std::nullopt);
  EXPECT_EQ(metrics.sampleOutcomes[2].first.speedup, std::nullopt);
  expectRate(metrics.geomeanSpeedup, 1.5);
  EXPECT_EQ(metrics.registerRatio, std::nullopt);
}

TEST(MetricsRobustness, DuplicateWithoutResultTakesItsOriginals) {
  RunData run = makeRun(23, "dup", nullptr);
  int64_t original = addAttempt(run, attempt(1, 0).speedup(1.1));
  addAttempt(run, attempt(1, 1, "").duplicateOf(original));
  // A hand-edited cycle: a duplicate of itself, never resolved.
  int64_t self = addAttempt(run, attempt(1, 2, ""));
  run.attempts.back().candidate->duplicateOf = self;
  // A duplicate of a candidate that is not in the run.
  addAttempt(run, attempt(1, 3, "").duplicateOf(999999));

  TaskMetrics metrics = taskMetrics(run, 1, MetricsOptions{});
  EXPECT_TRUE(metrics.sampleOutcomes[1].first.correct);
  EXPECT_EQ(metrics.sampleOutcomes[1].first.speedup, 1.1);
  // A duplicate whose original cannot be found was never judged: left out, like an unchecked answer.
  EXPECT_EQ(metrics.sampleOutcomes[2].noCompletion, "unjudged");
  EXPECT_EQ(metrics.sampleOutcomes[3].noCompletion, "unjudged");
  EXPECT_EQ(metrics.samples, 2);
  EXPECT_EQ(metrics.correct, 2);
  EXPECT_EQ(metrics.stages, (Counts{{"faster", 2}}));
}

TEST(MetricsRobustness, EmptyRun) {
  RunData run = makeRun(24, "empty", nullptr);
  MetricsOptions options;
  options.ks = {1, 2};
  TaskMetrics metrics = taskMetrics(run, 1, options);
  EXPECT_EQ(metrics.samples, 0);
  EXPECT_EQ(metrics.correctAtK.at(1), std::nullopt); // n = 0 < 1
  EXPECT_FALSE(metrics.timed);
  EXPECT_TRUE(metrics.sampleOutcomes.empty());
  // Asked for 2 samples and none was recorded: both unasked.
  options.samples = 2;
  metrics = taskMetrics(run, 1, options);
  EXPECT_EQ(metrics.noCompletion, 2);
  EXPECT_EQ(metrics.noCompletionReasons, (Counts{{"unasked", 2}}));
}

} // namespace
} // namespace ptxforge::eval
