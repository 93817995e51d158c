// wgmma (sm_90a's warpgroup MMA): wgmma.fence, wgmma.mma_async for the dense
// shapes m64nNk16 (.f16/.bf16), m64nNk8 (.tf32) and m64nNk32 (.e4m3/.e5m2,
// .s8/.u8) with A from a matrix descriptor or registers and B from a
// descriptor, every swizzle mode and both major-nesses where the ISA allows
// them, and wgmma.commit_group/wait_group.
//
// The four warps of a warpgroup meet at wgmma.mma_async (Op::Wgmma, the
// interpreter blocks each until all four issued it) and the product is
// written to the accumulators then. Until a wgmma.wait_group covers its
// group, an accumulator is pending: an instruction that reads it (other than
// the next wgmma.mma_async of the chain) is a racecheck finding, as on the
// GPU its value is undefined. Operands in shared memory are read by the async
// proxy: generic writes need fence.proxy.async before (the same check as for
// bulk copies), and bytes a bulk copy brings must have been waited for.
// Products of f16/bf16/tf32/fp8 inputs are exact in f32; the k-sum is
// accumulated in f32 (round to nearest, ascending k), as Mma.cpp does for
// mma.sync; integer shapes accumulate exactly in s32.
#include "emu/Arith.h"
#include "emu/Async.h"
#include "emu/Decoder.h"
#include "emu/Machine.h"
#include "emu/Wgmma.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

namespace ptxforge::emu {

// ---------------------------------------------------------------------------
// Layouts

WgmmaDescriptor decodeWgmmaDescriptor(uint64_t descriptor) {
  WgmmaDescriptor d;
  d.start = static_cast<uint32_t>(descriptor & 0x3fff) << 4;
  d.leadingBytes = static_cast<uint32_t>((descriptor >> 16) & 0x3fff) << 4;
  d.strideBytes = static_cast<uint32_t>((descriptor >> 32) & 0x3fff) << 4;
  d.baseOffset = static_cast<uint32_t>((descriptor >> 49) & 0x7);
  static constexpr uint32_t kSwizzle[4] = {0, 128, 64, 32};
  d.swizzleBytes = kSwizzle[descriptor >> 62];
  return d;
}

uint32_t wgmmaElementAddress(const WgmmaDescriptor &d, bool mnMajor, uint32_t mn, uint32_t k, unsigned elementBytes) {
  // The canonical layouts (in 16-byte chunks of T elements): K-major
  // ((8,m),(T,2k)):((1T,SBO),(1,LBO)) without swizzling, ((8,m),(T,2k)):((WT,SBO),(1,T))
  // with a W-chunk swizzle; MN-major ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO)) and
  // ((T,W,m),(8,k)):((1,T,LBO),(WT,SBO)).
  uint32_t t = 16 / elementBytes;
  uint32_t w = d.swizzleBytes / 16;
  uint64_t offset;
  if (!mnMajor) {
    uint32_t i0 = mn % 8, i1 = mn / 8, j0 = k % t, j1 = k / t;
    offset = w == 0 ? uint64_t(i0) * 16 + uint64_t(i1) * d.strideBytes + j0 * elementBytes + uint64_t(j1) * d.leadingBytes
                    : uint64_t(i0) * w * 16 + uint64_t(i1) * d.strideBytes + j0 * elementBytes + uint64_t(j1) * 16;
  } else {
    uint32_t j0 = k % 8, j1 = k / 8;
    if (w == 0) {
      uint32_t i0 = mn % t, i2 = mn / t;
      offset = uint64_t(i0) * elementBytes + uint64_t(i2) * d.strideBytes + j0 * 16 + uint64_t(j1) * d.leadingBytes;
    } else {
      uint32_t i0 = mn % t, i1 = (mn / t) % w, i2 = mn / (t * w);
      offset = uint64_t(i0) * elementBytes + i1 * 16 + uint64_t(i2) * d.leadingBytes + uint64_t(j0) * w * 16 +
               uint64_t(j1) * d.strideBytes;
    }
  }
  uint32_t address = static_cast<uint32_t>(d.start + offset);
  if (w) address ^= ((address >> 7) & (w - 1)) << 4;
  return address;
}

WgmmaCoord wgmmaAccumulatorCoord(unsigned warp, unsigned lane, unsigned v) {
  return {16 * warp + lane / 4 + 8 * ((v >> 1) & 1), 2 * (lane % 4) + (v & 1) + 8 * (v >> 2)};
}

WgmmaCoord wgmmaACoord(unsigned elementBits, unsigned warp, unsigned lane, unsigned i) {
  unsigned g = lane / 4, t = lane % 4;
  if (elementBits == 32) return {16 * warp + g + 8 * (i & 1), t + 4 * (i >> 1)};
  if (elementBits == 8) return {16 * warp + g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >> 3)};
  return {16 * warp + g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)};
}

