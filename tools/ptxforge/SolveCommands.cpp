// `ptxforge solve`, `runs`, `show`, `report`: see SolveCommands.h and docs/solve.md.
#include "SolveCommands.h"

#include "Commands.h"
#include "GateOptions.h"
#include "ModelOptions.h"
#include "Output.h"
#include "llm/BackendSpec.h"
#include "prompt/PromptBuilder.h"
#include "prompt/Template.h"
#include "report/Report.h"
#include "report/RunJson.h"
#include "solve/Solve.h"
#include "store/Store.h"
#include "tasks/Reference.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <set>
#include <stop_token>
#include <thread>

namespace ptxforge::cli {
namespace {

constexpr int kExitNoKernel = 1;

/// Options of the model-facing commands.
struct SolveCli {
  std::string gateUrl; ///< --gate: a running `ptxforge serve` checks the candidates
  // What to solve and with which model.
  std::string task;
  ModelFlags model;
  // The loop.
  int rounds = 3;
  int candidates = 4;
  std::string strategies = "zero-shot,spec";
  std::vector<std::string> tendencies;
  std::string temperatures;
  std::optional<double> topP;
  int maxTokens = 8192;
  uint64_t seed = 1;
  bool stream = false;
  int concurrency = 4;
  int64_t maxTotalTokens = 0;
  double timeLimit = 0;
  int maxCandidates = 0;
  std::string objective;
  std::string promptsDir;
  // The gate (--arch also names the prompts' target; empty: the executor's device).
  GateFlags gate;
  std::string shapes;
  // Where things go.
  std::string storePath;
  std::string outDir;
  std::optional<int64_t> resume;
  bool quiet = false;
  bool noSass = false;
  // runs / show / report
  int64_t runId = 0;
  size_t limit = 20;
  std::string reportFormat = "both";
  bool full = false; ///< show: prompts, completions and PTX in the JSON
  /// solve: the budget flags given on the command line (a resume applies only those).
  std::set<std::string> given;
};


Result<std::vector<double>> parseTemperatures(const std::string &text) {
  std::vector<double> values;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    char *end = nullptr;
    double value = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || value < 0 || value > 2)
      return makeError(ErrorKind::InvalidInput, fmt::format("--temperatures: '{}' is not a number in [0, 2]", item));
    values.push_back(value);
  }
  return values;
}

/// The run's files: best.ptx, summary.json, report.md, report.html.
Result<void> writeRunFiles(store::Store &store, int64_t runId, const std::filesystem::path &dir,
                           const std::string &bestPtx, const nlohmann::json &summaryJson) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return makeError(ErrorKind::Io, "cannot create " + dir.string() + ": " + error.message());
  Result<store::RunData> data = store.load(runId);
  if (!data) return data.error();
  if (!bestPtx.empty())
    if (Result<void> written = writeTextFile(dir / "best.ptx", bestPtx); !written) return written;
  nlohmann::json document = report::runSummaryJson(*data, runId, summaryJson);
  if (Result<void> written = writeTextFile(dir / "summary.json", document.dump(2) + "\n"); !written) return written;
  if (Result<void> written = writeTextFile(dir / "report.md", report::markdownReport(*data)); !written) return written;
  return writeTextFile(dir / "report.html", report::htmlReport(*data));
}

/// One progress line on stderr.
void printProgress(const solve::ProgressEvent &event) {
  std::string best = event.bestSpeedup    ? fmt::format("{:.2f}x", *event.bestSpeedup)
                     : event.bestEstimate ? fmt::format("~{:.2f}x (untimed: the emulator's estimate)", *event.bestEstimate)
                     : event.haveCorrect  ? "correct (untimed)"
                                          : "none";
  std::string where = event.slot < 0 ? fmt::format("[round {}]", event.round)
                                     : fmt::format("[r{} s{} {}]", event.round, event.slot, event.kind);
  std::string what = event.what;
  // A summary that starts with its verdict ("compile-error: the compiler
  // rejected ...", "wrong on ...") is not prefixed with it a second time.
  std::string verdict;
  if (event.verdict) {
    const std::string speedup = event.speedup ? fmt::format("{:.2f}x", *event.speedup) : "";
    if (what.starts_with(*event.verdict + ": ")) what.erase(0, event.verdict->size() + 2);
    if (what.starts_with(*event.verdict + " ")) verdict = speedup.empty() ? "" : speedup + " ";
    else verdict = *event.verdict + (speedup.empty() ? "" : " " + speedup) + ": ";
  }
  if (what.size() > 160) what = what.substr(0, 157) + "...";
  fmt::print(stderr, "{} {}{}  | best: {}\n", where, verdict, what, best);
}

