// The emulator's numerics against independent references: small formats are
// checked by bracketing the exact value between enumerated representable
// values, f32/f64 directed rounding by comparing the exact result (as a
// double-double) with the neighbours of the nearest value, integer ops against
// the PTX ISA's own pseudo-code. Vectors marked "H200" were recorded on an
// NVIDIA H200 (sm_90) and pin behaviour the ISA leaves open.
#include "emu/Arith.h"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace ptxforge::emu;

namespace {

constexpr Rounding kFloatModes[] = {Rounding::Rn, Rounding::Rz, Rounding::Rm, Rounding::Rp};

uint32_t bits(float value) { return std::bit_cast<uint32_t>(value); }
uint64_t bits(double value) { return std::bit_cast<uint64_t>(value); }
float f32(uint32_t pattern) { return std::bit_cast<float>(pattern); }
double f64(uint64_t pattern) { return std::bit_cast<double>(pattern); }

const char *modeName(Rounding r) {
  switch (r) {
  case Rounding::Rn: return "rn";
  case Rounding::Rz: return "rz";
  case Rounding::Rm: return "rm";
  case Rounding::Rp: return "rp";
  case Rounding::Rna: return "rna";
  default: return "?";
  }
}

// ---------------------------------------------------------------------------
// Reference rounding into a small format by enumeration

/// The non-negative finite values of a small format, in encoding order, plus
/// one sentinel: the value the next encoding would have (2^(emax+1) for f16),
/// whose index is the infinity (or, for e4m3, NaN) encoding.
struct ValueTable {
  std::vector<double> values;
  uint32_t signBit;
  uint32_t sentinel() const { return uint32_t(values.size() - 1); }
};

/// Decodes sign-less `pattern` of a format with `expBits`/`manBits` and bias
/// 2^(expBits-1)-1 by ldexp (independent of the emulator's bit tricks).
double decodeSmall(uint32_t pattern, int expBits, int manBits) {
  int bias = (1 << (expBits - 1)) - 1;
  int exponent = int(pattern >> manBits);
  uint32_t fraction = pattern & ((1u << manBits) - 1);
  if (exponent == 0) return std::ldexp(double(fraction), 1 - bias - manBits);
  return std::ldexp(double((1u << manBits) + fraction), exponent - bias - manBits);
}

ValueTable makeTable(int expBits, int manBits, uint32_t sentinel) {
  ValueTable table;
  for (uint32_t i = 0; i <= sentinel; ++i) table.values.push_back(decodeSmall(i, expBits, manBits));
  table.signBit = 1u << (expBits + manBits);
  return table;
}

const ValueTable &f16Table() {
  static const ValueTable table = makeTable(5, 10, 0x7c00);
  return table;
}
const ValueTable &bf16Table() {
  static const ValueTable table = makeTable(8, 7, 0x7f80);
  return table;
}
const ValueTable &e4m3Table() {
  static const ValueTable table = makeTable(4, 3, 0x7f); // 0x7f would be 480: the NaN encoding
  return table;
}
const ValueTable &e5m2Table() {
  static const ValueTable table = makeTable(5, 2, 0x7c);
  return table;
}

/// sign(hi + lo - t) for an exact value held as a double-double (|lo| <= ulp(hi)/2).
int compareExact(double hi, double lo, double t) {
  double difference = (hi - t) + lo;
  return difference > 0 ? 1 : difference < 0 ? -1 : 0;
}

/// The encoding of the exact value hi + lo rounded into `table`'s format.
uint32_t referenceRound(const ValueTable &table, double hi, double lo, Rounding mode) {
  bool negative = hi < 0 || (hi == 0 && std::signbit(hi));
  if (negative) {
    hi = -hi;
    lo = -lo;
  }
  uint32_t sign = negative ? table.signBit : 0;
  const std::vector<double> &v = table.values;
  uint32_t top = table.sentinel();
  bool awayFromZeroDirected = (mode == Rounding::Rp && !negative) || (mode == Rounding::Rm && negative);
  if (compareExact(hi, lo, v[top]) >= 0) { // at or beyond the first unrepresentable binade
    bool toInfinity = mode == Rounding::Rn || mode == Rounding::Rna || awayFromZeroDirected;
    return sign | (toInfinity ? top : top - 1);
  }
  // Largest i with v[i] <= value.
  uint32_t low = 0, high = top; // v[low] <= value < v[high]
  while (high - low > 1) {
    uint32_t middle = (low + high) / 2;
    (compareExact(hi, lo, v[middle]) >= 0 ? low : high) = middle;
  }
  if (compareExact(hi, lo, v[low]) == 0) return sign | low;
  int versusMiddle = compareExact(hi, lo, (v[low] + v[high]) / 2); // midpoints are exact doubles
  switch (mode) {
  case Rounding::Rn: return sign | (versusMiddle < 0 ? low : versusMiddle > 0 ? high : (low % 2 == 0 ? low : high));
  case Rounding::Rna: return sign | (versusMiddle < 0 ? low : high);
  case Rounding::Rz: return sign | low;
  default: return sign | (awayFromZeroDirected ? high : low);
  }
}

// ---------------------------------------------------------------------------
// Reference f32/f64 rounding of an exact double-double value

/// Exact a + b as hi + lo (Knuth's TwoSum).
void twoSum(double a, double b, double &hi, double &lo) {
  hi = a + b;
  double bVirtual = hi - a;
  lo = (a - (hi - bVirtual)) + (b - bVirtual);
}

/// The f32 that the exact value hi + lo rounds to in `mode`: bracket it
/// between two adjacent floats (found from the host's nearest conversion and
/// nextafter, no host rounding mode involved) and decide by comparison, with
/// infinity standing one step past max-finite at 2^128.
float referenceF32(double hi, double lo, Rounding mode) {
  float infinity = std::numeric_limits<float>::infinity();
  float candidate = float(hi);
  if (std::isinf(candidate)) candidate = std::copysign(std::numeric_limits<float>::max(), hi);
  int side = compareExact(hi, lo, double(candidate));
  if (side == 0) return candidate;
  float other = std::nextafter(candidate, side > 0 ? infinity : -infinity);
  float below = side > 0 ? candidate : other, above = side > 0 ? other : candidate;
  auto asDouble = [](float value) { return std::isinf(value) ? std::copysign(0x1p128, value) : double(value); };
  switch (mode) {
  case Rounding::Rz: return hi > 0 ? below : above;
  case Rounding::Rm: return below;
  case Rounding::Rp: return above;
  default: {
    int versusMiddle = compareExact(hi, lo, (asDouble(below) + asDouble(above)) / 2);
    if (versusMiddle != 0) return versusMiddle < 0 ? below : above;
    return (bits(below) & 1) == 0 ? below : above; // tie: even significand (infinity counts as even)
  }
  }
}

/// IEEE 754's sign for an exact zero sum x + y: the addends' common sign, else
/// +0, except -0 under round-down.
double exactZeroSum(double x, double y, Rounding mode) {
  if (x == 0 && y == 0 && std::signbit(x) == std::signbit(y)) return x;
  return mode == Rounding::Rm ? -0.0 : 0.0;
}

/// The same for f64: hi is already the nearest double.
double referenceF64(double hi, double lo, Rounding mode) {
  if (lo == 0 || mode == Rounding::Rn) return hi;
  double infinity = std::numeric_limits<double>::infinity();
  double below = lo > 0 ? hi : std::nextafter(hi, -infinity);
  double above = lo > 0 ? std::nextafter(hi, infinity) : hi;
  switch (mode) {
  case Rounding::Rz: return hi > 0 ? below : above;
  case Rounding::Rm: return below;
  case Rounding::Rp: return above;
  default: return hi;
  }
}

std::vector<float> specialFloats() {
  std::vector<uint32_t> patterns = {0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007fffff, 0x807fffff, 0x00800000,
                                    0x80800000, 0x3f800000, 0xbf800000, 0x3f7fffff, 0x3f800001, 0x7f7fffff, 0xff7fffff,
                                    0x7f000000, 0x3fc00000, 0x40490fdb, 0x00400000, 0x0ffff000, 0x1f800000, 0x5f000000};
  std::vector<float> values;
  for (uint32_t p : patterns) values.push_back(f32(p));
  return values;
}

/// Random finite floats spread over all binades, with many near ties.
std::vector<float> randomFloats(size_t count, uint32_t seed, int minExponent = -149, int maxExponent = 127) {
  std::mt19937 rng(seed);
  std::vector<float> values;
  while (values.size() < count) {
    int exponent = minExponent + int(rng() % uint32_t(maxExponent - minExponent + 1));
    uint32_t fraction = rng() & 0x7fffff;
    if (rng() % 4 == 0) fraction &= ~0xfffu; // short significands make exact results and ties likely
    float value = std::ldexp(float(0x800000 | fraction), exponent - 23);
    if (exponent < -126) value = std::ldexp(float(fraction), -149); // subnormal
    if (!std::isfinite(value)) continue;
    values.push_back(rng() % 2 ? -value : value);
  }
  return values;
}

bool isNaN16(uint16_t h) { return (h & 0x7fff) > 0x7c00; }
bool isNaNBf16(uint16_t h) { return (h & 0x7fff) > 0x7f80; }

} // namespace

// ---------------------------------------------------------------------------
// Types

TEST(EmuTypes, ParsesNamesAndSizes) {
  EXPECT_EQ(parseDType("f32"), DType::F32);
  EXPECT_EQ(parseDType("pred"), DType::Pred);
  EXPECT_EQ(parseDType("bf16x2"), DType::BF16x2);
  EXPECT_EQ(parseDType("e5m2x2"), DType::E5M2x2);
  EXPECT_EQ(parseDType("f33"), DType::None);
  EXPECT_EQ(parseDType(".f32"), DType::None);
  EXPECT_EQ(parseRounding("rn"), Rounding::Rn);
  EXPECT_EQ(parseRounding("rzi"), Rounding::Rzi);
  EXPECT_EQ(parseRounding("rna"), Rounding::Rna);
  EXPECT_EQ(parseRounding("rni"), Rounding::Rni);
  EXPECT_EQ(parseRounding("sat"), Rounding::None);
  EXPECT_STREQ(dtypeName(DType::F32), "f32");
  EXPECT_STREQ(dtypeName(DType::E4M3x2), "e4m3x2");
  EXPECT_EQ(dtypeBits(DType::Pred), 1u);
  EXPECT_EQ(dtypeBits(DType::F16x2), 32u);
  EXPECT_EQ(dtypeBits(DType::B128), 128u);
  EXPECT_EQ(dtypeBits(DType::E5M2x2), 16u);
  EXPECT_EQ(dtypeBytes(DType::Pred), 1u);
  for (const char *name : {"b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16",
                           "f16x2", "bf16", "bf16x2", "tf32", "f32", "f64", "e4m3x2", "e5m2x2", "pred"})
    EXPECT_STREQ(dtypeName(parseDType(name)), name) << name;
}

// ---------------------------------------------------------------------------
// f16

