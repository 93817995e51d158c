// The ALU instruction family of the emulator: integer, floating-point and
// half-precision arithmetic, bit manipulation, comparison and selection,
// conversion and moves.
//
// decodeAlu checks an instruction's modifiers once and picks an ExecFn that is
// a template instantiated for its type and operation, so the per-lane loops
// below never look at the opcode, a string or the type. What varies at run
// time (rounding mode, .ftz, .sat) is read from the Inst once per instruction.
// The numerics themselves (rounding modes, f16/bf16, the .approx functions,
// conversions, the bit-field edge cases) come from Arith.h.
//
// Register convention: a slot holds a value in its low bits with the rest
// zero (predicates are 0 or 1). Sources are truncated to the instruction type;
// results are extended to the destination register's declared width by the
// type's signedness (PTX does this for cvt into wider registers; for the other
// instructions the widths match and the extension is a no-op).
#include "emu/Arith.h"
#include "emu/Decoder.h"
#include "emu/Machine.h"
#include "support/Text.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>

namespace ptxforge::emu {

namespace {

// ===========================================================================
// Register access and lane loops

/// Mask of a destination register's declared width (all 64 bits when unknown).
inline uint64_t registerMask(const Operand &op) {
  return op.regBits == 0 || op.regBits >= 64 ? ~uint64_t(0) : (uint64_t(1) << op.regBits) - 1;
}

/// A value as 64 register bits: signed integers sign-extend, the rest zero-extend.
template <typename T> inline uint64_t widen(T value) {
  if constexpr (std::is_floating_point_v<T>) return asBits(value);
  else if constexpr (std::is_signed_v<T>) return static_cast<uint64_t>(static_cast<int64_t>(value));
  else return static_cast<uint64_t>(value);
}

/// The low sizeof(T) bytes of a register as a T.
template <typename T> inline T as(uint64_t bits) { return bitsAs<T>(bits); }

/// d = fn(a) for every active lane (one destination, then the sources).
template <typename Fn> inline void lanes1(Warp &w, const Inst &in, LaneMask active, Fn fn) {
  uint64_t *d = w.row(in.ops[0].slot);
  const uint64_t *a = w.row(in.ops[1].slot);
  const uint64_t mask = registerMask(in.ops[0]);
  forLanes(active, [&](unsigned l) { d[l] = fn(a[l]) & mask; });
}

template <typename Fn> inline void lanes2(Warp &w, const Inst &in, LaneMask active, Fn fn) {
  uint64_t *d = w.row(in.ops[0].slot);
  const uint64_t *a = w.row(in.ops[1].slot);
  const uint64_t *b = w.row(in.ops[2].slot);
  const uint64_t mask = registerMask(in.ops[0]);
  forLanes(active, [&](unsigned l) { d[l] = fn(a[l], b[l]) & mask; });
}

template <typename Fn> inline void lanes3(Warp &w, const Inst &in, LaneMask active, Fn fn) {
  uint64_t *d = w.row(in.ops[0].slot);
  const uint64_t *a = w.row(in.ops[1].slot);
  const uint64_t *b = w.row(in.ops[2].slot);
  const uint64_t *c = w.row(in.ops[3].slot);
  const uint64_t mask = registerMask(in.ops[0]);
  forLanes(active, [&](unsigned l) { d[l] = fn(a[l], b[l], c[l]) & mask; });
}

template <typename Fn> inline void lanes4(Warp &w, const Inst &in, LaneMask active, Fn fn) {
  uint64_t *d = w.row(in.ops[0].slot);
  const uint64_t *a = w.row(in.ops[1].slot);
  const uint64_t *b = w.row(in.ops[2].slot);
  const uint64_t *c = w.row(in.ops[3].slot);
  const uint64_t *e = w.row(in.ops[4].slot);
  const uint64_t mask = registerMask(in.ops[0]);
  forLanes(active, [&](unsigned l) { d[l] = fn(a[l], b[l], c[l], e[l]) & mask; });
}

/// XOR mask that applies a predicate operand's `!`.
inline uint64_t negation(const Operand &op) { return op.negate ? 1 : 0; }

// ===========================================================================
// Integer helpers

/// Unsigned arithmetic type for wrap-around: never narrower than 32 bits, so
/// that 16-bit operands are not promoted to a signed int that could overflow.
template <typename T> using WrapT = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

template <typename T> inline T wrapAdd(T a, T b) { return static_cast<T>(static_cast<WrapT<T>>(a) + static_cast<WrapT<T>>(b)); }
template <typename T> inline T wrapSub(T a, T b) { return static_cast<T>(static_cast<WrapT<T>>(a) - static_cast<WrapT<T>>(b)); }
template <typename T> inline T wrapMul(T a, T b) { return static_cast<T>(static_cast<WrapT<T>>(a) * static_cast<WrapT<T>>(b)); }
template <typename T> inline T wrapNeg(T a) { return static_cast<T>(WrapT<T>(0) - static_cast<WrapT<T>>(a)); }

/// The integer type twice as wide (mul.wide, mad.wide).
template <typename T> struct Wider;
template <> struct Wider<uint16_t> { using type = uint32_t; };
template <> struct Wider<int16_t> { using type = int32_t; };
template <> struct Wider<uint32_t> { using type = uint64_t; };
template <> struct Wider<int32_t> { using type = int64_t; };
template <typename T> using WiderT = typename Wider<T>::type;

/// High half of the full product (mul.hi).
template <typename T> inline T mulHigh(T a, T b) {
  if constexpr (sizeof(T) == 8) {
    if constexpr (std::is_signed_v<T>) return mulHiS64(a, b);
    else return mulHiU64(a, b);
  } else if constexpr (sizeof(T) == 4) {
    if constexpr (std::is_signed_v<T>) return mulHiS32(a, b);
    else return mulHiU32(a, b);
  } else {
    return static_cast<T>((static_cast<WiderT<T>>(a) * static_cast<WiderT<T>>(b)) >> 16);
  }
}

inline int32_t saturateS32(int64_t v) {
  return static_cast<int32_t>(std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min(),
                                                  std::numeric_limits<int32_t>::max()));
}

// Integer operations: apply<T> on typed values.

struct OpAdd { template <typename T> static T apply(T a, T b) { return wrapAdd(a, b); } };
struct OpSub { template <typename T> static T apply(T a, T b) { return wrapSub(a, b); } };
struct OpMulLo { template <typename T> static T apply(T a, T b) { return wrapMul(a, b); } };
struct OpMulHi { template <typename T> static T apply(T a, T b) { return mulHigh(a, b); } };
struct OpMulWide {
  template <typename T> static WiderT<T> apply(T a, T b) {
    return static_cast<WiderT<T>>(static_cast<WiderT<T>>(a) * static_cast<WiderT<T>>(b));
  }
};
struct OpMin { template <typename T> static T apply(T a, T b) { return a < b ? a : b; } };
struct OpMax { template <typename T> static T apply(T a, T b) { return a > b ? a : b; } };
struct OpMinRelu { template <typename T> static T apply(T a, T b) { return std::max<T>(a < b ? a : b, T(0)); } };
struct OpMaxRelu { template <typename T> static T apply(T a, T b) { return std::max<T>(a > b ? a : b, T(0)); } };
struct OpAnd { template <typename T> static T apply(T a, T b) { return static_cast<T>(a & b); } };
struct OpOr { template <typename T> static T apply(T a, T b) { return static_cast<T>(a | b); } };
struct OpXor { template <typename T> static T apply(T a, T b) { return static_cast<T>(a ^ b); } };
struct OpAddSat { static int32_t apply(int32_t a, int32_t b) { return saturateS32(int64_t(a) + int64_t(b)); } };
struct OpSubSat { static int32_t apply(int32_t a, int32_t b) { return saturateS32(int64_t(a) - int64_t(b)); } };

/// Integer division and remainder. The PTX ISA leaves x/0 unspecified; an
/// H200 (sm_90) gives all ones for both quotient and remainder, signed or not,
/// and so does the emulator. MIN / -1 wraps to MIN and MIN % -1 is 0 (the GPU
/// agrees) instead of trapping the host.
struct OpDiv {
  template <typename T> static T apply(T a, T b) {
    if (b == 0) return static_cast<T>(~T(0));
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return wrapNeg(a);
    return static_cast<T>(a / b);
  }
};
struct OpRem {
  template <typename T> static T apply(T a, T b) {
    if (b == 0) return static_cast<T>(~T(0));
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return T(0);
    return static_cast<T>(a % b);
  }
};

struct OpAbs { template <typename T> static T apply(T a) { return a < 0 ? wrapNeg(a) : a; } };
struct OpNeg { template <typename T> static T apply(T a) { return wrapNeg(a); } };
struct OpNot { template <typename T> static T apply(T a) { return static_cast<T>(~a); } };
struct OpCnot { template <typename T> static T apply(T a) { return static_cast<T>(a == 0 ? 1 : 0); } };
struct OpPopc { template <typename T> static uint32_t apply(T a) { return static_cast<uint32_t>(std::popcount(a)); } };
struct OpClz {
  template <typename T> static uint32_t apply(T a) {
    if constexpr (sizeof(T) == 8) return clz64(a);
    else return clz32(a);
  }
};
struct OpBrev {
  template <typename T> static T apply(T a) {
    if constexpr (sizeof(T) == 8) return brev64(a);
    else return brev32(a);
  }
};

// Shapes: a struct per operand pattern whose exec<T> is the ExecFn.

template <class Op> struct IntUnary {
  template <typename T> static void exec(Warp &w, const Inst &in, LaneMask active) {
    lanes1(w, in, active, [](uint64_t a) { return widen(Op::apply(as<T>(a))); });
  }
};

template <class Op> struct IntBinary {
  template <typename T> static void exec(Warp &w, const Inst &in, LaneMask active) {
    lanes2(w, in, active, [](uint64_t a, uint64_t b) { return widen(Op::apply(as<T>(a), as<T>(b))); });
  }
};

/// mad.lo / mad.hi: op(a, b) + c in the instruction type.
template <class Op> struct IntMad {
  template <typename T> static void exec(Warp &w, const Inst &in, LaneMask active) {
    lanes3(w, in, active, [](uint64_t a, uint64_t b, uint64_t c) {
      return widen(wrapAdd(Op::apply(as<T>(a), as<T>(b)), as<T>(c)));
    });
  }
};

/// mad.wide: the double-width product plus a double-width c.
struct IntMadWide {
  template <typename T> static void exec(Warp &w, const Inst &in, LaneMask active) {
    lanes3(w, in, active, [](uint64_t a, uint64_t b, uint64_t c) {
      return widen(wrapAdd(OpMulWide::apply(as<T>(a), as<T>(b)), as<WiderT<T>>(c)));
    });
  }
};

/// mad.hi.sat.s32: the high half of the product plus c, clamped to s32.
void execMadHiSat(Warp &w, const Inst &in, LaneMask active) {
  lanes3(w, in, active, [](uint64_t a, uint64_t b, uint64_t c) {
    int64_t product = int64_t(as<int32_t>(a)) * int64_t(as<int32_t>(b));
    return widen(saturateS32((product >> 32) + int64_t(as<int32_t>(c))));
  });
}

/// sad: c + |a - b|.
struct IntSad {
  template <typename T> static void exec(Warp &w, const Inst &in, LaneMask active) {
    lanes3(w, in, active, [](uint64_t a, uint64_t b, uint64_t c) {
      T x = as<T>(a), y = as<T>(b);
      T diff = x < y ? wrapSub(y, x) : wrapSub(x, y);
      return widen(wrapAdd(as<T>(c), diff));
    });
  }
};

template <class Shape> ExecFn byIntType(DType t) {
  switch (t) {
  case DType::B16:
  case DType::U16: return &Shape::template exec<uint16_t>;
  case DType::S16: return &Shape::template exec<int16_t>;
  case DType::B32:
  case DType::U32: return &Shape::template exec<uint32_t>;
  case DType::S32: return &Shape::template exec<int32_t>;
  case DType::B64:
  case DType::U64: return &Shape::template exec<uint64_t>;
  case DType::S64: return &Shape::template exec<int64_t>;
  default: return nullptr;
  }
}

/// The 16- and 32-bit types (mul.wide, mad.wide).
template <class Shape> ExecFn byNarrowIntType(DType t) {
  switch (t) {
  case DType::U16: return &Shape::template exec<uint16_t>;
  case DType::S16: return &Shape::template exec<int16_t>;
  case DType::U32: return &Shape::template exec<uint32_t>;
  case DType::S32: return &Shape::template exec<int32_t>;
  default: return nullptr;
  }
}

/// Packed .s16x2/.u16x2 add/sub/min/max: the op on each half.
template <class Op, typename H, bool Relu> void execPacked16(Warp &w, const Inst &in, LaneMask active) {
  lanes2(w, in, active, [](uint64_t a, uint64_t b) {
    H lo = Op::apply(H(uint16_t(a)), H(uint16_t(b)));
    H hi = Op::apply(H(uint16_t(a >> 16)), H(uint16_t(b >> 16)));
    if constexpr (Relu) {
      lo = std::max<H>(lo, H(0));
      hi = std::max<H>(hi, H(0));
    }
    return uint64_t(uint16_t(lo)) | (uint64_t(uint16_t(hi)) << 16);
  });
}

// ---------------------------------------------------------------------------
// mul24 / mad24: 24-bit operands (sign-extended for .s32), 48-bit product.

inline int64_t product24(uint64_t a, uint64_t b, bool isSigned) {
  auto operand = [isSigned](uint64_t v) -> int64_t {
    uint32_t low = uint32_t(v) & 0xffffff;
    return isSigned ? int64_t(int32_t(low << 8) >> 8) : int64_t(low);
  };
  return operand(a) * operand(b);
}

template <bool Signed, bool High> void execMul24(Warp &w, const Inst &in, LaneMask active) {
  lanes2(w, in, active, [](uint64_t a, uint64_t b) {
    int64_t p = product24(a, b, Signed);
    return uint64_t(uint32_t(High ? (p >> 16) : p));
  });
}

template <bool Signed, bool High, bool Sat> void execMad24(Warp &w, const Inst &in, LaneMask active) {
  lanes3(w, in, active, [](uint64_t a, uint64_t b, uint64_t c) {
    int64_t p = product24(a, b, Signed);
    int64_t part = High ? (p >> 16) : int64_t(uint32_t(p));
    if constexpr (Sat) return widen(saturateS32(part + int64_t(as<int32_t>(c))));
    else return uint64_t(uint32_t(uint64_t(part) + uint64_t(as<uint32_t>(c))));
  });
}

// ---------------------------------------------------------------------------
// Shifts and funnel shifts. PTX clamps shift amounts: shl/shr by the width or
// more give 0 (shr.s: the sign), unlike C++.

struct OpShl {
  template <typename T> static T apply(T a, uint32_t n) {
    return n >= sizeof(T) * 8 ? T(0) : static_cast<T>(static_cast<WrapT<T>>(a) << n);
  }
};
struct OpShr {
  template <typename T> static T apply(T a, uint32_t n) {
    if constexpr (std::is_signed_v<T>) return n >= sizeof(T) * 8 ? T(a < 0 ? -1 : 0) : static_cast<T>(a >> n);
    else return n >= sizeof(T) * 8 ? T(0) : static_cast<T>(a >> n);
  }
};

template <class Op> struct Shift {
  template <typename T> static void exec(Warp &w, const Inst &in, LaneMask active) {
    lanes2(w, in, active, [](uint64_t a, uint64_t n) { return widen(Op::apply(as<T>(a), as<uint32_t>(n))); });
  }
};

/// shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: shift the 64-bit {b:a} and keep the
/// upper (l) or lower (r) word.
template <bool Left, bool Clamp> void execShf(Warp &w, const Inst &in, LaneMask active) {
  lanes3(w, in, active, [](uint64_t a, uint64_t b, uint64_t c) {
    uint32_t amount = as<uint32_t>(c);
    uint32_t n = Clamp ? std::min<uint32_t>(amount, 32) : (amount & 31);
    uint64_t funnel = (uint64_t(as<uint32_t>(b)) << 32) | as<uint32_t>(a);
    return Left ? uint64_t(uint32_t((funnel << n) >> 32)) : uint64_t(uint32_t(funnel >> n));
  });
}

// ---------------------------------------------------------------------------
// Bit fields and friends

template <typename T> void execBfe(Warp &w, const Inst &in, LaneMask active) {
  lanes3(w, in, active, [](uint64_t a, uint64_t pos, uint64_t len) {
    constexpr bool isSigned = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 8)
      return widen(static_cast<T>(bfe64(as<uint64_t>(a), as<uint32_t>(pos), as<uint32_t>(len), isSigned)));
    else
      return widen(static_cast<T>(bfe32(as<uint32_t>(a), as<uint32_t>(pos), as<uint32_t>(len), isSigned)));
  });
}

