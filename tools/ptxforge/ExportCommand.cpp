// See ExportCommand.h.
#include "ExportCommand.h"

#include "ExportRecords.h"
#include "ModelOptions.h"
#include "Output.h"
#include "store/Store.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <unistd.h>

namespace ptxforge::cli {
namespace {

struct ExportCli {
  std::string what; ///< "runs" or "evals"
  std::vector<int64_t> ids;
  std::string format = "rl";
  std::string out;
  std::string storePath;
  std::string rewardWeights; ///< JSON, as serve's /v1/reward "weights"
};

/// A run to export and the eval it was reached through.
struct Selected {
  int64_t runId = 0;
  std::optional<int64_t> evalId;
};

/// The runs `cli` names, in a stable order: the ids as given, or every run
/// (every eval's runs) by ascending id.
Result<std::vector<Selected>> selectRuns(store::Store &store, const ExportCli &cli) {
  std::vector<Selected> selected;
  if (cli.what == "runs") {
    std::vector<int64_t> ids = cli.ids;
    if (ids.empty()) {
      Result<std::vector<store::RunRecord>> runs = store.runs(0);
      if (!runs) return runs.error();
      for (const store::RunRecord &run : *runs) ids.push_back(run.id);
      std::sort(ids.begin(), ids.end());
    }
    for (int64_t id : ids) selected.push_back({id, std::nullopt});
    return selected;
  }
  std::vector<int64_t> evalIds = cli.ids;
  if (evalIds.empty()) {
    Result<std::vector<store::EvalRecord>> evals = store.evals(0);
    if (!evals) return evals.error();
    for (const store::EvalRecord &record : *evals) evalIds.push_back(record.id);
    std::sort(evalIds.begin(), evalIds.end());
  }
  for (int64_t evalId : evalIds) {
    // An unknown id is an error naming it, not an empty export.
    if (Result<store::EvalRecord> record = store.evalRecord(evalId); !record) return record.error();
    Result<std::vector<store::EvalRun>> runs = store.evalRuns(evalId);
    if (!runs) return runs.error();
    for (const store::EvalRun &run : *runs) selected.push_back({run.runId, evalId});
  }
  return selected;
}

/// The lines go to a file beside `path` that replaces it only once complete,
/// so that an interrupted export never leaves half a dataset under its name.
///
/// `datasets` types each column by the first block of a file (about 10 MB): a
/// list that is empty in every record there ([] reads as a list of nulls) and
/// holds objects further on fails to load. So lines that cannot type their
/// lists (`leads` false) are held back in a scratch file until one that can
/// arrives; it is written first, then the held lines in their order. Without
/// such a line the file keeps its order (the lists are empty throughout).
class DatasetFile {
public:
  Result<void> open(const std::string &path) {
    path_ = path;
    if (path == "-") return {};
    std::filesystem::path target(path);
    if (std::filesystem::is_directory(target))
      return makeError(ErrorKind::InvalidInput, fmt::format("--out {} is a folder; give a file name (e.g. data.jsonl)", path));
    temporary_ = target.string() + fmt::format(".tmp-{}", ::getpid());
    stream_.open(temporary_, std::ios::binary | std::ios::trunc);
    if (!stream_) return makeError(ErrorKind::Io, fmt::format("cannot write {}", temporary_));
    return {};
  }
  Result<void> write(const std::string &line, bool leads) {
    if (led_) return emit(line);
    if (!leads) {
      if (held_ == nullptr && (held_ = std::tmpfile()) == nullptr)
        return makeError(ErrorKind::Io, "cannot create a scratch file (tmpfile)");
      if (std::fwrite(line.data(), 1, line.size(), held_) != line.size())
        return makeError(ErrorKind::Io, "writing the scratch file failed");
      return {};
    }
    led_ = true;
    if (Result<void> written = emit(line); !written) return written;
    return releaseHeld();
  }
  Result<void> commit() {
    if (Result<void> released = releaseHeld(); !released) return released;
    if (path_ == "-") {
      std::cout.flush();
      return {};
    }
    stream_.close();
    if (!stream_) return makeError(ErrorKind::Io, fmt::format("writing {} failed", temporary_));
    std::error_code error;
    std::filesystem::rename(temporary_, path_, error);
    if (error) return makeError(ErrorKind::Io, fmt::format("cannot rename {} to {}: {}", temporary_, path_, error.message()));
    temporary_.clear();
    return {};
  }
  ~DatasetFile() {
    if (held_ != nullptr) std::fclose(held_);
    if (!temporary_.empty()) {
      stream_.close();
      std::error_code ignored;
      std::filesystem::remove(temporary_, ignored);
    }
  }

private:
  Result<void> emit(std::string_view text) {
    std::ostream &out = path_ == "-" ? std::cout : stream_;
    out << text;
    if (!out) return makeError(ErrorKind::Io, fmt::format("writing {} failed", path_ == "-" ? "<stdout>" : temporary_));
    return {};
  }
  Result<void> releaseHeld() {
    if (held_ == nullptr) return {};
    std::rewind(held_);
    char buffer[1 << 16];
    size_t count = 0;
    while ((count = std::fread(buffer, 1, sizeof buffer, held_)) > 0)
      if (Result<void> written = emit(std::string_view(buffer, count)); !written) return written;
    const bool failed = std::ferror(held_) != 0;
    std::fclose(held_);
    held_ = nullptr;
    if (failed) return makeError(ErrorKind::Io, "reading the scratch file back failed");
    return {};
  }

