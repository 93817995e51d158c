// What the emulator must not give a kernel that a GPU would not: exact
// .approx results (ArithTest), module initializers it cannot read, special
// registers that give it away, zeroed shared and local memory, and an order
// between CTAs. Each test is a small kernel with the behaviour the GPU has.
#include "EmuHarness.h"

#include <set>

namespace ptxforge::emu {
namespace {

// ---------------------------------------------------------------------------
// Module-scope initializers

TEST_F(EmuTest, ModuleInitializersWithNegativeNumbersAndExpressions) {
  std::string ptx = kernel(R"(
  and.b32 %r6, %r3, 7;
  shl.b32 %r6, %r6, 2;
  mov.u64 %rd5, tab;
  cvt.u64.u32 %rd6, %r6;
  add.s64 %rd5, %rd5, %rd6;
  ld.const.s32 %r7, [%rd5];
  setp.lt.u32 %p1, %r3, 2;
  @!%p1 bra STORE;
  mov.u64 %rd7, weights;
  add.s64 %rd7, %rd7, %rd6;
  ld.global.f32 %f1, [%rd7];
  cvt.rzi.s32.f32 %r7, %f1;
STORE:
  st.global.u32 [%rd1], %r7;
  ret;)",
                           ".const .align 4 .s32 tab[] = {-1, 0x10, 1 << 3, (7 - 3) >> 2, -0b11, 017, !0 | 4, -(2 + 3)};\n"
                           ".global .align 4 .f32 weights[2] = {0fC1200000, 2.5e1};");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_TRUE(o.status) << o.status.error().message;
  const int32_t tab[] = {-1, 16, 8, 1, -3, 15, 5, -5};
  EXPECT_EQ(int32_t(o.out[0]), -10);
  EXPECT_EQ(int32_t(o.out[1]), 25);
  for (uint32_t t = 2; t < 32; ++t) EXPECT_EQ(int32_t(o.out[t]), tab[t % 8]) << t;
}

TEST_F(EmuTest, AnInitializerItCannotReadIsRefusedAtItsLine) {
  std::string ptx = kernel("  ret;", ".global .align 8 .u64 where = tab;\n.global .u32 tab[1];");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_FALSE(o.status);
  EXPECT_NE(o.status.error().message.find("address of a symbol"), std::string::npos) << o.status.error().message;
  EXPECT_EQ(o.status.error().line, lineOf(ptx, "where = tab")) << render(o.status.error());
}

// ---------------------------------------------------------------------------
// Special registers look like an H200's

/// Runs a kernel that stores `reg` (a 32-bit special register) per thread.
std::string storeSpecial(const char *reg) {
  return kernel(fmt::format(R"(
  mov.u32 %r6, {};
  st.global.u32 [%rd1], %r6;
  ret;)",
                            reg));
}

TEST_F(EmuTest, SpecialRegistersArePlausibleForAnH200) {
  const uint32_t ctas = 200, block = 128, n = ctas * block;
  Outcome nsmid = run(storeSpecial("%nsmid"), ctas, block, n);
  Outcome smid = run(storeSpecial("%smid"), ctas, block, n);
  Outcome warpid = run(storeSpecial("%warpid"), ctas, block, n);
  Outcome nwarpid = run(storeSpecial("%nwarpid"), ctas, block, n);
  Outcome laneid = run(storeSpecial("%laneid"), ctas, block, n);
  for (const Outcome *o : {&nsmid, &smid, &warpid, &nwarpid, &laneid}) ASSERT_TRUE(o->status);
  std::set<uint32_t> firstSms;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t cta = i / block, tid = i % block;
    EXPECT_EQ(nsmid.out[i], 132u);
    ASSERT_LT(smid.out[i], 132u);
    EXPECT_EQ(smid.out[i], smid.out[cta * block]) << "one SM per CTA";
    if (cta < 132) firstSms.insert(smid.out[i]);
    EXPECT_EQ(nwarpid.out[i], 64u);
    ASSERT_LT(warpid.out[i], 64u);
    EXPECT_EQ(warpid.out[i], warpid.out[cta * block + (tid / 32) * 32]) << "one warp id per warp";
    EXPECT_EQ(laneid.out[i], tid % 32);
  }
  EXPECT_EQ(firstSms.size(), 132u) << "the first 132 CTAs spread over every SM";

  // %gridid: a 64-bit launch identifier that changes from launch to launch.
  std::string ptx = kernel(R"(
  mov.u64 %rd5, %gridid;
  cvt.u32.u64 %r6, %rd5;
  st.global.u32 [%rd1], %r6;
  ret;)");
  Outcome first = run(ptx, 1, 32, 32), second = run(ptx, 1, 32, 32);
  ASSERT_TRUE(first.status && second.status);
  EXPECT_NE(first.out[0], 0u);
  EXPECT_NE(first.out[0], second.out[0]);
}

