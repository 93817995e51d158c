// See Occupancy.h.
#include "toolchain/Occupancy.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace ptxforge::toolchain {

std::optional<SmLimits> smLimitsFor(const std::string &arch) {
  // "sm_90a" / "sm_100f" -> 90 / 100.
  if (arch.rfind("sm_", 0) != 0) return std::nullopt;
  int number = 0;
  size_t at = 3;
  while (at < arch.size() && arch[at] >= '0' && arch[at] <= '9') number = number * 10 + (arch[at++] - '0');
  SmLimits limits;
  switch (number) {
  case 80: // A100
    limits.sharedBytesPerSm = 167936;
    limits.maxSharedBytesPerBlock = 166912;
    limits.smCount = 108;
    return limits;
  case 86: // GA10x
  case 87:
    limits.maxWarpsPerSm = 48;
    limits.maxBlocksPerSm = 16;
    limits.sharedBytesPerSm = 102400;
    limits.maxSharedBytesPerBlock = 101376;
    limits.smCount = 84;
    return limits;
  case 89: // AD10x
    limits.maxWarpsPerSm = 48;
    limits.maxBlocksPerSm = 24;
    limits.sharedBytesPerSm = 102400;
    limits.maxSharedBytesPerBlock = 101376;
    limits.smCount = 128;
    return limits;
  case 90: // H100 / H200
    return limits;
  case 100: // B200
  case 103:
    limits.smCount = 148;
    return limits;
  case 120: // RTX 50xx
  case 121:
    limits.maxWarpsPerSm = 48;
    limits.sharedBytesPerSm = 102400;
    limits.maxSharedBytesPerBlock = 101376;
    limits.smCount = 170;
    return limits;
  default: return std::nullopt;
  }
}

namespace {

int roundUp(int value, int unit) { return unit <= 0 ? value : (value + unit - 1) / unit * unit; }

} // namespace

Occupancy computeOccupancy(const SmLimits &limits, int registers, int threadsPerBlock, int staticShared,
                           int dynamicShared, long long gridBlocks) {
  Occupancy out;
  out.smCount = limits.smCount;
  const int warpsPerBlock = (std::max(threadsPerBlock, 1) + 31) / 32;
  out.sharedBytesPerBlock =
      roundUp(std::max(0, staticShared) + std::max(0, dynamicShared) + limits.reservedSharedBytesPerBlock,
              limits.sharedAllocationUnit);
  if (threadsPerBlock > limits.maxThreadsPerBlock) {
    out.launchable = false;
    out.limiter = fmt::format("{} threads per block (at most {})", threadsPerBlock, limits.maxThreadsPerBlock);
    return out;
  }
  if (registers > limits.maxRegistersPerThread) {
    out.launchable = false;
    out.limiter = fmt::format("{} registers per thread (at most {})", registers, limits.maxRegistersPerThread);
    return out;
  }
  if (staticShared + dynamicShared > limits.maxSharedBytesPerBlock) {
    out.launchable = false;
    out.limiter = fmt::format("{} B of shared memory per block (at most {} B)", staticShared + dynamicShared,
                              limits.maxSharedBytesPerBlock);
    return out;
  }
  // Registers: allocated per warp in units, and a warp lives in one sub-partition's share of the file.
  const int registersPerWarp = roundUp(std::max(registers, 1) * 32, limits.registerAllocationUnit);
  const int warpsPerPartition = (limits.registersPerSm / limits.subPartitions) / registersPerWarp;
  const int warpsByRegisters = warpsPerPartition * limits.subPartitions;
  out.blocksByRegisters = warpsByRegisters / warpsPerBlock;
  out.blocksBySharedMemory = limits.sharedBytesPerSm / out.sharedBytesPerBlock;
  out.blocksByWarps = limits.maxWarpsPerSm / warpsPerBlock;
  out.blocksBySlots = limits.maxBlocksPerSm;
  out.blocksPerSm = std::min({out.blocksByRegisters, out.blocksBySharedMemory, out.blocksByWarps, out.blocksBySlots});
  // The limiter: the first of these that is the minimum (registers before shared memory before warps).
  if (out.blocksPerSm == out.blocksByRegisters && out.blocksByRegisters < out.blocksByWarps) out.limiter = "registers";
  else if (out.blocksPerSm == out.blocksBySharedMemory && out.blocksBySharedMemory < out.blocksByWarps)
    out.limiter = "shared memory";
  else if (out.blocksPerSm == out.blocksByWarps && out.blocksByWarps <= out.blocksBySlots) out.limiter = "warps";
  else out.limiter = "blocks";
  if (out.blocksPerSm == 0) {
    out.launchable = false;
    out.limiter = out.blocksByRegisters == 0 ? fmt::format("{} registers x {} warps do not fit one SM's register file",
                                                           registers, warpsPerBlock)
                                             : "one block does not fit";
    return out;
  }
  out.warpsPerSm = out.blocksPerSm * warpsPerBlock;
  out.occupancy = static_cast<double>(out.warpsPerSm) / limits.maxWarpsPerSm;
  if (gridBlocks > 0)
    out.waves = static_cast<double>(gridBlocks) / (static_cast<double>(out.blocksPerSm) * std::max(1, limits.smCount));
  return out;
}

std::string describe(const Occupancy &occupancy) {
  if (!occupancy.launchable) return "no block fits: " + occupancy.limiter;
  std::string text = fmt::format("{} block{}/SM (limited by {}), {} warps/SM ({:.0f}%)", occupancy.blocksPerSm,
                                 occupancy.blocksPerSm == 1 ? "" : "s", occupancy.limiter, occupancy.warpsPerSm,
                                 occupancy.occupancy * 100);
  if (occupancy.waves > 0) text += fmt::format(", {:.2f} waves over {} SMs", occupancy.waves, occupancy.smCount);
  return text;
}

} // namespace ptxforge::toolchain
