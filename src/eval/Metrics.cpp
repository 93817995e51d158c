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

/// Sums `from` into `into` (taxonomy maps).
void addCounts(std::map<std::string, int> &into, const std::map<std::string, int> &from) {
  for (const auto &[key, count] : from) into[key] += count;
}

std::string levelName(int level) { return fmt::format("L{}", level); }

/// A threshold as a JSON key: the shortest form, no trailing zeros ("0", "1.5").
std::string thresholdKey(double threshold) { return fmt::format("{}", threshold); }

template <typename T> json optionalJson(const std::optional<T> &value) {
  return value ? json(*value) : json(nullptr);
}

json passAtKJson(const PassAtK &rates) {
  json object = json::object();
  for (const auto &[k, rate] : rates) object[std::to_string(k)] = optionalJson(rate);
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

json groupJson(const GroupMetrics &group) {
  json fastP = json::object();
  for (const auto &[threshold, share] : group.fastP) fastP[thresholdKey(threshold)] = optionalJson(share);
  return {{"name", group.name},
          {"tasks", group.tasks},
          {"samples", group.samples},
          {"lint_at_k", passAtKJson(group.lintAtK)},
          {"compile_at_k", passAtKJson(group.compileAtK)},
          {"correct_at_k", passAtKJson(group.correctAtK)},
          {"fast_p", std::move(fastP)},
          {"geomean_speedup", optionalJson(group.geomeanSpeedup)},
          {"register_ratio", optionalJson(group.registerRatio)},
          {"instruction_ratio", optionalJson(group.instructionRatio)},
          {"correct_samples", group.correctSamples},
          {"spilling_where_nvcc_does_not", group.spillingWhereNvccDoesNot},
          {"stages", countsJson(group.stages)},
          {"diagnostic_codes", countsJson(group.diagnosticCodes)}};
}

json sampleJson(const SampleOutcome &sample) {
  return {{"slot", sample.slot},
          {"lint", sample.lint},
          {"compile", sample.compile},
          {"correct", sample.correct},
          {"speedup", optionalJson(sample.speedup)},
          {"registers", optionalJson(sample.registers)},
          {"sass_instructions", optionalJson(sample.sassInstructions)},
          {"spill_bytes", optionalJson(sample.spillBytes)},
          {"attempts", sample.attempts}};
}

json taskJson(const TaskMetrics &task) {
  json samples = json::array();
  for (const SampleOutcome &sample : task.sampleOutcomes) samples.push_back(sampleJson(sample));
  return {{"task", task.task},
          {"level", task.level},
          {"run", task.runId},
          {"samples", task.samples},
          {"lint_passed", task.lintPassed},
          {"compile_passed", task.compilePassed},
          {"correct", task.correct},
          {"lint_at_k", passAtKJson(task.lintAtK)},
          {"compile_at_k", passAtKJson(task.compileAtK)},
          {"correct_at_k", passAtKJson(task.correctAtK)},
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
    if (!sample.correct) continue;
    if (sample.registers && task.nvccRegisters && *task.nvccRegisters > 0)
      ratios.registers.push_back(static_cast<double>(*sample.registers) / *task.nvccRegisters);
    if (sample.sassInstructions && task.nvccInstructions && *task.nvccInstructions > 0)
      ratios.instructions.push_back(static_cast<double>(*sample.sassInstructions) / *task.nvccInstructions);
  }
  return ratios;
}

GroupMetrics groupMetrics(const std::string &name, const std::vector<const TaskMetrics *> &tasks,
                          const std::vector<int> &ks) {
  GroupMetrics group;
  group.name = name;
  group.tasks = static_cast<int>(tasks.size());
  // Mean over the group's tasks; unknown as soon as one task's figure is.
  auto meanAtK = [&](PassAtK TaskMetrics::*field) {
    PassAtK means;
    for (int k : ks) {
      std::optional<double> mean;
      if (!tasks.empty()) {
        double sum = 0;
        bool known = true;
        for (const TaskMetrics *task : tasks) {
          auto it = (task->*field).find(k);
          if (it == (task->*field).end() || !it->second) {
            known = false;
            break;
          }
          sum += *it->second;
        }
        if (known) mean = sum / static_cast<double>(tasks.size());
      }
      means[k] = mean;
    }
    return means;
  };
  group.lintAtK = meanAtK(&TaskMetrics::lintAtK);
  group.compileAtK = meanAtK(&TaskMetrics::compileAtK);
  group.correctAtK = meanAtK(&TaskMetrics::correctAtK);

  bool anyTimed = false;
  std::vector<double> speedups, registerRatios, instructionRatios;
  for (const TaskMetrics *task : tasks) {
    group.samples += task->samples;
    group.correctSamples += task->correct;
    group.spillingWhereNvccDoesNot += task->spillingWhereNvccDoesNot;
    anyTimed = anyTimed || task->timed;
    addCounts(group.stages, task->stages);
    addCounts(group.diagnosticCodes, task->diagnosticCodes);
    for (const SampleOutcome &sample : task->sampleOutcomes)
      if (sample.correct && sample.speedup) speedups.push_back(*sample.speedup);
    Ratios ratios = ratiosOf(*task);
    registerRatios.insert(registerRatios.end(), ratios.registers.begin(), ratios.registers.end());
    instructionRatios.insert(instructionRatios.end(), ratios.instructions.begin(), ratios.instructions.end());
  }
  for (double threshold : kFastThresholds) {
    std::optional<double> share;
    // fast_0 needs no timing; a speed threshold is unknown when nothing was timed.
    if (!tasks.empty() && (threshold <= 0 || anyTimed)) {
      int fast = 0;
      for (const TaskMetrics *task : tasks) {
        if (task->correct == 0) continue;
        if (threshold <= 0 || (task->bestSpeedup && *task->bestSpeedup >= threshold)) ++fast;
      }
      share = static_cast<double>(fast) / static_cast<double>(tasks.size());
    }
    group.fastP[threshold] = share;
  }
  // Pooled over the group's samples (not a mean of the tasks' means), so a
  // task with more correct samples weighs more, as for the speedup geomean.
  group.geomeanSpeedup = geomean(speedups);
  group.registerRatio = geomean(registerRatios);
  group.instructionRatio = geomean(instructionRatios);
  return group;
}

} // namespace

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

