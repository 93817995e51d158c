// The solve loop (Solve.h). Resuming is replaying: every step first asks the
// store whether it already happened (a prompt's completion, a candidate's
// result) and only does the work when it did not, so a resumed run follows
// the same path as the interrupted one up to where that one stopped.
#include "solve/Solve.h"

#include "llm/RequestHash.h"
#include "support/Sha256.h"
#include "prompt/Extract.h"
#include "prompt/SassFeedback.h"
#include "ptx/Ast.h"
#include "solve/RunLease.h"
#include "tasks/Inputs.h"
#include "tasks/Reference.h"
#include "toolchain/Compiler.h"
#include "toolchain/Json.h"
#include "toolchain/SassStats.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace ptxforge::solve {

const std::vector<std::string> &defaultTendencies() {
  static const std::vector<std::string> tendencies = {
      "a straightforward kernel that is correct first: one element or row per thread, every access guarded",
      "low register pressure: few live values, reuse registers, no unrolling beyond what pays",
      "wide vector memory access: ld.global.v4 / st.global.v4 on aligned addresses, with a scalar tail",
      "more work per thread: each thread handles several elements, loop unrolled by hand",
      "shared-memory tiling for data that several threads reuse, with bar.sync around each tile",
      "tensor cores (mma.sync) where the task's types allow it, otherwise warp-level shuffles",
  };
  return tendencies;
}

const std::vector<double> &defaultTemperatures() {
  static const std::vector<double> temperatures = {0.2, 0.7, 1.0};
  return temperatures;
}

nlohmann::json optionsToJson(const SolveOptions &options) {
  std::vector<std::string> strategies;
  for (prompt::Strategy s : options.strategies) strategies.push_back(prompt::strategyName(s));
  nlohmann::json json = {
      {"rounds", options.rounds},
      {"candidates", options.candidates},
      {"strategies", strategies},
      {"prompt_parts", prompt::promptParts(options.strategies)}, // what the first attempt's prompt carried
      {"tendencies", options.tendencies.empty() ? defaultTendencies() : options.tendencies},
      {"temperatures", options.temperatures.empty() ? defaultTemperatures() : options.temperatures},
      {"top_p", options.topP ? nlohmann::json(*options.topP) : nlohmann::json(nullptr)},
      {"max_tokens", options.maxTokens ? nlohmann::json(*options.maxTokens) : nlohmann::json(nullptr)},
      {"seed", options.seed},
      {"stream", options.stream},
      {"concurrency", options.concurrency},
      {"max_tokens_total", options.maxTokensTotal},
      {"max_wall_seconds", options.maxWallSeconds},
      {"max_candidates_total", options.maxCandidatesTotal},
      {"objective", options.objective},
      {"arch", options.arch},
      {"no_sass", options.noSass},
      {"check",
       {{"shapes", options.check.shapeIndices},
        {"seed", options.check.seed ? nlohmann::json(*options.check.seed) : nlohmann::json(nullptr)},
        {"trials", options.check.trials},
        {"benchmark", options.check.benchmark},
        {"timing_rounds", options.check.timingRounds},
        {"repetitions_per_round", options.check.repetitionsPerRound},
        {"launch_timeout_ms", options.check.launchTimeoutMs},
        {"lint", options.check.lint}}},
  };
  // Only a shard's runs have it: the parameters of whole runs stay as they were.
  if (!options.slots.empty()) json["slots"] = options.slots;
  if (options.check.profile) json["check"]["profile"] = true; // runs before profiles stay as they were
  // Only runs with streaming checks have it, likewise.
  if (options.guidedStream.enabled)
    json["guided_stream"] = {{"max_backtracks", options.guidedStream.maxBacktracks},
                             {"continue", continueModeName(options.guidedStream.continueMode)}};
  return json;
}

Result<SolveOptions> optionsFromJson(const nlohmann::json &json) {
  // Recorded by optionsToJson; a hand-edited database gets a located error.
  try {
    SolveOptions options;
    options.rounds = json.at("rounds").get<int>();
    options.candidates = json.at("candidates").get<int>();
    options.strategies.clear();
    for (const nlohmann::json &name : json.at("strategies")) {
      std::optional<prompt::Strategy> s = prompt::parseStrategy(name.get<std::string>());
      if (!s) return makeError(ErrorKind::InvalidInput, "run parameters: unknown strategy " + name.dump());
      options.strategies.push_back(*s);
    }
    options.tendencies = json.at("tendencies").get<std::vector<std::string>>();
    options.temperatures = json.at("temperatures").get<std::vector<double>>();
    if (!json.at("top_p").is_null()) options.topP = json.at("top_p").get<double>();
    options.maxTokens.reset();
    if (!json.at("max_tokens").is_null()) options.maxTokens = json.at("max_tokens").get<int>();
    options.seed = json.at("seed").get<uint64_t>();
    options.stream = json.at("stream").get<bool>();
    options.concurrency = json.at("concurrency").get<int>();
    options.maxTokensTotal = json.at("max_tokens_total").get<int64_t>();
    options.maxWallSeconds = json.at("max_wall_seconds").get<double>();
    options.maxCandidatesTotal = json.at("max_candidates_total").get<int>();
    options.objective = json.at("objective").get<std::string>();
    options.arch = json.at("arch").get<std::string>();
    options.noSass = json.value("no_sass", false); // runs recorded before --no-sass existed had SASS
    if (json.contains("slots")) options.slots = json.at("slots").get<std::vector<int>>();
    if (json.contains("guided_stream")) {
      const nlohmann::json &guided = json.at("guided_stream");
      options.guidedStream.enabled = true;
      options.guidedStream.maxBacktracks = guided.at("max_backtracks").get<int>();
      std::optional<ContinueMode> mode = parseContinueMode(guided.at("continue").get<std::string>());
      if (!mode) return makeError(ErrorKind::InvalidInput, "run parameters: unknown guided_stream.continue " + guided.at("continue").dump());
      options.guidedStream.continueMode = *mode;
    }
    const nlohmann::json &check = json.at("check");
    options.check.shapeIndices = check.at("shapes").get<std::vector<size_t>>();
    options.check.seed.reset();
    if (!check.at("seed").is_null()) options.check.seed = check.at("seed").get<uint64_t>();
    options.check.trials = check.at("trials").get<int>();
    options.check.benchmark = check.at("benchmark").get<bool>();
    options.check.timingRounds = check.at("timing_rounds").get<int>();
    options.check.repetitionsPerRound = check.at("repetitions_per_round").get<int>();
    options.check.launchTimeoutMs = check.at("launch_timeout_ms").get<uint32_t>();
    options.check.lint = check.at("lint").get<bool>();
    options.check.profile = check.value("profile", false);
    options.check.arch = options.arch;
    return options;
  } catch (const nlohmann::json::exception &error) {
    return makeError(ErrorKind::InvalidInput, std::string("run parameters: ") + error.what());
  }
}

