// Value types and rounding modes of the emulator, decoded once from PTX
// modifier strings so that nothing on the execution path compares strings.
#pragma once

#include <cstdint>
#include <string_view>

namespace ptxforge::emu {

/// A PTX fundamental (or packed) type.
enum class DType : uint8_t {
  None,
  Pred,
  B8, B16, B32, B64, B128,
  U8, U16, U32, U64,
  S8, S16, S32, S64,
  F16, F16x2, BF16, BF16x2, TF32, F32, F64,
  E4M3x2, E5M2x2, ///< packed fp8 pairs (cvt only)
};

/// Rounding modifiers. Rn/Rz/Rm/Rp round floating results; Rni/Rzi/Rmi/Rpi
/// round to an integral value (cvt to an integer type, cvt.rni.f32.f32). Rna is
/// round-to-nearest-away (cvt.rna.tf32.f32).
enum class Rounding : uint8_t { None, Rn, Rz, Rm, Rp, Rna, Rni, Rzi, Rmi, Rpi };

/// "f32" → DType::F32, "pred" → Pred; None for anything else.
DType parseDType(std::string_view name);
/// "rn" → Rn, "rzi" → Rzi; None for anything else.
Rounding parseRounding(std::string_view name);
const char *dtypeName(DType type); ///< "f32"

/// Width in bits of one value of the type (f16x2 → 32, pred → 1).
unsigned dtypeBits(DType type);
inline unsigned dtypeBytes(DType type) { return (dtypeBits(type) + 7) / 8; }
inline bool isFloat(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::TF32 || t == DType::F32 || t == DType::F64;
}
inline bool isPackedFloat(DType t) {
  return t == DType::F16x2 || t == DType::BF16x2 || t == DType::E4M3x2 || t == DType::E5M2x2;
}
inline bool isSigned(DType t) { return t == DType::S8 || t == DType::S16 || t == DType::S32 || t == DType::S64; }
inline bool isUnsigned(DType t) { return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64; }
inline bool isBits(DType t) {
  return t == DType::B8 || t == DType::B16 || t == DType::B32 || t == DType::B64 || t == DType::B128;
}
inline bool isInteger(DType t) { return isSigned(t) || isUnsigned(t) || isBits(t); }

/// Sign- or zero-extends the low `dtypeBits(type)` bits of `bits` to 64 bits as
/// the type says (signed types sign-extend; everything else zero-extends).
inline uint64_t extendBits(DType type, uint64_t bits) {
  unsigned n = dtypeBits(type);
  if (n >= 64 || n == 0) return bits;
  uint64_t mask = (uint64_t(1) << n) - 1;
  bits &= mask;
  if (isSigned(type) && (bits >> (n - 1)) & 1) bits |= ~mask;
  return bits;
}

/// splitmix64's finalizer: every input bit spreads over all 64 output bits.
/// The emulator's deterministic "randomness" (.approx errors, the garbage in
/// uninitialized memory) comes from it.
inline uint64_t mixBits(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

} // namespace ptxforge::emu
