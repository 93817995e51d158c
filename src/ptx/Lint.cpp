// Static checks over a parsed PTX module (see docs/diagnostics.md for every
// code). The checks follow what ptxas accepts: when a rule is uncertain the
// lint allows, because a false positive on valid nvcc output costs more than a
// finding that ptxas reports anyway.
#include "ptx/Lint.h"

#include "ptx/ArithmeticRules.h"
#include "ptx/ConversionRules.h"
#include "ptx/InstructionTable.h"
#include "ptx/MemoryRules.h"
#include "ptx/Parser.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace ptxforge::ptx {

namespace {

// ---------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------

/// `%tid.x` → `%tid`; `%v1.y` → `%v1`.
std::string baseName(const std::string &name) {
  size_t dot = name.find('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}


/// PTX special registers (ISA chapter "Special Registers"), by base name.
bool isSpecialRegister(const std::string &base) {
  static const std::unordered_set<std::string> names = {
      "%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%gridid",
      "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt", "%clock", "%clock64",
      "%clock_hi", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi", "%dynamic_smem_size", "%total_smem_size",
      "%aggr_smem_size", "%is_explicit_cluster", "%current_graph_exec", "%clusterid", "%nclusterid",
      "%cluster_ctaid", "%cluster_nctaid", "%cluster_ctarank", "%cluster_nctarank", "%warpsz",
  };
  if (names.count(base)) return true;
  if (base.starts_with("%envreg") && allDigits(base.substr(7))) return true;
  if (base.starts_with("%pm")) {
    std::string rest = base.substr(3);
    if (rest.size() > 3 && rest.substr(rest.size() - 3) == "_64") rest.resize(rest.size() - 3);
    return allDigits(rest);
  }
  return base.starts_with("%reserved_smem") || base.starts_with("%cluster");
}

/// `%rd12` → {"%rd", 12}; no digits → {name, -1}.
std::pair<std::string, long> splitRegister(const std::string &name) {
  size_t end = name.size();
  size_t start = end;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(name[start - 1]))) --start;
  if (start == end || start == 0 || end - start > 9) return {name, -1};
  return {name.substr(0, start), std::stol(name.substr(start))};
}

// ---------------------------------------------------------------------------
// Scopes
// ---------------------------------------------------------------------------

struct Scope {
  std::unordered_map<std::string, const VariableDecl *> names;
  std::unordered_map<std::string, std::vector<const VariableDecl *>> ranges; // "%r" → `%r<N>` decls
};

/// Expected type of one operand position.
struct Expect {
  enum class Kind { None, Data, Pred } kind = Kind::None;
  std::string typeName; ///< instruction type for Data ("s32")
  TypeInfo type;
  bool relaxed = false;     ///< ld/st/cvt rule: wider integer/bit registers are fine
  bool pairSecondPred = false; ///< `d|p` destinations: the second half is a predicate
};

Expect expectType(const std::string &typeName, bool relaxed = false) {
  Expect e;
  auto info = typeInfo(typeName);
  if (!info) return e;
  e.kind = info->typeClass == TypeClass::Pred ? Expect::Kind::Pred : Expect::Kind::Data;
  e.typeName = typeName;
  e.type = *info;
  e.relaxed = relaxed;
  return e;
}

Expect pred() { return expectType("pred"); }

std::string widened(const std::string &t) {
  static const std::unordered_map<std::string, std::string> wide = {
      {"s16", "s32"}, {"u16", "u32"}, {"s32", "s64"}, {"u32", "u64"}, {"b16", "b32"}, {"b32", "b64"}};
  auto it = wide.find(t);
  return it == wide.end() ? std::string() : it->second;
}

bool hasModifier(const Instruction &in, std::string_view m) {
  return std::find(in.modifiers.begin(), in.modifiers.end(), m) != in.modifiers.end();
}

/// Per-operand type expectations, following the PTX ISA's type-checking rules.
/// Positions not covered (matrix fragments, texture coordinates, …) expect nothing.
std::vector<Expect> operandExpectations(const Instruction &in, const OpcodeMatch &match) {
  std::vector<Expect> out(in.operands.size());
  std::vector<std::string> types;
  for (size_t i = match.consumed; i < in.modifiers.size(); ++i)
    if (typeInfo(in.modifiers[i])) types.push_back(in.modifiers[i]);
  const std::string &op = match.entry->name;
  auto set = [&](size_t i, Expect e) {
    if (i < out.size()) out[i] = std::move(e);
  };
  auto setAll = [&](Expect e, size_t from = 0) {
    for (size_t i = from; i < out.size(); ++i) out[i] = e;
  };
  static const std::unordered_set<std::string> uniform = {
      "add", "sub", "addc", "subc", "mul", "mad", "madc", "mul24", "mad24", "sad", "div", "rem", "abs", "neg",
      "min", "max", "and", "or", "xor", "not", "cnot", "rcp", "sqrt", "rsqrt", "sin", "cos", "lg2", "ex2",
      "tanh", "brev", "fma", "copysign"};

  if (uniform.count(op)) {
    if (types.size() != 1) return out;
    setAll(expectType(types[0]));
    if (hasModifier(in, "wide")) {
      std::string w = widened(types[0]);
      if (w.empty()) return std::vector<Expect>(in.operands.size());
      set(0, expectType(w));
      if (op == "mad") set(3, expectType(w));
    }
  } else if (op == "mov") {
    if (types.size() != 1 || hasModifier(in, "v2") || hasModifier(in, "v4")) return out;
    setAll(expectType(types[0]));
    // `mov.b64 %rd1, {%r1, %r2}` packs and unpacks: the elements are narrower.
    for (size_t i = 0; i < out.size(); ++i)
      if (in.operands[i].kind == Operand::Kind::Vector) out[i] = Expect{};
  } else if (op == "shl" || op == "shr") {
    if (types.size() != 1) return out;
    set(0, expectType(types[0]));
    set(1, expectType(types[0]));
    set(2, expectType("u32"));
  } else if (op == "bfe") {
    if (types.size() != 1) return out;
    set(0, expectType(types[0]));
    set(1, expectType(types[0]));
    set(2, expectType("u32"));
    set(3, expectType("u32"));
  } else if (op == "bfi") {
    if (types.size() != 1) return out;
    for (size_t i = 0; i < 3; ++i) set(i, expectType(types[0]));
    set(3, expectType("u32"));
    set(4, expectType("u32"));
  } else if (op == "popc" || op == "clz" || op == "bfind") {
    if (types.size() != 1) return out;
    set(0, expectType("u32"));
    set(1, expectType(types[0]));
  } else if (op == "setp") {
    if (types.size() != 1) return out;
    set(0, pred());
    set(1, expectType(types[0]));
    set(2, expectType(types[0]));
    set(3, pred());
  } else if (op == "set") {
    if (types.size() != 2) return out;
    set(0, expectType(types[0]));
    set(1, expectType(types[1]));
    set(2, expectType(types[1]));
    set(3, pred());
  } else if (op == "selp") {
    if (types.size() != 1) return out;
    for (size_t i = 0; i < 3; ++i) set(i, expectType(types[0]));
    set(3, pred());
  } else if (op == "slct") {
    if (types.size() != 2) return out;
    for (size_t i = 0; i < 3; ++i) set(i, expectType(types[0]));
    set(3, expectType(types[1]));
  } else if (op == "testp") {
    if (types.size() != 1) return out;
    set(0, pred());
    set(1, expectType(types[0]));
  } else if (op == "cvt") {
    if (types.size() != 2 || hasModifier(in, "rs")) return out;
    set(0, expectType(types[0], true));
    for (size_t i = 1; i < out.size(); ++i) set(i, expectType(types[1], true));
  } else if (op == "ld" || op == "ldu") {
    if (types.empty()) return out;
    set(0, expectType(types.back(), true));
  } else if (op == "st") {
    if (types.empty()) return out;
    set(1, expectType(types.back(), true));
  } else if (op == "atom") {
    if (types.size() != 1) return out;
    set(0, expectType(types[0]));
    for (size_t i = 2; i < out.size(); ++i) set(i, expectType(types[0]));
    if (hasModifier(in, "L2::cache_hint") && !out.empty()) out.back() = Expect{}; // cache policy operand
  } else if (op == "red") {
    if (types.size() != 1) return out;
    set(1, expectType(types[0]));
  } else if (op == "lop3" || op == "prmt") {
    if (types.size() != 1) return out;
    for (size_t i = 0; i < 4; ++i) set(i, expectType(types[0]));
  } else if (op == "shf") {
    if (types.size() != 1) return out;
    for (size_t i = 0; i < 3; ++i) set(i, expectType(types[0]));
    set(3, expectType("u32"));
  } else if (op == "vote") {
    if (hasModifier(in, "ballot")) set(0, expectType("b32"));
    else set(0, pred());
    set(1, pred());
  } else if (op == "shfl") {
    Expect d = expectType("b32");
    d.pairSecondPred = true;
    set(0, d);
    for (size_t i = 1; i < out.size(); ++i) set(i, expectType("b32"));
  } else if (op == "isspacep") {
    set(0, pred());
  } else if (op == "cvta") {
    if (types.size() != 1) return out;
    set(0, expectType(types[0]));
    set(1, expectType(types[0]));
  } else if (op == "activemask") {
    set(0, expectType("b32"));
  } else if (op == "redux.sync") {
    if (types.size() != 1) return out;
    set(0, expectType(types[0]));
    set(1, expectType(types[0]));
  } else if (op == "match") {
    if (types.size() != 1) return out;
    Expect d = expectType("b32");
    d.pairSecondPred = true;
    set(0, d);
    set(1, expectType(types[0]));
  } else if (op == "elect.sync") {
    Expect d = expectType("b32");
    d.pairSecondPred = true;
    set(0, d);
  }
  return out;
}

/// Whether a register of type `reg` can serve an operand expecting `want`
/// (PTX ISA "Type Checking" and "Operand Size Exceeding Instruction-Type Size").
bool compatible(const std::string &regName, const TypeInfo &reg, const Expect &want) {
  const TypeInfo &inst = want.type;
  // Float registers hold exactly one format: an .f16x2 register is not an
  // .f32 operand, nor .f16 a .bf16 one (ptxas: "Arguments mismatch").
  bool floatPair = reg.typeClass == TypeClass::Float && inst.typeClass == TypeClass::Float;
  if (floatPair && regName != want.typeName && want.typeName != "f32x2") return false;
  if (reg.typeClass == TypeClass::Pred || inst.typeClass == TypeClass::Pred)
    return reg.typeClass == inst.typeClass;
  bool regInt = reg.typeClass == TypeClass::Signed || reg.typeClass == TypeClass::Unsigned;
  bool instInt = inst.typeClass == TypeClass::Signed || inst.typeClass == TypeClass::Unsigned;
  if (want.relaxed) {
    // ld/st/cvt: bit-size registers fit any narrower type; integer registers
    // fit narrower integer/bit types; float registers need float or bit types,
    // exactly sized for float types.
    if (reg.typeClass == TypeClass::Bit) return reg.bits >= inst.bits;
    if (regInt) return !(inst.typeClass == TypeClass::Float) && reg.bits >= inst.bits;
    if (inst.typeClass == TypeClass::Float) return reg.bits == inst.bits;
    if (instInt) return false;
    return reg.bits >= inst.bits;
  }
  if (reg.bits != inst.bits) return false;
  if (reg.typeClass == TypeClass::Bit || inst.typeClass == TypeClass::Bit) return true;
  if (inst.typeClass == TypeClass::Float) return reg.typeClass == TypeClass::Float;
  return regInt; // integer instruction: signed or unsigned registers of the same size
}

/// The register type to propose for an undeclared register used as `want`.
std::string proposedRegisterType(const Expect &want) {
  if (want.kind == Expect::Kind::Pred) return "pred";
  const TypeInfo &t = want.type;
  if (t.typeClass == TypeClass::Float && (want.typeName == "f32" || want.typeName == "f64")) return want.typeName;
  uint32_t bits = std::max<uint32_t>(16, t.bits);
  if (bits > 64) bits = 64;
  return "b" + std::to_string(bits);
}

/// nvcc's register naming convention, for a type when no use tells.
std::string conventionalType(const std::string &prefix) {
  static const std::unordered_map<std::string, std::string> convention = {
      {"%r", "b32"}, {"%rd", "b64"}, {"%rs", "b16"}, {"%f", "f32"}, {"%fd", "f64"},
      {"%p", "pred"}, {"%h", "b16"}, {"%hh", "b32"}};
  auto it = convention.find(prefix);
  return it == convention.end() ? "b32" : it->second;
}

std::string dotted(const Instruction &in) {
  std::string s = in.opcode;
  for (const std::string &m : in.modifiers) s += "." + m;
  return s;
}

std::string joinWords(const std::vector<std::string> &words, size_t limit = 24) {
  std::string s;
  for (size_t i = 0; i < words.size() && i < limit; ++i) s += (i ? " " : "") + words[i];
  if (words.size() > limit) s += " ...";
  return s;
}

std::string ordinalPosition(size_t index) {
  return index == 0 ? "operand 1 (destination)" : "operand " + std::to_string(index + 1);
}

/// Operand counts (min, max) of common opcodes; a `d|p` pair counts as one.
std::optional<std::pair<size_t, size_t>> operandCount(const std::string &op, const Instruction &in) {
  static const std::unordered_map<std::string, std::pair<size_t, size_t>> counts = {
      {"add", {3, 3}},    {"sub", {3, 3}},   {"addc", {3, 3}},   {"subc", {3, 3}},   {"mul", {3, 3}},
      {"div", {3, 3}},    {"rem", {3, 3}},   {"and", {3, 3}},    {"or", {3, 3}},     {"xor", {3, 3}},
      {"shl", {3, 3}},    {"shr", {3, 3}},   {"copysign", {3, 3}}, {"mul24", {3, 3}}, {"min", {3, 4}},
      {"max", {3, 4}},    {"setp", {3, 4}},  {"set", {3, 4}},    {"abs", {2, 2}},    {"neg", {2, 2}},
      {"not", {2, 2}},    {"cnot", {2, 2}},  {"popc", {2, 2}},   {"clz", {2, 2}},    {"brev", {2, 2}},
      {"bfind", {2, 2}},  {"rcp", {2, 2}},   {"sqrt", {2, 2}},   {"rsqrt", {2, 2}},  {"sin", {2, 2}},
      {"cos", {2, 2}},    {"lg2", {2, 2}},   {"ex2", {2, 2}},    {"tanh", {2, 2}},   {"mov", {2, 2}},
      {"cvta", {2, 2}},   {"testp", {2, 2}}, {"isspacep", {2, 2}}, {"mad", {4, 4}},  {"fma", {4, 4}},
      {"mad24", {4, 4}},  {"sad", {4, 4}},   {"madc", {4, 4}},   {"bfe", {4, 4}},    {"selp", {4, 4}},
      {"slct", {4, 4}},   {"prmt", {4, 4}},  {"shf", {4, 4}},    {"bfi", {5, 5}},    {"lop3", {5, 6}},
      {"cvt", {2, 4}},    {"ld", {2, 4}},    {"ldu", {2, 2}},    {"st", {2, 4}},     {"bra", {1, 1}},
      {"exit", {0, 0}},   {"ret", {0, 0}},   {"trap", {0, 0}},
  };
  (void)in;
  auto it = counts.find(op);
  if (it == counts.end()) return std::nullopt;
  return it->second;
}

/// A short alternative for an arch-gated feature, where one exists.
std::string featureAlternative(const std::string &entry, const std::string &modifier) {
  if (entry == "cp.async") return "or copy through registers (ld.global + st.shared) on older targets";
  if (entry == "redux.sync") return "or reduce with a shfl.sync.bfly tree on older targets";
  if (entry == "elect.sync") return "or pick a leader lane with activemask + bfind";
  if (entry == "cluster") return "or drop the cluster (thread block clusters exist from sm_90 on)";
  if (entry.rfind("wgmma", 0) == 0) return "or use mma.sync on non-sm_90a targets";
  if (modifier == "bf16" || modifier == "bf16x2") return "or compute in f32 (cvt.f32.bf16, then cvt.rn.bf16.f32)";
  if (entry == "tanh") return "or compute tanh from ex2.approx and rcp";
  return {};
}

// ---------------------------------------------------------------------------
// The linter
// ---------------------------------------------------------------------------

class Linter {
public:
  Linter(const Module &module, const LintOptions &options, std::vector<uint32_t> syntaxLines,
         const std::set<std::string> *unreadNames = nullptr)
      : module_(module), options_(options), syntaxLines_(std::move(syntaxLines)), unreadNames_(unreadNames) {}

