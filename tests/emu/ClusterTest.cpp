// Thread block clusters in the emulator: the cluster's CTAs run together, see
// their %cluster_* registers, synchronize with barrier.cluster, reach each
// other's shared memory through mapa and .shared::cluster, and arrive on each
// other's mbarriers.
#include "EmuHarness.h"

#include <string>

namespace ptxforge::emu {
namespace {

/// A kernel k(out, in, n) with `directives` after its parameters and the
/// standard prologue of EmuHarness.h's kernel().
std::string clusterKernel(const std::string &directives, const std::string &body) {
  std::string ptx = kernel(body);
  size_t brace = ptx.find(")\n{");
  ptx.insert(brace + 2, directives + "\n");
  return ptx;
}

class ClusterTest : public EmuTest {};

TEST_F(ClusterTest, SpecialRegistersDescribeTheCluster) {
  // A 4x1x1 grid of 2x1x1 clusters: out[4*cta + i] per CTA.
  std::string body = R"(
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra DONE;
  mul.wide.u32 %rd4, %r5, 16;
  add.s64 %rd5, %rd10, %rd4;
  mov.u32 %r20, %cluster_ctarank;
  st.global.u32 [%rd5], %r20;
  mov.u32 %r20, %clusterid.x;
  st.global.u32 [%rd5+4], %r20;
  mov.u32 %r20, %cluster_nctarank;
  mov.u32 %r21, %nclusterid.x;
  mad.lo.u32 %r20, %r21, 100, %r20;
  st.global.u32 [%rd5+8], %r20;
  mov.u32 %r20, %cluster_ctaid.x;
  mov.pred %p2, %is_explicit_cluster;
  selp.u32 %r21, 10, 0, %p2;
  add.u32 %r20, %r20, %r21;
  st.global.u32 [%rd5+12], %r20;
DONE:
  ret;
)";
  Outcome o = run(clusterKernel(".reqnctapercluster 2, 1, 1", body), 4, 32, 16);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_TRUE(o.findings.empty()) << o.findings[0].message;
  for (uint32_t cta = 0; cta < 4; ++cta) {
    EXPECT_EQ(o.out[4 * cta + 0], cta % 2) << cta;
    EXPECT_EQ(o.out[4 * cta + 1], cta / 2) << cta;
    EXPECT_EQ(o.out[4 * cta + 2], 2u * 100 + 2) << cta;
    EXPECT_EQ(o.out[4 * cta + 3], 10 + cta % 2) << cta;
  }
}

// Each CTA of a 2-CTA cluster fills its buffer, and after a cluster barrier
// every thread reads its element from the other CTA's buffer (mapa +
// ld.shared::cluster); a second barrier keeps both buffers alive until both
// have read.
const std::string kExchange = R"(
  .shared .align 4 .b32 buf[64];
  mov.u32 %r10, buf;
  shl.b32 %r11, %r3, 2;
  add.u32 %r12, %r10, %r11;
  mul.lo.u32 %r13, %r5, 1000;
  add.u32 %r13, %r13, %r3;
  st.shared.u32 [%r12], %r13;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  mov.u32 %r14, %cluster_ctarank;
  xor.b32 %r15, %r14, 1;
  mapa.shared::cluster.u32 %r16, %r12, %r15;
  ld.shared::cluster.u32 %r17, [%r16];
  st.global.u32 [%rd1], %r17;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  ret;
)";

TEST_F(ClusterTest, CtasOfAClusterReadEachOthersSharedMemory) {
  Outcome o = run(clusterKernel(".reqnctapercluster 2, 1, 1", kExchange), 4, 64, 256);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_TRUE(o.findings.empty()) << o.findings[0].message;
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t cta = i / 64, other = cta ^ 1;
    ASSERT_EQ(o.out[i], other * 1000 + i % 64) << i;
  }
}

TEST_F(ClusterTest, ReadingTheSharedMemoryOfACtaThatExitedIsReported) {
  std::string body = kExchange;
  size_t last = body.rfind("  barrier.cluster.arrive.release.aligned;\n  barrier.cluster.wait.acquire.aligned;\n");
  body.erase(last, std::string("  barrier.cluster.arrive.release.aligned;\n  barrier.cluster.wait.acquire.aligned;\n").size());
  size_t first = body.find("  barrier.cluster.arrive.release.aligned;\n  barrier.cluster.wait.acquire.aligned;\n");
  body.erase(first, std::string("  barrier.cluster.arrive.release.aligned;\n  barrier.cluster.wait.acquire.aligned;\n").size());
  std::string ptx = clusterKernel(".reqnctapercluster 2, 1, 1", body);
  Outcome o = run(ptx, 2, 64, 128);
  const exec::LaunchFinding *mem = find(o, "memcheck");
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(mem->line, lineOf(ptx, "ld.shared::cluster"));
  EXPECT_NE(mem->message.find("has exited"), std::string::npos) << mem->message;
}

