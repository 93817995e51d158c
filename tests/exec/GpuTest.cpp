// GPU tests (label gpu): a vector add compiled at test time from inline PTX
// (toolchain::compilePtx, in-process nvJitLink), run and timed in-process and
// through the isolated worker; then planted faults, each with the verdict it
// must get, all in one process that must survive them. Lines starting with
// "[ exec-gpu ]" are the record kept in docs/results/exec-gpu-tests.md.
#include "exec/GpuExecutor.h"
#include "exec/IsolatedExecutor.h"
#include "toolchain/Compiler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

using namespace ptxforge;
using namespace ptxforge::exec;

namespace {

// One module, several entries: the good kernel and the planted faults.
constexpr const char *kModulePtx = R"(
.version 8.0
.target sm_80
.address_size 64

// c[i] = a[i] + b[i] for i < n
.visible .entry vec_add(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 pn)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<10>;
  .reg .f32 %f<4>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pc];
  ld.param.u32 %r1, [pn];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd4, %rd1;
  cvta.to.global.u64 %rd5, %rd2;
  cvta.to.global.u64 %rd6, %rd3;
  mul.wide.u32 %rd7, %r5, 4;
  add.s64 %rd8, %rd4, %rd7;
  ld.global.f32 %f1, [%rd8];
  add.s64 %rd8, %rd5, %rd7;
  ld.global.f32 %f2, [%rd8];
  add.f32 %f3, %f1, %f2;
  add.s64 %rd9, %rd6, %rd7;
  st.global.f32 [%rd9], %f3;
DONE:
  ret;
}

// Stores to an address nothing maps: CUDA_ERROR_ILLEGAL_ADDRESS.
.visible .entry bad_store(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  mov.u64 %rd1, 0xdead00000000;
  mov.u32 %r1, 42;
  st.global.u32 [%rd1], %r1;
  ret;
}

// Executes trap.
.visible .entry do_trap(.param .u64 p)
{
  trap;
  ret;
}

// Never ends: only the watchdog stops it.
.visible .entry spin(.param .u64 p)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, 0;
LOOP:
  add.u32 %r1, %r1, 1;
  st.volatile.u32 [%rd1], %r1;
  bra LOOP;
}
)";

constexpr uint32_t kCount = (1u << 20) + 3; // not a multiple of the block size

Result<std::vector<uint8_t>> compileModule(const std::string &arch) {
  toolchain::CompileOptions options;
  options.arch = arch;
  Result<toolchain::CompileResult> compiled = toolchain::compilePtx(kModulePtx, options);
  if (!compiled)
    return compiled.error();
  if (!compiled->ok)
    return makeError(ErrorKind::Compile, "the test PTX did not compile:\n" + compiled->errorLog);
  return compiled->cubin;
}

void record(const std::string &what) { std::printf("[ exec-gpu ] %s\n", what.c_str()); }

std::string verdictOf(const Error &error) {
  return std::string(execErrorKindName(execErrorKindOf(error))) + " / " +
         (error.cause.empty() ? "-" : error.cause);
}

/// Inputs, output and module on one executor; set up again after a crash.
struct VectorAddSession {
  Executor &executor;
  std::vector<uint8_t> cubin;
  std::vector<float> a, b;
  DeviceBuffer bufferA, bufferB, bufferC;
  ModuleHandle module;
  KernelHandle vecAdd, badStore, doTrap, spin;

  VectorAddSession(Executor &executor, std::vector<uint8_t> cubin) : executor(executor), cubin(std::move(cubin)) {
    a.resize(kCount);
    b.resize(kCount);
    for (uint32_t index = 0; index < kCount; ++index) {
      a[index] = 0.5f * static_cast<float>(index % 1000);
      b[index] = 1.0f + static_cast<float>(index % 7);
    }
  }