TEST(EmuF16, EveryPatternRoundTripsThroughF32) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float widened = f16ToF32(uint16_t(h));
    if (isNaN16(uint16_t(h))) {
      EXPECT_EQ(bits(widened), 0x7fffffffu) << std::hex << h; // cvt.f32.f16: canonical NaN (H200)
      continue;
    }
    double expected = decodeSmall(h & 0x7fff, 5, 10);
    if ((h & 0x7fff) == 0x7c00) expected = std::numeric_limits<double>::infinity();
    EXPECT_EQ(double(widened), (h & 0x8000) ? -expected : expected) << std::hex << h;
    EXPECT_EQ(std::signbit(widened), (h & 0x8000) != 0) << std::hex << h;
    for (Rounding r : kFloatModes) EXPECT_EQ(f32ToF16(widened, r), h) << std::hex << h << " " << modeName(r);
    EXPECT_EQ(f64ToF16(double(widened), Rounding::Rn), h) << std::hex << h;
  }
}

TEST(EmuF16, NarrowingFromF32MatchesReferenceAtEveryTieAndBoundary) {
  const ValueTable &table = f16Table();
  // For every f16 magnitude: the midpoint to the next value and one f32 ulp
  // either side, which covers every tie, subnormal step and the overflow edge.
  for (uint32_t i = 0; i < table.sentinel(); ++i) {
    float middle = float((table.values[i] + table.values[i + 1]) / 2); // exact in f32
    for (float x : {middle, std::nextafter(middle, 0.0f), std::nextafter(middle, 1e30f), float(table.values[i])}) {
      for (float signedX : {x, -x}) {
        for (Rounding r : kFloatModes) {
          uint16_t expected = uint16_t(referenceRound(table, signedX, 0, r));
          ASSERT_EQ(f32ToF16(signedX, r), expected)
              << std::hexfloat << signedX << " " << modeName(r) << " (f16 index " << std::hex << i << ")";
          ASSERT_EQ(convert(DType::F16, DType::F32, bits(signedX), r, false, false), expected);
        }
      }
    }
  }
}

TEST(EmuF16, NarrowingFromF32MatchesReferenceOnASweepOfAllFloats) {
  const ValueTable &table = f16Table();
  for (uint64_t pattern = 0; pattern < (uint64_t(1) << 32); pattern += 16411) {
    float x = f32(uint32_t(pattern));
    if (std::isnan(x)) continue;
    for (Rounding r : kFloatModes)
      ASSERT_EQ(f32ToF16(x, r), uint16_t(referenceRound(table, x, 0, r))) << std::hexfloat << x << " " << modeName(r);
  }
}

TEST(EmuF16, KnownValues) {
  EXPECT_EQ(f32ToF16(65504.0f, Rounding::Rn), 0x7bff);
  EXPECT_EQ(f32ToF16(65519.996f, Rounding::Rn), 0x7bff);
  EXPECT_EQ(f32ToF16(65520.0f, Rounding::Rn), 0x7c00); // the tie to even is infinity
  EXPECT_EQ(f32ToF16(1e6f, Rounding::Rz), 0x7bff);     // directed overflow: max-finite toward zero
  EXPECT_EQ(f32ToF16(1e6f, Rounding::Rm), 0x7bff);
  EXPECT_EQ(f32ToF16(1e6f, Rounding::Rp), 0x7c00);
  EXPECT_EQ(f32ToF16(-1e6f, Rounding::Rp), 0xfbff);
  EXPECT_EQ(f32ToF16(-1e6f, Rounding::Rm), 0xfc00);
  EXPECT_EQ(f32ToF16(0x1p-24f, Rounding::Rn), 0x0001); // smallest subnormal
  EXPECT_EQ(f32ToF16(0x1p-25f, Rounding::Rn), 0x0000); // tie to even: zero
  EXPECT_EQ(f32ToF16(0x1.8p-24f, Rounding::Rn), 0x0002);
  EXPECT_EQ(f32ToF16(0x1p-30f, Rounding::Rp), 0x0001);
  EXPECT_EQ(f32ToF16(-0x1p-30f, Rounding::Rp), 0x8000);
  EXPECT_EQ(f32ToF16(-0.0f, Rounding::Rn), 0x8000);
  EXPECT_EQ(f32ToF16(std::numeric_limits<float>::infinity(), Rounding::Rz), 0x7c00); // infinity stays infinite
  EXPECT_EQ(f32ToF16(1.0f + 0x1p-11f, Rounding::Rn), 0x3c00); // tie, even
  EXPECT_EQ(f32ToF16(1.0f + 3 * 0x1p-11f, Rounding::Rn), 0x3c02);
}

TEST(EmuF16, NaNBecomesTheCanonicalNaN) {
  // H200: cvt.f16.f32 of any NaN (either sign, any payload) is 0x7fff.
  for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fa12345u}) {
    EXPECT_EQ(f32ToF16(f32(nan), Rounding::Rn), 0x7fff);
    EXPECT_EQ(f32ToF16(f32(nan), Rounding::Rz), 0x7fff);
  }
  // From f64 the sign and top payload bits survive, quieted (H200: cvt.rp.f16.f64).
  EXPECT_EQ(f64ToF16(f64(0xfff8000000000000), Rounding::Rn), 0xfe00);
  EXPECT_EQ(f64ToF16(f64(0x7ff0000000000001), Rounding::Rp), 0x7e00);
}

TEST(EmuF16, NarrowingFromF64RoundsOnce) {
  // Just above the tie between 1 and 1 + 2^-10: via f32 the excess is lost and
  // the tie goes to even (1.0); rounding once gives 1 + 2^-10.
  double x = 1.0 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(f32ToF16(float(x), Rounding::Rn), 0x3c00);
  EXPECT_EQ(f64ToF16(x, Rounding::Rn), 0x3c01);
  EXPECT_EQ(convert(DType::F16, DType::F64, bits(x), Rounding::Rn, false, false), 0x3c01u);
  const ValueTable &table = f16Table();
  for (uint32_t i = 0; i < table.sentinel(); ++i) {
    double middle = (table.values[i] + table.values[i + 1]) / 2;
    for (double x2 : {middle, std::nextafter(middle, 0.0), std::nextafter(middle, 1e300), middle + 0x1p-60})
      for (Rounding r : kFloatModes)
        ASSERT_EQ(f64ToF16(-x2, r), uint16_t(referenceRound(table, -x2, 0, r))) << std::hexfloat << x2 << modeName(r);
  }
}

// ---------------------------------------------------------------------------
// bf16 and tf32

TEST(EmuBf16, EveryPatternRoundTripsThroughF32) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float widened = bf16ToF32(uint16_t(b));
    EXPECT_EQ(bits(widened), b << 16) << std::hex << b; // a plain shift, NaN payloads too (H200)
    if (isNaNBf16(uint16_t(b))) {
      EXPECT_EQ(f32ToBf16(widened, Rounding::Rn), 0x7fff);
      continue;
    }
    for (Rounding r : kFloatModes) EXPECT_EQ(f32ToBf16(widened, r), b) << std::hex << b << modeName(r);
  }
}

TEST(EmuBf16, NarrowingMatchesReference) {
  const ValueTable &table = bf16Table();
  for (uint32_t i = 0; i < table.sentinel(); i += 3) {
    float middle = float((table.values[i] + table.values[i + 1]) / 2);
    for (float x : {middle, std::nextafter(middle, 0.0f), std::nextafter(middle, 1e30f)})
      for (Rounding r : {Rounding::Rn, Rounding::Rz, Rounding::Rm, Rounding::Rp, Rounding::Rna}) {
        ASSERT_EQ(f32ToBf16(-x, r), uint16_t(referenceRound(table, -x, 0, r))) << std::hexfloat << x << modeName(r);
        ASSERT_EQ(f64ToBf16(double(x) + 0x1p-200 * x, r), uint16_t(referenceRound(table, double(x) + 0x1p-200 * x, 0, r)));
      }
  }
  for (uint64_t pattern = 0; pattern < (uint64_t(1) << 32); pattern += 65537) {
    float x = f32(uint32_t(pattern));
    if (std::isnan(x)) continue;
    for (Rounding r : kFloatModes) ASSERT_EQ(f32ToBf16(x, r), uint16_t(referenceRound(table, x, 0, r)));
  }
  EXPECT_EQ(f32ToBf16(f32(0x7f7fffff), Rounding::Rn), 0x7f80); // max f32 rounds up to infinity
  EXPECT_EQ(f32ToBf16(f32(0x7f7fffff), Rounding::Rz), 0x7f7f);
  EXPECT_EQ(f32ToBf16(f32(0x00000001), Rounding::Rp), 0x0001); // bf16 keeps f32's subnormal range
}

TEST(EmuTf32, RoundsAndClearsTheLowBits) {
  EXPECT_EQ(f32ToTf32(f32(0x3f801000), Rounding::Rna), 0x3f802000u); // tie, away
  EXPECT_EQ(f32ToTf32(f32(0x3f801000), Rounding::Rn), 0x3f800000u);  // tie, even
  EXPECT_EQ(f32ToTf32(f32(0x3f803000), Rounding::Rn), 0x3f804000u);
  EXPECT_EQ(f32ToTf32(f32(0xbf801fff), Rounding::Rz), 0xbf800000u);
  EXPECT_EQ(f32ToTf32(f32(0x7f7ff000), Rounding::Rna), 0x7f800000u); // overflow to infinity
  EXPECT_EQ(cvtF32ToTf32(f32(0x7f7ff000), Rounding::Rna, false, true), 0x7f7fe000u);
  EXPECT_EQ(cvtF32ToTf32(-2.0f, Rounding::Rn, true, false), 0u); // .relu
  // H200: .rna just clears a NaN's low bits (a small payload becomes infinity);
  // .rn/.rz give 0x7fffe000; .rna.satfinite steps an all-ones exponent down a unit.
  EXPECT_EQ(f32ToTf32(f32(0xff9a9a92), Rounding::Rna), 0xff9a8000u);
  EXPECT_EQ(f32ToTf32(f32(0x7f800001), Rounding::Rna), 0x7f800000u);
  EXPECT_EQ(f32ToTf32(f32(0xffc00000), Rounding::Rn), 0x7fffe000u);
  EXPECT_EQ(f32ToTf32(f32(0x7fa12345), Rounding::Rz), 0x7fffe000u);
  EXPECT_EQ(cvtF32ToTf32(f32(0x7fc00000), Rounding::Rna, false, true), 0x7fbfe000u);
  EXPECT_EQ(cvtF32ToTf32(std::numeric_limits<float>::infinity(), Rounding::Rna, false, true), 0x7f7fe000u);
}

// ---------------------------------------------------------------------------
// fp8 and the packed cvt forms

TEST(EmuFp8, DecodesEveryPattern) {
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t magnitude = b & 0x7f;
    double sign = (b & 0x80) ? -1.0 : 1.0;
    uint16_t e4m3 = e4m3ToF16(uint8_t(b));
    if (magnitude == 0x7f) {
      EXPECT_EQ(e4m3, 0x7fff) << b; // the only e4m3 NaN; no infinities
    } else {
      EXPECT_EQ(double(f16ToF32(e4m3)), sign * decodeSmall(magnitude, 4, 3)) << b;
      EXPECT_EQ((e4m3 & 0x8000) != 0, (b & 0x80) != 0) << b;
    }
    uint16_t e5m2 = e5m2ToF16(uint8_t(b));
    if (magnitude > 0x7c) EXPECT_EQ(e5m2, 0x7fff) << b;
    else EXPECT_EQ(e5m2, uint16_t(b << 8)) << b; // e5m2 is the top byte of an f16
  }
  EXPECT_EQ(e4m3x2ToF16x2(0x7ec0, false), 0x5f00c000u); // 448 and -2; a[15:8] -> d[31:16]
  EXPECT_EQ(e4m3x2ToF16x2(0xb83c, true), 0x00003e00u);  // .relu: -1 -> 0, 1.5 stays
}

