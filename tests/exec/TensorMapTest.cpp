// Tensor maps in the exec layer: the driver's documented rules, the box and
// footprint arithmetic, the spec's wire image, and an encode through the
// isolated worker (emulator backend) that a kernel then copies through.
#include "exec/IsolatedExecutor.h"
#include "exec/TensorMap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

using namespace ptxforge;
using namespace ptxforge::exec;

namespace {

TensorMapSpec matrix(uint64_t width, uint64_t height) {
  TensorMapSpec spec;
  spec.dataType = TensorMapDataType::F32;
  spec.rank = 2;
  spec.globalDim = {width, height, 0, 0, 0};
  spec.globalStrides = {width * 4, 0, 0, 0};
  spec.boxDim = {32, 8, 0, 0, 0};
  return spec;
}

bool mentions(const std::vector<std::string> &problems, const std::string &text) {
  return std::any_of(problems.begin(), problems.end(),
                     [&](const std::string &p) { return p.find(text) != std::string::npos; });
}

TEST(TensorMapRules, AGoodSpecHasNoProblems) {
  EXPECT_TRUE(tensorMapProblems(matrix(64, 20), 0x7000000100).empty());
  EXPECT_EQ(tensorMapBoxBytes(matrix(64, 20)), 32u * 8 * 4);
  EXPECT_EQ(tensorMapFootprintBytes(matrix(64, 20)), 64u * 20 * 4);
}

TEST(TensorMapRules, TheDriversRequirements) {
  EXPECT_TRUE(mentions(tensorMapProblems(matrix(64, 20), 0x7000000108), "not 16-byte aligned"));
  TensorMapSpec stride = matrix(47, 20);
  EXPECT_TRUE(mentions(tensorMapProblems(stride, 0), "must be a multiple of 16 below 2^40"));
  TensorMapSpec box = matrix(64, 20);
  box.boxDim[1] = 257;
  EXPECT_TRUE(mentions(tensorMapProblems(box, 0), "it must have 1 to 256"));
  box.boxDim = {3, 8, 0, 0, 0};
  EXPECT_TRUE(mentions(tensorMapProblems(box, 0), "12 bytes (3 x 4); it must be a multiple of 16"));
  TensorMapSpec swizzle = matrix(64, 20);
  swizzle.swizzle = TensorMapSwizzle::B64;
  EXPECT_TRUE(mentions(tensorMapProblems(swizzle, 0), "more than the 64-byte swizzle span"));
  TensorMapSpec nan = matrix(64, 20);
  nan.dataType = TensorMapDataType::U32;
  nan.oobFill = TensorMapOobFill::NanRequestZeroFma;
  EXPECT_TRUE(mentions(tensorMapProblems(nan, 0), "needs a floating-point data type, not u32"));
  TensorMapSpec rank = matrix(64, 20);
  rank.rank = 6;
  EXPECT_TRUE(mentions(tensorMapProblems(rank, 0), "it must be 1 to 5"));
  TensorMapSpec steps = matrix(64, 20);
  steps.elementStrides[1] = 9;
  EXPECT_TRUE(mentions(tensorMapProblems(steps, 0), "element stride of dimension 1 is 9"));
  TensorMapSpec interleaved = matrix(64, 20);
  interleaved.interleave = TensorMapInterleave::B16;
  EXPECT_TRUE(mentions(tensorMapProblems(interleaved, 0), "interleave must be none"));
}

TEST(TensorMapRules, ElementStridesShrinkTheBoxButNotAlongDimensionZero) {
  TensorMapSpec spec = matrix(64, 20);
  spec.elementStrides = {4, 3, 1, 1, 1};
  EXPECT_EQ(tensorMapBoxCount(spec, 0), 32u); // dimension 0's stride is ignored without interleave
  EXPECT_EQ(tensorMapBoxCount(spec, 1), 3u);  // ceil(8 / 3)
  EXPECT_EQ(tensorMapBoxBytes(spec), 32u * 3 * 4);
}

TEST(TensorMapRules, TheSpecCrossesTheWireExactly) {
  TensorMapSpec spec = matrix(100, 7);
  spec.rank = 3;
  spec.globalDim[2] = 5;
  spec.globalStrides[1] = 400 * 7;
  spec.boxDim[2] = 2;
  spec.elementStrides = {1, 2, 1, 1, 1};
  spec.swizzle = TensorMapSwizzle::B128;
  spec.l2Promotion = TensorMapL2Promotion::B256;
  spec.oobFill = TensorMapOobFill::NanRequestZeroFma;
  std::vector<uint8_t> bytes = serializeTensorMapSpec(spec);
  std::optional<TensorMapSpec> back = deserializeTensorMapSpec(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, spec);
  bytes[3] = 9; // no such swizzle
  EXPECT_FALSE(deserializeTensorMapSpec(bytes));
  bytes.pop_back();
  EXPECT_FALSE(deserializeTensorMapSpec(bytes));
}

// A 1D box of 64 u32 loaded through the map into shared memory and copied out.
const char *kLoad1d = R"(.version 8.5
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out, .param .align 64 .b8 map[128], .param .u32 c0)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  .shared .align 128 .b8 tile[256];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [out];
  mov.b64 %rd2, map;
  cvta.param.u64 %rd3, %rd2;
  ld.param.u32 %r1, [c0];
  mov.u32 %r2, bar;
  mov.u32 %r3, tile;
  mov.u32 %r4, %tid.x;
  setp.eq.u32 %p1, %r4, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
  bar.sync 0;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd4, [%r2], 256;
  @%p1 cp.async.bulk.tensor.1d.shared::cta.global.tile.mbarrier::complete_tx::bytes [%r3], [%rd3, {%r1}], [%r2];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;
  @!%p2 bra WAIT;
  shl.b32 %r5, %r4, 2;
  add.u32 %r6, %r3, %r5;
  ld.shared.u32 %r7, [%r6];
  cvt.u64.u32 %rd5, %r5;
  add.s64 %rd6, %rd1, %rd5;
  st.global.u32 [%rd6], %r7;
  ret;
}
)";

