// The gate's protocol, end to end on the CPU: a host-memory Executor runs the
// task's kernel as a C++ function, so guard zones, NaN pre-fill, trials,
// verdicts and the JSON result are checked in CI without a GPU.
#include "ptx/Lint.h"
#include "verify/Ceilings.h"
#include "verify/Check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <unistd.h>

using namespace ptxforge;

namespace {

/// What a fake kernel sees: one pointer or scalar per parameter.
struct FakeArgs {
  std::vector<uint8_t *> pointers; ///< nullptr for scalars
  std::vector<const uint8_t *> scalars;
  float f32(size_t i) const { float v; std::memcpy(&v, scalars[i], 4); return v; }
  int32_t i32(size_t i) const { int32_t v; std::memcpy(&v, scalars[i], 4); return v; }
  float *floats(size_t i) const { return reinterpret_cast<float *>(pointers[i]); }
};

using FakeKernel = std::function<Result<void>(const exec::LaunchConfig &, const FakeArgs &)>;

/// Buffers in host memory; the first loaded module runs `reference`, the
/// second `candidate` (check() loads them in that order).
class HostExecutor : public exec::Executor {
public:
  HostExecutor(FakeKernel reference, FakeKernel candidate, float candidateMs = 0.5f)
      : kernels_{std::move(reference), std::move(candidate)}, candidateMs_(candidateMs) {
    properties_.name = "host test executor";
    properties_.smMajor = 9;
    properties_.backend = "host";
  }
  const exec::DeviceProperties &properties() const override { return properties_; }
  Result<exec::BufferHandle> allocate(uint64_t bytes) override {
    buffers_[next_] = std::vector<uint8_t>(bytes, 0x00);
    return exec::BufferHandle{next_++};
  }
  Result<void> free(exec::BufferHandle buffer) override {
    buffers_.erase(buffer.value);
    return {};
  }
  Result<void> copyToDevice(exec::BufferHandle dst, uint64_t offset, const void *src, uint64_t bytes) override {
    std::memcpy(buffers_.at(dst.value).data() + offset, src, bytes);
    return {};
  }
  Result<void> copyToHost(void *dst, exec::BufferHandle src, uint64_t offset, uint64_t bytes) override {
    std::memcpy(dst, buffers_.at(src.value).data() + offset, bytes);
    return {};
  }
  Result<void> memset(exec::BufferHandle dst, uint64_t offset, uint8_t value, uint64_t bytes) override {
    std::memset(buffers_.at(dst.value).data() + offset, value, bytes);
    return {};
  }
  Result<exec::ModuleHandle> loadModule(const std::vector<uint8_t> &image, exec::ModuleFormat) override {
    EXPECT_FALSE(image.empty());
    return exec::ModuleHandle{modules_++};
  }
  Result<void> unloadModule(exec::ModuleHandle) override { return {}; }
  Result<exec::KernelInfo> getKernel(exec::ModuleHandle module, const std::string &) override {
    exec::KernelInfo info;
    info.handle = exec::KernelHandle{module.value};
    return info;
  }
  Result<void> launch(exec::KernelHandle kernel, const exec::LaunchConfig &config,
                      const exec::PackedArgs &args) override {
    FakeArgs fake;
    for (const exec::PackedArgs::Slot &slot : args.slots) {
      if (slot.isBuffer) {
        uint64_t id = 0;
        std::memcpy(&id, args.bytes.data() + slot.offset, 8);
        fake.pointers.push_back(buffers_.at(id).data() + slot.bufferOffset);
        fake.scalars.push_back(nullptr);
      } else {
        fake.pointers.push_back(nullptr);
        fake.scalars.push_back(args.bytes.data() + slot.offset);
      }
    }
    ++launches_[kernel.value];
    return kernels_.at(kernel.value)(config, fake);
  }
  Result<void> synchronize() override { return {}; }
  Result<std::vector<float>> timeLaunch(exec::KernelHandle kernel, const exec::LaunchConfig &config,
                                        const exec::PackedArgs &args, const exec::TimingOptions &options) override {
    std::vector<float> times;
    for (uint32_t i = 0; i < options.warmupLaunches + options.repetitions; ++i) {
      for (const exec::MemoryOp &op : options.beforeEachLaunch)
        if (Result<void> ok = apply(op); !ok) return ok.error();
      if (Result<void> ran = launch(kernel, config, args); !ran) return ran.error();
      if (i >= options.warmupLaunches) times.push_back(kernel.value == 0 ? 1.0f : candidateMs_);
    }
    return times;
  }
  Result<void> flushL2() override { return {}; }

