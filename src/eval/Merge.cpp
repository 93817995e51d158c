// Merging an eval's shards (Merge.h): check that they are the shards of one
// eval, copy each task's runs into one run of the target store, and record
// the merged eval over those runs.
#include "eval/Merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

namespace ptxforge::eval {

namespace {

using nlohmann::json;

/// One shard, loaded.
struct LoadedShard {
  ShardSource source;
  store::EvalRecord record;
  EvalOptions options;
  Shard shard;
  std::vector<store::EvalRun> runs;
};

/// "eval 3 in shards/a.db (shard 1/2)".
std::string nameOf(const LoadedShard &loaded) {
  return fmt::format("eval {} in {} (shard {})", loaded.record.id,
                     loaded.source.store->path(), shardName(loaded.shard));
}

std::string shortText(const json &value) {
  std::string text = value.dump();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

/// The keys of two objects whose values differ, with both values.
std::vector<std::string> differences(const json &a, const json &b,
                                     const std::set<std::string> &ignored) {
  std::vector<std::string> out;
  std::set<std::string> keys;
  for (const json *object : {&a, &b})
    if (object->is_object())
      for (const auto &[key, value] : object->items())
        keys.insert(key);
  for (const std::string &key : keys) {
    if (ignored.count(key))
      continue;
    json left = a.is_object() && a.contains(key) ? a[key] : json(nullptr);
    json right = b.is_object() && b.contains(key) ? b[key] : json(nullptr);
    if (left != right)
      out.push_back(
          fmt::format("{} {} vs {}", key, shortText(left), shortText(right)));
  }
  return out;
}

std::string joined(const std::vector<std::string> &items, std::string_view separator = ", ") {
  return fmt::format("{}", fmt::join(items, separator));
}

Result<LoadedShard> loadShard(const ShardSource &source) {
  LoadedShard loaded;
  loaded.source = source;
  Result<store::EvalRecord> record = source.store->evalRecord(source.evalId);
  if (!record)
    return record.error();
  loaded.record = std::move(record.value());
  Result<EvalOptions> options = optionsFromJson(loaded.record.parameters);
  if (!options)
    return makeError(options.error().kind,
                     fmt::format("eval {} in {}: {}", source.evalId,
                                 source.store->path(),
                                 options.error().message));
  loaded.options = std::move(options.value());
  if (!loaded.options.shard)
    return makeError(ErrorKind::InvalidInput,
                     fmt::format("eval {} in {} is not a shard (it ran without "
                                 "--shard I/N): only shards merge",
                                 source.evalId, source.store->path()));
  loaded.shard = *loaded.options.shard;
  std::optional<store::EvalStatus> status = loaded.record.evalStatus();
  bool finished = status == store::EvalStatus::Complete ||
                  status == store::EvalStatus::Incomplete ||
                  status == store::EvalStatus::InfraError;
  if (!finished)
    return makeError(ErrorKind::InvalidInput,
                     fmt::format("{} is {}: finish it first (`ptxforge eval "
                                 "--resume {} --store {}`), then merge",
                                 nameOf(loaded), loaded.record.status,
                                 source.evalId, source.store->path()));
  Result<std::vector<store::EvalRun>> runs =
      source.store->evalRuns(source.evalId);
  if (!runs)
    return runs.error();
  loaded.runs = std::move(runs.value());
  return loaded;
}

/// Why `shard` cannot be merged with `first`, if it cannot.
std::optional<std::string> mismatch(const LoadedShard &first,
                                    const LoadedShard &shard) {
  std::vector<std::string> why;
  if (shard.record.model != first.record.model)
    why.push_back(
        fmt::format("model {} vs {}", shard.record.model, first.record.model));
  if (shard.record.suite != first.record.suite)
    why.push_back(
        fmt::format("suite {} vs {}", shard.record.suite, first.record.suite));
  else if (shard.record.suiteVersion != first.record.suiteVersion)
    why.push_back(
        fmt::format("suite version {} vs {} (the tasks changed between them)",
                    shard.record.suiteVersion, first.record.suiteVersion));
  if (shard.shard.count != first.shard.count)
    why.push_back(fmt::format("shard count {} vs {}", shard.shard.count,
                              first.shard.count));
  // -j is how a process ran, not what it measured; the shard is what differs.
  for (std::string &option :
       differences(optionsToJson(shard.options), optionsToJson(first.options),
                   {"concurrency", "shard"}))
    why.push_back("option " + option);
  for (std::string &provenance :
       differences(shard.record.provenance, first.record.provenance, {})) {
    // Figures from different executors, devices or targets are not one eval.
    for (const char *key : {"executor", "device", "arch", "timed"})
      if (provenance.starts_with(std::string(key) + " "))
        why.push_back(provenance);
  }
  if (why.empty())
    return std::nullopt;
  return fmt::format("{} and {} are not shards of one eval: {}", nameOf(shard),
                     nameOf(first), joined(why, "; "));
}

/// What identifies a shard in "merged_from": its shard, eval id and creation
/// time.
using ShardKey = std::tuple<std::string, int64_t, std::string>;

std::set<ShardKey> keysOf(const json &mergedFrom) {
  std::set<ShardKey> keys;
  if (!mergedFrom.is_array())
    return keys;
  for (const json &entry : mergedFrom)
    if (entry.is_object())
      keys.insert({entry.value("shard", ""), entry.value("eval", int64_t{0}),
                   entry.value("created_at", "")});
  return keys;
}

std::string absolutePath(const std::string &path) {
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(path, error);
  return error ? path : absolute.lexically_normal().string();
}

/// One task's runs across the shards.
struct TaskRuns {
  std::string task;
  int position = 0;
  std::vector<std::pair<const LoadedShard *, store::RunData>> runs;
};

/// The status of the merged run: the runs' when they agree, else the first
/// that is not done.
std::string combinedStatus(const TaskRuns &task) {
  std::string status = task.runs.front().second.run.status;
  for (const auto &[shard, data] : task.runs)
    if (data.run.status != store::runStatusName(store::RunStatus::Done))
      return data.run.status;
  return status;
}

const json *memberOf(const json &object, const char *key) {
  return object.is_object() && object.contains(key) ? &object[key] : nullptr;
}

int64_t integerOf(const json *value) {
  return value != nullptr && value->is_number_integer() ? value->get<int64_t>()
                                                        : 0;
}

/// The merged run's summary (Report.h lists the keys): counts, tokens and
/// candidates summed, rounds combined, the best of the shards' bests.
json combinedSummary(
    const TaskRuns &task,
    const std::vector<std::map<int64_t, int64_t>> &candidateIds,
    const json &mergedFrom) {
  json summary = json::object();
  json counts = json::object();
  int64_t promptTokens = 0, completionTokens = 0, candidates = 0;
  double wall = 0;
  std::map<int, json> rounds;
  std::set<std::string> stoppedBecause;
  json best = nullptr, reference = json::object();
  auto better = [](const json &candidate, const json &current) {
    if (current.is_null())
      return true;
    const json &a = candidate["speedup"], &b = current["speedup"];
    if (a.is_number() != b.is_number())
      return a.is_number();
    if (a.is_number() && a.get<double>() != b.get<double>())
      return a.get<double>() > b.get<double>();
    return std::pair(candidate.value("round", 0), candidate.value("slot", 0)) <
           std::pair(current.value("round", 0), current.value("slot", 0));
  };
  for (size_t i = 0; i < task.runs.size(); ++i) {
    const json &source = task.runs[i].second.run.summary;
    if (!source.is_object())
      continue;
    if (const json *c = memberOf(source, "counts"); c && c->is_object())
      for (const auto &[verdict, n] : c->items())
        counts[verdict] =
            integerOf(memberOf(counts, verdict.c_str())) + integerOf(&n);
    if (const json *tokens = memberOf(source, "tokens")) {
      promptTokens += integerOf(memberOf(*tokens, "prompt"));
      completionTokens += integerOf(memberOf(*tokens, "completion"));
    }
    candidates += integerOf(memberOf(source, "candidates"));
    if (const json *w = memberOf(source, "wall_s"); w && w->is_number())
      wall = std::max(wall, w->get<double>());
    if (const json *s = memberOf(source, "stopped_because");
        s && s->is_string())
      stoppedBecause.insert(s->get<std::string>());
    if (reference.empty())
      if (const json *r = memberOf(source, "reference"); r && r->is_object())
        reference = *r;
    if (const json *b = memberOf(source, "best"); b && b->is_object()) {
      json shardBest = *b;
      auto mapped =
          candidateIds[i].find(integerOf(memberOf(shardBest, "candidate_id")));
      shardBest["candidate_id"] = mapped != candidateIds[i].end()
                                      ? json(mapped->second)
                                      : json(nullptr);
      if (better(shardBest, best)) {
        best = shardBest;
        // nvcc's timing beside the best kernel is the one its shard measured.
        if (const json *r = memberOf(source, "reference"); r && r->is_object())
          reference = *r;
      }
    }
    if (const json *r = memberOf(source, "rounds"); r && r->is_array())
      for (const json &entry : *r) {
        if (!entry.is_object() || !entry.contains("round") ||
            !entry["round"].is_number_integer())
          continue;
        int round = entry["round"].get<int>();
        json &merged = rounds[round];
        if (merged.is_null())
          merged = {{"round", round},
                    {"best_speedup", nullptr},
                    {"round_best_speedup", nullptr},
                    {"has_correct", false},
                    {"counts", json::object()}};
        for (const char *key : {"best_speedup", "round_best_speedup"})
          if (const json *v = memberOf(entry, key);
              v && v->is_number() &&
              (merged[key].is_null() ||
               v->get<double>() > merged[key].get<double>()))
            merged[key] = *v;
        if (const json *h = memberOf(entry, "has_correct");
            h && h->is_boolean() && h->get<bool>())
          merged["has_correct"] = true;
        if (const json *c = memberOf(entry, "counts"); c && c->is_object())
          for (const auto &[verdict, n] : c->items())
            merged["counts"][verdict] =
                integerOf(memberOf(merged["counts"], verdict.c_str())) +
                integerOf(&n);
      }
  }
  summary["best"] = best;
  json roundList = json::array();
  for (auto &[round, entry] : rounds)
    roundList.push_back(entry);
  summary["rounds"] = roundList;
  summary["reference"] = reference;
  summary["tokens"] = {{"prompt", promptTokens},
                       {"completion", completionTokens}};
  summary["wall_s"] = wall; // the shards ran side by side: the longest of them
  summary["stopped_because"] =
      stoppedBecause.size() == 1
          ? *stoppedBecause.begin()
          : "shards: " + joined(std::vector<std::string>(stoppedBecause.begin(),
                                                         stoppedBecause.end()),
                                "; ");
  summary["counts"] = counts;
  summary["candidates"] = candidates;
  summary["merged_from"] = mergedFrom;
  return summary;
}

} // namespace

Result<std::vector<int64_t>> shardEvals(store::Store &store) {
  Result<std::vector<store::EvalRecord>> records = store.evals();
  if (!records)
    return records.error();
  std::vector<int64_t> ids;
  for (const store::EvalRecord &record : *records)
    if (record.parameters.is_object() && record.parameters.contains("shard") &&
        record.parameters["shard"].is_object())
      ids.push_back(record.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

Result<MergeOutcome> mergeShards(const std::vector<ShardSource> &sources,
                                 store::Store &into, const json &provenance) {
  if (sources.empty())
    return makeError(ErrorKind::InvalidInput, "no shards to merge");
  std::vector<LoadedShard> shards;
  for (const ShardSource &source : sources) {
    Result<LoadedShard> loaded = loadShard(source);
    if (!loaded)
      return loaded.error();
    shards.push_back(std::move(loaded.value()));
  }
  const LoadedShard &first = shards.front();
  for (const LoadedShard &shard : shards)
    if (std::optional<std::string> why = mismatch(first, shard))
      return makeError(ErrorKind::InvalidInput, *why);

  // Each shard exactly once.
  std::map<int, const LoadedShard *> byIndex;
  for (const LoadedShard &shard : shards) {
    auto [at, inserted] = byIndex.emplace(shard.shard.index, &shard);
    if (!inserted)
      return makeError(
          ErrorKind::InvalidInput,
          fmt::format(
              "shard {} is given twice: {} and {} (their samples overlap); "
              "name one of them",
              shardName(shard.shard), nameOf(*at->second), nameOf(shard)));
  }
  std::vector<std::string> missing;
  for (int index = 1; index <= first.shard.count; ++index)
    if (!byIndex.count(index))
      missing.push_back(shardName(Shard{index, first.shard.count}));
  if (!missing.empty()) {
    std::vector<std::string> have;
    for (const auto &[index, shard] : byIndex)
      have.push_back(shardName(shard->shard));
    return makeError(
        ErrorKind::InvalidInput,
        fmt::format(
            "shard{} {} missing (given: {}): every shard of the eval is needed",
            missing.size() == 1 ? "" : "s", joined(missing), joined(have)));
  }

  // Shard order from here on.
  std::vector<const LoadedShard *> ordered;
  for (const auto &[index, shard] : byIndex)
    ordered.push_back(shard);
  json mergedFrom = json::array();
  for (const LoadedShard *shard : ordered)
    mergedFrom.push_back(
        {{"shard", shardName(shard->shard)},
         {"eval", shard->record.id},
         {"store", absolutePath(shard->source.store->path())},
         {"status", shard->record.status},
         {"device", shard->record.provenance.value("device", "")},
         {"created_at", shard->record.createdAt}});

  // Merged before into this store?
  if (Result<std::vector<store::EvalRecord>> evals = into.evals(); !evals) {
    return evals.error();
  } else {
    std::set<ShardKey> wanted = keysOf(mergedFrom);
    for (const store::EvalRecord &record : *evals)
      if (const json *from = memberOf(record.provenance, "merged_from");
          from && keysOf(*from) == wanted)
        return makeError(
            ErrorKind::InvalidInput,
            fmt::format("these shards were merged before: eval {} in {} "
                        "(`ptxforge eval show {} --store {}`)",
                        record.id, into.path(), record.id, into.path()));
  }

  // Each task's runs, in the order of the suite.
  std::map<std::string, TaskRuns> tasks;
  json errors = json::array();
  std::map<std::string, json> notRun; // task -> entry, slots united
  for (const LoadedShard *shard : ordered) {
    for (const store::EvalRun &linked : shard->runs) {
      Result<store::RunData> data = shard->source.store->load(linked.runId);
      if (!data)
        return data.error();
      TaskRuns &task = tasks[linked.task];
      task.task = linked.task;
      task.position = linked.position;
      task.runs.emplace_back(shard, std::move(data.value()));
    }
    const json &metrics = shard->record.metrics;
    if (const json *list = memberOf(metrics, "errors");
        list && list->is_array())
      for (const json &entry : *list)
        errors.push_back(entry);
    if (const json *list = memberOf(metrics, "not_run");
        list && list->is_array())
      for (const json &entry : *list) {
        if (!entry.is_object() || !entry.contains("task") ||
            !entry["task"].is_string())
          continue;
        json &merged = notRun[entry["task"].get<std::string>()];
        if (merged.is_null()) {
          merged = entry;
          merged["slots"] = json::array();
        }
        if (entry.contains("slots") && entry["slots"].is_array())
          for (const json &slot : entry["slots"])
            merged["slots"].push_back(slot);
      }
  }
  std::vector<TaskRuns *> taskOrder;
  for (auto &[name, task] : tasks)
    taskOrder.push_back(&task);
  std::sort(taskOrder.begin(), taskOrder.end(),
            [](const TaskRuns *a, const TaskRuns *b) {
              return a->position < b->position;
            });

  // The merged eval, then one run per task.
  store::EvalRecord record;
  record.model = first.record.model;
  record.suite = first.record.suite;
  record.suiteVersion = first.record.suiteVersion;
  EvalOptions options = first.options;
  options.shard.reset();
  record.parameters = optionsToJson(options);
  record.provenance = first.record.provenance.is_object()
                          ? first.record.provenance
                          : json::object();
  if (provenance.is_object())
    record.provenance.update(provenance);
  record.provenance["merged_from"] = mergedFrom;
  Result<int64_t> created = into.createEval(record);
  if (!created)
    return created.error();
  const int64_t evalId = *created;

  for (TaskRuns *task : taskOrder) {
    const store::RunData &firstRun = task->runs.front().second;
    store::RunRecord run = firstRun.run;
    if (run.parameters.is_object())
      run.parameters.erase("slots");
    json runsFrom = json::array();
    for (const auto &[shard, data] : task->runs)
      runsFrom.push_back(
          {{"shard", shardName(shard->shard)},
           {"store", absolutePath(shard->source.store->path())},
           {"run", data.run.id},
           {"slots", data.run.parameters.is_object() &&
                             data.run.parameters.contains("slots")
                         ? data.run.parameters["slots"]
                         : json(nullptr)}});
    if (!run.provenance.is_object())
      run.provenance = json::object();
    run.provenance["eval"] = evalId;
    run.provenance["merged_from"] = runsFrom;
    run.status = combinedStatus(*task);
    run.summary = json::object();
    Result<int64_t> runId = into.createRun(run);
    if (!runId)
      return runId.error();
    std::vector<std::map<int64_t, int64_t>> candidateIds;
    for (const auto &[shard, data] : task->runs) {
      Result<std::map<int64_t, int64_t>> copied =
          into.copyAttempts(*runId, data.attempts);
      if (!copied)
        return makeError(copied.error().kind,
                         fmt::format("{}: task {}: {}", nameOf(*shard),
                                     task->task, copied.error().message));
      candidateIds.push_back(std::move(copied.value()));
    }
    if (Result<void> updated = into.updateRun(
            *runId, run.status, combinedSummary(*task, candidateIds, runsFrom));
        !updated)
      return updated.error();
    if (Result<void> linked =
            into.linkEvalRun(evalId, task->position, task->task, *runId);
        !linked)
      return linked.error();
  }

  // Tasks no shard ran: their samples have no completion, as in the shards.
  json stored = json::object();
  json notRunList = json::array();
  for (auto &[name, entry] : notRun) {
    if (tasks.count(name))
      continue; // its run speaks for the slots it lacks
    std::set<int> slots;
    for (const json &slot : entry["slots"])
      if (slot.is_number_integer())
        slots.insert(slot.get<int>());
    if (static_cast<int>(slots.size()) >= options.samples)
      entry.erase("slots");
    else
      entry["slots"] = std::vector<int>(slots.begin(), slots.end());
    notRunList.push_back(entry);
  }
  if (!errors.empty())
    stored["errors"] = errors;
  if (!notRunList.empty())
    stored["not_run"] = notRunList;
  // Recorded as finished: evalDocument works out complete, incomplete or
  // infra-error from the runs.
  if (Result<void> updated =
          into.updateEval(evalId, store::EvalStatus::Complete, stored);
      !updated)
    return updated.error();
  Result<json> document = evalDocument(into, evalId);
  if (!document)
    return document.error();
  store::EvalStatus status =
      store::parseEvalStatus((*document)["status"].get<std::string>())
          .value_or(store::EvalStatus::Incomplete);
  json metrics = (*document)["metrics"];
  metrics.update(stored);
  if (Result<void> updated = into.updateEval(evalId, status, metrics); !updated)
    return updated.error();
  document = evalDocument(into, evalId);
  if (!document)
    return document.error();
  return MergeOutcome{evalId, status, std::move(document.value())};
}

} // namespace ptxforge::eval
