// racecheck's per-word shared-memory shadow (SharedShadow.h): against a shadow
// of every byte (the rule it must answer exactly like) on random access
// sequences, and through kernels: sub-word writes racing with word reads, a
// race across a barrier interval boundary, warps writing neighbouring bytes.
#include "EmuHarness.h"

#include "emu/SharedShadow.h"

#include <random>

namespace ptxforge::emu {
namespace {

/// The rule, byte by byte: a byte's last write and its reads in the current
/// interval, by warp; a hazard is another warp's write (or, for a write,
/// another warp's read) in the same interval.
class ByteShadow {
public:
  explicit ByteShadow(size_t bytes) : bytes_(bytes) {}
  bool access(uint64_t address, uint32_t bytes, const SharedRaceShadow::Access &a,
              SharedRaceShadow::Conflict &conflict) {
    for (uint64_t i = address; i < address + bytes; ++i) {
      SharedAccessState &s = bytes_[i];
      bool hazard = (s.writeEpoch == a.epoch && s.writerWarp != a.warp) ||
                    (a.write && s.readEpoch == a.epoch && s.readerWarp != a.warp);
      if (hazard) {
        conflict = {i, s};
        return false;
      }
      if (a.write) {
        s.writeEpoch = a.epoch, s.writerWarp = a.warp, s.writerLane = a.lane, s.writeLine = a.line;
      } else if (s.readEpoch != a.epoch) {
        s.readEpoch = a.epoch, s.readerWarp = a.warp, s.readerLane = a.lane, s.readLine = a.line;
      } else if (s.readerWarp != a.warp) {
        s.readerWarp = SharedRaceShadow::kSeveralWarps;
      }
    }
    return true;
  }
  void forget(uint64_t address, uint32_t bytes) {
    for (uint64_t i = address; i < address + bytes; ++i) bytes_[i].writeEpoch = 0, bytes_[i].readEpoch = 0;
  }
  const SharedAccessState &state(uint64_t address) const { return bytes_[address]; }

private:
  std::vector<SharedAccessState> bytes_;
};

/// Whether two states say the same in interval `epoch` (stale parts say nothing).
bool sameEffect(const SharedAccessState &a, const SharedAccessState &b, uint32_t epoch) {
  bool aw = a.writeEpoch == epoch, bw = b.writeEpoch == epoch;
  bool ar = a.readEpoch == epoch, br = b.readEpoch == epoch;
  return aw == bw && ar == br &&
         (!aw || (a.writerWarp == b.writerWarp && a.writerLane == b.writerLane && a.writeLine == b.writeLine)) &&
         (!ar || (a.readerWarp == b.readerWarp && a.readerLane == b.readerLane && a.readLine == b.readLine));
}

/// What a state says in interval `epoch`, for a failure's message.
std::string effective(const SharedAccessState &s, uint32_t epoch) {
  std::string text = s.writeEpoch == epoch ? fmt::format("written by warp {} lane {} line {}", s.writerWarp,
                                                         s.writerLane, s.writeLine)
                                           : "not written";
  if (s.readEpoch == epoch) text += fmt::format(", read by warp {} lane {} line {}", s.readerWarp, s.readerLane, s.readLine);
  return text;
}

TEST(SharedShadow, AnswersLikeAShadowOfEveryByte) {
  constexpr size_t kBytes = 64;
  const uint32_t sizes[] = {1, 2, 4, 8, 16};
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 random(seed);
    SharedRaceShadow shadow;
    shadow.resize(kBytes);
    ByteShadow model(kBytes);
    uint32_t epoch = 1;
    for (int step = 0; step < 10000; ++step) {
      uint32_t choice = random() % 100;
      if (choice < 4) { // a barrier
        ++epoch;
        continue;
      }
      uint32_t bytes = sizes[random() % 5];
      uint64_t address = (random() % (kBytes / bytes)) * bytes;
      if (choice < 6) { // an asynchronous-proxy write
        shadow.forget(address, bytes);
        model.forget(address, bytes);
        continue;
      }
      SharedRaceShadow::Access a;
      a.epoch = epoch;
      a.warp = static_cast<uint16_t>(random() % 3);
      a.lane = static_cast<uint8_t>(random() % 32);
      a.write = random() % 3 == 0;
      a.line = 10 + random() % 4;
      SharedRaceShadow::Conflict got, want;
      bool ok = shadow.access(address, bytes, a, got);
      ASSERT_EQ(ok, model.access(address, bytes, a, want))
          << "seed " << seed << " step " << step << ": " << bytes << " bytes at " << address;
      if (!ok) {
        ASSERT_EQ(got.address, want.address) << "seed " << seed << " step " << step;
        // (What the report says: the current parts; stale ones say nothing.)
        ASSERT_EQ(effective(got.state, epoch), effective(want.state, epoch)) << "seed " << seed << " step " << step;
      }
      for (uint64_t i = 0; i < kBytes; ++i)
        if (!sameEffect(shadow.byteState(i), model.state(i), epoch))
          ASSERT_EQ(effective(shadow.byteState(i), epoch), effective(model.state(i), epoch))
              << "seed " << seed << " step " << step << " byte " << i;
    }
  }
}

TEST(SharedShadow, ASubWordWriteRacesWithAWordReadAtItsByte) {
  SharedRaceShadow shadow;
  shadow.resize(16);
  SharedRaceShadow::Conflict conflict;
  SharedRaceShadow::Access write{1, 0, 3, true, 20};
  ASSERT_TRUE(shadow.access(6, 1, write, conflict));
  SharedRaceShadow::Access read{1, 1, 5, false, 30};
  ASSERT_FALSE(shadow.access(4, 4, read, conflict));
  EXPECT_EQ(conflict.address, 6u);
  EXPECT_EQ(conflict.state.writerWarp, 0);
  EXPECT_EQ(conflict.state.writerLane, 3);
  EXPECT_EQ(conflict.state.writeLine, 20u);
  // The same read by the writer's warp, or after a barrier, is not a race.
  SharedRaceShadow::Access sameWarp{1, 0, 9, false, 30};
  EXPECT_TRUE(shadow.access(4, 4, sameWarp, conflict));
  SharedRaceShadow::Access nextInterval{2, 1, 5, false, 30};
  EXPECT_TRUE(shadow.access(4, 4, nextInterval, conflict));
}

TEST(SharedShadow, NeighbouringBytesOfTwoWarpsAreNotARaceAndMergeBack) {
  SharedRaceShadow shadow;
  shadow.resize(8);
  SharedRaceShadow::Conflict conflict;
  for (uint16_t warp = 0; warp < 4; ++warp)
    ASSERT_TRUE(shadow.access(warp, 1, {1, warp, 0, true, 7}, conflict)) << warp;
  // A whole-word write by one warp in the next interval makes the bytes agree
  // (the word is one entry again); another warp's read then races at byte 0.
  ASSERT_TRUE(shadow.access(0, 4, {2, 2, 1, true, 8}, conflict));
  ASSERT_FALSE(shadow.access(0, 4, {2, 3, 0, false, 9}, conflict));
  EXPECT_EQ(conflict.address, 0u);
  EXPECT_EQ(conflict.state.writerWarp, 2);
  EXPECT_EQ(conflict.state.writeLine, 8u);
}

TEST(SharedShadow, AWriteRacesWithTheReadsOfTheSameIntervalOnly) {
  SharedRaceShadow shadow;
  shadow.resize(16);
  SharedRaceShadow::Conflict conflict;
  ASSERT_TRUE(shadow.access(8, 8, {5, 0, 0, false, 1}, conflict));
  ASSERT_TRUE(shadow.access(8, 8, {5, 1, 0, false, 1}, conflict));
  // Two warps read: a write by either is a write-after-read hazard...
  ASSERT_FALSE(shadow.access(12, 4, {5, 0, 2, true, 2}, conflict));
  EXPECT_EQ(conflict.address, 12u);
  EXPECT_EQ(conflict.state.readerWarp, SharedRaceShadow::kSeveralWarps);
  // ...and none in the next interval.
  EXPECT_TRUE(shadow.access(12, 4, {6, 0, 2, true, 2}, conflict));
}

// Kernels: shared memory `buf`, and %r3 = %tid.x.

TEST_F(EmuTest, RacecheckASubWordWriteRacesWithAWordReadOfAnotherWarp) {
  // Warp 0 writes byte 2 of word 0; warp 1 reads word 0 as a whole. With the
  // barrier between them it is not a race.
  std::string body = R"(
  mov.u32 %r20, buf;
  setp.eq.u32 %p1, %r3, 0;
  @%p1 st.shared.u8 [%r20+2], %r3;
  @%p1 st.shared.u32 [%r20+4], %r3;
  {BARRIER}
  setp.eq.u32 %p2, %r3, 32;
  @%p2 ld.shared.u32 %r8, [%r20];
  @%p2 st.global.u32 [%rd1], %r8;
  ret;)";
  auto withBarrier = [&](bool barrier) {
    std::string b = body;
    b.replace(b.find("{BARRIER}"), 9, barrier ? "bar.sync 0;" : "");
    return kernel(b, ".shared .align 4 .b8 buf[64];");
  };
  std::string racy = withBarrier(false);
  Outcome o = run(racy, 1, 64, 64);
  ASSERT_FALSE(o.status);
  const exec::LaunchFinding *race = find(o, "racecheck");
  ASSERT_NE(race, nullptr);
  EXPECT_EQ(race->line, lineOf(racy, "@%p2 ld.shared.u32"));
  EXPECT_NE(race->message.find("read-after-write hazard at shared address 0x2"), std::string::npos) << race->message;
  EXPECT_NE(race->message.find(fmt::format("line {}", lineOf(racy, "st.shared.u8"))), std::string::npos)
      << race->message;
  Outcome clean = run(withBarrier(true), 1, 64, 64);
  ASSERT_TRUE(clean.status) << clean.status.error().message;
  EXPECT_EQ(find(clean, "racecheck"), nullptr);
}

