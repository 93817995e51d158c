// The eval runner (Eval.h): one solve run per task, linked to the eval in the
// store; metrics are always computed from the store's runs. The tasks run on
// a few threads at once and share one pool of model requests and one gate.
#include "eval/Eval.h"

#include "support/Sha256.h"
#include "solve/RequestLimit.h"
#include "solve/Solve.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace ptxforge::eval {

Result<Shard> parseShard(std::string_view text) {
  auto bad = [&](const std::string &why) {
    return makeError(ErrorKind::InvalidInput, "--shard: '" + std::string(text) + "': " + why);
  };
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return bad("give I/N, shard I of N (1 <= I <= N)");
  auto number = [](std::string_view digits, int &value) {
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    return !digits.empty() && error == std::errc() && end == digits.data() + digits.size();
  };
  Shard shard;
  if (!number(text.substr(0, slash), shard.index) || !number(text.substr(slash + 1), shard.count))
    return bad("give I/N, shard I of N (1 <= I <= N)");
  if (shard.count < 1 || shard.count > 100'000) return bad("N must be between 1 and 100000");
  if (shard.index < 1 || shard.index > shard.count) return bad("I must be between 1 and N (shards count from 1)");
  return shard;
}

std::string shardName(const Shard &shard) { return fmt::format("{}/{}", shard.index, shard.count); }

std::vector<int> shardSlots(const Shard &shard, int taskPosition, int samples) {
  std::vector<int> slots;
  for (int slot = 0; slot < samples; ++slot) {
    int64_t pair = int64_t{taskPosition} * samples + slot;
    if (pair % shard.count == shard.index - 1) slots.push_back(slot);
  }
  return slots;
}

nlohmann::json optionsToJson(const EvalOptions &options) {
  std::vector<std::string> strategies;
  for (prompt::Strategy s : options.strategies) strategies.push_back(prompt::strategyName(s));
  nlohmann::json json = {{"suite", options.suite},
          {"samples", options.samples},
          {"ks", options.ks},
          {"rounds", options.rounds},
          {"strategies", strategies},
          {"prompt_parts", prompt::promptParts(options.strategies)}, // what the first attempt's prompt carried
          {"temperature", options.temperature},
          {"top_p", options.topP ? nlohmann::json(*options.topP) : nlohmann::json(nullptr)},
          {"max_tokens", options.maxTokens ? nlohmann::json(*options.maxTokens) : nlohmann::json(nullptr)},
          {"seed", options.seed},
          {"stream", options.stream},
          {"concurrency", options.concurrency},
          {"arch", options.arch},
          {"trials", options.trials},
          {"timing_rounds", options.timingRounds},
          {"launch_timeout_ms", options.launchTimeoutMs},
          {"no_sass", options.noSass}};
  // Only a shard has it: an unsharded eval's parameters stay as they were.
  if (options.shard) json["shard"] = {{"index", options.shard->index}, {"count", options.shard->count}};
  // Likewise only an eval with streaming checks.
  if (options.guidedStream.enabled)
    json["guided_stream"] = {{"max_backtracks", options.guidedStream.maxBacktracks},
                             {"continue", solve::continueModeName(options.guidedStream.continueMode)}};
  return json;
}

Result<EvalOptions> optionsFromJson(const nlohmann::json &json) {
  try {
    EvalOptions options;
    options.suite = json.at("suite").get<std::string>();
    options.samples = json.at("samples").get<int>();
    options.ks = json.at("ks").get<std::vector<int>>();
    options.rounds = json.at("rounds").get<int>();
    options.strategies.clear();
    for (const nlohmann::json &name : json.at("strategies")) {
      std::optional<prompt::Strategy> s = prompt::parseStrategy(name.get<std::string>());
      if (!s) return makeError(ErrorKind::InvalidInput, "eval parameters: unknown strategy " + name.dump());
      options.strategies.push_back(*s);
    }
    options.temperature = json.at("temperature").get<double>();
    if (!json.at("top_p").is_null()) options.topP = json.at("top_p").get<double>();
    options.maxTokens.reset();
    if (!json.at("max_tokens").is_null()) options.maxTokens = json.at("max_tokens").get<int>();
    options.seed = json.at("seed").get<uint64_t>();
    options.stream = json.at("stream").get<bool>();
    options.concurrency = json.at("concurrency").get<int>();
    options.arch = json.at("arch").get<std::string>();
    options.trials = json.at("trials").get<int>();
    options.timingRounds = json.at("timing_rounds").get<int>();
    options.launchTimeoutMs = json.at("launch_timeout_ms").get<uint32_t>();
    options.noSass = json.value("no_sass", false); // evals recorded before --no-sass existed had SASS
    if (json.contains("shard") && !json.at("shard").is_null())
      options.shard = Shard{json.at("shard").at("index").get<int>(), json.at("shard").at("count").get<int>()};
    if (json.contains("guided_stream")) {
      options.guidedStream.enabled = true;
      options.guidedStream.maxBacktracks = json.at("guided_stream").at("max_backtracks").get<int>();
      std::optional<solve::ContinueMode> mode =
          solve::parseContinueMode(json.at("guided_stream").at("continue").get<std::string>());
      if (!mode) return makeError(ErrorKind::InvalidInput, "eval parameters: unknown guided_stream.continue");
      options.guidedStream.continueMode = *mode;
    }
    return options;
  } catch (const nlohmann::json::exception &error) {
    return makeError(ErrorKind::InvalidInput, std::string("eval parameters: ") + error.what());
  }
}

Result<std::vector<const tasks::TaskSpec *>> selectTasks(const tasks::Suite &suite, const std::string &name) {
  std::vector<const tasks::TaskSpec *> selected;
  if (name == "core" || name == "L1" || name == "L2" || name == "L3") {
    int level = name == "core" ? 0 : name[1] - '0';
    for (const tasks::TaskSpec &task : suite.tasks)
      if (level == 0 || task.level == level) selected.push_back(&task);
  } else {
    std::stringstream stream(name);
    std::string item;
    while (std::getline(stream, item, ',')) {
      if (item.empty()) continue;
      auto found = std::find_if(suite.tasks.begin(), suite.tasks.end(),
                                [&](const tasks::TaskSpec &task) { return task.name == item; });
      if (found == suite.tasks.end()) {
        std::string names;
        for (const tasks::TaskSpec &task : suite.tasks) names += (names.empty() ? "" : ", ") + task.name;
        return makeError(ErrorKind::InvalidInput, "--suite: '" + item +
                                                      "' is neither core, L1, L2, L3 nor a task (tasks: " + names + ")");
      }
      if (std::find(selected.begin(), selected.end(), &*found) == selected.end()) selected.push_back(&*found);
    }
    // Suite order, whatever order the names came in: the version must not depend on it.
    std::sort(selected.begin(), selected.end(), [&](const tasks::TaskSpec *a, const tasks::TaskSpec *b) {
      return std::tie(a->level, a->name) < std::tie(b->level, b->name);
    });
  }
  if (selected.empty()) return makeError(ErrorKind::InvalidInput, "--suite '" + name + "' selects no task");
  return selected;
}

std::string suiteVersion(const std::string &name, const std::vector<const tasks::TaskSpec *> &tasks) {
  std::string bytes;
  for (const tasks::TaskSpec *task : tasks) {
    std::ifstream toml(task->folder / "task.toml", std::ios::binary);
    std::stringstream text;
    text << toml.rdbuf();
    bytes += task->name + '\0' + text.str() + '\0' + task->referenceSource + '\0';
  }
  return name + "@" + sha256Hex(bytes).substr(0, 12);
}

namespace {

/// What the figures of an eval are computed over: its recorded parameters and provenance.
MetricsOptions metricsOptionsOf(const store::EvalRecord &record) {
  MetricsOptions options;
  if (record.parameters.is_object())
    if (Result<EvalOptions> recorded = optionsFromJson(record.parameters)) {
      options.ks = recorded->ks;
      options.samples = std::max(1, recorded->samples);
      options.rounds = std::max(1, recorded->rounds);
    }
  if (record.provenance.is_object() && record.provenance.contains("timed") && record.provenance["timed"].is_boolean())
    options.timed = record.provenance["timed"].get<bool>();
  return options;
}

/// The tasks of the eval without a run, as runEval recorded them ("not_run").
std::vector<TaskNotRun> notRunOf(const store::EvalRecord &record, const std::vector<store::EvalRun> &runs) {
  std::vector<TaskNotRun> notRun;
  if (!record.metrics.is_object() || !record.metrics.contains("not_run") || !record.metrics["not_run"].is_array())
    return notRun;
  for (const nlohmann::json &entry : record.metrics["not_run"]) {
    if (!entry.is_object() || !entry.contains("task") || !entry["task"].is_string()) continue;
    std::string task = entry["task"].get<std::string>();
    // A run linked since (a resume) speaks for itself.
    if (std::any_of(runs.begin(), runs.end(), [&](const store::EvalRun &run) { return run.task == task; })) continue;
    int level = entry.contains("level") && entry["level"].is_number_integer() ? entry["level"].get<int>() : 0;
    std::vector<int> slots;
    if (entry.contains("slots") && entry["slots"].is_array())
      for (const nlohmann::json &slot : entry["slots"])
        if (slot.is_number_integer()) slots.push_back(slot.get<int>());
    notRun.push_back({task, level, std::move(slots)});
  }
  return notRun;
}

int levelOf(const store::RunRecord &run) {
  const nlohmann::json &provenance = run.provenance;
  return provenance.is_object() && provenance.contains("task_level") && provenance["task_level"].is_number_integer()
             ? provenance["task_level"].get<int>()
             : 0;
}

/// The metrics of an eval's runs, in run order, then the tasks that did not run.
Result<EvalMetrics> metricsOf(store::Store &store, const store::EvalRecord &record) {
  Result<std::vector<store::EvalRun>> runs = store.evalRuns(record.id);
  if (!runs) return runs.error();
  std::vector<store::RunData> data;
  std::vector<int> levels;
  for (const store::EvalRun &run : *runs) {
    Result<store::RunData> loaded = store.load(run.runId);
    if (!loaded) return loaded.error();
    levels.push_back(levelOf(loaded->run));
    data.push_back(std::move(loaded.value()));
  }
  return evalMetrics(data, levels, metricsOptionsOf(record), notRunOf(record, *runs));
}

nlohmann::json documentOf(const store::EvalRecord &record, const std::string &status, const nlohmann::json &metrics) {
  nlohmann::json document = {{"eval", record.id},
                             {"created_at", record.createdAt},
                             {"updated_at", record.updatedAt},
                             {"model", record.model},
                             {"suite", record.suite},
                             {"suite_version", record.suiteVersion},
                             {"status", status},
                             {"parameters", record.parameters},
                             {"provenance", record.provenance},
                             {"metrics", metrics}};
  if (record.metrics.is_object() && record.metrics.contains("errors")) document["errors"] = record.metrics["errors"];
  return document;
}

/// Whether the task's run needs nothing more: done, and every sample has its completions.
Result<bool> runIsComplete(store::Store &store, int64_t runId, int level, const MetricsOptions &options) {
  Result<store::RunData> data = store.load(runId);
  if (!data) return data.error();
  if (data->run.runStatus() != store::RunStatus::Done) return false;
  return taskMetrics(*data, level, options).noCompletion == 0;
}

} // namespace

store::EvalStatus finishedStatus(const EvalMetrics &metrics) {
  if (metrics.overall.noCompletion == 0 && metrics.overall.samples > 0) return store::EvalStatus::Complete;
  if (metrics.overall.samples == 0) return store::EvalStatus::InfraError;
  return store::EvalStatus::Incomplete;
}

Result<nlohmann::json> evalDocument(store::Store &store, int64_t evalId) {
  Result<store::EvalRecord> record = store.evalRecord(evalId);
  if (!record) return record.error();
  Result<EvalMetrics> metrics = metricsOf(store, *record);
  if (!metrics) return metrics.error();
  // A finished eval's status follows from its runs; "done" is how evals were
  // recorded before incomplete and infra-error existed.
  std::string status = record->status;
  std::optional<store::EvalStatus> stored = record->evalStatus();
  if (status == "done" || stored == store::EvalStatus::Complete || stored == store::EvalStatus::Incomplete ||
      stored == store::EvalStatus::InfraError)
    status = store::evalStatusName(finishedStatus(*metrics));
  return documentOf(*record, status, toJson(*metrics));
}

namespace {

/// One task's share of the eval for this process.
struct TaskJob {
  const tasks::TaskSpec *task = nullptr;
  int position = 0;                  ///< its place among the eval's tasks
  std::optional<int64_t> resumeRun;  ///< its run, when a resume continues it
  std::vector<int> slots;            ///< its samples in this shard; empty: all
  int samples = 0;                   ///< how many samples that is
};

/// How many tasks run at once: with -j 1 one (requests one at a time, tasks
/// in suite order); otherwise enough slot threads for about twice the
/// requests allowed in flight, so that while some slots wait for the gate
/// (or for their round's last answer) others keep the pool full.
int tasksAtOnce(int concurrency, int threadsPerTask, size_t jobs) {
  if (concurrency <= 1 || jobs <= 1) return 1;
  int wanted = (2 * concurrency + threadsPerTask - 1) / threadsPerTask;
  return std::clamp(wanted, 1, static_cast<int>(jobs));
}

} // namespace

Result<EvalOutcome> runEval(EvalContext &context, const EvalOptions &requested, std::optional<int64_t> resumeEvalId) {
  EvalOptions options = requested;
  int64_t evalId = 0;
  std::map<std::string, int64_t> existingRuns;
  if (resumeEvalId) {
    Result<store::EvalRecord> record = context.store.evalRecord(*resumeEvalId);
    if (!record) return record.error();
    Result<EvalOptions> recorded = optionsFromJson(record->parameters);
    if (!recorded) return recorded.error();
    if (requested.shard && requested.shard != recorded->shard)
      return makeError(ErrorKind::InvalidInput,
                       fmt::format("eval {} is {}; --shard {} cannot change that", *resumeEvalId,
                                   recorded->shard ? "shard " + shardName(*recorded->shard) : "not a shard",
                                   shardName(*requested.shard)));
    options = std::move(recorded.value());
    options.concurrency = requested.concurrency; // this process's, not the eval's
    evalId = *resumeEvalId;
    Result<std::vector<store::EvalRun>> runs = context.store.evalRuns(evalId);
    if (!runs) return runs.error();
    for (const store::EvalRun &run : *runs) existingRuns[run.task] = run.runId;
  }
  options.samples = std::max(1, options.samples);
  options.rounds = std::max(1, options.rounds);
  options.concurrency = std::max(1, options.concurrency);
  std::sort(options.ks.begin(), options.ks.end());
  options.ks.erase(std::unique(options.ks.begin(), options.ks.end()), options.ks.end());
  for (int k : options.ks)
    if (k < 1 || k > options.samples)
      return makeError(ErrorKind::InvalidInput,
                       fmt::format("pass@{} needs at least {} samples per task (--samples is {})", k, k, options.samples));

  Result<std::vector<const tasks::TaskSpec *>> selected = selectTasks(context.suite, options.suite);
  if (!selected) return selected.error();
  std::string version = suiteVersion(options.suite, *selected);
  const exec::DeviceProperties &device = context.executor.properties();
  bool emulated = context.executor.moduleFormat() == exec::ModuleFormat::Ptx;

  if (resumeEvalId) {
    Result<store::EvalRecord> record = context.store.evalRecord(evalId);
    if (!record) return record.error();
    if (record->suiteVersion != version)
      return makeError(ErrorKind::InvalidInput,
                       fmt::format("eval {} was made on suite version {}, the tasks here are {}: its tasks changed "
                                   "since, so it cannot be resumed",
                                   evalId, record->suiteVersion, version));
  } else {
    store::EvalRecord record;
    record.model = context.modelSpec;
    record.suite = options.suite;
    record.suiteVersion = version;
    record.parameters = optionsToJson(options);
    nlohmann::json provenance = context.provenance.is_object() ? context.provenance : nlohmann::json::object();
    provenance["device"] = device.name;
    provenance["executor"] = device.backend;
    provenance["driver_version"] = device.driverVersion;
    provenance["arch"] = options.arch;
    provenance["backend"] = context.backend.describe();
    provenance["timed"] = !emulated;
    record.provenance = std::move(provenance);
    Result<int64_t> created = context.store.createEval(record);
    if (!created) return created.error();
    evalId = *created;
  }
  // Running while this process works on it (a killed process leaves it so).
  if (Result<void> marked = context.store.updateEval(evalId, store::EvalStatus::Running, nlohmann::json::object());
      !marked)
    return marked.error();

  MetricsOptions metricsOptions;
  metricsOptions.ks = options.ks;
  metricsOptions.samples = options.samples;
  metricsOptions.rounds = options.rounds;

  std::mutex mutex; // errors, notRun, pending and the progress callback
  auto say = [&](const std::string &line) {
    if (!context.onProgress) return;
    std::lock_guard lock(mutex);
    context.onProgress(line);
  };
  nlohmann::json errors = nlohmann::json::array();
  nlohmann::json notRun = nlohmann::json::array();
  bool pending = false;
  auto notRunEntry = [&](const TaskJob &job, const std::string &reason) {
    nlohmann::json entry = {{"task", job.task->name}, {"level", job.task->level}, {"reason", reason}};
    if (options.shard) entry["slots"] = job.slots;
    return entry;
  };

  // What this process has to do, task by task: a shard's share, and of that
  // what a resume has not finished yet.
  std::vector<TaskJob> jobs;
  int totalSamples = 0, samplesDone = 0;
  for (size_t position = 0; position < selected->size(); ++position) {
    TaskJob job;
    job.task = (*selected)[position];
    job.position = static_cast<int>(position);
    if (options.shard) {
      job.slots = shardSlots(*options.shard, job.position, options.samples);
      if (job.slots.empty()) continue; // every sample of this task is another shard's
    }
    job.samples = options.shard ? static_cast<int>(job.slots.size()) : options.samples;
    totalSamples += job.samples;
    if (auto found = existingRuns.find(job.task->name); found != existingRuns.end()) {
      Result<bool> complete = runIsComplete(context.store, found->second, job.task->level, metricsOptions);
      if (!complete) return complete.error();
      if (*complete) {
        samplesDone += job.samples;
        continue;
      }
      job.resumeRun = found->second;
    }
    jobs.push_back(std::move(job));
  }

  ProgressMeter meter(totalSamples, options.rounds, context.price);
  meter.alreadyDone(samplesDone);
  auto showProgress = [&](bool atEnd) {
    if (!context.onProgress) return;
    std::optional<std::string> line = atEnd ? meter.finalLine() : meter.lineIfDue();
    if (line) say(*line);
  };

  // One pool of requests and one gate for every task.
  solve::RequestLimit requests(options.concurrency);
  std::mutex gate;
  int largestShare = 1;
  for (const TaskJob &job : jobs) largestShare = std::max(largestShare, job.samples);
  const int threadsPerTask = std::min(options.concurrency, largestShare);
  const int parallelTasks = tasksAtOnce(options.concurrency, threadsPerTask, jobs.size());

  auto runTask = [&](const TaskJob &job) -> Result<void> {
    const tasks::TaskSpec *task = job.task;
    if (context.stop.stop_requested()) {
      if (!job.resumeRun) {
        std::lock_guard lock(mutex);
        notRun.push_back(notRunEntry(job, "interrupted"));
      }
      return {};
    }
    solve::SolveOptions solveOptions;
    solveOptions.rounds = options.rounds;
    solveOptions.candidates = options.samples;
    solveOptions.slots = job.slots;
    solveOptions.strategies = options.strategies;
    solveOptions.tendencies = {""}; // independent samples: no stated tendency
    solveOptions.temperatures = {options.temperature};
    solveOptions.topP = options.topP;
    solveOptions.maxTokens = options.maxTokens;
    solveOptions.seed = options.seed;
    solveOptions.stream = options.stream;
    solveOptions.guidedStream = options.guidedStream;
    // The slots of a round each get a thread; the shared pool bounds their requests.
    solveOptions.concurrency = std::min(threadsPerTask, std::max(1, job.samples));
    solveOptions.arch = options.arch;
    solveOptions.check.shapeIndices = emulated ? task->smallShapes : std::vector<size_t>{};
    // solveOptions.check.seed stays unset: each check's seed derives from the
    // eval's seed and the candidate's text (recorded in each result).
    solveOptions.check.trials = options.trials;
    solveOptions.check.timingRounds = options.timingRounds;
    solveOptions.check.launchTimeoutMs = options.launchTimeoutMs;
    solveOptions.check.benchmark = !emulated;
    solveOptions.check.profile = emulated; // the optimize prompts' estimate when nothing is timed
    solveOptions.check.sanitizer = emulated ? nullptr : context.sanitizer;
    if (!emulated) solveOptions.check.sanitizerUnavailable = context.sanitizerUnavailable;
    solveOptions.noSass = options.noSass;

    say(fmt::format("[{}/{}] {}: {}", job.position + 1, selected->size(), task->name,
                    job.resumeRun ? "resuming run " + std::to_string(*job.resumeRun) : "starting"));
    solve::SolveContext solveContext{*task,          context.backend,  context.modelSpec, context.executor,
                                     context.store,  context.templates, context.provenance, {},
                                     context.stop, {}};
    solveContext.provenance["task_level"] = task->level;
    solveContext.provenance["eval"] = evalId;
    // Linked as soon as it exists: a resume after a kill finds it (and its answers).
    solveContext.onRunCreated = [&](int64_t runId) {
      return context.store.linkEvalRun(evalId, job.position, task->name, runId);
    };
    solveContext.requests = &requests;
    solveContext.requestPriority = job.position;
    if (context.check) {
      // A remote gate queues checks itself: each run keeps its own lock.
      solveContext.check = [&context, task](const verify::Candidate &candidate, const verify::CheckOptions &options) {
        return context.check(*task, candidate, options);
      };
    } else {
      solveContext.gate = &gate;
    }
    solveContext.onAttemptDone = [&](const solve::AttemptDone &done) {
      meter.attemptDone(job.position, done.slot, done.round, done.asked);
      showProgress(false);
    };
    solveContext.onTokens = [&](int64_t promptTokens, int64_t completionTokens) {
      meter.addTokens(promptTokens, completionTokens);
    };
    Result<solve::SolveOutcome> outcome = solve::solve(solveContext, solveOptions, job.resumeRun);
    if (!outcome) {
      {
        std::lock_guard lock(mutex);
        errors.push_back({{"task", task->name}, {"error", outcome.error().message}});
        notRun.push_back(notRunEntry(job, outcome.error().message));
      }
      say(fmt::format("  {}: not run: {}", task->name, outcome.error().message));
      return {};
    }
    if (Result<void> linkedRun = context.store.linkEvalRun(evalId, job.position, task->name, outcome->runId);
        !linkedRun)
      return linkedRun.error();
    if (outcome->status == store::RunStatus::Pending) {
      std::lock_guard lock(mutex);
      pending = true;
    }
    if (context.onProgress) {
      const nlohmann::json &counts = outcome->summary.contains("counts") ? outcome->summary["counts"] : nlohmann::json();
      std::string missing;
      if (Result<store::RunData> data = context.store.load(outcome->runId))
        if (int noCompletion = taskMetrics(*data, task->level, metricsOptions).noCompletion; noCompletion > 0)
          missing = fmt::format(" ({} of {} samples without a completion)", noCompletion, job.samples);
      say(fmt::format("  {}: run {} {}: {}{}", task->name, outcome->runId, store::runStatusName(outcome->status),
                      counts.is_object() ? counts.dump() : "{}", missing));
    }
    return {};
  };

  // The tasks in suite order, `parallelTasks` at a time.
  std::atomic<size_t> nextJob{0};
  std::optional<Error> storeFailure;
  auto worker = [&] {
    for (size_t i = nextJob++; i < jobs.size(); i = nextJob++) {
      if (Result<void> ran = runTask(jobs[i]); !ran) {
        std::lock_guard lock(mutex);
        if (!storeFailure) storeFailure = ran.error();
      }
    }
  };
  {
    std::vector<std::jthread> threads;
    for (int i = 1; i < parallelTasks; ++i) threads.emplace_back(worker);
    worker();
  }
  if (storeFailure) return *storeFailure;
  if (totalSamples > 0 && !jobs.empty()) showProgress(true);

  // In suite order, whichever task finished first.
  auto byPosition = [&](nlohmann::json &list) {
    auto positionOf = [&](const nlohmann::json &entry) {
      std::string name = entry.value("task", "");
      for (size_t i = 0; i < selected->size(); ++i)
        if ((*selected)[i]->name == name) return i;
      return selected->size();
    };
    std::vector<nlohmann::json> entries(list.begin(), list.end());
    std::stable_sort(entries.begin(), entries.end(),
                     [&](const nlohmann::json &a, const nlohmann::json &b) { return positionOf(a) < positionOf(b); });
    list = entries;
  };
  byPosition(errors);
  byPosition(notRun);

  // Recorded first: the metrics read which tasks did not run from the record.
  nlohmann::json stored = nlohmann::json::object();
  if (!errors.empty()) stored["errors"] = errors;
  if (!notRun.empty()) stored["not_run"] = notRun;
  if (Result<void> updated = context.store.updateEval(evalId, store::EvalStatus::Running, stored); !updated)
    return updated.error();
  Result<store::EvalRecord> record = context.store.evalRecord(evalId);
  if (!record) return record.error();
  Result<EvalMetrics> metrics = metricsOf(context.store, *record);
  if (!metrics) return metrics.error();

  store::EvalStatus status = context.stop.stop_requested() ? store::EvalStatus::Interrupted
                             : pending                      ? store::EvalStatus::Pending
                                                            : finishedStatus(*metrics);
  nlohmann::json metricsJson = toJson(*metrics);
  metricsJson.update(stored);
  if (Result<void> updated = context.store.updateEval(evalId, status, metricsJson); !updated) return updated.error();
  Result<nlohmann::json> document = evalDocument(context.store, evalId);
  if (!document) return document.error();
  EvalOutcome outcome{evalId, status, std::move(document.value())};
  outcome.peakRequestsInFlight = requests.peak();
  outcome.tasksAtOnce = parallelTasks;
  return outcome;
}

} // namespace ptxforge::eval