  /// The bytes of a buffer from `offset` on (for host "library calls").
  uint8_t *data(exec::BufferHandle buffer, uint64_t offset) { return buffers_.at(buffer.value).data() + offset; }

  std::map<uint64_t, int> launches_;

private:
  exec::DeviceProperties properties_;
  std::map<uint64_t, std::vector<uint8_t>> buffers_;
  uint64_t next_ = 1;
  uint64_t modules_ = 0;
  std::vector<FakeKernel> kernels_;
  float candidateMs_;
};

/// Times both kernels alike, but 4% slower on any buffers other than the
/// first set it timed: a GPU on which where a buffer lies changes a kernel's
/// time (attention_fwd's reference on an H100, docs/verification.md).
class PlacementExecutor : public HostExecutor {
public:
  using HostExecutor::HostExecutor;
  Result<std::vector<float>> timeLaunch(exec::KernelHandle kernel, const exec::LaunchConfig &config,
                                        const exec::PackedArgs &args, const exec::TimingOptions &options) override {
    Result<std::vector<float>> times = HostExecutor::timeLaunch(kernel, config, args, options);
    if (!times) return times;
    uint64_t first = 0;
    for (const exec::PackedArgs::Slot &slot : args.slots)
      if (slot.isBuffer) {
        std::memcpy(&first, args.bytes.data() + slot.offset, 8);
        break;
      }
    if (!home_) home_ = first;
    for (float &ms : *times) ms = first == *home_ ? 1.0f : 1.04f;
    return times;
  }

private:
  std::optional<uint64_t> home_;
};

/// saxpy over all n elements (the geometry is the real kernel's business);
/// `edit` perturbs it after each element.
FakeKernel saxpy(std::function<void(int64_t i, int32_t n, float *y)> edit = nullptr) {
  return [edit](const exec::LaunchConfig &, const FakeArgs &args) -> Result<void> {
    const float *x = args.floats(0);
    float *y = args.floats(1);
    float a = args.f32(2);
    int32_t n = args.i32(3);
    for (int64_t i = 0; i < n; ++i) {
      y[i] = a * x[i] + y[i];
      if (edit) edit(i, n, y);
    }
    return {};
  };
}

std::string readFile(const std::string &path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class Gate : public ::testing::Test {
protected:
  void SetUp() override {
    Result<tasks::TaskSpec> loaded = tasks::loadTask(std::string(PTXFORGE_SOURCE_DIR) + "/tasks/L1/saxpy");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    task = *loaded;
    candidate = readFile(std::string(PTXFORGE_SOURCE_DIR) + "/examples/saxpy.ptx");
    options.shapeIndices = task.smallShapes; // n=65536 and the ragged n=33
    options.trials = 2;
    options.timingRounds = 3;
  }
  Result<verify::CheckResult> run(HostExecutor &executor) { return verify::check(task, candidate, &executor, options); }

  tasks::TaskSpec task;
  std::string candidate;
  verify::CheckOptions options;
};

} // namespace

TEST_F(Gate, CorrectCandidateIsTimedAgainstTheBaseline) {
  HostExecutor executor(saxpy(), saxpy(), 0.5f);
  Result<verify::CheckResult> result = run(executor);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->verdict, verify::Verdict::Correct) << result->summary;
  EXPECT_EQ(result->stage, verify::Stage::Done);
  // 2 shapes x 2 trials, one drawn shape, the verified timed launches, and
  // the re-check after timing.
  ASSERT_EQ(result->benchmarks.size(), 1u);
  const verify::BenchmarkReport &bench = result->benchmarks[0];
  size_t timed = static_cast<size_t>(std::count_if(result->trials.begin(), result->trials.end(),
                                                   [](const verify::TrialReport &t) { return t.timed; }));
  size_t drawn = static_cast<size_t>(std::count_if(result->trials.begin(), result->trials.end(),
                                                   [](const verify::TrialReport &t) { return t.drawn; }));
  EXPECT_GE(drawn, 1u);
  EXPECT_LE(drawn, static_cast<size_t>(options.drawnShapes));
  EXPECT_GE(timed, 1u);
  EXPECT_EQ(timed, static_cast<size_t>(bench.verifiedTimedLaunches));
  EXPECT_EQ(result->trials.size(), 4u + drawn + timed + 1u);
  EXPECT_TRUE(result->trials.back().afterTiming);
  EXPECT_DOUBLE_EQ(bench.speedup, 2.0);
  // The schedule is drawn per check: 3 rounds of 3..7 launches.
  ASSERT_EQ(bench.launchesPerRound.size(), 3u);
  EXPECT_EQ(bench.candidate.samples,
            static_cast<size_t>(std::accumulate(bench.launchesPerRound.begin(), bench.launchesPerRound.end(), 0)));
  // The candidate's directive (4 elements per thread) was honoured: n=65536 → 64 blocks.
  EXPECT_EQ(result->trials[0].launch.grid[0], 64u);
  nlohmann::json json = verify::toJson(*result);
  EXPECT_EQ(json["verdict"], "correct");
  EXPECT_EQ(json["provenance"]["task"], "saxpy");
  EXPECT_EQ(json["timing"][0]["speedup"], 2.0);
}

