// wgmma.mma_async in the emulator: the descriptor layouts against the PTX
// ISA's own examples, whole warpgroup MMAs for each input type, major-ness and
// swizzle mode (operands placed in shared memory where the descriptor says),
// and the checks: accumulators read before wgmma.wait_group, operands written
// without fence.proxy.async, warpgroups that cannot meet.
#include "EmuHarness.h"

#include "emu/Arith.h"
#include "emu/Wgmma.h"
#include "exec/GpuExecutor.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace ptxforge::emu {
namespace {

// --- Layouts ----------------------------------------------------------------

WgmmaDescriptor descriptor(uint32_t start, uint32_t lbo, uint32_t sbo, uint32_t mode) {
  uint64_t raw = (start >> 4) | (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32) | (uint64_t(mode) << 62);
  return decodeWgmmaDescriptor(raw);
}

TEST(WgmmaLayout, DescriptorFields) {
  WgmmaDescriptor d = decodeWgmmaDescriptor(0x40000040'00010020ull);
  EXPECT_EQ(d.start, 0x200u);
  EXPECT_EQ(d.leadingBytes, 16u);
  EXPECT_EQ(d.strideBytes, 1024u);
  EXPECT_EQ(d.swizzleBytes, 128u);
  EXPECT_EQ(decodeWgmmaDescriptor(uint64_t(2) << 62).swizzleBytes, 64u);
  EXPECT_EQ(decodeWgmmaDescriptor(uint64_t(3) << 62).swizzleBytes, 32u);
}

// The "exact layouts" of the ISA's examples (Shared Memory Matrix Layout), in
// elements: (mn, k) -> offset, before the swizzle.
TEST(WgmmaLayout, KMajorNoSwizzleTf32) {
  // ((8,2),(4,4)):((4,32),(1,64)), LBO = 64 tf32, SBO = 32 tf32.
  WgmmaDescriptor d = descriptor(0, 64 * 4, 32 * 4, 0);
  for (uint32_t mn = 0; mn < 16; ++mn)
    for (uint32_t k = 0; k < 16; ++k)
      ASSERT_EQ(wgmmaElementAddress(d, false, mn, k, 4), 4 * (4 * (mn % 8) + 32 * (mn / 8) + k % 4 + 64 * (k / 4)));
}

TEST(WgmmaLayout, KMajor32ByteSwizzleTf32) {
  // Swizzle<1,4,3> o ((8,2),(4,2)):((8,64),(1,4)), SBO = 64 tf32 (one instruction's k = 8).
  WgmmaDescriptor d = descriptor(0, 16, 64 * 4, 3);
  for (uint32_t mn = 0; mn < 16; ++mn)
    for (uint32_t k = 0; k < 8; ++k) {
      uint32_t bytes = 4 * (8 * (mn % 8) + 64 * (mn / 8) + k % 4 + 4 * (k / 4));
      ASSERT_EQ(wgmmaElementAddress(d, false, mn, k, 4), bytes ^ (((bytes >> 7) & 1) << 4));
    }
}

TEST(WgmmaLayout, MnMajorLayoutsBf16) {
  // No swizzle: ((8,1,2),(8,2)):((1,8,64),(8,128)), LBO = 128, SBO = 64 bf16.
  WgmmaDescriptor none = descriptor(0, 128 * 2, 64 * 2, 0);
  // 32B: Swizzle<1,4,3> o ((8,2,2),(8,2)):((1,8,128),(16,256)), LBO = 128, SBO = 256.
  WgmmaDescriptor sw32 = descriptor(0, 128 * 2, 256 * 2, 3);
  // 64B: Swizzle<2,4,3> o ((8,4,2),(8,2)):((1,8,256),(32,512)), LBO = 256, SBO = 512.
  WgmmaDescriptor sw64 = descriptor(0, 256 * 2, 512 * 2, 2);
  for (uint32_t mn = 0; mn < 64; ++mn)
    for (uint32_t k = 0; k < 16; ++k) {
      if (mn < 16) ASSERT_EQ(wgmmaElementAddress(none, true, mn, k, 2), 2 * (mn % 8 + 64 * (mn / 8) + 8 * (k % 8) + 128 * (k / 8)));
      if (mn < 32) {
        uint32_t b = 2 * (mn % 8 + 8 * ((mn / 8) % 2) + 128 * (mn / 16) + 16 * (k % 8) + 256 * (k / 8));
        ASSERT_EQ(wgmmaElementAddress(sw32, true, mn, k, 2), b ^ (((b >> 7) & 1) << 4));
      }
      uint32_t b = 2 * (mn % 8 + 8 * ((mn / 8) % 4) + 256 * (mn / 32) + 32 * (k % 8) + 512 * (k / 8));
      ASSERT_EQ(wgmmaElementAddress(sw64, true, mn, k, 2), b ^ (((b >> 7) & 3) << 4));
    }
}

TEST(WgmmaLayout, SwizzleUsesAbsoluteAddressBits) {
  // 128B K-major: row r of an 8-row atom at 1024-byte alignment has its
  // 16-byte chunks permuted by r; a start 32 bytes into the row (the next k
  // step) keeps the atom's pattern.
  WgmmaDescriptor d = descriptor(1024, 16, 1024, 1);
  WgmmaDescriptor next = descriptor(1024 + 32, 16, 1024, 1);
  for (uint32_t r = 0; r < 8; ++r)
    for (uint32_t chunk = 0; chunk < 2; ++chunk) {
      EXPECT_EQ(wgmmaElementAddress(d, false, r, 8 * chunk, 2), 1024 + 128 * r + 16 * (chunk ^ r));
      EXPECT_EQ(wgmmaElementAddress(next, false, r, 8 * chunk, 2), 1024 + 128 * r + 16 * ((chunk + 2) ^ r));
    }
}

TEST(WgmmaLayout, FragmentsFollowTheMmaLayouts) {
  // Accumulator: lane 5 of warp 2 holds rows 32+1 and 32+9, columns 2,3 (+8 per 4 registers).
  EXPECT_EQ(wgmmaAccumulatorCoord(2, 5, 0).row, 33u);
  EXPECT_EQ(wgmmaAccumulatorCoord(2, 5, 0).col, 2u);
  EXPECT_EQ(wgmmaAccumulatorCoord(2, 5, 3).row, 41u);
  EXPECT_EQ(wgmmaAccumulatorCoord(2, 5, 3).col, 3u);
  EXPECT_EQ(wgmmaAccumulatorCoord(2, 5, 4).col, 10u);
  // A, 16-bit: a4 is column 8 + 2t; tf32: a2 is column t + 4; 8-bit: a8 is column 16 + 4t.
  EXPECT_EQ(wgmmaACoord(16, 0, 6, 4).col, 12u);
  EXPECT_EQ(wgmmaACoord(32, 0, 6, 2).col, 6u);
  EXPECT_EQ(wgmmaACoord(32, 0, 6, 1).row, 9u);
  EXPECT_EQ(wgmmaACoord(8, 1, 6, 8).col, 24u);
  EXPECT_EQ(wgmmaACoord(8, 1, 6, 13).row, 16u + 1 + 8);
}

// --- Whole MMAs ---------------------------------------------------------------
//
// With PTXFORGE_WGMMA_ON_GPU=1 the same kernels run on the GPU (sm_90a) and
// must give the same exact results: the operands are placed in shared memory
// by wgmmaElementAddress and read back by the hardware's own layouts.

bool onGpu() {
  const char *value = std::getenv("PTXFORGE_WGMMA_ON_GPU");
  return value && std::string(value) == "1";
}

enum class In { F16, BF16, TF32, E4M3, S8 };

struct Config {
  In type;
  uint32_t n;
  bool aRegisters = false;
  bool aMn = false, bMn = false;  ///< MN-major (imm-trans = 1)
  uint32_t aMode = 0, bMode = 0;  ///< descriptor swizzle field: 0 none, 1 128B, 2 64B, 3 32B
};

unsigned bytesOf(In t) { return t == In::F16 || t == In::BF16 ? 2 : t == In::TF32 ? 4 : 1; }
uint32_t kOf(In t) { return t == In::F16 || t == In::BF16 ? 16 : t == In::TF32 ? 8 : 32; }
const char *nameOf(In t) {
  switch (t) {
  case In::F16: return "f16";
  case In::BF16: return "bf16";
  case In::TF32: return "tf32";
  case In::E4M3: return "e4m3";
  case In::S8: return "s8";
  }
  return "";
}

uint32_t encode(In t, int value) {
  switch (t) {
  case In::F16: return f32ToF16(float(value), Rounding::Rn);
  case In::BF16: return f32ToBf16(float(value), Rounding::Rn);
  case In::TF32: return std::bit_cast<uint32_t>(float(value));
  case In::E4M3: return f32ToE4M3(float(value), true);
  case In::S8: return static_cast<uint8_t>(static_cast<int8_t>(value));
  }
  return 0;
}

/// A canonical layout for a (rows x k) operand: lbo/sbo for the mode.
struct Placement {
  uint32_t lbo = 0, sbo = 0;
};
Placement placement(bool mn, uint32_t mode, unsigned bytes) {
  uint32_t w = mode == 0 ? 0 : mode == 1 ? 8 : mode == 2 ? 4 : 2;
  if (!mn) return w == 0 ? Placement{128, 256} : Placement{16, 8 * w * 16};
  (void)bytes;
  // MN-major: 8 k-rows of 16*w bytes per atom; atoms along MN, then along k.
  return w == 0 ? Placement{1024, 128} : Placement{8 * w * 16, 4096};
}

/// A kernel for one warpgroup: copies `in`'s first 16 KiB into tileA (8 KiB,
/// at shared 0) and tileB (at 8192), runs the wgmma twice (scale-d 0, then 1),
/// and stores every thread's accumulators to out[tid * regs + v].
std::string wgmmaKernel(const Config &c, uint64_t aHigh, uint64_t bHigh, const std::string &tweak = "") {
  bool f16Acc = false;
  bool integer = c.type == In::S8;
  unsigned regs = f16Acc ? c.n / 4 : c.n / 2;
  std::string d = "{";
  for (unsigned v = 0; v < regs; ++v) d += fmt::format("{}%acc{}", v ? ", " : "", v);
  d += "}";
  std::string types = integer ? "s32.s8.s8" : fmt::format("f32.{0}.{0}", nameOf(c.type));
  std::string shape = fmt::format("m64n{}k{}", c.n, kOf(c.type));
  std::string imm;
  if (!integer) {
    imm = ", 1, 1";
    if (c.type == In::F16 || c.type == In::BF16) {
      if (!c.aRegisters) imm += c.aMn ? ", 1" : ", 0";
      imm += c.bMn ? ", 1" : ", 0";
    }
  }
  std::string a = c.aRegisters ? "{%ra0, %ra1, %ra2, %ra3}" : "%rd18";
  std::string body = fmt::format(R"(
  .shared .align 1024 .b8 tileA[8192];
  .shared .align 1024 .b8 tileB[8192];
  .reg .b32 %acc<{0}>;
  .reg .b32 %ra<4>;
  mov.u32 %r10, tileA;
  mov.u32 %r20, %r3;
COPY:
  mul.wide.u32 %rd4, %r20, 4;
  add.s64 %rd5, %rd11, %rd4;
  ld.global.u32 %r21, [%rd5];
  shl.b32 %r22, %r20, 2;
  add.u32 %r23, %r10, %r22;
  st.shared.u32 [%r23], %r21;
  add.u32 %r20, %r20, 128;
  setp.lt.u32 %p1, %r20, 4096;
  @%p1 bra COPY;
  mul.wide.u32 %rd4, %r3, 16;
  add.s64 %rd5, %rd11, %rd4;
  ld.global.v4.u32 {{%ra0, %ra1, %ra2, %ra3}}, [%rd5+16384];
  fence.proxy.async.shared::cta;
  bar.sync 0;
  mov.u32 %r11, tileB;
  cvt.u64.u32 %rd18, %r10;
  shr.u64 %rd18, %rd18, 4;
  or.b64 %rd18, %rd18, {1};
  cvt.u64.u32 %rd19, %r11;
  shr.u64 %rd19, %rd19, 4;
  or.b64 %rd19, %rd19, {2};
  setp.ne.u32 %p2, %r3, %r3;
  setp.eq.u32 %p3, %r3, %r3;
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.{3}.{4} {5}, {6}, %rd19, %p2{7};
  wgmma.mma_async.sync.aligned.{3}.{4} {5}, {6}, %rd19, %p3{7};
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
{8}  mul.wide.u32 %rd4, %r3, {9};
  add.s64 %rd6, %rd10, %rd4;
)",
                                 regs, aHigh, bHigh, shape, types, d, a, imm, tweak, regs * 4);
  for (unsigned v = 0; v < regs; ++v) body += fmt::format("  st.global.u32 [%rd6+{}], %acc{};\n", 4 * v, v);
  body += "  ret;\n";
  std::string ptx = kernel(body);
  ptx.replace(ptx.find(".target sm_90"), 13, ".target sm_90a");
  return ptx;
}

class WgmmaTest : public EmuTest {
protected:
  void SetUp() override {
    if (!onGpu()) return EmuTest::SetUp();
    Result<std::unique_ptr<exec::Executor>> gpu = exec::createGpuExecutor();
    if (!gpu) GTEST_SKIP() << "PTXFORGE_WGMMA_ON_GPU=1 but no GPU: " << gpu.error().message;
    executor_ = std::move(gpu).value();
  }

