// Nsight Compute on a GPU (label gpu): one launch of a small copy kernel under
// the real ncu through runUnderNcu and ptxforge_ncu_launch, and the metric
// set read back. Skips, saying why, without a GPU (the driver's reason), without
// ncu, or without permission to read the counters (ERR_NVGPUCTRPERM).
#include "exec/GpuExecutor.h"
#include "toolchain/Compiler.h"
#include "verify/NcuProfile.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iostream>

namespace ptxforge::verify {
namespace {

// out[i] = in[i] for i < n, one element per thread.
constexpr const char *kCopy = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry copy(.param .u64 in, .param .u64 out, .param .u32 n) {
  .reg .pred %p;
  .reg .b32 %r<5>;
  .reg .f32 %f;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r2, %r2, %r3, %r4;
  setp.ge.u32 %p, %r2, %r1;
  @%p bra done;
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.f32 %f, [%rd4];
  st.global.f32 [%rd5], %f;
done:
  ret;
}
)";

TEST(NcuOnGpu, ProfilesOneLaunchOfACopy) {
  {
    Result<std::unique_ptr<exec::Executor>> gpu = exec::createGpuExecutor(0);
    if (!gpu) GTEST_SKIP() << render(gpu.error());
  } // the context goes before ncu's process starts its own
  if (findNcu().empty()) GTEST_SKIP() << "ncu not found (PATH, /usr/local/cuda/bin, PTXFORGE_NCU)";
  toolchain::CompileOptions options;
  options.arch = "sm_90";
  Result<toolchain::CompileResult> compiled = toolchain::compilePtx(kCopy, options);
  ASSERT_TRUE(compiled) << render(compiled.error());
  ASSERT_TRUE(compiled->ok);

  constexpr uint32_t n = 1 << 20;
  NcuLaunch launch;
  launch.cubin = compiled->cubin;
  launch.kernel = "copy";
  launch.launch.block = {256, 1, 1};
  launch.launch.grid = {n / 256, 1, 1};
  NcuLaunch::Param in{true, std::vector<std::byte>(n * 4, std::byte{0x3f}), n * 4};
  NcuLaunch::Param out{true, {}, n * 4};
  NcuLaunch::Param count{false, std::vector<std::byte>(4), 0};
  std::memcpy(count.bytes.data(), &n, 4);
  launch.params = {in, out, count};

  NcuRun run = runUnderNcu(launch, {});
  if (run.error.find("ERR_NVGPUCTRPERM") != std::string::npos) GTEST_SKIP() << run.error;
  ASSERT_TRUE(run.error.empty()) << run.error << "\n" << run.command;
  ASSERT_TRUE(run.row);
  NcuProfileReport report = pairNcuRows(&*run.row, &*run.row);
  for (const NcuMetricPair &metric : report.metrics) {
    SCOPED_TRACE(metric.key);
    EXPECT_TRUE(metric.candidate.has_value()) << metric.ncuMetric;
  }
  auto value = [&](const std::string &key) {
    for (const NcuMetricPair &metric : report.metrics)
      if (metric.key == key) return metric.candidate.value_or(-1);
    return -1.0;
  };
  EXPECT_GT(value("time"), 0);
  // Coalesced 4-byte accesses: 4 sectors per warp-wide request.
  EXPECT_DOUBLE_EQ(value("global_load_sectors_per_request"), 4.0);
  EXPECT_DOUBLE_EQ(value("global_store_sectors_per_request"), 4.0);
  EXPECT_EQ(value("shared_load_wavefronts"), 0);
  EXPECT_FALSE(report.stalls.empty());
  std::cout << formatNcuText(report);
}

} // namespace
} // namespace ptxforge::verify
