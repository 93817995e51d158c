// The profile report (verify/Profile.h) on hand-built emulator profiles: the
// estimate's arithmetic (waves, occupancy, the binding term), the lines it
// names first, its JSON round trip inside a check result, and bad documents.
#include "verify/Profile.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ptxforge::verify {
namespace {

exec::LineProfile globalLine(uint32_t line, uint64_t requests, uint64_t sectorsPerRequest, uint64_t idealPerRequest) {
  exec::LineProfile l;
  l.line = line;
  l.instruction = "ld.global.f32 %f1, [%rd4];";
  l.executions = requests;
  l.globalRequests = requests;
  l.globalSectors = requests * sectorsPerRequest;
  l.globalIdealSectors = requests * idealPerRequest;
  l.globalBytes = requests * 128;
  return l;
}

exec::LineProfile sharedLine(uint32_t line, uint64_t requests, uint64_t wavefrontsPerRequest) {
  exec::LineProfile l;
  l.line = line;
  l.instruction = "ld.shared.f32 %f2, [%r9];";
  l.executions = requests;
  l.sharedRequests = requests;
  l.sharedWavefronts = requests * wavefrontsPerRequest;
  l.sharedIdealWavefronts = requests;
  return l;
}

/// A streaming kernel: `blocks` blocks of 256 threads, 32 registers, reading
/// `bytes` with perfect coalescing (or `sectorsPerRequest` sectors for 4).
KernelProfileReport streaming(uint32_t blocks, uint64_t bytes, uint64_t sectorsPerRequest = 4) {
  KernelProfileReport k;
  k.launch.block = {256, 1, 1};
  k.launch.grid = {blocks, 1, 1};
  k.registers = 32;
  k.registersFrom = "compiler";
  k.profile.kernel = "k";
  k.profile.warpInstructions = bytes / 128 * 10;
  k.profile.lines.push_back(globalLine(20, bytes / 128, sectorsPerRequest, 4));
  return k;
}

TEST(ProfileEstimate, MemoryBoundKernelsScaleWithSectors) {
  ProfileCeilings ceilings;
  KernelProfileReport good = streaming(4096, 64ull << 20);
  KernelProfileReport strided = streaming(4096, 64ull << 20, 32);
  estimateKernel(good, ceilings, std::nullopt, "sm_90");
  estimateKernel(strided, ceilings, std::nullopt, "sm_90");
  EXPECT_EQ(good.bound, "memory");
  EXPECT_EQ(good.globalSectors * 32, 64ull << 20);
  EXPECT_NEAR(good.memorySeconds, (64.0 * (1 << 20)) / 4.8e12, 1e-12);
  // 8 blocks of 8 warps per SM (64 warps): memory runs at the full rate in
  // 3 full waves of 1056 blocks and one of 928.
  ASSERT_TRUE(good.occupancy);
  EXPECT_EQ(good.occupancy->blocksPerSm, 8);
  EXPECT_NEAR(good.estimatedSeconds, good.memorySeconds, good.memorySeconds * 1e-9);
  EXPECT_NEAR(strided.estimatedSeconds / good.estimatedSeconds, 8.0, 1e-9);
}

TEST(ProfileEstimate, FewWarpsCannotHideLatency) {
  ProfileCeilings ceilings;
  // The same traffic in 132 blocks of one warp: one warp per SM, 128 bytes
  // in flight of the 2048 that hide the latency.
  KernelProfileReport wide = streaming(132 * 8, 1ull << 20);
  KernelProfileReport thin = streaming(132, 1ull << 20);
  thin.launch.block = {32, 1, 1};
  estimateKernel(wide, ceilings, std::nullopt, "sm_90");
  estimateKernel(thin, ceilings, std::nullopt, "sm_90");
  EXPECT_NEAR(thin.estimatedSeconds / thin.memorySeconds, 16.0, 1e-9);
  EXPECT_NEAR(wide.estimatedSeconds / wide.memorySeconds, 1.0, 1e-9);
  // A float4 per lane puts four times the bytes in flight per warp.
  KernelProfileReport vector = streaming(132, 1ull << 20, 16);
  vector.launch.block = {128, 1, 1};
  vector.profile.lines[0].globalIdealSectors = vector.profile.lines[0].globalSectors;
  estimateKernel(vector, ceilings, std::nullopt, "sm_90");
  EXPECT_NEAR(vector.estimatedSeconds / vector.memorySeconds, 1.0, 1e-9);
}

TEST(ProfileEstimate, SharedConflictsAndComputeCanBind) {
  ProfileCeilings ceilings;
  KernelProfileReport k = streaming(1056, 1ull << 20);
  k.profile.lines.push_back(sharedLine(30, 1ull << 20, 32));
  estimateKernel(k, ceilings, std::nullopt, "sm_90");
  EXPECT_EQ(k.bound, "shared memory");
  EXPECT_EQ(k.sharedWavefronts - k.sharedIdealWavefronts, 31ull << 20);
  KernelProfileReport gemm = streaming(1056, 1ull << 20);
  estimateKernel(gemm, ceilings, 1e12, "sm_90");
  EXPECT_EQ(gemm.bound, "compute");
  gemm.tensorCores = true;
  estimateKernel(gemm, ceilings, 1e12, "sm_90");
  EXPECT_LT(gemm.computeSeconds, 1e12 / 66.9e12);
}

TEST(ProfileEstimate, UnknownRegistersGiveNoEstimate) {
  KernelProfileReport k = streaming(64, 1 << 20);
  k.registers = -1;
  estimateKernel(k, ProfileCeilings{}, std::nullopt, "sm_90");
  EXPECT_EQ(k.estimatedSeconds, 0);
  EXPECT_FALSE(k.occupancy);
}

ProfileReport sampleReport() {
  ProfileReport r;
  r.executor = "ptxforge PTX emulator";
  r.arch = "sm_90";
  r.shapeIndex = 1;
  r.shape = {{"n", 1 << 20}};
  r.flops = 2.0 * (1 << 20);
  r.ceilings.source = "nominal";
  r.candidate = streaming(4096, 64ull << 20, 8);
  r.candidate.profile.lines.push_back(sharedLine(31, 4096, 4));
  exec::LineProfile spill;
  spill.line = 40;
  spill.instruction = "st.local.u32 [%rd1], %r1;";
  spill.executions = spill.localRequests = 10;
  spill.localBytes = 1280;
  spill.store = true;
  r.candidate.profile.lines.push_back(spill);
  r.reference = streaming(4096, 64ull << 20);
  estimateKernel(r.candidate, r.ceilings, r.flops, r.arch);
  estimateKernel(r.reference, r.ceilings, r.flops, r.arch);
  r.estimatedSpeedup = r.reference.estimatedSeconds / r.candidate.estimatedSeconds;
  r.basis = "an estimate";
  return r;
}

TEST(ProfileReportText, WorstLinesFirst) {
  ProfileReport r = sampleReport();
  std::vector<std::string> lines = profileOffenders(r.candidate, 5);
  ASSERT_EQ(lines.size(), 3u);
  // 4 extra sectors on each of 524288 requests outweigh 3 extra wavefronts on 4096.
  EXPECT_EQ(lines[0].rfind("line 20 `ld.global.f32 %f1, [%rd4];`: 8.0 sectors per request (ideal 4.0): 50% of the bytes "
                           "fetched are used",
                           0),
            0u)
      << lines[0];
  EXPECT_NE(lines[1].find("line 31"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("4.0-way bank conflicts"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("local memory"), std::string::npos) << lines[2];
  EXPECT_EQ(profileOffenders(r.reference, 5).size(), 0u);
  std::string text = formatProfileText(r);
  EXPECT_NE(text.find("estimated 0.50x the reference"), std::string::npos) << text;
  EXPECT_NE(text.find("bound by memory"), std::string::npos) << text;
}

TEST(ProfileReportJson, RoundTripsInsideACheckResult) {
  CheckResult result;
  result.verdict = Verdict::Correct;
  result.stage = Stage::Execute;
  result.task = "saxpy";
  result.profile = sampleReport();
  nlohmann::json json = toJson(result);
  ASSERT_TRUE(json.contains("profile"));
  EXPECT_TRUE(json["profile"]["estimate"]["is_estimate"].get<bool>());
  Result<CheckResult> back = checkResultFromJson(json);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_TRUE(back->profile);
  EXPECT_EQ(back->profile->candidate.profile.lines, result.profile->candidate.profile.lines);
  EXPECT_DOUBLE_EQ(back->profile->estimatedSpeedup, result.profile->estimatedSpeedup);
  EXPECT_EQ(toJson(*back), json);
  EXPECT_EQ(formatProfileText(*back->profile), formatProfileText(*result.profile));
  // Without a profile the document has no "profile" key at all.
  result.profile.reset();
  EXPECT_FALSE(toJson(result).contains("profile"));
}

TEST(ProfileReportJson, BadDocumentsNameTheField) {
  nlohmann::json json = toJson(sampleReport());
  nlohmann::json missing = json;
  missing["candidate"]["lines"][0].erase("global_sectors");
  Result<ProfileReport> bad = profileReportFromJson(missing);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("/candidate/lines/0/global_sectors: missing"), std::string::npos)
      << bad.error().message;
  nlohmann::json wrongType = json;
  wrongType["reference"]["registers"] = "many";
  bad = profileReportFromJson(wrongType);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("/reference/registers"), std::string::npos) << bad.error().message;
  nlohmann::json impossible = json;
  impossible["candidate"]["lines"][0]["global_ideal_sectors"] = 1ull << 40;
  EXPECT_FALSE(profileReportFromJson(impossible));
  nlohmann::json zeroRate = json;
  zeroRate["ceilings"]["dram_gbs"] = 0;
  EXPECT_FALSE(profileReportFromJson(zeroRate));
  EXPECT_FALSE(profileReportFromJson(nlohmann::json::array()));
}

} // namespace
} // namespace ptxforge::verify
