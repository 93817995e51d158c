// Unit tests of LogParser on real ptxas / nvJitLink logs kept under logs/.
#include "toolchain/LogParser.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace ptxforge;
using namespace ptxforge::toolchain;

namespace {

std::string readLog(const std::string &name) {
  std::ifstream stream(std::string(PTXFORGE_TOOLCHAIN_LOG_DIR) + "/" + name);
  EXPECT_TRUE(stream.good()) << "missing fixture " << name;
  std::stringstream text;
  text << stream.rdbuf();
  return text.str();
}

const ptx::Diagnostic *findAt(const std::vector<ptx::Diagnostic> &diagnostics, uint32_t line, std::string_view text) {
  for (const ptx::Diagnostic &diagnostic : diagnostics)
    if (diagnostic.line == line && diagnostic.message.find(text) != std::string::npos)
      return &diagnostic;
  return nullptr;
}

} // namespace

TEST(LogParser, PtxasErrorsAreLocatedAndCategorised) {
  std::vector<ptx::Diagnostic> diagnostics = parseCompilerLog(readLog("ptxas13_errors.log"));
  ASSERT_EQ(diagnostics.size(), 6u); // the "aborted due to errors" trailer is dropped
  struct Expected {
    uint32_t line;
    const char *text;
    const char *code;
  };
  for (const Expected &expected : {
           Expected{11, "Arguments mismatch for instruction 'add'", kCodeCompileType},
           Expected{12, "Unknown modifier '.bar'", kCodeCompileSyntax},
           Expected{12, "Not a name of any known instruction: 'foo'", kCodeCompileSyntax},
           Expected{13, "Arguments mismatch for instruction 'mov'", kCodeCompileType},
           Expected{13, "Unknown symbol '%undefined_thing'", kCodeCompileUnknownSymbol},
           Expected{14, "Instruction 'wgmma.fence' not supported on .target 'sm_90'", kCodeCompileArch},
       }) {
    const ptx::Diagnostic *found = findAt(diagnostics, expected.line, expected.text);
    ASSERT_NE(found, nullptr) << expected.text;
    EXPECT_EQ(found->code, expected.code) << expected.text;
    EXPECT_EQ(found->severity, ptx::Severity::Error);
    EXPECT_FALSE(found->hint.empty());
  }
  // Sorted by line, original text kept.
  EXPECT_EQ(diagnostics.front().line, 11u);
  EXPECT_EQ(diagnostics.front().message,
            "ptxas /tmp/x.ptx, line 11; error   : Arguments mismatch for instruction 'add'");
}

TEST(LogParser, NvJitLinkErrorLogMatchesPtxasCategories) {
  std::vector<ptx::Diagnostic> diagnostics = parseCompilerLog(readLog("nvjitlink_errors.log"));
  ASSERT_EQ(diagnostics.size(), 6u); // "ERROR NVJITLINK_ERROR_PTX_COMPILE: ..." wrapper dropped
  const ptx::Diagnostic *arch = findAt(diagnostics, 14, "wgmma.fence");
  ASSERT_NE(arch, nullptr);
  EXPECT_EQ(arch->code, kCodeCompileArch);
  EXPECT_EQ(arch->message.rfind("ptxas application ptx input, line 14;", 0), 0u);
}

TEST(LogParser, SyntaxErrorIsFatalAtItsLine) {
  std::vector<ptx::Diagnostic> diagnostics = parseCompilerLog(readLog("ptxas13_syntax.log"));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].line, 8u);
  EXPECT_EQ(diagnostics[0].code, kCodeCompileSyntax);
  EXPECT_EQ(diagnostics[0].severity, ptx::Severity::Error);
}

TEST(LogParser, VersionTargetMismatchIsArch) {
  std::vector<ptx::Diagnostic> diagnostics = parseCompilerLog(readLog("ptxas13_version_target.log"));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].line, 2u);
  EXPECT_EQ(diagnostics[0].code, kCodeCompileArch);
}

TEST(LogParser, ATargetNewerThanTheArchIsArchWithAHint) {
  std::vector<ptx::Diagnostic> diagnostics = parseCompilerLog(
      "ptxas fatal   : SM version specified by .target is higher than default SM version assumed\n");
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].code, kCodeCompileArch);
  EXPECT_NE(diagnostics[0].hint.find("set `.target` to the task's architecture"), std::string::npos);
}

