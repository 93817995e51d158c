// TMA in the emulator: tensor maps the executor encodes, cp.async.bulk.tensor
// loads (layout, swizzle modes, out-of-bounds fill) and stores (clipped at the
// tensor's edge), and the checks of their misuse.
#include "EmuHarness.h"

#include "emu/Async.h"
#include "exec/GpuExecutor.h"

#include <cstring>
#include <string>

namespace ptxforge::emu {
namespace {

using exec::TensorMapSpec;
using exec::TensorMapSwizzle;

// The swizzle of the PTX ISA's figures, written out rather than computed:
// the position of each 16-byte chunk of a 128-byte row, for the 8 rows of a
// 1024-byte-aligned 128B pattern (row r holds chunk c at c ^ (r % 8)).
constexpr uint32_t kSwizzle128[8][8] = {
    {0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6}, {2, 3, 0, 1, 6, 7, 4, 5}, {3, 2, 1, 0, 7, 6, 5, 4},
    {4, 5, 6, 7, 0, 1, 2, 3}, {5, 4, 7, 6, 1, 0, 3, 2}, {6, 7, 4, 5, 2, 3, 0, 1}, {7, 6, 5, 4, 3, 2, 1, 0},
};
// 64B: chunks 0-3 of each 64-byte half-row; the pattern changes every 128
// bytes and repeats every 512 (rows of 128 bytes r: c ^ (r % 4)).
constexpr uint32_t kSwizzle64[4][4] = {{0, 1, 2, 3}, {1, 0, 3, 2}, {2, 3, 0, 1}, {3, 2, 1, 0}};
// 32B: the two chunks of each 32-byte piece swap in every other 128-byte row.
constexpr uint32_t kSwizzle32[2][2] = {{0, 1}, {1, 0}};

TEST(TensorMapSwizzle, MatchesTheDocumentedPatterns) {
  for (uint32_t base : {0u, 1024u, 4096u})
    for (uint32_t row = 0; row < 8; ++row)
      for (uint32_t chunk = 0; chunk < 8; ++chunk) {
        uint32_t address = base + row * 128 + chunk * 16;
        EXPECT_EQ(tensorMapSwizzle(address, TensorMapSwizzle::None), address);
        EXPECT_EQ(tensorMapSwizzle(address, TensorMapSwizzle::B128), base + row * 128 + kSwizzle128[row][chunk] * 16)
            << row << " " << chunk;
        EXPECT_EQ(tensorMapSwizzle(address, TensorMapSwizzle::B64),
                  base + row * 128 + (chunk / 4) * 64 + kSwizzle64[row % 4][chunk % 4] * 16)
            << row << " " << chunk;
        EXPECT_EQ(tensorMapSwizzle(address, TensorMapSwizzle::B32),
                  base + row * 128 + (chunk / 2) * 32 + kSwizzle32[row % 2][chunk % 2] * 16)
            << row << " " << chunk;
      }
}

TEST(EmuTensorMap, EncodesAndDecodesItsOwnMapsOnly) {
  TensorMapSpec spec;
  spec.dataType = exec::TensorMapDataType::BF16;
  spec.rank = 3;
  spec.globalDim = {64, 10, 3, 0, 0};
  spec.globalStrides = {128, 1280, 0, 0};
  spec.boxDim = {64, 8, 1, 0, 0};
  spec.swizzle = TensorMapSwizzle::B128;
  spec.oobFill = exec::TensorMapOobFill::NanRequestZeroFma;
  exec::TensorMapBytes bytes = encodeEmuTensorMap(kGlobalBase + 256, spec);
  std::optional<EmuTensorMap> map = decodeEmuTensorMap(bytes);
  ASSERT_TRUE(map);
  EXPECT_EQ(map->spec, spec);
  EXPECT_EQ(map->address, kGlobalBase + 256);
  bytes[30] ^= 1; // a dimension changed in memory
  EXPECT_FALSE(decodeEmuTensorMap(bytes));
  EXPECT_FALSE(decodeEmuTensorMap(exec::TensorMapBytes{}));
}

// k(out, map, c0, c1, bytes): thread 0 loads the box at (c0, c1) into a
// 1024-byte-aligned tile; every thread then copies the tile's raw bytes out.
const std::string kLoad = R"(.version 8.5
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out, .param .align 64 .b8 map[128], .param .u32 c0, .param .u32 c1, .param .u32 bytes)
{
  .reg .pred %p<4>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<10>;
  .shared .align 1024 .b8 tile[4096];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.b64 %rd2, map;
  cvta.param.u64 %rd3, %rd2;
  ld.param.u32 %r1, [c0];
  ld.param.u32 %r2, [c1];
  ld.param.u32 %r3, [bytes];
  mov.u32 %r4, %tid.x;
  mov.u32 %r5, bar;
  mov.u32 %r6, tile;
  setp.eq.u32 %p1, %r4, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r5], 1;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd4, [%r5], %r3;
  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r6], [%rd3, {%r1, %r2}], [%r5];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r5], 0;
  @!%p2 bra WAIT;
  mov.u32 %r7, %r4;