  /// Allocates, uploads and loads everything (again).
  void setUp() {
    for (DeviceBuffer *buffer : {&bufferA, &bufferB, &bufferC}) {
      Result<DeviceBuffer> allocated = executor.allocateBuffer(kCount * sizeof(float));
      ASSERT_TRUE(allocated) << allocated.error().message;
      *buffer = std::move(*allocated);
    }
    ASSERT_TRUE(executor.upload(bufferA.handle(), a));
    ASSERT_TRUE(executor.upload(bufferB.handle(), b));
    Result<ModuleHandle> loaded = executor.loadModule(cubin, ModuleFormat::Cubin);
    ASSERT_TRUE(loaded) << loaded.error().message;
    module = *loaded;
    auto kernel = [&](const char *name, KernelHandle &out) {
      Result<KernelInfo> info = executor.getKernel(module, name);
      ASSERT_TRUE(info) << info.error().message;
      out = info->handle;
    };
    kernel("vec_add", vecAdd);
    kernel("bad_store", badStore);
    kernel("do_trap", doTrap);
    kernel("spin", spin);
  }

  LaunchConfig vecAddConfig() const {
    LaunchConfig config;
    config.block = {256, 1, 1};
    config.grid = {(kCount + 255) / 256, 1, 1};
    return config;
  }
  PackedArgs vecAddArgs() const {
    return KernelArgs().buffer(bufferA.handle()).buffer(bufferB.handle()).buffer(bufferC.handle()).scalar(kCount).pack();
  }

  /// Poisons c, runs vec_add, checks every element.
  void launchAndCheck(const LaunchConfig &config) {
    ASSERT_TRUE(executor.memset(bufferC.handle(), 0, 0xff, kCount * sizeof(float))); // NaN
    Result<void> launched = executor.launch(vecAdd, config, vecAddArgs());
    ASSERT_TRUE(launched) << launched.error().message;
    Result<std::vector<float>> c = executor.download<float>(bufferC.handle(), kCount);
    ASSERT_TRUE(c) << c.error().message;
    size_t mismatches = 0;
    for (uint32_t index = 0; index < kCount; ++index)
      if (!((*c)[index] == a[index] + b[index]))
        ++mismatches;
    EXPECT_EQ(mismatches, 0u);
  }
  void launchAndCheck() { launchAndCheck(vecAddConfig()); }
};

void recordProperties(const DeviceProperties &properties) {
  char line[512];
  std::snprintf(line, sizeof line,
                "device: %s, %s, %.1f GiB, %d SMs, SM clock %d MHz, memory %d MHz x %d bit (%.0f GB/s peak), "
                "L2 %d MiB, smem opt-in %d KiB, driver %d, backend %s",
                properties.name.c_str(), properties.arch().c_str(), properties.totalMemoryBytes / double(1ull << 30),
                properties.multiprocessorCount, properties.clockRateKHz / 1000, properties.memoryClockRateKHz / 1000,
                properties.memoryBusWidthBits, properties.peakMemoryBandwidthGBs(), properties.l2CacheBytes >> 20,
                properties.maxSharedBytesPerBlockOptin >> 10, properties.driverVersion, properties.backend.c_str());
  record(line);
}

void timeVectorAdd(VectorAddSession &session, const char *label) {
  TimingOptions timing;
  timing.warmupLaunches = 3;
  timing.repetitions = 20;
  timing.flushL2 = true;
  Result<std::vector<float>> times = session.executor.timeLaunch(session.vecAdd, session.vecAddConfig(),
                                                                 session.vecAddArgs(), timing);
  ASSERT_TRUE(times) << times.error().message;
  ASSERT_EQ(times->size(), 20u);
  for (float milliseconds : *times)
    EXPECT_GT(milliseconds, 0.0f);
  std::vector<float> sorted = *times;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  const double bytes = 3.0 * kCount * sizeof(float);
  char line[256];
  std::snprintf(line, sizeof line, "%s: vec_add n=%u median %.4f ms (min %.4f, max %.4f) over 20 reps, L2 flushed, %.0f GB/s",
                label, kCount, median, sorted.front(), sorted.back(), bytes / (median * 1e-3) / 1e9);
  record(line);
}

} // namespace

