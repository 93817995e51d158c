// The emulator's profile: the bank-conflict and sector arithmetic on known
// access patterns (32/64/128-bit, broadcasts, atomics, ldmatrix rows), and
// profiled launches counting per PTX line through the Executor interface.
#include "emu/Profile.h"

#include "EmuHarness.h"

#include <array>
#include <fstream>
#include <sstream>

namespace ptxforge::emu {
namespace {

using Addresses = std::array<uint64_t, kWarpSize>;

/// Lane l at base + l * stride.
Addresses strided(uint64_t base, uint64_t stride) {
  Addresses a{};
  for (unsigned l = 0; l < kWarpSize; ++l) a[l] = base + l * stride;
  return a;
}

constexpr LaneMask kAll = ~LaneMask(0);

TEST(ProfileBanks, ThirtyTwoBitAccesses) {
  // Consecutive words: every bank once, one wavefront.
  Wavefronts w = sharedWavefronts(strided(0, 4).data(), kAll, 4);
  EXPECT_EQ(w.wavefronts, 1u);
  EXPECT_EQ(w.ideal, 1u);
  // Every other word: banks 0, 2, ..., each twice: 2-way.
  EXPECT_EQ(sharedWavefronts(strided(0, 8).data(), kAll, 4).wavefronts, 2u);
  // A column of a 32x32 float tile: one bank, 32 words.
  EXPECT_EQ(sharedWavefronts(strided(0, 128).data(), kAll, 4).wavefronts, 32u);
  // The padded tile (33 floats a row): conflict-free.
  EXPECT_EQ(sharedWavefronts(strided(0, 132).data(), kAll, 4).wavefronts, 1u);
  // Everyone reads one word: a broadcast.
  EXPECT_EQ(sharedWavefronts(strided(64, 0).data(), kAll, 4).wavefronts, 1u);
  // Bytes and halves within a word count as that word.
  EXPECT_EQ(sharedWavefronts(strided(0, 1).data(), kAll, 1).wavefronts, 1u);
  EXPECT_EQ(sharedWavefronts(strided(0, 2).data(), kAll, 2).wavefronts, 1u);
  // Inactive lanes do not count; no lane, no request.
  EXPECT_EQ(sharedWavefronts(strided(0, 128).data(), 0x0000000fu, 4).wavefronts, 4u);
  EXPECT_EQ(sharedWavefronts(strided(0, 4).data(), 0, 4).wavefronts, 0u);
}

TEST(ProfileBanks, WideAccesses) {
  // 64-bit consecutive: 256 bytes over 32 banks, two words each, no conflict.
  Wavefronts w = sharedWavefronts(strided(0, 8).data(), kAll, 8);
  EXPECT_EQ(w.wavefronts, 2u);
  EXPECT_EQ(w.ideal, 2u);
  // 64-bit at a 16-byte stride: 16 banks of 4 words, 2-way.
  w = sharedWavefronts(strided(0, 16).data(), kAll, 8);
  EXPECT_EQ(w.wavefronts, 4u);
  EXPECT_EQ(w.ideal, 2u);
  // 128-bit consecutive: four words a bank, no conflict.
  w = sharedWavefronts(strided(0, 16).data(), kAll, 16);
  EXPECT_EQ(w.wavefronts, 4u);
  EXPECT_EQ(w.ideal, 4u);
  // 128-bit rows 128 bytes apart: every lane in the same 4 banks.
  w = sharedWavefronts(strided(0, 128).data(), kAll, 16);
  EXPECT_EQ(w.wavefronts, 32u);
  EXPECT_EQ(w.ideal, 4u);
  // Only eight lanes active: 128 bytes, one wavefront.
  w = sharedWavefronts(strided(0, 16).data(), 0xffu, 16);
  EXPECT_EQ(w.wavefronts, 1u);
  EXPECT_EQ(w.ideal, 1u);
  // Broadcasts: each half-warp of a 128-bit load is a wavefront (its two
  // quarter-warps merged), so a warp's 128-bit load takes two (as Nsight
  // Compute counts on sm_90).
  w = sharedWavefronts(strided(256, 0).data(), kAll, 16);
  EXPECT_EQ(w.wavefronts, 2u);
  EXPECT_EQ(w.ideal, 2u);
  EXPECT_EQ(sharedWavefronts(strided(256, 0).data(), kAll, 8).wavefronts, 1u);
  // Pairs of lanes on one float2: 128 distinct bytes, one wavefront.
  Addresses pairs{};
  for (unsigned l = 0; l < kWarpSize; ++l) pairs[l] = (l / 2) * 8;
  EXPECT_EQ(sharedWavefronts(pairs.data(), kAll, 8).wavefronts, 1u);
}

TEST(ProfileBanks, PhasesOfTheWarp) {
  // sgemm's float4 fragment load: lanes l and l+16 read the same 16 bytes.
  // Each half-warp reads 256 distinct bytes, so 4 wavefronts, not the 2 that
  // the warp's 256 distinct bytes would fit in: phases do not share words
  // across half-warps.
  Addresses halfShare{};
  for (unsigned l = 0; l < kWarpSize; ++l) halfShare[l] = (l % 16) * 16;
  Wavefronts w = sharedWavefronts(halfShare.data(), kAll, 16);
  EXPECT_EQ(w.wavefronts, 4u);
  EXPECT_EQ(w.ideal, 4u);
  // Quarter-warps that read disjoint 64 bytes merge (lanes 2k, 2k+1 on one
  // float4): one wavefront a half.
  Addresses pairs{};
  for (unsigned l = 0; l < kWarpSize; ++l) pairs[l] = (l / 2) * 16;
  EXPECT_EQ(sharedWavefronts(pairs.data(), kAll, 16).wavefronts, 2u);
  // Quarter-warps that read the same 128 bytes do not.
  Addresses eighths{};
  for (unsigned l = 0; l < kWarpSize; ++l) eighths[l] = (l % 8) * 16;
  EXPECT_EQ(sharedWavefronts(eighths.data(), kAll, 16).wavefronts, 4u);
  // 64-bit: half-warps on the same 64 bytes do not merge either; disjoint ones do.
  for (unsigned l = 0; l < kWarpSize; ++l) eighths[l] = (l % 8) * 8;
  EXPECT_EQ(sharedWavefronts(eighths.data(), kAll, 8).wavefronts, 2u);
  for (unsigned l = 0; l < kWarpSize; ++l) pairs[l] = (l / 2) * 8;
  EXPECT_EQ(sharedWavefronts(pairs.data(), kAll, 8).wavefronts, 1u);
}

TEST(ProfileBanks, StoresNeverMerge) {
  // A broadcast store of 128 bits: one wavefront per quarter-warp.
  Wavefronts w = sharedWavefronts(strided(256, 0).data(), kAll, 16, SharedAccess::Store);
  EXPECT_EQ(w.wavefronts, 4u);
  EXPECT_EQ(w.ideal, 4u);
  EXPECT_EQ(sharedWavefronts(strided(256, 0).data(), kAll, 8, SharedAccess::Store).wavefronts, 2u);
  EXPECT_EQ(sharedWavefronts(strided(256, 0).data(), kAll, 4, SharedAccess::Store).wavefronts, 1u);
  // hgemm's A tile store: rows of 80 bytes, four lanes a row. Each
  // quarter-warp's two rows overlap in four banks: 2-way, 8 wavefronts.
  Addresses rows{};
  for (unsigned l = 0; l < kWarpSize; ++l) rows[l] = (l >> 2) * 80 + (l & 3) * 16;
  w = sharedWavefronts(rows.data(), kAll, 16, SharedAccess::Store);
  EXPECT_EQ(w.wavefronts, 8u);
  EXPECT_EQ(w.ideal, 4u);
}

TEST(ProfileBanks, AtomicsToOneAddressSerialize) {
  EXPECT_EQ(sharedWavefronts(strided(0, 0).data(), kAll, 4, SharedAccess::Atomic).wavefronts, 32u);
  EXPECT_EQ(sharedWavefronts(strided(0, 4).data(), kAll, 4, SharedAccess::Atomic).wavefronts, 1u);
}

TEST(ProfileBanks, MatrixRows) {
  // ldmatrix.x4 over rows of a 16x64-half tile (128-byte rows): each 8-row
  // matrix has its rows in the same four banks: 8-way.
  Wavefronts w = matrixWavefronts(strided(0, 128).data(), 4);
  EXPECT_EQ(w.wavefronts, 32u);
  EXPECT_EQ(w.ideal, 4u);
  // Rows 16 bytes apart (or swizzled): conflict-free.
  w = matrixWavefronts(strided(0, 16).data(), 4);
  EXPECT_EQ(w.wavefronts, 4u);
  EXPECT_EQ(w.ideal, 4u);
  EXPECT_EQ(matrixWavefronts(strided(0, 16).data(), 1).wavefronts, 1u);
}

TEST(ProfileSectors, Coalescing) {
  constexpr uint64_t base = kGlobalBase + 256;
  Sectors s = globalSectors(strided(base, 4).data(), kAll, 4);
  EXPECT_EQ(s.sectors, 4u);
  EXPECT_EQ(s.ideal, 4u);
  // Misaligned by one element: 5 sectors for 4 sectors' worth of bytes.
  s = globalSectors(strided(base + 4, 4).data(), kAll, 4);
  EXPECT_EQ(s.sectors, 5u);
  EXPECT_EQ(s.ideal, 4u);
  // A column walk: a sector per lane, for 128 bytes that would fit in 4.
  s = globalSectors(strided(base, 4096).data(), kAll, 4);
  EXPECT_EQ(s.sectors, 32u);
  EXPECT_EQ(s.ideal, 4u);
  // A stride of two elements: 8 sectors for 128 bytes used.
  s = globalSectors(strided(base, 8).data(), kAll, 4);
  EXPECT_EQ(s.sectors, 8u);
  EXPECT_EQ(s.ideal, 4u);
  // float4 per lane: 512 bytes, 16 sectors.
  s = globalSectors(strided(base, 16).data(), kAll, 16);
  EXPECT_EQ(s.sectors, 16u);
  EXPECT_EQ(s.ideal, 16u);
  // One address for all: one sector.
  s = globalSectors(strided(base, 0).data(), kAll, 4);
  EXPECT_EQ(s.sectors, 1u);
  EXPECT_EQ(s.ideal, 1u);
}

/// Runs k(out, in, n) like EmuTest::run, with or without a profile.
class ProfileLaunch : public EmuTest {
protected:
  std::vector<exec::LaunchProfile> profiled(const std::string &ptx, uint32_t grid, uint32_t block, uint32_t count,
                                            bool profile, std::vector<uint32_t> *output = nullptr) {
    Result<exec::ModuleHandle> module =
        executor_->loadModule(std::vector<uint8_t>(ptx.begin(), ptx.end()), exec::ModuleFormat::Ptx);
    EXPECT_TRUE(module) << (module ? "" : module.error().message);
    if (!module) return {};
    Result<exec::KernelInfo> info = executor_->getKernel(*module, "k");
    std::vector<uint32_t> input(count);
    std::iota(input.begin(), input.end(), 0u);
    Result<exec::DeviceBuffer> out = executor_->allocateBuffer(count * 4ull);
    Result<exec::DeviceBuffer> in = executor_->allocateBuffer(count * 4ull);
    EXPECT_TRUE(info && out && in);
    EXPECT_TRUE(executor_->upload(in->handle(), input));
    EXPECT_TRUE(executor_->upload(out->handle(), std::vector<uint32_t>(count, 0)));
    exec::LaunchConfig config;
    config.grid = {grid, 1, 1};
    config.block = {block, 1, 1};
    config.profile = profile;
    Result<void> launched = executor_->launch(
        info->handle, config, exec::KernelArgs().buffer(out->handle()).buffer(in->handle()).scalar<uint32_t>(count).pack());
    EXPECT_TRUE(launched) << (launched ? "" : launched.error().message);
    if (output) *output = *executor_->download<uint32_t>(out->handle(), count);
    return executor_->takeProfiles();
  }