TaskMetrics taskMetrics(const store::RunData &run, int level, const std::vector<int> &ks) {
  TaskMetrics metrics;
  metrics.task = run.run.task;
  metrics.level = level;
  metrics.runId = run.run.id;

  std::map<int64_t, const store::AttemptRow *> byCandidate;
  for (const store::AttemptRow &attempt : run.attempts)
    if (attempt.candidate) byCandidate.emplace(attempt.candidate->id, &attempt);

  // Every slot that was asked is a sample, including one whose only prompt is
  // a skeleton request or whose requests all failed: it reached nothing.
  std::map<int, SampleOutcome> samples;
  for (const store::AttemptRow &attempt : run.attempts) samples[attempt.prompt.slot].slot = attempt.prompt.slot;

  // The attempt each sample's resources come from: its fastest correct one
  // (earliest on a tie), else its first correct one.
  struct Best {
    bool found = false;
    std::optional<double> speedup;
    std::optional<int> registers, sassInstructions, spillBytes;
  };
  std::map<int, Best> best;

  for (const store::AttemptRow &attempt : run.attempts) {
    // A skeleton prompt is the first half of a two-request attempt, not an attempt.
    if (attempt.prompt.kind == "skeleton") continue;
    SampleOutcome &sample = samples[attempt.prompt.slot];
    ++sample.attempts;

    // A duplicate recorded without its copy of the original's result counts with the original's.
    const store::ResultRecord *record = effectiveResult(attempt, byCandidate);
    std::optional<StoredResult> result = record ? std::optional(report::decodeResult(*record)) : std::nullopt;
    FunnelStage stage = report::funnelStage(attempt, result ? &*result : nullptr);
    ++metrics.stages[report::funnelStageName(stage)];

    Reached reached = reachedBy(stage, result ? &*result : nullptr);
    sample.lint = sample.lint || reached.lint;
    sample.compile = sample.compile || reached.compile;
    sample.correct = sample.correct || reached.correct;

    if (result && result->check && !result->is(Verdict::Correct)) {
      std::set<std::string> codes;
      for (const ptx::Diagnostic &diagnostic : result->check->diagnostics)
        if (!diagnostic.code.empty()) codes.insert(diagnostic.code);
      for (const std::string &code : codes) ++metrics.diagnosticCodes[code];
    }

    if (reached.correct && result) {
      std::optional<double> speedup = usableSpeedup(record->speedup);
      Best &current = best[attempt.prompt.slot];
      if (!current.found || (speedup && (!current.speedup || *speedup > *current.speedup)))
        current = Best{true, speedup, registersOf(*result), result->sassInstructions, spillBytesOf(*result)};
    }
  }

  for (auto &[slot, sample] : samples) {
    if (auto it = best.find(slot); it != best.end()) {
      sample.speedup = it->second.speedup;
      sample.registers = it->second.registers;
      sample.sassInstructions = it->second.sassInstructions;
      sample.spillBytes = it->second.spillBytes;
    }
    metrics.sampleOutcomes.push_back(sample);
  }

  metrics.samples = static_cast<int>(metrics.sampleOutcomes.size());
  std::vector<double> speedups, instructions;
  for (const SampleOutcome &sample : metrics.sampleOutcomes) {
    metrics.lintPassed += sample.lint;
    metrics.compilePassed += sample.compile;
    metrics.correct += sample.correct;
    if (!sample.correct) continue;
    if (sample.speedup) speedups.push_back(*sample.speedup);
    if (sample.sassInstructions) instructions.push_back(*sample.sassInstructions);
  }
  for (int k : normalizedKs(ks)) {
    metrics.lintAtK[k] = passAtK(metrics.samples, metrics.lintPassed, k);
    metrics.compileAtK[k] = passAtK(metrics.samples, metrics.compilePassed, k);
    metrics.correctAtK[k] = passAtK(metrics.samples, metrics.correct, k);
  }
  metrics.timed = !speedups.empty();
  if (metrics.timed) {
    metrics.bestSpeedup = *std::max_element(speedups.begin(), speedups.end());
    metrics.geomeanSpeedup = geomean(speedups);
    metrics.speedupSpread = spreadOf(speedups);
  }
  if (!instructions.empty()) metrics.instructionSpread = spreadOf(instructions);

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
      metrics.spillingWhereNvccDoesNot += sample.correct && sample.spillBytes && *sample.spillBytes > 0;
  return metrics;
}