  std::vector<Diagnostic> run() {
    std::sort(syntaxLines_.begin(), syntaxLines_.end());
    checkDirectives();
    collectModuleNames();
    for (const TopLevel &item : module_.items)
      if (item.kind == TopLevel::Kind::Function && item.function.hasBody) lintFunction(item.function);
    // Every finding has a place: one without (a tree built by hand) points at the module's start.
    for (Diagnostic &d : diagnostics_)
      if (d.line == 0) {
        SourceLoc start = moduleStart();
        d.line = start.line;
        d.column = start.column;
      }
    return std::move(diagnostics_);
  }

private:
  struct MissingRegister {
    SourceLoc loc;
    std::string name;
    std::string prefix;
    long index = -1;
    std::string inferredType;
  };

  struct FunctionState {
    const Function *function = nullptr;
    std::unordered_set<std::string> labels;                 ///< every label of the body
    std::unordered_map<std::string, uint32_t> labelLines;   ///< label → line of its first definition
    std::vector<std::unordered_map<std::string, uint32_t>> labelScopes; ///< labels of the enclosing blocks
    std::vector<Scope> scopes;
    std::unordered_set<std::string> reportedNames;
    std::vector<MissingRegister> missing;
    std::map<std::string, std::string> prefixTypes; // prefix → first inferred type
    // generic-address tracking: register → (param name, ld.param line)
    struct RawParam {
      std::string param;
      uint32_t line = 0;
      std::string loadedInto; ///< the register ld.param wrote
    };
    std::unordered_map<std::string, RawParam> rawParam;
    std::unordered_set<std::string> reportedParams;
    /// Register ranges declared anywhere in the body, by prefix (see existingRange).
    bool rangesIndexed = false;
    std::unordered_map<std::string, const VariableDecl *> bodyRanges;
    std::unordered_map<std::string, const VariableDecl *> bodySingles; ///< `%r4` by prefix `%r`
  };

  void report(std::string code, Severity severity, SourceLoc loc, std::string message, std::string hint) {
    diagnostics_.push_back(Diagnostic{std::move(code), severity, loc.line, loc.column, std::move(message),
                                      std::move(hint)});
  }
  void error(std::string code, SourceLoc loc, std::string message, std::string hint) {
    report(std::move(code), Severity::Error, loc, std::move(message), std::move(hint));
  }

  // --- module level -------------------------------------------------------

