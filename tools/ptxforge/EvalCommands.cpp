// `ptxforge eval ...`: see EvalCommands.h and docs/eval.md.
#include "EvalCommands.h"

#include "Commands.h"
#include "GateOptions.h"
#include "ModelOptions.h"
#include "Output.h"
#include "eval/Eval.h"
#include "report/EvalReport.h"
#include "prompt/Template.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace ptxforge::cli {
namespace {

struct EvalCli {
  ModelFlags model;
  std::string suite = "core";
  int samples = 5;
  std::string ks = "1";
  int rounds = 1;
  std::string strategies = "zero-shot,spec";
  double temperature = 0.7;
  std::optional<double> topP;
  int maxTokens = 8192;
  uint64_t seed = 1;
  bool stream = false;
  int concurrency = 4;
  GateFlags gate; ///< --arch empty: the executor's device
  std::string promptsDir;
  std::string storePath;
  std::string outDir;
  std::optional<int64_t> resume;
  bool quiet = false;
  bool noSass = false;
  // show / compare / leaderboard
  int64_t evalId = 0;
  std::string a, b;
  std::string suiteVersion;
  bool all = false; ///< leaderboard: also evals that are not complete
};



Result<std::vector<int>> parseKs(const std::string &text) {
  std::vector<int> ks;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    char *end = nullptr;
    long k = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || k < 1 || k > 10000)
      return makeError(ErrorKind::InvalidInput, fmt::format("--k: '{}' is not a positive integer", item));
    ks.push_back(static_cast<int>(k));
  }
  return ks;
}

/// eval.json, eval.md and eval.html of a document.
Result<void> writeEvalFiles(const std::filesystem::path &dir, const nlohmann::json &document) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return makeError(ErrorKind::Io, "cannot create " + dir.string() + ": " + error.message());
  if (Result<void> w = writeTextFile(dir / "eval.json", document.dump(2) + "\n"); !w) return w;
  if (Result<void> w = writeTextFile(dir / "eval.md", report::evalMarkdown(document)); !w) return w;
  return writeTextFile(dir / "eval.html", report::evalHtml(document));
}

std::filesystem::path defaultOut(const store::Store &store, int64_t evalId) {
  return std::filesystem::path(store.path()).parent_path() / fmt::format("eval-{}", evalId);
}

/// Exit codes of `ptxforge eval` beyond Output.h's (docs/eval.md, "Run status"):
/// 0 only for a complete eval.
constexpr int kExitIncomplete = 3;   ///< some samples had no completion: `--resume` asks them again
constexpr int kExitInfraError = 4;   ///< no sample could be scored (a dead server, a recording that answers nothing)
constexpr int kExitPending = 5;      ///< batch requests written, waiting for their results
constexpr int kExitInterrupted = 130; ///< Ctrl-C (128 + SIGINT), as a shell reports it

int exitCodeOf(store::EvalStatus status) {
  switch (status) {
  case store::EvalStatus::Complete: return kExitOk;
  case store::EvalStatus::Incomplete: return kExitIncomplete;
  case store::EvalStatus::InfraError: return kExitInfraError;
  case store::EvalStatus::Pending: return kExitPending;
  case store::EvalStatus::Interrupted: return kExitInterrupted;
  case store::EvalStatus::Running: break;
  }
  return kExitUsage;
}

/// One line for the terminal: correct@k, fast_0, fast_1 and fast_1_low overall
/// (first attempts), and correct@1 after R rounds when there were repairs.
std::string headline(const nlohmann::json &document) {
  const nlohmann::json &metrics = document.value("metrics", nlohmann::json::object());
  const nlohmann::json &overall = metrics.is_object() ? metrics.value("overall", nlohmann::json::object())
                                                      : nlohmann::json::object();
  std::string out;
  auto rate = [](const nlohmann::json &v) { return v.is_number() ? fmt::format("{:.1f}%", v.get<double>() * 100) : "n/a"; };
  if (!overall.is_object()) return out;
  if (overall.contains("correct_at_k") && overall["correct_at_k"].is_object())
    for (const auto &[k, v] : overall["correct_at_k"].items()) out += fmt::format("correct@{} {}  ", k, rate(v));
  if (overall.contains("fast_p") && overall["fast_p"].is_object()) {
    const nlohmann::json &fast = overall["fast_p"];
    if (fast.contains("0")) out += "fast_0 " + rate(fast["0"]) + "  ";
    if (fast.contains("1")) out += "fast_1 " + rate(fast["1"]) + "  ";
  }
  if (overall.contains("fast_p_low") && overall["fast_p_low"].is_object() && overall["fast_p_low"].contains("1"))
    out += "fast_1_low " + rate(overall["fast_p_low"]["1"]) + "  ";
  const nlohmann::json &after = overall.value("after_rounds", nlohmann::json());
  if (after.is_object() && after.contains("correct_at_k") && after["correct_at_k"].is_object() &&
      after["correct_at_k"].contains("1"))
    out += fmt::format("correct@1 after {} rounds {}  ", after.value("rounds", 0), rate(after["correct_at_k"]["1"]));
  return out;
}