TEST_F(Gate, WhereTheBuffersLieFavoursNeitherSide) {
  // The same kernel on both sides is 1.00x, however much faster one buffer set runs.
  PlacementExecutor executor(saxpy(), saxpy());
  Result<verify::CheckResult> result = run(executor);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->verdict, verify::Verdict::Correct) << result->summary;
  ASSERT_EQ(result->benchmarks.size(), 1u);
  const verify::BenchmarkReport &bench = result->benchmarks[0];
  EXPECT_TRUE(bench.buffersSwapped);
  EXPECT_NEAR(bench.speedup, 1.0, 1e-9);
  EXPECT_LE(bench.speedupLow, 1.0 + 1e-9);
  EXPECT_GE(bench.speedupHigh, 1.0 - 1e-9);
  // Each side ran half of every round on each set.
  for (int launches : bench.launchesPerRound) EXPECT_EQ(launches % 2, 0);
  EXPECT_EQ(verify::toJson(*result)["timing"][0]["schedule"]["buffers_swapped"], true);

  // One set per side (the protocol before 2026-12-05): the candidate, timed
  // on the faster set, looks 4% faster than itself.
  options.swapBuffers = false;
  PlacementExecutor unswapped(saxpy(), saxpy());
  result = run(unswapped);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->benchmarks.size(), 1u);
  EXPECT_FALSE(result->benchmarks[0].buffersSwapped);
  EXPECT_NEAR(result->benchmarks[0].speedup, 1.04, 1e-3);
}

TEST_F(Gate, AMissingSecondOpinionIsSaid) {
  // On a GPU (a cubin executor) whose emulator could not start, the result
  // says what was not checked instead of passing in silence.
  HostExecutor executor(saxpy(), saxpy());
  options.sanitizerUnavailable = "out of memory";
  Result<verify::CheckResult> result = run(executor);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->verdict, verify::Verdict::Correct) << result->summary;
  auto skipped = std::find_if(result->diagnostics.begin(), result->diagnostics.end(),
                              [](const ptx::Diagnostic &d) { return d.code == "sanitizer-skipped"; });
  ASSERT_NE(skipped, result->diagnostics.end());
  EXPECT_EQ(skipped->message, "the emulator's sanitizers could not start: out of memory");
}

