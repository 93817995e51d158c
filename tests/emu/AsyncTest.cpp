// The sm_90 asynchronous machinery in the emulator: mbarrier phases and
// waits, bulk copies between global and shared memory, bulk groups, proxy
// fences, and the checks that find their hazards (Async.h).
#include "EmuHarness.h"

#include <cstring>
#include <string>

namespace ptxforge::emu {
namespace {

std::string replaced(std::string text, const std::string &from, const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Each CTA of 128 threads copies its 512 bytes of `in` into shared memory with
// one bulk copy completing on an mbarrier, every thread moves its element into
// a second shared buffer, and one thread copies that buffer out in bulk.
const std::string kCopyBody = R"(
  .shared .align 16 .b8 tile[512];
  .shared .align 16 .b8 outTile[512];
  .shared .align 8 .b64 bar;
  mul.wide.u32 %rd4, %r5, 512;
  add.s64 %rd5, %rd11, %rd4;
  add.s64 %rd6, %rd10, %rd4;
  mov.u32 %r10, bar;
  mov.u32 %r11, tile;
  mov.u32 %r12, outTile;
  setp.eq.u32 %p1, %r3, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r10], 1;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd7, [%r10], 512;
  @%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r11], [%rd5], 512, [%r10];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r10], 0;
  @!%p2 bra WAIT;
  shl.b32 %r13, %r3, 2;
  add.u32 %r14, %r11, %r13;
  ld.shared.f32 %f1, [%r14];
  add.u32 %r15, %r12, %r13;
  st.shared.f32 [%r15], %f1;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  @%p1 cp.async.bulk.global.shared::cta.bulk_group [%rd6], [%r12], 512;
  @%p1 cp.async.bulk.commit_group;
  @%p1 cp.async.bulk.wait_group.read 0;
  ret;
)";

class AsyncTest : public EmuTest {};

TEST_F(AsyncTest, BulkCopyThroughSharedMemoryWithAnMbarrier) {
  Outcome o = run(kernel(kCopyBody), 3, 128, 384);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_TRUE(o.findings.empty()) << o.findings[0].message;
  for (uint32_t i = 0; i < 384; ++i) ASSERT_EQ(o.out[i], i) << i;
}

TEST_F(AsyncTest, ReadingABulkCopysDestinationWithoutWaitingIsARace) {
  std::string ptx = kernel(replaced(kCopyBody, "  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r10], 0;\n  @!%p2 bra WAIT;\n", ""));
  Outcome o = run(ptx, 1, 128, 128);
  const exec::LaunchFinding *race = find(o, "racecheck");
  ASSERT_NE(race, nullptr);
  EXPECT_EQ(race->line, lineOf(ptx, "ld.shared.f32 %f1"));
  EXPECT_NE(race->message.find("the bulk copy at line " + std::to_string(lineOf(ptx, "cp.async.bulk.shared::cluster"))),
            std::string::npos)
      << race->message;
  EXPECT_NE(race->message.find("mbarrier.try_wait"), std::string::npos) << race->message;
}

TEST_F(AsyncTest, ABulkCopyOutOfSharedMemoryNeedsAProxyFenceAfterGenericWrites) {
  std::string ptx = kernel(replaced(kCopyBody, "  fence.proxy.async.shared::cta;\n", ""));
  Outcome o = run(ptx, 1, 128, 128);
  const exec::LaunchFinding *race = find(o, "racecheck");
  ASSERT_NE(race, nullptr);
  EXPECT_EQ(race->line, lineOf(ptx, "cp.async.bulk.global.shared::cta"));
  EXPECT_NE(race->message.find("missing fence.proxy.async"), std::string::npos) << race->message;
  EXPECT_NE(race->message.find("at line " + std::to_string(lineOf(ptx, "st.shared.f32"))), std::string::npos)
      << race->message;
}

TEST_F(AsyncTest, OverwritingTheSourceOfABulkCopyBeforeWaitGroupReadIsARace) {
  std::string ptx = kernel(replaced(kCopyBody, "  @%p1 cp.async.bulk.wait_group.read 0;\n",
                                    "  bar.sync 0;\n  st.shared.f32 [%r15], %f1;\n"));
  Outcome o = run(ptx, 1, 128, 128);
  const exec::LaunchFinding *race = find(o, "racecheck");
  ASSERT_NE(race, nullptr);
  EXPECT_EQ(race->line, lineOf(ptx, "  st.shared.f32 [%r15], %f1;\n  ret;"));
  EXPECT_NE(race->message.find("wait_group.read"), std::string::npos) << race->message;
}

