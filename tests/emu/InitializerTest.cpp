// Module-scope initializers: literals, constant expressions and element types,
// and the diagnostics for what the emulator refuses.
#include "emu/Initializer.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <string>
#include <vector>

namespace ptxforge::emu {
namespace {

/// The initializer's elements as `type`, widened to 64 bits (sign-extended for
/// signed types); fails the test on an error.
std::vector<uint64_t> elements(const std::string &text, DType type) {
  std::vector<uint8_t> bytes;
  std::string error;
  EXPECT_TRUE(evaluateInitializer(text, type, bytes, error)) << text << ": " << error;
  unsigned size = type == DType::Pred ? 1 : dtypeBytes(type);
  std::vector<uint64_t> out;
  for (size_t at = 0; at + size <= bytes.size(); at += size) {
    uint64_t v = 0;
    std::memcpy(&v, bytes.data() + at, size);
    out.push_back(extendBits(type, v));
  }
  return out;
}

std::string errorOf(const std::string &text, DType type) {
  std::vector<uint8_t> bytes;
  std::string error;
  EXPECT_FALSE(evaluateInitializer(text, type, bytes, error)) << text;
  return error;
}

uint64_t s(int64_t v) { return uint64_t(v); }

TEST(EmuInitializer, IntegerLiteralsInEveryBase) {
  EXPECT_EQ(elements("{-1, 0, 1}", DType::S32), (std::vector<uint64_t>{s(-1), 0, 1}));
  EXPECT_EQ(elements("{- 1, 0, 1}", DType::S32), (std::vector<uint64_t>{s(-1), 0, 1})); // as the parser spaces it
  EXPECT_EQ(elements("{0x10, 0XfF, 017, 0b101, 0B11, 42U, 7u}", DType::U32),
            (std::vector<uint64_t>{16, 255, 15, 5, 3, 42, 7}));
  EXPECT_EQ(elements("-128", DType::S8), (std::vector<uint64_t>{s(-128)}));
  EXPECT_EQ(elements("0xffffffffffffffff", DType::U64), (std::vector<uint64_t>{~uint64_t(0)}));
  EXPECT_EQ(elements("{1, 0}", DType::Pred), (std::vector<uint64_t>{1, 0}));
}

TEST(EmuInitializer, ConstantExpressionsWithCPrecedence) {
  EXPECT_EQ(elements("{1 + 2 * 3, (1 + 2) * 3, 7 / 2, -7 / 2, -7 % 3, 1 << 4, -16 >> 2}", DType::S32),
            (std::vector<uint64_t>{7, 9, 3, s(-3), s(-1), 16, s(-4)}));
  EXPECT_EQ(elements("{~0, !0, !5, 6 & 3, 6 | 3, 6 ^ 3, 1 < 2, 2 <= 1, 3 == 3, 3 != 3}", DType::S32),
            (std::vector<uint64_t>{s(-1), 1, 0, 2, 7, 5, 1, 0, 1, 0}));
  EXPECT_EQ(elements("{1 && 0, 1 || 0, 2 > 1 ? 10 : 20, -(-(3))}", DType::S32),
            (std::vector<uint64_t>{0, 1, 10, 3}));
  EXPECT_EQ(elements("0xffffffffU >> 4", DType::U32), (std::vector<uint64_t>{0x0fffffff}));
  EXPECT_EQ(elements("(1 << 40) + 5", DType::U64), (std::vector<uint64_t>{(uint64_t(1) << 40) + 5}));
  // As the parser spaces out the tokens of `<<`, `>=` and `||`.
  EXPECT_EQ(elements("{1 < < 3, 2 > = 1, 0 | | 1, 1 < 2}", DType::S32), (std::vector<uint64_t>{8, 1, 1, 1}));
}

TEST(EmuInitializer, FloatLiteralsAndConversions) {
  auto f32 = [](float v) { return uint64_t(std::bit_cast<uint32_t>(v)); };
  auto f64 = [](double v) { return std::bit_cast<uint64_t>(v); };
  EXPECT_EQ(elements("{0f3F800000, 0fBF000000, 1.5, -2.25, 1e-3, 3, -0f40000000}", DType::F32),
            (std::vector<uint64_t>{f32(1.0f), f32(-0.5f), f32(1.5f), f32(-2.25f), f32(1e-3f), f32(3.0f), f32(-2.0f)}));
  EXPECT_EQ(elements("{0d3FF0000000000000, 0f3F800000, 2.5e - 1, -1}", DType::F64),
            (std::vector<uint64_t>{f64(1.0), f64(1.0), f64(0.25), f64(-1.0)}));
  EXPECT_EQ(elements("0f7FC00001", DType::F32), (std::vector<uint64_t>{0x7fc00001})); // NaN payload kept
  EXPECT_EQ(elements("{0.5 * 4, 1.0 / 4}", DType::F32), (std::vector<uint64_t>{f32(2.0f), f32(0.25f)}));
  // Half precision: integers are bit patterns, floats are rounded.
  EXPECT_EQ(elements("{0x3C00, 1.0, 0fC0000000}", DType::F16), (std::vector<uint64_t>{0x3c00, 0x3c00, 0xc000}));
  EXPECT_EQ(elements("{0x3F80, 2.0}", DType::BF16), (std::vector<uint64_t>{0x3f80, 0x4000}));
  EXPECT_EQ(elements("0x3C004000", DType::F16x2), (std::vector<uint64_t>{0x3c004000}));
  // A 0f literal into a 32-bit integer type is its bit pattern.
  EXPECT_EQ(elements("0f3F800000", DType::B32), (std::vector<uint64_t>{0x3f800000}));
}

TEST(EmuInitializer, NestedBracesFlatten) {
  EXPECT_EQ(elements("{{1, 2}, {3, 4}}", DType::S16), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(elements("{}", DType::S32), (std::vector<uint64_t>{}));
}

TEST(EmuInitializer, RefusesWhatItCannotEvaluateWithASentence) {
  EXPECT_NE(errorOf("{1, foo}", DType::S32).find("address of a symbol"), std::string::npos);
  EXPECT_NE(errorOf("{1 / 0}", DType::S32).find("division by zero"), std::string::npos);
  EXPECT_NE(errorOf("{1.5}", DType::S32).find("cannot initialize a .s32"), std::string::npos);
  EXPECT_NE(errorOf("{1.5 << 2}", DType::F32).find("integer operands"), std::string::npos);
  EXPECT_NE(errorOf("{0f3F80}", DType::F32).find("8 hex digits"), std::string::npos);
  EXPECT_NE(errorOf("{09}", DType::S32).find("is not a number"), std::string::npos);
  EXPECT_NE(errorOf("{1, 2", DType::S32).find("expected ',' or '}'"), std::string::npos);
  EXPECT_NE(errorOf("{(1 + 2}", DType::S32).find("expected ')'"), std::string::npos);
  EXPECT_NE(errorOf("1 2", DType::S32).find("after the initializer"), std::string::npos);
  // Deep nesting is refused, not recursed into until the stack runs out.
  EXPECT_NE(errorOf(std::string(100000, '(') + "1", DType::S32).find("nests deeper"), std::string::npos);
  EXPECT_NE(errorOf(std::string(100000, '-') + "1", DType::S32).find("nests deeper"), std::string::npos);
  EXPECT_NE(errorOf(std::string(100000, '{'), DType::S32).find("nests deeper"), std::string::npos);
  std::string conditionals;
  for (int i = 0; i < 50000; ++i) conditionals += "1 ? ";
  EXPECT_NE(errorOf(conditionals + "1", DType::S32).find("nests deeper"), std::string::npos);
  EXPECT_EQ(elements(std::string(20, '(') + "7" + std::string(20, ')'), DType::S32), (std::vector<uint64_t>{7}));
}

} // namespace
} // namespace ptxforge::emu