LOOP:
  shl.b32 %r8, %r7, 2;
  setp.ge.u32 %p3, %r8, %r3;
  @%p3 bra DONE;
  add.u32 %r9, %r6, %r8;
  ld.shared.b32 %r10, [%r9];
  cvt.u64.u32 %rd5, %r8;
  add.s64 %rd6, %rd1, %rd5;
  st.global.b32 [%rd6], %r10;
  add.u32 %r7, %r7, 128;
  bra LOOP;
DONE:
  ret;
}
)";

// k(out, map, outMap, c0, c1): the box at (c0, c1) of `map` goes through
// shared memory into `outMap` at (c1, c0) (its transpose's coordinates; the
// bytes are not transposed).
const std::string kStore = R"(.version 8.5
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out, .param .align 64 .b8 map[128], .param .align 64 .b8 outMap[128], .param .u32 c0, .param .u32 c1)
{
  .reg .pred %p<4>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<10>;
  .shared .align 128 .b8 tile[4096];
  .shared .align 8 .b64 bar;
  mov.b64 %rd2, map;
  cvta.param.u64 %rd3, %rd2;
  mov.b64 %rd4, outMap;
  cvta.param.u64 %rd5, %rd4;
  ld.param.u32 %r1, [c0];
  ld.param.u32 %r2, [c1];
  mov.u32 %r5, bar;
  mov.u32 %r6, tile;
  mbarrier.init.shared::cta.b64 [%r5], 1;
  fence.proxy.async.shared::cta;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd6, [%r5], 1024;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r6], [%rd3, {%r1, %r2}], [%r5];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r5], 0;
  @!%p2 bra WAIT;
  cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd5, {%r2, %r1}], [%r6];
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
  ret;
}
)";

class TensorCopyTest : public EmuTest {
protected:
  /// A W x H u32 matrix holding r * 1000 + c, row-major, in a buffer of its own.
  exec::DeviceBuffer matrix(uint32_t width, uint32_t height) {
    std::vector<uint32_t> values(size_t(width) * height);
    for (uint32_t r = 0; r < height; ++r)
      for (uint32_t c = 0; c < width; ++c) values[size_t(r) * width + c] = r * 1000 + c;
    Result<exec::DeviceBuffer> buffer = executor_->allocateBuffer(values.size() * 4);
    EXPECT_TRUE(buffer);
    EXPECT_TRUE(executor_->upload(buffer->handle(), values));
    return std::move(*buffer);
  }

  static TensorMapSpec spec2d(uint32_t width, uint32_t height, uint32_t boxW, uint32_t boxH, TensorMapSwizzle swizzle) {
    TensorMapSpec spec;
    spec.dataType = exec::TensorMapDataType::U32;
    spec.rank = 2;
    spec.globalDim = {width, height, 0, 0, 0};
    spec.globalStrides = {uint64_t(width) * 4, 0, 0, 0};
    spec.boxDim = {boxW, boxH, 0, 0, 0};
    spec.swizzle = swizzle;
    return spec;
  }

  struct Ran {
    Result<void> status;
    std::vector<uint32_t> out;
    std::vector<exec::LaunchFinding> findings;
  };

  /// Runs kLoad (or `ptx`) on one CTA of 128 threads and returns the tile's bytes.
  Ran load(const exec::TensorMapBytes &map, int32_t c0, int32_t c1, uint32_t bytes, const std::string &ptx = kLoad) {
    Ran ran;
    Result<exec::ModuleHandle> module =
        executor_->loadModule(std::vector<uint8_t>(ptx.begin(), ptx.end()), exec::ModuleFormat::Ptx);
    EXPECT_TRUE(module) << (module ? "" : module.error().message);
    Result<exec::KernelInfo> kernel = executor_->getKernel(*module, "k");
    Result<exec::DeviceBuffer> out = executor_->allocateBuffer(bytes);
    EXPECT_TRUE(kernel && out);
    EXPECT_TRUE(executor_->upload(out->handle(), std::vector<uint32_t>(bytes / 4, 0xdeadbeefu)));
    exec::KernelArgs args;
    args.buffer(out->handle()).raw(map.data(), map.size(), 64).scalar(c0).scalar(c1).scalar(bytes);
    exec::LaunchConfig config;
    config.block = {128, 1, 1};
    ran.status = executor_->launch(kernel->handle, config, args.pack());
    ran.findings = executor_->takeFindings();
    ran.out = *executor_->download<uint32_t>(out->handle(), bytes / 4);
    return ran;
  }
};

