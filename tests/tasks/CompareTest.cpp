// Output comparison: tolerances, NaN and infinity rules, integers, the first mismatch.
#include "tasks/Compare.h"

#include "tasks/Inputs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace ptxforge;
using namespace ptxforge::tasks;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Tolerance tolerance(double atol, double rtol, bool atolGiven = true) {
  Tolerance t;
  t.atol = atol;
  t.rtol = rtol;
  t.atolGiven = atolGiven;
  t.rtolGiven = true;
  return t;
}

} // namespace

TEST(Compare, WithinAndOutsideTolerance) {
  std::vector<float> want = {1.0f, 100.0f, 0.0f, -3.0f};
  std::vector<float> good = {1.0f + 1e-6f, 100.0f + 5e-4f, 5e-6f, -3.0f};
  CompareResult ok = compareBuffers(ElementType::F32, good.data(), want.data(), 4, tolerance(1e-5, 1e-5));
  EXPECT_TRUE(ok.passed);
  EXPECT_EQ(ok.mismatches, 0u);
  EXPECT_NEAR(ok.maxAbsError, 5e-4, 1e-5);
  EXPECT_EQ(ok.maxAbsErrorIndex, 1u);
  EXPECT_FALSE(ok.firstMismatch.has_value());

  std::vector<float> bad = {1.0f, 100.1f, 0.0f, -2.5f};
  CompareResult wrong = compareBuffers(ElementType::F32, bad.data(), want.data(), 4, tolerance(1e-5, 1e-5));
  EXPECT_FALSE(wrong.passed);
  EXPECT_EQ(wrong.mismatches, 2u);
  ASSERT_TRUE(wrong.firstMismatch.has_value());
  EXPECT_EQ(*wrong.firstMismatch, 1u);
  EXPECT_EQ(wrong.firstGotText, "100.1");
  EXPECT_EQ(wrong.firstWantText, "100");
  EXPECT_FLOAT_EQ(static_cast<float>(wrong.firstGot), 100.1f);
  EXPECT_NEAR(wrong.maxRelError, 0.5 / 3.0, 1e-6);
  EXPECT_EQ(describe(wrong).substr(0, 61), "2 of 4 elements differ; first at [1]: got 100.1, want 100 (ma");
}

TEST(Compare, NaNNeverPassesAndMatchesOnlyNaN) {
  std::vector<float> want = {1.0f, kNaN, kNaN, kInf, -kInf, kInf};
  std::vector<float> got = {kNaN, kNaN, 0.0f, kInf, -kInf, 3e38f};
  CompareResult result = compareBuffers(ElementType::F32, got.data(), want.data(), 6, tolerance(1e30, 1e30));
  EXPECT_EQ(result.mismatches, 3u); // NaN for 1.0 (even with a huge tolerance), 0 for NaN, finite for inf
  EXPECT_EQ(result.nanInGot, 1u);
  EXPECT_EQ(*result.firstMismatch, 0u);
  EXPECT_EQ(result.firstGotText, "nan");
  EXPECT_EQ(result.firstWantText, "1");
  EXPECT_NE(describe(result).find("1 NaN where a number was expected"), std::string::npos);
}

TEST(Compare, IntegersAreExactUnlessAtolIsGiven) {
  std::vector<int32_t> want = {5, -7, 1000};
  std::vector<int32_t> got = {5, -6, 1000};
  CompareResult exact = compareBuffers(ElementType::I32, got.data(), want.data(), 3, tolerance(10, 10, false));
  EXPECT_FALSE(exact.passed);
  EXPECT_EQ(*exact.firstMismatch, 1u);
  EXPECT_EQ(exact.firstGotText, "-6");
  EXPECT_EQ(exact.firstWantText, "-7");
  EXPECT_EQ(exact.maxAbsError, 1.0);
  CompareResult loose = compareBuffers(ElementType::I32, got.data(), want.data(), 3, tolerance(1, 0));
  EXPECT_TRUE(loose.passed);

  // 64-bit values above 2^53 that a double cannot tell apart are still compared exactly.
  std::vector<uint64_t> bigWant = {(uint64_t{1} << 60) + 1};
  std::vector<uint64_t> bigGot = {(uint64_t{1} << 60)};
  CompareResult big = compareBuffers(ElementType::U64, bigGot.data(), bigWant.data(), 1, tolerance(0, 0, false));
  EXPECT_FALSE(big.passed);
  EXPECT_EQ(big.firstWantText, "1152921504606846977");
}

