// jit tests: untrusted PTX compiled in ptxforge_compile_worker. Each known
// crasher, hang and memory blow-up of nvJitLink/ptxas ends as a rejected
// module with its own code while this test process lives on; a normal
// compile gives the same cubin as in-process.
#include "toolchain/CompileWorker.h"
#include "toolchain/Compiler.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

using namespace ptxforge;
using namespace ptxforge::toolchain;

namespace {

constexpr const char *kSaxpy = R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry saxpy(.param .f32 a, .param .u64 x, .param .u64 y, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<5>;
  .reg .b64 %rd<8>;
  ld.param.f32 %f1, [a];
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mul.wide.s32 %rd5, %r5, 4;
  add.s64 %rd6, %rd3, %rd5;
  add.s64 %rd7, %rd4, %rd5;
  ld.global.f32 %f2, [%rd6];
  ld.global.f32 %f3, [%rd7];
  fma.rn.f32 %f4, %f1, %f2, %f3;
  st.global.f32 [%rd7], %f4;
DONE:
  ret;
}
)";

// Line 9 segfaults nvJitLink 13.0 and ptxas 13.0 alike: a st.param through a
// register holding the address of the kernel's own parameter.
constexpr const char *kStoreThroughParamAddress = R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 p)
{
  .reg .b64 %rd<3>;
  mov.u64 %rd1, p;
  st.param.u64 [%rd1], %rd1;
  ret;
}
)";

// Line 5: 4e9 initialized words; unlimited, nvJitLink takes > 7 GB for it.
constexpr const char *kHugeInitializedGlobal = R"(.version 8.0
.target sm_90
.address_size 64

.visible .global .align 4 .u32 big[4000000000] = {1, 2, 3};

.visible .entry k(.param .u64 p)
{
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  st.global.u64 [%rd1], %rd1;
  ret;
}
)";

// Line 5: a 4 MB initialized table lands in the cubin whole.
constexpr const char *kFourMegabyteTable = R"(.version 8.0
.target sm_90
.address_size 64

.visible .global .align 4 .u32 table[1000000] = {1, 2, 3};

.visible .entry k(.param .u64 p)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  ld.global.u32 %r1, [table];
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

/// A kernel whose one name (line 5, column 17) has `length` characters.
std::string kernelNamed(size_t length) {
  const std::string name = "k" + std::string(length - 1, 'a');
  return ".version 8.0\n.target sm_90\n.address_size 64\n\n.visible .entry " + name +
         "(.param .u64 p)\n{\n  .reg .b64 %rd<2>;\n  ld.param.u64 %rd1, [p];\n  st.global.u64 [%rd1], %rd1;\n  ret;\n}\n";
}

/// 20,000 dependent FMAs: about 1.5 s of ptxas -O3, far beyond a 100 ms deadline.
std::string slowToCompile() {
  std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\n.visible .entry heavy(.param .u64 p)\n{\n"
                    "  .reg .f32 %f<64>;\n  .reg .b64 %rd<2>;\n  ld.param.u64 %rd1, [p];\n  ld.global.f32 %f0, [%rd1];\n";
  for (int i = 1; i < 64; ++i)
    ptx += "  add.f32 %f" + std::to_string(i) + ", %f" + std::to_string(i - 1) + ", 0f3F800000;\n";
  for (int i = 0; i < 20000; ++i)
    ptx += "  fma.rn.f32 %f" + std::to_string(i % 64) + ", %f" + std::to_string((i * 7 + 3) % 64) + ", %f" +
           std::to_string((i * 13 + 5) % 64) + ", %f" + std::to_string(i % 64) + ";\n";
  ptx += "  st.global.f32 [%rd1], %f5;\n  ret;\n}\n";
  return ptx;
}

/// The one diagnostic a limit or crash produces comes first.
std::string firstCode(const CompileResult &result) {
  return result.diagnostics.empty() ? "<none>" : result.diagnostics.front().code;
}

/// Sets an environment variable for one scope.
class ScopedEnvironment {
public:
  ScopedEnvironment(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name)) {
      hadValue_ = true;
      old_ = old;
    }
    ::setenv(name, value, 1);
  }
  ~ScopedEnvironment() {
    if (hadValue_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }

private:
  const char *name_;
  bool hadValue_ = false;
  std::string old_;
};

