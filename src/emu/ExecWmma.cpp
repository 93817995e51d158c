// wmma: the warp-wide tiles of the WMMA API (`wmma.load.{a,b,c}`, `wmma.mma`,
// `wmma.store.d`), which nvcc emits for nvcuda::wmma code: shapes m16n16k16,
// m32n8k16 and m8n32k16 with .f16, .bf16, .s8 or .u8 inputs, m16n16k8 with
// .tf32 inputs; .f16, .f32 or .s32 accumulators.
//
// The PTX ISA leaves a fragment's layout across the lanes unspecified: a
// correct program loads, multiplies and stores fragments and applies one
// operation to every element, never one that depends on where an element
// lives. So the emulator uses a layout of its own: slot s of lane l holds
// element (s mod E) * 32 + l of the tile, E = the tile's elements / 32,
// counted in the order of the layout named by the instruction (row- or
// column-major) for A and B, row-major for C and D. A fragment with more
// slots than elements (every .f16 A and B fragment has 8 registers) holds
// each element more than once, as the hardware's does. A program names the
// same layout in the load and the mma (nvcuda::wmma always does); one that
// does not gets a result the ISA does not define, here a transposed read.
//
// Products are exact; D = C + the products in ascending k, one f32 rounding
// each (as mma.sync, Mma.cpp); integer tiles sum exactly and then wrap, or
// clamp with .satfinite.
#include "emu/Arith.h"
#include "emu/Decoder.h"
#include "emu/Machine.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

