// ptxforge eval: scores a model at writing PTX. For every task of a suite, a
// solve run with n independent samples (slots that share one prompt, one
// temperature and no stated tendency, differing only in their seed) and,
// with rounds > 1, repair/optimize turns; every sample through the full gate.
// The runs are recorded in the store under one eval, so an eval resumes after
// an interruption and works with the batch backend (each invocation answers
// one round of every task). Metrics.h defines the figures; EvalReport.h
// renders them; Merge.h merges the shards of an eval. See docs/eval.md.
//
// Throughput: the tasks run concurrently and share one pool of model
// requests (`concurrency` bounds the requests in flight across the suite)
// and one gate (one check at a time on the executor), so that the gate
// verifies one task's answers while the model writes another's.
#pragma once

#include "eval/Metrics.h"
#include "eval/Progress.h"
#include "exec/Executor.h"
#include "llm/Backend.h"
#include "prompt/PromptBuilder.h"
#include "solve/GuidedStream.h"
#include "store/Store.h"
#include "support/Result.h"
#include "tasks/TaskSpec.h"
#include "verify/Check.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace ptxforge::eval {

/// Shard `index` of `count` (1-based, as on the command line: `--shard 2/4`).
struct Shard {
  int index = 1;
  int count = 1;
  bool operator==(const Shard &) const = default;
};

/// "I/N" with 1 <= I <= N <= 100000; InvalidInput says what is wrong.
Result<Shard> parseShard(std::string_view text);
/// "I/N".
std::string shardName(const Shard &shard);

/// The samples (slots) of the task at `taskPosition` (its place among the
/// eval's tasks, in suite order) that `shard` runs. The (task, sample) pairs
/// of the eval are numbered taskPosition * samples + slot and dealt out in
/// turn: pair u belongs to shard (u mod count) + 1. The split depends on
/// nothing but these numbers, so every machine computes the same one, and
/// each shard gets a share of every kind of task.
std::vector<int> shardSlots(const Shard &shard, int taskPosition, int samples);

struct EvalOptions {
  /// "core" (the whole suite), "L1", "L2", "L3", or comma-separated task names.
  std::string suite = "core";
  int samples = 5;                 ///< n per task
  std::vector<int> ks = {1};       ///< the k of pass@k (each <= samples)
  int rounds = 1;                  ///< 1: samples only; r: r - 1 repair/optimize turns per sample
  std::vector<prompt::Strategy> strategies = {prompt::Strategy::ZeroShot, prompt::Strategy::Spec};
  double temperature = 0.7;        ///< every sample's
  std::optional<double> topP;
  std::optional<int> maxTokens = 8192;
  uint64_t seed = 1;
  bool stream = false;
  /// Model requests in flight at once across the whole suite (-j). How this
  /// process runs, not what the eval measures: a resume may use another.
  int concurrency = 4;
  std::string arch = "sm_90";
  int trials = 3;
  int timingRounds = 10;
  uint32_t launchTimeoutMs = 10'000;
  bool noSass = false;             ///< SolveOptions::noSass for every task (--no-sass)
  /// Run only this shard's share of the (task, sample) pairs (shardSlots);
  /// recorded with the eval ("shard" in its parameters). None: all of them.
  std::optional<Shard> shard;
  /// --guided-stream for every task's run (SolveOptions::guidedStream).
  solve::GuidedStreamOptions guidedStream;
};

nlohmann::json optionsToJson(const EvalOptions &options);
Result<EvalOptions> optionsFromJson(const nlohmann::json &json);

struct EvalContext {
  const tasks::Suite &suite;
  llm::Backend &backend;
  std::string modelSpec;
  exec::Executor &executor;
  store::Store &store;
  const prompt::TemplateSet &templates;
  nlohmann::json provenance = nlohmann::json::object();
  /// One line per task started and finished, and the progress line
  /// (ProgressMeter) now and then; called from one thread at a time.
  std::function<void(const std::string &)> onProgress;
  std::stop_token stop;
  /// Makes the progress line show a cost (USD) beside the tokens.
  std::optional<TokenPrice> price = std::nullopt;
  /// When set, every task's candidates are checked by it (a running
  /// `ptxforge serve`, `--gate URL`), as SolveContext::check; the tasks then
  /// check side by side (the service queues), not one at a time.
  std::function<Result<verify::CheckResult>(const tasks::TaskSpec &, const verify::Candidate &,
                                            const verify::CheckOptions &)>
      check = nullptr;
  /// On a GPU: the emulator whose sanitizers give every check a second
  /// opinion on the task's small shapes (verify::CheckOptions::sanitizer), as
  /// `ptxforge check` does; none: the GPU alone.
  exec::Executor *sanitizer = nullptr;
  std::string sanitizerUnavailable; ///< why `sanitizer` is null on a GPU (verify::CheckOptions)
};

/// The tasks `suite` names, in suite order. InvalidInput names an unknown task
/// or level and lists the valid choices.
Result<std::vector<const tasks::TaskSpec *>> selectTasks(const tasks::Suite &suite, const std::string &name);

/// "NAME@" + the first 12 hex digits of SHA-256 over every selected task's
/// name, task.toml and reference.cu (in suite order): two evals compare task
/// for task only when their suite versions are equal.
std::string suiteVersion(const std::string &name, const std::vector<const tasks::TaskSpec *> &tasks);

struct EvalOutcome {
  int64_t evalId = 0;
  store::EvalStatus status = store::EvalStatus::Running; ///< complete, incomplete, interrupted, infra-error, pending
  nlohmann::json document; ///< the eval document (EvalReport.h)
  int peakRequestsInFlight = 0; ///< the most model requests this process had in flight at once
  int tasksAtOnce = 0;          ///< how many tasks it ran concurrently (at most)
};

/// How an eval that ran to its end (neither interrupted nor waiting for batch
/// results) stands: complete when every sample of every task has all its
/// completions, infra-error when no sample has (nothing could be scored: a
/// dead server, a recording that answers nothing), incomplete otherwise.
store::EvalStatus finishedStatus(const EvalMetrics &metrics);

/// Runs (or, with resumeEvalId, resumes) an eval. A resumed eval keeps its
/// recorded options (except `concurrency`, this process's) and suite; a shard
/// given with a resume must be the recorded one; a task whose run is done and whose samples all
/// have their completions is not touched, the others are resumed (solve's
/// replay: recorded completions and results are reused, and every request
/// without a completion is asked again) or started. A task whose run cannot
/// start (its reference fails) is recorded in the document's "errors"; its
/// samples, like those of tasks an interruption kept from starting, count as
/// having no completion. Store failures are Errors.
Result<EvalOutcome> runEval(EvalContext &context, const EvalOptions &options,
                            std::optional<int64_t> resumeEvalId = std::nullopt);

/// The eval document of a recorded eval, its metrics computed again from its
/// runs (so a document always matches the store). The status of a finished
/// eval is worked out again too (finishedStatus), so that evals recorded as
/// "done" before the eval statuses existed read as complete, incomplete or
/// infra-error.
Result<nlohmann::json> evalDocument(store::Store &store, int64_t evalId);

} // namespace ptxforge::eval
