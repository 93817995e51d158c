// The PTX instruction table (PTX ISA up to 9.0, targets sm_75 … sm_90a and the
// common sm_100 additions). One declarative array of opcodes and one of
// modifier gates; both are parsed into hash maps on first use.
//
// Guiding rule: no false positives on PTX that ptxas accepts. Modifier sets are
// unions over every form of an opcode (not positional grammars), and families
// whose modifier grammar is large and rarely mistyped (texture/surface,
// tcgen05, multimem, tensormap) accept any modifier.
#include "ptx/InstructionTable.h"

#include "ptx/ConversionRules.h"

#include "support/Text.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace ptxforge::ptx {

namespace {

// ---------------------------------------------------------------------------
// Modifier groups. `@name` in an entry's modifier string expands to the group.
// ---------------------------------------------------------------------------
struct GroupDef {
  const char *name;
  const char *members;
};

constexpr GroupDef kGroups[] = {
    {"int", "s16 s32 s64 u16 u32 u64"},
    {"int8", "s8 u8"},
    {"bits", "b16 b32 b64"},
    {"allbits", "b8 b16 b32 b64 b128"},
    {"half", "f16 f16x2 bf16 bf16x2"},
    {"fp", "f32 f64"},
    {"rnd", "rn rz rm rp"},
    {"irnd", "rni rzi rmi rpi"},
    {"cmp", "eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan"},
    {"bool", "and or xor"},
    {"space", "global shared local const param shared::cta shared::cluster param::entry param::func"},
    {"cache", "ca cg cs lu cv wb wt"},
    {"sem", "relaxed acquire release acq_rel sc weak volatile mmio"},
    {"scope", "cta gpu sys cluster"},
    {"vec", "v2 v4 v8"},
    {"evict", "L1::evict_normal L1::evict_unchanged L1::evict_first L1::evict_last L1::no_allocate "
              "L2::evict_normal L2::evict_first L2::evict_last L2::evict_unchanged L2::cache_hint "
              "L2::64B L2::128B L2::256B"},
    {"mmatype", "f16 f32 bf16 tf32 f64 s8 u8 s4 u4 b1 s32 e4m3 e5m2 e2m1 e2m3 e3m2 ue8m0 ue4m3 f8f6f4"},
};

// Slots name what a modifier is for, so that a wrong one can be answered with
// "valid comparisons: …". Types are classified through typeInfo().
struct SlotDef {
  const char *slot;
  const char *members;
};

constexpr SlotDef kSlots[] = {
    {"comparison", "eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan"},
    {"rounding mode", "rn rz rm rp rna rs rni rzi rmi rpi"},
    {"boolean operation", "and or xor"},
    {"operation", "add inc dec min max cas exch popc"},
    {"state space", "global shared local const param shared::cta shared::cluster param::entry param::func generic"},
    {"cache operator", "ca cg cs lu cv wb wt"},
    {"memory ordering", "relaxed acquire release acq_rel sc weak volatile mmio"},
    {"scope", "cta gpu sys cluster"},
    {"vector width", "v2 v4 v8"},
    {"cache eviction", "L1::evict_normal L1::evict_unchanged L1::evict_first L1::evict_last L1::no_allocate "
                       "L2::evict_normal L2::evict_first L2::evict_last L2::evict_unchanged L2::cache_hint "
                       "L2::64B L2::128B L2::256B"},
    {"layout", "row col"},
    {"shuffle mode", "up down bfly idx"},
    {"vote mode", "all any uni ballot"},
    {"width", "lo hi wide"},
    {"precision", "approx full"},
};

// ---------------------------------------------------------------------------
// Opcodes. Fields: name, modifiers, sm, arch-specific, ptx (major*10+minor), any.
// `#shape` matches mMnNkK, `#dim` 1d…5d, `prefix*` any modifier starting with prefix.
// ---------------------------------------------------------------------------
struct EntryDef {
  const char *name;
  const char *modifiers;
  uint32_t sm = 0;
  bool archSpecific = false;
  uint32_t ptx = 0;
  bool anyModifier = false;
  const char *sms = ""; ///< ArchGate::sms
};

constexpr EntryDef kEntries[] = {
    // Integer and floating-point arithmetic.
    {"add", "@int s16x2 u16x2 @half @fp f32x2 sat cc @rnd ftz relu"},
    {"sub", "@int s16x2 u16x2 @half @fp f32x2 sat cc @rnd ftz relu"},
    {"addc", "cc s32 u32 s64 u64"},
    {"subc", "cc s32 u32 s64 u64"},
    {"mul", "@int @half @fp f32x2 lo hi wide sat @rnd ftz"},
    {"mad", "@int @half @fp lo hi wide sat cc @rnd ftz relu"},
    {"madc", "lo hi cc s32 u32 s64 u64"},
    {"mul24", "lo hi s32 u32"},
    {"mad24", "lo hi sat s32 u32"},
    {"sad", "@int"},
    {"div", "@int @fp approx full @rnd ftz"},
    {"rem", "@int"},
    {"abs", "s16 s32 s64 @half @fp ftz relu"},
    {"neg", "s16 s32 s64 @half @fp ftz"},
    {"min", "@int s16x2 u16x2 @half @fp ftz NaN xorsign abs relu"},
    {"max", "@int s16x2 u16x2 @half @fp ftz NaN xorsign abs relu"},
    {"fma", "@half @fp f32x2 @rnd ftz sat relu oob"},
    {"rcp", "approx @rnd ftz f32 f64"},
    {"sqrt", "approx @rnd ftz f32 f64"},
    {"rsqrt", "approx ftz f32 f64"},
    {"sin", "approx ftz f32"},
    {"cos", "approx ftz f32"},
    {"lg2", "approx ftz f32"},
    {"ex2", "approx ftz f32 @half"},
    {"tanh", "approx f32 @half", 75, false, 70},
    {"copysign", "f32 f64"},
    {"testp", "finite infinite number notanumber normal subnormal f32 f64"},
    // Bit manipulation and logic.
    {"popc", "b32 b64"},
    {"clz", "b32 b64"},
    {"bfind", "shiftamt s32 u32 s64 u64"},
    {"fns", "b32"},
    {"brev", "b32 b64"},
    {"bfe", "s32 u32 s64 u64"},
    {"bfi", "b32 b64"},
    {"dp4a", "s32 u32", 61, false, 50},
    {"dp2a", "lo hi s32 u32", 61, false, 50},
    {"szext", "clamp wrap s32 u32", 70, false, 76},
    {"bmsk", "clamp wrap b32", 70, false, 76},
    {"lop3", "b32 @bool"},
    {"shf", "l r clamp wrap b32"},
    {"shl", "b16 b32 b64"},
    {"shr", "b16 b32 b64 s16 s32 s64 u16 u32 u64"},
    {"and", "pred @bits"},
    {"or", "pred @bits"},
    {"xor", "pred @bits"},
    {"not", "pred @bits"},
    {"cnot", "@bits"},
    {"prmt", "b32 f4e b4e rc8 ecl ecr rc16"},
    // Comparison and selection.
    {"set", "@cmp @bool ftz s16 s32 s64 u16 u32 u64 b16 b32 b64 f32 f64 @half"},
    {"setp", "@cmp @bool ftz @int @bits @half @fp"},
    {"selp", "@int @bits @fp"},
    {"slct", "ftz @int @bits @fp"},
    // Conversion and movement.
    {"cvt", "@int @int8 @allbits @half tf32 @fp f32x2 e4m3x2 e5m2x2 e2m1x2 e2m3x2 e3m2x2 ue8m0x2 s2f6x2 "
            "e4m3x4 e5m2x4 e2m3x4 e3m2x4 e2m1x4 "
            "e4m3 e5m2 @rnd @irnd rna rs ftz sat satfinite relu"},
    {"cvt.pack", "sat s32 u32 s16 u16 s8 u8 s4 u4 s2 u2 b32", 72, false, 65},
    // `.u32` is 32-bit addressing, which ptxas 13 no longer compiles ("32-Bit
    // compilation is no longer supported"), for every state space.
    {"cvta", "to @space u64"},
    // ptxas rejects half types on mov/ld/st ("Unexpected instruction types"): halves move as .b16/.b32.
    {"mov", "pred @int @allbits @fp v2 v4"},
    {"isspacep", "@space"},
    // Memory.
    {"ld", "@space @cache @sem @scope @vec @evict nc unified @int @int8 @allbits @fp"},
    {"ldu", "global @vec @int @int8 @allbits @fp"},
    {"st", "@space @cache @sem @scope @vec @evict @int @int8 @allbits @fp"},
    {"st.async", "@space @sem @scope @vec mbarrier::complete_tx::bytes @int @allbits @fp", 90, false, 81},
    {"st.bulk", "weak shared::cta", 100, false, 86},
    {"prefetch", "global local L1 L2 @evict tensormap const param"},
    {"prefetchu", "L1"},
    {"applypriority", "global L2::evict_normal", 80, false, 74},
    {"discard", "global L2", 80, false, 74},
    // `createpolicy.range.global` is the documented spelling (.global is optional).
    {"createpolicy", "fractional range cvt global L2 @evict b64", 80, false, 74},
    {"atom", "@space @sem @scope @bool add inc dec min max cas exch noftz @vec @evict "
             "@int @bits b128 @half @fp"},
    {"red", "@space @sem @scope @bool add inc dec min max noftz @vec @evict @int @bits @half @fp"},
    {"red.async", "@space @sem @scope @bool add inc dec min max mbarrier::complete_tx::bytes @int @bits",
     90, false, 81},
    {"alloca", "u32 u64 local", 52, false, 73},
    {"stacksave", "u32 u64", 52, false, 73},
    {"stackrestore", "u32 u64", 52, false, 73},
    // Warp-level.
    {"shfl", "sync up down bfly idx b32"},
    {"vote", "sync all any uni ballot pred b32"},
    {"match", "sync any all b32 b64", 70, false, 60},
    {"redux.sync", "add min max @bool u32 s32 b32 f32 abs NaN", 80, false, 70},
    {"elect.sync", "", 90, false, 80},
    {"activemask", "b32", 30, false, 62},
    // Synchronization.
    {"bar", "sync arrive red warp cta aligned popc @bool u32 pred"},
    {"barrier", "sync arrive red cta aligned popc @bool u32 pred"},
    {"barrier.cluster", "arrive wait relaxed release acquire aligned", 90, false, 78},
    {"membar", "cta gl sys proxy alias"},
    {"fence", "@sem @scope proxy alias async async::* tensormap::* mbarrier_init sync_restrict::* "
              "op_restrict global shared::cta shared::cluster"},
    {"griddepcontrol", "launch_dependents wait", 90, false, 78},
    {"setmaxnreg", "inc dec sync aligned u32", 90, true, 80},
    {"nanosleep", "u32", 70, false, 63},
    // mbarrier.
    {"mbarrier.init", "shared shared::cta b64", 80, false, 70},
    {"mbarrier.arrive", "shared shared::cta shared::cluster b64 noComplete expect_tx release relaxed cta cluster",
     80, false, 70},
    {"mbarrier.arrive_drop", "shared shared::cta shared::cluster b64 noComplete expect_tx release relaxed cta cluster",
     80, false, 70},
    {"mbarrier.expect_tx", "shared shared::cta shared::cluster b64 relaxed cta cluster", 90, false, 80},
    {"mbarrier.complete_tx", "shared shared::cta shared::cluster b64 relaxed cta cluster", 90, false, 80},
    {"mbarrier.test_wait", "shared shared::cta b64 parity acquire relaxed cta cluster", 80, false, 70},
    {"mbarrier.try_wait", "shared shared::cta b64 parity acquire relaxed cta cluster", 90, false, 78},
    {"mbarrier.inval", "shared shared::cta b64", 80, false, 70},
    {"mbarrier.pending_count", "b64", 80, false, 70},
    // Asynchronous copies.
    {"cp.async", "ca cg shared global shared::cta L2::cache_hint L2::64B L2::128B L2::256B", 80, false, 70},
    {"cp.async.commit_group", "", 80, false, 70},
    {"cp.async.wait_group", "", 80, false, 70},
    {"cp.async.wait_all", "", 80, false, 70},
    {"cp.async.mbarrier.arrive", "noinc shared shared::cta b64", 80, false, 70},
    {"cp.async.bulk", "shared::cluster shared::cta global mbarrier::complete_tx::bytes multicast::cluster "
                      "L2::cache_hint bulk_group cp_mask",
     90, false, 80},
    {"cp.async.bulk.tensor", "#dim shared::cluster shared::cta global mbarrier::complete_tx::bytes "
                             "multicast::cluster L2::cache_hint bulk_group tile im2col im2col_no_offs "
                             "tile::* im2col::* cta_group::*",
     90, false, 80},
    {"cp.async.bulk.commit_group", "", 90, false, 80},
    {"cp.async.bulk.wait_group", "read", 90, false, 80},
    {"cp.async.bulk.prefetch", "L2 global L2::cache_hint", 90, false, 80},
    {"cp.async.bulk.prefetch.tensor", "#dim L2 global L2::cache_hint tile im2col tile::* im2col::*", 90, false, 80},
    {"cp.reduce.async.bulk", "shared::cluster shared::cta global mbarrier::complete_tx::bytes bulk_group "
                             "add min max inc dec @bool noftz u32 s32 u64 s64 f32 f64 f16 bf16 b32 b64 "
                             "L2::cache_hint",
     90, false, 80},
    {"cp.reduce.async.bulk.tensor", "#dim shared::cluster shared::cta global bulk_group add min max inc dec @bool "
                                    "tile im2col_no_offs tile::* L2::cache_hint",
     90, false, 80},
    // Matrix instructions.
    {"mma", "sync aligned #shape row col @mmatype satfinite @bool popc sp sp::* kind::* block_scale scale_vec::* "
            "@rnd relu",
     70, false, 64},
    {"ldmatrix", "sync aligned m8n8 m16n16 m8n16 x1 x2 x4 trans shared shared::cta b16 b8 b8x16 b6x16_p32 b4x16_p64",
     75, false, 65},
    {"stmatrix", "sync aligned m8n8 m16n8 x1 x2 x4 trans shared shared::cta b16 b8", 90, false, 78},
    {"movmatrix", "sync aligned m8n8 trans b16", 75, false, 78},
    {"wmma.load", "a b c sync aligned row col #shape @space f16 f32 s32 s8 u8 s4 u4 b1 bf16 tf32 f64", 70, false, 60},
    {"wmma.store", "d sync aligned row col #shape @space f16 f32 s32 f64", 70, false, 60},
    {"wmma.mma", "sync aligned row col #shape @mmatype satfinite @rnd @bool popc", 70, false, 60},
    // wgmma is sm_90a's alone: ptxas refuses it on sm_100a and sm_120a.
    {"wgmma.fence", "sync aligned", 90, true, 80, false, "90"},
    {"wgmma.commit_group", "sync aligned", 90, true, 80, false, "90"},
    {"wgmma.wait_group", "sync aligned", 90, true, 80, false, "90"},
    {"wgmma.mma_async", "sp sync aligned #shape @mmatype satfinite @bool popc", 90, true, 80, false, "90"},
    // Control flow.
    {"bra", "uni"},
    {"brx.idx", "uni"},
    {"call", "uni"},
    {"ret", "uni"},
    {"exit", ""},
    {"trap", ""},
    {"brkpt", ""},
    {"pmevent", "mask"},
    // Cluster.
    {"mapa", "shared::cluster u32 u64", 90, false, 78},
    {"getctarank", "shared::cluster u32 u64", 90, false, 78},
    // Video instructions: integer types only.
    {"vadd", "u32 s32 sat add min max"},
    {"vsub", "u32 s32 sat add min max"},
    {"vabsdiff", "u32 s32 sat add min max"},
    {"vmin", "u32 s32 sat add min max"},
    {"vmax", "u32 s32 sat add min max"},
    {"vshl", "u32 s32 sat clamp wrap add min max"},
    {"vshr", "u32 s32 sat clamp wrap add min max"},
    {"vmad", "u32 s32 sat shr7 shr15 po"},
    {"vset", "u32 s32 @cmp add min max"},
    {"vadd2", "u32 s32 sat add"},
    {"vsub2", "u32 s32 sat add"},
    {"vavrg2", "u32 s32 sat add"},
    {"vabsdiff2", "u32 s32 sat add"},
    {"vmin2", "u32 s32 sat add"},
    {"vmax2", "u32 s32 sat add"},
    {"vset2", "u32 s32 @cmp add"},
    {"vadd4", "u32 s32 sat add"},
    {"vsub4", "u32 s32 sat add"},
    {"vavrg4", "u32 s32 sat add"},
    {"vabsdiff4", "u32 s32 sat add"},
    {"vmin4", "u32 s32 sat add"},
    {"vmax4", "u32 s32 sat add"},
    {"vset4", "u32 s32 @cmp add"},
    // Texture and surface: large grammars, accepted as written.
    {"tex", "", 0, false, 0, true},
    {"tld4", "", 0, false, 0, true},
    {"txq", "", 0, false, 0, true},
    {"suld", "", 0, false, 0, true},
    {"sust", "", 0, false, 0, true},
    {"sured", "", 0, false, 0, true},
    {"suq", "", 0, false, 0, true},
    {"istypep", "", 0, false, 0, true},
    // Newer families, accepted as written behind their gate.
    {"multimem", "", 90, false, 81, true},
    {"tensormap.replace", "", 90, true, 83, true},
    {"tensormap.cp_fenceproxy", "", 90, false, 83, true},
    {"clusterlaunchcontrol", "", 100, false, 86, true},
    {"tcgen05", "", 100, true, 86, true, "100 103 110"},
};

// Per-modifier gates: entries ("*" for any), modifiers, and the gate.
struct ModifierGateDef {
  const char *entries;
  const char *modifiers;
  uint32_t sm;
  bool archSpecific;
  uint32_t ptx;
  const char *sms = ""; ///< ArchGate::sms
  bool archOnly = false;
};

constexpr ModifierGateDef kModifierGates[] = {
    {"add sub mul", "bf16 bf16x2", 90, false, 78},
    {"fma neg abs min max", "bf16 bf16x2", 80, false, 70},
    {"setp set", "bf16 bf16x2", 90, false, 78},
    {"min max", "f16 f16x2 NaN", 80, false, 70},
    {"min max", "xorsign", 86, false, 72},
    {"add sub min max", "s16x2 u16x2", 90, false, 80},
    {"fma", "relu", 80, false, 70},
    {"min max", "relu", 90, false, 80},
    {"fma", "oob", 90, false, 81},
    {"add sub mul fma", "f32x2", 100, false, 86},
    {"tanh ex2", "bf16 bf16x2", 90, false, 78},
    {"ex2", "f16 f16x2", 75, false, 70},
    // cvt's gates belong to its forms (type pair and modifiers): ConversionRules.cpp.
    {"*", "b128", 70, false, 83},
    {"prefetch", "tensormap", 90, false, 80},
    {"*", "cluster shared::cluster", 90, false, 78},
    {"*", "L2::cache_hint", 80, false, 74},
    {"ld st cp.async prefetch", "L2::256B", 80, false, 74},
    {"ld st cp.async prefetch", "L2::64B L2::128B", 75, false, 74},
    {"ld st prefetch", "L1::evict_normal L1::evict_unchanged L1::evict_first L1::evict_last L1::no_allocate "
                       "L2::evict_first L2::evict_last L2::evict_normal",
     70, false, 74},
    {"ld st atom red", "relaxed acquire release acq_rel", 70, false, 60},
    {"atom red", "bf16 bf16x2", 90, false, 78},
    {"atom red", "f16 f16x2", 70, false, 63},
    {"atom red", "v2 v4 v8", 90, false, 81},
    {"atom", "b128", 90, false, 83},
    {"fence", "async mbarrier_init", 90, false, 80},
    // Gates measured with ptxas 13.0 (tests/golden/gates/hopper.probes): the
    // `::cta` spellings of the shared window came with PTX ISA 7.8, `.relaxed`
    // on the waiting and arriving mbarrier forms with 8.6, ...
    {"*", "shared::cta", 0, false, 78},
    {"mbarrier.arrive mbarrier.arrive_drop mbarrier.test_wait mbarrier.try_wait", "relaxed", 90, false, 86},
    {"mbarrier.test_wait", "parity", 0, false, 71},
    {"barrier.cluster", "relaxed", 90, false, 80},
    {"cp.async.bulk", "cp_mask", 100, false, 86},
    {"fence", "tensormap::generic", 90, false, 83},
    {"mbarrier.arrive mbarrier.arrive_drop", "expect_tx release", 90, false, 80},
    {"mbarrier.test_wait mbarrier.try_wait", "acquire", 90, false, 80},
    {"redux.sync", "f32", 100, true, 86, "100 103"},
    {"mma", "m16n8k8 m8n8k16 m8n8k32 m8n8k128", 75, false, 65},
    {"mma", "m16n8k16 m16n8k32 m16n8k4 m16n8k64 m16n8k128 m16n8k256", 80, false, 70},
    {"mma", "bf16 tf32 f64", 80, false, 70},
    {"mma", "e4m3 e5m2", 89, false, 84},
    {"mma", "kind::f8f6f4", 100, true, 86},
    {"ldmatrix", "m16n16 m8n16 b8 b8x16 b6x16_p32 b4x16_p64", 100, true, 86},
    {"stmatrix", "m16n8 b8", 100, true, 86},
};

std::vector<std::string> splitSpaces(std::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && text[pos] == ' ') ++pos;
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    if (end > pos) out.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

bool isShape(std::string_view m) {
  // m<digits>n<digits>k<digits>
  size_t i = 0;
  auto digits = [&](char letter) {
    if (i >= m.size() || m[i] != letter) return false;
    ++i;
    size_t start = i;
    while (i < m.size() && std::isdigit(static_cast<unsigned char>(m[i]))) ++i;
    return i > start;
  };
  return digits('m') && digits('n') && digits('k') && i == m.size();
}

bool isDim(std::string_view m) { return m.size() == 2 && m[0] >= '1' && m[0] <= '5' && m[1] == 'd'; }

struct CompiledEntry {
  std::unordered_set<std::string> literals;
  std::vector<std::string> prefixes; // from `prefix*`
  bool shapes = false;
  bool dims = false;
  std::vector<std::string> ordered; // expanded tokens, table order, for listings
};

struct CompiledGate {
  std::vector<std::string> entries; // empty = any
  std::string modifier;
  ArchGate gate;
};

struct Table {
  std::vector<OpcodeEntry> entries;
  std::vector<CompiledEntry> compiled;
  std::unordered_map<std::string, size_t> byName;
  std::unordered_set<std::string> baseOpcodes;
  std::vector<CompiledGate> gates;
  std::unordered_map<std::string, std::string> slotOf;
};

const Table &table() {
  static const Table instance = [] {
    Table t;
    std::unordered_map<std::string, std::vector<std::string>> groups;
    for (const GroupDef &g : kGroups) groups[g.name] = splitSpaces(g.members);
    for (const SlotDef &s : kSlots)
      for (const std::string &m : splitSpaces(s.members)) t.slotOf.emplace(m, s.slot);

    for (const EntryDef &def : kEntries) {
      OpcodeEntry entry{def.name, ArchGate{def.sm, def.archSpecific, def.ptx, def.sms}, def.anyModifier};
      CompiledEntry compiled;
      for (const std::string &token : splitSpaces(def.modifiers)) {
        std::vector<std::string> expanded;
        if (token[0] == '@') {
          auto it = groups.find(token.substr(1));
          assert(it != groups.end() && "unknown modifier group in instruction table");
          expanded = it->second;
        } else {
          expanded.push_back(token);
        }
        for (const std::string &m : expanded) {
          if (m == "#shape") compiled.shapes = true;
          else if (m == "#dim") compiled.dims = true;
          else if (m.back() == '*') compiled.prefixes.push_back(m.substr(0, m.size() - 1));
          else compiled.literals.insert(m);
          if (std::find(compiled.ordered.begin(), compiled.ordered.end(), m) == compiled.ordered.end())
            compiled.ordered.push_back(m);
        }
      }
      t.byName.emplace(entry.name, t.entries.size());
      t.baseOpcodes.insert(entry.name.substr(0, entry.name.find('.')));
      t.entries.push_back(std::move(entry));
      t.compiled.push_back(std::move(compiled));
    }

    for (const ModifierGateDef &def : kModifierGates) {
      std::vector<std::string> entries;
      if (std::string_view(def.entries) != "*") entries = splitSpaces(def.entries);
      for (const std::string &m : splitSpaces(def.modifiers))
        t.gates.push_back(
            CompiledGate{entries, m, ArchGate{def.sm, def.archSpecific, def.ptx, def.sms, def.archOnly}});
    }
    return t;
  }();
  return instance;
}

bool compiledAllows(const CompiledEntry &c, std::string_view m) {
  if (c.literals.count(std::string(m))) return true;
  if (c.shapes && isShape(m)) return true;
  if (c.dims && isDim(m)) return true;
  for (const std::string &p : c.prefixes)
    if (m.size() > p.size() && m.substr(0, p.size()) == p) return true;
  return false;
}

std::string slotOfModifier(std::string_view m) {
  if (typeInfo(m)) return "type";
  if (isShape(m)) return "shape";
  if (isDim(m)) return "dimension";
  const Table &t = table();
  auto it = t.slotOf.find(std::string(m));
  if (it != t.slotOf.end()) return it->second;
  return "modifier";
}

std::string joinDots(std::string_view opcode, const std::vector<std::string> &modifiers, size_t count) {
  std::string out(opcode);
  for (size_t i = 0; i < count && i < modifiers.size(); ++i) out += "." + modifiers[i];
  return out;
}

} // namespace

