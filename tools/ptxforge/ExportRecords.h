// Training data out of the run store: the records of `ptxforge export`, one
// JSON object per line, in the shapes trainers load (docs/datasets.md):
//   sft    the task prompt as the model saw it -> the run's best correct PTX
//   rl     every verified attempt: prompt, completion, PTX, verdict, stage,
//          diagnostics, speedup band, and serve's staged reward
//   pairs  chosen/rejected completions of one prompt, for preference training
// Built here from what the store recorded; nothing is checked again. The
// selection rules (best correct, preference) are plain functions of an
// AttemptScore so that their tests need no store.
#pragma once

#include "serve/Gate.h"
#include "store/Store.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ptxforge::cli {

/// Every record carries it as "schema_version"; raised when a field changes
/// meaning or goes away (adding a field does not raise it).
constexpr int kDatasetSchemaVersion = 1;

enum class DatasetFormat { Sft, Rl, Pairs };
/// "sft", "rl", "pairs"; the one name table.
const char *datasetFormatName(DatasetFormat format);
std::optional<DatasetFormat> parseDatasetFormat(std::string_view name);

/// What the selection rules compare of an attempt.
struct AttemptScore {
  bool correct = false;
  /// The headline benchmark's speedup noise band (baseline p10 / candidate
  /// p90 .. baseline p90 / candidate p10); none when the attempt was not
  /// timed (the emulator does not time) or is not correct.
  std::optional<double> speedupLow, speedupHigh;
  std::string_view completion; ///< the model's whole answer
};

/// The preference rule of `pairs`: +1 when `a` is better than `b`, -1 when
/// worse, 0 when neither can be told better.
///   - correct beats not correct (every failing verdict ranks the same);
///   - of two correct ones, both timed, the one whose band lies wholly above
///     the other's (its low bound above the other's high bound) is better;
///     overlapping bands, or a correct one untimed, are a tie: noise (or no
///     timing) cannot tell them apart.
int comparePreference(const AttemptScore &a, const AttemptScore &b);

/// The best correct attempt of `scores` (in attempt order): the timed one with
/// the highest speedup low bound, else the first correct one; the earliest on
/// a tie (an original before its duplicates). None when none is correct.
std::optional<size_t> bestCorrect(std::span<const AttemptScore> scores);

/// Every (chosen, rejected) pair of `scores` (attempts that answered one
/// prompt) where comparePreference(chosen, rejected) is +1 and the two
/// completions differ in text; a pair of texts already taken (two slots that
/// wrote the same answers) is not taken again. Ordered by chosen, then
/// rejected, in attempt order.
std::vector<std::pair<size_t, size_t>> preferencePairs(std::span<const AttemptScore> scores);

struct DatasetOptions {
  DatasetFormat format = DatasetFormat::Rl;
  serve::RewardWeights weights; ///< of rl's and pairs' rewards, as serve's /v1/reward takes them
};

/// What an export took and what it left out, and why.
struct DatasetCounts {
  size_t runs = 0;
  size_t attempts = 0;
  size_t records = 0;
  /// Reason -> attempts left out (for sft: runs left out).
  std::map<std::string, size_t> skipped;
};

/// The records of one run in `options.format`, in attempt order. `evalId` is
/// the eval the run was exported through (0 in the records otherwise). No
/// field is ever null: absent values are typed sentinels (0, "", 0.0 with
/// `timed` false, -1), because `datasets` types a column from a file's first
/// block and a null there fails the load of a number further on.
/// Never throws on odd stored content: what cannot be read is skipped and
/// counted in `counts.skipped` with its reason.
std::vector<nlohmann::json> datasetRecords(const store::RunData &data, std::optional<int64_t> evalId,
                                           const DatasetOptions &options, DatasetCounts &counts);

/// One record as a JSONL line (compact, a newline at the end; invalid UTF-8
/// in stored text replaced, never thrown on).
std::string datasetLine(const nlohmann::json &record);

/// The prompt messages a stored request holds ([{role, content}], strings
/// only, in order); none when it holds none that read so.
std::optional<nlohmann::json> requestMessages(const nlohmann::json &request);

} // namespace ptxforge::cli
