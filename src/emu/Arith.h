// Numerics of PTX, exactly where PTX is exact: conversions between every pair
// of types (f16/bf16/tf32/fp8 included) with every rounding mode, IEEE
// arithmetic with explicit rounding, .ftz/.sat, the .approx functions within
// the documented error of the hardware, and the integer bit operations.
//
// Values travel as raw bits (uint64_t, low bits used) so that the interpreter
// never converts through a host type it does not mean.  Everything here is a
// pure function: no emulator state, testable against host arithmetic.
#pragma once

#include "emu/Types.h"

#include <cstdint>

namespace ptxforge::emu {

// ---------------------------------------------------------------------------
// Small floats

/// IEEE binary16 <-> binary32/64. Narrowing rounds as `r` says (Rn when None),
/// overflow goes to inf or max-finite as the rounding mode requires. Widening
/// is exact. NaN gives NaN with the bit pattern cvt gives on sm_90: from f32
/// the canonical 0x7fff (and f16ToF32 gives 0x7fffffff); from f64 the sign and
/// top payload bits, quieted.
uint16_t f32ToF16(float value, Rounding r);
uint16_t f64ToF16(double value, Rounding r); ///< one rounding, not via f32
float f16ToF32(uint16_t bits);
/// bfloat16 likewise (8-bit exponent, 7-bit mantissa); bf16ToF32 is a plain
/// shift, NaN payload included, like cvt.f32.bf16.
uint16_t f32ToBf16(float value, Rounding r);
uint16_t f64ToBf16(double value, Rounding r);
float bf16ToF32(uint16_t bits);
/// tf32 as PTX's cvt.rna/.rn/.rz.tf32.f32: the f32 bit pattern with the low 13
/// mantissa bits cleared after rounding (NaN: .rna clears the low bits, .rn/.rz
/// give 0x7fffe000, as sm_90 does).
uint32_t f32ToTf32(float value, Rounding r);
/// fp8 pairs (cvt.rn.satfinite.e4m3x2.f32 and back via f16x2).
uint8_t f32ToE4M3(float value, bool satfinite);
uint8_t f32ToE5M2(float value, bool satfinite);
uint16_t e4m3ToF16(uint8_t bits);
uint16_t e5m2ToF16(uint8_t bits);

/// The cvt forms that take .relu/.satfinite or two inputs (PTX ISA 7.0+):
/// `cvt.<r>{.relu}{.satfinite}.f16.f32` and likewise bf16 and tf32. .relu
/// clamps negative results to +0 (NaN → canonical NaN); .satfinite turns an
/// infinite result into max-finite of the same sign (NaN stays NaN).
uint16_t cvtF32ToF16(float value, Rounding r, bool relu, bool satfinite);
uint16_t cvtF32ToBf16(float value, Rounding r, bool relu, bool satfinite);
uint32_t cvtF32ToTf32(float value, Rounding r, bool relu, bool satfinite);
/// `cvt.<r>{.relu}{.satfinite}.f16x2.f32 d, a, b`: `hi` (a) goes to d[31:16],
/// `lo` (b) to d[15:0]; bf16x2 likewise.
uint32_t packF16x2(float hi, float lo, Rounding r, bool relu, bool satfinite);
uint32_t packBf16x2(float hi, float lo, Rounding r, bool relu, bool satfinite);
/// `cvt.rn.satfinite{.relu}.e4m3x2.f32 d, a, b` (a → d[15:8]); e5m2x2 likewise.
uint16_t packE4M3x2(float hi, float lo, bool relu);
uint16_t packE5M2x2(float hi, float lo, bool relu);
/// `cvt.rn.satfinite{.relu}.e4m3x2.f16x2 d, a` (a[31:16] → d[15:8]).
uint16_t f16x2ToE4M3x2(uint32_t a, bool relu);
uint16_t f16x2ToE5M2x2(uint32_t a, bool relu);
/// `cvt.rn{.relu}.f16x2.e4m3x2 d, a` (a[15:8] → d[31:16]); exact.
uint32_t e4m3x2ToF16x2(uint16_t a, bool relu);
uint32_t e5m2x2ToF16x2(uint16_t a, bool relu);

// ---------------------------------------------------------------------------
// Conversion (cvt)

/// `cvt.<r>.<ftz>.<sat>.<dst>.<src>` on one value: `bits` holds the source in
/// its low dtypeBits(src) bits; the result holds the destination likewise (the
/// rest zero; signed integer results sign-extended to 64 bits). Semantics as the
/// PTX ISA: integer→integer truncates or extends (with .sat, clamps);
/// float→integer rounds with r (Rni/Rzi/Rmi/Rpi; None means Rzi), saturates
/// to the destination range, NaN → 0; integer→float rounds with r (Rn when
/// None); float→float rounds with r when narrowing, rounds to integral with
/// Rni.. when same-size; .ftz flushes f32 subnormal inputs and results; .sat
/// on a float destination clamps to [0, 1] with NaN → +0.
/// Where sm_90 departs from that text we follow the hardware: NaN → integer is
/// 0 only from f16/bf16/f32 into 8..32-bit integers (from f64, or into 64-bit
/// integers, it is 1 << (width-1)); .ftz does not flush inputs of cvt.f16.f32;
/// an f32 result is flushed when tiny after rounding (see the .ftz forms below).
uint64_t convert(DType dst, DType src, uint64_t bits, Rounding r, bool ftz, bool sat);

// ---------------------------------------------------------------------------
// Floating arithmetic with an explicit rounding mode (None and Rn are nearest-even).

float flushSubnormal(float value);  ///< .ftz: a subnormal becomes a zero of the same sign
float saturate(float value);        ///< .sat: clamp to [0, 1], NaN → +0
double saturate(double value);

float addF32(float a, float b, Rounding r);
float subF32(float a, float b, Rounding r);
float mulF32(float a, float b, Rounding r);
float fmaF32(float a, float b, float c, Rounding r); ///< one rounding
float divF32(float a, float b, Rounding r);          ///< IEEE division (div.rn/rz/rm/rp)
float sqrtF32(float a, Rounding r);
float rcpF32(float a, Rounding r);                   ///< rcp.rn etc.: IEEE 1/a
/// The .ftz forms: subnormal inputs read as ±0, and a result is flushed to ±0
/// when it is tiny after rounding, as the GPU decides: the exact result,
/// rounded to 24 bits with an unbounded exponent, is below 2^-126. So a result
/// of ±2^-126 can still be flushed (2^-126 * (1 - 2^-24) is), which
/// flushSubnormal() after the plain form would miss.
float addF32(float a, float b, Rounding r, bool ftz);
float subF32(float a, float b, Rounding r, bool ftz);
float mulF32(float a, float b, Rounding r, bool ftz);
float fmaF32(float a, float b, float c, Rounding r, bool ftz);
float divF32(float a, float b, Rounding r, bool ftz);
float sqrtF32(float a, Rounding r, bool ftz);
float rcpF32(float a, Rounding r, bool ftz);
/// f64 NaN results: an input NaN propagates quieted (add/sub/mul: b before a;
/// fma: b, c, a; div: a before b); an invalid operation gives 0xfff8000000000000.
double addF64(double a, double b, Rounding r);
double subF64(double a, double b, Rounding r);
double mulF64(double a, double b, Rounding r);
double fmaF64(double a, double b, double c, Rounding r);
double divF64(double a, double b, Rounding r);
double sqrtF64(double a, Rounding r);
double rcpF64(double a, Rounding r);

/// min/max as PTX: when exactly one input is NaN the other is returned; both
/// NaN → canonical NaN (f64: b, quieted, as sm_90 does); with `propagateNaN`
/// (.NaN) any NaN input → canonical NaN. -0 < +0.
float minF32(float a, float b, bool propagateNaN);
float maxF32(float a, float b, bool propagateNaN);
double minF64(double a, double b);
double maxF64(double a, double b);

/// The .approx functions. Each result is the exact value moved by a
/// deterministic fraction (1/2 to 1, either sign, from a hash of the operation
/// and the input bits) of the maximum error the PTX ISA documents, so that it
/// stays within that bound but is not the correctly rounded result: ex2 2 ulp,
/// lg2 2^-22.6 absolute (at least 1 ulp), sin/cos 2^-20.9 absolute on [-pi, pi]
/// (range reduction included), rcp 1 ulp, sqrt 2^-23 and rsqrt 2^-22.9 relative, tanh
/// 2^-10.987 relative, div.approx and div.full 2 ulp. Special inputs follow the
/// ISA's tables exactly. `ftz` flushes subnormal inputs and results. sin/cos
/// reduce the argument as sm_70+ does (so large arguments agree with the GPU,
/// not with exact sin), and divApprox is div.approx's a * (1/b) (0 for
/// |b| > 2^126).
float ex2Approx(float a, bool ftz);
float lg2Approx(float a, bool ftz);
float sinApprox(float a, bool ftz);
float cosApprox(float a, bool ftz);
float rcpApprox(float a, bool ftz);
float sqrtApprox(float a, bool ftz);
float rsqrtApprox(float a, bool ftz);
float tanhApprox(float a);
float divApprox(float a, float b, bool ftz); ///< div.approx.f32
float divFull(float a, float b, bool ftz);   ///< div.full.f32 (full range, 2 ulp)
double rcpApproxF64(double a);               ///< rcp.approx.ftz.f64 (high word only, like sm_90)
double rsqrtApproxF64(double a);             ///< rsqrt.approx.f64
double rsqrtApproxF64(double a, bool ftz);   ///< with .ftz: the high-word unit

/// Half-precision arithmetic (one value in the low 16 bits), rounded once to
/// f16/bf16 with `r`; `ftz` flushes f16 subnormals (PTX .ftz on f16 ops), `sat`
/// clamps to [0, 1]. Packed x2 ops apply these to both halves.
uint16_t f16Add(uint16_t a, uint16_t b, Rounding r, bool ftz, bool sat);
uint16_t f16Sub(uint16_t a, uint16_t b, Rounding r, bool ftz, bool sat);
uint16_t f16Mul(uint16_t a, uint16_t b, Rounding r, bool ftz, bool sat);
uint16_t f16Fma(uint16_t a, uint16_t b, uint16_t c, Rounding r, bool ftz, bool sat);
uint16_t f16Min(uint16_t a, uint16_t b, bool propagateNaN);
uint16_t f16Max(uint16_t a, uint16_t b, bool propagateNaN);
uint16_t bf16Add(uint16_t a, uint16_t b, Rounding r);
uint16_t bf16Sub(uint16_t a, uint16_t b, Rounding r);
uint16_t bf16Mul(uint16_t a, uint16_t b, Rounding r);
uint16_t bf16Fma(uint16_t a, uint16_t b, uint16_t c, Rounding r);
uint16_t bf16Min(uint16_t a, uint16_t b, bool propagateNaN);
uint16_t bf16Max(uint16_t a, uint16_t b, bool propagateNaN);
/// The half-precision .approx forms, perturbed like the f32 ones within the
/// ISA's relative bounds: ex2 2^-9.9 (f16) and 2^-7 (bf16), tanh 2^-10.987
/// (f16) and 2^-8 (bf16). ex2.approx.ftz.bf16 flushes subnormals.
uint16_t f16Ex2Approx(uint16_t a);   ///< ex2.approx.f16
uint16_t f16TanhApprox(uint16_t a);  ///< tanh.approx.f16
uint16_t bf16Ex2Approx(uint16_t a);  ///< ex2.approx.ftz.bf16
uint16_t bf16TanhApprox(uint16_t a); ///< tanh.approx.bf16

// ---------------------------------------------------------------------------
// Integer bit operations (PTX semantics, including the edge cases of pos/len;
// the 64-bit bfe/bfi take pos and len whole, not masked to 0..255, as sm_90 does).

uint32_t bfe32(uint32_t a, uint32_t pos, uint32_t len, bool isSigned);
uint64_t bfe64(uint64_t a, uint32_t pos, uint32_t len, bool isSigned);
uint32_t bfi32(uint32_t a, uint32_t b, uint32_t pos, uint32_t len); ///< insert a into b
uint64_t bfi64(uint64_t a, uint64_t b, uint32_t pos, uint32_t len);
/// prmt.b32 with mode: 0 = default (selector nibbles, msb replicate), then
/// f4e, b4e, rc8, ecl, ecr, rc16 as 1..6.
uint32_t prmt(uint32_t a, uint32_t b, uint32_t selector, unsigned mode);
uint32_t brev32(uint32_t a);
uint64_t brev64(uint64_t a);
uint32_t clz32(uint32_t a);
uint32_t clz64(uint64_t a);
uint32_t popc64(uint64_t a);
/// bfind: position of the most significant non-sign bit (0xffffffff if none);
/// `shiftAmount` gives .shiftamt's 31-pos form.
uint32_t bfind32(uint32_t a, bool isSigned, bool shiftAmount);
uint32_t bfind64(uint64_t a, bool isSigned, bool shiftAmount);
/// fns.b32: the n-th set bit at or after base (signed offset), 0xffffffff if none
/// (offset INT32_MIN gives 0, as on sm_90).
uint32_t fns(uint32_t mask, uint32_t base, int32_t offset);
/// High halves of full products.
uint32_t mulHiU32(uint32_t a, uint32_t b);
int32_t mulHiS32(int32_t a, int32_t b);
uint64_t mulHiU64(uint64_t a, uint64_t b);
int64_t mulHiS64(int64_t a, int64_t b);
/// dp4a / dp2a (.u32/.s32 operand signedness per input).
uint32_t dp4a(uint32_t a, uint32_t b, uint32_t c, bool aSigned, bool bSigned);
uint32_t dp2a(uint32_t a, uint32_t b, uint32_t c, bool aSigned, bool bSigned, bool hi);

} // namespace ptxforge::emu
