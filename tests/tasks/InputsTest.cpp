// Deterministic inputs and the f16/bf16 conversions.
#include "tasks/Inputs.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

using namespace ptxforge;
using namespace ptxforge::tasks;

namespace {

ParamSpec param(std::string name, ElementType type, InitSpec init) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = type;
  p.isPointer = true;
  p.role = ParamRole::Input;
  p.init = init;
  return p;
}

InitSpec uniform(double min, double max) {
  InitSpec init;
  init.distribution = InitDistribution::Uniform;
  init.min = min;
  init.max = max;
  init.given = true;
  return init;
}

template <typename T> std::vector<T> as(const std::vector<std::byte> &bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

float f(uint32_t bits) { return std::bit_cast<float>(bits); }

} // namespace

TEST(E4M3, EveryCodeDecodesAndEncodesBack) {
  for (int code = 0; code < 256; ++code) {
    const uint8_t bits = static_cast<uint8_t>(code);
    const float value = e4m3BitsToFloat(bits);
    if ((code & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(value)) << code;
      EXPECT_EQ(floatToE4M3Bits(value) & 0x7f, 0x7f) << code;
      continue;
    }
    EXPECT_EQ(floatToE4M3Bits(value), bits) << code << " = " << value;
  }
  // Monotone over the positive codes: each is above the one before.
  for (int code = 1; code < 0x7f; ++code) EXPECT_LT(e4m3BitsToFloat(code - 1), e4m3BitsToFloat(code)) << code;
}

TEST(E4M3, KnownValuesAndRounding) {
  EXPECT_EQ(e4m3BitsToFloat(0x38), 1.0f);
  EXPECT_EQ(e4m3BitsToFloat(0x7e), 448.0f);              // largest finite
  EXPECT_EQ(e4m3BitsToFloat(0x08), std::ldexp(1.0f, -6)); // smallest normal
  EXPECT_EQ(e4m3BitsToFloat(0x01), std::ldexp(1.0f, -9)); // smallest subnormal
  EXPECT_EQ(e4m3BitsToFloat(0xb8), -1.0f);
  EXPECT_EQ(floatToE4M3Bits(1.0625f), 0x38);  // a tie between 1 and 1.125 goes to even (1)
  EXPECT_EQ(floatToE4M3Bits(1.1875f), 0x3a);  // a tie between 1.125 and 1.25 goes to even (1.25)
  EXPECT_EQ(floatToE4M3Bits(1.07f), 0x39);    // above the tie
  EXPECT_EQ(floatToE4M3Bits(1.96875f), 0x40); // 1.875 + more than half an ulp carries into 2
  EXPECT_EQ(floatToE4M3Bits(460.0f), 0x7e);   // rounds to 448
  EXPECT_EQ(floatToE4M3Bits(470.0f), 0x7e);   // would round to 480, the NaN code: saturates
  EXPECT_EQ(floatToE4M3Bits(1e9f), 0x7e);
  EXPECT_EQ(floatToE4M3Bits(-std::numeric_limits<float>::infinity()), 0xfe);
  EXPECT_EQ(floatToE4M3Bits(std::ldexp(1.0f, -10)), 0x00);       // half the smallest subnormal: even 0
  EXPECT_EQ(floatToE4M3Bits(std::ldexp(1.5f, -10)), 0x01);       // above half
  EXPECT_EQ(floatToE4M3Bits(std::ldexp(3.0f, -10)), 0x02);       // 1.5 units: tie to even 2
  EXPECT_EQ(floatToE4M3Bits(std::ldexp(7.5f, -9)), 0x08);        // the largest subnormal's tie carries into 2^-6
  EXPECT_EQ(floatToE4M3Bits(-0.0f), 0x80);
}

TEST(E4M3, UniformInputsLieInTheRange) {
  std::vector<std::byte> bytes = generateInput(param("a", ElementType::E4M3, uniform(-2.0, 2.0)), 5000, 42, 0);
  ASSERT_EQ(bytes.size(), 5000u);
  int negative = 0;
  for (std::byte b : bytes) {
    float value = e4m3BitsToFloat(static_cast<uint8_t>(b));
    ASSERT_TRUE(value >= -2.0f && value < 2.0f) << value;
    negative += value < 0;
  }
  EXPECT_GT(negative, 2000);
  EXPECT_LT(negative, 3000);
}

