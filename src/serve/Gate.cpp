// See Gate.h.
#include "serve/Gate.h"

#include "emu/EmuExecutor.h"
#include "exec/IsolatedExecutor.h"
#include "support/Text.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace ptxforge::serve {

Result<tasks::Suite> loadSuite(const std::vector<std::string> &tasksDirs) {
  std::vector<std::filesystem::path> extraRoots(tasksDirs.begin(), tasksDirs.end());
  std::vector<std::filesystem::path> roots = tasks::taskSearchRoots(extraRoots);
  if (roots.empty())
    return makeError(ErrorKind::InvalidInput, "no-task-roots",
                     fmt::format("the built-in suite {} was not found; pass --tasks-dir or set PTXFORGE_TASKS_DIR",
                                 tasks::builtinTasksDir().string()));
  return tasks::loadSuite(roots);
}

Result<const tasks::TaskSpec *> findTask(const tasks::Suite &suite, std::string_view name) {
  const tasks::TaskSpec *nearest = nullptr;
  size_t best = 0;
  for (const tasks::TaskSpec &task : suite.tasks) {
    if (task.name == name) return &task;
    size_t distance = editDistance(name, task.name, {.ignoreCase = true, .transpositions = true});
    if (!nearest || distance < best) nearest = &task, best = distance;
  }
  std::string message = fmt::format("'{}'", name); // render() puts the code "unknown-task" first
  // A suggestion only when it is near: a third of the name's letters wrong at most.
  if (nearest && best <= std::max<size_t>(2, name.size() / 3)) {
    message += fmt::format("; did you mean '{}'? (`ptxforge tasks` lists them)", nearest->name);
  } else {
    std::string names;
    for (const tasks::TaskSpec &task : suite.tasks) names += (names.empty() ? "" : ", ") + task.name;
    message += "; known tasks: " + (names.empty() ? std::string("none") : names);
  }
  return makeError(ErrorKind::InvalidInput, "unknown-task", message);
}

Result<std::vector<size_t>> selectShapes(const tasks::TaskSpec &task, const std::string &spec) {
  std::vector<size_t> indices;
  if (spec == "all") return indices;
  if (spec == "small") return task.smallShapes;
  std::stringstream stream(spec);
  std::string item;
  while (std::getline(stream, item, ',')) {
    char *end = nullptr;
    unsigned long value = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value >= task.shapes.size())
      return makeError(ErrorKind::InvalidInput,
                       fmt::format("--shapes: '{}' is not a shape index of '{}' (0..{}), 'all' or 'small'", item,
                                   task.name, task.shapes.size() - 1));
    indices.push_back(value);
  }
  return indices;
}

Result<tasks::Shape> parseShapeOption(const tasks::TaskSpec &task, const std::string &text) {
  std::string expected;
  for (const std::string &s : task.symbols) expected += (expected.empty() ? "" : ",") + s + "=N";
  const Error bad = makeError(ErrorKind::InvalidInput, fmt::format("--shape '{}': expected {} (each symbol of task "
                                                                   "'{}' once, positive)",
                                                                   text, expected, task.name));
  tasks::Shape shape;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    size_t equals = item.find('=');
    std::string symbol = item.substr(0, equals);
    char *end = nullptr;
    long long value = equals == std::string::npos ? 0 : std::strtoll(item.c_str() + equals + 1, &end, 10);
    bool known = std::find(task.symbols.begin(), task.symbols.end(), symbol) != task.symbols.end();
    if (equals == std::string::npos || !known || value <= 0 || *end != '\0' || shape.count(symbol)) return bad;
    shape[symbol] = value;
  }
  if (shape.size() != task.symbols.size()) return bad;
  return shape;
}

