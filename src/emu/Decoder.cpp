// PTX module → Program: names to slots, labels to program counters, symbols to
// addresses, memory layout, and each instruction through the families.
#include "emu/Decoder.h"

#include "emu/Arith.h"
#include "emu/Async.h"
#include "emu/Initializer.h"
#include "emu/Machine.h"
#include "ptx/Printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace ptxforge::emu {

const char *spaceName(Space space) {
  switch (space) {
  case Space::Generic: return "generic";
  case Space::Global: return "global";
  case Space::Shared: return "shared";
  case Space::Local: return "local";
  case Space::Const: return "const";
  case Space::Param: return "param";
  }
  return "?";
}

namespace {

// Provisional slot numbers while decoding: constants and special registers are
// numbered in their own ranges and moved in front of the registers at the end.
constexpr uint32_t kConstTag = 0x80000000u;
constexpr uint32_t kSpecialTag = 0x40000000u;

constexpr uint32_t kMaxRegisterSlots = 1u << 16;  ///< 16 MiB of registers per warp
constexpr uint32_t kMaxLocalBytes = 512u * 1024;   ///< per thread, as on the GPU
constexpr size_t kMaxConstBytes = 64u * 1024;
constexpr uint64_t kMaxGlobalImageBytes = uint64_t(64) << 20; ///< what the executor reserves

uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return alignment <= 1 ? value : (value + alignment - 1) / alignment * alignment;
}

