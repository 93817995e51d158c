// The emulator end to end through the Executor interface: control flow and
// reconvergence, memory spaces, warp collectives, calls, atomics, and each
// sanitizer finding a planted bug at the right line.
#include "emu/EmuExecutor.h"
#include "EmuHarness.h"

#include <gtest/gtest.h>

#include <bit>

#include <fmt/format.h>

#include <numeric>
#include <set>
#include <string>

namespace ptxforge::emu {
namespace {

TEST_F(EmuTest, ReportsItselfAsAnEmulatorThatRunsPtx) {
  EXPECT_EQ(executor_->properties().backend, "emu");
  EXPECT_EQ(executor_->properties().arch(), "sm_90");
  EXPECT_EQ(executor_->moduleFormat(), exec::ModuleFormat::Ptx);
  EXPECT_EQ(executor_->properties().warpSize, 32);
}

TEST_F(EmuTest, EarlyExitGuardsTheRaggedTail) {
  std::string ptx = kernel(R"(
  setp.ge.u32 %p1, %r1, %r2;
  @%p1 bra DONE;
  ld.global.u32 %r6, [%rd2];
  mul.lo.u32 %r6, %r6, 3;
  st.global.u32 [%rd1], %r6;
DONE:
  ret;)");
  Outcome o = run(ptx, 4, 64, 200);
  ASSERT_TRUE(o.status) << o.status.error().message;
  for (uint32_t i = 0; i < 200; ++i) EXPECT_EQ(o.out[i], 3 * i) << i;
}

// Labels are scoped to their `{ }` block, as ptxas scopes them: nvcc emits
// the same label in sibling blocks (inline-asm wait loops), and a label inside
// a block shadows one of the same name outside it.
TEST_F(EmuTest, TheSameLabelInSiblingBlocksIsTwoLabels) {
  std::string ptx = kernel(R"(
  mov.u32 %r6, 0;
  {
    mov.u32 %r7, 0;
  LOOP:
    add.u32 %r6, %r6, 1;
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p1, %r7, 3;
    @%p1 bra LOOP;
  }
  {
    mov.u32 %r7, 0;
  LOOP:
    add.u32 %r6, %r6, 10;
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p1, %r7, 2;
    @%p1 bra LOOP;
  }
  bra.uni END;
  {
  END:
    mov.u32 %r6, 999;
  }
END:
  st.global.u32 [%rd1], %r6;
  ret;)");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_TRUE(o.status) << o.status.error().message;
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(o.out[l], 3u + 20u) << l; // the outer END, never the inner one
}

TEST_F(EmuTest, DivergentBranchesReconvergeBeforeAWarpShuffle) {
  // Odd lanes take one path, even lanes the other; after the join a full-warp
  // butterfly sum must see all 32 lanes.
  std::string ptx = kernel(R"(
  and.b32 %r6, %r3, 1;
  setp.eq.u32 %p1, %r6, 0;
  @%p1 bra EVEN;
  mul.lo.u32 %r7, %r3, 3;
  bra.uni JOIN;
EVEN:
  add.u32 %r7, %r3, 100;
JOIN:
  mov.u32 %r8, %r7;
  shfl.sync.bfly.b32 %r9, %r8, 16, 31, -1;
  add.u32 %r8, %r8, %r9;
  shfl.sync.bfly.b32 %r9, %r8, 8, 31, -1;
  add.u32 %r8, %r8, %r9;
  shfl.sync.bfly.b32 %r9, %r8, 4, 31, -1;
  add.u32 %r8, %r8, %r9;
  shfl.sync.bfly.b32 %r9, %r8, 2, 31, -1;
  add.u32 %r8, %r8, %r9;
  shfl.sync.bfly.b32 %r9, %r8, 1, 31, -1;
  add.u32 %r8, %r8, %r9;
  st.global.u32 [%rd1], %r8;
  ret;)");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_TRUE(o.status) << o.status.error().message;
  uint32_t sum = 0;
  for (uint32_t l = 0; l < 32; ++l) sum += (l & 1) ? 3 * l : l + 100;
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(o.out[l], sum) << l;
}

TEST_F(EmuTest, LoopsWithDivergentTripCounts) {
  // out[i] = 0 + 1 + ... + (i % 37)
  std::string ptx = kernel(R"(
  rem.u32 %r6, %r1, 37;
  mov.u32 %r7, 0;
  mov.u32 %r8, 0;
LOOP:
  setp.gt.u32 %p1, %r8, %r6;
  @%p1 bra END;
  add.u32 %r7, %r7, %r8;
  add.u32 %r8, %r8, 1;
  bra.uni LOOP;
END:
  st.global.u32 [%rd1], %r7;
  ret;)");
  Outcome o = run(ptx, 2, 96, 192);
  ASSERT_TRUE(o.status) << o.status.error().message;
  for (uint32_t i = 0; i < 192; ++i) {
    uint32_t m = i % 37;
    EXPECT_EQ(o.out[i], m * (m + 1) / 2) << i;
  }
}

TEST_F(EmuTest, NestedDivergenceWithABreakOutOfALoop) {
  // for (j = 0; j < 40; ++j) { if (lane % 3 == 0) { if (j == lane) break; acc += 2; } else acc += 1; }
  // then a full-warp shuffle: every lane must have left the loop.
  std::string ptx = kernel(R"(
  rem.u32 %r6, %r3, 3;
  mov.u32 %r7, 0;
  mov.u32 %r8, 0;
LOOP:
  setp.ge.u32 %p1, %r8, 40;
  @%p1 bra DONE;
  setp.ne.u32 %p2, %r6, 0;
  @%p2 bra ELSE;
  setp.eq.u32 %p3, %r8, %r3;
  @%p3 bra DONE;
  add.u32 %r7, %r7, 2;
  bra.uni NEXT;
ELSE:
  add.u32 %r7, %r7, 1;
NEXT:
  add.u32 %r8, %r8, 1;
  bra.uni LOOP;
DONE:
  shfl.sync.idx.b32 %r9, %r7, 1, 31, -1;
  mul.lo.u32 %r9, %r9, 1000;
  add.u32 %r7, %r7, %r9;
  st.global.u32 [%rd1], %r7;
  ret;)");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_TRUE(o.status) << o.status.error().message;
  for (uint32_t l = 0; l < 32; ++l) {
    uint32_t mine = l % 3 == 0 ? 2 * l : 40;
    EXPECT_EQ(o.out[l], mine + 1000 * 40) << l; // lane 1 ran all 40 iterations
  }
}

TEST_F(EmuTest, BarrierReductionsCountAcrossTheCta) {
  // bar.red.popc over 96 threads of "tid % 5 == 0", and .and/.or of "tid < 96".
  std::string ptx = kernel(R"(
  rem.u32 %r6, %r3, 5;
  setp.eq.u32 %p1, %r6, 0;
  bar.red.popc.u32 %r7, 0, %p1;
  setp.lt.u32 %p2, %r3, 96;
  bar.red.and.pred %p3, 1, %p2;
  setp.lt.u32 %p4, %r3, 1;
  bar.red.or.pred %p5, 2, %p4;
  selp.u32 %r8, 100, 0, %p3;
  selp.u32 %r9, 10000, 0, %p5;
  add.u32 %r7, %r7, %r8;
  add.u32 %r7, %r7, %r9;
  st.global.u32 [%rd1], %r7;
  ret;)");
  Outcome o = run(ptx, 1, 96, 96);
  ASSERT_TRUE(o.status) << o.status.error().message;
  for (uint32_t i = 0; i < 96; ++i) EXPECT_EQ(o.out[i], 20u + 100u + 10000u) << i;
}

TEST_F(EmuTest, ShuffleModesVoteAndActiveMask) {
  // out[lane] = up(1) + down(2)*1000 + idx(31-lane)*1000000 ; lane 0 also gets ballot of odd lanes in in[...]
  std::string ptx = kernel(R"(
  shfl.sync.up.b32 %r6|%p1, %r3, 1, 0, -1;
  shfl.sync.down.b32 %r7|%p2, %r3, 2, 31, -1;
  sub.u32 %r10, 31, %r3;
  shfl.sync.idx.b32 %r8, %r3, %r10, 31, -1;
  mul.lo.u32 %r7, %r7, 1000;
  mul.lo.u32 %r8, %r8, 1000000;
  add.u32 %r6, %r6, %r7;
  add.u32 %r6, %r6, %r8;
  and.b32 %r11, %r3, 1;
  setp.ne.u32 %p3, %r11, 0;
  vote.sync.ballot.b32 %r12, %p3, -1;
  setp.eq.u32 %p4, %r3, 0;
  @%p4 mov.u32 %r6, %r12;
  st.global.u32 [%rd1], %r6;
  ret;)");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_EQ(o.out[0], 0xaaaaaaaau);
  for (uint32_t l = 1; l < 32; ++l) {
    uint32_t up = l - 1;                  // lane 0 keeps its own value
    uint32_t down = l + 2 <= 31 ? l + 2 : l;
    uint32_t idx = 31 - l;
    EXPECT_EQ(o.out[l], up + down * 1000 + idx * 1000000) << l;
  }
}

TEST_F(EmuTest, MatchReduxAndElect) {
  // key = lane / 4: match.any gives each lane the mask of its group of 4;
  // redux.sync adds the lanes and takes their min over the warp; elect picks lane 0.
  std::string ptx = kernel(R"(
  shr.u32 %r6, %r3, 2;
  match.any.sync.b32 %r7, %r6, -1;
  redux.sync.add.u32 %r8, %r3, -1;
  add.u32 %r12, %r3, 5;
  redux.sync.min.u32 %r9, %r12, -1;
  elect.sync %r10|%p1, -1;
  selp.u32 %r11, 1000000, 0, %p1;
  mul.lo.u32 %r8, %r8, 1000;
  add.u32 %r9, %r9, %r8;
  add.u32 %r9, %r9, %r11;
  shl.b32 %r13, %r6, 2;
  shl.b32 %r13, 15, %r13;
  setp.eq.u32 %p2, %r7, %r13;
  selp.u32 %r14, 100000000, 0, %p2;
  add.u32 %r9, %r9, %r14;
  st.global.u32 [%rd1], %r9;
  ret;)");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_TRUE(o.status) << o.status.error().message;
  // 5 = min(lane + 5); 496 = 0 + ... + 31; 10^8 when the match mask was the lane's group of 4.
  for (uint32_t l = 0; l < 32; ++l)
    EXPECT_EQ(o.out[l], 5u + 496u * 1000u + (l == 0 ? 1000000u : 0u) + 100000000u) << l;
}

const char *kReverseBody = R"(
  mov.u32 %r20, buf;
  shl.b32 %r6, %r3, 2;
  add.u32 %r7, %r20, %r6;
  ld.global.u32 %r8, [%rd2];
  st.shared.u32 [%r7], %r8;
  {BARRIER}
  sub.u32 %r9, %r4, 1;
  sub.u32 %r9, %r9, %r3;
  shl.b32 %r9, %r9, 2;
  add.u32 %r9, %r20, %r9;
  ld.shared.u32 %r10, [%r9];
  st.global.u32 [%rd1], %r10;
  ret;)";

std::string reverseKernel(bool barrier) {
  std::string body = kReverseBody;
  body.replace(body.find("{BARRIER}"), 9, barrier ? "bar.sync 0;" : "");
  return kernel(body, ".shared .align 4 .b8 buf[512];");
}

TEST_F(EmuTest, SharedMemoryAndBarriersAcrossWarps) {
  Outcome o = run(reverseKernel(true), 3, 128, 384);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_TRUE(o.findings.empty());
  for (uint32_t i = 0; i < 384; ++i) EXPECT_EQ(o.out[i], (i / 128) * 128 + 127 - i % 128) << i;
}

TEST_F(EmuTest, RacecheckLocatesAMissingBarrier) {
  std::string ptx = reverseKernel(false);
  Outcome o = run(ptx, 1, 128, 128);
  ASSERT_FALSE(o.status);
  EXPECT_EQ(exec::execErrorKindOf(o.status.error()), ExecErrorKind::Crashed);
  const exec::LaunchFinding *race = find(o, "racecheck");
  ASSERT_NE(race, nullptr);
  EXPECT_TRUE(race->fatal);
  // Warps run one after another, so the first hazard seen is a later warp's
  // store over what an earlier warp read (or the reverse order): either way
  // the report names both lines.
  uint32_t store = lineOf(ptx, "st.shared.u32 [%r7]"), load = lineOf(ptx, "ld.shared.u32 %r10");
  EXPECT_TRUE(race->line == store || race->line == load) << race->message;
  EXPECT_NE(race->message.find("hazard"), std::string::npos) << race->message;
  EXPECT_NE(race->message.find(fmt::format("line {}", race->line == store ? load : store)), std::string::npos)
      << race->message;
}

TEST_F(EmuTest, RacecheckLetsWarpsStoreTheSameValue) {
  // Every thread of four warps stores the same row results into the same
  // shared words (Triton's reductions do), then reads them after a barrier:
  // no order of the stores changes what is read. A store of a value that
  // differs by warp is still a write-after-write hazard.
  auto body = [](const char *value) {
    return kernel(fmt::format(R"(
  mov.u32 %r20, buf;
  mov.u32 %r6, 7;
  mov.u32 %r7, 9;
  {}
  st.shared.v2.u32 [%r20], {{%r6, %r7}};
  st.shared.u16 [%r20+8], %r6;
  bar.sync 0;
  ld.shared.u32 %r8, [%r20];
  ld.shared.u32 %r9, [%r20+4];
  add.u32 %r8, %r8, %r9;
  ld.shared.u16 %r9, [%r20+8];
  add.u32 %r8, %r8, %r9;
  st.global.u32 [%rd1], %r8;
  ret;)", value), ".shared .align 8 .b8 buf[16];");
  };
  Outcome same = run(body(""), 1, 128, 128);
  ASSERT_TRUE(same.status) << same.status.error().message;
  for (uint32_t i = 0; i < 128; ++i) EXPECT_EQ(same.out[i], 23u) << i;
  EXPECT_EQ(find(same, "racecheck"), nullptr);

  Outcome differ = run(body("shr.u32 %r7, %r3, 5;"), 1, 128, 128); // the warp's index
  ASSERT_FALSE(differ.status);
  const exec::LaunchFinding *race = find(differ, "racecheck");
  ASSERT_NE(race, nullptr);
  EXPECT_NE(race->message.find("write-after-write"), std::string::npos) << race->message;
}

TEST_F(EmuTest, MemcheckLocatesAnOutOfBoundsWrite) {
  // Writes out[i + 1]: the last thread writes one element past the end.
  std::string ptx = kernel(R"(
  st.global.u32 [%rd1+4], %r1;
  ret;)");
  Outcome o = run(ptx, 1, 64, 64);
  ASSERT_FALSE(o.status);
  EXPECT_EQ(exec::execErrorKindOf(o.status.error()), ExecErrorKind::Crashed);
  const exec::LaunchFinding *oob = find(o, "memcheck");
  ASSERT_NE(oob, nullptr);
  EXPECT_EQ(oob->line, lineOf(ptx, "st.global.u32 [%rd1+4]"));
  EXPECT_NE(oob->message.find("out-of-bounds global write of 4 bytes"), std::string::npos) << oob->message;
  EXPECT_NE(oob->message.find("4 bytes past the end of a 256-byte buffer"), std::string::npos) << oob->message;
  EXPECT_NE(oob->message.find("thread (63,0,0)"), std::string::npos) << oob->message;
}

TEST_F(EmuTest, MemcheckTreatsGuardZonesAsOutOfBounds) {
  std::string ptx = kernel(R"(
  ld.global.u32 %r6, [%rd2+-4];
  st.global.u32 [%rd1], %r6;
  ret;)");
  Result<exec::ModuleHandle> module =
      executor_->loadModule(std::vector<uint8_t>(ptx.begin(), ptx.end()), exec::ModuleFormat::Ptx);
  ASSERT_TRUE(module);
  Result<exec::KernelInfo> info = executor_->getKernel(*module, "k");
  ASSERT_TRUE(info);
  Result<exec::DeviceBuffer> out = executor_->allocateBuffer(256 + 128);
  Result<exec::DeviceBuffer> in = executor_->allocateBuffer(256 + 128);
  ASSERT_TRUE(out && in);
  ASSERT_TRUE(executor_->setAccessibleRange(out->handle(), 64, 128));
  ASSERT_TRUE(executor_->setAccessibleRange(in->handle(), 64, 128));
  exec::LaunchConfig config;
  config.block = {32, 1, 1};
  Result<void> ran = executor_->launch(
      info->handle, config,
      exec::KernelArgs().buffer(out->handle(), 64).buffer(in->handle(), 64).scalar<uint32_t>(32).pack());
  ASSERT_FALSE(ran);
  EXPECT_NE(ran.error().message.find("4 bytes before the start of a 128-byte buffer"), std::string::npos)
      << ran.error().message;
}

TEST_F(EmuTest, MemcheckCatchesMisalignedAndNullAccesses) {
  Outcome misaligned = run(kernel(R"(
  ld.global.u32 %r6, [%rd2+2];
  st.global.u32 [%rd1], %r6;
  ret;)"),
                           1, 32, 64);
  ASSERT_FALSE(misaligned.status);
  EXPECT_NE(misaligned.status.error().message.find("misaligned global read"), std::string::npos)
      << misaligned.status.error().message;

  Outcome null = run(kernel(R"(
  mov.u64 %rd5, 0;
  ld.u32 %r6, [%rd5];
  st.global.u32 [%rd1], %r6;
  ret;)"),
                     1, 32, 32);
  ASSERT_FALSE(null.status);
  EXPECT_NE(null.status.error().message.find("in no state space"), std::string::npos) << null.status.error().message;
}

/// 1-based column of `needle` in the line of `text` that holds `lineNeedle`.
static uint32_t columnOf(const std::string &text, const std::string &lineNeedle, const std::string &needle) {
  size_t at = text.find(lineNeedle);
  size_t start = text.rfind('\n', at);
  start = start == std::string::npos ? 0 : start + 1;
  return static_cast<uint32_t>(text.find(needle, at) - start + 1);
}

TEST_F(EmuTest, InitcheckWarnsWhereANeverWrittenValueReachesAStoreAndReadsGarbage) {
  // %r30 is never written; %r6 computed from it is stored: reported at the
  // store, on the operand, once for the 32 threads. The value is garbage, as
  // on a GPU (it read as zero once, so that a kernel that never initialized
  // its accumulator was correct here and wrong on the GPU).
  std::string ptx = kernel(R"(
  add.u32 %r6, %r30, 5;
  st.global.u32 [%rd1], %r6;
  ret;)");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_TRUE(o.status) << o.status.error().message;
  ASSERT_EQ(o.findings.size(), 1u);
  const exec::LaunchFinding *init = find(o, "initcheck");
  ASSERT_NE(init, nullptr);
  EXPECT_FALSE(init->fatal);
  EXPECT_EQ(init->line, lineOf(ptx, "st.global.u32 [%rd1], %r6"));
  EXPECT_EQ(init->column, columnOf(ptx, "st.global.u32 [%rd1], %r6", "%r6"));
  EXPECT_NE(init->message.find("%r6 has no value"), std::string::npos) << init->message;
  EXPECT_NE(init->message.find("reaches a store"), std::string::npos) << init->message;
  EXPECT_NE(init->message.find("32 threads: thread (0,0,0) of block (0,0,0), thread (1,0,0) of block (0,0,0), "
                               "thread (2,0,0) of block (0,0,0), ..."),
            std::string::npos)
      << init->message;
  std::set<uint32_t> values(o.out.begin(), o.out.end());
  EXPECT_GT(values.size(), 16u) << "garbage differs from lane to lane";
  EXPECT_EQ(values.count(5u), 0u);
}

TEST_F(EmuTest, ANeverWrittenRegisterHoldsOneFiniteGarbageValue) {
  // Every read of the unset %f8 gives the same value (x - x is 0) and %f9
  // is a finite number (x * 0 is 0): a kernel that throws the garbage away
  // is not made wrong by it.
  std::string ptx = kernel(R"(
  sub.f32 %f1, %f8, %f8;
  mul.f32 %f2, %f9, 0f00000000;
  add.f32 %f3, %f1, %f2;
  mov.b32 %r6, %f3;
  st.global.u32 [%rd1], %r6;
  ret;)");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_TRUE(o.status) << o.status.error().message;
  for (uint32_t v : o.out) EXPECT_EQ(v, 0u);
}

TEST_F(EmuTest, InitcheckIgnoresAValueLoadedUnderAFalsePredicateAndNeverUsed) {
  // Lanes 16..31 skip the load, move the unset %r6 along, and store
  // something else: nothing of it reaches a use that matters.
  std::string ptx = kernel(R"(
  setp.lt.u32 %p1, %r3, 16;
  @%p1 ld.global.u32 %r6, [%rd2];
  mov.u32 %r7, %r6;
  add.u32 %r7, %r7, 1;
  @%p1 st.global.u32 [%rd1], %r7;
  @!%p1 st.global.u32 [%rd1], %r3;
  ret;)");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_EQ(find(o, "initcheck"), nullptr) << find(o, "initcheck")->message;
  for (uint32_t i = 0; i < 32; ++i) EXPECT_EQ(o.out[i], i < 16 ? i + 1 : i);
}

TEST_F(EmuTest, InitcheckReportsANeverWrittenValueInAComparisonAndAnAddress) {
  // Lanes 16..31 leave %r6 unset; it reaches a comparison (lanes 16..31
  // only), and %rd5 built from %r31 reaches an address.
  std::string ptx = kernel(R"(
  setp.lt.u32 %p1, %r3, 16;
  @%p1 mov.u32 %r6, 7;
  setp.eq.u32 %p2, %r6, 7;
  selp.u32 %r8, 1, 2, %p2;
  st.global.u32 [%rd1], %r8;
  mul.wide.u32 %rd5, %r31, 0;
  add.s64 %rd6, %rd1, %rd5;
  st.global.u32 [%rd6], %r8;
  ret;)");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_TRUE(o.status) << o.status.error().message;
  ASSERT_EQ(o.findings.size(), 2u);
  const exec::LaunchFinding &comparison = o.findings[0], &address = o.findings[1];
  EXPECT_EQ(comparison.line, lineOf(ptx, "setp.eq.u32 %p2"));
  EXPECT_EQ(comparison.column, columnOf(ptx, "setp.eq.u32 %p2", "%r6"));
  EXPECT_NE(comparison.message.find("reaches a comparison"), std::string::npos) << comparison.message;
  EXPECT_NE(comparison.message.find("16 threads: thread (16,0,0) of block (0,0,0)"), std::string::npos)
      << comparison.message;
  EXPECT_EQ(address.line, lineOf(ptx, "st.global.u32 [%rd6]"));
  EXPECT_EQ(address.column, columnOf(ptx, "st.global.u32 [%rd6]", "[%rd6]"));
  EXPECT_NE(address.message.find("%rd6 has no value"), std::string::npos) << address.message;
  EXPECT_NE(address.message.find("reaches an address"), std::string::npos) << address.message;
  // The store's value (%r8, selected by the already reported %p2) is not reported again.
  for (uint32_t i = 0; i < 32; ++i) EXPECT_EQ(o.out[i], i < 16 ? 1u : 2u);
}

TEST_F(EmuTest, SynccheckFindsABarrierInDivergentCode) {
  std::string ptx = kernel(R"(
  setp.ge.u32 %p1, %r3, 16;
  @%p1 bra SKIP;
  bar.sync 0;
SKIP:
  bar.sync 0;
  st.global.u32 [%rd1], %r1;
  ret;)");
  Outcome o = run(ptx, 1, 64, 64);
  ASSERT_FALSE(o.status);
  const exec::LaunchFinding *sync = find(o, "synccheck");
  ASSERT_NE(sync, nullptr) << o.status.error().message;
  EXPECT_EQ(sync->line, lineOf(ptx, "bar.sync 0;"));
}

TEST_F(EmuTest, ExitedThreadsDoNotHoldUpABarrier) {
  // The common `if (i >= n) return; ... __syncthreads()` pattern.
  std::string ptx = kernel(R"(
  setp.ge.u32 %p1, %r1, %r2;
  @%p1 bra DONE;
  bar.sync 0;
  st.global.u32 [%rd1], %r1;
DONE:
  ret;)");
  Outcome o = run(ptx, 1, 64, 64, {}, 40);
  ASSERT_TRUE(o.status) << o.status.error().message;
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(o.out[i], i < 40 ? i : 0xdeadbeefu) << i;
}

TEST_F(EmuTest, AnInfiniteLoopTimesOut) {
  EmuOptions options;
  options.checks.stepBudget = 1u << 20;
  executor_ = createEmuExecutor(options);
  std::string ptx = kernel(R"(
SPIN:
  add.u32 %r6, %r6, 1;
  bra.uni SPIN;)");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_FALSE(o.status);
  EXPECT_EQ(exec::execErrorKindOf(o.status.error()), ExecErrorKind::Timeout);
}

TEST_F(EmuTest, CallsPassParametersAndReturnValues) {
  std::string extra = R"(
.func (.param .b32 result) triple_plus(.param .b32 x, .param .b32 y)
{
  .reg .b32 %t<4>;
  ld.param.b32 %t1, [x];
  ld.param.b32 %t2, [y];
  mul.lo.s32 %t3, %t1, 3;
  add.s32 %t3, %t3, %t2;
  st.param.b32 [result], %t3;
  ret;
}
)";
  std::string ptx = kernel(R"(
  and.b32 %r6, %r3, 1;
  setp.eq.u32 %p1, %r6, 0;
  mov.u32 %r7, 7;
  @%p1 bra JOIN;
  {
    .param .b32 a0;
    st.param.b32 [a0], %r1;
    .param .b32 a1;
    st.param.b32 [a1], 10;
    .param .b32 r0;
    call.uni (r0), triple_plus, (a0, a1);
    ld.param.b32 %r7, [r0];
  }
JOIN:
  shfl.sync.idx.b32 %r8, %r7, 1, 31, -1;
  add.u32 %r7, %r7, %r8;
  st.global.u32 [%rd1], %r7;
  ret;)",
                           extra);
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_TRUE(o.status) << o.status.error().message;
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(o.out[l], ((l & 1) ? 3 * l + 10 : 7) + 13) << l;
}