Result<eval::EvalOptions> evalOptionsFrom(const EvalCli &cli, const exec::Executor &executor) {
  eval::EvalOptions options;
  options.suite = cli.suite;
  options.samples = cli.samples;
  Result<std::vector<int>> ks = parseKs(cli.ks);
  if (!ks) return ks.error();
  options.ks = *ks;
  options.rounds = cli.rounds;
  Result<std::vector<prompt::Strategy>> strategies = firstAttemptStrategies(cli.strategies);
  if (!strategies) return strategies.error();
  options.strategies = *strategies;
  options.temperature = cli.temperature;
  options.topP = cli.topP;
  options.maxTokens = cli.maxTokens > 0 ? std::optional<int>(cli.maxTokens) : std::nullopt;
  options.seed = cli.seed;
  options.stream = cli.stream;
  options.concurrency = cli.concurrency;
  options.arch = cli.gate.arch.empty() ? executor.properties().arch() : cli.gate.arch;
  options.trials = cli.gate.trials;
  options.timingRounds = cli.gate.timingRounds;
  options.launchTimeoutMs = cli.gate.launchTimeoutMs;
  options.noSass = cli.noSass;
  return options;
}

void printEvalOutcome(const EvalCli &cli, const eval::EvalOutcome &outcome, const std::filesystem::path &out) {
  if (cli.gate.format == "json") {
    std::cout << outcome.document.dump(2) << '\n';
    return;
  }
  fmt::print("eval {} {}: {}\n", outcome.evalId, store::evalStatusName(outcome.status), headline(outcome.document));
  if (std::string missing = report::noCompletionSentence(outcome.document); !missing.empty())
    fmt::print("{}\n", missing);
  fmt::print("report: {}, {} and {}\n", (out / "eval.md").string(), (out / "eval.html").string(),
             (out / "eval.json").string());
  std::string flags;
  if (!cli.storePath.empty()) flags += " --store " + cli.storePath;
  switch (outcome.status) {
  case store::EvalStatus::Pending:
    if (cli.model.batchFile) flags += " --batch-file " + *cli.model.batchFile;
    fmt::print("waiting for batch results: run `ptxforge eval --resume {}{} --batch-results FILE` when they are in\n",
               outcome.evalId, flags);
    break;
  case store::EvalStatus::Incomplete:
  case store::EvalStatus::InfraError:
  case store::EvalStatus::Interrupted:
    fmt::print("not ranked on the leaderboard until complete: `ptxforge eval --resume {}{}` asks every request "
               "without a completion again\n",
               outcome.evalId, flags);
    break;
  default: break;
  }
}

int runEvalCommand(const EvalCli &cli) {
  const std::string &format = cli.gate.format;
  Result<tasks::Suite> suite = loadSuite(cli.gate.tasksDirs);
  if (!suite) return fail(format, suite.error());
  Result<std::unique_ptr<store::Store>> store = openStore(cli.storePath);
  if (!store) return fail(format, store.error());
  std::string modelSpec = cli.model.model;
  if (cli.resume && modelSpec.empty()) {
    Result<store::EvalRecord> record = (*store)->evalRecord(*cli.resume);
    if (!record) return fail(format, record.error());
    modelSpec = record->model;
  }
  Result<std::unique_ptr<llm::Backend>> backend = openModel(cli.model, modelSpec);
  if (!backend) return fail(format, backend.error());
  Result<prompt::TemplateSet> templates =
      prompt::loadTemplates(cli.promptsDir.empty() ? prompt::defaultPromptsDir() : std::filesystem::path(cli.promptsDir));
  if (!templates) return fail(format, templates.error());
  std::string unavailable;
  std::unique_ptr<exec::Executor> executor = createExecutor(cli.gate.executor, unavailable);
  if (!executor) return fail(format, "no executor: " + unavailable);
  Result<eval::EvalOptions> options = evalOptionsFrom(cli, *executor);
  if (!options) return fail(format, options.error());

  InterruptStop interrupt;
  eval::EvalContext context{*suite, **backend, modelSpec, *executor, **store, *templates, {}, {}, interrupt.token()};
  context.provenance = {{"ptxforge", std::string(versionString())}, {"reference_compiler", "NVRTC"}};
  if (!cli.quiet) context.onProgress = [](const std::string &line) { fmt::print(stderr, "{}\n", line); };
  Result<eval::EvalOutcome> outcome = eval::runEval(context, *options, cli.resume);
  if (!outcome) return fail(format, outcome.error());

  std::filesystem::path out = cli.outDir.empty() ? defaultOut(**store, outcome->evalId) : std::filesystem::path(cli.outDir);
  if (Result<void> written = writeEvalFiles(out, outcome->document); !written) return fail(format, written.error());
  printEvalOutcome(cli, *outcome, out);
  return exitCodeOf(outcome->status);
}