  void checkDirectives() {
    bool syntaxBeforeCode = false;
    uint32_t firstItemLine = UINT32_MAX;
    for (const TopLevel &item : module_.items) {
      uint32_t line = item.kind == TopLevel::Kind::Function ? item.function.loc.line
                      : item.kind == TopLevel::Kind::Variable ? item.variable.loc.line
                                                              : item.directive.loc.line;
      if (line) firstItemLine = std::min(firstItemLine, line);
    }
    for (uint32_t line : syntaxLines_)
      if (line <= firstItemLine) syntaxBeforeCode = true;

    if (!syntaxBeforeCode) {
      std::string hint;
      std::vector<std::string> missing;
      if (!module_.version) {
        missing.push_back("`.version`");
        hint += ".version 8.5";
      }
      if (!module_.hasTarget) {
        missing.push_back("`.target`");
        hint += std::string(hint.empty() ? "" : " / ") + ".target sm_90";
      }
      if (!missing.empty()) {
        if (module_.addressSize == 0) hint += " / .address_size 64";
        std::string what = missing.size() == 2 ? missing[0] + " and " + missing[1] + " directives"
                                               : missing[0] + " directive";
        error("missing-directive", moduleStart(), "module has no " + what,
              "start the module with: " + hint);
      }
    }

    if (module_.version) version_ = module_.version->first * 10 + module_.version->second;
    checkVersionAndAddressSize();
    for (const std::string &target : module_.targets) {
      if (target == "map_f64_to_f32" && mapsF64Fails())
        error("invalid-directive", module_.targetLoc,
              "`map_f64_to_f32` is for targets without f64 (below sm_13); ptxas refuses it with `.target " +
                  module_.targets.front() + "`",
              "remove `, map_f64_to_f32` from `.target`: f64 instructions compile as they are");
      uint32_t sm = targetSmNumber(target);
      if (sm == 0) continue;
      if (sm >= targetSm_) {
        if (sm > targetSm_) targetArch_ = targetFamily_ = false;
        targetSm_ = sm;
        targetArch_ = targetArch_ || targetIsArchSpecific(target);
        targetFamily_ = targetFamily_ || targetIsFamilySpecific(target);
        targetName_ = target;
      }
      uint32_t needed = minPtxForTarget(target);
      if (version_ && needed && version_ < needed) {
        ArchGate gate;
        gate.ptx = needed;
        error("arch-feature", module_.targetLoc,
              "`.target " + target + "` requires PTX ISA " + gatePtxName(gate) + ", but the module declares `.version " +
                  std::to_string(module_.version->first) + "." + std::to_string(module_.version->second) + "`",
              "use `.version " + gatePtxName(gate) + "` or later");
      }
    }
  }

  /// True when a `.target` names an SM of sm_13 or later beside `map_f64_to_f32`.
  bool mapsF64Fails() const {
    for (const std::string &target : module_.targets)
      if (targetSmNumber(target) >= 13) return true;
    return false;
  }

  /// `.version` newer than ptxas knows or too old for nvJitLink, and
  /// `.address_size`: ptxas 13 compiles 64-bit code only.
  void checkVersionAndAddressSize() {
    std::string written = module_.version ? std::to_string(module_.version->first) + "." +
                                                std::to_string(module_.version->second)
                                          : std::string();
    ArchGate newest;
    newest.ptx = kNewestPtxVersion;
    if (version_ > kNewestPtxVersion)
      error("invalid-directive", module_.versionLoc,
            "`.version " + written + "` is newer than PTX ISA " + gatePtxName(newest) +
                ", the newest that CUDA 13.0's ptxas (and nvJitLink) accept",
            "use `.version " + gatePtxName(newest) + "` (the instructions of newer PTX ISA versions are not available)");
    else if (version_ && version_ < 31)
      report("legacy-ptx", Severity::Warning, module_.versionLoc,
             "PTX ISA " + written + " is older than 3.1: ptxas compiles it, but nvJitLink (the default backend of "
                                    "`compile` and of the gate) refuses it ('Compile only' requires PTX ISA 3.1)",
             "compile with `--backend ptxas`, or regenerate the PTX with a CUDA toolkit that writes `.version` 3.1 or "
             "later");
    if (module_.addressSize == 32)
      error("invalid-directive", module_.addressSizeLoc,
            "`.address_size 32`: ptxas 13 compiles 64-bit code only (\"32-Bit compilation is no longer supported\")",
            "use `.address_size 64`, with addresses in 64-bit registers (`.b64`/`.u64`)");
    else if (module_.addressSize && version_ && version_ < 23)
      error("invalid-directive", module_.addressSizeLoc,
            "`.address_size` requires PTX ISA 2.3, but the module declares `.version " + written + "`",
            "remove the `.address_size` line (64-bit is what ptxas compiles) or raise `.version` to 2.3");
  }

  /// Where a whole-module finding points: the module's first directive or
  /// item (where `.version` belongs), or 1:1 for an empty module.
  SourceLoc moduleStart() const {
    SourceLoc first{UINT32_MAX, UINT32_MAX};
    auto consider = [&](SourceLoc loc) {
      if (loc.line && (loc.line < first.line || (loc.line == first.line && loc.column < first.column))) first = loc;
    };
    if (module_.version) consider(module_.versionLoc);
    if (module_.hasTarget) consider(module_.targetLoc);
    if (module_.addressSize) consider(module_.addressSizeLoc);
    if (!module_.items.empty()) {
      const TopLevel &item = module_.items.front();
      consider(item.kind == TopLevel::Kind::Function   ? item.function.loc
               : item.kind == TopLevel::Kind::Variable ? item.variable.loc
                                                       : item.directive.loc);
    }
    return first.line == UINT32_MAX ? SourceLoc{1, 1} : first;
  }

  void collectModuleNames() {
    std::unordered_map<std::string, const VariableDecl *> variables;
    std::unordered_map<std::string, const Function *> definitions;
    for (const TopLevel &item : module_.items) {
      if (item.kind == TopLevel::Kind::Variable) {
        const VariableDecl &v = item.variable;
        auto [it, inserted] = variables.emplace(v.name, &v);
        if (!inserted && v.linkage != "extern" && it->second->linkage != "extern") {
          error("duplicate-declaration", v.loc,
                "`" + v.name + "` is already declared at line " + std::to_string(it->second->loc.line),
                "rename one of the two declarations or remove the duplicate");
        }
        moduleVariables_.emplace(v.name, &v);
        checkDeclaration(v, DeclarationPlace::Module);
      } else if (item.kind == TopLevel::Kind::Function) {
        const Function &f = item.function;
        functions_.insert(f.name);
        if (f.hasBody) {
          auto [it, inserted] = definitions.emplace(f.name, &f);
          if (!inserted)
            error("duplicate-declaration", f.nameLoc.line ? f.nameLoc : f.loc,
                  "function `" + f.name + "` is already defined at line " + std::to_string(it->second->loc.line),
                  "rename one of the two functions or remove the duplicate body");
        }
      }
    }
  }

  // --- function level -----------------------------------------------------

  static void collectLabels(const std::vector<Statement> &body, std::vector<const Label *> &labels,
                            std::vector<const Directive *> &directives) {
    for (const Statement &s : body) {
      if (s.kind == Statement::Kind::Label) labels.push_back(&s.label);
      else if (s.kind == Statement::Kind::Directive) directives.push_back(&s.directive);
      else if (s.kind == Statement::Kind::Block) collectLabels(s.block.statements, labels, directives);
    }
  }

  /// `name: .branchtargets …` / `name: .callprototype …` written as one directive
  /// whose text starts with the label: returns the label name, or empty.
  static std::string directiveLabel(const Directive &d) {
    size_t colon = d.text.find(':');
    if (colon == std::string::npos) return {};
    std::string head = d.text.substr(0, colon);
    while (!head.empty() && head.back() == ' ') head.pop_back();
    if (head.empty() || head.find(' ') != std::string::npos) return {};
    return head;
  }

  void lintFunction(const Function &function) {
    for (const TuningDirective &tuning : function.tuning) {
      if (tuning.name == "noreturn" && function.isEntry)
        error("invalid-declaration", tuning.loc, "`.noreturn` applies to `.func` only: a kernel always returns",
              "remove `.noreturn` from `" + function.name + "`");
      if (tuning.name == "reqnctapercluster" || tuning.name == "explicitcluster" || tuning.name == "maxclusterrank") {
        ArchGate gate;
        gate.sm = 90;
        gate.ptx = 78;
        checkGate(tuning.loc, Requirement{gate, "`." + tuning.name + "`"}, "cluster");
      }
    }
    FunctionState state;
    state.function = &function;

    // Every label of the body, for hints and `.branchtargets`; which ones a
    // branch sees is decided per block (lintBlock).
    std::vector<const Label *> labels;
    std::vector<const Directive *> directives;
    collectLabels(function.body, labels, directives);
    for (const Label *label : labels) {
      state.labels.insert(label->name);
      state.labelLines.emplace(label->name, label->loc.line);
    }
    for (const Directive *d : directives) {
      std::string name = directiveLabel(*d);
      if (!name.empty()) state.labels.insert(name);
    }

    Scope params;
    DeclarationPlace place = function.isEntry ? DeclarationPlace::EntryParameter : DeclarationPlace::FunctionParameter;
    for (const VariableDecl &p : function.returnParams) {
      checkDeclaration(p, place);
      declare(params, p, state);
    }
    for (const VariableDecl &p : function.params) {
      checkDeclaration(p, place);
      declare(params, p, state);
    }
    state.scopes.push_back(std::move(params));
    lintBlock(function.body, state);
    reportMissingRegisters(state);
  }

  /// True for a name in a statement the parser could not read: it may be what
  /// that statement declared, so its absence is not reported.
  bool unread(const std::string &name) const { return unreadNames_ && unreadNames_->count(name) > 0; }

  /// Where a declaration stands, for the rules that differ.
  enum class DeclarationPlace { Module, EntryParameter, FunctionParameter, Body };