std::optional<TypeInfo> typeInfo(std::string_view n) {
  static const std::unordered_map<std::string_view, TypeInfo> types = {
      {"pred", {TypeClass::Pred, 1}},
      {"b8", {TypeClass::Bit, 8}},       {"b16", {TypeClass::Bit, 16}},     {"b32", {TypeClass::Bit, 32}},
      {"b64", {TypeClass::Bit, 64}},     {"b128", {TypeClass::Bit, 128}},   {"s8", {TypeClass::Signed, 8}},
      {"s16", {TypeClass::Signed, 16}},  {"s32", {TypeClass::Signed, 32}},  {"s64", {TypeClass::Signed, 64}},
      {"u8", {TypeClass::Unsigned, 8}},  {"u16", {TypeClass::Unsigned, 16}}, {"u32", {TypeClass::Unsigned, 32}},
      {"u64", {TypeClass::Unsigned, 64}}, {"s16x2", {TypeClass::Signed, 32}}, {"u16x2", {TypeClass::Unsigned, 32}},
      {"f16", {TypeClass::Float, 16}},   {"bf16", {TypeClass::Float, 16}},  {"f16x2", {TypeClass::Float, 32}},
      {"bf16x2", {TypeClass::Float, 32}}, {"tf32", {TypeClass::Float, 32}}, {"f32", {TypeClass::Float, 32}},
      {"f32x2", {TypeClass::Float, 64}}, {"f64", {TypeClass::Float, 64}},   {"e4m3", {TypeClass::Float, 8}},
      {"e5m2", {TypeClass::Float, 8}},   {"e4m3x2", {TypeClass::Float, 16}}, {"e5m2x2", {TypeClass::Float, 16}},
      {"e2m1x2", {TypeClass::Float, 8}}, {"e2m3x2", {TypeClass::Float, 16}}, {"e3m2x2", {TypeClass::Float, 16}},
      {"ue8m0x2", {TypeClass::Float, 16}}, {"s2f6x2", {TypeClass::Float, 16}},
      {"e4m3x4", {TypeClass::Float, 32}}, {"e5m2x4", {TypeClass::Float, 32}}, {"e2m3x4", {TypeClass::Float, 32}},
      {"e3m2x4", {TypeClass::Float, 32}}, {"e2m1x4", {TypeClass::Float, 16}},
  };
  auto it = types.find(n);
  if (it == types.end()) return std::nullopt;
  return it->second;
}

