// Printer tests: parse(print(parse(x))) == parse(x), and nvcc-like layout.
#include "ptx/Parser.h"
#include "ptx/Printer.h"

#include <gtest/gtest.h>

using namespace ptxforge::ptx;

namespace {

const char *kModule = R"(.version 8.5
.target sm_90
.address_size 64

.extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);
.global .align 4 .b8 table[4] = {1, 2, 3, 4};
.extern .shared .align 16 .b8 smem[];

.visible .entry k(
  .param .u64 .ptr.global.align 16 k_param_0,
  .param .u32 k_param_1
)
.maxntid 128, 1, 1
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [k_param_0];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  setp.ge.u32 %p1, %r1, 0x20U;
  @%p1 bra $L__BB0_2;
  ld.global.nc.v2.f32 {%f1, %f2}, [%rd2+-8];
  fma.rn.ftz.f32 %f3, %f1, %f2, 0fBF800000;
  shfl.sync.bfly.b32 %r2|%p1, %r1, 1, 31, -1;
  st.global.f32 [%rd2], %f3;
  {
    .reg .b32 temp;
    .param .b64 param0;
    st.param.b64 [param0], %rd1;
    call.uni (retval0), vprintf, (param0, param0);
  }
$L__BB0_2:
  ret;
}
)";

} // namespace

TEST(Printer, RoundTripIsEqualAndIdempotent) {
  ParseResult first = parse(kModule);
  ASSERT_TRUE(first.diagnostics.empty()) << first.diagnostics.front().message;
  std::string printed = print(first.module);
  ParseResult second = parse(printed);
  ASSERT_TRUE(second.diagnostics.empty()) << second.diagnostics.front().message << "\n" << printed;
  EXPECT_EQ(first.module, second.module);
  EXPECT_EQ(print(second.module), printed);
}

TEST(Printer, EqualityIgnoresLocationsButNotContent) {
  ParseResult a = parse(kModule);
  ParseResult b = parse(std::string("\n\n") + kModule);
  EXPECT_EQ(a.module, b.module);
  std::string changed = kModule;
  changed.replace(changed.find("0x20U"), 5, "0x21U");
  EXPECT_FALSE(parse(changed).module == a.module);
}

TEST(Printer, InstructionLayout) {
  ParseResult result = parse(kModule);
  const Function &k = result.module.items.back().function;
  EXPECT_EQ(printInstruction(k.body[9].instruction), "ld.global.nc.v2.f32 \t{%f1, %f2}, [%rd2+-8]");
  EXPECT_EQ(printInstruction(k.body[8].instruction), "@%p1 bra \t$L__BB0_2");
  EXPECT_EQ(printVariable(k.params[0]), ".param .u64 .ptr.global.align 16 k_param_0");
}

TEST(Printer, NanImmediatesRoundTrip) {
  // A NaN never equals itself as a double; operands compare floats by bits.
  std::string source = std::string(".version 8.5\n.target sm_90\n.entry k()\n{\n.reg .f32 %f<2>;\n.reg .f64 %fd<2>;\n") +
                       "mov.f32 %f1, 0f7FFFFFFF;\nmov.f64 %fd1, 0dFFF8000000000000;\n}\n";
  ParseResult first = parse(source);
  ASSERT_TRUE(first.diagnostics.empty());
  EXPECT_EQ(parse(print(first.module)).module, first.module);
}