template <typename T> void execBfi(Warp &w, const Inst &in, LaneMask active) {
  lanes4(w, in, active, [](uint64_t a, uint64_t b, uint64_t pos, uint64_t len) -> uint64_t {
    if constexpr (sizeof(T) == 8) return bfi64(a, b, as<uint32_t>(pos), as<uint32_t>(len));
    else return bfi32(as<uint32_t>(a), as<uint32_t>(b), as<uint32_t>(pos), as<uint32_t>(len));
  });
}

template <typename T, bool ShiftAmount> void execBfind(Warp &w, const Inst &in, LaneMask active) {
  lanes1(w, in, active, [](uint64_t a) -> uint64_t {
    if constexpr (sizeof(T) == 8) return bfind64(as<uint64_t>(a), std::is_signed_v<T>, ShiftAmount);
    else return bfind32(as<uint32_t>(a), std::is_signed_v<T>, ShiftAmount);
  });
}

void execFns(Warp &w, const Inst &in, LaneMask active) {
  lanes3(w, in, active, [](uint64_t mask, uint64_t base, uint64_t offset) -> uint64_t {
    return fns(as<uint32_t>(mask), as<uint32_t>(base), as<int32_t>(offset));
  });
}

void execPrmt(Warp &w, const Inst &in, LaneMask active) {
  const unsigned mode = in.sub;
  lanes3(w, in, active, [mode](uint64_t a, uint64_t b, uint64_t c) -> uint64_t {
    return prmt(as<uint32_t>(a), as<uint32_t>(b), as<uint32_t>(c), mode);
  });
}

/// The 3-input truth table of lop3: bit (a<<2 | b<<1 | c) of immLut.
inline uint32_t lop3(uint32_t a, uint32_t b, uint32_t c, uint32_t lut) {
  uint32_t result = 0;
  if (lut & 0x01) result |= ~a & ~b & ~c;
  if (lut & 0x02) result |= ~a & ~b & c;
  if (lut & 0x04) result |= ~a & b & ~c;
  if (lut & 0x08) result |= ~a & b & c;
  if (lut & 0x10) result |= a & ~b & ~c;
  if (lut & 0x20) result |= a & ~b & c;
  if (lut & 0x40) result |= a & b & ~c;
  if (lut & 0x80) result |= a & b & c;
  return result;
}

/// lop3.b32 d, a, b, c, immLut (immLut in aux; its own constant slot is not read).
void execLop3(Warp &w, const Inst &in, LaneMask active) {
  const uint32_t lut = in.aux;
  lanes3(w, in, active, [lut](uint64_t a, uint64_t b, uint64_t c) -> uint64_t {
    return lop3(as<uint32_t>(a), as<uint32_t>(b), as<uint32_t>(c), lut);
  });
}

/// lop3.{and,or}.b32 d|p, a, b, c, immLut, q: also p = (d != 0) BoolOp q, with
/// the combine table in sub2 (bit (t | q<<1)).
void execLop3Predicate(Warp &w, const Inst &in, LaneMask active) {
  const uint32_t lut = in.aux;
  const unsigned table = in.sub2;
  uint64_t *d = w.row(in.ops[0].slot);
  uint64_t *p = w.row(in.ops[1].slot);
  const uint64_t *a = w.row(in.ops[2].slot), *b = w.row(in.ops[3].slot), *c = w.row(in.ops[4].slot);
  const uint64_t *q = w.row(in.ops[6].slot);
  const uint64_t flip = negation(in.ops[6]);
  const uint64_t mask = registerMask(in.ops[0]);
  forLanes(active, [&](unsigned l) {
    uint32_t r = lop3(as<uint32_t>(a[l]), as<uint32_t>(b[l]), as<uint32_t>(c[l]), lut);
    unsigned t = r != 0, qv = unsigned((q[l] ^ flip) & 1);
    d[l] = r & mask;
    p[l] = (table >> (t | (qv << 1))) & 1;
  });
}

/// szext.{clamp,wrap}.{s32,u32} d, a, b: extend the low b bits of a.
template <bool Signed, bool Clamp> void execSzext(Warp &w, const Inst &in, LaneMask active) {
  lanes2(w, in, active, [](uint64_t av, uint64_t bv) {
    uint32_t a = as<uint32_t>(av), b = as<uint32_t>(bv);
    uint32_t b1 = b & 0x1f;
    bool tooLarge = b >= 32 && Clamp;
    uint32_t mask = tooLarge ? 0 : (~uint32_t(0) << b1);
    bool sign = !(b1 == 0 || tooLarge || !Signed) && ((a >> ((b1 - 1) & 0x1f)) & 1);
    uint32_t d = (a & ~mask) | (sign ? mask : 0);
    // b = 0 (or a multiple of 32 with .wrap) keeps nothing: the mask covers all bits.
    return Signed ? widen(int32_t(d)) : uint64_t(d);
  });
}

/// bmsk.{clamp,wrap}.b32 d, a, b: b one-bits starting at bit a.
template <bool Clamp> void execBmsk(Warp &w, const Inst &in, LaneMask active) {
  lanes2(w, in, active, [](uint64_t av, uint64_t bv) -> uint64_t {
    uint32_t a = as<uint32_t>(av), b = as<uint32_t>(bv);
    uint32_t a1 = a & 0x1f, b1 = b & 0x1f, sum = a1 + b1;
    uint32_t mask0 = ~uint32_t(0) << a1;
    uint32_t mask1 = sum >= 32 ? 0 : (~uint32_t(0) << sum);
    bool overflow = sum >= 32;
    if (Clamp) {
      if (a >= 32) overflow = true, mask0 = 0;
      if (b >= 32) overflow = true;
    }
    if (overflow) mask1 = 0;
    else if (b1 == 0) mask1 = ~uint32_t(0);
    return mask0 & ~mask1;
  });
}

template <bool ASigned, bool BSigned> void execDp4a(Warp &w, const Inst &in, LaneMask active) {
  lanes3(w, in, active, [](uint64_t a, uint64_t b, uint64_t c) -> uint64_t {
    return dp4a(as<uint32_t>(a), as<uint32_t>(b), as<uint32_t>(c), ASigned, BSigned);
  });
}

template <bool ASigned, bool BSigned, bool High> void execDp2a(Warp &w, const Inst &in, LaneMask active) {
  lanes3(w, in, active, [](uint64_t a, uint64_t b, uint64_t c) -> uint64_t {
    return dp2a(as<uint32_t>(a), as<uint32_t>(b), as<uint32_t>(c), ASigned, BSigned, High);
  });
}

// ---------------------------------------------------------------------------
// SIMD video instructions (vadd4 ... vmax4, vadd2 ... vmax2, vset4, vset2),
// which nvcc emits for the __v*4/__v*2 intrinsics. Only the default operand
// selectors and destination mask are emulated (the decoder refuses the
// `%r.b10`-style operand suffixes). sub: bit 0 a signed, bit 1 b signed;
// sub2: 1 for the .add accumulate form; kSigned: signed destination (.sat range).

struct VideoAdd { static int64_t apply(int64_t a, int64_t b) { return a + b; } };
struct VideoSub { static int64_t apply(int64_t a, int64_t b) { return a - b; } };
struct VideoAvrg {
  static int64_t apply(int64_t a, int64_t b) { return a + b >= 0 ? (a + b + 1) >> 1 : (a + b) >> 1; }
};
struct VideoAbsdiff { static int64_t apply(int64_t a, int64_t b) { return a > b ? a - b : b - a; } };
struct VideoMin { static int64_t apply(int64_t a, int64_t b) { return std::min(a, b); } };
struct VideoMax { static int64_t apply(int64_t a, int64_t b) { return std::max(a, b); } };

/// Element i of a packed register, sign- or zero-extended.
template <unsigned Bits> inline int64_t videoElement(uint64_t v, unsigned i, bool isSigned) {
  uint32_t field = (uint32_t(v) >> (i * Bits)) & ((1u << Bits) - 1);
  if (isSigned && (field >> (Bits - 1))) return int64_t(field) - (int64_t(1) << Bits);
  return field;
}

/// vop4/vop2: the op per element; .sat clamps to the destination's element
/// range, otherwise the element wraps; .add sums the (unclamped) elements into c.
template <class Op, unsigned Bits> void execVideoSimd(Warp &w, const Inst &in, LaneMask active) {
  constexpr unsigned count = 32 / Bits;
  const bool aSigned = in.sub & 1, bSigned = in.sub & 2, accumulate = in.sub2, sat = in.flags & kSat;
  const int64_t lowest = (in.flags & kSigned) ? -(int64_t(1) << (Bits - 1)) : 0;
  const int64_t highest = (in.flags & kSigned) ? (int64_t(1) << (Bits - 1)) - 1 : (int64_t(1) << Bits) - 1;
  lanes3(w, in, active, [=](uint64_t a, uint64_t b, uint64_t c) -> uint64_t {
    uint32_t d = accumulate ? uint32_t(c) : 0;
    for (unsigned i = 0; i < count; ++i) {
      int64_t t = Op::apply(videoElement<Bits>(a, i, aSigned), videoElement<Bits>(b, i, bSigned));
      if (accumulate) {
        d += uint32_t(t);
      } else {
        if (sat) t = std::clamp(t, lowest, highest);
        d |= (uint32_t(t) & ((1u << Bits) - 1)) << (i * Bits);
      }
    }
    return d;
  });
}

/// vset4/vset2: 1 or 0 per element (the compare mask over less/equal/greater
/// in aux), or their count added to c.
template <unsigned Bits> void execVideoSet(Warp &w, const Inst &in, LaneMask active) {
  constexpr unsigned count = 32 / Bits;
  const bool aSigned = in.sub & 1, bSigned = in.sub & 2, accumulate = in.sub2;
  const uint32_t compare = in.aux;
  lanes3(w, in, active, [=](uint64_t a, uint64_t b, uint64_t c) -> uint64_t {
    uint32_t d = accumulate ? uint32_t(c) : 0;
    for (unsigned i = 0; i < count; ++i) {
      int64_t x = videoElement<Bits>(a, i, aSigned), y = videoElement<Bits>(b, i, bSigned);
      uint32_t t = (compare >> (unsigned(x == y) + 2u * unsigned(x > y))) & 1;
      d += accumulate ? t : t << (i * Bits);
    }
    return d;
  });
}

// ---------------------------------------------------------------------------
// Predicate logic (and/or/xor/not .pred apply `!` on their sources).

template <class Op> void execPredBinary(Warp &w, const Inst &in, LaneMask active) {
  uint64_t *d = w.row(in.ops[0].slot);
  const uint64_t *a = w.row(in.ops[1].slot), *b = w.row(in.ops[2].slot);
  const uint64_t fa = negation(in.ops[1]), fb = negation(in.ops[2]);
  forLanes(active, [&](unsigned l) { d[l] = Op::apply(a[l] ^ fa, b[l] ^ fb) & 1; });
}

void execPredNot(Warp &w, const Inst &in, LaneMask active) {
  uint64_t *d = w.row(in.ops[0].slot);
  const uint64_t *a = w.row(in.ops[1].slot);
  const uint64_t flip = negation(in.ops[1]) ^ 1;
  forLanes(active, [&](unsigned l) { d[l] = (a[l] ^ flip) & 1; });
}

// ---------------------------------------------------------------------------
// Carry chains (add.cc, addc, sub.cc, subc, mad.cc, madc). CC.CF lives per lane
// in a side table keyed by the warp: Warp has no field for it, and a warp runs
// on one host thread for its whole CTA (Interpreter.cpp), so a thread-local
// table needs no lock. Warps are reused by their host thread across CTAs, so
// the table stays as small as the number of warps a thread holds.
//
// CF is always the carry out of an addition, as on the GPU: a - b is computed
// as a + ~b + 1, so sub.cc leaves CF = 1 when nothing was borrowed and subc
// adds ~b + CF. Chains of one kind read as the ISA describes them (borrow in,
// borrow out); mixed chains (add.cc then subc) give what an H200 gives.

uint32_t &carryFlags(const Warp &w) {
  thread_local std::unordered_map<const Warp *, uint32_t> table;
  if (table.size() > 4096) table.clear(); // only if warps were reallocated many times
  return table[&w];
}

/// x + y + cin with the carry out of the whole sum.
template <typename U> inline U addWithCarry(U x, U y, uint32_t cin, uint32_t &cout) {
  U s = U(x + y), t = U(s + cin);
  cout = (s < x) | (t < s);
  return t;
}

/// a + b + CF.
struct CarryAdd {
  static constexpr uint32_t kCarryWithout = 0; ///< the carry-in of the form without one (add.cc)
  template <typename T> static T apply(T a, T b, T, uint32_t cin, uint32_t &cout) {
    using U = std::make_unsigned_t<T>;
    return T(addWithCarry<U>(U(a), U(b), cin, cout));
  }
};
/// a + ~b + CF, which is a - b for sub.cc (CF taken as 1).
struct CarrySub {
  static constexpr uint32_t kCarryWithout = 1;
  template <typename T> static T apply(T a, T b, T, uint32_t cin, uint32_t &cout) {
    using U = std::make_unsigned_t<T>;
    return T(addWithCarry<U>(U(a), U(~U(b)), cin, cout));
  }
};
/// (a*b).lo + c + CF.
struct CarryMadLo {
  static constexpr uint32_t kCarryWithout = 0;
  template <typename T> static T apply(T a, T b, T c, uint32_t cin, uint32_t &cout) {
    using U = std::make_unsigned_t<T>;
    return T(addWithCarry<U>(U(wrapMul(a, b)), U(c), cin, cout));
  }
};
/// (a*b).hi + c + CF.
struct CarryMadHi {
  static constexpr uint32_t kCarryWithout = 0;
  template <typename T> static T apply(T a, T b, T c, uint32_t cin, uint32_t &cout) {
    using U = std::make_unsigned_t<T>;
    return T(addWithCarry<U>(U(mulHigh(a, b)), U(c), cin, cout));
  }
};

template <class Kind> struct CarryOp {
  template <typename T> static void exec(Warp &w, const Inst &in, LaneMask active) {
    const bool carryIn = in.flags & kCarryIn, carryOut = in.flags & kCarryOut;
    uint32_t &flags = carryFlags(w);
    uint32_t carry = flags;
    uint64_t *d = w.row(in.ops[0].slot);
    const uint64_t *a = w.row(in.ops[1].slot), *b = w.row(in.ops[2].slot);
    const uint64_t *c = in.nsrc > 2 ? w.row(in.ops[3].slot) : nullptr;
    const uint64_t mask = registerMask(in.ops[0]);
    forLanes(active, [&](unsigned l) {
      uint32_t cin = carryIn ? (flags >> l) & 1 : Kind::kCarryWithout, cout = 0;
      T r = Kind::template apply<T>(as<T>(a[l]), as<T>(b[l]), c ? as<T>(c[l]) : T(0), cin, cout);
      d[l] = widen(r) & mask;
      carry = (carry & ~(1u << l)) | (cout << l);
    });
    if (carryOut) flags = carry;
  }
};

template <class Kind> ExecFn carryByType(DType t) {
  switch (t) {
  case DType::U32: return &CarryOp<Kind>::template exec<uint32_t>;
  case DType::S32: return &CarryOp<Kind>::template exec<int32_t>;
  case DType::U64: return &CarryOp<Kind>::template exec<uint64_t>;
  case DType::S64: return &CarryOp<Kind>::template exec<int64_t>;
  default: return nullptr;
  }
}

// ===========================================================================
// Floating point (f32, f64, f32x2)

/// The NaN an H200 writes for f32 arithmetic is always 0x7fffffff. For f64 it
/// propagates the NaN operand (quieted) and writes 0xfff8000000000000 for an
/// invalid operation, exactly what the host's SSE unit does, so f64 results
/// are left as the host computed them.
inline float canonicalNaN(float v) { return v != v ? std::bit_cast<float>(0x7fffffffu) : v; }
inline double canonicalNaN(double v) { return v; }
inline float ftzIf(float v, bool ftz) { return ftz ? flushSubnormal(v) : v; }