TEST_F(AsyncTest, AnnouncingMoreBytesThanArriveIsADeadlock) {
  std::string ptx = kernel(replaced(kCopyBody, "[%r10], 512;", "[%r10], 1024;"));
  Outcome o = run(ptx, 1, 128, 128);
  const exec::LaunchFinding *sync = find(o, "synccheck");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->line, lineOf(ptx, "mbarrier.try_wait"));
  EXPECT_NE(sync->message.find("tx-count 512"), std::string::npos) << sync->message;
  EXPECT_NE(sync->message.find("never arrived"), std::string::npos) << sync->message;
}

TEST_F(AsyncTest, ArrivingOnAnUninitializedMbarrierIsReported) {
  std::string ptx = kernel(replaced(kCopyBody, "  @%p1 mbarrier.init.shared::cta.b64 [%r10], 1;\n", ""));
  Outcome o = run(ptx, 1, 128, 128);
  const exec::LaunchFinding *sync = find(o, "synccheck");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->line, lineOf(ptx, "mbarrier.arrive.expect_tx"));
  EXPECT_NE(sync->message.find("no initialized mbarrier"), std::string::npos) << sync->message;
}

TEST_F(AsyncTest, MisalignedBulkCopiesAreMemcheckFindings) {
  std::string ptx = kernel(replaced(kCopyBody, "[%r11], [%rd5], 512, [%r10];", "[%r11], [%rd5], 500, [%r10];"));
  Outcome o = run(ptx, 1, 128, 128);
  const exec::LaunchFinding *mem = find(o, "memcheck");
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(mem->line, lineOf(ptx, "cp.async.bulk.shared::cluster"));
  EXPECT_NE(mem->message.find("multiple of 16"), std::string::npos) << mem->message;
}

TEST_F(AsyncTest, PhasesAlternateParityAcrossReuses) {
  // Two tiles through one buffer and one mbarrier: phase 0 then phase 1.
  std::string body = R"(
  .shared .align 16 .b8 tile[512];
  .shared .align 8 .b64 bar;
  mov.u32 %r10, bar;
  mov.u32 %r11, tile;
  setp.eq.u32 %p1, %r3, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r10], 1;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  mov.u32 %r20, 0;
  mov.f32 %f2, 0f00000000;
  shl.b32 %r13, %r3, 2;
  add.u32 %r14, %r11, %r13;
LOOP:
  mul.wide.u32 %rd4, %r20, 512;
  add.s64 %rd5, %rd11, %rd4;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd7, [%r10], 512;
  @%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r11], [%rd5], 512, [%r10];
  and.b32 %r21, %r20, 1;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r10], %r21;
  @!%p2 bra WAIT;
  ld.shared.f32 %f1, [%r14];
  add.f32 %f2, %f2, %f1;
  bar.sync 0;
  add.u32 %r20, %r20, 1;
  setp.lt.u32 %p3, %r20, 2;
  @%p3 bra LOOP;
  st.global.f32 [%rd1], %f2;
  ret;
)";
  std::vector<uint32_t> input(256);
  std::vector<float> values(256);
  for (uint32_t i = 0; i < 256; ++i) {
    values[i] = static_cast<float>(i) * 0.5f;
    std::memcpy(&input[i], &values[i], 4);
  }
  Outcome o = run(kernel(body), 1, 128, 128, input);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_TRUE(o.findings.empty()) << o.findings[0].message;
  for (uint32_t i = 0; i < 128; ++i) {
    float got;
    std::memcpy(&got, &o.out[i], 4);
    ASSERT_EQ(got, values[i] + values[128 + i]) << i;
  }
}

TEST_F(AsyncTest, AWarpWaitingOnAnMbarrierLetsTheProducerWarpRun) {
  // Warp 0 consumes what warp 1 writes; an arrive/wait pair orders them (no
  // CTA barrier), so racecheck has nothing to say.
  std::string body = R"(
  .shared .align 16 .b32 buf[32];
  .shared .align 8 .b64 bar;
  mov.u32 %r10, bar;
  mov.u32 %r11, buf;
  setp.eq.u32 %p1, %r3, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r10], 32;
  bar.sync 0;
  setp.lt.u32 %p3, %r3, 32;
  @%p3 bra CONSUMER;
  ld.global.u32 %r20, [%rd2];
  shl.b32 %r21, %r20, 1;
  sub.u32 %r22, %r3, 32;
  shl.b32 %r13, %r22, 2;
  add.u32 %r14, %r11, %r13;
  st.shared.u32 [%r14], %r21;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd7, [%r10];
  ret;
