// Tests for the warp-wide matrix instructions: mma.sync against a host matmul
// with the fragments distributed by an independent transcription of the PTX
// ISA's "Matrix Fragments for mma.mMnNkK" formulas, hand-placed single
// elements that a transposed layout cannot satisfy, f16 rounding of D,
// integer wrap/satfinite, and ldmatrix/stmatrix lane by lane.
#include "emu/Mma.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

using namespace ptxforge::emu;

namespace {

// ---------------------------------------------------------------------------
// Element encodings, written here independently of Mma.cpp.

/// Bits of an f16 that represents `value` exactly (normals and zero only).
uint16_t f16Bits(double value) {
  if (value == 0) return std::signbit(value) ? 0x8000 : 0;
  uint16_t sign = value < 0 ? 0x8000 : 0;
  int exponent;
  double fraction = std::frexp(std::fabs(value), &exponent); // value = fraction * 2^exponent, fraction in [0.5, 1)
  double mantissa = (fraction * 2 - 1) * 1024;
  EXPECT_EQ(mantissa, std::floor(mantissa)) << value << " is not an f16";
  EXPECT_TRUE(exponent - 1 >= -14 && exponent - 1 <= 15) << value << " is outside the f16 normal range";
  return uint16_t(sign | ((exponent - 1 + 15) << 10) | int(mantissa));
}

double f16Value(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  double magnitude = exponent == 0    ? std::ldexp(mantissa, -24)
                     : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                      : std::ldexp(1024 + mantissa, exponent - 25);
  return (bits & 0x8000) ? -magnitude : magnitude;
}

uint16_t bf16Bits(double value) {
  uint32_t bits = std::bit_cast<uint32_t>(float(value));
  EXPECT_EQ(bits & 0xffff, 0u) << value << " is not a bf16";
  return uint16_t(bits >> 16);
}

uint32_t tf32Bits(double value) {
  uint32_t bits = std::bit_cast<uint32_t>(float(value));
  EXPECT_EQ(bits & 0x1fff, 0u) << value << " is not a tf32";
  return bits;
}

/// OCP e4m3 bits of `value` (normals and zero only): 4-bit exponent, bias 7.
uint8_t e4m3Bits(double value) {
  if (value == 0) return std::signbit(value) ? 0x80 : 0;
  uint8_t sign = value < 0 ? 0x80 : 0;
  int exponent;
  double fraction = std::frexp(std::fabs(value), &exponent);
  double mantissa = (fraction * 2 - 1) * 8;
  EXPECT_EQ(mantissa, std::floor(mantissa)) << value << " is not an e4m3";
  EXPECT_TRUE(exponent - 1 >= -6 && exponent - 1 <= 8) << value << " is outside the e4m3 normal range";
  return uint8_t(sign | ((exponent - 1 + 7) << 3) | int(mantissa));
}
/// e5m2 is the upper byte of the f16 of the same value.
uint8_t e5m2Bits(double value) {
  uint16_t half = f16Bits(value);
  EXPECT_EQ(half & 0xff, 0) << value << " is not an e5m2";
  return uint8_t(half >> 8);
}

uint64_t encode(DType type, double value) {
  switch (type) {
  case DType::E4M3x2: return e4m3Bits(value); // an mma element (Mma.h)
  case DType::E5M2x2: return e5m2Bits(value);
  case DType::F16: return f16Bits(value);
  case DType::BF16: return bf16Bits(value);
  case DType::TF32: return tf32Bits(value);
  case DType::F32: return std::bit_cast<uint32_t>(float(value));
  case DType::F64: return std::bit_cast<uint64_t>(value);
  case DType::S8: return uint8_t(int8_t(value));
  case DType::U8: return uint8_t(value);
  case DType::S32: return uint32_t(int32_t(value));
  default: ADD_FAILURE() << "no test encoding"; return 0;
  }
}

double decode(DType type, uint64_t bits) {
  switch (type) {
  case DType::F16: return f16Value(uint16_t(bits));
  case DType::F32: return std::bit_cast<float>(uint32_t(bits));
  case DType::F64: return std::bit_cast<double>(bits);
  case DType::S32: return int32_t(uint32_t(bits));
  default: ADD_FAILURE() << "no test decoding"; return 0;
  }
}

unsigned bitsOf(DType type) {
  switch (type) {
  case DType::S8: case DType::U8: case DType::E4M3x2: case DType::E5M2x2: return 8;
  case DType::F16: case DType::BF16: return 16;
  case DType::F64: return 64;
  default: return 32;
  }
}

/// Element `i` of a fragment: packed low to high, the lower index in the lower bits.
void putElement(Fragment &fragment, unsigned bits, unsigned i, uint64_t raw) {
  if (bits == 64) {
    fragment[2 * i] = uint32_t(raw);
    fragment[2 * i + 1] = uint32_t(raw >> 32);
    return;
  }
  unsigned perWord = 32 / bits, shift = bits * (i % perWord);
  uint32_t mask = bits == 32 ? ~0u : ((1u << bits) - 1) << shift;
  fragment[i / perWord] = (fragment[i / perWord] & ~mask) | ((uint32_t(raw) << shift) & mask);
}

uint64_t getElement(const Fragment &fragment, unsigned bits, unsigned i) {
  if (bits == 64) return uint64_t(fragment[2 * i]) | uint64_t(fragment[2 * i + 1]) << 32;
  unsigned perWord = 32 / bits;
  uint64_t word = fragment[i / perWord] >> (bits * (i % perWord));
  return bits == 32 ? word : word & ((1u << bits) - 1);
}

// ---------------------------------------------------------------------------
// The ISA's fragment maps, transcribed case by case from the PTX ISA text
// ("row = groupID for ai where 0 <= i < 2 || 4 <= i < 6, groupID + 8
// otherwise", ...) rather than folded into bit tricks as Mma.cpp does.

struct RowCol { unsigned row, col; };
using FragmentMap = std::function<RowCol(unsigned groupID, unsigned threadID_in_group, unsigned i)>;

struct OperandMap {
  unsigned elements; ///< per lane
  FragmentMap where;
};

struct Shape {
  unsigned m, n, k;
  OperandMap a, b, c;
};

// C/D for every m16n8 shape: row groupID for c0,c1 and groupID + 8 for c2,c3;
// col threadID_in_group * 2 + (i & 1).
const OperandMap accumulatorM16N8{4, [](unsigned g, unsigned t, unsigned i) {
                                    return RowCol{i < 2 ? g : g + 8, t * 2 + (i & 0x1)};
                                  }};
// C/D for m8n8: row groupID; col threadID_in_group * 2 + i.
const OperandMap accumulatorM8N8{2, [](unsigned g, unsigned t, unsigned i) { return RowCol{g, t * 2 + i}; }};

Shape m16n8k16Half() {
  return {16, 8, 16,
          {8, [](unsigned g, unsigned t, unsigned i) {
             unsigned row = (i < 2 || (4 <= i && i < 6)) ? g : g + 8;
             unsigned col = i < 4 ? t * 2 + (i & 0x1) : t * 2 + (i & 0x1) + 8;
             return RowCol{row, col};
           }},
          {4, [](unsigned g, unsigned t, unsigned i) {
             unsigned row = i < 2 ? t * 2 + (i & 0x1) : t * 2 + (i & 0x1) + 8;
             return RowCol{row, g};
           }},
          accumulatorM16N8};
}

Shape m16n8k8Half() {
  return {16, 8, 8,
          {4, [](unsigned g, unsigned t, unsigned i) { return RowCol{i < 2 ? g : g + 8, t * 2 + (i & 0x1)}; }},
          {2, [](unsigned g, unsigned t, unsigned i) { return RowCol{t * 2 + i, g}; }},
          accumulatorM16N8};
}

// .tf32 (and .f64, which the ISA gives the same formulas) at m16n8k8.
Shape m16n8k8Word() {
  return {16, 8, 8,
          {4, [](unsigned g, unsigned t, unsigned i) {
             unsigned row = (i == 0 || i == 2) ? g : g + 8;
             unsigned col = (i == 0 || i == 1) ? t : t + 4;
             return RowCol{row, col};
           }},
          {2, [](unsigned g, unsigned t, unsigned i) { return RowCol{i == 0 ? t : t + 4, g}; }},
          accumulatorM16N8};
}

// .tf32 (and .f64) at m16n8k4.
Shape m16n8k4Word() {
  return {16, 8, 4, {2, [](unsigned g, unsigned t, unsigned i) { return RowCol{i == 0 ? g : g + 8, t}; }},
          {1, [](unsigned g, unsigned t, unsigned) { return RowCol{t, g}; }}, accumulatorM16N8};
}

Shape m16n8k16F64() {
  return {16, 8, 16,
          {8, [](unsigned g, unsigned t, unsigned i) {
             unsigned row = i % 2 == 0 ? g : g + 8;
             unsigned col = i % 2 == 0 ? i * 2 + t : i * 2 - 2 + t;
             return RowCol{row, col};
           }},
          {4, [](unsigned g, unsigned t, unsigned i) { return RowCol{t + i * 4, g}; }},
          accumulatorM16N8};
}

// m8n8k4 .f64: A row laneid >> 2, col laneid % 4; B row laneid % 4, col laneid >> 2.
Shape m8n8k4F64() {
  return {8, 8, 4, {1, [](unsigned g, unsigned t, unsigned) { return RowCol{g, t}; }},
          {1, [](unsigned g, unsigned t, unsigned) { return RowCol{t, g}; }}, accumulatorM8N8};
}

Shape m16n8k32Byte() {
  return {16, 8, 32,
          {16, [](unsigned g, unsigned t, unsigned i) {
             unsigned row = (i < 4 || (8 <= i && i < 12)) ? g : g + 8;
             unsigned col = i < 8 ? t * 4 + (i & 0x3) : t * 4 + (i & 0x3) + 16;
             return RowCol{row, col};
           }},
          {8, [](unsigned g, unsigned t, unsigned i) {
             unsigned row = i < 4 ? t * 4 + (i & 0x3) : t * 4 + (i & 0x3) + 16;
             return RowCol{row, g};
           }},
          accumulatorM16N8};
}

Shape m16n8k16Byte() {
  return {16, 8, 16,
          {8, [](unsigned g, unsigned t, unsigned i) { return RowCol{i < 4 ? g : g + 8, t * 4 + (i & 0x3)}; }},
          {4, [](unsigned g, unsigned t, unsigned i) { return RowCol{t * 4 + i, g}; }},
          accumulatorM16N8};
}

Shape m8n8k16Byte() {
  return {8, 8, 16, {4, [](unsigned g, unsigned t, unsigned i) { return RowCol{g, t * 4 + i}; }},
          {4, [](unsigned g, unsigned t, unsigned i) { return RowCol{t * 4 + i, g}; }}, accumulatorM8N8};
}

MmaDesc describe(const Shape &shape, DType d, DType a, DType b, DType c, bool satfinite = false) {
  MmaDesc desc;
  desc.m = shape.m;
  desc.n = shape.n;
  desc.k = shape.k;
  desc.dType = d;
  desc.aType = a;
  desc.bType = b;
  desc.cType = c;
  desc.satfinite = satfinite;
  return desc;
}

/// Row-major host matrix.
struct Matrix {
  unsigned rows, cols;
  std::vector<double> values;
  Matrix(unsigned r, unsigned c) : rows(r), cols(c), values(size_t(r) * c, 0.0) {}
  double &at(unsigned r, unsigned c) { return values[size_t(r) * cols + c]; }
  double at(unsigned r, unsigned c) const { return values[size_t(r) * cols + c]; }
};

WarpFragments distribute(const OperandMap &map, DType type, const Matrix &matrix) {
  WarpFragments fragments{};
  std::vector<int> owners(matrix.values.size(), 0);
  for (unsigned lane = 0; lane < 32; ++lane)
    for (unsigned i = 0; i < map.elements; ++i) {
      RowCol at = map.where(lane >> 2, lane % 4, i);
      EXPECT_LT(at.row, matrix.rows);
      EXPECT_LT(at.col, matrix.cols);
      ++owners[size_t(at.row) * matrix.cols + at.col];
      putElement(fragments[lane], bitsOf(type), i, encode(type, matrix.at(at.row, at.col)));
    }
  for (int count : owners) EXPECT_EQ(count, 1) << "the test's own map must cover each element once";
  return fragments;
}

Matrix collect(const OperandMap &map, DType type, const WarpFragments &fragments, unsigned rows, unsigned cols) {
  Matrix matrix(rows, cols);
  for (unsigned lane = 0; lane < 32; ++lane)
    for (unsigned i = 0; i < map.elements; ++i) {
      RowCol at = map.where(lane >> 2, lane % 4, i);
      matrix.at(at.row, at.col) = decode(type, getElement(fragments[lane], bitsOf(type), i));
    }
  return matrix;
}

/// D as the hardware would return it, gathered back into a host matrix.
Matrix runMma(const Shape &shape, const MmaDesc &desc, const Matrix &a, const Matrix &b, const Matrix &c) {
  EXPECT_EQ(mmaUnsupportedReason(desc), "");
  WarpFragments fa = distribute(shape.a, desc.aType, a), fb = distribute(shape.b, desc.bType, b),
                fc = distribute(shape.c, desc.cType, c), fd{};
  mmaSync(desc, fa, fb, fc, fd);
  return collect(shape.c, desc.dType, fd, shape.m, shape.n);
}

/// Host reference in double (exact for the data the exact tests use).
Matrix referenceMma(const Matrix &a, const Matrix &b, const Matrix &c) {
  Matrix d = c;
  for (unsigned r = 0; r < a.rows; ++r)
    for (unsigned col = 0; col < b.cols; ++col)
      for (unsigned kk = 0; kk < a.cols; ++kk) d.at(r, col) += a.at(r, kk) * b.at(kk, col);
  return d;
}

Matrix randomMatrix(unsigned rows, unsigned cols, std::mt19937 &rng, int lo, int hi, double scale) {
  Matrix matrix(rows, cols);
  std::uniform_int_distribution<int> pick(lo, hi);
  for (double &value : matrix.values) value = pick(rng) * scale;
  return matrix;
}

void expectSameMatrix(const Matrix &got, const Matrix &want) {
  for (unsigned r = 0; r < want.rows; ++r)
    for (unsigned col = 0; col < want.cols; ++col)
      EXPECT_EQ(got.at(r, col), want.at(r, col)) << "D[" << r << "][" << col << "]";
}

/// Random A, B, C of halves/quarters: every product and partial sum is exact
/// in f32 and every result fits an f16 exactly, so D must equal the reference.
void expectExactFloatMma(const Shape &shape, DType d, DType ab, DType c, unsigned seed) {
  SCOPED_TRACE(::testing::Message() << "m" << shape.m << "n" << shape.n << "k" << shape.k << " seed " << seed);
  std::mt19937 rng(seed);
  Matrix a = randomMatrix(shape.m, shape.k, rng, -8, 8, 0.5);
  Matrix b = randomMatrix(shape.k, shape.n, rng, -8, 8, 0.5);
  Matrix cm = randomMatrix(shape.m, shape.n, rng, -64, 64, 0.25);
  expectSameMatrix(runMma(shape, describe(shape, d, ab, ab, c), a, b, cm), referenceMma(a, b, cm));
}

void expectExactIntMma(const Shape &shape, DType a, DType b, unsigned seed) {
  SCOPED_TRACE(::testing::Message() << "m" << shape.m << "n" << shape.n << "k" << shape.k << " seed " << seed);
  std::mt19937 rng(seed);
  auto bytes = [&](unsigned rows, unsigned cols, DType type) {
    return type == DType::S8 ? randomMatrix(rows, cols, rng, -128, 127, 1) : randomMatrix(rows, cols, rng, 0, 255, 1);
  };
  Matrix ma = bytes(shape.m, shape.k, a), mb = bytes(shape.k, shape.n, b);
  Matrix mc = randomMatrix(shape.m, shape.n, rng, -(1 << 20), 1 << 20, 1);
  expectSameMatrix(runMma(shape, describe(shape, DType::S32, a, b, DType::S32), ma, mb, mc), referenceMma(ma, mb, mc));
}

// ---------------------------------------------------------------------------
// Register counts and unsupported variants.

TEST(Mma, RegisterCountsFollowTheIsaOperandVectors) {
  auto counts = [](const Shape &s, DType d, DType ab, DType c) { return mmaRegisterCounts(describe(s, d, ab, ab, c)); };
  auto expectCounts = [](MmaRegisterCounts got, unsigned a, unsigned b, unsigned c, unsigned d) {
    EXPECT_EQ(got.a, a);
    EXPECT_EQ(got.b, b);
    EXPECT_EQ(got.c, c);
    EXPECT_EQ(got.d, d);
  };
  expectCounts(counts(m16n8k16Half(), DType::F32, DType::F16, DType::F32), 4, 2, 4, 4);
  expectCounts(counts(m16n8k16Half(), DType::F16, DType::F16, DType::F16), 4, 2, 2, 2);
  expectCounts(counts(m16n8k16Half(), DType::F32, DType::BF16, DType::F32), 4, 2, 4, 4);
  expectCounts(counts(m16n8k8Half(), DType::F32, DType::F16, DType::F32), 2, 1, 4, 4);
  expectCounts(counts(m16n8k8Half(), DType::F16, DType::F16, DType::F16), 2, 1, 2, 2);
  expectCounts(counts(m16n8k8Word(), DType::F32, DType::TF32, DType::F32), 4, 2, 4, 4);
  expectCounts(counts(m16n8k4Word(), DType::F32, DType::TF32, DType::F32), 2, 1, 4, 4);
  // f64 counts are 32-bit words: one .f64 register is two.
  expectCounts(counts(m8n8k4F64(), DType::F64, DType::F64, DType::F64), 2, 2, 4, 4);
  expectCounts(counts(m16n8k16F64(), DType::F64, DType::F64, DType::F64), 16, 8, 8, 8);
  expectCounts(counts(m16n8k32Byte(), DType::S32, DType::S8, DType::S32), 4, 2, 4, 4);
  expectCounts(counts(m16n8k16Byte(), DType::S32, DType::U8, DType::S32), 2, 1, 4, 4);
  expectCounts(counts(m8n8k16Byte(), DType::S32, DType::S8, DType::S32), 1, 1, 2, 2);
}

TEST(Mma, UnsupportedVariantsHaveNoRegistersAndAReason) {
  auto expectUnsupported = [](MmaDesc desc, const char *mentions) {
    MmaRegisterCounts counts = mmaRegisterCounts(desc);
    EXPECT_EQ(counts.a + counts.b + counts.c + counts.d, 0u);
    std::string reason = mmaUnsupportedReason(desc);
    EXPECT_NE(reason.find(mentions), std::string::npos) << reason;
  };
  MmaDesc bf16k32 = describe({16, 8, 32, {}, {}, {}}, DType::F32, DType::BF16, DType::BF16, DType::F32);
  expectUnsupported(bf16k32, "mma.m16n8k32 with .bf16 inputs is not emulated");
  expectUnsupported(describe({8, 8, 4, {}, {}, {}}, DType::F32, DType::F16, DType::F16, DType::F32), "m8n8k4 with .f16");
  MmaDesc colMajorA = describe(m16n8k16Half(), DType::F32, DType::F16, DType::F16, DType::F32);
  colMajorA.aRowMajor = false;
  expectUnsupported(colMajorA, ".row.col");
  expectUnsupported(describe(m16n8k16Half(), DType::F32, DType::F16, DType::F16, DType::F16), ".dtype to equal .ctype");
  expectUnsupported(describe(m16n8k16Half(), DType::F16, DType::BF16, DType::BF16, DType::F16), ".bf16");
  expectUnsupported(describe(m16n8k8Word(), DType::F32, DType::BF16, DType::TF32, DType::F32), "must match");
  expectUnsupported(describe(m16n8k16Half(), DType::F32, DType::F16, DType::F16, DType::F32, true), ".satfinite");
  expectUnsupported(describe(m16n8k32Byte(), DType::F32, DType::S8, DType::S8, DType::F32), ".s32 C and D");
  expectUnsupported(describe({16, 8, 64, {}, {}, {}}, DType::S32, DType::S8, DType::S8, DType::S32), "m16n8k64");
}

// ---------------------------------------------------------------------------
// Hand-placed elements: positions worked out by hand from the ISA formulas.
// A transposed or mirrored layout puts these values in other registers.

TEST(Mma, M16N8K16HalfSingleElementsLandWhereTheIsaSays) {
  MmaDesc desc = describe(m16n8k16Half(), DType::F32, DType::F16, DType::F16, DType::F32);
  WarpFragments a{}, b{}, c{}, d{};
  // A[3][10] = 2: row 3 = groupID 3, col 10 = tig*2 + 8 with tig 1 → a4, lane 13, register 2 low half.
  a[13][2] = f16Bits(2.0);
  // B[10][5] = 3: col 5 = groupID 5, row 10 = tig*2 + 8 with tig 1 → b2, lane 21, register 1 low half.
  b[21][1] = f16Bits(3.0);
  // C[3][5] = 1: row 3 → groupID 3 (c0/c1), col 5 = tig*2 + 1 with tig 2 → c1 of lane 14.
  c[14][1] = std::bit_cast<uint32_t>(1.0f);
  // C[12][1] = 0.5: row 12 → groupID 4 (c2/c3), col 1 → tig 0, c3 of lane 16.
  c[16][3] = std::bit_cast<uint32_t>(0.5f);
  mmaSync(desc, a, b, c, d);
  for (unsigned lane = 0; lane < 32; ++lane)
    for (unsigned r = 0; r < 4; ++r) {
      float want = lane == 14 && r == 1 ? 7.0f : lane == 16 && r == 3 ? 0.5f : 0.0f;
      EXPECT_EQ(std::bit_cast<float>(d[lane][r]), want) << "lane " << lane << " d" << r;
    }
}

TEST(Mma, M16N8K8Tf32SingleElementsLandWhereTheIsaSays) {
  MmaDesc desc = describe(m16n8k8Word(), DType::F32, DType::TF32, DType::TF32, DType::F32);
  WarpFragments a{}, b{}, c{}, d{};
  a[9][3] = tf32Bits(1.5);                       // A[10][5]: groupID 2 (+8), col tig 1 + 4 → a3 of lane 9
  b[29][1] = tf32Bits(-4.0);                     // B[5][7]: groupID 7, row tig 1 + 4 → b1 of lane 29
  c[11][3] = std::bit_cast<uint32_t>(0.25f);      // C[10][7]: groupID 2 (+8), col 3*2 + 1 → c3 of lane 11
  mmaSync(desc, a, b, c, d);
  EXPECT_EQ(std::bit_cast<float>(d[11][3]), -5.75f);
  EXPECT_EQ(std::bit_cast<float>(d[9][3]), 0.0f); // the transposed position stays zero
}

TEST(Mma, M16N8K32Int8SingleElementsLandWhereTheIsaSays) {
  MmaDesc desc = describe(m16n8k32Byte(), DType::S32, DType::S8, DType::S8, DType::S32);
  WarpFragments a{}, b{}, c{}, d{};
  a[5][3] = 3;                  // A[9][20]: groupID 1 (+8), col tig 1 * 4 + 16 → a12, lane 5, register 3 byte 0
  b[25][1] = uint8_t(int8_t(-2)); // B[20][6]: groupID 6, row tig 1 * 4 + 16 → b4, lane 25, register 1 byte 0
  c[7][2] = 100;                // C[9][6]: groupID 1 (+8), col 3 * 2 → c2 of lane 7
  mmaSync(desc, a, b, c, d);
  for (unsigned lane = 0; lane < 32; ++lane)
    for (unsigned r = 0; r < 4; ++r) EXPECT_EQ(int32_t(d[lane][r]), lane == 7 && r == 2 ? 94 : 0) << "lane " << lane;
}

TEST(Mma, M8N8K4F64SingleElementsLandWhereTheIsaSays) {
  MmaDesc desc = describe(m8n8k4F64(), DType::F64, DType::F64, DType::F64, DType::F64);
  WarpFragments a{}, b{}, c{}, d{};
  auto put = [](Fragment &f, unsigned reg, double v) { putElement(f, 64, reg, std::bit_cast<uint64_t>(v)); };
  put(a[6 * 4 + 1], 0, 0.5);  // A[6][1]: row laneid >> 2, col laneid % 4 → lane 25
  put(b[1 + 4 * 3], 0, 10.0); // B[1][3]: row laneid % 4, col laneid >> 2 → lane 13
  put(c[6 * 4 + 1], 1, 1.0);  // C[6][3]: groupID 6, col tig 1 * 2 + 1 → c1 of lane 25
  mmaSync(desc, a, b, c, d);
  EXPECT_EQ(std::bit_cast<double>(getElement(d[25], 64, 1)), 6.0);
  EXPECT_EQ(std::bit_cast<double>(getElement(d[25], 64, 0)), 0.0);
}

// ---------------------------------------------------------------------------
// Random matrices against the host reference.

TEST(Mma, HalfAndBf16InputsMatchTheReference) {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    expectExactFloatMma(m16n8k16Half(), DType::F32, DType::F16, DType::F32, seed);
    expectExactFloatMma(m16n8k16Half(), DType::F16, DType::F16, DType::F16, seed);
    expectExactFloatMma(m16n8k16Half(), DType::F32, DType::BF16, DType::F32, seed);
    expectExactFloatMma(m16n8k8Half(), DType::F32, DType::F16, DType::F32, seed);
    expectExactFloatMma(m16n8k8Half(), DType::F16, DType::F16, DType::F16, seed);
    expectExactFloatMma(m16n8k8Half(), DType::F32, DType::BF16, DType::F32, seed);
  }
}

