// `ptxforge eval ...`: see EvalCommands.h and docs/eval.md.
#include "EvalCommands.h"

#include "Commands.h"
#include "ModelOptions.h"
#include "eval/Eval.h"
#include "eval/EvalReport.h"
#include "prompt/Template.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace ptxforge::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;

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
  std::string executor = "auto";
  std::string arch = "sm_90";
  int trials = 3;
  int timingRounds = 10;
  uint32_t launchTimeoutMs = 10000;
  std::vector<std::string> tasksDirs;
  std::string promptsDir;
  std::string storePath;
  std::string outDir;
  std::optional<int64_t> resume;
  std::string format = "text";
  bool quiet = false;
  // show / compare / leaderboard
  int64_t evalId = 0;
  std::string a, b;
  std::string suiteVersion;
};



std::optional<std::vector<int>> parseKs(const std::string &text) {
  std::vector<int> ks;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    char *end = nullptr;
    long k = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || k < 1 || k > 10000) {
      fmt::print(stderr, "ptxforge: error: --k: '{}' is not a positive integer\n", item);
      return std::nullopt;
    }
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
  if (Result<void> w = writeTextFile(dir / "eval.md", eval::evalMarkdown(document)); !w) return w;
  return writeTextFile(dir / "eval.html", eval::evalHtml(document));
}

std::filesystem::path defaultOut(const store::Store &store, int64_t evalId) {
  return std::filesystem::path(store.path()).parent_path() / fmt::format("eval-{}", evalId);
}

/// One line for the terminal: correct@k and fast_1 overall.
std::string headline(const nlohmann::json &document) {
  const nlohmann::json &metrics = document.value("metrics", nlohmann::json::object());
  const nlohmann::json &overall = metrics.is_object() ? metrics.value("overall", nlohmann::json::object())
                                                      : nlohmann::json::object();
  std::string out;
  auto rate = [](const nlohmann::json &v) { return v.is_number() ? fmt::format("{:.1f}%", v.get<double>() * 100) : "n/a"; };
  if (overall.is_object() && overall.contains("correct_at_k") && overall["correct_at_k"].is_object())
    for (const auto &[k, v] : overall["correct_at_k"].items()) out += fmt::format("correct@{} {}  ", k, rate(v));
  if (overall.is_object() && overall.contains("fast_p") && overall["fast_p"].is_object()) {
    const nlohmann::json &fast = overall["fast_p"];
    if (fast.contains("0")) out += "fast_0 " + rate(fast["0"]) + "  ";
    if (fast.contains("1")) out += "fast_1 " + rate(fast["1"]) + "  ";
  }
  return out;
}

int runEvalCommand(const EvalCli &cli) {
  std::optional<tasks::Suite> suite = loadSuite(cli.tasksDirs);
  if (!suite) return kExitUsage;
  Result<std::unique_ptr<store::Store>> store = openStore(cli.storePath);
  if (!store) return failWith(store.error().message);

  std::string modelSpec = cli.model.model;
  if (cli.resume && modelSpec.empty()) {
    Result<store::EvalRecord> record = (*store)->evalRecord(*cli.resume);
    if (!record) return failWith(record.error().message);
    modelSpec = record->model;
  }
  Result<std::unique_ptr<llm::Backend>> backend = openModel(cli.model, modelSpec);
  if (!backend) return failWith(backend.error().message);
  Result<prompt::TemplateSet> templates =
      prompt::loadTemplates(cli.promptsDir.empty() ? prompt::defaultPromptsDir() : std::filesystem::path(cli.promptsDir));
  if (!templates) return failWith(templates.error().message);
  std::string unavailable;
  std::unique_ptr<exec::Executor> executor = createExecutor(cli.executor, unavailable);
  if (!executor) return failWith("no executor: " + unavailable);

  eval::EvalOptions options;
  options.suite = cli.suite;
  options.samples = cli.samples;
  std::optional<std::vector<int>> ks = parseKs(cli.ks);
  if (!ks) return kExitUsage;
  options.ks = *ks;
  options.rounds = cli.rounds;
  Result<std::vector<prompt::Strategy>> strategies = firstAttemptStrategies(cli.strategies);
  if (!strategies) return failWith(strategies.error().message);
  options.strategies = *strategies;
  options.temperature = cli.temperature;
  options.topP = cli.topP;
  options.maxTokens = cli.maxTokens > 0 ? std::optional<int>(cli.maxTokens) : std::nullopt;
  options.seed = cli.seed;
  options.stream = cli.stream;
  options.concurrency = cli.concurrency;
  options.arch = cli.arch;
  options.trials = cli.trials;
  options.timingRounds = cli.timingRounds;
  options.launchTimeoutMs = cli.launchTimeoutMs;

  InterruptStop interrupt;
  eval::EvalContext context{*suite, **backend, modelSpec, *executor, **store, *templates, {}, {}, interrupt.token()};
  context.provenance = {{"ptxforge", std::string(versionString())}, {"reference_compiler", "NVRTC"}};
  if (!cli.quiet) context.onProgress = [](const std::string &line) { fmt::print(stderr, "{}\n", line); };
  Result<eval::EvalOutcome> outcome = eval::runEval(context, options, cli.resume);
  if (!outcome) return failWith(outcome.error().message);

  std::filesystem::path out = cli.outDir.empty() ? defaultOut(**store, outcome->evalId) : std::filesystem::path(cli.outDir);
  Result<void> written = writeEvalFiles(out, outcome->document);
  if (!written) return failWith(written.error().message);
  if (cli.format == "json") {
    std::cout << outcome->document.dump(2) << '\n';
  } else {
    fmt::print("eval {} {}: {}\n", outcome->evalId, outcome->status, headline(outcome->document));
    fmt::print("report: {}, {} and {}\n", (out / "eval.md").string(), (out / "eval.html").string(),
               (out / "eval.json").string());
    if (outcome->status == "pending")
      fmt::print("waiting for batch results: run `ptxforge eval --resume {} --batch-results FILE` when they are in\n",
                 outcome->evalId);
  }
  return kExitOk;
}