namespace ptxforge::emu {
namespace {

enum Fragment : uint8_t { kA = 0, kB = 1, kC = 2 }; ///< D is laid out as C

/// One fragment's tile and registers.
struct Geometry {
  unsigned rows = 0, cols = 0; ///< the tile
  unsigned bits = 0;           ///< per element
  unsigned registers = 0;      ///< 32-bit registers per lane
  unsigned elements() const { return rows * cols / 32; }
  unsigned slots() const { return registers * (32 / bits); }
};

unsigned bitsOf(DType type) {
  switch (type) {
  case DType::S8:
  case DType::U8: return 8;
  case DType::F16:
  case DType::BF16: return 16;
  case DType::TF32:
  case DType::F32:
  case DType::S32: return 32;
  default: return 0;
  }
}

/// The fragment's geometry, or nullopt for a shape and type WMMA does not have.
std::optional<Geometry> geometryOf(Fragment fragment, unsigned m, unsigned n, unsigned k, DType type) {
  const bool tf32Shape = m == 16 && n == 16 && k == 8;
  const bool halfShape = k == 16 && ((m == 16 && n == 16) || (m == 32 && n == 8) || (m == 8 && n == 32));
  if (!tf32Shape && !halfShape) return std::nullopt;
  if (fragment == kC) {
    if (type != DType::F32 && !(halfShape && (type == DType::F16 || type == DType::S32))) return std::nullopt;
  } else if (tf32Shape ? type != DType::TF32
                       : type != DType::F16 && type != DType::BF16 && type != DType::S8 && type != DType::U8) {
    return std::nullopt;
  }
  Geometry g;
  g.rows = fragment == kB ? k : m;
  g.cols = fragment == kA ? k : n;
  g.bits = bitsOf(type);
  // .f16 A and B fragments are 8 registers in every shape (ptxas refuses
  // fewer); every other fragment holds each element once.
  g.registers = fragment != kC && type == DType::F16 ? 8 : g.rows * g.cols * g.bits / 1024;
  return g;
}

/// The tile position of slot `slot` of `lane` (see the top of the file).
struct Position {
  unsigned row, col;
};
Position positionOf(const Geometry &g, bool columnMajor, unsigned lane, unsigned slot) {
  const unsigned index = (slot % g.elements()) * 32 + lane;
  return columnMajor ? Position{index % g.rows, index / g.rows} : Position{index / g.cols, index % g.cols};
}

// Inst fields for wmma (which has no second memory operand):
//   aux      load/store: fragment | columnMajor << 2 | hasStride << 3; both: m << 8 | n << 16 | k << 24
//   type     the element type (load/store), D's type (mma)
//   offset2  the register list (load/store); the lists D | A << 16 | B << 32 | C << 48 (mma)
//   mma: type2 = A's type, sub = B's, sub2 = C's; flags kAColumnMajor, kBColumnMajor, kSat.
constexpr uint16_t kAColumnMajor = kTrans, kBColumnMajor = kHigh;

struct LoadStoreDesc {
  Fragment fragment;
  bool columnMajor, hasStride;
  unsigned m, n, k;
};
LoadStoreDesc loadStoreDescOf(const Inst &in) {
  return {static_cast<Fragment>(in.aux & 3), ((in.aux >> 2) & 1) != 0, ((in.aux >> 3) & 1) != 0,
          (in.aux >> 8) & 0xff, (in.aux >> 16) & 0xff, (in.aux >> 24) & 0xff};
}

bool wholeWarp(Warp &w, const Inst &in, LaneMask active) {
  if (active == (w.live & w.valid) && w.valid == ~0u) return true;
  w.fault(in, static_cast<unsigned>(std::countr_zero(active)), "synccheck",
          fmt::format("wmma .sync.aligned executed by lanes 0x{:08x}; all 32 lanes of the warp must execute it together",
                      active));
  return false;
}

/// The value of list register `op` in `lane`; a lane that never wrote it
/// reads the garbage a GPU register holds (Interpreter.cpp).
uint64_t readRegister(const Warp &w, const Operand &op, unsigned lane) {
  if (!(w.written[op.slot] >> lane & 1) && !(w.derived[op.slot] >> lane & 1)) return neverWrittenValue(w, op.slot, lane);
  return w.get(op, lane);
}

void writeRegister(Warp &w, const Operand &op, unsigned lane, uint32_t value) {
  w.set(op, lane, value);
  w.written[op.slot] |= 1u << lane;
  w.derived[op.slot] &= ~(1u << lane);
}

uint32_t elementBits(uint32_t word, unsigned bits, unsigned slot) {
  const unsigned perWord = 32 / bits, shift = bits * (slot % perWord);
  return bits == 32 ? word : (word >> shift) & ((1u << bits) - 1);
}

void putElementBits(uint32_t &word, unsigned bits, unsigned slot, uint32_t value) {
  if (bits == 32) {
    word = value;
    return;
  }
  const unsigned shift = bits * (slot % (32 / bits));
  const uint32_t mask = ((1u << bits) - 1) << shift;
  word = (word & ~mask) | ((value << shift) & mask);
}

double valueOf(DType type, uint32_t bits) {
  switch (type) {
  case DType::F16: return f16ToF32(static_cast<uint16_t>(bits));
  case DType::BF16: return bf16ToF32(static_cast<uint16_t>(bits));
  case DType::TF32: return std::bit_cast<float>(bits & 0xffffe000u); // the low 13 bits are ignored, as by mma.sync
  case DType::F32: return std::bit_cast<float>(bits);
  case DType::S8: return static_cast<int8_t>(bits);
  case DType::U8: return static_cast<uint8_t>(bits);
  case DType::S32: return static_cast<int32_t>(bits);
  default: return 0;
  }
}

/// Loads or stores one fragment: slot s of every lane from or to the tile
/// element it holds, at p + (row * stride + col) elements (.row) or
/// p + (col * stride + row) (.col); the stride defaults to the tile's width
/// in that layout.
void execWmmaLoadStore(Warp &w, const Inst &in, LaneMask active, bool store) {
  if (!wholeWarp(w, in, active)) return;
  const LoadStoreDesc desc = loadStoreDescOf(in);
  const Geometry g = *geometryOf(desc.fragment, desc.m, desc.n, desc.k, in.type);
  const std::vector<Operand> &registers = w.program->operandLists[static_cast<size_t>(in.offset2)];
  const unsigned bytes = g.bits / 8;
  const bool positionColumnMajor = desc.fragment != kC && desc.columnMajor;
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    const uint64_t base = (in.addrSlot != kNoSlot ? w.row(in.addrSlot)[lane] : 0) + static_cast<uint64_t>(in.offset);
    const uint64_t stride =
        desc.hasStride ? static_cast<uint32_t>(w.get(in.src(0), lane)) : (desc.columnMajor ? g.rows : g.cols);
    std::array<uint32_t, 8> words{};
    if (store)
      for (unsigned r = 0; r < g.registers; ++r) words[r] = static_cast<uint32_t>(readRegister(w, registers[r], lane));
    const unsigned slots = store ? g.elements() : g.slots(); // a store writes each element once
    for (unsigned slot = 0; slot < slots; ++slot) {
      const Position at = positionOf(g, positionColumnMajor, lane, slot);
      const uint64_t element = desc.columnMajor ? at.col * stride + at.row : at.row * stride + at.col;
      uint8_t *memory = w.access(in, lane, in.space, base + element * bytes, bytes, store);
      if (!memory) return;
      const unsigned word = slot / (32 / g.bits);
      if (store) {
        const uint32_t value = elementBits(words[word], g.bits, slot);
        std::memcpy(memory, &value, bytes); // little-endian, as the device
      } else {
        uint32_t value = 0;
        std::memcpy(&value, memory, bytes);
        putElementBits(words[word], g.bits, slot, value);
      }
    }
    if (!store)
      for (unsigned r = 0; r < g.registers; ++r) writeRegister(w, registers[r], lane, words[r]);
  }
}

void execWmmaLoad(Warp &w, const Inst &in, LaneMask active) { execWmmaLoadStore(w, in, active, false); }
void execWmmaStore(Warp &w, const Inst &in, LaneMask active) { execWmmaLoadStore(w, in, active, true); }

struct MmaShape {
  unsigned m, n, k;
  DType a, b, c, d;
  bool aColumnMajor, bColumnMajor, satfinite;
};
MmaShape mmaShapeOf(const Inst &in) {
  return {(in.aux >> 8) & 0xff,
          (in.aux >> 16) & 0xff,
          (in.aux >> 24) & 0xff,
          in.type2,
          static_cast<DType>(in.sub),
          static_cast<DType>(in.sub2),
          in.type,
          (in.flags & kAColumnMajor) != 0,
          (in.flags & kBColumnMajor) != 0,
          (in.flags & kSat) != 0};
}

void execWmmaMma(Warp &w, const Inst &in, LaneMask active) {
  if (!wholeWarp(w, in, active)) return;
  const MmaShape s = mmaShapeOf(in);
  const Geometry ga = *geometryOf(kA, s.m, s.n, s.k, s.a), gb = *geometryOf(kB, s.m, s.n, s.k, s.b);
  const Geometry gc = *geometryOf(kC, s.m, s.n, s.k, s.c), gd = *geometryOf(kC, s.m, s.n, s.k, s.d);
  const uint64_t lists = static_cast<uint64_t>(in.offset2);
  const auto &operandLists = w.program->operandLists;
  const std::vector<Operand> &d = operandLists[lists & 0xffff], &a = operandLists[(lists >> 16) & 0xffff];
  const std::vector<Operand> &b = operandLists[(lists >> 32) & 0xffff], &c = operandLists[(lists >> 48) & 0xffff];

  // The tiles, gathered from each element's first slot.
  auto gather = [&](const Geometry &g, const std::vector<Operand> &registers, DType type, bool columnMajor) {
    std::vector<double> tile(size_t(g.rows) * g.cols);
    for (unsigned lane = 0; lane < kWarpSize; ++lane)
      for (unsigned slot = 0; slot < g.elements(); ++slot) {
        const uint32_t word = static_cast<uint32_t>(readRegister(w, registers[slot / (32 / g.bits)], lane));
        const Position at = positionOf(g, columnMajor, lane, slot);
        tile[size_t(at.row) * g.cols + at.col] = valueOf(type, elementBits(word, g.bits, slot));
      }
    return tile;
  };
  const std::vector<double> ta = gather(ga, a, s.a, s.aColumnMajor), tb = gather(gb, b, s.b, s.bColumnMajor);
  const std::vector<double> tc = gather(gc, c, s.c, false);

  std::vector<uint32_t> result(size_t(s.m) * s.n);
  for (unsigned row = 0; row < s.m; ++row)
    for (unsigned col = 0; col < s.n; ++col) {
      if (s.d == DType::S32) {
        int64_t sum = static_cast<int64_t>(tc[size_t(row) * s.n + col]);
        for (unsigned kk = 0; kk < s.k; ++kk)
          sum += static_cast<int64_t>(ta[size_t(row) * s.k + kk]) * static_cast<int64_t>(tb[size_t(kk) * s.n + col]);
        if (s.satfinite)
          sum = std::clamp<int64_t>(sum, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
        result[size_t(row) * s.n + col] = static_cast<uint32_t>(static_cast<uint64_t>(sum));
        continue;
      }
      float sum = static_cast<float>(tc[size_t(row) * s.n + col]);
      for (unsigned kk = 0; kk < s.k; ++kk)
        sum = std::fma(static_cast<float>(ta[size_t(row) * s.k + kk]), static_cast<float>(tb[size_t(kk) * s.n + col]),
                       sum);
      result[size_t(row) * s.n + col] =
          s.d == DType::F16 ? f64ToF16(sum, Rounding::Rn) : std::bit_cast<uint32_t>(sum);
    }

  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    std::array<uint32_t, 8> words{};
    for (unsigned slot = 0; slot < gd.slots(); ++slot) {
      const Position at = positionOf(gd, false, lane, slot);
      putElementBits(words[slot / (32 / gd.bits)], gd.bits, slot, result[size_t(at.row) * s.n + at.col]);
    }
    for (unsigned r = 0; r < gd.registers; ++r) writeRegister(w, d[r], lane, words[r]);
  }
}

bool shapeOf(const ptx::Instruction &in, unsigned &m, unsigned &n, unsigned &k) {
  for (const std::string &modifier : in.modifiers)
    if (std::sscanf(modifier.c_str(), "m%un%uk%u", &m, &n, &k) == 3) return true;
  return false;
}

std::string shapeName(unsigned m, unsigned n, unsigned k) { return fmt::format("m{}n{}k{}", m, n, k); }

/// The element type: the type modifiers of `in` but .tf32 (a DType of its own).
std::vector<DType> typesOf(DecodeContext &ctx) {
  std::vector<DType> types;
  for (const std::string &modifier : ctx.in.modifiers)
    if (DType t = parseDType(modifier); t != DType::None) types.push_back(t);
  return types;
}

bool decodeLoadStore(DecodeContext &ctx, bool store) {
  const ptx::Instruction &in = ctx.in;
  Inst &out = ctx.out;
  Fragment fragment = kA;
  if (store) {
    if (!ctx.has("d")) return ctx.invalid("wmma.store stores the D fragment (.d)");
    fragment = kC;
  } else if (ctx.has("a")) {
    fragment = kA;
  } else if (ctx.has("b")) {
    fragment = kB;
  } else if (ctx.has("c")) {
    fragment = kC;
  } else {
    return ctx.invalid("wmma.load needs .a, .b or .c");
  }
  const bool row = ctx.has("row"), col = ctx.has("col");
  if (row == col) return ctx.invalid("needs one layout, .row or .col");
  unsigned m = 0, n = 0, k = 0;
  if (!shapeOf(in, m, n, k)) return ctx.invalid("needs a shape (.m16n16k16, ...)");
  std::vector<DType> types = typesOf(ctx);
  if (types.size() != 1) return ctx.invalid("expects exactly one type");
  std::optional<Geometry> g = geometryOf(fragment, m, n, k, types[0]);
  if (!g) return ctx.unsupported(fmt::format("this fragment of .{} is not a WMMA tile the emulator has", shapeName(m, n, k)));
  Space space = Space::Generic;
  if (ctx.has("global")) space = Space::Global;
  else if (ctx.has("shared") || ctx.has("shared::cta")) space = Space::Shared;
  const size_t registersOperand = store ? 1 : 0, addressOperand = store ? 0 : 1;
  if (in.operands.size() != 2 && in.operands.size() != 3)
    return ctx.invalid("takes a register vector, an address and an optional stride");
  if (DecodeContext::width(in.operands[registersOperand]) != g->registers)
    return ctx.invalid(fmt::format("this fragment takes {} registers", g->registers));
  const int list = ctx.addOperandList(in.operands[registersOperand], DType::B32, !store);
  if (list < 0 || !ctx.setAddress(in.operands[addressOperand], space)) return true;
  const bool hasStride = in.operands.size() == 3;
  if (hasStride && !ctx.addSrc(in.operands[2], DType::U32)) return true;
  out.type = types[0];
  out.offset2 = list;
  out.aux = static_cast<uint32_t>(fragment) | (col ? 4u : 0u) | (hasStride ? 8u : 0u) | (m << 8) | (n << 16) | (k << 24);
  out.exec = store ? execWmmaStore : execWmmaLoad;
  return true;
}

bool decodeMma(DecodeContext &ctx) {
  const ptx::Instruction &in = ctx.in;
  Inst &out = ctx.out;
  std::vector<std::string> layouts;
  for (const std::string &modifier : in.modifiers)
    if (modifier == "row" || modifier == "col") layouts.push_back(modifier);
  if (layouts.size() != 2) return ctx.invalid("needs the A and B layouts (.row/.col twice)");
  unsigned m = 0, n = 0, k = 0;
  if (!shapeOf(in, m, n, k)) return ctx.invalid("needs a shape (.m16n16k16, ...)");
  std::vector<DType> types = typesOf(ctx);
  DType d, a, b, c;
  if (types.size() == 2) { // .dtype.ctype: .f16 inputs
    d = types[0], c = types[1], a = b = DType::F16;
  } else if (types.size() == 4) {
    d = types[0], a = types[1], b = types[2], c = types[3];
  } else {
    return ctx.invalid("expects .dtype.ctype or .dtype.atype.btype.ctype");
  }
  const bool integer = a == DType::S8 || a == DType::U8;
  std::optional<Geometry> ga = geometryOf(kA, m, n, k, a), gb = geometryOf(kB, m, n, k, b);
  std::optional<Geometry> gc = geometryOf(kC, m, n, k, c), gd = geometryOf(kC, m, n, k, d);
  const bool consistent = integer ? (b == DType::S8 || b == DType::U8) && c == DType::S32 && d == DType::S32
                                  : a == b && c != DType::S32 && d != DType::S32 &&
                                        (a == DType::F16 || (c == DType::F32 && d == DType::F32));
  if (!ga || !gb || !gc || !gd || !consistent)
    return ctx.unsupported(fmt::format("wmma.mma.{} with these types is not a WMMA operation the emulator has",
                                       shapeName(m, n, k)));
  if (in.operands.size() != 4) return ctx.invalid("takes D, A, B and C");
  const Geometry *geometries[4] = {&*gd, &*ga, &*gb, &*gc};
  uint64_t lists = 0;
  for (int i = 0; i < 4; ++i) {
    if (DecodeContext::width(in.operands[i]) != geometries[i]->registers)
      return ctx.invalid(fmt::format("{} takes {} registers", "DABC"[i], geometries[i]->registers));
    const int list = ctx.addOperandList(in.operands[i], DType::B32, i == 0);
    if (list < 0) return true;
    if (list > 0xffff) return ctx.unsupported("more than 65535 register lists in one module");
    lists |= static_cast<uint64_t>(list) << (16 * i);
  }
  out.offset2 = static_cast<int64_t>(lists);
  out.type = d, out.type2 = a;
  out.sub = static_cast<uint8_t>(b), out.sub2 = static_cast<uint8_t>(c);
  out.aux = (m << 8) | (n << 16) | (k << 24);
  if (layouts[0] == "col") out.flags |= kAColumnMajor;
  if (layouts[1] == "col") out.flags |= kBColumnMajor;
  if (ctx.has("satfinite")) out.flags |= kSat;
  out.exec = execWmmaMma;
  return true;
}

} // namespace

bool decodeWmma(DecodeContext &ctx) {
  if (ctx.in.opcode != "wmma") return false;
  if (!ctx.has("sync") || !ctx.has("aligned")) return ctx.invalid("needs .sync.aligned");
  if (ctx.has("load")) return decodeLoadStore(ctx, false);
  if (ctx.has("store")) return decodeLoadStore(ctx, true);
  if (ctx.has("mma")) return decodeMma(ctx);
  return ctx.invalid("is wmma.load, wmma.store or wmma.mma");
}

} // namespace ptxforge::emu