struct FAdd {
  template <typename F> static F fast(F a, F b) { return a + b; }
  static float round(float a, float b, Rounding r) { return addF32(a, b, r); }
  static double round(double a, double b, Rounding r) { return addF64(a, b, r); }
};
struct FSub {
  template <typename F> static F fast(F a, F b) { return a - b; }
  static float round(float a, float b, Rounding r) { return subF32(a, b, r); }
  static double round(double a, double b, Rounding r) { return subF64(a, b, r); }
};
struct FMul {
  template <typename F> static F fast(F a, F b) { return a * b; }
  static float round(float a, float b, Rounding r) { return mulF32(a, b, r); }
  static double round(double a, double b, Rounding r) { return mulF64(a, b, r); }
};
struct FDiv {
  template <typename F> static F fast(F a, F b) { return a / b; }
  static float round(float a, float b, Rounding r) { return divF32(a, b, r); }
  static double round(double a, double b, Rounding r) { return divF64(a, b, r); }
};

/// One f32 operation with .rnd/.ftz/.sat (ftz on inputs and result, then sat).
template <class Op> inline float f32Binary(float a, float b, Rounding r, bool ftz, bool sat) {
  float z = ftzIf(Op::round(ftzIf(a, ftz), ftzIf(b, ftz), r), ftz);
  return sat ? saturate(z) : z;
}
inline float f32Fma(float a, float b, float c, Rounding r, bool ftz, bool sat) {
  float z = ftzIf(fmaF32(ftzIf(a, ftz), ftzIf(b, ftz), ftzIf(c, ftz), r), ftz);
  return sat ? saturate(z) : z;
}

/// Round-to-nearest without .ftz/.sat: the host's own IEEE operation (what
/// nvcc emits for plain `a + b`), with the GPU's NaNs.
template <typename F, class Op> void execFloatBinaryNearest(Warp &w, const Inst &in, LaneMask active) {
  lanes2(w, in, active, [](uint64_t a, uint64_t b) { return widen(canonicalNaN(Op::fast(as<F>(a), as<F>(b)))); });
}

template <typename F, class Op> void execFloatBinary(Warp &w, const Inst &in, LaneMask active) {
  const Rounding r = in.rounding;
  if constexpr (std::is_same_v<F, float>) {
    const bool ftz = in.flags & kFtz, sat = in.flags & kSat;
    lanes2(w, in, active, [=](uint64_t a, uint64_t b) { return widen(f32Binary<Op>(as<F>(a), as<F>(b), r, ftz, sat)); });
  } else {
    lanes2(w, in, active, [=](uint64_t a, uint64_t b) { return widen(Op::round(as<F>(a), as<F>(b), r)); });
  }
}

template <typename F> void execFmaNearest(Warp &w, const Inst &in, LaneMask active) {
  lanes3(w, in, active, [](uint64_t a, uint64_t b, uint64_t c) {
    return widen(canonicalNaN(std::fma(as<F>(a), as<F>(b), as<F>(c))));
  });
}

template <typename F> void execFma(Warp &w, const Inst &in, LaneMask active) {
  const Rounding r = in.rounding;
  if constexpr (std::is_same_v<F, float>) {
    const bool ftz = in.flags & kFtz, sat = in.flags & kSat;
    lanes3(w, in, active, [=](uint64_t a, uint64_t b, uint64_t c) {
      return widen(f32Fma(as<float>(a), as<float>(b), as<float>(c), r, ftz, sat));
    });
  } else {
    lanes3(w, in, active, [=](uint64_t a, uint64_t b, uint64_t c) {
      return widen(fmaF64(as<double>(a), as<double>(b), as<double>(c), r));
    });
  }
}

/// Picks the host fast path when the form allows it.
inline bool isNearest(Rounding r) { return r == Rounding::None || r == Rounding::Rn; }

template <typename F, class Op> ExecFn floatBinary(const Inst &in) {
  if (isNearest(in.rounding) && !(in.flags & (kFtz | kSat))) return &execFloatBinaryNearest<F, Op>;
  return &execFloatBinary<F, Op>;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/// execFmaNearest compiled for hosts with FMA and AVX2 instructions: the same
/// results (a fused multiply-add rounds once either way), but the lanes run
/// as vector instructions instead of a libm call each. Picked at decode time
/// when the host has them.
template <typename F> [[gnu::target("avx2,fma")]] inline F hostFma(F a, F b, F c) {
  if constexpr (sizeof(F) == 4) return __builtin_fmaf(a, b, c);
  else return __builtin_fma(a, b, c);
}
template <typename F> [[gnu::target("avx2,fma")]] void execFmaNearestVector(Warp &w, const Inst &in, LaneMask active) {
  uint64_t *d = w.row(in.ops[0].slot);
  const uint64_t *a = w.row(in.ops[1].slot);
  const uint64_t *b = w.row(in.ops[2].slot);
  const uint64_t *c = w.row(in.ops[3].slot);
  const uint64_t mask = registerMask(in.ops[0]);
  if (active == ~LaneMask(0)) {
    for (unsigned l = 0; l < kWarpSize; ++l)
      d[l] = widen(canonicalNaN(hostFma<F>(as<F>(a[l]), as<F>(b[l]), as<F>(c[l])))) & mask;
    return;
  }
  while (active) {
    unsigned l = static_cast<unsigned>(__builtin_ctz(active));
    active &= active - 1;
    d[l] = widen(canonicalNaN(hostFma<F>(as<F>(a[l]), as<F>(b[l]), as<F>(c[l])))) & mask;
  }
}
inline bool hostHasVectorFma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif

template <typename F> ExecFn floatFma(const Inst &in) {
  if (isNearest(in.rounding) && !(in.flags & (kFtz | kSat))) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (hostHasVectorFma()) return &execFmaNearestVector<F>;
#endif
    return &execFmaNearest<F>;
  }
  return &execFma<F>;
}

/// .f32x2 (two f32 in a 64-bit register, element 0 in the low word).
inline float lowF32(uint64_t v) { return as<float>(v); }
inline float highF32(uint64_t v) { return as<float>(v >> 32); }
inline uint64_t packF32x2(float lo, float hi) { return asBits(lo) | (asBits(hi) << 32); }

template <class Op> void execF32x2Binary(Warp &w, const Inst &in, LaneMask active) {
  const Rounding r = in.rounding;
  const bool ftz = in.flags & kFtz, sat = in.flags & kSat;
  lanes2(w, in, active, [=](uint64_t a, uint64_t b) {
    return packF32x2(f32Binary<Op>(lowF32(a), lowF32(b), r, ftz, sat),
                     f32Binary<Op>(highF32(a), highF32(b), r, ftz, sat));
  });
}

void execF32x2Fma(Warp &w, const Inst &in, LaneMask active) {
  const Rounding r = in.rounding;
  const bool ftz = in.flags & kFtz, sat = in.flags & kSat;
  lanes3(w, in, active, [=](uint64_t a, uint64_t b, uint64_t c) {
    return packF32x2(f32Fma(lowF32(a), lowF32(b), lowF32(c), r, ftz, sat),
                     f32Fma(highF32(a), highF32(b), highF32(c), r, ftz, sat));
  });
}

/// sqrt.rnd / rcp.rnd (f32 with .ftz, f64).
template <float (*Fn32)(float, Rounding), double (*Fn64)(double, Rounding), typename F>
void execFloatUnaryRounded(Warp &w, const Inst &in, LaneMask active) {
  const Rounding r = in.rounding;
  if constexpr (std::is_same_v<F, float>) {
    const bool ftz = in.flags & kFtz;
    lanes1(w, in, active, [=](uint64_t a) { return widen(ftzIf(Fn32(ftzIf(as<float>(a), ftz), r), ftz)); });
  } else {
    lanes1(w, in, active, [=](uint64_t a) { return widen(Fn64(as<double>(a), r)); });
  }
}

/// The f32 .approx functions (ex2, lg2, sin, cos, rcp, sqrt, rsqrt, tanh).
template <float (*Fn)(float, bool)> void execApproxF32(Warp &w, const Inst &in, LaneMask active) {
  const bool ftz = in.flags & kFtz;
  lanes1(w, in, active, [=](uint64_t a) { return widen(Fn(as<float>(a), ftz)); });
}

float tanhApproxFtz(float a, bool) { return tanhApprox(a); }

template <double (*Fn)(double)> void execApproxF64(Warp &w, const Inst &in, LaneMask active) {
  lanes1(w, in, active, [](uint64_t a) { return widen(Fn(as<double>(a))); });
}

/// div.approx.f32 (which gives 0 for |b| > 2^126, as the hardware does).
void execDivApprox(Warp &w, const Inst &in, LaneMask active) {
  const bool ftz = in.flags & kFtz;
  lanes2(w, in, active, [=](uint64_t a, uint64_t b) { return widen(divApprox(as<float>(a), as<float>(b), ftz)); });
}

/// div.full.f32: full range, within 2 ulp.
void execDivFull(Warp &w, const Inst &in, LaneMask active) {
  const bool ftz = in.flags & kFtz;
  lanes2(w, in, active, [=](uint64_t a, uint64_t b) { return widen(divFull(as<float>(a), as<float>(b), ftz)); });
}

/// abs / neg on floats: a sign-bit operation (after .ftz on f32), except for
/// NaNs, where an H200 gives the canonical NaN for f32 and the input NaN,
/// quieted and with its sign, for f64.
template <typename F, bool Negate> void execFloatSign(Warp &w, const Inst &in, LaneMask active) {
  using U = std::conditional_t<sizeof(F) == 8, uint64_t, uint32_t>;
  constexpr U sign = U(1) << (sizeof(F) * 8 - 1);
  constexpr U infinity = std::bit_cast<U>(std::numeric_limits<F>::infinity());
  const bool ftz = std::is_same_v<F, float> && (in.flags & kFtz);
  lanes1(w, in, active, [=](uint64_t a) -> uint64_t {
    U bits = as<U>(a);
    if ((bits & ~sign) > infinity) {
      if constexpr (std::is_same_v<F, float>) return U(~sign);
      else return U(bits | (U(1) << 51));
    }
    if constexpr (std::is_same_v<F, float>)
      if (ftz) bits = std::bit_cast<U>(flushSubnormal(std::bit_cast<F>(bits)));
    return Negate ? U(bits ^ sign) : U(bits & ~sign);
  });
}

/// min/max.f32 with .ftz, .NaN, .abs (sub bit 0), .xorsign (sub bit 1) and an
/// optional third source.
template <bool IsMax> void execMinMaxF32(Warp &w, const Inst &in, LaneMask active) {
  const bool ftz = in.flags & kFtz, nan = in.flags & kNaN;
  const bool absolute = in.sub & 1, xorsign = in.sub & 2;
  const bool three = in.nsrc == 3;
  uint64_t *d = w.row(in.ops[0].slot);
  const uint64_t *a = w.row(in.ops[1].slot), *b = w.row(in.ops[2].slot);
  const uint64_t *c = three ? w.row(in.ops[3].slot) : nullptr;
  auto pick = [nan](float x, float y) { return IsMax ? maxF32(x, y, nan) : minF32(x, y, nan); };
  forLanes(active, [&](unsigned l) {
    float x = ftzIf(as<float>(a[l]), ftz), y = ftzIf(as<float>(b[l]), ftz);
    bool negative = std::signbit(x) != std::signbit(y);
    if (absolute) x = std::fabs(x), y = std::fabs(y);
    float r = pick(x, y);
    if (three) {
      float z = ftzIf(as<float>(c[l]), ftz);
      r = pick(r, absolute ? std::fabs(z) : z);
    }
    if (xorsign && r == r) r = std::copysign(r, negative ? -1.0f : 1.0f);
    d[l] = asBits(r);
  });
}

template <bool IsMax> void execMinMaxF64(Warp &w, const Inst &in, LaneMask active) {
  lanes2(w, in, active, [](uint64_t a, uint64_t b) {
    return widen(IsMax ? maxF64(as<double>(a), as<double>(b)) : minF64(as<double>(a), as<double>(b)));
  });
}

/// copysign d, a, b: b's magnitude with a's sign.
template <typename U> void execCopysign(Warp &w, const Inst &in, LaneMask active) {
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  lanes2(w, in, active, [](uint64_t a, uint64_t b) -> uint64_t { return U((as<U>(b) & ~sign) | (as<U>(a) & sign)); });
}

/// testp: the class of the value (0 zero, 1 subnormal, 2 normal, 3 infinite,
/// 4 NaN) selects a bit of the op's mask in sub.
template <typename U, unsigned ExpBits> void execTestp(Warp &w, const Inst &in, LaneMask active) {
  constexpr unsigned manBits = sizeof(U) * 8 - 1 - ExpBits;
  constexpr U expMask = ((U(1) << ExpBits) - 1) << manBits;
  constexpr U manMask = (U(1) << manBits) - 1;
  const unsigned classes = in.sub;
  lanes1(w, in, active, [=](uint64_t a) -> uint64_t {
    U bits = as<U>(a);
    U e = bits & expMask, m = bits & manMask;
    unsigned cls = e == 0 ? (m == 0 ? 0 : 1) : e == expMask ? (m == 0 ? 3 : 4) : 2;
    return (classes >> cls) & 1;
  });
}

// ===========================================================================
// Half precision (f16, bf16 and their x2 packs)

inline uint16_t flushHalf(uint16_t h) { return (h & 0x7c00) == 0 ? uint16_t(h & 0x8000) : h; }
inline bool isNaNF16(uint16_t h) { return (h & 0x7fff) > 0x7c00; }
inline bool isNaNBf16(uint16_t h) { return (h & 0x7fff) > 0x7f80; }
/// .relu on a 16-bit result: NaN → canonical NaN, negative → +0.
template <bool Bf16> inline uint16_t reluHalf(uint16_t h) {
  if (Bf16 ? isNaNBf16(h) : isNaNF16(h)) return 0x7fff;
  return (h & 0x8000) ? 0 : h;
}

inline uint64_t pack16(uint16_t lo, uint16_t hi) { return uint64_t(lo) | (uint64_t(hi) << 16); }

struct HAdd {
  static uint16_t f16(uint16_t a, uint16_t b, Rounding r, bool ftz, bool sat) { return f16Add(a, b, r, ftz, sat); }
  static uint16_t bf16(uint16_t a, uint16_t b, Rounding r) { return bf16Add(a, b, r); }
};
struct HSub {
  static uint16_t f16(uint16_t a, uint16_t b, Rounding r, bool ftz, bool sat) { return f16Sub(a, b, r, ftz, sat); }
  static uint16_t bf16(uint16_t a, uint16_t b, Rounding r) { return bf16Sub(a, b, r); }
};
struct HMul {
  static uint16_t f16(uint16_t a, uint16_t b, Rounding r, bool ftz, bool sat) { return f16Mul(a, b, r, ftz, sat); }
  static uint16_t bf16(uint16_t a, uint16_t b, Rounding r) { return bf16Mul(a, b, r); }
};

/// f16/bf16 add/sub/mul, scalar or packed (the op on each 16-bit half).
template <class Op, bool Bf16, bool Packed> void execHalfBinary(Warp &w, const Inst &in, LaneMask active) {
  const Rounding r = in.rounding;
  const bool ftz = in.flags & kFtz, sat = in.flags & kSat;
  auto one = [=](uint16_t x, uint16_t y) -> uint16_t {
    if constexpr (Bf16) return Op::bf16(x, y, r);
    else return Op::f16(x, y, r, ftz, sat);
  };
  lanes2(w, in, active, [&](uint64_t a, uint64_t b) -> uint64_t {
    if constexpr (Packed) return pack16(one(uint16_t(a), uint16_t(b)), one(uint16_t(a >> 16), uint16_t(b >> 16)));
    else return one(uint16_t(a), uint16_t(b));
  });
}

template <bool Bf16, bool Packed> void execHalfFma(Warp &w, const Inst &in, LaneMask active) {
  const Rounding r = in.rounding;
  const bool ftz = in.flags & kFtz, sat = in.flags & kSat, relu = in.flags & kRelu;
  auto one = [=](uint16_t x, uint16_t y, uint16_t z) -> uint16_t {
    uint16_t v;
    if constexpr (Bf16) v = bf16Fma(x, y, z, r);
    else v = f16Fma(x, y, z, r, ftz, sat);
    return relu ? reluHalf<Bf16>(v) : v;
  };
  lanes3(w, in, active, [&](uint64_t a, uint64_t b, uint64_t c) -> uint64_t {
    if constexpr (Packed)
      return pack16(one(uint16_t(a), uint16_t(b), uint16_t(c)),
                    one(uint16_t(a >> 16), uint16_t(b >> 16), uint16_t(c >> 16)));
    else return one(uint16_t(a), uint16_t(b), uint16_t(c));
  });
}