TEST_F(EmuTest, RacecheckTwoWarpsWritingNeighbouringBytesOfAWordIsNotARace) {
  // Thread t of warps 0..3 writes byte t / 32 of word t % 32: each word gets
  // one byte from each warp. After the barrier warp 0 reads the words whole.
  std::string ptx = kernel(R"(
  mov.u32 %r20, buf;
  and.b32 %r6, %r3, 31;
  shr.u32 %r7, %r3, 5;
  shl.b32 %r8, %r6, 2;
  add.u32 %r8, %r8, %r7;
  add.u32 %r8, %r20, %r8;
  add.u32 %r9, %r7, 1;
  st.shared.u8 [%r8], %r9;
  bar.sync 0;
  setp.ge.u32 %p1, %r3, 32;
  @%p1 bra DONE;
  shl.b32 %r10, %r3, 2;
  add.u32 %r10, %r20, %r10;
  ld.shared.u32 %r11, [%r10];
  st.global.u32 [%rd1], %r11;
DONE:
  ret;)",
                           ".shared .align 4 .b8 buf[128];");
  Outcome o = run(ptx, 1, 128, 128);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_TRUE(o.findings.empty()) << o.findings.front().message;
  for (uint32_t i = 0; i < 32; ++i) EXPECT_EQ(o.out[i], 0x04030201u) << i;
}

