// The verification gate: lint → compile → execute and compare → benchmark, in
// that order, stopping at the first stage that fails and saying why. This is
// what `ptxforge check` runs and what the solve loop will call per candidate.
#pragma once

#include "exec/Executor.h"
#include "ptx/Diagnostic.h"
#include "ptx/Parser.h"
#include "support/Result.h"
#include "support/Stats.h"
#include "tasks/Compare.h"
#include "tasks/LaunchDirective.h"
#include "tasks/TaskSpec.h"
#include "toolchain/Compiler.h"
#include "toolchain/Occupancy.h"
#include "verify/NcuProfile.h"
#include "verify/ProfileReport.h"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::verify {

/// The Result contract's verdicts (DESIGN.md), plus `launch-error` for a
/// launch the driver refused (bad geometry, too many resources), `no-ptx` for
/// a model answer with no PTX in it and `not-verified` for a candidate the gate
/// could not run (no executor, an instruction the emulator lacks): neither of
/// the last two says anything about the kernel.
enum class Verdict { Correct, Wrong, CompileError, LintError, Crashed, Timeout, LaunchError, Rejected, NoPtx, NotVerified };

/// The stable kebab-case name ("compile-error"); the one name table.
const char *verdictName(Verdict verdict);
/// The inverse of verdictName; nullopt for any other text.
std::optional<Verdict> parseVerdict(std::string_view name);

/// How far the gate got, in order: a later stage means more was proven.
enum class Stage { Extract, Lint, Compile, Execute, Benchmark, Done };

const char *stageName(Stage stage);
std::optional<Stage> parseStage(std::string_view name);

struct CheckOptions {
  std::string arch;                  ///< empty: the executor's device architecture
  std::vector<size_t> shapeIndices;  ///< empty: every shape of the task
  /// Inputs, poison patterns, guard bytes, drawn shapes and the timing
  /// schedule all derive from the seed. Unset: a fresh random seed per check
  /// (recorded in the result); set it to reproduce a check.
  std::optional<uint64_t> seed;
  int trials = 3;                    ///< fresh random inputs per trial
  /// Extra shapes per check drawn at random from the ranges the checked
  /// shapes span, on top of shapeIndices; every other one (the first
  /// included) log-uniform with every free symbol odd.
  int drawnShapes = 3;
  /// Extra shapes given explicitly (`check --shape M=256,N=256,K=64`).
  std::vector<tasks::Shape> extraShapes;
  bool benchmark = true;
  int timingRounds = 10;             ///< candidate and baseline alternate per round
  int repetitionsPerRound = 5;       ///< the mean; each round draws its own count around it
  /// Time each side on two sets of buffers, half of every round on each, so
  /// that where the buffers lie in memory does not favour either side
  /// (docs/verification.md). $PTXFORGE_GATE_SWAP=0 turns it off, for
  /// measuring what it does.
  bool swapBuffers = true;
  uint32_t launchTimeoutMs = 10'000; ///< watchdog deadline of one launch
  bool lint = true;                  ///< false: lint errors do not stop the gate (find false positives)
  /// A second executor that checks correctness with sanitizers (the CPU
  /// emulator) on the task's small shapes after the primary executor (the
  /// GPU) passed; `correct` then needs both. Null: the primary alone.
  exec::Executor *sanitizer = nullptr;
  /// Why there is no `sanitizer` where one was meant to be (the emulator
  /// could not start): a check on a GPU then says so in a `sanitizer-skipped`
  /// warning. Empty: none was asked for.
  std::string sanitizerUnavailable;
  std::vector<size_t> sanitizerShapeIndices; ///< empty: the task's small shapes
  /// After a correct verdict, profile the candidate and the reference in the
  /// emulator (the primary executor, or `sanitizer` on a GPU machine) on the
  /// largest small shape: CheckResult::profile (verify/Profile.h). On a GPU,
  /// also Nsight Compute on one launch of each, after the benchmark:
  /// CheckResult::ncuProfile (verify/NcuProfile.h).
  bool profile = false;
};

/// One output buffer of one checked launch.
struct OutputReport {
  std::string param;
  bool isInput = false; ///< an input buffer: checked for being left unchanged, not compared
  size_t inputBytesChanged = 0;
  std::optional<size_t> firstChangedElement;
  tasks::CompareResult compare;
  /// Bytes changed in the guard zones before / after the buffer (out-of-bounds writes).
  size_t guardBytesBefore = 0;
  size_t guardBytesAfter = 0;
  std::string guardDetail; ///< e.g. "byte 3 after the end changed from 0xcd to 0x00"
};

