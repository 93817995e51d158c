// jit tests: real PTX compiles through nvJitLink (in-process) and ptxas.
#include "toolchain/Compiler.h"
#include "toolchain/Json.h"
#include "toolchain/LogParser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

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

// Line 11 has the bad instruction (type mismatch: .f32 add on a .b64 register).
constexpr const char *kTypeError = R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry bad(.param .u64 p)
{
  .reg .f32 %f<4>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  mov.f32 %f2, 0f00000000;
  add.f32 %f1, %f2, %rd1;
  ret;
}
)";

// Line 7: missing comma -> parse error.
constexpr const char *kSyntaxError = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry bad()
{
  .reg .f32 %f<4>;
  add.f32 %f1, %f2 %f3;
  ret;
}
)";

// wgmma needs .target sm_90a; line 6 uses it under plain sm_90.
constexpr const char *kNeedsSm90a = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry k()
{
  wgmma.fence.sync.aligned;
  ret;
}
)";

// 300000 bytes of static shared memory: over the 48 KiB static limit; rejected
// only when the module is finalised (nvJitLinkComplete), not when parsed.
constexpr const char *kTooMuchShared = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry big(.param .u64 p)
{
  .shared .align 4 .b8 s[300000];
  .reg .b64 %rd<3>;
  .reg .b32 %r<3>;
  mov.u64 %rd1, s;
  ld.shared.u32 %r1, [%rd1];
  ld.param.u64 %rd2, [p];
  st.global.u32 [%rd2], %r1;
  ret;
}
)";

constexpr const char *kTwoEntries = R"(.version 8.0
.target sm_90
.address_size 64
// .entry commented_out()
.visible .entry first(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, 7;
  st.global.u32 [%rd1], %r1;
  ret;
}
.visible .entry second(.param .u64 p)
{
  .shared .align 4 .b8 tile[1024];
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  ld.shared.u32 %r1, [tile];
  bar.sync 0;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

std::string readPtx(const std::string &name) {
  std::ifstream stream(std::string(PTXFORGE_TOOLCHAIN_PTX_DIR) + "/" + name);
  EXPECT_TRUE(stream.good()) << "missing " << name;
  std::stringstream text;
  text << stream.rdbuf();
  return text.str();
}

CompileOptions optionsFor(CompileOptions::Backend backend) {
  CompileOptions options;
  options.backend = backend;
  return options;
}

const ptx::Diagnostic *firstError(const CompileResult &result) {
  for (const ptx::Diagnostic &diagnostic : result.diagnostics)
    if (diagnostic.severity == ptx::Severity::Error)
      return &diagnostic;
  return nullptr;
}

class CompilerBackends : public ::testing::TestWithParam<CompileOptions::Backend> {
protected:
  void SetUp() override {
    if (GetParam() == CompileOptions::Backend::Ptxas && !findPtxas())
      GTEST_SKIP() << "ptxas not found (set PTXFORGE_PTXAS); skipping the ptxas backend";
  }
  CompileOptions options() const { return optionsFor(GetParam()); }
};

} // namespace

TEST_P(CompilerBackends, ValidKernelCompiles) {
  Result<CompileResult> result = compilePtx(kSaxpy, options());
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->ok) << result->errorLog;
  EXPECT_GT(result->cubin.size(), 64u);
  // A cubin is an ELF file.
  EXPECT_EQ(result->cubin[0], 0x7f);
  EXPECT_EQ(result->cubin[1], 'E');
  EXPECT_EQ(result->kernelName, "saxpy");
  EXPECT_TRUE(result->resources.known);
  EXPECT_GT(result->resources.registers, 0);
  EXPECT_EQ(result->resources.spillStoreBytes, 0);
  EXPECT_FALSE(ptx::hasErrors(result->diagnostics));
  EXPECT_EQ(result->backend, backendName(GetParam()));
  EXPECT_GT(result->compileMs, 0.0);
}

