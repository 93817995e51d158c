// Eval metrics: how well a model writes PTX, computed from what the run store
// recorded for one solve run per task (each run's slots are the task's
// independent samples; its rounds are the repair/optimize turns).
//
// Definitions (docs/eval.md writes each as a formula):
//   sample      one slot of a task's run: one attempt per round, R rounds.
//   no completion
//               a sample one of whose requests got no answer for reasons of
//               infrastructure: the backend failed (connection, HTTP error
//               after retries, a replay miss, the exec program failed), the
//               answer is pending (batch), the request was never sent
//               (interrupted), or the answer was never checked. Such a sample
//               is left out of every figure below (numerators, denominators
//               and the taxonomy alike) and counted beside them. Only each
//               (round, slot)'s latest request counts: a resume that re-asks
//               a failed request supersedes what an earlier pass recorded.
//   n           the task's scored samples: those with every request answered.
//   first attempt
//               the sample's round-1 attempt, before any repair.
//   reached     an attempt reached a stage when it got past it:
//                 lint     the verdict is neither no-ptx nor lint-error
//                 compile  ... nor compile-error
//                 correct  the verdict is correct
//               (a duplicate counts with the verdict it copied).
//   pass@k      1 - C(n-c, k) / C(n, k) (1 when n - c < k), null when n < k.
//   lint@k, compile@k, correct@k
//               pass@k with c = samples whose FIRST attempt reached the
//               stage. Per group: the mean over the group's tasks with n > 0
//               (null when one of them has n < k).
//   speedup     of a correct attempt: its median speedup over nvcc on the
//               task's largest timed shape; speedup_low: the lower end of its
//               noise band (nvcc's p10 / the candidate's p90). None on the
//               emulator, which does not time.
//   fast_p      KernelBench's fast_p: over the group's scored samples, the
//               share whose first attempt is correct and has speedup > p
//               (strictly). fast_0 is the share of correct first attempts.
//               Null for p > 0 when the eval was not timed.
//   fast_p_low  the same with speedup_low > p (p > 0 only): a sample counts
//               only when even the slow end of its noise band beats p x nvcc.
//   fast_p@k    pass@k with c = samples whose first attempt is correct and
//               faster than p x nvcc; per group the mean over tasks (as
//               correct@k).
//   after R rounds
//               with R > 1, correct@k, fast_p and fast_p_low again, from each
//               sample's attempts over all R rounds (its fastest correct one).
//   speedup of a sample, resources, geomean, stability
//               from the sample's best attempt over all rounds (its fastest
//               correct one, else its first correct one).
//   geomean     geometric mean of the speedups of the correct, timed samples.
//   resources   registers, spill bytes and SASS instructions of that attempt
//               against nvcc's reference (the run summary's "reference"): the
//               geometric mean of candidate/nvcc ratios, and the count of
//               correct samples that spill when nvcc's kernel does not.
//   stability   per task, across correct samples: Spread of speedups and of
//               SASS instruction counts (support/Stats.h spreadOf).
//   taxonomy    over every attempt of every scored sample: counts per funnel
//               stage (report::funnelStage: where the attempt stopped) and per
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

/// The thresholds fast_p (and fast_p@k) is reported for; fast_p_low for those above 0.
inline const std::vector<double> kFastThresholds = {0.0, 1.0, 1.5, 2.0};

/// What a sample reached over some of its attempts: its first attempt, or all its rounds.
struct Reach {
  bool lint = false, compile = false, correct = false;
  std::optional<double> speedup;    ///< of the correct attempt (over rounds: the fastest), when timed
  std::optional<double> speedupLow; ///< the lower end of that attempt's noise band
};

/// Correct and strictly faster than p x nvcc (p <= 0: correct).
bool fastAt(const Reach &reach, double p);
/// Correct and the lower end of the noise band strictly above p.
bool fastLowAt(const Reach &reach, double p);

/// One sample (slot) of one task.
struct SampleOutcome {
  int slot = 0;
  /// Set when the sample is left out of every figure: why, as the first of its
  /// requests (in round order) that has no completion says: "error" (the
  /// backend failed), "pending" (a batch answer not in yet), "unasked" (never
  /// sent), "unjudged" (answered, never checked).
  std::optional<std::string> noCompletion;
  Reach first;                          ///< its round-1 attempt
  Reach final;                          ///< all its rounds (the same as `first` when R = 1)
  std::optional<int> registers;         ///< of the attempt final.speedup came from (or the first correct one)
  std::optional<int> sassInstructions;
  std::optional<int> spillBytes;        ///< spill stores + loads
  int attempts = 0;                     ///< attempts (not skeleton requests) that count
};

/// Rates for each k of EvalOptions::ks: k → pass@k (nullopt when n < k).
using PassAtK = std::map<int, std::optional<double>>;
/// Threshold p → a share (nullopt when unknown).
using FastShares = std::map<double, std::optional<double>>;