  /// The declaration forms ptxas refuses: instruction-only types, predicates
  /// outside registers, initializers outside `.global`/`.const`, arrays of
  /// no size, `.samplerref` in the unified texture mode, `.b128` before PTX 8.3.
  void checkDeclaration(const VariableDecl &v, DeclarationPlace place) {
    std::string declared = "." + std::string(stateSpaceName(v.space)) + " ." + v.type + " " + v.name;
    if (std::optional<TypeInfo> info = typeInfo(v.type); info && !isVariableType(v.type)) {
      std::string bits = "b" + std::to_string(std::max<uint32_t>(8, info->bits));
      if (v.space == StateSpace::Reg)
        error("invalid-register-type", v.loc, "`." + v.type + "` is not a register type (`" + declared + "`)",
              "declare it as `.reg ." + bits + "`; `." + v.type + "` values live in bit-size registers");
      else
        error("invalid-declaration", v.loc,
              "`." + v.type + "` is an instruction type, not a variable type (`" + declared + "`)",
              "declare it as `." + bits + "`: `." + v.type + "` values are stored as bits");
      return;
    }
    if (v.type == "pred" && v.space != StateSpace::Reg) {
      error("invalid-declaration", v.loc, "predicates live in registers only, not in `." +
                                              std::string(stateSpaceName(v.space)) + "` (`" + declared + "`)",
            "declare a `.reg .pred`, or store the value as an integer (`selp.u32 %r, 1, 0, %p`)");
      return;
    }
    if (!v.initializer.empty() && v.space != StateSpace::Global && v.space != StateSpace::Const) {
      std::string move = v.space == StateSpace::Reg ? "set it with `mov` after the declaration"
                                                    : "store the value at run time instead";
      error("invalid-declaration", v.loc,
            "`" + v.name + "` cannot have an initializer: only `.global` and `.const` variables are initialized "
                           "(`= " + v.initializer + "`)",
            move);
      return;
    }
    bool unsized = std::find(v.arrayDims.begin(), v.arrayDims.end(), 0) != v.arrayDims.end();
    // A `.func` parameter may be an unsized array (`.param .b8 p[]`); a kernel's may not.
    if (unsized && v.initializer.empty() && v.linkage.find("extern") == std::string::npos &&
        place != DeclarationPlace::FunctionParameter) {
      bool parameter = place == DeclarationPlace::EntryParameter;
      error("invalid-declaration", v.loc,
            parameter ? "kernel parameter `" + v.name + "[]` has no size: a kernel's parameters cannot be unsized arrays"
                      : "`" + v.name + "[]` has no size: only an `.extern` declaration (dynamic shared memory) or "
                                       "an initialized one may leave it out",
            parameter ? "give it a size (`" + v.name + "[16]`), or pass a pointer (`.param .u64`)"
                      : v.space == StateSpace::Shared
                          ? "give it a size, or declare dynamic shared memory: `.extern .shared .align 16 .b8 " +
                                v.name + "[];`"
                          : "give it a size (`" + v.name + "[1024]`)");
      return;
    }
    if (v.type == "samplerref" && !hasTarget("texmode_independent"))
      error("invalid-declaration", v.loc,
            "`.samplerref` needs `.target ..., texmode_independent`; in the default unified mode samplers are part "
            "of the texture",
            "add `texmode_independent` to `.target`, or drop the sampler and use the `.texref` alone");
    if (v.type == "b128") {
      ArchGate gate;
      gate.ptx = 83;
      checkGate(v.loc, Requirement{gate, "`.b128`"}, "");
    }
  }

  bool hasTarget(std::string_view name) const {
    return std::find(module_.targets.begin(), module_.targets.end(), name) != module_.targets.end();
  }

  /// Types a variable may have; the others (`.bf16`, `.tf32`, `.f32x2`, the
  /// fp8/fp6/fp4 packs, `.s16x2`) are instruction types only.
  static bool isVariableType(const std::string &type) {
    std::optional<TypeInfo> info = typeInfo(type);
    if (!info || info->typeClass != TypeClass::Float) return type != "s16x2" && type != "u16x2";
    return type == "f16" || type == "f16x2" || type == "f32" || type == "f64";
  }

  void declare(Scope &scope, const VariableDecl &v, FunctionState &) {
    if (v.rangeCount) {
      auto &list = scope.ranges[v.name];
      if (!list.empty())
        error("duplicate-declaration", v.loc,
              "`" + v.name + "<" + std::to_string(*v.rangeCount) + ">` is already declared at line " +
                  std::to_string(list.front()->loc.line),
              "declare each register range once, with the largest count needed");
      list.push_back(&v);
      return;
    }
    auto [it, inserted] = scope.names.emplace(v.name, &v);
    if (!inserted)
      error("duplicate-declaration", v.loc,
            "`" + v.name + "` is already declared at line " + std::to_string(it->second->loc.line) + " in this scope",
            "remove the duplicate declaration or give it another name");
  }

  void lintBlock(const std::vector<Statement> &statements, FunctionState &state) {
    Scope scope;
    for (const Statement &s : statements)
      if (s.kind == Statement::Kind::Variable) {
        checkDeclaration(s.variable, DeclarationPlace::Body);
        declare(scope, s.variable, state);
      }
    // Labels are scoped like variables: a label is seen in its block and the
    // blocks inside it, and two sibling blocks may define the same one (nvcc
    // does, for the wait loops of inline asm inlined twice).
    std::unordered_map<std::string, uint32_t> blockLabels;
    for (const Statement &s : statements) {
      std::string name = s.kind == Statement::Kind::Label       ? s.label.name
                         : s.kind == Statement::Kind::Directive ? directiveLabel(s.directive)
                                                                : std::string();
      if (name.empty()) continue;
      SourceLoc loc = s.kind == Statement::Kind::Label ? s.label.loc : s.directive.loc;
      auto [it, inserted] = blockLabels.emplace(name, loc.line);
      if (!inserted)
        error("duplicate-label", loc, "label `" + name + "` is already defined at line " + std::to_string(it->second),
              "rename one of the labels (and the branches that target it)");
    }
    state.labelScopes.push_back(std::move(blockLabels));
    state.scopes.push_back(std::move(scope));
    for (const Statement &s : statements) {
      switch (s.kind) {
      case Statement::Kind::Instruction: lintInstruction(s.instruction, state); break;
      case Statement::Kind::Block: lintBlock(s.block.statements, state); break;
      case Statement::Kind::Directive: lintDirective(s.directive, state); break;
      default: break;
      }
    }
    state.scopes.pop_back();
    state.labelScopes.pop_back();
  }

  void lintDirective(const Directive &d, FunctionState &state) {
    std::string text = d.text;
    if (!directiveLabel(d).empty()) text = text.substr(text.find(':') + 1);
    std::string name = d.name;
    // `.branchtargets L1, L2` lists labels that must exist.
    size_t pos = text.find(".branchtargets");
    if (name != "branchtargets" && pos == std::string::npos) return;
    if (pos != std::string::npos) text = text.substr(pos + 14);
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find(',', start);
      if (end == std::string::npos) end = text.size();
      std::string label = text.substr(start, end - start);
      label.erase(0, label.find_first_not_of(" \t"));
      while (!label.empty() && (label.back() == ' ' || label.back() == ';')) label.pop_back();
      if (!label.empty() && !state.labels.count(label) && !unread(label) && state.function->closeLoc.line &&
          state.reportedNames.insert(label).second)
        error("undefined-label", d.loc, "branch target `" + label + "` in `.branchtargets` is not defined in `" +
                                            state.function->name + "`",
              labelHint(label, state));
      start = end + 1;
    }
  }

  // --- name resolution ----------------------------------------------------

  const VariableDecl *lookup(const std::string &name, const FunctionState &state) const {
    for (auto scope = state.scopes.rbegin(); scope != state.scopes.rend(); ++scope) {
      auto it = scope->names.find(name);
      if (it != scope->names.end()) return it->second;
      auto [prefix, index] = splitRegister(name);
      if (index >= 0) {
        auto range = scope->ranges.find(prefix);
        if (range != scope->ranges.end())
          for (const VariableDecl *v : range->second)
            if (static_cast<uint64_t>(index) < *v->rangeCount) return v;
      }
    }
    auto it = moduleVariables_.find(name);
    if (it != moduleVariables_.end()) return it->second;
    return nullptr;
  }

  /// The type of a register operand, or nullopt (not a register, unknown, vector as a whole).
  std::optional<TypeInfo> registerType(const std::string &name, const FunctionState &state) const {
    if (name.empty()) return std::nullopt;
    std::string base = baseName(name);
    if (isSpecialRegister(base)) return std::nullopt;
    const VariableDecl *v = lookup(base, state);
    if (!v || v->space != StateSpace::Reg) return std::nullopt;
    if (v->vectorWidth && base == name) return std::nullopt;
    return typeInfo(v->type);
  }

  /// "Did you mean" searches compare a name with every candidate; a module
  /// with 300,000 undefined names and as many labels would make that
  /// quadratic. Past a budget of comparisons per module, hints stay generic.
  static constexpr size_t kSuggestionBudget = 2'000'000;
  static constexpr size_t kOpcodeSearchCost = 1000; ///< about the instruction table's size
  bool spendSuggestionBudget(size_t comparisons) const {
    if (comparisons > suggestionBudget_) return false;
    suggestionBudget_ -= comparisons;
    return true;
  }