TEST_F(Gate, UnwrittenOutputsFailBecauseTheyStartAsNaN) {
  // The candidate skips every element past n/2: its outputs keep the NaN fill.
  auto partial = [](const exec::LaunchConfig &, const FakeArgs &args) -> Result<void> {
    float *y = args.floats(1);
    const float *x = args.floats(0);
    int32_t n = args.i32(3);
    for (int32_t i = 0; i < n / 2; ++i) y[i] = args.f32(2) * x[i] + y[i];
    return {};
  };
  HostExecutor executor(saxpy(), partial);
  Result<verify::CheckResult> result = run(executor);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->verdict, verify::Verdict::Wrong);
  EXPECT_NE(result->summary.find("'y' differs"), std::string::npos) << result->summary;
  EXPECT_NE(result->summary.find("first at index 32768"), std::string::npos) << result->summary;
}

TEST_F(Gate, WritesPastTheEndHitTheGuardZone) {
  // An off-by-one bounds check writes y[n] on every shape: zero bytes, which
  // the guard byte (drawn per check, never 0x00) cannot be, so all 4 count.
  auto offByOne = saxpy([](int64_t i, int32_t n, float *y) {
    if (i == n - 1) y[n] = 0.0f;
  });
  HostExecutor executor(saxpy(), offByOne);
  Result<verify::CheckResult> result = run(executor);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->verdict, verify::Verdict::Wrong);
  EXPECT_NE(result->summary.find("out-of-bounds write"), std::string::npos) << result->summary;
  EXPECT_EQ(result->trials.back().outputs.back().guardBytesAfter, 4u);
}

TEST_F(Gate, CopyingPastTheEndIntoTheGuardZoneIsSeen) {
  // A kernel without its bounds check that copies what lies past the input's
  // end into what lies past the output's end: 16 floats of x's guard zone into
  // y's. Every buffer's guard byte differs, so the copied bytes are not the
  // ones y's guard zone holds (with one guard byte for all, they were, and
  // this passed).
  FakeKernel overrun = [](const exec::LaunchConfig &, const FakeArgs &args) -> Result<void> {
    const float *x = args.floats(0);
    float *y = args.floats(1);
    const float a = args.f32(2);
    const int32_t n = args.i32(3);
    for (int64_t i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
    std::memcpy(y + n, x + n, 16 * sizeof(float));
    return {};
  };
  HostExecutor executor(saxpy(), overrun);
  Result<verify::CheckResult> result = run(executor);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->verdict, verify::Verdict::Wrong) << result->summary;
  EXPECT_NE(result->summary.find("after the end of 'y'"), std::string::npos) << result->summary;
  EXPECT_EQ(result->trials.back().outputs.back().guardBytesAfter, 64u);
}

TEST_F(Gate, WritesBeforeTheStartHitTheGuardZone) {
  auto underflow = saxpy([](int64_t i, int32_t, float *y) {
    if (i == 0) y[-1] = 2.0f;
  });
  HostExecutor executor(saxpy(), underflow);
  Result<verify::CheckResult> result = run(executor);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->verdict, verify::Verdict::Wrong);
  EXPECT_NE(result->summary.find("before the start of 'y'"), std::string::npos) << result->summary;
}

TEST_F(Gate, ExecutorFailuresBecomeVerdicts) {
  struct Case {
    exec::ExecErrorKind kind;
    verify::Verdict verdict;
  } cases[] = {{exec::ExecErrorKind::Crashed, verify::Verdict::Crashed},
               {exec::ExecErrorKind::Timeout, verify::Verdict::Timeout},
               {exec::ExecErrorKind::LaunchError, verify::Verdict::LaunchError},
               {exec::ExecErrorKind::OutOfResources, verify::Verdict::LaunchError}};
  for (const Case &c : cases) {
    auto failing = [&c](const exec::LaunchConfig &, const FakeArgs &) -> Result<void> {
      return exec::makeExecError(c.kind, "CUDA_ERROR_SOMETHING in a test");
    };
    HostExecutor executor(saxpy(), failing);
    Result<verify::CheckResult> result = run(executor);
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result->verdict, c.verdict) << result->summary;
    EXPECT_NE(result->executorError.find("CUDA_ERROR_SOMETHING"), std::string::npos);
  }
}