TEST(Mma, Tf32InputsMatchTheReference) {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    expectExactFloatMma(m16n8k8Word(), DType::F32, DType::TF32, DType::F32, seed);
    expectExactFloatMma(m16n8k4Word(), DType::F32, DType::TF32, DType::F32, seed);
  }
}

TEST(Mma, F64MatchesTheReference) {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    expectExactFloatMma(m8n8k4F64(), DType::F64, DType::F64, DType::F64, seed);
    expectExactFloatMma(m16n8k4Word(), DType::F64, DType::F64, DType::F64, seed);
    expectExactFloatMma(m16n8k8Word(), DType::F64, DType::F64, DType::F64, seed);
    expectExactFloatMma(m16n8k16F64(), DType::F64, DType::F64, DType::F64, seed);
  }
}

TEST(Mma, Int8MatchesTheReferenceExactly) {
  for (unsigned seed = 1; seed <= 2; ++seed)
    for (DType a : {DType::S8, DType::U8})
      for (DType b : {DType::S8, DType::U8}) {
        expectExactIntMma(m16n8k32Byte(), a, b, seed);
        expectExactIntMma(m16n8k16Byte(), a, b, seed);
        expectExactIntMma(m8n8k16Byte(), a, b, seed);
      }
}

TEST(Mma, Fp8InputsMatchTheReference) {
  // m16n8k32 .e4m3/.e5m2 (sm_89+) in every pairing: the fragments are the
  // 8-bit ones of m16n8k32; halves in [-4, 4] are exact in both formats, so
  // every product and sum is exact in f32.
  for (unsigned seed = 1; seed <= 2; ++seed)
    for (DType a : {DType::E4M3x2, DType::E5M2x2})
      for (DType b : {DType::E4M3x2, DType::E5M2x2}) {
        SCOPED_TRACE(::testing::Message() << "seed " << seed);
        std::mt19937 rng(seed);
        const Shape shape = m16n8k32Byte();
        Matrix ma = randomMatrix(shape.m, shape.k, rng, -8, 8, 0.5), mb = randomMatrix(shape.k, shape.n, rng, -8, 8, 0.5);
        Matrix mc = randomMatrix(shape.m, shape.n, rng, -64, 64, 0.25);
        expectSameMatrix(runMma(shape, describe(shape, DType::F32, a, b, DType::F32), ma, mb, mc),
                         referenceMma(ma, mb, mc));
      }
  // Subnormal e4m3 (2^-9) and the largest finite one (448).
  const Shape shape = m16n8k32Byte();
  Matrix a(shape.m, shape.k), b(shape.k, shape.n), c(shape.m, shape.n);
  a.at(0, 0) = 448, b.at(0, 0) = 0.5;
  a.at(1, 3) = 1, b.at(3, 1) = std::ldexp(1.0, -9);
  MmaDesc desc = describe(shape, DType::F32, DType::E4M3x2, DType::E4M3x2, DType::F32);
  WarpFragments fa = distribute(shape.a, desc.aType, a), fb{}, fc = distribute(shape.c, DType::F32, c), fd{};
  // 2^-9 is below e4m3's normals: its bits are 0x01, placed by hand.
  Matrix bNormal = b;
  bNormal.at(3, 1) = 0;
  fb = distribute(shape.b, desc.bType, bNormal);
  for (unsigned lane = 0; lane < 32; ++lane)
    for (unsigned i = 0; i < shape.b.elements; ++i) {
      RowCol at = shape.b.where(lane >> 2, lane % 4, i);
      if (at.row == 3 && at.col == 1) putElement(fb[lane], 8, i, 0x01);
    }
  mmaSync(desc, fa, fb, fc, fd);
  Matrix d = collect(shape.c, DType::F32, fd, shape.m, shape.n);
  EXPECT_EQ(d.at(0, 0), 224.0);
  EXPECT_EQ(d.at(1, 1), std::ldexp(1.0, -9));
}