std::optional<Special> specialOf(std::string_view name) {
  static const std::unordered_map<std::string_view, Special> table = {
      {"%tid.x", Special::TidX},       {"%tid.y", Special::TidY},         {"%tid.z", Special::TidZ},
      {"%ntid.x", Special::NtidX},     {"%ntid.y", Special::NtidY},       {"%ntid.z", Special::NtidZ},
      {"%ctaid.x", Special::CtaidX},   {"%ctaid.y", Special::CtaidY},     {"%ctaid.z", Special::CtaidZ},
      {"%nctaid.x", Special::NctaidX}, {"%nctaid.y", Special::NctaidY},   {"%nctaid.z", Special::NctaidZ},
      {"%laneid", Special::LaneId},    {"%warpid", Special::WarpId},      {"%nwarpid", Special::NWarpId},
      {"%smid", Special::SmId},        {"%nsmid", Special::NSmId},        {"%gridid", Special::GridId},
      {"%lanemask_eq", Special::LaneMaskEq}, {"%lanemask_lt", Special::LaneMaskLt},
      {"%lanemask_le", Special::LaneMaskLe}, {"%lanemask_gt", Special::LaneMaskGt},
      {"%lanemask_ge", Special::LaneMaskGe}, {"%dynamic_smem_size", Special::DynamicSmemSize},
      {"%total_smem_size", Special::TotalSmemSize}, {"%clock", Special::Clock},
      {"%clock64", Special::Clock64},  {"%globaltimer", Special::GlobalTimer},
      {"%cluster_ctaid.x", Special::ClusterCtaidX},   {"%cluster_ctaid.y", Special::ClusterCtaidY},
      {"%cluster_ctaid.z", Special::ClusterCtaidZ},   {"%cluster_nctaid.x", Special::ClusterNctaidX},
      {"%cluster_nctaid.y", Special::ClusterNctaidY}, {"%cluster_nctaid.z", Special::ClusterNctaidZ},
      {"%clusterid.x", Special::ClusterIdX},          {"%clusterid.y", Special::ClusterIdY},
      {"%clusterid.z", Special::ClusterIdZ},          {"%nclusterid.x", Special::NclusterIdX},
      {"%nclusterid.y", Special::NclusterIdY},        {"%nclusterid.z", Special::NclusterIdZ},
      {"%cluster_ctarank", Special::ClusterCtarank},  {"%cluster_nctarank", Special::ClusterNctarank},
      {"%is_explicit_cluster", Special::IsExplicitCluster},
  };
  auto it = table.find(name);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

unsigned specialBits(Special s) {
  return (s == Special::Clock64 || s == Special::GlobalTimer || s == Special::GridId) ? 64 : 32;
}

/// Bytes of one element of a declared type (b8 → 1, f16x2 → 4, pred → 1).
uint64_t typeBytes(const std::string &type) {
  DType t = parseDType(type);
  if (t == DType::Pred) return 1;
  return t == DType::None ? 0 : dtypeBytes(t);
}

/// Bytes of a declaration; saturates at 2^40 so that absurd array sizes are
/// refused by the size limits instead of overflowing.
uint64_t declBytes(const ptx::VariableDecl &decl) {
  constexpr uint64_t kCap = uint64_t(1) << 40;
  uint64_t bytes = typeBytes(decl.type) * std::max<uint32_t>(1, decl.vectorWidth);
  for (uint64_t dim : decl.arrayDims) bytes = dim && bytes > kCap / dim ? kCap : bytes * dim;
  return std::min(bytes, kCap);
}

uint64_t declAlign(const ptx::VariableDecl &decl) {
  if (decl.align) return std::min<uint64_t>(decl.align, 1u << 16);
  return std::max<uint64_t>(1, typeBytes(decl.type) * std::max<uint32_t>(1, decl.vectorWidth));
}

/// A module variable's initial bytes (empty without an initializer) and its
/// size: an unsized array (`tab[] = {...}`) takes its size from the initializer.
struct InitialImage {
  std::vector<uint8_t> bytes;
  uint64_t size = 0;
};

bool evaluateVariable(const ptx::VariableDecl &decl, InitialImage &image, std::string &error) {
  image.size = declBytes(decl);
  if (decl.initializer.empty()) return true;
  if (!evaluateInitializer(decl.initializer, parseDType(decl.type), image.bytes, error)) {
    error = fmt::format("initializer of '{}': {}", decl.name, error);
    return false;
  }
  bool unsized = std::find(decl.arrayDims.begin(), decl.arrayDims.end(), 0) != decl.arrayDims.end();
  if (unsized) {
    // Only the outer dimension may be left open: its stride is the rest.
    ptx::VariableDecl inner = decl;
    inner.arrayDims.erase(inner.arrayDims.begin());
    if (std::find(inner.arrayDims.begin(), inner.arrayDims.end(), 0) != inner.arrayDims.end()) {
      error = fmt::format("'{}' leaves an inner array dimension unsized", decl.name);
      return false;
    }
    uint64_t stride = std::max<uint64_t>(1, declBytes(inner));
    image.size = alignUp(image.bytes.size(), stride);
  }
  if (image.bytes.size() > image.size) {
    error = fmt::format("initializer of '{}' has more elements than the variable", decl.name);
    return false;
  }
  image.bytes.resize(image.size, 0); // elements left out are zero
  return true;
}

/// The instruction as one line of single-spaced text, for reports.
std::string instructionText(const ptx::Instruction &instruction) {
  std::string text = ptx::printInstruction(instruction);
  std::replace(text.begin(), text.end(), '\t', ' ');
  std::replace(text.begin(), text.end(), '\n', ' ');
  text.erase(std::unique(text.begin(), text.end(), [](char a, char b) { return a == ' ' && b == ' '; }), text.end());
  size_t start = text.find_first_not_of(' ');
  size_t end = text.find_last_not_of(' ');
  return start == std::string::npos ? std::string() : text.substr(start, end - start + 1);
}

/// An undeclared %name that is a special register the emulator lacks
/// (%cluster_ctarank, %envreg3, ...) rather than a typo.
bool looksLikeSpecialRegister(const std::string &name) {
  static const char *const kPrefixes[] = {"%cluster", "%nclusterid", "%is_explicit_cluster", "%reserved_smem",
                                          "%envreg", "%pm",  "%aggr_smem", "%current_graph_exec"};
  for (const char *prefix : kPrefixes)
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

struct Symbol {
  enum class Kind { Register, Shared, Global, Const, Local, KernelParam, Function } kind = Kind::Register;
  uint32_t slot = kNoSlot; ///< Register
  uint8_t bits = 0;        ///< Register
  uint64_t address = 0;    ///< the offset (or global address) in its space
  uint64_t bytes = 0;
};

class ModuleDecoder;

class Context final : public DecodeContext {
public:
  Context(ModuleDecoder &decoder, const ptx::Instruction &instruction, Inst &decoded)
      : DecodeContext(instruction, decoded), decoder_(decoder) {}
  unsigned addressBits() const override;
  int addOperandList(const ptx::Operand &operand, DType type, bool destination) override;
  std::string error;
  bool errorIsUnsupported = false; ///< `error` is a feature the emulator lacks

protected:
  bool resolveOperand(const ptx::Operand &operand, DType type, bool destination) override;
  bool resolveAddress(const ptx::Operand &operand, Space space) override;
  bool fail(const std::string &message) override {
    if (error.empty()) error = message;
    return false;
  }
  bool failUnsupported(const std::string &message) override {
    if (error.empty()) {
      error = message;
      errorIsUnsupported = true;
    }
    return false;
  }

private:
  ModuleDecoder &decoder_;
};

class ModuleDecoder {
public:
  ModuleDecoder(const ptx::Module &module, uint64_t globalBase) : module_(module) {
    program_.globalImageBase = globalBase;
  }

  Result<Program> run();

  // Used by Context.
  std::optional<Symbol> lookup(const std::string &name) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      auto it = scope->find(name);
      if (it != scope->end()) return it->second;
    }
    return std::nullopt;
  }
  uint32_t constSlot(uint64_t value) {
    auto [it, inserted] = constIndex_.try_emplace(value, static_cast<uint32_t>(program_.constValues.size()));
    if (inserted) program_.constValues.push_back(value);
    return kConstTag | it->second;
  }
  uint32_t specialSlot(Special s) { return kSpecialTag | static_cast<uint32_t>(s); }
  uint32_t sinkSlot() {
    if (sinkSlot_ == kNoSlot) sinkSlot_ = registerCount_++;
    return sinkSlot_;
  }
  unsigned addressBits() const { return module_.addressSize == 32 ? 32 : 64; }
  void noteClusterSpecial() { program_.usesClusterSpecials = true; }
  int addOperandList(std::vector<Operand> list) {
    program_.operandLists.push_back(std::move(list));
    return static_cast<int>(program_.operandLists.size() - 1);
  }

private:
  /// A module the emulator cannot make sense of, located at `line` (0 = the module).
  Error errorAt(uint32_t line, const std::string &message) const {
    return makeError(ErrorKind::InvalidInput, "", message, line);
  }
  /// A feature the emulator does not have, located at `line` (0 = the module).
  static Error unsupportedAt(uint32_t line, const std::string &message) {
    return makeError(ErrorKind::ToolMissing, kEmuUnsupportedCode, message, line);
  }
  Result<void> layoutModuleVariables();
  Result<void> collectShared(const std::vector<ptx::Statement> &body);
  Result<void> addShared(const ptx::VariableDecl &decl);
  Result<void> declare(const ptx::VariableDecl &decl);
  Result<void> decodeFunction(const ptx::Function &function);
  Result<void> assignLabels(const std::vector<ptx::Statement> &body, uint32_t &pc);
  Result<void> decodeBody(const std::vector<ptx::Statement> &body);
  Result<void> decodeInstruction(const ptx::Instruction &instruction);
  bool decodeControl(Context &ctx);
  Result<void> finish();

  const ptx::Module &module_;
  Program program_;
  std::vector<std::unordered_map<std::string, Symbol>> scopes_;
  std::unordered_map<uint64_t, uint32_t> constIndex_;
  std::unordered_map<const ptx::VariableDecl *, uint64_t> sharedOffsets_;
  std::vector<const ptx::VariableDecl *> dynamicShared_;
  /// Each kernel's static shared memory (the bytes its CTAs need without the
  /// dynamic part), by name.
  std::unordered_map<std::string, uint32_t> kernelShared_;
  /// Register names by register index (before the slot layout), for reports.
  std::vector<std::string> registerNames_;
  uint32_t registerCount_ = 0;
  uint32_t sinkSlot_ = kNoSlot;
  // Per function. Labels belong to the `{ }` block that defines them (keyed by
  // the block's statement list) and are seen from it and the blocks inside
  // it, as ptxas scopes them: one label may sit in two sibling blocks.
  std::unordered_map<const void *, std::unordered_map<std::string, uint32_t>> labels_;
  std::vector<const void *> openBlocks_; ///< the blocks decodeBody is inside, outermost first
  bool currentIsEntry_ = false;
  std::string currentFunction_;
  struct PendingCall {
    uint32_t pc;
    std::string callee;
    std::vector<uint32_t> argOffsets, argBytes;   ///< caller's call-site params
    std::vector<uint32_t> retOffsets, retBytes;
  };
  std::vector<PendingCall> pendingCalls_;
  struct FunctionInfo {
    uint32_t entryPc = kNoPc;
    std::vector<uint32_t> paramOffsets, paramBytes, retOffsets, retBytes;
    std::unordered_set<std::string> callees;
  };
  std::unordered_map<std::string, FunctionInfo> functions_;
};

