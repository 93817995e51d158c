// Builder: `ptxforge corpus build`. CUDA translation units × flag sets ×
// targets through NVRTC (in process), one PTX module per kernel
// (EntrySplit.h), lint, the PTX compiler for resources, nvdisasm for SASS
// statistics, the filters, exact and MinHash dedupe, then sharded JSONL and a
// dataset card. Each (unit, flag set, target) compile is cached by content
// hash, so that building the same sources again compiles nothing.
#pragma once

#include "corpus/Config.h"
#include "support/Result.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace ptxforge::corpus {

/// Where a build stands, reported after every finished unit.
struct BuildProgress {
  size_t unitsDone = 0;
  size_t unitsTotal = 0;
  size_t compiled = 0; ///< units compiled in this build
  size_t cached = 0;   ///< units read from the cache
  double elapsedSeconds = 0;
};

/// One filter stage: how many rows reached it and how many it dropped.
struct StageCount {
  std::string stage;       ///< "nvrtc", "lint", "compile", "size", "spill", "exact-dedupe", "near-dedupe"
  std::string description; ///< what it keeps, for the card
  std::string counts = "kernels"; ///< what `in` counts: "units" (the nvrtc stage) or "kernels"
  size_t in = 0;
  size_t dropped = 0;
  bool enabled = true;
  size_t kept() const { return in - dropped; }
};

/// A row about to be written, handed to the scorer (see BuildOptions::scorer).
using Row = nlohmann::ordered_json;

struct BuildOptions {
  std::vector<std::string> inputs;  ///< CUDA files and folders
  std::filesystem::path outDir;
  std::filesystem::path cacheDir;   ///< empty: <outDir>/cache
  CorpusConfig config = CorpusConfig::defaults();
  std::string configName = "defaults"; ///< the config file, for the card
  unsigned threads = 0;             ///< 0: one per core
  std::function<void(const BuildProgress &)> progress;
  /// Task names by kernel: a kernel whose entry name and parameter count
  /// match a task (tasks::TaskSpec kernel and params) gets "task" set.
  std::function<std::string(const std::string &entry, int parameterCount)> matchTask;
  /// Measures a row whose "task" is set (the gate lives above this library:
  /// the CLI passes serve::Gate here). Returns the "score" object —
  /// unscoredScore()'s fields with "scored": true — or null to leave the row
  /// unscored. Called on one thread, after dedupe, for the rows that are written.
  std::function<nlohmann::ordered_json(const Row &row)> scorer;
};

struct BuildSummary {
  size_t sources = 0;
  size_t globalFunctions = 0; ///< `__global__` declarations in the sources
  size_t units = 0;           ///< sources × flag sets × targets
  size_t compiled = 0;
  size_t cached = 0;
  size_t nvrtcFailedUnits = 0;
  size_t kernels = 0;         ///< kernel variants NVRTC produced (rows before the filters)
  std::vector<StageCount> stages;
  size_t rows = 0;            ///< written
  size_t shards = 0;
  size_t scored = 0;
  std::string sassNote;       ///< why SASS statistics are missing, or empty
  std::string nvrtcVersion;
  double seconds = 0;

  /// The summary as the JSON of build.json and `--format json`.
  nlohmann::ordered_json toJson() const;
};

/// The "score" of a row nobody measured: {"scored": false, "task": "",
/// "verdict": "", "stage": "", "executor": "", "speedup": 0.0, "median_ms":
/// 0.0, "baseline_ms": 0.0, "summary": ""}. Rows never hold null where
/// another row holds a value: `datasets` infers each column's type from the
/// first shard and cannot cast a later string into a null column.
Row unscoredScore();

/// Builds the corpus into options.outDir: data/train-NNNNN-of-MMMMM.jsonl,
/// README.md (the dataset card), build.json (config, counts, versions) and
/// rejected.jsonl (every dropped row: where, which stage, why). Errors: bad
/// inputs (missing files), an unwritable output folder, NVRTC or the PTX
/// compiler unable to run at all. A translation unit NVRTC rejects is not an
/// error: its kernels are counted at the `nvrtc` stage and listed in
/// rejected.jsonl.
Result<BuildSummary> buildCorpus(const BuildOptions &options);

/// The shard files of a corpus folder, in order (data/train-*.jsonl).
std::vector<std::filesystem::path> shardFiles(const std::filesystem::path &corpusDir);

} // namespace ptxforge::corpus
