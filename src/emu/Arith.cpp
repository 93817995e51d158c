// Numerics of PTX on the host. The small formats (f16, bf16, tf32, fp8) are
// encoded by hand from an exact value with one rounding; f32/f64 arithmetic
// uses the host's IEEE unit, switching its rounding mode (and only then) for
// the directed modes; the .approx functions are computed in double and moved
// by a deterministic part of the ISA's documented error. Where the PTX ISA leaves a result open (NaN bit patterns, .ftz
// tininess, out-of-range operands) we do what an H200 (sm_90, driver 580)
// does: every such rule below was measured there, bit for bit, over
// exhaustive f16/bf16 inputs and ~10^4 special and random inputs per
// instruction.
#include "emu/Arith.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cfenv>
#include <cmath>
#include <limits>
#include <numbers>

namespace ptxforge::emu {

namespace {

// ---------------------------------------------------------------------------
// Bit views and NaNs

inline uint32_t bitsOf(float value) { return std::bit_cast<uint32_t>(value); }
inline uint64_t bitsOf(double value) { return std::bit_cast<uint64_t>(value); }
inline float f32FromBits(uint32_t bits) { return std::bit_cast<float>(bits); }
inline double f64FromBits(uint64_t bits) { return std::bit_cast<double>(bits); }

// NaN results. f32, f16 and bf16 operations write the canonical NaN whatever
// their inputs were (payload and sign dropped). f64 operations behave like
// IEEE 754 hardware: an input NaN propagates, quieted, and an invalid
// operation (inf - inf, 0 * inf, sqrt(-1)) gives the default NaN 0xfff8...;
// conversions to and from f64 keep the sign and the top payload bits.
constexpr uint32_t kNaN32 = 0x7fffffff;
constexpr uint64_t kDefaultNaN64 = 0xfff8000000000000;
constexpr uint64_t kQuietBit64 = 0x0008000000000000;
constexpr uint16_t kNaN16 = 0x7fff;
constexpr uint16_t kNaNBf16 = 0x7fff;
constexpr uint32_t kNaNTf32 = 0x7fffe000;
constexpr uint8_t kNaNE4M3 = 0x7f;
constexpr uint8_t kNaNE5M2 = 0x7f;

inline float canonical(float value) { return value != value ? f32FromBits(kNaN32) : value; }
inline double quiet(double nan) { return f64FromBits(bitsOf(nan) | kQuietBit64); }
/// An f64 result computed from non-NaN inputs: a NaN here is an invalid operation.
inline double invalidToDefault(double value) { return value != value ? f64FromBits(kDefaultNaN64) : value; }

constexpr float kMinNormal32 = 0x1p-126f;

inline bool isNaN16(uint16_t bits) { return (bits & 0x7fff) > 0x7c00; }
inline bool isNaNBf16(uint16_t bits) { return (bits & 0x7fff) > 0x7f80; }

// ---------------------------------------------------------------------------
// Rounding directions

enum class Direction : uint8_t { NearestEven, NearestAway, TowardZero, Down, Up };

constexpr Direction directionOf(Rounding r) {
  switch (r) {
  case Rounding::Rna: return Direction::NearestAway;
  case Rounding::Rz:
  case Rounding::Rzi: return Direction::TowardZero;
  case Rounding::Rm:
  case Rounding::Rmi: return Direction::Down;
  case Rounding::Rp:
  case Rounding::Rpi: return Direction::Up;
  default: return Direction::NearestEven; // None, Rn, Rni
  }
}

constexpr bool isIntegralRounding(Rounding r) {
  return r == Rounding::Rni || r == Rounding::Rzi || r == Rounding::Rmi || r == Rounding::Rpi;
}

/// Whether truncating a magnitude to `kept` (dropping `rest`, where `half` is
/// half a unit of the kept part) must be followed by adding one unit.
inline bool roundsUp(Direction d, bool negative, uint64_t kept, uint64_t rest, uint64_t half) {
  switch (d) {
  case Direction::NearestEven: return rest > half || (rest == half && (kept & 1));
  case Direction::NearestAway: return rest >= half;
  case Direction::TowardZero: return false;
  case Direction::Down: return negative && rest != 0;
  case Direction::Up: return !negative && rest != 0;
  }
  return false;
}

/// Rounds to an integral value in double (exact for every input, independent
/// of the host rounding mode).
double roundIntegral(double value, Direction d) {
  switch (d) {
  case Direction::NearestEven: {
    double nearest = std::round(value); // ties away from zero
    if (std::fabs(value - std::trunc(value)) == 0.5) nearest = 2.0 * std::round(value * 0.5);
    return nearest;
  }
  case Direction::NearestAway: return std::round(value);
  case Direction::TowardZero: return std::trunc(value);
  case Direction::Down: return std::floor(value);
  case Direction::Up: return std::ceil(value);
  }
  return value;
}

// ---------------------------------------------------------------------------
// Encoding an exact value into a binary floating-point format

/// A binary interchange-like format: sign, `expBits` exponent, `manBits`
/// fraction. `maxFinite` and `overflowBits` are magnitudes: what overflow
/// gives when rounding toward zero or to nearest (infinity, or NaN for e4m3,
/// which has no infinity).
struct Format {
  unsigned expBits;
  unsigned manBits;
  int bias;
  int maxExp;
  uint64_t maxFinite;
  uint64_t overflowBits;
};

constexpr Format kF64Format{11, 52, 1023, 1023, 0x7fefffffffffffffull, 0x7ff0000000000000ull};
constexpr Format kF32Format{8, 23, 127, 127, 0x7f7fffff, 0x7f800000};
constexpr Format kF16Format{5, 10, 15, 15, 0x7bff, 0x7c00};
constexpr Format kBf16Format{8, 7, 127, 127, 0x7f7f, 0x7f80};
// OCP FP8: e4m3 reuses the top exponent for normals (max 448) and has only
// S.1111.111 as NaN; e5m2 is IEEE-like (max 57344, infinities).
constexpr Format kE4M3Format{4, 3, 7, 8, 0x7e, 0x7f};
constexpr Format kE5M2Format{5, 2, 15, 15, 0x7b, 0x7c};

inline uint64_t signBit(const Format &f) { return uint64_t(1) << (f.expBits + f.manBits); }

uint64_t overflowMagnitude(const Format &f, bool negative, Direction d) {
  bool toInfinity = d == Direction::NearestEven || d == Direction::NearestAway ||
                    (d == Direction::Up && !negative) || (d == Direction::Down && negative);
  return toInfinity ? f.overflowBits : f.maxFinite;
}

/// Encodes (-1)^negative * magnitude * 2^exponent2 in `f`, rounding once in
/// direction `d`: subnormal results and overflow (to infinity or max-finite)
/// as IEEE 754 says for that direction.
uint64_t encodeExact(const Format &f, bool negative, uint64_t magnitude, int exponent2, Direction d) {
  uint64_t sign = negative ? signBit(f) : 0;
  if (magnitude == 0) return sign;
  int leading = 63 - std::countl_zero(magnitude);
  int exponent = leading + exponent2; // of the leading bit
  if (exponent > f.maxExp) return sign | overflowMagnitude(f, negative, d);
  int minExp = 1 - f.bias;
  int quantumExp = std::max(exponent, minExp) - int(f.manBits);
  int shift = quantumExp - exponent2; // bits dropped
  uint64_t kept;
  if (shift <= 0) {
    kept = magnitude << -shift; // exact: at most manBits+1 bits
  } else {
    uint64_t rest, half;
    if (shift > 64) { // everything dropped, and less than half a unit
      kept = 0;
      rest = 1;
      half = 2;
    } else if (shift == 64) {
      kept = 0;
      rest = magnitude;
      half = uint64_t(1) << 63;
    } else {
      kept = magnitude >> shift;
      rest = magnitude & ((uint64_t(1) << shift) - 1);
      half = uint64_t(1) << (shift - 1);
    }
    if (roundsUp(d, negative, kept, rest, half)) ++kept;
  }
  // A subnormal `kept` that rounded up to 2^manBits is the encoding of the
  // smallest normal; a normal one that carried to 2^(manBits+1) bumps the
  // exponent field. Both fall out of the plain sum below.
  uint64_t bits = exponent < minExp ? kept
                                    : (uint64_t(exponent + f.bias) << f.manBits) + kept - (uint64_t(1) << f.manBits);
  if (bits > f.maxFinite) return sign | overflowMagnitude(f, negative, d);
  return sign | bits;
}

/// A finite double as magnitude * 2^exponent2.
struct ExactValue {
  bool negative;
  uint64_t magnitude;
  int exponent2;
};

ExactValue decompose(double value) {
  uint64_t bits = bitsOf(value);
  int biased = int((bits >> 52) & 0x7ff);
  uint64_t fraction = bits & ((uint64_t(1) << 52) - 1);
  if (biased == 0) return {(bits >> 63) != 0, fraction, -1074};
  return {(bits >> 63) != 0, fraction | (uint64_t(1) << 52), biased - 1075};
}

/// Rounds a double into `f`; NaN becomes `nanBits`.
uint64_t encodeDouble(const Format &f, double value, Direction d, uint64_t nanBits) {
  if (value != value) return nanBits;
  if (std::isinf(value)) return (value < 0 ? signBit(f) : 0) | f.overflowBits;
  ExactValue exact = decompose(value);
  return encodeExact(f, exact.negative, exact.magnitude, exact.exponent2, d);
}

/// Round-to-nearest-even fast paths from double (the result of every f16 and
/// bf16 operation), with the same bit tricks as f32ToF16; anything they do not
/// cover goes through encodeDouble.
uint16_t doubleToF16(double value, Direction d) {
  uint64_t bits = bitsOf(value);
  uint64_t magnitude = bits & 0x7fffffffffffffff;
  if (d != Direction::NearestEven || magnitude > 0x7ff0000000000000 || magnitude < 0x3f10000000000000)
    return uint16_t(encodeDouble(kF16Format, value, d, kNaN16)); // NaN, other modes, f16 subnormals
  uint16_t sign = uint16_t((bits >> 48) & 0x8000);
  if (magnitude >= 0x40effe0000000000) return sign | 0x7c00; // >= 65520 rounds to infinity
  uint64_t rebased = magnitude - (uint64_t(1008) << 52);    // exponent bias 1023 -> 15
  rebased += (uint64_t(1) << 41) - 1 + ((rebased >> 42) & 1);
  return uint16_t(sign | (rebased >> 42));
}

uint16_t doubleToBf16(double value, Direction d) {
  uint64_t bits = bitsOf(value);
  uint64_t magnitude = bits & 0x7fffffffffffffff;
  if (d != Direction::NearestEven || magnitude > 0x7ff0000000000000 || magnitude < 0x3810000000000000)
    return uint16_t(encodeDouble(kBf16Format, value, d, kNaNBf16)); // NaN, other modes, subnormals
  uint16_t sign = uint16_t((bits >> 48) & 0x8000);
  if (magnitude >= 0x47eff00000000000) return sign | 0x7f80; // >= max + half an ulp: infinity
  uint64_t rebased = magnitude - (uint64_t(896) << 52);     // exponent bias 1023 -> 127
  rebased += (uint64_t(1) << 44) - 1 + ((rebased >> 45) & 1);
  return uint16_t(sign | (rebased >> 45));
}

/// The exact sum a + b, rounded to odd at double precision: rounding that
/// once more to any format of at most 51 significand bits, in any direction,
/// gives the correctly rounded sum (no double-rounding error).
double sumRoundedToOdd(double a, double b) {
  double sum = a + b;
  if (!std::isfinite(sum)) return sum;
  double bVirtual = sum - a; // TwoSum: sum + error == a + b exactly
  double error = (a - (sum - bVirtual)) + (b - bVirtual);
  if (error == 0) return sum;
  uint64_t bits = bitsOf(sum);
  if ((error < 0) != (sum < 0)) --bits; // truncate toward zero
  return f64FromBits(bits | 1);
}

// ---------------------------------------------------------------------------
// Host rounding mode, switched only for the directed modes

int hostRoundingMode(Direction d) {
  switch (d) {
  case Direction::TowardZero: return FE_TOWARDZERO;
  case Direction::Down: return FE_DOWNWARD;
  case Direction::Up: return FE_UPWARD;
  default: return FE_TONEAREST;
  }
}

/// Sets the host rounding mode for its lifetime. The operations it guards
/// read their operands from, and write their result to, volatile objects, so
/// the compiler can neither fold them nor move them across the mode changes
/// (no -frounding-math needed).
class HostRounding {
public:
  explicit HostRounding(Direction d) {
    [[maybe_unused]] int failed = std::fesetround(hostRoundingMode(d));
    assert(failed == 0 && "fesetround: the host lacks an IEEE rounding mode");
  }
  ~HostRounding() { std::fesetround(FE_TONEAREST); }
  HostRounding(const HostRounding &) = delete;
  HostRounding &operator=(const HostRounding &) = delete;
};

/// PTX f32/f64 arithmetic has .rn/.rz/.rm/.rp; .rna (tf32 cvt only) and the
/// integer modes have no meaning there and are taken as .rn.
inline Direction arithmeticDirection(Rounding r) {
  Direction d = directionOf(r);
  return d == Direction::NearestAway || isIntegralRounding(r) ? Direction::NearestEven : d;
}

// ---------------------------------------------------------------------------
// Small helpers on f16/bf16 bit patterns

inline uint16_t flushF16(uint16_t bits) { return (bits & 0x7c00) == 0 ? uint16_t(bits & 0x8000) : bits; }

/// .sat on a 16-bit result: NaN and negatives (-0 included) → +0, above one → one.
inline uint16_t saturate16(uint16_t bits, uint16_t one, bool nan) {
  if (nan || (bits & 0x8000)) return 0;
  return bits > one ? one : bits;
}

/// .relu: negative results (not NaN) → +0; NaN → canonical NaN.
inline uint16_t relu16(uint16_t bits, bool nan, uint16_t canonicalNaN) {
  if (nan) return canonicalNaN;
  return (bits & 0x8000) ? 0 : bits;
}

/// .satfinite: infinities (from overflow or the input) → max-finite, sign kept.
inline uint16_t satfinite16(uint16_t bits, const Format &f) {
  return (bits & 0x7fff) == f.overflowBits ? uint16_t((bits & 0x8000) | f.maxFinite) : bits;
}

inline double f16ToDouble(uint16_t bits) { return double(f16ToF32(bits)); }
inline double bf16ToDouble(uint16_t bits) { return double(bf16ToF32(bits)); }

// ---------------------------------------------------------------------------
// Pieces of convert()

inline bool isNaNBits(DType type, uint64_t bits) {
  switch (type) {
  case DType::F16: return isNaN16(uint16_t(bits));
  case DType::BF16: return isNaNBf16(uint16_t(bits));
  case DType::F64: return (bits & 0x7fffffffffffffff) > 0x7ff0000000000000;
  default: return (bits & 0x7fffffff) > 0x7f800000; // F32, TF32
  }
}

/// cvt of a NaN between float types. Narrowing from f64 keeps the sign and the
/// top payload bits (quieted), widening to f64 keeps them too, bf16 -> f32 is a
/// plain shift; every other pair gives the destination's canonical NaN.
uint64_t convertNaN(DType dst, DType src, uint64_t bits) {
  if (src == DType::F64) {
    uint64_t sign = bits >> 63;
    uint64_t payload = (bits & ((uint64_t(1) << 52) - 1)) | kQuietBit64;
    switch (dst) {
    case DType::F64: return bits | kQuietBit64;
    case DType::F16: return sign << 15 | 0x7c00 | payload >> 42;
    case DType::BF16: return sign << 15 | 0x7f80 | payload >> 45;
    default: return sign << 31 | 0x7f800000 | payload >> 29; // F32
    }
  }
  if (dst == DType::F64) {
    // As an f32 pattern first: f16 and bf16 payloads sit at the top of f32's.
    uint32_t asF32 = src == DType::F16    ? uint32_t(bits & 0x8000) << 16 | 0x7f800000 | uint32_t(bits & 0x3ff) << 13
                     : src == DType::BF16 ? uint32_t(bits & 0xffff) << 16
                                          : uint32_t(bits);
    uint64_t sign = asF32 >> 31;
    return sign << 63 | 0x7ff0000000000000 | kQuietBit64 | uint64_t(asF32 & 0x7fffff) << 29;
  }
  switch (dst) {
  case DType::F16: return kNaN16;
  case DType::BF16: return kNaNBf16;
  default: return src == DType::BF16 ? uint64_t(bits & 0xffff) << 16 : kNaN32; // F32
  }
}

/// Value of a (non-NaN) float-typed source, exactly, as a double; f32
/// subnormals flushed when `flush`.
double decodeFloat(DType src, uint64_t bits, bool flush) {
  switch (src) {
  case DType::F16: return f16ToDouble(uint16_t(bits));
  case DType::BF16: return bf16ToDouble(uint16_t(bits));
  case DType::F64: return f64FromBits(bits);
  default: { // F32, TF32 (an f32 bit pattern)
    float value = f32FromBits(uint32_t(bits));
    return flush ? double(flushSubnormal(value)) : double(value);
  }
  }
}

/// .ftz on an f32 result: the GPU flushes a result that is tiny *after*
/// rounding in IEEE 754's sense: the exact value, rounded to 24 bits as if the
/// exponent were unbounded, is below 2^-126. So 2^-126 * (1 - 2^-24) (exact in
/// 24 bits) is flushed, while (2^-126 + ulp) * (1 - 2ulp) rounds up to 2^-126
/// and stays. `exact` may also be a round-to-odd double of the exact value.
inline bool tinyAfterRounding(double exact, Direction d) {
  // Scaling by 2^64 moves the value into f32's normal range, significand unchanged.
  uint32_t scaled = uint32_t(encodeDouble(kF32Format, exact * 0x1p64, d, kNaN32));
  return (scaled & 0x7fffffff) < 0x20800000; // 2^-126 * 2^64
}

/// An exact value about to be rounded to f32 under .ftz.
inline double flushTinyExact(double exact, Direction d) {
  bool small = exact != 0 && std::fabs(exact) < double(kMinNormal32);
  return small && tinyAfterRounding(exact, d) ? std::copysign(0.0, exact) : exact;
}

/// Rounds a (non-NaN) double into a float destination type (its raw bits).
uint64_t encodeFloat(DType dst, double value, Direction d, bool ftz) {
  switch (dst) {
  case DType::F64: return bitsOf(value);
  case DType::F16: return doubleToF16(value, d);
  case DType::BF16: return doubleToBf16(value, d);
  case DType::TF32: // only from f32, so `value` is exact in float
    return f32ToTf32(float(value), d == Direction::NearestAway  ? Rounding::Rna
                                   : d == Direction::TowardZero ? Rounding::Rz
                                                                : Rounding::Rn);
  default: { // F32
    if (ftz) value = flushTinyExact(value, d);
    if (d == Direction::NearestEven) return bitsOf(float(value));
    return encodeDouble(kF32Format, value, d, kNaN32);
  }
  }
}

/// .sat on a float destination's bits.
uint64_t saturateFloatBits(DType dst, uint64_t bits) {
  switch (dst) {
  case DType::F64: return bitsOf(saturate(f64FromBits(bits)));
  case DType::F16: return saturate16(uint16_t(bits), 0x3c00, isNaN16(uint16_t(bits)));
  case DType::BF16: return saturate16(uint16_t(bits), 0x3f80, isNaNBf16(uint16_t(bits)));
  default: return bitsOf(saturate(f32FromBits(uint32_t(bits))));
  }
}

uint64_t floatToFloat(DType dst, DType src, uint64_t bits, Rounding r, bool ftz) {
  // The hot pair first: f16 <-> f32.
  if (dst == DType::F32 && src == DType::F16) return bitsOf(f16ToF32(uint16_t(bits)));
  if (dst == DType::F16 && src == DType::F32 && !isIntegralRounding(r))
    return f32ToF16(f32FromBits(uint32_t(bits)), r); // .ftz does not flush here (sm_90)
  if (dst == DType::F32 && src == DType::BF16) return bitsOf(bf16ToF32(uint16_t(bits)));
  if (dst == DType::TF32) return f32ToTf32(f32FromBits(uint32_t(bits)), r);
  if (isNaNBits(src, bits)) return convertNaN(dst, src, bits);
  Direction d = directionOf(r);
  // .ftz flushes f32 subnormal inputs, except towards f16 where sm_90 ignores it.
  double value = decodeFloat(src, bits, ftz && dst != DType::F16);
  if (isIntegralRounding(r)) {
    if (dtypeBits(dst) == dtypeBits(src)) {
      value = roundIntegral(value, d); // cvt.rni.f32.f32 and friends: an integral value, same format
    } else {
      d = Direction::NearestEven; // not a PTX form; keep the value's nearest
    }
  }
  return encodeFloat(dst, value, d, ftz);
}

/// Width of an integer cvt operand; b128 is not a cvt type, so it reads as 64 bits.
inline unsigned integerWidth(DType type) { return std::min(dtypeBits(type), 64u); }

/// cvt of a NaN to an integer. The ISA says 0, which is what sm_90 gives from
/// f16/bf16/f32 into 8- to 32-bit integers; from f64, or into a 64-bit
/// integer, it gives the destination's 1 << (width - 1) (sign-extended when signed).
uint64_t nanToInteger(DType dst, DType src) {
  unsigned width = integerWidth(dst);
  if (src != DType::F64 && width < 64) return 0;
  return extendBits(dst, uint64_t(1) << (width - 1));
}

uint64_t floatToInteger(DType dst, DType src, uint64_t bits, Rounding r, bool ftz) {
  if (isNaNBits(src, bits)) return nanToInteger(dst, src);
  double value = decodeFloat(src, bits, ftz);
  // None means .rzi (what a C cast does); float modes are read as their integer twins.
  double rounded = roundIntegral(value, r == Rounding::None ? Direction::TowardZero : directionOf(r));
  unsigned width = integerWidth(dst);
  // Float-to-integer conversions always saturate to the destination's range.
  if (isSigned(dst)) {
    double limit = std::ldexp(1.0, int(width) - 1);
    int64_t minimum = width == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (width - 1));
    int64_t maximum = width == 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (width - 1)) - 1;
    int64_t result = rounded < -limit ? minimum : rounded >= limit ? maximum : int64_t(rounded);
    return uint64_t(result);
  }
  uint64_t maximum = width == 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
  if (!(rounded > 0)) return 0;
  if (rounded >= std::ldexp(1.0, int(width))) return maximum;
  return uint64_t(rounded);
}