  static const exec::LineProfile *lineAt(const exec::LaunchProfile &profile, uint32_t line) {
    for (const exec::LineProfile &l : profile.lines)
      if (l.line == line) return &l;
    return nullptr;
  }
};

// A 32x32 tile: each warp writes a row of shared memory and reads a column
// back (32-way conflicts), reads its input coalesced and writes a column of
// the output (a sector per lane).
const std::string kTransposeBody = R"(
  .shared .align 4 .b32 tile[1024];
  mov.u32 %r10, tile;
  shl.b32 %r11, %r3, 2;
  add.u32 %r12, %r10, %r11;
  ld.global.u32 %r13, [%rd2];
  st.shared.u32 [%r12], %r13;
  bar.sync 0;
  and.b32 %r14, %r3, 31;
  shr.u32 %r15, %r3, 5;
  mad.lo.u32 %r16, %r14, 32, %r15;
  shl.b32 %r17, %r16, 2;
  add.u32 %r18, %r10, %r17;
  ld.shared.u32 %r19, [%r18];
  mul.wide.u32 %rd4, %r16, 4;
  add.s64 %rd5, %rd10, %rd4;
  st.global.u32 [%rd5], %r19;
  ret;
)";

TEST_F(ProfileLaunch, CountsPerLine) {
  const std::string ptx = kernel(kTransposeBody);
  std::vector<uint32_t> plain, withProfile;
  EXPECT_TRUE(profiled(ptx, 1, 1024, 1024, false, &plain).empty()) << "no profile unless asked for";
  std::vector<exec::LaunchProfile> profiles = profiled(ptx, 1, 1024, 1024, true, &withProfile);
  EXPECT_EQ(plain, withProfile) << "profiling must not change results";
  for (uint32_t i = 0; i < 1024; ++i) ASSERT_EQ(withProfile[i], i) << i;
  ASSERT_EQ(profiles.size(), 1u);
  const exec::LaunchProfile &p = profiles[0];
  EXPECT_EQ(p.kernel, "k");
  EXPECT_EQ(p.block[0], 1024u);
  EXPECT_GT(p.warpInstructions, 0u);

  const exec::LineProfile *load = lineAt(p, lineOf(ptx, "ld.global.u32 %r13"));
  ASSERT_NE(load, nullptr);
  EXPECT_EQ(load->executions, 32u);
  EXPECT_EQ(load->globalRequests, 32u);
  EXPECT_EQ(load->globalSectors, 32u * 4);
  EXPECT_EQ(load->globalBytes, 4096u);
  EXPECT_FALSE(load->store);

  const exec::LineProfile *row = lineAt(p, lineOf(ptx, "st.shared.u32"));
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->sharedRequests, 32u);
  EXPECT_EQ(row->sharedWavefronts, 32u);
  EXPECT_EQ(row->bankConflicts(), 0u);
  EXPECT_TRUE(row->store);

