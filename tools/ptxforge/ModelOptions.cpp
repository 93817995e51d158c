#include "ModelOptions.h"

#include "GrammarCommand.h"
#include "llm/ReplayBackend.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ptxforge::cli {

namespace {

std::atomic<int> interrupts{0};

extern "C" void onInterrupt(int) {
  interrupts.fetch_add(1);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

} // namespace

void addModelFlags(CLI::App *command, ModelFlags &flags) {
  command->add_option("--model", flags.model,
                      "BACKEND:NAME: openai:MODEL, anthropic:MODEL, exec:COMMAND, replay:FILE.jsonl, batch:MODEL")
      ->envname("PTXFORGE_MODEL");
  command->add_option("--base-url", flags.baseUrl, "Endpoint root of an openai or anthropic server")
      ->envname("PTXFORGE_BASE_URL");
  command->add_option("--api-key-env", flags.apiKeyEnv, "Name of the environment variable holding the API key");
  command->add_option("--record", flags.record, "Append every completion to this JSONL file (replay:FILE replays it)");
  command->add_option("--batch-file", flags.batchFile, "batch: where to write the requests not answered yet");
  command->add_option("--batch-results", flags.batchResults, "batch: Batch-API output files to answer from");
  command->add_option("--connect-timeout", flags.connectTimeout, "Seconds to wait for a connection");
  command->add_option("--request-timeout", flags.requestTimeout, "Seconds one model request may take");
  command->add_option("--stall-timeout", flags.stallTimeout, "Seconds a stream may stay silent");
  command->add_option("--retries", flags.retries, "Retries on 429, 5xx and broken connections")->check(CLI::Range(0, 100));
  command->add_option("--retry-backoff", flags.retryBackoff, "Seconds before the first retry");
  command->add_option("--max-retry-after", flags.maxRetryAfter, "Longest Retry-After in seconds that is waited out");
  command->add_flag("--guided", flags.guided,
                    "openai: constrain decoding with the PTX grammar (`ptxforge grammar`), docs/guided.md")
      ->envname("PTXFORGE_GUIDED");
  command->add_option("--server-flavour", flags.serverFlavour,
                      "With --guided: vllm (structured_outputs.grammar), vllm-legacy (guided_grammar), sglang (ebnf), "
                      "llamacpp (grammar); default vllm")
      ->check(CLI::IsMember({"vllm", "vllm-legacy", "sglang", "llamacpp"}))
      ->envname("PTXFORGE_SERVER_FLAVOUR");
  command->add_option("--guided-format", flags.guidedFormat,
                      "With --guided: gbnf, lark or ebnf (default: gbnf for llamacpp, ebnf for the others)")
      ->check(CLI::IsMember({"gbnf", "lark", "ebnf"}))
      ->envname("PTXFORGE_GUIDED_FORMAT");
  command->add_flag("--guided-stream", flags.guidedStream,
                    "Check the PTX at each statement as it streams; at the first error no continuation can fix, "
                    "stop and continue from the last valid statement with the diagnostic (docs/guided.md)")
      ->envname("PTXFORGE_GUIDED_STREAM");
  command->add_option("--max-backtracks", flags.maxBacktracks, "With --guided-stream: cuts per answer")
      ->check(CLI::Range(0, 100))
      ->capture_default_str()
      ->envname("PTXFORGE_MAX_BACKTRACKS");
  command->add_option("--stream-continue", flags.streamContinue,
                      "With --guided-stream: prefill (a final assistant message: anthropic, vLLM, SGLang, llama.cpp) "
                      "or completions (the chat as text with the kept answer appended, sent to /completions)")
      ->check(CLI::IsMember({"prefill", "completions"}))
      ->capture_default_str()
      ->envname("PTXFORGE_STREAM_CONTINUE");
}

Result<solve::GuidedStreamOptions> guidedStreamOptions(const ModelFlags &flags, std::string_view spec) {
  solve::GuidedStreamOptions options;
  options.enabled = flags.guidedStream;
  options.maxBacktracks = flags.maxBacktracks;
  if (std::optional<solve::ContinueMode> mode = solve::parseContinueMode(flags.streamContinue)) options.continueMode = *mode;
  if (!options.enabled) return options;
  if (flags.guided)
    return makeError(ErrorKind::InvalidInput,
                     "--guided-stream and --guided do not go together: the grammar constrains a whole answer, and a "
                     "continuation starts in the middle of one (docs/guided.md)");
  if (spec.starts_with("batch:"))
    return makeError(ErrorKind::InvalidInput, "--guided-stream needs answers as they are written; the batch backend "
                                              "answers later");
  return options;
}

Result<std::unique_ptr<llm::Backend>> openModel(const ModelFlags &flags, std::string &spec) {
  if (spec.empty())
    if (std::optional<std::string> fromEnvironment = llm::modelSpecFromEnvironment()) spec = *fromEnvironment;
  if (spec.empty())
    return makeError(ErrorKind::InvalidInput, "no model: give --model BACKEND:NAME (or set PTXFORGE_MODEL)");
  Result<llm::BackendOptions> fromEnvironment = llm::optionsFromEnvironment();
  if (!fromEnvironment) return fromEnvironment.error();
  llm::BackendOptions options = std::move(fromEnvironment.value());
  auto ms = [](double seconds) { return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)); };
  if (flags.baseUrl) options.baseUrl = *flags.baseUrl;
  if (flags.apiKeyEnv) options.apiKeyVariable = *flags.apiKeyEnv;
  if (flags.record) options.recordPath = *flags.record;
  if (flags.batchFile) options.batchFile = *flags.batchFile;
  if (!flags.batchResults.empty()) options.batchResults = flags.batchResults;
  if (flags.connectTimeout) options.connectTimeout = ms(*flags.connectTimeout);
  if (flags.requestTimeout) options.requestTimeout = ms(*flags.requestTimeout);
  if (flags.stallTimeout) options.stallTimeout = ms(*flags.stallTimeout);
  if (flags.retryBackoff) options.initialBackoff = ms(*flags.retryBackoff);
  if (flags.maxRetryAfter) options.maxRetryAfter = ms(*flags.maxRetryAfter);
  if (flags.retries) options.maxRetries = *flags.retries;
  if (flags.serverFlavour) options.serverFlavour = *flags.serverFlavour;
  if (flags.guided) {
    // Every target's opcodes: the grammar is one per run, and a run may span targets.
    std::string format = flags.guidedFormat.value_or(llm::defaultGrammarFormat(options.serverFlavour));
    Result<std::string> grammar = buildGrammar(format, "", std::nullopt, {});
    if (!grammar) return grammar.error();
    options.guidedGrammar = std::move(grammar.value());
  }
  return llm::openBackend(spec, options);
}