TEST(EmuFp8, EncodesWithSatfinite) {
  for (const ValueTable *table : {&e4m3Table(), &e5m2Table()}) {
    bool isE4M3 = table == &e4m3Table();
    for (uint32_t i = 0; i < table->sentinel(); ++i) {
      float middle = float((table->values[i] + table->values[i + 1]) / 2); // exact in f32
      for (float x : {middle, std::nextafter(middle, 0.0f), std::nextafter(middle, 1e9f), float(table->values[i])}) {
        for (float signedX : {x, -x}) {
          uint32_t expected = referenceRound(*table, signedX, 0, Rounding::Rn);
          if ((expected & 0x7f) == table->sentinel()) expected = (expected & 0x80) | (table->sentinel() - 1); // satfinite
          uint8_t actual = isE4M3 ? f32ToE4M3(signedX, true) : f32ToE5M2(signedX, true);
          ASSERT_EQ(actual, expected) << signedX << (isE4M3 ? " e4m3" : " e5m2");
        }
      }
    }
  }
  float infinity = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f32ToE4M3(1000.0f, true), 0x7e);
  EXPECT_EQ(f32ToE4M3(-infinity, true), 0xfe);
  EXPECT_EQ(f32ToE4M3(464.0f, false), 0x7e); // halfway to 480: ties to even, 448
  EXPECT_EQ(f32ToE4M3(465.0f, false), 0x7f); // nearer the missing 480: NaN without .satfinite
  EXPECT_EQ(f32ToE5M2(1e6f, false), 0x7c);
  EXPECT_EQ(f32ToE5M2(-infinity, true), 0xfb);
  EXPECT_EQ(f32ToE4M3(std::nanf(""), true), 0x7f);
  EXPECT_EQ(packE4M3x2(1.0f, -2.0f, false), 0x38c0);
  EXPECT_EQ(packE4M3x2(1.0f, -2.0f, true), 0x3800);
  EXPECT_EQ(packE5M2x2(1.0f, 0.5f, false), 0x3c38);
  EXPECT_EQ(f16x2ToE4M3x2(0x3c00c000, false), 0x38c0); // a[31:16] -> d[15:8]
  EXPECT_EQ(convert(DType::E5M2x2, DType::F16x2, 0x3c00b800, Rounding::Rn, false, true), 0x3cb8u);
}

TEST(EmuCvtPack, OrderReluAndSatfinite) {
  EXPECT_EQ(packF16x2(1.0f, -2.0f, Rounding::Rn, false, false), 0x3c00c000u); // a -> d[31:16]
  EXPECT_EQ(packF16x2(1.0f, -2.0f, Rounding::Rn, true, false), 0x3c000000u);
  EXPECT_EQ(packF16x2(1e6f, -1e6f, Rounding::Rn, false, true), 0x7bfffbffu);
  EXPECT_EQ(packF16x2(std::nanf(""), -0.0f, Rounding::Rz, true, true), 0x7fff0000u); // relu: NaN canonical, -0 -> +0
  EXPECT_EQ(packBf16x2(1.0f, -2.0f, Rounding::Rn, false, false), 0x3f80c000u);
  EXPECT_EQ(packBf16x2(f32(0x7f7fffff), 3.0f, Rounding::Rn, false, true), 0x7f7f4040u);
  EXPECT_EQ(cvtF32ToF16(-1.0f, Rounding::Rn, true, false), 0x0000);
  EXPECT_EQ(cvtF32ToBf16(f32(0xff800000), Rounding::Rz, false, true), 0xff7f);
}

// ---------------------------------------------------------------------------
// convert(): integers

TEST(EmuConvert, IntegerToIntegerTruncatesOrSaturates) {
  struct Case {
    DType dst, src;
    uint64_t in;
    bool sat;
    uint64_t out;
  } cases[] = {
      {DType::S8, DType::S32, 0x17f, false, 0x7f},
      {DType::S8, DType::S32, 0x180, false, 0xffffffffffffff80}, // truncate, then sign-extend
      {DType::S8, DType::S32, 0x180, true, 0x7f},
      {DType::S8, DType::S32, 0xfffffe00, true, 0xffffffffffffff80},
      {DType::U8, DType::S32, 0xffffffff, true, 0},
      {DType::U8, DType::S32, 0xffffffff, false, 0xff},
      {DType::S32, DType::U32, 0x80000000, true, 0x7fffffff},
      {DType::U32, DType::S32, 0x80000000, true, 0},
      {DType::S32, DType::S64, 0xffffffff00000000, true, 0xffffffff80000000},
      {DType::U64, DType::S64, 0x8000000000000000, true, 0},
      {DType::S64, DType::U64, 0x8000000000000000, true, 0x7fffffffffffffff},
      {DType::S16, DType::U64, 0xffffffffffffffff, true, 0x7fff},
      {DType::S64, DType::S8, 0x80, false, 0xffffffffffffff80},
      {DType::U64, DType::S16, 0x8000, false, 0xffffffffffff8000}, // sign-extended by the source type
      {DType::S32, DType::U16, 0xffff8000, false, 0x8000},         // only the source's low 16 bits count
      {DType::U16, DType::S32, 0x12345678, false, 0x5678},
      {DType::B16, DType::B32, 0x12345678, false, 0x5678},
  };
  for (const Case &c : cases)
    EXPECT_EQ(convert(c.dst, c.src, c.in, Rounding::None, false, c.sat), c.out)
        << dtypeName(c.dst) << " <- " << dtypeName(c.src) << " " << std::hex << c.in;
}

TEST(EmuConvert, FloatToIntegerRoundsAndSaturates) {
  auto toS32 = [](float x, Rounding r) { return int32_t(convert(DType::S32, DType::F32, bits(x), r, false, false)); };
  EXPECT_EQ(toS32(2.5f, Rounding::Rni), 2);
  EXPECT_EQ(toS32(3.5f, Rounding::Rni), 4);
  EXPECT_EQ(toS32(-2.5f, Rounding::Rni), -2);
  EXPECT_EQ(toS32(-2.7f, Rounding::Rzi), -2);
  EXPECT_EQ(toS32(-2.2f, Rounding::Rmi), -3);
  EXPECT_EQ(toS32(2.2f, Rounding::Rpi), 3);
  EXPECT_EQ(toS32(-2.7f, Rounding::None), -2); // None is .rzi
  EXPECT_EQ(toS32(3e9f, Rounding::Rzi), INT32_MAX);
  EXPECT_EQ(toS32(-3e9f, Rounding::Rzi), INT32_MIN);
  EXPECT_EQ(toS32(-std::numeric_limits<float>::infinity(), Rounding::Rni), INT32_MIN);
  EXPECT_EQ(toS32(f32(0x00000001), Rounding::Rpi), 1);
  EXPECT_EQ(int32_t(convert(DType::S32, DType::F32, 0x00000001, Rounding::Rpi, true, false)), 0); // .ftz input
  EXPECT_EQ(convert(DType::U32, DType::F32, bits(-1.5f), Rounding::Rzi, false, false), 0u);
  EXPECT_EQ(convert(DType::U32, DType::F32, bits(5e9f), Rounding::Rzi, false, false), 0xffffffffu);
  EXPECT_EQ(convert(DType::U8, DType::F16, 0x5bff /*255.9*/, Rounding::Rni, false, false), 0xffu);
  EXPECT_EQ(convert(DType::S8, DType::F32, bits(-200.0f), Rounding::Rni, false, false), 0xffffffffffffff80u);
  EXPECT_EQ(convert(DType::U64, DType::F64, bits(0x1p64), Rounding::Rzi, false, false), ~uint64_t(0));
  EXPECT_EQ(convert(DType::U64, DType::F64, bits(0x1.fffffffffffffp63), Rounding::Rzi, false, false), 0xfffffffffffff800u);
  EXPECT_EQ(convert(DType::S64, DType::F64, bits(-0x1p63), Rounding::Rzi, false, false), 0x8000000000000000u);
  EXPECT_EQ(convert(DType::S64, DType::F64, bits(0x1p63), Rounding::Rzi, false, false), 0x7fffffffffffffffu);
  EXPECT_EQ(convert(DType::S32, DType::BF16, 0xc2f7 /*-123.5*/, Rounding::Rni, false, false), 0xffffffffffffff84u);
}

TEST(EmuConvert, NaNToInteger) {
  // The ISA says NaN -> 0; an H200 agrees for f16/bf16/f32 into 8..32-bit
  // integers but gives 1 << (width-1) from f64 or into 64-bit integers.
  uint64_t nan32 = 0xffc00000, nan64 = 0x7ff8000000000000;
  EXPECT_EQ(convert(DType::S32, DType::F32, nan32, Rounding::Rzi, false, false), 0u);
  EXPECT_EQ(convert(DType::U16, DType::F32, nan32, Rounding::Rzi, false, false), 0u);
  EXPECT_EQ(convert(DType::S16, DType::F16, 0x7e00, Rounding::Rni, false, false), 0u);
  EXPECT_EQ(convert(DType::S64, DType::F32, nan32, Rounding::Rzi, false, false), 0x8000000000000000u);
  EXPECT_EQ(convert(DType::U64, DType::BF16, 0x7fc0, Rounding::Rzi, false, false), 0x8000000000000000u);
  EXPECT_EQ(convert(DType::S32, DType::F64, nan64, Rounding::Rzi, false, false), 0xffffffff80000000u);
  EXPECT_EQ(convert(DType::U32, DType::F64, nan64, Rounding::Rpi, false, false), 0x80000000u);
  EXPECT_EQ(convert(DType::S16, DType::F64, nan64, Rounding::Rzi, false, false), 0xffffffffffff8000u);
  EXPECT_EQ(convert(DType::U8, DType::F64, nan64, Rounding::Rzi, false, false), 0x80u);
}