uint64_t integerToFloat(DType dst, DType src, uint64_t bits, Rounding r) {
  uint64_t value = extendBits(src, bits);
  bool negative = isSigned(src) && int64_t(value) < 0;
  uint64_t magnitude = negative ? ~value + 1 : value; // |INT64_MIN| fits as unsigned
  Direction d = directionOf(r);
  switch (dst) {
  case DType::F64:
    if (d == Direction::NearestEven) return bitsOf(negative ? double(int64_t(value)) : double(value));
    return encodeExact(kF64Format, negative, magnitude, 0, d);
  case DType::F16: return encodeExact(kF16Format, negative, magnitude, 0, d);
  case DType::BF16: return encodeExact(kBf16Format, negative, magnitude, 0, d);
  default: // F32 (integers are never subnormal, so .ftz has nothing to do)
    if (d == Direction::NearestEven) return bitsOf(negative ? float(int64_t(value)) : float(value));
    return encodeExact(kF32Format, negative, magnitude, 0, d);
  }
}

uint64_t integerToInteger(DType dst, DType src, uint64_t bits, bool sat) {
  uint64_t value = extendBits(src, bits);
  if (sat) {
    unsigned width = integerWidth(dst);
    __int128 wide = isSigned(src) ? __int128(int64_t(value)) : __int128(value);
    __int128 minimum = 0, maximum;
    if (isSigned(dst)) {
      minimum = -(__int128(1) << (width - 1));
      maximum = (__int128(1) << (width - 1)) - 1;
    } else {
      maximum = (__int128(1) << width) - 1;
    }
    value = uint64_t(std::clamp(wide, minimum, maximum));
  }
  return extendBits(dst, value);
}

} // namespace

