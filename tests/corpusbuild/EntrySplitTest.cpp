// Cutting a module into one module per kernel: callees and globals travel
// with the kernel that uses them, other kernels do not, and what is cut out
// still parses.
#include "corpus/EntrySplit.h"

#include "ptx/Lint.h"

#include <gtest/gtest.h>

namespace ptxforge::corpus {
namespace {

const char *kTwoKernels = R"(.version 8.0
.target sm_80
.address_size 64

.global .align 4 .u32 counter;
.global .align 4 .b8 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
.func (.param .b32 ret) twice(.param .b32 x)
{
	.reg .b32 %r<3>;
	ld.param.b32 %r1, [x];
	add.s32 %r2, %r1, %r1;
	st.param.b32 [ret], %r2;
	ret;
}
.visible .entry uses_func(.param .u64 out)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, 21;
	{
	.param .b32 a;
	st.param.b32 [a], %r1;
	.param .b32 r;
	call.uni (r), twice, (a);
	ld.param.b32 %r2, [r];
	}
	st.global.u32 [%rd1], %r2;
	atom.global.add.u32 %r1, [counter], 1;
	ret;
}
.visible .entry reads_table(.param .u64 out, .param .u32 n)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [out];
	ld.global.u32 %r1, [table];
	st.global.u32 [%rd1], %r1;
	ret;
}
)";

TEST(SplitEntries, EachKernelKeepsWhatItUses) {
  Result<std::vector<EntryModule>> split = splitEntries(kTwoKernels);
  ASSERT_TRUE(split) << render(split.error());
  ASSERT_EQ(split->size(), 2u);

  const EntryModule &first = split->at(0);
  EXPECT_EQ(first.entry, "uses_func");
  EXPECT_EQ(first.parameterCount, 1);
  EXPECT_NE(first.ptx.find(".func"), std::string::npos) << first.ptx;
  EXPECT_NE(first.ptx.find("counter"), std::string::npos);
  EXPECT_EQ(first.ptx.find("table"), std::string::npos);
  EXPECT_EQ(first.ptx.find("reads_table"), std::string::npos);
  EXPECT_NE(first.ptx.find(".target sm_80"), std::string::npos);
  // The entry's instructions, then the callee's.
  ASSERT_GE(first.instructionTokens.size(), 2u);
  EXPECT_EQ(first.instructionTokens.front(), "ld.param.u64");
  EXPECT_EQ(first.instructionTokens.back(), "ret");
  EXPECT_NE(std::find(first.instructionTokens.begin(), first.instructionTokens.end(), "add.s32"),
            first.instructionTokens.end());

  const EntryModule &second = split->at(1);
  EXPECT_EQ(second.entry, "reads_table");
  EXPECT_EQ(second.parameterCount, 2);
  EXPECT_EQ(second.ptx.find(".func"), std::string::npos) << second.ptx;
  EXPECT_EQ(second.ptx.find("counter"), std::string::npos);
  EXPECT_NE(second.ptx.find("table"), std::string::npos);

  // Each piece is a module on its own: no undeclared names.
  for (const EntryModule &module : *split)
    for (const ptx::Diagnostic &diagnostic : ptx::lintSource(module.ptx))
      EXPECT_NE(diagnostic.severity, ptx::Severity::Error) << module.entry << ": " << diagnostic.message;
}

TEST(SplitEntries, DebugModulesStayWhole) {
  std::string debug = kTwoKernels;
  debug.replace(debug.find(".target sm_80"), 13, ".target sm_80, debug");
  Result<std::vector<EntryModule>> split = splitEntries(debug);
  ASSERT_TRUE(split) << render(split.error());
  ASSERT_EQ(split->size(), 2u);
  EXPECT_EQ(split->at(0).ptx, split->at(1).ptx);
  EXPECT_NE(split->at(1).ptx.find("uses_func"), std::string::npos);
  // The tokens are still each kernel's own.
  EXPECT_NE(split->at(0).instructionTokens, split->at(1).instructionTokens);
}

TEST(SplitEntries, OtherDwarfSectionsGoDebugStrStays) {
  std::string text = std::string(kTwoKernels) +
                     "\t.section\t.debug_str\n\t{\n$L__info_string0:\n.b8 102,0\n\t}\n"
                     "\t.section\t.debug_abbrev\n\t{\n.b8 1\n\t}\n";
  Result<std::vector<EntryModule>> split = splitEntries(text);
  ASSERT_TRUE(split) << render(split.error());
  EXPECT_NE(split->at(0).ptx.find(".debug_str"), std::string::npos);
  EXPECT_EQ(split->at(0).ptx.find(".debug_abbrev"), std::string::npos);
}

TEST(SplitEntries, UnparsableModuleIsALocatedError) {
  Result<std::vector<EntryModule>> split = splitEntries(".version 8.0\n.target sm_80\n.entry k( {\n");
  ASSERT_FALSE(split);
  EXPECT_EQ(split.error().code, "ptx-syntax");
  EXPECT_GT(split.error().line, 0u);
}

TEST(DemangledName, CxxNamesAndPlainOnes) {
  EXPECT_EQ(demangledName("_Z9transposePfPKfii"), "transpose(float*, float const*, int, int)");
  EXPECT_EQ(demangledName("saxpy"), "saxpy");
  EXPECT_EQ(demangledName("_Znot_mangled"), "_Znot_mangled");
}

} // namespace
} // namespace ptxforge::corpus