/// Real-valued data (random f16/bf16 bit patterns over a wide exponent range):
/// D within f32 accumulation error of a double reference. Per-op tolerance:
/// k roundings of at most 2^-24 relative to the running magnitude.
TEST(Mma, RealValuedHalfAndBf16StayWithinF32AccumulationError) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> exponent(-8, 8), mantissa(0, 1023), sign(0, 1);
  std::uniform_real_distribution<double> uniform(-4, 4);
  for (DType type : {DType::F16, DType::BF16}) {
    Shape shape = m16n8k16Half();
    Matrix a(16, 16), b(16, 8), c(16, 8);
    auto pick = [&] {
      double v = std::ldexp(1 + mantissa(rng) / 1024.0, exponent(rng)) * (sign(rng) ? -1 : 1);
      return type == DType::F16 ? v : double(std::bit_cast<float>(std::bit_cast<uint32_t>(float(v)) & 0xffff0000u));
    };
    for (double &v : a.values) v = pick();
    for (double &v : b.values) v = pick();
    for (double &v : c.values) v = double(float(uniform(rng)));
    Matrix got = runMma(shape, describe(shape, DType::F32, type, type, DType::F32), a, b, c);
    Matrix want = referenceMma(a, b, c);
    for (unsigned r = 0; r < 16; ++r)
      for (unsigned col = 0; col < 8; ++col) {
        double magnitude = std::fabs(c.at(r, col));
        for (unsigned kk = 0; kk < 16; ++kk) magnitude += std::fabs(a.at(r, kk) * b.at(kk, col));
        EXPECT_NEAR(got.at(r, col), want.at(r, col), 16 * std::ldexp(magnitude, -24)) << r << "," << col;
      }
  }
}

