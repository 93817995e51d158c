// Eval metrics: how well a model writes PTX, computed from what the run store
// recorded for one solve run per task (each run's slots are the task's
// independent samples; its rounds are the repair/optimize turns).
//
// Definitions (docs/eval.md):
//   sample      one slot of a task's run: its attempts over all rounds.
//   reached     a sample reached a stage when any of its attempts got past it:
//                 lint     the verdict is neither no-ptx nor lint-error (the
//                          module parsed and linted clean)
//                 compile  ... nor compile-error
//                 correct  the verdict is correct
//               (a duplicate counts with the verdict it copied).
//   pass@k      unbiased estimator from n samples of which c reached the stage:
//                 1 - C(n-c, k) / C(n, k)   (1 when n - c < k), null when n < k.
//               Per group: the mean over the group's tasks.
//   speedup     of a correct sample: the best median speedup over nvcc (the
//               task's largest shape) among its correct attempts. None on the
//               emulator, which does not time.
//   fast_p      share of the group's tasks with a correct sample whose speedup
//               is >= p. fast_0 is the share with any correct sample (speed not
//               needed); fast_p for p > 0 is null when no task of the group was
//               timed.
//   geomean     geometric mean of the speedups of all correct, timed samples of
//               the task (per group: of the group's tasks' samples).
//   resources   of each correct sample's best attempt against nvcc's reference
//               (the run summary's "reference"): registers, spill bytes
//               (stores + loads) and SASS instruction count; reported as the
//               geometric mean of candidate/nvcc ratios (registers,
//               instructions), and the share of correct samples that spill
//               when nvcc's kernel does not.
//   stability   per task, across correct samples: Spread of speedups and of
//               SASS instruction counts (support/Stats.h spreadOf).
//   taxonomy    over every attempt of every sample: counts per funnel stage
//               (report::funnelStage: where the attempt stopped) and per
//               diagnostic code of failed attempts (each code counted once
//               per attempt it appears in).
#pragma once

#include "store/Store.h"
#include "support/Result.h"
#include "support/Stats.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ptxforge::eval {

/// The thresholds fast_p is reported for.
inline const std::vector<double> kFastThresholds = {0.0, 1.0, 1.5, 2.0};

/// One sample (slot) of one task, summarized over its rounds.
struct SampleOutcome {
  int slot = 0;
  bool lint = false, compile = false, correct = false; ///< reached (see above)
  std::optional<double> speedup;                       ///< best over its correct, timed attempts
  std::optional<int> registers;                        ///< of the attempt `speedup` (or the first correct one) came from
  std::optional<int> sassInstructions;
  std::optional<int> spillBytes;                       ///< spill stores + loads
  int attempts = 0;
};

/// Rates for each k of EvalOptions::ks: k → pass@k (nullopt when n < k).
using PassAtK = std::map<int, std::optional<double>>;

/// One task.
struct TaskMetrics {
  std::string task;
  int level = 0;
  int64_t runId = 0;
  int samples = 0;                          ///< n
  int lintPassed = 0, compilePassed = 0, correct = 0; ///< c per stage
  PassAtK lintAtK, compileAtK, correctAtK;
  std::optional<double> bestSpeedup;        ///< max over correct samples
  std::optional<double> geomeanSpeedup;
  bool timed = false;                       ///< some correct sample has a speedup
  std::optional<Spread> speedupSpread;      ///< over correct, timed samples
  std::optional<Spread> instructionSpread;  ///< over correct samples with SASS counts
  // nvcc's reference (run summary "reference"); none when it is missing.
  std::optional<int> nvccRegisters, nvccInstructions, nvccSpillBytes;
  std::optional<double> registerRatio;      ///< geomean over correct samples of registers / nvcc's
  std::optional<double> instructionRatio;   ///< same for SASS instructions
  int spillingWhereNvccDoesNot = 0;         ///< correct samples with spills when nvcc has none
  std::map<std::string, int> stages;        ///< taxonomy: funnel stage → attempts
  std::map<std::string, int> diagnosticCodes; ///< taxonomy: code → failed attempts it appears in
  std::vector<SampleOutcome> sampleOutcomes;
};

/// A level ("L1", "L2", "L3") or everything ("overall").
struct GroupMetrics {
  std::string name;
  int tasks = 0;
  int samples = 0;
  PassAtK lintAtK, compileAtK, correctAtK;       ///< means over the group's tasks (nullopt if any task has n < k)
  std::map<double, std::optional<double>> fastP; ///< p → share of tasks (see above)
  std::optional<double> geomeanSpeedup;
  std::optional<double> registerRatio, instructionRatio;
  int correctSamples = 0;
  int spillingWhereNvccDoesNot = 0;
  std::map<std::string, int> stages;
  std::map<std::string, int> diagnosticCodes;
};

struct EvalMetrics {
  std::vector<int> ks;               ///< the k of pass@k, ascending
  std::vector<TaskMetrics> tasks;    ///< in suite order
  std::vector<GroupMetrics> levels;  ///< "L1", "L2", "L3" (levels with tasks only), ascending
  GroupMetrics overall;              ///< name "overall"
  bool timed = false;                ///< some task was timed (a GPU eval)
};

/// The unbiased pass@k estimator; nullopt when n < k. n, c >= 0, c <= n, k >= 1.
std::optional<double> passAtK(int n, int c, int k);

/// One task's figures from its run. `level` is the task's level.
TaskMetrics taskMetrics(const store::RunData &run, int level, const std::vector<int> &ks);

/// Everything, from one run per task (same order as `levels`).
EvalMetrics evalMetrics(const std::vector<store::RunData> &runs, const std::vector<int> &levels,
                        const std::vector<int> &ks);

/// The metrics as JSON, keys as in docs/eval.md:
///   {"ks": [...], "timed": bool,
///    "overall": GROUP, "levels": [GROUP...], "tasks": [TASK...]}
///   GROUP = {"name", "tasks", "samples", "lint_at_k": {"1": x|null, ...},
///            "compile_at_k", "correct_at_k", "fast_p": {"0": x|null, "1": ..., "1.5": ..., "2": ...},
///            "geomean_speedup", "register_ratio", "instruction_ratio", "correct_samples",
///            "spilling_where_nvcc_does_not", "stages": {...}, "diagnostic_codes": {...}}
///   TASK  = {"task", "level", "run", "samples", "lint_passed", "compile_passed", "correct",
///            "lint_at_k", "compile_at_k", "correct_at_k", "best_speedup", "geomean_speedup",
///            "timed", "speedup_spread": SPREAD|null, "instruction_spread": SPREAD|null,
///            "nvcc": {"registers", "instructions", "spill_bytes"}, "register_ratio",
///            "instruction_ratio", "spilling_where_nvcc_does_not", "stages", "diagnostic_codes",
///            "sample_outcomes": [{"slot", "lint", "compile", "correct", "speedup",
///                                 "registers", "sass_instructions", "spill_bytes", "attempts"}]}
///   SPREAD = {"median", "p10", "p90", "min", "max", "samples"}
/// Absent values are null, never invented.
nlohmann::json toJson(const EvalMetrics &metrics);

} // namespace ptxforge::eval