namespace {

enum class WgType : uint8_t { F16, BF16, TF32, E4M3, E5M2, S8, U8, F32, S32 };

std::optional<WgType> wgTypeOf(std::string_view name) {
  static const std::pair<const char *, WgType> kTypes[] = {
      {"f16", WgType::F16},   {"bf16", WgType::BF16}, {"tf32", WgType::TF32}, {"e4m3", WgType::E4M3},
      {"e5m2", WgType::E5M2}, {"s8", WgType::S8},     {"u8", WgType::U8},     {"f32", WgType::F32},
      {"s32", WgType::S32}};
  for (auto &[n, t] : kTypes)
    if (name == n) return t;
  return std::nullopt;
}

unsigned wgBits(WgType t) {
  switch (t) {
  case WgType::F16:
  case WgType::BF16: return 16;
  case WgType::TF32:
  case WgType::F32:
  case WgType::S32: return 32;
  default: return 8;
  }
}

bool wgInteger(WgType t) { return t == WgType::S8 || t == WgType::U8 || t == WgType::S32; }

/// An element's value (floats exactly in f32; integers as themselves).
double elementValue(WgType t, uint32_t bits) {
  switch (t) {
  case WgType::F16: return f16ToF32(static_cast<uint16_t>(bits));
  case WgType::BF16: return bf16ToF32(static_cast<uint16_t>(bits));
  case WgType::TF32: return std::bit_cast<float>(bits & 0xffffe000u);
  case WgType::E4M3: return f16ToF32(e4m3ToF16(static_cast<uint8_t>(bits)));
  case WgType::E5M2: return f16ToF32(e5m2ToF16(static_cast<uint8_t>(bits)));
  case WgType::S8: return static_cast<int8_t>(bits);
  case WgType::U8: return static_cast<uint8_t>(bits);
  default: return 0;
  }
}

// Bits of Inst::offset for Op::Wgmma.
enum WgmmaFlag : uint32_t {
  kTransA = 1 << 0,
  kTransB = 1 << 1,
  kNegA = 1 << 2,
  kNegB = 1 << 3,
  kARegisters = 1 << 4,
  kSatfinite = 1 << 5,
};

// Inst::type/type2/sub hold the d/a/b WgType; Inst::offset2 holds N; aux the
// accumulator list.
struct WgmmaShape {
  WgType d, a, b;
  uint32_t n, k, flags;
};

WgmmaShape shapeOf(const Inst &in) {
  return {static_cast<WgType>(in.sub), static_cast<WgType>(in.sub2), static_cast<WgType>(in.rounding),
          static_cast<uint32_t>(in.offset2), static_cast<uint32_t>(in.target), static_cast<uint32_t>(in.offset)};
}

void execWgmmaCommit(Warp &w, const Inst &, LaneMask) {
  AsyncState &state = *w.cta->async;
  uint32_t &committed = state.wgmmaCommitted[w.index];
  bool any = false;
  for (AsyncState::WgmmaPending &p : state.wgmmaPending)
    if (p.warp == w.index && p.group == AsyncState::kOpenGroup) p.group = committed, any = true;
  // An empty group is a group too (wait_group counts it).
  (void)any;
  ++committed;
}

/// Whether warp `writer` is ordered after a wgmma.wait_group that retired
/// `read`'s wgmma: its own, or one it synchronized with since.
bool orderedAfterRetirement(AsyncState &state, const AsyncState::WgmmaRead &read, uint32_t writer) {
  for (unsigned i = 0; i < 4; ++i)
    if (read.retiredAt[i] && (read.warps[i] == writer || state.known(writer, read.warps[i]) >= read.retiredAt[i]))
      return true;
  return false;
}

void execWgmmaWait(Warp &w, const Inst &in, LaneMask) {
  AsyncState &state = *w.cta->async;
  uint32_t committed = state.wgmmaCommitted[w.index];
  if (committed <= in.aux) return;
  uint32_t doneBelow = committed - in.aux;
  const Program &program = *w.program;
  const uint32_t retirement = state.wgmmaRetires[w.index] + 1;
  bool retired = false;
  std::erase_if(state.wgmmaPending, [&](const AsyncState::WgmmaPending &p) {
    if (p.warp != w.index || p.group == AsyncState::kOpenGroup || p.group >= doneBelow) return false;
    for (const Operand &d : program.operandLists[p.list]) w.written[d.slot] |= p.lanes;
    // The wgmma has completed: it reads its operands no longer, for this warp
    // and for every warp ordered after this wait.
    for (AsyncState::WgmmaRead &r : state.wgmmaReads)
      if (r.instance == p.instance)
        for (unsigned i = 0; i < 4; ++i)
          if (r.warps[i] == w.index && !r.retiredAt[i]) r.retiredAt[i] = retirement, retired = true;
    return true;
  });
  if (retired) state.wgmmaRetires[w.index] = retirement;
  // Retired reads every warp is ordered after say nothing more.
  std::erase_if(state.wgmmaReads, [&](const AsyncState::WgmmaRead &r) {
    for (uint32_t writer = 0; writer < state.wgmmaRetires.size(); ++writer)
      if (!orderedAfterRetirement(state, r, writer)) return false;
    return true;
  });
  // An accumulator that a younger, still pending wgmma writes stays pending
  // (the usual chain of k-steps into one accumulator: `wait_group 1` retires
  // the older ones, not the last).
  for (const AsyncState::WgmmaPending &p : state.wgmmaPending)
    if (p.warp == w.index)
      for (const Operand &d : program.operandLists[p.list]) w.written[d.slot] &= ~p.lanes;
}

bool parseShape(std::string_view m, uint32_t &n, uint32_t &k) {
  if (!m.starts_with("m64n")) return false;
  size_t kAt = m.find('k');
  if (kAt == std::string_view::npos) return false;
  n = static_cast<uint32_t>(std::strtoul(std::string(m.substr(4, kAt - 4)).c_str(), nullptr, 10));
  k = static_cast<uint32_t>(std::strtoul(std::string(m.substr(kAt + 1)).c_str(), nullptr, 10));
  return n && k;
}

bool immediateOf(const ptx::Operand &operand, int64_t &value) {
  if (operand.kind != ptx::Operand::Kind::Integer) return false;
  value = operand.intValue;
  return true;
}

bool decodeMmaAsync(DecodeContext &ctx) {
  const ptx::Instruction &in = ctx.in;
  Inst &out = ctx.out;
  if (ctx.has("sp")) return ctx.unsupported("sparse wgmma (.sp) is not emulated");
  uint32_t n = 0, k = 0;
  std::vector<WgType> types;
  bool shaped = false;
  for (size_t i = 1; i < in.modifiers.size(); ++i) {
    const std::string &m = in.modifiers[i];
    if (m == "sync" || m == "aligned") continue;
    if (m == "satfinite") {
      out.offset |= kSatfinite;
      continue;
    }
    if (parseShape(m, n, k)) {
      shaped = true;
      continue;
    }
    std::optional<WgType> t = wgTypeOf(m);
    if (!t) return ctx.unsupported(fmt::format("modifier .{} is not emulated", m));
    types.push_back(*t);
  }
  if (!shaped || types.size() != 3) return ctx.invalid("needs a shape m64nNkK and the d, a and b types");
  WgType d = types[0], a = types[1], b = types[2];
  bool floats = !wgInteger(a);
  uint32_t expectedK = wgBits(a) == 16 ? 16 : wgBits(a) == 32 ? 8 : 32;
  bool typesOk = (a == WgType::F16 && b == a && (d == WgType::F32 || d == WgType::F16)) ||
                 (a == WgType::BF16 && b == a && d == WgType::F32) || (a == WgType::TF32 && b == a && d == WgType::F32) ||
                 ((a == WgType::E4M3 || a == WgType::E5M2) && (b == WgType::E4M3 || b == WgType::E5M2) &&
                  (d == WgType::F32 || d == WgType::F16)) ||
                 ((a == WgType::S8 || a == WgType::U8) && (b == WgType::S8 || b == WgType::U8) && d == WgType::S32);
  if (!typesOk) return ctx.unsupported("this combination of wgmma types is not emulated");
  bool nOk = floats ? (n % 8 == 0 && n >= 8 && n <= 256) : ((n % 8 == 0 && n <= 32) || (n % 16 == 0 && n <= 256));
  if (k != expectedK || !nOk) return ctx.invalid(fmt::format("m64n{}k{} is not a shape of these types", n, k));
  out.sub = static_cast<uint8_t>(d);
  out.sub2 = static_cast<uint8_t>(a);
  out.rounding = static_cast<Rounding>(b);
  out.offset2 = n;
  out.target = k;

  const auto &ops = in.operands;
  if (ops.size() < 4) return ctx.invalid("takes d, a, b-desc, scale-d and the immediates");
  unsigned dRegisters = d == WgType::F16 ? n / 4 : n / 2;
  if (ops[0].kind != ptx::Operand::Kind::Vector || ops[0].elements.size() != dRegisters)
    return ctx.invalid(fmt::format("m64n{} with .{} accumulators takes {} registers in d", n,
                                   d == WgType::F16 ? "f16" : d == WgType::S32 ? "s32" : "f32", dRegisters));
  bool aRegisters = ops[1].kind == ptx::Operand::Kind::Vector;
  if (aRegisters) {
    if (ops[1].elements.size() != 4) return ctx.invalid("A in registers takes 4 registers");
    out.offset |= kARegisters;
  }
  // Immediates after scale-d: scale-a and scale-b (float types), trans-a
  // (.f16/.bf16 with A in shared memory) and trans-b (.f16/.bf16).
  bool transposable = a == WgType::F16 || a == WgType::BF16;
  size_t immediates = floats ? 2 + (transposable ? (aRegisters ? 1 : 2) : 0) : 0;
  if (ops.size() != 4 + immediates)
    return ctx.invalid(fmt::format("takes d, a, b-desc, scale-d and {} immediates", immediates));
  std::vector<int64_t> imm(immediates);
  for (size_t i = 0; i < immediates; ++i)
    if (!immediateOf(ops[4 + i], imm[i])) return ctx.invalid("imm-scale and imm-trans are integer constants");
  if (floats) {
    for (size_t i = 0; i < 2; ++i)
      if (imm[i] != 1 && imm[i] != -1) return ctx.invalid("imm-scale-a and imm-scale-b are 1 or -1");
    if (imm[0] == -1) out.offset |= kNegA;
    if (imm[1] == -1) out.offset |= kNegB;
    for (size_t i = 2; i < immediates; ++i)
      if (imm[i] != 0 && imm[i] != 1) return ctx.invalid("imm-trans-a and imm-trans-b are 0 or 1");
    if (transposable && !aRegisters && imm[2]) out.offset |= kTransA;
    if (transposable && imm[immediates - 1]) out.offset |= kTransB;
  }
  int list = ctx.addOperandList(ops[0], DType::B32, true);
  if (list < 0) return true;
  out.aux = static_cast<uint32_t>(list);
  if (!ctx.addSrc(ops[1], aRegisters ? DType::B32 : DType::B64) || !ctx.addSrc(ops[2], DType::B64) ||
      !ctx.addSrc(ops[3], DType::Pred))
    return true;
  out.op = Op::Wgmma;
  return true;
}

} // namespace