unsigned Context::addressBits() const { return decoder_.addressBits(); }

int Context::addOperandList(const ptx::Operand &operand, DType type, bool destination) {
  std::vector<ptx::Operand> elements;
  if (operand.kind == ptx::Operand::Kind::Vector) elements = operand.elements;
  else elements.push_back(operand);
  if (out.ndst + out.nsrc >= kMaxOperands) return unsupported("too many operands"), -1;
  std::vector<Operand> list;
  for (const ptx::Operand &element : elements) {
    // resolveOperand writes the next free slot of out.ops; copy it out.
    if (!resolveOperand(element, type, destination)) return -1;
    list.push_back(out.ops[out.ndst + out.nsrc]);
  }
  return decoder_.addOperandList(std::move(list));
}

bool Context::resolveOperand(const ptx::Operand &operand, DType type, bool destination) {
  using K = ptx::Operand::Kind;
  switch (operand.kind) {
  case K::Sink:
    if (!destination) return fail(fmt::format("'_' used as a source of {}", in.opcode));
    out.ops[out.ndst + out.nsrc] = Operand{decoder_.sinkSlot(), 64, false};
    return true;
  case K::Integer: {
    if (destination) return fail(fmt::format("immediate {} used as a destination", operand.text));
    uint64_t bits = static_cast<uint64_t>(operand.intValue);
    if (type == DType::F32) bits = asBits(static_cast<float>(operand.intValue));
    else if (type == DType::F64) bits = asBits(static_cast<double>(operand.intValue));
    else if (type != DType::None && type != DType::Pred && dtypeBits(type) < 64) bits = lowBits(bits, dtypeBits(type));
    out.ops[out.ndst + out.nsrc] = Operand{decoder_.constSlot(bits), 0, false};
    return true;
  }
  case K::Float: {
    if (destination) return fail(fmt::format("immediate {} used as a destination", operand.text));
    uint64_t bits;
    const std::string &t = operand.text;
    bool hexF = t.size() > 2 && t[0] == '0' && (t[1] == 'f' || t[1] == 'F');
    bool hexD = t.size() > 2 && t[0] == '0' && (t[1] == 'd' || t[1] == 'D');
    double value = operand.floatValue;
    if (hexD) value = bitsAs<double>(std::strtoull(t.c_str() + 2, nullptr, 16));
    if (hexF) value = bitsAs<float>(std::strtoull(t.c_str() + 2, nullptr, 16));
    if (type == DType::F64) bits = asBits(value);
    else if (type == DType::F16 || type == DType::F16x2) bits = f64ToF16(value, Rounding::Rn);
    else if (type == DType::BF16 || type == DType::BF16x2) bits = f64ToBf16(value, Rounding::Rn);
    else if (hexF && (type == DType::B32 || type == DType::U32 || type == DType::S32 || type == DType::None ||
                      type == DType::F32))
      bits = std::strtoull(t.c_str() + 2, nullptr, 16);
    else if (hexD && (type == DType::B64 || type == DType::U64 || type == DType::S64))
      bits = std::strtoull(t.c_str() + 2, nullptr, 16);
    else bits = asBits(static_cast<float>(value));
    out.ops[out.ndst + out.nsrc] = Operand{decoder_.constSlot(bits), 0, false};
    return true;
  }
  case K::Name:
  case K::SymbolExpr: {
    if (std::optional<Special> special = specialOf(operand.name)) {
      if (destination) return fail(fmt::format("special register {} used as a destination", operand.name));
      if (*special == Special::Clock || *special == Special::Clock64 || *special == Special::GlobalTimer)
        out.flags |= kReadsClock;
      if (*special >= Special::ClusterCtaidX) decoder_.noteClusterSpecial();
      out.ops[out.ndst + out.nsrc] = Operand{decoder_.specialSlot(*special), static_cast<uint8_t>(specialBits(*special)), false};
      return true;
    }
    std::optional<Symbol> symbol = decoder_.lookup(operand.name);
    if (!symbol) {
      if (!operand.name.empty() && operand.name[0] == '%' && operand.name.find('.') != std::string::npos)
        return fail(fmt::format("register '{}' (a vector register component or an unknown special register) is "
                                "not supported by the emulator",
                                operand.name));
      if (looksLikeSpecialRegister(operand.name))
        return failUnsupported(fmt::format("special register {} is not emulated", operand.name));
      return fail(fmt::format("'{}' is not declared", operand.name));
    }
    if (symbol->kind == Symbol::Kind::Register) {
      if (operand.kind == K::SymbolExpr) return fail(fmt::format("register '{}' used with an offset", operand.name));
      out.ops[out.ndst + out.nsrc] = Operand{symbol->slot, symbol->bits, operand.negated};
      return true;
    }
    if (destination) return fail(fmt::format("'{}' is a variable, not a register", operand.name));
    if (symbol->kind == Symbol::Kind::Function)
      return fail(fmt::format("taking the address of function '{}' is not supported by the emulator", operand.name));
    uint64_t address = symbol->address + static_cast<uint64_t>(operand.kind == K::SymbolExpr ? operand.intValue : 0);
    out.ops[out.ndst + out.nsrc] = Operand{decoder_.constSlot(address), 0, false};
    return true;
  }
  case K::Address:
  case K::Vector:
  case K::List:
  case K::Pair:
    return fail(fmt::format("unexpected operand '{}' in {}", ptx::printOperand(operand), in.opcode));
  }
  return fail("unknown operand kind");
}