TEST_F(EmuTest, RacecheckNeighbouringBytesAndAWordReadWithoutABarrierIsARace) {
  // As above without the barrier, and the words read by both warps: warps
  // run in order, so warp 0 has read word 0 whole when warp 1 writes its byte 1.
  std::string ptx = kernel(R"(
  mov.u32 %r20, buf;
  and.b32 %r6, %r3, 31;
  shr.u32 %r7, %r3, 5;
  shl.b32 %r8, %r6, 2;
  add.u32 %r8, %r8, %r7;
  add.u32 %r8, %r20, %r8;
  st.shared.u8 [%r8], %r7;
  shl.b32 %r10, %r6, 2;
  add.u32 %r10, %r20, %r10;
  ld.shared.u32 %r11, [%r10];
  st.global.u32 [%rd1], %r11;
  ret;)",
                           ".shared .align 4 .b8 buf[128];");
  Outcome o = run(ptx, 1, 64, 64);
  ASSERT_FALSE(o.status);
  const exec::LaunchFinding *race = find(o, "racecheck");
  ASSERT_NE(race, nullptr);
  EXPECT_EQ(race->line, lineOf(ptx, "st.shared.u8 [%r8]"));
  EXPECT_NE(race->message.find(fmt::format("write-after-read hazard at shared address 0x1: this write races with an "
                                           "access by thread (0,0,0) (line {})",
                                           lineOf(ptx, "ld.shared.u32 %r11"))),
            std::string::npos)
      << race->message;
  EXPECT_NE(race->message.find("in thread (32,0,0)"), std::string::npos) << race->message;
}

