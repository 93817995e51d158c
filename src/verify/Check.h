// The verification gate: lint → compile → execute and compare → benchmark, in
// that order, stopping at the first stage that fails and saying why. This is
// what `ptxforge check` runs and what the solve loop will call per candidate.
#pragma once

#include "exec/Executor.h"
#include "ptx/Diagnostic.h"
#include "support/Result.h"
#include "support/Stats.h"
#include "tasks/Compare.h"
#include "tasks/LaunchDirective.h"
#include "tasks/TaskSpec.h"
#include "toolchain/Compiler.h"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::verify {

/// The Result contract's verdicts (DESIGN.md), plus `launch-error` for a
/// launch the driver refused (bad geometry, too many resources).
enum class Verdict { Correct, Wrong, CompileError, LintError, Crashed, Timeout, LaunchError, Rejected };

const char *verdictName(Verdict verdict);

struct CheckOptions {
  std::string arch;                  ///< empty: the executor's device architecture
  std::vector<size_t> shapeIndices;  ///< empty: every shape of the task
  uint64_t seed = 1;
  int trials = 3;                    ///< fresh random inputs per trial
  bool benchmark = true;
  int timingRounds = 10;             ///< candidate and baseline alternate per round
  int repetitionsPerRound = 5;
  uint32_t launchTimeoutMs = 10'000; ///< watchdog deadline of one launch
  bool lint = true;                  ///< false: lint errors do not stop the gate (find false positives)
};

/// One output buffer of one checked launch.
struct OutputReport {
  std::string param;
  tasks::CompareResult compare;
  /// Bytes changed in the guard zones before / after the buffer (out-of-bounds writes).
  size_t guardBytesBefore = 0;
  size_t guardBytesAfter = 0;
  std::string guardDetail; ///< e.g. "byte 3 after the end changed from 0xcd to 0x00"
};

/// One (shape, trial) correctness run.
struct TrialReport {
  size_t shapeIndex = 0;
  tasks::Shape shape;
  int trial = 0;
  bool afterTiming = false; ///< the re-check after the benchmark
  tasks::ResolvedLaunch launch;
  bool passed = false;
  std::vector<OutputReport> outputs;
};

/// Milliseconds.
using TimingStats = Spread;

/// Candidate against baseline on one shape, timed in the same run.
struct BenchmarkReport {
  size_t shapeIndex = 0;
  tasks::Shape shape;
  TimingStats candidate, baseline;
  double speedup = 0;       ///< baseline median / candidate median
  double speedupLow = 0;    ///< baseline p10 / candidate p90: the noise band
  double speedupHigh = 0;   ///< baseline p90 / candidate p10
  std::optional<double> gflops, gbps; ///< candidate, from the task's cost formulas
  std::optional<double> baselineGflops, baselineGbps;
  std::optional<double> bandwidthFraction; ///< of the device's theoretical DRAM bandwidth
  /// Of the measured ceilings (`ptxforge device`), when they are cached for this device.
  std::optional<double> copyCeilingFraction, fp32CeilingFraction;
};

/// Everything one check found: the Result contract of DESIGN.md.
struct CheckResult {
  Verdict verdict = Verdict::Rejected;
  std::string stage;   ///< the last stage reached: lint, compile, execute, benchmark, done
  std::string summary; ///< one line a person or a model reads first
  std::vector<ptx::Diagnostic> diagnostics;
  std::optional<toolchain::CompileResult> compile;
  std::optional<exec::KernelInfo> kernel; ///< what the driver says of the loaded kernel
  std::vector<TrialReport> trials;
  std::vector<BenchmarkReport> benchmarks;
  std::string executorError; ///< the driver's words for crashed / timeout / launch-error
  // Provenance.
  std::string task;
  std::string arch;
  std::string device;
  uint64_t seed = 0;
  std::vector<size_t> shapeIndices;
  std::string referenceCompiler; ///< "NVRTC 13.0"
};

/// The benchmark a result is judged by: the one with the slowest nvcc
/// baseline (the task's largest timed shape); null when nothing was timed.
const BenchmarkReport *headlineBenchmark(const CheckResult &result);

/// Static checks that belong to the gate rather than to PTX itself: the task's
/// kernel exists with a compatible signature, no timer is read (codes
/// `missing-kernel`, `signature-mismatch`, `timer-read`).
std::vector<ptx::Diagnostic> gateChecks(const tasks::TaskSpec &task, std::string_view candidatePtx);