std::string normalizePtx(std::string_view ptx) {
  std::string out;
  std::string line;
  bool inBlockComment = false;
  auto flush = [&] {
    // Collapse whitespace runs; drop leading/trailing blanks.
    std::string collapsed;
    bool space = false;
    for (char c : line) {
      if (c == ' ' || c == '\t' || c == '\r') {
        space = !collapsed.empty();
        continue;
      }
      if (space) collapsed += ' ';
      space = false;
      collapsed += c;
    }
    if (!collapsed.empty()) out += collapsed + "\n";
    line.clear();
  };
  for (size_t i = 0; i < ptx.size(); ++i) {
    char c = ptx[i];
    if (inBlockComment) {
      if (c == '*' && i + 1 < ptx.size() && ptx[i + 1] == '/') {
        inBlockComment = false;
        ++i;
      } else if (c == '\n') {
        flush();
      }
      continue;
    }
    if (c == '/' && i + 1 < ptx.size() && ptx[i + 1] == '*') {
      // A comment separates tokens like whitespace does.
      inBlockComment = true;
      line += ' ';
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < ptx.size() && ptx[i + 1] == '/') {
      size_t end = ptx.find('\n', i);
      std::string_view comment = ptx.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
      // Launch directives change what runs: they stay.
      std::string_view rest = comment.substr(2);
      while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
      if (rest.starts_with("@ptxforge")) line += comment;
      if (end == std::string_view::npos) break;
      i = end - 1;
      continue;
    }
    if (c == '\n') {
      flush();
      continue;
    }
    line += c;
  }
  flush();
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;

/// The speedup a correct candidate is judged by (verify::headlineBenchmark).
std::optional<double> headlineSpeedup(const verify::CheckResult &result) {
  const verify::BenchmarkReport *headline = verify::headlineBenchmark(result);
  if (!headline || result.verdict != verify::Verdict::Correct) return std::nullopt;
  return headline->speedup;
}

/// When nothing was timed: the emulator profile's estimate of a correct
/// candidate's speedup over the reference (CheckResult::profile), if made.
std::optional<double> estimatedSpeedup(const verify::CheckResult &result) {
  if (result.verdict != verify::Verdict::Correct || headlineSpeedup(result) || !result.profile ||
      !(result.profile->estimatedSpeedup > 0))
    return std::nullopt;
  return result.profile->estimatedSpeedup;
}

/// A slot's line of attempts.
struct SlotState {
  std::optional<prompt::Attempt> last;
  int64_t lastId = 0;
  std::optional<prompt::Attempt> best; ///< its best correct attempt
  int64_t bestId = 0;
  std::optional<double> bestSpeedup;
  std::optional<double> bestEstimate; ///< its estimated speedup, when untimed and profiled
};

/// One candidate's standing, for choosing the run's best.
struct Standing {
  int round = 0, slot = 0;
  int64_t candidateId = 0;
  verify::Verdict verdict = verify::Verdict::NotVerified;
  std::optional<double> speedup;
  std::optional<double> estimate; ///< the emulator profile's estimated speedup, when untimed
  std::string ptx;
};

/// What getCompletion found or got.
struct Answer {
  enum class Status { Complete, Pending, Failed, Skipped } status = Status::Failed;
  std::string text;
  std::string error;
  int64_t promptId = 0; ///< the prompt's row, once recorded
  bool asked = false;   ///< sent to the backend (not read back from the store)
};

class Runner {
public:
  Runner(SolveContext &context, SolveOptions options, int64_t runId)
      : ctx_(context), options_(std::move(options)), runId_(runId), start_(Clock::now()) {
    if (options_.tendencies.empty()) options_.tendencies = defaultTendencies();
    if (options_.temperatures.empty()) options_.temperatures = defaultTemperatures();
    options_.candidates = std::max(1, options_.candidates);
    options_.rounds = std::max(1, options_.rounds);
    options_.concurrency = std::max(1, options_.concurrency);
    options_.check.arch = options_.arch;
    slots_.resize(static_cast<size_t>(options_.candidates));
    // The slots this run works on: the given ones that exist, else all.
    for (int slot : options_.slots)
      if (slot >= 0 && slot < options_.candidates && std::find(active_.begin(), active_.end(), slot) == active_.end())
        active_.push_back(slot);
    std::sort(active_.begin(), active_.end());
    if (active_.empty())
      for (int slot = 0; slot < options_.candidates; ++slot) active_.push_back(slot);
    nvdisasm_ = !options_.noSass && toolchain::findNvdisasm().has_value();
  }

  Result<void> prepareReference(nlohmann::json &referenceSummary) {
    // Compiling is part of the gate: with a shared gate, one task at a time.
    std::lock_guard gateLock(gateMutex());
    Result<tasks::CompiledReference> reference = tasks::compileReference(ctx_.task, options_.arch);
    if (!reference) return makeError(reference.error().kind, "the task's reference: " + reference.error().message);
    referencePtx_ = reference->ptx;
    toolchain::CompileOptions compileOptions;
    compileOptions.arch = options_.arch;
    compileOptions.entryName = ctx_.task.kernel;
    compileOptions.backend = toolchain::gateCompilerBackend();
    Result<toolchain::CompileResult> compiled = toolchain::compilePtx(referencePtx_, compileOptions);
    referenceSummary = nlohmann::json::object();
    if (compiled && compiled->ok) {
      const toolchain::ResourceUsage &r = compiled->resources;
      referenceSummary = {{"registers", r.registers},       {"spill_store_bytes", r.spillStoreBytes},
                          {"spill_load_bytes", r.spillLoadBytes}, {"shared_bytes", r.sharedBytes},
                          {"stack_bytes", r.stackFrameBytes}, {"sass", nullptr},
                          {"timing_ms", nullptr}};
      if (nvdisasm_)
        if (Result<toolchain::SassStats> stats = toolchain::sassStats(compiled->cubin))
          referenceSummary["sass"] = toolchain::toJson(stats->total);
    }
    return {};
  }

  void runRounds() {
    for (int round = 1; round <= options_.rounds; ++round) {
      if (stopReason().has_value()) break;
      runRound(round);
      finishRound(round);
      if (pendingSeen_) {
        stoppedBecause_ = fmt::format("round {}: requests are waiting for batch results", round);
        break;
      }
    }
  }

  store::RunStatus status() const {
    if (ctx_.stop.stop_requested()) return store::RunStatus::Interrupted;
    if (pendingSeen_) return store::RunStatus::Pending;
    if (budgetHit_) return store::RunStatus::Budget;
    return store::RunStatus::Done;
  }

  nlohmann::json summary(const nlohmann::json &reference) {
    std::lock_guard lock(mutex_);
    nlohmann::json summaryJson = nlohmann::json::object();
    std::optional<Standing> best = bestStanding();
    if (best)
      summaryJson["best"] = {{"candidate_id", best->candidateId},
                             {"round", best->round},
                             {"slot", best->slot},
                             {"speedup", best->speedup ? nlohmann::json(*best->speedup) : nlohmann::json(nullptr)},
                             {"estimated_speedup", best->estimate ? nlohmann::json(*best->estimate) : nlohmann::json(nullptr)},
                             {"ranked_by", rankedBy(*best)},
                             {"verdict", verify::verdictName(best->verdict)}};
    else
      summaryJson["best"] = nullptr;
    summaryJson["rounds"] = rounds_;
    nlohmann::json ref = reference;
    if (best && ref.is_object() && !ref.empty() && bestBaselineMs_) ref["timing_ms"] = *bestBaselineMs_;
    summaryJson["reference"] = ref;
    summaryJson["tokens"] = {{"prompt", promptTokens_}, {"completion", completionTokens_}};
    summaryJson["wall_s"] = std::chrono::duration<double>(Clock::now() - start_).count();
    std::string because = stoppedBecause_;
    if (ctx_.stop.stop_requested()) because = "interrupted";
    else if (because.empty()) because = "all rounds ran";
    summaryJson["stopped_because"] = because;
    summaryJson["counts"] = counts_;
    summaryJson["candidates"] = candidatesMade_.load();
    return summaryJson;
  }

  std::optional<Standing> best() {
    std::lock_guard lock(mutex_);
    return bestStanding();
  }

  const std::string &stoppedBecause() const { return stoppedBecause_; }

private:
  // --- budgets -------------------------------------------------------------

  /// Why no new request may start, if one may not.
  std::optional<std::string> stopReason() {
    if (ctx_.stop.stop_requested()) return "interrupted";
    std::lock_guard lock(mutex_);
    std::optional<std::string> reason;
    if (options_.maxTokensTotal > 0 && llm::addTokenCounts(promptTokens_, completionTokens_) >= options_.maxTokensTotal)
      reason = fmt::format("token budget of {} spent", options_.maxTokensTotal);
    else if (options_.maxWallSeconds > 0 &&
             std::chrono::duration<double>(Clock::now() - start_).count() >= options_.maxWallSeconds)
      reason = fmt::format("wall-time budget of {} s spent", options_.maxWallSeconds);
    else if (options_.maxCandidatesTotal > 0 && candidatesMade_.load() >= options_.maxCandidatesTotal)
      reason = fmt::format("candidate budget of {} reached", options_.maxCandidatesTotal);
    if (reason && !budgetHit_) {
      budgetHit_ = true;
      stoppedBecause_ = *reason;
    }
    return reason;
  }

  // --- one round -------------------------------------------------------------

  void runRound(int round) {
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i = next++; i < active_.size(); i = next++) runSlot(round, active_[i]);
    };
    int threads = std::min(options_.concurrency, static_cast<int>(active_.size()));
    std::vector<std::jthread> pool;
    for (int i = 1; i < threads; ++i) pool.emplace_back(worker);
    worker();
  }

  void finishRound(int round) {
    std::lock_guard lock(mutex_);
    std::optional<double> roundBest;
    std::map<std::string, int> roundCounts;
    for (const Standing &s : standings_) {
      if (s.round != round) continue;
      ++roundCounts[verify::verdictName(s.verdict)];
      if (s.verdict == verify::Verdict::Correct && s.speedup && (!roundBest || *s.speedup > *roundBest)) roundBest = s.speedup;
    }
    std::optional<Standing> best = bestStanding();
    auto number = [](const std::optional<double> &v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    rounds_.push_back({{"round", round},
                       {"best_speedup", number(best ? best->speedup : std::nullopt)},
                       {"best_estimated_speedup", number(best ? best->estimate : std::nullopt)},
                       {"round_best_speedup", number(roundBest)},
                       {"has_correct", best.has_value()},
                       {"counts", roundCounts}});
    ProgressEvent event = progressLocked(round, -1, "round");
    event.what = fmt::format("round {} done: {}", round, countsText(roundCounts));
    emit(event);
  }

  void runSlot(int round, int slot) {
    // Told when the attempt ends, by whichever path it leaves.
    bool asked = false;
    struct Done {
      const SolveContext &ctx;
      int round, slot;
      const bool &asked;
      ~Done() {
        if (ctx.onAttemptDone) ctx.onAttemptDone(AttemptDone{round, slot, asked});
      }
    } done{ctx_, round, slot, asked};
    SlotState state;
    {
      std::lock_guard lock(mutex_);
      state = slots_[static_cast<size_t>(slot)];
    }
    std::string kind = "initial";
    std::vector<prompt::Strategy> strategies = options_.strategies;
    prompt::PromptInput input(ctx_.task, options_.arch, referencePtx_);
    input.tendency = options_.tendencies[static_cast<size_t>(slot) % options_.tendencies.size()];
    input.objective = options_.objective;
    std::optional<int64_t> parent;
    auto without = [&](prompt::Strategy s) { std::erase(strategies, s); };
    if (state.last) {
      without(prompt::Strategy::Skeleton);
      if (state.last->result.verdict == verify::Verdict::Correct && state.best) {
        kind = "optimize";
        strategies.push_back(prompt::Strategy::Optimize);
        input.previous = state.best;
        parent = state.bestId;
        // Where the time goes: its SASS hot loop against nvcc's (empty without nvdisasm).
        if (nvdisasm_)
          input.sassHotLoop = prompt::hotLoopComparison(state.best->ptx, referencePtx_, options_.arch, ctx_.task.kernel);
      } else {
        kind = "repair";
        strategies.push_back(prompt::Strategy::Repair);
        input.previous = state.last;
        parent = state.lastId;
      }
    }
    double temperature = options_.temperatures[static_cast<size_t>(slot) % options_.temperatures.size()];
    int64_t seed = static_cast<int64_t>(options_.seed) + static_cast<int64_t>(round - 1) * options_.candidates + slot;

    bool skeleton = std::find(strategies.begin(), strategies.end(), prompt::Strategy::Skeleton) != strategies.end();
    if (skeleton) {
      Answer answer = ask(round, slot, "skeleton", strategies, input, temperature, seed, parent);
      asked = asked || answer.asked;
      if (answer.status != Answer::Status::Complete) return;
      Result<prompt::ExtractedPtx> extracted = prompt::extractPtx(answer.text);
      if (extracted)
        input.skeleton = prompt::SkeletonDraft{extracted->ptx, prompt::skeletonFeedback(ctx_.task, extracted->ptx)};
      else
        input.skeleton = prompt::SkeletonDraft{
            "", "No skeleton could be read from your answer (" + extracted.error().message +
                    "). Write the whole kernel directly.\n"};
    }

    Answer answer = ask(round, slot, kind, strategies, input, temperature, seed, parent);
    asked = asked || answer.asked;
    if (answer.status != Answer::Status::Complete) return;

    prompt::Attempt attempt;
    int64_t candidateId = 0;
    std::optional<double> speedup;
    std::string verdict;
    std::string shown;
    if (!verifyAnswer(round, slot, kind, answer, attempt, candidateId, speedup, verdict, shown)) return;

    std::lock_guard lock(mutex_);
    SlotState &slotState = slots_[static_cast<size_t>(slot)];
    slotState.last = attempt;
    slotState.lastId = candidateId;
    // The kernel the slot's next optimize prompt builds on: the fastest correct
    // one. When nothing was timed (the emulator), the one the emulator
    // profile estimates fastest, the newest of equals; without estimates, the
    // newest correct one, so that each round starts from the last round's
    // kernel, not the first.
    const std::optional<double> estimate = estimatedSpeedup(attempt.result);
    const bool faster = speedup && (!slotState.bestSpeedup || *speedup > *slotState.bestSpeedup);
    const bool untimed = !speedup && !slotState.bestSpeedup;
    const bool notWorseEstimate = estimate ? (!slotState.bestEstimate || *estimate >= *slotState.bestEstimate)
                                           : !slotState.bestEstimate;
    if (attempt.result.verdict == verify::Verdict::Correct &&
        (!slotState.best || faster || (untimed && notWorseEstimate))) {
      slotState.best = attempt;
      slotState.bestId = candidateId;
      slotState.bestSpeedup = speedup;
      slotState.bestEstimate = estimate;
    }
    standings_.push_back({round, slot, candidateId, attempt.result.verdict, speedup, estimate, attempt.ptx});
    ++counts_[verdict];
    if (const verify::BenchmarkReport *headline = verify::headlineBenchmark(attempt.result);
        headline && attempt.result.verdict == verify::Verdict::Correct) {
      std::optional<Standing> best = bestStanding();
      if (best && best->candidateId == candidateId) bestBaselineMs_ = headline->baseline.median;
    }
    ProgressEvent event = progressLocked(round, slot, kind);
    event.verdict = verdict;
    event.speedup = speedup;
    event.what = shown;
    emit(event);
  }

  /// Builds, records and sends one request, or finds its answer in the store.
  Answer ask(int round, int slot, const std::string &kind, const std::vector<prompt::Strategy> &strategies,
             const prompt::PromptInput &input, double temperature, int64_t seed, std::optional<int64_t> parent) {
    Answer answer;
    Result<llm::Request> built = prompt::buildPrompt(input, strategies, ctx_.templates);
    if (!built) {
      answer.error = built.error().message;
      report(round, slot, kind, "prompt not built: " + answer.error);
      return answer;
    }
    llm::Request request = std::move(built.value());
    request.temperature = temperature;
    request.topP = options_.topP;
    request.maxTokens = options_.maxTokens;
    request.seed = seed;
    request.stream = options_.stream || options_.guidedStream.enabled;

    std::string strategyNames;
    for (prompt::Strategy s : strategies) strategyNames += (strategyNames.empty() ? "" : ",") + std::string(prompt::strategyName(s));
    store::PromptRecord record;
    record.runId = runId_;
    record.round = round;
    record.slot = slot;
    record.kind = kind;
    record.strategies = strategyNames;
    record.tendency = input.tendency;
    record.temperature = temperature;
    record.parentCandidateId = parent;
    record.requestHash = llm::requestHash(request);
    record.request = llm::canonicalRequestJson(request);
    Result<int64_t> promptId = ctx_.store.addPrompt(record);
    if (!promptId) {
      answer.error = promptId.error().message;
      report(round, slot, kind, "store: " + answer.error);
      return answer;
    }
    answer.promptId = *promptId;

    // Answered before (a resumed run)?
    if (Result<std::optional<store::CompletionRecord>> stored = ctx_.store.findCompletion(*promptId);
        stored && stored->has_value() && (*stored)->completionStatus() == store::CompletionStatus::Complete) {
      countTokens((*stored)->meta);
      answer.status = Answer::Status::Complete;
      answer.text = (*stored)->text;
      return answer;
    }
    if (stopReason()) {
      answer.status = Answer::Status::Skipped;
      return answer;
    }

    // With a pool shared across runs, the request waits for a permit; it is
    // held while the request is in flight only (not while the answer is verified).
    RequestLimit::Permit permit;
    if (ctx_.requests) {
      permit = ctx_.requests->permit(ctx_.stop, ctx_.requestPriority);
      if (!permit) {
        answer.status = Answer::Status::Skipped;
        return answer;
      }
    }
    report(round, slot, kind, "requesting");
    llm::CallContext call;
    call.stop = ctx_.stop;
    // A replay answers an optimize prompt, which quotes the times measured in
    // its own run, by this place in the run when its request was not recorded.
    call.position = fmt::format("{}/round {}/slot {}/{}/{}", ctx_.task.name, round, slot, kind, strategyNames);
    answer.asked = true;
    nlohmann::json guided;
    Result<llm::Completion> completion =
        options_.guidedStream.enabled
            ? completeWithStreamChecks(ctx_.backend, request, options_.guidedStream, call,
                                       [&](const StreamSegment &segment) { recordSegment(*promptId, round, slot, kind, segment); },
                                       &guided)
            : ctx_.backend.complete(request, call);
    permit.reset();
    store::CompletionRecord stored;
    stored.promptId = *promptId;
    if (!completion) {
      stored.status = store::completionStatusName(store::CompletionStatus::Error);
      stored.error = completion.error().message;
      answer.error = stored.error;
      (void)ctx_.store.putCompletion(stored);
      report(round, slot, kind, "model error: " + stored.error);
      return answer;
    }
    stored.meta = llm::completionToJson(*completion);
    stored.meta.erase("text");
    if (!guided.is_null()) stored.meta["guided_stream"] = guided;
    if (completion->pending()) {
      stored.status = store::completionStatusName(store::CompletionStatus::Pending);
      (void)ctx_.store.putCompletion(stored);
      std::lock_guard lock(mutex_);
      pendingSeen_ = true;
      answer.status = Answer::Status::Pending;
      return answer;
    }
    stored.status = store::completionStatusName(store::CompletionStatus::Complete);
    stored.text = completion->text;
    if (Result<int64_t> put = ctx_.store.putCompletion(stored); !put)
      report(round, slot, kind, "store: " + put.error().message);
    auto [promptTokens, completionTokens] = countTokens(stored.meta);
    if (ctx_.onTokens) ctx_.onTokens(promptTokens, completionTokens);
    answer.status = Answer::Status::Complete;
    answer.text = completion->text;
    return answer;
  }

  /// Records one request of a --guided-stream answer, and says so when it was cut.
  void recordSegment(int64_t promptId, int round, int slot, const std::string &kind, const StreamSegment &segment) {
    store::StreamSegmentRecord record;
    record.promptId = promptId;
    record.seq = segment.seq;
    record.mode = segment.seq == 0 ? "stream" : continueModeName(segment.mode);
    record.requestHash = segment.requestHash;
    record.text = segment.text;
    if (segment.cut) {
      record.cutAt = static_cast<int64_t>(segment.cutAt);
      record.diagnostic = cutToJson(*segment.cut);
    }
    if (segment.completion) {
      record.meta = llm::completionToJson(*segment.completion);
      record.meta.erase("text");
    }
    if (!segment.error.empty()) record.meta["error"] = segment.error;
    if (Result<void> put = ctx_.store.putStreamSegment(record); !put)
      report(round, slot, kind, "store: " + put.error().message);
    if (segment.cut)
      report(round, slot, kind,
             fmt::format("cut at line {} ({}): continuing", segment.cut->diagnostic.line, segment.cut->diagnostic.code));
  }

  /// Adds an answer's usage to the run's and returns it (prompt, completion).
  std::pair<int64_t, int64_t> countTokens(const nlohmann::json &meta) {
    if (!meta.is_object() || !meta.contains("usage") || !meta["usage"].is_object()) return {0, 0};
    // The backends sanitize usage (llm::sanitizeUsage); a store written
    // before they did may still hold a negative or absurd count, which must
    // not open the budget: negative counts as the request's max_tokens.
    auto counted = [&](const char *key) -> int64_t {
      const nlohmann::json &usage = meta["usage"];
      if (!usage.contains(key)) return 0;
      int64_t count = llm::jsonTokenCount(usage[key]);
      if (count < 0) return options_.maxTokens.value_or(static_cast<int>(llm::kMaxPlausibleTokens));
      return std::min(count, llm::kMaxPlausibleTokens);
    };
    int64_t promptTokens = counted("prompt_tokens"), completionTokens = counted("completion_tokens");
    std::lock_guard lock(mutex_);
    promptTokens_ = llm::addTokenCounts(promptTokens_, promptTokens);
    completionTokens_ = llm::addTokenCounts(completionTokens_, completionTokens);
    return {promptTokens, completionTokens};
  }

  /// Extracts, deduplicates and verifies one answer; false when the store failed.
  bool verifyAnswer(int round, int slot, const std::string &kind, const Answer &answer, prompt::Attempt &attempt,
                    int64_t &candidateId, std::optional<double> &speedup, std::string &verdict, std::string &shown) {
    int64_t promptId = answer.promptId;

    store::CandidateRecord candidate;
    candidate.runId = runId_;
    candidate.promptId = promptId;
    candidate.round = round;
    candidate.slot = slot;
    Result<prompt::ExtractedPtx> extracted = prompt::extractPtx(answer.text);
    if (extracted) {
      candidate.ptx = extracted->ptx;
      candidate.ptxHash = sha256Hex(normalizePtx(candidate.ptx));
    } else {
      candidate.extractError = extracted.error().message;
    }
    attempt.ptx = candidate.ptx;

    // Serialized: the executor runs one candidate at a time, and two slots
    // that wrote the same kernel must not both be verified.
    std::lock_guard verifyLock(gateMutex());
    if (Result<std::optional<store::CandidateRecord>> existing = ctx_.store.findCandidate(promptId);
        existing && existing->has_value()) {
      candidateId = (*existing)->id;
      if (Result<std::optional<store::ResultRecord>> stored = ctx_.store.findResult(candidateId);
          stored && stored->has_value()) {
        if (Result<verify::CheckResult> result = verify::checkResultFromJson((*stored)->result)) {
          attempt.result = std::move(result.value());
          verdict = (*stored)->verdict;
          speedup = (*stored)->speedup;
          shown = "(recorded) " + (*stored)->summary;
          candidatesMade_++;
          return true;
        }
      }
      // Recorded, with PTX and no result: the process ended while the gate
      // checked it (verifyAnswer records a candidate before checking it). It
      // may well be what killed the process, so it is not checked again.
      const store::CandidateRecord &interrupted = **existing;
      if (!interrupted.ptx.empty() && !interrupted.duplicateOf) {
        attempt.ptx = interrupted.ptx;
        attempt.result.verdict = verify::Verdict::Crashed;
        attempt.result.stage = verify::Stage::Execute;
        attempt.result.task = ctx_.task.name;
        attempt.result.summary = "crashed: the process checking this candidate ended during the check (killed, or "
                                 "crashed by the candidate); it is not checked again";
        shown = attempt.result.summary;
        store::CandidateRecord recorded = interrupted;
        return record(recorded, attempt, std::nullopt, nlohmann::json(nullptr), candidateId, speedup, verdict);
      }
    }

    if (!extracted) {
      attempt.result.verdict = verify::Verdict::NoPtx;
      attempt.result.stage = verify::Stage::Extract;
      attempt.result.summary = "no PTX module in the answer: " + candidate.extractError;
      attempt.result.task = ctx_.task.name;
      shown = attempt.result.summary;
      return record(candidate, attempt, std::nullopt, nlohmann::json(nullptr), candidateId, speedup, verdict);
    }

    std::optional<toolchain::SassStats> sass;
    verify::Candidate gateCandidate = verify::Candidate::fromText(candidate.ptx, ctx_.task);
    if (nvdisasm_) {
      // Compiled once: the cubin serves the SASS dedupe and then the gate.
      toolchain::CompileOptions compileOptions;
      compileOptions.arch = ptx::compileArchFor(gateCandidate.parsed.module, options_.arch); // as check() does
      compileOptions.entryName = ctx_.task.kernel;
      compileOptions.backend = toolchain::gateCompilerBackend();
      if (Result<toolchain::CompileResult> compiled = toolchain::compilePtx(candidate.ptx, compileOptions)) {
        if (compiled->ok)
          if (Result<toolchain::SassStats> stats = toolchain::sassStats(compiled->cubin)) {
            sass = std::move(stats.value());
            candidate.sassHash = sha256Hex(sass->code);
          }
        gateCandidate.compiled = std::move(*compiled);
      }
    }
    nlohmann::json sassJson = sass ? toolchain::toJson(sass->total) : nlohmann::json(nullptr);

    if (Result<std::optional<store::CandidateRecord>> duplicate =
            ctx_.store.findDuplicate(runId_, candidate.ptxHash, candidate.sassHash);
        duplicate && duplicate->has_value()) {
      Result<std::optional<store::ResultRecord>> original = ctx_.store.findResult((*duplicate)->id);
      if (original && original->has_value()) {
        Result<verify::CheckResult> result = verify::checkResultFromJson((*original)->result);
        if (result) {
          candidate.duplicateOf = (*duplicate)->id;
          attempt.result = std::move(result.value());
          store::ResultRecord copy = **original;
          copy.summary = fmt::format("same {} as candidate {}: {}",
                                     (*duplicate)->ptxHash == candidate.ptxHash ? "PTX" : "SASS", (*duplicate)->id,
                                     copy.summary);
          Result<int64_t> id = ctx_.store.addCandidate(candidate);
          if (!id) return false;
          candidateId = *id;
          candidatesMade_++;
          copy.candidateId = candidateId;
          copy.result["duplicate_of"] = (*duplicate)->id;
          if (!ctx_.store.putResult(copy)) return false;
          verdict = copy.verdict;
          speedup = copy.speedup;
          shown = copy.summary;
          return true;
        }
      }
    }

    // Recorded before the check, so that a check that kills the process
    // leaves a trace a resume can read (above).
    if (Result<int64_t> id = ctx_.store.addCandidate(candidate); !id) return false;
    report(round, slot, kind, "verifying");
    // The gate's seed: pinned by the run's check options, else derived from
    // the run's seed and the candidate's text. A replay of a run checks the
    // same candidates with the same seeds (so its repair prompts, and their
    // recorded answers, match), and no candidate can know its inputs before
    // it is written.
    verify::CheckOptions checkOptions = options_.check;
    if (!checkOptions.seed) checkOptions.seed = tasks::fnv1a64(candidate.ptxHash, options_.seed ^ 0x9a7e5eedull);
    Result<verify::CheckResult> checked = ctx_.check ? ctx_.check(gateCandidate, checkOptions)
                                                     : verify::check(ctx_.task, gateCandidate, &ctx_.executor, checkOptions);
    if (checked) {
      attempt.result = std::move(checked.value());
    } else {
      // The gate itself broke (the executor failed for reasons of its own):
      // not the model's verdict, but the model is told.
      attempt.result.verdict = verify::Verdict::NotVerified;
      attempt.result.stage = verify::Stage::Execute;
      attempt.result.task = ctx_.task.name;
      attempt.result.summary = "not verified: " + checked.error().message;
    }
    shown = attempt.result.summary;
    return record(candidate, attempt, headlineSpeedup(attempt.result), sassJson, candidateId, speedup, verdict);
  }

  bool record(store::CandidateRecord &candidate, const prompt::Attempt &attempt, std::optional<double> headline,
              const nlohmann::json &sassJson, int64_t &candidateId, std::optional<double> &speedup,
              std::string &verdict) {
    const std::string verdictName = verify::verdictName(attempt.result.verdict);
    Result<int64_t> id = ctx_.store.addCandidate(candidate);
    if (!id) return false;
    candidateId = *id;
    candidatesMade_++;
    store::ResultRecord result;
    result.candidateId = candidateId;
    result.verdict = verdictName;
    result.stage = verify::stageName(attempt.result.stage);
    result.summary = attempt.result.summary;
    result.speedup = headline;
    if (attempt.result.compile && attempt.result.compile->resources.known)
      result.registers = attempt.result.compile->resources.registers;
    result.result = verify::toJson(attempt.result);
    result.result["sass"] = sassJson;
    if (!ctx_.store.putResult(result)) return false;
    verdict = verdictName;
    speedup = headline;
    return true;
  }

  // --- best and progress -----------------------------------------------------

  /// Correct candidates: the fastest measured; of untimed ones, the best
  /// estimated by the emulator profile; else the earliest.
  std::optional<Standing> bestStanding() const {
    std::optional<Standing> best;
    for (const Standing &s : standings_) {
      if (s.verdict != verify::Verdict::Correct) continue;
      // Ties go to the earlier candidate: a duplicate never displaces its original.
      auto earlier = [](const Standing &a, const Standing &b) { return a.candidateId < b.candidateId; };
      if (!best) {
        best = s;
      } else if (s.speedup && (!best->speedup || *s.speedup > *best->speedup)) {
        best = s;
      } else if (s.speedup != best->speedup) {
        continue; // measured beats estimated; the slower measured one stays behind
      } else if (s.estimate && (!best->estimate || *s.estimate > *best->estimate)) {
        best = s;
      } else if (s.estimate == best->estimate && earlier(s, *best)) {
        best = s;
      }
    }
    return best;
  }

  /// How the best was chosen: "speedup" (measured), "estimate" (the emulator
  /// profile's, nothing timed) or "order" (neither: the earliest correct).
  static const char *rankedBy(const Standing &best) {
    return best.speedup ? "speedup" : best.estimate ? "estimate" : "order";
  }

  ProgressEvent progressLocked(int round, int slot, const std::string &kind) const {
    ProgressEvent event;
    event.round = round;
    event.slot = slot;
    event.kind = kind;
    event.counts = counts_;
    std::optional<Standing> best = bestStanding();
    event.haveCorrect = best.has_value();
    if (best) event.bestSpeedup = best->speedup;
    if (best) event.bestEstimate = best->estimate;
    return event;
  }

  void report(int round, int slot, const std::string &kind, std::string what) {
    if (!ctx_.onProgress) return;
    ProgressEvent event;
    {
      std::lock_guard lock(mutex_);
      event = progressLocked(round, slot, kind);
    }
    event.what = std::move(what);
    emit(event);
  }

  void emit(const ProgressEvent &event) {
    if (!ctx_.onProgress) return;
    std::lock_guard lock(progressMutex_);
    ctx_.onProgress(event);
  }

  static std::string countsText(const std::map<std::string, int> &counts) {
    std::string out;
    for (const auto &[name, n] : counts) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, name);
    return out.empty() ? "no candidates" : out;
  }

  SolveContext &ctx_;
  SolveOptions options_;
  int64_t runId_;
  Clock::time_point start_;
  bool nvdisasm_ = false;
  std::string referencePtx_;

  mutable std::mutex mutex_; ///< everything below
  std::vector<SlotState> slots_;
  std::vector<Standing> standings_;
  std::map<std::string, int> counts_;
  nlohmann::json rounds_ = nlohmann::json::array();
  int64_t promptTokens_ = 0, completionTokens_ = 0;
  std::atomic<int> candidatesMade_{0};
  bool pendingSeen_ = false;
  bool budgetHit_ = false;
  std::string stoppedBecause_;
  std::optional<double> bestBaselineMs_;

  /// The gate's lock: the one the runs sharing an executor share, else this run's.
  std::mutex &gateMutex() { return ctx_.gate ? *ctx_.gate : verifyMutex_; }

  std::vector<int> active_; ///< the slots this run works on (SolveOptions::slots)
  std::mutex verifyMutex_;
  std::mutex progressMutex_;
};

} // namespace