std::string describeType(const TypeInfo &type) {
  switch (type.typeClass) {
  case TypeClass::Pred: return "a predicate";
  case TypeClass::Bit: return "a " + std::to_string(type.bits) + "-bit value";
  case TypeClass::Signed:
  case TypeClass::Unsigned: return "a " + std::to_string(type.bits) + "-bit integer";
  case TypeClass::Float: return "a " + std::to_string(type.bits) + "-bit float";
  }
  return "a value";
}

std::string gateTargetName(const ArchGate &gate) {
  if (gate.sm == 0) return {};
  if (!gate.sms.empty()) {
    std::string names;
    for (const std::string &sm : splitSpaces(gate.sms)) names += (names.empty() ? "sm_" : "/sm_") + sm + "a";
    return names;
  }
  return "sm_" + std::to_string(gate.sm) + (gate.archSpecific ? "a" : "");
}

bool targetMeetsGate(const ArchGate &gate, uint32_t sm, bool archSpecific, bool family) {
  if (gate.sm == 0 || sm == 0) return true;
  if (sm < gate.sm) return false;
  if (!gate.archSpecific) return true;
  if (!archSpecific && !family) return false;
  if (gate.archOnly && !archSpecific) return false;
  if (gate.sms.empty()) return true;
  for (const std::string &listed : splitSpaces(gate.sms))
    if (listed == std::to_string(sm)) return true;
  return false;
}