// ---------------------------------------------------------------------------
// Small floats

float f16ToF32(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t fraction = bits & 0x3ff;
  if (exponent == 0x1f) return f32FromBits(fraction ? kNaN32 : sign | 0x7f800000); // as cvt.f32.f16: NaN -> canonical
  if (exponent == 0) {
    // Subnormal (or zero): fraction * 2^-24, exact in f32.
    float magnitude = float(fraction) * 0x1p-24f;
    return f32FromBits(sign | bitsOf(magnitude));
  }
  return f32FromBits(sign | ((exponent + 112) << 23) | (fraction << 13));
}

uint16_t f32ToF16(float value, Rounding r) {
  uint32_t bits = bitsOf(value);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) return kNaN16;
  Direction d = directionOf(r);
  if (d != Direction::NearestEven) {
    if (magnitude == 0x7f800000) return sign | 0x7c00;
    return uint16_t(encodeDouble(kF16Format, double(value), d, kNaN16));
  }
  // Round to nearest even, branch-light: the common path of every f16 kernel.
  if (magnitude >= 0x477ff000) return sign | 0x7c00; // >= 65520 (and inf) round to inf
  if (magnitude >= 0x38800000) {                       // f16 normal range (>= 2^-14)
    uint32_t rebased = magnitude - 0x38000000;        // exponent bias 127 -> 15
    rebased += 0xfff + ((rebased >> 13) & 1);
    return uint16_t(sign | (rebased >> 13)); // a carry into the exponent is the right result
  }
  if (magnitude <= 0x33000000) return sign; // <= 2^-25 (a tie, to even): zero
  uint32_t exponent = magnitude >> 23;      // 102..112: an f16 subnormal
  uint32_t significand = (magnitude & 0x7fffff) | 0x800000;
  uint32_t shift = 126 - exponent; // 14..24
  uint32_t kept = significand >> shift;
  uint32_t rest = significand & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  kept += (rest > half) | ((rest == half) & kept);
  return uint16_t(sign | kept);
}

uint16_t f64ToF16(double value, Rounding r) {
  if (value != value) return uint16_t(convertNaN(DType::F16, DType::F64, bitsOf(value)));
  return doubleToF16(value, directionOf(r));
}

float bf16ToF32(uint16_t bits) { return f32FromBits(uint32_t(bits) << 16); }

uint16_t f32ToBf16(float value, Rounding r) {
  uint32_t bits = bitsOf(value);
  uint32_t sign = bits & 0x80000000;
  uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) return kNaNBf16;
  bool inexact = (magnitude & 0xffff) != 0;
  // bf16 has f32's exponent range, so rounding is on the bit pattern; a carry
  // into the exponent field gives the next binade or infinity, as it should.
  switch (directionOf(r)) {
  case Direction::NearestEven: magnitude += 0x7fff + ((magnitude >> 16) & 1); break;
  case Direction::NearestAway: magnitude += 0x8000; break;
  case Direction::TowardZero: break;
  case Direction::Down: magnitude += (sign && inexact) ? 0x10000 : 0; break;
  case Direction::Up: magnitude += (!sign && inexact) ? 0x10000 : 0; break;
  }
  return uint16_t((sign | magnitude) >> 16);
}

uint16_t f64ToBf16(double value, Rounding r) {
  if (value != value) return uint16_t(convertNaN(DType::BF16, DType::F64, bitsOf(value)));
  return doubleToBf16(value, directionOf(r));
}

uint32_t f32ToTf32(float value, Rounding r) {
  uint32_t bits = bitsOf(value);
  uint32_t sign = bits & 0x80000000;
  uint32_t magnitude = bits & 0x7fffffff;
  Direction d = directionOf(r);
  if (magnitude > 0x7f800000) {
    // sm_90: .rna just clears the low bits of a NaN (a small payload even
    // becomes infinity); .rn and .rz give the canonical NaN, truncated.
    return d == Direction::NearestAway ? bits & ~0x1fffu : kNaNTf32;
  }
  bool inexact = (magnitude & 0x1fff) != 0;
  switch (d) {
  case Direction::NearestEven: magnitude += 0xfff + ((magnitude >> 13) & 1); break;
  case Direction::NearestAway: magnitude += 0x1000; break;
  case Direction::TowardZero: break;
  case Direction::Down: magnitude += (sign && inexact) ? 0x2000 : 0; break;
  case Direction::Up: magnitude += (!sign && inexact) ? 0x2000 : 0; break;
  }
  return sign | (magnitude & ~0x1fffu);
}

