// `ptxforge eval ...`: see EvalCommands.h and docs/eval.md.
#include "EvalCommands.h"

#include "Commands.h"
#include "GateOptions.h"
#include "ModelOptions.h"
#include "Output.h"
#include "eval/Eval.h"
#include "eval/Merge.h"
#include "report/EvalReport.h"
#include "prompt/Template.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

namespace ptxforge::cli {
namespace {

struct EvalCli {
  std::string gateUrl; ///< --gate: a running `ptxforge serve` checks the candidates
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
  std::string shard;  ///< --shard I/N
  std::string price;  ///< --price IN,OUT (USD per million prompt / completion tokens)
  // merge
  std::vector<std::string> mergeEvals;
  std::vector<std::string> mergeStores;
  std::string into;
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

/// --price "IN,OUT": USD per million prompt and completion tokens.
Result<std::optional<eval::TokenPrice>> parsePrice(const std::string &text) {
  if (text.empty()) return std::optional<eval::TokenPrice>();
  size_t comma = text.find(',');
  auto number = [](const std::string &item, double &value) {
    char *end = nullptr;
    value = std::strtod(item.c_str(), &end);
    return !item.empty() && *end == '\0' && value >= 0 && value < 1e6;
  };
  eval::TokenPrice price;
  if (comma == std::string::npos || !number(text.substr(0, comma), price.promptPerMillion) ||
      !number(text.substr(comma + 1), price.completionPerMillion))
    return makeError(ErrorKind::InvalidInput,
                     fmt::format("--price: '{}': give IN,OUT, USD per million prompt and completion tokens "
                                 "(e.g. 3,15)",
                                 text));
  return std::optional(price);
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
  return defaultOutputDir(store.path(), "eval", evalId);
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
  if (!cli.shard.empty()) {
    Result<eval::Shard> shard = eval::parseShard(cli.shard);
    if (!shard) return shard.error();
    options.shard = *shard;
  }
  return options;
}

void printEvalOutcome(const EvalCli &cli, const eval::EvalOutcome &outcome, const std::filesystem::path &out) {
  if (cli.gate.format == "json") {
    std::cout << outcome.document.dump(2) << '\n';
    return;
  }
  std::string shard;
  if (const nlohmann::json &parameters = outcome.document.value("parameters", nlohmann::json::object());
      parameters.is_object() && parameters.contains("shard") && parameters["shard"].is_object())
    shard = fmt::format(" (shard {}/{})", parameters["shard"].value("index", 0), parameters["shard"].value("count", 0));
  fmt::print("eval {} {}{}: {}\n", outcome.evalId, store::evalStatusName(outcome.status), shard,
             headline(outcome.document));
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
  Result<CheckingSetup> checking = setUpChecking(cli.gate.executor, cli.gateUrl);
  if (!checking) return fail(format, checking.error());
  std::unique_ptr<exec::Executor> executor = std::move(checking->executor);
  std::shared_ptr<serve::RemoteGate> remote = checking->remote;
  Result<eval::EvalOptions> options = evalOptionsFrom(cli, *executor);
  if (!options) return fail(format, options.error());
  Result<solve::GuidedStreamOptions> guidedStream = guidedStreamOptions(cli.model, modelSpec);
  if (!guidedStream) return fail(format, guidedStream.error(), kExitUsage);
  options->guidedStream = *guidedStream;
  Result<std::optional<eval::TokenPrice>> price = parsePrice(cli.price);
  if (!price) return fail(format, price.error());

  InterruptStop interrupt;
  eval::EvalContext context{*suite, **backend, modelSpec, *executor, **store, *templates, {}, {}, interrupt.token()};
  context.sanitizer = checking->sanitizer.get();
  context.sanitizerUnavailable = checking->sanitizerUnavailable;
  if (remote)
    context.check = [remote](const tasks::TaskSpec &task, const verify::Candidate &candidate,
                             const verify::CheckOptions &options) { return remote->check(task, candidate.text, options); };
  context.provenance = {{"ptxforge", std::string(versionString())}, {"reference_compiler", "NVRTC"}};
  context.price = *price;
  if (!cli.quiet) context.onProgress = [](const std::string &line) { fmt::print(stderr, "{}\n", line); };
  Result<eval::EvalOutcome> outcome = eval::runEval(context, *options, cli.resume);
  if (!outcome) return fail(format, outcome.error());

  std::filesystem::path out = cli.outDir.empty() ? defaultOut(**store, outcome->evalId) : std::filesystem::path(cli.outDir);
  if (Result<void> written = writeEvalFiles(out, outcome->document); !written) return fail(format, written.error());
  printEvalOutcome(cli, *outcome, out);
  noteReplayedByPosition(**backend);
  return exitCodeOf(outcome->status);
}

/// `eval merge`: the shards named (`ID` or `STORE:ID`), or every shard eval
/// of every --store, merged into one eval in --into (default: the first store).
int runMerge(const EvalCli &cli) {
  const std::string &format = cli.gate.format;
  std::vector<std::string> storePaths;
  for (const std::string &path : cli.mergeStores) storePaths.push_back(path);
  if (storePaths.empty()) storePaths.push_back(storePathOrDefault(""));
  auto key = [](const std::string &path) {
    std::error_code error;
    std::filesystem::path canonical = std::filesystem::weakly_canonical(path, error);
    return error ? path : canonical.string();
  };
  std::string intoPath = cli.into.empty() ? storePaths.front() : cli.into;

  // The target is written (created when --into names a new file); the others are only read.
  std::map<std::string, std::unique_ptr<store::Store>> stores;
  if (cli.into.empty() && !std::filesystem::exists(intoPath))
    return fail(format, makeError(ErrorKind::InvalidInput, "no run store at " + intoPath));
  Result<std::unique_ptr<store::Store>> target = openStore(intoPath);
  if (!target) return fail(format, target.error());
  store::Store &into = **target;
  auto storeAt = [&](const std::string &path) -> Result<store::Store *> {
    if (key(path) == key(intoPath)) return &into;
    auto found = stores.find(key(path));
    if (found != stores.end()) return found->second.get();
    Result<std::unique_ptr<store::Store>> opened = openStoreForReading(path);
    if (!opened) return opened.error();
    store::Store *raw = opened->get();
    stores[key(path)] = std::move(opened.value());
    return raw;
  };

  std::vector<eval::ShardSource> sources;
  if (cli.mergeEvals.empty()) {
    for (const std::string &path : storePaths) {
      Result<store::Store *> opened = storeAt(path);
      if (!opened) return fail(format, opened.error());
      Result<std::vector<int64_t>> ids = eval::shardEvals(**opened);
      if (!ids) return fail(format, ids.error());
      if (ids->empty()) return fail(format, "no shard eval in " + path + " (evals run with --shard I/N)");
      for (int64_t id : *ids) sources.push_back({*opened, id});
    }
  } else {
    for (const std::string &name : cli.mergeEvals) {
      size_t colon = name.rfind(':');
      std::string idText = colon == std::string::npos ? name : name.substr(colon + 1);
      char *end = nullptr;
      long long id = std::strtoll(idText.c_str(), &end, 10);
      if (idText.empty() || *end != '\0' || id < 1)
        return fail(format, fmt::format("'{}' is not an eval: give ID, or STORE:ID for an eval in another store", name));
      std::string path;
      if (colon != std::string::npos) {
        path = name.substr(0, colon);
      } else if (storePaths.size() == 1) {
        path = storePaths.front();
      } else {
        return fail(format, fmt::format("eval '{}': with several --store files, name each eval as STORE:ID, or name "
                                        "none to merge every shard eval of every store",
                                        name));
      }
      Result<store::Store *> opened = storeAt(path);
      if (!opened) return fail(format, opened.error());
      sources.push_back({*opened, id});
    }
  }

  nlohmann::json provenance = {{"ptxforge_merge", std::string(versionString())}};
  Result<eval::MergeOutcome> merged = eval::mergeShards(sources, into, provenance);
  if (!merged) return fail(format, merged.error());
  std::filesystem::path out = cli.outDir.empty() ? defaultOut(into, merged->evalId) : std::filesystem::path(cli.outDir);
  if (Result<void> written = writeEvalFiles(out, merged->document); !written) return fail(format, written.error());
  if (format == "json") {
    std::cout << merged->document.dump(2) << '\n';
  } else {
    fmt::print("eval {} {} (merged from {} shards into {}): {}\n", merged->evalId,
               store::evalStatusName(merged->status), sources.size(), into.path(), headline(merged->document));
    if (std::string missing = report::noCompletionSentence(merged->document); !missing.empty())
      fmt::print("{}\n", missing);
    fmt::print("report: {}, {} and {}\n", (out / "eval.md").string(), (out / "eval.html").string(),
               (out / "eval.json").string());
    if (merged->status != store::EvalStatus::Complete)
      fmt::print("not ranked on the leaderboard until complete: `ptxforge eval --resume {} --store {}` asks every "
                 "request without a completion again\n",
                 merged->evalId, into.path());
  }
  return exitCodeOf(merged->status);
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
                                                     "(subcommands: merge, show, compare, leaderboard)");
  evalCommand->require_subcommand(0, 1);
  addModelFlags(evalCommand, cli.model);
  evalCommand->add_option("--suite", cli.suite, "core (every task), L1, L2, L3, or task names separated by commas")
      ->capture_default_str();
  evalCommand->add_option("--samples,-n", cli.samples, "Independent samples per task")->check(CLI::Range(1, 1000))->capture_default_str();
  evalCommand->add_option("--k", cli.ks, "The k of pass@k, comma-separated (each <= --samples)")->capture_default_str();
  evalCommand->add_option("--rounds", cli.rounds, "1: samples only; r: r-1 repair/optimize turns per sample")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  evalCommand->add_option("--strategy", cli.strategies, "Prompt strategies: zero-shot, hints, spec, few-shot, skeleton")
      ->capture_default_str();
  evalCommand->add_option("--temperature", cli.temperature, "Every sample's temperature")->check(CLI::Range(0.0, 2.0))->capture_default_str();
  evalCommand->add_option("--top-p", cli.topP, "Nucleus sampling parameter")->check(CLI::Range(0.0, 1.0));
  evalCommand->add_option("--max-tokens", cli.maxTokens, "Token limit per answer (0: the server's)")->capture_default_str();
  evalCommand->add_option("--seed", cli.seed, "Seed of the requests and of the gate's inputs")->capture_default_str();
  evalCommand->add_flag("--stream", cli.stream, "Stream answers");
  evalCommand->add_option("--concurrency,-j", cli.concurrency,
                          "Model requests in flight at once across the whole suite (tasks run side by side; "
                          "the gate checks one candidate at a time meanwhile; 1: one request at a time, tasks in order)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  addGateFlags(evalCommand, cli.gate);
  addRemoteGateFlag(evalCommand, cli.gateUrl);
  evalCommand->add_option("--prompts", cli.promptsDir, "Folder of prompt templates")->envname("PTXFORGE_PROMPTS_DIR");
  addStoreFlag(evalCommand, cli.storePath);
  evalCommand->add_option("--out", cli.outDir, "Where eval.json/.md/.html go (default: eval-N beside the store)");
  evalCommand->add_option("--resume", cli.resume, "Resume eval N (after an interruption, or with batch results)");
  evalCommand->add_flag("--quiet,-q", cli.quiet, "No progress on stderr (per task, and the done/ETA/tokens line)");
  evalCommand->add_option("--shard", cli.shard,
                          "Run only shard I of N (I/N, 1-based) of the (task, sample) pairs; `eval merge` joins "
                          "the shards into one eval");
  evalCommand->add_option("--price", cli.price,
                          "IN,OUT: USD per million prompt and completion tokens, for the cost on the progress line")
      ->envname("PTXFORGE_PRICE");
  evalCommand->add_flag("--no-sass", cli.noSass, "Do not run nvdisasm: no SASS statistics, duplicates by PTX only");
  evalCommand->callback([&exitCode, shared, evalCommand] {
    if (!evalCommand->get_subcommands().empty()) return; // a subcommand ran
    exitCode = runEvalCommand(*shared);
  });

  CLI::App *merge = evalCommand->add_subcommand(
      "merge", "Merge the shards of an eval (run with --shard I/N) from one store or several into one eval");
  merge->add_option("evals", cli.mergeEvals,
                    "Shard evals: ID (in the only --store) or STORE:ID; none: every shard eval of every --store");
  merge->add_option("--store", cli.mergeStores, "Run database(s) holding the shards (repeatable; default: "
                                                "$PTXFORGE_STORE, else ptxforge-runs/runs.db)")
      ->envname("PTXFORGE_STORE");
  merge->add_option("--into", cli.into, "The run database the merged eval goes into (default: the first --store)");
  merge->add_option("--out", cli.outDir, "Where eval.json/.md/.html go (default: eval-N beside that store)");
  addFormatFlag(merge, cli.gate.format);
  merge->callback([&exitCode, shared] { exitCode = runMerge(*shared); });

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