/// min/max on halves with .ftz (f16), .NaN, .relu, .abs/.xorsign (sub as in f32).
template <bool IsMax, bool Bf16, bool Packed> void execHalfMinMax(Warp &w, const Inst &in, LaneMask active) {
  const bool ftz = in.flags & kFtz, nan = in.flags & kNaN, relu = in.flags & kRelu;
  const bool absolute = in.sub & 1, xorsign = in.sub & 2;
  auto one = [=](uint16_t x, uint16_t y) -> uint16_t {
    if (!Bf16 && ftz) x = flushHalf(x), y = flushHalf(y);
    uint16_t sign = uint16_t((x ^ y) & 0x8000);
    if (absolute) x &= 0x7fff, y &= 0x7fff;
    uint16_t v;
    if constexpr (Bf16) v = IsMax ? bf16Max(x, y, nan) : bf16Min(x, y, nan);
    else v = IsMax ? f16Max(x, y, nan) : f16Min(x, y, nan);
    bool vNaN = Bf16 ? isNaNBf16(v) : isNaNF16(v);
    if (xorsign && !vNaN) v = uint16_t((v & 0x7fff) | sign);
    return relu ? reluHalf<Bf16>(v) : v;
  };
  lanes2(w, in, active, [&](uint64_t a, uint64_t b) -> uint64_t {
    if constexpr (Packed) return pack16(one(uint16_t(a), uint16_t(b)), one(uint16_t(a >> 16), uint16_t(b >> 16)));
    else return one(uint16_t(a), uint16_t(b));
  });
}

/// abs/neg on halves: sign-bit operations (.ftz flushes f16 subnormals first);
/// a NaN becomes the canonical 0x7fff, as on an H200.
template <bool Negate, bool Bf16, bool Packed> void execHalfSign(Warp &w, const Inst &in, LaneMask active) {
  const bool ftz = !Bf16 && (in.flags & kFtz);
  auto one = [=](uint16_t x) -> uint16_t {
    if (Bf16 ? isNaNBf16(x) : isNaNF16(x)) return 0x7fff;
    if (ftz) x = flushHalf(x);
    return Negate ? uint16_t(x ^ 0x8000) : uint16_t(x & 0x7fff);
  };
  lanes1(w, in, active, [&](uint64_t a) -> uint64_t {
    if constexpr (Packed) return pack16(one(uint16_t(a)), one(uint16_t(a >> 16)));
    else return one(uint16_t(a));
  });
}


template <uint16_t (*Fn)(uint16_t), bool Packed> void execHalfUnary(Warp &w, const Inst &in, LaneMask active) {
  lanes1(w, in, active, [](uint64_t a) -> uint64_t {
    if constexpr (Packed) return pack16(Fn(uint16_t(a)), Fn(uint16_t(a >> 16)));
    else return Fn(uint16_t(a));
  });
}

// ===========================================================================
// Comparison and selection
//
// A comparison computes the relation of a and b as 0 less, 1 equal, 2 greater,
// 3 unordered; the compare op is a 4-bit mask over those (sub), so `ltu` is
// less|unordered and no op needs a branch of its own. The boolean combine with
// c is a 4-bit truth table indexed by (t | c<<1) (sub2).

template <typename T> struct IntRelation {
  static unsigned of(uint64_t a, uint64_t b, bool) {
    T x = as<T>(a), y = as<T>(b);
    return unsigned(x == y) + 2u * unsigned(x > y);
  }
};

template <typename F> struct FloatRelation {
  static unsigned of(uint64_t a, uint64_t b, bool ftz) {
    F x = as<F>(a), y = as<F>(b);
    if constexpr (std::is_same_v<F, float>)
      if (ftz) x = flushSubnormal(x), y = flushSubnormal(y);
    return unsigned(x == y) + 2u * unsigned(x > y) + 3u * unsigned(x != x || y != y);
  }
};

template <bool Bf16> struct HalfRelation {
  static unsigned of(uint64_t a, uint64_t b, bool ftz) {
    uint16_t x = uint16_t(a), y = uint16_t(b);
    if (!Bf16 && ftz) x = flushHalf(x), y = flushHalf(y);
    float fx = Bf16 ? bf16ToF32(x) : f16ToF32(x), fy = Bf16 ? bf16ToF32(y) : f16ToF32(y);
    return unsigned(fx == fy) + 2u * unsigned(fx > fy) + 3u * unsigned(fx != fx || fy != fy);
  }
};

/// setp: p = combine(t, c), q = combine(!t, c); for x2 types p and q are the
/// low and high halves' results.
template <class Relation, bool Packed> void execSetp(Warp &w, const Inst &in, LaneMask active) {
  const bool pair = in.ndst == 2;
  uint64_t *p = w.row(in.ops[0].slot);
  uint64_t *q = pair ? w.row(in.ops[1].slot) : nullptr;
  const uint64_t *a = w.row(in.ops[in.ndst].slot), *b = w.row(in.ops[in.ndst + 1].slot);
  const bool hasC = in.nsrc == 3;
  const uint64_t *c = hasC ? w.row(in.ops[in.ndst + 2].slot) : nullptr;
  const uint64_t flip = hasC ? negation(in.ops[in.ndst + 2]) : 0;
  const unsigned compare = in.sub, table = in.sub2;
  const bool ftz = in.flags & kFtz;
  forLanes(active, [&](unsigned l) {
    unsigned cv = hasC ? unsigned((c[l] ^ flip) & 1) : 0;
    if constexpr (Packed) {
      unsigned t0 = (compare >> Relation::of(a[l], b[l], ftz)) & 1;
      unsigned t1 = (compare >> Relation::of(a[l] >> 16, b[l] >> 16, ftz)) & 1;
      p[l] = (table >> (t0 | (cv << 1))) & 1;
      if (pair) q[l] = (table >> (t1 | (cv << 1))) & 1;
    } else {
      unsigned t = (compare >> Relation::of(a[l], b[l], ftz)) & 1;
      p[l] = (table >> (t | (cv << 1))) & 1;
      if (pair) q[l] = (table >> ((t ^ 1) | (cv << 1))) & 1;
    }
  });
}

/// set: the combined result as the destination type's "true" pattern (aux:
/// 0xffffffff, 1.0f, 0x3c00...) or 0; for x2 sources, per 16-bit half.
template <class Relation, bool Packed> void execSet(Warp &w, const Inst &in, LaneMask active) {
  const uint64_t *a = w.row(in.ops[1].slot), *b = w.row(in.ops[2].slot);
  const bool hasC = in.nsrc == 3;
  const uint64_t *c = hasC ? w.row(in.ops[3].slot) : nullptr;
  const uint64_t flip = hasC ? negation(in.ops[3]) : 0;
  const unsigned compare = in.sub, table = in.sub2;
  const bool ftz = in.flags & kFtz;
  const uint64_t yes = in.aux;
  uint64_t *d = w.row(in.ops[0].slot);
  const uint64_t mask = registerMask(in.ops[0]);
  forLanes(active, [&](unsigned l) {
    unsigned cv = hasC ? unsigned((c[l] ^ flip) & 1) : 0;
    if constexpr (Packed) {
      unsigned t0 = (compare >> Relation::of(a[l], b[l], ftz)) & 1;
      unsigned t1 = (compare >> Relation::of(a[l] >> 16, b[l] >> 16, ftz)) & 1;
      uint64_t lo = ((table >> (t0 | (cv << 1))) & 1) ? yes : 0;
      uint64_t hi = ((table >> (t1 | (cv << 1))) & 1) ? yes : 0;
      d[l] = (lo | (hi << 16)) & mask;
    } else {
      unsigned t = (compare >> Relation::of(a[l], b[l], ftz)) & 1;
      d[l] = (((table >> (t | (cv << 1))) & 1) ? yes : 0) & mask;
    }
  });
}

template <class Relation, bool Packed> ExecFn compareFn(bool isSet) {
  return isSet ? &execSet<Relation, Packed> : &execSetp<Relation, Packed>;
}

/// The relation for a compare type (b types compare unsigned; `unsignedOrder`
/// is set for lo/ls/hi/hs).
ExecFn compareByType(DType t, bool isSet, bool unsignedOrder) {
  switch (t) {
  case DType::B16:
  case DType::U16: return compareFn<IntRelation<uint16_t>, false>(isSet);
  case DType::S16:
    return unsignedOrder ? compareFn<IntRelation<uint16_t>, false>(isSet) : compareFn<IntRelation<int16_t>, false>(isSet);
  case DType::B32:
  case DType::U32: return compareFn<IntRelation<uint32_t>, false>(isSet);
  case DType::S32:
    return unsignedOrder ? compareFn<IntRelation<uint32_t>, false>(isSet) : compareFn<IntRelation<int32_t>, false>(isSet);
  case DType::B64:
  case DType::U64: return compareFn<IntRelation<uint64_t>, false>(isSet);
  case DType::S64:
    return unsignedOrder ? compareFn<IntRelation<uint64_t>, false>(isSet) : compareFn<IntRelation<int64_t>, false>(isSet);
  case DType::F32: return compareFn<FloatRelation<float>, false>(isSet);
  case DType::F64: return compareFn<FloatRelation<double>, false>(isSet);
  case DType::F16: return compareFn<HalfRelation<false>, false>(isSet);
  case DType::F16x2: return compareFn<HalfRelation<false>, true>(isSet);
  case DType::BF16: return compareFn<HalfRelation<true>, false>(isSet);
  case DType::BF16x2: return compareFn<HalfRelation<true>, true>(isSet);
  default: return nullptr;
  }
}

/// selp d, a, b, c: c ? a : b.
template <typename T> void execSelp(Warp &w, const Inst &in, LaneMask active) {
  uint64_t *d = w.row(in.ops[0].slot);
  const uint64_t *a = w.row(in.ops[1].slot), *b = w.row(in.ops[2].slot), *c = w.row(in.ops[3].slot);
  const uint64_t flip = negation(in.ops[3]);
  const uint64_t mask = registerMask(in.ops[0]);
  forLanes(active, [&](unsigned l) { d[l] = widen(as<T>(((c[l] ^ flip) & 1) ? a[l] : b[l])) & mask; });
}

/// slct d, a, b, c: c >= 0 ? a : b, with c an s32 or an f32 (.ftz flushes c;
/// -0 counts as >= 0, NaN does not).
template <typename T, bool FloatC> void execSlct(Warp &w, const Inst &in, LaneMask active) {
  const bool ftz = in.flags & kFtz;
  lanes3(w, in, active, [=](uint64_t a, uint64_t b, uint64_t c) {
    bool first;
    if constexpr (FloatC) first = ftzIf(as<float>(c), ftz) >= 0.0f;
    else first = as<int32_t>(c) >= 0;
    return widen(as<T>(first ? a : b));
  });
}

template <template <typename> class Exec> ExecFn byBitWidth(DType t) {
  switch (t) {
  case DType::S16: return &Exec<int16_t>::exec;
  case DType::S32: return &Exec<int32_t>::exec;
  case DType::S64: return &Exec<int64_t>::exec;
  default: break;
  }
  switch (dtypeBits(t)) {
  case 16: return &Exec<uint16_t>::exec;
  case 32: return &Exec<uint32_t>::exec;
  case 64: return &Exec<uint64_t>::exec;
  default: return nullptr;
  }
}

template <typename T> struct SelpExec {
  static void exec(Warp &w, const Inst &in, LaneMask active) { execSelp<T>(w, in, active); }
};
template <typename T> struct SlctIntExec {
  static void exec(Warp &w, const Inst &in, LaneMask active) { execSlct<T, false>(w, in, active); }
};
template <typename T> struct SlctFloatExec {
  static void exec(Warp &w, const Inst &in, LaneMask active) { execSlct<T, true>(w, in, active); }
};

// ===========================================================================
// Moves and conversions

/// mov d, a in the type's width (extended to a wider destination register).
template <typename T> struct MovExec {
  static void exec(Warp &w, const Inst &in, LaneMask active) {
    lanes1(w, in, active, [](uint64_t a) { return widen(as<T>(a)); });
  }
};

void execMovPred(Warp &w, const Inst &in, LaneMask active) {
  uint64_t *d = w.row(in.ops[0].slot);
  const uint64_t *a = w.row(in.ops[1].slot);
  const uint64_t flip = negation(in.ops[1]);
  forLanes(active, [&](unsigned l) { d[l] = (a[l] ^ flip) & 1; });
}

/// mov.b64 d, {a, b} (and b32 ← {b16, b16}, b64 ← four b16): element 0 lowest.
/// sub = element bits, sub2 = element count.
void execMovPack(Warp &w, const Inst &in, LaneMask active) {
  const unsigned bits = in.sub, count = in.sub2;
  const uint64_t elementMask = lowBits(~uint64_t(0), bits);
  uint64_t *d = w.row(in.ops[0].slot);
  const uint64_t *src[4];
  for (unsigned i = 0; i < count; ++i) src[i] = w.row(in.ops[1 + i].slot);
  const uint64_t mask = registerMask(in.ops[0]);
  forLanes(active, [&](unsigned l) {
    uint64_t v = 0;
    for (unsigned i = 0; i < count; ++i) v |= (src[i][l] & elementMask) << (i * bits);
    d[l] = v & mask;
  });
}

/// mov.b64 {a, b}, d: the inverse (sinks write the scratch slot).
void execMovUnpack(Warp &w, const Inst &in, LaneMask active) {
  const unsigned bits = in.sub, count = in.sub2;
  const uint64_t elementMask = lowBits(~uint64_t(0), bits);
  const uint64_t *a = w.row(in.ops[count].slot);
  uint64_t *dst[4];
  uint64_t masks[4];
  for (unsigned i = 0; i < count; ++i) dst[i] = w.row(in.ops[i].slot), masks[i] = registerMask(in.ops[i]) & elementMask;
  forLanes(active, [&](unsigned l) {
    uint64_t v = a[l];
    for (unsigned i = 0; i < count; ++i) dst[i][l] = (v >> (i * bits)) & masks[i];
  });
}

/// cvt between integer types without .sat: truncate or extend (by the source's
/// signedness), then extend to the register by the destination's.
template <typename D, typename S> void execCvtInt(Warp &w, const Inst &in, LaneMask active) {
  lanes1(w, in, active, [](uint64_t a) { return widen(static_cast<D>(as<S>(a))); });
}

/// Every other scalar cvt: Arith's convert with the decoded types and modes.
void execCvt(Warp &w, const Inst &in, LaneMask active) {
  const DType dst = in.type, src = in.type2;
  const Rounding r = in.rounding;
  const bool ftz = in.flags & kFtz, sat = in.flags & kSat;
  const unsigned srcBits = dtypeBits(src);
  lanes1(w, in, active, [=](uint64_t a) { return convert(dst, src, lowBits(a, srcBits), r, ftz, sat); });
}

/// cvt.{rn,rz}{.relu}{.satfinite}.{f16,bf16,tf32}.f32 (sub bit 0 relu, bit 1 satfinite).
template <DType Dst> void execCvtF32Special(Warp &w, const Inst &in, LaneMask active) {
  const Rounding r = in.rounding;
  const bool relu = in.sub & 1, satfinite = in.sub & 2;
  lanes1(w, in, active, [=](uint64_t a) -> uint64_t {
    float v = as<float>(a);
    if constexpr (Dst == DType::F16) return cvtF32ToF16(v, r, relu, satfinite);
    else if constexpr (Dst == DType::BF16) return cvtF32ToBf16(v, r, relu, satfinite);
    else return cvtF32ToTf32(v, r, relu, satfinite);
  });
}

/// cvt.{rn,rz}{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b: a → high half.
template <bool Bf16> void execCvtPackHalf(Warp &w, const Inst &in, LaneMask active) {
  const Rounding r = in.rounding;
  const bool relu = in.sub & 1, satfinite = in.sub & 2;
  lanes2(w, in, active, [=](uint64_t a, uint64_t b) -> uint64_t {
    if constexpr (Bf16) return packBf16x2(as<float>(a), as<float>(b), r, relu, satfinite);
    else return packF16x2(as<float>(a), as<float>(b), r, relu, satfinite);
  });
}

/// cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32 d, a, b.
template <bool E5M2> void execCvtPackFp8(Warp &w, const Inst &in, LaneMask active) {
  const bool relu = in.sub & 1;
  lanes2(w, in, active, [=](uint64_t a, uint64_t b) -> uint64_t {
    if constexpr (E5M2) return packE5M2x2(as<float>(a), as<float>(b), relu);
    else return packE4M3x2(as<float>(a), as<float>(b), relu);
  });
}

/// cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f16x2 d, a.
template <bool E5M2> void execCvtFp8FromF16x2(Warp &w, const Inst &in, LaneMask active) {
  const bool relu = in.sub & 1;
  lanes1(w, in, active, [=](uint64_t a) -> uint64_t {
    if constexpr (E5M2) return f16x2ToE5M2x2(as<uint32_t>(a), relu);
    else return f16x2ToE4M3x2(as<uint32_t>(a), relu);
  });
}

/// cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} d, a.
template <bool E5M2> void execCvtF16x2FromFp8(Warp &w, const Inst &in, LaneMask active) {
  const bool relu = in.sub & 1;
  lanes1(w, in, active, [=](uint64_t a) -> uint64_t {
    if constexpr (E5M2) return e5m2x2ToF16x2(as<uint16_t>(a), relu);
    else return e4m3x2ToF16x2(as<uint16_t>(a), relu);
  });
}

/// cvt.pack.sat.{u16,s16,u8,s8,u4,s4,u2,s2}.s32[.b32] d, a, b[, c]: a and b
/// clamped to the narrow type, a above b, c's low bits above both. sub = the
/// narrow width; kSigned for the signed forms.
void execCvtPackSat(Warp &w, const Inst &in, LaneMask active) {
  const unsigned size = in.sub;
  const bool isSigned = in.flags & kSigned;
  const int64_t lowest = isSigned ? -(int64_t(1) << (size - 1)) : 0;
  const int64_t highest = isSigned ? (int64_t(1) << (size - 1)) - 1 : (int64_t(1) << size) - 1;
  const uint64_t fieldMask = (uint64_t(1) << size) - 1;
  const bool hasC = in.nsrc == 3;
  uint64_t *d = w.row(in.ops[0].slot);
  const uint64_t *a = w.row(in.ops[1].slot), *b = w.row(in.ops[2].slot);
  const uint64_t *c = hasC ? w.row(in.ops[3].slot) : nullptr;
  const uint64_t mask = registerMask(in.ops[0]);
  forLanes(active, [&](unsigned l) {
    uint64_t ta = uint64_t(std::clamp<int64_t>(as<int32_t>(a[l]), lowest, highest)) & fieldMask;
    uint64_t tb = uint64_t(std::clamp<int64_t>(as<int32_t>(b[l]), lowest, highest)) & fieldMask;
    uint64_t v = tb | (ta << size) | (hasC ? uint64_t(as<uint32_t>(c[l])) << (2 * size) : 0);
    d[l] = uint64_t(uint32_t(v)) & mask;
  });
}

// ===========================================================================
// Decoding

/// Reports the first modifier outside `allowed` as unsupported; false then.
bool onlyModifiers(DecodeContext &ctx, std::string_view allowed) {
  for (const std::string &m : ctx.in.modifiers)
    if (!hasWord(allowed, m)) {
      ctx.unsupported("the modifier ." + m + " is not emulated in this form");
      return false;
    }
  return true;
}

/// Checks that none of the space-separated modifiers appear together.
bool atMostOne(DecodeContext &ctx, std::initializer_list<std::string_view> modifiers) {
  int count = 0;
  for (std::string_view m : modifiers) count += ctx.has(m) ? 1 : 0;
  if (count > 1) {
    ctx.invalid("conflicting modifiers");
    return false;
  }
  return true;
}

/// The single type modifier; None after reporting.
DType singleType(DecodeContext &ctx) {
  std::vector<DType> types = ctx.types();
  if (types.size() != 1) {
    ctx.invalid(types.empty() ? "a type modifier is required" : "expects exactly one type modifier");
    return DType::None;
  }
  return types[0];
}

bool isFloatRounding(Rounding r) {
  return r == Rounding::Rn || r == Rounding::Rz || r == Rounding::Rm || r == Rounding::Rp;
}

/// Appends one scalar destination and scalar sources of the given types, then
/// installs `fn`. Nothing is installed after an error (already reported).
void emit(DecodeContext &ctx, ExecFn fn, std::initializer_list<DType> sources) {
  const auto &operands = ctx.in.operands;
  if (operands.size() != 1 + sources.size()) {
    ctx.invalid("expects " + std::to_string(1 + sources.size()) + " operands");
    return;
  }
  if (operands[0].kind == ptx::Operand::Kind::Vector || operands[0].kind == ptx::Operand::Kind::Pair) {
    ctx.invalid("expects a single destination register");
    return;
  }
  if (!ctx.addDst(operands[0])) return;
  size_t i = 1;
  for (DType type : sources) {
    if (operands[i].kind == ptx::Operand::Kind::Vector) {
      ctx.invalid("operand " + std::to_string(i + 1) + " must be a scalar");
      return;
    }
    if (!ctx.addSrc(operands[i++], type)) return;
  }
  if (!fn) {
    ctx.unsupported("this type is not emulated for the instruction");
    return;
  }
  ctx.out.exec = fn;
}

const char *const kIntTypes = "u16 u32 u64 s16 s32 s64";

// ---------------------------------------------------------------------------
// add / sub / mul / mad / fma / div and friends

enum class Arith3 { Add, Sub, Mul };

/// The float forms shared by add, sub and mul.
bool decodeFloatArith(DecodeContext &ctx, Arith3 op) {
  Inst &out = ctx.out;
  out.rounding = ctx.rounding();
  if (ctx.has("f32x2")) {
    if (!onlyModifiers(ctx, "f32x2 rn rz rm rp ftz sat")) return true;
    ExecFn fn = op == Arith3::Add ? &execF32x2Binary<FAdd> : op == Arith3::Sub ? &execF32x2Binary<FSub>
                                                                             : &execF32x2Binary<FMul>;
    emit(ctx, fn, {DType::B64, DType::B64});
    return true;
  }
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  out.type = t;
  switch (t) {
  case DType::F32: {
    if (!onlyModifiers(ctx, "f32 rn rz rm rp ftz sat")) return true;
    ExecFn fn = op == Arith3::Add ? floatBinary<float, FAdd>(out)
                : op == Arith3::Sub ? floatBinary<float, FSub>(out)
                                    : floatBinary<float, FMul>(out);
    emit(ctx, fn, {t, t});
    return true;
  }
  case DType::F64: {
    if (!onlyModifiers(ctx, "f64 rn rz rm rp")) return true;
    ExecFn fn = op == Arith3::Add ? floatBinary<double, FAdd>(out)
                : op == Arith3::Sub ? floatBinary<double, FSub>(out)
                                    : floatBinary<double, FMul>(out);
    emit(ctx, fn, {t, t});
    return true;
  }
  case DType::F16:
  case DType::F16x2: {
    if (!onlyModifiers(ctx, "f16 f16x2 rn ftz sat")) return true;
    bool packed = t == DType::F16x2;
    ExecFn fn = op == Arith3::Add ? (packed ? &execHalfBinary<HAdd, false, true> : &execHalfBinary<HAdd, false, false>)
                : op == Arith3::Sub ? (packed ? &execHalfBinary<HSub, false, true> : &execHalfBinary<HSub, false, false>)
                                    : (packed ? &execHalfBinary<HMul, false, true> : &execHalfBinary<HMul, false, false>);
    emit(ctx, fn, {t, t});
    return true;
  }
  case DType::BF16:
  case DType::BF16x2: {
    if (!onlyModifiers(ctx, "bf16 bf16x2 rn")) return true;
    bool packed = t == DType::BF16x2;
    ExecFn fn = op == Arith3::Add ? (packed ? &execHalfBinary<HAdd, true, true> : &execHalfBinary<HAdd, true, false>)
                : op == Arith3::Sub ? (packed ? &execHalfBinary<HSub, true, true> : &execHalfBinary<HSub, true, false>)
                                    : (packed ? &execHalfBinary<HMul, true, true> : &execHalfBinary<HMul, true, false>);
    emit(ctx, fn, {t, t});
    return true;
  }
  default: return ctx.unsupported(std::string("type .") + dtypeName(t) + " is not emulated");
  }
}

bool decodeAddSub(DecodeContext &ctx, bool isSub) {
  ctx.commonFlags();
  Inst &out = ctx.out;
  if (ctx.has("s16x2") || ctx.has("u16x2")) {
    if (!onlyModifiers(ctx, "s16x2 u16x2")) return true;
    bool s = ctx.has("s16x2");
    ExecFn fn = isSub ? (s ? &execPacked16<OpSub, int16_t, false> : &execPacked16<OpSub, uint16_t, false>)
                      : (s ? &execPacked16<OpAdd, int16_t, false> : &execPacked16<OpAdd, uint16_t, false>);
    emit(ctx, fn, {DType::B32, DType::B32});
    return true;
  }
  std::vector<DType> types = ctx.types();
  if (types.size() == 1 && isInteger(types[0])) {
    DType t = types[0];
    out.type = t;
    if (!onlyModifiers(ctx, "u16 u32 u64 s16 s32 s64 sat cc")) return true;
    if (ctx.has("cc")) {
      if (ctx.has("sat")) return ctx.invalid(".sat and .cc do not combine");
      out.flags |= kCarryOut;
      ExecFn fn = isSub ? carryByType<CarrySub>(t) : carryByType<CarryAdd>(t);
      if (!fn) return ctx.invalid(".cc needs a 32- or 64-bit integer type");
      emit(ctx, fn, {t, t});
      return true;
    }
    if (ctx.has("sat")) {
      if (t != DType::S32) return ctx.invalid(".sat applies to .s32 only");
      emit(ctx, isSub ? &IntBinary<OpSubSat>::exec<int32_t> : &IntBinary<OpAddSat>::exec<int32_t>, {t, t});
      return true;
    }
    emit(ctx, isSub ? byIntType<IntBinary<OpSub>>(t) : byIntType<IntBinary<OpAdd>>(t), {t, t});
    return true;
  }
  return decodeFloatArith(ctx, isSub ? Arith3::Sub : Arith3::Add);
}

/// addc / subc {.cc}: with carry (borrow) in.
bool decodeAddcSubc(DecodeContext &ctx, bool isSub) {
  if (!onlyModifiers(ctx, "cc u32 s32 u64 s64")) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  ctx.out.type = t;
  ctx.out.flags |= kCarryIn | (ctx.has("cc") ? kCarryOut : 0);
  emit(ctx, isSub ? carryByType<CarrySub>(t) : carryByType<CarryAdd>(t), {t, t});
  return true;
}

bool decodeMul(DecodeContext &ctx) {
  ctx.commonFlags();
  Inst &out = ctx.out;
  std::vector<DType> types = ctx.types();
  if (types.size() == 1 && isInteger(types[0])) {
    DType t = types[0];
    out.type = t;
    if (!onlyModifiers(ctx, "u16 u32 u64 s16 s32 s64 lo hi wide")) return true;
    if (!atMostOne(ctx, {"lo", "hi", "wide"})) return true;
    if (ctx.has("wide")) {
      out.flags |= kWide;
      ExecFn fn = byNarrowIntType<IntBinary<OpMulWide>>(t);
      if (!fn) return ctx.invalid(".wide applies to 16- and 32-bit types");
      emit(ctx, fn, {t, t});
    } else if (ctx.has("hi")) {
      out.flags |= kHigh;
      emit(ctx, byIntType<IntBinary<OpMulHi>>(t), {t, t});
    } else if (ctx.has("lo")) {
      emit(ctx, byIntType<IntBinary<OpMulLo>>(t), {t, t});
    } else {
      return ctx.invalid("integer mul needs .lo, .hi or .wide");
    }
    return true;
  }
  return decodeFloatArith(ctx, Arith3::Mul);
}

/// fma (and mad on floats, which is fma: one rounding).
bool decodeFmaForm(DecodeContext &ctx, bool isMad) {
  ctx.commonFlags();
  Inst &out = ctx.out;
  out.rounding = ctx.rounding();
  if (ctx.has("oob")) return ctx.unsupported(".oob (out-of-bounds operand handling) is not emulated");
  if (ctx.has("f32x2")) {
    if (!onlyModifiers(ctx, "f32x2 rn rz rm rp ftz sat")) return true;
    if (!isFloatRounding(out.rounding)) return ctx.invalid("a rounding modifier (.rn/.rz/.rm/.rp) is required");
    emit(ctx, &execF32x2Fma, {DType::B64, DType::B64, DType::B64});
    return true;
  }
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  out.type = t;
  switch (t) {
  case DType::F32:
    if (!onlyModifiers(ctx, "f32 rn rz rm rp ftz sat")) return true;
    // mad.f32 without a rounding mode is the sm_20+ fused form, rounded to nearest.
    if (!isMad && !isFloatRounding(out.rounding)) return ctx.invalid("fma.f32 needs .rn, .rz, .rm or .rp");
    emit(ctx, floatFma<float>(out), {t, t, t});
    return true;
  case DType::F64:
    if (!onlyModifiers(ctx, "f64 rn rz rm rp")) return true;
    if (!isMad && !isFloatRounding(out.rounding)) return ctx.invalid("fma.f64 needs .rn, .rz, .rm or .rp");
    emit(ctx, floatFma<double>(out), {t, t, t});
    return true;
  case DType::F16:
  case DType::F16x2:
    if (isMad) return ctx.unsupported("mad on half types is not a PTX form; use fma");
    if (!onlyModifiers(ctx, "f16 f16x2 rn ftz sat relu")) return true;
    if (!atMostOne(ctx, {"sat", "relu"})) return true;
    emit(ctx, t == DType::F16x2 ? &execHalfFma<false, true> : &execHalfFma<false, false>, {t, t, t});
    return true;
  case DType::BF16:
  case DType::BF16x2:
    if (isMad) return ctx.unsupported("mad on half types is not a PTX form; use fma");
    if (!onlyModifiers(ctx, "bf16 bf16x2 rn relu")) return true;
    emit(ctx, t == DType::BF16x2 ? &execHalfFma<true, true> : &execHalfFma<true, false>, {t, t, t});
    return true;
  default: return ctx.unsupported(std::string("type .") + dtypeName(t) + " is not emulated");
  }
}

bool decodeMad(DecodeContext &ctx) {
  std::vector<DType> types = ctx.types();
  if (!(types.size() == 1 && isInteger(types[0]))) return decodeFmaForm(ctx, true);
  Inst &out = ctx.out;
  DType t = types[0];
  out.type = t;
  if (!onlyModifiers(ctx, "u16 u32 u64 s16 s32 s64 lo hi wide sat cc")) return true;
  if (!atMostOne(ctx, {"lo", "hi", "wide"})) return true;
  if (ctx.has("cc")) {
    if (ctx.has("wide") || ctx.has("sat")) return ctx.invalid(".cc combines with .lo or .hi only");
    out.flags |= kCarryOut;
    ExecFn fn = ctx.has("hi") ? carryByType<CarryMadHi>(t) : carryByType<CarryMadLo>(t);
    if (!fn) return ctx.invalid(".cc needs a 32- or 64-bit integer type");
    emit(ctx, fn, {t, t, t});
    return true;
  }
  if (ctx.has("sat")) {
    if (!(ctx.has("hi") && t == DType::S32)) return ctx.invalid(".sat applies to mad.hi.s32 only");
    out.flags |= kSat | kHigh;
    emit(ctx, &execMadHiSat, {t, t, t});
    return true;
  }
  if (ctx.has("wide")) {
    out.flags |= kWide;
    ExecFn fn = byNarrowIntType<IntMadWide>(t);
    if (!fn) return ctx.invalid(".wide applies to 16- and 32-bit types");
    DType wide = t == DType::U16 ? DType::U32 : t == DType::S16 ? DType::S32 : t == DType::U32 ? DType::U64 : DType::S64;
    emit(ctx, fn, {t, t, wide});
    return true;
  }
  if (ctx.has("hi")) {
    out.flags |= kHigh;
    emit(ctx, byIntType<IntMad<OpMulHi>>(t), {t, t, t});
    return true;
  }
  if (!ctx.has("lo")) return ctx.invalid("integer mad needs .lo, .hi or .wide");
  emit(ctx, byIntType<IntMad<OpMulLo>>(t), {t, t, t});
  return true;
}