uint8_t f32ToE4M3(float value, bool satfinite) {
  uint32_t bits = bitsOf(value);
  uint8_t sign = uint8_t((bits >> 24) & 0x80);
  if (value != value) return kNaNE4M3;
  if (std::isinf(value)) return sign | (satfinite ? 0x7e : kNaNE4M3);
  uint8_t result = uint8_t(encodeDouble(kE4M3Format, double(value), Direction::NearestEven, kNaNE4M3));
  if (satfinite && (result & 0x7f) == 0x7f) result = sign | 0x7e;
  return result;
}

uint8_t f32ToE5M2(float value, bool satfinite) {
  uint32_t bits = bitsOf(value);
  uint8_t sign = uint8_t((bits >> 24) & 0x80);
  if (value != value) return kNaNE5M2;
  uint8_t result = uint8_t(encodeDouble(kE5M2Format, double(value), Direction::NearestEven, kNaNE5M2));
  if (satfinite && (result & 0x7f) == 0x7c) result = sign | 0x7b;
  return result;
}

uint16_t e4m3ToF16(uint8_t bits) {
  uint16_t sign = uint16_t((bits & 0x80) << 8);
  unsigned exponent = (bits >> 3) & 0xf;
  unsigned fraction = bits & 7;
  if (exponent == 0xf && fraction == 7) return kNaN16;
  if (exponent == 0) // subnormal: fraction * 2^-9, a normal f16
    return fraction == 0 ? sign : uint16_t(sign | f32ToF16(float(fraction) * 0x1p-9f, Rounding::Rn));
  return uint16_t(sign | ((exponent + 8) << 10) | (fraction << 7));
}

uint16_t e5m2ToF16(uint8_t bits) {
  uint16_t widened = uint16_t(bits << 8); // e5m2 is the top byte of an f16
  return isNaN16(widened) ? kNaN16 : widened;
}

// ---------------------------------------------------------------------------
// cvt forms with .relu/.satfinite and packed results

uint16_t cvtF32ToF16(float value, Rounding r, bool relu, bool satfinite) {
  uint16_t result = f32ToF16(value, r);
  if (satfinite) result = satfinite16(result, kF16Format);
  if (relu) result = relu16(result, isNaN16(result), kNaN16);
  return result;
}

uint16_t cvtF32ToBf16(float value, Rounding r, bool relu, bool satfinite) {
  uint16_t result = f32ToBf16(value, r);
  if (satfinite) result = satfinite16(result, kBf16Format);
  if (relu) result = relu16(result, isNaNBf16(result), kNaNBf16);
  return result;
}

uint32_t cvtF32ToTf32(float value, Rounding r, bool relu, bool satfinite) {
  uint32_t result = f32ToTf32(value, r);
  uint32_t magnitude = result & 0x7fffffff;
  bool nan = magnitude > 0x7f800000;
  if (satfinite) {
    if (directionOf(r) == Direction::NearestAway) {
      // sm_90 clamps any all-ones exponent by one tf32 unit: infinity becomes
      // max-finite, and a NaN becomes another NaN one unit lower.
      if (magnitude >= 0x7f800000) result -= 0x2000;
    } else if (magnitude == 0x7f800000) {
      result = (result & 0x80000000) | 0x7f7fe000; // .rn/.rz.satfinite: sm_100+, per the ISA
    }
  }
  if (relu && !nan && (result & 0x80000000)) result = 0;
  return result;
}

uint32_t packF16x2(float hi, float lo, Rounding r, bool relu, bool satfinite) {
  return uint32_t(cvtF32ToF16(hi, r, relu, satfinite)) << 16 | cvtF32ToF16(lo, r, relu, satfinite);
}

uint32_t packBf16x2(float hi, float lo, Rounding r, bool relu, bool satfinite) {
  return uint32_t(cvtF32ToBf16(hi, r, relu, satfinite)) << 16 | cvtF32ToBf16(lo, r, relu, satfinite);
}

namespace {
inline uint8_t relu8(uint8_t bits, bool nan, uint8_t canonicalNaN) {
  if (nan) return canonicalNaN;
  return (bits & 0x80) ? 0 : bits;
}
inline uint8_t e4m3Relu(uint8_t bits, bool relu) { return relu ? relu8(bits, (bits & 0x7f) == 0x7f, kNaNE4M3) : bits; }
inline uint8_t e5m2Relu(uint8_t bits, bool relu) { return relu ? relu8(bits, (bits & 0x7f) > 0x7c, kNaNE5M2) : bits; }
inline uint16_t f16Relu(uint16_t bits, bool relu) { return relu ? relu16(bits, isNaN16(bits), kNaN16) : bits; }
} // namespace

uint16_t packE4M3x2(float hi, float lo, bool relu) {
  return uint16_t(e4m3Relu(f32ToE4M3(hi, true), relu) << 8 | e4m3Relu(f32ToE4M3(lo, true), relu));
}

uint16_t packE5M2x2(float hi, float lo, bool relu) {
  return uint16_t(e5m2Relu(f32ToE5M2(hi, true), relu) << 8 | e5m2Relu(f32ToE5M2(lo, true), relu));
}

uint16_t f16x2ToE4M3x2(uint32_t a, bool relu) {
  // f16 -> f32 is exact, so this rounds once.
  return packE4M3x2(f16ToF32(uint16_t(a >> 16)), f16ToF32(uint16_t(a)), relu);
}

uint16_t f16x2ToE5M2x2(uint32_t a, bool relu) {
  return packE5M2x2(f16ToF32(uint16_t(a >> 16)), f16ToF32(uint16_t(a)), relu);
}

uint32_t e4m3x2ToF16x2(uint16_t a, bool relu) {
  return uint32_t(f16Relu(e4m3ToF16(uint8_t(a >> 8)), relu)) << 16 | f16Relu(e4m3ToF16(uint8_t(a)), relu);
}

uint32_t e5m2x2ToF16x2(uint16_t a, bool relu) {
  return uint32_t(f16Relu(e5m2ToF16(uint8_t(a >> 8)), relu)) << 16 | f16Relu(e5m2ToF16(uint8_t(a)), relu);
}

// ---------------------------------------------------------------------------
// Conversion (cvt)

uint64_t convert(DType dst, DType src, uint64_t bits, Rounding r, bool ftz, bool sat) {
  if (isInteger(dst) && isInteger(src)) return integerToInteger(dst, src, bits, sat);
  if (isPackedFloat(dst) || isPackedFloat(src)) {
    // The single-input packed forms: fp8 pairs <-> f16x2 (satfinite is mandatory towards fp8).
    if (dst == DType::E4M3x2 && src == DType::F16x2) return f16x2ToE4M3x2(uint32_t(bits), false);
    if (dst == DType::E5M2x2 && src == DType::F16x2) return f16x2ToE5M2x2(uint32_t(bits), false);
    if (dst == DType::F16x2 && src == DType::E4M3x2) return e4m3x2ToF16x2(uint16_t(bits), false);
    if (dst == DType::F16x2 && src == DType::E5M2x2) return e5m2x2ToF16x2(uint16_t(bits), false);
    assert(false && "convert: no single-input cvt between these packed types (see packF16x2 etc.)");
    return 0;
  }
  assert(isFloat(dst) || isInteger(dst));
  assert(isFloat(src) || isInteger(src));
  uint64_t result;
  if (isInteger(src))
    result = integerToFloat(dst, src, bits, r);
  else if (isInteger(dst))
    return floatToInteger(dst, src, bits, r, ftz); // always saturating; .sat is redundant
  else
    result = floatToFloat(dst, src, bits, r, ftz);
  return sat ? saturateFloatBits(dst, result) : result;
}

// ---------------------------------------------------------------------------
// Floating arithmetic

float flushSubnormal(float value) {
  uint32_t bits = bitsOf(value);
  return (bits & 0x7f800000) == 0 ? f32FromBits(bits & 0x80000000) : value;
}

float saturate(float value) {
  if (!(value > 0.0f)) return 0.0f; // NaN, negatives and -0 → +0
  return value > 1.0f ? 1.0f : value;
}

double saturate(double value) {
  if (!(value > 0.0)) return 0.0;
  return value > 1.0 ? 1.0 : value;
}

float addF32(float a, float b, Rounding r) {
  Direction d = arithmeticDirection(r);
  if (d == Direction::NearestEven) return canonical(a + b);
  HostRounding mode(d);
  volatile float x = a, y = b;
  volatile float result = x + y;
  return canonical(float(result));
}

float subF32(float a, float b, Rounding r) {
  Direction d = arithmeticDirection(r);
  if (d == Direction::NearestEven) return canonical(a - b);
  HostRounding mode(d);
  volatile float x = a, y = b;
  volatile float result = x - y;
  return canonical(float(result));
}

float mulF32(float a, float b, Rounding r) {
  Direction d = arithmeticDirection(r);
  if (d == Direction::NearestEven) return canonical(a * b);
  HostRounding mode(d);
  volatile float x = a, y = b;
  volatile float result = x * y;
  return canonical(float(result));
}

float fmaF32(float a, float b, float c, Rounding r) {
  Direction d = arithmeticDirection(r);
  if (d == Direction::NearestEven) return canonical(std::fma(a, b, c));
  HostRounding mode(d);
  volatile float x = a, y = b, z = c;
  volatile float result = std::fma(float(x), float(y), float(z));
  return canonical(float(result));
}

float divF32(float a, float b, Rounding r) {
  Direction d = arithmeticDirection(r);
  if (d == Direction::NearestEven) return canonical(a / b);
  HostRounding mode(d);
  volatile float x = a, y = b;
  volatile float result = x / y;
  return canonical(float(result));
}

float sqrtF32(float a, Rounding r) {
  Direction d = arithmeticDirection(r);
  if (d == Direction::NearestEven) return canonical(std::sqrt(a));
  HostRounding mode(d);
  volatile float x = a;
  volatile float result = std::sqrt(float(x));
  return canonical(float(result));
}

float rcpF32(float a, Rounding r) { return divF32(1.0f, a, r); }

