// Warp-wide matrix instructions (mma.sync, ldmatrix, stmatrix) as pure data
// movement plus reference arithmetic. Every fragment layout below is the PTX
// ISA's "Matrix Fragments for mma.mMnNkK" formula for that shape and operand,
// written in terms of groupID = laneid >> 2 and threadID_in_group = laneid % 4.
#include "emu/Mma.h"

#include "emu/Arith.h"

#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

namespace ptxforge::emu {

namespace {

/// A .tf32 operand is a 32-bit register in f32 layout of which only the top 19
/// bits (sign, 8-bit exponent, 10-bit mantissa) are tf32. The low 13 bits are
/// ignored (truncated), not rounded: the ISA does not say, an H200 does this.
float widenTf32(uint32_t bits) { return std::bit_cast<float>(bits & 0xffffe000u); }

// ---------------------------------------------------------------------------
// Fragment layouts.

struct Coord { unsigned row, col; };

/// Where element `i` of one lane's fragment sits in the operand matrix, given
/// the lane's groupID `g` and threadID_in_group `t`.
using CoordFn = Coord (*)(unsigned g, unsigned t, unsigned i);

/// How one operand is spread over the warp: elements per lane, bits per element
/// in the registers, and the ISA's (lane, i) → (row, col) formula.
struct OperandLayout {
  unsigned elements = 0;
  unsigned elementBits = 0;
  CoordFn coord = nullptr;
  unsigned words() const { return elements * elementBits / 32; }
};

enum class Arithmetic { F32Accumulate, F64Fma, S32Accumulate };

struct Variant {
  unsigned m, n, k;
  OperandLayout a, b, c; ///< D uses C's layout
  Arithmetic arithmetic;
};

// --- A (m x k, .row) ---------------------------------------------------------
// m16n8k16 .f16/.bf16: a0,a1 row g; a2,a3 row g+8; a4,a5 row g col+8; a6,a7 row g+8 col+8.
Coord aM16K16B16(unsigned g, unsigned t, unsigned i) {
  return {g + 8 * ((i >> 1) & 1), t * 2 + (i & 1) + 8 * (i >> 2)};
}
// m16n8k8 .f16/.bf16: a0,a1 row g; a2,a3 row g+8; col t*2 + (i & 1).
Coord aM16K8B16(unsigned g, unsigned t, unsigned i) { return {g + 8 * (i >> 1), t * 2 + (i & 1)}; }
// m16n8k8 .tf32 and .f64: row g for a0,a2, g+8 for a1,a3; col t for a0,a1, t+4 for a2,a3.
Coord aM16K8B32(unsigned g, unsigned t, unsigned i) { return {g + 8 * (i & 1), t + 4 * (i >> 1)}; }
// m16n8k4 .tf32 and .f64: a0 row g, a1 row g+8; col t.
Coord aM16K4B32(unsigned g, unsigned t, unsigned i) { return {g + 8 * i, t}; }
// m16n8k16 .f64: row g for even i, g+8 for odd; col t + 4 * (i / 2).
Coord aM16K16F64(unsigned g, unsigned t, unsigned i) { return {g + 8 * (i & 1), t + 4 * (i >> 1)}; }
// m8n8k4 .f64: row g, col t.
Coord aM8K4F64(unsigned g, unsigned t, unsigned) { return {g, t}; }
// m16n8k32 .s8/.u8: row g for i in [0,4) and [8,12), else g+8; col t*4 + (i & 3), +16 for i >= 8.
Coord aM16K32B8(unsigned g, unsigned t, unsigned i) {
  return {g + 8 * ((i >> 2) & 1), t * 4 + (i & 3) + 16 * (i >> 3)};
}
// m16n8k16 .s8/.u8: row g for i < 4, g+8 otherwise; col t*4 + (i & 3).
Coord aM16K16B8(unsigned g, unsigned t, unsigned i) { return {g + 8 * (i >> 2), t * 4 + (i & 3)}; }
// m8n8k16 .s8/.u8: row g; col t*4 + i.
Coord aM8K16B8(unsigned g, unsigned t, unsigned i) { return {g, t * 4 + i}; }

// --- B (k x n, .col): the column is always groupID -----------------------------
// k16 .f16/.bf16: row t*2 + (i & 1), +8 for i >= 2.
Coord bK16B16(unsigned g, unsigned t, unsigned i) { return {t * 2 + (i & 1) + 8 * (i >> 1), g}; }
// k8 .f16/.bf16: row t*2 + i.
Coord bK8B16(unsigned g, unsigned t, unsigned i) { return {t * 2 + i, g}; }
// k8 .tf32/.f64, k16 .f64, k4 .tf32/.f64, m8n8k4 .f64: row t + 4*i.
Coord bStride4(unsigned g, unsigned t, unsigned i) { return {t + 4 * i, g}; }
// k32 .s8/.u8: row t*4 + (i & 3), +16 for i >= 4.
Coord bK32B8(unsigned g, unsigned t, unsigned i) { return {t * 4 + (i & 3) + 16 * (i >> 2), g}; }
// k16 .s8/.u8 (m16n8k16 and m8n8k16): row t*4 + i.
Coord bK16B8(unsigned g, unsigned t, unsigned i) { return {t * 4 + i, g}; }

// --- C / D (m x n) -------------------------------------------------------------
// m16n8: c0,c1 row g; c2,c3 row g+8; col t*2 + (i & 1).
Coord cM16N8(unsigned g, unsigned t, unsigned i) { return {g + 8 * (i >> 1), t * 2 + (i & 1)}; }
// m8n8: row g; col t*2 + i.
Coord cM8N8(unsigned g, unsigned t, unsigned i) { return {g, t * 2 + i}; }

std::string shapeName(unsigned m, unsigned n, unsigned k) {
  return "m" + std::to_string(m) + "n" + std::to_string(n) + "k" + std::to_string(k);
}

/// Local type names for diagnostics (dtypeName lives in Types.cpp, which this
/// file deliberately does not depend on).
const char *typeName(DType type) {
  switch (type) {
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::TF32: return "tf32";
  case DType::F32: return "f32";
  case DType::F64: return "f64";
  case DType::S8: return "s8";
  case DType::U8: return "u8";
  case DType::S32: return "s32";
  case DType::F16x2: return "f16x2";
  case DType::BF16x2: return "bf16x2";
  case DType::B16: return "b16";
  case DType::B32: return "b32";
  case DType::U32: return "u32";
  case DType::S16: return "s16";
  case DType::U16: return "u16";
  case DType::E4M3x2: return "e4m3"; // an mma element: see decodeMma
  case DType::E5M2x2: return "e5m2";
  default: return "?";
  }
}

/// The emulated variant for `desc`, or nullopt with `whyNot` set.
std::optional<Variant> selectVariant(const MmaDesc &desc, std::string &whyNot) {
  const std::string shape = "mma." + shapeName(desc.m, desc.n, desc.k);
  const DType a = desc.aType, b = desc.bType, c = desc.cType, d = desc.dType;
  auto fail = [&](std::string reason) -> std::optional<Variant> {
    whyNot = std::move(reason);
    return std::nullopt;
  };
  auto is = [&](unsigned m, unsigned n, unsigned k) { return desc.m == m && desc.n == n && desc.k == k; };
  const bool isInt8 = (a == DType::S8 || a == DType::U8) && (b == DType::S8 || b == DType::U8);
  auto isFp8 = [](DType t) { return t == DType::E4M3x2 || t == DType::E5M2x2; };

  if (a == DType::F16 && b == DType::F16 && is(8, 8, 4))
    return fail(shape + " with .f16 inputs (four quad-pair products per warp) is not emulated");
  if (!desc.aRowMajor || desc.bRowMajor)
    return fail(shape + " is only emulated with the .row.col layout (A row-major, B column-major)");
  if (desc.satfinite && !isInt8) return fail(shape + ": .satfinite applies only to the integer mma shapes");

  if (isInt8) {
    if (c != DType::S32 || d != DType::S32)
      return fail(shape + " with ." + typeName(a) + "/." + typeName(b) + " inputs needs .s32 C and D");
    constexpr OperandLayout c16{4, 32, cM16N8};
    if (is(16, 8, 32)) return Variant{16, 8, 32, {16, 8, aM16K32B8}, {8, 8, bK32B8}, c16, Arithmetic::S32Accumulate};
    if (is(16, 8, 16)) return Variant{16, 8, 16, {8, 8, aM16K16B8}, {4, 8, bK16B8}, c16, Arithmetic::S32Accumulate};
    if (is(8, 8, 16))
      return Variant{8, 8, 16, {4, 8, aM8K16B8}, {4, 8, bK16B8}, {2, 32, cM8N8}, Arithmetic::S32Accumulate};
    return fail(shape + " with ." + typeName(a) + "/." + typeName(b) + " inputs is not emulated");
  }

  if (isFp8(a) || isFp8(b)) {
    // sm_89+: .e4m3/.e5m2 in either operand, f32 accumulators; the fragments
    // are laid out as the .s8/.u8 ones of the same shape.
    if (!isFp8(a) || !isFp8(b) || !is(16, 8, 32))
      return fail(shape + " with ." + typeName(a) + "/." + typeName(b) + " inputs is not emulated");
    if (c != DType::F32 || d != DType::F32) return fail(shape + " with fp8 inputs is only emulated with .f32 C and D");
    return Variant{16, 8, 32, {16, 8, aM16K32B8}, {8, 8, bK32B8}, {4, 32, cM16N8}, Arithmetic::F32Accumulate};
  }
  if (a != b)
    return fail(shape + " with ." + typeName(a) + " A and ." + typeName(b) +
                " B is not emulated (the types must match)");

  switch (a) {
  case DType::F16:
  case DType::BF16: {
    if (!is(16, 8, 16) && !is(16, 8, 8)) return fail(shape + " with ." + typeName(a) + " inputs is not emulated");
    if (c != d) return fail(shape + " requires .dtype to equal .ctype");
    if (!(c == DType::F32 || (a == DType::F16 && c == DType::F16)))
      return fail(shape + " with ." + typeName(a) + " inputs and ." + typeName(c) + " accumulators is not emulated");
    OperandLayout cLayout = c == DType::F16 ? OperandLayout{4, 16, cM16N8} : OperandLayout{4, 32, cM16N8};
    if (desc.k == 16)
      return Variant{16, 8, 16, {8, 16, aM16K16B16}, {4, 16, bK16B16}, cLayout, Arithmetic::F32Accumulate};
    return Variant{16, 8, 8, {4, 16, aM16K8B16}, {2, 16, bK8B16}, cLayout, Arithmetic::F32Accumulate};
  }
  case DType::TF32: {
    if (!is(16, 8, 8) && !is(16, 8, 4)) return fail(shape + " with .tf32 inputs is not emulated");
    if (c != DType::F32 || d != DType::F32) return fail(shape + " with .tf32 inputs needs .f32 C and D");
    constexpr OperandLayout c16{4, 32, cM16N8};
    if (desc.k == 8) return Variant{16, 8, 8, {4, 32, aM16K8B32}, {2, 32, bStride4}, c16, Arithmetic::F32Accumulate};
    return Variant{16, 8, 4, {2, 32, aM16K4B32}, {1, 32, bStride4}, c16, Arithmetic::F32Accumulate};
  }
  case DType::F64: {
    if (c != DType::F64 || d != DType::F64) return fail(shape + " with .f64 inputs needs .f64 C and D");
    constexpr OperandLayout c16{4, 64, cM16N8};
    if (is(8, 8, 4)) return Variant{8, 8, 4, {1, 64, aM8K4F64}, {1, 64, bStride4}, {2, 64, cM8N8}, Arithmetic::F64Fma};
    if (is(16, 8, 4)) return Variant{16, 8, 4, {2, 64, aM16K4B32}, {1, 64, bStride4}, c16, Arithmetic::F64Fma};
    if (is(16, 8, 8)) return Variant{16, 8, 8, {4, 64, aM16K8B32}, {2, 64, bStride4}, c16, Arithmetic::F64Fma};
    if (is(16, 8, 16)) return Variant{16, 8, 16, {8, 64, aM16K16F64}, {4, 64, bStride4}, c16, Arithmetic::F64Fma};
    return fail(shape + " with .f64 inputs is not emulated");
  }
  default: return fail(shape + " with ." + std::string(typeName(a)) + " inputs is not emulated");
  }
}

/// Element `i` of a fragment as a double (exact for every operand type here).
double readElement(const Fragment &fragment, unsigned bits, unsigned i, DType type) {
  switch (bits) {
  case 8: {
    uint8_t byte = uint8_t(fragment[i / 4] >> (8 * (i % 4)));
    if (type == DType::E4M3x2) return f16ToF32(e4m3ToF16(byte));
    if (type == DType::E5M2x2) return f16ToF32(e5m2ToF16(byte));
    return type == DType::S8 ? double(int8_t(byte)) : double(byte);
  }
  case 16: { // the lower 16 bits hold the lower-indexed element
    uint16_t half = uint16_t(fragment[i / 2] >> (16 * (i % 2)));
    return type == DType::BF16 ? bf16ToF32(half) : f16ToF32(half);
  }
  case 32: {
    uint32_t word = fragment[i];
    if (type == DType::S32) return double(int32_t(word));
    if (type == DType::TF32) return widenTf32(word);
    return std::bit_cast<float>(word);
  }
  case 64: return std::bit_cast<double>(uint64_t(fragment[2 * i]) | uint64_t(fragment[2 * i + 1]) << 32);
  }
  assert(false && "unexpected fragment element width");
  return 0;
}

void writeElement(Fragment &fragment, unsigned bits, unsigned i, uint64_t raw) {
  switch (bits) {
  case 16: {
    unsigned shift = 16 * (i % 2);
    fragment[i / 2] = (fragment[i / 2] & ~(uint32_t(0xffff) << shift)) | (uint32_t(raw & 0xffff) << shift);
    return;
  }
  case 32: fragment[i] = uint32_t(raw); return;
  case 64:
    fragment[2 * i] = uint32_t(raw);
    fragment[2 * i + 1] = uint32_t(raw >> 32);
    return;
  }
  assert(false && "unexpected accumulator element width");
}

/// Matrix storage big enough for every shape here (m16 x k32 is the largest).
using Matrix = std::array<double, 16 * 32>;

void gather(const OperandLayout &layout, const WarpFragments &fragments, DType type, unsigned columns, Matrix &out) {
  for (unsigned lane = 0; lane < 32; ++lane)
    for (unsigned i = 0; i < layout.elements; ++i) {
      Coord at = layout.coord(lane >> 2, lane % 4, i);
      out[at.row * columns + at.col] = readElement(fragments[lane], layout.elementBits, i, type);
    }
}

} // namespace

MmaRegisterCounts mmaRegisterCounts(const MmaDesc &desc) {
  std::string whyNot;
  auto variant = selectVariant(desc, whyNot);
  if (!variant) return {};
  return {variant->a.words(), variant->b.words(), variant->c.words(), variant->c.words()};
}

std::string mmaUnsupportedReason(const MmaDesc &desc) {
  std::string whyNot;
  return selectVariant(desc, whyNot) ? std::string() : whyNot;
}

void mmaSync(const MmaDesc &desc, const WarpFragments &a, const WarpFragments &b, const WarpFragments &c,
             WarpFragments &d) {
  std::string whyNot;
  auto variant = selectVariant(desc, whyNot);
  assert(variant && "mmaSync called for a variant mmaUnsupportedReason rejects");
  if (!variant) return;
  const unsigned m = variant->m, n = variant->n, k = variant->k;

  // Everything is read before D is written, so `d` may alias `c`.
  Matrix matA{}, matB{}, matC{};
  gather(variant->a, a, desc.aType, k, matA);
  gather(variant->b, b, desc.bType, n, matB);
  gather(variant->c, c, desc.cType, n, matC);

  std::array<uint64_t, 16 * 8> result{}; // D's raw element bits, row-major m x n
  for (unsigned row = 0; row < m; ++row)
    for (unsigned col = 0; col < n; ++col) {
      const double initial = matC[row * n + col];
      uint64_t raw = 0;
      switch (variant->arithmetic) {
      case Arithmetic::F32Accumulate: {
        // Products of f16/bf16/tf32 values are exact, so a fused multiply-add
        // per step is "exact product, f32 round-to-nearest sum". Tensor cores
        // leave the order unspecified; ascending k from C is our fixed choice.
        // Measured on an H200 with random data: the hardware's f32 D differs
        // from this by at most ~3.2 * 2^-23 * (|C| + sum |A*B|), and f16 D by
        // at most one f16 ulp; data whose sums are exact matches bit for bit.
        float sum = float(initial);
        for (unsigned kk = 0; kk < k; ++kk) sum = std::fma(float(matA[row * k + kk]), float(matB[kk * n + col]), sum);
        raw = desc.dType == DType::F16 ? f32ToF16(sum, Rounding::Rn) : std::bit_cast<uint32_t>(sum);
        break;
      }
      case Arithmetic::F64Fma: {
        // The ISA specifies .f64 fused multiply-add precision (.rn default);
        // an H200 matched this ascending-k fma chain bit for bit.
        double sum = initial;
        for (unsigned kk = 0; kk < k; ++kk) sum = std::fma(matA[row * k + kk], matB[kk * n + col], sum);
        raw = std::bit_cast<uint64_t>(sum);
        break;
      }
      case Arithmetic::S32Accumulate: {
        // |sum| < 2^31 + 32 * 255^2, so int64 holds it exactly; the ISA then
        // clamps (.satfinite) or wraps. Clamping the exact final sum is our
        // reading of "on overflow, the accumulated value is limited".
        int64_t sum = int64_t(initial);
        for (unsigned kk = 0; kk < k; ++kk) sum += int64_t(matA[row * k + kk]) * int64_t(matB[kk * n + col]);
        if (desc.satfinite) {
          if (sum > std::numeric_limits<int32_t>::max()) sum = std::numeric_limits<int32_t>::max();
          if (sum < std::numeric_limits<int32_t>::min()) sum = std::numeric_limits<int32_t>::min();
        }
        raw = uint32_t(uint64_t(sum)); // wraps modulo 2^32
        break;
      }
      }
      result[row * n + col] = raw;
    }

  for (unsigned lane = 0; lane < 32; ++lane)
    for (unsigned i = 0; i < variant->c.elements; ++i) {
      Coord at = variant->c.coord(lane >> 2, lane % 4, i);
      writeElement(d[lane], variant->c.elementBits, i, result[at.row * n + at.col]);
    }
}

// ---------------------------------------------------------------------------
// ldmatrix / stmatrix .m8n8 .b16: lanes 8*i .. 8*i+7 address the rows of
// matrix i; lane l's register i holds row l/4, columns 2*(l%4) and 2*(l%4)+1
// (lower column in the lower half). With .trans the lane holds the same
// positions of the transposed matrix, i.e. memory rows 2*(l%4) and 2*(l%4)+1
// of column l/4.

namespace {

using RowBytes = std::array<std::array<uint8_t, 16>, 32>;

uint16_t loadB16(const RowBytes &rows, unsigned matrix, unsigned row, unsigned col) {
  const auto &bytes = rows[8 * matrix + row];
  return uint16_t(bytes[2 * col] | (bytes[2 * col + 1] << 8)); // shared memory is little-endian
}

void storeB16(RowBytes &rows, unsigned matrix, unsigned row, unsigned col, uint16_t value) {
  auto &bytes = rows[8 * matrix + row];
  bytes[2 * col] = uint8_t(value);
  bytes[2 * col + 1] = uint8_t(value >> 8);
}

/// Memory (row, col) of the element in half `half` of lane `lane`'s register.
Coord ldmatrixElement(unsigned lane, unsigned half, bool transpose) {
  unsigned fragmentRow = lane / 4, fragmentCol = 2 * (lane % 4) + half;
  return transpose ? Coord{fragmentCol, fragmentRow} : Coord{fragmentRow, fragmentCol};
}

} // namespace

void ldmatrix(unsigned num, bool transpose, const RowBytes &rows, WarpFragments &d) {
  assert((num == 1 || num == 2 || num == 4) && "ldmatrix .num must be x1, x2 or x4");
  for (unsigned matrix = 0; matrix < num; ++matrix)
    for (unsigned lane = 0; lane < 32; ++lane) {
      Coord low = ldmatrixElement(lane, 0, transpose), high = ldmatrixElement(lane, 1, transpose);
      d[lane][matrix] = uint32_t(loadB16(rows, matrix, low.row, low.col)) |
                        uint32_t(loadB16(rows, matrix, high.row, high.col)) << 16;
    }
}

void stmatrix(unsigned num, bool transpose, const WarpFragments &s, RowBytes &rows) {
  assert((num == 1 || num == 2 || num == 4) && "stmatrix .num must be x1, x2 or x4");
  for (unsigned matrix = 0; matrix < num; ++matrix)
    for (unsigned lane = 0; lane < 32; ++lane) {
      Coord low = ldmatrixElement(lane, 0, transpose), high = ldmatrixElement(lane, 1, transpose);
      storeB16(rows, matrix, low.row, low.col, uint16_t(s[lane][matrix]));
      storeB16(rows, matrix, high.row, high.col, uint16_t(s[lane][matrix] >> 16));
    }
}

} // namespace ptxforge::emu
