// Warp-wide matrix instructions as pure functions over the 32 lanes' registers:
// mma.sync (the f16/bf16/tf32/f64/int8 shapes nvcc emits for tensor-core GEMMs,
// and m16n8k32 with fp8 .e4m3/.e5m2 inputs)
// and ldmatrix, with the fragment layouts the PTX ISA defines ("Matrix
// fragments for mma.m16n8k16" and friends). The interpreter gathers the
// registers (and, for ldmatrix, the rows each lane addresses) and scatters the
// results; these functions only do the data movement and arithmetic.
#pragma once

#include "emu/Types.h"

#include <array>
#include <cstdint>
#include <string>

namespace ptxforge::emu {

/// One lane's fragment registers as 32-bit words, in the order the PTX operand
/// vector lists them ({%r1, %r2, ...}). f64 fragments use two words per
/// register (low word first); at most 8 registers per operand.
using Fragment = std::array<uint32_t, 16>;
using WarpFragments = std::array<Fragment, 32>;

struct MmaDesc {
  unsigned m = 0, n = 0, k = 0;
  bool aRowMajor = true;  ///< .row for A (the only layout most shapes allow)
  bool bRowMajor = false; ///< .col for B
  /// An fp8 input (.e4m3, .e5m2) is named by its packed-pair type, E4M3x2 or E5M2x2.
  DType dType = DType::F32, aType = DType::F16, bType = DType::F16, cType = DType::F32;
  bool satfinite = false; ///< integer shapes: clamp to the s32 range
};

/// Number of 32-bit registers one lane holds for each operand of `desc`
/// (e.g. m16n8k16 f32.f16.f16.f32: a=4, b=2, c=4, d=4), or 0 when the shape
/// and type combination is not supported.
struct MmaRegisterCounts { unsigned a = 0, b = 0, c = 0, d = 0; };
MmaRegisterCounts mmaRegisterCounts(const MmaDesc &desc);

/// "" when supported, else why not ("mma.m16n8k32 with .bf16 inputs is not emulated").
std::string mmaUnsupportedReason(const MmaDesc &desc);

/// D = A·B + C for the whole warp. Products of f16/bf16/tf32 inputs are exact
/// in f32; the k-sum is accumulated in f32 with round-to-nearest in ascending k
/// order (tensor cores do not specify the order; tasks compare with a
/// tolerance). Integer shapes accumulate exactly in s32 (wrapping, or clamped
/// with satfinite).
void mmaSync(const MmaDesc &desc, const WarpFragments &a, const WarpFragments &b, const WarpFragments &c,
             WarpFragments &d);

/// ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.b16: `rows[lane]` holds the 16
/// bytes (eight b16 elements) at the row address lane `lane` supplied (only
/// lanes 0..8*num-1 supply addresses; the rest are ignored). Fills d[lane][0..num-1].
void ldmatrix(unsigned num, bool transpose, const std::array<std::array<uint8_t, 16>, 32> &rows, WarpFragments &d);

/// stmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.b16, the inverse: from each
/// lane's registers s[lane][0..num-1], the 16 bytes to store at each row
/// address (rows[lane] for lanes 0..8*num-1).
void stmatrix(unsigned num, bool transpose, const WarpFragments &s, std::array<std::array<uint8_t, 16>, 32> &rows);

} // namespace ptxforge::emu