// .ftz forms: subnormal inputs read as zero, and a result is flushed when it
// is tiny after rounding (see tinyAfterRounding). A subnormal result always
// is; a result of exactly ±2^-126 is when its exact value, rounded with an
// unbounded exponent, stays below 2^-126. Sums and square roots that small are
// exact, so only products and quotients need the exact value.
namespace {
inline float flushTinyResult(float rounded, double exactOrRoundedToOdd, Rounding r) {
  rounded = flushSubnormal(rounded);
  if (std::fabs(rounded) == kMinNormal32 && tinyAfterRounding(exactOrRoundedToOdd, arithmeticDirection(r)))
    return std::copysign(0.0f, rounded);
  return rounded;
}
} // namespace

float addF32(float a, float b, Rounding r, bool ftz) {
  if (!ftz) return addF32(a, b, r);
  return flushSubnormal(addF32(flushSubnormal(a), flushSubnormal(b), r));
}

float subF32(float a, float b, Rounding r, bool ftz) {
  if (!ftz) return subF32(a, b, r);
  return flushSubnormal(subF32(flushSubnormal(a), flushSubnormal(b), r));
}

float mulF32(float a, float b, Rounding r, bool ftz) {
  if (!ftz) return mulF32(a, b, r);
  a = flushSubnormal(a);
  b = flushSubnormal(b);
  return flushTinyResult(mulF32(a, b, r), double(a) * double(b), r); // exact in double
}

float fmaF32(float a, float b, float c, Rounding r, bool ftz) {
  if (!ftz) return fmaF32(a, b, c, r);
  a = flushSubnormal(a);
  b = flushSubnormal(b);
  c = flushSubnormal(c);
  // Rounded to odd at 53 bits, the sum still rounds correctly to 24.
  return flushTinyResult(fmaF32(a, b, c, r), sumRoundedToOdd(double(a) * double(b), double(c)), r);
}

float divF32(float a, float b, Rounding r, bool ftz) {
  if (!ftz) return divF32(a, b, r);
  a = flushSubnormal(a);
  b = flushSubnormal(b);
  // A quotient of floats is never within double precision of a 24-bit
  // rounding boundary without being on it, so its double rounds the same way.
  return flushTinyResult(divF32(a, b, r), double(a) / double(b), r);
}

float sqrtF32(float a, Rounding r, bool ftz) {
  if (!ftz) return sqrtF32(a, r);
  return flushSubnormal(sqrtF32(flushSubnormal(a), r));
}

float rcpF32(float a, Rounding r, bool ftz) { return divF32(1.0f, a, r, ftz); }

// f64: NaN inputs propagate quieted, with the operand priority the GPU shows
// (add/sub/mul: b then a; fma: b, c, a; div: a then b); computed NaNs are the
// default NaN. Handling NaN before the host operation also keeps the result
// independent of the host's own NaN rules and of operand commuting.
double addF64(double a, double b, Rounding r) {
  if (a != a || b != b) return quiet(b != b ? b : a);
  Direction d = arithmeticDirection(r);
  if (d == Direction::NearestEven) return invalidToDefault(a + b);
  HostRounding mode(d);
  volatile double x = a, y = b;
  volatile double result = x + y;
  return invalidToDefault(double(result));
}

double subF64(double a, double b, Rounding r) {
  if (a != a || b != b) return quiet(b != b ? b : a); // b's sign is not flipped
  Direction d = arithmeticDirection(r);
  if (d == Direction::NearestEven) return invalidToDefault(a - b);
  HostRounding mode(d);
  volatile double x = a, y = b;
  volatile double result = x - y;
  return invalidToDefault(double(result));
}

double mulF64(double a, double b, Rounding r) {
  if (a != a || b != b) return quiet(b != b ? b : a);
  Direction d = arithmeticDirection(r);
  if (d == Direction::NearestEven) return invalidToDefault(a * b);
  HostRounding mode(d);
  volatile double x = a, y = b;
  volatile double result = x * y;
  return invalidToDefault(double(result));
}

double fmaF64(double a, double b, double c, Rounding r) {
  if (a != a || b != b || c != c) return quiet(b != b ? b : c != c ? c : a);
  Direction d = arithmeticDirection(r);
  if (d == Direction::NearestEven) return invalidToDefault(std::fma(a, b, c));
  HostRounding mode(d);
  volatile double x = a, y = b, z = c;
  volatile double result = std::fma(double(x), double(y), double(z));
  return invalidToDefault(double(result));
}

double divF64(double a, double b, Rounding r) {
  if (a != a || b != b) return quiet(a != a ? a : b);
  Direction d = arithmeticDirection(r);
  if (d == Direction::NearestEven) return invalidToDefault(a / b);
  HostRounding mode(d);
  volatile double x = a, y = b;
  volatile double result = x / y;
  return invalidToDefault(double(result));
}

double sqrtF64(double a, Rounding r) {
  if (a != a) return quiet(a);
  Direction d = arithmeticDirection(r);
  if (d == Direction::NearestEven) return invalidToDefault(std::sqrt(a));
  HostRounding mode(d);
  volatile double x = a;
  volatile double result = std::sqrt(double(x));
  return invalidToDefault(double(result));
}

double rcpF64(double a, Rounding r) { return divF64(1.0, a, r); }