TEST_F(EmuTest, AtomicsAcrossCtasRunningInParallel) {
  // 64 CTAs x 128 threads: a histogram of in[i] % 8 into out[0..7], via shared
  // memory atomics then one global atomic per bin and CTA.
  std::string ptx = kernel(R"(
  mov.u32 %r20, bins;
  setp.lt.u32 %p1, %r3, 8;
  shl.b32 %r6, %r3, 2;
  add.u32 %r21, %r20, %r6;
  @%p1 st.shared.u32 [%r21], 0;
  bar.sync 0;
  ld.global.u32 %r7, [%rd2];
  and.b32 %r7, %r7, 7;
  shl.b32 %r7, %r7, 2;
  add.u32 %r7, %r20, %r7;
  atom.shared.add.u32 %r8, [%r7], 1;
  bar.sync 0;
  @!%p1 bra DONE;
  ld.shared.u32 %r9, [%r21];
  cvt.u64.u32 %rd5, %r6;
  add.s64 %rd5, %rd10, %rd5;
  red.global.add.u32 [%rd5], %r9;
DONE:
  ret;)",
                           ".shared .align 4 .b8 bins[32];");
  const uint32_t n = 64 * 128;
  std::vector<uint32_t> input(n);
  for (uint32_t i = 0; i < n; ++i) input[i] = i * 2654435761u >> 7;
  Result<exec::ModuleHandle> module =
      executor_->loadModule(std::vector<uint8_t>(ptx.begin(), ptx.end()), exec::ModuleFormat::Ptx);
  ASSERT_TRUE(module) << module.error().message;
  Result<exec::KernelInfo> info = executor_->getKernel(*module, "k");
  Result<exec::DeviceBuffer> out = executor_->allocateBuffer(32);
  Result<exec::DeviceBuffer> in = executor_->allocateBuffer(n * 4);
  ASSERT_TRUE(info && out && in);
  ASSERT_TRUE(executor_->memset(out->handle(), 0, 0, 32));
  ASSERT_TRUE(executor_->upload(in->handle(), input));
  exec::LaunchConfig config;
  config.grid = {64, 1, 1};
  config.block = {128, 1, 1};
  Result<void> ran = executor_->launch(
      info->handle, config, exec::KernelArgs().buffer(out->handle()).buffer(in->handle()).scalar<uint32_t>(n).pack());
  ASSERT_TRUE(ran) << ran.error().message;
  std::vector<uint32_t> want(8, 0);
  for (uint32_t v : input) ++want[v % 8];
  EXPECT_EQ(*executor_->download<uint32_t>(out->handle(), 8), want);
}