TEST(IsolatedEmulator, EncodesATensorMapInTheWorkerThatItsKernelsRead) {
  IsolatedOptions options;
  options.workerPath = PTXFORGE_EXEC_TEST_WORKER;
  options.backend = "emu";
  Result<std::unique_ptr<Executor>> created = createIsolatedExecutor(options);
  ASSERT_TRUE(created) << created.error().message;
  Executor &executor = **created;
  std::vector<uint32_t> values(100);
  for (uint32_t i = 0; i < values.size(); ++i) values[i] = 1000 + i;
  Result<DeviceBuffer> in = executor.allocateBuffer(values.size() * 4 + 256);
  Result<DeviceBuffer> out = executor.allocateBuffer(64 * 4);
  ASSERT_TRUE(in && out);
  ASSERT_TRUE(executor.copyToDevice(in->handle(), 256, values.data(), values.size() * 4));
  TensorMapSpec spec;
  spec.dataType = TensorMapDataType::U32;
  spec.rank = 1;
  spec.globalDim = {100, 0, 0, 0, 0};
  spec.boxDim = {64, 0, 0, 0, 0};
  Result<TensorMapBytes> map = executor.encodeTensorMap(in->handle(), 256, spec);
  ASSERT_TRUE(map) << map.error().message;
  Result<ModuleHandle> module =
      executor.loadModule(std::vector<uint8_t>(kLoad1d, kLoad1d + std::char_traits<char>::length(kLoad1d)),
                          ModuleFormat::Ptx);
  ASSERT_TRUE(module) << module.error().message;
  Result<KernelInfo> kernel = executor.getKernel(*module, "k");
  ASSERT_TRUE(kernel);
  LaunchConfig config;
  config.block = {64, 1, 1};
  Result<void> ran =
      executor.launch(kernel->handle, config, KernelArgs().buffer(out->handle()).raw(map->data(), 128, 64).scalar<int32_t>(48).pack());
  ASSERT_TRUE(ran) << ran.error().message;
  Result<std::vector<uint32_t>> got = executor.download<uint32_t>(out->handle(), 64);
  ASSERT_TRUE(got);
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ((*got)[i], 48 + i < 100 ? 1048 + i : 0u) << i;
  // A spec the driver would refuse is refused through the worker too, and so
  // is a tensor larger than its buffer.
  spec.boxDim[0] = 3;
  Result<TensorMapBytes> bad = executor.encodeTensorMap(in->handle(), 256, spec);
  ASSERT_FALSE(bad);
  EXPECT_EQ(execErrorKindOf(bad.error()), ExecErrorKind::InvalidArgument);
  spec.boxDim[0] = 64;
  spec.globalDim[0] = 200;
  EXPECT_FALSE(executor.encodeTensorMap(in->handle(), 256, spec));
}

} // namespace