/// One (shape, trial) correctness run.
struct TrialReport {
  /// Into the task's shapes; a drawn shape has an index past them.
  size_t shapeIndex = 0;
  tasks::Shape shape;
  bool drawn = false;       ///< drawn at random for this check, not one of the task's shapes
  int trial = 0;
  bool afterTiming = false; ///< the re-check after the benchmark
  bool timed = false;       ///< the output of a timed launch, verified
  std::string executor;     ///< the backend that ran it ("gpu", "emu", ...); empty: the primary
  std::string probe;        ///< non-empty: a launch with module state not restored (what was left in it)
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
  /// The schedule drawn for this check: warm-ups and launches per round.
  int warmups = 0;
  std::vector<int> launchesPerRound;
  int verifiedTimedLaunches = 0; ///< timed launches whose outputs were checked
  /// Each side timed half of every round on each of two buffer sets
  /// (CheckOptions::swapBuffers).
  bool buffersSwapped = false;
};

/// Occupancy of the largest launch the check ran (the most blocks): how many
/// blocks fit per SM and what limits them, for the registers of the cubin
/// that ran (the driver's count on a GPU, the compiler's otherwise).
struct OccupancyReport {
  tasks::Shape shape;
  tasks::ResolvedLaunch launch;
  int registers = 0;
  std::string registersFrom; ///< "driver" (the loaded cubin) or "compiler" (nvJitLink's log)
  int staticSharedBytes = 0;
  toolchain::Occupancy occupancy;
};

/// Wall time of each stage of one check, in milliseconds.
struct StageTimes {
  double lint = 0, compile = 0, inputs = 0, reference = 0, candidate = 0, compare = 0, bench = 0, sanitizer = 0,
         total = 0;
};

/// Everything one check found: the Result contract of DESIGN.md.
struct CheckResult {
  Verdict verdict = Verdict::NotVerified;
  Stage stage = Stage::Lint; ///< the last stage reached
  std::string summary; ///< one line a person or a model reads first
  std::vector<ptx::Diagnostic> diagnostics;
  std::optional<toolchain::CompileResult> compile;
  std::optional<exec::KernelInfo> kernel; ///< what the driver says of the loaded kernel
  std::vector<TrialReport> trials;
  std::vector<BenchmarkReport> benchmarks;
  std::string executorError; ///< the driver's words for crashed / timeout / launch-error
  /// The driver's name for that failure ("CUDA_ERROR_ILLEGAL_ADDRESS"), where
  /// the executor gave one (exec errors' `cause`); empty otherwise.
  std::string driverError;
  /// Module-scope `.global` variables of the candidate: restored to their
  /// initial contents before every launch; `stateLeft` names those a launch
  /// left changed (the gate then probes launches that start from that state).
  std::vector<std::string> moduleVariables;
  std::vector<std::string> stateLeft;
  std::string sanitizer; ///< the second executor's device ("" when none ran)
  std::optional<OccupancyReport> occupancy; ///< when it compiled and a launch was resolved
  std::optional<ProfileReport> profile;     ///< CheckOptions::profile, when the candidate was correct
  /// CheckOptions::profile on a GPU, when the candidate was correct: Nsight
  /// Compute's figures of one launch of the candidate and of the reference
  /// (verify/NcuProfile.h), or why there are none (its `error`).
  std::optional<NcuProfileReport> ncuProfile;
  StageTimes times;
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

/// A candidate as the gate sees it, built once from its text: the parsed
/// module, the launch directives, the entries, and (when the caller already
/// compiled it, as the solve loop does for its SASS dedupe) the compile.
struct Candidate {
  std::string text;
  ptx::ParseResult parsed;
  tasks::LaunchDirectiveScan directives;
  std::vector<std::string> entries;
  /// Module-scope `.global` variables that a kernel could keep state in.
  std::vector<std::string> moduleVariables;
  /// Reuse this compile instead of compiling again (must be for the check's arch).
  std::optional<toolchain::CompileResult> compiled;

  static Candidate fromText(std::string text, const tasks::TaskSpec &task);
};

/// Static checks that belong to the gate rather than to PTX itself: the task's
/// kernel exists with a compatible signature, no timer is read (codes
/// `missing-kernel`, `signature-mismatch`, `timer-read`).
std::vector<ptx::Diagnostic> gateChecks(const tasks::TaskSpec &task, const ptx::Module &module);
std::vector<ptx::Diagnostic> gateChecks(const tasks::TaskSpec &task, std::string_view candidatePtx);

/// Runs the gate on `candidate` for `task`. `executor` may be null (no GPU):
/// then the verdict is `not-verified` after compile. Every failure of the
/// candidate, including one the gate cannot run, is a verdict in an ok
/// Result; an Error means the gate itself is broken (the reference does not
/// compile or fails, an executor failure unrelated to the candidate).
Result<CheckResult> check(const tasks::TaskSpec &task, const Candidate &candidate, exec::Executor *executor,
                          const CheckOptions &options);
Result<CheckResult> check(const tasks::TaskSpec &task, std::string_view candidatePtx, exec::Executor *executor,
                          const CheckOptions &options);

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