void noteReplayedByPosition(const llm::Backend &backend) {
  const auto *replay = dynamic_cast<const llm::ReplayBackend *>(&backend);
  if (!replay || replay->answeredByPosition() == 0) return;
  fmt::print(stderr,
             "replay: {} request(s) not in the recording were answered with the completion recorded at the same "
             "place in the run (task, round, slot, kind, strategies; the same sampling parameters and seed): their "
             "text differed, as an optimize prompt quoting the times measured in this run does; PTXFORGE_REPLAY_BY_POSITION=0 turns this off\n",
             replay->answeredByPosition());
}

void addStoreFlag(CLI::App *command, std::string &path) {
  command->add_option("--store", path, "Run database (default: ptxforge-runs/runs.db)")->envname("PTXFORGE_STORE");
}

std::string storePathOrDefault(const std::string &path) {
  if (!path.empty()) return path;
  const char *env = std::getenv("PTXFORGE_STORE");
  return env && *env ? env : "ptxforge-runs/runs.db";
}

std::filesystem::path defaultOutputDir(const std::string &storePath, std::string_view kind, int64_t id) {
  const std::filesystem::path store(storePath);
  const std::string stem = store.stem().string();
  const std::string name = stem == "runs" || stem.empty() ? fmt::format("{}-{}", kind, id)
                                                          : fmt::format("{}-{}-{}", stem, kind, id);
  return store.parent_path() / name;
}

Result<std::unique_ptr<store::Store>> openStoreForReading(const std::string &path) {
  return store::Store::openReadOnly(storePathOrDefault(path));
}

Result<std::unique_ptr<store::Store>> openStore(const std::string &path) {
  std::string chosen = storePathOrDefault(path);
  std::filesystem::path parent = std::filesystem::path(chosen).parent_path();
  std::error_code ignored;
  if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
  return store::Store::open(chosen);
}

Result<std::vector<prompt::Strategy>> firstAttemptStrategies(const std::string &text) {
  Result<std::vector<prompt::Strategy>> parsed = prompt::parseStrategies(text);
  if (!parsed) return makeError(ErrorKind::InvalidInput, "--strategy: " + parsed.error().message);
  std::vector<prompt::Strategy> strategies = std::move(parsed.value());
  for (prompt::Strategy s : strategies)
    if (s == prompt::Strategy::Repair || s == prompt::Strategy::Optimize)
      return makeError(ErrorKind::InvalidInput, "--strategy: repair and optimize are the later rounds' (--rounds); "
                                                "give the first attempt's strategies (zero-shot, hints, spec, few-shot, "
                                                "skeleton)");
  if (std::find(strategies.begin(), strategies.end(), prompt::Strategy::ZeroShot) == strategies.end())
    strategies.insert(strategies.begin(), prompt::Strategy::ZeroShot);
  return strategies;
}

Result<void> writeTextFile(const std::filesystem::path &path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out) return makeError(ErrorKind::Io, "cannot write " + path.string());
  return {};
}

InterruptStop::InterruptStop() {
  interrupts = 0;
  std::signal(SIGINT, onInterrupt);
  std::signal(SIGTERM, onInterrupt);
  watcher_ = std::jthread([this](std::stop_token done) {
    while (!done.stop_requested()) {
      if (interrupts.load() > 0) {
        fmt::print(stderr, "ptxforge: interrupted: finishing the store writes (Ctrl-C again to kill)\n");
        source_.request_stop();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
}

InterruptStop::~InterruptStop() {
  watcher_.request_stop();
  watcher_.join();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

} // namespace ptxforge::cli