TEST(EmuConvert, IntegerToFloatMatchesReference) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    int64_t value = int64_t(rng()) >> (rng() % 64);
    // f32: compare the exact integer with the neighbours of the nearest float.
    for (Rounding r : kFloatModes) {
      float nearest = float(value);
      __int128 exactNearest = __int128(double(nearest));
      int side = value > exactNearest ? 1 : value < exactNearest ? -1 : 0;
      float expected = referenceF32(double(nearest), side == 0 ? 0.0 : side * 0x1p-1000 * std::fabs(double(nearest)), r);
      ASSERT_EQ(convert(DType::F32, DType::S64, uint64_t(value), r, false, false), bits(expected))
          << value << " " << modeName(r);
    }
    uint64_t unsignedValue = rng() >> (rng() % 64);
    for (Rounding r : kFloatModes) {
      // f16 through the table, bracketing the exact integer.
      double hi = double(unsignedValue);
      double lo = double(__int128(unsignedValue) - __int128(hi)); // exact remainder
      ASSERT_EQ(convert(DType::F16, DType::U64, unsignedValue, r, false, false), referenceRound(f16Table(), hi, lo, r));
      ASSERT_EQ(convert(DType::BF16, DType::U64, unsignedValue, r, false, false), referenceRound(bf16Table(), hi, lo, r));
    }
  }
  EXPECT_EQ(convert(DType::F32, DType::U32, 0xffffffff, Rounding::Rz, false, false), bits(0x1.fffffep31f));
  EXPECT_EQ(convert(DType::F32, DType::U32, 0xffffffff, Rounding::Rn, false, false), bits(0x1p32f));
  EXPECT_EQ(convert(DType::F64, DType::U64, 0xffffffffffffffff, Rounding::Rp, false, false), bits(0x1p64));
  EXPECT_EQ(convert(DType::F64, DType::U64, 0xffffffffffffffff, Rounding::Rz, false, false), bits(0x1.fffffffffffffp63));
  EXPECT_EQ(convert(DType::F16, DType::S32, 70000, Rounding::Rz, false, false), 0x7bffu);
  EXPECT_EQ(convert(DType::F16, DType::S32, 70000, Rounding::Rn, false, false), 0x7c00u);
  EXPECT_EQ(convert(DType::F32, DType::S8, 0x80, Rounding::Rn, false, false), bits(-128.0f));
  EXPECT_EQ(convert(DType::F32, DType::S32, 5, Rounding::Rn, false, true), bits(1.0f)); // .sat
}

// ---------------------------------------------------------------------------
// convert(): between float types

TEST(EmuConvert, F64ToF32DirectedRoundingAndSubnormals) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 50000; ++i) {
    int exponent = -160 + int(rng() % 300);
    double x = std::ldexp(1.0 + double(rng() >> 12) * 0x1p-52, exponent);
    if (rng() % 3 == 0) x = double(f32(uint32_t(rng()))) * (1.0 + 0x1p-30); // just off an f32 value
    if (!std::isfinite(x)) continue;
    if (rng() % 2) x = -x;
    for (Rounding r : kFloatModes)
      ASSERT_EQ(convert(DType::F32, DType::F64, bits(x), r, false, false), bits(referenceF32(x, 0.0, r)))
          << std::hexfloat << x << modeName(r);
  }
  double huge = 1e300;
  EXPECT_EQ(convert(DType::F32, DType::F64, bits(huge), Rounding::Rz, false, false), 0x7f7fffffu);
  EXPECT_EQ(convert(DType::F32, DType::F64, bits(huge), Rounding::Rp, false, false), 0x7f800000u);
  EXPECT_EQ(convert(DType::F32, DType::F64, bits(-huge), Rounding::Rp, false, false), 0xff7fffffu);
  EXPECT_EQ(convert(DType::F32, DType::F64, bits(-huge), Rounding::Rn, false, false), 0xff800000u);
  EXPECT_EQ(convert(DType::F32, DType::F64, bits(0x1p-160), Rounding::Rp, false, false), 0x00000001u);
  EXPECT_EQ(convert(DType::F32, DType::F64, bits(0x1p-160), Rounding::Rn, false, false), 0x00000000u);
}

TEST(EmuConvert, SameSizeIntegralRounding) {
  auto rni = [](float x, Rounding r) { return f32(uint32_t(convert(DType::F32, DType::F32, bits(x), r, false, false))); };
  EXPECT_EQ(rni(2.5f, Rounding::Rni), 2.0f);
  EXPECT_EQ(rni(-0.5f, Rounding::Rni), -0.0f);
  EXPECT_TRUE(std::signbit(rni(-0.5f, Rounding::Rni)));
  EXPECT_EQ(rni(-1.5f, Rounding::Rzi), -1.0f);
  EXPECT_EQ(rni(1.25f, Rounding::Rpi), 2.0f);
  EXPECT_EQ(rni(-1.25f, Rounding::Rmi), -2.0f);
  EXPECT_EQ(rni(0x1p30f + 0.0f, Rounding::Rpi), 0x1p30f);
  EXPECT_EQ(convert(DType::F32, DType::F32, 0x00000001, Rounding::Rpi, false, false), bits(1.0f));
  EXPECT_EQ(convert(DType::F32, DType::F32, 0x00000001, Rounding::Rpi, true, false), 0u); // .ftz input
  EXPECT_EQ(convert(DType::F32, DType::F32, 0x80000001, Rounding::None, true, false), 0x80000000u);
  EXPECT_EQ(convert(DType::F16, DType::F16, 0x3e00 /*1.5*/, Rounding::Rni, false, false), 0x4000u);
  EXPECT_EQ(convert(DType::BF16, DType::BF16, 0x3fc0 /*1.5*/, Rounding::Rzi, false, false), 0x3f80u);
  EXPECT_EQ(convert(DType::F64, DType::F64, bits(-2.5), Rounding::Rni, false, false), bits(-2.0));
}

TEST(EmuConvert, SaturateAndFlush) {
  auto sat = [](DType t, uint64_t v) { return convert(t, t, v, Rounding::None, false, true); };
  EXPECT_EQ(sat(DType::F32, bits(-0.0f)), 0u); // -0 -> +0
  EXPECT_EQ(sat(DType::F32, bits(1.5f)), bits(1.0f));
  EXPECT_EQ(sat(DType::F32, 0xffc00000), 0u);
  EXPECT_EQ(sat(DType::F64, bits(0.25)), bits(0.25));
  EXPECT_EQ(sat(DType::F16, 0xfe00), 0u);
  EXPECT_EQ(sat(DType::F16, 0x4000), 0x3c00u);
  EXPECT_EQ(convert(DType::F16, DType::F32, bits(3.0f), Rounding::Rn, false, true), 0x3c00u);
  // .ftz on cvt.f16.f32 does not flush the f32 input on an H200; on bf16 it does.
  EXPECT_EQ(convert(DType::F16, DType::F32, 0x00000001, Rounding::Rp, true, false), 0x0001u);
  EXPECT_EQ(convert(DType::BF16, DType::F32, 0x00000001, Rounding::Rp, true, false), 0x0000u);
  EXPECT_EQ(convert(DType::BF16, DType::F32, 0x00000001, Rounding::Rp, false, false), 0x0001u);
  // f32 results under .ftz are flushed when tiny after rounding (H200): exact
  // in 24 bits below 2^-126 -> 0; above the last subnormal tie -> 2^-126.
  EXPECT_EQ(convert(DType::F32, DType::F64, 0x380fffffe0000000, Rounding::Rn, true, false), 0u);
  EXPECT_EQ(convert(DType::F32, DType::F64, 0x380ffffff8000000, Rounding::Rn, true, false), 0x00800000u);
  EXPECT_EQ(convert(DType::F32, DType::F64, 0x380ffffff8000000, Rounding::Rn, false, false), 0x00800000u);
}

TEST(EmuConvert, NaNBetweenFloatTypes) {
  // H200 bit patterns.
  EXPECT_EQ(convert(DType::F64, DType::F32, 0x7fa12345, Rounding::None, false, false), 0x7ffc2468a0000000u);
  EXPECT_EQ(convert(DType::F64, DType::F32, 0xffc00000, Rounding::None, false, false), 0xfff8000000000000u);
  EXPECT_EQ(convert(DType::F64, DType::F16, 0x7c01, Rounding::None, false, false), 0x7ff8040000000000u);
  EXPECT_EQ(convert(DType::F64, DType::BF16, 0xffc1, Rounding::None, false, false), 0xfff8200000000000u);
  EXPECT_EQ(convert(DType::F32, DType::F64, 0x7ff8000012345678, Rounding::Rn, false, false), 0x7fc00000u);
  EXPECT_EQ(convert(DType::F32, DType::F64, 0xfff8000000000000, Rounding::Rz, false, false), 0xffc00000u);
  EXPECT_EQ(convert(DType::F32, DType::F16, 0xfc01, Rounding::None, false, false), 0x7fffffffu);
  EXPECT_EQ(convert(DType::F32, DType::BF16, 0x7f81, Rounding::None, false, false), 0x7f810000u);
  EXPECT_EQ(convert(DType::F16, DType::BF16, 0xffc0, Rounding::Rn, false, false), 0x7fffu);
  EXPECT_EQ(convert(DType::F64, DType::F64, 0x7ff0000000000001, Rounding::Rni, false, false), 0x7ff8000000000001u);
  EXPECT_EQ(convert(DType::F32, DType::F32, 0xffa00000, Rounding::Rni, false, false), 0x7fffffffu);
  EXPECT_EQ(convert(DType::TF32, DType::F32, 0xffc00000, Rounding::Rna, false, false), 0xffc00000u);
}

// ---------------------------------------------------------------------------
// f32 arithmetic with explicit rounding

TEST(EmuF32, DirectedRoundingMatchesReference) {
  std::vector<float> values = randomFloats(1500, 3);
  for (float s : specialFloats()) values.push_back(s);
  std::mt19937 rng(5);
  for (size_t i = 0; i < values.size(); ++i) {
    float a = values[i], b = values[rng() % values.size()], c = values[rng() % values.size()];
    if (rng() % 2 && a != 0 && b != 0) b = std::ldexp(b, std::ilogb(a) - std::ilogb(b) + int(rng() % 8) - 4); // similar magnitudes
    if (!std::isfinite(b)) continue;
    for (Rounding r : kFloatModes) {
      double hi, lo;
      twoSum(a, b, hi, lo);
      float sum = hi == 0 ? float(exactZeroSum(a, b, r)) : referenceF32(hi, lo, r);
      ASSERT_EQ(bits(addF32(a, b, r)), bits(sum)) << std::hexfloat << a << " + " << b << modeName(r);
      twoSum(a, -double(b), hi, lo);
      float difference = hi == 0 ? float(exactZeroSum(a, -double(b), r)) : referenceF32(hi, lo, r);
      ASSERT_EQ(bits(subF32(a, b, r)), bits(difference)) << std::hexfloat << a << " - " << b;
      double product = double(a) * double(b); // exact
      if (product != 0) {
        ASSERT_EQ(bits(mulF32(a, b, r)), bits(referenceF32(product, 0, r))) << std::hexfloat << a << " * " << b;
      }
      twoSum(product, c, hi, lo);
      float fused = hi == 0 ? float(exactZeroSum(product, c, r)) : referenceF32(hi, lo, r);
      ASSERT_EQ(bits(fmaF32(a, b, c, r)), bits(fused)) << std::hexfloat << a << " * " << b << " + " << c << modeName(r);
      if (b != 0 && a != 0) {
        double quotient = double(a) / double(b);
        double remainder = std::fma(-quotient, double(b), double(a)); // exact
        ASSERT_EQ(bits(divF32(a, b, r)), bits(referenceF32(quotient, remainder / double(b), r)))
            << std::hexfloat << a << " / " << b << modeName(r);
      }
      float magnitude = std::fabs(a);
      double root = std::sqrt(double(magnitude));
      double rootError = std::fma(-root, root, double(magnitude)) / (2 * root);
      if (magnitude > 0) {
        ASSERT_EQ(bits(sqrtF32(magnitude, r)), bits(referenceF32(root, rootError, r))) << std::hexfloat << a;
      }
    }
  }
  EXPECT_EQ(fegetround(), FE_TONEAREST); // the host mode is always restored
}