/// One task.
struct TaskMetrics {
  std::string task;
  int level = 0;
  int64_t runId = 0;                        ///< 0: the task did not run
  int rounds = 1;                           ///< R
  int samples = 0;                          ///< n: scored samples
  int noCompletion = 0;                     ///< samples left out
  std::map<std::string, int> noCompletionReasons; ///< reason → samples
  // First attempts.
  int lintPassed = 0, compilePassed = 0, correct = 0; ///< c per stage
  PassAtK lintAtK, compileAtK, correctAtK;
  std::map<double, int> fast;               ///< p → samples correct and > p x nvcc
  std::map<double, int> fastLow;            ///< p > 0 → samples correct with speedup_low > p
  FastShares fastP, fastPLow;               ///< fast / n, fastLow / n
  std::map<int, FastShares> fastPAtK;       ///< k → p → pass@k with c = fast[p]
  // All R rounds.
  int correctAfterRounds = 0;
  PassAtK correctAtKAfterRounds;
  std::map<double, int> fastAfterRounds, fastLowAfterRounds;
  FastShares fastPAfterRounds, fastPLowAfterRounds;
  // Speed and resources of each correct sample's best attempt over all rounds.
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
  int samples = 0;                               ///< scored samples
  int noCompletion = 0;                          ///< samples left out
  std::map<std::string, int> noCompletionReasons;
  PassAtK lintAtK, compileAtK, correctAtK;       ///< means over tasks with n > 0 (nullopt if one has n < k)
  FastShares fastP, fastPLow;                    ///< over the group's scored samples
  std::map<int, FastShares> fastPAtK;            ///< k → p → mean over tasks with n > 0
  PassAtK correctAtKAfterRounds;
  FastShares fastPAfterRounds, fastPLowAfterRounds;
  std::optional<double> geomeanSpeedup;
  std::optional<double> registerRatio, instructionRatio;
  int correctSamples = 0;                        ///< correct after all rounds
  int spillingWhereNvccDoesNot = 0;
  std::map<std::string, int> stages;
  std::map<std::string, int> diagnosticCodes;
};

struct EvalMetrics {
  std::vector<int> ks;               ///< the k of pass@k, ascending
  int rounds = 1;                    ///< R
  bool timed = false;                ///< the eval was timed (a GPU eval)
  std::vector<TaskMetrics> tasks;    ///< in the runs' order, then the tasks that did not run
  std::vector<GroupMetrics> levels;  ///< "L1", "L2", "L3" (levels with tasks only), ascending
  GroupMetrics overall;              ///< name "overall"
};

/// What the figures are computed over.
struct MetricsOptions {
  std::vector<int> ks = {1};
  /// Samples asked per task; 0: each run's recorded "candidates" parameter,
  /// else as many slots as it recorded. Slots beyond it are not samples.
  int samples = 0;
  /// R; 0: each run's recorded "rounds" parameter, else its highest round.
  int rounds = 0;
  /// Whether the eval's executor timed candidates (speed figures are then 0,
  /// not null, where nothing was fast); unset: whether some attempt has a speedup.
  std::optional<bool> timed;
};

/// A task of the eval without a run (it could not start, or the eval was
/// interrupted before it): all its samples count as having no completion.
struct TaskNotRun {
  std::string task;
  int level = 0;
  std::vector<int> slots = {}; ///< the samples it should have had (a shard's share); empty: all of them
};

/// The unbiased pass@k estimator; nullopt when n < k. n, c >= 0, c <= n, k >= 1.
std::optional<double> passAtK(int n, int c, int k);

/// One task's figures from its run. `level` is the task's level. The samples
/// are slots 0 .. samples - 1, or, for a shard's run, the slots its recorded
/// parameters list ("slots": the other slots belong to other shards).
TaskMetrics taskMetrics(const store::RunData &run, int level, const MetricsOptions &options);

/// Everything, from one run per task (same order as `levels`) and the tasks that did not run.
EvalMetrics evalMetrics(const std::vector<store::RunData> &runs, const std::vector<int> &levels,
                        const MetricsOptions &options, const std::vector<TaskNotRun> &notRun = {});

/// The metrics as JSON, keys as in docs/eval.md:
///   {"ks": [...], "rounds": R, "timed": bool,
///    "overall": GROUP, "levels": [GROUP...], "tasks": [TASK...]}
///   FAST  = {"0": x|null, "1": ..., "1.5": ..., "2": ...}   (fast_p_low: "1", "1.5", "2")
///   GROUP = {"name", "tasks", "samples", "no_completion", "no_completion_reasons": {...},
///            "lint_at_k": {"1": x|null, ...}, "compile_at_k", "correct_at_k",
///            "fast_p": FAST, "fast_p_low": FAST, "fast_p_at_k": {"1": FAST, ...},
///            "after_rounds": null (R = 1) | {"rounds", "correct_at_k", "fast_p", "fast_p_low"},
///            "geomean_speedup", "register_ratio", "instruction_ratio", "correct_samples",
///            "spilling_where_nvcc_does_not", "stages": {...}, "diagnostic_codes": {...}}
///   TASK  = {"task", "level", "run"|null, "samples", "no_completion", "no_completion_reasons",
///            "lint_passed", "compile_passed", "correct", "lint_at_k", "compile_at_k",
///            "correct_at_k", "fast_p", "fast_p_low", "fast_p_at_k",
///            "after_rounds": null | {"rounds", "correct", "correct_at_k", "fast_p", "fast_p_low"},
///            "best_speedup", "geomean_speedup", "timed", "speedup_spread": SPREAD|null,
///            "instruction_spread": SPREAD|null, "nvcc": {"registers", "instructions", "spill_bytes"},
///            "register_ratio", "instruction_ratio", "spilling_where_nvcc_does_not", "stages",
///            "diagnostic_codes", "sample_outcomes": [SAMPLE...]}
///   SAMPLE = {"slot", "no_completion": null|reason, "lint", "compile", "correct", "speedup",
///             "speedup_low", "after_rounds": null | {"lint", "compile", "correct", "speedup",
///             "speedup_low"}, "registers", "sass_instructions", "spill_bytes", "attempts"}
///   SPREAD = {"median", "p10", "p90", "min", "max", "samples"}
/// Absent values are null, never invented.
nlohmann::json toJson(const EvalMetrics &metrics);

/// The threshold as a JSON key: the shortest form ("0", "1.5").
std::string thresholdKey(double threshold);

} // namespace ptxforge::eval
