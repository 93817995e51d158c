// The memory family: ld/ldu/st, atom/red, cvta/isspacep, cp.async (performed
// at once: the emulator has no asynchronous copies, so commit/wait are
// no-ops), ldmatrix/stmatrix, createpolicy.
#include "emu/Arith.h"
#include "emu/Decoder.h"
#include "emu/Machine.h"
#include "emu/Mma.h"

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <bit>

namespace ptxforge::emu {

namespace {

// Modifiers that only describe caching, ordering or scope: the emulator is
// sequentially consistent and has no caches, so they do not change results.
bool isIgnorableModifier(std::string_view m) {
  static const char *const kIgnored[] = {"weak", "volatile", "relaxed", "acquire", "release", "acq_rel", "mmio",
                                         "cta", "gpu", "sys", "cluster", "ca", "cg", "cs", "lu", "cv", "wb", "wt",
                                         "nc", "sync", "aligned", "noftz"};
  for (const char *ignored : kIgnored)
    if (m == ignored) return true;
  return m.starts_with("L1::") || m.starts_with("L2::");
}

/// The state space named by the modifiers (Generic when none).
std::optional<Space> spaceOf(DecodeContext &ctx) {
  for (const std::string &m : ctx.in.modifiers) {
    if (m == "global") return Space::Global;
    // .shared::cluster addresses carry the CTA's rank (Machine.h); plain ones are this CTA's.
    if (m == "shared" || m == "shared::cta" || m == "shared::cluster") return Space::Shared;
    if (m == "local") return Space::Local;
    if (m == "const") return Space::Const;
    if (m == "param" || m == "param::entry" || m == "param::func") return Space::Param;
  }
  return Space::Generic;
}

unsigned vectorWidth(DecodeContext &ctx) {
  if (ctx.has("v2")) return 2;
  if (ctx.has("v4")) return 4;
  if (ctx.has("v8")) return 8;
  return 1;
}

uint64_t addressOf(const Warp &w, const Inst &in, unsigned lane) {
  return (in.addrSlot != kNoSlot ? w.row(in.addrSlot)[lane] : 0) + static_cast<uint64_t>(in.offset);
}

/// Each active lane's address of the instruction's memory operand.
inline void addressesOf(const Warp &w, const Inst &in, LaneMask active, uint64_t *out) {
  const uint64_t offset = static_cast<uint64_t>(in.offset);
  if (in.addrSlot == kNoSlot) {
    forLanes(active, [&](unsigned l) { out[l] = offset; });
  } else {
    const uint64_t *base = w.row(in.addrSlot);
    forLanes(active, [&](unsigned l) { out[l] = base[l] + offset; });
  }
}

/// A loaded element as the destination register holds it: the type's bits,
/// sign- or zero-extended, cut to the register's declared width.
struct LoadExtend {
  uint64_t typeMask = ~uint64_t(0), signBit = 0, registerMask = ~uint64_t(0);
  LoadExtend(DType type, unsigned regBits) {
    unsigned n = dtypeBits(type);
    if (n > 0 && n < 64) {
      typeMask = (uint64_t(1) << n) - 1;
      if (isSigned(type)) signBit = uint64_t(1) << (n - 1);
    }
    if (regBits > 0 && regBits < 64) registerMask = (uint64_t(1) << regBits) - 1;
  }
  uint64_t operator()(uint64_t v) const {
    v &= typeMask;
    if (v & signBit) v |= ~typeMask;
    return v & registerMask;
  }
};

/// Reads `bytes` (1, 2, 4 or 8) little-endian bytes.
inline uint64_t readBytes(const uint8_t *p, unsigned bytes) {
  switch (bytes) {
  case 4: { uint32_t v; std::memcpy(&v, p, 4); return v; }
  case 8: { uint64_t v; std::memcpy(&v, p, 8); return v; }
  case 2: { uint16_t v; std::memcpy(&v, p, 2); return v; }
  default: return *p;
  }
}

inline void writeBytes(uint8_t *p, unsigned bytes, uint64_t v) {
  switch (bytes) {
  case 4: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(p, &x, 4); return; }
  case 8: std::memcpy(p, &v, 8); return;
  case 2: { uint16_t x = static_cast<uint16_t>(v); std::memcpy(p, &x, 2); return; }
  default: *p = static_cast<uint8_t>(v); return;
  }
}

void execLoad(Warp &w, const Inst &in, LaneMask active) {
  unsigned n = in.ndst, bytes = in.accessBytes;
  uint64_t address[kWarpSize] = {}; // (inactive lanes: never read)
  uint8_t *host[kWarpSize];
  addressesOf(w, in, active, address);
  switch (w.accessLanes(in, active, in.space, address, bytes * n, false, host)) {
  case Warp::kFaulted: return;
  case Warp::kDone:
    for (unsigned i = 0; i < n; ++i) {
      uint64_t *d = w.row(in.ops[i].slot);
      const LoadExtend extend(in.type, in.ops[i].regBits);
      const unsigned at = i * bytes;
      forLanes(active, [&](unsigned l) { d[l] = extend(readBytes(host[l] + at, bytes)); });
    }
    break;
  case Warp::kSlowPath:
    while (active) {
      unsigned l = static_cast<unsigned>(std::countr_zero(active));
      active &= active - 1;
      const uint8_t *p = w.access(in, l, in.space, address[l], bytes * n, false);
      if (!p) return;
      for (unsigned i = 0; i < n; ++i) {
        uint64_t v = 0;
        std::memcpy(&v, p + i * bytes, bytes);
        const Operand &d = in.ops[i];
        w.set(d, l, lowBits(extendBits(in.type, v), d.regBits ? d.regBits : 64));
      }
    }
    break;
  }
  if ((in.memorySync & kSyncStrong) && w.launch->crossCta) w.acquire();
}

void execStore(Warp &w, const Inst &in, LaneMask active) {
  unsigned n = in.nsrc, bytes = in.accessBytes;
  uint64_t address[kWarpSize] = {}; // (inactive lanes: never read)
  uint8_t *host[kWarpSize];
  addressesOf(w, in, active, address);
  switch (w.accessLanes(in, active, in.space, address, bytes * n, true, host)) {
  case Warp::kFaulted: return;
  case Warp::kDone:
    // In lane order, as on the slow path: when lanes write the same bytes,
    // the highest lane's value stays.
    if (n == 1) {
      const Operand &src = in.src(0);
      const uint64_t *v = w.row(src.slot);
      const uint64_t flip = src.negate ? 1 : 0;
      forLanes(active, [&](unsigned l) { writeBytes(host[l], bytes, v[l] ^ flip); });
      return;
    }
    forLanes(active, [&](unsigned l) {
      for (unsigned i = 0; i < n; ++i) writeBytes(host[l] + i * bytes, bytes, w.get(in.src(i), l));
    });
    return;
  case Warp::kSlowPath:
    while (active) {
      unsigned l = static_cast<unsigned>(std::countr_zero(active));
      active &= active - 1;
      uint8_t *p = w.access(in, l, in.space, address[l], bytes * n, true);
      if (!p) return;
      for (unsigned i = 0; i < n; ++i) {
        uint64_t v = w.get(in.src(i), l);
        std::memcpy(p + i * bytes, &v, bytes);
      }
    }
    return;
  }
}

enum AtomOp : uint8_t { AAdd, AMin, AMax, AAnd, AOr, AXor, AExch, ACas, AInc, ADec };

template <typename U> U atomicApply(uint8_t *p, AtomOp op, DType type, uint64_t b, uint64_t c) {
  std::atomic_ref<U> ref(*reinterpret_cast<U *>(p));
  U old = ref.load(std::memory_order_relaxed);
  for (;;) {
    U next = old;
    U bv = static_cast<U>(b);
    switch (op) {
    case AAdd:
      if (type == DType::F32) {
        // atom/red .add.f32 flushes subnormal inputs and results to zeros of
        // their sign, and its NaN is 0x7fffffff (measured on an H200:
        // docs/results/emu-differential-h200-2026-12-06.md).
        float sum = addF32(bitsAs<float>(old), bitsAs<float>(bv), Rounding::Rn, true);
        next = static_cast<U>(std::isnan(sum) ? 0x7fffffffu : asBits(sum));
      }
      else if (type == DType::F64) next = static_cast<U>(asBits(bitsAs<double>(old) + bitsAs<double>(bv)));
      else if (type == DType::F16) next = static_cast<U>(f16Add(uint16_t(old), uint16_t(bv), Rounding::Rn, false, false));
      else if (type == DType::BF16) next = static_cast<U>(bf16Add(uint16_t(old), uint16_t(bv), Rounding::Rn));
      else if (type == DType::F16x2)
        next = static_cast<U>(f16Add(uint16_t(old), uint16_t(bv), Rounding::Rn, false, false) |
                              (uint32_t(f16Add(uint16_t(old >> 16), uint16_t(bv >> 16), Rounding::Rn, false, false)) << 16));
      else if (type == DType::BF16x2)
        next = static_cast<U>(bf16Add(uint16_t(old), uint16_t(bv), Rounding::Rn) |
                              (uint32_t(bf16Add(uint16_t(old >> 16), uint16_t(bv >> 16), Rounding::Rn)) << 16));
      else next = static_cast<U>(old + bv);
      break;
    case AMin:
    case AMax: {
      bool less;
      if (type == DType::F32) {
        float r = op == AMin ? minF32(bitsAs<float>(old), bitsAs<float>(bv), false)
                             : maxF32(bitsAs<float>(old), bitsAs<float>(bv), false);
        next = static_cast<U>(asBits(r));
        break;
      }
      if (type == DType::F16 || type == DType::BF16 || type == DType::F16x2 || type == DType::BF16x2) {
        // The vector forms of 16-bit floats (`atom.global.min.noftz.v2.f16`), per half.
        bool bf = type == DType::BF16 || type == DType::BF16x2;
        auto pick = [&](uint16_t a, uint16_t v) -> uint16_t {
          return bf ? (op == AMin ? bf16Min(a, v, false) : bf16Max(a, v, false))
                    : (op == AMin ? f16Min(a, v, false) : f16Max(a, v, false));
        };
        uint32_t r = pick(uint16_t(old), uint16_t(bv));
        if (sizeof(U) == 4) r |= uint32_t(pick(uint16_t(old >> 16), uint16_t(bv >> 16))) << 16;
        next = static_cast<U>(r);
        break;
      }
      if (isSigned(type)) less = static_cast<int64_t>(extendBits(type, bv)) < static_cast<int64_t>(extendBits(type, old));
      else less = bv < old;
      next = (op == AMin) == less ? bv : old;
      break;
    }
    case AAnd: next = old & bv; break;
    case AOr: next = old | bv; break;
    case AXor: next = old ^ bv; break;
    case AExch: next = bv; break;
    case ACas: next = old == bv ? static_cast<U>(c) : old; break;
    case AInc: next = old >= bv ? 0 : old + 1; break;
    case ADec: next = (old == 0 || old > bv) ? bv : old - 1; break;
    }
    if (next == old && op != AExch) return old;
    if (ref.compare_exchange_weak(old, next, std::memory_order_relaxed)) return old;
  }
}

/// atom/red, scalar or vector: a vector form (`red.global.add.v4.f32`) is one
/// atomic operation per element, on consecutive elements of one aligned access.
void execAtomic(Warp &w, const Inst &in, LaneMask active) {
  unsigned bytes = in.accessBytes;
  AtomOp op = static_cast<AtomOp>(in.sub);
  unsigned width = op == ACas ? 1 : in.nsrc;
  bool hasResult = in.ndst > 0;
  while (active) {
    unsigned l = static_cast<unsigned>(std::countr_zero(active));
    active &= active - 1;
    uint8_t *p = w.access(in, l, in.space, addressOf(w, in, l), bytes * width, true, true);
    if (!p) return;
    for (unsigned e = 0; e < width; ++e) {
      uint64_t b = w.get(in.src(op == ACas ? 0 : e), l);
      uint64_t c = op == ACas ? w.get(in.src(1), l) : 0;
      uint8_t *element = p + e * bytes;
      uint64_t old;
      switch (bytes) {
      case 2: old = atomicApply<uint16_t>(element, op, in.type, b, c); break;
      case 4: old = atomicApply<uint32_t>(element, op, in.type, b, c); break;
      default: old = atomicApply<uint64_t>(element, op, in.type, b, c); break;
      }
      if (hasResult) w.set(in.dst(e), l, old);
    }
  }
  if (w.launch->crossCta) w.acquire();
}

/// membar.gl/.sys, fence.sc/.acq_rel.gpu/.sys: the CTA's writes before it can
/// be published to other CTAs (cross-CTA racecheck); nothing else to do in a
/// sequentially consistent emulator.
void execFence(Warp &w, const Inst &, LaneMask) { ++w.cta->fences; }

/// How a load, store or atomic orders memory between CTAs.
uint8_t memorySyncOf(DecodeContext &ctx, bool atomic) {
  bool ctaScope = ctx.has("cta");
  bool ordered = ctx.has("relaxed") || ctx.has("acquire") || ctx.has("release") || ctx.has("acq_rel");
  uint8_t sync = 0;
  if (atomic || ctx.has("volatile") || ctx.has("mmio") || (ordered && !ctaScope)) sync |= kSyncStrong;
  if ((ctx.has("release") || ctx.has("acq_rel")) && !ctaScope) sync |= kSyncRelease;
  return sync;
}

void execCvta(Warp &w, const Inst &in, LaneMask active) {
  // sub: the window base added (to generic) or subtracted (.to); sub2 = 1 for .to
  uint64_t base = in.offset2;
  const uint64_t *a = w.row(in.src(0).slot);
  uint64_t *d = w.row(in.dst(0).slot);
  const unsigned bits = dtypeBits(in.type);
  const bool to = in.sub2 != 0;
  forLanes(active, [&](unsigned l) {
    uint64_t v = to ? a[l] - base : a[l] + base;
    if (to && base && a[l] < base) v = a[l]; // not an address of that window: leave it alone
    d[l] = lowBits(v, bits);
  });
}

void execIsspacep(Warp &w, const Inst &in, LaneMask active) {
  const uint64_t *a = w.row(in.src(0).slot);
  uint64_t *d = w.row(in.dst(0).slot);
  Space space = static_cast<Space>(in.sub);
  forEachLane(active, [&](unsigned l) {
    uint64_t v = a[l];
    bool inside = false;
    switch (space) {
    case Space::Global: inside = v >= kGlobalBase; break;
    case Space::Shared: inside = v - kSharedWindow < kWindowSize; break;
    case Space::Local: inside = v - kLocalWindow < kWindowSize; break;
    case Space::Const: inside = v - kConstWindow < kWindowSize; break;
    case Space::Param: inside = v - kParamWindow < kWindowSize; break;
    default: break;
    }
    d[l] = inside;
  });
}

void execCpAsync(Warp &w, const Inst &in, LaneMask active) {
  unsigned bytes = in.accessBytes;
  bool hasSrcSize = in.nsrc == 1;
  while (active) {
    unsigned l = static_cast<unsigned>(std::countr_zero(active));
    active &= active - 1;
    uint64_t srcSize = hasSrcSize ? std::min<uint64_t>(w.get(in.src(0), l), bytes) : bytes;
    uint64_t from = (in.addrSlot2 != kNoSlot ? w.row(in.addrSlot2)[l] : 0) + static_cast<uint64_t>(in.offset2);
    uint8_t buffer[16] = {};
    if (srcSize) {
      const uint8_t *src = w.access(in, l, Space::Global, from, bytes, false);
      if (!src) return;
      std::memcpy(buffer, src, srcSize);
    }
    uint8_t *dst = w.access(in, l, Space::Shared, addressOf(w, in, l), bytes, true);
    if (!dst) return;
    std::memcpy(dst, buffer, bytes);
  }
}

void execZero(Warp &w, const Inst &in, LaneMask active) {
  uint64_t *d = w.row(in.dst(0).slot);
  forEachLane(active, [&](unsigned l) { d[l] = 0; });
}

void execLdmatrix(Warp &w, const Inst &in, LaneMask active) {
  unsigned num = in.ndst;
  LaneMask needed = num == 4 ? ~0u : ((1u << (8 * num)) - 1);
  if ((active & (needed | w.live)) != ((needed | w.live) & w.valid)) {
    unsigned lane = static_cast<unsigned>(std::countr_zero(active));
    w.fault(in, lane, "synccheck",
            fmt::format("ldmatrix.sync.aligned executed by lanes 0x{:08x}; every lane of the warp must execute it "
                        "together",
                        active));
    return;
  }
  std::array<std::array<uint8_t, 16>, 32> rows{};
  for (unsigned l = 0; l < 8 * num; ++l) {
    const uint8_t *p = w.access(in, l, in.space, addressOf(w, in, l), 16, false);
    if (!p) return;
    std::memcpy(rows[l].data(), p, 16);
  }
  WarpFragments d{};
  ldmatrix(num, in.flags & kTrans, rows, d);
  forEachLane(active, [&](unsigned l) {
    for (unsigned i = 0; i < num; ++i) w.set(in.dst(i), l, d[l][i]);
  });
}

void execStmatrix(Warp &w, const Inst &in, LaneMask active) {
  unsigned num = in.nsrc;
  if (active != (w.live & w.valid)) {
    w.fault(in, static_cast<unsigned>(std::countr_zero(active)), "synccheck",
            "stmatrix.sync.aligned must be executed by every lane of the warp together");
    return;
  }
  WarpFragments s{};
  forEachLane(active, [&](unsigned l) {
    for (unsigned i = 0; i < num; ++i) s[l][i] = static_cast<uint32_t>(w.get(in.src(i), l));
  });
  std::array<std::array<uint8_t, 16>, 32> rows{};
  stmatrix(num, in.flags & kTrans, s, rows);
  for (unsigned l = 0; l < 8 * num; ++l) {
    uint8_t *p = w.access(in, l, in.space, addressOf(w, in, l), 16, true);
    if (!p) return;
    std::memcpy(p, rows[l].data(), 16);
  }
}

bool decodeLoadStore(DecodeContext &ctx, bool store) {
  const ptx::Instruction &in = ctx.in;
  Inst &out = ctx.out;
  std::optional<Space> space = spaceOf(ctx);
  if (!space) return ctx.unsupported("distributed shared memory (.shared::cluster) is not emulated");
  for (const std::string &m : in.modifiers) {
    if (m == "global" || m == "shared" || m == "shared::cta" || m == "shared::cluster" || m == "local" ||
        m == "const" || m == "param" ||
        m == "v2" || m == "v4" || m == "v8" || parseDType(m) != DType::None || isIgnorableModifier(m) ||
        m == "param::entry" || m == "param::func")
      continue;
    return ctx.unsupported(fmt::format("modifier .{} is not emulated", m));
  }
  std::vector<DType> types = ctx.types();
  if (types.size() != 1) return ctx.invalid("expects exactly one type");
  DType type = types[0];
  if (type == DType::B128) return ctx.unsupported(".b128 accesses are not emulated");
  out.memorySync = memorySyncOf(ctx, false);
  unsigned vec = vectorWidth(ctx);
  out.type = type;
  out.accessBytes = static_cast<uint8_t>(type == DType::Pred ? 1 : dtypeBytes(type));
  if (in.operands.size() < 2) return ctx.invalid("expects a value and an address");
  if (!store) {
    if (!ctx.addDst(in.operands[0])) return true;
    if (out.ndst != vec) return ctx.invalid(fmt::format("vector width .v{} but {} destinations", vec, out.ndst));
    if (!ctx.setAddress(in.operands[1], *space)) return true;
    out.exec = execLoad;
  } else {
    if (!ctx.setAddress(in.operands[0], *space)) return true;
    if (!ctx.addSrc(in.operands[1], type)) return true;
    if (out.nsrc != vec) return ctx.invalid(fmt::format("vector width .v{} but {} values", vec, out.nsrc));
    out.storesSources = type != DType::Pred;
    out.exec = execStore;
  }
  return true;
}

bool decodeAtomic(DecodeContext &ctx, bool hasResult) {
  const ptx::Instruction &in = ctx.in;
  Inst &out = ctx.out;
  std::optional<Space> space = spaceOf(ctx);
  if (!space) return ctx.unsupported("atomics on .shared::cluster are not emulated");
  static const std::pair<const char *, AtomOp> kOps[] = {{"add", AAdd}, {"min", AMin}, {"max", AMax},
                                                         {"and", AAnd}, {"or", AOr},   {"xor", AXor},
                                                         {"exch", AExch}, {"cas", ACas}, {"inc", AInc},
                                                         {"dec", ADec}};
  int op = -1;
  for (auto &[name, value] : kOps)
    if (ctx.has(name)) op = value;
  if (op < 0) return ctx.unsupported("unknown atomic operation");
  std::vector<DType> types = ctx.types();
  if (types.size() != 1) return ctx.invalid("expects exactly one type");
  DType type = types[0];
  unsigned bytes = dtypeBytes(type);
  if (bytes != 2 && bytes != 4 && bytes != 8) return ctx.unsupported(fmt::format(".{} atomics are not emulated", dtypeName(type)));
  unsigned vec = vectorWidth(ctx);
  bool half = type == DType::F16 || type == DType::BF16 || type == DType::F16x2 || type == DType::BF16x2;
  if (vec > 1) {
    // The vector forms (sm_90): .add of f32, .add/.min/.max of 16-bit floats, on global memory.
    bool valid = (op == AAdd && type == DType::F32 && vec <= 4) ||
                 ((op == AAdd || op == AMin || op == AMax) && half && vec * bytes <= 16);
    if (!valid) return ctx.invalid(fmt::format("no .v{} form of this atomic operation on .{}", vec, dtypeName(type)));
    if (*space != Space::Global && *space != Space::Generic)
      return ctx.invalid("vector atomics work on global memory only");
  } else if ((op == AMin || op == AMax) && isFloat(type) && type != DType::F32) {
    return ctx.unsupported("atomic min/max on this float type is not emulated");
  }
  if (op == AAdd && (type == DType::B32 || type == DType::B64)) return ctx.invalid("atom.add needs a typed operand");
  out.type = type;
  out.sub = static_cast<uint8_t>(op);
  out.accessBytes = static_cast<uint8_t>(bytes);
  out.memorySync = memorySyncOf(ctx, true);
  size_t i = 0;
  if (hasResult) {
    if (!ctx.addDst(in.operands[i++])) return true;
  }
  if (i >= in.operands.size() || !ctx.setAddress(in.operands[i++], *space)) return true;
  size_t sources = op == ACas ? 2 : 1;
  for (size_t s = 0; s < sources; ++s) {
    if (i >= in.operands.size()) return ctx.invalid("missing operand");
    if (!ctx.addSrc(in.operands[i++], type)) return true;
  }
  if (out.nsrc != sources * vec || (hasResult && out.ndst != vec))
    return ctx.invalid(fmt::format("vector width .v{} but {} values", vec, out.nsrc));
  out.exec = execAtomic;
  return true;
}

} // namespace