TEST(Compare, HalfAndBf16AreDecoded) {
  std::vector<uint16_t> want = {floatToHalfBits(1.0f), floatToHalfBits(2.0f)};
  std::vector<uint16_t> got = {floatToHalfBits(1.0009766f), floatToHalfBits(2.5f)}; // 1 + 1 ulp, 2.5
  CompareResult half = compareBuffers(ElementType::F16, got.data(), want.data(), 2, defaultTolerance(ElementType::F16));
  EXPECT_EQ(half.mismatches, 1u);
  EXPECT_EQ(*half.firstMismatch, 1u);
  EXPECT_EQ(half.firstGotText, "2.5");
  EXPECT_EQ(half.firstWantText, "2");

  std::vector<uint16_t> bfWant = {floatToBf16Bits(3.0f)};
  std::vector<uint16_t> bfGot = {floatToBf16Bits(3.015625f)}; // one bf16 ulp above 3
  EXPECT_TRUE(compareBuffers(ElementType::BF16, bfGot.data(), bfWant.data(), 1, defaultTolerance(ElementType::BF16)).passed);
  EXPECT_EQ(formatElement(ElementType::BF16, bfGot.data(), 0), "3.015625");
}

TEST(Compare, E4M3IsDecoded) {
  const uint8_t want[] = {0x38, 0x40, 0x7e};  // 1, 2, 448
  const uint8_t got[] = {0x39, 0x48, 0x7f};   // 1.125 (one ulp), 4, NaN
  CompareResult result = compareBuffers(ElementType::E4M3, got, want, 3, defaultTolerance(ElementType::E4M3));
  EXPECT_EQ(result.mismatches, 2u);
  EXPECT_EQ(*result.firstMismatch, 1u);
  EXPECT_EQ(result.firstGotText, "4");
  EXPECT_EQ(formatElement(ElementType::E4M3, got, 0), "1.125");
  EXPECT_EQ(formatElement(ElementType::E4M3, got, 2), "nan");
}

TEST(Compare, EmptyBuffersPass) {
  CompareResult result = compareBuffers(ElementType::F64, nullptr, nullptr, 0, tolerance(0, 0));
  EXPECT_TRUE(result.passed);
  EXPECT_EQ(describe(result), "ok: 0 elements, max abs 0, max rel 0");
}

TEST(Compare, ChunkedOnManyThreadsGivesTheOnePassResult) {
  const size_t count = (size_t{1} << 20) + 12345;
  std::vector<float> want(count), got(count);
  for (size_t i = 0; i < count; ++i) want[i] = got[i] = static_cast<float>(i % 977) * 0.5f;
  // Mismatches in three chunks, the largest error twice (the first one counts), a NaN.
  got[300000] += 4.0f;
  got[700000] += 9.0f;
  got[900000] += 9.0f;
  got[count - 1] = std::numeric_limits<float>::quiet_NaN();
  const Tolerance tight = tolerance(1e-5, 1e-5);
  CompareResult one = compareBuffers(ElementType::F32, got.data(), want.data(), count, tight, 1);
  for (unsigned threads : {2u, 5u, 0u}) {
    CompareResult many = compareBuffers(ElementType::F32, got.data(), want.data(), count, tight, threads);
    EXPECT_EQ(many.mismatches, 4u);
    EXPECT_EQ(many.mismatches, one.mismatches);
    EXPECT_EQ(many.nanInGot, 1u);
    EXPECT_EQ(many.firstMismatch, std::optional<size_t>(300000));
    EXPECT_EQ(many.maxAbsErrorIndex, 700000u);
    EXPECT_EQ(many.maxAbsErrorIndex, one.maxAbsErrorIndex);
    EXPECT_DOUBLE_EQ(many.maxRelError, one.maxRelError);
    EXPECT_EQ(describe(many), describe(one));
  }
}
