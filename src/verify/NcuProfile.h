// `check --profile` on a GPU: Nsight Compute (`ncu`) measures ONE launch of
// the correct candidate and one of the task's reference, on the check's
// largest checked shape with inputs drawn as the gate draws them, and keeps a
// fixed, documented metric set (docs/profile.md) side by side. Each launch
// runs in a process of its own (ptxforge_ncu_launch, a few lines over the GPU
// executor that load a cubin, upload the buffers a folder holds and launch
// once) under `ncu --csv --page raw`; the CSV is parsed here. Bounded in time
// and output; a missing ncu, no permission to read the counters
// (ERR_NVGPUCTRPERM) or any failure becomes NcuProfileReport::error, never a
// crash and never a change of verdict.
#pragma once

#include "support/Result.h"
#include "tasks/LaunchDirective.h"
#include "tasks/TaskSpec.h"

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::tasks {
struct CompiledReference;
}

namespace ptxforge::verify {

struct Candidate;
struct CheckResult;

// ---------------------------------------------------------------------------
// The CSV

/// One metric value as ncu printed it: a number (thousands separators
/// removed) with its unit, or text ("n/a") when it is not a number.
struct NcuValue {
  std::optional<double> number;
  std::string unit; ///< "nsecond", "%", "sector", "" for counts
  std::string text; ///< the field as printed
};

/// One profiled kernel launch: its identification columns and its metrics.
struct NcuKernelRow {
  std::string id;          ///< ncu's launch ID
  std::string kernelName;  ///< "sgemm" (demangled, as ncu prints it)
  std::string blockSize, gridSize, device, computeCapability;
  std::map<std::string, NcuValue> metrics; ///< by ncu metric name
};

/// Bounds on what parseNcuCsv accepts (a CSV beyond them is an error, not a crash).
struct NcuCsvLimits {
  size_t maxBytes = 16u << 20;
  size_t maxRows = 100'000;
  size_t maxColumns = 10'000;
  size_t maxFieldBytes = 64u << 10;
};

/// Parses what `ncu --csv` printed to stdout, in either layout: `--page raw`
/// (one row per launch, a column per metric, a units row under the header)
/// or `--page details` (a row per metric with "Metric Name", "Metric Unit",
/// "Metric Value" columns). Lines that are not CSV records (ncu's `==PROF==`
/// and `==WARNING==` lines, the program's own output) are skipped. An Error
/// (code `ncu-csv`, with the line) for no header, a malformed record, a record
/// whose field count differs from the header's, or input beyond `limits`.
Result<std::vector<NcuKernelRow>> parseNcuCsv(std::string_view text, const NcuCsvLimits &limits = {});

// ---------------------------------------------------------------------------
// The metric set

/// One metric of the documented set (docs/profile.md has the same table).
struct NcuMetricSpec {
  const char *key;       ///< the name in the result JSON: "time", "dram_throughput", ...
  const char *label;     ///< what the text output calls it
  const char *metric;    ///< the ncu metric; a ratio's numerator
  const char *divisor;   ///< nullptr, or the ncu metric a ratio divides by
  const char *unit;      ///< the unit in the result ("ns", "%", "sectors/request", ...)
  const char *meaning;   ///< one sentence
};

/// The documented metrics, in the order the text output lists them.
const std::vector<NcuMetricSpec> &ncuMetricSet();

/// Every ncu metric the set needs (numerators and divisors), comma-separated,
/// for `ncu --metrics`. The warp-stall reasons come from the WarpStateStats
/// section (smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio).
std::string ncuMetricList();

/// The prefix and suffix of the stall-reason metrics.
inline constexpr std::string_view kNcuStallPrefix = "smsp__average_warps_issue_stalled_";
inline constexpr std::string_view kNcuStallSuffix = "_per_issue_active.ratio";

// ---------------------------------------------------------------------------
// The report

/// One metric of the set for the candidate and the reference.
struct NcuMetricPair {
  std::string key, label, ncuMetric, unit;
  std::optional<double> candidate, reference; ///< unset: ncu did not report it
};

/// One warp-stall reason: warps stalled for it per issued instruction.
struct NcuStall {
  std::string reason; ///< "long_scoreboard"
  std::optional<double> candidate, reference;
};

struct NcuProfileReport {
  std::string ncuVersion; ///< "2025.3.0.0", from `ncu --version`
  std::string ncuPath;
  size_t shapeIndex = 0;  ///< into the task's shapes (a drawn shape: past them)
  tasks::Shape shape;
  std::string candidateKernel, referenceKernel; ///< as ncu named the launches
  std::vector<NcuMetricPair> metrics; ///< ncuMetricSet() order
  /// The largest stall reasons of the candidate (at most 5, largest first),
  /// with the reference's figure for the same reason.
  std::vector<NcuStall> stalls;
  /// The ncu command line of the candidate's run, to reproduce it by hand.
  std::string command;
  double elapsedMs = 0; ///< both ncu runs together
  /// Why some or all numbers are missing ("" when both runs gave them): ncu
  /// not found, ERR_NVGPUCTRPERM, a timeout, a failed launch, a bad CSV.
  std::string error;
};

/// Picks the metric set and the stalls out of two parsed rows.
NcuProfileReport pairNcuRows(const NcuKernelRow *candidate, const NcuKernelRow *reference);

// ---------------------------------------------------------------------------
// Running ncu

/// Where ncu is: $PTXFORGE_NCU, else `ncu` on PATH, else
/// /usr/local/cuda/bin/ncu; "" when nowhere.
std::string findNcu();

/// Where ptxforge_ncu_launch is: $PTXFORGE_NCU_LAUNCH, else beside the
/// running executable, else where the build put it; "" when nowhere.
std::string findNcuLauncher();

/// One launch for the launcher: the module, the kernel, the geometry and the
/// parameters in order.
struct NcuLaunch {
  std::vector<uint8_t> cubin;
  std::string kernel;
  tasks::ResolvedLaunch launch;
  struct Param {
    bool isBuffer = false;
    std::vector<std::byte> bytes; ///< a scalar's bytes, or a buffer's initial contents (empty: zeros)
    uint64_t bufferBytes = 0;     ///< buffers: the allocation
  };
  std::vector<Param> params;
};

struct NcuRunOptions {
  std::string ncuPath;      ///< empty: findNcu()
  std::string launcherPath; ///< empty: findNcuLauncher()
  std::chrono::milliseconds timeout{60'000}; ///< per ncu run
  size_t maxOutputBytes = 16u << 20;
  int deviceOrdinal = 0;
};

/// What one ncu run gave: the parsed row of the launch, or why there is none.
struct NcuRun {
  std::optional<NcuKernelRow> row;
  std::string command; ///< the argv, space-separated
  std::string error;
  double elapsedMs = 0;
};

/// Writes `launch` to a temporary folder and runs the launcher under ncu on
/// it. Never throws and never fails the caller: every problem is NcuRun::error.
NcuRun runUnderNcu(const NcuLaunch &launch, const NcuRunOptions &options);

/// "Version 2025.3.0.0 (build ...)" -> "2025.3.0.0"; "" when `ncu --version`
/// cannot be run.
std::string ncuVersion(const std::string &ncuPath);

/// The inputs of `task` on `shape` as the gate draws them (seed, trial 0),
/// outputs zero-filled, with `cubin` and `launch`. An Error for a parameter
/// the launcher cannot pass (a tensor map) or a bad expression.
Result<NcuLaunch> makeNcuLaunch(const tasks::TaskSpec &task, const tasks::Shape &shape,
                                const tasks::ResolvedLaunch &launch, std::vector<uint8_t> cubin, uint64_t seed);

/// check()'s GPU profile step, after a correct verdict and off the timed
/// path: ncu on the candidate (its cubin, its launch directives) and on the
/// reference (its cubin, the task's launch), on the check's largest checked
/// shape. Sets result.ncuProfile (with `error` set when ncu could not give
/// the numbers); never changes the verdict.
void addNcuProfile(const tasks::TaskSpec &task, const Candidate &candidate, const tasks::CompiledReference &reference,
                   CheckResult &result, const NcuRunOptions &options = {});

/// The text block of `check` (a few lines: each metric as candidate vs
/// reference, then the top stall reasons).
std::string formatNcuText(const NcuProfileReport &report);

/// Two or three "- ..." lines for the optimize prompt: duration, throughputs
/// and occupancy, shared-memory conflicts and global sectors per request,
/// then the top stall reasons, each yours vs the reference's; "" when ncu
/// gave no figures.
std::string describeNcuForPrompt(const NcuProfileReport &report);

nlohmann::json toJson(const NcuProfileReport &report);
/// The inverse of toJson(NcuProfileReport); InvalidInput names a mistyped field.
Result<NcuProfileReport> ncuProfileFromJson(const nlohmann::json &json);

} // namespace ptxforge::verify