// min/max: PTX orders -0 below +0 and returns the non-NaN operand when exactly
// one is NaN. Both NaN (or, with .NaN, either): the canonical NaN for f32; for
// f64 the GPU returns b, quieted.
float minF32(float a, float b, bool propagateNaN) {
  bool aNaN = a != a, bNaN = b != b;
  if (aNaN || bNaN) {
    if (propagateNaN || (aNaN && bNaN)) return f32FromBits(kNaN32);
    return aNaN ? b : a;
  }
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

float maxF32(float a, float b, bool propagateNaN) {
  bool aNaN = a != a, bNaN = b != b;
  if (aNaN || bNaN) {
    if (propagateNaN || (aNaN && bNaN)) return f32FromBits(kNaN32);
    return aNaN ? b : a;
  }
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

double minF64(double a, double b) {
  bool aNaN = a != a, bNaN = b != b;
  if (aNaN || bNaN) return aNaN && bNaN ? quiet(b) : aNaN ? b : a;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

double maxF64(double a, double b) {
  bool aNaN = a != a, bNaN = b != b;
  if (aNaN || bNaN) return aNaN && bNaN ? quiet(b) : aNaN ? b : a;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

// ---------------------------------------------------------------------------
// .approx functions. The exact value is computed in double, then moved by a
// deterministic fraction of the maximum error the PTX ISA documents for the
// instruction and rounded to the destination format, never further than that
// bound from the exact value. A kernel that uses an .approx instruction where
// the accuracy matters (tanh.approx.f32 where the task wants tanhf) therefore
// fails in the emulator as it may on a GPU, instead of passing because the
// emulator happens to be exact. The move depends only on the operation and
// the input bits, so a run is reproducible and a reference meets the same
// numbers every time. The special inputs follow the ISA's tables exactly, and
// where the hardware's algorithm shows through (sin/cos range reduction and
// their exact zeros and ones, div.approx's reciprocal, the f64 approximations
// reading only the high word) we model it.

namespace {
inline float approxInput(float a, bool ftz) { return ftz ? flushSubnormal(a) : a; }
inline float approxResult(double exact, bool ftz) {
  return canonical(float(ftz ? flushTinyExact(exact, Direction::NearestEven) : exact));
}

/// The documented maximum error of each approximation (PTX ISA 9.0).
enum class ApproxOp : uint8_t { Ex2, Lg2, Sin, Cos, Rcp, Sqrt, Rsqrt, Tanh, Div, DivFull, Ex2F16, TanhF16, Ex2Bf16, TanhBf16 };

/// The spacing of `f` at |value| (the subnormal spacing below the normal range).
/// ilogb for finite nonzero values, without a library call for normal doubles.
inline int exponentOf(double value) {
  int field = static_cast<int>((bitsOf(value) >> 52) & 0x7ff);
  return field != 0 ? field - 1023 : std::ilogb(value);
}

inline double ulpIn(const Format &f, double value) {
  int exponent =
      value == 0 ? 1 - f.bias : std::max(std::isfinite(value) ? exponentOf(value) : std::ilogb(value), 1 - f.bias);
  int scale = exponent - int(f.manBits);
  // 2^scale as a normal double is its exponent field alone.
  return scale >= -1022 && scale <= 1023 ? f64FromBits(uint64_t(scale + 1023) << 52) : std::ldexp(1.0, scale);
}

inline double decodeIn(const Format &f, uint64_t bits) {
  if (f.manBits == 23) return double(f32FromBits(uint32_t(bits)));
  if (f.manBits == 10) return f16ToDouble(uint16_t(bits));
  return bf16ToDouble(uint16_t(bits));
}

/// One unit of `f` up or down from `bits` (sign-magnitude: "down" is a
/// smaller magnitude for positive values, a larger one for negative values).
uint64_t stepBits(const Format &f, uint64_t bits, bool down) {
  uint64_t sign = bits & signBit(f), magnitude = bits & ~signBit(f);
  bool shrink = (sign == 0) == down;
  if (shrink && magnitude == 0) return (sign ^ signBit(f)) | 1;
  return sign | (shrink ? magnitude - 1 : magnitude + 1);
}

/// Rounds `exact` into `f` after moving it by ±(1/2..1) * `maxError` (sign and
/// fraction from a hash of `seed`), then steps back one unit when rounding
/// carried it past the bound, so the result is within maxError of exact. When
/// that lands on the correctly rounded value and a neighbour (the chosen
/// direction first) is also within the bound, the neighbour is taken, so a
/// result is the correctly rounded one only where the bound allows no other.
/// An exact value that overflows the format stays infinite; one that rounds
/// to ±0 stays ±0, ±0 and NaN pass through, and so does everything when
/// maxError is 0; no result changes sign.
/// encodeDouble(f, value, NearestEven, nanBits); for f32, the host's own
/// conversion, which rounds to nearest even (the mode outside HostRounding),
/// subnormals and overflow included.
inline uint64_t nearestIn(const Format &f, double value, uint64_t nanBits) {
  if (f.manBits == 23 && f.expBits == 8) return value != value ? nanBits : std::bit_cast<uint32_t>(float(value));
  return encodeDouble(f, value, Direction::NearestEven, nanBits);
}

uint64_t perturbedInto(const Format &f, double exact, double maxError, uint64_t seed, uint64_t nanBits) {
  uint64_t rounded = nearestIn(f, exact, nanBits);
  // A result that underflows to zero stays zero, as the GPU's is (an H200's
  // ex2.approx of -300, div.approx of a subnormal by 2^32: ±0, never the
  // smallest subnormal of either sign).
  if (!std::isfinite(exact) || exact == 0 || !(maxError > 0) || (rounded & ~signBit(f)) == f.overflowBits ||
      (rounded & ~signBit(f)) == 0)
    return rounded;
  uint64_t hash = mixBits(seed);
  bool down = (hash & 1) != 0;
  double fraction = 0.5 + 0.5 * (double(hash >> 11) * 0x1p-53);
  double target = exact + (down ? -fraction : fraction) * maxError;
  uint64_t bits = nearestIn(f, target, nanBits);
  double value = decodeIn(f, bits);
  if (!(std::fabs(value - exact) <= maxError)) bits = stepBits(f, bits, value > exact);
  for (bool direction : {down, !down}) {
    if (bits != rounded) break;
    uint64_t neighbour = stepBits(f, rounded, direction);
    double other = decodeIn(f, neighbour);
    if (std::isfinite(other) && std::fabs(other - exact) <= maxError) bits = neighbour;
  }
  // Never across zero: the sign of a result is the exact one's.
  return (bits & signBit(f)) == (rounded & signBit(f)) ? bits : rounded;
}

/// An f32 .approx result: `exact` within `maxError`, seeded by the operation
/// and its input bits; with .ftz a result that is tiny after rounding is ±0.
float approxF32(ApproxOp op, uint64_t inputBits, double exact, double maxError, bool ftz) {
  if (exact != exact) return f32FromBits(kNaN32);
  // .ftz: a result that is tiny before the perturbation is flushed, as the
  // exact result would be.
  if (ftz && flushTinyExact(exact, Direction::NearestEven) == 0) return float(std::copysign(0.0, exact));
  uint64_t seed = (uint64_t(op) << 56) ^ inputBits;
  float value = f32FromBits(uint32_t(perturbedInto(kF32Format, exact, maxError, seed, kNaN32)));
  return ftz ? flushSubnormal(value) : value;
}

inline double ulpsOf(double exact, double ulps) { return ulps * ulpIn(kF32Format, exact); }

/// Inputs where the hardware's table-driven units are exact, and so are we:
/// ex2 of an integer (`integral`), rcp and lg2 of a power of two; sqrt and
/// rsqrt of an even power of two. There the result is a power of two (or an
/// integer) that the table's first entry gives without interpolation.
// (Bit tests for normal doubles, which every converted f32 is; the library
// calls for the rest.)
inline bool isExactPoint(double x, bool integral) {
  if (integral) return !(std::fabs(x) < 0x1p52) ? x == x : x == double(int64_t(x));
  uint64_t field = (bitsOf(x) >> 52) & 0x7ff;
  if (field != 0 && field != 0x7ff) return (bitsOf(x) & 0xfffffffffffffull) == 0;
  int exponent;
  return std::fabs(std::frexp(x, &exponent)) == 0.5;
}
inline bool isEvenPowerOfTwo(double x) {
  uint64_t field = (bitsOf(x) >> 52) & 0x7ff;
  if (x > 0 && field != 0 && field != 0x7ff)
    return (bitsOf(x) & 0xfffffffffffffull) == 0 && ((field - 1023) & 1) == 0;
  int exponent;
  return std::frexp(x, &exponent) == 0.5 && ((exponent - 1) & 1) == 0;
}

// sin/cos.approx on sm_70+: x is scaled to turns by an f32 multiply with
// round-toward-zero and flushed subnormals, and the sine unit works on the
// fraction of |turns|, sign-magnitude. Large arguments therefore lose the low
// bits of x exactly as on the GPU (sin(65504) is 0.977, not 0.975), subnormal
// inputs give ±0 (cos: 1) with or without .ftz, and whole and half turns give
// exact signed zeros: sin(x) = sign(x) * S(f) with S(f) = -S(f - 1/2) on the
// second half turn, and cos(x) = S(f + 1/4). Those exact zeros and ones stay
// exact; every other result moves by up to 2^-22.8 (2^-21 beyond [-pi, pi]),
// kept within [-1, 1]: with the reduction's own error (up to ~2^-21.4 at pi)
// that stays within the ISA's 2^-20.9 absolute on [-pi, pi].
double sineOfTurns(double fraction) { // fraction in [0, 1)
  constexpr double kTwoPi = 2.0 * std::numbers::pi;
  return fraction < 0.5 ? std::sin(kTwoPi * fraction) : -std::sin(kTwoPi * (fraction - 0.5));
}

float sinCosApprox(float a, bool cosine, bool ftz) {
  if (!std::isfinite(a)) return f32FromBits(kNaN32);
  constexpr double kTurnsPerRadian = double(0x1.45f306p-3f); // f32(1 / 2pi)
  double product = double(flushSubnormal(a)) * kTurnsPerRadian; // exact in double
  float turns = f32FromBits(uint32_t(encodeDouble(kF32Format, product, Direction::TowardZero, kNaN32)));
  double magnitude = std::fabs(double(flushSubnormal(turns)));
  double fraction = magnitude - std::floor(magnitude); // exact
  double exact;
  if (cosine) {
    fraction += 0.25;
    if (fraction >= 1.0) fraction -= 1.0;
    exact = sineOfTurns(fraction);
  } else {
    double sine = sineOfTurns(fraction);
    exact = std::signbit(a) ? -sine : sine;
  }
  if (exact == 0 || std::fabs(exact) == 1.0) return approxResult(exact, ftz);
  double maxError = std::fabs(a) <= float(std::numbers::pi) ? std::exp2(-22.8) : std::exp2(-21.0);
  float value = approxF32(cosine ? ApproxOp::Cos : ApproxOp::Sin, bitsOf(a), exact, maxError, ftz);
  return std::clamp(value, -1.0f, 1.0f);
}

inline bool isSubnormal(double value) { return std::fpclassify(value) == FP_SUBNORMAL; }
inline double highWord(double value) { return f64FromBits(bitsOf(value) & 0xffffffff00000000); }
} // namespace

float ex2Approx(float a, bool ftz) {
  // ISA: max error 2 ulp across the full range. ex2(±0) = ex2(±subnormal) = 1,
  // ex2(-inf) = +0, ex2(+inf) = +inf.
  float x = approxInput(a, ftz);
  if (x != x) return f32FromBits(kNaN32);
  if (x == 0 || std::fpclassify(x) == FP_SUBNORMAL) return 1.0f;
  double exact = std::exp2(double(x));
  return approxF32(ApproxOp::Ex2, bitsOf(x), exact, isExactPoint(x, true) ? 0 : ulpsOf(exact, 2), ftz);
}

float lg2Approx(float a, bool ftz) {
  // ISA: max absolute error 2^-22.6 (we allow at least one ulp of the result,
  // which large results cannot beat). log2(±0) = -inf, log2(negative) = NaN,
  // log2(+inf) = +inf.
  float x = approxInput(a, ftz);
  if (x != x || x < 0) return f32FromBits(kNaN32);
  if (x == 0) return -std::numeric_limits<float>::infinity();
  if (std::isinf(x)) return x;
  double exact = std::log2(double(x));
  double maxError = isExactPoint(x, false) ? 0 : std::max(std::exp2(-22.6), ulpsOf(exact, 1));
  return approxF32(ApproxOp::Lg2, bitsOf(x), exact, maxError, ftz);
}

float sinApprox(float a, bool ftz) { return sinCosApprox(a, false, ftz); }

float cosApprox(float a, bool ftz) { return sinCosApprox(a, true, ftz); }

float rcpApprox(float a, bool ftz) {
  // ISA: max error 1 ulp across the full range. rcp(±0) = ±inf, rcp(±inf) = ±0.
  float x = approxInput(a, ftz);
  if (x != x) return f32FromBits(kNaN32);
  if (x == 0 || std::isinf(x)) return approxResult(1.0 / double(x), ftz);
  double exact = 1.0 / double(x);
  return approxF32(ApproxOp::Rcp, bitsOf(x), exact, isExactPoint(x, false) ? 0 : ulpsOf(exact, 1), ftz);
}

float sqrtApprox(float a, bool ftz) {
  // ISA: max relative error 2^-23. sqrt(±0) = ±0, sqrt(+inf) = +inf,
  // sqrt(negative) = NaN.
  float x = approxInput(a, ftz);
  if (x != x || x < 0) return f32FromBits(kNaN32);
  if (x == 0 || std::isinf(x)) return x;
  double exact = std::sqrt(double(x));
  double maxError = isEvenPowerOfTwo(x) ? 0 : std::exp2(-23.0) * exact;
  return approxF32(ApproxOp::Sqrt, bitsOf(x), exact, maxError, ftz);
}

float rsqrtApprox(float a, bool ftz) {
  // ISA: max relative error 2^-22.9. rsqrt(±0) = ±inf, rsqrt(+inf) = +0,
  // rsqrt(negative) = NaN.
  float x = approxInput(a, ftz);
  if (x != x || x < 0) return f32FromBits(kNaN32);
  if (x == 0) return std::copysign(std::numeric_limits<float>::infinity(), x);
  if (std::isinf(x)) return 0.0f;
  double exact = 1.0 / std::sqrt(double(x));
  double maxError = isEvenPowerOfTwo(x) ? 0 : std::exp2(-22.9) * exact;
  return approxF32(ApproxOp::Rsqrt, bitsOf(x), exact, maxError, ftz);
}

float tanhApprox(float a) {
  // ISA: max relative error 2^-10.987 (subnormal results are not flushed).
  // tanh(±0) = ±0, tanh(±inf) = ±1; results stay within [-1, 1].
  if (a != a) return f32FromBits(kNaN32);
  if (a == 0 || std::isinf(a)) return float(std::tanh(double(a)));
  double exact = std::tanh(double(a));
  float value = approxF32(ApproxOp::Tanh, bitsOf(a), exact, std::exp2(-10.987) * std::fabs(exact), false);
  return std::clamp(value, -1.0f, 1.0f);
}

float divApprox(float a, float b, bool ftz) {
  a = approxInput(a, ftz);
  b = approxInput(b, ftz);
  // a * (1/b), where the reciprocal of |b| > 2^126 is subnormal and flushed:
  // the ISA's "returns 0 (NaN for infinite a)" for that range. Within it the
  // ISA's bound is 2 ulp.
  if (std::fabs(b) > 0x1p126f && std::isfinite(b)) return canonical(a * std::copysign(0.0f, b));
  double exact = double(a) / double(b);
  if (!std::isfinite(exact) || exact == 0) return approxResult(exact, ftz);
  return approxF32(ApproxOp::Div, (uint64_t(bitsOf(a)) << 32) | bitsOf(b), exact, ulpsOf(exact, 2), ftz);
}

float divFull(float a, float b, bool ftz) {
  // ISA: max error 2 ulp across the full range.
  a = approxInput(a, ftz);
  b = approxInput(b, ftz);
  double exact = double(a) / double(b);
  if (!std::isfinite(exact) || exact == 0) return approxResult(exact, ftz);
  return approxF32(ApproxOp::DivFull, (uint64_t(bitsOf(a)) << 32) | bitsOf(b), exact, ulpsOf(exact, 2), ftz);
}

double rcpApproxF64(double a) {
  // rcp.approx.ftz.f64 is a table lookup on the high word: it reads the top 32
  // bits of a and writes only the top 32 bits of d (the low word is 0), so a
  // NaN whose payload is all in the low word reads as infinity.
  double x = highWord(a);
  if (x != x) return f64FromBits(0x7fffffff00000000);
  if (isSubnormal(x)) x = std::copysign(0.0, x);
  double result = 1.0 / x;
  if (isSubnormal(result)) result = std::copysign(0.0, result);
  return highWord(result);
}

double rsqrtApproxF64(double a) {
  // rsqrt.approx.f64 without .ftz is a full-precision sequence on sm_90.
  if (a != a) return quiet(a);
  if (a < 0) return f64FromBits(kDefaultNaN64);
  return double(1.0L / std::sqrt((long double)a)); // rsqrt(-0) = -inf
}

double rsqrtApproxF64(double a, bool ftz) {
  if (!ftz) return rsqrtApproxF64(a);
  // rsqrt.approx.ftz.f64: the high-word unit, like rcp.approx.ftz.f64.
  double x = highWord(a);
  if (isSubnormal(x)) x = std::copysign(0.0, x);
  if (x != x || x < 0) return f64FromBits(0x7fffffff00000000);
  double result = double(1.0L / std::sqrt((long double)x));
  if (isSubnormal(result)) result = 0.0;
  return highWord(result);
}

// ---------------------------------------------------------------------------
// Half precision arithmetic: the exact result (or its round-to-odd stand-in)
// in double, rounded once to f16/bf16.

namespace {

uint16_t finishF16(double value, Rounding r, bool ftz, bool sat) {
  uint16_t result = doubleToF16(value, directionOf(r));
  if (ftz) result = flushF16(result);
  if (sat) result = saturate16(result, 0x3c00, isNaN16(result));
  return result;
}

/// IEEE's sign of an exact zero sum: -0 under round-down unless both
/// addends are +0 (the host, rounding to nearest, gives the other cases).
inline double signExactZero(double sum, double a, double b, Rounding r) {
  if (sum == 0 && directionOf(r) == Direction::Down && !(a == 0 && b == 0 && !std::signbit(a) && !std::signbit(b)))
    return -0.0;
  return sum;
}

/// a + b for values that may not sum exactly in double (bf16, or an f16
/// product plus an f16), rounded to odd so one more rounding is correct.
double sumForRounding(double a, double b, Rounding r) { return signExactZero(sumRoundedToOdd(a, b), a, b, r); }

/// a + b for two f16 values: both are multiples of 2^-24 below 2^16, so the
/// double sum is exact.
double exactF16Sum(double a, double b, Rounding r) { return signExactZero(a + b, a, b, r); }

double f16Operand(uint16_t bits, bool ftz) { return f16ToDouble(ftz ? flushF16(bits) : bits); }

uint16_t minMax16(uint16_t a, uint16_t b, bool propagateNaN, bool wantMax, bool aNaN, bool bNaN, float x, float y,
                  uint16_t canonicalNaN) {
  if (aNaN || bNaN) {
    if (propagateNaN || (aNaN && bNaN)) return canonicalNaN;
    return aNaN ? b : a;
  }
  if (x == y) return (std::signbit(x) != wantMax) ? a : b; // -0 < +0
  return ((x < y) != wantMax) ? a : b;
}

} // namespace

uint16_t f16Add(uint16_t a, uint16_t b, Rounding r, bool ftz, bool sat) {
  return finishF16(exactF16Sum(f16Operand(a, ftz), f16Operand(b, ftz), r), r, ftz, sat);
}

uint16_t f16Sub(uint16_t a, uint16_t b, Rounding r, bool ftz, bool sat) {
  return finishF16(exactF16Sum(f16Operand(a, ftz), -f16Operand(b, ftz), r), r, ftz, sat);
}

uint16_t f16Mul(uint16_t a, uint16_t b, Rounding r, bool ftz, bool sat) {
  // The product of two 11-bit significands is exact in double.
  return finishF16(f16Operand(a, ftz) * f16Operand(b, ftz), r, ftz, sat);
}

uint16_t f16Fma(uint16_t a, uint16_t b, uint16_t c, Rounding r, bool ftz, bool sat) {
  double product = f16Operand(a, ftz) * f16Operand(b, ftz); // exact
  return finishF16(sumForRounding(product, f16Operand(c, ftz), r), r, ftz, sat);
}

uint16_t f16Min(uint16_t a, uint16_t b, bool propagateNaN) {
  return minMax16(a, b, propagateNaN, false, isNaN16(a), isNaN16(b), f16ToF32(a), f16ToF32(b), kNaN16);
}

uint16_t f16Max(uint16_t a, uint16_t b, bool propagateNaN) {
  return minMax16(a, b, propagateNaN, true, isNaN16(a), isNaN16(b), f16ToF32(a), f16ToF32(b), kNaN16);
}

namespace {
uint16_t finishBf16(double value, Rounding r) { return doubleToBf16(value, directionOf(r)); }
} // namespace

uint16_t bf16Add(uint16_t a, uint16_t b, Rounding r) {
  return finishBf16(sumForRounding(bf16ToDouble(a), bf16ToDouble(b), r), r);
}

uint16_t bf16Sub(uint16_t a, uint16_t b, Rounding r) {
  return finishBf16(sumForRounding(bf16ToDouble(a), -bf16ToDouble(b), r), r);
}

uint16_t bf16Mul(uint16_t a, uint16_t b, Rounding r) { return finishBf16(bf16ToDouble(a) * bf16ToDouble(b), r); }

uint16_t bf16Fma(uint16_t a, uint16_t b, uint16_t c, Rounding r) {
  double product = bf16ToDouble(a) * bf16ToDouble(b); // 16 significant bits: exact
  return finishBf16(sumForRounding(product, bf16ToDouble(c), r), r);
}

uint16_t bf16Min(uint16_t a, uint16_t b, bool propagateNaN) {
  return minMax16(a, b, propagateNaN, false, isNaNBf16(a), isNaNBf16(b), bf16ToF32(a), bf16ToF32(b), kNaNBf16);
}

uint16_t bf16Max(uint16_t a, uint16_t b, bool propagateNaN) {
  return minMax16(a, b, propagateNaN, true, isNaNBf16(a), isNaNBf16(b), bf16ToF32(a), bf16ToF32(b), kNaNBf16);
}

// The half-precision .approx forms, with the ISA's bounds: ex2 2^-9.9 (f16)
// and 2^-7 (bf16) relative, tanh 2^-10.987 (f16) and 2^-8 (bf16) relative.
// The bf16 forms flush subnormal inputs and results (.ftz is implied).
namespace {
uint16_t halfApprox(ApproxOp op, bool bf16, uint16_t input, double exact, double relativeError) {
  const Format &format = bf16 ? kBf16Format : kF16Format;
  uint16_t nan = bf16 ? kNaNBf16 : kNaN16;
  if (exact != exact) return nan;
  uint64_t seed = (uint64_t(op) << 56) ^ input;
  return uint16_t(perturbedInto(format, exact, relativeError * std::fabs(exact), seed, nan));
}
inline uint16_t flushBf16(uint16_t bits) { return (bits & 0x7f80) == 0 ? uint16_t(bits & 0x8000) : bits; }
} // namespace

uint16_t f16Ex2Approx(uint16_t a) {
  if (isNaN16(a)) return kNaN16;
  if ((a & 0x7fff) == 0) return 0x3c00; // ex2(±0) = 1
  double x = f16ToDouble(a);
  return halfApprox(ApproxOp::Ex2F16, false, a, std::exp2(x), isExactPoint(x, true) ? 0 : std::exp2(-9.9));
}

uint16_t f16TanhApprox(uint16_t a) {
  if (isNaN16(a)) return kNaN16;
  double exact = std::tanh(f16ToDouble(a));
  if ((a & 0x7fff) == 0 || (a & 0x7fff) == 0x7c00) return doubleToF16(exact, Direction::NearestEven);
  uint16_t value = halfApprox(ApproxOp::TanhF16, false, a, exact, std::exp2(-10.987));
  return (value & 0x7fff) > 0x3c00 ? uint16_t((value & 0x8000) | 0x3c00) : value; // |tanh| <= 1
}

uint16_t bf16Ex2Approx(uint16_t a) {
  a = flushBf16(a);
  if (isNaNBf16(a)) return kNaNBf16;
  if ((a & 0x7fff) == 0) return 0x3f80; // ex2(±0) = 1
  double x = bf16ToDouble(a);
  return flushBf16(halfApprox(ApproxOp::Ex2Bf16, true, a, std::exp2(x), isExactPoint(x, true) ? 0 : std::exp2(-7.0)));
}

uint16_t bf16TanhApprox(uint16_t a) {
  if (isNaNBf16(a)) return kNaNBf16;
  double exact = std::tanh(bf16ToDouble(a));
  if ((a & 0x7fff) == 0 || (a & 0x7fff) == 0x7f80) return doubleToBf16(exact, Direction::NearestEven);
  uint16_t value = halfApprox(ApproxOp::TanhBf16, true, a, exact, std::exp2(-8.0));
  return (value & 0x7fff) > 0x3f80 ? uint16_t((value & 0x8000) | 0x3f80) : value; // |tanh| <= 1
}

// ---------------------------------------------------------------------------
// Integer bit operations

namespace {
inline uint64_t lowMask(unsigned bits) { return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1; }

/// PTX restricts bfe/bfi's pos and len to 0..255 (taking the low byte). The
/// 32-bit forms do that on sm_90; the 64-bit ones use the whole 32-bit values
/// (so len 256 extracts everything rather than nothing), and we follow that.
inline uint32_t fieldOperand(uint32_t value, unsigned width) { return width == 32 ? value & 0xff : value; }

/// bfe on a `width`-bit value: the field a[pos .. pos+len-1], cut at the msb,
/// then filled above with the sign bit a[min(pos+len-1, msb)] (signed) or 0.
uint64_t bitFieldExtract(uint64_t a, unsigned width, uint32_t pos, uint32_t len, bool isSigned) {
  pos = fieldOperand(pos, width);
  len = fieldOperand(len, width);
  if (len == 0) return 0;
  unsigned available = pos >= width ? 0 : width - pos;
  unsigned taken = std::min<uint32_t>(len, available);
  uint64_t field = taken == 0 ? 0 : (a >> pos) & lowMask(taken);
  uint64_t signPosition = std::min<uint64_t>(uint64_t(pos) + len - 1, width - 1);
  if (isSigned && ((a >> signPosition) & 1)) field |= ~lowMask(taken);
  return field & lowMask(width);
}

uint64_t bitFieldInsert(uint64_t a, uint64_t b, unsigned width, uint32_t pos, uint32_t len) {
  pos = fieldOperand(pos, width);
  len = fieldOperand(len, width);
  if (len == 0 || pos >= width) return b;
  uint64_t mask = lowMask(std::min<uint32_t>(len, width - pos)) << pos;
  return ((b & ~mask) | ((a << pos) & mask)) & lowMask(width);
}

uint32_t bitFind(uint64_t a, unsigned width, bool isSigned, bool shiftAmount) {
  unsigned msb = width - 1;
  if (isSigned && ((a >> msb) & 1)) a = ~a;
  a &= lowMask(width);
  if (a == 0) return 0xffffffff;
  uint32_t position = 63 - std::countl_zero(a);
  return shiftAmount ? msb - position : position;
}
} // namespace

uint32_t bfe32(uint32_t a, uint32_t pos, uint32_t len, bool isSigned) {
  return uint32_t(bitFieldExtract(a, 32, pos, len, isSigned));
}

uint64_t bfe64(uint64_t a, uint32_t pos, uint32_t len, bool isSigned) { return bitFieldExtract(a, 64, pos, len, isSigned); }

uint32_t bfi32(uint32_t a, uint32_t b, uint32_t pos, uint32_t len) { return uint32_t(bitFieldInsert(a, b, 32, pos, len)); }

uint64_t bfi64(uint64_t a, uint64_t b, uint32_t pos, uint32_t len) { return bitFieldInsert(a, b, 64, pos, len); }

uint32_t prmt(uint32_t a, uint32_t b, uint32_t selector, unsigned mode) {
  uint64_t source = uint64_t(b) << 32 | a; // bytes 0..7
  auto byteAt = [source](unsigned index) { return uint32_t((source >> (8 * (index & 7))) & 0xff); };
  uint32_t result = 0;
  if (mode == 0) {
    for (unsigned i = 0; i < 4; ++i) {
      unsigned control = (selector >> (4 * i)) & 0xf;
      uint32_t byte = byteAt(control);
      if (control & 8) byte = (byte & 0x80) ? 0xff : 0x00; // replicate the byte's sign
      result |= byte << (8 * i);
    }
    return result;
  }
  assert(mode <= 6 && "prmt: mode is 0 (default) or f4e, b4e, rc8, ecl, ecr, rc16 as 1..6");
  // Source byte for d.b0..d.b3, by mode and selector[1:0] (PTX ISA, prmt table).
  static constexpr uint8_t kModeBytes[6][4][4] = {
      {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}}, // f4e: forward 4 extract
      {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}}, // b4e: backward 4 extract
      {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}}, // rc8: replicate byte
      {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}}, // ecl: edge clamp left
      {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}}, // ecr: edge clamp right
      {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}}, // rc16: replicate half
  };
  const uint8_t *bytes = kModeBytes[(mode - 1) % 6][selector & 3];
  for (unsigned i = 0; i < 4; ++i) result |= byteAt(bytes[i]) << (8 * i);
  return result;
}