TEST(EmuF32, OverflowUnderflowAndSpecials) {
  float max = std::numeric_limits<float>::max();
  float infinity = std::numeric_limits<float>::infinity();
  EXPECT_EQ(mulF32(max, 2.0f, Rounding::Rn), infinity);
  EXPECT_EQ(mulF32(max, 2.0f, Rounding::Rz), max);
  EXPECT_EQ(mulF32(max, 2.0f, Rounding::Rm), max);
  EXPECT_EQ(mulF32(max, -2.0f, Rounding::Rm), -infinity);
  EXPECT_EQ(mulF32(max, -2.0f, Rounding::Rp), -max);
  EXPECT_EQ(addF32(max, max, Rounding::Rz), max);
  EXPECT_EQ(bits(mulF32(0x1p-75f, 0x1p-75f, Rounding::Rn)), 0x00000000u);
  EXPECT_EQ(bits(mulF32(0x1p-75f, 0x1p-75f, Rounding::Rp)), 0x00000001u); // smallest subnormal
  EXPECT_EQ(bits(mulF32(-0x1p-75f, 0x1p-75f, Rounding::Rm)), 0x80000001u);
  EXPECT_EQ(bits(mulF32(0x1p-140f, 0x1p-10f, Rounding::Rn)), 0x00000000u); // half the smallest subnormal: tie, even
  EXPECT_EQ(bits(mulF32(0x1p-140f, 0x1.8p-9f, Rounding::Rn)), 0x00000002u); // 1.5 subnormal units: tie, even
  EXPECT_EQ(bits(divF32(1.0f, 3.0f, Rounding::Rz)), 0x3eaaaaaau);
  EXPECT_EQ(bits(divF32(1.0f, 3.0f, Rounding::Rp)), 0x3eaaaaabu);
  EXPECT_EQ(bits(rcpF32(3.0f, Rounding::Rn)), 0x3eaaaaabu);
  EXPECT_EQ(bits(sqrtF32(2.0f, Rounding::Rz)), 0x3fb504f3u);
  EXPECT_EQ(bits(sqrtF32(2.0f, Rounding::Rp)), 0x3fb504f4u);
  EXPECT_EQ(bits(sqrtF32(-0.0f, Rounding::Rn)), 0x80000000u);
  // Exact zero sums: +0 except under round-down.
  EXPECT_EQ(bits(addF32(1.0f, -1.0f, Rounding::Rn)), 0x00000000u);
  EXPECT_EQ(bits(addF32(1.0f, -1.0f, Rounding::Rm)), 0x80000000u);
  EXPECT_EQ(bits(fmaF32(1.0f, 1.0f, -1.0f, Rounding::Rm)), 0x80000000u);
  // Every NaN result is the canonical 0x7fffffff (H200).
  EXPECT_EQ(bits(addF32(infinity, -infinity, Rounding::Rn)), 0x7fffffffu);
  EXPECT_EQ(bits(mulF32(f32(0xffa12345), 1.0f, Rounding::Rz)), 0x7fffffffu);
  EXPECT_EQ(bits(sqrtF32(-1.0f, Rounding::Rp)), 0x7fffffffu);
  EXPECT_EQ(bits(fmaF32(0.0f, infinity, 1.0f, Rounding::Rn)), 0x7fffffffu);
}

TEST(EmuF32, FlushToZeroDetectsTininessAfterRounding) {
  // H200: (2^-126 + ulp)(1 - 2ulp) rounds up to 2^-126 and is kept; 2^-126 (1 - 2^-24)
  // is exact in 24 bits, below 2^-126, and flushed.
  EXPECT_EQ(bits(mulF32(f32(0x00800001), f32(0x3f7ffffe), Rounding::Rn, true)), 0x00800000u);
  EXPECT_EQ(bits(mulF32(f32(0x00800001), f32(0x3f7ffffe), Rounding::Rp, true)), 0x00800000u);
  EXPECT_EQ(bits(mulF32(f32(0x00800000), f32(0x3f7fffff), Rounding::Rn, true)), 0x00000000u);
  EXPECT_EQ(bits(mulF32(f32(0x80800000), f32(0x3f7fffff), Rounding::Rn, true)), 0x80000000u);
  EXPECT_EQ(bits(mulF32(f32(0x00800000), f32(0x3f7fffff), Rounding::Rn)), 0x00800000u); // without .ftz
  EXPECT_EQ(bits(fmaF32(f32(0x00800000), f32(0x1f800000), f32(0x80800000), Rounding::Rn, true)), 0x80800000u);
  EXPECT_EQ(bits(divF32(f32(0x3f7fffff), f32(0x7e800000), Rounding::Rn, true)), 0x00000000u);
  EXPECT_EQ(bits(addF32(f32(0x00000001), 0.0f, Rounding::Rn, true)), 0x00000000u); // subnormal input
  EXPECT_EQ(bits(subF32(f32(0x00c00000), f32(0x00800000), Rounding::Rn, true)), 0x00000000u); // subnormal result
  EXPECT_EQ(bits(sqrtF32(f32(0x00000004), Rounding::Rn, true)), 0x00000000u);
  EXPECT_EQ(bits(rcpF32(f32(0x7f000000), Rounding::Rn, true)), 0x00000000u); // 2^-127
  EXPECT_EQ(flushSubnormal(f32(0x807fffff)), -0.0f);
  EXPECT_TRUE(std::signbit(flushSubnormal(f32(0x807fffff))));
  EXPECT_EQ(saturate(std::nanf("")), 0.0f);
  EXPECT_EQ(saturate(2.0), 1.0);
}

// ---------------------------------------------------------------------------
// f64 arithmetic

TEST(EmuF64, DirectedRoundingMatchesReference) {
  std::mt19937_64 rng(9);
  auto randomDouble = [&rng] {
    double value = std::ldexp(1.0 + double(rng() >> 12) * 0x1p-52, int(rng() % 200) - 100);
    if (rng() % 4 == 0) value = std::ldexp(std::floor(value * 0x1p20), -20); // short significands
    return rng() % 2 ? -value : value;
  };
  for (int i = 0; i < 20000; ++i) {
    double a = randomDouble(), b = randomDouble(), c = randomDouble();
    if (a == 0 || b == 0 || c == 0) continue;
    if (rng() % 2) b = std::ldexp(b, std::ilogb(a) - std::ilogb(b) + int(rng() % 8) - 4);
    for (Rounding r : kFloatModes) {
      double hi, lo;
      twoSum(a, b, hi, lo);
      double sum = hi == 0 ? exactZeroSum(a, b, r) : referenceF64(hi, lo, r);
      ASSERT_EQ(bits(addF64(a, b, r)), bits(sum)) << std::hexfloat << a << " + " << b << modeName(r);
      twoSum(a, -b, hi, lo);
      double difference = hi == 0 ? exactZeroSum(a, -b, r) : referenceF64(hi, lo, r);
      ASSERT_EQ(bits(subF64(a, b, r)), bits(difference));
      double product = a * b, productError = std::fma(a, b, -product); // exact TwoProduct
      ASSERT_EQ(bits(mulF64(a, b, r)), bits(referenceF64(product, productError, r))) << std::hexfloat << a << " * " << b;
      double quotient = a / b, remainder = std::fma(-quotient, b, a);
      ASSERT_EQ(bits(divF64(a, b, r)), bits(referenceF64(quotient, remainder / b, r))) << std::hexfloat << a << " / " << b;
      double root = std::sqrt(std::fabs(a)), rootError = std::fma(-root, root, std::fabs(a)) / (2 * root);
      ASSERT_EQ(bits(sqrtF64(std::fabs(a), r)), bits(referenceF64(root, rootError, r)));
      // fma: exact a*b + c when c is an exact multiple of a*b's last bit and not too small.
      double cShort = std::ldexp(std::trunc(std::ldexp(c, 20 - std::ilogb(c))), std::ilogb(c) - 20);
      if (std::ilogb(a) + std::ilogb(b) > std::ilogb(cShort) - 40 && std::ilogb(a) + std::ilogb(b) < std::ilogb(cShort) + 40) {
        double sumHi, sumLo, exactHi, exactLo;
        twoSum(product, cShort, sumHi, sumLo);
        twoSum(sumHi, sumLo + productError, exactHi, exactLo); // exact when the pieces do not overlap much
        if (exactLo == (sumHi - exactHi) + (sumLo + productError) && (sumLo + productError) - sumLo == productError) {
          ASSERT_EQ(bits(fmaF64(a, b, cShort, r)), bits(referenceF64(exactHi, exactLo, r)))
              << std::hexfloat << a << " * " << b << " + " << cShort << modeName(r);
        }
      }
    }
  }
  double max = std::numeric_limits<double>::max();
  EXPECT_EQ(addF64(max, max, Rounding::Rz), max);
  EXPECT_EQ(addF64(max, max, Rounding::Rn), std::numeric_limits<double>::infinity());
  EXPECT_EQ(bits(mulF64(0x1p-600, 0x1p-600, Rounding::Rp)), 0x0000000000000001u);
  EXPECT_EQ(bits(rcpF64(3.0, Rounding::Rm)), 0x3fd5555555555555u);
  EXPECT_EQ(bits(rcpF64(3.0, Rounding::Rp)), 0x3fd5555555555556u);
  EXPECT_EQ(fegetround(), FE_TONEAREST);
}

TEST(EmuF64, NaNPropagationMatchesTheGpu) {
  // H200: input NaNs propagate quieted (add/sub/mul: b before a; fma: b, c,
  // a; div: a before b); invalid operations give 0xfff8000000000000.
  double nanA = f64(0x7ff0000000000003), nanB = f64(0xfff8000000000002), nanC = f64(0x7ff8000000000001);
  double infinity = std::numeric_limits<double>::infinity();
  EXPECT_EQ(bits(addF64(nanA, nanB, Rounding::Rn)), 0xfff8000000000002u);
  EXPECT_EQ(bits(subF64(1.0, nanA, Rounding::Rm)), 0x7ff8000000000003u); // sign not flipped
  EXPECT_EQ(bits(mulF64(nanA, 2.0, Rounding::Rp)), 0x7ff8000000000003u);
  EXPECT_EQ(bits(divF64(nanA, nanB, Rounding::Rn)), 0x7ff8000000000003u);
  EXPECT_EQ(bits(fmaF64(nanA, nanB, nanC, Rounding::Rn)), 0xfff8000000000002u);
  EXPECT_EQ(bits(fmaF64(nanA, 1.0, nanC, Rounding::Rz)), 0x7ff8000000000001u);
  EXPECT_EQ(bits(sqrtF64(nanA, Rounding::Rn)), 0x7ff8000000000003u);
  EXPECT_EQ(bits(addF64(infinity, -infinity, Rounding::Rn)), 0xfff8000000000000u);
  EXPECT_EQ(bits(mulF64(0.0, infinity, Rounding::Rz)), 0xfff8000000000000u);
  EXPECT_EQ(bits(sqrtF64(-1.0, Rounding::Rn)), 0xfff8000000000000u);
  EXPECT_EQ(bits(divF64(0.0, 0.0, Rounding::Rn)), 0xfff8000000000000u);
}

// ---------------------------------------------------------------------------
// min / max