/// The loop's options from the flags; the gate's shapes need the task and
/// whether the executor is the emulator.
Result<solve::SolveOptions> solveOptionsFrom(const SolveCli &cli, const tasks::TaskSpec &task,
                                             const exec::Executor &executor) {
  const bool emulated = executor.moduleFormat() == exec::ModuleFormat::Ptx;
  solve::SolveOptions options;
  options.rounds = cli.rounds;
  options.candidates = cli.candidates;
  Result<std::vector<prompt::Strategy>> strategies = firstAttemptStrategies(cli.strategies);
  if (!strategies) return strategies.error();
  options.strategies = *strategies;
  options.tendencies = cli.tendencies;
  if (!cli.temperatures.empty()) {
    Result<std::vector<double>> temperatures = parseTemperatures(cli.temperatures);
    if (!temperatures) return temperatures.error();
    options.temperatures = *temperatures;
  }
  options.topP = cli.topP;
  options.maxTokens = cli.maxTokens > 0 ? std::optional<int>(cli.maxTokens) : std::nullopt;
  options.seed = cli.seed;
  options.stream = cli.stream;
  options.concurrency = cli.concurrency;
  options.maxTokensTotal = cli.maxTotalTokens;
  options.maxWallSeconds = cli.timeLimit;
  options.maxCandidatesTotal = cli.maxCandidates;
  options.objective = cli.objective;
  options.arch = cli.gate.arch.empty() ? executor.properties().arch() : cli.gate.arch;
  // The gate's seed per check derives from --seed and the candidate's text
  // (recorded in each result): replays reproduce it, a model cannot know it.
  options.check = checkOptionsFrom(cli.gate);
  options.check.arch = options.arch;
  Result<std::vector<size_t>> shapes = selectShapes(task, !cli.shapes.empty() ? cli.shapes : emulated ? "small" : "all");
  if (!shapes) return shapes.error();
  options.check.shapeIndices = *shapes;
  options.check.benchmark = !emulated;
  // Untimed, the emulator's profile and estimate are what optimize prompts have to go on.
  options.check.profile = emulated;
  options.noSass = cli.noSass;
  return options;
}

solve::ResumeOverrides resumeOverrides(const SolveCli &cli) {
  solve::ResumeOverrides overrides;
  if (!cli.resume) return overrides;
  if (cli.given.count("rounds")) overrides.rounds = cli.rounds;
  if (cli.given.count("max-total-tokens")) overrides.maxTokensTotal = cli.maxTotalTokens;
  if (cli.given.count("time-limit")) overrides.maxWallSeconds = cli.timeLimit;
  if (cli.given.count("max-candidates")) overrides.maxCandidatesTotal = cli.maxCandidates;
  return overrides;
}

/// The flags a resume needs again: --store and --batch-file, when given.
std::string resumeFlags(const std::string &storePath, const ModelFlags &model) {
  std::string flags;
  if (!storePath.empty()) flags += " --store " + storePath;
  if (model.batchFile) flags += " --batch-file " + *model.batchFile;
  return flags;
}