TEST_F(Gate, AKernelThatChangesAfterTimingFailsTheRecheck) {
  // Correct at first, wrong once it has been launched many times (state kept
  // across launches, as a cheat that caches results would).
  auto counter = std::make_shared<int>(0);
  auto drifting = [counter](const exec::LaunchConfig &config, const FakeArgs &args) -> Result<void> {
    Result<void> ran = saxpy()(config, args);
    // Past every checked launch (shapes x trials, repeats, drawn shapes).
    if (++*counter > 20) args.floats(1)[0] += 1.0f;
    return ran;
  };
  HostExecutor executor(saxpy(), drifting);
  Result<verify::CheckResult> result = run(executor);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->verdict, verify::Verdict::Wrong);
  EXPECT_EQ(result->stage, verify::Stage::Benchmark);
  // The outputs of timed launches are verified: the drift shows there.
  EXPECT_NE(result->summary.find("wrong in a timed launch"), std::string::npos) << result->summary;
}

TEST_F(Gate, StaticGateChecks) {
  EXPECT_TRUE(verify::gateChecks(task, candidate).empty());
  std::string renamed = candidate;
  renamed.replace(renamed.find(".entry saxpy("), 13, ".entry saxpy2(");
  std::vector<ptx::Diagnostic> missing = verify::gateChecks(task, renamed);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].code, "missing-kernel");
  EXPECT_NE(missing[0].message.find("`saxpy2`"), std::string::npos);

  std::string wrongType = candidate;
  wrongType.replace(wrongType.find(".param .f32 saxpy_param_a"), 25, ".param .f64 saxpy_param_a");
  std::vector<ptx::Diagnostic> mismatch = verify::gateChecks(task, wrongType);
  ASSERT_EQ(mismatch.size(), 1u);
  EXPECT_EQ(mismatch[0].code, "signature-mismatch");

  std::string timer = candidate;
  timer.replace(timer.find("\tmov.u32 \t%r4, %tid.x;"), 22, "\tmov.u32 \t%r4, %clock;");
  std::vector<ptx::Diagnostic> timed = verify::gateChecks(task, timer);
  ASSERT_EQ(timed.size(), 1u);
  EXPECT_EQ(timed[0].code, "timer-read");
}

TEST_F(Gate, StopsAtTheFirstFailingStage) {
  HostExecutor executor(saxpy(), saxpy());
  std::string broken = candidate;
  broken.replace(broken.find("fma.rn.f32 \t%f10"), 10, "fmaa.rn.f32");
  Result<verify::CheckResult> lintError = verify::check(task, broken, &executor, options);
  ASSERT_TRUE(lintError.ok());
  EXPECT_EQ(lintError->verdict, verify::Verdict::LintError);
  EXPECT_EQ(lintError->stage, verify::Stage::Lint);
  EXPECT_TRUE(executor.launches_.empty()); // nothing ran

  std::string timer = candidate;
  timer.replace(timer.find("\tmov.u32 \t%r4, %tid.x;"), 22, "\tmov.u32 \t%r4, %clock;");
  Result<verify::CheckResult> rejected = verify::check(task, timer, &executor, options);
  ASSERT_TRUE(rejected.ok());
  EXPECT_EQ(rejected->verdict, verify::Verdict::Rejected);

  // No executor: lint and compile still run; the verdict says it was not verified.
  Result<verify::CheckResult> noGpu = verify::check(task, candidate, nullptr, options);
  ASSERT_TRUE(noGpu.ok());
  EXPECT_EQ(noGpu->verdict, verify::Verdict::NotVerified);
  EXPECT_EQ(noGpu->stage, verify::Stage::Compile);
  ASSERT_TRUE(noGpu->compile.has_value());
  EXPECT_TRUE(noGpu->compile->ok);
}