  struct Prepared {
    std::string ptx;
    std::vector<uint32_t> input;
    std::vector<double> expected; ///< out[tid * regs + v]
  };

  Prepared prepare(const Config &c, const std::string &tweak = "") {
    unsigned bytes = bytesOf(c.type);
    uint32_t k = kOf(c.type);
    Placement pa = placement(c.aMn, c.aMode, bytes), pb = placement(c.bMn, c.bMode, bytes);
    uint64_t aHigh = (uint64_t(pa.lbo >> 4) << 16) | (uint64_t(pa.sbo >> 4) << 32) | (uint64_t(c.aMode) << 62);
    uint64_t bHigh = (uint64_t(pb.lbo >> 4) << 16) | (uint64_t(pb.sbo >> 4) << 32) | (uint64_t(c.bMode) << 62);
    WgmmaDescriptor da = decodeWgmmaDescriptor(aHigh), db = decodeWgmmaDescriptor(bHigh | (8192 >> 4));
    std::vector<int> a(64 * k), b(c.n * k);
    for (size_t i = 0; i < a.size(); ++i) a[i] = int((i * 7 + 3) % 9) - 4;
    for (size_t i = 0; i < b.size(); ++i) b[i] = int((i * 5 + 1) % 7) - 3;
    std::vector<uint8_t> image(16384 + 128 * 16, 0);
    auto put = [&](uint32_t address, uint32_t value) { std::memcpy(&image[address], &value, bytes); };
    for (uint32_t m = 0; m < 64; ++m)
      for (uint32_t kk = 0; kk < k; ++kk) put(wgmmaElementAddress(da, c.aMn, m, kk, bytes), encode(c.type, a[m * k + kk]));
    for (uint32_t n = 0; n < c.n; ++n)
      for (uint32_t kk = 0; kk < k; ++kk) put(wgmmaElementAddress(db, c.bMn, n, kk, bytes), encode(c.type, b[n * k + kk]));
    if (c.aRegisters)
      for (unsigned t = 0; t < 128; ++t)
        for (unsigned i = 0; i < 4; ++i) {
          WgmmaCoord co = wgmmaACoord(bytes * 8, t / 32, t % 32, i);
          uint32_t word = encode(c.type, a[co.row * k + co.col]);
          std::memcpy(&image[16384 + t * 16 + i * 4], &word, 4);
        }
    Prepared p;
    p.ptx = wgmmaKernel(c, aHigh, bHigh, tweak);
    p.input.resize(image.size() / 4);
    std::memcpy(p.input.data(), image.data(), image.size());
    unsigned regs = c.n / 2;
    p.expected.resize(128 * regs);
    for (unsigned t = 0; t < 128; ++t)
      for (unsigned v = 0; v < regs; ++v) {
        // Rows 16*warp + lane/4 (+8), columns 2*(lane%4) (+1) + 8*(v/4): the ISA's accumulator fragment.
        unsigned warp = t / 32, lane = t % 32;
        unsigned row = 16 * warp + lane / 4 + 8 * ((v >> 1) & 1), col = 2 * (lane % 4) + (v & 1) + 8 * (v >> 2);
        double sum = 0;
        for (uint32_t kk = 0; kk < k; ++kk) sum += double(a[row * k + kk]) * b[col * k + kk];
        p.expected[t * regs + v] = 2 * sum; // scale-d 0, then scale-d 1
      }
    return p;
  }