bool Context::resolveAddress(const ptx::Operand &operand, Space space) {
  if (operand.kind != ptx::Operand::Kind::Address)
    return fail(fmt::format("expected an address [...], found '{}'", ptx::printOperand(operand)));
  if (!operand.elements.empty())
    return fail("tensor-map addresses ([tmap, {...}]) are not supported by the emulator");
  out.space = space;
  out.offset = operand.intValue;
  out.addrSlot = kNoSlot;
  if (operand.name.empty()) return true; // [imm]
  if (specialOf(operand.name)) return fail(fmt::format("special register {} used as an address", operand.name));
  std::optional<Symbol> symbol = decoder_.lookup(operand.name);
  if (!symbol) return fail(fmt::format("'{}' is not declared", operand.name));
  using SK = Symbol::Kind;
  if (symbol->kind == SK::Register) {
    out.addrSlot = symbol->slot;
    return true;
  }
  if (symbol->kind == SK::Function) return fail(fmt::format("'{}' is a function, not an address", operand.name));
  Space symbolSpace = symbol->kind == SK::Shared        ? Space::Shared
                      : symbol->kind == SK::Global      ? Space::Global
                      : symbol->kind == SK::Const       ? Space::Const
                      : symbol->kind == SK::Local       ? Space::Local
                                                        : Space::Param;
  uint64_t address = symbol->address;
  if (space == Space::Generic) {
    // A symbol in a generic access means its generic address.
    switch (symbolSpace) {
    case Space::Shared: address += kSharedWindow; break;
    case Space::Local: address += kLocalWindow; break;
    case Space::Const: address += kConstWindow; break;
    case Space::Param: address += kParamWindow; break;
    default: break;
    }
  } else if (space == Space::Param && symbolSpace == Space::Local) {
    out.space = Space::Local; // .func parameters and call-site .param variables live in the thread's frame
  } else if (space != symbolSpace) {
    return fail(fmt::format("'{}' is a .{} variable, accessed as .{}", operand.name, spaceName(symbolSpace),
                            spaceName(space)));
  }
  out.offset += static_cast<int64_t>(address);
  return true;
}

Result<void> ModuleDecoder::addShared(const ptx::VariableDecl &decl) {
  if (sharedOffsets_.count(&decl)) return {};
  if (decl.linkage == "extern" || (!decl.arrayDims.empty() && decl.arrayDims.back() == 0)) {
    dynamicShared_.push_back(&decl);
    return {};
  }
  uint64_t offset = alignUp(program_.staticSharedBytes, declAlign(decl));
  if (offset + declBytes(decl) > (uint64_t(1) << 20))
    return errorAt(decl.loc.line, fmt::format("invalid: .shared variable '{}' takes the static shared memory past "
                                              "1 MiB",
                                              decl.name));
  sharedOffsets_[&decl] = offset;
  program_.staticSharedBytes = static_cast<uint32_t>(offset + declBytes(decl));
  return {};
}

Result<void> ModuleDecoder::collectShared(const std::vector<ptx::Statement> &body) {
  for (const ptx::Statement &statement : body) {
    if (statement.kind == ptx::Statement::Kind::Variable && statement.variable.space == ptx::StateSpace::Shared) {
      if (Result<void> added = addShared(statement.variable); !added) return added;
    } else if (statement.kind == ptx::Statement::Kind::Block) {
      if (Result<void> nested = collectShared(statement.block.statements); !nested) return nested;
    }
  }
  return {};
}

Result<void> ModuleDecoder::layoutModuleVariables() {
  // Static shared memory is laid out per kernel, as ptxas does: first what
  // any kernel may touch (module-scope variables, and those of .func
  // functions, which any kernel may call), then each kernel's own variables
  // from the same offset, so that two kernels of a module do not need the
  // sum of their arrays. Then the dynamic part.
  for (const ptx::TopLevel &item : module_.items) {
    if (item.kind == ptx::TopLevel::Kind::Variable && item.variable.space == ptx::StateSpace::Shared) {
      if (Result<void> added = addShared(item.variable); !added) return added;
    } else if (item.kind == ptx::TopLevel::Kind::Function && !item.function.isEntry) {
      if (Result<void> collected = collectShared(item.function.body); !collected) return collected;
    }
  }
  const uint32_t common = program_.staticSharedBytes;
  uint32_t largest = common;
  for (const ptx::TopLevel &item : module_.items) {
    if (item.kind != ptx::TopLevel::Kind::Function || !item.function.isEntry) continue;
    program_.staticSharedBytes = common;
    if (Result<void> collected = collectShared(item.function.body); !collected) return collected;
    kernelShared_[item.function.name] = program_.staticSharedBytes;
    largest = std::max(largest, program_.staticSharedBytes);
  }
  program_.staticSharedBytes = largest;
  uint64_t dynamicAlign = 16;
  for (const ptx::VariableDecl *decl : dynamicShared_) dynamicAlign = std::max(dynamicAlign, declAlign(*decl));
  // One offset for the module's dynamic shared memory (its symbol's address
  // is decoded once): after the largest kernel's static part.
  program_.dynamicSharedAlign = static_cast<uint32_t>(dynamicAlign);
  program_.dynamicSharedOffset = static_cast<uint32_t>(alignUp(program_.staticSharedBytes, dynamicAlign));
  for (const ptx::VariableDecl *decl : dynamicShared_) sharedOffsets_[decl] = program_.dynamicSharedOffset;

  scopes_.emplace_back();
  for (const ptx::TopLevel &item : module_.items) {
    if (item.kind == ptx::TopLevel::Kind::Variable) {
      if (Result<void> declared = declare(item.variable); !declared) return declared;
    } else if (item.kind == ptx::TopLevel::Kind::Function) {
      Symbol symbol;
      symbol.kind = Symbol::Kind::Function;
      scopes_.front()[item.function.name] = symbol;
    }
  }
  return {};
}