class CompilerIsolationBackends : public ::testing::TestWithParam<CompileOptions::Backend> {
protected:
  CompileOptions options() const {
    CompileOptions options;
    options.backend = GetParam();
    return options;
  }
  void SetUp() override {
    if (GetParam() == CompileOptions::Backend::Ptxas && !findPtxas())
      GTEST_SKIP() << "ptxas not found (set PTXFORGE_PTXAS); skipping the ptxas backend";
  }
};

} // namespace

TEST_P(CompilerIsolationBackends, StoreThroughParamAddressIsACompilerCrash) {
  Result<CompileResult> result = compilePtx(kStoreThroughParamAddress, options());
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_FALSE(result->ok);
  EXPECT_EQ(firstCode(*result), kCodeCompilerCrashed);
  EXPECT_NE(result->diagnostics.front().message.find("signal 11"), std::string::npos)
      << result->diagnostics.front().message;
  // The process survived, and the next module compiles.
  Result<CompileResult> next = compilePtx(kSaxpy, options());
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_TRUE(next->ok);
}

TEST_P(CompilerIsolationBackends, HugeInitializedGlobalHitsTheMemoryLimit) {
#if PTXFORGE_SANITIZED
  GTEST_SKIP() << "sanitizer build: the compile worker runs without RLIMIT_AS (ASan's shadow memory needs terabytes of "
                  "address space), so the memory limit cannot be tested here";
#endif
  CompileOptions limited = options();
  limited.memoryLimitMb = 2048;
  Result<CompileResult> result = compilePtx(kHugeInitializedGlobal, limited);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_FALSE(result->ok);
  ASSERT_EQ(firstCode(*result), kCodeCompileMemoryLimit) << result->errorLog;
  EXPECT_NE(result->diagnostics.front().message.find("2048 MiB"), std::string::npos);
  EXPECT_NE(result->diagnostics.front().hint.find("PTXFORGE_COMPILE_MEMORY_MB"), std::string::npos);
}

TEST_P(CompilerIsolationBackends, SlowCompileHitsTheDeadline) {
  CompileOptions hurried = options();
  hurried.timeoutMs = 100;
  const uint64_t timedOutBefore = compileWorkerCounters().timedOut;
  Result<CompileResult> result = compilePtx(slowToCompile(), hurried);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_FALSE(result->ok);
  ASSERT_EQ(firstCode(*result), kCodeCompileTimeout);
  EXPECT_NE(result->diagnostics.front().message.find("100 ms"), std::string::npos);
  EXPECT_NE(result->diagnostics.front().hint.find("PTXFORGE_COMPILE_TIMEOUT_MS"), std::string::npos);
  EXPECT_EQ(compileWorkerCounters().timedOut, timedOutBefore + 1);
  Result<CompileResult> next = compilePtx(kSaxpy, options());
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_TRUE(next->ok);
}

TEST_P(CompilerIsolationBackends, OversizedCubinHitsTheOutputLimit) {
  CompileOptions capped = options();
  capped.maxOutputMb = 1;
  Result<CompileResult> result = compilePtx(kFourMegabyteTable, capped);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_FALSE(result->ok);
  EXPECT_TRUE(result->cubin.empty());
  EXPECT_EQ(firstCode(*result), kCodeCompileOutputLimit) << result->errorLog;
  // Within the default limit the same module compiles.
  Result<CompileResult> roomy = compilePtx(kFourMegabyteTable, options());
  ASSERT_TRUE(roomy) << roomy.error().message;
  EXPECT_TRUE(roomy->ok);
  EXPECT_GT(roomy->cubin.size(), 4000000u);
}

