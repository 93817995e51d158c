// Eval metrics against values worked out by hand: the pass@k estimator, three
// hand-built runs (two timed L1 tasks, one untimed L3 task) checked field by
// field per task, per level and overall, the JSON keys, and stored records
// that are odd or broken.
#include "eval/Metrics.h"
#include "verify/Check.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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
/// than "complete" means no candidate; verdict "no-ptx" means a candidate whose
/// extraction failed.
struct AttemptSpec {
  int round = 1;
  int slot = 0;
  std::string kindName = "initial";
  std::string verdict = "correct";
  std::optional<double> speedupValue;
  std::optional<int> registerCount;
  std::optional<int> sassInstructions;
  int spillStoreBytes = 0, spillLoadBytes = 0;
  std::vector<std::string> diagnosticCodes;
  std::optional<int64_t> duplicateOfId;
  std::string completionStatus = "complete";
  std::string stageName; ///< result["stage"]; "" picks the one the verdict implies

  AttemptSpec &kind(std::string value) { kindName = std::move(value); return *this; }
  AttemptSpec &speedup(double value) { speedupValue = value; return *this; }
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
  row.completion = store::CompletionRecord{};
  row.completion->promptId = row.prompt.id;
  row.completion->status = spec.completionStatus;
  if (spec.completionStatus != "complete") {
    row.completion->error = "HTTP 500";
    run.attempts.push_back(std::move(row));
    return 0;
  }
  row.completion->text = "```ptx\n.version 8.0\n```";
  if (spec.kindName == "skeleton") { // the first half of a skeleton attempt has no candidate
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

/// Task A, level 1, timed, 4 samples. nvcc: 16 registers, 20 SASS
/// instructions, no spills.
///   slot 0: (skeleton prompt, ignored) compile-error -> correct 1.2x, 8 regs, 40 instr
///   slot 1: correct 0.8x (40 regs, 100 instr) -> optimize: correct 1.6x, 32 regs, 45 instr, 16 B spill
///   slot 2: lint-error -> wrong
///   slot 3: no completion -> no PTX
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
  addAttempt(run, attempt(2, 0).kind("repair").speedup(1.2).registers(8).sass(40).codes({"unused-register"}));
  addAttempt(run, attempt(2, 1).kind("optimize").speedup(1.6).registers(32).sass(45).spill(8, 8));
  addAttempt(run, attempt(2, 2, "wrong").kind("repair").codes({"undeclared-register"}));
  addAttempt(run, attempt(2, 3, "no-ptx"));
  return run;
}

/// Task B, level 1, timed, 3 samples. nvcc: 32 registers, no SASS counts,
/// 4 B of spill stores.
///   slot 0: correct 2.5x, 40 regs, 200 instr, 8 B spill
///   slot 1: a duplicate of slot 0's candidate (its result copied)
///   slot 2: timeout -> not-verified after the gate reached "execute"
RunData taskB() {
  RunData run = makeRun(12, "softmax",
                        {{"registers", 32}, {"spill_store_bytes", 4}, {"spill_load_bytes", 0}, {"shared_bytes", 0},
                         {"stack_bytes", 0}, {"sass", nullptr}, {"timing_ms", nullptr}});
  int64_t original = addAttempt(run, attempt(1, 0).speedup(2.5).registers(40).sass(200).spill(8, 0));
  addAttempt(run, attempt(1, 1).speedup(2.5).registers(40).sass(200).spill(8, 0).duplicateOf(original));
  addAttempt(run, attempt(1, 2, "timeout"));
  addAttempt(run, attempt(2, 2, "not-verified").kind("repair").codes({"emu-unsupported"}).stage("execute"));
  return run;
}

/// Task C, level 3, on the emulator (untimed), 3 samples, no nvcc reference.
///   slot 0: correct, untimed, 10 regs, 50 instr
///   slot 1: not-verified at "lint" -> rejected (timer read, at lint)
///   slot 2: only a skeleton request, which failed
RunData taskC() {
  RunData run = makeRun(13, "relu", nullptr);
  addAttempt(run, attempt(1, 0).registers(10).sass(50));
  addAttempt(run, attempt(1, 1, "not-verified").codes({"emu-unsupported"}).stage("lint"));
  addAttempt(run, attempt(1, 2, "").kind("skeleton").completion("error"));
  addAttempt(run, attempt(2, 1, "rejected").kind("repair").codes({"timer-read"}).stage("lint"));
  return run;
}

EvalMetrics handMetrics() {
  // Unsorted, repeated and invalid k are normalized to {1, 2, 4}.
  return evalMetrics({taskA(), taskB(), taskC()}, {1, 1, 3}, {4, 1, 2, 2, 0});
}

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

void expectSample(const SampleOutcome &sample, int slot, bool lint, bool compile, bool correct,
                  std::optional<double> speedup, std::optional<int> registers, std::optional<int> instructions,
                  std::optional<int> spill, int attempts) {
  SCOPED_TRACE("slot " + std::to_string(slot));
  EXPECT_EQ(sample.slot, slot);
  EXPECT_EQ(sample.lint, lint);
  EXPECT_EQ(sample.compile, compile);
  EXPECT_EQ(sample.correct, correct);
  EXPECT_EQ(sample.speedup, speedup);
  EXPECT_EQ(sample.registers, registers);
  EXPECT_EQ(sample.sassInstructions, instructions);
  EXPECT_EQ(sample.spillBytes, spill);
  EXPECT_EQ(sample.attempts, attempts);
}

using Counts = std::map<std::string, int>;

TEST(MetricsTask, TimedTaskWithRepairsAndFailures) {
  EvalMetrics metrics = handMetrics();
  ASSERT_EQ(metrics.tasks.size(), 3u);
  const TaskMetrics &a = metrics.tasks[0];
  EXPECT_EQ(a.task, "vector_add");
  EXPECT_EQ(a.level, 1);
  EXPECT_EQ(a.runId, 11);

  ASSERT_EQ(a.sampleOutcomes.size(), 4u);
  // Slot 0: the repair is correct. Slot 1: the 1.6x optimize beats 0.8x and
  // brings its resources. The skeleton prompt is no attempt.
  expectSample(a.sampleOutcomes[0], 0, true, true, true, 1.2, 8, 40, 0, 2);
  expectSample(a.sampleOutcomes[1], 1, true, true, true, 1.6, 32, 45, 16, 2);
  expectSample(a.sampleOutcomes[2], 2, true, true, false, std::nullopt, std::nullopt, std::nullopt, std::nullopt, 2);
  expectSample(a.sampleOutcomes[3], 3, false, false, false, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
               2);

  EXPECT_EQ(a.samples, 4);
  EXPECT_EQ(a.lintPassed, 3);
  EXPECT_EQ(a.compilePassed, 3);
  EXPECT_EQ(a.correct, 2);
  // n = 4: lint/compile c = 3, correct c = 2.
  expectRate(a.lintAtK.at(1), 0.75);       // 3/4
  expectRate(a.compileAtK.at(1), 0.75);
  expectRate(a.correctAtK.at(1), 0.5);     // 2/4
  expectRate(a.lintAtK.at(2), 1.0);        // n - c = 1 < 2
  expectRate(a.compileAtK.at(2), 1.0);
  expectRate(a.correctAtK.at(2), 5.0 / 6); // 1 - C(2,2)/C(4,2) = 1 - 1/6
  expectRate(a.lintAtK.at(4), 1.0);        // n - c = 1 < 4
  expectRate(a.compileAtK.at(4), 1.0);
  expectRate(a.correctAtK.at(4), 1.0);     // n - c = 2 < 4
  EXPECT_EQ(a.lintAtK.size(), 3u);

  EXPECT_TRUE(a.timed);
  expectRate(a.bestSpeedup, 1.6);
  expectRate(a.geomeanSpeedup, std::sqrt(1.2 * 1.6)); // = sqrt(1.92)
  // spreadOf {1.2, 1.6}: nearest rank index q*(2-1)+0.5 -> p10 0, median 1, p90 1.
  expectSpread(a.speedupSpread, 1.6, 1.2, 1.6, 1.2, 1.6, 2);
  expectSpread(a.instructionSpread, 45, 40, 45, 40, 45, 2);

  EXPECT_EQ(a.nvccRegisters, 16);
  EXPECT_EQ(a.nvccInstructions, 20);
  EXPECT_EQ(a.nvccSpillBytes, 0);
  expectRate(a.registerRatio, 1.0);                   // sqrt(8/16 * 32/16) = sqrt(0.5 * 2)
  expectRate(a.instructionRatio, std::sqrt(4.5));     // sqrt(40/20 * 45/20) = sqrt(2 * 2.25)
  EXPECT_EQ(a.spillingWhereNvccDoesNot, 1);           // slot 1 spills 16 B, nvcc 0 B

  // 8 attempts (the skeleton prompt is none): compile-error, 1.2x, 0.8x, 1.6x,
  // lint-error, wrong, no completion, no PTX.
  EXPECT_EQ(a.stages, (Counts{{"compile", 1}, {"faster", 2}, {"slower", 1}, {"lint", 1}, {"correctness", 1},
                              {"no-completion", 1}, {"extract", 1}}));
  // undeclared-register: twice in the lint-error (counted once) and in the
  // wrong attempt; unused-register is on a correct attempt.
  EXPECT_EQ(a.diagnosticCodes, (Counts{{"ptxas-error", 1}, {"undeclared-register", 2}, {"bad-type", 1}}));
}

TEST(MetricsTask, DuplicateAndNotVerified) {
  EvalMetrics metrics = handMetrics();
  const TaskMetrics &b = metrics.tasks[1];
  EXPECT_EQ(b.task, "softmax");
  EXPECT_EQ(b.level, 1);
  EXPECT_EQ(b.runId, 12);
  ASSERT_EQ(b.sampleOutcomes.size(), 3u);
  expectSample(b.sampleOutcomes[0], 0, true, true, true, 2.5, 40, 200, 8, 1);
  expectSample(b.sampleOutcomes[1], 1, true, true, true, 2.5, 40, 200, 8, 1); // the duplicate
  // timeout reached compile; not-verified at "execute" reached compile too.
  expectSample(b.sampleOutcomes[2], 2, true, true, false, std::nullopt, std::nullopt, std::nullopt, std::nullopt, 2);

  EXPECT_EQ(b.samples, 3);
  EXPECT_EQ(b.lintPassed, 3);
  EXPECT_EQ(b.compilePassed, 3);
  EXPECT_EQ(b.correct, 2);
  expectRate(b.lintAtK.at(1), 1.0);
  expectRate(b.compileAtK.at(1), 1.0);
  expectRate(b.correctAtK.at(1), 2.0 / 3); // 2/3
  expectRate(b.lintAtK.at(2), 1.0);
  expectRate(b.compileAtK.at(2), 1.0);
  expectRate(b.correctAtK.at(2), 1.0);     // n - c = 1 < 2
  EXPECT_EQ(b.lintAtK.at(4), std::nullopt); // n = 3 < 4
  EXPECT_EQ(b.compileAtK.at(4), std::nullopt);
  EXPECT_EQ(b.correctAtK.at(4), std::nullopt);

  EXPECT_TRUE(b.timed);
  expectRate(b.bestSpeedup, 2.5);
  expectRate(b.geomeanSpeedup, 2.5); // sqrt(2.5 * 2.5)
  expectSpread(b.speedupSpread, 2.5, 2.5, 2.5, 2.5, 2.5, 2);
  expectSpread(b.instructionSpread, 200, 200, 200, 200, 200, 2);
  EXPECT_EQ(b.nvccRegisters, 32);
  EXPECT_EQ(b.nvccInstructions, std::nullopt); // "sass": null
  EXPECT_EQ(b.nvccSpillBytes, 4);
  expectRate(b.registerRatio, 1.25);           // 40/32 twice
  EXPECT_EQ(b.instructionRatio, std::nullopt); // no nvcc count to divide by
  EXPECT_EQ(b.spillingWhereNvccDoesNot, 0);    // nvcc spills too
  EXPECT_EQ(b.stages, (Counts{{"faster", 2}, {"correctness", 1}, {"unverified", 1}}));
  EXPECT_EQ(b.diagnosticCodes, (Counts{{"emu-unsupported", 1}}));
}

TEST(MetricsTask, UntimedWithoutReference) {
  EvalMetrics metrics = handMetrics();
  const TaskMetrics &c = metrics.tasks[2];
  EXPECT_EQ(c.task, "relu");
  EXPECT_EQ(c.level, 3);
  EXPECT_EQ(c.runId, 13);
  ASSERT_EQ(c.sampleOutcomes.size(), 3u);
  // Correct but untimed: resources still come from the first correct attempt.
  expectSample(c.sampleOutcomes[0], 0, true, true, true, std::nullopt, 10, 50, 0, 1);
  // not-verified at "lint" reaches nothing, and so does "rejected" at "lint"
  // (the gate refuses a timer read before compiling): both go by their stage.
  expectSample(c.sampleOutcomes[1], 1, false, false, false, std::nullopt, std::nullopt, std::nullopt, std::nullopt, 2);
  // Only a failed skeleton request: a sample that reached nothing, no attempt.
  expectSample(c.sampleOutcomes[2], 2, false, false, false, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
               0);

  EXPECT_EQ(c.samples, 3);
  EXPECT_EQ(c.lintPassed, 1);
  EXPECT_EQ(c.compilePassed, 1);
  EXPECT_EQ(c.correct, 1);
  expectRate(c.lintAtK.at(1), 1.0 / 3);
  expectRate(c.compileAtK.at(1), 1.0 / 3);
  expectRate(c.correctAtK.at(1), 1.0 / 3);
  expectRate(c.lintAtK.at(2), 2.0 / 3);    // 1 - C(2,2)/C(3,2) = 1 - 1/3
  expectRate(c.compileAtK.at(2), 2.0 / 3);
  expectRate(c.correctAtK.at(2), 2.0 / 3); // 1 - C(2,2)/C(3,2) = 1 - 1/3
  EXPECT_EQ(c.correctAtK.at(4), std::nullopt);

  EXPECT_FALSE(c.timed);
  EXPECT_EQ(c.bestSpeedup, std::nullopt);
  EXPECT_EQ(c.geomeanSpeedup, std::nullopt);
  EXPECT_EQ(c.speedupSpread, std::nullopt);
  expectSpread(c.instructionSpread, 50, 50, 50, 50, 50, 1);
  EXPECT_EQ(c.nvccRegisters, std::nullopt);
  EXPECT_EQ(c.nvccInstructions, std::nullopt);
  EXPECT_EQ(c.nvccSpillBytes, std::nullopt);
  EXPECT_EQ(c.registerRatio, std::nullopt);
  EXPECT_EQ(c.instructionRatio, std::nullopt);
  EXPECT_EQ(c.spillingWhereNvccDoesNot, 0);
  EXPECT_EQ(c.stages, (Counts{{"untimed", 1}, {"unverified", 1}, {"correctness", 1}}));
  EXPECT_EQ(c.diagnosticCodes, (Counts{{"emu-unsupported", 1}, {"timer-read", 1}}));
}

TEST(MetricsGroup, LevelsAndOverall) {
  EvalMetrics metrics = handMetrics();
  EXPECT_EQ(metrics.ks, (std::vector<int>{1, 2, 4}));
  EXPECT_TRUE(metrics.timed);
  ASSERT_EQ(metrics.levels.size(), 2u); // no L2 task

  // L1 = tasks A and B.
  const GroupMetrics &l1 = metrics.levels[0];
  EXPECT_EQ(l1.name, "L1");
  EXPECT_EQ(l1.tasks, 2);
  EXPECT_EQ(l1.samples, 7);                      // 4 + 3
  expectRate(l1.lintAtK.at(1), 0.875);           // (0.75 + 1) / 2
  expectRate(l1.compileAtK.at(1), 0.875);
  expectRate(l1.correctAtK.at(1), 7.0 / 12);     // (1/2 + 2/3) / 2
  expectRate(l1.lintAtK.at(2), 1.0);
  expectRate(l1.compileAtK.at(2), 1.0);
  expectRate(l1.correctAtK.at(2), 11.0 / 12);    // (5/6 + 1) / 2
  EXPECT_EQ(l1.lintAtK.at(4), std::nullopt);     // B has n = 3 < 4
  EXPECT_EQ(l1.correctAtK.at(4), std::nullopt);
  ASSERT_EQ(l1.fastP.size(), 4u);
  expectRate(l1.fastP.at(0.0), 1.0);             // both have a correct sample
  expectRate(l1.fastP.at(1.0), 1.0);             // best 1.6 and 2.5 >= 1
  expectRate(l1.fastP.at(1.5), 1.0);             // 1.6 and 2.5 >= 1.5
  expectRate(l1.fastP.at(2.0), 0.5);             // only 2.5 >= 2
  expectRate(l1.geomeanSpeedup, std::pow(12.0, 0.25)); // (1.2 * 1.6 * 2.5 * 2.5)^(1/4) = 12^(1/4)
  expectRate(l1.registerRatio, std::sqrt(1.25));      // (0.5 * 2 * 1.25 * 1.25)^(1/4) = 1.5625^(1/4)
  expectRate(l1.instructionRatio, std::sqrt(4.5));    // A's (2 * 2.25)^(1/2); B has no nvcc count
  EXPECT_EQ(l1.correctSamples, 4);                    // 2 + 2
  EXPECT_EQ(l1.spillingWhereNvccDoesNot, 1);
  EXPECT_EQ(l1.stages, (Counts{{"compile", 1}, {"faster", 4}, {"slower", 1}, {"lint", 1}, {"correctness", 2},
                               {"no-completion", 1}, {"extract", 1}, {"unverified", 1}}));
  EXPECT_EQ(l1.diagnosticCodes, (Counts{{"ptxas-error", 1}, {"undeclared-register", 2}, {"bad-type", 1},
                                        {"emu-unsupported", 1}}));

  // L3 = task C only, untimed: fast_0 known, the speed thresholds null.
  const GroupMetrics &l3 = metrics.levels[1];
  EXPECT_EQ(l3.name, "L3");
  EXPECT_EQ(l3.tasks, 1);
  EXPECT_EQ(l3.samples, 3);
  expectRate(l3.lintAtK.at(1), 1.0 / 3);
  expectRate(l3.compileAtK.at(1), 1.0 / 3);
  expectRate(l3.correctAtK.at(1), 1.0 / 3);
  expectRate(l3.lintAtK.at(2), 2.0 / 3);
  expectRate(l3.correctAtK.at(2), 2.0 / 3);
  EXPECT_EQ(l3.correctAtK.at(4), std::nullopt);
  expectRate(l3.fastP.at(0.0), 1.0);
  EXPECT_EQ(l3.fastP.at(1.0), std::nullopt);
  EXPECT_EQ(l3.fastP.at(1.5), std::nullopt);
  EXPECT_EQ(l3.fastP.at(2.0), std::nullopt);
  EXPECT_EQ(l3.geomeanSpeedup, std::nullopt);
  EXPECT_EQ(l3.registerRatio, std::nullopt);
  EXPECT_EQ(l3.instructionRatio, std::nullopt);
  EXPECT_EQ(l3.correctSamples, 1);
  EXPECT_EQ(l3.spillingWhereNvccDoesNot, 0);
  EXPECT_EQ(l3.stages, (Counts{{"untimed", 1}, {"unverified", 1}, {"correctness", 1}}));
  EXPECT_EQ(l3.diagnosticCodes, (Counts{{"emu-unsupported", 1}, {"timer-read", 1}}));

  // Overall = A, B, C.
  const GroupMetrics &all = metrics.overall;
  EXPECT_EQ(all.name, "overall");
  EXPECT_EQ(all.tasks, 3);
  EXPECT_EQ(all.samples, 10);
  expectRate(all.lintAtK.at(1), 25.0 / 36);    // (27/36 + 36/36 + 12/36) / 3 = 75/108
  expectRate(all.compileAtK.at(1), 25.0 / 36);
  expectRate(all.correctAtK.at(1), 0.5);       // (1/2 + 2/3 + 1/3) / 3
  expectRate(all.lintAtK.at(2), 8.0 / 9);      // (1 + 1 + 2/3) / 3
  expectRate(all.compileAtK.at(2), 8.0 / 9);
  expectRate(all.correctAtK.at(2), 5.0 / 6);   // (5/6 + 6/6 + 4/6) / 3 = 15/18
  EXPECT_EQ(all.lintAtK.at(4), std::nullopt);
  EXPECT_EQ(all.compileAtK.at(4), std::nullopt);
  EXPECT_EQ(all.correctAtK.at(4), std::nullopt);
  expectRate(all.fastP.at(0.0), 1.0);          // all three have a correct sample
  expectRate(all.fastP.at(1.0), 2.0 / 3);      // A and B; C is untimed
  expectRate(all.fastP.at(1.5), 2.0 / 3);
  expectRate(all.fastP.at(2.0), 1.0 / 3);      // B
  expectRate(all.geomeanSpeedup, std::pow(12.0, 0.25));
  expectRate(all.registerRatio, std::sqrt(1.25)); // C has no reference
  expectRate(all.instructionRatio, std::sqrt(4.5));
  EXPECT_EQ(all.correctSamples, 5);
  EXPECT_EQ(all.spillingWhereNvccDoesNot, 1);
  EXPECT_EQ(all.stages, (Counts{{"compile", 1}, {"faster", 4}, {"slower", 1}, {"lint", 1}, {"correctness", 3},
                                {"no-completion", 1}, {"extract", 1}, {"unverified", 2}, {"untimed", 1}}));
  EXPECT_EQ(all.diagnosticCodes, (Counts{{"ptxas-error", 1}, {"undeclared-register", 2}, {"bad-type", 1},
                                         {"emu-unsupported", 2}, {"timer-read", 1}}));
}

TEST(MetricsGroup, UntimedEvalHasNoSpeedFigures) {
  EvalMetrics metrics = evalMetrics({taskC()}, {3}, {1});
  EXPECT_FALSE(metrics.timed);
  expectRate(metrics.overall.fastP.at(0.0), 1.0);
  EXPECT_EQ(metrics.overall.fastP.at(1.0), std::nullopt);
  EXPECT_EQ(metrics.overall.geomeanSpeedup, std::nullopt);
}

// --- JSON ------------------------------------------------------------------------

std::set<std::string> keysOf(const json &object) {
  std::set<std::string> keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.insert(it.key());
  return keys;
}

TEST(MetricsJson, KeysAsDocumented) {
  json document = toJson(handMetrics());
  EXPECT_EQ(keysOf(document), (std::set<std::string>{"ks", "timed", "overall", "levels", "tasks"}));
  EXPECT_EQ(document["ks"], json({1, 2, 4}));
  EXPECT_EQ(document["timed"], true);

  const std::set<std::string> groupKeys = {"name", "tasks", "samples", "lint_at_k", "compile_at_k", "correct_at_k",
                                           "fast_p", "geomean_speedup", "register_ratio", "instruction_ratio",
                                           "correct_samples", "spilling_where_nvcc_does_not", "stages",
                                           "diagnostic_codes"};
  EXPECT_EQ(keysOf(document["overall"]), groupKeys);
  ASSERT_EQ(document["levels"].size(), 2u);
  for (const json &level : document["levels"]) EXPECT_EQ(keysOf(level), groupKeys);
  EXPECT_EQ(document["levels"][0]["name"], "L1");
  EXPECT_EQ(document["levels"][1]["name"], "L3");

  const json &l3 = document["levels"][1];
  EXPECT_EQ(keysOf(l3["fast_p"]), (std::set<std::string>{"0", "1", "1.5", "2"}));
  EXPECT_EQ(l3["fast_p"]["0"], 1.0);
  EXPECT_TRUE(l3["fast_p"]["1"].is_null());
  EXPECT_TRUE(l3["fast_p"]["1.5"].is_null());
  EXPECT_TRUE(l3["geomean_speedup"].is_null());
  EXPECT_EQ(keysOf(l3["correct_at_k"]), (std::set<std::string>{"1", "2", "4"}));
  EXPECT_TRUE(l3["correct_at_k"]["4"].is_null());
  EXPECT_EQ(l3["stages"], json({{"untimed", 1}, {"unverified", 1}, {"correctness", 1}}));
  EXPECT_EQ(l3["diagnostic_codes"], json({{"emu-unsupported", 1}, {"timer-read", 1}}));

  ASSERT_EQ(document["tasks"].size(), 3u);
  const std::set<std::string> taskKeys = {
      "task", "level", "run", "samples", "lint_passed", "compile_passed", "correct", "lint_at_k", "compile_at_k",
      "correct_at_k", "best_speedup", "geomean_speedup", "timed", "speedup_spread", "instruction_spread", "nvcc",
      "register_ratio", "instruction_ratio", "spilling_where_nvcc_does_not", "stages", "diagnostic_codes",
      "sample_outcomes"};
  for (const json &task : document["tasks"]) EXPECT_EQ(keysOf(task), taskKeys);

  const json &a = document["tasks"][0];
  EXPECT_EQ(a["task"], "vector_add");
  EXPECT_EQ(a["level"], 1);
  EXPECT_EQ(a["run"], 11);
  EXPECT_EQ(a["samples"], 4);
  EXPECT_EQ(a["lint_passed"], 3);
  EXPECT_EQ(a["compile_passed"], 3);
  EXPECT_EQ(a["correct"], 2);
  EXPECT_EQ(a["timed"], true);
  EXPECT_EQ(a["nvcc"], json({{"registers", 16}, {"instructions", 20}, {"spill_bytes", 0}}));
  EXPECT_EQ(keysOf(a["speedup_spread"]), (std::set<std::string>{"median", "p10", "p90", "min", "max", "samples"}));
  EXPECT_EQ(a["speedup_spread"]["median"], 1.6);
  EXPECT_EQ(a["speedup_spread"]["samples"], 2);
  ASSERT_EQ(a["sample_outcomes"].size(), 4u);
  EXPECT_EQ(a["sample_outcomes"][1],
            json({{"slot", 1}, {"lint", true}, {"compile", true}, {"correct", true}, {"speedup", 1.6},
                  {"registers", 32}, {"sass_instructions", 45}, {"spill_bytes", 16}, {"attempts", 2}}));
  EXPECT_EQ(a["sample_outcomes"][3],
            json({{"slot", 3}, {"lint", false}, {"compile", false}, {"correct", false}, {"speedup", nullptr},
                  {"registers", nullptr}, {"sass_instructions", nullptr}, {"spill_bytes", nullptr},
                  {"attempts", 2}}));

  const json &c = document["tasks"][2];
  EXPECT_TRUE(c["best_speedup"].is_null());
  EXPECT_TRUE(c["geomean_speedup"].is_null());
  EXPECT_TRUE(c["speedup_spread"].is_null());
  EXPECT_FALSE(c["instruction_spread"].is_null());
  EXPECT_EQ(c["nvcc"], json({{"registers", nullptr}, {"instructions", nullptr}, {"spill_bytes", nullptr}}));
  EXPECT_TRUE(c["register_ratio"].is_null());
  EXPECT_TRUE(c["instruction_ratio"].is_null());
  EXPECT_EQ(c["timed"], false);
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
  EXPECT_EQ(parsed["tasks"][0]["instruction_ratio"].get<double>(), *metrics.tasks[0].instructionRatio);
  EXPECT_EQ(parsed["tasks"][1]["spilling_where_nvcc_does_not"].get<int>(), 0);
  EXPECT_EQ(parsed, toJson(metrics));
}

TEST(MetricsJson, NoRunsAtAll) {
  EvalMetrics metrics = evalMetrics({}, {}, {1});
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
  ASSERT_NO_THROW(metrics = taskMetrics(run, 2, {1}));
  EXPECT_EQ(metrics.samples, 3);
  EXPECT_EQ(metrics.correct, 1);
  const SampleOutcome &nan = metrics.sampleOutcomes[0];
  EXPECT_TRUE(nan.correct);
  EXPECT_EQ(nan.speedup, std::nullopt); // NaN is no speedup
  EXPECT_EQ(nan.registers, std::nullopt);
  EXPECT_EQ(nan.sassInstructions, std::nullopt);
  EXPECT_EQ(nan.spillBytes, std::nullopt);
  EXPECT_FALSE(metrics.timed);
  EXPECT_EQ(metrics.bestSpeedup, std::nullopt);
  EXPECT_EQ(metrics.nvccRegisters, std::nullopt);
  EXPECT_EQ(metrics.nvccSpillBytes, std::nullopt);
  EXPECT_TRUE(metrics.diagnosticCodes.empty());
  EXPECT_EQ(metrics.stages, (Counts{{"untimed", 1}, {"correctness", 1}, {"lint", 1}}));
  EXPECT_NO_THROW((void)toJson(evalMetrics({run}, {2}, {1})).dump());
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

  TaskMetrics metrics = taskMetrics(run, 1, {1});
  EXPECT_EQ(metrics.nvccRegisters, std::nullopt);
  EXPECT_EQ(metrics.nvccInstructions, std::nullopt);
  EXPECT_EQ(metrics.nvccSpillBytes, std::nullopt);
  EXPECT_EQ(metrics.sampleOutcomes[0].registers, std::nullopt);
  EXPECT_EQ(metrics.sampleOutcomes[0].sassInstructions, std::nullopt);
  EXPECT_EQ(metrics.sampleOutcomes[0].spillBytes, std::nullopt);
  EXPECT_EQ(metrics.sampleOutcomes[0].speedup, 1.5);
  // Infinite and negative speedups cannot enter a geometric mean: untimed.
  EXPECT_EQ(metrics.sampleOutcomes[1].speedup, std::nullopt);
  EXPECT_EQ(metrics.sampleOutcomes[2].speedup, std::nullopt);
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

  TaskMetrics metrics = taskMetrics(run, 1, {1});
  EXPECT_TRUE(metrics.sampleOutcomes[1].correct);
  EXPECT_EQ(metrics.sampleOutcomes[1].speedup, 1.1);
  EXPECT_FALSE(metrics.sampleOutcomes[2].lint);
  EXPECT_FALSE(metrics.sampleOutcomes[3].lint);
  EXPECT_EQ(metrics.correct, 2);
  EXPECT_EQ(metrics.stages, (Counts{{"faster", 2}, {"unverified", 2}}));
}

TEST(MetricsRobustness, EmptyRun) {
  RunData run = makeRun(24, "empty", nullptr);
  TaskMetrics metrics = taskMetrics(run, 1, {1, 2});
  EXPECT_EQ(metrics.samples, 0);
  EXPECT_EQ(metrics.correctAtK.at(1), std::nullopt); // n = 0 < 1
  EXPECT_FALSE(metrics.timed);
  EXPECT_TRUE(metrics.sampleOutcomes.empty());
}

} // namespace
} // namespace ptxforge::eval