// ---------------------------------------------------------------------------
// Arithmetic details the emulator fixes where the ISA leaves them open.

/// D[0][0] of m16n8k8 f16.f16.f16.f16 from A[0][0], B[0][0], C[0][0] (all lane 0, low halves).
uint16_t f16SingleProduct(uint16_t a, uint16_t b, uint16_t c) {
  MmaDesc desc = describe(m16n8k8Half(), DType::F16, DType::F16, DType::F16, DType::F16);
  WarpFragments fa{}, fb{}, fc{}, fd{};
  fa[0][0] = a;
  fb[0][0] = b;
  fc[0][0] = c;
  mmaSync(desc, fa, fb, fc, fd);
  return uint16_t(fd[0][0]);
}

TEST(Mma, HalfAccumulatorsRoundToNearestEven) {
  const uint16_t one = 0x3c00, pow2m11 = 0x1000, pow2m12 = 0x0c00;
  EXPECT_EQ(f16SingleProduct(pow2m11, one, one), 0x3c00);    // 1 + 2^-11: tie → even (1.0)
  EXPECT_EQ(f16SingleProduct(pow2m11, one, 0x3c01), 0x3c02); // (1 + 2^-10) + 2^-11: tie → even (1 + 2^-9)
  EXPECT_EQ(f16SingleProduct(f16Bits(16), one, 0x7bff), 0x7c00); // 65504 + 16 = 65520: tie → inf
  EXPECT_EQ(f16SingleProduct(f16Bits(15), one, 0x7bff), 0x7bff); // 65519 → 65504
  EXPECT_EQ(f16SingleProduct(pow2m12, 0x0800, 0), 0x0000);       // 2^-12 * 2^-13 = 2^-25: tie → +0
  EXPECT_EQ(f16SingleProduct(pow2m12, 0x0a00, 0), 0x0001);       // 1.5 * 2^-25 → 2^-24 (subnormal)
  EXPECT_EQ(f16SingleProduct(0x0001, f16Bits(1024), 0), 0x0400); // subnormal input 2^-24 widens exactly
}