  std::string labelHint(const std::string &label, const FunctionState &state) const {
    std::string best;
    size_t bestDistance = SIZE_MAX;
    if (!spendSuggestionBudget(state.labels.size()))
      return "define the label `" + label + ":` before or after the branch in this function";
    for (const std::string &l : state.labels) {
      size_t d = editDistance(label, l);
      if (d < bestDistance || (d == bestDistance && l < best)) {
        bestDistance = d;
        best = l;
      }
    }
    if (!best.empty() && bestDistance <= std::max<size_t>(2, label.size() / 3))
      return "did you mean `" + best + "`? Otherwise define the label `" + label + ":` in this function";
    return "define the label `" + label + ":` before or after the branch in this function";
  }

  void checkName(const std::string &name, SourceLoc loc, const Expect &expect, FunctionState &state) {
    if (name.empty()) return;
    if (name[0] == '%') {
      std::string base = baseName(name);
      if (isSpecialRegister(base) || lookup(base, state)) return;
      auto [prefix, index] = splitRegister(base);
      if (unread(base) || unread(prefix) || !state.reportedNames.insert(base).second) return;
      std::string type = expect.kind != Expect::Kind::None ? proposedRegisterType(expect) : std::string();
      if (!type.empty() && !state.prefixTypes.count(prefix)) state.prefixTypes[prefix] = type;
      state.missing.push_back(MissingRegister{loc, base, prefix, index, type});
      return;
    }
    if (lookup(name, state) || functions_.count(name) || state.labels.count(name) || name == "WARP_SZ") return;
    // A vector component of a register named without `%` (`input.x`).
    if (std::string base = baseName(name); base != name && lookup(base, state)) return;
    // `missing.x`: the component is fine, the name before it is what is missing.
    std::string base = baseName(name);
    if (unread(name) || unread(base) || !state.reportedNames.insert(base).second) return;
    if (calleePosition_) {
      std::string hint = symbolHint(name, state);
      if (hint.rfind("did you mean", 0) != 0)
        hint = "define the function or declare it (`.extern .func " + name + "(...)`) before the call";
      error("undeclared-symbol", loc, "call target `" + name + "` is not a declared function", hint);
      return;
    }
    error("undeclared-symbol", loc, "`" + base + "` is not declared (no variable, parameter or function of that name)",
          symbolHint(base, state));
  }

  std::string symbolHint(const std::string &name, const FunctionState &state) const {
    std::vector<std::string> candidates;
    for (const Scope &scope : state.scopes)
      for (const auto &[n, v] : scope.names)
        if (v->space != StateSpace::Reg) candidates.push_back(n);
    for (const auto &[n, v] : moduleVariables_) candidates.push_back(n);
    for (const std::string &f : functions_) candidates.push_back(f);
    if (!spendSuggestionBudget(candidates.size())) candidates.clear();
    std::string best;
    size_t bestDistance = SIZE_MAX;
    for (const std::string &c : candidates) {
      size_t d = editDistance(name, c);
      if (d < bestDistance || (d == bestDistance && c < best)) {
        bestDistance = d;
        best = c;
      }
    }
    if (!best.empty() && bestDistance <= std::max<size_t>(2, name.size() / 4))
      return "did you mean `" + best + "`?";
    return "declare it (e.g. `.shared .align 4 .b8 " + name + "[1024];` at module scope, or a `.param` of the function)";
  }

  void reportMissingRegisters(FunctionState &state) {
    // Group by prefix: one `.reg` line proposal per prefix covering every use.
    std::map<std::string, long> maxIndex;
    for (const MissingRegister &m : state.missing)
      if (m.index >= 0) maxIndex[m.prefix] = std::max(maxIndex[m.prefix], m.index);
    for (const MissingRegister &m : state.missing) {
      std::string type = m.inferredType;
      auto known = state.prefixTypes.find(m.prefix);
      if (type.empty() && known != state.prefixTypes.end()) type = known->second;
      const VariableDecl *existing = nullptr;
      if (m.index >= 0) existing = existingRange(m.prefix, state);
      if (type.empty()) type = existing ? existing->type : conventionalType(m.prefix);
      std::string hint;
      if (m.index < 0) {
        hint = "declare it: `.reg ." + type + " " + m.name + ";`";
      } else if (existing) {
        hint = "`" + m.prefix + "<" + std::to_string(*existing->rangeCount) + ">` declares " + m.prefix + "0.." +
               m.prefix + std::to_string(*existing->rangeCount - 1) + "; raise the count: `.reg ." + existing->type +
               " " + m.prefix + "<" + std::to_string(maxIndex[m.prefix] + 1) + ">;`";
      } else if (const VariableDecl *single = singleWithPrefix(m.prefix, state)) {
        // `.reg .b32 %r4;` declares %r4 alone, not %r0..%r4.
        hint = "`.reg ." + single->type + " " + single->name + ";` on line " + std::to_string(single->loc.line) +
               " declares the one register " + single->name + "; for " + m.prefix + "0.." + m.prefix +
               std::to_string(maxIndex[m.prefix]) + " write `.reg ." + single->type + " " + m.prefix + "<" +
               std::to_string(maxIndex[m.prefix] + 1) + ">;`";
      } else {
        hint = "declare it: `.reg ." + type + " " + m.prefix + "<" + std::to_string(maxIndex[m.prefix] + 1) + ">;`";
      }
      error("undeclared-register", m.loc,
            "register `" + m.name + "` is not declared in `" + state.function->name + "`", hint);
    }
  }

  /// The first `prefix<N>` declaration anywhere in the function body. The
  /// body's scopes are gone by now, so the ranges are indexed once per
  /// function: walking the body for every missing register made a function
  /// with N undeclared registers cost O(N²).
  const VariableDecl *existingRange(const std::string &prefix, FunctionState &state) const {
    if (!state.rangesIndexed) {
      state.rangesIndexed = true;
      indexRanges(state.function->body, state.bodyRanges, state.bodySingles);
    }
    auto it = state.bodyRanges.find(prefix);
    return it == state.bodyRanges.end() ? nullptr : it->second;
  }

  /// Indexes `prefix<N>` ranges by prefix, and single registers that look
  /// like a range's member (`.reg .b32 %r4;`) by their prefix (`%r`).
  static void indexRanges(const std::vector<Statement> &body,
                          std::unordered_map<std::string, const VariableDecl *> &ranges,
                          std::unordered_map<std::string, const VariableDecl *> &singles) {
    for (const Statement &s : body) {
      if (s.kind == Statement::Kind::Variable && s.variable.space == StateSpace::Reg) {
        if (s.variable.rangeCount) ranges.emplace(s.variable.name, &s.variable);
        else if (auto [prefix, index] = splitRegister(s.variable.name); index >= 0) singles.emplace(prefix, &s.variable);
      }
      if (s.kind == Statement::Kind::Block) indexRanges(s.block.statements, ranges, singles);
    }
  }

  /// A single register declared with the prefix (`%r4` for `%r`), when no range is.
  const VariableDecl *singleWithPrefix(const std::string &prefix, FunctionState &state) const {
    existingRange(prefix, state); // indexes the body once
    auto it = state.bodySingles.find(prefix);
    return it == state.bodySingles.end() ? nullptr : it->second;
  }

  // --- instructions -------------------------------------------------------

  void lintInstruction(const Instruction &in, FunctionState &state) {
    mismatchReported_ = false;
    sregReported_ = false;
    std::optional<OpcodeMatch> match = lookupInstruction(in.opcode, in.modifiers);
    bool typesOk = false;
    std::vector<Expect> expects(in.operands.size());
    if (!match) {
      std::vector<std::string> near;
      if (spendSuggestionBudget(kOpcodeSearchCost)) near = nearestOpcodes(in.opcode, in.modifiers);
      std::string shown = isKnownBaseOpcode(in.opcode) && !in.modifiers.empty() ? in.opcode + "." + in.modifiers[0]
                                                                                 : in.opcode;
      std::string hint;
      if (!near.empty()) {
        hint = "did you mean ";
        for (size_t i = 0; i < near.size(); ++i) hint += (i ? (i + 1 == near.size() ? " or " : ", ") : "") + ("`" + near[i] + "`");
        hint += "?";
      } else {
        hint = "see the PTX ISA instruction set for the available opcodes";
      }
      error("unknown-instruction", in.loc, "unknown instruction `" + shown + "`", hint);
    } else if (auto problem = checkModifiers(*match, in.modifiers)) {
      reportModifierProblem(in, *match, *problem);
    } else if (auto form = match->entry->name == "cvt" ? checkConversion(in.modifiers)
                           : match->entry->name == "atom" || match->entry->name == "red"
                               ? checkAtomic(match->entry->name, in.modifiers)
                           : match->entry->name == "ld" || match->entry->name == "st"
                               ? checkLoadStore(match->entry->name, in.modifiers)
                               : checkArithmetic(match->entry->name, in.modifiers, targetSm_, version_)) {
      // The modifiers exist, but not in this combination (`cvt.f16.f32` without rounding, `atom.add.b32`).
      SourceLoc loc = form->modifierIndex < in.modifierLocs.size() ? in.modifierLocs[form->modifierIndex] : in.loc;
      error("invalid-instruction-type", loc, form->message, form->hint);
    } else {
      typesOk = true;
      checkArch(in, *match);
      checkWarpSync(in, *match);
      checkVectorAccess(in, *match);
      checkAsyncForms(in, *match);
      checkOperandCount(in, *match);
      expects = operandExpectations(in, *match);
    }

    // Names and types of operands.
    if (!in.guard.empty()) {
      checkName(in.guard, in.guardLoc, pred(), state);
      checkRegisterType(in.guard, in.guardLoc, pred(), in, "guard predicate", state);
    }
    std::string op = match ? match->entry->name : in.opcode;
    currentOp_ = typesOk ? op : std::string();
    for (size_t i = 0; i < in.operands.size(); ++i) {
      const Operand &operand = in.operands[i];
      Expect expect = typesOk ? expects[i] : Expect{};
      bool labelPosition = (op == "bra" && i + 1 == in.operands.size()) || (op == "brx.idx" && i == 1);
      if (labelPosition && operand.kind == Operand::Kind::Name && !operand.name.empty() && operand.name[0] != '%') {
        checkLabel(operand.name, operand.loc, state);
        continue;
      }
      if (op == "call" && operand.kind == Operand::Kind::Name && operand.name[0] != '%' && i + 1 == in.operands.size() &&
          i > 0 && in.operands[i - 1].kind == Operand::Kind::List && indirectCall(in)) {
        checkLabel(operand.name, operand.loc, state); // prototype / .calltargets label
        continue;
      }
      calleePosition_ = op == "call" && operand.kind == Operand::Kind::Name;
      visitOperand(operand, i, expect, in, state);
      calleePosition_ = false;
    }
    trackGenericAddress(in, match ? match->entry->name : std::string(), state);
  }