std::unique_ptr<exec::Executor> createExecutor(const std::string &choice, std::string &unavailable,
                                               int deviceOrdinal) {
  std::unique_ptr<exec::Executor> executor;
  unavailable.clear();
  if (choice == "gpu" || choice == "auto") {
    exec::IsolatedOptions isolated;
    isolated.deviceOrdinal = deviceOrdinal;
    Result<std::unique_ptr<exec::Executor>> created = exec::createIsolatedExecutor(isolated);
    if (created)
      executor = std::move(*created);
    else
      unavailable = render(created.error());
  }
  // `auto`: the GPU when there is one, the CPU emulator otherwise. The
  // emulator runs in a worker process too, so that nothing a candidate does
  // (or an emulator bug it finds) can take the caller down; in-process if the
  // worker cannot start.
  if (choice == "emu" || (choice == "auto" && !executor)) {
    exec::IsolatedOptions isolated;
    isolated.backend = "emu";
    Result<std::unique_ptr<exec::Executor>> created = exec::createIsolatedExecutor(isolated);
    if (created) {
      executor = std::move(*created);
    } else {
      fmt::print(stderr, "ptxforge: warning: the emulator runs in-process: {}\n", render(created.error()));
      executor = emu::createEmuExecutor();
    }
    unavailable.clear();
  }
  return executor;
}

bool looksLikeBarePtx(std::string_view text) {
  size_t at = 0;
  while (at < text.size()) {
    size_t start = text.find_first_not_of(" \t\r\n", at);
    if (start == std::string_view::npos) return true;
    if (text.compare(start, 2, "//") != 0) return text[start] == '.';
    at = text.find('\n', start);
    if (at == std::string_view::npos) return true;
  }
  return true;
}

Result<AnswerPtx> ptxOfAnswer(std::string_view text) {
  if (looksLikeBarePtx(text)) return AnswerPtx{std::string(text), std::nullopt};
  Result<prompt::ExtractedPtx> extracted = prompt::extractPtx(text);
  if (!extracted) return extracted.error();
  std::string ptx = extracted->ptx;
  return AnswerPtx{std::move(ptx), std::move(*extracted)};
}

// --- CheckRequest ---------------------------------------------------------------

namespace {

Error badRequest(std::string message) { return makeError(ErrorKind::InvalidInput, "bad-request", std::move(message)); }

const char *jsonTypeName(const nlohmann::json &value) { return value.type_name(); }

/// Reads an integer member that fits [low, high] (the type's range; validate() has the limits).
template <typename T>
Result<T> readInteger(const nlohmann::json &value, const std::string &key, long long low, long long high) {
  if (!value.is_number_integer())
    return badRequest(fmt::format("'{}' must be an integer, not {}", key, jsonTypeName(value)));
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (high >= 0 && v > static_cast<uint64_t>(high))
      return badRequest(fmt::format("'{}' must be in [{}, {}], not {}", key, low, high, v));
    return static_cast<T>(v);
  }
  const long long v = value.get<long long>();
  if (v < low || v > high) return badRequest(fmt::format("'{}' must be in [{}, {}], not {}", key, low, high, v));
  return static_cast<T>(v);
}

} // namespace