  const exec::LineProfile *column = lineAt(p, lineOf(ptx, "ld.shared.u32"));
  ASSERT_NE(column, nullptr);
  EXPECT_EQ(column->sharedWavefronts, 32u * 32);
  EXPECT_EQ(column->sharedIdealWavefronts, 32u);
  EXPECT_EQ(column->bankConflicts(), 31u * 32);

  const exec::LineProfile *scatter = lineAt(p, lineOf(ptx, "st.global.u32"));
  ASSERT_NE(scatter, nullptr);
  EXPECT_EQ(scatter->globalSectors, 32u * 32);
  EXPECT_EQ(scatter->globalIdealSectors, 32u * 4);
  EXPECT_EQ(scatter->instruction, "st.global.u32 [%rd5], %r19");
  EXPECT_EQ(lineAt(p, lineOf(ptx, "bar.sync")), nullptr) << "only memory accesses have lines";
  EXPECT_TRUE(executor_->takeProfiles().empty()) << "taken once";
}

TEST_F(ProfileLaunch, GenericAddressesFindTheirSpace) {
  // Each thread writes its float4 of shared memory through a generic
  // address, then reads its output word through one.
  const std::string ptx = kernel(R"(
  .shared .align 16 .b32 buf[512];
  mov.u64 %rd4, buf;
  cvta.shared.u64 %rd5, %rd4;
  mul.wide.u32 %rd6, %r3, 16;
  add.s64 %rd7, %rd5, %rd6;
  st.v4.u32 [%rd7], {%r3, %r3, %r3, %r3};
  ld.u32 %r20, [%rd7];
  cvta.global.u64 %rd8, %rd1;
  st.u32 [%rd8], %r20;
  ret;
)");
  std::vector<exec::LaunchProfile> profiles = profiled(ptx, 2, 64, 128, true);
  ASSERT_EQ(profiles.size(), 1u);
  const exec::LineProfile *vector = lineAt(profiles[0], lineOf(ptx, "st.v4.u32"));
  ASSERT_NE(vector, nullptr);
  EXPECT_EQ(vector->sharedRequests, 4u); // 2 CTAs x 2 warps
  EXPECT_EQ(vector->sharedWavefronts, 16u);
  EXPECT_EQ(vector->globalRequests, 0u);
  const exec::LineProfile *strided = lineAt(profiles[0], lineOf(ptx, "ld.u32 %r20"));
  ASSERT_NE(strided, nullptr);
  // 4-byte reads 16 bytes apart: banks 0, 4, ..., 4-way per 32 lanes.
  EXPECT_EQ(strided->sharedWavefronts, 4u * 4);
  const exec::LineProfile *out = lineAt(profiles[0], lineOf(ptx, "st.u32 [%rd8]"));
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->globalRequests, 4u);
  EXPECT_EQ(out->globalSectors, 16u);
  EXPECT_EQ(out->sharedRequests, 0u);
}