TEST(Ceilings, MeasuringKernelsLintCleanAndCompile) {
  for (const auto &[name, ptx] : verify::ceilingKernels("sm_90")) {
    std::vector<ptx::Diagnostic> diagnostics = ptx::lintSource(ptx);
    EXPECT_FALSE(ptx::hasErrors(diagnostics)) << name << ": " << (diagnostics.empty() ? "" : diagnostics[0].message);
    toolchain::CompileOptions options;
    options.arch = "sm_90";
    Result<toolchain::CompileResult> compiled = toolchain::compilePtx(ptx, options);
    ASSERT_TRUE(compiled.ok()) << compiled.error().message;
    EXPECT_TRUE(compiled->ok) << name << ":\n" << compiled->errorLog;
    EXPECT_EQ(compiled->resources.spillStoreBytes, 0) << name;
  }
}

TEST(Ceilings, CacheRoundTripsAndIgnoresCorruptEntries) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ptxforge-ceilings-" + std::to_string(::getpid()));
  ::setenv("PTXFORGE_CACHE_DIR", dir.c_str(), 1);
  verify::DeviceCeilings stored{"Test GPU/1", "sm_90", 3898.5, 62000.0, 65000.0, "2026-11-29T00:00:00Z"};
  ASSERT_TRUE(verify::storeCeilings(stored).ok());
  std::optional<verify::DeviceCeilings> loaded = verify::loadCachedCeilings("Test GPU/1");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_DOUBLE_EQ(loaded->copyGBs, 3898.5);
  EXPECT_DOUBLE_EQ(loaded->fp32Gflops, 62000.0);
  EXPECT_EQ(loaded->measuredAt, stored.measuredAt);
  EXPECT_FALSE(verify::loadCachedCeilings("Other GPU").has_value());
  std::ofstream(verify::ceilingsCachePath("Test GPU/1")) << "{ not json";
  EXPECT_FALSE(verify::loadCachedCeilings("Test GPU/1").has_value());
  ::unsetenv("PTXFORGE_CACHE_DIR");
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------------------
// The vendor baseline: the library's output is checked against the reference
// before it is timed, on host "library calls" with planted layout mistakes.

namespace {

/// A HostExecutor whose vendor library computes the row-major products of
/// LibraryCall on the host, or plants a mistake.
class LibraryHostExecutor : public HostExecutor {
public:
  enum class Mistake { None, ColumnMajorA, WritesPastTheEnd };
  LibraryHostExecutor(FakeKernel reference, Mistake mistake = Mistake::None)
      : HostExecutor(std::move(reference), nullptr), mistake_(mistake) {}

  Result<void> runLibraryCall(const exec::LibraryCall &call) override {
    calls.push_back(call);
    auto *a = reinterpret_cast<const float *>(data(call.a.buffer, call.a.byteOffset));
    auto *b = reinterpret_cast<const float *>(data(call.b.buffer, call.b.byteOffset));
    auto *c = reinterpret_cast<float *>(data(call.c.buffer, call.c.byteOffset));
    if (call.op == exec::LibraryOp::Gemv) {
      for (int64_t i = 0; i < call.m; ++i) {
        float sum = 0;
        for (int64_t p = 0; p < call.k; ++p)
          sum += (mistake_ == Mistake::ColumnMajorA ? a[p * call.m + i] : a[i * call.k + p]) * b[p];
        c[i] = sum;
      }
      if (mistake_ == Mistake::WritesPastTheEnd) c[call.m] = 0.0f;
      return {};
    }
    const int64_t batch = call.op == exec::LibraryOp::GemmBatched ? call.batch : 1;
    for (int64_t e = 0; e < batch; ++e)
      for (int64_t i = 0; i < call.m; ++i)
        for (int64_t j = 0; j < call.n; ++j) {
          float sum = 0;
          for (int64_t p = 0; p < call.k; ++p)
            sum += a[(e * call.m + i) * call.k + p] * b[(e * call.k + p) * call.n + j];
          c[(e * call.m + i) * call.n + j] = sum;
        }
    return {};
  }
  Result<std::vector<float>> timeLibraryCall(const exec::LibraryCall &call,
                                             const exec::TimingOptions &options) override {
    std::vector<float> times;
    for (uint32_t i = 0; i < options.warmupLaunches + options.repetitions; ++i) {
      if (Result<void> ran = runLibraryCall(call); !ran) return ran.error();
      if (i >= options.warmupLaunches) times.push_back(0.25f);
    }
    timingCalls.push_back(options);
    return times;
  }