// ---------------------------------------------------------------------------
// Uninitialized shared and local memory hold garbage

TEST_F(EmuTest, UninitializedSharedMemoryIsGarbageThatChangesPerLaunch) {
  std::string ptx = kernel(R"(
  mov.u32 %r6, buf;
  shl.b32 %r7, %r3, 2;
  add.u32 %r6, %r6, %r7;
  ld.shared.u32 %r8, [%r6];
  st.global.u32 [%rd1], %r8;
  ret;)",
                           ".shared .align 4 .b8 buf[512];");
  Outcome first = run(ptx, 2, 128, 256), second = run(ptx, 2, 128, 256);
  ASSERT_TRUE(first.status && second.status);
  size_t zeros = 0, same = 0;
  for (uint32_t i = 0; i < 256; ++i) {
    zeros += first.out[i] == 0;
    same += first.out[i] == second.out[i];
  }
  EXPECT_LT(zeros, 4u) << "shared memory is not zeroed";
  EXPECT_LT(same, 4u) << "the garbage differs from launch to launch";
  // initcheck points at the read.
  const exec::LaunchFinding *init = find(first, "initcheck");
  ASSERT_NE(init, nullptr);
  EXPECT_FALSE(init->fatal);
  EXPECT_EQ(init->line, lineOf(ptx, "ld.shared.u32 %r8"));
  EXPECT_NE(init->message.find("no thread of this CTA has written"), std::string::npos) << init->message;
}

TEST_F(EmuTest, SharedMemoryWrittenBeforeItIsReadIsNotReported) {
  std::string ptx = kernel(R"(
  mov.u32 %r6, buf;
  shl.b32 %r7, %r3, 2;
  add.u32 %r6, %r6, %r7;
  st.shared.u32 [%r6], %r1;
  atom.shared.add.u32 %r9, [%r6], 1;
  bar.sync 0;
  ld.shared.u32 %r8, [%r6];
  st.global.u32 [%rd1], %r8;
  ret;)",
                           ".shared .align 4 .b8 buf[512];");
  Outcome o = run(ptx, 2, 128, 256);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_EQ(find(o, "initcheck"), nullptr) << find(o, "initcheck")->message;
  for (uint32_t i = 0; i < 256; ++i) EXPECT_EQ(o.out[i], i + 1);
}

TEST_F(EmuTest, AnAtomicOnUnclearedSharedMemoryIsReported) {
  // A shared histogram whose bins nobody cleared.
  std::string ptx = kernel(R"(
  mov.u32 %r6, bins;
  and.b32 %r7, %r3, 7;
  shl.b32 %r7, %r7, 2;
  add.u32 %r6, %r6, %r7;
  atom.shared.add.u32 %r8, [%r6], 1;
  ret;)",
                           ".shared .align 4 .b8 bins[32];");
  Outcome o = run(ptx, 1, 64, 64);
  ASSERT_TRUE(o.status) << o.status.error().message;
  const exec::LaunchFinding *init = find(o, "initcheck");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->line, lineOf(ptx, "atom.shared.add.u32"));
}

TEST_F(EmuTest, UninitializedLocalMemoryIsGarbage) {
  std::string ptx = kernel(R"(
  mov.u64 %rd5, scratch;
  ld.local.u32 %r6, [%rd5+8];
  st.global.u32 [%rd1], %r6;
  ret;)",
                           "");
  // .local variables live in the kernel; put one there.
  ptx.replace(ptx.find("  .reg .pred"), 0, "  .local .align 4 .b8 scratch[16];\n");
  Outcome o = run(ptx, 1, 64, 64);
  ASSERT_TRUE(o.status) << o.status.error().message;
  size_t zeros = 0;
  for (uint32_t v : o.out) zeros += v == 0;
  EXPECT_LT(zeros, 4u);
}

// ---------------------------------------------------------------------------
// Cross-CTA racecheck: CTAs are unordered on a GPU

