// Eval metrics: per-sample outcomes, per-task figures and per-group means,
// computed from the attempts the run store recorded (Metrics.h defines them).
//
// Each result is decoded once with report::decodeResult (verify's codec; its
// columns parsed into verify's enums); a result that does not decode counts by
// its columns alone. The run summary's "reference" and the SASS counts have no
// codec and go through report/JsonRead.h. Nothing here throws.
#include "eval/Metrics.h"

#include "report/JsonRead.h"
#include "report/Report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>

namespace ptxforge::eval {

namespace {

using nlohmann::json;
using report::FunnelStage;
using report::StoredResult;
using report::read::countOf;
using report::read::member;
using verify::Verdict;

/// A speedup usable in a geometric mean: finite and positive.
std::optional<double> usableSpeedup(const std::optional<double> &speedup) {
  if (!speedup || !std::isfinite(*speedup) || *speedup <= 0) return std::nullopt;
  return speedup;
}

/// Geometric mean of positive, finite values (others are skipped); none when
/// nothing is left. Computed in log space so long products cannot overflow.
std::optional<double> geomean(const std::vector<double> &values) {
  double logSum = 0;
  size_t count = 0;
  for (double value : values) {
    if (!std::isfinite(value) || value <= 0) continue;
    logSum += std::log(value);
    ++count;
  }
  if (count == 0) return std::nullopt;
  return std::exp(logSum / static_cast<double>(count));
}

/// The k of pass@k: ascending, distinct, >= 1.
std::vector<int> normalizedKs(const std::vector<int> &ks) {
  std::set<int> distinct;
  for (int k : ks)
    if (k >= 1) distinct.insert(k);
  return {distinct.begin(), distinct.end()};
}

/// The attempt's result, or for a duplicate recorded without one, the result
/// of the candidate it copied (followed through chains of duplicates).
const store::ResultRecord *effectiveResult(const store::AttemptRow &attempt,
                                           const std::map<int64_t, const store::AttemptRow *> &byCandidate) {
  const store::AttemptRow *row = &attempt;
  // Bounded: a hand-edited cycle of duplicates must not loop forever.
  for (size_t hops = 0; hops <= byCandidate.size(); ++hops) {
    if (row->result) return &*row->result;
    if (!row->candidate || !row->candidate->duplicateOf) return nullptr;
    auto it = byCandidate.find(*row->candidate->duplicateOf);
    if (it == byCandidate.end()) return nullptr;
    row = it->second;
  }
  return nullptr;
}

struct Reached {
  bool lint = false, compile = false, correct = false;
};

/// What one attempt reached, from its funnel stage (so that an attempt without
/// a complete completion or without PTX reaches nothing, whatever its result
/// says). Two verdicts are judged by the stage the gate got to instead:
/// not-verified (the gate could not run the candidate) and rejected (the gate
/// refused it, e.g. for reading a timer, which it does before compiling).
/// Compile means lint passed; execute, benchmark or done mean lint and compile
/// passed; anything else means nothing was reached.
Reached reachedBy(FunnelStage funnelStage, const StoredResult *result) {
  Reached reached;
  bool byStage = result != nullptr && (result->is(Verdict::NotVerified) || result->is(Verdict::Rejected)) &&
                 (funnelStage == FunnelStage::Unverified || funnelStage == FunnelStage::Correctness);
  if (byStage) {
    switch (result->stage.value_or(verify::Stage::Extract)) {
    case verify::Stage::Extract:
    case verify::Stage::Lint: break;
    case verify::Stage::Compile: reached.lint = true; break;
    case verify::Stage::Execute:
    case verify::Stage::Benchmark:
    case verify::Stage::Done: reached.lint = reached.compile = true; break;
    }
    return reached;
  }
  switch (funnelStage) {
  case FunnelStage::Compile: reached.lint = true; break;
  case FunnelStage::Correctness: reached.lint = reached.compile = true; break;
  case FunnelStage::Untimed:
  case FunnelStage::Slower:
  case FunnelStage::OnPar:
  case FunnelStage::Faster: reached.lint = reached.compile = reached.correct = true; break;
  default: break;
  }
  return reached;
}

/// ptxas's resources of a result, when it reported them.
const toolchain::ResourceUsage *resourcesOf(const StoredResult &result) {
  if (!result.check || !result.check->compile || !result.check->compile->resources.known) return nullptr;
  return &result.check->compile->resources;
}

/// Registers of a result: the store's column, else ptxas's count.
std::optional<int> registersOf(const StoredResult &result) {
  if (result.record->registers && *result.record->registers >= 0) return result.record->registers;
  const toolchain::ResourceUsage *resources = resourcesOf(result);
  if (resources == nullptr || resources->registers < 0) return std::nullopt;
  return resources->registers;
}

/// Spill stores + loads; absent unless both are known.
std::optional<int> spillBytesOf(std::optional<int> stores, std::optional<int> loads) {
  if (!stores || !loads || *stores < 0 || *loads < 0) return std::nullopt;
  int64_t total = int64_t{*stores} + *loads;
  if (total > std::numeric_limits<int>::max()) return std::nullopt;
  return static_cast<int>(total);
}

std::optional<int> spillBytesOf(const StoredResult &result) {
  const toolchain::ResourceUsage *resources = resourcesOf(result);
  if (resources == nullptr) return std::nullopt;
  return spillBytesOf(resources->spillStoreBytes, resources->spillLoadBytes);
}

/// The lower end of the noise band of the result's headline benchmark (the
/// one its speedup column comes from); none when it did not decode or was not timed.
std::optional<double> speedupLowOf(const StoredResult &result) {
  if (!result.check) return std::nullopt;
  const verify::BenchmarkReport *headline = verify::headlineBenchmark(*result.check);
  if (headline == nullptr) return std::nullopt;
  return usableSpeedup(headline->speedupLow);
}

/// Sums `from` into `into` (taxonomy maps).
void addCounts(std::map<std::string, int> &into, const std::map<std::string, int> &from) {
  for (const auto &[key, count] : from) into[key] += count;
}

std::string levelName(int level) { return fmt::format("L{}", level); }

/// An integer parameter of a run (`candidates`, `rounds`), when recorded as one.
std::optional<int> intParameter(const json &parameters, std::string_view key) {
  const json *value = member(&parameters, key);
  if (value == nullptr || !value->is_number_integer()) return std::nullopt;
  int64_t number = value->get<int64_t>();
  if (number < 1 || number > 1'000'000) return std::nullopt;
  return static_cast<int>(number);
}

template <typename T> json optionalJson(const std::optional<T> &value) {
  return value ? json(*value) : json(nullptr);
}

json passAtKJson(const PassAtK &rates) {
  json object = json::object();
  for (const auto &[k, rate] : rates) object[std::to_string(k)] = optionalJson(rate);
  return object;
}

json fastJson(const FastShares &shares) {
  json object = json::object();
  for (const auto &[threshold, share] : shares) object[thresholdKey(threshold)] = optionalJson(share);
  return object;
}

json fastAtKJson(const std::map<int, FastShares> &byK) {
  json object = json::object();
  for (const auto &[k, shares] : byK) object[std::to_string(k)] = fastJson(shares);
  return object;
}

json spreadJson(const std::optional<Spread> &spread) {
  if (!spread) return nullptr;
  return {{"median", spread->median}, {"p10", spread->p10}, {"p90", spread->p90},
          {"min", spread->min},       {"max", spread->max}, {"samples", spread->samples}};
}

json countsJson(const std::map<std::string, int> &counts) {
  json object = json::object();
  for (const auto &[key, count] : counts) object[key] = count;
  return object;
}

json groupJson(const GroupMetrics &group, int rounds) {
  json afterRounds = nullptr;
  if (rounds > 1)
    afterRounds = {{"rounds", rounds},
                   {"correct_at_k", passAtKJson(group.correctAtKAfterRounds)},
                   {"fast_p", fastJson(group.fastPAfterRounds)},
                   {"fast_p_low", fastJson(group.fastPLowAfterRounds)}};
  return {{"name", group.name},
          {"tasks", group.tasks},
          {"samples", group.samples},
          {"no_completion", group.noCompletion},
          {"no_completion_reasons", countsJson(group.noCompletionReasons)},
          {"lint_at_k", passAtKJson(group.lintAtK)},
          {"compile_at_k", passAtKJson(group.compileAtK)},
          {"correct_at_k", passAtKJson(group.correctAtK)},
          {"fast_p", fastJson(group.fastP)},
          {"fast_p_low", fastJson(group.fastPLow)},
          {"fast_p_at_k", fastAtKJson(group.fastPAtK)},
          {"after_rounds", std::move(afterRounds)},
          {"geomean_speedup", optionalJson(group.geomeanSpeedup)},
          {"register_ratio", optionalJson(group.registerRatio)},
          {"instruction_ratio", optionalJson(group.instructionRatio)},
          {"correct_samples", group.correctSamples},
          {"spilling_where_nvcc_does_not", group.spillingWhereNvccDoesNot},
          {"stages", countsJson(group.stages)},
          {"diagnostic_codes", countsJson(group.diagnosticCodes)}};
}

json reachJson(const Reach &reach) {
  return {{"lint", reach.lint},
          {"compile", reach.compile},
          {"correct", reach.correct},
          {"speedup", optionalJson(reach.speedup)},
          {"speedup_low", optionalJson(reach.speedupLow)}};
}

json sampleJson(const SampleOutcome &sample, int rounds) {
  json out = {{"slot", sample.slot}, {"no_completion", optionalJson(sample.noCompletion)}};
  out.update(reachJson(sample.first));
  out["after_rounds"] = rounds > 1 ? reachJson(sample.final) : json(nullptr);
  out["registers"] = optionalJson(sample.registers);
  out["sass_instructions"] = optionalJson(sample.sassInstructions);
  out["spill_bytes"] = optionalJson(sample.spillBytes);
  out["attempts"] = sample.attempts;
  return out;
}

json taskJson(const TaskMetrics &task) {
  json samples = json::array();
  for (const SampleOutcome &sample : task.sampleOutcomes) samples.push_back(sampleJson(sample, task.rounds));
  json afterRounds = nullptr;
  if (task.rounds > 1)
    afterRounds = {{"rounds", task.rounds},
                   {"correct", task.correctAfterRounds},
                   {"correct_at_k", passAtKJson(task.correctAtKAfterRounds)},
                   {"fast_p", fastJson(task.fastPAfterRounds)},
                   {"fast_p_low", fastJson(task.fastPLowAfterRounds)}};
  return {{"task", task.task},
          {"level", task.level},
          {"run", task.runId > 0 ? json(task.runId) : json(nullptr)},
          {"samples", task.samples},
          {"no_completion", task.noCompletion},
          {"no_completion_reasons", countsJson(task.noCompletionReasons)},
          {"lint_passed", task.lintPassed},
          {"compile_passed", task.compilePassed},
          {"correct", task.correct},
          {"lint_at_k", passAtKJson(task.lintAtK)},
          {"compile_at_k", passAtKJson(task.compileAtK)},
          {"correct_at_k", passAtKJson(task.correctAtK)},
          {"fast_p", fastJson(task.fastP)},
          {"fast_p_low", fastJson(task.fastPLow)},
          {"fast_p_at_k", fastAtKJson(task.fastPAtK)},
          {"after_rounds", std::move(afterRounds)},
          {"best_speedup", optionalJson(task.bestSpeedup)},
          {"geomean_speedup", optionalJson(task.geomeanSpeedup)},
          {"timed", task.timed},
          {"speedup_spread", spreadJson(task.speedupSpread)},
          {"instruction_spread", spreadJson(task.instructionSpread)},
          {"nvcc",
           {{"registers", optionalJson(task.nvccRegisters)},
            {"instructions", optionalJson(task.nvccInstructions)},
            {"spill_bytes", optionalJson(task.nvccSpillBytes)}}},
          {"register_ratio", optionalJson(task.registerRatio)},
          {"instruction_ratio", optionalJson(task.instructionRatio)},
          {"spilling_where_nvcc_does_not", task.spillingWhereNvccDoesNot},
          {"stages", countsJson(task.stages)},
          {"diagnostic_codes", countsJson(task.diagnosticCodes)},
          {"sample_outcomes", std::move(samples)}};
}

/// Candidate/nvcc ratios of the task's correct samples, for the geomeans.
struct Ratios {
  std::vector<double> registers, instructions;
};

Ratios ratiosOf(const TaskMetrics &task) {
  Ratios ratios;
  for (const SampleOutcome &sample : task.sampleOutcomes) {
    if (sample.noCompletion || !sample.final.correct) continue;
    if (sample.registers && task.nvccRegisters && *task.nvccRegisters > 0)
      ratios.registers.push_back(static_cast<double>(*sample.registers) / *task.nvccRegisters);
    if (sample.sassInstructions && task.nvccInstructions && *task.nvccInstructions > 0)
      ratios.instructions.push_back(static_cast<double>(*sample.sassInstructions) / *task.nvccInstructions);
  }
  return ratios;
}

/// count / samples; none without samples, and for a speed threshold when nothing was timed.
std::optional<double> shareOf(int count, int samples, double threshold, bool timed) {
  if (samples <= 0 || (threshold > 0 && !timed)) return std::nullopt;
  return static_cast<double>(count) / static_cast<double>(samples);
}

/// The attempts of one run that count, by (slot, round): each cell's latest
/// request (a resume that re-asks a failed request, or that turns a round's
/// fresh attempt into a repair, supersedes what an earlier pass recorded),
/// and the skeleton request that went with a fresh attempt.
struct Cell {
  const store::AttemptRow *main = nullptr;     ///< initial, repair or optimize
  const store::AttemptRow *skeleton = nullptr; ///< the skeleton strategy's first request
};

std::map<std::pair<int, int>, Cell> liveCells(const store::RunData &run) {
  std::map<std::pair<int, int>, Cell> cells;
  for (const store::AttemptRow &attempt : run.attempts) {
    Cell &cell = cells[{attempt.prompt.slot, attempt.prompt.round}];
    const store::AttemptRow *&slot = attempt.prompt.kind == "skeleton" ? cell.skeleton : cell.main;
    if (slot == nullptr || attempt.prompt.id > slot->prompt.id) slot = &attempt;
  }
  for (auto &[key, cell] : cells)
    // A skeleton request belongs to a fresh attempt only; beside a repair it is an earlier pass's.
    if (cell.main != nullptr && cell.main->prompt.kind != "initial") cell.skeleton = nullptr;
  return cells;
}

/// Why a request has no usable answer; none when it has one.
std::optional<std::string> missingReason(const store::AttemptRow *attempt, bool needsResult,
                                         const std::map<int64_t, const store::AttemptRow *> &byCandidate) {
  if (attempt == nullptr || !attempt->completion) return "unasked";
  std::optional<store::CompletionStatus> status = attempt->completion->completionStatus();
  if (status == store::CompletionStatus::Pending) return "pending";
  if (status != store::CompletionStatus::Complete) return "error";
  if (needsResult && effectiveResult(*attempt, byCandidate) == nullptr) return "unjudged";
  return std::nullopt;
}

/// What one judged attempt reached, with its speedup and band when correct.
struct Judged {
  FunnelStage stage = FunnelStage::Unverified;
  Reach reach;
  std::optional<int> registers, sassInstructions, spillBytes;
  std::set<std::string> failureCodes;
};

Judged judge(const store::AttemptRow &attempt, const std::map<int64_t, const store::AttemptRow *> &byCandidate) {
  Judged judged;
  // A duplicate recorded without its copy of the original's result counts with the original's.
  const store::ResultRecord *record = effectiveResult(attempt, byCandidate);
  std::optional<StoredResult> result = record ? std::optional(report::decodeResult(*record)) : std::nullopt;
  judged.stage = report::funnelStage(attempt, result ? &*result : nullptr);
  Reached reached = reachedBy(judged.stage, result ? &*result : nullptr);
  judged.reach.lint = reached.lint;
  judged.reach.compile = reached.compile;
  judged.reach.correct = reached.correct;
  if (result && result->check && !result->is(Verdict::Correct))
    for (const ptx::Diagnostic &diagnostic : result->check->diagnostics)
      if (!diagnostic.code.empty()) judged.failureCodes.insert(diagnostic.code);
  if (reached.correct && result) {
    judged.reach.speedup = usableSpeedup(record->speedup);
    if (judged.reach.speedup) judged.reach.speedupLow = speedupLowOf(*result);
    judged.registers = registersOf(*result);
    judged.sassInstructions = result->sassInstructions;
    judged.spillBytes = spillBytesOf(*result);
  }
  return judged;
}

/// Whether some attempt of the run was timed (a speedup recorded).
bool anyTimed(const store::RunData &run) {
  for (const store::AttemptRow &attempt : run.attempts)
    if (attempt.result && usableSpeedup(attempt.result->speedup)) return true;
  return false;
}

bool anyTimed(const std::vector<store::RunData> &runs) {
  return std::any_of(runs.begin(), runs.end(), [](const store::RunData &run) { return anyTimed(run); });
}

/// Mean over the tasks with samples of a per-task rate; unknown when no task
/// has samples or one of them has no figure (n < k).
template <typename Rate> std::optional<double> meanOverTasks(const std::vector<const TaskMetrics *> &tasks, Rate rate) {
  double sum = 0;
  int counted = 0;
  for (const TaskMetrics *task : tasks) {
    if (task->samples == 0) continue; // nothing scored: no figure to average
    std::optional<double> value = rate(*task);
    if (!value) return std::nullopt;
    sum += *value;
    ++counted;
  }
  if (counted == 0) return std::nullopt;
  return sum / counted;
}

std::optional<double> rateAt(const PassAtK &rates, int k) {
  auto it = rates.find(k);
  return it == rates.end() ? std::nullopt : it->second;
}

std::optional<double> shareAt(const FastShares &shares, double p) {
  auto it = shares.find(p);
  return it == shares.end() ? std::nullopt : it->second;
}

GroupMetrics groupMetrics(const std::string &name, const std::vector<const TaskMetrics *> &tasks,
                          const std::vector<int> &ks, bool timed) {
  GroupMetrics group;
  group.name = name;
  group.tasks = static_cast<int>(tasks.size());
  for (int k : ks) {
    group.lintAtK[k] = meanOverTasks(tasks, [k](const TaskMetrics &t) { return rateAt(t.lintAtK, k); });
    group.compileAtK[k] = meanOverTasks(tasks, [k](const TaskMetrics &t) { return rateAt(t.compileAtK, k); });
    group.correctAtK[k] = meanOverTasks(tasks, [k](const TaskMetrics &t) { return rateAt(t.correctAtK, k); });
    group.correctAtKAfterRounds[k] =
        meanOverTasks(tasks, [k](const TaskMetrics &t) { return rateAt(t.correctAtKAfterRounds, k); });
    for (double p : kFastThresholds)
      group.fastPAtK[k][p] = meanOverTasks(tasks, [k, p](const TaskMetrics &t) {
        auto it = t.fastPAtK.find(k);
        return it == t.fastPAtK.end() ? std::nullopt : shareAt(it->second, p);
      });
  }

  std::map<double, int> fast, fastLow, fastAfter, fastLowAfter;
  std::vector<double> speedups, registerRatios, instructionRatios;
  for (const TaskMetrics *task : tasks) {
    group.samples += task->samples;
    group.noCompletion += task->noCompletion;
    addCounts(group.noCompletionReasons, task->noCompletionReasons);
    group.correctSamples += task->correctAfterRounds;
    group.spillingWhereNvccDoesNot += task->spillingWhereNvccDoesNot;
    addCounts(group.stages, task->stages);
    addCounts(group.diagnosticCodes, task->diagnosticCodes);
    for (double p : kFastThresholds) {
      fast[p] += task->fast.count(p) ? task->fast.at(p) : 0;
      fastAfter[p] += task->fastAfterRounds.count(p) ? task->fastAfterRounds.at(p) : 0;
      if (p <= 0) continue;
      fastLow[p] += task->fastLow.count(p) ? task->fastLow.at(p) : 0;
      fastLowAfter[p] += task->fastLowAfterRounds.count(p) ? task->fastLowAfterRounds.at(p) : 0;
    }
    for (const SampleOutcome &sample : task->sampleOutcomes)
      if (!sample.noCompletion && sample.final.correct && sample.final.speedup)
        speedups.push_back(*sample.final.speedup);
    Ratios ratios = ratiosOf(*task);
    registerRatios.insert(registerRatios.end(), ratios.registers.begin(), ratios.registers.end());
    instructionRatios.insert(instructionRatios.end(), ratios.instructions.begin(), ratios.instructions.end());
  }
  // Per sample, pooled over the group (KernelBench's fast_p): not a mean of the tasks' shares.
  for (double p : kFastThresholds) {
    group.fastP[p] = shareOf(fast[p], group.samples, p, timed);
    group.fastPAfterRounds[p] = shareOf(fastAfter[p], group.samples, p, timed);
    if (p <= 0) continue;
    group.fastPLow[p] = shareOf(fastLow[p], group.samples, p, timed);
    group.fastPLowAfterRounds[p] = shareOf(fastLowAfter[p], group.samples, p, timed);
  }
  // Pooled over the group's samples (not a mean of the tasks' means), so a
  // task with more correct samples weighs more, as for the speedup geomean.
  group.geomeanSpeedup = geomean(speedups);
  group.registerRatio = geomean(registerRatios);
  group.instructionRatio = geomean(instructionRatios);
  return group;
}

/// The per-sample figures of a task once its samples are known.
void countSamples(TaskMetrics &metrics, const std::vector<int> &ks, bool timed) {
  std::vector<double> speedups, instructions;
  for (const SampleOutcome &sample : metrics.sampleOutcomes) {
    if (sample.noCompletion) {
      ++metrics.noCompletion;
      ++metrics.noCompletionReasons[*sample.noCompletion];
      continue;
    }
    ++metrics.samples;
    metrics.lintPassed += sample.first.lint;
    metrics.compilePassed += sample.first.compile;
    metrics.correct += sample.first.correct;
    metrics.correctAfterRounds += sample.final.correct;
    for (double p : kFastThresholds) {
      metrics.fast[p] += fastAt(sample.first, p);
      metrics.fastAfterRounds[p] += fastAt(sample.final, p);
      if (p <= 0) continue;
      metrics.fastLow[p] += fastLowAt(sample.first, p);
      metrics.fastLowAfterRounds[p] += fastLowAt(sample.final, p);
    }
    if (!sample.final.correct) continue;
    if (sample.final.speedup) speedups.push_back(*sample.final.speedup);
    if (sample.sassInstructions) instructions.push_back(*sample.sassInstructions);
  }
  int n = metrics.samples;
  for (int k : ks) {
    metrics.lintAtK[k] = passAtK(n, metrics.lintPassed, k);
    metrics.compileAtK[k] = passAtK(n, metrics.compilePassed, k);
    metrics.correctAtK[k] = passAtK(n, metrics.correct, k);
    metrics.correctAtKAfterRounds[k] = passAtK(n, metrics.correctAfterRounds, k);
    for (double p : kFastThresholds)
      metrics.fastPAtK[k][p] = p > 0 && !timed ? std::nullopt : passAtK(n, metrics.fast[p], k);
  }
  for (double p : kFastThresholds) {
    metrics.fastP[p] = shareOf(metrics.fast[p], n, p, timed);
    metrics.fastPAfterRounds[p] = shareOf(metrics.fastAfterRounds[p], n, p, timed);
    if (p <= 0) continue;
    metrics.fastPLow[p] = shareOf(metrics.fastLow[p], n, p, timed);
    metrics.fastPLowAfterRounds[p] = shareOf(metrics.fastLowAfterRounds[p], n, p, timed);
  }
  metrics.timed = !speedups.empty();
  if (metrics.timed) {
    metrics.bestSpeedup = *std::max_element(speedups.begin(), speedups.end());
    metrics.geomeanSpeedup = geomean(speedups);
    metrics.speedupSpread = spreadOf(speedups);
  }
  if (!instructions.empty()) metrics.instructionSpread = spreadOf(instructions);
}

} // namespace

bool fastAt(const Reach &reach, double p) {
  if (!reach.correct) return false;
  if (p <= 0) return true;
  return reach.speedup && *reach.speedup > p;
}

bool fastLowAt(const Reach &reach, double p) { return reach.correct && reach.speedupLow && *reach.speedupLow > p; }

std::string thresholdKey(double threshold) { return fmt::format("{}", threshold); }

std::optional<double> passAtK(int n, int c, int k) {
  assert(n >= 0 && c >= 0 && c <= n && k >= 1 && "passAtK: needs 0 <= c <= n and k >= 1");
  if (n < 0 || c < 0 || c > n || k < 1) return std::nullopt;
  if (n < k) return std::nullopt;
  if (n - c < k) return 1.0;
  // C(n-c, k) / C(n, k) = prod_{i=n-c+1..n} (1 - k/i): no factorials, no
  // overflow, and exactly 0 when c = 0 (the empty product).
  double failAll = 1.0;
  for (int i = n - c + 1; i <= n; ++i) failAll *= 1.0 - static_cast<double>(k) / static_cast<double>(i);
  return 1.0 - failAll;
}

TaskMetrics taskMetrics(const store::RunData &run, int level, const MetricsOptions &options) {
  TaskMetrics metrics;
  metrics.task = run.run.task;
  metrics.level = level;
  metrics.runId = run.run.id;
  std::vector<int> ks = normalizedKs(options.ks);

  std::map<int64_t, const store::AttemptRow *> byCandidate;
  for (const store::AttemptRow &attempt : run.attempts)
    if (attempt.candidate) byCandidate.emplace(attempt.candidate->id, &attempt);
  std::map<std::pair<int, int>, Cell> cells = liveCells(run);

  // How many samples and rounds were asked for: the options, else the run's
  // parameters, else what it recorded.
  int recordedSlots = 0, recordedRounds = 1;
  for (const auto &[key, cell] : cells) {
    recordedSlots = std::max(recordedSlots, key.first + 1);
    recordedRounds = std::max(recordedRounds, key.second);
  }
  int slots = options.samples > 0 ? options.samples
                                  : intParameter(run.run.parameters, "candidates").value_or(recordedSlots);
  int rounds = options.rounds > 0 ? options.rounds : intParameter(run.run.parameters, "rounds").value_or(recordedRounds);
  metrics.rounds = rounds;
  bool timed = options.timed.value_or(anyTimed(run));

  // A shard's run works on some of the slots only; the others are not its samples.
  std::vector<int> sampleSlots;
  if (const json *listed = member(&run.run.parameters, "slots"); listed != nullptr && listed->is_array()) {
    for (const json &slot : *listed)
      if (slot.is_number_integer() && slot.get<int64_t>() >= 0 && slot.get<int64_t>() < slots)
        sampleSlots.push_back(slot.get<int>());
    std::sort(sampleSlots.begin(), sampleSlots.end());
    sampleSlots.erase(std::unique(sampleSlots.begin(), sampleSlots.end()), sampleSlots.end());
  } else {
    for (int slot = 0; slot < slots; ++slot) sampleSlots.push_back(slot);
  }

  for (int slot : sampleSlots) {
    SampleOutcome sample;
    sample.slot = slot;
    // The attempt the sample's resources come from: its fastest correct one
    // (earliest on a tie), else its first correct one.
    bool haveBest = false;
    std::vector<Judged> judgedRounds;
    for (int round = 1; round <= rounds; ++round) {
      auto found = cells.find({slot, round});
      const Cell *cell = found == cells.end() ? nullptr : &found->second;
      const store::AttemptRow *main = cell ? cell->main : nullptr;
      if (main != nullptr) ++sample.attempts;
      if (sample.noCompletion) continue;
      if (main == nullptr)
        // Nothing answered this round. With the skeleton strategy the attempt
        // is sent only once its skeleton request is answered: that one says why.
        sample.noCompletion = cell && cell->skeleton
                                  ? missingReason(cell->skeleton, false, byCandidate).value_or("unasked")
                                  : "unasked";
      else
        sample.noCompletion = missingReason(main, true, byCandidate);
      if (sample.noCompletion) continue;
      judgedRounds.push_back(judge(*main, byCandidate));
    }
    if (!sample.noCompletion) {
      for (size_t i = 0; i < judgedRounds.size(); ++i) {
        const Judged &judged = judgedRounds[i];
        ++metrics.stages[report::funnelStageName(judged.stage)];
        for (const std::string &code : judged.failureCodes) ++metrics.diagnosticCodes[code];
        if (i == 0) sample.first = judged.reach;
        sample.final.lint = sample.final.lint || judged.reach.lint;
        sample.final.compile = sample.final.compile || judged.reach.compile;
        if (!judged.reach.correct) continue;
        sample.final.correct = true;
        const std::optional<double> &speedup = judged.reach.speedup;
        if (!haveBest || (speedup && (!sample.final.speedup || *speedup > *sample.final.speedup))) {
          haveBest = true;
          sample.final.speedup = speedup;
          sample.final.speedupLow = judged.reach.speedupLow;
          sample.registers = judged.registers;
          sample.sassInstructions = judged.sassInstructions;
          sample.spillBytes = judged.spillBytes;
        }
      }
    }
    metrics.sampleOutcomes.push_back(std::move(sample));
  }

  countSamples(metrics, ks, timed);

  const json *reference = member(run.run.summary, "reference");
  metrics.nvccRegisters = countOf(member(reference, "registers"));
  metrics.nvccInstructions = countOf(member(member(reference, "sass"), "instructions"));
  metrics.nvccSpillBytes =
      spillBytesOf(countOf(member(reference, "spill_store_bytes")), countOf(member(reference, "spill_load_bytes")));

  Ratios ratios = ratiosOf(metrics);
  metrics.registerRatio = geomean(ratios.registers);
  metrics.instructionRatio = geomean(ratios.instructions);
  if (metrics.nvccSpillBytes && *metrics.nvccSpillBytes == 0)
    for (const SampleOutcome &sample : metrics.sampleOutcomes)
      metrics.spillingWhereNvccDoesNot +=
          !sample.noCompletion && sample.final.correct && sample.spillBytes && *sample.spillBytes > 0;
  return metrics;
}

EvalMetrics evalMetrics(const std::vector<store::RunData> &runs, const std::vector<int> &levels,
                        const MetricsOptions &requested, const std::vector<TaskNotRun> &notRun) {
  assert(runs.size() == levels.size() && "evalMetrics: one level per run");
  MetricsOptions options = requested;
  options.ks = normalizedKs(options.ks);
  if (!options.timed) options.timed = anyTimed(runs);
  EvalMetrics metrics;
  metrics.ks = options.ks;
  metrics.timed = *options.timed;
  metrics.rounds = std::max(1, options.rounds);
  for (size_t i = 0; i < runs.size(); ++i) {
    metrics.tasks.push_back(taskMetrics(runs[i], i < levels.size() ? levels[i] : 0, options));
    metrics.rounds = std::max(metrics.rounds, metrics.tasks.back().rounds);
  }
  // A task that did not run: every sample it should have had is missing.
  for (const TaskNotRun &task : notRun) {
    store::RunData none;
    none.run.task = task.task;
    none.run.id = 0;
    if (!task.slots.empty()) none.run.parameters["slots"] = task.slots;
    MetricsOptions asked = options;
    asked.rounds = metrics.rounds;
    metrics.tasks.push_back(taskMetrics(none, task.level, asked));
  }

  std::map<int, std::vector<const TaskMetrics *>> byLevel;
  std::vector<const TaskMetrics *> all;
  for (const TaskMetrics &task : metrics.tasks) {
    byLevel[task.level].push_back(&task);
    all.push_back(&task);
  }
  for (const auto &[level, tasks] : byLevel)
    metrics.levels.push_back(groupMetrics(levelName(level), tasks, metrics.ks, metrics.timed));
  metrics.overall = groupMetrics("overall", all, metrics.ks, metrics.timed);
  return metrics;
}

json toJson(const EvalMetrics &metrics) {
  json levels = json::array();
  for (const GroupMetrics &group : metrics.levels) levels.push_back(groupJson(group, metrics.rounds));
  json tasks = json::array();
  for (const TaskMetrics &task : metrics.tasks) tasks.push_back(taskJson(task));
  return {{"ks", metrics.ks},
          {"rounds", metrics.rounds},
          {"timed", metrics.timed},
          {"overall", groupJson(metrics.overall, metrics.rounds)},
          {"levels", std::move(levels)},
          {"tasks", std::move(tasks)}};
}

} // namespace ptxforge::eval