Result<void> ModuleDecoder::declare(const ptx::VariableDecl &decl) {
  auto &scope = scopes_.back();
  Symbol symbol;
  switch (decl.space) {
  case ptx::StateSpace::Reg: {
    DType type = parseDType(decl.type);
    if (type == DType::None) return errorAt(decl.loc.line, fmt::format("unknown register type .{}", decl.type));
    if (decl.vectorWidth)
      return unsupportedAt(decl.loc.line, fmt::format("vector registers (.v{} .{} {}) are not emulated",
                                                decl.vectorWidth, decl.type, decl.name));
    symbol.kind = Symbol::Kind::Register;
    symbol.bits = static_cast<uint8_t>(type == DType::Pred ? 1 : std::min(64u, dtypeBits(type)));
    if (type == DType::B128) return unsupportedAt(decl.loc.line, ".b128 registers are not emulated");
    uint32_t count = decl.rangeCount.value_or(1);
    if (count > kMaxRegisterSlots || registerCount_ + count > kMaxRegisterSlots)
      return unsupportedAt(decl.loc.line, fmt::format("register range {}<{}> takes the module past the "
                                                "emulator's {} registers",
                                                decl.name, count, kMaxRegisterSlots));
    for (uint32_t i = 0; i < count; ++i) {
      symbol.slot = registerCount_++;
      std::string name = decl.rangeCount ? decl.name + std::to_string(i) : decl.name;
      if (registerNames_.size() <= symbol.slot) registerNames_.resize(symbol.slot + 1);
      registerNames_[symbol.slot] = name;
      scope[std::move(name)] = symbol;
    }
    return {};
  }
  case ptx::StateSpace::Shared:
    symbol.kind = Symbol::Kind::Shared;
    symbol.address = sharedOffsets_.at(&decl);
    break;
  case ptx::StateSpace::Global: {
    symbol.kind = Symbol::Kind::Global;
    InitialImage image;
    std::string error;
    if (!evaluateVariable(decl, image, error)) return unsupportedAt(decl.loc.line, error);
    uint64_t offset = alignUp(program_.globalImage.size(), declAlign(decl));
    if (offset + image.size > kMaxGlobalImageBytes)
      return unsupportedAt(decl.loc.line, fmt::format("the module's .global variables take more than {} MiB",
                                                kMaxGlobalImageBytes >> 20));
    program_.globalImage.resize(offset + image.size);
    if (!image.bytes.empty()) std::memcpy(program_.globalImage.data() + offset, image.bytes.data(), image.size);
    symbol.address = program_.globalImageBase + offset;
    symbol.bytes = image.size;
    scope[decl.name] = symbol;
    program_.globalVariables[decl.name] = {offset, image.size};
    return {};
  }
  case ptx::StateSpace::Const: {
    symbol.kind = Symbol::Kind::Const;
    InitialImage image;
    std::string error;
    if (!evaluateVariable(decl, image, error)) return unsupportedAt(decl.loc.line, error);
    uint64_t offset = alignUp(program_.constBank.size(), declAlign(decl));
    if (offset + image.size > kMaxConstBytes)
      return errorAt(decl.loc.line, fmt::format("invalid: .const variable '{}' takes the .const bank past 64 KiB",
                                                decl.name));
    program_.constBank.resize(offset + image.size);
    if (!image.bytes.empty()) std::memcpy(program_.constBank.data() + offset, image.bytes.data(), image.size);
    symbol.address = offset;
    symbol.bytes = image.size;
    scope[decl.name] = symbol;
    return {};
  }
  case ptx::StateSpace::Local:
  case ptx::StateSpace::Param: {
    // Call-site .param variables and .local variables: the thread's frame.
    symbol.kind = Symbol::Kind::Local;
    uint64_t offset = alignUp(program_.localBytes, std::max<uint64_t>(declAlign(decl), 8));
    if (offset + declBytes(decl) > kMaxLocalBytes)
      return errorAt(decl.loc.line, fmt::format("invalid: '{}' takes the local memory per thread past {} KiB",
                                                decl.name, kMaxLocalBytes >> 10));
    program_.localBytes = static_cast<uint32_t>(offset + std::max<uint64_t>(declBytes(decl), 1));
    symbol.address = offset;
    break;
  }
  default:
    return unsupportedAt(decl.loc.line, fmt::format(".{} variables are not emulated",
                                              ptx::stateSpaceName(decl.space)));
  }
  symbol.bytes = declBytes(decl);
  scope[decl.name] = symbol;
  return {};
}

Result<void> ModuleDecoder::assignLabels(const std::vector<ptx::Statement> &body, uint32_t &pc) {
  for (const ptx::Statement &statement : body) {
    switch (statement.kind) {
    case ptx::Statement::Kind::Instruction: ++pc; break;
    case ptx::Statement::Kind::Label:
      if (!labels_[&body].emplace(statement.label.name, pc).second)
        return errorAt(statement.label.loc.line,
                       fmt::format("label '{}' is defined twice in one block", statement.label.name));
      break;
    case ptx::Statement::Kind::Block:
      if (Result<void> nested = assignLabels(statement.block.statements, pc); !nested) return nested;
      break;
    default: break;
    }
  }
  return {};
}

Result<void> ModuleDecoder::decodeFunction(const ptx::Function &function) {
  if (!function.hasBody) return {};
  currentIsEntry_ = function.isEntry;
  currentFunction_ = function.name;
  labels_.clear();
  openBlocks_.clear();
  FunctionInfo &info = functions_[function.name];
  info.entryPc = static_cast<uint32_t>(program_.code.size());
  scopes_.emplace_back();

  KernelDesc kernel;
  if (function.isEntry) {
    kernel.name = function.name;
    kernel.entryPc = info.entryPc;
    auto shared = kernelShared_.find(function.name);
    kernel.staticSharedBytes = shared != kernelShared_.end() ? shared->second : program_.staticSharedBytes;
    uint64_t offset = 0;
    for (const ptx::VariableDecl &param : function.params) {
      uint64_t align = std::max<uint64_t>(declAlign(param), 1);
      offset = alignUp(offset, align);
      Symbol symbol;
      symbol.kind = Symbol::Kind::KernelParam;
      symbol.address = offset;
      symbol.bytes = declBytes(param);
      scopes_.back()[param.name] = symbol;
      kernel.params.push_back({param.name, static_cast<uint32_t>(offset), static_cast<uint32_t>(symbol.bytes)});
      offset += symbol.bytes;
    }
    kernel.paramBytes = static_cast<uint32_t>(offset);
    for (const ptx::TuningDirective &tuning : function.tuning) {
      if (tuning.name == "explicitcluster") {
        kernel.explicitCluster = true;
        if (!kernel.clusterDim[0]) kernel.clusterDim[0] = kernel.clusterDim[1] = kernel.clusterDim[2] = 1;
        continue;
      }
      if (tuning.name == "reqnctapercluster") {
        kernel.explicitCluster = true;
        for (size_t i = 0; i < 3; ++i) {
          uint64_t v = i < tuning.values.size() ? std::strtoull(tuning.values[i].c_str(), nullptr, 0) : 1;
          if (v == 0 || v > 16)
            return errorAt(tuning.loc.line, fmt::format("invalid: .reqnctapercluster {} is not a cluster dimension "
                                                        "(1 to 16)",
                                                        i < tuning.values.size() ? tuning.values[i] : "1"));
          kernel.clusterDim[i] = static_cast<uint32_t>(v);
        }
        continue;
      }
      if (tuning.name != "maxntid" && tuning.name != "reqntid") continue;
      uint64_t product = 1;
      for (size_t i = 0; i < tuning.values.size() && i < 3; ++i) {
        uint32_t v = static_cast<uint32_t>(std::strtoul(tuning.values[i].c_str(), nullptr, 0));
        product *= std::max<uint32_t>(v, 1);
        if (tuning.name == "reqntid") kernel.reqntid[i] = v;
      }
      if (tuning.name == "reqntid")
        for (size_t i = tuning.values.size(); i < 3; ++i) kernel.reqntid[i] = 1;
      kernel.maxThreads = static_cast<uint32_t>(product);
    }
  } else {
    auto frame = [&](const std::vector<ptx::VariableDecl> &decls, std::vector<uint32_t> &offsets,
                     std::vector<uint32_t> &sizes) -> Result<void> {
      for (const ptx::VariableDecl &decl : decls) {
        ptx::VariableDecl copy = decl;
        copy.space = ptx::StateSpace::Param;
        if (Result<void> declared = declare(copy); !declared) return declared;
        const Symbol &symbol = scopes_.back()[decl.name];
        offsets.push_back(static_cast<uint32_t>(symbol.address));
        sizes.push_back(static_cast<uint32_t>(symbol.bytes));
      }
      return {};
    };
    info.paramOffsets.clear(), info.paramBytes.clear(), info.retOffsets.clear(), info.retBytes.clear();
    if (Result<void> r = frame(function.params, info.paramOffsets, info.paramBytes); !r) return r;
    if (Result<void> r = frame(function.returnParams, info.retOffsets, info.retBytes); !r) return r;
  }

  uint32_t pc = info.entryPc;
  if (Result<void> labelled = assignLabels(function.body, pc); !labelled) return labelled;
  if (Result<void> decoded = decodeBody(function.body); !decoded) return decoded;
  // Falling off the end of a body returns.
  Inst ret;
  ret.op = function.isEntry ? Op::Exit : Op::Ret;
  ret.line = function.closeLoc.line;
  program_.code.push_back(ret);
  program_.text.push_back("}");
  scopes_.pop_back();
  if (function.isEntry) {
    kernel.registerCount = 0;
    program_.kernels.push_back(std::move(kernel));
  }
  return {};
}