TEST(Half, KnownBitPatterns) {
  EXPECT_EQ(floatToHalfBits(0.0f), 0x0000);
  EXPECT_EQ(floatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalfBits(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalfBits(0.1f), 0x2e66);
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7bff);                 // largest finite
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -14)), 0x0400);    // smallest normal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -24)), 0x0001);    // smallest subnormal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1023.0f, -24)), 0x03ff); // largest subnormal
  EXPECT_EQ(floatToHalfBits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(floatToHalfBits(-std::numeric_limits<float>::infinity()), 0xfc00);
  uint16_t nan = floatToHalfBits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  EXPECT_NE(floatToHalfBits(f(0x7f800001)) & 0x03ff, 0); // a signalling NaN with a low payload stays NaN
}

TEST(Half, RoundsToNearestEven) {
  // Ties between two halves go to the even mantissa.
  EXPECT_EQ(floatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);     // 1 + half ulp -> 1 (even)
  EXPECT_EQ(floatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02); // 1 + 1.5 ulp -> 1 + 2 ulp (even)
  EXPECT_EQ(floatToHalfBits(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3c01); // just above the tie
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -25)), 0x0000);             // half the smallest subnormal -> 0 (even)
  EXPECT_EQ(floatToHalfBits(std::ldexp(3.0f, -25)), 0x0002);             // 1.5 units -> 2 (even)
  EXPECT_EQ(floatToHalfBits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(floatToHalfBits(std::ldexp(2047.0f, -25)), 0x0400);          // 1023.5 units -> rounds up into the smallest normal
  // Overflow: 65520 is the tie between 65504 and 2^16, and goes to inf.
  EXPECT_EQ(floatToHalfBits(65519.996f), 0x7bff);
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalfBits(-1e6f), 0xfc00);
  EXPECT_EQ(floatToHalfBits(1e-10f), 0x0000);
}

TEST(Half, DecodesExactly) {
  EXPECT_EQ(halfBitsToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfBitsToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(halfBitsToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfBitsToFloat(0x8400), -std::ldexp(1.0f, -14));
  EXPECT_TRUE(std::isinf(halfBitsToFloat(0xfc00)));
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0x7e00)));
  // Every finite half survives a round trip through float.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    if ((bits & 0x7c00) == 0x7c00) continue;
    ASSERT_EQ(floatToHalfBits(halfBitsToFloat(static_cast<uint16_t>(bits))), bits) << std::hex << bits;
  }
}

