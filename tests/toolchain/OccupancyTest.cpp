// The occupancy calculator against values worked out by hand from the CUDA
// occupancy rules (registers per warp in units of 256 within four
// sub-partitions, shared memory in 128-byte units plus 1 KiB per block).
#include "toolchain/Occupancy.h"

#include <gtest/gtest.h>

using namespace ptxforge::toolchain;

namespace {

SmLimits sm90() { return *smLimitsFor("sm_90"); }

TEST(Occupancy, TheWarpSlotsLimitASmallKernel) {
  Occupancy o = computeOccupancy(sm90(), 32, 256, 0, 0, 1056);
  EXPECT_TRUE(o.launchable);
  EXPECT_EQ(o.blocksPerSm, 8);
  EXPECT_EQ(o.warpsPerSm, 64);
  EXPECT_DOUBLE_EQ(o.occupancy, 1.0);
  EXPECT_EQ(o.limiter, "warps");
  EXPECT_DOUBLE_EQ(o.waves, 1.0); // 1056 blocks over 8 x 132
  EXPECT_EQ(describe(o), "8 blocks/SM (limited by warps), 64 warps/SM (100%), 1.00 waves over 132 SMs");
}

TEST(Occupancy, RegistersAreAllocatedPerWarpWithinEachSubPartition) {
  // 64 registers: 2048 per warp, 8 warps per 16K partition, 32 warps: 4 blocks of 8 warps.
  Occupancy o = computeOccupancy(sm90(), 64, 256, 0, 0);
  EXPECT_EQ(o.blocksPerSm, 4);
  EXPECT_EQ(o.limiter, "registers");
  EXPECT_DOUBLE_EQ(o.occupancy, 0.5);
  // 40 registers: 1280 per warp, floor(16384 / 1280) = 12 per partition, 48 warps: 12 blocks of 4 warps.
  Occupancy forty = computeOccupancy(sm90(), 40, 128, 0, 0);
  EXPECT_EQ(forty.blocksByRegisters, 12);
  EXPECT_EQ(forty.blocksPerSm, 12);
  EXPECT_EQ(forty.warpsPerSm, 48);
  EXPECT_EQ(forty.limiter, "registers");
  // 33 registers round up to 40 per thread (1056 -> 1280 per warp): the same as 40.
  EXPECT_EQ(computeOccupancy(sm90(), 33, 128, 0, 0).blocksPerSm, 12);
}

TEST(Occupancy, SharedMemoryCountsTheDynamicPartAndTheReservedKilobyte) {
  // 48 KiB static + 16 KiB dynamic + 1 KiB reserved = 66560 B: 233472 / 66560 = 3 blocks.
  Occupancy o = computeOccupancy(sm90(), 32, 256, 48 * 1024, 16 * 1024);
  EXPECT_EQ(o.sharedBytesPerBlock, 66560);
  EXPECT_EQ(o.blocksPerSm, 3);
  EXPECT_EQ(o.limiter, "shared memory");
  // 100 B of shared memory still takes 1152 B (1124 rounded to 128).
  EXPECT_EQ(computeOccupancy(sm90(), 32, 32, 100, 0).sharedBytesPerBlock, 1152);
}

TEST(Occupancy, TinyBlocksRunOutOfBlockSlots) {
  Occupancy o = computeOccupancy(sm90(), 16, 32, 0, 0);
  EXPECT_EQ(o.blocksPerSm, 32);
  EXPECT_EQ(o.warpsPerSm, 32);
  EXPECT_EQ(o.limiter, "blocks");
}

TEST(Occupancy, ABlockThatCannotFitSaysWhy) {
  EXPECT_FALSE(computeOccupancy(sm90(), 128, 1024, 0, 0).launchable); // 128 x 1024 > 65536 registers
  EXPECT_NE(computeOccupancy(sm90(), 128, 1024, 0, 0).limiter.find("register file"), std::string::npos);
  EXPECT_FALSE(computeOccupancy(sm90(), 32, 1025, 0, 0).launchable);
  EXPECT_FALSE(computeOccupancy(sm90(), 256, 32, 0, 0).launchable);
  Occupancy big = computeOccupancy(sm90(), 32, 128, 0, 240 * 1024);
  EXPECT_FALSE(big.launchable);
  EXPECT_EQ(describe(big).rfind("no block fits: ", 0), 0u);
}

TEST(Occupancy, TheTableKnowsTheArchitecturesAndTheirSuffixes) {
  EXPECT_TRUE(smLimitsFor("sm_90a"));
  EXPECT_EQ(smLimitsFor("sm_86")->maxWarpsPerSm, 48);
  EXPECT_EQ(smLimitsFor("sm_80")->sharedBytesPerSm, 167936);
  EXPECT_EQ(smLimitsFor("sm_100f")->smCount, 148);
  EXPECT_FALSE(smLimitsFor("sm_75"));
  EXPECT_FALSE(smLimitsFor("compute_90"));
}

} // namespace