TEST_F(EmuTest, VectorAtomicsAreOneAtomicPerElement) {
  // 128 threads in two CTAs: red.v4.f32 and atom.v2.f16x2 sums, a red.v4.bf16
  // max. Every value is exact in its type, so any order gives the same bits.
  std::string ptx = kernel(R"(
  .reg .b16 %h<8>;
  cvt.rn.f32.u32 %f1, %r1;
  red.global.add.v4.f32 [%rd10], {1.0, %f1, 0.5, 0f00000000};
  mov.b32 %r6, 0x34003C00;
  atom.global.add.noftz.v2.f16x2 {%r7, %r8}, [%rd10+16], {%r6, %r6};
  cvt.rn.bf16.f32 %h1, %f1;
  neg.bf16 %h2, %h1;
  mul.f32 %f2, %f1, 0.5;
  cvt.rn.bf16.f32 %h3, %f2;
  mov.b16 %h4, 0;
  red.global.max.noftz.v4.bf16 [%rd10+24], {%h1, %h2, %h4, %h3};
  ret;)");
  Result<exec::ModuleHandle> module =
      executor_->loadModule(std::vector<uint8_t>(ptx.begin(), ptx.end()), exec::ModuleFormat::Ptx);
  ASSERT_TRUE(module) << module.error().message;
  Result<exec::KernelInfo> info = executor_->getKernel(*module, "k");
  Result<exec::DeviceBuffer> out = executor_->allocateBuffer(32);
  Result<exec::DeviceBuffer> in = executor_->allocateBuffer(512);
  ASSERT_TRUE(info && out && in);
  ASSERT_TRUE(executor_->memset(out->handle(), 0, 0, 32));
  exec::LaunchConfig config;
  config.grid = {2, 1, 1};
  config.block = {64, 1, 1};
  Result<void> ran = executor_->launch(
      info->handle, config, exec::KernelArgs().buffer(out->handle()).buffer(in->handle()).scalar<uint32_t>(128).pack());
  ASSERT_TRUE(ran) << ran.error().message;
  std::vector<uint32_t> got = *executor_->download<uint32_t>(out->handle(), 8);
  EXPECT_EQ(std::bit_cast<float>(got[0]), 128.0f);
  EXPECT_EQ(std::bit_cast<float>(got[1]), 8128.0f); // 0 + 1 + ... + 127
  EXPECT_EQ(std::bit_cast<float>(got[2]), 64.0f);
  EXPECT_EQ(got[3], 0u);
  EXPECT_EQ(got[4], 0x50005800u); // f16 pair {128, 32}: 128 x {1.0, 0.25}
  EXPECT_EQ(got[5], 0x50005800u);
  EXPECT_EQ(got[6], 0x000042FEu); // bf16 {max i = 127, max -i = -0 < 0 so 0}
  EXPECT_EQ(got[7], 0x427E0000u); // bf16 {0, max i/2 = 63.5}
}