CONSUMER:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r10], 0;
  @!%p2 bra CONSUMER;
  shl.b32 %r13, %r3, 2;
  add.u32 %r14, %r11, %r13;
  ld.shared.u32 %r23, [%r14];
  st.global.u32 [%rd1], %r23;
  ret;
)";
  Outcome o = run(kernel(body), 1, 64, 64);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_TRUE(o.findings.empty()) << o.findings[0].message;
  for (uint32_t i = 0; i < 32; ++i) ASSERT_EQ(o.out[i], 2 * (i + 32)) << i;
  EXPECT_EQ(o.out[40], 0xdeadbeefu);
}

TEST_F(AsyncTest, AWaitNoThreadCanCompleteIsADeadlock) {
  std::string body = R"(
  .shared .align 8 .b64 bar;
  mov.u32 %r10, bar;
  setp.eq.u32 %p1, %r3, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r10], 64;
  bar.sync 0;
  mbarrier.arrive.shared::cta.b64 %rd7, [%r10];
WAIT:
  mbarrier.try_wait.shared::cta.b64 %p2, [%r10], %rd7;
  @!%p2 bra WAIT;
  ret;
)";
  std::string ptx = kernel(body);
  Outcome o = run(ptx, 1, 32, 32);
  const exec::LaunchFinding *sync = find(o, "synccheck");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->line, lineOf(ptx, "mbarrier.try_wait"));
  EXPECT_NE(sync->message.find("awaits 32 more arrivals"), std::string::npos) << sync->message;
}

TEST_F(AsyncTest, ArrivalStatesAndPendingCounts) {
  // arrive returns a state whose pending count pending_count reads; test_wait
  // with that state says whether its phase completed; arrive_drop lowers the
  // count of later phases; cp.async.mbarrier.arrive.noinc is one arrival.
  std::string body = R"(
  .shared .align 8 .b64 bar;
  mov.u32 %r10, bar;
  setp.eq.u32 %p1, %r3, 0;
  @!%p1 bra DONE;
  mbarrier.init.shared::cta.b64 [%r10], 4;
  mbarrier.arrive.shared::cta.b64 %rd7, [%r10];
  mbarrier.pending_count.b64 %r20, %rd7;
  st.global.u32 [%rd10], %r20;
  mbarrier.test_wait.shared::cta.b64 %p2, [%r10], %rd7;
  selp.u32 %r21, 1, 0, %p2;
  st.global.u32 [%rd10+4], %r21;
  mbarrier.arrive_drop.shared::cta.b64 %rd8, [%r10];
  cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%r10];
  mbarrier.arrive.shared::cta.b64 %rd8, [%r10];
  mbarrier.test_wait.shared::cta.b64 %p2, [%r10], %rd7;
  selp.u32 %r21, 1, 0, %p2;
  st.global.u32 [%rd10+8], %r21;
  mbarrier.arrive.noComplete.shared::cta.b64 %rd8, [%r10], 2;
  mbarrier.arrive.shared::cta.b64 %rd8, [%r10];
  mbarrier.test_wait.parity.shared::cta.b64 %p2, [%r10], 1;
  selp.u32 %r21, 1, 0, %p2;
  st.global.u32 [%rd10+12], %r21;
  mbarrier.inval.shared::cta.b64 [%r10];
DONE:
  ret;
)";
  Outcome o = run(kernel(body), 1, 32, 4);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_TRUE(o.findings.empty()) << o.findings[0].message;
  EXPECT_EQ(o.out[0], 3u); // 4 expected, 1 arrived
  EXPECT_EQ(o.out[1], 0u); // phase 0 still open
  EXPECT_EQ(o.out[2], 1u); // four arrivals: phase 0 complete
  EXPECT_EQ(o.out[3], 1u); // phase 1 awaited 3 (one dropped): complete, so parity 1 done
}