Result<CheckRequest> CheckRequest::fromJson(const nlohmann::json &body, const std::vector<std::string> &allowedExtraKeys) {
  if (!body.is_object()) return badRequest(fmt::format("the request must be a JSON object, not {}", jsonTypeName(body)));
  CheckRequest request;
  bool haveText = false;
  for (const auto &[key, value] : body.items()) {
    auto wantString = [&](std::string &into) -> Result<void> {
      if (!value.is_string()) return badRequest(fmt::format("'{}' must be a string, not {}", key, jsonTypeName(value)));
      into = value.get<std::string>();
      return {};
    };
    auto wantBool = [&](bool &into) -> Result<void> {
      if (!value.is_boolean()) return badRequest(fmt::format("'{}' must be true or false, not {}", key, jsonTypeName(value)));
      into = value.get<bool>();
      return {};
    };
    Result<void> read;
    if (key == "task") {
      read = wantString(request.task);
    } else if (key == "ptx" || key == "answer") {
      if (haveText) return badRequest("give either 'ptx' or 'answer', not both");
      haveText = true;
      read = wantString(request.text);
    } else if (key == "shapes") {
      read = wantString(request.shapes);
    } else if (key == "extra_shapes") {
      if (!value.is_array()) return badRequest(fmt::format("'extra_shapes' must be an array of strings like \"M=256,N=64\""));
      for (const nlohmann::json &item : value) {
        if (!item.is_string()) return badRequest("'extra_shapes' must be an array of strings like \"M=256,N=64\"");
        request.extraShapes.push_back(item.get<std::string>());
      }
      if (request.extraShapes.size() > 16) return badRequest("'extra_shapes': at most 16");
    } else if (key == "seed") {
      if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<long long>() >= 0))
        return badRequest(fmt::format("'seed' must be a non-negative integer, not {}", value.dump()));
      request.seed = value.get<uint64_t>();
    } else if (key == "trials") {
      Result<int> v = readInteger<int>(value, key, INT_MIN, INT_MAX);
      if (!v) return v.error();
      request.trials = *v;
    } else if (key == "drawn_shapes") {
      Result<int> v = readInteger<int>(value, key, INT_MIN, INT_MAX);
      if (!v) return v.error();
      request.drawnShapes = *v;
    } else if (key == "timing_rounds") {
      Result<int> v = readInteger<int>(value, key, INT_MIN, INT_MAX);
      if (!v) return v.error();
      request.timingRounds = *v;
    } else if (key == "timeout_ms") {
      Result<uint32_t> v = readInteger<uint32_t>(value, key, 0, UINT32_MAX);
      if (!v) return v.error();
      request.launchTimeoutMs = *v;
    } else if (key == "arch") {
      read = wantString(request.arch);
    } else if (key == "bench") {
      read = wantBool(request.benchmark);
    } else if (key == "lint") {
      read = wantBool(request.lint);
    } else if (key == "sanitizer") {
      read = wantBool(request.sanitizer);
    } else if (key == "profile") {
      read = wantBool(request.profile);
    } else if (std::find(allowedExtraKeys.begin(), allowedExtraKeys.end(), key) == allowedExtraKeys.end()) {
      return badRequest(fmt::format("unknown key '{}' (known: task, ptx, answer, shapes, extra_shapes, seed, trials, "
                                    "drawn_shapes, timing_rounds, timeout_ms, arch, bench, lint, sanitizer, profile{}{})",
                                    key, allowedExtraKeys.empty() ? "" : ", ",
                                    [&] {
                                      std::string extra;
                                      for (const std::string &k : allowedExtraKeys) extra += (extra.empty() ? "" : ", ") + k;
                                      return extra;
                                    }()));
    }
    if (!read) return read.error();
  }
  if (request.task.empty()) return badRequest("'task' is missing (a task name, see GET /v1/tasks)");
  if (!haveText) return badRequest("'ptx' (bare PTX) or 'answer' (a model's whole answer) is missing");
  // The ranges are validate()'s, the one place that states them.
  if (Result<void> valid = request.validate(); !valid) return valid.error();
  return request;
}

Result<void> CheckRequest::validate() const {
  if (trials && (*trials < 1 || *trials > 100)) return badRequest("'trials' must be in [1, 100]");
  if (drawnShapes && (*drawnShapes < 0 || *drawnShapes > 16)) return badRequest("'drawn_shapes' must be in [0, 16]");
  if (timingRounds && (*timingRounds < 1 || *timingRounds > 1000)) return badRequest("'timing_rounds' must be in [1, 1000]");
  if (launchTimeoutMs && (*launchTimeoutMs < 1 || *launchTimeoutMs > 3'600'000))
    return badRequest("'timeout_ms' must be in [1, 3600000]");
  return {};
}

nlohmann::json toJson(const AnswerCheck &check) {
  nlohmann::json out = verify::toJson(check.result);
  if (check.extracted)
    out["extracted"] = {{"source", prompt::ptxSourceName(check.extracted->source)},
                        {"first_line", check.extracted->firstLine},
                        {"last_line", check.extracted->lastLine}};
  return out;
}

// --- Gate -------------------------------------------------------------------------