bool decodeMadc(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, "lo hi cc u32 s32 u64 s64")) return true;
  if (!atMostOne(ctx, {"lo", "hi"})) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  ctx.out.type = t;
  ctx.out.flags |= kCarryIn | (ctx.has("cc") ? kCarryOut : 0);
  if (!ctx.has("lo") && !ctx.has("hi")) return ctx.invalid("madc needs .lo or .hi");
  emit(ctx, ctx.has("hi") ? carryByType<CarryMadHi>(t) : carryByType<CarryMadLo>(t), {t, t, t});
  return true;
}

bool decodeMul24(DecodeContext &ctx, bool isMad) {
  if (!onlyModifiers(ctx, isMad ? "lo hi sat u32 s32" : "lo hi u32 s32")) return true;
  if (!atMostOne(ctx, {"lo", "hi"})) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  bool s = t == DType::S32, hi = ctx.has("hi");
  if (!hi && !ctx.has("lo")) return ctx.invalid("needs .lo or .hi");
  ctx.out.type = t;
  if (!isMad) {
    ExecFn fn = s ? (hi ? &execMul24<true, true> : &execMul24<true, false>)
                  : (hi ? &execMul24<false, true> : &execMul24<false, false>);
    emit(ctx, fn, {t, t});
    return true;
  }
  if (ctx.has("sat")) {
    if (!(hi && s)) return ctx.invalid(".sat applies to mad24.hi.s32 only");
    emit(ctx, &execMad24<true, true, true>, {t, t, t});
    return true;
  }
  ExecFn fn = s ? (hi ? &execMad24<true, true, false> : &execMad24<true, false, false>)
                : (hi ? &execMad24<false, true, false> : &execMad24<false, false, false>);
  emit(ctx, fn, {t, t, t});
  return true;
}

bool decodeDiv(DecodeContext &ctx) {
  ctx.commonFlags();
  Inst &out = ctx.out;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  out.type = t;
  out.rounding = ctx.rounding();
  if (isInteger(t)) {
    if (!onlyModifiers(ctx, kIntTypes)) return true;
    emit(ctx, byIntType<IntBinary<OpDiv>>(t), {t, t});
    return true;
  }
  if (t == DType::F32) {
    if (!onlyModifiers(ctx, "f32 approx full rn rz rm rp ftz")) return true;
    int forms = (ctx.has("approx") ? 1 : 0) + (ctx.has("full") ? 1 : 0) + (isFloatRounding(out.rounding) ? 1 : 0);
    if (forms != 1) return ctx.invalid("div.f32 needs exactly one of .approx, .full or a rounding modifier");
    if (ctx.has("approx")) emit(ctx, &execDivApprox, {t, t});
    else if (ctx.has("full")) emit(ctx, &execDivFull, {t, t});
    else emit(ctx, floatBinary<float, FDiv>(out), {t, t});
    return true;
  }
  if (t == DType::F64) {
    if (!onlyModifiers(ctx, "f64 rn rz rm rp")) return true;
    if (!isFloatRounding(out.rounding)) return ctx.invalid("div.f64 needs .rn, .rz, .rm or .rp");
    emit(ctx, floatBinary<double, FDiv>(out), {t, t});
    return true;
  }
  return ctx.unsupported(std::string("type .") + dtypeName(t) + " is not emulated");
}

/// Integer-only binary ops with every integer type (rem).
template <class Op> bool decodeIntOnly(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, kIntTypes)) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  ctx.out.type = t;
  emit(ctx, byIntType<IntBinary<Op>>(t), {t, t});
  return true;
}

bool decodeSad(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, kIntTypes)) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  ctx.out.type = t;
  emit(ctx, byIntType<IntSad>(t), {t, t, t});
  return true;
}

bool decodeAbsNeg(DecodeContext &ctx, bool isNeg) {
  ctx.commonFlags();
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  ctx.out.type = t;
  switch (t) {
  case DType::S16:
  case DType::S32:
  case DType::S64:
    if (!onlyModifiers(ctx, "s16 s32 s64")) return true;
    emit(ctx, isNeg ? byIntType<IntUnary<OpNeg>>(t) : byIntType<IntUnary<OpAbs>>(t), {t});
    return true;
  case DType::F32:
    if (!onlyModifiers(ctx, "f32 ftz")) return true;
    emit(ctx, isNeg ? &execFloatSign<float, true> : &execFloatSign<float, false>, {t});
    return true;
  case DType::F64:
    if (!onlyModifiers(ctx, "f64")) return true;
    emit(ctx, isNeg ? &execFloatSign<double, true> : &execFloatSign<double, false>, {t});
    return true;
  case DType::F16:
  case DType::F16x2: {
    if (!onlyModifiers(ctx, "f16 f16x2 ftz")) return true;
    bool p = t == DType::F16x2;
    ExecFn fn = isNeg ? (p ? &execHalfSign<true, false, true> : &execHalfSign<true, false, false>)
                      : (p ? &execHalfSign<false, false, true> : &execHalfSign<false, false, false>);
    emit(ctx, fn, {t});
    return true;
  }
  case DType::BF16:
  case DType::BF16x2: {
    if (!onlyModifiers(ctx, "bf16 bf16x2")) return true;
    bool p = t == DType::BF16x2;
    ExecFn fn = isNeg ? (p ? &execHalfSign<true, true, true> : &execHalfSign<true, true, false>)
                      : (p ? &execHalfSign<false, true, true> : &execHalfSign<false, true, false>);
    emit(ctx, fn, {t});
    return true;
  }
  default: return ctx.unsupported(std::string("type .") + dtypeName(t) + " is not emulated");
  }
}

template <bool IsMax> bool decodeMinMax(DecodeContext &ctx) {
  ctx.commonFlags();
  Inst &out = ctx.out;
  const bool relu = ctx.has("relu");
  if (ctx.has("s16x2") || ctx.has("u16x2")) {
    if (!onlyModifiers(ctx, "s16x2 u16x2 relu")) return true;
    bool s = ctx.has("s16x2");
    if (relu && !s) return ctx.invalid(".relu applies to .s16x2 and .s32 only");
    using Op = std::conditional_t<IsMax, OpMax, OpMin>;
    ExecFn fn = s ? (relu ? &execPacked16<Op, int16_t, true> : &execPacked16<Op, int16_t, false>)
                  : &execPacked16<Op, uint16_t, false>;
    emit(ctx, fn, {DType::B32, DType::B32});
    return true;
  }
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  out.type = t;
  if (ctx.has("xorsign") != ctx.has("abs") && (ctx.has("xorsign") || ctx.in.operands.size() != 4))
    return ctx.invalid(".xorsign and .abs go together (.abs alone only with three sources)");
  out.sub = (ctx.has("abs") ? 1 : 0) | (ctx.has("xorsign") ? 2 : 0);
  if (isInteger(t)) {
    if (!onlyModifiers(ctx, "u16 u32 u64 s16 s32 s64 relu")) return true;
    if (relu) {
      if (t != DType::S32) return ctx.invalid(".relu applies to .s16x2 and .s32 only");
      emit(ctx, IsMax ? &IntBinary<OpMaxRelu>::exec<int32_t> : &IntBinary<OpMinRelu>::exec<int32_t>, {t, t});
      return true;
    }
    using Op = std::conditional_t<IsMax, OpMax, OpMin>;
    emit(ctx, byIntType<IntBinary<Op>>(t), {t, t});
    return true;
  }
  switch (t) {
  case DType::F32:
    if (!onlyModifiers(ctx, "f32 ftz NaN xorsign abs")) return true;
    if (ctx.in.operands.size() == 4) {
      if (ctx.has("xorsign")) return ctx.invalid(".xorsign takes two sources");
      emit(ctx, &execMinMaxF32<IsMax>, {t, t, t});
    } else {
      emit(ctx, &execMinMaxF32<IsMax>, {t, t});
    }
    return true;
  case DType::F64:
    if (!onlyModifiers(ctx, "f64")) return true;
    emit(ctx, &execMinMaxF64<IsMax>, {t, t});
    return true;
  case DType::F16:
  case DType::F16x2:
    if (!onlyModifiers(ctx, "f16 f16x2 ftz NaN xorsign abs relu")) return true;
    emit(ctx, t == DType::F16x2 ? &execHalfMinMax<IsMax, false, true> : &execHalfMinMax<IsMax, false, false>, {t, t});
    return true;
  case DType::BF16:
  case DType::BF16x2:
    if (!onlyModifiers(ctx, "bf16 bf16x2 NaN xorsign abs relu")) return true;
    emit(ctx, t == DType::BF16x2 ? &execHalfMinMax<IsMax, true, true> : &execHalfMinMax<IsMax, true, false>, {t, t});
    return true;
  default: return ctx.unsupported(std::string("type .") + dtypeName(t) + " is not emulated");
  }
}

// ---------------------------------------------------------------------------
// Transcendentals and roots

enum class Unary { Rcp, Sqrt, Rsqrt, Sin, Cos, Lg2, Ex2, Tanh };

bool decodeUnaryFloat(DecodeContext &ctx, Unary op) {
  ctx.commonFlags();
  Inst &out = ctx.out;
  out.rounding = ctx.rounding();
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  out.type = t;
  const bool approx = ctx.has("approx"), rounded = isFloatRounding(out.rounding);
  const bool hasRoundedForm = op == Unary::Rcp || op == Unary::Sqrt;
  if (approx == rounded || (rounded && !hasRoundedForm))
    return ctx.invalid(hasRoundedForm ? "needs .approx or a rounding modifier" : "needs .approx");

  if (t == DType::F32) {
    if (!onlyModifiers(ctx, "f32 approx ftz rn rz rm rp")) return true;
    if (op == Unary::Tanh && ctx.has("ftz")) return ctx.invalid("tanh has no .ftz");
    ExecFn fn = nullptr;
    switch (op) {
    case Unary::Rcp: fn = approx ? &execApproxF32<rcpApprox> : &execFloatUnaryRounded<rcpF32, rcpF64, float>; break;
    case Unary::Sqrt: fn = approx ? &execApproxF32<sqrtApprox> : &execFloatUnaryRounded<sqrtF32, sqrtF64, float>; break;
    case Unary::Rsqrt: fn = &execApproxF32<rsqrtApprox>; break;
    case Unary::Sin: fn = &execApproxF32<sinApprox>; break;
    case Unary::Cos: fn = &execApproxF32<cosApprox>; break;
    case Unary::Lg2: fn = &execApproxF32<lg2Approx>; break;
    case Unary::Ex2: fn = &execApproxF32<ex2Approx>; break;
    case Unary::Tanh: fn = &execApproxF32<tanhApproxFtz>; break;
    }
    emit(ctx, fn, {t});
    return true;
  }
  if (t == DType::F64) {
    if (!onlyModifiers(ctx, "f64 approx ftz rn rz rm rp")) return true;
    ExecFn fn = nullptr;
    if (op == Unary::Rcp) fn = approx ? &execApproxF64<rcpApproxF64> : &execFloatUnaryRounded<rcpF32, rcpF64, double>;
    else if (op == Unary::Sqrt && rounded) fn = &execFloatUnaryRounded<sqrtF32, sqrtF64, double>;
    else if (op == Unary::Rsqrt) fn = &execApproxF64<rsqrtApproxF64>;
    else return ctx.invalid("this form has no .f64 variant");
    if (ctx.has("ftz") && !approx) return ctx.invalid(".ftz on .f64 goes with .approx only");
    emit(ctx, fn, {t});
    return true;
  }
  if (t == DType::F16 || t == DType::F16x2 || t == DType::BF16 || t == DType::BF16x2) {
    if (!(op == Unary::Ex2 || op == Unary::Tanh)) return ctx.invalid("only ex2 and tanh have half-precision forms");
    if (!onlyModifiers(ctx, "approx ftz f16 f16x2 bf16 bf16x2")) return true;
    bool packed = t == DType::F16x2 || t == DType::BF16x2;
    bool bf16 = t == DType::BF16 || t == DType::BF16x2;
    ExecFn fn;
    if (op == Unary::Ex2) {
      if (bf16) fn = packed ? &execHalfUnary<bf16Ex2Approx, true> : &execHalfUnary<bf16Ex2Approx, false>;
      else fn = packed ? &execHalfUnary<f16Ex2Approx, true> : &execHalfUnary<f16Ex2Approx, false>;
    } else {
      if (bf16) fn = packed ? &execHalfUnary<bf16TanhApprox, true> : &execHalfUnary<bf16TanhApprox, false>;
      else fn = packed ? &execHalfUnary<f16TanhApprox, true> : &execHalfUnary<f16TanhApprox, false>;
    }
    emit(ctx, fn, {t});
    return true;
  }
  return ctx.unsupported(std::string("type .") + dtypeName(t) + " is not emulated");
}

bool decodeCopysign(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, "f32 f64")) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  ctx.out.type = t;
  emit(ctx, t == DType::F64 ? &execCopysign<uint64_t> : &execCopysign<uint32_t>, {t, t});
  return true;
}

bool decodeTestp(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, "finite infinite number notanumber normal subnormal f32 f64")) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  ctx.out.type = t;
  // Class bits: 0 zero, 1 subnormal, 2 normal, 3 infinite, 4 NaN. An H200
  // counts ±0 as .normal (finite and not subnormal); the emulator does too.
  static constexpr std::pair<std::string_view, uint8_t> kOps[] = {
      {"finite", 0b00111}, {"infinite", 0b01000}, {"number", 0b01111},
      {"notanumber", 0b10000}, {"normal", 0b00101}, {"subnormal", 0b00010}};
  int found = 0;
  for (const auto &[name, mask] : kOps)
    if (ctx.has(name)) ctx.out.sub = mask, ++found;
  if (found != 1) return ctx.invalid("needs exactly one test (.finite, .infinite, .number, .notanumber, .normal, .subnormal)");
  emit(ctx, t == DType::F64 ? &execTestp<uint64_t, 11> : &execTestp<uint32_t, 8>, {t});
  return true;
}

// ---------------------------------------------------------------------------
// Bit manipulation and logic

bool decodeBitUnary(DecodeContext &ctx, const std::string &op) {
  if (!onlyModifiers(ctx, "b32 b64")) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  ctx.out.type = t;
  bool wide = t == DType::B64;
  ExecFn fn = op == "popc" ? (wide ? &IntUnary<OpPopc>::exec<uint64_t> : &IntUnary<OpPopc>::exec<uint32_t>)
              : op == "clz" ? (wide ? &IntUnary<OpClz>::exec<uint64_t> : &IntUnary<OpClz>::exec<uint32_t>)
                            : (wide ? &IntUnary<OpBrev>::exec<uint64_t> : &IntUnary<OpBrev>::exec<uint32_t>);
  emit(ctx, fn, {t});
  return true;
}

bool decodeBfe(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, "u32 s32 u64 s64")) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  ctx.out.type = t;
  ExecFn fn = t == DType::U32 ? &execBfe<uint32_t> : t == DType::S32 ? &execBfe<int32_t>
              : t == DType::U64 ? &execBfe<uint64_t> : &execBfe<int64_t>;
  emit(ctx, fn, {t, DType::U32, DType::U32});
  return true;
}

bool decodeBfi(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, "b32 b64")) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  ctx.out.type = t;
  emit(ctx, t == DType::B64 ? &execBfi<uint64_t> : &execBfi<uint32_t>, {t, t, DType::U32, DType::U32});
  return true;
}

bool decodeBfind(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, "shiftamt u32 s32 u64 s64")) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  ctx.out.type = t;
  bool amt = ctx.has("shiftamt");
  ExecFn fn;
  switch (t) {
  case DType::U32: fn = amt ? &execBfind<uint32_t, true> : &execBfind<uint32_t, false>; break;
  case DType::S32: fn = amt ? &execBfind<int32_t, true> : &execBfind<int32_t, false>; break;
  case DType::U64: fn = amt ? &execBfind<uint64_t, true> : &execBfind<uint64_t, false>; break;
  default: fn = amt ? &execBfind<int64_t, true> : &execBfind<int64_t, false>; break;
  }
  emit(ctx, fn, {t});
  return true;
}

