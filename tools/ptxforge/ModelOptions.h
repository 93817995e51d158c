// What the model-facing commands (solve, eval) share: the model backend's
// flags, the run store's location, and a clean stop on Ctrl-C.
#pragma once

#include "llm/BackendSpec.h"
#include "prompt/PromptBuilder.h"
#include "solve/GuidedStream.h"
#include "store/Store.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace ptxforge::cli {

/// The backend flags; each unset one falls back to its environment twin
/// (llm::optionsFromEnvironment(), the table in docs/llm.md), then to the default.
struct ModelFlags {
  std::string model;
  std::optional<std::string> baseUrl, apiKeyEnv, record, batchFile;
  std::vector<std::string> batchResults;
  std::optional<double> connectTimeout, requestTimeout, stallTimeout, retryBackoff, maxRetryAfter;
  std::optional<int> retries;
  /// --guided: send the PTX grammar (docs/guided.md) in --server-flavour's field.
  bool guided = false;
  std::optional<std::string> serverFlavour, guidedFormat;
  /// --guided-stream, --max-backtracks, --stream-continue (docs/guided.md).
  bool guidedStream = false;
  int maxBacktracks = solve::GuidedStreamOptions{}.maxBacktracks;
  std::string streamContinue = solve::continueModeName(solve::GuidedStreamOptions{}.continueMode);
};

void addModelFlags(CLI::App *command, ModelFlags &flags);

/// The streaming checks the flags ask for; InvalidInput for combinations that
/// cannot work (with --guided, or a batch: backend).
Result<solve::GuidedStreamOptions> guidedStreamOptions(const ModelFlags &flags, std::string_view spec);

/// Opens the backend `spec` names (empty: $PTXFORGE_MODEL) with the flags.
/// The error says what to give when there is no model at all.
Result<std::unique_ptr<llm::Backend>> openModel(const ModelFlags &flags, std::string &spec);
/// After a run on replay:FILE, says on stderr how many requests were answered
/// by their place in the run rather than by their own recording (ReplayBackend.h).
void noteReplayedByPosition(const llm::Backend &backend);

/// --store with $PTXFORGE_STORE as its twin.
void addStoreFlag(CLI::App *command, std::string &path);
/// `path`, or when empty $PTXFORGE_STORE, else ptxforge-runs/runs.db.
std::string storePathOrDefault(const std::string &path);

/// Where a run's or an eval's files go by default: beside the store, in
/// `run-N` / `eval-N` for a store named runs.db, else `<stem>-run-N`, so that
/// two stores in one folder never write over each other's files.
std::filesystem::path defaultOutputDir(const std::string &storePath, std::string_view kind, int64_t id);
/// Opens the store at storePathOrDefault(path) for writing, creating it and its folder.
/// Only the commands that record something (solve, eval) use this.
Result<std::unique_ptr<store::Store>> openStore(const std::string &path);
/// Opens an existing store for the commands that only read it (runs, show,
/// report, eval show/compare/leaderboard): no file or folder is created;
/// a missing one is InvalidInput "no run store at PATH".
Result<std::unique_ptr<store::Store>> openStoreForReading(const std::string &path);

/// --strategy of solve and eval: the first attempt's strategies (zero-shot,
/// spec, few-shot, skeleton), zero-shot added when missing. Repair and
/// optimize belong to the later rounds: InvalidInput says so.
Result<std::vector<prompt::Strategy>> firstAttemptStrategies(const std::string &text);

/// Writes `text` to `path`, replacing it; an Io error names the path.
Result<void> writeTextFile(const std::filesystem::path &path, std::string_view text);

/// While alive, the first SIGINT/SIGTERM requests a stop (a message says so on
/// stderr) and a second one kills as usual. One at a time.
class InterruptStop {
public:
  InterruptStop();
  ~InterruptStop();
  InterruptStop(const InterruptStop &) = delete;
  InterruptStop &operator=(const InterruptStop &) = delete;
  std::stop_token token() const { return source_.get_token(); }

private:
  std::stop_source source_;
  std::jthread watcher_;
};

} // namespace ptxforge::cli
