// SassLoops: loops, nesting and the hot loop's mix on recorded nvdisasm 13.5
// -json output (sass/*.json, nvcc -arch=sm_90 -cubin -O3 of two task
// references; see sass/README.md), so no nvdisasm is needed.
#include "toolchain/SassLoops.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace ptxforge;
using namespace ptxforge::toolchain;

namespace {

SassStats recorded(const std::string &name) {
  std::ifstream in(std::string(PTXFORGE_TOOLCHAIN_SASS_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream text;
  text << in.rdbuf();
  Result<SassStats> stats = sassStatsFromJson(text.str());
  EXPECT_TRUE(stats.ok()) << (stats ? "" : stats.error().message);
  return stats ? *stats : SassStats{};
}

std::string describe(const FunctionLoops &f) {
  std::string out = f.function + ": " + std::to_string(f.instructions) + " instructions, " +
                    std::to_string(f.blocks) + " blocks\n";
  for (size_t i = 0; i < f.loops.size(); ++i) {
    const SassLoop &l = f.loops[i];
    out += "  loop " + std::to_string(i) + " [" + std::to_string(l.first) + "," + std::to_string(l.last) +
           "] depth " + std::to_string(l.depth) + " parent " + std::to_string(l.parent) + " n " +
           std::to_string(l.mix.instructions) + (l.innermost ? " innermost" : "") + (l.waitLoop ? " wait" : "") +
           (f.hot && *f.hot == static_cast<int>(i) ? " HOT" : "") + "\n";
  }
  return out;
}

} // namespace

TEST(SassLoops, HgemmMainLoopIsTheHotLoop) {
  // The mma.sync main loop (one k-tile: 2 k-steps of 4x4 m16n8k16 tiles) with
  // its register prefetch of the next tile, vector and ragged-edge paths both.
  SassStats stats = recorded("hgemm_reference_sm90.json");
  Result<std::vector<FunctionLoops>> loops = sassLoops(stats);
  ASSERT_TRUE(loops.ok()) << loops.error().message;
  const FunctionLoops *f = pickFunction(*loops, "hgemm");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->function, "hgemm");
  EXPECT_EQ(f->instructions, 1239);
  EXPECT_TRUE(f->note.empty()) << f->note;
  ASSERT_EQ(f->loops.size(), 1u) << describe(*f); // not the self-branch after EXIT
  ASSERT_TRUE(f->hot.has_value());
  const SassLoop &hot = f->loops[static_cast<size_t>(*f->hot)];
  EXPECT_EQ(hot.depth, 1);
  EXPECT_EQ(hot.mix.instructions, 405);
  EXPECT_EQ(hot.listing.size(), 405u);
  EXPECT_EQ(hot.mix.tensorCoreOps, 32);          // 2 k-steps x 4 x 4 HMMA.16816
  EXPECT_EQ(hot.mix.opcodes.at("HMMA"), 32);
  EXPECT_EQ(hot.mix.ldsm, 12);                   // 2 x (4 A + 2 B) ldmatrix.x4
  EXPECT_EQ(hot.mix.stsWidths.at(128), 4);       // the prefetched tile into shared memory
  EXPECT_EQ(hot.mix.barInstructions, 2);
  EXPECT_GT(hot.mix.ldgWidths.at(128), 0);       // the vector path
  EXPECT_GT(hot.mix.ldgWidths.at(16), 0);        // the ragged edge, half by half
  ASSERT_TRUE(hot.mix.mathPerSharedLoad());
  EXPECT_NEAR(*hot.mix.mathPerSharedLoad(), 32.0 / 12.0, 1e-9);
  // The whole function holds more than its loop: the prologue's first tile.
  EXPECT_GT(stats.functions.at("hgemm").opcodes.at("LDG"), hot.mix.ldg);
}

TEST(SassLoops, ReductionGridStrideLoops) {
  // Two grid-stride loops (float4, then the scalar tail), each unrolled by 4
  // with a remainder loop: four loops, none nested; the 4 x LDG.128 one is hot.
  SassStats stats = recorded("sum_reduction_reference_sm90.json");
  Result<std::vector<FunctionLoops>> loops = sassLoops(stats);
  ASSERT_TRUE(loops.ok()) << loops.error().message;
  const FunctionLoops *f = pickFunction(*loops, "sum_reduction");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->loops.size(), 4u) << describe(*f);
  for (const SassLoop &loop : f->loops) {
    EXPECT_EQ(loop.depth, 1);
    EXPECT_TRUE(loop.innermost);
    EXPECT_FALSE(loop.waitLoop);
  }
  ASSERT_EQ(f->hot, 1);
  const SassLoop &hot = f->loops[1];
  EXPECT_EQ(hot.mix.ldgWidths.at(128), 4);
  EXPECT_EQ(hot.mix.ldg, 4);
  EXPECT_EQ(hot.mix.opcodes.at("FADD"), 16);
  EXPECT_FALSE(hot.mix.mathPerSharedLoad());
  EXPECT_EQ(f->loops[3].mix.ldgWidths.at(32), 4);
}