TEST(Mma, FloatAccumulationIsF32InAscendingKFromC) {
  // C = 2^24, then +1 twice: each f32 step ties back to 2^24 (exact would be 2^24 + 2).
  MmaDesc desc = describe(m16n8k8Half(), DType::F32, DType::BF16, DType::BF16, DType::F32);
  WarpFragments a{}, b{}, c{}, d{};
  a[0][0] = uint32_t(bf16Bits(1)) | uint32_t(bf16Bits(1)) << 16; // A[0][0], A[0][1]
  b[0][0] = uint32_t(bf16Bits(1)) | uint32_t(bf16Bits(1)) << 16; // B[0][0], B[1][0]
  c[0][0] = std::bit_cast<uint32_t>(16777216.0f);
  mmaSync(desc, a, b, c, d);
  EXPECT_EQ(std::bit_cast<float>(d[0][0]), 16777216.0f);
}

TEST(Mma, Bf16SubnormalsAndTf32LowBits) {
  MmaDesc bf = describe(m16n8k8Half(), DType::F32, DType::BF16, DType::BF16, DType::F32);
  WarpFragments a{}, b{}, c{}, d{};
  a[0][0] = 0x0001; // bf16 subnormal 2^-133
  b[0][0] = 0x4b00; // 2^23
  mmaSync(bf, a, b, c, d);
  EXPECT_EQ(std::bit_cast<float>(d[0][0]), std::ldexp(1.0f, -110));

  // Only the top 19 bits of a .tf32 register are the value; the rest is ignored.
  MmaDesc tf = describe(m16n8k4Word(), DType::F32, DType::TF32, DType::TF32, DType::F32);
  a = {}, b = {}, c = {}, d = {};
  a[0][0] = std::bit_cast<uint32_t>(1.0f) | 0x1fff;
  b[0][0] = std::bit_cast<uint32_t>(3.0f) | 0x1000;
  mmaSync(tf, a, b, c, d);
  EXPECT_EQ(std::bit_cast<float>(d[0][0]), 3.0f);
}