// ---------------------------------------------------------------------------
// Execution (called by the interpreter when the warpgroup has met)

void executeWgmma(Warp *const *warps, const Inst &in) {
  Warp &w0 = *warps[0];
  unsigned lane0 = static_cast<unsigned>(std::countr_zero(w0.live));
  AsyncState &state = *w0.cta->async;
  const WgmmaShape s = shapeOf(in);
  bool aRegisters = s.flags & kARegisters;
  unsigned aBits = wgBits(s.a), bBits = wgBits(s.b);
  uint64_t aRaw = aRegisters ? 0 : w0.get(in.src(0), lane0);
  uint64_t bRaw = w0.get(in.src(aRegisters ? 4 : 1), lane0);
  bool scaleD = w0.get(in.src(aRegisters ? 5 : 2), lane0) & 1;
  WgmmaDescriptor aDesc = decodeWgmmaDescriptor(aRaw), bDesc = decodeWgmmaDescriptor(bRaw);
  for (const WgmmaDescriptor *d : {&aDesc, &bDesc}) {
    if ((d == &aDesc && aRegisters) || !d->baseOffset || !d->swizzleBytes) continue;
    w0.fault(in, lane0, "unsupported",
             "a wgmma matrix descriptor with a non-zero base offset (a swizzle pattern not aligned to its repeat) "
             "is not emulated");
    return;
  }
  const std::vector<uint8_t> &shared = *w0.cta->shared;
  // The 16-byte chunks of shared memory the operands come from (wgmmaReads).
  std::vector<uint32_t> chunks;
  // Reads one operand element from shared memory through the async proxy.
  auto fetch = [&](const WgmmaDescriptor &d, bool mnMajor, uint32_t mn, uint32_t k, unsigned bits,
                   double &value, WgType type) {
    unsigned bytes = bits / 8;
    uint32_t address = wgmmaElementAddress(d, mnMajor, mn, k, bytes);
    if (address % bytes != 0 || uint64_t(address) + bytes > shared.size()) {
      w0.fault(in, lane0, "memcheck",
               fmt::format("wgmma reads a {}-byte element at shared address 0x{:x} through its matrix descriptor, "
                           "outside the CTA's {} bytes of shared memory (or misaligned)",
                           bytes, address, shared.size()));
      return false;
    }
    if (!state.genericStamp.empty())
      for (uint32_t i = address; i < address + bytes; ++i) {
        uint32_t stamp = state.genericStamp[i];
        if (!(stamp & AsyncState::kStampValid)) continue;
        uint32_t warp = (stamp >> 25) & 0x3f;
        if (warp >= state.proxyFences.size() || (state.proxyFences[warp] & 0xfffff) != (stamp & 0xfffff)) continue;
        w0.fault(in, lane0, "racecheck",
                 fmt::format("missing fence.proxy.async: wgmma reads shared memory at 0x{:x} that a thread of warp {} "
                             "wrote at line {} through the generic proxy with no fence.proxy.async after it (wgmma "
                             "reads its operands through the async proxy),",
                             i, warp, state.genericLine[i]));
        return false;
      }
    if (!asyncSharedAccess(w0, in, lane0, address, bytes, false)) return false;
    chunks.push_back(address / 16);
    uint32_t raw = 0;
    std::memcpy(&raw, shared.data() + address, bytes);
    value = elementValue(type, raw);
    return true;
  };

  const uint32_t m = 64, n = s.n, kDim = s.k;
  std::vector<double> a(size_t(m) * kDim), b(size_t(n) * kDim);
  if (aRegisters) {
    unsigned perRegister = 32 / aBits, count = 4 * perRegister;
    for (unsigned wi = 0; wi < 4; ++wi)
      for (unsigned lane = 0; lane < kWarpSize; ++lane)
        for (unsigned i = 0; i < count; ++i) {
          WgmmaCoord c = wgmmaACoord(aBits, wi, lane, i);
          uint32_t reg = static_cast<uint32_t>(warps[wi]->get(in.src(i / perRegister), lane));
          uint32_t raw = aBits == 32 ? reg : (reg >> (aBits * (i % perRegister))) & ((1u << aBits) - 1);
          a[size_t(c.row) * kDim + c.col] = elementValue(s.a, raw);
        }
  } else {
    for (uint32_t row = 0; row < m; ++row)
      for (uint32_t k = 0; k < kDim; ++k)
        if (!fetch(aDesc, s.flags & kTransA, row, k, aBits, a[size_t(row) * kDim + k], s.a)) return;
  }
  for (uint32_t col = 0; col < n; ++col)
    for (uint32_t k = 0; k < kDim; ++k)
      if (!fetch(bDesc, s.flags & kTransB, col, k, bBits, b[size_t(col) * kDim + k], s.b)) return;
  double signs = ((s.flags & kNegA) ? -1.0 : 1.0) * ((s.flags & kNegB) ? -1.0 : 1.0);

  // Until a wait_group retires it, the wgmma reads these bytes.
  const uint32_t instance = ++state.wgmmaInstances;
  if (!chunks.empty()) {
    std::sort(chunks.begin(), chunks.end());
    chunks.erase(std::unique(chunks.begin(), chunks.end()), chunks.end());
    AsyncState::WgmmaRead read{{}, instance, in.line, {}, {}};
    for (unsigned i = 0; i < 4; ++i) read.warps[i] = warps[i]->index;
    for (uint32_t chunk : chunks) {
      if (!read.ranges.empty() && read.ranges.back().second == chunk * 16) read.ranges.back().second += 16;
      else read.ranges.emplace_back(chunk * 16, chunk * 16 + 16);
    }
    state.track(read.ranges.front().first, read.ranges.back().second);
    state.wgmmaReads.push_back(std::move(read));
  }

  const std::vector<Operand> &dList = w0.program->operandLists[in.aux];
  unsigned elements = n / 2; // per thread
  for (unsigned wi = 0; wi < 4; ++wi) {
    Warp &w = *warps[wi];
    forEachLane(w.live, [&](unsigned lane) {
      for (unsigned v = 0; v < elements; ++v) {
        WgmmaCoord c = wgmmaAccumulatorCoord(wi, lane, v);
        const double *ar = &a[size_t(c.row) * kDim];
        const double *br = &b[size_t(c.col) * kDim];
        const Operand &reg = s.d == WgType::F16 ? dList[v / 2] : dList[v];
        uint64_t old = w.get(reg, lane);
        uint64_t result;
        if (s.d == WgType::S32) {
          int64_t acc = scaleD ? static_cast<int32_t>(old) : 0;
          for (uint32_t k = 0; k < kDim; ++k) acc += static_cast<int64_t>(ar[k]) * static_cast<int64_t>(br[k]);
          if (s.flags & kSatfinite)
            acc = std::clamp<int64_t>(acc, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
          result = static_cast<uint32_t>(static_cast<int32_t>(static_cast<uint64_t>(acc)));
        } else {
          float acc = 0;
          if (scaleD)
            acc = s.d == WgType::F16 ? f16ToF32(static_cast<uint16_t>(old >> (16 * (v & 1))))
                                     : std::bit_cast<float>(static_cast<uint32_t>(old));
          for (uint32_t k = 0; k < kDim; ++k) acc += static_cast<float>(signs * ar[k] * br[k]);
          if (s.d == WgType::F16) {
            unsigned shift = 16 * (v & 1);
            uint64_t half = f32ToF16(acc, Rounding::Rn);
            result = (old & ~(uint64_t(0xffff) << shift) & 0xffffffffu) | (half << shift);
          } else {
            result = std::bit_cast<uint32_t>(acc);
          }
        }
        w.set(reg, lane, result);
      }
    });
    // The accumulators are pending until a wgmma.wait_group covers them.
    for (const Operand &d : dList) w.written[d.slot] &= ~w.live;
    state.wgmmaPending.push_back(
        AsyncState::WgmmaPending{w.index, AsyncState::kOpenGroup, in.aux, w.live, in.line, instance});
  }
}

bool wgmmaPendingRead(Warp &w, const Inst &in, uint32_t slot, LaneMask missing) {
  AsyncState &state = *w.cta->async;
  for (const AsyncState::WgmmaPending &p : state.wgmmaPending) {
    if (p.warp != w.index || !(p.lanes & missing)) continue;
    for (const Operand &d : w.program->operandLists[p.list])
      if (d.slot == slot) {
        w.fault(in, static_cast<unsigned>(std::countr_zero(p.lanes & missing)), "racecheck",
                fmt::format("reads an accumulator of the wgmma.mma_async at line {} before a wgmma.wait_group "
                            "covers it (wgmma.commit_group, then wgmma.wait_group 0 before the accumulators are "
                            "read),",
                            p.line));
        return true;
      }
  }
  return false;
}

const AsyncState::WgmmaRead *wgmmaReadUnordered(AsyncState &state, uint32_t writer, uint32_t begin, uint32_t end) {
  for (const AsyncState::WgmmaRead &read : state.wgmmaReads) {
    if (read.ranges.empty() || read.ranges.back().second <= begin || read.ranges.front().first >= end) continue;
    auto it = std::upper_bound(read.ranges.begin(), read.ranges.end(), begin,
                               [](uint32_t at, const std::pair<uint32_t, uint32_t> &r) { return at < r.second; });
    if (it == read.ranges.end() || it->first >= end) continue;
    if (!orderedAfterRetirement(state, read, writer)) return &read;
  }
  return nullptr;
}

std::string wgmmaReadHazard(const AsyncState::WgmmaRead &read) {
  bool retired = false;
  for (uint32_t at : read.retiredAt) retired = retired || at;
  if (!retired)
    return fmt::format("the wgmma.mma_async at line {} (the warpgroup of warps {}-{}) may still be reading: no "
                       "wgmma.wait_group has retired it yet",
                       read.line, read.warps[0], read.warps[3]);
  return fmt::format("the wgmma.mma_async at line {} (the warpgroup of warps {}-{}) may still be reading: the "
                     "wgmma.wait_group that retired it is not ordered before this write (the warpgroup released the "
                     "memory, e.g. arrived on the mbarrier this thread waited for, before that wait)",
                     read.line, read.warps[0], read.warps[3]);
}

// Retirements exist only once a wgmma ran: until then (and in programs
// without one) mbarriers and CTA barriers have nothing to order.
void wgmmaRelease(AsyncState &state, Mbarrier &barrier, uint32_t warp) {
  if (!state.wgmmaInstances) return;
  const size_t warps = state.wgmmaRetires.size();
  if (barrier.wgmmaReleased.size() != warps) barrier.wgmmaReleased.assign(warps, 0);
  for (uint32_t of = 0; of < warps; ++of)
    barrier.wgmmaReleased[of] =
        std::max(barrier.wgmmaReleased[of], of == warp ? state.wgmmaRetires[of] : state.known(warp, of));
}

void wgmmaAcquire(AsyncState &state, const Mbarrier &barrier, uint32_t warp) {
  if (barrier.wgmmaReleased.size() != state.wgmmaRetires.size()) return;
  for (uint32_t of = 0; of < state.wgmmaRetires.size(); ++of)
    state.known(warp, of) = std::max(state.known(warp, of), barrier.wgmmaReleased[of]);
}

void wgmmaBarrier(AsyncState &state) {
  if (!state.wgmmaInstances) return;
  const size_t warps = state.wgmmaRetires.size();
  for (uint32_t of = 0; of < warps; ++of) {
    uint32_t most = state.wgmmaRetires[of];
    for (uint32_t warp = 0; warp < warps; ++warp) most = std::max(most, state.known(warp, of));
    for (uint32_t warp = 0; warp < warps; ++warp) state.known(warp, of) = most;
  }
}

bool usesWgmmaState(const Inst &inst) {
  return inst.op == Op::Wgmma || inst.exec == execWgmmaCommit || inst.exec == execWgmmaWait;
}

bool decodeWgmma(DecodeContext &ctx) {
  const ptx::Instruction &in = ctx.in;
  Inst &out = ctx.out;
  if (in.opcode != "wgmma") return false;
  if (in.modifiers.empty()) return ctx.invalid("needs an operation");
  const std::string &what = in.modifiers[0];
  if (what == "fence") {
    out.op = Op::Nop; // registers are read when the warpgroup meets at the mma
    return true;
  }
  if (what == "commit_group") {
    out.exec = execWgmmaCommit;
    return true;
  }
  if (what == "wait_group") {
    if (in.operands.size() != 1 || in.operands[0].kind != ptx::Operand::Kind::Integer || in.operands[0].intValue < 0 ||
        in.operands[0].intValue > 63)
      return ctx.invalid("takes the number of groups that may stay pending, an integer constant");
    out.aux = static_cast<uint32_t>(in.operands[0].intValue);
    out.exec = execWgmmaWait;
    return true;
  }
  if (what == "mma_async") return decodeMmaAsync(ctx);
  return ctx.unsupported("this wgmma operation is not emulated");
}

} // namespace ptxforge::emu