TEST_F(TensorCopyTest, A2dLoadLaysTheBoxOutSwizzledAndFillsOutOfBoundsWithZero) {
  // 40 x 20, box 32 x 8 at (16, 16): columns 40.. and rows 20.. lie outside.
  exec::DeviceBuffer in = matrix(40, 20);
  for (TensorMapSwizzle swizzle : {TensorMapSwizzle::None, TensorMapSwizzle::B128}) {
    Result<exec::TensorMapBytes> map = executor_->encodeTensorMap(in.handle(), 0, spec2d(40, 20, 32, 8, swizzle));
    ASSERT_TRUE(map) << map.error().message;
    Ran ran = load(*map, 16, 16, 1024);
    ASSERT_TRUE(ran.status) << ran.status.error().message;
    EXPECT_TRUE(ran.findings.empty()) << ran.findings[0].message;
    for (uint32_t r = 0; r < 8; ++r)
      for (uint32_t c = 0; c < 32; ++c) {
        uint32_t row = 16 + r, column = 16 + c;
        uint32_t want = row < 20 && column < 40 ? row * 1000 + column : 0;
        uint32_t chunk = c / 4;
        if (swizzle == TensorMapSwizzle::B128) chunk = kSwizzle128[r][chunk];
        EXPECT_EQ(ran.out[r * 32 + chunk * 4 + c % 4], want) << r << "," << c;
      }
  }
}

TEST_F(TensorCopyTest, SixtyFourAndThirtyTwoByteSwizzles) {
  exec::DeviceBuffer in = matrix(64, 16);
  // Box rows of 64 (16 x 4 bytes) and 32 bytes (8 x 4): two and four rows per 128 bytes.
  for (auto [swizzle, boxW] : {std::pair{TensorMapSwizzle::B64, 16u}, std::pair{TensorMapSwizzle::B32, 8u}}) {
    Result<exec::TensorMapBytes> map = executor_->encodeTensorMap(in.handle(), 0, spec2d(64, 16, boxW, 16, swizzle));
    ASSERT_TRUE(map) << map.error().message;
    const uint32_t bytes = boxW * 16 * 4;
    Ran ran = load(*map, 8, 0, bytes);
    ASSERT_TRUE(ran.status) << ran.status.error().message;
    for (uint32_t r = 0; r < 16; ++r)
      for (uint32_t c = 0; c < boxW; ++c) {
        uint32_t offset = (r * boxW + c) * 4, row128 = offset / 128, inRow = offset % 128;
        uint32_t chunk = inRow / 16, place;
        if (swizzle == TensorMapSwizzle::B64) place = (chunk / 4) * 4 + kSwizzle64[row128 % 4][chunk % 4];
        else place = (chunk / 2) * 2 + kSwizzle32[row128 % 2][chunk % 2];
        EXPECT_EQ(ran.out[(row128 * 128 + place * 16 + inRow % 16) / 4], r * 1000 + 8 + c) << r << "," << c;
      }
  }
}

TEST_F(TensorCopyTest, NegativeCoordinatesAndTheNanFill) {
  exec::DeviceBuffer in = matrix(40, 20);
  TensorMapSpec spec = spec2d(40, 20, 32, 8, TensorMapSwizzle::None);
  spec.dataType = exec::TensorMapDataType::F32;
  spec.oobFill = exec::TensorMapOobFill::NanRequestZeroFma;
  Result<exec::TensorMapBytes> map = executor_->encodeTensorMap(in.handle(), 0, spec);
  ASSERT_TRUE(map) << map.error().message;
  Ran ran = load(*map, -4, -2, 1024);
  ASSERT_TRUE(ran.status) << ran.status.error().message;
  for (uint32_t r = 0; r < 8; ++r)
    for (uint32_t c = 0; c < 32; ++c) {
      int row = int(r) - 2, column = int(c) - 4;
      uint32_t want = row >= 0 && column >= 0 ? uint32_t(row * 1000 + column) : 0x7ff77ff7u; // the H200's fill for f32
      EXPECT_EQ(ran.out[r * 32 + c], want) << r << "," << c;
    }
}

TEST_F(TensorCopyTest, ARowNarrowerThanTheSwizzleSpanTakesTheWholeSpan) {
  // 64-byte rows (16 x 4 bytes) under the 128-byte swizzle: one row per 128 bytes, as on the H200.
  exec::DeviceBuffer in = matrix(40, 20);
  Result<exec::TensorMapBytes> map = executor_->encodeTensorMap(in.handle(), 0, spec2d(40, 20, 16, 8, TensorMapSwizzle::B128));
  ASSERT_TRUE(map) << map.error().message;
  Ran ran = load(*map, 4, 2, 512); // the box's bytes; the tile's first 512 hold rows 0-3
  ASSERT_TRUE(ran.status) << ran.status.error().message;
  for (uint32_t r = 0; r < 4; ++r)
    for (uint32_t c = 0; c < 16; ++c)
      EXPECT_EQ(ran.out[r * 32 + kSwizzle128[r][c / 4] * 4 + c % 4], (2 + r) * 1000 + 4 + c) << r << "," << c;
}

