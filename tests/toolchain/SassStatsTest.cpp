// sass tests: nvdisasm -json statistics. Skipped (with the reason) when no
// nvdisasm is available; the JSON counting itself is checked on inline text.
#include "toolchain/Compiler.h"
#include "toolchain/Json.h"
#include "toolchain/SassStats.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace ptxforge;
using namespace ptxforge::toolchain;

namespace {

// A trimmed nvdisasm 13.5 -json document (same schema as the real output).
constexpr const char *kNvdisasmJson = R"([
 {"ELF":{"layout-id":4},"SM":{"version":{"major":9,"minor":0}},"Producer":"nvdisasm V13.5.37"},
 [{"function-name":"k","start":0,"length":256,"other-attributes":[],"sass-instructions":[
   {"opcode":"LDG.E.128","operands":"R4,desc[UR4][R2.64]"},
   {"opcode":"LDG.E","operands":"R8,desc[UR4][R2.64]"},
   {"opcode":"LDG.E.U8","operands":"R9,desc[UR4][R2.64]"},
   {"opcode":"FFMA","operands":"R0,R4,R5,R6"},
   {"opcode":"FMUL","operands":"R0,R0,R7"},
   {"opcode":"FADD","operands":"R0,R0,R8"},
   {"opcode":"HGMMA.64x128x16.F32","operands":"gdesc[UR4],RZ"},
   {"opcode":"HFMA2.MMA","operands":"R3,-RZ,RZ,0,0"},
   {"opcode":"STL.64","operands":"[R1],R4"},
   {"opcode":"LDL","operands":"R4,[R1]"},
   {"opcode":"BAR.SYNC.DEFER_BLOCKING","operands":"0x0"},
   {"opcode":"STG.E.64","operands":"desc[UR4][R2.64],R4"},
   {"predicate":"@P0","opcode":"EXIT"},
   {"opcode":"BRA","operands":"0xd0"},
   {"opcode":"NOP"},{"opcode":"NOP"}]},
  {"function-name":"g","start":256,"length":32,"sass-instructions":[{"opcode":"EXIT"}]}]
])";

constexpr const char *kVectorKernel = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry vec4(.param .u64 in, .param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .f32 %f<9>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd5, %r1, 16;
  add.s64 %rd3, %rd3, %rd5;
  add.s64 %rd4, %rd4, %rd5;
  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd3];
  fma.rn.f32 %f5, %f1, %f2, %f3;
  mul.rn.f32 %f6, %f2, %f3;
  add.rn.f32 %f7, %f6, %f4;
  bar.sync 0;
  st.global.v4.f32 [%rd4], {%f5, %f6, %f7, %f4};
  ret;
}
)";

} // namespace

TEST(SassStats, CountsFromNvdisasmJson) {
  Result<SassStats> stats = sassStatsFromJson(kNvdisasmJson);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->arch, "sm_90");
  const SassCounts &total = stats->total;
  EXPECT_EQ(total.instructions, 15); // trailing NOP padding excluded
  EXPECT_EQ(total.opcodes.at("LDG"), 3);
  EXPECT_EQ(total.opcodes.at("EXIT"), 2);
  EXPECT_EQ(total.opcodes.count("NOP"), 0u);
  EXPECT_EQ(total.globalLoadWidths.at(128), 1);
  EXPECT_EQ(total.globalLoadWidths.at(32), 1);
  EXPECT_EQ(total.globalLoadWidths.at(8), 1);
  EXPECT_EQ(total.globalStoreWidths.at(64), 1);
  EXPECT_EQ(total.ffma, 1);
  EXPECT_EQ(total.fmul, 1);
  EXPECT_EQ(total.fadd, 1);
  EXPECT_EQ(total.tensorCoreOps, 1); // HGMMA yes, HFMA2.MMA no
  EXPECT_EQ(total.spillStores, 1);
  EXPECT_EQ(total.spillLoads, 1);
  EXPECT_EQ(total.barriers, 1);
  ASSERT_EQ(stats->functions.size(), 2u);
  EXPECT_EQ(stats->functions.at("k").instructions, 14);
  EXPECT_EQ(stats->functions.at("g").instructions, 1);

  nlohmann::json document = toJson(*stats);
  EXPECT_EQ(document["global_load_widths"]["128"], 1);
  EXPECT_EQ(document["functions"]["g"]["instructions"], 1);
}