TEST(SassLoops, NestingWaitLoopsAndConditionalExits) {
  // Instruction i sits at byte 16*i. An outer loop (1..9) around an inner one
  // (3..6) that holds an mbarrier wait loop (4..5); a guarded EXIT falls through.
  SassStats stats;
  stats.arch = "sm_90a";
  stats.code = "function k:\n"
               "MOV R0,RZ \n"                       // 0
               "@P0 EXIT \n"                        // 1
               "IADD3 R0,R0,0x1,RZ \n"              // 2  outer header
               "HGMMA.64x128x16.F32 R24,gdesc[UR4],R24 \n" // 3 inner header
               "SYNCS.PHASECHK.TRANS64.TRYWAIT P1,[UR8],R3 \n" // 4 wait loop
               "@!P1 BRA 0x40 \n"                   // 5
               "@P2 BRA 0x30 \n"                    // 6
               "ISETP.NE.AND P3,PT,R0,0x4,PT \n"    // 7
               "LDG.E.64 R4,desc[UR4][R2.64] \n"    // 8
               "@P3 BRA 0x20 \n"                    // 9
               "EXIT \n"                            // 10
               "BRA 0xb0 \n";                       // 11 the self-branch after EXIT
  Result<std::vector<FunctionLoops>> loops = sassLoops(stats);
  ASSERT_TRUE(loops.ok()) << loops.error().message;
  ASSERT_EQ(loops->size(), 1u);
  const FunctionLoops &f = loops->front();
  // By header: 2 (outer), 3 (inner), 4 (wait); the self-branch after the
  // last EXIT is unreachable, so no loop.
  ASSERT_EQ(f.loops.size(), 3u) << describe(f);
  EXPECT_EQ(f.loops[0].header, 2);
  EXPECT_EQ(f.loops[0].depth, 1);
  EXPECT_FALSE(f.loops[0].innermost);
  EXPECT_EQ(f.loops[1].header, 3);
  EXPECT_EQ(f.loops[1].parent, 0);
  EXPECT_EQ(f.loops[1].depth, 2);
  EXPECT_TRUE(f.loops[1].innermost); // its only inner loop waits
  EXPECT_EQ(f.loops[2].header, 4);
  EXPECT_TRUE(f.loops[2].waitLoop);
  EXPECT_EQ(f.loops[2].depth, 3);
  ASSERT_EQ(f.hot, 1);
  EXPECT_EQ(f.loops[1].mix.tensorCoreOps, 1);
  EXPECT_EQ(f.loops[1].mix.instructions, 4);
}

TEST(SassLoops, IndirectBranchesAndOldArchitectures) {
  SassStats stats;
  stats.arch = "sm_90";
  stats.code = "function k:\nBRX R2 -0x10 \nEXIT \n";
  Result<std::vector<FunctionLoops>> loops = sassLoops(stats);
  ASSERT_TRUE(loops.ok());
  EXPECT_NE(loops->front().note.find("indirect branch (BRX)"), std::string::npos);
  stats.code = "function k:\nBRA 0x1000 \n";
  loops = sassLoops(stats);
  ASSERT_TRUE(loops.ok());
  EXPECT_NE(loops->front().note.find("outside the function"), std::string::npos);
  stats.arch = "sm_61";
  loops = sassLoops(stats);
  ASSERT_FALSE(loops.ok());
  EXPECT_NE(loops.error().message.find("sm_70"), std::string::npos);
  stats.arch = "sm_90";
  stats.code = "MOV R0,RZ \n";
  EXPECT_FALSE(sassLoops(stats).ok());
}

TEST(SassLoops, DiffOfTwoHotLoops) {
  SassStats stats = recorded("sum_reduction_reference_sm90.json");
  Result<std::vector<FunctionLoops>> loops = sassLoops(stats);
  ASSERT_TRUE(loops.ok());
  const FunctionLoops &f = loops->front();
  ASSERT_EQ(f.loops.size(), 4u);
  // The float4 loop against the scalar one: same shape, wider loads, more adds.
  HotLoopDiff diff = diffHotLoops(f.loops[1], f.loops[3], 12);
  ASSERT_TRUE(diff.opcodes.count("FADD"));
  EXPECT_EQ(diff.opcodes.at("FADD"), std::make_pair(16, 4));
  EXPECT_EQ(diff.opcodes.count("LDG"), 0u); // 4 each: the widths differ, not the count
  EXPECT_GT(diff.alike, 0);
  EXPECT_LE(diff.aligned.size(), 12u);
  bool sawWide = false;
  for (const auto &[left, right] : diff.aligned)
    if (left.find("LDG.E.128") != std::string::npos && right.empty()) sawWide = true;
  EXPECT_TRUE(sawWide);
  // A loop against itself: everything alike, folded.
  HotLoopDiff same = diffHotLoops(f.loops[1], f.loops[1]);
  EXPECT_TRUE(same.opcodes.empty());
  EXPECT_EQ(same.alike, f.loops[1].mix.instructions);
  EXPECT_EQ(same.aligned.size(), 2u);
  EXPECT_EQ(same.aligned[1].first, "... " + std::to_string(f.loops[1].mix.instructions - 1) + " more alike");
}