TEST(EmuMinMax, NaNAndSignedZeroRules) {
  float nan = std::nanf(""), infinity = std::numeric_limits<float>::infinity();
  EXPECT_EQ(minF32(nan, 1.0f, false), 1.0f);
  EXPECT_EQ(maxF32(1.0f, nan, false), 1.0f);
  EXPECT_EQ(bits(minF32(nan, f32(0xffa00000), false)), 0x7fffffffu); // both NaN: canonical
  EXPECT_EQ(bits(minF32(nan, 1.0f, true)), 0x7fffffffu);             // .NaN
  EXPECT_EQ(bits(maxF32(-infinity, nan, true)), 0x7fffffffu);
  EXPECT_EQ(bits(minF32(0.0f, -0.0f, false)), 0x80000000u);
  EXPECT_EQ(bits(minF32(-0.0f, 0.0f, false)), 0x80000000u);
  EXPECT_EQ(bits(maxF32(-0.0f, 0.0f, false)), 0x00000000u);
  EXPECT_EQ(bits(maxF32(0.0f, -0.0f, false)), 0x00000000u);
  EXPECT_EQ(minF32(-infinity, 3.0f, false), -infinity);
  EXPECT_EQ(bits(minF64(-0.0, 0.0)), 0x8000000000000000u);
  EXPECT_EQ(bits(maxF64(-0.0, 0.0)), 0x0000000000000000u);
  EXPECT_EQ(minF64(std::nan(""), 2.0), 2.0);
  EXPECT_EQ(bits(maxF64(f64(0x7ff8000000000000), f64(0x7ff0000000000001))), 0x7ff8000000000001u); // H200: b, quieted
  EXPECT_EQ(f16Min(0x7e00, 0x3c00, false), 0x3c00);
  EXPECT_EQ(f16Min(0x7e00, 0x3c00, true), 0x7fff);
  EXPECT_EQ(f16Max(0x7e00, 0xfe01, false), 0x7fff);
  EXPECT_EQ(f16Min(0x0000, 0x8000, false), 0x8000);
  EXPECT_EQ(f16Max(0x8000, 0x0000, false), 0x0000);
  EXPECT_EQ(f16Max(0xbc00, 0x3c00, false), 0x3c00);
  EXPECT_EQ(bf16Min(0x3f80, 0xbf80, false), 0xbf80);
  EXPECT_EQ(bf16Max(0x7fc1, 0x3f80, false), 0x3f80);
  EXPECT_EQ(bf16Max(0x7fc1, 0x3f80, true), 0x7fff);
}

// ---------------------------------------------------------------------------
// .approx

TEST(EmuApprox, SpecialInputsFollowTheIsaTables) {
  float infinity = std::numeric_limits<float>::infinity(), subnormal = f32(0x00000010);
  EXPECT_EQ(bits(ex2Approx(-infinity, false)), 0x00000000u);
  EXPECT_EQ(ex2Approx(infinity, false), infinity);
  EXPECT_EQ(ex2Approx(-subnormal, false), 1.0f);
  EXPECT_EQ(ex2Approx(-0.0f, true), 1.0f);
  EXPECT_EQ(lg2Approx(0.0f, false), -infinity);
  EXPECT_EQ(lg2Approx(-0.0f, false), -infinity);
  EXPECT_EQ(lg2Approx(subnormal, true), -infinity);
  EXPECT_NEAR(lg2Approx(subnormal, false), -145.0f, 0x1p-16); // without .ftz the subnormal is honoured
  EXPECT_TRUE(std::isnan(lg2Approx(-1.0f, false)));
  EXPECT_TRUE(std::isnan(lg2Approx(-infinity, false)));
  EXPECT_EQ(lg2Approx(infinity, false), infinity);
  EXPECT_TRUE(std::isnan(sinApprox(infinity, false)));
  EXPECT_TRUE(std::isnan(cosApprox(-infinity, true)));
  EXPECT_EQ(bits(sinApprox(-0.0f, false)), 0x80000000u);
  EXPECT_EQ(bits(sinApprox(-subnormal, false)), 0x80000000u);
  EXPECT_EQ(cosApprox(subnormal, false), 1.0f);
  EXPECT_EQ(rcpApprox(0.0f, false), infinity);
  EXPECT_EQ(rcpApprox(-0.0f, false), -infinity);
  EXPECT_EQ(bits(rcpApprox(-infinity, false)), 0x80000000u);
  EXPECT_EQ(rcpApprox(-subnormal, true), -infinity);
  EXPECT_EQ(bits(sqrtApprox(-0.0f, false)), 0x80000000u);
  EXPECT_TRUE(std::isnan(sqrtApprox(-1.0f, false)));
  EXPECT_EQ(sqrtApprox(infinity, false), infinity);
  EXPECT_EQ(rsqrtApprox(0.0f, false), infinity);
  EXPECT_EQ(rsqrtApprox(-0.0f, false), -infinity);
  EXPECT_EQ(rsqrtApprox(subnormal, true), infinity);
  EXPECT_EQ(rsqrtApprox(infinity, false), 0.0f);
  EXPECT_TRUE(std::isnan(rsqrtApprox(-4.0f, false)));
  EXPECT_EQ(tanhApprox(infinity), 1.0f);
  EXPECT_EQ(tanhApprox(-infinity), -1.0f);
  EXPECT_EQ(bits(tanhApprox(-0.0f)), 0x80000000u);
  EXPECT_EQ(bits(tanhApprox(std::nanf(""))), 0x7fffffffu);
  EXPECT_EQ(divApprox(1.0f, 0.0f, false), infinity);
  EXPECT_EQ(divApprox(-1.0f, 0.0f, true), -infinity);
}

/// One .approx function against its exact value: every result within the
/// ISA's bound, and most of them not the correctly rounded value (the
/// emulator must not be more accurate than the hardware promises).
struct ApproxCase {
  const char *name;
  std::function<float(float)> approx;
  std::function<double(double)> exact;
  std::function<double(double)> bound; ///< of the exact value
  std::function<bool(float)> domain;
};

double ulp32(double value) { return std::ldexp(1.0, std::max(std::ilogb(value), -126) - 23); }

TEST(EmuApprox, EveryResultWithinTheIsaBoundAndMostNotCorrectlyRounded) {
  const double pi = 3.14159265358979;
  auto positive = [](float x) { return x > 0; };
  const ApproxCase cases[] = {
      {"ex2", [](float x) { return ex2Approx(x, false); }, [](double x) { return std::exp2(x); },
       [](double e) { return 2 * ulp32(e); }, [](float x) { return std::fabs(x) < 126; }},
      {"ex2.ftz", [](float x) { return ex2Approx(x, true); }, [](double x) { return std::exp2(x); },
       [](double e) { return 2 * ulp32(e); }, [](float x) { return std::fabs(x) < 126; }},
      {"lg2", [](float x) { return lg2Approx(x, false); }, [](double x) { return std::log2(x); },
       [](double e) { return std::max(std::exp2(-22.6), ulp32(e)); }, positive},
      {"sin", [](float x) { return sinApprox(x, false); }, [](double x) { return std::sin(x); },
       [](double) { return std::exp2(-20.9); }, [=](float x) { return std::fabs(x) <= pi; }},
      {"cos", [](float x) { return cosApprox(x, true); }, [](double x) { return std::cos(x); },
       [](double) { return std::exp2(-20.9); }, [=](float x) { return std::fabs(x) <= pi; }},
      {"rcp", [](float x) { return rcpApprox(x, false); }, [](double x) { return 1 / x; },
       [](double e) { return ulp32(e); }, [](float x) { return std::fabs(x) < 0x1p126f; }},
      {"sqrt", [](float x) { return sqrtApprox(x, false); }, [](double x) { return std::sqrt(x); },
       [](double e) { return std::exp2(-23.0) * e; }, positive},
      {"rsqrt", [](float x) { return rsqrtApprox(x, false); }, [](double x) { return 1 / std::sqrt(x); },
       [](double e) { return std::exp2(-22.9) * e; }, positive},
      {"tanh", [](float x) { return tanhApprox(x); }, [](double x) { return std::tanh(x); },
       [](double e) { return std::exp2(-10.987) * std::fabs(e); }, [](float x) { return std::fabs(x) < 9; }},
      {"div.approx", [](float x) { return divApprox(1.5f, x, false); }, [](double x) { return 1.5 / x; },
       [](double e) { return 2 * ulp32(e); }, [](float x) { return std::fabs(x) < 0x1p125f; }},
      {"div.full", [](float x) { return divFull(x, 3.0f, false); }, [](double x) { return x / 3; },
       [](double e) { return 2 * ulp32(e); }, [](float x) { return std::fabs(x) > 0x1p-120f; }},
  };
  std::vector<float> inputs = randomFloats(20000, 13, -30, 7);
  for (const ApproxCase &c : cases) {
    size_t tried = 0, inexact = 0;
    for (float x : inputs) {
      if (!c.domain(x)) continue;
      double exact = c.exact(double(x));
      float got = c.approx(x);
      ASSERT_LE(std::fabs(double(got) - exact), c.bound(exact)) << c.name << "(" << x << ")";
      ++tried;
      if (bits(got) != bits(float(exact))) ++inexact;
    }
    ASSERT_GT(tried, 2000u) << c.name;
    EXPECT_GT(double(inexact), 0.6 * double(tried)) << c.name << ": too many correctly rounded results";
  }
  // Repeatable: the same input gives the same result.
  for (float x : inputs) ASSERT_EQ(bits(tanhApprox(x)), bits(tanhApprox(x)));
}

TEST(EmuApprox, HalfPrecisionWithinTheIsaBoundAndMostlyNotCorrectlyRounded) {
  struct HalfCase {
    const char *name;
    uint16_t (*approx)(uint16_t);
    bool bf16;
    double (*exact)(double);
    double relative;
  };
  const HalfCase cases[] = {
      {"ex2.f16", f16Ex2Approx, false, [](double x) { return std::exp2(x); }, std::exp2(-9.9)},
      {"tanh.f16", f16TanhApprox, false, [](double x) { return std::tanh(x); }, std::exp2(-10.987)},
      {"ex2.bf16", bf16Ex2Approx, true, [](double x) { return std::exp2(x); }, std::exp2(-7.0)},
      {"tanh.bf16", bf16TanhApprox, true, [](double x) { return std::tanh(x); }, std::exp2(-8.0)},
  };
  for (const HalfCase &c : cases) {
    size_t tried = 0, inexact = 0;
    for (uint32_t a = 0; a < 0x10000; ++a) {
      double x = c.bf16 ? double(bf16ToF32(uint16_t(a))) : double(f16ToF32(uint16_t(a)));
      if (!std::isfinite(x) || std::fabs(x) > 15 || std::fabs(x) < 0x1p-14) continue;
      double exact = c.exact(x);
      uint16_t got = c.approx(uint16_t(a));
      double value = c.bf16 ? double(bf16ToF32(got)) : double(f16ToF32(got));
      ASSERT_LE(std::fabs(value - exact), c.relative * std::fabs(exact)) << c.name << "(" << x << ")";
      ++tried;
      uint16_t rounded = c.bf16 ? f32ToBf16(float(exact), Rounding::Rn) : f32ToF16(float(exact), Rounding::Rn);
      if (got != rounded) ++inexact;
    }
    // tanh's bounds are barely above half an ulp (f16) or below one (bf16),
    // so fewer results can move.
    double wanted = std::string(c.name) == "tanh.f16" ? 0.02 : std::string(c.name) == "tanh.bf16" ? 0.1 : 0.3;
    EXPECT_GT(double(inexact), wanted * double(tried)) << c.name << ": " << inexact << " of " << tried;
  }
}