TEST_F(EmuTest, WhatAnH200DoesWhereTheEmulatorDifferedFromIt) {
  // Found by scripts/emu-differential.py on an H200
  // (docs/results/emu-differential-h200-2026-12-06.md), each lane:
  //   out[4l]   atom.add.f32 of a subnormal into a subnormal: both read as
  //             zeros of their sign (-0 + -0 = -0), and NaN is 0x7fffffff;
  //   out[4l+1] shfl.sync.bfly's lane operand is its low five bits (33 is 1);
  //   out[4l+2] ex2.approx.f32(-300) and div.approx.f32(2^-130, 2^32) are +0,
  //   out[4l+3]   not the smallest subnormal of either sign.
  std::string ptx = kernel(R"(
  mul.wide.u32 %rd5, %r1, 16;
  add.s64 %rd6, %rd10, %rd5;
  mov.b32 %f1, 0x80590c7c;
  st.global.f32 [%rd6], %f1;
  mov.b32 %f2, 0x80000001;
  and.b32 %r6, %r1, 1;
  setp.eq.u32 %p1, %r6, 1;
  @%p1 mov.b32 %f2, 0x7fc00000;
  atom.global.add.f32 %f3, [%rd6], %f2;
  shfl.sync.bfly.b32 %r7, %r1, 33, 31, -1;
  st.global.u32 [%rd6+4], %r7;
  ex2.approx.f32 %f4, 0fC3960000;
  st.global.f32 [%rd6+8], %f4;
  div.approx.f32 %f5, 0f00200000, 0f4F800000;
  st.global.f32 [%rd6+12], %f5;
  ret;)");
  Outcome o = run(ptx, 1, 32, 128);
  ASSERT_TRUE(o.status) << o.status.error().message;
  for (uint32_t l = 0; l < 32; ++l) {
    EXPECT_EQ(o.out[4 * l], (l & 1) ? 0x7fffffffu : 0x80000000u) << l;
    EXPECT_EQ(o.out[4 * l + 1], l ^ 1) << l;
    EXPECT_EQ(o.out[4 * l + 2], 0u) << l;
    EXPECT_EQ(o.out[4 * l + 3], 0u) << l;
  }
}