TEST_P(CompilerBackends, TypeErrorIsLocatedAndCategorised) {
  Result<CompileResult> result = compilePtx(kTypeError, options());
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_FALSE(result->ok);
  EXPECT_TRUE(result->cubin.empty());
  const ptx::Diagnostic *error = firstError(*result);
  ASSERT_NE(error, nullptr) << result->errorLog;
  EXPECT_EQ(error->line, 11u); // add.f32 %f1, %f2, %rd1;
  EXPECT_EQ(error->code, kCodeCompileType);
  EXPECT_NE(error->message.find("Arguments mismatch for instruction 'add'"), std::string::npos);
}

TEST_P(CompilerBackends, SyntaxErrorIsLocated) {
  Result<CompileResult> result = compilePtx(kSyntaxError, options());
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_FALSE(result->ok);
  const ptx::Diagnostic *error = firstError(*result);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->line, 7u);
  EXPECT_EQ(error->code, kCodeCompileSyntax);
}

TEST_P(CompilerBackends, Sm90aInstructionUnderSm90IsArch) {
  Result<CompileResult> result = compilePtx(kNeedsSm90a, options());
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_FALSE(result->ok);
  const ptx::Diagnostic *error = firstError(*result);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->line, 6u);
  EXPECT_EQ(error->code, kCodeCompileArch);
}

TEST_P(CompilerBackends, ATargetNewerThanTheArchPointsAtTheTargetLine) {
  std::string ptx = kSaxpy;
  const size_t at = ptx.find(".target sm_");
  ASSERT_NE(at, std::string::npos);
  ptx.replace(at, ptx.find('\n', at) - at, ".target sm_100a");
  ptx.replace(0, std::string(".version 8.0").size(), ".version 9.0"); // sm_100a needs ISA 8.6
  Result<CompileResult> result = compilePtx(ptx, options()); // for sm_90
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_FALSE(result->ok);
  const ptx::Diagnostic *error = firstError(*result);
  ASSERT_NE(error, nullptr) << result->errorLog;
  EXPECT_EQ(error->code, kCodeCompileArch) << error->message;
  EXPECT_EQ(error->line, static_cast<uint32_t>(std::count(ptx.begin(), ptx.begin() + static_cast<long>(at), '\n') + 1));
  EXPECT_EQ(error->column, 1u);
  EXPECT_NE(error->hint.find("task's architecture"), std::string::npos) << error->hint;
}

TEST_P(CompilerBackends, DebugTargetCompilesUnoptimizedWithAdvisory) {
  // nvcc -G output: ptxas rejects it at -O3 ("Optimized debugging not supported").
  const std::string ptx = readPtx("debug.ptx");
  EXPECT_TRUE(targetsDebug(ptx));
  EXPECT_FALSE(targetsDebug(".target sm_90 // debug later\n"));
  Result<CompileResult> result = compilePtx(ptx, options());
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->ok) << result->errorLog;
  ASSERT_FALSE(result->advisories.empty());
  EXPECT_NE(result->advisories.back().find("-O0"), std::string::npos);
}

TEST_P(CompilerBackends, Sm90aInstructionCompilesForSm90a) {
  std::string ptx = kNeedsSm90a;
  ptx.replace(ptx.find(".target sm_90"), 13, ".target sm_90a");
  CompileOptions options = this->options();
  options.arch = "sm_90a";
  Result<CompileResult> result = compilePtx(ptx, options);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->ok) << result->errorLog;
}

TEST_P(CompilerBackends, TooMuchSharedIsResourceError) {
  Result<CompileResult> result = compilePtx(kTooMuchShared, options());
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_FALSE(result->ok);
  const ptx::Diagnostic *error = firstError(*result);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->code, kCodeCompileResource);
  EXPECT_EQ(result->resources.sharedBytes, 300000); // still reported
}

TEST_P(CompilerBackends, MaxRegistersForcesSpills) {
  const std::string ptx = readPtx("heavy.ptx");
  Result<CompileResult> unlimited = compilePtx(ptx, options());
  ASSERT_TRUE(unlimited.ok()) << unlimited.error().message;
  ASSERT_TRUE(unlimited->ok);
  EXPECT_GT(unlimited->resources.registers, 32);
  EXPECT_EQ(unlimited->resources.spillStoreBytes, 0);

  CompileOptions capped = options();
  capped.maxRegisters = 32;
  Result<CompileResult> result = compilePtx(ptx, capped);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_TRUE(result->ok);
  EXPECT_LE(result->resources.registers, 32);
  EXPECT_GT(result->resources.spillStoreBytes, 0);
  EXPECT_GT(result->resources.spillLoadBytes, 0);
  EXPECT_GT(result->resources.stackFrameBytes, 0);
}