bool decodeFns(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, "b32")) return true;
  if (singleType(ctx) == DType::None) return true;
  emit(ctx, &execFns, {DType::B32, DType::U32, DType::S32});
  return true;
}

bool decodePrmt(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, "b32 f4e b4e rc8 ecl ecr rc16")) return true;
  if (singleType(ctx) == DType::None) return true;
  static constexpr std::string_view kModes[] = {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"};
  for (unsigned i = 0; i < 6; ++i)
    if (ctx.has(kModes[i])) ctx.out.sub = static_cast<uint8_t>(i + 1);
  emit(ctx, &execPrmt, {DType::B32, DType::B32, DType::B32});
  return true;
}

/// Truth tables of the boolean combine (bit index t | c<<1).
constexpr uint8_t kCombineNone = 0b1010, kCombineAnd = 0b1000, kCombineOr = 0b1110, kCombineXor = 0b0110;

bool decodeLop3(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, "b32 and or")) return true;
  if (singleType(ctx) == DType::None) return true;
  if (!atMostOne(ctx, {"and", "or"})) return true;
  const auto &operands = ctx.in.operands;
  bool predicate = ctx.has("and") || ctx.has("or");
  if (operands.size() != (predicate ? 6u : 5u)) return ctx.invalid(predicate ? "expects d|p, a, b, c, immLut, q" : "expects d, a, b, c, immLut");
  const ptx::Operand &lut = operands[4];
  if (lut.kind != ptx::Operand::Kind::Integer || lut.intValue < 0 || lut.intValue > 255)
    return ctx.invalid("immLut must be an integer constant from 0 to 255");
  ctx.out.type = DType::B32;
  ctx.out.aux = static_cast<uint32_t>(lut.intValue);
  if (!predicate) {
    emit(ctx, &execLop3, {DType::B32, DType::B32, DType::B32, DType::B32});
    return true;
  }
  if (operands[0].kind != ptx::Operand::Kind::Pair) return ctx.invalid("the boolean form writes d|p");
  ctx.out.sub2 = ctx.has("and") ? kCombineAnd : kCombineOr;
  if (!ctx.addDst(operands[0])) return true;
  for (size_t i = 1; i <= 4; ++i)
    if (!ctx.addSrc(operands[i], DType::B32)) return true;
  if (!ctx.addSrc(operands[5], DType::Pred)) return true;
  ctx.out.exec = &execLop3Predicate;
  return true;
}

bool decodeShf(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, "l r wrap clamp b32")) return true;
  if (singleType(ctx) == DType::None) return true;
  bool left = ctx.has("l"), clamp = ctx.has("clamp");
  if (left == ctx.has("r")) return ctx.invalid("needs exactly one of .l and .r");
  if (clamp == ctx.has("wrap")) return ctx.invalid("needs exactly one of .wrap and .clamp");
  ExecFn fn = left ? (clamp ? &execShf<true, true> : &execShf<true, false>)
                   : (clamp ? &execShf<false, true> : &execShf<false, false>);
  emit(ctx, fn, {DType::B32, DType::B32, DType::U32});
  return true;
}

bool decodeShift(DecodeContext &ctx, bool left) {
  if (!onlyModifiers(ctx, left ? "b16 b32 b64" : "b16 b32 b64 u16 u32 u64 s16 s32 s64")) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  ctx.out.type = t;
  emit(ctx, left ? byIntType<Shift<OpShl>>(t) : byIntType<Shift<OpShr>>(t), {t, DType::U32});
  return true;
}

struct PredAnd { static uint64_t apply(uint64_t a, uint64_t b) { return a & b; } };
struct PredOr { static uint64_t apply(uint64_t a, uint64_t b) { return a | b; } };
struct PredXor { static uint64_t apply(uint64_t a, uint64_t b) { return a ^ b; } };

bool decodeLogic(DecodeContext &ctx, const std::string &op) {
  const bool unary = op == "not" || op == "cnot";
  if (!onlyModifiers(ctx, op == "cnot" ? "b16 b32 b64" : "pred b16 b32 b64")) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  ctx.out.type = t;
  if (t == DType::Pred) {
    if (op == "not") emit(ctx, &execPredNot, {t});
    else if (op == "and") emit(ctx, &execPredBinary<PredAnd>, {t, t});
    else if (op == "or") emit(ctx, &execPredBinary<PredOr>, {t, t});
    else emit(ctx, &execPredBinary<PredXor>, {t, t});
    return true;
  }
  if (unary) {
    emit(ctx, op == "not" ? byIntType<IntUnary<OpNot>>(t) : byIntType<IntUnary<OpCnot>>(t), {t});
    return true;
  }
  ExecFn fn = op == "and" ? byIntType<IntBinary<OpAnd>>(t) : op == "or" ? byIntType<IntBinary<OpOr>>(t)
                                                                        : byIntType<IntBinary<OpXor>>(t);
  emit(ctx, fn, {t, t});
  return true;
}

bool decodeSzext(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, "clamp wrap u32 s32")) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  bool clamp = ctx.has("clamp");
  if (clamp == ctx.has("wrap")) return ctx.invalid("needs exactly one of .wrap and .clamp");
  bool s = t == DType::S32;
  ctx.out.type = t;
  ExecFn fn = s ? (clamp ? &execSzext<true, true> : &execSzext<true, false>)
                : (clamp ? &execSzext<false, true> : &execSzext<false, false>);
  emit(ctx, fn, {t, DType::U32});
  return true;
}

bool decodeBmsk(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, "clamp wrap b32")) return true;
  if (singleType(ctx) == DType::None) return true;
  bool clamp = ctx.has("clamp");
  if (clamp == ctx.has("wrap")) return ctx.invalid("needs exactly one of .wrap and .clamp");
  emit(ctx, clamp ? &execBmsk<true> : &execBmsk<false>, {DType::U32, DType::U32});
  return true;
}

bool decodeDp(DecodeContext &ctx, bool four) {
  if (!onlyModifiers(ctx, four ? "u32 s32" : "lo hi u32 s32")) return true;
  std::vector<DType> types = ctx.types();
  if (types.size() != 2) return ctx.invalid("needs the two operand types (.atype.btype)");
  bool as = types[0] == DType::S32, bs = types[1] == DType::S32;
  DType c = as || bs ? DType::S32 : DType::U32;
  ctx.out.type = c;
  if (four) {
    ExecFn fn = as ? (bs ? &execDp4a<true, true> : &execDp4a<true, false>)
                   : (bs ? &execDp4a<false, true> : &execDp4a<false, false>);
    emit(ctx, fn, {types[0], types[1], c});
    return true;
  }
  bool hi = ctx.has("hi");
  if (hi == ctx.has("lo")) return ctx.invalid("needs exactly one of .lo and .hi");
  ExecFn fn = as ? (bs ? (hi ? &execDp2a<true, true, true> : &execDp2a<true, true, false>)
                       : (hi ? &execDp2a<true, false, true> : &execDp2a<true, false, false>))
                 : (bs ? (hi ? &execDp2a<false, true, true> : &execDp2a<false, true, false>)
                       : (hi ? &execDp2a<false, false, true> : &execDp2a<false, false, false>));
  emit(ctx, fn, {types[0], types[1], c});
  return true;
}

// ---------------------------------------------------------------------------
// setp / set / selp / slct

struct CompareName {
  std::string_view name;
  uint8_t mask; ///< over the relations: bit 0 less, 1 equal, 2 greater, 3 unordered
  bool integer, floating, unsignedOrder;
};

constexpr CompareName kCompares[] = {
    {"eq", 0b0010, true, true, false},   {"ne", 0b0101, true, true, false},   {"lt", 0b0001, true, true, false},
    {"le", 0b0011, true, true, false},   {"gt", 0b0100, true, true, false},   {"ge", 0b0110, true, true, false},
    {"lo", 0b0001, true, false, true},   {"ls", 0b0011, true, false, true},   {"hi", 0b0100, true, false, true},
    {"hs", 0b0110, true, false, true},   {"equ", 0b1010, false, true, false}, {"neu", 0b1101, false, true, false},
    {"ltu", 0b1001, false, true, false}, {"leu", 0b1011, false, true, false}, {"gtu", 0b1100, false, true, false},
    {"geu", 0b1110, false, true, false}, {"num", 0b0111, false, true, false}, {"nan", 0b1000, false, true, false},
};

/// setp.CmpOp{.BoolOp}{.ftz}.type p[|q], a, b{, {!}c} and
/// set.CmpOp{.BoolOp}{.ftz}.dtype.stype d, a, b{, {!}c}.
bool decodeCompare(DecodeContext &ctx, bool isSet) {
  ctx.commonFlags();
  Inst &out = ctx.out;
  const CompareName *compare = nullptr;
  uint8_t combine = kCombineNone;
  int combines = 0;
  for (const std::string &m : ctx.in.modifiers) {
    const CompareName *named = nullptr;
    for (const CompareName &c : kCompares)
      if (m == c.name) named = &c;
    if (named) {
      if (compare) return ctx.invalid("more than one comparison");
      compare = named;
    } else if (m == "and" || m == "or" || m == "xor") {
      combine = m == "and" ? kCombineAnd : m == "or" ? kCombineOr : kCombineXor;
      ++combines;
    } else if (m != "ftz" && parseDType(m) == DType::None) {
      return ctx.unsupported("the modifier ." + m + " is not emulated");
    }
  }
  if (!compare) return ctx.invalid("needs a comparison (.eq, .lt, ...)");
  if (combines > 1) return ctx.invalid("more than one boolean operation");

  std::vector<DType> types = ctx.types();
  if (types.size() != (isSet ? 2u : 1u))
    return ctx.invalid(isSet ? "needs a destination and a source type" : "needs exactly one type");
  DType t = types.back();
  DType dtype = types.front();
  out.type = dtype;
  out.type2 = t;
  bool floating = isFloat(t) || t == DType::F16x2 || t == DType::BF16x2;
  if (floating ? !compare->floating : !compare->integer)
    return ctx.invalid(std::string("comparison .") + std::string(compare->name) + " does not apply to ." + dtypeName(t));
  if (ctx.has("ftz") && !(t == DType::F32 || t == DType::F16 || t == DType::F16x2))
    return ctx.invalid(".ftz applies to .f32 and .f16 comparisons only");
  if (t == DType::Pred || t == DType::TF32 || dtypeBits(t) < 16 || dtypeBits(t) > 64)
    return ctx.unsupported(std::string("comparing .") + dtypeName(t) + " is not emulated");
  out.sub = compare->mask;
  out.sub2 = combine;
  ExecFn fn = compareByType(t, isSet, compare->unsignedOrder);
  if (!fn) return ctx.unsupported(std::string("comparing .") + dtypeName(t) + " is not emulated");

  const bool packed = t == DType::F16x2 || t == DType::BF16x2;
  if (isSet) {
    // The "true" pattern of the destination type, per 16-bit half for x2 sources.
    switch (dtype) {
    case DType::U32:
    case DType::S32:
    case DType::B32: out.aux = packed ? 0xffff : 0xffffffffu; break;
    case DType::U16:
    case DType::S16:
    case DType::B16: out.aux = 0xffff; break;
    case DType::F32: out.aux = 0x3f800000u; break;
    case DType::F16:
    case DType::F16x2: out.aux = 0x3c00; break;
    case DType::BF16:
    case DType::BF16x2: out.aux = 0x3f80; break;
    default: return ctx.unsupported(std::string("set with destination .") + dtypeName(dtype) + " is not emulated");
    }
    bool dstPacked = dtype == DType::F16x2 || dtype == DType::BF16x2;
    if (dstPacked != packed && !(packed && (dtype == DType::U32 || dtype == DType::S32)))
      return ctx.invalid("packed destinations need packed sources");
  }

  const auto &operands = ctx.in.operands;
  size_t expected = 3 + (combines ? 1 : 0);
  if (operands.size() != expected)
    return ctx.invalid(combines ? "expects a destination, a, b and the predicate c" : "expects a destination, a and b");
  if (operands[0].kind == ptx::Operand::Kind::Vector) return ctx.invalid("the destination must not be a vector");
  if (isSet && operands[0].kind == ptx::Operand::Kind::Pair) return ctx.invalid("set has a single destination");
  if (!ctx.addDst(operands[0])) return true;
  if (!ctx.addSrc(operands[1], t) || !ctx.addSrc(operands[2], t)) return true;
  if (combines && !ctx.addSrc(operands[3], DType::Pred)) return true;
  out.exec = fn;
  return true;
}

bool decodeSelp(DecodeContext &ctx) {
  if (!onlyModifiers(ctx, "b16 b32 b64 u16 u32 u64 s16 s32 s64 f16 bf16 f32 f64")) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  ctx.out.type = t;
  emit(ctx, byBitWidth<SelpExec>(t), {t, t, DType::Pred});
  return true;
}

bool decodeSlct(DecodeContext &ctx) {
  ctx.commonFlags();
  if (!onlyModifiers(ctx, "ftz b16 b32 b64 u16 u32 u64 s16 s32 s64 f32 f64")) return true;
  std::vector<DType> types = ctx.types();
  if (types.size() != 2 || !(types[1] == DType::S32 || types[1] == DType::F32))
    return ctx.invalid("needs .dtype and then .s32 or .f32");
  bool floatC = types[1] == DType::F32;
  if (ctx.has("ftz") && !floatC) return ctx.invalid(".ftz applies to the .f32 form only");
  ctx.out.type = types[0];
  ctx.out.type2 = types[1];
  emit(ctx, floatC ? byBitWidth<SlctFloatExec>(types[0]) : byBitWidth<SlctIntExec>(types[0]),
       {types[0], types[0], types[1]});
  return true;
}

// ---------------------------------------------------------------------------
// mov and cvt

bool decodeMov(DecodeContext &ctx) {
  if (ctx.has("v2") || ctx.has("v4")) return ctx.unsupported("vector moves (mov.v2/.v4) are not emulated");
  if (ctx.has("b128")) return ctx.unsupported(".b128 registers are not emulated");
  if (!onlyModifiers(ctx, "pred b8 b16 b32 b64 u8 u16 u32 u64 s8 s16 s32 s64 f32 f64")) return true;
  DType t = singleType(ctx);
  if (t == DType::None) return true;
  Inst &out = ctx.out;
  out.type = t;
  const auto &operands = ctx.in.operands;
  if (operands.size() != 2) return ctx.invalid("expects a destination and a source");
  const ptx::Operand &dst = operands[0], &src = operands[1];
  const bool unpack = dst.kind == ptx::Operand::Kind::Vector, pack = src.kind == ptx::Operand::Kind::Vector;
  if (unpack || pack) {
    if (unpack && pack) return ctx.invalid("cannot move a vector to a vector");
    if (t == DType::Pred || !(isBits(t) || isUnsigned(t) || isSigned(t) || isFloat(t)))
      return ctx.invalid("packing needs a bit-size type");
    unsigned count = DecodeContext::width(unpack ? dst : src);
    unsigned bits = dtypeBits(t);
    if (!(count == 2 || count == 4) || bits % count != 0 || bits / count < 8)
      return ctx.invalid("packs 2 or 4 elements that divide the type's width");
    out.sub = static_cast<uint8_t>(bits / count);
    out.sub2 = static_cast<uint8_t>(count);
    DType element = out.sub == 8 ? DType::B8 : out.sub == 16 ? DType::B16 : DType::B32;
    if (!ctx.addDst(dst)) return true;
    if (!ctx.addSrc(src, unpack ? t : element)) return true;
    out.exec = unpack ? &execMovUnpack : &execMovPack;
    return true;
  }
  if (t == DType::Pred) {
    emit(ctx, &execMovPred, {t});
    return true;
  }
  ExecFn fn;
  switch (t) {
  case DType::S8: fn = &MovExec<int8_t>::exec; break;
  case DType::S16: fn = &MovExec<int16_t>::exec; break;
  case DType::S32: fn = &MovExec<int32_t>::exec; break;
  default:
    fn = dtypeBits(t) == 8    ? &MovExec<uint8_t>::exec
         : dtypeBits(t) == 16 ? &MovExec<uint16_t>::exec
         : dtypeBits(t) == 32 ? &MovExec<uint32_t>::exec
                              : &MovExec<uint64_t>::exec;
  }
  emit(ctx, fn, {t});
  return true;
}