  bool indirectCall(const Instruction &in) const {
    for (const Operand &o : in.operands)
      if (o.kind == Operand::Kind::Name) return !o.name.empty() && o.name[0] == '%';
    return false;
  }

  void checkLabel(const std::string &name, SourceLoc loc, FunctionState &state) {
    // A truncated body may define the label in the part that is missing.
    for (const auto &scope : state.labelScopes)
      if (scope.count(name)) return;
    if (unread(name) || !state.function->closeLoc.line) return;
    if (!state.reportedNames.insert(name).second) return;
    auto elsewhere = state.labelLines.find(name);
    if (elsewhere != state.labelLines.end()) {
      error("undefined-label", loc,
            "label `" + name + "` (line " + std::to_string(elsewhere->second) +
                ") is inside a `{ }` block that does not enclose this branch; a label is seen only in its own block",
            "move the label out of its block, or the branch into it");
      return;
    }
    error("undefined-label", loc, "label `" + name + "` is not defined in `" + state.function->name + "`",
          labelHint(name, state));
  }

  void visitOperand(const Operand &operand, size_t index, const Expect &expect, const Instruction &in,
                    FunctionState &state) {
    switch (operand.kind) {
    case Operand::Kind::Name:
      checkName(operand.name, operand.loc, expect, state);
      if (checkSpecialRegister(operand, expect, in)) break;
      checkRegisterType(operand.name, operand.loc, expect, in, ordinalPosition(index), state);
      break;
    case Operand::Kind::Integer:
    case Operand::Kind::Float: checkImmediate(operand, expect, in, index); break;
    case Operand::Kind::SymbolExpr: checkName(operand.name, operand.loc, Expect{}, state); break;
    case Operand::Kind::Address:
      checkName(operand.name, operand.loc, Expect{}, state);
      checkAddressRegister(operand, in, state);
      for (const Operand &e : operand.elements) visitOperand(e, index, Expect{}, in, state);
      break;
    case Operand::Kind::Vector:
      for (const Operand &e : operand.elements) visitOperand(e, index, expect, in, state);
      break;
    case Operand::Kind::List:
      for (const Operand &e : operand.elements) visitOperand(e, index, Expect{}, in, state);
      break;
    case Operand::Kind::Pair:
      for (size_t k = 0; k < operand.elements.size(); ++k) {
        Expect e = expect;
        if (k > 0) e = expect.pairSecondPred || expect.kind == Expect::Kind::Pred ? pred() : Expect{};
        visitOperand(operand.elements[k], index, e, in, state);
      }
      break;
    default: break;
    }
  }

  /// Special registers are read with mov or cvt only ("Special register
  /// argument not allowed"); the vector ones need a component.
  bool checkSpecialRegister(const Operand &operand, const Expect &expect, const Instruction &in) {
    if (operand.name.empty() || operand.name[0] != '%') return false;
    std::string base = baseName(operand.name);
    if (!isSpecialRegister(base)) return false;
    static const std::unordered_set<std::string> vectors = {"%tid", "%ntid", "%ctaid", "%nctaid", "%cluster_ctaid",
                                                            "%cluster_nctaid", "%clusterid", "%nclusterid"};
    static const std::unordered_set<std::string> wide = {"%clock64", "%globaltimer", "%gridid", "%current_graph_exec"};
    bool is64 = wide.count(base) || (base.starts_with("%pm") && base.size() > 3 && base.substr(base.size() - 3) == "_64");
    if (base.starts_with("%cluster") || base == "%nclusterid" || base == "%is_explicit_cluster") {
      ArchGate gate;
      gate.sm = 90;
      gate.ptx = 78;
      checkGate(operand.loc, Requirement{gate, "`" + base + "`"}, "cluster");
    }
    if (vectors.count(base) && base == operand.name) {
      error("special-register-operand", operand.loc,
            "special register `" + base + "` is a vector; name a component (`" + base + ".x`, `.y` or `.z`)",
            "use `" + base + ".x`");
      return true;
    }
    static const std::unordered_set<std::string> computeOps = {
        "add", "sub", "mul", "mad", "div", "rem", "abs", "neg", "min", "max", "and", "or", "xor", "not", "shl", "shr",
        "bfe", "bfi", "setp", "set", "selp", "slct", "st", "atom", "red", "popc", "clz", "bfind", "prmt", "lop3",
        "shf", "mul24", "mad24", "fma", "sad", "brev", "testp", "cnot"};
    std::string reg = is64 ? "%rd1" : "%r1";
    std::string type = is64 ? "u64" : "u32";
    if (computeOps.count(currentOp_)) {
      if (sregReported_) return true;
      sregReported_ = true;
      std::vector<std::string> all;
      for (const Operand &o : in.operands)
        if (o.kind == Operand::Kind::Name && !o.name.empty() && o.name[0] == '%' && isSpecialRegister(baseName(o.name)))
          all.push_back("`" + o.name + "`");
      std::string list;
      for (size_t k = 0; k < all.size(); ++k) list += (k ? (k + 1 == all.size() ? " and " : ", ") : "") + all[k];
      error("special-register-operand", operand.loc,
            std::string(all.size() > 1 ? "special registers " : "special register ") + list + " cannot be " +
                (all.size() > 1 ? "operands" : "an operand") + " of `" + dotted(in) +
                "`; only `mov` and `cvt` read special registers",
            "copy " + std::string(all.size() > 1 ? "each" : "it") + " into a register first: `mov." + type + " " + reg +
                ", " + operand.name + ";`");
      return true;
    }
    if (currentOp_ == "mov" && expect.kind == Expect::Kind::Data && !is64 && expect.type.bits == 64) {
      error("special-register-operand", operand.loc,
            "special register `" + operand.name + "` is 32-bit but `" + dotted(in) + "` moves 64 bits",
            "read it with `mov.u32 %r1, " + operand.name + ";` and widen with `cvt.u64.u32 %rd1, %r1;`");
      return true;
    }
    return false;
  }

  /// Integer literals are not floats in PTX (`0f3F800000` is 1.0f), and float
  /// literals are not integers.
  void checkImmediate(const Operand &operand, const Expect &expect, const Instruction &in, size_t index) {
    if (expect.kind != Expect::Kind::Data || currentOp_ == "cvt" || mismatchReported_) return;
    bool instFloat = expect.type.typeClass == TypeClass::Float;
    bool instInt = expect.type.typeClass == TypeClass::Signed || expect.type.typeClass == TypeClass::Unsigned;
    if (operand.kind == Operand::Kind::Integer && instFloat) {
      std::string hint = "write floating-point constants as floats";
      if (expect.typeName == "f32") {
        float value = static_cast<float>(operand.intValue);
        uint32_t bits;
        std::memcpy(&bits, &value, sizeof bits);
        char buffer[16];
        std::snprintf(buffer, sizeof buffer, "0f%08X", bits);
        hint = "write " + operand.text + " as the float literal `" + buffer + "`";
      } else if (expect.typeName == "f64") {
        double value = static_cast<double>(operand.intValue);
        uint64_t bits;
        std::memcpy(&bits, &value, sizeof bits);
        char buffer[24];
        std::snprintf(buffer, sizeof buffer, "0d%016llX", static_cast<unsigned long long>(bits));
        hint = "write " + operand.text + " as the double literal `" + buffer + "`";
      }
      mismatchReported_ = true;
      error("immediate-type-mismatch", operand.loc,
            "integer literal `" + operand.text + "` in " + ordinalPosition(index) + " of `" + dotted(in) +
                "`, which needs a `." + expect.typeName + "` value",
            hint);
    } else if (operand.kind == Operand::Kind::Float && instInt) {
      mismatchReported_ = true;
      error("immediate-type-mismatch", operand.loc,
            "float literal `" + operand.text + "` in " + ordinalPosition(index) + " of `" + dotted(in) +
                "`, which needs a `." + expect.typeName + "` integer",
            "write an integer literal, or use a `.b" + std::to_string(expect.type.bits) +
                "` instruction type to move raw bits");
    }
  }