// The patterns of ProfileKernels/ncu_microbench.cu (its PTX, from nvcc 13.0
// -arch=sm_90) as Nsight Compute counted them on sm_90, one warp and one
// access each: the first 29 on an H200 (2026-12-01, Nsight Compute 2025.3),
// all 62 on an H100 (2026-12-05, the same counts for those 29;
// docs/results/emu-profile-vs-ncu-2026-12-05.md). Shared-memory wavefronts and
// bank conflicts of the pattern's load (l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,
// l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum) or, for sts*, its
// store (..._op_st.sum); global sectors and requests
// (l1tex__t_sectors/requests_pipe_lsu_mem_global_op_ld.sum).
struct NcuCount {
  const char *kernel;
  uint64_t wavefronts, conflicts, sectors, requests;
};
constexpr NcuCount kSm90[] = {
    {"lds32_stride1", 1, 0, 0, 0}, {"lds32_stride2", 2, 1, 0, 0}, {"lds32_stride32", 32, 31, 0, 0},
    {"lds32_stride33", 1, 0, 0, 0}, {"lds32_broadcast", 1, 0, 0, 0}, {"lds32_pairs", 1, 0, 0, 0},
    {"lds64_stride1", 2, 0, 0, 0}, {"lds64_stride2", 4, 2, 0, 0}, {"lds64_stride16", 32, 30, 0, 0},
    {"lds64_broadcast", 1, 0, 0, 0}, {"lds64_pairs", 1, 0, 0, 0}, {"lds64_halves_swapped", 2, 0, 0, 0},
    {"lds128_stride1", 4, 0, 0, 0}, {"lds128_stride2", 8, 4, 0, 0}, {"lds128_stride8", 32, 28, 0, 0},
    {"lds128_broadcast", 2, 0, 0, 0}, {"lds128_pairs", 2, 0, 0, 0}, {"lds128_quads", 2, 0, 0, 0},
    {"ldsm_x4_rows16", 4, 0, 0, 0}, {"ldsm_x4_rows128", 32, 28, 0, 0}, {"ldsm_x4_rows144", 4, 0, 0, 0},
    {"lds128_halfshare", 4, 0, 0, 0}, {"lds128_halves", 2, 0, 0, 0}, {"lds128_eighths", 4, 0, 0, 0},
    {"lds128_quarter_bcast", 2, 0, 0, 0}, {"lds128_rows80", 8, 4, 0, 0}, {"lds128_rows272", 4, 0, 0, 0},
    {"lds128_xor8", 4, 0, 0, 0}, {"lds64_halfshare", 2, 0, 0, 0}, {"lds64_eighths", 2, 0, 0, 0},
    {"lds64_rows80", 4, 2, 0, 0}, {"lds64_rows144", 2, 0, 0, 0}, {"sts32_stride1", 1, 0, 0, 0},
    {"sts32_stride2", 2, 1, 0, 0}, {"sts32_stride32", 32, 31, 0, 0}, {"sts32_broadcast", 1, 0, 0, 0},
    {"sts32_rows144", 2, 1, 0, 0}, {"sts64_stride1", 2, 0, 0, 0}, {"sts64_stride2", 4, 2, 0, 0},
    {"sts64_broadcast", 2, 0, 0, 0}, {"sts64_pairs", 2, 0, 0, 0}, {"sts64_halfshare", 2, 0, 0, 0},
    {"sts64_rows80", 4, 2, 0, 0}, {"sts64_rows144", 2, 0, 0, 0}, {"sts128_stride1", 4, 0, 0, 0},
    {"sts128_stride2", 8, 4, 0, 0}, {"sts128_broadcast", 4, 0, 0, 0}, {"sts128_pairs", 4, 0, 0, 0},
    {"sts128_quads", 4, 0, 0, 0}, {"sts128_halfshare", 4, 0, 0, 0}, {"sts128_halves", 4, 0, 0, 0},
    {"sts128_rows80", 8, 4, 0, 0}, {"sts128_rows272", 4, 0, 0, 0}, {"sts128_xor8", 4, 0, 0, 0},
    {"ldg32_stride1", 0, 0, 4, 1}, {"ldg32_offset4", 0, 0, 5, 1}, {"ldg32_stride2", 0, 0, 8, 1},
    {"ldg32_stride32", 0, 0, 32, 1}, {"ldg32_broadcast", 0, 0, 1, 1}, {"ldg64_stride1", 0, 0, 8, 1},
    {"ldg128_stride1", 0, 0, 16, 1}, {"ldg128_stride2", 0, 0, 32, 1},
};