TEST_F(TensorCopyTest, AnInnermostCoordinateOffTheSixteenByteGridIsRefused) {
  exec::DeviceBuffer in = matrix(40, 20);
  Result<exec::TensorMapBytes> map = executor_->encodeTensorMap(in.handle(), 0, spec2d(40, 20, 32, 8, TensorMapSwizzle::None));
  ASSERT_TRUE(map);
  Ran ran = load(*map, 2, 0, 1024);
  ASSERT_FALSE(ran.status);
  EXPECT_NE(ran.status.error().message.find("innermost coordinate 2 is 8 bytes into a row, not a multiple of 16"),
            std::string::npos)
      << ran.status.error().message;
}

TEST_F(TensorCopyTest, AStoreWritesOnlyTheBoxInsideTheTensor) {
  exec::DeviceBuffer in = matrix(40, 20);
  Result<exec::DeviceBuffer> out = executor_->allocateBuffer(24 * 36 * 4);
  ASSERT_TRUE(out);
  ASSERT_TRUE(executor_->upload(out->handle(), std::vector<uint32_t>(24 * 36, 0xdeadbeefu)));
  // `out` is 24 wide and 36 high; the 32 x 8 box lands at column 16, row 8.
  Result<exec::TensorMapBytes> inMap = executor_->encodeTensorMap(in.handle(), 0, spec2d(40, 20, 32, 8, TensorMapSwizzle::None));
  Result<exec::TensorMapBytes> outMap =
      executor_->encodeTensorMap(out->handle(), 0, spec2d(24, 36, 32, 8, TensorMapSwizzle::None));
  ASSERT_TRUE(inMap && outMap);
  Result<exec::ModuleHandle> module =
      executor_->loadModule(std::vector<uint8_t>(kStore.begin(), kStore.end()), exec::ModuleFormat::Ptx);
  ASSERT_TRUE(module) << module.error().message;
  Result<exec::KernelInfo> kernel = executor_->getKernel(*module, "k");
  ASSERT_TRUE(kernel);
  exec::KernelArgs args;
  args.buffer(out->handle()).raw(inMap->data(), 128, 64).raw(outMap->data(), 128, 64).scalar<int32_t>(8).scalar<int32_t>(16);
  exec::LaunchConfig config;
  config.block = {1, 1, 1}; // one thread issues everything
  Result<void> ran = executor_->launch(kernel->handle, config, args.pack());
  ASSERT_TRUE(ran) << ran.error().message;
  std::vector<uint32_t> got = *executor_->download<uint32_t>(out->handle(), 24 * 36);
  for (uint32_t r = 0; r < 36; ++r)
    for (uint32_t c = 0; c < 24; ++c) {
      // Box element (j1, j0) = in[16 + j1][8 + j0] (zero from row 20 on)
      // goes to out[8 + j1][16 + j0]; columns 24.. of the box are clipped.
      bool inBox = r >= 8 && r < 16 && c >= 16;
      uint32_t inRow = 16 + (r - 8);
      uint32_t want = !inBox ? 0xdeadbeefu : inRow < 20 ? inRow * 1000 + 8 + (c - 16) : 0;
      ASSERT_EQ(got[r * 24 + c], want) << r << "," << c;
    }
}

TEST_F(TensorCopyTest, ReadingTheTileBeforeTheMbarrierPhaseIsARace) {
  exec::DeviceBuffer in = matrix(40, 20);
  Result<exec::TensorMapBytes> map = executor_->encodeTensorMap(in.handle(), 0, spec2d(40, 20, 32, 8, TensorMapSwizzle::None));
  ASSERT_TRUE(map);
  std::string ptx = kLoad;
  const std::string wait = "WAIT:\n  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r5], 0;\n  @!%p2 bra WAIT;\n";
  ptx.replace(ptx.find(wait), wait.size(), "");
  Ran ran = load(*map, 0, 0, 1024, ptx);
  EXPECT_FALSE(ran.status);
  const exec::LaunchFinding *race = nullptr;
  for (const exec::LaunchFinding &f : ran.findings)
    if (f.check == "racecheck") race = &f;
  ASSERT_NE(race, nullptr);
  EXPECT_EQ(race->line, lineOf(ptx, "ld.shared.b32"));
  EXPECT_NE(race->message.find("bulk copy at line " + std::to_string(lineOf(ptx, "cp.async.bulk.tensor"))),
            std::string::npos)
      << race->message;
}