/// The "last block" reduction: every CTA's thread 0 writes its partial to
/// out[ctaid], then `publish` (a fence, or nothing), then counts itself in
/// in[0] with `atomic`; the CTA that sees the final count sums the partials
/// into out[15].
std::string lastBlock(const std::string &publish, const std::string &atomic = "atom.global.add.u32") {
  return kernel(fmt::format(R"(
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra DONE;
  mul.wide.u32 %rd5, %r5, 4;
  add.s64 %rd6, %rd10, %rd5;
  add.u32 %r6, %r5, 1;
  st.global.u32 [%rd6], %r6;
  {}
  mov.u32 %r7, %nctaid.x;
  {} %r8, [%rd11], 1;
  add.u32 %r9, %r8, 1;
  setp.ne.u32 %p2, %r9, %r7;
  @%p2 bra DONE;
  mov.u32 %r10, 0;
  mov.u32 %r11, 0;
LOOP:
  mul.wide.u32 %rd7, %r11, 4;
  add.s64 %rd8, %rd10, %rd7;
  ld.global.u32 %r12, [%rd8];
  add.u32 %r10, %r10, %r12;
  add.u32 %r11, %r11, 1;
  setp.lt.u32 %p3, %r11, %r7;
  @%p3 bra LOOP;
  st.global.u32 [%rd10+60], %r10;
DONE:
  ret;)",
                            publish, atomic));
}

TEST_F(EmuTest, LastBlockReductionWithAFenceIsNotARace) {
  for (const char *fence : {"membar.gl;", "fence.sc.gpu;", "fence.acq_rel.gpu;"}) {
    for (int repeat = 0; repeat < 5; ++repeat) {
      Outcome o = run(lastBlock(fence), 12, 64, 16, std::vector<uint32_t>(4, 0));
      ASSERT_TRUE(o.status) << fence << ": " << o.status.error().message;
      EXPECT_EQ(o.out[15], 12u * 13 / 2) << fence;
    }
  }
  // A release atomic carries its own fence.
  Outcome o = run(lastBlock("", "atom.release.gpu.global.add.u32"), 12, 64, 16, std::vector<uint32_t>(4, 0));
  ASSERT_TRUE(o.status) << o.status.error().message;
}

TEST_F(EmuTest, LastBlockReductionWithoutTheFenceIsARace) {
  for (const char *notAFence : {"", "membar.cta;", "fence.acq_rel.cta;"}) {
    std::string ptx = lastBlock(notAFence);
    Outcome o = run(ptx, 12, 64, 16, std::vector<uint32_t>(4, 0));
    ASSERT_FALSE(o.status) << "'" << notAFence << "' does not order the partials for other CTAs";
    const exec::LaunchFinding *race = find(o, "racecheck");
    ASSERT_NE(race, nullptr) << o.status.error().message;
    EXPECT_TRUE(race->fatal);
    EXPECT_EQ(race->line, lineOf(ptx, "ld.global.u32 %r12"));
    EXPECT_NE(race->message.find("cross-CTA read-after-write"), std::string::npos) << race->message;
    EXPECT_NE(race->message.find(fmt::format("at line {}", lineOf(ptx, "st.global.u32 [%rd6]"))), std::string::npos)
        << race->message;
    EXPECT_NE(race->message.find("has not published it"), std::string::npos) << race->message;
  }
}

/// A decoupled look-back handoff: CTA i waits for CTA i-1's flag (in[i-1]),
/// reads its value out[i-1], writes out[i] = that + 1, then `publish` and
/// sets its own flag with `setFlag`; CTA 0 starts the chain.
std::string handoff(const std::string &publish, const std::string &setFlag, const std::string &readFlag) {
  return kernel(fmt::format(R"(
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra DONE;
  mov.u32 %r6, 1;
  setp.eq.u32 %p2, %r5, 0;
  @%p2 bra WRITE;
  sub.u32 %r7, %r5, 1;
  mul.wide.u32 %rd5, %r7, 4;
  add.s64 %rd6, %rd11, %rd5;
SPIN:
  {} %r8, [%rd6];
  setp.eq.u32 %p3, %r8, 0;
  @%p3 bra SPIN;
  add.s64 %rd7, %rd10, %rd5;
  ld.global.u32 %r9, [%rd7];
  add.u32 %r6, %r9, 1;
WRITE:
  mul.wide.u32 %rd8, %r5, 4;
  add.s64 %rd9, %rd10, %rd8;
  st.global.u32 [%rd9], %r6;
  {}
  add.s64 %rd12, %rd11, %rd8;
  {} [%rd12], 1;
DONE:
  ret;)",
                            readFlag, publish, setFlag));
}