/// An eval id in the store, or a path to an eval.json. The store is opened
/// (read-only) only for an id, so that two files compare without one.
Result<nlohmann::json> loadDocument(std::unique_ptr<store::Store> &store, const std::string &storePath,
                                    const std::string &which) {
  char *end = nullptr;
  long long id = std::strtoll(which.c_str(), &end, 10);
  if (!which.empty() && *end == '\0') {
    if (!store) {
      Result<std::unique_ptr<store::Store>> opened = openStoreForReading(storePath);
      if (!opened) return opened.error();
      store = std::move(opened.value());
    }
    return eval::evalDocument(*store, id);
  }
  std::ifstream in(which, std::ios::binary);
  if (!in) return makeError(ErrorKind::Io, "'" + which + "' is neither an eval id nor a readable file");
  nlohmann::json document = nlohmann::json::parse(in, nullptr, false);
  if (document.is_discarded() || !document.is_object())
    return makeError(ErrorKind::InvalidInput, which + ": not an eval document (JSON object)");
  return document;
}

int runShow(const EvalCli &cli) {
  const std::string &format = cli.gate.format;
  Result<std::unique_ptr<store::Store>> store = openStoreForReading(cli.storePath);
  if (!store) return fail(format, store.error());
  Result<nlohmann::json> document = eval::evalDocument(**store, cli.evalId);
  if (!document) return fail(format, document.error());
  if (!cli.outDir.empty())
    if (Result<void> written = writeEvalFiles(cli.outDir, *document); !written) return fail(format, written.error());
  if (format == "json")
    std::cout << document->dump(2) << '\n';
  else
    std::cout << report::evalMarkdown(*document);
  return kExitOk;
}

int runCompare(const EvalCli &cli) {
  const std::string &format = cli.gate.format;
  std::unique_ptr<store::Store> store;
  Result<nlohmann::json> a = loadDocument(store, cli.storePath, cli.a);
  if (!a) return fail(format, a.error());
  Result<nlohmann::json> b = loadDocument(store, cli.storePath, cli.b);
  if (!b) return fail(format, b.error());
  if (format == "json")
    std::cout << nlohmann::json{{"a", *a}, {"b", *b}, {"markdown", report::compareMarkdown(*a, *b)}}.dump(2) << '\n';
  else
    std::cout << report::compareMarkdown(*a, *b);
  return kExitOk;
}

/// The suites the store holds evals of, newest version of each first.
std::vector<std::string> knownSuites(const std::vector<store::EvalRecord> &records) {
  std::vector<std::string> suites;
  for (const store::EvalRecord &record : records)
    if (std::find(suites.begin(), suites.end(), record.suite) == suites.end()) suites.push_back(record.suite);
  return suites;
}

int runLeaderboard(const EvalCli &cli) {
  const std::string &format = cli.gate.format;
  Result<std::unique_ptr<store::Store>> store = openStoreForReading(cli.storePath);
  if (!store) return fail(format, store.error());
  Result<std::vector<store::EvalRecord>> records = (*store)->evals();
  if (!records) return fail(format, records.error());
  std::vector<nlohmann::json> documents;
  std::string version = cli.suiteVersion;
  for (const store::EvalRecord &record : *records) {
    // Newest first: without --suite-version, the newest version of --suite.
    if (version.empty() && record.suite == cli.suite) version = record.suiteVersion;
    Result<nlohmann::json> document = eval::evalDocument(**store, record.id);
    if (!document) return fail(format, document.error());
    documents.push_back(std::move(document.value()));
  }
  if (version.empty()) {
    // Not an error: nothing evaluated yet. Say what there is instead.
    std::vector<std::string> suites = knownSuites(*records);
    std::string known;
    for (const std::string &suite : suites) known += (known.empty() ? "" : ", ") + suite;
    if (format == "json")
      std::cout << nlohmann::json{{"suite", cli.suite}, {"suite_version", nullptr}, {"suites", suites}}.dump(2) << '\n';
    else
      fmt::print("no eval of suite '{}' in {}; suites with evals: {}\n", cli.suite, (*store)->path(),
                 known.empty() ? std::string("none") : known);
    return kExitOk;
  }
  std::string board = report::leaderboardMarkdown(documents, version, cli.all);
  if (format == "json")
    std::cout << nlohmann::json{{"suite_version", version}, {"markdown", board}}.dump(2) << '\n';
  else
    std::cout << board;
  return kExitOk;
}

} // namespace

