// Tests for the instruction table queries: lookup, nearest opcodes, modifier
// validity, gates and type information.
#include "ptx/InstructionTable.h"

#include <gtest/gtest.h>

using namespace ptxforge::ptx;

namespace {

std::vector<std::string> mods(std::initializer_list<const char *> list) { return {list.begin(), list.end()}; }

TEST(InstructionTable, LooksUpSimpleAndDottedOpcodes) {
  auto add = lookupInstruction("add", mods({"s32"}));
  ASSERT_TRUE(add);
  EXPECT_EQ(add->entry->name, "add");
  EXPECT_EQ(add->consumed, 0u);

  auto bulk = lookupInstruction("cp", mods({"async", "bulk", "tensor", "2d", "shared::cluster", "global"}));
  ASSERT_TRUE(bulk);
  EXPECT_EQ(bulk->entry->name, "cp.async.bulk.tensor"); // longest match wins
  EXPECT_EQ(bulk->consumed, 3u);

  auto wait = lookupInstruction("mbarrier", mods({"try_wait", "parity", "shared::cta", "b64"}));
  ASSERT_TRUE(wait);
  EXPECT_EQ(wait->entry->name, "mbarrier.try_wait");

  EXPECT_FALSE(lookupInstruction("addd", mods({"f32"})));
  EXPECT_FALSE(lookupInstruction("cp", mods({"asyn", "ca"})));
  EXPECT_TRUE(isKnownBaseOpcode("cp"));
  EXPECT_FALSE(isKnownBaseOpcode("addd"));
}

TEST(InstructionTable, NearestOpcodes) {
  auto near = nearestOpcodes("addd", {});
  ASSERT_FALSE(near.empty());
  EXPECT_EQ(near.front(), "add");
  auto cp = nearestOpcodes("cp", mods({"asyn", "ca"}));
  ASSERT_FALSE(cp.empty());
  EXPECT_EQ(cp.front(), "cp.async");
  EXPECT_TRUE(nearestOpcodes("completelyunrelatedword", {}).empty());
}

TEST(InstructionTable, ValidModifierChainsPass) {
  struct Case {
    const char *opcode;
    std::vector<std::string> modifiers;
  } cases[] = {
      {"add", {"rn", "ftz", "sat", "f32"}},
      {"setp", {"ne", "and", "s32"}},
      {"ld", {"global", "nc", "L1::no_allocate", "L2::256B", "v4", "f32"}},
      {"ld", {"relaxed", "gpu", "global", "u32"}},
      {"st", {"shared", "v2", "b32"}},
      {"atom", {"global", "add", "noftz", "f16x2"}},
      {"mma", {"sync", "aligned", "m16n8k16", "row", "col", "f32", "bf16", "bf16", "f32"}},
      {"wgmma", {"mma_async", "sync", "aligned", "m64n128k16", "f32", "f16", "f16"}},
      {"cp", {"async", "bulk", "tensor", "2d", "shared::cluster", "global", "tile", "mbarrier::complete_tx::bytes"}},
      {"fence", {"proxy", "async", "shared::cta"}},
      {"shfl", {"sync", "bfly", "b32"}},
      {"cvt", {"rn", "satfinite", "e4m3x2", "f32"}},
      {"tex", {"2d", "v4", "f32", "s32"}}, // texture grammar is accepted as written
  };
  for (const Case &c : cases) {
    auto match = lookupInstruction(c.opcode, c.modifiers);
    ASSERT_TRUE(match) << c.opcode;
    EXPECT_FALSE(checkModifiers(*match, c.modifiers)) << c.opcode << "." << c.modifiers.back();
  }
}

TEST(InstructionTable, InvalidModifierNamesSlotAndValidChoices) {
  auto setp = mods({"less", "s32"});
  auto problem = checkModifiers(*lookupInstruction("setp", setp), setp);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->modifier, "less");
  EXPECT_EQ(problem->slot, "comparison");
  EXPECT_EQ(problem->suggestion, "lt");
  EXPECT_NE(std::find(problem->valid.begin(), problem->valid.end(), "ge"), problem->valid.end());

  auto vadd = mods({"f32"});
  problem = checkModifiers(*lookupInstruction("vadd", vadd), vadd);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->slot, "type");
  EXPECT_EQ(problem->valid, (std::vector<std::string>{"u32", "s32"}));

  auto ld = mods({"global", "f16"}); // ptxas: "Unexpected instruction types"
  problem = checkModifiers(*lookupInstruction("ld", ld), ld);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->suggestion, "b16");
}