TEST_P(CompilerBackends, PicksFirstEntryOrTheNamedOne) {
  Result<CompileResult> result = compilePtx(kTwoEntries, options());
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_TRUE(result->ok) << result->errorLog;
  EXPECT_EQ(result->kernelName, "first");
  EXPECT_EQ(result->resources.function, "first");
  EXPECT_EQ(result->functions.size(), 2u);

  CompileOptions named = options();
  named.entryName = "second";
  Result<CompileResult> second = compilePtx(kTwoEntries, named);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->resources.function, "second");
  EXPECT_EQ(second->resources.sharedBytes, 1024);
  EXPECT_EQ(second->resources.barriers, 1);
}

TEST_P(CompilerBackends, LowerOptLevelAndLineInfoAreAccepted) {
  for (int level : {0, 1, 2}) {
    CompileOptions options = this->options();
    options.optLevel = level;
    options.generateLineInfo = true;
    Result<CompileResult> result = compilePtx(kSaxpy, options);
    ASSERT_TRUE(result.ok()) << "O" << level << ": " << result.error().message;
    EXPECT_TRUE(result->ok) << "O" << level << ": " << result->errorLog;
  }
}

TEST_P(CompilerBackends, BadOptionsAreToolErrors) {
  CompileOptions badArch = options();
  badArch.arch = "sm_xx";
  Result<CompileResult> result = compilePtx(kSaxpy, badArch);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, ErrorKind::InvalidInput);
  EXPECT_NE(result.error().message.find("sm_xx"), std::string::npos);

  CompileOptions badLevel = options();
  badLevel.optLevel = 7;
  EXPECT_FALSE(compilePtx(kSaxpy, badLevel).ok());
}

INSTANTIATE_TEST_SUITE_P(Compiler, CompilerBackends,
                         ::testing::Values(CompileOptions::Backend::NvJitLink, CompileOptions::Backend::Ptxas),
                         [](const ::testing::TestParamInfo<CompileOptions::Backend> &info) {
                           return std::string(backendName(info.param));
                         });

TEST(Compiler, BothBackendsAgreeOnResources) {
  if (!findPtxas())
    GTEST_SKIP() << "ptxas not found (set PTXFORGE_PTXAS)";
  const std::string ptx = readPtx("heavy.ptx");
  for (int cap : {0, 32}) {
    CompileOptions jit = optionsFor(CompileOptions::Backend::NvJitLink);
    CompileOptions cli = optionsFor(CompileOptions::Backend::Ptxas);
    jit.maxRegisters = cli.maxRegisters = cap;
    Result<CompileResult> fromJit = compilePtx(ptx, jit);
    Result<CompileResult> fromCli = compilePtx(ptx, cli);
    ASSERT_TRUE(fromJit.ok() && fromCli.ok());
    ASSERT_TRUE(fromJit->ok && fromCli->ok);
    EXPECT_EQ(fromJit->resources.registers, fromCli->resources.registers) << "cap " << cap;
    EXPECT_EQ(fromJit->resources.spillStoreBytes, fromCli->resources.spillStoreBytes) << "cap " << cap;
  }
}