  std::vector<exec::LibraryCall> calls;
  std::vector<exec::TimingOptions> timingCalls;

private:
  Mistake mistake_;
};

/// The gemv reference: y = A x, A row-major M x K.
Result<void> hostGemv(const exec::LaunchConfig &, const FakeArgs &args) {
  const float *a = args.floats(0), *x = args.floats(1);
  float *y = args.floats(2);
  const int32_t m = args.i32(3), k = args.i32(4);
  for (int32_t i = 0; i < m; ++i) {
    float sum = 0;
    for (int32_t p = 0; p < k; ++p) sum += a[i * k + p] * x[p];
    y[i] = sum;
  }
  return {};
}

/// The batched_gemm reference: C[b] = A[b] B[b], all row-major.
Result<void> hostBatchedGemm(const exec::LaunchConfig &, const FakeArgs &args) {
  const float *a = args.floats(0), *b = args.floats(1);
  float *c = args.floats(2);
  const int32_t batch = args.i32(3), m = args.i32(4), n = args.i32(5), k = args.i32(6);
  for (int32_t e = 0; e < batch; ++e)
    for (int32_t i = 0; i < m; ++i)
      for (int32_t j = 0; j < n; ++j) {
        float sum = 0;
        for (int32_t p = 0; p < k; ++p) sum += a[(e * m + i) * k + p] * b[(e * k + p) * n + j];
        c[(e * m + i) * n + j] = sum;
      }
  return {};
}

tasks::TaskSpec builtinTask(const std::string &path) {
  Result<tasks::TaskSpec> loaded = tasks::loadTask(std::string(PTXFORGE_SOURCE_DIR) + "/tasks/" + path);
  EXPECT_TRUE(loaded.ok()) << loaded.error().message;
  return loaded.ok() ? *loaded : tasks::TaskSpec{};
}

verify::CheckOptions vendorOptions() {
  verify::CheckOptions options;
  options.timingRounds = 3;
  options.repetitionsPerRound = 4;
  return options;
}

} // namespace

TEST(VendorBaseline, AgreeingLibraryIsTimedWithTheGatesProtocol) {
  tasks::TaskSpec task = builtinTask("L3/gemv");
  ASSERT_TRUE(task.vendor.has_value());
  LibraryHostExecutor executor(hostGemv);
  Result<verify::VendorReport> report = verify::vendorBaseline(task, executor, vendorOptions(), 3); // M=64, K=100
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->passed) << report->summary;
  EXPECT_EQ(report->op, "gemv");
  EXPECT_EQ(report->sizes, (std::map<std::string, int64_t>{{"k", 100}, {"m", 64}}));
  EXPECT_EQ(report->output.param, "y");
  EXPECT_EQ(report->output.compare.count, 64u);
  // The operands are the data past each buffer's guard zone (512 to 2048
  // bytes, drawn per check; a multiple of 256 so the data stays aligned).
  ASSERT_FALSE(executor.calls.empty());
  const exec::LibraryCall &call = executor.calls.front();
  EXPECT_EQ(call.op, exec::LibraryOp::Gemv);
  EXPECT_EQ(call.m, 64);
  EXPECT_EQ(call.k, 100);
  EXPECT_EQ(call.a.byteOffset % 256, 0u);
  EXPECT_GE(call.a.byteOffset, 512u);
  EXPECT_LE(call.a.byteOffset, 2048u);
  EXPECT_EQ(call.c.byteOffset, call.a.byteOffset);
  // 3 rounds of 4 repetitions, one warm-up each, the L2 flushed.
  ASSERT_EQ(executor.timingCalls.size(), 3u);
  EXPECT_EQ(executor.timingCalls[0].warmupLaunches, 1u);
  EXPECT_EQ(executor.timingCalls[0].repetitions, 4u);
  EXPECT_TRUE(executor.timingCalls[0].flushL2);
  ASSERT_TRUE(report->timing.has_value());
  EXPECT_EQ(report->timing->samples, 12u);
  EXPECT_DOUBLE_EQ(report->timing->median, 0.25);
  ASSERT_TRUE(report->gflops.has_value());
  EXPECT_NEAR(*report->gflops, 2.0 * 64 * 100 / 0.25e6, 1e-9);
  nlohmann::json json = verify::toJson(*report);
  EXPECT_EQ(json["passed"], true);
  EXPECT_EQ(json["timing"]["samples"], 12);
  EXPECT_EQ(json["sizes"]["m"], 64);
}