TEST(InstructionTable, Requirements) {
  auto gateOf = [](const char *opcode, std::vector<std::string> modifiers) {
    ArchGate strictest;
    auto match = lookupInstruction(opcode, modifiers);
    EXPECT_TRUE(match) << opcode;
    for (const Requirement &r : instructionRequirements(*match, modifiers)) {
      strictest.sm = std::max(strictest.sm, r.gate.sm);
      strictest.ptx = std::max(strictest.ptx, r.gate.ptx);
      strictest.archSpecific = strictest.archSpecific || r.gate.archSpecific;
    }
    return strictest;
  };
  EXPECT_EQ(gateOf("cp", mods({"async", "ca", "shared", "global"})).sm, 80u);
  EXPECT_EQ(gateOf("redux", mods({"sync", "add", "u32"})).sm, 80u);
  EXPECT_EQ(gateOf("elect", mods({"sync"})).sm, 90u);
  EXPECT_TRUE(gateOf("wgmma", mods({"fence", "sync", "aligned"})).archSpecific);
  EXPECT_TRUE(gateOf("setmaxnreg", mods({"inc", "sync", "aligned", "u32"})).archSpecific);
  EXPECT_EQ(gateOf("add", mods({"rn", "bf16"})).sm, 90u);
  EXPECT_EQ(gateOf("fma", mods({"rn", "bf16"})).sm, 80u);
  EXPECT_EQ(gateOf("tanh", mods({"approx", "f32"})).sm, 75u);
  EXPECT_EQ(gateOf("tanh", mods({"approx", "f32"})).ptx, 70u);
  EXPECT_EQ(gateOf("mma", mods({"sync", "aligned", "m16n8k8", "row", "col", "f32", "f16", "f16", "f32"})).sm, 75u);
  EXPECT_EQ(gateOf("mma", mods({"sync", "aligned", "m16n8k16", "row", "col", "f32", "f16", "f16", "f32"})).sm, 80u);
  EXPECT_EQ(gateOf("ldmatrix", mods({"sync", "aligned", "m8n8", "x4", "shared", "b16"})).sm, 75u);
  EXPECT_EQ(gateOf("stmatrix", mods({"sync", "aligned", "m8n8", "x4", "shared", "b16"})).sm, 90u);
  EXPECT_EQ(gateOf("fence", mods({"proxy", "async"})).sm, 90u);
  EXPECT_EQ(gateOf("mbarrier", mods({"try_wait", "parity", "shared", "b64"})).sm, 90u);
  EXPECT_EQ(gateOf("add", mods({"s32"})).sm, 0u);
  EXPECT_EQ(minPtxForTarget("sm_90a"), 80u);
  EXPECT_EQ(minPtxForTarget("sm_80"), 70u);
}

TEST(InstructionTable, TypeInfo) {
  EXPECT_EQ(typeInfo("b32"), (TypeInfo{TypeClass::Bit, 32}));
  EXPECT_EQ(typeInfo("s64"), (TypeInfo{TypeClass::Signed, 64}));
  EXPECT_EQ(typeInfo("u8"), (TypeInfo{TypeClass::Unsigned, 8}));
  EXPECT_EQ(typeInfo("f16x2"), (TypeInfo{TypeClass::Float, 32}));
  EXPECT_EQ(typeInfo("bf16"), (TypeInfo{TypeClass::Float, 16}));
  EXPECT_EQ(typeInfo("b128"), (TypeInfo{TypeClass::Bit, 128}));
  EXPECT_EQ(typeInfo("e4m3"), (TypeInfo{TypeClass::Float, 8}));
  EXPECT_EQ(typeInfo("pred"), (TypeInfo{TypeClass::Pred, 1}));
  EXPECT_FALSE(typeInfo("global"));
  EXPECT_EQ(editDistance("f23", "f32"), 1u);
}

} // namespace

TEST(InstructionTable, ArchSpecificGatesNameTheirTargets) {
  auto gateOf = [](const char *opcode, std::vector<std::string> modifiers) {
    auto match = lookupInstruction(opcode, modifiers);
    EXPECT_TRUE(match) << opcode;
    return instructionRequirements(*match, modifiers).front().gate;
  };
  ArchGate wgmma = gateOf("wgmma", mods({"fence", "sync", "aligned"}));
  EXPECT_TRUE(targetMeetsGate(wgmma, 90, true, false));
  EXPECT_FALSE(targetMeetsGate(wgmma, 100, true, false)); // sm_100a has no wgmma
  EXPECT_FALSE(targetMeetsGate(wgmma, 90, false, false));
  EXPECT_EQ(gateTargetName(wgmma), "sm_90a");
  ArchGate tcgen05 = gateOf("tcgen05", mods({"fence::before_thread_sync"}));
  EXPECT_TRUE(targetMeetsGate(tcgen05, 103, false, true)); // sm_103f
  EXPECT_FALSE(targetMeetsGate(tcgen05, 120, true, false));
  EXPECT_EQ(gateTargetName(tcgen05), "sm_100a/sm_103a/sm_110a");
  ArchGate setmaxnreg = gateOf("setmaxnreg", mods({"inc", "sync", "aligned", "u32"}));
  EXPECT_TRUE(targetMeetsGate(setmaxnreg, 120, true, false));
}

TEST(InstructionTable, CvtRequirementsFollowTheForm) {
  auto strictest = [](std::vector<std::string> modifiers) {
    ArchGate gate;
    auto match = lookupInstruction("cvt", modifiers);
    EXPECT_TRUE(match);
    for (const Requirement &r : instructionRequirements(*match, modifiers)) {
      gate.sm = std::max(gate.sm, r.gate.sm);
      gate.ptx = std::max(gate.ptx, r.gate.ptx);
    }
    return gate;
  };
  EXPECT_EQ(strictest(mods({"rn", "bf16", "f32"})).sm, 80u);
  EXPECT_EQ(strictest(mods({"rn", "bf16", "f16"})).sm, 90u);
  EXPECT_EQ(strictest(mods({"f32", "bf16"})).ptx, 71u);
  EXPECT_EQ(strictest(mods({"rna", "tf32", "f32"})).sm, 80u);
  EXPECT_EQ(strictest(mods({"rn", "tf32", "f32"})).sm, 90u);
  EXPECT_EQ(strictest(mods({"rn", "satfinite", "e4m3x2", "f32"})).sm, 89u);
  EXPECT_EQ(strictest(mods({"rn", "f16", "f32"})).sm, 0u);
}