TEST(EmuApprox, FollowsTheGpuWhereTheIsaLeavesRoom) {
  // H200 results for sin/cos of large arguments (scaled to turns with an RZ
  // multiply), exact zeros at half turns, div.approx past 2^126.
  EXPECT_NEAR(double(sinApprox(65504.0f, false)), double(f32(0x3f7a1e85)), 0x1p-20);
  EXPECT_NEAR(double(sinApprox(65520.0f, false)), double(f32(0xbf5f8327)), 0x1p-20);
  EXPECT_EQ(bits(sinApprox(f32(0xcb917001), false)), bits(-1.0f)); // exactly three quarter turns
  EXPECT_EQ(bits(sinApprox(f32(0x4b000001), false)), 0x80000000u);  // half turn: -0
  EXPECT_EQ(bits(sinApprox(-std::numeric_limits<float>::max(), false)), 0x80000000u);
  EXPECT_EQ(bits(cosApprox(f32(0x4b5ee000), false)), 0x80000000u); // quarter turn: -0
  EXPECT_EQ(bits(sinApprox(f32(0x00800000), false)), 0x00000000u);
  EXPECT_EQ(bits(divApprox(1.0f, std::numeric_limits<float>::max(), false)), 0x00000000u);
  EXPECT_EQ(bits(divApprox(-1.0f, f32(0x7f000000), false)), 0x80000000u);
  EXPECT_TRUE(std::isnan(divApprox(std::numeric_limits<float>::infinity(), f32(0x7f000000), false)));
  EXPECT_NEAR(divFull(1.0f, f32(0x7f000000), false), 0x1p-127f, 0x1p-148); // full range keeps it (2 ulp)
  EXPECT_EQ(bits(divFull(f32(0x3f7fffff), f32(0x7e800000), true)), 0u); // .ftz: tiny after rounding
  EXPECT_EQ(bits(ex2Approx(-127.0f, true)), 0u);
  EXPECT_NEAR(double(bits(ex2Approx(-127.0f, false))), double(0x00400000u), 2.0); // 2 subnormal ulps
}