void printSolveOutcome(const SolveCli &cli, const tasks::TaskSpec &task, const solve::SolveOutcome &outcome,
                       const std::filesystem::path &outDir) {
  if (cli.gate.format == "json") {
    nlohmann::json out = {{"run", outcome.runId},
                          {"status", store::runStatusName(outcome.status)},
                          {"stopped_because", outcome.stoppedBecause},
                          {"best_candidate", outcome.bestCandidateId ? nlohmann::json(*outcome.bestCandidateId)
                                                                     : nlohmann::json(nullptr)},
                          {"best_speedup", outcome.bestSpeedup ? nlohmann::json(*outcome.bestSpeedup)
                                                               : nlohmann::json(nullptr)},
                          {"best_estimated_speedup", outcome.bestEstimatedSpeedup
                                                         ? nlohmann::json(*outcome.bestEstimatedSpeedup)
                                                         : nlohmann::json(nullptr)},
                          {"out", outDir.string()},
                          {"summary", outcome.summary}};
    std::cout << out.dump(2) << '\n';
    return;
  }
  fmt::print("run {} {}: {}\n", outcome.runId, store::runStatusName(outcome.status), outcome.stoppedBecause);
  if (outcome.bestCandidateId)
    fmt::print("best: candidate {}{}; PTX in {}\n", *outcome.bestCandidateId,
               outcome.bestSpeedup            ? fmt::format(", {:.2f}x nvcc", *outcome.bestSpeedup)
               : outcome.bestEstimatedSpeedup ? fmt::format(" (correct, not timed; ranked by the emulator profile's "
                                                            "estimate: ~{:.2f}x the reference, an estimate, not a "
                                                            "measurement)",
                                                            *outcome.bestEstimatedSpeedup)
                                              : " (correct, not timed)",
               (outDir / "best.ptx").string());
  else
    fmt::print("no correct candidate\n");
  fmt::print("report: {} and {}\n", (outDir / "report.md").string(), (outDir / "report.html").string());
  if (outcome.status == store::RunStatus::Pending)
    fmt::print("waiting for batch results: run `ptxforge solve {} --resume {}{} --batch-results FILE` when they are "
               "in\n",
               task.name, outcome.runId, resumeFlags(cli.storePath, cli.model));
}

int runSolve(const SolveCli &cli) {
  const std::string &format = cli.gate.format;
  Result<tasks::Suite> suite = loadSuite(cli.gate.tasksDirs);
  if (!suite) return fail(format, suite.error());
  Result<const tasks::TaskSpec *> task = findTask(*suite, cli.task);
  if (!task) return fail(format, task.error(), kExitUsage, {{"task", cli.task}});
  Result<std::unique_ptr<store::Store>> store = openStore(cli.storePath);
  if (!store) return fail(format, store.error());

  // A resumed run keeps its model spec unless another is given (a batch run
  // resumes with the same spec and --batch-results).
  std::string modelSpec = cli.model.model;
  if (cli.resume && modelSpec.empty()) {
    Result<store::RunRecord> run = (*store)->run(*cli.resume);
    if (!run) return fail(format, run.error());
    modelSpec = run->model;
  }
  Result<std::unique_ptr<llm::Backend>> backend = openModel(cli.model, modelSpec);
  if (!backend) return fail(format, backend.error());
  Result<prompt::TemplateSet> templates =
      prompt::loadTemplates(cli.promptsDir.empty() ? prompt::defaultPromptsDir() : std::filesystem::path(cli.promptsDir));
  if (!templates) return fail(format, templates.error());
  Result<CheckingSetup> checking = setUpChecking(cli.gate.executor, cli.gateUrl);
  if (!checking) return fail(format, checking.error());
  std::unique_ptr<exec::Executor> executor = std::move(checking->executor);
  std::shared_ptr<serve::RemoteGate> remote = checking->remote;
  Result<solve::SolveOptions> options = solveOptionsFrom(cli, **task, *executor);
  if (!options) return fail(format, options.error());
  options->check.sanitizer = checking->sanitizer.get();
  options->check.sanitizerUnavailable = checking->sanitizerUnavailable;
  Result<solve::GuidedStreamOptions> guidedStream = guidedStreamOptions(cli.model, modelSpec);
  if (!guidedStream) return fail(format, guidedStream.error(), kExitUsage);
  options->guidedStream = *guidedStream;

  InterruptStop interrupt;
  solve::SolveContext context{**task, **backend, modelSpec, *executor, **store, *templates, {}, {}, {}, {}};
  if (remote)
    context.check = [remote, task = *task](const verify::Candidate &candidate, const verify::CheckOptions &options) {
      return remote->check(*task, candidate.text, options);
    };
  context.provenance = {{"ptxforge", std::string(versionString())},
                        {"reference_compiler", "NVRTC"},
                        {"task_level", (*task)->level}};
  context.stop = interrupt.token();
  if (!cli.quiet) context.onProgress = printProgress;
  Result<solve::SolveOutcome> outcome = solve::solve(context, *options, cli.resume, resumeOverrides(cli));
  if (!outcome) return fail(format, outcome.error());

  std::filesystem::path outDir =
      cli.outDir.empty() ? defaultOutputDir((*store)->path(), "run", outcome->runId) : std::filesystem::path(cli.outDir);
  Result<void> written = writeRunFiles(**store, outcome->runId, outDir, outcome->bestPtx, outcome->summary);
  // The run is in the store either way; a file that could not be written is the error then.
  if (!written) return fail(format, written.error(), kExitUsage, {{"run", outcome->runId}});
  printSolveOutcome(cli, **task, *outcome, outDir);
  noteReplayedByPosition(**backend);
  if (outcome->status == store::RunStatus::Pending) return kExitOk;
  return outcome->bestCandidateId ? kExitOk : kExitNoKernel;
}

