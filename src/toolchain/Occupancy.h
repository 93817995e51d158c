// Occupancy: how many blocks of a kernel fit on one SM for a given launch,
// and what stops more from fitting — the CUDA occupancy calculator's rules
// (registers allocated per warp in units of 256 within each of the SM's four
// sub-partitions, shared memory in 128-byte units plus the 1 KiB the driver
// reserves per block, the warp and block slots of the SM), from a table of
// per-architecture limits. Pure arithmetic: no GPU needed, so `compile` and
// the emulator can say it too.
#pragma once

#include <optional>
#include <string>

namespace ptxforge::toolchain {

/// What one SM of an architecture offers (the CUDA programming guide's
/// "technical specifications per compute capability").
struct SmLimits {
  int registersPerSm = 65536;
  int maxRegistersPerThread = 255;
  int registerAllocationUnit = 256;  ///< registers, per warp
  int subPartitions = 4;             ///< register file banks warps are placed in
  int maxWarpsPerSm = 64;
  int maxBlocksPerSm = 32;
  int maxThreadsPerBlock = 1024;
  int sharedBytesPerSm = 233472;     ///< the largest carveout
  int maxSharedBytesPerBlock = 232448; ///< opt-in maximum
  int sharedAllocationUnit = 128;
  int reservedSharedBytesPerBlock = 1024;
  int smCount = 132;                 ///< a typical part (H100/H200 SXM); the device's count wins when known
};

/// The limits of `arch` ("sm_90", "sm_90a", "sm_80", ...); nullopt for an
/// architecture the table lacks.
std::optional<SmLimits> smLimitsFor(const std::string &arch);

/// Occupancy of one launch.
struct Occupancy {
  bool launchable = true;      ///< false: one block does not fit at all (then `limiter` says why)
  int blocksPerSm = 0;
  int warpsPerSm = 0;
  double occupancy = 0;        ///< warpsPerSm / maxWarpsPerSm
  /// What stops one more block: "registers", "shared memory", "warps",
  /// "blocks" (the SM's block slots); or why none fits.
  std::string limiter;
  int blocksByRegisters = 0, blocksBySharedMemory = 0, blocksByWarps = 0, blocksBySlots = 0;
  int sharedBytesPerBlock = 0; ///< static + dynamic + reserved, rounded to the allocation unit
  int smCount = 0;
  /// Waves of the grid over all SMs: grid blocks / (blocksPerSm * SMs); 0 when the grid is unknown.
  double waves = 0;
};

/// Occupancy of `threadsPerBlock` threads using `registers` each, with
/// `staticShared` + `dynamicShared` bytes of shared memory per block, and
/// (when `gridBlocks` > 0) the waves it takes over `limits.smCount` SMs.
Occupancy computeOccupancy(const SmLimits &limits, int registers, int threadsPerBlock, int staticShared,
                           int dynamicShared, long long gridBlocks = 0);

/// "8 blocks/SM (limited by registers), 64 of 64 warps (100%), 1.9 waves over 132 SMs".
std::string describe(const Occupancy &occupancy);

} // namespace ptxforge::toolchain