TEST(Mma, IntegerAccumulatorsWrapOrSaturate) {
  for (bool satfinite : {false, true}) {
    MmaDesc desc = describe(m16n8k16Byte(), DType::S32, DType::U8, DType::S8, DType::S32, satfinite);
    WarpFragments a{}, b{}, c{}, d{};
    a[0][0] = 255;                          // A[0][0] (u8)
    b[0][0] = 127;                          // B[0][0] (s8)
    c[0][0] = uint32_t(std::numeric_limits<int32_t>::max() - 5);
    a[1][0] = 255;                          // A[0][4] (lane 1: tig 1 → col 4)
    b[1][0] = uint8_t(int8_t(-128));        // B[4][0] (lane 1: row tig 1 * 4, col groupID 0)
    c[0][1] = uint32_t(std::numeric_limits<int32_t>::min() + 5); // C[0][1]
    mmaSync(desc, a, b, c, d);
    // D[0][0] = (2^31 - 6) + 255*127 + 255*(-128) = 2^31 - 261: no overflow.
    EXPECT_EQ(int32_t(d[0][0]), std::numeric_limits<int32_t>::max() - 260);
    // Overflow both ways on other elements.
    WarpFragments a2{}, b2{}, d2{};
    a2[0][0] = 255;
    b2[0][0] = 127;
    mmaSync(desc, a2, b2, c, d2);
    int64_t exact = int64_t(std::numeric_limits<int32_t>::max()) - 5 + 255 * 127;
    EXPECT_EQ(int32_t(d2[0][0]), satfinite ? std::numeric_limits<int32_t>::max() : int32_t(uint32_t(uint64_t(exact))));
    // C[0][1] + A[0][0..]·B[..][1] = INT_MIN + 5 + 0 (B column 1 is zero).
    EXPECT_EQ(int32_t(d2[0][1]), std::numeric_limits<int32_t>::min() + 5);
  }
  // Negative overflow with .satfinite clamps to INT_MIN.
  MmaDesc desc = describe(m16n8k16Byte(), DType::S32, DType::U8, DType::S8, DType::S32, true);
  WarpFragments a{}, b{}, c{}, d{};
  a[0][0] = 255;
  b[0][0] = uint8_t(int8_t(-128));
  c[0][0] = uint32_t(std::numeric_limits<int32_t>::min() + 5);
  mmaSync(desc, a, b, c, d);
  EXPECT_EQ(int32_t(d[0][0]), std::numeric_limits<int32_t>::min());
}