TEST_P(CompilerIsolationBackends, WorkerGivesTheSameResultAsInProcess) {
  CompileOptions isolated = options();
  CompileOptions inProcess = options();
  inProcess.isolation = CompileOptions::Isolation::InProcess;
  Result<CompileResult> viaWorker = compilePtx(kSaxpy, isolated);
  Result<CompileResult> direct = compilePtx(kSaxpy, inProcess);
  ASSERT_TRUE(viaWorker) << viaWorker.error().message;
  ASSERT_TRUE(direct) << direct.error().message;
  ASSERT_TRUE(viaWorker->ok);
  ASSERT_TRUE(direct->ok);
  EXPECT_EQ(viaWorker->cubin, direct->cubin);
  EXPECT_EQ(viaWorker->kernelName, direct->kernelName);
  EXPECT_EQ(viaWorker->resources.registers, direct->resources.registers);
  EXPECT_EQ(viaWorker->resources.constantBytes, direct->resources.constantBytes);
  EXPECT_EQ(viaWorker->functions.size(), direct->functions.size());
  EXPECT_EQ(viaWorker->diagnostics.size(), direct->diagnostics.size());
  EXPECT_EQ(viaWorker->advisories, direct->advisories);
  EXPECT_EQ(viaWorker->toolVersion, direct->toolVersion);
  EXPECT_EQ(viaWorker->backend, direct->backend);
}

INSTANTIATE_TEST_SUITE_P(CompilerIsolation, CompilerIsolationBackends,
                         ::testing::Values(CompileOptions::Backend::NvJitLink, CompileOptions::Backend::Ptxas),
                         [](const ::testing::TestParamInfo<CompileOptions::Backend> &info) {
                           return std::string(backendName(info.param));
                         });

TEST(CompilerIsolation, HundredThousandCharacterNameIsRejectedBeforeCompiling) {
  // nvJitLink corrupts its heap on this name ("malloc(): invalid size").
  Result<CompileResult> result = compilePtx(kernelNamed(100000), CompileOptions{});
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_FALSE(result->ok);
  ASSERT_EQ(firstCode(*result), kCodeCompileIdentifierTooLong);
  EXPECT_EQ(result->diagnostics.front().line, 5u);
  EXPECT_EQ(result->diagnostics.front().column, 17u);
  EXPECT_NE(result->diagnostics.front().message.find("100000 characters"), std::string::npos);
  EXPECT_NE(result->diagnostics.front().hint.find("PTXFORGE_COMPILE_MAX_IDENTIFIER"), std::string::npos);
}

TEST(CompilerIsolation, TenMegabyteIdentifierIsRejectedAtOnce) {
  // Unchecked, nvJitLink grinds on this for 43 s and then crashes.
  Result<CompileResult> result = compilePtx(kernelNamed(10u << 20), CompileOptions{});
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_FALSE(result->ok);
  EXPECT_EQ(firstCode(*result), kCodeCompileIdentifierTooLong);
}

TEST(CompilerIsolation, InProcessAlsoChecksTheInputLimits) {
  CompileOptions inProcess;
  inProcess.isolation = CompileOptions::Isolation::InProcess;
  Result<CompileResult> result = compilePtx(kernelNamed(100000), inProcess);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(firstCode(*result), kCodeCompileIdentifierTooLong);
}

TEST(CompilerIsolation, HeapCorruptingNameWithTheCheckLiftedStillSparesTheCaller) {
  // With the pre-check raised past it, the name reaches nvJitLink, which
  // corrupts the worker's heap: glibc aborts it ("malloc(): invalid size").
  CompileOptions unchecked;
  unchecked.maxIdentifierLength = 200000;
  Result<CompileResult> result = compilePtx(kernelNamed(100000), unchecked);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_FALSE(result->ok);
  EXPECT_EQ(firstCode(*result), kCodeCompilerCrashed);
  Result<CompileResult> next = compilePtx(kSaxpy, CompileOptions{});
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_TRUE(next->ok);
}

TEST(CompilerIsolation, OversizedModuleIsRejectedBeforeCompiling) {
  CompileOptions small;
  small.maxPtxBytes = 100;
  Result<CompileResult> result = compilePtx(kSaxpy, small);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_FALSE(result->ok);
  ASSERT_EQ(firstCode(*result), kCodeCompileInputTooLarge);
  EXPECT_NE(result->diagnostics.front().hint.find("PTXFORGE_COMPILE_MAX_PTX_BYTES"), std::string::npos);
}