Result<void> ModuleDecoder::decodeBody(const std::vector<ptx::Statement> &body) {
  openBlocks_.push_back(&body);
  struct Close {
    std::vector<const void *> &blocks;
    ~Close() { blocks.pop_back(); }
  } close{openBlocks_};
  for (const ptx::Statement &statement : body) {
    switch (statement.kind) {
    case ptx::Statement::Kind::Instruction:
      if (Result<void> decoded = decodeInstruction(statement.instruction); !decoded) return decoded;
      break;
    case ptx::Statement::Kind::Variable:
      if (Result<void> declared = declare(statement.variable); !declared) return declared;
      break;
    case ptx::Statement::Kind::Block: {
      scopes_.emplace_back();
      Result<void> nested = decodeBody(statement.block.statements);
      scopes_.pop_back();
      if (!nested) return nested;
      break;
    }
    default: break;
    }
  }
  return {};
}

bool ModuleDecoder::decodeControl(Context &ctx) {
  const ptx::Instruction &in = ctx.in;
  Inst &out = ctx.out;
  const std::string &op = in.opcode;
  if (op == "bra" || op == "brx") {
    if (op == "brx") return ctx.unsupported("indirect branches (brx.idx) are not emulated");
    out.op = Op::Bra;
    ctx.commonFlags();
    if (in.operands.size() != 1 || in.operands[0].kind != ptx::Operand::Kind::Name)
      return ctx.invalid("bra takes one label");
    // The innermost open block that defines the label.
    std::optional<uint32_t> target;
    for (auto block = openBlocks_.rbegin(); block != openBlocks_.rend() && !target; ++block)
      if (auto found = labels_.find(*block); found != labels_.end())
        if (auto label = found->second.find(in.operands[0].name); label != found->second.end()) target = label->second;
    if (!target) return ctx.invalid(fmt::format("label '{}' is not defined", in.operands[0].name));
    out.target = *target;
    return true;
  }
  if (op == "exit") {
    out.op = Op::Exit;
    return true;
  }
  if (op == "ret") {
    out.op = currentIsEntry_ ? Op::Exit : Op::Ret;
    ctx.commonFlags();
    return true;
  }
  if (op == "trap") {
    out.op = Op::Trap;
    return true;
  }
  if (op == "prefetch" || op == "prefetchu" || op == "nanosleep" ||
      op == "griddepcontrol" || op == "setmaxnreg" || op == "pmevent" || op == "discard" ||
      op == "applypriority") {
    out.op = Op::Nop;
    return true;
  }
  if (op == "call") {
    ctx.commonFlags();
    out.op = Op::Call;
    // call{.uni} (ret...), func, (args...);  call func, (args);  call func;
    const ptx::Operand *retList = nullptr, *callee = nullptr, *argList = nullptr;
    for (const ptx::Operand &operand : in.operands) {
      if (operand.kind == ptx::Operand::Kind::List) {
        if (!callee) retList = &operand;
        else if (!argList) argList = &operand;
        else return ctx.unsupported("indirect calls through a prototype are not emulated");
      } else if (operand.kind == ptx::Operand::Kind::Name && !callee) {
        callee = &operand;
      } else {
        return ctx.unsupported("indirect calls are not emulated");
      }
    }
    if (!callee) return ctx.invalid("call without a function name");
    std::optional<Symbol> symbol = lookup(callee->name);
    if (!symbol || symbol->kind != Symbol::Kind::Function)
      return ctx.unsupported(fmt::format("'{}' is not a function of this module (indirect calls are not emulated)",
                                         callee->name));
    PendingCall pending;
    pending.pc = static_cast<uint32_t>(program_.code.size());
    pending.callee = callee->name;
    auto collect = [&](const ptx::Operand *list, std::vector<uint32_t> &offsets, std::vector<uint32_t> &sizes) {
      if (!list) return true;
      for (const ptx::Operand &element : list->elements) {
        std::optional<Symbol> param = element.kind == ptx::Operand::Kind::Name ? lookup(element.name) : std::nullopt;
        if (!param || param->kind != Symbol::Kind::Local)
          return ctx.unsupported(fmt::format("call argument '{}' is not a .param variable (only the ABI calling "
                                             "convention is emulated)",
                                             ptx::printOperand(element)));
        offsets.push_back(static_cast<uint32_t>(param->address));
        sizes.push_back(static_cast<uint32_t>(param->bytes));
      }
      return true;
    };
    if (!collect(retList, pending.retOffsets, pending.retBytes)) return true;
    if (!collect(argList, pending.argOffsets, pending.argBytes)) return true;
    functions_[currentFunction_].callees.insert(callee->name);
    pendingCalls_.push_back(std::move(pending));
    return true;
  }
  if (op == "bar" || op == "barrier") {
    // bar.sync a{, b}; bar.arrive a, b; bar.red.op.type d, a{, b}, {!}c; barrier.sync{.aligned} ...
    bool red = ctx.has("red");
    bool arrive = ctx.has("arrive");
    if (ctx.has("warp")) return false; // bar.warp.sync is a warp collective
    if (!ctx.has("sync") && !arrive && !red && op == "bar") return ctx.invalid("bar needs .sync, .arrive or .red");
    out.op = Op::Bar;
    if (arrive) out.flags |= kBarArrive;
    size_t first = 0;
    if (red) {
      // sub: 1 popc, 2 and, 3 or
      out.sub = ctx.has("popc") ? 1 : ctx.has("and") ? 2 : ctx.has("or") ? 3 : 0;
      if (!out.sub) return ctx.invalid("bar.red needs .popc, .and or .or");
      if (in.operands.size() < 3) return ctx.invalid("bar.red takes a destination, a barrier and a predicate");
      if (!ctx.addDst(in.operands[0])) return true;
      first = 1;
    }
    size_t last = in.operands.size() - (red ? 1 : 0);
    for (size_t i = first; i < last; ++i)
      if (!ctx.addSrc(in.operands[i], DType::U32)) return true;
    if (red && !ctx.addSrc(in.operands.back(), DType::Pred)) return true;
    out.sub2 = static_cast<uint8_t>(last - first); // 1: barrier only, 2: barrier and thread count
    if (out.sub2 < 1 || out.sub2 > 2) return ctx.invalid("bar takes a barrier number and an optional thread count");
    return true;
  }
  return false;
}