TEST(GpuInProcess, VectorAddRunsAndTimes) {
  Result<std::unique_ptr<Executor>> executor = createGpuExecutor();
  if (!executor)
    GTEST_SKIP() << executor.error().message;
  recordProperties((*executor)->properties());
  Result<std::vector<uint8_t>> cubin = compileModule((*executor)->properties().arch());
  ASSERT_TRUE(cubin) << cubin.error().message;
  VectorAddSession session(**executor, *cubin);
  ASSERT_NO_FATAL_FAILURE(session.setUp());
  ASSERT_NO_FATAL_FAILURE(session.launchAndCheck());
  timeVectorAdd(session, "in-process");
  ASSERT_TRUE((*executor)->flushL2());
  // More than 48 KiB of dynamic shared memory needs the opt-in; the executor does it.
  LaunchConfig bigShared = session.vecAddConfig();
  bigShared.dynamicSharedBytes = 100 * 1024;
  ASSERT_NO_FATAL_FAILURE(session.launchAndCheck(bigShared));
}

TEST(GpuIsolated, VectorAddRunsAndTimesThroughTheWorker) {
  IsolatedOptions options;
  options.workerPath = PTXFORGE_EXEC_TEST_WORKER;
  Result<std::unique_ptr<IsolatedExecutor>> executor = IsolatedExecutor::create(options);
  if (!executor)
    GTEST_SKIP() << executor.error().message;
  recordProperties((*executor)->properties());
  Result<std::vector<uint8_t>> cubin = compileModule((*executor)->properties().arch());
  ASSERT_TRUE(cubin) << cubin.error().message;
  VectorAddSession session(**executor, *cubin);
  ASSERT_NO_FATAL_FAILURE(session.setUp());
  ASSERT_NO_FATAL_FAILURE(session.launchAndCheck());
  timeVectorAdd(session, "isolated");
  EXPECT_EQ((*executor)->workerRestarts(), 0u);
}