int runRuns(const SolveCli &cli) {
  Result<std::unique_ptr<store::Store>> store = openStoreForReading(cli.storePath);
  if (!store) return fail(cli.gate.format, store.error());
  Result<std::vector<store::RunRecord>> runs = (*store)->runs(cli.limit);
  if (!runs) return fail(cli.gate.format, runs.error());
  if (cli.gate.format == "json") {
    std::cout << report::runListJson(*runs).dump(2) << '\n';
    return kExitOk;
  }
  std::cout << report::runListText(*runs);
  if (runs->empty()) fmt::print("no runs in {}\n", (*store)->path());
  return kExitOk;
}

int runShow(const SolveCli &cli) {
  Result<std::unique_ptr<store::Store>> store = openStoreForReading(cli.storePath);
  if (!store) return fail(cli.gate.format, store.error());
  Result<store::RunData> data = (*store)->load(cli.runId);
  if (!data) return fail(cli.gate.format, data.error());
  if (cli.full && cli.gate.format != "json") return fail(cli.gate.format, "--full goes with --format json");
  if (cli.gate.format == "json")
    // Stored model text may hold invalid UTF-8 (an exec model's raw stdout): replaced, not thrown on.
    std::cout << report::runDataJson(*data, cli.full).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  else
    std::cout << report::markdownReport(*data);
  return kExitOk;
}

int runReport(const SolveCli &cli) {
  Result<std::unique_ptr<store::Store>> store = openStoreForReading(cli.storePath);
  if (!store) return fail("text", store.error());
  Result<store::RunData> data = (*store)->load(cli.runId);
  if (!data) return fail("text", data.error());
  std::filesystem::path outDir =
      cli.outDir.empty() ? defaultOutputDir((*store)->path(), "run", cli.runId) : std::filesystem::path(cli.outDir);
  std::error_code error;
  std::filesystem::create_directories(outDir, error);
  if (error) return fail("text", fmt::format("cannot create {}: {}", outDir.string(), error.message()));
  std::vector<std::pair<std::string, std::string>> files;
  if (cli.reportFormat != "html") files.push_back({"report.md", report::markdownReport(*data)});
  if (cli.reportFormat != "md") files.push_back({"report.html", report::htmlReport(*data)});
  for (const auto &[name, text] : files) {
    if (Result<void> written = writeTextFile(outDir / name, text); !written) return fail("text", written.error());
    fmt::print("{}\n", (outDir / name).string());
  }
  return kExitOk;
}

} // namespace

void ignoreSigpipe() { std::signal(SIGPIPE, SIG_IGN); }