TEST_F(EmuTest, VectorAtomicsAreAlignedToTheWholeVector) {
  std::string ptx = kernel(R"(
  red.global.add.v2.f32 [%rd10+4], {1.0, 2.0};
  ret;)");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_FALSE(o.status);
  ASSERT_FALSE(o.findings.empty());
  EXPECT_NE(o.findings[0].message.find("must be 8-byte aligned"), std::string::npos) << o.findings[0].message;
}

TEST_F(EmuTest, LocalMemoryThroughGenericAddresses) {
  std::string ptx = kernel(R"(
  .local .align 4 .b8 depot[64];
  mov.u64 %rd5, depot;
  cvta.local.u64 %rd6, %rd5;
  st.u32 [%rd6+8], %r1;
  st.local.u32 [%rd5+12], 9;
  ld.local.u32 %r6, [%rd5+8];
  ld.u32 %r7, [%rd6+12];
  add.u32 %r6, %r6, %r7;
  st.global.u32 [%rd1], %r6;
  ret;)");
  Outcome o = run(ptx, 2, 32, 64);
  ASSERT_TRUE(o.status) << o.status.error().message;
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(o.out[i], i + 9) << i;
}

TEST_F(EmuTest, UnsupportedInstructionsAreNamedWithTheirLine) {
  std::string ptx = kernel(R"(
  brkpt;
  ret;)");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_FALSE(o.status);
  // The code and the line are fields of the Error, not parts of its message.
  EXPECT_EQ(exec::execErrorKindOf(o.status.error()), ExecErrorKind::EmuUnsupported);
  EXPECT_EQ(o.status.error().code, "emu-unsupported");
  EXPECT_NE(o.status.error().message.find("brkpt"), std::string::npos) << o.status.error().message;
  EXPECT_EQ(o.status.error().line, lineOf(ptx, "brkpt")) << render(o.status.error());
  EXPECT_NE(render(o.status.error()).find(fmt::format("(line {})", lineOf(ptx, "brkpt"))), std::string::npos)
      << render(o.status.error());
}