TEST_F(ClusterTest, AnMbarrierTakesArrivalsFromTheOtherCta) {
  // CTA rank 1's thread 0 writes into rank 0's buffer and arrives on rank 0's
  // mbarrier; rank 0 waits for it, then reads.
  std::string body = R"(
  .shared .align 8 .b64 bar;
  .shared .align 4 .b32 box;
  mov.u32 %r10, bar;
  mov.u32 %r11, box;
  mov.u32 %r14, %cluster_ctarank;
  setp.eq.u32 %p1, %r3, 0;
  setp.eq.u32 %p2, %r14, 0;
  and.pred %p3, %p1, %p2;
  @%p3 mbarrier.init.shared::cta.b64 [%r10], 1;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  @%p2 bra CONSUMER;
  @!%p1 bra DONE;
  mapa.shared::cluster.u32 %r15, %r11, 0;
  st.shared::cluster.u32 [%r15], 4242;
  mapa.shared::cluster.u32 %r16, %r10, 0;
  mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r16];
  bra.uni DONE;
CONSUMER:
  mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p4, [%r10], 0;
  @!%p4 bra CONSUMER;
  ld.shared.u32 %r17, [%r11];
  st.global.u32 [%rd1], %r17;
DONE:
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  ret;
)";
  Outcome o = run(clusterKernel(".reqnctapercluster 2, 1, 1", body), 2, 32, 64);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_TRUE(o.findings.empty()) << o.findings[0].message;
  for (uint32_t i = 0; i < 32; ++i) ASSERT_EQ(o.out[i], 4242u) << i;
  EXPECT_EQ(o.out[32], 0xdeadbeefu);
}

TEST_F(ClusterTest, AClusterWaitWithoutAnArriveIsReported) {
  std::string ptx = clusterKernel(".reqnctapercluster 2, 1, 1", "  barrier.cluster.wait;\n  ret;\n");
  Outcome o = run(ptx, 2, 32, 32);
  const exec::LaunchFinding *sync = find(o, "synccheck");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->line, lineOf(ptx, "barrier.cluster.wait"));
}

TEST_F(ClusterTest, AClusterBarrierThatAThreadNeverReachesIsADeadlock) {
  std::string body = R"(
  setp.eq.u32 %p1, %r3, 0;
  @%p1 bar.sync 1, 32;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  ret;
)";
  std::string ptx = clusterKernel(".reqnctapercluster 2, 1, 1", body);
  Outcome o = run(ptx, 2, 64, 64);
  const exec::LaunchFinding *sync = find(o, "synccheck");
  ASSERT_NE(sync, nullptr) << (o.findings.empty() ? "" : o.findings[0].message);
}

TEST_F(ClusterTest, TheGridMustBeWholeClusters) {
  Outcome o = run(clusterKernel(".reqnctapercluster 2, 1, 1", "  ret;\n"), 3, 32, 32);
  ASSERT_FALSE(o.status);
  EXPECT_NE(o.status.error().message.find("whole number of 2x1x1 clusters"), std::string::npos)
      << o.status.error().message;
}

TEST_F(ClusterTest, MapaBeyondTheClusterIsReported) {
  std::string body = R"(
  .shared .align 4 .b32 buf[32];
  mov.u32 %r10, buf;
  mapa.shared::cluster.u32 %r16, %r10, 2;
  ret;
)";
  std::string ptx = clusterKernel(".reqnctapercluster 2, 1, 1", body);
  Outcome o = run(ptx, 2, 32, 32);
  const exec::LaunchFinding *mem = find(o, "memcheck");
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(mem->line, lineOf(ptx, "mapa"));
}

TEST_F(ClusterTest, WithoutAClusterLaunchEveryCtaIsAClusterOfOne) {
  std::string body = R"(
  .shared .align 4 .b32 buf[32];
  mov.u32 %r10, buf;
  shl.b32 %r11, %r3, 2;
  add.u32 %r12, %r10, %r11;
  st.shared.u32 [%r12], %r1;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  mov.u32 %r14, %cluster_nctarank;
  mapa.shared::cluster.u32 %r16, %r12, 0;
  ld.shared::cluster.u32 %r17, [%r16];
  mad.lo.u32 %r17, %r14, 1000, %r17;
  st.global.u32 [%rd1], %r17;
  ret;
)";
  Outcome o = run(kernel(body), 2, 32, 64);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_TRUE(o.findings.empty()) << o.findings[0].message;
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(o.out[i], 1000 + i) << i;
}

} // namespace
} // namespace ptxforge::emu