Result<void> ModuleDecoder::decodeInstruction(const ptx::Instruction &instruction) {
  Inst inst;
  inst.line = instruction.loc.line;
  Context ctx(*this, instruction, inst);
  if (!instruction.guard.empty()) {
    std::optional<Symbol> guard = lookup(instruction.guard);
    if (!guard || guard->kind != Symbol::Kind::Register || guard->bits != 1)
      return errorAt(inst.line, fmt::format("invalid: guard '{}' is not a declared predicate", instruction.guard));
    inst.guard = guard->slot;
    inst.guardNegated = instruction.guardNegated;
    inst.guardColumn = static_cast<uint16_t>(std::min<uint32_t>(instruction.guardLoc.column, 0xffff));
  }
  bool handled = decodeAsync(ctx) || decodeWgmma(ctx) || decodeWmma(ctx) || decodeControl(ctx) || decodeAlu(ctx) ||
                 decodeMemory(ctx) || decodeWarp(ctx);
  if (!ctx.error.empty()) return ctx.errorIsUnsupported ? unsupportedAt(inst.line, ctx.error) : errorAt(inst.line, ctx.error);
  if (!handled)
    return unsupportedAt(inst.line, fmt::format("the emulator does not implement '{}'",
                                          instructionText(instruction)));
  if (inst.op == Op::Exec || inst.op == Op::WarpSync) {
    if (!inst.exec) return errorAt(inst.line, fmt::format("internal: no executor for '{}'", instruction.opcode));
  }
  // initcheck: the instructions whose every source is a use that matters.
  // Stores (st, atom, red, the async copies and stmatrix) put a value where
  // others see it; comparisons decide what runs next.
  static const char *const kSinks[] = {"st", "atom", "red", "cp", "stmatrix", "mbarrier", "setp", "set", "testp"};
  for (const char *sink : kSinks)
    if (instruction.opcode == sink) inst.initSink = true;
  program_.code.push_back(inst);
  program_.text.push_back(instructionText(instruction));
  return {};
}