EvalMetrics evalMetrics(const std::vector<store::RunData> &runs, const std::vector<int> &levels,
                        const std::vector<int> &ks) {
  assert(runs.size() == levels.size() && "evalMetrics: one level per run");
  EvalMetrics metrics;
  metrics.ks = normalizedKs(ks);
  for (size_t i = 0; i < runs.size(); ++i)
    metrics.tasks.push_back(taskMetrics(runs[i], i < levels.size() ? levels[i] : 0, metrics.ks));

  std::map<int, std::vector<const TaskMetrics *>> byLevel;
  std::vector<const TaskMetrics *> all;
  for (const TaskMetrics &task : metrics.tasks) {
    byLevel[task.level].push_back(&task);
    all.push_back(&task);
    metrics.timed = metrics.timed || task.timed;
  }
  for (const auto &[level, tasks] : byLevel) metrics.levels.push_back(groupMetrics(levelName(level), tasks, metrics.ks));
  metrics.overall = groupMetrics("overall", all, metrics.ks);
  return metrics;
}

json toJson(const EvalMetrics &metrics) {
  json levels = json::array();
  for (const GroupMetrics &group : metrics.levels) levels.push_back(groupJson(group));
  json tasks = json::array();
  for (const TaskMetrics &task : metrics.tasks) tasks.push_back(taskJson(task));
  return {{"ks", metrics.ks},
          {"timed", metrics.timed},
          {"overall", groupJson(metrics.overall)},
          {"levels", std::move(levels)},
          {"tasks", std::move(tasks)}};
}

} // namespace ptxforge::eval