TEST(CompilerIsolation, WorkerRestartsAfterACrash) {
  ASSERT_TRUE(compilePtx(kSaxpy, CompileOptions{})); // a warm worker
  const CompileWorkerCounters before = compileWorkerCounters();
  Result<CompileResult> crashed = compilePtx(kStoreThroughParamAddress, CompileOptions{});
  ASSERT_TRUE(crashed) << crashed.error().message;
  EXPECT_EQ(firstCode(*crashed), kCodeCompilerCrashed);
  // The crash in the warm worker is rerun in a fresh one before it is blamed
  // on the module: two crashes, two new workers (the retry and the next one).
  const CompileWorkerCounters afterCrash = compileWorkerCounters();
  EXPECT_EQ(afterCrash.crashed, before.crashed + 2);
  Result<CompileResult> next = compilePtx(kSaxpy, CompileOptions{});
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_TRUE(next->ok);
  EXPECT_EQ(compileWorkerCounters().started, afterCrash.started + 1);
  // And then it stays warm.
  ASSERT_TRUE(compilePtx(kSaxpy, CompileOptions{}));
  EXPECT_EQ(compileWorkerCounters().started, afterCrash.started + 1);
}

TEST(CompilerIsolation, EnvironmentSetsTheLimits) {
  ScopedEnvironment timeout("PTXFORGE_COMPILE_TIMEOUT_MS", "100");
  Result<CompileResult> result = compilePtx(slowToCompile(), CompileOptions{});
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(firstCode(*result), kCodeCompileTimeout);
  Result<CompileLimits> limits = resolveCompileLimits(CompileOptions{});
  ASSERT_TRUE(limits);
  EXPECT_EQ(limits->timeoutMs, 100u);
  CompileOptions explicitOption;
  explicitOption.timeoutMs = 5000; // the field wins over the environment
  EXPECT_EQ(resolveCompileLimits(explicitOption)->timeoutMs, 5000u);
}

TEST(CompilerIsolation, MalformedEnvironmentLimitIsAnError) {
  ScopedEnvironment memory("PTXFORGE_COMPILE_MEMORY_MB", "lots");
  Result<CompileResult> result = compilePtx(kSaxpy, CompileOptions{});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind, ErrorKind::InvalidInput);
  EXPECT_NE(result.error().message.find("PTXFORGE_COMPILE_MEMORY_MB='lots'"), std::string::npos);
}

TEST(CompilerIsolation, MissingWorkerIsToolMissing) {
  CompileOptions options;
  options.workerPath = "/nonexistent/ptxforge_compile_worker";
  Result<CompileResult> result = compilePtx(kSaxpy, options);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind, ErrorKind::ToolMissing);
}

TEST(CompilerIsolation, ConcurrentCallersEachGetAWorker) {
  std::vector<std::thread> threads;
  std::vector<int> compiled(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        Result<CompileResult> result = compilePtx(kSaxpy, CompileOptions{});
        if (result && result->ok)
          ++compiled[t];
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int count : compiled)
    EXPECT_EQ(count, 5);
}

TEST(CompilerIsolation, KilledPtxasLeavesNoTempFiles) {
  if (!findPtxas())
    GTEST_SKIP() << "ptxas not found (set PTXFORGE_PTXAS)";
  std::string folder = ::testing::TempDir() + "ptxforge-isolation-XXXXXX";
  ASSERT_NE(::mkdtemp(folder.data()), nullptr);
  {
    ScopedEnvironment tmp("TMPDIR", folder.c_str());
    stopIdleCompileWorkers(); // the next worker starts under this TMPDIR
    CompileOptions hurried;
    hurried.backend = CompileOptions::Backend::Ptxas;
    hurried.timeoutMs = 100;
    Result<CompileResult> result = compilePtx(slowToCompile(), hurried);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(firstCode(*result), kCodeCompileTimeout);
    stopIdleCompileWorkers();
  }
  EXPECT_TRUE(std::filesystem::is_empty(folder)) << folder;
  std::filesystem::remove_all(folder);
}