TEST_F(EmuTest, LookBackHandoffsThroughAFlagAreNotARace) {
  struct Form {
    const char *publish, *setFlag, *readFlag;
  };
  const Form forms[] = {
      {"membar.gl;", "st.volatile.global.u32", "ld.volatile.global.u32"},
      {"fence.acq_rel.gpu;", "st.relaxed.gpu.global.u32", "ld.relaxed.gpu.global.u32"},
      {"", "st.release.gpu.global.u32", "ld.acquire.gpu.global.u32"},
      {"membar.gl;", "atom.global.exch.b32 %r20,", "atom.global.or.b32 %r8, [%rd6], 0; //"},
  };
  for (const Form &form : forms) {
    Outcome o = run(handoff(form.publish, form.setFlag, form.readFlag), 8, 32, 8, std::vector<uint32_t>(8, 0));
    ASSERT_TRUE(o.status) << form.setFlag << ": " << o.status.error().message;
    for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(o.out[i], i + 1) << form.setFlag;
  }
}

TEST_F(EmuTest, AFlagHandoffWithoutAFenceIsARace) {
  std::string ptx = handoff("", "st.volatile.global.u32", "ld.volatile.global.u32");
  Outcome o = run(ptx, 8, 32, 8, std::vector<uint32_t>(8, 0));
  ASSERT_FALSE(o.status);
  const exec::LaunchFinding *race = find(o, "racecheck");
  ASSERT_NE(race, nullptr) << o.status.error().message;
  EXPECT_EQ(race->line, lineOf(ptx, "ld.global.u32 %r9"));
}

TEST_F(EmuTest, AtomicsOnlyAcrossCtasAreNotARace) {
  // Every CTA adds into the same 8 global bins; nobody reads them plainly.
  std::string ptx = kernel(R"(
  and.b32 %r6, %r1, 7;
  mul.wide.u32 %rd5, %r6, 4;
  add.s64 %rd5, %rd10, %rd5;
  atom.global.add.u32 %r7, [%rd5], 1;
  red.global.add.u32 [%rd5], 1;
  ret;)");
  Outcome o = run(ptx, 16, 64, 8);
  ASSERT_TRUE(o.status) << o.status.error().message;
  for (uint32_t v : o.out) EXPECT_EQ(v, 0xdeadbeefu + 2 * 16 * 64 / 8);
}

TEST_F(EmuTest, ReadingANeighbourCtasOutputWithoutSyncIsARace) {
  // One host thread, so the neighbour (the previous CTA) has always written
  // by the time it is read; on a GPU it may not have.
  EmuOptions options;
  options.checks.hostThreads = 1;
  executor_ = createEmuExecutor(options);
  std::string ptx = kernel(R"(
  st.global.u32 [%rd1], %r1;
  setp.eq.u32 %p1, %r5, 0;
  @%p1 bra DONE;
  ld.global.u32 %r6, [%rd1+-128];
DONE:
  ret;)");
  Outcome o = run(ptx, 4, 32, 128);
  ASSERT_FALSE(o.status);
  const exec::LaunchFinding *race = find(o, "racecheck");
  ASSERT_NE(race, nullptr) << o.status.error().message;
  EXPECT_EQ(race->line, lineOf(ptx, "ld.global.u32 %r6"));
  EXPECT_NE(race->message.find("block (0,0,0) wrote"), std::string::npos) << race->message;
  EXPECT_NE(race->message.find("of block (1,0,0)"), std::string::npos) << race->message;
}

TEST_F(EmuTest, ReadingItsOwnOutputOrTheInputsIsNotARace) {
  std::string ptx = kernel(R"(
  ld.global.u32 %r6, [%rd2];
  st.global.u32 [%rd1], %r6;
  ld.global.u32 %r7, [%rd1];
  add.u32 %r7, %r7, 1;
  st.global.u32 [%rd1], %r7;
  ret;)");
  Outcome o = run(ptx, 8, 64, 512);
  ASSERT_TRUE(o.status) << o.status.error().message;
  for (uint32_t i = 0; i < 512; ++i) EXPECT_EQ(o.out[i], i + 1);
}

} // namespace
} // namespace ptxforge::emu
