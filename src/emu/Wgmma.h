// The data layouts of wgmma.mma_async (sm_90a) as pure functions: the matrix
// descriptor, the address of an operand element in shared memory under each
// swizzle mode and major-ness (the PTX ISA's canonical layouts, "Shared Memory
// Matrix Layout"), and which register of which thread of the warpgroup holds
// an element of A or of the accumulator D (the ISA's register fragments, as
// CUTLASS's GMMA ALayout/CLayout state them).
#pragma once

#include <cstdint>

namespace ptxforge::emu {

/// A 64-bit wgmma matrix descriptor, decoded.
struct WgmmaDescriptor {
  uint32_t start = 0;        ///< byte address in shared memory (bits 13-0, << 4)
  uint32_t leadingBytes = 0; ///< leading dimension byte offset (bits 29-16, << 4)
  uint32_t strideBytes = 0;  ///< stride dimension byte offset (bits 45-32, << 4)
  uint32_t baseOffset = 0;   ///< bits 51-49
  uint32_t swizzleBytes = 0; ///< 0 (none), 32, 64 or 128 (bits 63-62: 0, 3, 2, 1)
};

WgmmaDescriptor decodeWgmmaDescriptor(uint64_t descriptor);

/// The shared-memory byte address of element (mn, k) of an operand (row mn of
/// A's M or B's N, column k) that `d` describes, K-major (`mnMajor` false) or
/// MN-major, for elements of `elementBytes` (1, 2 or 4). The swizzle XORs the
/// 16-byte chunk bits [4, 4+b) of the address with bits [7, 7+b), b = 1, 2, 3
/// for 32, 64 and 128-byte swizzling.
uint32_t wgmmaElementAddress(const WgmmaDescriptor &d, bool mnMajor, uint32_t mn, uint32_t k, unsigned elementBytes);

struct WgmmaCoord {
  unsigned row = 0, col = 0;
};

/// Element v of the accumulator registers of `lane` in warp `warp` (0-3) of
/// the warpgroup: rows 16*warp + lane/4 (+8), columns 2*(lane%4) (+1) + 8*(v/4).
WgmmaCoord wgmmaAccumulatorCoord(unsigned warp, unsigned lane, unsigned v);

/// Element i of A's registers (elementBits 16: 8 per thread in 4 registers;
/// 32 (tf32): 4; 8 (fp8, s8/u8): 16) of `lane` in warp `warp`.
WgmmaCoord wgmmaACoord(unsigned elementBits, unsigned warp, unsigned lane, unsigned i);

} // namespace ptxforge::emu