uint32_t brev32(uint32_t a) {
  uint32_t result = 0;
  for (unsigned i = 0; i < 32; ++i) result |= ((a >> i) & 1) << (31 - i);
  return result;
}

uint64_t brev64(uint64_t a) { return uint64_t(brev32(uint32_t(a))) << 32 | brev32(uint32_t(a >> 32)); }

uint32_t clz32(uint32_t a) { return uint32_t(std::countl_zero(a)); }
uint32_t clz64(uint64_t a) { return uint32_t(std::countl_zero(a)); }
uint32_t popc64(uint64_t a) { return uint32_t(std::popcount(a)); }

uint32_t bfind32(uint32_t a, bool isSigned, bool shiftAmount) { return bitFind(a, 32, isSigned, shiftAmount); }
uint32_t bfind64(uint64_t a, bool isSigned, bool shiftAmount) { return bitFind(a, 64, isSigned, shiftAmount); }

uint32_t fns(uint32_t mask, uint32_t base, int32_t offset) {
  if (base > 31) return 0xffffffff; // undefined in PTX; report "not found"
  if (offset == 0) return ((mask >> base) & 1) ? base : 0xffffffff;
  if (offset == std::numeric_limits<int32_t>::min()) return 0; // sm_90's answer: |offset| overflows there
  int64_t remaining = offset > 0 ? int64_t(offset) : -int64_t(offset);
  int step = offset > 0 ? 1 : -1;
  for (int position = int(base); position >= 0 && position < 32; position += step) {
    if ((mask >> position) & 1) {
      if (--remaining == 0) return uint32_t(position);
    }
  }
  return 0xffffffff;
}