TEST_F(TensorCopyTest, AnOperandThatIsNoMapOrOfAnotherRankIsAMemcheckFinding) {
  exec::DeviceBuffer in = matrix(40, 20);
  Ran garbage = load(exec::TensorMapBytes{}, 0, 0, 1024);
  ASSERT_FALSE(garbage.status);
  EXPECT_NE(garbage.status.error().message.find("holds no tensor map"), std::string::npos)
      << garbage.status.error().message;
  TensorMapSpec spec = spec2d(40, 20, 32, 8, TensorMapSwizzle::None);
  spec.rank = 3;
  spec.globalDim[2] = 1;
  spec.globalStrides[1] = 40 * 20 * 4;
  spec.boxDim[2] = 1;
  Result<exec::TensorMapBytes> map = executor_->encodeTensorMap(in.handle(), 0, spec);
  ASSERT_TRUE(map) << map.error().message;
  Ran ranked = load(*map, 0, 0, 1024);
  ASSERT_FALSE(ranked.status);
  EXPECT_NE(ranked.status.error().message.find("cp.async.bulk.tensor.2d with a tensor map of rank 3"), std::string::npos)
      << ranked.status.error().message;
}

TEST_F(TensorCopyTest, EncodingChecksTheDriversRulesAndTheBuffer) {
  exec::DeviceBuffer in = matrix(40, 20);
  TensorMapSpec spec = spec2d(40, 20, 32, 8, TensorMapSwizzle::None);
  spec.globalStrides[0] = 100;
  Result<exec::TensorMapBytes> strided = executor_->encodeTensorMap(in.handle(), 0, spec);
  ASSERT_FALSE(strided);
  EXPECT_EQ(exec::execErrorKindOf(strided.error()), ExecErrorKind::InvalidArgument);
  EXPECT_NE(strided.error().message.find("multiple of 16"), std::string::npos) << strided.error().message;
  spec = spec2d(40, 21, 32, 8, TensorMapSwizzle::None); // one row more than the buffer holds
  EXPECT_FALSE(executor_->encodeTensorMap(in.handle(), 0, spec));
  spec = spec2d(40, 20, 64, 8, TensorMapSwizzle::B128); // 256-byte rows in a 128-byte span
  Result<exec::TensorMapBytes> wide = executor_->encodeTensorMap(in.handle(), 0, spec);
  ASSERT_FALSE(wide);
  EXPECT_NE(wide.error().message.find("swizzle span"), std::string::npos) << wide.error().message;
}


// ---------------------------------------------------------------------------
// The same loads and stores on a GPU and in the emulator, byte for byte (the
// GPU half skips where there is none). kDump loads a rank-R box at
// coordinates given as parameters to `tile + offset` (tile 1024-byte aligned)
// and copies the 4096 bytes from `tile` out raw; kStore's clipped store is
// compared on its output buffer.

std::string dumpKernel(unsigned rank) {
  std::string coords, loads;
  for (unsigned i = 0; i < rank; ++i) {
    coords += fmt::format("{}%r{}", i ? ", " : "", 20 + i);
    loads += fmt::format("  ld.param.u32 %r{}, [c{}];\n", 20 + i, i);
  }
  return fmt::format(R"(.version 8.5
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out, .param .align 64 .b8 map[128], .param .u32 offset, .param .u32 bytes,
                  .param .u32 c0, .param .u32 c1, .param .u32 c2)
{{
  .reg .pred %p<4>;
  .reg .b32 %r<30>;
  .reg .b64 %rd<10>;
  .shared .align 1024 .b8 tile[4096];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.b64 %rd2, map;
  cvta.param.u64 %rd3, %rd2;
  ld.param.u32 %r1, [offset];
  ld.param.u32 %r3, [bytes];
{}  mov.u32 %r4, %tid.x;
  mov.u32 %r5, bar;
  mov.u32 %r6, tile;
  add.u32 %r11, %r6, %r1;
  // Fill the tile with 0xa5 first, so that bytes the copy does not write compare too.
  mov.u32 %r7, %r4;
ZERO:
  shl.b32 %r8, %r7, 2;
  setp.ge.u32 %p3, %r8, 4096;
  @%p3 bra ZEROED;
  add.u32 %r9, %r6, %r8;
  st.shared.b32 [%r9], 0xa5a5a5a5;
  add.u32 %r7, %r7, 128;
  bra ZERO;
ZEROED:
  setp.eq.u32 %p1, %r4, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r5], 1;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd4, [%r5], %r3;
  @%p1 cp.async.bulk.tensor.{}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r11], [%rd3, {{{}}}], [%r5];
  // A bounded wait: a wrong byte count must not hang the GPU.
  mov.u32 %r12, 0;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r5], 0;
  @%p2 bra WAITED;
  add.u32 %r12, %r12, 1;
  setp.lt.u32 %p3, %r12, 1000000;
  @%p3 bra WAIT;