TEST_F(ProfileLaunch, AgreesWithNsightComputeOnSm90) {
  std::ifstream file(std::string(PTXFORGE_SOURCE_DIR) + "/tests/emu/ProfileKernels/ncu_microbench.ptx");
  ASSERT_TRUE(file) << "ncu_microbench.ptx";
  std::stringstream text;
  text << file.rdbuf();
  const std::string ptx = text.str();
  Result<exec::ModuleHandle> module =
      executor_->loadModule(std::vector<uint8_t>(ptx.begin(), ptx.end()), exec::ModuleFormat::Ptx);
  ASSERT_TRUE(module) << module.error().message;
  Result<exec::DeviceBuffer> in = executor_->allocateBuffer(1 << 20);
  Result<exec::DeviceBuffer> out = executor_->allocateBuffer(4096);
  ASSERT_TRUE(in && out);
  ASSERT_TRUE(executor_->memset(in->handle(), 0, 0, 1 << 20));
  for (const NcuCount &expected : kSm90) {
    SCOPED_TRACE(expected.kernel);
    Result<exec::KernelInfo> kernel = executor_->getKernel(*module, expected.kernel);
    ASSERT_TRUE(kernel) << kernel.error().message;
    const bool global = std::string_view(expected.kernel).starts_with("ldg");
    exec::KernelArgs args;
    if (global) args.buffer(in->handle());
    args.buffer(out->handle());
    exec::LaunchConfig config;
    config.block = {32, 1, 1};
    config.profile = true;
    Result<void> launched = executor_->launch(kernel->handle, config, args.pack());
    ASSERT_TRUE(launched) << launched.error().message;
    std::vector<exec::LaunchProfile> profiles = executor_->takeProfiles();
    ASSERT_EQ(profiles.size(), 1u);
    // The pattern's own load: the kernels' other accesses fill the tile and store the result.
    uint64_t wavefronts = 0, ideal = 0, sectors = 0, requests = 0;
    for (const exec::LineProfile &line : profiles[0].lines) {
      const bool pattern = std::string_view(expected.kernel).starts_with("sts")
                               ? line.instruction.starts_with("st.volatile.shared")
                               : line.instruction.starts_with("ld.volatile.shared") || line.instruction.starts_with("ldmatrix");
      if (pattern) wavefronts += line.sharedWavefronts, ideal += line.sharedIdealWavefronts;
      if (line.instruction.starts_with("ld.volatile.global")) sectors += line.globalSectors, requests += line.globalRequests;
    }
    EXPECT_EQ(wavefronts, expected.wavefronts);
    EXPECT_EQ(wavefronts - ideal, expected.conflicts);
    EXPECT_EQ(sectors, expected.sectors);
    EXPECT_EQ(requests, expected.requests);
  }
}

} // namespace
} // namespace ptxforge::emu