  void checkAddressRegister(const Operand &operand, const Instruction &in, FunctionState &state) {
    std::optional<TypeInfo> reg = registerType(operand.name, state);
    if (reg && reg->bits == 32 && reg->typeClass != TypeClass::Float && !mismatchReported_ &&
        holds64BitAddress(in)) {
      // ptxas 13 has no 32-bit addressing: "32-Bit compilation is no longer supported".
      mismatchReported_ = true;
      const VariableDecl *decl = lookup(baseName(operand.name), state);
      std::string space = hasModifier(in, "global") ? "`.global`" : "generic";
      error("register-type-mismatch", operand.loc,
            "register `" + operand.name + "` is declared `." + (decl ? decl->type : std::string("?")) +
                "`, but " + space + " addresses are 64-bit: `" + dotted(in) + "` needs a 64-bit address register",
            "widen the offset and add it to a 64-bit pointer: `mul.wide.u32 %rd2, " + operand.name +
                ", 4;` then `add.s64 %rd3, %rd1, %rd2;` (32-bit registers address only .shared and .local)");
      return;
    }
    if (!reg || (reg->typeClass != TypeClass::Float && reg->typeClass != TypeClass::Pred) || mismatchReported_) return;
    mismatchReported_ = true;
    const VariableDecl *decl = lookup(baseName(operand.name), state);
    error("register-type-mismatch", operand.loc,
          "register `" + operand.name + "` is declared `." + (decl ? decl->type : std::string("?")) +
              "` and cannot hold the address of `" + dotted(in) + "`",
          "addresses live in `.b64`/`.u64` registers (or `.b32` for shared memory offsets)");
  }

  void checkRegisterType(const std::string &name, SourceLoc loc, const Expect &expect, const Instruction &in,
                         const std::string &position, FunctionState &state) {
    if (expect.kind == Expect::Kind::None) return;
    std::optional<TypeInfo> reg = registerType(name, state);
    if (!reg) return;
    const VariableDecl *decl = lookup(baseName(name), state);
    std::string declared = decl ? decl->type : "?";
    if (compatible(declared, *reg, expect)) return;
    // One finding per instruction: the first mismatched operand.
    if (mismatchReported_) return;
    mismatchReported_ = true;
    std::string instr = dotted(in);
    std::string message = "register `" + name + "` is declared `." + declared + "` but `" + instr + "` needs " +
                          describeType(expect.type) + " (`." + expect.typeName + "`) in " + position;
    std::string hint;
    if (expect.kind == Expect::Kind::Pred) {
      hint = "use a `.pred` register here (e.g. from `setp`), or declare `" + name + "` as `.pred`";
    } else if (reg->typeClass == TypeClass::Pred) {
      hint = "a predicate cannot be used as data; convert it with `selp." + expect.typeName + " %x, 1, 0, " + name + ";`";
    } else {
      hint = "declare `" + baseName(name) + "` as `." + proposedRegisterType(expect) + "`";
      std::optional<OpcodeMatch> match = lookupInstruction(in.opcode, in.modifiers);
      if (match && entryAllowsModifier(*match->entry, declared) && in.opcode != "ld" && in.opcode != "st" &&
          in.opcode != "cvt") {
        Instruction retyped = in;
        for (std::string &m : retyped.modifiers)
          if (m == expect.typeName) m = declared;
        if (dotted(retyped) != instr) hint += ", or use `" + dotted(retyped) + "` if the value is ." + declared;
      }
      bool sameClassOnly = reg->typeClass == TypeClass::Float || expect.type.typeClass == TypeClass::Float;
      if (sameClassOnly || reg->bits != expect.type.bits) {
        // cvt takes no bit-size types: read `.b64` as `.s64` (and so on).
        auto cvtType = [](std::string type) {
          if (type.size() > 1 && type[0] == 'b' && std::isdigit(static_cast<unsigned char>(type[1]))) type[0] = 's';
          return type;
        };
        std::string cvtDst = cvtType(expect.typeName), cvtSrc = cvtType(declared);
        if (typeInfo(cvtSrc) && cvtSrc != "pred" && cvtDst != "pred") {
          // The form cvt takes for this pair: no rounding, `.rn` (to a float) or `.rzi` (to an integer).
          for (const char *rounding : {"", "rn", "rzi"}) {
            std::vector<std::string> form = {cvtDst, cvtSrc};
            if (*rounding) form.insert(form.begin(), rounding);
            if (checkConversion(form)) continue;
            hint += ", or convert the value first with `cvt" + std::string(*rounding ? "." : "") + rounding + "." +
                    cvtDst + "." + cvtSrc + "`";
            break;
          }
        }
      }
    }
    (void)state;
    error("register-type-mismatch", loc, message, hint);
  }

  void reportModifierProblem(const Instruction &in, const OpcodeMatch &match, const ModifierProblem &problem) {
    SourceLoc loc = problem.index < in.modifierLocs.size() ? in.modifierLocs[problem.index] : in.loc;
    if (loc.line == 0) loc = in.loc;
    const std::string &name = match.entry->name;
    std::string slotWord = problem.slot == "modifier" ? "modifier" : problem.slot;
    std::string message = "`." + problem.modifier + "` is not a valid " + slotWord + " for `" + name + "`";
    if (!problem.valid.empty()) {
      std::string plural = slotWord;
      if (plural == "type" || plural == "modifier" || plural == "shape" || plural == "scope" || plural == "layout")
        plural += "s";
      else if (plural == "state space") plural = "state spaces";
      else if (plural == "comparison") plural = "comparisons";
      else if (plural.back() != 's') plural += "s";
      message += "; valid " + plural + ": " + joinWords(problem.valid);
    }
    std::string hint;
    if (!problem.suggestion.empty()) {
      Instruction fixed = in;
      fixed.modifiers[problem.index] = problem.suggestion;
      hint = "did you mean `" + dotted(fixed) + "`?";
    } else if (problem.slot == "type" && !problem.valid.empty()) {
      hint = "use one of the valid types, converting operands with `cvt` if needed";
    } else {
      hint = "remove `." + problem.modifier + "`";
    }
    if (name.size() >= 1 && name[0] == 'v' && problem.slot == "type" && typeInfo(problem.modifier) &&
        typeInfo(problem.modifier)->typeClass == TypeClass::Float)
      hint = "video instructions take integer types only; use `" +
             (name.size() > 1 ? name.substr(1) : name) + "." + problem.modifier + "` for floating point";
    error("invalid-instruction-type", loc, message, hint);
  }

  void checkArch(const Instruction &in, const OpcodeMatch &match) {
    for (const Requirement &req : instructionRequirements(match, in.modifiers)) checkGate(in.loc, req, match.entry->name);
  }

  /// Reports `req` when the module's target or version does not meet it; once
  /// per feature family and gate (`cp.async` + commit/wait_group is one finding).
  void checkGate(SourceLoc loc, const Requirement &req, const std::string &entryName) {
    if (!module_.hasTarget) return;
    {
      const ArchGate &g = req.gate;
      bool smFails = g.sm && targetSm_ && targetSm_ < g.sm;
      bool archFails = !smFails && !targetMeetsGate(g, targetSm_, targetArch_, targetFamily_);
      bool ptxFails = g.ptx && version_ && version_ < g.ptx;
      if (!smFails && !archFails && !ptxFails) return;
      std::string family = entryName.substr(0, entryName.find('.'));
      std::string key = req.feature.rfind("`.", 0) == 0 || family.empty() ? req.feature : family;
      if (!reportedFeatures_.insert(key + "@" + gateTargetName(g) + gatePtxName(g)).second) return;
      std::string needs;
      std::vector<std::string> fixes;
      if (smFails || archFails) {
        needs = gateTargetName(g) + (g.archSpecific ? "" : " or later");
        fixes.push_back("`.target " + gateTargetName(g) + "`");
      }
      if (ptxFails) {
        needs += std::string(needs.empty() ? "" : " and ") + "PTX ISA " + gatePtxName(g);
        fixes.push_back("`.version " + gatePtxName(g) + "`");
      }
      std::string has = "module targets " + (targetName_.empty() ? std::string("?") : targetName_);
      if (module_.version)
        has += " with `.version " + std::to_string(module_.version->first) + "." +
               std::to_string(module_.version->second) + "`";
      std::string hint = "use " + (fixes.size() == 2 ? fixes[0] + " and " + fixes[1] : fixes[0]);
      std::string modifier;
      size_t tick = req.feature.find("`.");
      if (tick == 0) modifier = req.feature.substr(2, req.feature.find('`', 2) - 2);
      std::string alternative = featureAlternative(entryName, modifier);
      if (!alternative.empty()) hint += ", " + alternative;
      error("arch-feature", loc, req.feature + " requires " + needs + " (" + has + ")", hint);
    }
  }

  /// `vote` and `shfl` without `.sync` left the ISA for sm_70 and later
  /// (independent thread scheduling) from PTX ISA 6.4 on.
  void checkWarpSync(const Instruction &in, const OpcodeMatch &match) {
    const std::string &op = match.entry->name;
    if ((op != "vote" && op != "shfl") || hasModifier(in, "sync") || targetSm_ < 70 || version_ < 64) return;
    if (!reportedFeatures_.insert(op + " without .sync").second) return;
    std::string example = op == "vote" ? "vote.sync.ballot.b32 %r1, %p1, 0xffffffff;"
                                       : "shfl.sync.bfly.b32 %r1, %r2, 1, 0x1f, 0xffffffff;";
    error("arch-feature", in.loc,
          "`" + op + "` without `.sync` is not supported on sm_70 and later from PTX ISA 6.4 (module targets " +
              targetName_ + " with `.version " + std::to_string(version_ / 10) + "." + std::to_string(version_ % 10) +
              "`)",
          "write `" + op + ".sync` with a member mask as the last operand, e.g. `" + example + "`");
  }