TEST(Mma, DestinationMayAliasTheAccumulator) {
  Shape shape = m16n8k16Half();
  MmaDesc desc = describe(shape, DType::F32, DType::F16, DType::F16, DType::F32);
  std::mt19937 rng(3);
  Matrix a = randomMatrix(16, 16, rng, -8, 8, 0.5), b = randomMatrix(16, 8, rng, -8, 8, 0.5),
         c = randomMatrix(16, 8, rng, -64, 64, 0.25);
  WarpFragments fa = distribute(shape.a, DType::F16, a), fb = distribute(shape.b, DType::F16, b),
                fc = distribute(shape.c, DType::F32, c);
  mmaSync(desc, fa, fb, fc, fc);
  Matrix got = collect(shape.c, DType::F32, fc, 16, 8), want = referenceMma(a, b, c);
  EXPECT_EQ(got.values, want.values);
}

// ---------------------------------------------------------------------------
// ldmatrix / stmatrix.

using RowBytes = std::array<std::array<uint8_t, 16>, 32>;

/// Element (row, col) of matrix `matrix` is 64 * matrix + 8 * row + col, stored
/// little-endian at the row address lane 8 * matrix + row supplies.
RowBytes numberedMatrices() {
  RowBytes rows{};
  for (unsigned matrix = 0; matrix < 4; ++matrix)
    for (unsigned row = 0; row < 8; ++row)
      for (unsigned col = 0; col < 8; ++col) {
        uint16_t value = uint16_t(64 * matrix + 8 * row + col);
        rows[8 * matrix + row][2 * col] = uint8_t(value);
        rows[8 * matrix + row][2 * col + 1] = uint8_t(value >> 8);
      }
  return rows;
}

