// Tests for the lint checks, one group per diagnostic code. Negative cases put
// the expected diagnostic next to the bad line (`// expect: code`); the helper
// checks that exactly those lines report exactly those codes.
#include "ptx/Lint.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

using namespace ptxforge::ptx;

namespace {

/// A module around a kernel body: `.version/.target` header, one `.entry k`
/// with a pointer and an int parameter, and the usual nvcc register banks.
std::string kernel(const std::string &body, const std::string &target = "sm_90", const std::string &version = "8.5") {
  return ".version " + version + "\n.target " + target +
         "\n.address_size 64\n\n"
         ".visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .u32 k_param_1\n)\n{\n"
         "\t.reg .pred \t%p<4>;\n\t.reg .b16 \t%rs<4>;\n\t.reg .f32 \t%f<8>;\n\t.reg .b32 \t%r<8>;\n"
         "\t.reg .b64 \t%rd<8>;\n\t.reg .f64 \t%fd<4>;\n\n" +
         body + "\n\tret;\n}\n";
}

/// Line → codes reported there (errors and warnings).
std::map<uint32_t, std::multiset<std::string>> findings(const std::vector<Diagnostic> &diagnostics) {
  std::map<uint32_t, std::multiset<std::string>> out;
  for (const Diagnostic &d : diagnostics) out[d.line].insert(d.code);
  return out;
}

/// Line → codes named by `// expect: a, b` comments.
std::map<uint32_t, std::multiset<std::string>> expectations(const std::string &source) {
  std::map<uint32_t, std::multiset<std::string>> out;
  std::istringstream in(source);
  uint32_t lineNumber = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNumber;
    size_t pos = line.find("// expect:");
    if (pos == std::string::npos) continue;
    std::istringstream codes(line.substr(pos + 10));
    for (std::string code; codes >> code;) {
      if (code.back() == ',') code.pop_back();
      out[lineNumber].insert(code);
    }
  }
  return out;
}

std::string render(const std::vector<Diagnostic> &d, const std::string &source) {
  return formatDiagnosticsText(d, "test.ptx", source);
}

/// Lints `source` and checks the findings are exactly the `// expect:` comments.
void expectExactly(const std::string &source) {
  std::vector<Diagnostic> diagnostics = lintSource(source);
  EXPECT_EQ(findings(diagnostics), expectations(source)) << render(diagnostics, source);
}

const Diagnostic *first(const std::vector<Diagnostic> &diagnostics, const std::string &code) {
  for (const Diagnostic &d : diagnostics)
    if (d.code == code) return &d;
  return nullptr;
}

// --- clean input ------------------------------------------------------------

TEST(Lint, NvccStyleKernelIsClean) {
  expectExactly(kernel(R"(	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u32 	%r1, [k_param_1];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.s32 	%p1, %r5, %r1;
	@%p1 bra 	$L__BB0_2;
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.s32 	%rd3, %r5, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.nc.f32 	%f1, [%rd4];
	fma.rn.f32 	%f2, %f1, 0f40000000, 0f3F800000;
	cvt.rn.f16.f32 	%rs1, %f2;
	cvt.f32.f16 	%f3, %rs1;
	mov.b32 	%r6, {%rs1, %rs1};
	shfl.sync.bfly.b32 	%r7|%p2, %r6, 1, 31, -1;
	setp.ne.and.s32 	%p3, %r7, 0, %p2;
	selp.f32 	%f4, %f3, 0f00000000, %p3;
	cvt.f64.f32 	%fd1, %f4;
	st.global.f32 	[%rd4], %f4;
$L__BB0_2:)"));
}

TEST(Lint, CallsPrototypesBranchTargetsAndLocalsResolve) {
  expectExactly(R"(.version 8.5
.target sm_90
.address_size 64
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);
.global .align 1 .b8 $str[4] = {37, 102, 10, 0};
.visible .func (.param .b32 r) f(.param .b32 a) { .reg .b32 %r<2>; ld.param.b32 %r1, [a]; st.param.b32 [r], %r1; ret; }
.visible .entry k(.param .u64 k_p0, .param .u32 k_p1)
{
	.local .align 8 .b8 	__local_depot0[8];
	.reg .b64 	%SP;
	.reg .b64 	%SPL;
	.reg .b32 %r<5>;
	.reg .b64 %rd<6>;
	mov.u64 	%SPL, __local_depot0;
	cvta.local.u64 	%SP, %SPL;
	ld.param.u32 %r1, [k_p1];
	mov.u64 %rd1, f;
	{
	.param .b32 param0;
	st.param.b32 [param0], %r1;
	.param .b32 retval0;
	prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
	call (retval0), %rd1, (param0), prototype_0;
	ld.param.b32 %r2, [retval0];
	}
	mov.u64 %rd2, $str;
	cvta.global.u64 %rd3, %rd2;
	add.u64 %rd4, %SP, 0;
	st.local.u32 [%SPL], %r2;
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd3;
	.param .b64 param1;
	st.param.b64 [param1], %rd4;
	.param .b32 retval0;
	call.uni (retval0), vprintf, (param0, param1);
	}
	ts: .branchtargets $L1, $L2;
	brx.idx %r1, ts;
$L1:
	bra.uni $L2;
$L2:
	mov.u32 %r3, WARP_SZ;
	ret;
}
)");
}