void registerSolveCommands(CLI::App &app, int &exitCode) {
  // The options live as long as the app's callbacks that hold them.
  auto shared = std::make_shared<SolveCli>();
  SolveCli &cli = *shared;

  CLI::App *solveCommand = app.add_subcommand(
      "solve", "A model writes PTX for a task: generate, verify, repair and optimize over rounds of candidates");
  solveCommand->add_option("task", cli.task, "Task name (see `ptxforge tasks`)")->required();
  addModelFlags(solveCommand, cli.model);
  solveCommand->add_option("--rounds", cli.rounds, "Rounds (round 1 fresh, later rounds repair/optimize)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  solveCommand->add_option("--candidates,-n", cli.candidates, "Candidates per round")->check(CLI::Range(1, 1000))->capture_default_str();
  solveCommand->add_option("--strategy", cli.strategies,
                           "First-attempt prompt strategies, comma-separated: zero-shot, hints, spec, few-shot, skeleton")
      ->capture_default_str();
  solveCommand->add_option("--tendency", cli.tendencies, "A stated tendency; slots cycle through them (repeatable)");
  solveCommand->add_option("--temperatures", cli.temperatures, "Comma-separated temperatures slots cycle through "
                                                               "(default 0.2,0.7,1.0)");
  solveCommand->add_option("--top-p", cli.topP, "Nucleus sampling parameter")->check(CLI::Range(0.0, 1.0));
  solveCommand->add_option("--max-tokens", cli.maxTokens, "Token limit per answer (0: the server's)")->capture_default_str();
  solveCommand->add_option("--seed", cli.seed, "Seed of the requests and of the gate's inputs")->capture_default_str();
  solveCommand->add_flag("--stream", cli.stream, "Stream answers (stall timeout, time to first token)");
  solveCommand->add_option("--concurrency,-j", cli.concurrency, "Model requests in flight at once")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  solveCommand->add_option("--max-total-tokens", cli.maxTotalTokens, "Token budget of the run (0: none)");
  solveCommand->add_option("--time-limit", cli.timeLimit, "Wall-time budget in seconds (0: none)");
  solveCommand->add_option("--max-candidates", cli.maxCandidates, "Candidate budget of the run (0: rounds x candidates)");
  solveCommand->add_option("--objective", cli.objective, "What optimize aims for (e.g. \"fewer registers\")");
  solveCommand->add_option("--prompts", cli.promptsDir, "Folder of prompt templates (default: the repository's prompts/)")
      ->envname("PTXFORGE_PROMPTS_DIR");
  addGateFlags(solveCommand, cli.gate);
  addRemoteGateFlag(solveCommand, cli.gateUrl);
  solveCommand->add_option("--shapes", cli.shapes, "all, small, or shape indices (default: all on a GPU, small on emu)");
  addStoreFlag(solveCommand, cli.storePath);
  solveCommand->add_option("--out", cli.outDir, "Where best.ptx, summary.json and the reports go "
                                                "(default: run-N beside the store)");
  solveCommand->add_option("--resume", cli.resume, "Resume run N (after an interruption, or with batch results)");
  solveCommand->add_flag("--quiet,-q", cli.quiet, "No live progress on stderr");
  solveCommand->add_flag("--no-sass", cli.noSass, "Do not run nvdisasm: no SASS statistics, duplicates by PTX only");
  solveCommand->callback([&exitCode, shared, solveCommand] {
    for (const char *name : {"rounds", "max-total-tokens", "time-limit", "max-candidates"})
      if (solveCommand->count(std::string("--") + name) > 0) shared->given.insert(name);
    exitCode = runSolve(*shared);
  });

  CLI::App *runsCommand = app.add_subcommand("runs", "List the solve runs in the store, newest first");
  addStoreFlag(runsCommand, cli.storePath);
  runsCommand->add_option("--limit", cli.limit, "At most this many (0: all)")->capture_default_str();
  addFormatFlag(runsCommand, cli.gate.format);
  runsCommand->callback([&exitCode, shared] { exitCode = runRuns(*shared); });

  CLI::App *showCommand = app.add_subcommand("show", "Show one run: its attempts, stages and best kernel");
  showCommand->add_option("run", cli.runId, "Run id (see `ptxforge runs`)")->required();
  addStoreFlag(showCommand, cli.storePath);
  addFormatFlag(showCommand, cli.gate.format);
  showCommand->add_flag("--full", cli.full, "With --format json: every attempt's prompt messages, completion and PTX");
  showCommand->callback([&exitCode, shared] { exitCode = runShow(*shared); });

  CLI::App *reportCommand = app.add_subcommand("report", "Write a run's report as Markdown and self-contained HTML");
  reportCommand->add_option("run", cli.runId, "Run id (see `ptxforge runs`)")->required();
  addStoreFlag(reportCommand, cli.storePath);
  reportCommand->add_option("--out", cli.outDir, "Folder for report.md / report.html (default: run-N beside the store)");
  reportCommand->add_option("--as", cli.reportFormat, "md, html or both")->check(CLI::IsMember({"md", "html", "both"}))->capture_default_str();
  reportCommand->callback([&exitCode, shared] { exitCode = runReport(*shared); });
}

} // namespace ptxforge::cli