TEST(Ldmatrix, EveryLaneGetsTwoConsecutiveElementsOfItsRow) {
  RowBytes rows = numberedMatrices();
  for (unsigned num : {1u, 2u, 4u}) {
    WarpFragments d{};
    for (auto &fragment : d) fragment.fill(0xdeadbeef);
    ldmatrix(num, false, rows, d);
    for (unsigned lane = 0; lane < 32; ++lane) {
      for (unsigned matrix = 0; matrix < num; ++matrix) {
        uint32_t low = 64 * matrix + 8 * (lane / 4) + 2 * (lane % 4);
        EXPECT_EQ(d[lane][matrix], low | (low + 1) << 16) << "x" << num << " lane " << lane << " matrix " << matrix;
      }
      for (unsigned reg = num; reg < 16; ++reg) EXPECT_EQ(d[lane][reg], 0xdeadbeefu) << "untouched";
    }
  }
  // By hand: x4, lane 5, matrix 2 → row 1, columns 2 and 3 → 138 and 139.
  WarpFragments d{};
  ldmatrix(4, false, rows, d);
  EXPECT_EQ(d[5][2], 138u | 139u << 16);
}

TEST(Ldmatrix, TransLoadsTheTransposedMatrix) {
  RowBytes rows = numberedMatrices();
  for (unsigned num : {1u, 2u, 4u}) {
    WarpFragments d{};
    ldmatrix(num, true, rows, d);
    for (unsigned lane = 0; lane < 32; ++lane)
      for (unsigned matrix = 0; matrix < num; ++matrix) {
        // Row lane/4 and columns 2*(lane%4), +1 of the transpose: memory rows
        // 2*(lane%4) and 2*(lane%4)+1 of column lane/4.
        uint32_t low = 64 * matrix + 8 * (2 * (lane % 4)) + lane / 4;
        EXPECT_EQ(d[lane][matrix], low | (low + 8) << 16) << "x" << num << " lane " << lane << " matrix " << matrix;
      }
  }
  // By hand: lane 5, matrix 2 → memory (2, 1) = 145 and (3, 1) = 153.
  WarpFragments d{};
  ldmatrix(4, true, rows, d);
  EXPECT_EQ(d[5][2], 145u | 153u << 16);
}

TEST(Stmatrix, InvertsLdmatrix) {
  RowBytes rows = numberedMatrices();
  for (bool transpose : {false, true})
    for (unsigned num : {1u, 2u, 4u}) {
      WarpFragments fragments{};
      ldmatrix(num, transpose, rows, fragments);
      RowBytes stored;
      for (auto &row : stored) row.fill(0xee);
      stmatrix(num, transpose, fragments, stored);
      for (unsigned lane = 0; lane < 32; ++lane) {
        bool addressed = lane < 8 * num;
        for (unsigned byte = 0; byte < 16; ++byte)
          EXPECT_EQ(stored[lane][byte], addressed ? rows[lane][byte] : 0xee)
              << "trans " << transpose << " x" << num << " row " << lane << " byte " << byte;
      }
    }
}

TEST(Stmatrix, LaneZeroStoresTheFirstTwoElements) {
  WarpFragments s{};
  s[0][0] = 0x2222'1111; // lane 0: row 0, columns 0 and 1
  s[7][0] = 0x4444'3333; // lane 7: row 1, columns 6 and 7
  RowBytes rows{};
  stmatrix(1, false, s, rows);
  EXPECT_EQ(rows[0][0], 0x11);
  EXPECT_EQ(rows[0][1], 0x11);
  EXPECT_EQ(rows[0][2], 0x22);
  EXPECT_EQ(rows[1][12], 0x33);
  EXPECT_EQ(rows[1][14], 0x44);
  rows = {};
  stmatrix(1, true, s, rows); // transposed: lane 7's pair goes to rows 6 and 7 of column 1
  EXPECT_EQ(rows[0][0], 0x11);
  EXPECT_EQ(rows[1][0], 0x22);
  EXPECT_EQ(rows[6][2], 0x33);
  EXPECT_EQ(rows[7][2], 0x44);
}

} // namespace