Result<void> ModuleDecoder::finish() {
  // Calls: resolve targets, build argument copies, refuse recursion.
  for (const PendingCall &call : pendingCalls_) {
    auto it = functions_.find(call.callee);
    if (it == functions_.end() || it->second.entryPc == kNoPc)
      return unsupportedAt(program_.code[call.pc].line,
                     fmt::format("'{}' has no body in this module (extern functions are not emulated)",
                                 call.callee));
    const FunctionInfo &callee = it->second;
    if (call.argOffsets.size() != callee.paramOffsets.size() || call.retOffsets.size() != callee.retOffsets.size())
      return errorAt(program_.code[call.pc].line,
                     fmt::format("invalid: call to '{}' passes {} arguments and {} results; it takes {} and {}",
                                 call.callee, call.argOffsets.size(), call.retOffsets.size(),
                                 callee.paramOffsets.size(), callee.retOffsets.size()));
    CallInfo info;
    for (size_t i = 0; i < call.argOffsets.size(); ++i)
      info.arguments.push_back({call.argOffsets[i], callee.paramOffsets[i],
                                std::min(call.argBytes[i], callee.paramBytes[i])});
    for (size_t i = 0; i < call.retOffsets.size(); ++i)
      info.results.push_back({callee.retOffsets[i], call.retOffsets[i], std::min(call.retBytes[i], callee.retBytes[i])});
    Inst &inst = program_.code[call.pc];
    inst.target = callee.entryPc;
    inst.aux = static_cast<uint32_t>(program_.calls.size());
    program_.calls.push_back(std::move(info));
  }
  // Recursion: the frames are static, so a cycle in the call graph is refused.
  std::unordered_map<std::string, int> state;
  std::function<bool(const std::string &)> cyclic = [&](const std::string &name) {
    int &s = state[name];
    if (s == 1) return true;
    if (s == 2) return false;
    s = 1;
    for (const std::string &callee : functions_[name].callees)
      if (cyclic(callee)) return true;
    s = 2;
    return false;
  };
  for (auto &[name, info] : functions_)
    if (cyclic(name))
      return unsupportedAt(0, fmt::format("'{}' is recursive; the emulator's call frames are static", name));

  // Slot layout: constants, then special registers, then registers.
  program_.constSlots = static_cast<uint32_t>(program_.constValues.size());
  uint32_t specialBase = program_.constSlots;
  uint32_t registerBase = specialBase + static_cast<uint32_t>(Special::Count);
  auto remap = [&](uint32_t &slot) {
    if (slot == kNoSlot) return;
    if (slot & kConstTag) slot = slot & ~kConstTag;
    else if (slot & kSpecialTag) slot = specialBase + (slot & ~kSpecialTag);
    else slot += registerBase;
  };
  for (Inst &inst : program_.code) {
    // wgmma keeps its pending accumulators in AsyncState and reads its
    // operands through the async proxy (the proxy-fence check's stamps).
    program_.usesAsync = program_.usesAsync || usesAsyncState(inst) || usesWgmmaState(inst);
    program_.bulkReadsShared = program_.bulkReadsShared || readsSharedInBulk(inst) || inst.op == Op::Wgmma;
    for (unsigned i = 0; i < unsigned(inst.ndst) + inst.nsrc; ++i) remap(inst.ops[i].slot);
    remap(inst.addrSlot);
    remap(inst.addrSlot2);
    remap(inst.guard);
    program_.usesWgmma = program_.usesWgmma || inst.op == Op::Wgmma;
  }
  for (std::vector<Operand> &list : program_.operandLists)
    for (Operand &operand : list) remap(operand.slot);
  program_.slotCount = registerBase + registerCount_;
  program_.slotNames.assign(program_.slotCount, std::string());
  for (size_t i = 0; i < registerNames_.size(); ++i) program_.slotNames[registerBase + i] = registerNames_[i];
  // Limits of the hardware (and of the emulator's memory per warp).
  if (registerCount_ > kMaxRegisterSlots)
    return unsupportedAt(0, fmt::format("the module declares {} registers; the emulator takes at most {}",
                                        registerCount_, kMaxRegisterSlots));
  if (program_.localBytes > kMaxLocalBytes)
    return makeError(ErrorKind::InvalidInput,
                     fmt::format("invalid: {} bytes of local memory per thread exceed the limit of {}",
                                 program_.localBytes, kMaxLocalBytes));
  if (program_.constBank.size() > kMaxConstBytes)
    return makeError(ErrorKind::InvalidInput, fmt::format("invalid: {} bytes of .const data exceed the 64 KiB bank",
                                                          program_.constBank.size()));
  return {};
}

Result<Program> ModuleDecoder::run() {
  if (Result<void> laid = layoutModuleVariables(); !laid) return laid.error();
  for (const ptx::TopLevel &item : module_.items)
    if (item.kind == ptx::TopLevel::Kind::Function)
      if (Result<void> decoded = decodeFunction(item.function); !decoded) return decoded.error();
  if (Result<void> finished = finish(); !finished) return finished.error();
  if (program_.kernels.empty()) return makeError(ErrorKind::InvalidInput, "invalid: the module has no .entry kernel");
  return std::move(program_);
}

} // namespace

// ---------------------------------------------------------------------------
// DecodeContext helpers shared by the families

bool DecodeContext::has(std::string_view modifier) const {
  for (const std::string &m : in.modifiers)
    if (m == modifier) return true;
  return false;
}

std::vector<DType> DecodeContext::types() const {
  std::vector<DType> result;
  for (const std::string &m : in.modifiers)
    if (DType t = parseDType(m); t != DType::None) result.push_back(t);
  return result;
}

Rounding DecodeContext::rounding() const {
  for (const std::string &m : in.modifiers)
    if (Rounding r = parseRounding(m); r != Rounding::None) return r;
  return Rounding::None;
}

void DecodeContext::commonFlags() {
  for (const std::string &m : in.modifiers) {
    if (m == "ftz") out.flags |= kFtz;
    else if (m == "sat" || m == "satfinite") out.flags |= kSat;
    else if (m == "NaN") out.flags |= kNaN;
    else if (m == "relu") out.flags |= kRelu;
  }
}

unsigned DecodeContext::width(const ptx::Operand &operand) {
  return operand.kind == ptx::Operand::Kind::Vector ? static_cast<unsigned>(operand.elements.size()) : 1;
}

namespace {
uint16_t columnOf(const ptx::Operand &operand) { return static_cast<uint16_t>(std::min<uint32_t>(operand.loc.column, 0xffff)); }
} // namespace

bool DecodeContext::addDst(const ptx::Operand &operand) {
  if (out.nsrc) return invalid("internal: destination added after a source");
  if (operand.kind == ptx::Operand::Kind::Vector || operand.kind == ptx::Operand::Kind::Pair) {
    for (const ptx::Operand &element : operand.elements)
      if (!addDst(element)) return false;
    return true;
  }
  if (out.ndst + out.nsrc >= kMaxOperands) return unsupported("too many operands");
  if (!resolveOperand(operand, DType::None, true)) return false;
  out.ops[out.ndst].column = columnOf(operand);
  ++out.ndst;
  return true;
}

bool DecodeContext::addSrc(const ptx::Operand &operand, DType type) {
  if (operand.kind == ptx::Operand::Kind::Vector) {
    for (const ptx::Operand &element : operand.elements)
      if (!addSrc(element, type)) return false;
    return true;
  }
  if (out.ndst + out.nsrc >= kMaxOperands) return unsupported("too many operands");
  if (!resolveOperand(operand, type, false)) return false;
  out.ops[out.ndst + out.nsrc].column = columnOf(operand);
  ++out.nsrc;
  return true;
}

bool DecodeContext::setAddress(const ptx::Operand &operand, Space space) {
  if (out.addrSlot == kNoSlot) out.addrColumn = columnOf(operand);
  return resolveAddress(operand, space);
}

bool DecodeContext::unsupported(const std::string &why) {
  std::string name = in.opcode;
  for (const std::string &m : in.modifiers) name += "." + m;
  failUnsupported(fmt::format("{}: {}", name, why));
  return true;
}

bool DecodeContext::invalid(const std::string &why) {
  std::string name = in.opcode;
  for (const std::string &m : in.modifiers) name += "." + m;
  fail(fmt::format("invalid: {}: {}", name, why));
  return true;
}

Result<Program> decodeModule(const ptx::Module &module, uint64_t globalBase) {
  ModuleDecoder decoder(module, globalBase);
  return decoder.run();
}

} // namespace ptxforge::emu