WAITED:
  // out[1024]: whether the mbarrier phase completed (the byte count matched).
  selp.u32 %r13, 1, 0, %p2;
  @%p1 st.global.u32 [%rd1+4096], %r13;
  mov.u32 %r7, %r4;
LOOP:
  shl.b32 %r8, %r7, 2;
  setp.ge.u32 %p3, %r8, 4096;
  @%p3 bra DONE;
  add.u32 %r9, %r6, %r8;
  ld.shared.b32 %r10, [%r9];
  cvt.u64.u32 %rd5, %r8;
  add.s64 %rd6, %rd1, %rd5;
  st.global.b32 [%rd6], %r10;
  add.u32 %r7, %r7, 128;
  bra LOOP;
DONE:
  ret;
}}
)",
                     loads, rank, coords);
}

struct DumpCase {
  const char *name;
  TensorMapSpec spec;
  uint32_t offset = 0; ///< of the destination past the 1024-byte-aligned tile
  int32_t coords[3] = {0, 0, 0};
  uint32_t txBytes = 0; ///< the mbarrier's expect_tx; 0: tensorMapBoxBytes
};

/// The tile as 256 characters, one per 16-byte chunk: '.' untouched (0xa5), '#' written.
std::string writtenChunks(const std::vector<uint32_t> &words) {
  std::string out;
  for (size_t chunk = 0; chunk < 256; ++chunk) {
    bool touched = false;
    for (size_t i = 0; i < 4; ++i) touched |= words[chunk * 4 + i] != 0xa5a5a5a5u;
    out += touched ? '#' : '.';
  }
  return out;
}

/// What one executor makes of a case: the 4096 tile bytes, or the error.
Result<std::vector<uint32_t>> dump(exec::Executor &executor, const DumpCase &c, const std::vector<uint32_t> &data) {
  const std::string ptx = dumpKernel(c.spec.rank);
  Result<exec::ModuleHandle> module =
      executor.loadModule(std::vector<uint8_t>(ptx.begin(), ptx.end()), exec::ModuleFormat::Ptx);
  if (!module) return module.error();
  Result<exec::KernelInfo> kernel = executor.getKernel(*module, "k");
  if (!kernel) return kernel.error();
  Result<exec::DeviceBuffer> in = executor.allocateBuffer(data.size() * 4);
  Result<exec::DeviceBuffer> out = executor.allocateBuffer(4096 + 4);
  if (!in) return in.error();
  if (!out) return out.error();
  if (Result<void> ok = executor.upload(in->handle(), data); !ok) return ok.error();
  Result<exec::TensorMapBytes> map = executor.encodeTensorMap(in->handle(), 0, c.spec);
  if (!map) return map.error();
  exec::KernelArgs args;
  args.buffer(out->handle()).raw(map->data(), map->size(), 64).scalar(c.offset);
  args.scalar(c.txBytes ? c.txBytes : static_cast<uint32_t>(exec::tensorMapBoxBytes(c.spec)));
  for (int32_t coordinate : c.coords) args.scalar(coordinate);
  exec::LaunchConfig config;
  config.block = {128, 1, 1};
  if (Result<void> ran = executor.launch(kernel->handle, config, args.pack()); !ran) return ran.error();
  return executor.download<uint32_t>(out->handle(), 1025);
}