TEST(LogParser, TooMuchSharedDataIsResource) {
  for (const char *log : {"ptxas13_too_much_shared.log", "nvjitlink_too_much_shared.log"}) {
    std::vector<ptx::Diagnostic> diagnostics = parseCompilerLog(readLog(log));
    ASSERT_EQ(diagnostics.size(), 1u) << log; // nvJitLink's "ERROR 9: finish" dropped
    EXPECT_EQ(diagnostics[0].code, kCodeCompileResource) << log;
    EXPECT_EQ(diagnostics[0].line, 0u) << log;
    EXPECT_NE(diagnostics[0].message.find("uses too much shared data"), std::string::npos);
  }
}

TEST(LogParser, GenericTrailerKeptWhenNothingElseExplainsTheFailure) {
  std::vector<ptx::Diagnostic> diagnostics = parseCompilerLog("ERROR 9: finish\n");
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].code, kCodeCompileOther);
  EXPECT_EQ(diagnostics[0].message, "ERROR 9: finish");
}

TEST(LogParser, RegisterFloorWarningIsAResourceWarning) {
  std::vector<ptx::Diagnostic> diagnostics = parseCompilerLog(readLog("ptxas13_spills_maxrreg16.log"));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].severity, ptx::Severity::Warning);
  EXPECT_EQ(diagnostics[0].code, kCodeCompileResource);
}

TEST(LogParser, ClassifiesCommonMessages) {
  EXPECT_EQ(classifyCompilerMessage("Feature 'wgmma' requires .target sm_90a"), kCodeCompileArch);
  EXPECT_EQ(classifyCompilerMessage("Unsupported .version 9.9; current version is '9.0'"), kCodeCompileArch);
  EXPECT_EQ(classifyCompilerMessage("Entry function 'k' uses too many resources"), kCodeCompileResource);
  EXPECT_EQ(classifyCompilerMessage("Call to undefined function 'f'"), kCodeCompileUnknownSymbol);
  EXPECT_EQ(classifyCompilerMessage("State space mismatch between instruction and address in instruction 'ld'"),
            kCodeCompileType);
  EXPECT_EQ(classifyCompilerMessage("Something entirely new"), kCodeCompileOther);
}

TEST(LogParser, InfoLinesAndAdvisoriesAreNotDiagnostics) {
  EXPECT_TRUE(parseCompilerLog(readLog("ptxas13_multi_kernel.log")).empty());
  EXPECT_TRUE(parseCompilerLog(readLog("ptxas13_advisory.log")).empty());
}

TEST(LogParser, AdvisoryKeepsItsLine) {
  std::vector<std::string> advisories = parseAdvisories(readLog("ptxas13_advisory.log"));
  ASSERT_EQ(advisories.size(), 1u);
  EXPECT_EQ(advisories[0].rfind("line 11: Advisory: Modifier '.sp::ordered_metadata'", 0), 0u) << advisories[0];
}

TEST(LogParser, Cuda13ResourcesPerFunction) {
  ResourceReport report = parseResourceUsage(readLog("ptxas13_multi_kernel.log"));
  ASSERT_EQ(report.functions.size(), 6u);
  const ResourceUsage *smem = report.find("_Z4smemPK6float4Pf");
  ASSERT_NE(smem, nullptr);
  EXPECT_TRUE(smem->known);
  EXPECT_TRUE(smem->isEntry);
  EXPECT_EQ(smem->registers, 12);
  EXPECT_EQ(smem->barriers, 1);
  EXPECT_EQ(smem->sharedBytes, 4096);
  EXPECT_EQ(smem->constantBytes, -1); // CUDA 13 ptxas no longer prints cmem[0]

  const ResourceUsage *stacky = report.find("_Z6stackyPfi");
  ASSERT_NE(stacky, nullptr);
  EXPECT_EQ(stacky->registers, 40);
  EXPECT_EQ(stacky->stackFrameBytes, 128);
  EXPECT_EQ(stacky->cumulativeStackBytes, 128);

  const ResourceUsage *helper = report.find("_Z6helperPfi");
  ASSERT_NE(helper, nullptr);
  EXPECT_FALSE(helper->isEntry);
  EXPECT_EQ(helper->registers, -1);
  EXPECT_EQ(report.module.globalBytes, 0);
}