Result<SolveOutcome> solve(SolveContext &context, const SolveOptions &requested, std::optional<int64_t> resumeRunId,
                           const ResumeOverrides &overrides) {
  SolveOptions options = requested;
  int64_t runId = 0;
  nlohmann::json resumes = nlohmann::json::array();
  // This process's claim, taken before the run exists (RunLease.h).
  Result<std::unique_ptr<RunOwner>> owner = RunOwner::create(context.store.path());
  if (!owner) return owner.error();
  // Runs left `running` by a process that died are interrupted, not running.
  if (Result<std::vector<int64_t>> reaped = reapDeadRuns(context.store); !reaped) return reaped.error();
  if (resumeRunId) {
    if (Result<void> locked = (*owner)->lockRun(*resumeRunId, false); !locked) return locked.error();
    Result<store::RunRecord> run = context.store.run(*resumeRunId);
    if (!run) return run.error();
    if (run->runStatus() == store::RunStatus::Running)
      // Not reaped, so its owner lives: it is between creating the run and locking it.
      return makeError(ErrorKind::InvalidInput,
                       fmt::format("run {} is being worked on by another process (pid {}); wait for it to end before "
                                   "resuming",
                                   *resumeRunId,
                                   run->summary.is_object() && run->summary.contains("owner") &&
                                           run->summary["owner"].is_object() && run->summary["owner"].contains("pid")
                                       ? run->summary["owner"]["pid"].dump()
                                       : std::string("?")));
    if (run->task != context.task.name)
      return makeError(ErrorKind::InvalidInput, fmt::format("run {} solved task '{}', not '{}'", *resumeRunId,
                                                            run->task, context.task.name));
    Result<SolveOptions> recorded = optionsFromJson(run->parameters);
    if (!recorded) return recorded.error();
    options = std::move(recorded.value());
    // Earlier resumes' overrides still hold (they are kept in the summary, the
    // recorded parameters stay as the run began), then this one's.
    if (run->summary.contains("resumes") && run->summary["resumes"].is_array())
      for (const nlohmann::json &earlier : run->summary["resumes"]) {
        if (!earlier.is_object() || !earlier.contains("overrides") || !earlier["overrides"].is_object()) continue;
        const nlohmann::json &o = earlier["overrides"];
        if (o.contains("rounds") && o["rounds"].is_number_integer()) options.rounds = o["rounds"].get<int>();
        if (o.contains("max_tokens_total") && o["max_tokens_total"].is_number_integer())
          options.maxTokensTotal = o["max_tokens_total"].get<int64_t>();
        if (o.contains("max_wall_seconds") && o["max_wall_seconds"].is_number())
          options.maxWallSeconds = o["max_wall_seconds"].get<double>();
        if (o.contains("max_candidates_total") && o["max_candidates_total"].is_number_integer())
          options.maxCandidatesTotal = o["max_candidates_total"].get<int>();
      }
    nlohmann::json changed = nlohmann::json::object();
    if (overrides.rounds) changed["rounds"] = options.rounds = *overrides.rounds;
    if (overrides.maxTokensTotal) changed["max_tokens_total"] = options.maxTokensTotal = *overrides.maxTokensTotal;
    if (overrides.maxWallSeconds) changed["max_wall_seconds"] = options.maxWallSeconds = *overrides.maxWallSeconds;
    if (overrides.maxCandidatesTotal)
      changed["max_candidates_total"] = options.maxCandidatesTotal = *overrides.maxCandidatesTotal;
    if (run->summary.contains("resumes") && run->summary["resumes"].is_array()) resumes = run->summary["resumes"];
    resumes.push_back({{"at", store::utcNow()}, {"status_before", run->status}, {"overrides", changed}});
    // The checker's executor may differ from the interrupted run's; its
    // recorded results stand, new candidates are checked on this one.
    runId = *resumeRunId;
    nlohmann::json owned = run->summary.is_object() ? run->summary : nlohmann::json::object();
    owned["owner"] = (*owner)->identity();
    if (Result<void> updated = context.store.updateRun(runId, store::RunStatus::Running, owned); !updated)
      return updated.error();
  } else {
    if (options.tendencies.empty()) options.tendencies = defaultTendencies();
    if (options.temperatures.empty()) options.temperatures = defaultTemperatures();
    // Recorded as the Runner works on them: ascending, distinct, of this run.
    std::erase_if(options.slots, [&](int slot) { return slot < 0 || slot >= std::max(1, options.candidates); });
    std::sort(options.slots.begin(), options.slots.end());
    options.slots.erase(std::unique(options.slots.begin(), options.slots.end()), options.slots.end());
    store::RunRecord run;
    run.task = context.task.name;
    run.model = context.modelSpec;
    for (prompt::Strategy s : options.strategies)
      run.strategies += (run.strategies.empty() ? "" : ",") + std::string(prompt::strategyName(s));
    run.parameters = optionsToJson(options);
    nlohmann::json provenance = context.provenance.is_object() ? context.provenance : nlohmann::json::object();
    const exec::DeviceProperties &device = context.executor.properties();
    provenance["device"] = device.name;
    provenance["executor"] = device.backend;
    provenance["driver_version"] = device.driverVersion;
    provenance["arch"] = options.arch;
    provenance["backend"] = context.backend.describe();
    if (!options.noSass)
      if (std::optional<std::string> nvdisasm = toolchain::findNvdisasm()) provenance["nvdisasm"] = *nvdisasm;
    run.provenance = std::move(provenance);
    run.summary = {{"owner", (*owner)->identity()}};
    Result<int64_t> created = context.store.createRun(run);
    if (!created) return created.error();
    runId = *created;
    // Only a reaper can hold a new run's lock, and only for an instant.
    if (Result<void> locked = (*owner)->lockRun(runId, true); !locked) return locked.error();
    if (context.onRunCreated)
      if (Result<void> told = context.onRunCreated(runId); !told) {
        (void)context.store.updateRun(runId, store::RunStatus::Failed, {{"error", told.error().message}});
        return told.error();
      }
  }

  Runner runner(context, options, runId);
  nlohmann::json reference;
  if (Result<void> prepared = runner.prepareReference(reference); !prepared) {
    nlohmann::json failed = {{"error", prepared.error().message}};
    (void)context.store.updateRun(runId, store::RunStatus::Failed, failed);
    return prepared.error();
  }
  runner.runRounds();

  SolveOutcome outcome;
  outcome.runId = runId;
  outcome.status = runner.status();
  outcome.summary = runner.summary(reference);
  if (!resumes.empty()) outcome.summary["resumes"] = resumes;
  outcome.stoppedBecause = outcome.summary.value("stopped_because", "");
  if (std::optional<Standing> best = runner.best()) {
    outcome.bestCandidateId = best->candidateId;
    outcome.bestPtx = best->ptx;
    outcome.bestSpeedup = best->speedup;
    outcome.bestEstimatedSpeedup = best->estimate;
  }
  if (Result<void> updated = context.store.updateRun(runId, outcome.status, outcome.summary); !updated)
    return updated.error();
  return outcome;
}

} // namespace ptxforge::solve