TEST(TensorCopyOnAGpu, TheEmulatorsBytesAreTheGpus) {
  Result<std::unique_ptr<exec::Executor>> gpu = exec::createGpuExecutor();
  if (!gpu) GTEST_SKIP() << "needs a GPU: " << gpu.error().message;
  if ((*gpu)->properties().smMajor < 9) GTEST_SKIP() << "needs sm_90 or newer for cp.async.bulk.tensor";
  EmuOptions options;
  options.checks.hostThreads = 2;
  std::unique_ptr<exec::Executor> emu = createEmuExecutor(options);
  // A 48 x 20 x 3 tensor of u32 (rows of 192 bytes), value (z * 100 + r) * 1000 + c.
  std::vector<uint32_t> data(48 * 20 * 3);
  for (uint32_t z = 0; z < 3; ++z)
    for (uint32_t r = 0; r < 20; ++r)
      for (uint32_t c = 0; c < 48; ++c) data[(z * 20 + r) * 48 + c] = (z * 100 + r) * 1000 + c;
  auto spec = [](exec::TensorMapDataType type, uint32_t rank, std::array<uint32_t, 3> box, TensorMapSwizzle swizzle) {
    TensorMapSpec s;
    s.dataType = type;
    s.rank = rank;
    s.globalDim = {48, 20, 3, 0, 0};
    s.globalStrides = {48 * 4, 48 * 20 * 4, 0, 0};
    s.boxDim = {box[0], box[1], box[2], 0, 0};
    s.swizzle = swizzle;
    return s;
  };
  using T = exec::TensorMapDataType;
  std::vector<DumpCase> cases = {
      {"2d none, ragged", spec(T::U32, 2, {32, 8, 1}, TensorMapSwizzle::None), 0, {16, 16, 0}},
      {"2d 128b, ragged", spec(T::U32, 2, {32, 8, 1}, TensorMapSwizzle::B128), 0, {24, 14, 0}},
      {"2d 128b, 128-byte-aligned destination", spec(T::U32, 2, {32, 8, 1}, TensorMapSwizzle::B128), 384, {0, 0, 0}},
      {"2d 128b, 64-byte rows", spec(T::U32, 2, {16, 16, 1}, TensorMapSwizzle::B128), 0, {4, 2, 0}},
      {"2d 64b", spec(T::U32, 2, {16, 16, 1}, TensorMapSwizzle::B64), 0, {8, 9, 0}},
      {"2d 64b, 128-byte-aligned destination", spec(T::U32, 2, {16, 16, 1}, TensorMapSwizzle::B64), 128, {8, 0, 0}},
      {"2d 32b", spec(T::U32, 2, {8, 16, 1}, TensorMapSwizzle::B32), 0, {40, 10, 0}},
      {"2d 32b, 128-byte-aligned destination", spec(T::U32, 2, {8, 16, 1}, TensorMapSwizzle::B32), 640, {0, 0, 0}},
      {"2d negative coordinates", spec(T::U32, 2, {32, 8, 1}, TensorMapSwizzle::None), 0, {-8, -3, 0}},
      {"3d 128b", spec(T::U32, 3, {32, 4, 2}, TensorMapSwizzle::B128), 0, {20, 18, 2}},
      {"2d f16 128b", spec(T::F16, 2, {64, 8, 1}, TensorMapSwizzle::B128), 0, {40, 12, 0}},
  };
  // Rows narrower than the swizzle span.
  cases.push_back({"2d 128b, 32-byte rows", spec(T::U32, 2, {8, 16, 1}, TensorMapSwizzle::B128), 0, {4, 1, 0}});
  cases.push_back({"2d 64b, 32-byte rows", spec(T::U32, 2, {8, 16, 1}, TensorMapSwizzle::B64), 0, {0, 3, 0}});
  cases.push_back({"2d 32b, 16-byte rows", spec(T::U32, 2, {4, 16, 1}, TensorMapSwizzle::B32), 0, {44, 6, 0}});
  DumpCase nan{"2d f32 NaN fill", spec(T::F32, 2, {32, 8, 1}, TensorMapSwizzle::None), 0, {32, 15, 0}};
  nan.spec.oobFill = exec::TensorMapOobFill::NanRequestZeroFma;
  cases.push_back(nan);
  DumpCase strided{"3d element strides 1,2,1", spec(T::U32, 3, {16, 8, 2}, TensorMapSwizzle::None), 0, {4, 5, 1}};
  strided.spec.elementStrides = {1, 2, 1, 1, 1};
  cases.push_back(strided);
  DumpCase f16 = cases[10];
  f16.spec.globalDim[0] = 96; // the same bytes seen as 96 f16 per row
  cases[10] = f16;
  for (const DumpCase &c : cases) {
    Result<std::vector<uint32_t>> want = dump(**gpu, c, data);
    ASSERT_TRUE(want) << c.name << ": " << want.error().message;
    Result<std::vector<uint32_t>> got = dump(*emu, c, data);
    ASSERT_TRUE(got) << c.name << ": " << got.error().message;
    size_t mismatches = 0, first = 0;
    for (size_t i = 0; i < want->size(); ++i)
      if ((*want)[i] != (*got)[i] && mismatches++ == 0) first = i;
    EXPECT_EQ(mismatches, 0u) << c.name << ": " << mismatches << " words differ, the first at byte " << first * 4
                              << ": GPU 0x" << std::hex << (*want)[first] << ", emulator 0x" << (*got)[first];
    std::printf("%-40s %s (GPU phase completed: %u)\n  GPU  %s\n  emu  %s\n", c.name,
                mismatches ? "DIFFERS" : "same bytes", (*want)[1024], writtenChunks(*want).c_str(),
                writtenChunks(*got).c_str());
  }
  // What the GPU counts on the mbarrier for rows narrower than the span:
  // the box's bytes, or the span-padded footprint.
  DumpCase padded{"2d 128b, 64-byte rows, tx = padded", spec(T::U32, 2, {16, 16, 1}, TensorMapSwizzle::B128), 0,
                  {4, 2, 0}, 2048};
  Result<std::vector<uint32_t>> probe = dump(**gpu, padded, data);
  ASSERT_TRUE(probe) << probe.error().message;
  std::printf("%-40s GPU phase completed: %u (the emulator counts %llu bytes)\n", padded.name, (*probe)[1024],
              static_cast<unsigned long long>(exec::tensorMapBoxBytes(padded.spec)));
  EXPECT_EQ((*probe)[1024], 0u) << "the GPU counts the padding on the mbarrier; the emulator does not";
}