TEST(EmuApprox, DoublePrecision) {
  // rcp.approx.ftz.f64 reads and writes the high word only (H200 bit patterns).
  EXPECT_EQ(bits(rcpApproxF64(2.5)), 0x3fd9999900000000u);
  EXPECT_EQ(bits(rcpApproxF64(1.5)), 0x3fe5555500000000u);
  EXPECT_EQ(bits(rcpApproxF64(f64(0x3ff0000010000000))), 0x3ff0000000000000u);
  EXPECT_EQ(bits(rcpApproxF64(f64(0x7ff8000000000000))), 0x7fffffff00000000u);
  EXPECT_EQ(bits(rcpApproxF64(f64(0x7ff0000000000001))), 0x0000000000000000u);
  EXPECT_EQ(bits(rcpApproxF64(f64(0x0000000000000001))), 0x7ff0000000000000u);
  EXPECT_EQ(bits(rcpApproxF64(-0.0)), 0xfff0000000000000u);
  EXPECT_EQ(bits(rcpApproxF64(std::numeric_limits<double>::max())), 0u);
  EXPECT_EQ(rsqrtApproxF64(4.0), 0.5);
  EXPECT_EQ(rsqrtApproxF64(-0.0), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(bits(rsqrtApproxF64(-1.0)), 0xfff8000000000000u);
  EXPECT_EQ(bits(rsqrtApproxF64(f64(0x7ff0000000000001))), 0x7ff8000000000001u);
  EXPECT_EQ(bits(rsqrtApproxF64(-1.0, true)), 0x7fffffff00000000u);
  EXPECT_EQ(bits(rsqrtApproxF64(f64(0x800fffffffffffff), true)), 0xfff0000000000000u);
  EXPECT_EQ(bits(rsqrtApproxF64(4.0, true)), bits(0.5));
  for (double x : {3.0, 1e-300, 7e200, 0.1}) {
    EXPECT_NEAR(rcpApproxF64(x) * x, 1.0, 0x1p-19) << x;
    EXPECT_NEAR(rsqrtApproxF64(x, true) * std::sqrt(x), 1.0, 0x1p-19) << x;
  }
}

// ---------------------------------------------------------------------------
// f16 / bf16 arithmetic

TEST(EmuHalf, ArithmeticMatchesReference) {
  std::mt19937 rng(17);
  auto randomHalf = [&rng](bool bf16) {
    uint16_t h = uint16_t(rng());
    if (rng() % 2) h = uint16_t((h & 0x83ff) | ((bf16 ? 0x3c00 : 0x3000) + (rng() % 12) * 0x400)); // moderate exponents
    return h;
  };
  for (int i = 0; i < 60000; ++i) {
    uint16_t a = randomHalf(false), b = randomHalf(false), c = randomHalf(false);
    if (isNaN16(a) || isNaN16(b) || isNaN16(c)) continue;
    double x = f16ToF32(a), y = f16ToF32(b), z = f16ToF32(c);
    if (std::isinf(x) || std::isinf(y) || std::isinf(z)) continue;
    double hi, lo;
    twoSum(x, y, hi, lo);
    ASSERT_EQ(f16Add(a, b, Rounding::Rn, false, false), referenceRound(f16Table(), hi, lo, Rounding::Rn)) << std::hex << a << " " << b;
    twoSum(x, -y, hi, lo);
    ASSERT_EQ(f16Sub(a, b, Rounding::Rn, false, false), referenceRound(f16Table(), hi, lo, Rounding::Rn));
    ASSERT_EQ(f16Mul(a, b, Rounding::Rn, false, false), referenceRound(f16Table(), x * y, 0, Rounding::Rn));
    twoSum(x * y, z, hi, lo); // the product is exact
    for (Rounding r : kFloatModes) {
      uint32_t expected = hi == 0 ? referenceRound(f16Table(), exactZeroSum(x * y, z, r), 0, r) : referenceRound(f16Table(), hi, lo, r);
      ASSERT_EQ(f16Fma(a, b, c, r, false, false), expected) << std::hex << a << " " << b << " " << c << modeName(r);
    }

    uint16_t p = randomHalf(true), q = randomHalf(true), s = randomHalf(true);
    if (isNaNBf16(p) || isNaNBf16(q) || isNaNBf16(s)) continue;
    double u = bf16ToF32(p), v = bf16ToF32(q), w = bf16ToF32(s);
    if (std::isinf(u) || std::isinf(v) || std::isinf(w)) continue;
    twoSum(u, v, hi, lo);
    ASSERT_EQ(bf16Add(p, q, Rounding::Rn), referenceRound(bf16Table(), hi, lo, Rounding::Rn)) << std::hex << p << " " << q;
    ASSERT_EQ(bf16Mul(p, q, Rounding::Rn), referenceRound(bf16Table(), u * v, 0, Rounding::Rn));
    twoSum(u * v, w, hi, lo);
    if (hi != 0 && std::isfinite(hi)) {
      ASSERT_EQ(bf16Fma(p, q, s, Rounding::Rn), referenceRound(bf16Table(), hi, lo, Rounding::Rn))
          << std::hex << p << " " << q << " " << s;
    }
  }
}

TEST(EmuHalf, FlushSaturateAndNaN) {
  EXPECT_EQ(f16Add(0x0001, 0x0001, Rounding::Rn, false, false), 0x0002);
  EXPECT_EQ(f16Add(0x0001, 0x0001, Rounding::Rn, true, false), 0x0000); // .ftz input
  EXPECT_EQ(f16Mul(0x0400, 0x3800, Rounding::Rn, true, false), 0x0000);  // .ftz result
  EXPECT_EQ(f16Mul(0x0400, 0x3800, Rounding::Rn, false, false), 0x0200);
  EXPECT_EQ(f16Add(0x3c00, 0x3c00, Rounding::Rn, false, true), 0x3c00); // .sat: 2 -> 1
  EXPECT_EQ(f16Sub(0x3c00, 0x4000, Rounding::Rn, false, true), 0x0000); // .sat: -1 -> 0
  EXPECT_EQ(f16Add(0x7c00, 0xfc00, Rounding::Rn, false, false), 0x7fff);
  EXPECT_EQ(f16Add(0x7c00, 0xfc00, Rounding::Rn, false, true), 0x0000);
  EXPECT_EQ(f16Fma(0x7bff, 0x7bff, 0x0000, Rounding::Rn, false, false), 0x7c00);
  EXPECT_EQ(f16Fma(0x7bff, 0x7bff, 0x0000, Rounding::Rz, false, false), 0x7bff);
  EXPECT_EQ(f16Add(0x3c00, 0xbc00, Rounding::Rn, false, false), 0x0000);
  EXPECT_EQ(f16Add(0x3c00, 0xbc00, Rounding::Rm, false, false), 0x8000);
  EXPECT_EQ(bf16Add(0x7f80, 0xff80, Rounding::Rn), 0x7fff);
  EXPECT_EQ(bf16Mul(0x7f7f, 0x4000, Rounding::Rn), 0x7f80);
  EXPECT_EQ(bf16Sub(0x3f80, 0x3f80, Rounding::Rn), 0x0000);
  EXPECT_EQ(bf16Fma(0x3f80, 0x3f80, 0x3b80, Rounding::Rn), 0x3f80); // 1 + 2^-8 ties to even
  EXPECT_EQ(f16Ex2Approx(0xfc00), 0x0000);
  EXPECT_EQ(f16Ex2Approx(0x8000), 0x3c00);
  EXPECT_EQ(f16Ex2Approx(0x4900 /*10*/), 0x6400);
  EXPECT_EQ(f16Ex2Approx(0x7e00), 0x7fff);
  EXPECT_EQ(f16TanhApprox(0x7c00), 0x3c00);
  EXPECT_EQ(f16TanhApprox(0x8000), 0x8000);
  for (uint32_t h = 0; h < 0x7c00; h += 7) {
    double x = f16ToF32(uint16_t(h));
    EXPECT_NEAR(double(f16ToF32(f16Ex2Approx(uint16_t(h | 0x8000)))), std::exp2(-x), std::exp2(-9.9) * std::exp2(-x) + 0x1p-24);
    EXPECT_NEAR(double(f16ToF32(f16TanhApprox(uint16_t(h)))), std::tanh(x), std::exp2(-10.9) * std::tanh(x) + 0x1p-24);
  }
}

// ---------------------------------------------------------------------------
// Integer bit operations

namespace {
/// bfe exactly as the ISA's pseudo-code, bit by bit.
uint64_t isaBfe(uint64_t a, uint32_t b, uint32_t c, bool isSigned, unsigned msb) {
  uint32_t pos = b & 0xff, len = c & 0xff;
  uint64_t sbit = (!isSigned || len == 0) ? 0 : (a >> std::min(pos + len - 1, msb)) & 1;
  uint64_t d = 0;
  for (unsigned i = 0; i <= msb; ++i) {
    uint64_t bit = (i < len && pos + i <= msb) ? (a >> (pos + i)) & 1 : sbit;
    d |= bit << i;
  }
  return d;
}

uint64_t isaBfi(uint64_t a, uint64_t b, uint32_t c, uint32_t dd, unsigned msb) {
  uint32_t pos = c & 0xff, len = dd & 0xff;
  uint64_t f = b;
  for (uint32_t i = 0; i < len && pos + i <= msb; ++i) f = (f & ~(uint64_t(1) << (pos + i))) | (((a >> i) & 1) << (pos + i));
  return f;
}
} // namespace

TEST(EmuIntegers, BitFieldExtractAndInsertFollowTheIsa) {
  for (uint64_t a : {0x8765432112345678ull, 0x123456789abcdef0ull, ~0ull, 0x8000000000000001ull}) {
    for (uint32_t pos = 0; pos < 300; pos += (pos < 70 ? 1 : 37)) {
      for (uint32_t len = 0; len < 300; len += (len < 70 ? 1 : 41)) {
        ASSERT_EQ(bfe32(uint32_t(a), pos, len, false), isaBfe(uint32_t(a), pos, len, false, 31)) << pos << " " << len;
        ASSERT_EQ(bfe32(uint32_t(a), pos, len, true), isaBfe(uint32_t(a), pos, len, true, 31)) << pos << " " << len;
        ASSERT_EQ(bfi32(uint32_t(a >> 7), uint32_t(a), pos, len), isaBfi(uint32_t(a >> 7), uint32_t(a), pos, len, 31));
        if (pos < 256 && len < 256) { // 64-bit: the ISA's answer inside 0..255
          ASSERT_EQ(bfe64(a, pos, len, false), isaBfe(a, pos, len, false, 63)) << pos << " " << len;
          ASSERT_EQ(bfe64(a, pos, len, true), isaBfe(a, pos, len, true, 63)) << pos << " " << len;
          ASSERT_EQ(bfi64(a >> 9, a, pos, len), isaBfi(a >> 9, a, pos, len, 63)) << pos << " " << len;
        }
      }
    }
  }
  EXPECT_EQ(bfe32(0x87654321, 4, 8, false), 0x32u);
  EXPECT_EQ(bfe32(0x87654321, 28, 8, true), 0xfffffff8u); // field cut at the msb, sign from bit 31
  EXPECT_EQ(bfe32(0x87654321, 40, 8, true), 0xffffffffu); // past the msb: the replicated sign
  EXPECT_EQ(bfe32(0x87654321, 4, 0, true), 0u);
  EXPECT_EQ(bfe32(0x87654321, 0x104, 0x108, false), 0x32u); // the 32-bit form masks to 0..255
  EXPECT_EQ(bfi32(0xff, 0x12345678, 8, 4), 0x12345f78u);
  EXPECT_EQ(bfi32(0xff, 0x12345678, 32, 4), 0x12345678u);
  // H200: the 64-bit forms take pos and len whole (len 256 means "everything").
  EXPECT_EQ(bfe64(0x8765432112345678, 0, 0x100, false), 0x8765432112345678u);
  EXPECT_EQ(bfe64(0x8765432112345678, 1, 0x100, true), 0xc3b2a190891a2b3cu);
  EXPECT_EQ(bfe64(0x8765432112345678, 0x100, 8, true), 0xffffffffffffffffu);
  EXPECT_EQ(bfi64(0x2efa6981fab13a21, 0xc18d5a397e4cdbb5, 1, 0x100), 0x5df4d303f5627443u);
  EXPECT_EQ(bfi64(1, 0, 0x100, 1), 0u);
}

TEST(EmuIntegers, PermuteAllModes) {
  // Byte selections of the ISA's prmt table (d.b3 d.b2 d.b1 d.b0), by mode 1..6 and c[1:0].
  const char *table[6][4] = {
      {"3210", "4321", "5432", "6543"}, // f4e
      {"5670", "6701", "7012", "0123"}, // b4e
      {"0000", "1111", "2222", "3333"}, // rc8
      {"3210", "3211", "3222", "3333"}, // ecl
      {"0000", "1110", "2210", "3210"}, // ecr
      {"1010", "3232", "1010", "3232"}, // rc16
  };
  uint32_t a = 0x33221100, b = 0x77665544;
  for (unsigned mode = 1; mode <= 6; ++mode) {
    for (uint32_t selector = 0; selector < 8; ++selector) {
      const char *picks = table[mode - 1][selector & 3];
      uint32_t expected = 0;
      for (int byte = 0; byte < 4; ++byte) expected |= uint32_t(picks[3 - byte] - '0') * 0x11u << (8 * byte);
      EXPECT_EQ(prmt(a, b, selector | 0xabc0, mode), expected) << mode << " " << selector;
    }
  }
  EXPECT_EQ(prmt(a, b, 0x3210, 0), a);
  EXPECT_EQ(prmt(a, b, 0x7654, 0), b);
  EXPECT_EQ(prmt(0x80402010, 0, 0x8b31, 0), 0x00ff8020u); // a nibble's msb replicates the byte's sign
  // H200 vectors.
  EXPECT_EQ(prmt(0xe802e12e, 0xf0c523c3, 0x4e11, 0), 0xc3ffe1e1u);
  EXPECT_EQ(prmt(0x2fb6295f, 0x631c23a4, 0x2e78c14f, 0), 0xff29a400u);
  EXPECT_EQ(prmt(0x5022c8d6, 0xd0fd5cb1, 3, 1), 0xfd5cb150u);
  EXPECT_EQ(prmt(0x5022c8d6, 0xd0fd5cb1, 4, 2), 0x5cfdd0d6u);
  EXPECT_EQ(prmt(0x5022c8d6, 0xd0fd5cb1, 3, 6), 0x50225022u);
}

TEST(EmuIntegers, FindAndCount) {
  EXPECT_EQ(bfind32(0, false, false), 0xffffffffu);
  EXPECT_EQ(bfind32(1, false, false), 0u);
  EXPECT_EQ(bfind32(0x80000000, false, false), 31u);
  EXPECT_EQ(bfind32(0x80000000, false, true), 0u);
  EXPECT_EQ(bfind32(0x00010000, false, true), 15u);
  EXPECT_EQ(bfind32(0xffffffff, true, false), 0xffffffffu); // -1 has no non-sign bit
  EXPECT_EQ(bfind32(0xfffffffe, true, false), 0u);
  EXPECT_EQ(bfind32(0x80000000, true, false), 30u);
  EXPECT_EQ(bfind32(0x7fffffff, true, true), 1u);
  EXPECT_EQ(bfind64(0x0000000100000000, false, false), 32u);
  EXPECT_EQ(bfind64(0x8000000000000000, true, true), 1u);
  EXPECT_EQ(bfind64(0, true, true), 0xffffffffu);
  EXPECT_EQ(fns(0xaaaaaaaa, 3, 1), 3u); // the ISA's examples
  EXPECT_EQ(fns(0xaaaaaaaa, 3, -1), 3u);
  EXPECT_EQ(fns(0xaaaaaaaa, 2, 1), 3u);
  EXPECT_EQ(fns(0xaaaaaaaa, 2, -1), 1u);
  EXPECT_EQ(fns(0xaaaaaaaa, 2, 0), 0xffffffffu);
  EXPECT_EQ(fns(0xaaaaaaaa, 3, 0), 3u);
  EXPECT_EQ(fns(0xaaaaaaaa, 0, 16), 31u);
  EXPECT_EQ(fns(0xaaaaaaaa, 0, 17), 0xffffffffu);
  EXPECT_EQ(fns(0xaaaaaaaa, 31, -16), 1u);
  EXPECT_EQ(fns(0xffffffff, 5, INT32_MIN), 0u); // H200
  EXPECT_EQ(brev32(0x00000001), 0x80000000u);
  EXPECT_EQ(brev32(0x12345678), 0x1e6a2c48u);
  EXPECT_EQ(brev64(0x0000000000000003), 0xc000000000000000u);
  EXPECT_EQ(clz32(0), 32u);
  EXPECT_EQ(clz32(0x00800000), 8u);
  EXPECT_EQ(clz64(1), 63u);
  EXPECT_EQ(popc64(0xf0f0f0f0f0f0f0f1), 33u);
}

TEST(EmuIntegers, WideMultipliesAndDotProducts) {
  EXPECT_EQ(mulHiU32(0xffffffff, 0xffffffff), 0xfffffffeu);
  EXPECT_EQ(mulHiS32(-1, 1), -1);
  EXPECT_EQ(mulHiS32(INT32_MIN, INT32_MIN), 0x40000000);
  EXPECT_EQ(mulHiS32(INT32_MIN, INT32_MAX), int32_t(0xc0000000));
  EXPECT_EQ(mulHiU64(~0ull, ~0ull), 0xfffffffffffffffeu);
  EXPECT_EQ(mulHiU64(0x100000000, 0x100000000), 1u);
  EXPECT_EQ(mulHiS64(-1, 1), -1);
  EXPECT_EQ(mulHiS64(INT64_MIN, INT64_MIN), int64_t(0x4000000000000000));
  // Schoolbook reference for the 64-bit high halves.
  std::mt19937_64 rng(21);
  for (int i = 0; i < 10000; ++i) {
    uint64_t x = rng() >> (rng() % 64), y = rng() >> (rng() % 64);
    uint64_t x0 = x & 0xffffffff, x1 = x >> 32, y0 = y & 0xffffffff, y1 = y >> 32;
    uint64_t low = x0 * y0, middle1 = x1 * y0, middle2 = x0 * y1;
    uint64_t carry = ((low >> 32) + (middle1 & 0xffffffff) + (middle2 & 0xffffffff)) >> 32;
    uint64_t high = x1 * y1 + (middle1 >> 32) + (middle2 >> 32) + carry;
    ASSERT_EQ(mulHiU64(x, y), high);
    uint64_t signedHigh = high - (int64_t(x) < 0 ? y : 0) - (int64_t(y) < 0 ? x : 0);
    ASSERT_EQ(uint64_t(mulHiS64(int64_t(x), int64_t(y))), signedHigh);
  }
  EXPECT_EQ(dp4a(0x01020304, 0x01010101, 10, false, false), 20u);
  EXPECT_EQ(dp4a(0xff000000, 0x02000000, 0, true, false), uint32_t(-2));
  EXPECT_EQ(dp4a(0xff000000, 0x02000000, 0, false, false), 510u);
  EXPECT_EQ(dp4a(0x80808080, 0x80808080, 0, true, true), 4u * 16384u);
  EXPECT_EQ(dp2a(0xffff0002, 0x03020100, 0, true, true, false), 0xffffffffu); // -1*1 + 2*0
  EXPECT_EQ(dp2a(0xffff0002, 0x03020100, 0, true, true, true), 1u);           // -1*3 + 2*2
  EXPECT_EQ(dp2a(0x00080002, 0x00000006, 6, false, false, false), 18u);
  // H200 vectors.
  EXPECT_EQ(dp4a(0xfffffd71, 0xffffff31, 0x1ffffffe, true, false), 0x200010a4u);
  EXPECT_EQ(dp4a(0x12345678, 0x80000001, 0xfffffff, true, false), 0x10000977u);
  EXPECT_EQ(dp2a(0x0ec665f5, 0x22a9d8f3, 0x87654321, true, true, true), 0x8744932au);
}