TEST(LogParser, SpillsUnderRegisterCap) {
  ResourceReport report = parseResourceUsage(readLog("ptxas13_spills_maxrreg16.log"));
  const ResourceUsage *heavy = report.find("_Z5heavyPKfPfi");
  ASSERT_NE(heavy, nullptr);
  EXPECT_EQ(heavy->registers, 24);
  EXPECT_EQ(heavy->stackFrameBytes, 1520);
  EXPECT_EQ(heavy->spillStoreBytes, 2816);
  EXPECT_EQ(heavy->spillLoadBytes, 3428);
}

TEST(LogParser, NvJitLinkSummaryAddsConstantBankWithoutOverridingPtxas) {
  ResourceReport report = parseResourceUsage(readLog("nvjitlink_info_multi_kernel.log"));
  const ResourceUsage *smem = report.find("_Z4smemPK6float4Pf");
  ASSERT_NE(smem, nullptr);
  EXPECT_EQ(smem->registers, 12);
  EXPECT_EQ(smem->sharedBytes, 4096); // the summary's 5120 includes the driver-reserved 1 KiB
  EXPECT_EQ(smem->constantBytes, 544);
  EXPECT_EQ(smem->localBytes, 0);
  const ResourceUsage *heavy = report.find("_Z5heavyPKfPfi");
  ASSERT_NE(heavy, nullptr);
  EXPECT_EQ(heavy->registers, 32);
  EXPECT_EQ(heavy->spillStoreBytes, 2156); // from the "ptxas         .     N bytes stack frame" relay line
  EXPECT_EQ(heavy->spillLoadBytes, 2508);
  EXPECT_EQ(heavy->stackFrameBytes, 1080);
  EXPECT_EQ(report.module.constantBanks.at(3), 256); // __constant__ data
}

TEST(LogParser, LegacyFormatWithConstantBanksAndLmem) {
  ResourceReport report = parseResourceUsage(readLog("ptxas_legacy_handwritten.log"));
  ASSERT_EQ(report.functions.size(), 5u);
  const ResourceUsage *foo = report.find("_Z3fooPf");
  ASSERT_NE(foo, nullptr);
  EXPECT_EQ(foo->registers, 32);
  EXPECT_EQ(foo->barriers, 1);
  EXPECT_EQ(foo->stackFrameBytes, 8);
  EXPECT_EQ(foo->spillStoreBytes, 16);
  EXPECT_EQ(foo->spillLoadBytes, 16);
  EXPECT_EQ(foo->sharedBytes, 4096);
  EXPECT_EQ(foo->constantBytes, 380);

  const ResourceUsage *bar = report.find("_Z3barPf");
  ASSERT_NE(bar, nullptr);
  EXPECT_EQ(bar->registers, 10);
  EXPECT_EQ(bar->constantBytes, 380);

  const ResourceUsage *baz = report.find("_Z3bazPfi");
  ASSERT_NE(baz, nullptr);
  EXPECT_EQ(baz->registers, 12);
  EXPECT_EQ(baz->barriers, 0);
  EXPECT_EQ(baz->constantBytes, 356);
  EXPECT_EQ(baz->otherConstantBanks.at(2), 8);

  const ResourceUsage *quux = report.find("_Z4quuxPf");
  ASSERT_NE(quux, nullptr);
  EXPECT_EQ(quux->registers, 20);
  EXPECT_EQ(quux->localBytes, 24);
  EXPECT_EQ(report.module.constantBanks.at(14), 8);
}

TEST(LogParser, EmptyAndGarbageLogsAreHarmless) {
  EXPECT_TRUE(parseCompilerLog("").empty());
  EXPECT_TRUE(parseResourceUsage("").functions.empty());
  EXPECT_TRUE(parseCompilerLog("\n\n  random text: with colon\n").empty());
  EXPECT_TRUE(parseResourceUsage("    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n").functions.empty());
  // A megabyte-long line must not exhaust std::regex's recursion.
  const std::string huge = "ptxas /tmp/x.ptx, line 3; error   : " + std::string(1 << 20, 'x');
  std::vector<ptx::Diagnostic> diagnostics = parseCompilerLog(huge);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].line, 3u);
}