// Last, in a process of its own (it kills the GPU context): an innermost
// coordinate that is not 16 bytes into a row.
TEST(TensorCopyOnAGpu, AMisalignedInnermostCoordinateFailsOnBoth) {
  Result<std::unique_ptr<exec::Executor>> gpu = exec::createGpuExecutor();
  if (!gpu) GTEST_SKIP() << "needs a GPU: " << gpu.error().message;
  if ((*gpu)->properties().smMajor < 9) GTEST_SKIP() << "needs sm_90 or newer for cp.async.bulk.tensor";
  std::unique_ptr<exec::Executor> emu = createEmuExecutor();
  std::vector<uint32_t> data(48 * 20 * 3, 7);
  TensorMapSpec s;
  s.dataType = exec::TensorMapDataType::F32;
  s.rank = 2;
  s.globalDim = {48, 20, 0, 0, 0};
  s.globalStrides = {48 * 4, 0, 0, 0};
  s.boxDim = {32, 8, 0, 0, 0};
  DumpCase c{"2d f32 at x = 30", s, 0, {30, 4, 0}};
  Result<std::vector<uint32_t>> got = dump(*emu, c, data);
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find("not a multiple of 16"), std::string::npos) << got.error().message;
  Result<std::vector<uint32_t>> want = dump(**gpu, c, data);
  ASSERT_FALSE(want);
  std::printf("GPU: %s\n", want.error().message.c_str());
  EXPECT_NE(want.error().message.find("CUDA_ERROR_ILLEGAL_INSTRUCTION"), std::string::npos) << want.error().message;
}

TEST(TensorCopyOnAGpu, AClippedStoreWritesWhatTheGpuWrites) {
  Result<std::unique_ptr<exec::Executor>> gpu = exec::createGpuExecutor();
  if (!gpu) GTEST_SKIP() << "needs a GPU: " << gpu.error().message;
  if ((*gpu)->properties().smMajor < 9) GTEST_SKIP() << "needs sm_90 or newer for cp.async.bulk.tensor";
  std::unique_ptr<exec::Executor> emu = createEmuExecutor();
  auto run = [](exec::Executor &executor) -> Result<std::vector<uint32_t>> {
    std::vector<uint32_t> values(40 * 20);
    for (uint32_t i = 0; i < values.size(); ++i) values[i] = i * 7 + 1;
    Result<exec::DeviceBuffer> in = executor.allocateBuffer(values.size() * 4);
    Result<exec::DeviceBuffer> out = executor.allocateBuffer(24 * 36 * 4);
    if (!in || !out) return makeError(ErrorKind::Internal, "allocation");
    (void)executor.upload(in->handle(), values);
    (void)executor.upload(out->handle(), std::vector<uint32_t>(24 * 36, 0xdeadbeefu));
    auto spec = [](uint32_t w, uint32_t h) {
      TensorMapSpec s;
      s.dataType = exec::TensorMapDataType::U32;
      s.rank = 2;
      s.globalDim = {w, h, 0, 0, 0};
      s.globalStrides = {w * 4, 0, 0, 0};
      s.boxDim = {32, 8, 0, 0, 0};
      return s;
    };
    Result<exec::TensorMapBytes> inMap = executor.encodeTensorMap(in->handle(), 0, spec(40, 20));
    Result<exec::TensorMapBytes> outMap = executor.encodeTensorMap(out->handle(), 0, spec(24, 36));
    if (!inMap) return inMap.error();
    if (!outMap) return outMap.error();
    Result<exec::ModuleHandle> module =
        executor.loadModule(std::vector<uint8_t>(kStore.begin(), kStore.end()), exec::ModuleFormat::Ptx);
    if (!module) return module.error();
    Result<exec::KernelInfo> kernel = executor.getKernel(*module, "k");
    if (!kernel) return kernel.error();
    exec::KernelArgs args;
    args.buffer(out->handle()).raw(inMap->data(), 128, 64).raw(outMap->data(), 128, 64);
    args.scalar<int32_t>(8).scalar<int32_t>(16);
    exec::LaunchConfig config;
    config.block = {1, 1, 1};
    if (Result<void> ran = executor.launch(kernel->handle, config, args.pack()); !ran) return ran.error();
    return executor.download<uint32_t>(out->handle(), 24 * 36);
  };
  Result<std::vector<uint32_t>> want = run(**gpu);
  ASSERT_TRUE(want) << want.error().message;
  Result<std::vector<uint32_t>> got = run(*emu);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*want, *got);
}

} // namespace
} // namespace ptxforge::emu