std::string gatePtxName(const ArchGate &gate) {
  if (gate.ptx == 0) return {};
  return std::to_string(gate.ptx / 10) + "." + std::to_string(gate.ptx % 10);
}

uint32_t minPtxForTarget(std::string_view target) {
  // From the PTX ISA release notes ("PTX ISA version / target" table).
  static const std::unordered_map<std::string_view, uint32_t> minimum = {
      {"sm_10", 10},  {"sm_11", 10},  {"sm_12", 12},  {"sm_13", 12},   {"sm_20", 20},   {"sm_21", 20},
      {"sm_30", 30},  {"sm_32", 40},  {"sm_35", 31},  {"sm_37", 41},
      {"sm_50", 40},  {"sm_52", 41},  {"sm_53", 42},  {"sm_60", 50},   {"sm_61", 50},   {"sm_62", 50},
      {"sm_70", 60},  {"sm_72", 61},  {"sm_75", 63},  {"sm_80", 70},   {"sm_86", 71},   {"sm_87", 74},
      {"sm_88", 90},  {"sm_89", 78},  {"sm_90", 78},  {"sm_90a", 80},  {"sm_100", 86}, {"sm_100a", 86},
      {"sm_100f", 88}, {"sm_101", 86}, {"sm_101a", 86}, {"sm_103", 88}, {"sm_103a", 88}, {"sm_110", 90},
      {"sm_110a", 90}, {"sm_120", 87}, {"sm_120a", 87}, {"sm_121", 88}, {"sm_121a", 88},
  };
  std::string key(target);
  if (key.rfind("compute_", 0) == 0) key = "sm_" + key.substr(8);
  auto it = minimum.find(key);
  return it == minimum.end() ? 0 : it->second;
}