/// The integer-to-integer cvt for a (dst, src) pair, as a C++ type pair.
template <typename D> ExecFn cvtIntFrom(DType src) {
  switch (src) {
  case DType::U8:
  case DType::B8: return &execCvtInt<D, uint8_t>;
  case DType::S8: return &execCvtInt<D, int8_t>;
  case DType::U16:
  case DType::B16: return &execCvtInt<D, uint16_t>;
  case DType::S16: return &execCvtInt<D, int16_t>;
  case DType::U32:
  case DType::B32: return &execCvtInt<D, uint32_t>;
  case DType::S32: return &execCvtInt<D, int32_t>;
  case DType::U64:
  case DType::B64: return &execCvtInt<D, uint64_t>;
  case DType::S64: return &execCvtInt<D, int64_t>;
  default: return nullptr;
  }
}

ExecFn cvtInt(DType dst, DType src) {
  switch (dst) {
  case DType::U8:
  case DType::B8: return cvtIntFrom<uint8_t>(src);
  case DType::S8: return cvtIntFrom<int8_t>(src);
  case DType::U16:
  case DType::B16: return cvtIntFrom<uint16_t>(src);
  case DType::S16: return cvtIntFrom<int16_t>(src);
  case DType::U32:
  case DType::B32: return cvtIntFrom<uint32_t>(src);
  case DType::S32: return cvtIntFrom<int32_t>(src);
  case DType::U64:
  case DType::B64: return cvtIntFrom<uint64_t>(src);
  case DType::S64: return cvtIntFrom<int64_t>(src);
  default: return nullptr;
  }
}

bool isScalarNumber(DType t) { return (isInteger(t) && t != DType::B128) || isFloat(t); }

bool decodeCvtPack(DecodeContext &ctx) {
  // cvt.pack.sat.convertType.s32{.b32}: parsed by hand, since u4/s4/u2/s2 are no DType.
  static constexpr std::pair<std::string_view, unsigned> kTypes[] = {
      {"u16", 16}, {"s16", 16}, {"u8", 8}, {"s8", 8}, {"u4", 4}, {"s4", 4}, {"u2", 2}, {"s2", 2}};
  const auto &m = ctx.in.modifiers;
  unsigned size = 0;
  bool isSigned = false;
  size_t i = 0;
  if (i < m.size() && m[i] == "pack") ++i;
  bool sat = i < m.size() && m[i] == "sat";
  if (sat) ++i;
  if (i < m.size())
    for (const auto &[name, bits] : kTypes)
      if (m[i] == name) size = bits, isSigned = name[0] == 's';
  if (!sat || !size) return ctx.invalid("expects cvt.pack.sat.{u16,s16,u8,s8,u4,s4,u2,s2}.s32[.b32]");
  ++i;
  if (i >= m.size() || m[i] != "s32") return ctx.invalid("the source type must be .s32");
  ++i;
  bool withC = i < m.size() && m[i] == "b32";
  if (withC) ++i;
  if (i != m.size()) return ctx.unsupported("the modifier ." + m[i] + " is not emulated");
  if ((size == 16) == withC) return ctx.invalid(size == 16 ? ".u16/.s16 take no third source" : "needs the .b32 source c");
  ctx.out.sub = static_cast<uint8_t>(size);
  if (isSigned) ctx.out.flags |= kSigned;
  ctx.out.type = DType::B32;
  if (withC) emit(ctx, &execCvtPackSat, {DType::S32, DType::S32, DType::B32});
  else emit(ctx, &execCvtPackSat, {DType::S32, DType::S32});
  return true;
}

bool decodeCvt(DecodeContext &ctx) {
  if (ctx.has("pack")) return decodeCvtPack(ctx);
  Inst &out = ctx.out;
  for (const std::string &m : ctx.in.modifiers) {
    if (parseRounding(m) != Rounding::None || m == "ftz" || m == "sat" || m == "satfinite" || m == "relu") continue;
    if (DType t = parseDType(m); t != DType::None && t != DType::B128 && t != DType::Pred) continue;
    return ctx.unsupported("." + m + " conversions are not emulated");
  }
  std::vector<DType> types = ctx.types();
  if (types.size() != 2) return ctx.invalid("needs a destination and a source type");
  const DType dst = types[0], src = types[1];
  const bool relu = ctx.has("relu"), satfinite = ctx.has("satfinite");
  out.type = dst;
  out.type2 = src;
  out.rounding = ctx.rounding();
  if (ctx.has("ftz")) out.flags |= kFtz;
  if (ctx.has("sat")) out.flags |= kSat;
  if (relu) out.flags |= kRelu;
  out.sub = static_cast<uint8_t>((relu ? 1 : 0) | (satfinite ? 2 : 0));
  const Rounding r = out.rounding;
  const bool halfRounding = r == Rounding::Rn || r == Rounding::Rz;

  // Two f32 sources packed into halves / fp8 bytes.
  if ((dst == DType::F16x2 || dst == DType::BF16x2) && src == DType::F32) {
    if (!onlyModifiers(ctx, "rn rz relu satfinite f16x2 bf16x2 f32")) return true;
    if (!halfRounding) return ctx.invalid("needs .rn or .rz");
    emit(ctx, dst == DType::BF16x2 ? &execCvtPackHalf<true> : &execCvtPackHalf<false>, {src, src});
    return true;
  }
  if ((dst == DType::E4M3x2 || dst == DType::E5M2x2) && (src == DType::F32 || src == DType::F16x2)) {
    if (!onlyModifiers(ctx, "rn satfinite relu e4m3x2 e5m2x2 f32 f16x2")) return true;
    if (r != Rounding::Rn || !satfinite) return ctx.invalid("fp8 conversions need .rn.satfinite");
    bool e5 = dst == DType::E5M2x2;
    if (src == DType::F32) emit(ctx, e5 ? &execCvtPackFp8<true> : &execCvtPackFp8<false>, {src, src});
    else emit(ctx, e5 ? &execCvtFp8FromF16x2<true> : &execCvtFp8FromF16x2<false>, {src});
    return true;
  }
  if (dst == DType::F16x2 && (src == DType::E4M3x2 || src == DType::E5M2x2)) {
    if (!onlyModifiers(ctx, "rn relu f16x2 e4m3x2 e5m2x2")) return true;
    if (r != Rounding::Rn) return ctx.invalid("needs .rn");
    emit(ctx, src == DType::E5M2x2 ? &execCvtF16x2FromFp8<true> : &execCvtF16x2FromFp8<false>, {DType::B16});
    return true;
  }
  if (dst == DType::TF32) {
    if (src != DType::F32) return ctx.invalid(".tf32 converts from .f32 only");
    if (!onlyModifiers(ctx, "rna rn rz relu satfinite tf32 f32")) return true;
    if (!(r == Rounding::Rna || halfRounding)) return ctx.invalid("needs .rna, .rn or .rz");
    if (r == Rounding::Rna && relu) return ctx.invalid(".rna takes no .relu");
    emit(ctx, &execCvtF32Special<DType::TF32>, {src});
    return true;
  }
  if ((relu || satfinite) && (dst == DType::F16 || dst == DType::BF16) && src == DType::F32) {
    if (!onlyModifiers(ctx, "rn rz relu satfinite f16 bf16 f32")) return true;
    if (!halfRounding) return ctx.invalid("needs .rn or .rz");
    emit(ctx, dst == DType::BF16 ? &execCvtF32Special<DType::BF16> : &execCvtF32Special<DType::F16>, {src});
    return true;
  }
  if (relu || satfinite) return ctx.unsupported(".relu/.satfinite are emulated for f32 → f16/bf16/tf32/fp8 only");
  if (!isScalarNumber(dst) || !isScalarNumber(src))
    return ctx.unsupported(std::string("cvt from .") + dtypeName(src) + " to ." + dtypeName(dst) + " is not emulated");
  if (isInteger(dst) && isInteger(src) && !(out.flags & kSat) && r == Rounding::None) {
    emit(ctx, cvtInt(dst, src), {src});
    return true;
  }
  emit(ctx, &execCvt, {src});
  return true;
}

// ---------------------------------------------------------------------------
// Dispatch

bool unsupportedVideo(DecodeContext &ctx) {
  return ctx.unsupported("the scalar video instructions are not emulated (the SIMD vop2/vop4/vset2/vset4 are)");
}

/// vop4/vop2.dtype.atype.btype{.sat|.add} d, a, b, c and
/// vset4/vset2.atype.btype.cmp{.add} d, a, b, c.
bool decodeVideoSimd(DecodeContext &ctx) {
  const std::string &op = ctx.in.opcode;
  const bool isSet = op.rfind("vset", 0) == 0;
  const unsigned bits = op.back() == '4' ? 8 : 16;
  if (!onlyModifiers(ctx, isSet ? "u32 s32 eq ne lt le gt ge add" : "u32 s32 sat add")) return true;
  std::vector<DType> types = ctx.types();
  if (types.size() != (isSet ? 2u : 3u)) return ctx.invalid(isSet ? "needs .atype.btype" : "needs .dtype.atype.btype");
  if (ctx.has("sat") && ctx.has("add")) return ctx.invalid(".sat does not combine with .add");
  Inst &out = ctx.out;
  const size_t first = isSet ? 0 : 1;
  out.sub = static_cast<uint8_t>((types[first] == DType::S32 ? 1 : 0) | (types[first + 1] == DType::S32 ? 2 : 0));
  out.sub2 = ctx.has("add") ? 1 : 0;
  if (!isSet && types[0] == DType::S32) out.flags |= kSigned;
  if (ctx.has("sat")) out.flags |= kSat;
  out.type = DType::U32;
  ExecFn fn = nullptr;
  if (isSet) {
    static constexpr std::pair<std::string_view, uint8_t> kCompare[] = {
        {"eq", 0b010}, {"ne", 0b101}, {"lt", 0b001}, {"le", 0b011}, {"gt", 0b100}, {"ge", 0b110}};
    for (const auto &[name, mask] : kCompare)
      if (ctx.has(name)) out.aux = mask;
    if (!out.aux) return ctx.invalid("needs a comparison (.eq, .ne, .lt, .le, .gt, .ge)");
    fn = bits == 8 ? &execVideoSet<8> : &execVideoSet<16>;
  } else {
    std::string_view name = std::string_view(op).substr(0, op.size() - 1);
    auto pick = [bits](auto op8, auto op16) -> ExecFn { return bits == 8 ? op8 : op16; };
    if (name == "vadd") fn = pick(&execVideoSimd<VideoAdd, 8>, &execVideoSimd<VideoAdd, 16>);
    else if (name == "vsub") fn = pick(&execVideoSimd<VideoSub, 8>, &execVideoSimd<VideoSub, 16>);
    else if (name == "vavrg") fn = pick(&execVideoSimd<VideoAvrg, 8>, &execVideoSimd<VideoAvrg, 16>);
    else if (name == "vabsdiff") fn = pick(&execVideoSimd<VideoAbsdiff, 8>, &execVideoSimd<VideoAbsdiff, 16>);
    else if (name == "vmin") fn = pick(&execVideoSimd<VideoMin, 8>, &execVideoSimd<VideoMin, 16>);
    else fn = pick(&execVideoSimd<VideoMax, 8>, &execVideoSimd<VideoMax, 16>);
  }
  emit(ctx, fn, {DType::B32, DType::B32, DType::B32});
  return true;
}

using FamilyFn = bool (*)(DecodeContext &ctx);

const std::unordered_map<std::string_view, FamilyFn> &aluTable() {
  static const std::unordered_map<std::string_view, FamilyFn> table = {
      {"mov", decodeMov},
      {"add", [](DecodeContext &c) { return decodeAddSub(c, false); }},
      {"sub", [](DecodeContext &c) { return decodeAddSub(c, true); }},
      {"addc", [](DecodeContext &c) { return decodeAddcSubc(c, false); }},
      {"subc", [](DecodeContext &c) { return decodeAddcSubc(c, true); }},
      {"mul", decodeMul},
      {"mad", decodeMad},
      {"madc", decodeMadc},
      {"fma", [](DecodeContext &c) { return decodeFmaForm(c, false); }},
      {"mul24", [](DecodeContext &c) { return decodeMul24(c, false); }},
      {"mad24", [](DecodeContext &c) { return decodeMul24(c, true); }},
      {"div", decodeDiv},
      {"rem", decodeIntOnly<OpRem>},
      {"sad", decodeSad},
      {"abs", [](DecodeContext &c) { return decodeAbsNeg(c, false); }},
      {"neg", [](DecodeContext &c) { return decodeAbsNeg(c, true); }},
      {"min", decodeMinMax<false>},
      {"max", decodeMinMax<true>},
      {"rcp", [](DecodeContext &c) { return decodeUnaryFloat(c, Unary::Rcp); }},
      {"sqrt", [](DecodeContext &c) { return decodeUnaryFloat(c, Unary::Sqrt); }},
      {"rsqrt", [](DecodeContext &c) { return decodeUnaryFloat(c, Unary::Rsqrt); }},
      {"sin", [](DecodeContext &c) { return decodeUnaryFloat(c, Unary::Sin); }},
      {"cos", [](DecodeContext &c) { return decodeUnaryFloat(c, Unary::Cos); }},
      {"lg2", [](DecodeContext &c) { return decodeUnaryFloat(c, Unary::Lg2); }},
      {"ex2", [](DecodeContext &c) { return decodeUnaryFloat(c, Unary::Ex2); }},
      {"tanh", [](DecodeContext &c) { return decodeUnaryFloat(c, Unary::Tanh); }},
      {"copysign", decodeCopysign},
      {"testp", decodeTestp},
      {"popc", [](DecodeContext &c) { return decodeBitUnary(c, "popc"); }},
      {"clz", [](DecodeContext &c) { return decodeBitUnary(c, "clz"); }},
      {"brev", [](DecodeContext &c) { return decodeBitUnary(c, "brev"); }},
      {"bfe", decodeBfe},
      {"bfi", decodeBfi},
      {"bfind", decodeBfind},
      {"fns", decodeFns},
      {"prmt", decodePrmt},
      {"lop3", decodeLop3},
      {"shf", decodeShf},
      {"shl", [](DecodeContext &c) { return decodeShift(c, true); }},
      {"shr", [](DecodeContext &c) { return decodeShift(c, false); }},
      {"and", [](DecodeContext &c) { return decodeLogic(c, "and"); }},
      {"or", [](DecodeContext &c) { return decodeLogic(c, "or"); }},
      {"xor", [](DecodeContext &c) { return decodeLogic(c, "xor"); }},
      {"not", [](DecodeContext &c) { return decodeLogic(c, "not"); }},
      {"cnot", [](DecodeContext &c) { return decodeLogic(c, "cnot"); }},
      {"szext", decodeSzext},
      {"bmsk", decodeBmsk},
      {"dp4a", [](DecodeContext &c) { return decodeDp(c, true); }},
      {"dp2a", [](DecodeContext &c) { return decodeDp(c, false); }},
      {"setp", [](DecodeContext &c) { return decodeCompare(c, false); }},
      {"set", [](DecodeContext &c) { return decodeCompare(c, true); }},
      {"selp", decodeSelp},
      {"slct", decodeSlct},
      {"cvt", decodeCvt},
      {"vadd", unsupportedVideo},   {"vsub", unsupportedVideo},   {"vabsdiff", unsupportedVideo},
      {"vmin", unsupportedVideo},   {"vmax", unsupportedVideo},   {"vshl", unsupportedVideo},
      {"vshr", unsupportedVideo},   {"vmad", unsupportedVideo},   {"vset", unsupportedVideo},
      {"vadd2", decodeVideoSimd},   {"vsub2", decodeVideoSimd},   {"vavrg2", decodeVideoSimd},
      {"vabsdiff2", decodeVideoSimd}, {"vmin2", decodeVideoSimd}, {"vmax2", decodeVideoSimd},
      {"vset2", decodeVideoSimd},   {"vadd4", decodeVideoSimd},   {"vsub4", decodeVideoSimd},
      {"vavrg4", decodeVideoSimd},  {"vabsdiff4", decodeVideoSimd}, {"vmin4", decodeVideoSimd},
      {"vmax4", decodeVideoSimd},   {"vset4", decodeVideoSimd},
  };
  return table;
}

} // namespace

bool decodeAlu(DecodeContext &ctx) {
  const auto &table = aluTable();
  auto it = table.find(ctx.in.opcode);
  if (it == table.end()) return false;
  it->second(ctx);
  return true;
}

} // namespace ptxforge::emu