/// An eval id in the store, or a path to an eval.json.
Result<nlohmann::json> loadDocument(store::Store &store, const std::string &which) {
  char *end = nullptr;
  long long id = std::strtoll(which.c_str(), &end, 10);
  if (!which.empty() && *end == '\0') return eval::evalDocument(store, id);
  std::ifstream in(which, std::ios::binary);
  if (!in) return makeError(ErrorKind::Io, "'" + which + "' is neither an eval id nor a readable file");
  nlohmann::json document = nlohmann::json::parse(in, nullptr, false);
  if (document.is_discarded() || !document.is_object())
    return makeError(ErrorKind::InvalidInput, which + ": not an eval document (JSON object)");
  return document;
}

int runShow(const EvalCli &cli) {
  Result<std::unique_ptr<store::Store>> store = openStore(cli.storePath);
  if (!store) return failWith(store.error().message);
  Result<nlohmann::json> document = eval::evalDocument(**store, cli.evalId);
  if (!document) return failWith(document.error().message);
  if (cli.format == "json") {
    std::cout << document->dump(2) << '\n';
    return kExitOk;
  }
  if (!cli.outDir.empty()) {
    if (Result<void> written = writeEvalFiles(cli.outDir, *document); !written) return failWith(written.error().message);
  }
  std::cout << eval::evalMarkdown(*document);
  return kExitOk;
}

int runCompare(const EvalCli &cli) {
  Result<std::unique_ptr<store::Store>> store = openStore(cli.storePath);
  if (!store) return failWith(store.error().message);
  Result<nlohmann::json> a = loadDocument(**store, cli.a);
  if (!a) return failWith(a.error().message);
  Result<nlohmann::json> b = loadDocument(**store, cli.b);
  if (!b) return failWith(b.error().message);
  std::cout << eval::compareMarkdown(*a, *b);
  return kExitOk;
}