Gate::Gate(const Options &options) : options_(options) {
  executor_ = createExecutor(options.executor, unavailable_, options.deviceOrdinal);
  emulated_ = executor_ && executor_->moduleFormat() == exec::ModuleFormat::Ptx;
  if (executor_ && !emulated_ && options.deviceShare)
    executor_ = exec::shareDevice(std::move(executor_), options.deviceShare);
}

Gate::~Gate() = default;

std::string Gate::device() const {
  if (!executor_) return "none: " + unavailable_;
  return executor_->properties().name;
}

namespace {

/// The summary without the verdict's name in front: formatText prints the
/// verdict itself ("compile-error: compile-error: ..." otherwise).
void dropVerdictPrefix(verify::CheckResult &result) {
  std::string prefix = std::string(verify::verdictName(result.verdict)) + ": ";
  while (result.summary.rfind(prefix, 0) == 0) result.summary.erase(0, prefix.size());
}

} // namespace

namespace {

Error clientGone(const char *where) {
  return makeError(ErrorKind::InvalidInput, "client-gone", fmt::format("the client went away; the check stopped {}", where));
}

} // namespace

Result<AnswerCheck> Gate::check(const tasks::TaskSpec &task, const CheckRequest &request, std::stop_token stop) {
  if (stop.stop_requested()) return clientGone("before it started");
  if (Result<void> valid = request.validate(); !valid) return valid.error();
  verify::CheckOptions options;
  if (!request.arch.empty()) options.arch = request.arch;
  if (request.trials) options.trials = *request.trials;
  if (request.timingRounds) options.timingRounds = *request.timingRounds;
  if (request.launchTimeoutMs) options.launchTimeoutMs = *request.launchTimeoutMs;
  if (request.drawnShapes) options.drawnShapes = *request.drawnShapes;
  options.seed = request.seed;
  options.benchmark = request.benchmark;
  options.lint = request.lint;
  options.profile = request.profile;
  // The emulator checks the task's small shapes unless told otherwise.
  Result<std::vector<size_t>> shapes =
      selectShapes(task, !request.shapes.empty() ? request.shapes : emulated_ ? "small" : "all");
  if (!shapes) return shapes.error();
  options.shapeIndices = *shapes;
  for (const std::string &text : request.extraShapes) {
    Result<tasks::Shape> shape = parseShapeOption(task, text);
    if (!shape) return shape.error();
    options.extraShapes.push_back(std::move(*shape));
  }

  // The request is sound; what follows is about the candidate.
  AnswerCheck out;
  Result<AnswerPtx> answer = ptxOfAnswer(request.text);
  if (!answer) {
    // No PTX in the answer: a verdict about the answer, with the words a model can act on.
    out.result.verdict = verify::Verdict::NoPtx;
    out.result.stage = verify::Stage::Extract;
    out.result.summary = answer.error().message;
    out.result.task = task.name;
    out.result.seed = options.seed.value_or(0);
    return out;
  }
  out.extracted = std::move(answer->extracted);

  // On a GPU the emulator's sanitizers are a second opinion that `correct`
  // needs too, unless the gate or the request turned them off.
  std::string sanitizerSkipped;
  if (executor_ && !emulated_) {
    if (!options_.sanitizer || !request.sanitizer) {
      sanitizerSkipped = "the emulator's sanitizers (memory, races, initialization) were not run: --executor auto runs them";
    } else {
      if (!sanitizerTried_) {
        sanitizerTried_ = true;
        sanitizer_ = createExecutor("emu", sanitizerUnavailable_);
      }
      if (!sanitizer_) sanitizerSkipped = "the emulator's sanitizers could not start: " + sanitizerUnavailable_;
      options.sanitizer = sanitizer_.get();
    }
  }

  if (stop.stop_requested()) return clientGone("before lint");
  Result<verify::CheckResult> checked = verify::check(task, answer->ptx, executor_.get(), options);
  if (!checked) return checked.error();
  out.result = std::move(*checked);
  verify::CheckResult &result = out.result;
  dropVerdictPrefix(result);
  if (!executor_ && result.verdict == verify::Verdict::NotVerified) result.summary += " (" + unavailable_ + ")";
  if (!sanitizerSkipped.empty())
    result.diagnostics.push_back({"sanitizer-skipped", ptx::Severity::Warning, 1, 1, sanitizerSkipped, ""});
  // Diagnostics of a module taken out of an answer point into the answer,
  // unless a directive was moved into the module (then its lines shifted).
  if (out.extracted && !out.extracted->directiveMoved)
    for (ptx::Diagnostic &d : result.diagnostics)
      if (d.line > 0 && d.code != "sanitizer-skipped") d.line += static_cast<uint32_t>(out.extracted->firstLine - 1);
  return out;
}