void registerEvalCommands(CLI::App &app, int &exitCode) {
  auto shared = std::make_shared<EvalCli>();
  EvalCli &cli = *shared;
  CLI::App *evalCommand = app.add_subcommand("eval", "Score a model at writing PTX over the task suite "
                                                     "(subcommands: show, compare, leaderboard)");
  evalCommand->require_subcommand(0, 1);
  addModelFlags(evalCommand, cli.model);
  evalCommand->add_option("--suite", cli.suite, "core (every task), L1, L2, L3, or task names separated by commas")
      ->capture_default_str();
  evalCommand->add_option("--samples,-n", cli.samples, "Independent samples per task")->check(CLI::Range(1, 1000))->capture_default_str();
  evalCommand->add_option("--k", cli.ks, "The k of pass@k, comma-separated (each <= --samples)")->capture_default_str();
  evalCommand->add_option("--rounds", cli.rounds, "1: samples only; r: r-1 repair/optimize turns per sample")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  evalCommand->add_option("--strategy", cli.strategies, "Prompt strategies: zero-shot, spec, few-shot, skeleton")
      ->capture_default_str();
  evalCommand->add_option("--temperature", cli.temperature, "Every sample's temperature")->check(CLI::Range(0.0, 2.0))->capture_default_str();
  evalCommand->add_option("--top-p", cli.topP, "Nucleus sampling parameter")->check(CLI::Range(0.0, 1.0));
  evalCommand->add_option("--max-tokens", cli.maxTokens, "Token limit per answer (0: the server's)")->capture_default_str();
  evalCommand->add_option("--seed", cli.seed, "Seed of the requests and of the gate's inputs")->capture_default_str();
  evalCommand->add_flag("--stream", cli.stream, "Stream answers");
  evalCommand->add_option("--concurrency,-j", cli.concurrency, "Model requests in flight within a task")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  addGateFlags(evalCommand, cli.gate);
  evalCommand->add_option("--prompts", cli.promptsDir, "Folder of prompt templates")->envname("PTXFORGE_PROMPTS_DIR");
  addStoreFlag(evalCommand, cli.storePath);
  evalCommand->add_option("--out", cli.outDir, "Where eval.json/.md/.html go (default: eval-N beside the store)");
  evalCommand->add_option("--resume", cli.resume, "Resume eval N (after an interruption, or with batch results)");
  evalCommand->add_flag("--quiet,-q", cli.quiet, "No per-task progress on stderr");
  evalCommand->add_flag("--no-sass", cli.noSass, "Do not run nvdisasm: no SASS statistics, duplicates by PTX only");
  evalCommand->callback([&exitCode, shared, evalCommand] {
    if (!evalCommand->get_subcommands().empty()) return; // a subcommand ran
    exitCode = runEvalCommand(*shared);
  });

  CLI::App *show = evalCommand->add_subcommand("show", "An eval's report (Markdown, or the JSON document)");
  show->add_option("eval", cli.evalId, "Eval id")->required();
  addStoreFlag(show, cli.storePath);
  show->add_option("--out", cli.outDir, "Also write eval.json/.md/.html here");
  addFormatFlag(show, cli.gate.format);
  show->callback([&exitCode, shared] { exitCode = runShow(*shared); });

  CLI::App *compare = evalCommand->add_subcommand("compare", "Two evals side by side (ids in the store or eval.json files)");
  compare->add_option("a", cli.a, "Eval id or eval.json")->required();
  compare->add_option("b", cli.b, "Eval id or eval.json")->required();
  addStoreFlag(compare, cli.storePath);
  addFormatFlag(compare, cli.gate.format);
  compare->callback([&exitCode, shared] { exitCode = runCompare(*shared); });

  CLI::App *leaderboard = evalCommand->add_subcommand(
      "leaderboard", "Every complete eval of one suite version, best first (--all: the others below them)");
  leaderboard->add_option("--suite", cli.suite, "The suite whose newest version is shown")->capture_default_str();
  leaderboard->add_option("--suite-version", cli.suiteVersion, "Exactly this suite version (e.g. core@1a2b3c4d5e6f)");
  leaderboard->add_flag("--all", cli.all,
                        "Also list evals that are not complete (incomplete, interrupted, infra-error, pending), "
                        "below the ranked ones");
  addStoreFlag(leaderboard, cli.storePath);
  addFormatFlag(leaderboard, cli.gate.format);
  leaderboard->callback([&exitCode, shared] { exitCode = runLeaderboard(*shared); });
}

} // namespace ptxforge::cli