  /// Loads and stores move at most 128 bits, or 256 (`.v8` of 32-bit or `.v4`
  /// of 64-bit values) from `.global` on sm_100 with PTX ISA 8.8.
  void checkVectorAccess(const Instruction &in, const OpcodeMatch &match) {
    const std::string &op = match.entry->name;
    if (op != "ld" && op != "st" && op != "ldu") return;
    uint32_t width = hasModifier(in, "v8") ? 8 : hasModifier(in, "v4") ? 4 : hasModifier(in, "v2") ? 2 : 1;
    uint32_t bits = 0;
    for (size_t i = match.consumed; i < in.modifiers.size(); ++i)
      if (std::optional<TypeInfo> t = typeInfo(in.modifiers[i])) bits = t->bits;
    if (width == 1 || width * bits <= 128) return;
    bool wide256 = width * bits == 256 && bits >= 32 && bits <= 64;
    if (!wide256) {
      error("invalid-instruction-type", in.loc,
            "`" + dotted(in) + "` moves " + std::to_string(width * bits) + " bits; a vector access moves at most 128 "
                                                                               "(256 from .global on sm_100)",
            "split it into accesses of 128 bits (`.v4.b32`, `.v2.b64`)");
      return;
    }
    bool global = hasModifier(in, "global");
    if (!global) {
      error("invalid-instruction-type", in.loc,
            "`" + dotted(in) + "` moves 256 bits, which only `.global` accesses can",
            "split it into two 128-bit accesses (or use `" + op + ".global` where the data is global)");
      return;
    }
    ArchGate gate;
    gate.sm = 100;
    gate.ptx = 88;
    checkGate(in.loc, Requirement{gate, "256-bit `" + op + "`"}, "");
  }

  /// Gates and operand rules of the sm_90 asynchronous forms that depend on
  /// more than one modifier, or on an operand (measured with ptxas 13.0:
  /// tests/golden/gates/hopper.probes).
  void checkAsyncForms(const Instruction &in, const OpcodeMatch &match) {
    const std::string &op = match.entry->name;
    if (op == "cp.async.bulk" || op == "cp.async.bulk.tensor") {
      // The first state space is the destination; `.shared::cta` there came with PTX ISA 8.6.
      for (size_t i = match.consumed; i < in.modifiers.size(); ++i) {
        const std::string &m = in.modifiers[i];
        if (m != "global" && m != "shared::cta" && m != "shared::cluster") continue;
        if (m == "shared::cta") {
          ArchGate gate;
          gate.sm = 90;
          gate.ptx = 86;
          checkGate(in.loc, Requirement{gate, "`.shared::cta` as the destination of `" + op + "`"}, "");
        }
        break;
      }
    } else if ((op == "mbarrier.arrive" || op == "mbarrier.arrive_drop") && !hasModifier(in, "noComplete") &&
               !hasModifier(in, "expect_tx") && in.operands.size() == 3) {
      // A count operand without `.noComplete` is sm_90's form.
      ArchGate gate;
      gate.sm = 90;
      checkGate(in.loc, Requirement{gate, "`" + op + "` with a count operand (without `.noComplete`)"}, "");
    } else if (op == "setmaxnreg" && !in.operands.empty() && in.operands[0].kind == Operand::Kind::Integer) {
      int64_t count = in.operands[0].intValue;
      if (count < 24 || count > 256 || count % 8 != 0)
        error("invalid-immediate", in.operands[0].loc,
              "`" + dotted(in) + "` sets the per-thread register count to " + std::to_string(count) +
                  "; it must be a multiple of 8 from 24 to 256",
              "use " + std::to_string(std::clamp<int64_t>((count + 7) / 8 * 8, 24, 256)));
    }
  }

  /// Memory instructions whose address is `.global` or generic (no state
  /// space), which is 64-bit: `ld`, `st`, `atom`, `red`, `prefetch`.
  static bool holds64BitAddress(const Instruction &in) {
    static const std::unordered_set<std::string> memory = {"ld", "ldu", "st", "atom", "red", "prefetch", "prefetchu"};
    if (!memory.count(in.opcode)) return false;
    for (const std::string &m : in.modifiers) {
      std::string_view space = m;
      if (space == "shared" || space.rfind("shared::", 0) == 0 || space == "local" || space == "const" ||
          space == "param" || space.rfind("param::", 0) == 0 || space == "tensormap")
        return false;
    }
    return true;
  }

  void checkOperandCount(const Instruction &in, const OpcodeMatch &match) {
    auto counts = operandCount(match.entry->name, in);
    if (!counts) return;
    size_t n = in.operands.size();
    if (n >= counts->first && n <= counts->second) return;
    std::string expected = counts->first == counts->second
                               ? std::to_string(counts->first)
                               : std::to_string(counts->first) + " to " + std::to_string(counts->second);
    error("operand-count", in.loc,
          "`" + dotted(in) + "` takes " + expected + " operand" + (counts->second == 1 ? "" : "s") + ", found " +
              std::to_string(n),
          n < counts->first ? "add the missing operand(s)" : "remove the extra operand(s)");
  }

  // --- generic-address ----------------------------------------------------

  void trackGenericAddress(const Instruction &in, const std::string &op, FunctionState &state) {
    if (!options_.warnGenericAddress || !state.function->isEntry || op.empty()) return;
    bool global = hasModifier(in, "global");
    if (global && (op == "ld" || op == "st" || op == "atom" || op == "red")) {
      for (const Operand &o : in.operands) {
        if (o.kind != Operand::Kind::Address) continue;
        auto it = state.rawParam.find(o.name);
        if (it == state.rawParam.end()) continue;
        const auto &[param, line, loadedInto] = it->second;
        if (!state.reportedParams.insert(param).second) continue;
        report("generic-address", Severity::Warning, o.loc,
               "`" + o.name + "` holds kernel parameter `" + param + "` (a generic address) and is used as a `." +
                   "global` address without `cvta.to.global`",
               "convert it after the `ld.param` on line " + std::to_string(line) + ": `cvta.to.global.u64 %rdN, " +
                   loadedInto + ";` and compute addresses from %rdN");
      }
    }
    static const std::unordered_set<std::string> noDestination = {
        "st", "red", "red.async", "st.async", "st.bulk", "bra", "brx.idx", "call", "ret", "exit", "trap", "bar",
        "barrier", "barrier.cluster", "membar", "fence", "prefetch", "prefetchu", "nanosleep", "pmevent",
        "griddepcontrol", "applypriority", "discard", "stackrestore", "brkpt", "stmatrix", "sust", "sured"};
    if (in.operands.empty() || in.operands[0].kind != Operand::Kind::Name || noDestination.count(op) ||
        op.rfind("cp.", 0) == 0 || op.rfind("mbarrier.", 0) == 0 || op.rfind("wgmma.", 0) == 0)
      return;
    const std::string &dest = in.operands[0].name;
    state.rawParam.erase(dest);
    if (in.operands.size() < 2) return;
    bool wide = hasModifier(in, "u64") || hasModifier(in, "b64") || hasModifier(in, "s64");
    if (!wide) return;
    const Operand &a = in.operands[1];
    if (op == "ld" && hasModifier(in, "param") && a.kind == Operand::Kind::Address) {
      for (const VariableDecl &p : state.function->params)
        if (p.name == a.name && (p.type == "u64" || p.type == "b64" || p.type == "s64") && !p.isPtr)
          state.rawParam[dest] = {p.name, in.loc.line, dest};
      return;
    }
    auto rawOf = [&](const Operand &o) -> const FunctionState::RawParam * {
      if (o.kind != Operand::Kind::Name) return nullptr;
      auto it = state.rawParam.find(o.name);
      return it == state.rawParam.end() ? nullptr : &it->second;
    };
    if (op == "mov") {
      if (auto raw = rawOf(a)) state.rawParam[dest] = *raw;
    } else if ((op == "add" || op == "sub") && in.operands.size() == 3) {
      auto ra = rawOf(a);
      auto rb = op == "add" ? rawOf(in.operands[2]) : nullptr;
      if (ra && !rb) state.rawParam[dest] = *ra;
      else if (rb && !ra) state.rawParam[dest] = *rb;
    }
  }

  const Module &module_;
  LintOptions options_;
  std::vector<uint32_t> syntaxLines_;
  /// Names in statements the parser could not read (ParseResult::unreadNames).
  const std::set<std::string> *unreadNames_ = nullptr;
  std::vector<Diagnostic> diagnostics_;
  uint32_t version_ = 0;
  uint32_t targetSm_ = 0;
  bool targetArch_ = false;   ///< the highest target has the `a` suffix
  bool targetFamily_ = false; ///< ... or the `f` suffix
  std::string targetName_;
  bool mismatchReported_ = false;
  bool sregReported_ = false;
  bool calleePosition_ = false;
  std::string currentOp_;
  std::unordered_map<std::string, const VariableDecl *> moduleVariables_;
  std::unordered_set<std::string> functions_;
  std::unordered_set<std::string> reportedFeatures_;
  mutable size_t suggestionBudget_ = kSuggestionBudget;
};

} // namespace

std::vector<Diagnostic> lint(const Module &module, const LintOptions &options) {
  std::vector<Diagnostic> diagnostics = Linter(module, options, {}).run();
  sortByLocation(diagnostics);
  applyDiagnosticLimits(diagnostics, options.limits);
  return diagnostics;
}

std::vector<Diagnostic> lintSource(std::string_view source, const LintOptions &options) {
  return lintParsed(parse(source, DiagnosticLimits::unlimited()), options);
}

std::vector<Diagnostic> lintParsed(const ParseResult &parsed, const LintOptions &options) {
  std::vector<uint32_t> syntaxLines;
  for (const Diagnostic &d : parsed.diagnostics) syntaxLines.push_back(d.line ? d.line : UINT32_MAX);
  std::vector<Diagnostic> diagnostics = parsed.diagnostics;
  std::vector<Diagnostic> lintDiagnostics =
      Linter(parsed.module, options, std::move(syntaxLines), &parsed.unreadNames).run();
  diagnostics.insert(diagnostics.end(), std::make_move_iterator(lintDiagnostics.begin()),
                     std::make_move_iterator(lintDiagnostics.end()));
  sortByLocation(diagnostics);
  applyDiagnosticLimits(diagnostics, options.limits);
  return diagnostics;
}

} // namespace ptxforge::ptx