TEST_F(AsyncTest, TooManyArrivalsAreReported) {
  std::string body = R"(
  .shared .align 8 .b64 bar;
  mov.u32 %r10, bar;
  setp.eq.u32 %p1, %r3, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r10], 1;
  bar.sync 0;
  @%p1 mbarrier.arrive.shared::cta.b64 %rd7, [%r10], 2;
  ret;
)";
  std::string ptx = kernel(body);
  Outcome o = run(ptx, 1, 32, 32);
  const exec::LaunchFinding *sync = find(o, "synccheck");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->line, lineOf(ptx, "mbarrier.arrive"));
  EXPECT_NE(sync->message.find("awaits 1 more"), std::string::npos) << sync->message;
}

TEST_F(AsyncTest, AGenericWriteOverALiveMbarrierIsReported) {
  std::string body = R"(
  .shared .align 8 .b64 bar;
  mov.u32 %r10, bar;
  setp.eq.u32 %p1, %r3, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r10], 1;
  bar.sync 0;
  @%p1 st.shared.u32 [%r10], 0;
  ret;
)";
  std::string ptx = kernel(body);
  Outcome o = run(ptx, 1, 32, 32);
  const exec::LaunchFinding *sync = find(o, "synccheck");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->line, lineOf(ptx, "st.shared.u32"));
}

TEST_F(AsyncTest, SetmaxnregIsANoOpWithARangeCheck) {
  Outcome ok = run(kernel("  setmaxnreg.inc.sync.aligned.u32 232;\n  st.global.u32 [%rd1], %r1;\n  ret;\n"), 1, 32, 32);
  ASSERT_TRUE(ok.status) << ok.status.error().message;
  EXPECT_EQ(ok.out[5], 5u);
  Outcome bad = run(kernel("  setmaxnreg.dec.sync.aligned.u32 20;\n  ret;\n"), 1, 32, 32);
  ASSERT_FALSE(bad.status);
  EXPECT_NE(bad.status.error().message.find("multiple of 8 in [24, 256]"), std::string::npos)
      << bad.status.error().message;
}

TEST_F(AsyncTest, StmatrixM16n8StoresTheAccumulatorLayoutColumnMajor) {
  // Two 16x8 byte matrices: lane L holds rows L/4 and L/4+8, columns
  // 2*(L%4) and 2*(L%4)+1; element (m, n) of matrix i has the value
  // 128*i + 8*m + n. Stored transposed, column n of matrix i is the 16-byte
  // row 8*i + n.
  std::vector<uint32_t> input(64);
  for (uint32_t i = 0; i < 2; ++i)
    for (uint32_t lane = 0; lane < 32; ++lane) {
      uint32_t word = 0;
      for (uint32_t k = 0; k < 4; ++k) {
        uint32_t m = lane / 4 + 8 * (k >> 1), n = 2 * (lane % 4) + (k & 1);
        word |= (128 * i + 8 * m + n) << (8 * k);
      }
      input[32 * i + lane] = word;
    }
  std::string body = R"(
  .shared .align 16 .b8 tile[256];
  ld.global.u32 %r20, [%rd2];
  ld.global.u32 %r21, [%rd2+128];
  and.b32 %r22, %r3, 15;
  shl.b32 %r22, %r22, 4;
  mov.u32 %r23, tile;
  add.u32 %r24, %r23, %r22;
  stmatrix.sync.aligned.m16n8.x2.trans.shared.b8 [%r24], {%r20, %r21};
  shl.b32 %r25, %r3, 2;
  add.u32 %r26, %r23, %r25;
  ld.shared.u32 %r27, [%r26];
  ld.shared.u32 %r28, [%r26+128];
  st.global.u32 [%rd1], %r27;
  st.global.u32 [%rd1+128], %r28;
  ret;
)";
  Outcome o = run(kernel(body), 1, 32, 64, input);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_TRUE(o.findings.empty()) << o.findings[0].message;
  for (uint32_t word = 0; word < 64; ++word)
    for (uint32_t j = 0; j < 4; ++j) {
      uint32_t byte = 4 * word + j, row = byte / 16, m = byte % 16;
      ASSERT_EQ((o.out[word] >> (8 * j)) & 0xff, 128 * (row / 8) + 8 * m + row % 8) << byte;
    }
}

TEST_F(AsyncTest, TensorCopiesAreRefusedByName) {
  Outcome o = run(kernel("  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%rd1], "
                         "[%rd2, {%r1, %r2}], [%rd3];\n  ret;\n"),
                  1, 32, 32);
  ASSERT_FALSE(o.status);
  EXPECT_NE(o.status.error().message.find("tensor"), std::string::npos) << o.status.error().message;
}

} // namespace
} // namespace ptxforge::emu