TEST_F(EmuTest, RacecheckARaceAfterABarrierIsInTheNewInterval) {
  // Interval 1: warp 0 writes the word; interval 2: warp 1 reads it, ordered
  // by the barrier. When warp 0 writes the word again in interval 2, warp 1's
  // read races with that write (not with the first one).
  std::string body = R"(
  mov.u32 %r20, buf;
  setp.eq.u32 %p1, %r3, 0;
  setp.eq.u32 %p2, %r3, 32;
  @%p1 st.shared.u32 [%r20], %r3;
  bar.sync 0;
  {REWRITE}
  @%p2 ld.shared.u32 %r8, [%r20];
  @%p2 st.global.u32 [%rd1], %r8;
  ret;)";
  auto make = [&](bool rewrite) {
    std::string b = body;
    b.replace(b.find("{REWRITE}"), 9, rewrite ? "@%p1 st.shared.u32 [%r20], %r4;" : "");
    return kernel(b, ".shared .align 4 .b8 buf[64];");
  };
  Outcome clean = run(make(false), 1, 64, 64);
  ASSERT_TRUE(clean.status) << clean.status.error().message;
  EXPECT_EQ(find(clean, "racecheck"), nullptr);
  EXPECT_EQ(clean.out[32], 0u);
  std::string racy = make(true);
  Outcome o = run(racy, 1, 64, 64);
  ASSERT_FALSE(o.status);
  const exec::LaunchFinding *race = find(o, "racecheck");
  ASSERT_NE(race, nullptr);
  EXPECT_EQ(race->line, lineOf(racy, "@%p2 ld.shared.u32"));
  EXPECT_NE(race->message.find("read-after-write"), std::string::npos) << race->message;
  EXPECT_NE(race->message.find(fmt::format("line {})", lineOf(racy, "st.shared.u32 [%r20], %r4"))), std::string::npos)
      << race->message;
}

TEST_F(EmuTest, InitcheckSeesTheBytesOfAWordThatSubWordWritesLeftUnwritten) {
  // Bytes 0..1 of word 0 written (a u16), bytes 0..3 of word 1 written one
  // by one: a word read of word 0 reads two unwritten bytes, of word 1 none.
  std::string ptx = kernel(R"(
  mov.u32 %r20, buf;
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra DONE;
  st.shared.u16 [%r20], %r3;
  st.shared.u8 [%r20+4], %r3;
  st.shared.u8 [%r20+5], %r3;
  st.shared.u8 [%r20+6], %r3;
  st.shared.u8 [%r20+7], %r3;
  ld.shared.u32 %r8, [%r20+4];
  st.global.u32 [%rd1], %r8;
  ld.shared.u32 %r9, [%r20];
  st.global.u32 [%rd1+4], %r9;
DONE:
  ret;)",
                           ".shared .align 4 .b8 buf[64];");
  Outcome o = run(ptx, 1, 32, 32);
  ASSERT_TRUE(o.status) << o.status.error().message;
  EXPECT_EQ(o.out[0], 0u);
  const exec::LaunchFinding *init = find(o, "initcheck");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->line, lineOf(ptx, "ld.shared.u32 %r9"));
  EXPECT_NE(init->message.find("at shared address 0x2"), std::string::npos) << init->message;
  size_t reports = 0;
  for (const exec::LaunchFinding &f : o.findings) reports += f.check == "initcheck";
  EXPECT_EQ(reports, 1u);
}

} // namespace
} // namespace ptxforge::emu