TEST(Bf16, KnownBitPatternsAndRounding) {
  EXPECT_EQ(floatToBf16Bits(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16Bits(3.0f), 0x4040);
  EXPECT_EQ(floatToBf16Bits(-0.0f), 0x8000);
  EXPECT_EQ(floatToBf16Bits(f(0x40490fdb)), 0x4049); // pi rounds down
  EXPECT_EQ(floatToBf16Bits(f(0x3f808000)), 0x3f80); // tie -> even
  EXPECT_EQ(floatToBf16Bits(f(0x3f818000)), 0x3f82); // tie -> even (up)
  EXPECT_EQ(floatToBf16Bits(f(0x3f808001)), 0x3f81); // above the tie
  EXPECT_EQ(floatToBf16Bits(std::numeric_limits<float>::max()), 0x7f80); // overflow -> inf
  EXPECT_EQ(floatToBf16Bits(f(0x7f7f7fff)), 0x7f7f);                     // largest value that stays finite
  EXPECT_EQ(floatToBf16Bits(-std::numeric_limits<float>::infinity()), 0xff80);
  uint16_t nan = floatToBf16Bits(f(0x7f800001)); // NaN whose payload is all in the dropped half
  EXPECT_EQ(nan & 0x7f80, 0x7f80);
  EXPECT_NE(nan & 0x007f, 0);
  EXPECT_EQ(bf16BitsToFloat(0x4049), f(0x40490000));
}

TEST(Prng, MatchesTheReferenceSplitmix64AndXoshiro256) {
  // splitmix64 from state 0: first outputs of the reference implementation.
  uint64_t state = 0;
  EXPECT_EQ(splitmix64(state), 0xe220a8397b1dcdafull);
  EXPECT_EQ(splitmix64(state), 0x6e789e6aa1b965f4ull);
  Xoshiro256 a(42), b(42), c(43);
  uint64_t first = a.next();
  EXPECT_EQ(first, b.next());
  EXPECT_NE(first, c.next());
  for (int i = 0; i < 1000; ++i) {
    double u = a.nextDouble();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    ASSERT_LT(a.nextBelow(7), 7u);
  }
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
}

TEST(Inputs, DeterministicPerSeedAndDifferentPerTrialAndParam) {
  ParamSpec x = param("x", ElementType::F32, uniform(-4, 4));
  ParamSpec y = param("y", ElementType::F32, uniform(-4, 4));
  auto base = generateInput(x, 1000, 1234, 0);
  EXPECT_EQ(base.size(), 4000u);
  EXPECT_EQ(base, generateInput(x, 1000, 1234, 0));
  EXPECT_NE(base, generateInput(x, 1000, 1234, 1));
  EXPECT_NE(base, generateInput(y, 1000, 1234, 0));
  EXPECT_NE(base, generateInput(x, 1000, 1235, 0));
  // A prefix is stable under a larger count (the stream does not depend on count).
  auto longer = generateInput(x, 2000, 1234, 0);
  EXPECT_TRUE(std::equal(base.begin(), base.end(), longer.begin()));
  EXPECT_EQ(bufferSeed(1234, "x", 0), bufferSeed(1234, "x", 0));
  EXPECT_NE(bufferSeed(1234, "x", 0), bufferSeed(1234, "x", -1));
  EXPECT_EQ(generateInput(x, 0, 1, 0).size(), 0u);
}

TEST(Inputs, RangesAreRespectedInTheStoredType) {
  for (ElementType type : {ElementType::F32, ElementType::F64, ElementType::F16, ElementType::BF16}) {
    ParamSpec p = param("p", type, uniform(-1.0, 1.0));
    auto bytes = generateInput(p, 20000, 7, 0);
    double low = 1, high = -1;
    for (size_t i = 0; i < 20000; ++i) {
      double v;
      if (type == ElementType::F32) v = as<float>(bytes)[i];
      else if (type == ElementType::F64) v = as<double>(bytes)[i];
      else if (type == ElementType::F16) v = halfBitsToFloat(as<uint16_t>(bytes)[i]);
      else v = bf16BitsToFloat(as<uint16_t>(bytes)[i]);
      ASSERT_GE(v, -1.0) << elementTypeName(type);
      ASSERT_LT(v, 1.0) << elementTypeName(type);
      low = std::min(low, v), high = std::max(high, v);
    }
    EXPECT_LT(low, -0.99) << elementTypeName(type);
    EXPECT_GT(high, 0.98) << elementTypeName(type);
  }
  // Default integer ranges: [-1000, 1000) signed, [0, 1000) unsigned, whole range for 8 bits.
  auto ints = as<int32_t>(generateInput(param("i", ElementType::I32, defaultInit(ElementType::I32)), 20000, 7, 0));
  EXPECT_EQ(*std::min_element(ints.begin(), ints.end()), -1000);
  EXPECT_EQ(*std::max_element(ints.begin(), ints.end()), 999);
  auto uints = as<uint32_t>(generateInput(param("u", ElementType::U32, defaultInit(ElementType::U32)), 20000, 7, 0));
  EXPECT_EQ(*std::min_element(uints.begin(), uints.end()), 0u);
  EXPECT_EQ(*std::max_element(uints.begin(), uints.end()), 999u);
  auto bytes = as<int8_t>(generateInput(param("b", ElementType::I8, defaultInit(ElementType::I8)), 20000, 7, 0));
  EXPECT_EQ(*std::min_element(bytes.begin(), bytes.end()), -128);
  EXPECT_EQ(*std::max_element(bytes.begin(), bytes.end()), 127);
}

TEST(Inputs, OtherDistributions) {
  InitSpec normal;
  normal.distribution = InitDistribution::Normal;
  normal.mean = 10;
  normal.stddev = 2;
  auto values = as<double>(generateInput(param("n", ElementType::F64, normal), 100001, 3, 0));
  double sum = 0, squares = 0;
  for (double v : values) sum += v, squares += v * v;
  double mean = sum / values.size(), variance = squares / values.size() - mean * mean;
  EXPECT_NEAR(mean, 10.0, 0.05);
  EXPECT_NEAR(std::sqrt(variance), 2.0, 0.05);

  InitSpec constant;
  constant.distribution = InitDistribution::Const;
  constant.value = 1.5;
  auto halves = as<uint16_t>(generateInput(param("c", ElementType::F16, constant), 3, 3, 0));
  EXPECT_EQ(halves, (std::vector<uint16_t>{0x3e00, 0x3e00, 0x3e00}));

  InitSpec iota;
  iota.distribution = InitDistribution::Iota;
  EXPECT_EQ(as<int32_t>(generateInput(param("i", ElementType::I32, iota), 4, 3, 0)), (std::vector<int32_t>{0, 1, 2, 3}));
  auto wrapped = as<uint8_t>(generateInput(param("w", ElementType::U8, iota), 258, 3, 0));
  EXPECT_EQ(wrapped[257], 1); // integer iota wraps modulo 2^bits

  InitSpec mod;
  mod.distribution = InitDistribution::IndexMod;
  mod.modulus = 3;
  EXPECT_EQ(as<float>(generateInput(param("m", ElementType::F32, mod), 5, 3, 0)),
            (std::vector<float>{0, 1, 2, 0, 1}));

  InitSpec ints;
  ints.distribution = InitDistribution::Int;
  ints.min = -2;
  ints.max = 3;
  auto floats = as<float>(generateInput(param("f", ElementType::F32, ints), 1000, 3, 0));
  for (float v : floats) {
    ASSERT_EQ(v, std::floor(v));
    ASSERT_GE(v, -2);
    ASSERT_LE(v, 3); // int bounds are inclusive
  }
  EXPECT_EQ(*std::max_element(floats.begin(), floats.end()), 3.0f);

  // The whole u64 range (a span of 2^64) and a one-value range.
  InitSpec all;
  all.distribution = InitDistribution::Int;
  all.min = 0;
  all.max = 18446744073709551615.0;
  auto wide = as<uint64_t>(generateInput(param("w64", ElementType::U64, all), 1000, 3, 0));
  EXPECT_GT(*std::max_element(wide.begin(), wide.end()), uint64_t{1} << 63);
  InitSpec one;
  one.distribution = InitDistribution::Int;
  one.min = one.max = -5;
  EXPECT_EQ(as<int64_t>(generateInput(param("one", ElementType::I64, one), 2, 3, 0)), (std::vector<int64_t>{-5, -5}));
}

TEST(Inputs, ScalarArguments) {
  ParamSpec n;
  n.name = "n";
  n.type = ElementType::I32;
  n.role = ParamRole::Scalar;
  n.value = *parseExpression("n * 2");
  Result<std::vector<std::byte>> bytes = scalarArgument(n, {{"n", 21}});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(as<int32_t>(*bytes), (std::vector<int32_t>{42}));
  Result<std::vector<std::byte>> tooBig = scalarArgument(n, {{"n", int64_t{1} << 31}});
  ASSERT_FALSE(tooBig.ok());
  EXPECT_NE(tooBig.error().message.find("does not fit i32"), std::string::npos);

  ParamSpec a;
  a.name = "a";
  a.type = ElementType::BF16;
  a.role = ParamRole::Scalar;
  a.floatValue = 2.5;
  Result<std::vector<std::byte>> scalar = scalarArgument(a, {});
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(as<uint16_t>(*scalar), (std::vector<uint16_t>{0x4020}));
}

// Recorded results name a seed; these values must never change, or old results stop reproducing.
TEST(Inputs, PinnedValuesForSeed1234) {
  // Element i's draws are SplitMix64 at counter i * 64 + k of the buffer's
  // stream: a device kernel must make these same bytes.
  ParamSpec x = param("x", ElementType::F32, uniform(-4, 4));
  EXPECT_EQ(as<uint32_t>(generateInput(x, 3, 1234, 0)), (std::vector<uint32_t>{0x4000696c, 0x4000f484, 0x3e3b3fc0}));
  ParamSpec i = param("i", ElementType::I32, defaultInit(ElementType::I32));
  EXPECT_EQ(as<int32_t>(generateInput(i, 3, 1234, 0)), (std::vector<int32_t>{-241, -719, -913}));
  const uint64_t stream = bufferSeed(1234, "x", 0);
  uint64_t state = stream + 65 * 0x9e3779b97f4a7c15ull; // element 1, draw 1
  EXPECT_EQ(counterDraw(stream, 1, 1), splitmix64(state));
}

TEST(Inputs, TheSameBytesOnAnyNumberOfThreads) {
  // Three chunks and a tail, an odd count (a normal pair cut by the end).
  const int64_t count = (int64_t{1} << 19) + (int64_t{1} << 17) + 3;
  InitSpec normal;
  normal.distribution = InitDistribution::Normal;
  normal.mean = 1;
  normal.stddev = 2;
  for (const ParamSpec &p : {param("u", ElementType::F16, uniform(-1, 1)), param("n", ElementType::F32, normal),
                             param("i", ElementType::I8, defaultInit(ElementType::I8))}) {
    std::vector<std::byte> one = generateInput(p, count, 99, 2, 1);
    EXPECT_EQ(one, generateInput(p, count, 99, 2, 3)) << p.name;
    EXPECT_EQ(one, generateInput(p, count, 99, 2, 0)) << p.name;
  }
}
