// Warp collectives (shfl/vote/match/redux/elect/bar.warp.sync/activemask) and
// mma.sync. The interpreter runs a collective (Op::WarpSync) only once every
// live lane of its membermask has arrived; the exec functions see that group.
#include "emu/Decoder.h"
#include "emu/Machine.h"
#include "emu/Mma.h"

#include <fmt/format.h>

#include <array>

#include <bit>

namespace ptxforge::emu {

namespace {

enum ShflMode : uint8_t { Up, Down, Bfly, Idx };

void execShfl(Warp &w, const Inst &in, LaneMask active) {
  // d{|p}, a, b, c, membermask
  bool hasPredicate = in.ndst == 2;
  uint64_t a[kWarpSize];
  const uint64_t *arow = w.row(in.src(0).slot);
  for (unsigned l = 0; l < kWarpSize; ++l) a[l] = arow[l];
  forEachLane(active, [&](unsigned lane) {
    uint32_t b = static_cast<uint32_t>(w.get(in.src(1), lane)) & 0x1f; // the ISA's bval = b[4:0]
    uint32_t c = static_cast<uint32_t>(w.get(in.src(2), lane));
    uint32_t segmask = (c >> 8) & 0x1f, clamp = c & 0x1f;
    int maxLane = static_cast<int>((lane & segmask) | (clamp & ~segmask));
    int minLane = static_cast<int>(lane & segmask);
    int j = 0;
    bool valid = false;
    switch (static_cast<ShflMode>(in.sub)) {
    case Up: j = static_cast<int>(lane) - static_cast<int>(b); valid = j >= maxLane; break;
    case Down: j = static_cast<int>(lane) + static_cast<int>(b); valid = j <= maxLane; break;
    case Bfly: j = static_cast<int>(lane ^ b); valid = j <= maxLane; break;
    case Idx: j = minLane | static_cast<int>(b & 0x1f & ~segmask); valid = j <= maxLane; break;
    }
    if (!valid || j < 0 || j > 31) j = static_cast<int>(lane);
    w.set(in.dst(0), lane, lowBits(a[j], 32));
    if (hasPredicate) w.set(in.dst(1), lane, valid ? 1 : 0);
  });
}

enum VoteMode : uint8_t { All, Any, Uni, Ballot };

void execVote(Warp &w, const Inst &in, LaneMask active) {
  LaneMask ballot = 0;
  forEachLane(active, [&](unsigned l) {
    if (w.get(in.src(0), l) & 1) ballot |= 1u << l;
  });
  uint64_t result = 0;
  switch (static_cast<VoteMode>(in.sub)) {
  case All: result = ballot == active; break;
  case Any: result = ballot != 0; break;
  case Uni: result = ballot == 0 || ballot == active; break;
  case Ballot: result = ballot; break;
  }
  forEachLane(active, [&](unsigned l) { w.set(in.dst(0), l, result); });
}

void execMatch(Warp &w, const Inst &in, LaneMask active) {
  // sub: 0 any, 1 all. d{|p}, a, membermask
  uint64_t bits = in.type == DType::B64 ? ~uint64_t(0) : 0xffffffffu;
  forEachLane(active, [&](unsigned l) {
    uint64_t mine = w.get(in.src(0), l) & bits;
    LaneMask same = 0;
    forEachLane(active, [&](unsigned k) {
      if ((w.get(in.src(0), k) & bits) == mine) same |= 1u << k;
    });
    if (in.sub == 0) {
      w.set(in.dst(0), l, same);
    } else {
      bool all = same == active;
      w.set(in.dst(0), l, all ? active : 0);
      if (in.ndst == 2) w.set(in.dst(1), l, all ? 1 : 0);
    }
  });
}

enum ReduxOp : uint8_t { RAdd, RMin, RMax, RAnd, ROr, RXor };

void execRedux(Warp &w, const Inst &in, LaneMask active) {
  bool isSignedType = in.type == DType::S32;
  uint64_t acc = 0;
  bool first = true;
  forEachLane(active, [&](unsigned l) {
    uint32_t v = static_cast<uint32_t>(w.get(in.src(0), l));
    if (first) {
      acc = v;
      first = false;
      return;
    }
    uint32_t a = static_cast<uint32_t>(acc);
    switch (static_cast<ReduxOp>(in.sub)) {
    case RAdd: acc = a + v; break;
    case RAnd: acc = a & v; break;
    case ROr: acc = a | v; break;
    case RXor: acc = a ^ v; break;
    case RMin: acc = isSignedType ? uint32_t(std::min(int32_t(a), int32_t(v))) : std::min(a, v); break;
    case RMax: acc = isSignedType ? uint32_t(std::max(int32_t(a), int32_t(v))) : std::max(a, v); break;
    }
  });
  forEachLane(active, [&](unsigned l) { w.set(in.dst(0), l, lowBits(acc, 32)); });
}

void execElect(Warp &w, const Inst &in, LaneMask active) {
  LaneMask member = static_cast<LaneMask>(w.get(in.src(in.nsrc - 1), static_cast<unsigned>(std::countr_zero(active))));
  LaneMask candidates = member & active;
  unsigned leader = candidates ? static_cast<unsigned>(std::countr_zero(candidates)) : 0;
  forEachLane(active, [&](unsigned l) {
    w.set(in.dst(0), l, leader);
    if (in.ndst == 2) w.set(in.dst(1), l, l == leader ? 1 : 0);
  });
}

void execNothing(Warp &, const Inst &, LaneMask) {}

void execActiveMask(Warp &w, const Inst &in, LaneMask active) {
  forEachLane(active, [&](unsigned l) { w.set(in.dst(0), l, active); });
}

/// movmatrix.sync.aligned.m8n8.trans.b16: the warp's 8x8 matrix of 16-bit
/// elements, held as ldmatrix holds it (lane l: row l/4, columns 2*(l%4) and
/// 2*(l%4)+1, the lower column in the lower half), transposed.
void execMovmatrix(Warp &w, const Inst &in, LaneMask active) {
  if (active != (w.live & w.valid) || w.valid != ~0u) {
    w.fault(in, static_cast<unsigned>(std::countr_zero(active)), "synccheck",
            fmt::format("movmatrix.sync.aligned executed by lanes 0x{:08x}; all 32 lanes of the warp must execute it "
                        "together",
                        active));
    return;
  }
  std::array<std::array<uint16_t, 8>, 8> matrix{};
  for (unsigned l = 0; l < kWarpSize; ++l) {
    const uint32_t word = static_cast<uint32_t>(w.get(in.src(0), l));
    matrix[l / 4][2 * (l % 4)] = static_cast<uint16_t>(word);
    matrix[l / 4][2 * (l % 4) + 1] = static_cast<uint16_t>(word >> 16);
  }
  for (unsigned l = 0; l < kWarpSize; ++l) {
    const unsigned row = l / 4, col = 2 * (l % 4);
    w.set(in.dst(0), l, uint32_t(matrix[col][row]) | (uint32_t(matrix[col + 1][row]) << 16));
  }
}

// mma: the descriptor travels in fields memory instructions use (mma has no
// memory operand): sub = m, sub2 = n, accessBytes = k, type = D, type2 = A,
// aux = B | C << 8, offset bit 0 = A row-major, bit 1 = B row-major.
MmaDesc mmaDescOf(const Inst &in) {
  MmaDesc desc;
  desc.m = in.sub, desc.n = in.sub2, desc.k = in.accessBytes;
  desc.dType = in.type, desc.aType = in.type2;
  desc.bType = static_cast<DType>(in.aux & 0xff), desc.cType = static_cast<DType>((in.aux >> 8) & 0xff);
  desc.aRowMajor = in.offset & 1, desc.bRowMajor = (in.offset >> 1) & 1;
  desc.satfinite = in.flags & kSat;
  return desc;
}

/// Registers per operand as the PTX lists them: mmaRegisterCounts counts
/// 32-bit words, and an .f64 register holds two.
MmaRegisterCounts mmaOperandRegisters(const MmaDesc &desc) {
  MmaRegisterCounts words = mmaRegisterCounts(desc);
  auto regs = [](unsigned count, DType type) { return type == DType::F64 ? count / 2 : count; };
  return {regs(words.a, desc.aType), regs(words.b, desc.bType), regs(words.c, desc.cType), regs(words.d, desc.dType)};
}

void execMma(Warp &w, const Inst &in, LaneMask active) {
  if (active != (w.live & w.valid) || w.valid != ~0u) {
    w.fault(in, static_cast<unsigned>(std::countr_zero(active)), "synccheck",
            fmt::format("mma.sync.aligned executed by lanes 0x{:08x}; all 32 lanes of the warp must execute it "
                        "together",
                        active));
    return;
  }
  MmaDesc desc = mmaDescOf(in);
  MmaRegisterCounts counts = mmaOperandRegisters(desc);
  WarpFragments a{}, b{}, c{}, d{};
  auto gather = [&](WarpFragments &f, unsigned first, unsigned count) {
    for (unsigned l = 0; l < kWarpSize; ++l) {
      unsigned word = 0;
      for (unsigned i = 0; i < count; ++i) {
        const Operand &op = in.src(first + i);
        uint64_t v = w.get(op, l);
        f[l][word++] = static_cast<uint32_t>(v);
        if (op.regBits == 64) f[l][word++] = static_cast<uint32_t>(v >> 32);
      }
    }
  };
  gather(a, 0, counts.a);
  gather(b, counts.a, counts.b);
  gather(c, counts.a + counts.b, counts.c);
  mmaSync(desc, a, b, c, d);
  for (unsigned l = 0; l < kWarpSize; ++l) {
    unsigned word = 0;
    for (unsigned i = 0; i < counts.d; ++i) {
      const Operand &op = in.dst(i);
      uint64_t v = d[l][word++];
      if (op.regBits == 64) v |= uint64_t(d[l][word++]) << 32;
      w.set(op, l, v);
    }
  }
}

bool decodeMma(DecodeContext &ctx) {
  const ptx::Instruction &in = ctx.in;
  Inst &out = ctx.out;
  if (!ctx.has("sync") || !ctx.has("aligned")) return ctx.invalid("needs .sync.aligned");
  MmaDesc desc;
  bool shape = false;
  for (const std::string &m : in.modifiers) {
    unsigned mm = 0, nn = 0, kk = 0;
    if (std::sscanf(m.c_str(), "m%un%uk%u", &mm, &nn, &kk) == 3) desc.m = mm, desc.n = nn, desc.k = kk, shape = true;
    if (m == "row") (desc.aRowMajor = true);
    if (m == "col") desc.bRowMajor = false;
    if (m == "satfinite") desc.satfinite = true;
  }
  // .alayout.blayout appear in order: the first is A's, the second B's.
  std::vector<std::string> layouts;
  for (const std::string &m : in.modifiers)
    if (m == "row" || m == "col") layouts.push_back(m);
  if (layouts.size() == 2) desc.aRowMajor = layouts[0] == "row", desc.bRowMajor = layouts[1] == "row";
  // The types in order; an fp8 element (.e4m3, .e5m2) is named by its
  // packed-pair type, which only cvt otherwise uses.
  std::vector<DType> types;
  for (const std::string &m : in.modifiers) {
    DType t = m == "e4m3" ? DType::E4M3x2 : m == "e5m2" ? DType::E5M2x2 : parseDType(m);
    if (t != DType::None) types.push_back(t);
  }
  if (!shape) return ctx.invalid("needs a shape (.m16n8k16, ...)");
  if (types.size() == 4) desc.dType = types[0], desc.aType = types[1], desc.bType = types[2], desc.cType = types[3];
  else if (types.size() == 2) desc.dType = desc.cType = types[0], desc.aType = desc.bType = types[1];
  else return ctx.invalid("expects .dtype.atype.btype.ctype");
  if (std::string why = mmaUnsupportedReason(desc); !why.empty()) return ctx.unsupported(why);
  MmaRegisterCounts counts = mmaOperandRegisters(desc);
  if (in.operands.size() != 4) return ctx.invalid("takes D, A, B and C");
  if (!ctx.addDst(in.operands[0])) return true;
  DType regType = desc.aType == DType::F64 ? DType::F64 : DType::B32;
  for (int i = 1; i < 4; ++i)
    if (!ctx.addSrc(in.operands[i], i == 3 ? (desc.cType == DType::F64 ? DType::F64 : desc.cType == DType::F32 ? DType::F32 : DType::B32) : regType))
      return true;
  if (out.ndst != counts.d || out.nsrc != counts.a + counts.b + counts.c)
    return ctx.invalid(fmt::format("this shape takes {} D, {} A, {} B and {} C registers", counts.d, counts.a,
                                   counts.b, counts.c));
  out.sub = static_cast<uint8_t>(desc.m), out.sub2 = static_cast<uint8_t>(desc.n);
  out.accessBytes = static_cast<uint8_t>(desc.k);
  out.type = desc.dType, out.type2 = desc.aType;
  out.aux = static_cast<uint32_t>(desc.bType) | (static_cast<uint32_t>(desc.cType) << 8);
  out.offset = (desc.aRowMajor ? 1 : 0) | (desc.bRowMajor ? 2 : 0);
  if (desc.satfinite) out.flags |= kSat;
  out.exec = execMma;
  return true;
}

} // namespace

bool decodeWarp(DecodeContext &ctx) {
  const ptx::Instruction &in = ctx.in;
  Inst &out = ctx.out;
  const std::string &op = in.opcode;
  if (op == "mma") return decodeMma(ctx);
  if (op == "movmatrix") {
    if (!ctx.has("sync") || !ctx.has("aligned") || !ctx.has("m8n8") || !ctx.has("trans") || !ctx.has("b16"))
      return ctx.invalid("is movmatrix.sync.aligned.m8n8.trans.b16");
    if (in.operands.size() != 2 || !ctx.addDst(in.operands[0]) || !ctx.addSrc(in.operands[1], DType::B32)) return true;
    out.exec = execMovmatrix;
    return true;
  }
  if (op == "activemask") {
    if (in.operands.size() != 1 || !ctx.addDst(in.operands[0])) return true;
    out.exec = execActiveMask;
    return true;
  }
  if (op == "bar" && ctx.has("warp")) {
    if (in.operands.size() != 1 || !ctx.addSrc(in.operands[0], DType::B32)) return true;
    out.op = Op::WarpSync;
    out.exec = execNothing;
    return true;
  }
  bool sync = ctx.has("sync");
  if (op == "shfl") {
    if (!sync) return ctx.unsupported("shfl without .sync (removed since sm_70) is not emulated");
    out.sub = ctx.has("up") ? Up : ctx.has("down") ? Down : ctx.has("bfly") ? Bfly : ctx.has("idx") ? Idx : 255;
    if (out.sub == 255) return ctx.invalid("needs .up, .down, .bfly or .idx");
    if (in.operands.size() != 5) return ctx.invalid("takes d{|p}, a, b, c, membermask");
    if (!ctx.addDst(in.operands[0])) return true;
    for (int i = 1; i < 5; ++i)
      if (!ctx.addSrc(in.operands[i], DType::B32)) return true;
    out.op = Op::WarpSync;
    out.exec = execShfl;
    return true;
  }
  if (op == "vote") {
    if (!sync) return ctx.unsupported("vote without .sync (removed since sm_70) is not emulated");
    out.sub = ctx.has("all") ? All : ctx.has("any") ? Any : ctx.has("uni") ? Uni : ctx.has("ballot") ? Ballot : 255;
    if (out.sub == 255) return ctx.invalid("needs .all, .any, .uni or .ballot");
    if (in.operands.size() != 3) return ctx.invalid("takes d, {!}a, membermask");
    if (!ctx.addDst(in.operands[0]) || !ctx.addSrc(in.operands[1], DType::Pred) ||
        !ctx.addSrc(in.operands[2], DType::B32))
      return true;
    out.op = Op::WarpSync;
    out.exec = execVote;
    return true;
  }
  if (op == "match") {
    out.sub = ctx.has("any") ? 0 : ctx.has("all") ? 1 : 255;
    if (out.sub == 255) return ctx.invalid("needs .any or .all");
    std::vector<DType> types = ctx.types();
    out.type = types.empty() ? DType::B32 : types[0];
    if (in.operands.size() != 3) return ctx.invalid("takes d{|p}, a, membermask");
    if (!ctx.addDst(in.operands[0]) || !ctx.addSrc(in.operands[1], out.type) ||
        !ctx.addSrc(in.operands[2], DType::B32))
      return true;
    out.op = Op::WarpSync;
    out.exec = execMatch;
    return true;
  }
  if (op == "redux") {
    static const std::pair<const char *, ReduxOp> kOps[] = {{"add", RAdd}, {"min", RMin}, {"max", RMax},
                                                           {"and", RAnd}, {"or", ROr},   {"xor", RXor}};
    int reduction = -1;
    for (auto &[name, value] : kOps)
      if (ctx.has(name)) reduction = value;
    std::vector<DType> types = ctx.types();
    if (reduction < 0 || types.size() != 1) return ctx.invalid("needs an operation and a type");
    if (isFloat(types[0])) return ctx.unsupported("floating-point redux is not emulated");
    out.sub = static_cast<uint8_t>(reduction);
    out.type = types[0];
    if (in.operands.size() != 3) return ctx.invalid("takes d, a, membermask");
    if (!ctx.addDst(in.operands[0]) || !ctx.addSrc(in.operands[1], out.type) ||
        !ctx.addSrc(in.operands[2], DType::B32))
      return true;
    out.op = Op::WarpSync;
    out.exec = execRedux;
    return true;
  }
  if (op == "elect") {
    if (in.operands.size() != 2) return ctx.invalid("takes d|p, membermask");
    if (!ctx.addDst(in.operands[0]) || !ctx.addSrc(in.operands[1], DType::B32)) return true;
    out.op = Op::WarpSync;
    out.exec = execElect;
    return true;
  }
  return false;
}

} // namespace ptxforge::emu