/// Runs the gate on `candidatePtx` for `task`. `executor` may be null (no GPU):
/// then the gate stops after compile with an Error of kind ToolMissing that
/// says so, after filling `partial` with what was found up to there.
/// An Error means the gate itself could not run (reference does not compile,
/// executor failure unrelated to the candidate); the candidate's own failures
/// are verdicts in an ok Result.
Result<CheckResult> check(const tasks::TaskSpec &task, std::string_view candidatePtx, exec::Executor *executor,
                          const CheckOptions &options, CheckResult *partial = nullptr);

/// One output of one (shape, trial) run of a task's reference on two executors.
struct CrossCheckRow {
  size_t shapeIndex = 0;
  tasks::Shape shape;
  int trial = 0;
  std::string param;
  tasks::ElementType type = tasks::ElementType::F32;
  size_t count = 0;
  size_t identical = 0;         ///< elements equal bit for bit
  tasks::CompareResult compare; ///< b against a, with the task's tolerance
};

/// The reference of a task run on executor `a` and on executor `b` (the GPU
/// and the emulator) with the same inputs: how far apart their outputs are.
struct CrossCheckResult {
  std::string task;
  std::string deviceA, deviceB;
  std::vector<CrossCheckRow> rows;
  /// Integer outputs identical, float outputs within the task's tolerance.
  bool passed = true;
};

/// Runs the task's reference (compiled for options.arch, default sm_90) on
/// both executors over options.shapeIndices (default: the task's small shapes)
/// and options.trials input sets. Executor failures are Errors.
Result<CrossCheckResult> crossCheck(const tasks::TaskSpec &task, exec::Executor &a, exec::Executor &b,
                                    const CheckOptions &options);

nlohmann::json toJson(const CheckResult &result);
nlohmann::json toJson(const CrossCheckResult &result);

/// The inverse of toJson(CheckResult), for results read back from the run
/// store: verdict, stage, summary, diagnostics, resources (as a CompileResult
/// with ok set when the stage passed compile), kernel, trials, benchmarks,
/// executor error and provenance. Whatever toJson does not write (cubin, raw
/// logs, input data) stays empty. The prompt builder's feedback, resources and
/// timings text is the same for a result and for its JSON read back.
/// InvalidInput names the JSON path of a missing or mistyped field.
Result<CheckResult> checkResultFromJson(const nlohmann::json &json);

/// A compiler-like text report.
std::string formatText(const CheckResult &result);

// ---------------------------------------------------------------------------
// The vendor-library baseline

/// A task's [vendor] operation (cuBLAS) on one shape: first checked against
/// the reference's output with the task's tolerance, then, only if it agrees,
/// timed as the gate times the nvcc baseline.
struct VendorReport {
  std::string task;
  std::string library;           ///< "cublas"
  std::string op;                ///< "gemm", "gemm_f16_f32", "gemm_batched", "gemv"
  size_t shapeIndex = 0;
  tasks::Shape shape;
  std::map<std::string, int64_t> sizes; ///< the op's m, n, k (, batch) on the shape
  /// The library's output against the reference's, and that buffer's guard zones.
  OutputReport output;
  /// Within tolerance and no guard byte changed on any operand; only then timed.
  bool passed = false;
  std::string summary;           ///< one line: the timing, or why there is none
  std::optional<TimingStats> timing; ///< milliseconds per call
  std::optional<double> gflops, gbps; ///< from the task's cost formulas
};

/// Runs the task's [vendor] operation through `executor` (runLibraryCall) on
/// shape `shapeIndex` with the inputs the gate's benchmark uses (options.seed,
/// trial 0) and compares its output with the task's reference on the same
/// inputs; when they agree, times it with options.timingRounds rounds of
/// options.repetitionsPerRound repetitions, one warm-up each and the L2
/// flushed before every repetition. An Error when the task has no [vendor],
/// the executor cannot make library calls (kind Unavailable: the emulator, no
/// cuBLAS), or the reference fails; a library result outside the tolerance is
/// a report with passed = false and no timing.
Result<VendorReport> vendorBaseline(const tasks::TaskSpec &task, exec::Executor &executor,
                                    const CheckOptions &options, size_t shapeIndex);

nlohmann::json toJson(const VendorReport &report);

} // namespace ptxforge::verify