bool decodeMemory(DecodeContext &ctx) {
  const ptx::Instruction &in = ctx.in;
  Inst &out = ctx.out;
  const std::string &op = in.opcode;
  if (op == "ld" || op == "ldu") return decodeLoadStore(ctx, false);
  if (op == "st") return decodeLoadStore(ctx, true);
  if (op == "atom") return decodeAtomic(ctx, true);
  if (op == "red") return decodeAtomic(ctx, false);
  if (op == "membar" || op == "fence") {
    // Only a gpu- or system-scope memory fence orders writes for other CTAs;
    // membar.cta, fence.*.cta and the proxy fences do not.
    bool proxy = ctx.has("proxy") || ctx.has("mbarrier_init");
    bool wide = op == "membar" ? (ctx.has("gl") || ctx.has("sys")) : (ctx.has("gpu") || ctx.has("sys"));
    if (wide && !proxy) {
      out.exec = execFence;
      out.memorySync = kSyncFence;
    } else {
      out.op = Op::Nop;
    }
    return true;
  }
  if (op == "cvta" || op == "isspacep") {
    bool to = ctx.has("to");
    std::optional<Space> space = spaceOf(ctx);
    if (!space || *space == Space::Generic) return ctx.invalid("needs a state space");
    std::vector<DType> types = ctx.types();
    if (in.operands.size() != 2) return ctx.invalid("takes two operands");
    if (!ctx.addDst(in.operands[0])) return true;
    if (op == "isspacep") {
      if (!ctx.addSrc(in.operands[1], DType::U64)) return true;
      out.sub = static_cast<uint8_t>(*space);
      out.exec = execIsspacep;
      return true;
    }
    if (types.size() != 1) return ctx.invalid("expects one size type (.u32/.u64)");
    out.type = types[0];
    if (!ctx.addSrc(in.operands[1], out.type)) return true;
    switch (*space) {
    case Space::Global: out.offset2 = 0; break;
    case Space::Shared: out.offset2 = static_cast<int64_t>(kSharedWindow); break;
    case Space::Local: out.offset2 = static_cast<int64_t>(kLocalWindow); break;
    case Space::Const: out.offset2 = static_cast<int64_t>(kConstWindow); break;
    case Space::Param: out.offset2 = static_cast<int64_t>(kParamWindow); break;
    default: break;
    }
    out.sub2 = to ? 1 : 0;
    out.exec = execCvta;
    return true;
  }
  if (op == "cp" && ctx.has("async")) {
    if (ctx.has("bulk")) return ctx.unsupported("bulk asynchronous copies (TMA) are not emulated");
    if (ctx.has("commit_group") || ctx.has("wait_group") || ctx.has("wait_all")) {
      out.op = Op::Nop; // copies complete when issued
      return true;
    }
    if (ctx.has("mbarrier")) return ctx.unsupported("cp.async.mbarrier.arrive is not emulated");
    if (in.operands.size() < 3) return ctx.invalid("takes a destination, a source and a size");
    if (in.operands[2].kind != ptx::Operand::Kind::Integer) return ctx.invalid("the copy size must be 4, 8 or 16");
    int64_t size = in.operands[2].intValue;
    if (size != 4 && size != 8 && size != 16) return ctx.invalid("the copy size must be 4, 8 or 16");
    if (!ctx.setAddress(in.operands[1], Space::Global)) return true;
    out.addrSlot2 = out.addrSlot, out.offset2 = out.offset;
    if (!ctx.setAddress(in.operands[0], Space::Shared)) return true;
    out.accessBytes = static_cast<uint8_t>(size);
    if (in.operands.size() >= 4 && in.operands[3].kind != ptx::Operand::Kind::Name) {
      if (!ctx.addSrc(in.operands[3], DType::U32)) return true; // src-size
    } else if (in.operands.size() >= 4 && !ctx.has("L2::cache_hint")) {
      if (!ctx.addSrc(in.operands[3], DType::U32)) return true;
    }
    out.exec = execCpAsync;
    return true;
  }
  if (op == "ldmatrix" || op == "stmatrix") {
    if (!ctx.has("m8n8") || !ctx.has("b16"))
      return ctx.unsupported("only the .m8n8 .b16 shape is emulated");
    unsigned num = ctx.has("x4") ? 4 : ctx.has("x2") ? 2 : ctx.has("x1") ? 1 : 0;
    if (!num) return ctx.invalid("needs .x1, .x2 or .x4");
    std::optional<Space> space = spaceOf(ctx);
    if (!space || (*space != Space::Shared && *space != Space::Generic)) return ctx.invalid("addresses shared memory");
    if (ctx.has("trans")) out.flags |= kTrans;
    if (in.operands.size() != 2) return ctx.invalid("takes a register vector and an address");
    if (op == "ldmatrix") {
      if (!ctx.addDst(in.operands[0]) || !ctx.setAddress(in.operands[1], *space)) return true;
      if (out.ndst != num) return ctx.invalid(fmt::format("x{} needs {} registers", num, num));
      out.exec = execLdmatrix;
    } else {
      if (!ctx.setAddress(in.operands[0], *space) || !ctx.addSrc(in.operands[1], DType::B32)) return true;
      if (out.nsrc != num) return ctx.invalid(fmt::format("x{} needs {} registers", num, num));
      out.exec = execStmatrix;
    }
    return true;
  }
  if (op == "createpolicy") {
    // A cache policy is an opaque 64-bit value only caches read.
    if (in.operands.empty() || !ctx.addDst(in.operands[0])) return true;
    out.exec = execZero;
    return true;
  }
  return false;
}

} // namespace ptxforge::emu