uint32_t mulHiU32(uint32_t a, uint32_t b) { return uint32_t((uint64_t(a) * b) >> 32); }
int32_t mulHiS32(int32_t a, int32_t b) { return int32_t((int64_t(a) * b) >> 32); }
uint64_t mulHiU64(uint64_t a, uint64_t b) { return uint64_t((unsigned __int128)a * b >> 64); }
int64_t mulHiS64(int64_t a, int64_t b) { return int64_t((__int128)a * b >> 64); }

namespace {
inline int32_t byteLane(uint32_t word, unsigned lane, bool isSigned) {
  uint32_t byte = (word >> (8 * lane)) & 0xff;
  return isSigned ? int32_t(int8_t(byte)) : int32_t(byte);
}
inline int32_t halfLane(uint32_t word, unsigned lane, bool isSigned) {
  uint32_t half = (word >> (16 * lane)) & 0xffff;
  return isSigned ? int32_t(int16_t(half)) : int32_t(half);
}
} // namespace

uint32_t dp4a(uint32_t a, uint32_t b, uint32_t c, bool aSigned, bool bSigned) {
  uint32_t sum = c; // wraps modulo 2^32 like the hardware accumulator
  for (unsigned i = 0; i < 4; ++i) sum += uint32_t(byteLane(a, i, aSigned) * byteLane(b, i, bSigned));
  return sum;
}

uint32_t dp2a(uint32_t a, uint32_t b, uint32_t c, bool aSigned, bool bSigned, bool hi) {
  uint32_t sum = c;
  unsigned first = hi ? 2 : 0;
  for (unsigned i = 0; i < 2; ++i) sum += uint32_t(halfLane(a, i, aSigned) * byteLane(b, first + i, bSigned));
  return sum;
}

} // namespace ptxforge::emu