TEST(VendorBaseline, ALayoutMistakeIsCaughtBeforeTiming) {
  tasks::TaskSpec task = builtinTask("L3/gemv");
  LibraryHostExecutor executor(hostGemv, LibraryHostExecutor::Mistake::ColumnMajorA);
  Result<verify::VendorReport> report = verify::vendorBaseline(task, executor, vendorOptions(), 3);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_FALSE(report->passed);
  EXPECT_FALSE(report->timing.has_value());
  EXPECT_TRUE(executor.timingCalls.empty());
  EXPECT_NE(report->summary.find("'y' differs from the reference"), std::string::npos) << report->summary;
  EXPECT_NE(report->summary.find("not timed"), std::string::npos) << report->summary;
  EXPECT_EQ(verify::toJson(*report)["timing"], nullptr);
}

TEST(VendorBaseline, AWritePastTheOutputIsCaught) {
  tasks::TaskSpec task = builtinTask("L3/gemv");
  LibraryHostExecutor executor(hostGemv, LibraryHostExecutor::Mistake::WritesPastTheEnd);
  Result<verify::VendorReport> report = verify::vendorBaseline(task, executor, vendorOptions(), 4); // M=7, K=33
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_FALSE(report->passed);
  EXPECT_TRUE(report->output.compare.passed); // the values are right; the guard zone is not
  EXPECT_EQ(report->output.guardBytesAfter, 4u);
  EXPECT_NE(report->summary.find("wrote outside its buffers"), std::string::npos) << report->summary;
}

TEST(VendorBaseline, BatchedGemmPassesItsSizesAndStrides) {
  tasks::TaskSpec task = builtinTask("L3/batched_gemm");
  LibraryHostExecutor executor(hostBatchedGemm);
  Result<verify::VendorReport> report = verify::vendorBaseline(task, executor, vendorOptions(), 4);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->passed) << report->summary;
  const exec::LibraryCall &call = executor.calls.front();
  EXPECT_EQ(call.op, exec::LibraryOp::GemmBatched);
  EXPECT_EQ(call.batch, 2);
  EXPECT_EQ(call.m, 33);
  EXPECT_EQ(call.n, 17);
  EXPECT_EQ(call.k, 9);
}

TEST(VendorBaseline, WithoutALibraryTheExecutorSaysSoBeforeTheReferenceRuns) {
  tasks::TaskSpec task = builtinTask("L3/gemv");
  HostExecutor executor(hostGemv, nullptr);
  Result<verify::VendorReport> report = verify::vendorBaseline(task, executor, vendorOptions(), 3);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(exec::execErrorKindOf(report.error()), exec::ExecErrorKind::Unavailable);
  EXPECT_NE(report.error().message.find("not available on this executor (host)"), std::string::npos)
      << report.error().message;
  EXPECT_TRUE(executor.launches_.empty()); // the reference never ran
}

TEST(VendorBaseline, ATaskWithoutVendorIsAnError) {
  tasks::TaskSpec task = builtinTask("L1/saxpy");
  LibraryHostExecutor executor(saxpy());
  Result<verify::VendorReport> report = verify::vendorBaseline(task, executor, vendorOptions(), 0);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().message.find("task 'saxpy' has no [vendor] operation"), std::string::npos);
}