// --- Rewards ---------------------------------------------------------------------

Result<RewardWeights> RewardWeights::fromJson(const nlohmann::json &weights) {
  RewardWeights out;
  if (weights.is_null()) return out;
  if (!weights.is_object()) return badRequest("'weights' must be an object of numbers");
  for (const auto &[key, value] : weights.items()) {
    if (!value.is_number() || !std::isfinite(value.get<double>()))
      return badRequest(fmt::format("'weights.{}' must be a finite number, not {}", key, value.dump()));
    const double v = value.get<double>();
    if (key == "extract") out.extract = v;
    else if (key == "lint") out.lint = v;
    else if (key == "compile") out.compile = v;
    else if (key == "correct") out.correct = v;
    else if (key == "speed") out.speed = v;
    else if (key == "speed_cap") {
      if (v <= 1) return badRequest("'weights.speed_cap' must be above 1 (the speedup that earns all of 'speed')");
      out.speedCap = v;
    } else if (key == "rejected") out.rejected = v;
    else
      return badRequest(fmt::format("unknown weight '{}' (known: extract, lint, compile, correct, speed, speed_cap, "
                                    "rejected)",
                                    key));
  }
  return out;
}

nlohmann::json RewardWeights::toJson() const {
  return {{"extract", extract}, {"lint", lint},   {"compile", compile},   {"correct", correct},
          {"speed", speed},     {"speed_cap", speedCap}, {"rejected", rejected}};
}

nlohmann::json rewardJson(const AnswerCheck &check, const RewardWeights &weights) {
  using verify::Verdict;
  const Verdict verdict = check.result.verdict;
  const bool extracted = verdict != Verdict::NoPtx;
  const bool linted = extracted && verdict != Verdict::LintError;
  const bool compiled = linted && check.result.compile && check.result.compile->ok;
  const bool correct = verdict == Verdict::Correct;
  nlohmann::json speedup = nullptr, low = nullptr, high = nullptr;
  double speedEarned = 0;
  if (const verify::BenchmarkReport *headline = correct ? verify::headlineBenchmark(check.result) : nullptr) {
    speedup = headline->speedup;
    low = headline->speedupLow;
    high = headline->speedupHigh;
    // Only the speedup that noise cannot explain: the band's lower end.
    if (headline->speedupLow > 1)
      speedEarned = weights.speed * std::min(1.0, std::log2(headline->speedupLow) / std::log2(weights.speedCap));
  }
  const double extractEarned = extracted ? weights.extract : 0;
  const double lintEarned = linted ? weights.lint : 0;
  const double compileEarned = compiled ? weights.compile : 0;
  const double correctEarned = correct ? weights.correct : 0;
  const double rejectedEarned = verdict == Verdict::Rejected ? weights.rejected : 0;
  const double reward = extractEarned + lintEarned + compileEarned + correctEarned + speedEarned + rejectedEarned;
  return {{"reward", reward},
          {"verdict", verify::verdictName(verdict)},
          {"stages",
           {{"extract", extractEarned},
            {"lint", lintEarned},
            {"compile", compileEarned},
            {"correct", correctEarned},
            {"speed", speedEarned},
            {"rejected", rejectedEarned}}},
          {"speedup", speedup},
          {"speedup_low", low},
          {"speedup_high", high},
          {"weights", weights.toJson()}};
}

} // namespace ptxforge::serve