// nvJitLink (the gate's compiler) and whole-program ptxas disagree on the
// rmsnorm reference (24 vs 16 registers with CUDA 13.0); `ptxas -c`, compiling
// relocatable code as nvJitLink does, agrees with nvJitLink, and that is the
// reason given. From either side the other backend is the one compared.
TEST(Compiler, TheOtherBackendsRegisterCountAndWhyItDiffers) {
  if (!findPtxas())
    GTEST_SKIP() << "ptxas not found (set PTXFORGE_PTXAS)";
  const std::string ptx = readPtx("rmsnorm_reference.ptx");
  CompileOptions jit = optionsFor(CompileOptions::Backend::NvJitLink);
  Result<CompileResult> fromJit = compilePtx(ptx, jit);
  ASSERT_TRUE(fromJit.ok() && fromJit->ok);
  Result<OtherBackendRegisters> other = compareWithOtherBackend(ptx, jit, *fromJit);
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_EQ(other->backend, "ptxas");
  EXPECT_EQ(other->primaryRegisters, fromJit->resources.registers);
  ASSERT_TRUE(other->differs) << "both give " << other->registers;
  EXPECT_TRUE(other->reasonConfirmed) << other->reason;
  EXPECT_NE(other->reason.find("relocatable code, like `ptxas -c` (which gives " +
                               std::to_string(fromJit->resources.registers) + " registers too)"),
            std::string::npos)
      << other->reason;

  CompileOptions relocatable = optionsFor(CompileOptions::Backend::Ptxas);
  relocatable.relocatable = true;
  Result<CompileResult> fromPtxasC = compilePtx(ptx, relocatable);
  ASSERT_TRUE(fromPtxasC.ok() && fromPtxasC->ok);
  EXPECT_EQ(fromPtxasC->resources.registers, fromJit->resources.registers);

  CompileOptions cli = optionsFor(CompileOptions::Backend::Ptxas);
  Result<CompileResult> fromCli = compilePtx(ptx, cli);
  ASSERT_TRUE(fromCli.ok() && fromCli->ok);
  Result<OtherBackendRegisters> reverse = compareWithOtherBackend(ptx, cli, *fromCli);
  ASSERT_TRUE(reverse.ok()) << reverse.error().message;
  EXPECT_EQ(reverse->backend, "nvjitlink");
  EXPECT_EQ(reverse->registers, fromJit->resources.registers);
  EXPECT_EQ(reverse->primaryRegisters, other->registers);
  EXPECT_TRUE(reverse->reasonConfirmed);

  // A kernel both compile alike: no difference, no reason.
  Result<CompileResult> saxpy = compilePtx(kSaxpy, jit);
  ASSERT_TRUE(saxpy.ok() && saxpy->ok);
  Result<OtherBackendRegisters> same = compareWithOtherBackend(kSaxpy, jit, *saxpy);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->differs);
  EXPECT_EQ(same->registers, saxpy->resources.registers);
  EXPECT_TRUE(same->reason.empty());
}

TEST(Compiler, NvJitLinkReportsConstantBank) {
  Result<CompileResult> result = compilePtx(kSaxpy, CompileOptions{});
  ASSERT_TRUE(result.ok());
  // Only nvJitLink's link summary carries cmem[0] (parameters + driver constants).
  EXPECT_GT(result->resources.constantBytes, 0);
}

TEST(Compiler, EntryNamesSkipComments) {
  std::vector<std::string> names = entryNames(kTwoEntries);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0], "first");
  EXPECT_EQ(names[1], "second");
}

TEST(Compiler, MissingPtxasIsToolMissing) {
  const char *saved = std::getenv("PTXFORGE_PTXAS");
  std::string previous = saved ? saved : "";
  ::setenv("PTXFORGE_PTXAS", "/nonexistent/ptxas", 1);
  Result<CompileResult> result = compilePtx(kSaxpy, optionsFor(CompileOptions::Backend::Ptxas));
  if (saved)
    ::setenv("PTXFORGE_PTXAS", previous.c_str(), 1);
  else
    ::unsetenv("PTXFORGE_PTXAS");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, ErrorKind::ToolMissing);
}

TEST(Compiler, JsonHasTheCliShape) {
  Result<CompileResult> result = compilePtx(kTypeError, CompileOptions{});
  ASSERT_TRUE(result.ok());
  nlohmann::json document = toJson(*result);
  EXPECT_EQ(document["ok"], false);
  ASSERT_TRUE(document["diagnostics"].is_array());
  ASSERT_FALSE(document["diagnostics"].empty());
  const nlohmann::json &first = document["diagnostics"][0];
  for (const char *key : {"code", "severity", "line", "column", "message", "hint"})
    EXPECT_TRUE(first.contains(key)) << key;
  EXPECT_EQ(first["line"], 11);
  EXPECT_EQ(first["code"], kCodeCompileType);
  EXPECT_TRUE(document.contains("resources"));
  EXPECT_TRUE(document.contains("compile_ms"));
  EXPECT_TRUE(document["resources"]["registers"].is_null()); // nothing was compiled
}