// --- missing-directive --------------------------------------------------------

TEST(Lint, MissingDirective) {
  auto d = lintSource(".address_size 64\n.visible .entry k()\n{\n\tret;\n}\n");
  const Diagnostic *missing = first(d, "missing-directive");
  ASSERT_TRUE(missing);
  EXPECT_NE(missing->hint.find(".version"), std::string::npos);
  EXPECT_NE(missing->hint.find(".target sm_"), std::string::npos);
  auto onlyTarget = lintSource(".version 8.5\n.visible .entry k()\n{\n\tret;\n}\n");
  ASSERT_TRUE(first(onlyTarget, "missing-directive"));
  EXPECT_NE(first(onlyTarget, "missing-directive")->message.find("`.target`"), std::string::npos);
  EXPECT_FALSE(first(lintSource(kernel("")), "missing-directive"));
}

// --- undeclared-register ------------------------------------------------------

TEST(Lint, UndeclaredRegister) {
  expectExactly(kernel(R"(	mov.u32 	%r1, %tid.x;
	add.f32 	%f9, %f1, %f2;	// expect: undeclared-register
	add.f32 	%f9, %f9, %f2;
	mov.u32 	%r3, %laneid;
	mov.u32 	%r4, %clock;
	mov.u32 	%r5, %cluster_ctarank;
	mov.u64 	%rd1, %globaltimer;
	mov.u32 	%r6, %envreg3;
	{
	.reg .b32 	%inner;
	mov.u32 	%inner, %r1;
	}
	mov.u32 	%r2, %inner;	// expect: undeclared-register)"));
}

TEST(Lint, UndeclaredRegisterHintProposesDeclaration) {
  auto d = lintSource(kernel("\tadd.f32 \t%f12, %f1, %f2;\n\tsetp.lt.f32 \t%q1, %f1, %f2;"));
  const Diagnostic *f = first(d, "undeclared-register");
  ASSERT_TRUE(f);
  EXPECT_NE(f->hint.find(".reg .f32 %f<13>;"), std::string::npos) << f->hint;
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NE(d[1].hint.find(".reg .pred %q<2>;"), std::string::npos) << d[1].hint;
}

// --- register-type-mismatch ---------------------------------------------------

TEST(Lint, RegisterTypeMismatch) {
  expectExactly(kernel(R"(	add.s32 	%r1, %f1, %r2;	// expect: register-type-mismatch
	add.f32 	%f1, %f2, %rd1;	// expect: register-type-mismatch
	ld.global.s32 	%f1, [%rd1];	// expect: register-type-mismatch
	setp.ne.s32 	%r1, %r2, 0;	// expect: register-type-mismatch
	@%r1 bra 	$L1;	// expect: register-type-mismatch
	selp.f32 	%f1, %f2, %f3, %r1;	// expect: register-type-mismatch
	mov.u32 	%r1, %f1;	// expect: register-type-mismatch
	mul.wide.u32 	%r1, %r2, %r3;	// expect: register-type-mismatch
	shl.b64 	%rd1, %rd2, %rd3;	// expect: register-type-mismatch
	cvt.rn.f32.s32 	%f1, %fd1;	// expect: register-type-mismatch
	st.global.f32 	[%rd1], %fd1;	// expect: register-type-mismatch
	ld.global.f32 	%f1, [%f2];	// expect: register-type-mismatch
$L1:)"));
}

TEST(Lint, RegisterTypeRulesArePermissiveWherePtxasIs) {
  expectExactly(kernel(R"(	mov.b32 	%f1, %r1;
	mov.f32 	%f1, %r1;
	add.u32 	%r1, %r2, %r3;
	add.f16 	%rs1, %rs2, %rs3;
	ld.global.u8 	%r1, [%rd1];
	ld.global.f32 	%rd2, [%rd1];
	ld.global.s32 	%rd2, [%rd1];
	st.global.u32 	[%rd1], %rd2;
	st.global.b32 	[%rd1], %fd1;
	cvt.u32.u64 	%r1, %rd1;
	cvt.f32.f16 	%f1, %r1;
	cvt.rn.f16x2.f32 	%r1, %f1, %f2;
	shl.b64 	%rd1, %rd2, %r1;
	mul.wide.u32 	%rd1, %r2, %r3;
	mad.wide.s32 	%rd1, %r2, %r3, %rd2;
	setp.eq.f32 	%p1, %r1, %f1;
	and.b32 	%r1, %f1, %r2;
	fma.rn.f32 	%f1, %f2, %f3, %r1;
	popc.b64 	%r1, %rd1;
	bfe.u32 	%r1, %r2, 8, 4;
	prmt.b32 	%r1, %r2, %f1, 0x3210;
	vote.sync.ballot.b32 	%r1, %p1, -1;
	mov.b64 	%rd1, {%r1, %r2};
	mov.b32 	{%rs1, %rs2}, %r1;
	ld.global.v2.f32 	{%f1, %r2}, [%rd1+8];)"));
}

// Former false positives: each line is accepted by ptxas (CUDA 13.0) at the
// given target and used to be flagged.
TEST(Lint, FormerFalsePositivesAreClean) {
  // `.global` is the optional state space of `createpolicy.range` (PTX ISA 7.4).
  expectExactly(kernel(
      "\tcreatepolicy.range.global.L2::evict_last.L2::evict_first.b64 \t%rd3, [%rd2], %r1, %r2;", "sm_80", "8.3"));
  // Four-element fp8/fp6/fp4 packs of the stochastic-rounding cvt (sm_100a, PTX ISA 8.7).
  expectExactly(kernel("\tcvt.rs.satfinite.e4m3x4.f32 \t%r1, {%f1, %f2, %f3, %f4}, %r5;\n"
                       "\tcvt.rs.relu.satfinite.e5m2x4.f32 \t%r1, {%f1, %f2, %f3, %f4}, %r5;\n"
                       "\tcvt.rs.satfinite.e2m3x4.f32 \t%r1, {%f1, %f2, %f3, %f4}, %r5;\n"
                       "\tcvt.rs.satfinite.e2m1x4.f32 \t%rs1, {%f1, %f2, %f3, %f4}, %r5;",
                       "sm_100a", "8.7"));
}

TEST(Lint, FourElementFp8PackNeedsArchSpecificTarget) {
  auto d = lintSource(kernel("\tcvt.rs.satfinite.e4m3x4.f32 \t%r1, {%f1, %f2, %f3, %f4}, %r5;", "sm_100", "8.7"));
  ASSERT_NE(first(d, "arch-feature"), nullptr) << render(d, "");
}

// --- unknown-instruction / invalid-instruction-type ---------------------------

TEST(Lint, UnknownInstruction) {
  auto source = kernel("\taddd.f32 \t%f1, %f2, %f3;\t// expect: unknown-instruction\n"
                       "\tcp.asyn.ca.shared.global \t[%rd1], [%rd2], 4;\t// expect: unknown-instruction");
  expectExactly(source);
  auto d = lintSource(source);
  EXPECT_NE(d[0].hint.find("`add`"), std::string::npos) << d[0].hint;
  EXPECT_NE(d[1].hint.find("`cp.async`"), std::string::npos) << d[1].hint;
}

TEST(Lint, InvalidInstructionType) {
  auto source = kernel("\tsetp.less.s32 \t%p1, %r1, %r2;\t// expect: invalid-instruction-type\n"
                       "\tvadd.f32 \t%r1, %r2, %r3;\t// expect: invalid-instruction-type\n"
                       "\tld.global.f16 \t%rs1, [%rd1];\t// expect: invalid-instruction-type\n"
                       "\tadd.f23 \t%f1, %f2, %f3;\t// expect: invalid-instruction-type");
  expectExactly(source);
  auto d = lintSource(source);
  EXPECT_NE(d[0].message.find("valid comparisons: eq ne lt le gt ge"), std::string::npos) << d[0].message;
  EXPECT_NE(d[0].hint.find("setp.lt.s32"), std::string::npos) << d[0].hint;
  EXPECT_NE(d[1].message.find("valid types: u32 s32"), std::string::npos) << d[1].message;
  EXPECT_NE(d[2].hint.find("ld.global.b16"), std::string::npos) << d[2].hint;
  EXPECT_NE(d[3].hint.find("add.f32"), std::string::npos) << d[3].hint;
}

// --- undefined-label ----------------------------------------------------------

TEST(Lint, UndefinedLabel) {
  expectExactly(kernel(R"(	@%p1 bra 	$L__BB0_9;	// expect: undefined-label
	bra.uni 	$L__BB0_9;
	bra.uni 	$L__BB0_1;
	ts: .branchtargets $L__BB0_1, $L__BB0_7;	// expect: undefined-label
	brx.idx 	%r1, ts;
$L__BB0_1:)"));
}

// --- undeclared-symbol --------------------------------------------------------

TEST(Lint, UndeclaredSymbol) {
  expectExactly(kernel(R"(	ld.param.u64 	%rd1, [k_param_7];	// expect: undeclared-symbol
	mov.u64 	%rd2, smem_tile;	// expect: undeclared-symbol
	ld.param.u32 	%r1, [k_param_1];)"));
  auto d = lintSource(kernel("\tld.param.u64 \t%rd1, [k_param_7];"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].hint.find("k_param_"), std::string::npos) << d[0].hint;
}

// --- arch-feature -------------------------------------------------------------

TEST(Lint, ArchFeature) {
  expectExactly(kernel(R"(	cp.async.ca.shared.global 	[%rd1], [%rd2], 4;	// expect: arch-feature
	cp.async.commit_group;
	redux.sync.add.u32 	%r1, %r2, -1;	// expect: arch-feature
	tanh.approx.f32 	%f1, %f2;
	add.rn.bf16 	%rs1, %rs2, %rs3;	// expect: arch-feature)",
                       "sm_75", "7.8"));
  expectExactly(kernel("\twgmma.fence.sync.aligned;\t// expect: arch-feature\n"
                       "\tsetmaxnreg.inc.sync.aligned.u32 240;\t// expect: arch-feature"));
  expectExactly(kernel("\twgmma.fence.sync.aligned;\n\tsetmaxnreg.inc.sync.aligned.u32 240;\n"
                       "\telect.sync \t%r1|%p1, -1;",
                       "sm_90a"));
  expectExactly(kernel("\ttanh.approx.f32 \t%f1, %f2;\t// expect: arch-feature", "sm_75", "6.5"));
  auto d = lintSource(kernel("", "sm_90a", "7.8"));
  ASSERT_TRUE(first(d, "arch-feature"));
  EXPECT_NE(first(d, "arch-feature")->hint.find(".version 8.0"), std::string::npos);
}

// --- generic-address ----------------------------------------------------------

TEST(Lint, GenericAddress) {
  std::string bad = kernel(R"(	ld.param.u64 	%rd1, [k_param_0];
	add.s64 	%rd2, %rd1, 16;
	ld.global.f32 	%f1, [%rd2];	// expect: generic-address
	st.global.f32 	[%rd1], %f1;)");
  expectExactly(bad);
  auto d = lintSource(bad);
  EXPECT_EQ(d[0].severity, Severity::Warning);
  EXPECT_NE(d[0].hint.find("cvta.to.global.u64 %rdN, %rd1;"), std::string::npos) << d[0].hint;
  LintOptions quiet;
  quiet.warnGenericAddress = false;
  EXPECT_TRUE(lintSource(bad, quiet).empty());
  expectExactly(kernel(R"(	ld.param.u64 	%rd1, [k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	add.s64 	%rd3, %rd2, 16;
	ld.global.f32 	%f1, [%rd3];
	ld.f32 	%f2, [%rd1];)"));
}

// --- smaller checks -----------------------------------------------------------

TEST(Lint, DuplicatesOperandCountsSpecialRegistersImmediates) {
  expectExactly(R"(.version 8.5
.target sm_90
.address_size 64
.visible .entry k()
{
	.reg .b32 	%r<4>;
	.reg .f32 	%f<4>;
	.reg .b32 	%r<8>;	// expect: duplicate-declaration
	.reg .bf16 	%h;	// expect: invalid-register-type
	.reg .b64 	%rd<2>;
	add.s32 	%r1, %r2;	// expect: operand-count
	mad.lo.s32 	%r1, %ctaid.x, %ntid.x, %tid.x;	// expect: special-register-operand
	mov.u32 	%r1, %tid;	// expect: special-register-operand
	mov.u64 	%rd1, %ctaid.x;	// expect: special-register-operand
	max.f32 	%f1, %f2, 0;	// expect: immediate-type-mismatch
	mov.u32 	%r1, 0f3F800000;	// expect: immediate-type-mismatch
	mov.f32 	%f1, 0f3F800000;
	add.f32 	%f1, %f1, 1.5;
$L1:
	ret;
$L1:	// expect: duplicate-label
	ret;
}
)");
}

TEST(Lint, TruncatedModuleReportsOneSyntaxError) {
  std::string source = kernel(R"(	ld.param.u64 	%rd1, [k_param_0];
	@%p1 bra 	$L__BB0_2;
	add.s32 	%r1, %r2, %r3;)");
  source = source.substr(0, source.find("%r3;"));
  auto d = lintSource(source);
  ASSERT_EQ(d.size(), 1u) << render(d, source);
  EXPECT_EQ(d[0].code, "syntax");
}

TEST(Lint, DiagnosticsAreSortedByLocation) {
  auto d = lintSource(kernel("\tadd.s32 \t%r1, %f1, %r2;\n\taddd.f32 \t%f1, %f2, %f3;\n\tbra.uni \t$nowhere;"));
  ASSERT_EQ(d.size(), 3u);
  EXPECT_LT(d[0].line, d[1].line);
  EXPECT_LT(d[1].line, d[2].line);
}

} // namespace

namespace {

std::vector<std::string> codesOf(const std::vector<Diagnostic> &diagnostics) {
  std::vector<std::string> codes;
  for (const Diagnostic &d : diagnostics) codes.push_back(d.code);
  return codes;
}

} // namespace

TEST(Lint, SyntaxErrorLeavesTheRestOfTheFunctionChecked) {
  auto d = lintSource(kernel("\tadd.s32 \t%%r1, %r2, %r3;\n\tmul.lo.s32 \t%r1, %r9, 2;"));
  EXPECT_EQ(codesOf(d), (std::vector<std::string>{"syntax", "undeclared-register"})) << render(d, "");
}

TEST(Lint, BrokenDeclarationDoesNotCascade) {
  // `.reg .b32 %q<4` lost its `>`: its registers are not reported as undeclared.
  auto d = lintSource(kernel("\t.reg .b32 \t%q<4;\n\tmov.u32 \t%q1, 1;\n\tmov.u32 \t%x1, 1;"));
  EXPECT_EQ(codesOf(d), (std::vector<std::string>{"syntax", "undeclared-register"})) << render(d, "");
}

TEST(Lint, LabelsAreScopedToTheirBlock) {
  auto clean = lintSource(kernel("\t{\n\tL1:\n\t@%p1 bra \tL1;\n\t}\n\t{\n\tL1:\n\t@%p1 bra \tL1;\n\t}"));
  EXPECT_FALSE(hasErrors(clean)) << render(clean, "");
  auto into = lintSource(kernel("\t@%p1 bra \tL1;\n\t{\n\tL1:\n\tret;\n\t}"));
  EXPECT_EQ(codesOf(into), (std::vector<std::string>{"undefined-label"}));
  auto twice = lintSource(kernel("\t{\n\tL1:\n\tL1:\n\tret;\n\t}"));
  EXPECT_EQ(codesOf(twice), (std::vector<std::string>{"duplicate-label"}));
}

TEST(Lint, ArithmeticFormsFollowTheirTypesAndTheVersion) {
  auto mul = lintSource(kernel("\tmul.u32 \t%r1, %r2, 4;"));
  ASSERT_EQ(codesOf(mul), (std::vector<std::string>{"invalid-instruction-type"}));
  EXPECT_EQ(mul[0].hint, "did you mean `mul.lo.u32`?");
  auto compare = lintSource(kernel("\tsetp.lo.s32 \t%p1, %r2, 4;"));
  ASSERT_EQ(codesOf(compare), (std::vector<std::string>{"invalid-instruction-type"}));
  EXPECT_EQ(compare[0].hint, "did you mean `setp.lt.s32`?");
  // Before PTX ISA 1.4 (CUDA 2.x builds) a float div or sqrt without a
  // modifier was the approximate one, and ptxas 13 still takes it.
  const std::string old = ".version 1.3\n.target sm_13\n.entry k\n{\n.reg .f32 %f<4>;\n"
                          "div.f32 %f1, %f2, %f3;\nsqrt.f32 %f1, %f1;\nexit;\n}\n";
  EXPECT_FALSE(hasErrors(lintSource(old))) << render(lintSource(old), old);
  std::string newer = old;
  newer.replace(newer.find("1.3"), 3, "1.4");
  EXPECT_EQ(codesOf(lintSource(newer)),
            (std::vector<std::string>{"legacy-ptx", "invalid-instruction-type", "invalid-instruction-type"}));
}

TEST(Lint, CvtFormsFollowTheirTypes) {
  auto missing = lintSource(kernel("\tcvt.f16.f32 \t%rs1, %f1;"));
  ASSERT_EQ(codesOf(missing), (std::vector<std::string>{"invalid-instruction-type"}));
  EXPECT_EQ(missing[0].hint, "did you mean `cvt.rn.f16.f32`?");
  auto sat = lintSource(kernel("\tcvt.rn.sat.bf16.f32 \t%rs1, %f1;"));
  ASSERT_EQ(codesOf(sat), (std::vector<std::string>{"invalid-instruction-type"}));
  EXPECT_EQ(sat[0].hint, "did you mean `cvt.rn.satfinite.bf16.f32`?");
  auto sm80 = lintSource(kernel("\tcvt.rn.bf16.f16 \t%rs1, %rs2;", "sm_80"));
  EXPECT_EQ(codesOf(sm80), (std::vector<std::string>{"arch-feature"}));
  EXPECT_FALSE(hasErrors(lintSource(kernel("\tcvt.rn.bf16.f16 \t%rs1, %rs2;\n\tcvt.rzi.s32.f32 \t%r1, %f1;"))));
}

TEST(Lint, ModuleDirectivesPtxasRefuses) {
  auto newer = lintSource(kernel("", "sm_90", "9.1"));
  EXPECT_EQ(codesOf(newer), (std::vector<std::string>{"invalid-directive"}));
  auto old = lintSource(".version 1.4\n.target sm_10\n.entry k()\n{\nexit;\n}\n");
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].code, "legacy-ptx");
  EXPECT_EQ(old[0].severity, Severity::Warning);
  EXPECT_EQ(old[0].line, 1u);
}

TEST(Lint, ArchSpecificFeaturesDoNotCarryForward) {
  EXPECT_FALSE(hasErrors(lintSource(kernel("\twgmma.fence.sync.aligned;", "sm_90a", "8.0"))));
  EXPECT_EQ(codesOf(lintSource(kernel("\twgmma.fence.sync.aligned;", "sm_100a", "8.6"))),
            (std::vector<std::string>{"arch-feature"}));
  EXPECT_FALSE(hasErrors(lintSource(kernel("\tsetmaxnreg.inc.sync.aligned.u32 \t240;", "sm_120a", "8.7"))));
}

TEST(Lint, EveryDiagnosticHasALocation) {
  for (const char *source : {"", "// nothing\n", ".entry k() { ret; }", ".version 9.9\n.target sm_90\n"}) {
    for (const Diagnostic &d : lintSource(source)) {
      EXPECT_GT(d.line, 0u) << source << ": " << d.message;
      EXPECT_GT(d.column, 0u) << source << ": " << d.message;
    }
  }
}