TEST(SassStats, CodeTextIsTheInstructionsWithoutPadding) {
  Result<SassStats> stats = sassStatsFromJson(kNvdisasmJson);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  // One line per instruction under its function, predicate first, NOP padding dropped.
  EXPECT_EQ(stats->code.rfind("function k:\nLDG.E.128 R4,desc[UR4][R2.64]\n", 0), 0u) << stats->code;
  EXPECT_NE(stats->code.find("\n@P0 EXIT \nBRA 0xd0\nfunction g:\nEXIT \n"), std::string::npos) << stats->code;
  EXPECT_EQ(stats->code.find("NOP"), std::string::npos);
  // A different operand is different code.
  std::string changed = kNvdisasmJson;
  changed.replace(changed.find("R0,R4,R5,R6"), 11, "R0,R4,R5,R7");
  Result<SassStats> other = sassStatsFromJson(changed);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->code, stats->code);
  EXPECT_EQ(other->total.instructions, stats->total.instructions);
}

TEST(SassStats, RejectsNonJson) {
  EXPECT_FALSE(sassStatsFromJson("not json").ok());
  EXPECT_FALSE(sassStatsFromJson(R"([{"Producer":"x"},{"unexpected":1}])").ok());
}

TEST(SassStats, BaseOpcodeDropsModifiers) {
  EXPECT_EQ(baseOpcode("LDG.E.128"), "LDG");
  EXPECT_EQ(baseOpcode("FFMA"), "FFMA");
  EXPECT_EQ(baseOpcode("BAR.SYNC.DEFER_BLOCKING"), "BAR");
}

TEST(SassStats, RealCubin) {
  if (!findNvdisasm())
    GTEST_SKIP() << "nvdisasm not found: set PTXFORGE_NVDISASM or `pip install nvidia-cuda-nvdisasm`";
  Result<CompileResult> compiled = compilePtx(kVectorKernel, CompileOptions{});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message;
  ASSERT_TRUE(compiled->ok) << compiled->errorLog;
  Result<SassStats> stats = sassStats(compiled->cubin);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->arch, "sm_90");
  ASSERT_EQ(stats->functions.count("vec4"), 1u);
  const SassCounts &counts = stats->total;
  EXPECT_GT(counts.instructions, 5);
  EXPECT_EQ(counts.globalLoadWidths.at(128), 1);  // ld.global.v4.f32 -> LDG.E.128
  EXPECT_EQ(counts.globalStoreWidths.at(128), 1); // st.global.v4.f32 -> STG.E.128
  EXPECT_GE(counts.ffma, 1);
  EXPECT_EQ(counts.barriers, 1);
  EXPECT_EQ(counts.spillLoads + counts.spillStores, 0);
  EXPECT_EQ(counts.opcodes.at("EXIT") >= 1, true);
}

TEST(SassStats, SpillsShowAsLocalMemoryInstructions) {
  if (!findNvdisasm())
    GTEST_SKIP() << "nvdisasm not found: set PTXFORGE_NVDISASM or `pip install nvidia-cuda-nvdisasm`";
  std::ifstream stream(std::string(PTXFORGE_TOOLCHAIN_PTX_DIR) + "/heavy.ptx");
  std::stringstream ptx;
  ptx << stream.rdbuf();
  CompileOptions options;
  options.maxRegisters = 32;
  Result<CompileResult> compiled = compilePtx(ptx.str(), options);
  ASSERT_TRUE(compiled.ok() && compiled->ok);
  Result<SassStats> stats = sassStats(compiled->cubin);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_GT(stats->total.spillStores, 0);
  EXPECT_GT(stats->total.spillLoads, 0);
  EXPECT_GT(stats->total.ffma, 100);
}

TEST(SassStats, MissingNvdisasmIsToolMissing) {
  const char *saved = std::getenv("PTXFORGE_NVDISASM");
  std::string previous = saved ? saved : "";
  ::setenv("PTXFORGE_NVDISASM", "/nonexistent/nvdisasm", 1);
  Result<SassStats> stats = sassStats(std::vector<uint8_t>{0x7f, 'E', 'L', 'F'});
  if (saved)
    ::setenv("PTXFORGE_NVDISASM", previous.c_str(), 1);
  else
    ::unsetenv("PTXFORGE_NVDISASM");
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.error().kind, ErrorKind::ToolMissing);
  EXPECT_NE(stats.error().message.find("PTXFORGE_NVDISASM"), std::string::npos);
}