size_t editDistance(std::string_view a, std::string_view b) {
  // PTX names are short; a long one is far from everything (and untrusted
  // input must not buy a quadratic table).
  constexpr size_t kMaxLength = 64;
  if (a.size() > kMaxLength || b.size() > kMaxLength) return std::max(a.size(), b.size());
  // Case-insensitive, and a transposition (`f23` → `f32`) costs one edit.
  return ptxforge::editDistance(a, b, EditDistanceOptions{.ignoreCase = true, .transpositions = true});
}

const std::vector<OpcodeEntry> &allInstructions() { return table().entries; }

bool isKnownBaseOpcode(std::string_view opcode) { return table().baseOpcodes.count(std::string(opcode)) > 0; }

std::optional<OpcodeMatch> lookupInstruction(std::string_view opcode, const std::vector<std::string> &modifiers) {
  const Table &t = table();
  // Longest dotted name first: "cp.async.bulk.tensor" before "cp.async".
  for (size_t count = std::min<size_t>(modifiers.size(), 4) + 1; count-- > 0;) {
    auto it = t.byName.find(joinDots(opcode, modifiers, count));
    if (it != t.byName.end()) return OpcodeMatch{&t.entries[it->second], count};
  }
  return std::nullopt;
}

std::vector<std::string> nearestOpcodes(std::string_view opcode, const std::vector<std::string> &modifiers,
                                        size_t limit) {
  const Table &t = table();
  std::vector<std::pair<size_t, std::string>> scored;
  if (isKnownBaseOpcode(opcode)) {
    // The base exists but no sub-opcode matched: compare dotted names of the
    // same family against the written chain of the same depth.
    for (const OpcodeEntry &e : t.entries) {
      if (e.name.substr(0, e.name.find('.')) != opcode || e.name == opcode) continue;
      size_t depth = static_cast<size_t>(std::count(e.name.begin(), e.name.end(), '.'));
      scored.emplace_back(editDistance(joinDots(opcode, modifiers, depth), e.name), e.name);
    }
  } else {
    std::unordered_set<std::string> seen;
    for (const OpcodeEntry &e : t.entries) {
      std::string base = e.name.substr(0, e.name.find('.'));
      if (!seen.insert(base).second) continue;
      scored.emplace_back(editDistance(opcode, base), base);
    }
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<std::string> out;
  if (scored.empty()) return out;
  size_t best = scored.front().first;
  size_t maxDistance = std::max<size_t>(2, opcode.size() / 2 + 1);
  if (best > maxDistance) return out;
  for (const auto &[distance, name] : scored) {
    if (distance > best + 1 || out.size() >= limit) break;
    out.push_back(name);
  }
  return out;
}

bool entryAllowsModifier(const OpcodeEntry &entry, std::string_view modifier) {
  const Table &t = table();
  if (entry.anyModifier) return true;
  size_t index = static_cast<size_t>(&entry - t.entries.data());
  return compiledAllows(t.compiled[index], modifier);
}

std::vector<std::string> validModifiersInSlot(const OpcodeEntry &entry, std::string_view slot) {
  const Table &t = table();
  size_t index = static_cast<size_t>(&entry - t.entries.data());
  std::vector<std::string> out;
  for (const std::string &m : t.compiled[index].ordered) {
    std::string display = m == "#shape" ? "mMnNkK" : m == "#dim" ? "1d..5d" : m;
    std::string mslot = m == "#shape" ? "shape" : m == "#dim" ? "dimension" : slotOfModifier(m);
    if (mslot == slot) out.push_back(display);
  }
  return out;
}

std::optional<ModifierProblem> checkModifiers(const OpcodeMatch &match, const std::vector<std::string> &modifiers) {
  const Table &t = table();
  const OpcodeEntry &entry = *match.entry;
  if (entry.anyModifier) return std::nullopt;
  size_t index = static_cast<size_t>(&entry - t.entries.data());
  const CompiledEntry &compiled = t.compiled[index];
  for (size_t i = match.consumed; i < modifiers.size(); ++i) {
    const std::string &m = modifiers[i];
    if (compiledAllows(compiled, m)) continue;
    ModifierProblem problem;
    problem.index = i;
    problem.modifier = m;
    problem.slot = slotOfModifier(m);
    // An unknown word: guess the slot from the nearest modifier the opcode accepts.
    size_t bestDistance = SIZE_MAX;
    for (const std::string &candidate : compiled.ordered) {
      if (candidate[0] == '#' || candidate.back() == '*') continue;
      size_t d = editDistance(m, candidate);
      if (d < bestDistance) {
        bestDistance = d;
        problem.suggestion = candidate;
      }
    }
    if (bestDistance > std::max<size_t>(2, m.size() / 2)) problem.suggestion.clear();
    // Spellings borrowed from other languages.
    static const std::unordered_map<std::string, std::string> aliases = {
        {"less", "lt"}, {"lesser", "lt"}, {"greater", "gt"}, {"equal", "eq"}, {"neq", "ne"}, {"lte", "le"},
        {"leq", "le"}, {"gte", "ge"}, {"geq", "ge"}, {"shared_mem", "shared"}, {"f", "f32"}, {"float", "f32"},
        {"double", "f64"}, {"half", "f16"}, {"int", "s32"}, {"uint", "u32"}, {"i32", "s32"}, {"i64", "s64"},
        {"i16", "s16"}, {"i8", "s8"}, {"sync_aligned", "sync"}, {"f16", "b16"}, {"bf16", "b16"},
        {"f16x2", "b32"}, {"bf16x2", "b32"}, {"greater_equal", "ge"}, {"less_equal", "le"},
        {"not_equal", "ne"}, {"equals", "eq"}, {"greater_than", "gt"}, {"less_than", "lt"}};
    auto alias = aliases.find(m);
    if (alias != aliases.end() && compiledAllows(compiled, alias->second)) problem.suggestion = alias->second;
    if (problem.slot == "modifier" && !problem.suggestion.empty()) problem.slot = slotOfModifier(problem.suggestion);
    if (problem.slot == "modifier") {
      // An unrecognizable word most likely fills a slot the chain leaves empty
      // (`setp.greater_equal.s32` has no comparison).
      for (const char *slot : {"comparison", "operation", "boolean operation", "state space", "type"}) {
        if (validModifiersInSlot(entry, slot).empty()) continue;
        bool filled = false;
        for (size_t k = match.consumed; k < modifiers.size(); ++k)
          filled = filled || (k != i && slotOfModifier(modifiers[k]) == slot);
        if (!filled) {
          problem.slot = slot;
          break;
        }
      }
    }
    problem.valid = validModifiersInSlot(entry, problem.slot);
    if (!problem.suggestion.empty() && slotOfModifier(problem.suggestion) != problem.slot) problem.suggestion.clear();
    return problem;
  }
  return std::nullopt;
}

std::vector<Requirement> instructionRequirements(const OpcodeMatch &match, const std::vector<std::string> &modifiers) {
  std::vector<Requirement> out;
  const OpcodeEntry &entry = *match.entry;
  if (entry.gate.sm || entry.gate.ptx) out.push_back(Requirement{entry.gate, "`" + entry.name + "`"});
  const Table &t = table();
  for (size_t i = match.consumed; i < modifiers.size(); ++i) {
    for (const CompiledGate &g : t.gates) {
      if (g.modifier != modifiers[i]) continue;
      if (!g.entries.empty() && std::find(g.entries.begin(), g.entries.end(), entry.name) == g.entries.end()) continue;
      out.push_back(Requirement{g.gate, "`." + modifiers[i] + "` on `" + entry.name + "`"});
    }
  }
  if (entry.name == "cvt")
    for (Requirement &r : conversionRequirements(modifiers)) out.push_back(std::move(r));
  return out;
}

} // namespace ptxforge::ptx