TEST_F(EmuTest, LaunchLimitsAreLaunchErrors) {
  std::string ptx = kernel("  ret;");
  Result<exec::ModuleHandle> module =
      executor_->loadModule(std::vector<uint8_t>(ptx.begin(), ptx.end()), exec::ModuleFormat::Ptx);
  ASSERT_TRUE(module);
  Result<exec::KernelInfo> info = executor_->getKernel(*module, "k");
  Result<exec::DeviceBuffer> buffer = executor_->allocateBuffer(64);
  ASSERT_TRUE(info && buffer);
  exec::LaunchConfig config;
  config.block = {2048, 1, 1};
  Result<void> ran = executor_->launch(
      info->handle, config,
      exec::KernelArgs().buffer(buffer->handle()).buffer(buffer->handle()).scalar<uint32_t>(1).pack());
  ASSERT_FALSE(ran);
  EXPECT_EQ(exec::execErrorKindOf(ran.error()), ExecErrorKind::LaunchError);
  EXPECT_FALSE(executor_->getKernel(*module, "missing"));
  EXPECT_FALSE(executor_->loadModule({1, 2, 3}, exec::ModuleFormat::Cubin));
}

// Static shared memory is laid out per kernel: two kernels of one module
// that each declare 150000 bytes get 150000 bytes each (after a .func's
// variable, which any kernel may call), not the sum, which would pass the
// 227 KB limit of a block and fail the launch.
TEST_F(EmuTest, StaticSharedMemoryIsPerKernel) {
  std::string other = R"(
.func (.param .b32 ret) helper(.param .b32 x)
{
  .shared .align 4 .b32 helper_cell;
  .reg .b32 %h<3>;
  ld.param.b32 %h1, [x];
  mov.u32 %h2, helper_cell;
  add.s32 %h2, %h2, %h1;
  st.param.b32 [ret], %h2;
  ret;
}
.visible .entry other(.param .u64 out)
{
  .shared .align 4 .b8 big_other[150000];
  .reg .b32 %o<3>;
  mov.u32 %o1, %tid.x;
  st.shared.u32 [big_other+149996], %o1;
  ret;
}
)";
  std::string ptx = kernel(R"(
  .shared .align 4 .b8 big_k[150000];
  shl.b32 %r6, %r3, 2;
  mov.u32 %r7, big_k;
  add.s32 %r7, %r7, %r6;
  st.shared.u32 [%r7+149000], %r1;
  bar.sync 0;
  ld.shared.u32 %r8, [%r7+149000];
  {
    .param .b32 x;
    .param .b32 y;
    st.param.b32 [x], %r8;
    call.uni (y), helper, (x);
    ld.param.b32 %r9, [y];
  }
  mov.u32 %r10, big_k;
  add.s32 %r9, %r9, %r10;
  st.global.u32 [%rd1], %r9;
  ret;)",
                           other);
  Result<exec::ModuleHandle> module =
      executor_->loadModule(std::vector<uint8_t>(ptx.begin(), ptx.end()), exec::ModuleFormat::Ptx);
  ASSERT_TRUE(module) << module.error().message;
  Result<exec::KernelInfo> k = executor_->getKernel(*module, "k");
  Result<exec::KernelInfo> second = executor_->getKernel(*module, "other");
  ASSERT_TRUE(k && second);
  // Each: the .func's 4-byte variable, then its own 150000 bytes.
  EXPECT_EQ(k->staticSharedBytes, 4 + 150000);
  EXPECT_EQ(second->staticSharedBytes, 4 + 150000);
  Outcome outcome = run(ptx, 2, 64, 128);
  ASSERT_TRUE(outcome.status) << outcome.status.error().message;
  EXPECT_TRUE(outcome.findings.empty()) << outcome.findings.front().message;
  // helper_cell at shared address 0, big_k after it at 4.
  for (uint32_t i = 0; i < 128; ++i) EXPECT_EQ(outcome.out[i], i + 4);
}

TEST_F(EmuTest, TimingNeedsAGpu) {
  std::string ptx = kernel("  ret;");
  Result<exec::ModuleHandle> module =
      executor_->loadModule(std::vector<uint8_t>(ptx.begin(), ptx.end()), exec::ModuleFormat::Ptx);
  ASSERT_TRUE(module);
  Result<exec::KernelInfo> info = executor_->getKernel(*module, "k");
  ASSERT_TRUE(info);
  Result<std::vector<float>> times = executor_->timeLaunch(info->handle, {}, {}, {});
  ASSERT_FALSE(times);
  EXPECT_NE(times.error().message.find("timing needs a GPU"), std::string::npos);
}

} // namespace
} // namespace ptxforge::emu