// nvJitLink refuses PTX older than ISA 3.1 (it compiles with -c): the hint
// says the module is old, not that an instruction needs another target.
TEST(LogParser, LegacyPtxGetsItsOwnHint) {
  std::vector<ptx::Diagnostic> diagnostics =
      parseCompilerLog("ptxas fatal   : 'Compile only(-c)' requires PTX ISA .version 3.1 or later\n"
                       "ERROR NVJITLINK_ERROR_PTX_COMPILE: JIT the PTX (candidate.ptx)\n");
  ASSERT_FALSE(diagnostics.empty());
  EXPECT_EQ(diagnostics.front().code, kCodeCompileArch);
  EXPECT_NE(diagnostics.front().hint.find("--backend ptxas"), std::string::npos) << diagnostics.front().hint;
  EXPECT_EQ(diagnostics.front().hint.find("sm_90a"), std::string::npos);
}

// --- every compile diagnostic is located ------------------------------------------

namespace {

const char *const kLocatedModule = R"(// a comment before the module
.version 8.0
.target sm_90
.address_size 64

.visible .entry big(.param .u64 p)
{
	.reg .f32 %f<4>;
	.reg .b64 %rd<2>;
	add.f32 %f1, %f2, %rd1;
	frob.bar %f1;
	mov.u32 %f3, %undefined_thing;
	wgmma.fence.sync.aligned;
	ret;
}
)";

} // namespace

// Every code a compile can give (the log's categories and the limits'), walked
// one by one: each gets a line and a column in the module, at the token the
// message quotes, the function it names, or the module's first token.
TEST(LogParser, EveryCompileDiagnosticCodeGetsALineAndAColumn) {
  struct Case {
    const char *code;
    std::string logOrMessage; ///< a log line, or (line 0) the message of a limit diagnostic
    uint32_t line, column;
  };
  const std::vector<Case> cases = {
      {kCodeCompileType, "ptxas /tmp/x.ptx, line 10; error   : Arguments mismatch for instruction 'add'", 10, 2},
      {kCodeCompileSyntax, "ptxas /tmp/x.ptx, line 11; error   : Unknown modifier '.bar'", 11, 6},
      {kCodeCompileUnknownSymbol, "ptxas /tmp/x.ptx, line 12; error   : Unknown symbol '%undefined_thing'", 12, 15},
      {kCodeCompileArch, "ptxas /tmp/x.ptx, line 13; error   : Instruction 'wgmma.fence' not supported on .target 'sm_80'",
       13, 2},
      {kCodeCompileResource, "error   : Entry function 'big' uses too much shared data (0x493e0 bytes, 0xc000 max)", 6, 17},
      {kCodeCompileOther, "ERROR NVJITLINK_ERROR_PTX_COMPILE: JIT the PTX (input.ptx)", 2, 1},
      // A line past the module's end (a stale log) keeps its line, column 1.
      {kCodeCompileSyntax, "ptxas /tmp/x.ptx, line 99; fatal   : Parsing error near 'x': syntax error", 99, 1},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.logOrMessage);
    std::vector<ptx::Diagnostic> diagnostics = parseCompilerLog(c.logOrMessage);
    ASSERT_EQ(diagnostics.size(), 1u);
    EXPECT_EQ(diagnostics[0].code, c.code);
    locateCompilerDiagnostics(diagnostics, kLocatedModule);
    EXPECT_EQ(diagnostics[0].line, c.line);
    EXPECT_EQ(diagnostics[0].column, c.column);
  }
  // The limits' diagnostics (Compiler.h) carry no line: the module's first token.
  for (const char *code : {"compiler-crashed", "compile-timeout", "compile-memory-limit", "compile-output-limit",
                           "compile-input-too-large"}) {
    std::vector<ptx::Diagnostic> diagnostics = {ptx::Diagnostic{code, ptx::Severity::Error, 0, 0, "it failed", ""}};
    locateCompilerDiagnostics(diagnostics, kLocatedModule);
    EXPECT_EQ(diagnostics[0].line, 2u) << code;
    EXPECT_EQ(diagnostics[0].column, 1u) << code;
  }
  // An identifier too long is located where it is found; kept as it is.
  std::vector<ptx::Diagnostic> located = {
      ptx::Diagnostic{"compile-identifier-too-long", ptx::Severity::Error, 7, 3, "too long", ""}};
  locateCompilerDiagnostics(located, kLocatedModule);
  EXPECT_EQ(located[0].line, 7u);
  EXPECT_EQ(located[0].column, 3u);
  // An empty module: 1:1.
  std::vector<ptx::Diagnostic> empty = parseCompilerLog("ERROR 9: finish");
  locateCompilerDiagnostics(empty, "");
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(empty[0].line, 1u);
  EXPECT_EQ(empty[0].column, 1u);
}