int runLeaderboard(const EvalCli &cli) {
  Result<std::unique_ptr<store::Store>> store = openStore(cli.storePath);
  if (!store) return failWith(store.error().message);
  Result<std::vector<store::EvalRecord>> records = (*store)->evals();
  if (!records) return failWith(records.error().message);
  std::vector<nlohmann::json> documents;
  std::string version = cli.suiteVersion;
  for (const store::EvalRecord &record : *records) {
    // Newest first: without --suite-version, the newest version of --suite.
    if (version.empty() && record.suite == cli.suite) version = record.suiteVersion;
    Result<nlohmann::json> document = eval::evalDocument(**store, record.id);
    if (!document) return failWith(document.error().message);
    documents.push_back(std::move(document.value()));
  }
  if (version.empty()) {
    fmt::print("no eval of suite '{}' in {}\n", cli.suite, (*store)->path());
    return kExitOk;
  }
  std::cout << eval::leaderboardMarkdown(documents, version);
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
      ->default_val("core");
  evalCommand->add_option("--samples,-n", cli.samples, "Independent samples per task")->check(CLI::Range(1, 1000))->default_val(5);
  evalCommand->add_option("--k", cli.ks, "The k of pass@k, comma-separated (each <= --samples)")->default_val("1");
  evalCommand->add_option("--rounds", cli.rounds, "1: samples only; r: r-1 repair/optimize turns per sample")
      ->check(CLI::Range(1, 100))
      ->default_val(1);
  evalCommand->add_option("--strategy", cli.strategies, "Prompt strategies: zero-shot, spec, few-shot, skeleton")
      ->default_val("zero-shot,spec");
  evalCommand->add_option("--temperature", cli.temperature, "Every sample's temperature")->check(CLI::Range(0.0, 2.0))->default_val(0.7);
  evalCommand->add_option("--top-p", cli.topP, "Nucleus sampling parameter")->check(CLI::Range(0.0, 1.0));
  evalCommand->add_option("--max-tokens", cli.maxTokens, "Token limit per answer (0: the server's)")->default_val(8192);
  evalCommand->add_option("--seed", cli.seed, "Seed of the requests and of the gate's inputs")->default_val(1);
  evalCommand->add_flag("--stream", cli.stream, "Stream answers");
  evalCommand->add_option("--concurrency,-j", cli.concurrency, "Model requests in flight within a task")
      ->check(CLI::Range(1, 256))
      ->default_val(4);
  evalCommand->add_option("--executor", cli.executor, "gpu, emu, or auto (the GPU if there is one, else emu)")
      ->check(CLI::IsMember({"gpu", "emu", "auto"}))
      ->envname("PTXFORGE_EXECUTOR")
      ->default_val("auto");
  evalCommand->add_option("--arch", cli.arch, "Target architecture")->envname("PTXFORGE_ARCH")->default_val("sm_90");
  evalCommand->add_option("--trials", cli.trials, "Trials of fresh inputs per shape")->check(CLI::Range(1, 100))->default_val(3);
  evalCommand->add_option("--timing-rounds", cli.timingRounds, "Interleaved timing rounds")->default_val(10);
  evalCommand->add_option("--timeout-ms", cli.launchTimeoutMs, "Watchdog deadline of one launch")->default_val(10000);
  evalCommand->add_option("--tasks-dir", cli.tasksDirs, "Extra folder of tasks (repeatable)");
  evalCommand->add_option("--prompts", cli.promptsDir, "Folder of prompt templates")->envname("PTXFORGE_PROMPTS_DIR");
  addStoreFlag(evalCommand, cli.storePath);
  evalCommand->add_option("--out", cli.outDir, "Where eval.json/.md/.html go (default: eval-N beside the store)");
  evalCommand->add_option("--resume", cli.resume, "Resume eval N (after an interruption, or with batch results)");
  evalCommand->add_option("--format", cli.format, "Final output")->check(CLI::IsMember({"text", "json"}))->default_val("text");
  evalCommand->add_flag("--quiet,-q", cli.quiet, "No per-task progress on stderr");
  evalCommand->callback([&exitCode, shared, evalCommand] {
    if (!evalCommand->get_subcommands().empty()) return; // a subcommand ran
    exitCode = runEvalCommand(*shared);
  });

  CLI::App *show = evalCommand->add_subcommand("show", "An eval's report (Markdown, or the JSON document)");
  show->add_option("eval", cli.evalId, "Eval id")->required();
  addStoreFlag(show, cli.storePath);
  show->add_option("--out", cli.outDir, "Also write eval.json/.md/.html here");
  show->add_option("--format", cli.format, "text (Markdown) or json")->check(CLI::IsMember({"text", "json"}))->default_val("text");
  show->callback([&exitCode, shared] { exitCode = runShow(*shared); });

  CLI::App *compare = evalCommand->add_subcommand("compare", "Two evals side by side (ids in the store or eval.json files)");
  compare->add_option("a", cli.a, "Eval id or eval.json")->required();
  compare->add_option("b", cli.b, "Eval id or eval.json")->required();
  addStoreFlag(compare, cli.storePath);
  compare->callback([&exitCode, shared] { exitCode = runCompare(*shared); });

  CLI::App *leaderboard = evalCommand->add_subcommand("leaderboard", "Every model evaluated on one suite version, best first");
  leaderboard->add_option("--suite", cli.suite, "The suite whose newest version is shown")->default_val("core");
  leaderboard->add_option("--suite-version", cli.suiteVersion, "Exactly this suite version (e.g. core@1a2b3c4d5e6f)");
  addStoreFlag(leaderboard, cli.storePath);
  leaderboard->callback([&exitCode, shared] { exitCode = runLeaderboard(*shared); });
}

} // namespace ptxforge::cli