  std::string path_, temporary_;
  std::ofstream stream_;
  std::FILE *held_ = nullptr;
  bool led_ = false;
};

/// Whether `record` types every list column it has (see DatasetFile).
bool typesItsLists(const nlohmann::json &record) {
  for (const auto &[key, value] : record.items())
    if (value.is_array() && value.empty()) return false;
  return true;
}

int runExport(const ExportCli &cli) {
  DatasetOptions options;
  options.format = *parseDatasetFormat(cli.format); // the option's check admits the names only
  if (!cli.rewardWeights.empty()) {
    nlohmann::json weights = nlohmann::json::parse(cli.rewardWeights, nullptr, false);
    if (weights.is_discarded()) return fail("text", "--reward-weights: not JSON (e.g. '{\"correct\": 1, \"rejected\": -1}')");
    Result<serve::RewardWeights> parsed = serve::RewardWeights::fromJson(weights);
    if (!parsed) return fail("text", "--reward-weights: " + parsed.error().message);
    options.weights = *parsed;
  }
  Result<std::unique_ptr<store::Store>> store = openStoreForReading(cli.storePath);
  if (!store) return fail("text", store.error());
  Result<std::vector<Selected>> selected = selectRuns(**store, cli);
  if (!selected) return fail("text", selected.error());

  DatasetFile file;
  if (Result<void> opened = file.open(cli.out); !opened) return fail("text", opened.error());
  DatasetCounts counts;
  // One run in memory at a time: a store of many runs exports in bounded memory.
  for (const Selected &run : *selected) {
    Result<store::RunData> data = (*store)->load(run.runId);
    if (!data) return fail("text", data.error());
    for (const nlohmann::json &record : datasetRecords(*data, run.evalId, options, counts))
      if (Result<void> written = file.write(datasetLine(record), typesItsLists(record)); !written)
        return fail("text", written.error());
  }
  if (Result<void> committed = file.commit(); !committed) return fail("text", committed.error());

  std::FILE *summary = cli.out == "-" ? stderr : stdout;
  fmt::print(summary, "{} {} record(s) from {} run(s) ({} attempts) to {}\n", counts.records, cli.format, counts.runs,
             counts.attempts, cli.out == "-" ? "<stdout>" : cli.out);
  for (const auto &[reason, count] : counts.skipped)
    fmt::print(summary, "  left out: {} {}: {}\n", count, options.format == DatasetFormat::Sft ? "run(s)" : "attempt(s)",
               reason);
  return kExitOk;
}

} // namespace

void registerExportCommand(CLI::App &app, int &exitCode) {
  auto shared = std::make_shared<ExportCli>();
  ExportCli &cli = *shared;
  CLI::App *command = app.add_subcommand(
      "export", "Training data from recorded runs or evals as JSON lines for `datasets` and TRL (docs/datasets.md)");
  command->add_option("what", cli.what, "runs or evals")->check(CLI::IsMember({"runs", "evals"}))->required();
  command->add_option("ids", cli.ids, "Run or eval ids (default: all, by ascending id)");
  command->add_option("--format", cli.format,
                      "sft: the task prompt -> the best correct PTX per run; rl: every verified attempt with its "
                      "verdict and reward; pairs: chosen/rejected completions of one prompt")
      ->check(CLI::IsMember({"sft", "rl", "pairs"}))
      ->capture_default_str();
  command->add_option("--out", cli.out, "The JSONL file to write (- for stdout)")->required();
  addStoreFlag(command, cli.storePath);
  command->add_option("--reward-weights", cli.rewardWeights,
                      "The reward's weights as JSON, as serve's /v1/reward takes them (default: serve's)");
  command->callback([&exitCode, shared] { exitCode = runExport(*shared); });
}

} // namespace ptxforge::cli