  void check(const Config &c) {
    Prepared p = prepare(c);
    Outcome o = run(p.ptx, 1, 128, static_cast<uint32_t>(p.expected.size()), p.input);
    ASSERT_TRUE(o.status) << o.status.error().message << " (line " << o.status.error().line << ")\n" << p.ptx;
    ASSERT_TRUE(o.findings.empty()) << o.findings[0].message;
    for (size_t i = 0; i < p.expected.size(); ++i) {
      double got = c.type == In::S8 ? double(int32_t(o.out[i])) : double(std::bit_cast<float>(o.out[i]));
      ASSERT_EQ(got, p.expected[i]) << "element " << i;
    }
  }
};

TEST_F(WgmmaTest, F16KMajorWithoutSwizzle) { check({In::F16, 16}); }
TEST_F(WgmmaTest, Bf16KMajor128ByteSwizzle) { check({In::BF16, 32, false, false, false, 1, 1}); }
TEST_F(WgmmaTest, F16MnMajor64And32ByteSwizzle) { check({In::F16, 16, false, true, true, 2, 3}); }
TEST_F(WgmmaTest, F16MnMajorWithoutSwizzle) { check({In::F16, 8, false, true, true, 0, 0}); }
TEST_F(WgmmaTest, Tf32WithAInRegisters) { check({In::TF32, 24, true, false, false, 0, 1}); }
TEST_F(WgmmaTest, E4m3KMajor64ByteSwizzle) { check({In::E4M3, 16, false, false, false, 2, 2}); }
TEST_F(WgmmaTest, S8IntoS32) { check({In::S8, 32, false, false, false, 3, 0}); }

TEST_F(WgmmaTest, ReadingAnAccumulatorBeforeWaitGroupIsARace) {
  if (onGpu()) GTEST_SKIP() << "an emulator check";
  Prepared p = prepare({In::F16, 16}, "");
  size_t wait = p.ptx.find("  wgmma.wait_group.sync.aligned 0;\n");
  p.ptx.replace(wait, std::string("  wgmma.wait_group.sync.aligned 0;\n").size(), "  add.f32 %f1, %acc3, %acc3;\n");
  Outcome o = run(p.ptx, 1, 128, static_cast<uint32_t>(p.expected.size()), p.input);
  const exec::LaunchFinding *race = find(o, "racecheck");
  ASSERT_NE(race, nullptr);
  EXPECT_EQ(race->line, lineOf(p.ptx, "add.f32 %f1, %acc3"));
  EXPECT_NE(race->message.find("before a wgmma.wait_group"), std::string::npos) << race->message;
}

// Two groups into one accumulator: `wait_group 1` retires the first, not the
// second, so the accumulator is still pending (it was taken as written).
TEST_F(WgmmaTest, WaitGroupOneLeavesTheYoungerGroupsAccumulatorsPending) {
  if (onGpu()) GTEST_SKIP() << "an emulator check";
  Prepared p = prepare({In::F16, 16}, "");
  const size_t first = p.ptx.find("  wgmma.mma_async");
  p.ptx.insert(p.ptx.find('\n', first) + 1, "  wgmma.commit_group.sync.aligned;\n");
  const std::string wait = "  wgmma.wait_group.sync.aligned 0;\n";
  p.ptx.replace(p.ptx.find(wait), wait.size(), "  wgmma.wait_group.sync.aligned 1;\n  add.f32 %f1, %acc3, %acc3;\n");
  Outcome o = run(p.ptx, 1, 128, static_cast<uint32_t>(p.expected.size()), p.input);
  const exec::LaunchFinding *race = find(o, "racecheck");
  ASSERT_NE(race, nullptr) << p.ptx;
  EXPECT_EQ(race->line, lineOf(p.ptx, "add.f32 %f1, %acc3"));
  EXPECT_NE(race->message.find("before a wgmma.wait_group"), std::string::npos) << race->message;
}

TEST_F(WgmmaTest, OperandsWrittenWithoutAProxyFenceAreARace) {
  if (onGpu()) GTEST_SKIP() << "an emulator check";
  Prepared p = prepare({In::F16, 16});
  p.ptx.replace(p.ptx.find("  fence.proxy.async.shared::cta;\n"), std::string("  fence.proxy.async.shared::cta;\n").size(), "");
  Outcome o = run(p.ptx, 1, 128, static_cast<uint32_t>(p.expected.size()), p.input);
  const exec::LaunchFinding *race = find(o, "racecheck");
  ASSERT_NE(race, nullptr);
  EXPECT_EQ(race->line, lineOf(p.ptx, "wgmma.mma_async"));
  EXPECT_NE(race->message.find("missing fence.proxy.async"), std::string::npos) << race->message;
}

// The hardware reads the operands while the wgmma is in flight: a store into
// them before a wgmma.wait_group retires it changes what is multiplied; after
// the wait it is safe.
TEST_F(WgmmaTest, OverwritingOperandsBeforeWaitGroupIsARace) {
  if (onGpu()) GTEST_SKIP() << "an emulator check";
  const std::string wait = "  wgmma.wait_group.sync.aligned 0;\n";
  const std::string store = "  setp.eq.u32 %p7, %r3, 0;\n  @%p7 st.shared.u32 [%r11+64], %r3;\n";
  Prepared p = prepare({In::F16, 16});
  p.ptx.replace(p.ptx.find(wait), wait.size(), store + wait);
  Outcome o = run(p.ptx, 1, 128, static_cast<uint32_t>(p.expected.size()), p.input);
  const exec::LaunchFinding *race = find(o, "racecheck");
  ASSERT_NE(race, nullptr) << p.ptx;
  EXPECT_EQ(race->line, lineOf(p.ptx, "@%p7 st.shared.u32"));
  EXPECT_NE(race->message.find("no wgmma.wait_group has retired it yet"), std::string::npos) << race->message;

  Prepared after = prepare({In::F16, 16});
  after.ptx.replace(after.ptx.find(wait), wait.size(), wait + store);
  o = run(after.ptx, 1, 128, static_cast<uint32_t>(after.expected.size()), after.input);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_TRUE(o.findings.empty()) << o.findings[0].message;
}

TEST_F(WgmmaTest, AWarpgroupNeedsAllFourWarps) {
  if (onGpu()) GTEST_SKIP() << "an emulator check";
  Prepared p = prepare({In::F16, 16});
  Outcome o = run(p.ptx, 1, 96, 96 * 8, p.input);
  const exec::LaunchFinding *sync = find(o, "synccheck");
  ASSERT_NE(sync, nullptr);
  EXPECT_NE(sync->message.find("all 128 threads"), std::string::npos) << sync->message;
}

} // namespace
} // namespace ptxforge::emu