TEST(GpuIsolated, PlantedFaultsGetTheirVerdictsAndTheToolSurvives) {
  IsolatedOptions options;
  options.workerPath = PTXFORGE_EXEC_TEST_WORKER;
  Result<std::unique_ptr<IsolatedExecutor>> created = IsolatedExecutor::create(options);
  if (!created)
    GTEST_SKIP() << created.error().message;
  IsolatedExecutor &executor = **created;
  Result<std::vector<uint8_t>> cubin = compileModule(executor.properties().arch());
  ASSERT_TRUE(cubin) << cubin.error().message;
  VectorAddSession session(executor, *cubin);
  ASSERT_NO_FATAL_FAILURE(session.setUp());
  ASSERT_NO_FATAL_FAILURE(session.launchAndCheck());

  const PackedArgs oneBuffer = KernelArgs().buffer(session.bufferC.handle()).pack();
  LaunchConfig single;
  single.grid = {1, 1, 1};
  single.block = {32, 1, 1};

  // 1. Illegal address: sticky, the worker's context dies -> crashed.
  {
    const BufferHandle before = session.bufferA.handle();
    Result<void> launched = executor.launch(session.badStore, single, oneBuffer);
    ASSERT_FALSE(launched);
    record("illegal address write -> " + verdictOf(launched.error()) + " :: " + launched.error().message);
    EXPECT_EQ(execErrorKindOf(launched.error()), ExecErrorKind::Crashed);
    EXPECT_EQ(launched.error().cause, "CUDA_ERROR_ILLEGAL_ADDRESS");
    // The dead context's buffers are reported stale, not silently reused.
    Result<std::vector<float>> stale = executor.download<float>(before, 4);
    ASSERT_FALSE(stale);
    EXPECT_EQ(execErrorKindOf(stale.error()), ExecErrorKind::InvalidArgument);
    EXPECT_NE(stale.error().message.find("stale buffer handle"), std::string::npos) << stale.error().message;
    record("buffer used after the crash -> " + verdictOf(stale.error()) + " :: " + stale.error().message);
    ASSERT_NO_FATAL_FAILURE(session.setUp());
    ASSERT_NO_FATAL_FAILURE(session.launchAndCheck());
    EXPECT_EQ(executor.workerRestarts(), 1u);
  }

  // 2. trap -> crashed; the driver's name for it is recorded.
  {
    Result<void> launched = executor.launch(session.doTrap, single, KernelArgs().buffer(session.bufferC.handle()).pack());
    ASSERT_FALSE(launched);
    record("trap -> " + verdictOf(launched.error()) + " :: " + launched.error().message);
    EXPECT_EQ(execErrorKindOf(launched.error()), ExecErrorKind::Crashed);
    const std::string name = launched.error().cause;
    EXPECT_TRUE(name == "CUDA_ERROR_LAUNCH_FAILED" || name == "CUDA_ERROR_ILLEGAL_INSTRUCTION" ||
                name == "CUDA_ERROR_ASSERT")
        << name;
    ASSERT_NO_FATAL_FAILURE(session.setUp());
    ASSERT_NO_FATAL_FAILURE(session.launchAndCheck());
    EXPECT_EQ(executor.workerRestarts(), 2u);
  }

  // 3. Infinite loop -> timeout via the watchdog, worker restarted.
  {
    LaunchConfig spinConfig = single;
    spinConfig.timeoutMs = 2000;
    const auto start = std::chrono::steady_clock::now();
    Result<void> launched = executor.launch(session.spin, spinConfig, KernelArgs().buffer(session.bufferC.handle()).pack());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_FALSE(launched);
    char took[64];
    std::snprintf(took, sizeof took, " (returned after %.2f s)", seconds);
    record("infinite loop -> " + verdictOf(launched.error()) + " :: " + launched.error().message + took);
    EXPECT_EQ(execErrorKindOf(launched.error()), ExecErrorKind::Timeout);
    EXPECT_LT(seconds, 30.0);
    ASSERT_NO_FATAL_FAILURE(session.setUp());
    ASSERT_NO_FATAL_FAILURE(session.launchAndCheck());
    EXPECT_EQ(executor.workerRestarts(), 3u);
  }

  // 4. Too many threads per block -> launch-error; the worker and its buffers survive.
  {
    LaunchConfig tooWide = session.vecAddConfig();
    tooWide.block = {2048, 1, 1};
    Result<void> launched = executor.launch(session.vecAdd, tooWide, session.vecAddArgs());
    ASSERT_FALSE(launched);
    record("block of 2048 threads -> " + verdictOf(launched.error()) + " :: " + launched.error().message);
    const ExecErrorKind kind = execErrorKindOf(launched.error());
    EXPECT_TRUE(kind == ExecErrorKind::LaunchError || kind == ExecErrorKind::OutOfResources) << launched.error().message;
    ASSERT_NO_FATAL_FAILURE(session.launchAndCheck()); // same handles: nothing was lost
    EXPECT_EQ(executor.workerRestarts(), 3u);
  }

  // 5. Too much dynamic shared memory -> launch-error; nothing lost.
  {
    LaunchConfig tooMuchShared = session.vecAddConfig();
    tooMuchShared.dynamicSharedBytes = 1024 * 1024;
    Result<void> launched = executor.launch(session.vecAdd, tooMuchShared, session.vecAddArgs());
    ASSERT_FALSE(launched);
    record("1 MiB dynamic shared memory -> " + verdictOf(launched.error()) + " :: " + launched.error().message);
    const ExecErrorKind kind = execErrorKindOf(launched.error());
    EXPECT_TRUE(kind == ExecErrorKind::LaunchError || kind == ExecErrorKind::OutOfResources) << launched.error().message;
    ASSERT_NO_FATAL_FAILURE(session.launchAndCheck());
    EXPECT_EQ(executor.workerRestarts(), 3u);
  }

  // 6. A kernel name the module lacks -> module-load; nothing lost.
  {
    Result<KernelInfo> missing = executor.getKernel(session.module, "no_such_kernel");
    ASSERT_FALSE(missing);
    record("unknown kernel name -> " + verdictOf(missing.error()) + " :: " + missing.error().message);
    EXPECT_EQ(execErrorKindOf(missing.error()), ExecErrorKind::ModuleLoad);
    ASSERT_NO_FATAL_FAILURE(session.launchAndCheck());
  }
  record("planted faults: the test process survived all of them; worker restarts = " +
         std::to_string(executor.workerRestarts()));
}
