// The PTX abstract syntax tree. Every node carries its source location so that
// lint and compiler diagnostics point at the line a model (or person) wrote.
//
// The tree stays close to the text: opcodes keep their modifier chain as
// written (`ld` + {"global", "v4", "f32"}), names keep their sigils (`%r1`,
// `$L__BB0_1`), immediates keep their spelling. Meaning (is `x` a register, a
// variable or a label?) is resolved by the lint, not the parser.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ptxforge::ptx {

/// 1-based line and column of a token. Locations never take part in AST
/// equality: two trees are equal when they say the same thing, wherever they
/// were written (this is what makes `parse(print(parse(x))) == parse(x)`
/// meaningful).
struct SourceLoc {
  uint32_t line = 0;
  uint32_t column = 0;
  friend bool operator==(const SourceLoc &, const SourceLoc &) { return true; }
};

/// One instruction operand.
struct Operand {
  enum class Kind {
    Name,       ///< register, special register, variable, label or function: `%r1`, `%tid.x`, `sym`
    Integer,    ///< integer immediate: `42`, `-1`, `0xFF`, `0x7fU`
    Float,      ///< float immediate: `0f3F800000`, `0d3FF0000000000000`, `1.5`
    Address,    ///< `[base+offset]`, `[imm]`, `[tmap, {c0, c1}]`
    Vector,     ///< `{a, b, c, d}`; elements are Name/Integer/Float/Sink operands
    List,       ///< parenthesized list in `call`: `(retval0)`, `(param0, param1)`
    Pair,       ///< `%p1|%p2` (setp/vote destinations); elements hold both halves
    Sink,       ///< `_`
    SymbolExpr, ///< `sym+4` outside brackets (mov of an address plus offset)
  };

  Kind kind = Kind::Name;
  SourceLoc loc;

  /// Name, SymbolExpr and Address: the name including sigil and any component
  /// or selector suffix (`%tid.x`, `%v1.y`, `%r2.h0`); for Address, the base
  /// (empty for `[imm]`).
  std::string name;
  /// `!%p` (negated predicate operand).
  bool negated = false;
  /// `-%r2` (negated register source, as `vmad` allows).
  bool minus = false;

  /// Integer: the value as written (two's complement in 64 bits for negatives).
  /// Address and SymbolExpr: the byte offset.
  int64_t intValue = 0;
  /// Float: the value (for `0f` immediates, the float widened to double).
  double floatValue = 0.0;
  /// Integer and Float: the spelling, kept for printing and for width checks
  /// (`0f…` is 32-bit, `0d…` 64-bit).
  std::string text;

  /// Vector, List, Pair elements; Address: the coordinate vector of a tensor
  /// address (`[tmap, {x, y}]`), as a single Vector operand.
  std::vector<Operand> elements;

  /// Floats compare by bits, so a NaN immediate equals itself.
  bool operator==(const Operand &other) const {
    return kind == other.kind && name == other.name && negated == other.negated && minus == other.minus &&
           intValue == other.intValue &&
           std::bit_cast<uint64_t>(floatValue) == std::bit_cast<uint64_t>(other.floatValue) && text == other.text &&
           elements == other.elements;
  }
};

/// An instruction: `@%p bra.uni $L1;`, `ld.global.v4.f32 {…}, [%rd1+16];`.
struct Instruction {
  SourceLoc loc;
  /// Guard predicate (`@%p1` / `@!%p1`); empty name when unguarded.
  std::string guard;
  bool guardNegated = false;
  SourceLoc guardLoc;

  std::string opcode;                 ///< `ld`, `mma`, `cp`
  std::vector<std::string> modifiers; ///< without dots: {"global", "v4", "f32"}
  std::vector<SourceLoc> modifierLocs;
  std::vector<Operand> operands;

  bool operator==(const Instruction &other) const {
    return guard == other.guard && guardNegated == other.guardNegated && opcode == other.opcode &&
           modifiers == other.modifiers && operands == other.operands;
  }
};

enum class StateSpace { Reg, Sreg, Const, Global, Local, Param, Shared, Tex, None };

const char *stateSpaceName(StateSpace space); ///< "reg", "global", ... (no dot)

/// A variable (or parameter) declaration. For `.reg .b32 %r<5>` the parser
/// records `name = "%r"`, `rangeCount = 5`, which declares %r0 … %r4.
struct VariableDecl {
  SourceLoc loc;
  StateSpace space = StateSpace::Reg;
  /// `.shared::cta` / `.shared::cluster` qualifier, without `::` (may be empty).
  std::string spaceQualifier;
  std::string linkage;            ///< "extern", "visible", "weak", "common" or empty
  uint32_t align = 0;             ///< `.align N`; 0 when absent
  uint32_t vectorWidth = 0;       ///< 2/4/8 for `.v2`/`.v4`/`.v8`; 0 for scalars
  std::string type;               ///< "b32", "f16x2", "pred", … (no dot)
  std::string name;
  std::optional<uint32_t> rangeCount; ///< `%r<N>`
  /// Array dimensions; 0 for an unsized dimension (`[]`).
  std::vector<uint64_t> arrayDims;
  /// `.ptr` attributes of kernel parameters (`.ptr.global.align 16`).
  bool isPtr = false;
  std::string ptrSpace; ///< "global", "shared", "const", "local" or empty
  uint32_t ptrAlign = 0;
  /// Initializer tokens, normalized with single spaces (`{1, 2, 3}`); empty when absent.
  std::string initializer;

  bool operator==(const VariableDecl &other) const {
    return space == other.space && spaceQualifier == other.spaceQualifier && linkage == other.linkage &&
           align == other.align && vectorWidth == other.vectorWidth && type == other.type && name == other.name &&
           rangeCount == other.rangeCount && arrayDims == other.arrayDims && isPtr == other.isPtr &&
           ptrSpace == other.ptrSpace && ptrAlign == other.ptrAlign && initializer == other.initializer;
  }
};

/// A directive kept as text: `.pragma "nounroll";`, `.loc 1 5 3`, `.file 1 "a.cu"`,
/// `.section .debug_str { … }`, `.callprototype` lines. Never fatal.
struct Directive {
  SourceLoc loc;
  std::string name;  ///< without the dot: "pragma", "loc", "file", "section", …
  std::string text;  ///< everything after the name, normalized whitespace, without the final `;`

  bool operator==(const Directive &other) const { return name == other.name && text == other.text; }
};

/// `name:` in a function body.
struct Label {
  SourceLoc loc;
  std::string name;
  bool operator==(const Label &other) const { return name == other.name; }
};

struct Statement;

/// `{ … }` nested scope in a function body (nvcc wraps call sequences in one).
struct Block {
  SourceLoc loc;
  std::vector<Statement> statements;
  bool operator==(const Block &) const;
};

/// One statement of a function body.
struct Statement {
  enum class Kind { Instruction, Label, Variable, Directive, Block };
  Kind kind = Kind::Instruction;
  Instruction instruction;
  Label label;
  VariableDecl variable;
  Directive directive;
  Block block; // only for Kind::Block

  bool operator==(const Statement &other) const;
};

/// A performance-tuning directive on a function: `.maxntid 256, 1, 1`.
struct TuningDirective {
  SourceLoc loc;
  std::string name; ///< "maxntid", "reqntid", "minnctapersm", "maxnreg", "maxclusterrank", "reqnctapercluster", "explicitcluster", "noreturn", "pragma"
  std::vector<std::string> values;
  bool operator==(const TuningDirective &other) const { return name == other.name && values == other.values; }
};

/// `.entry` or `.func`, with or without a body.
struct Function {
  SourceLoc loc;
  bool isEntry = false;
  std::string linkage; ///< "visible", "extern", "weak" or empty
  std::string name;
  SourceLoc nameLoc;
  std::vector<VariableDecl> returnParams; ///< `.func (.param .b32 r) f(...)`
  std::vector<VariableDecl> params;
  std::vector<TuningDirective> tuning;
  bool hasBody = false;
  std::vector<Statement> body;
  SourceLoc closeLoc; ///< location of the closing `}`

  bool operator==(const Function &other) const {
    return isEntry == other.isEntry && linkage == other.linkage && name == other.name &&
           returnParams == other.returnParams && params == other.params && tuning == other.tuning &&
           hasBody == other.hasBody && body == other.body;
  }
};

/// A top-level item of a module, in source order.
struct TopLevel {
  enum class Kind { Function, Variable, Directive };
  Kind kind = Kind::Function;
  Function function;
  VariableDecl variable;
  Directive directive;
  bool operator==(const TopLevel &other) const;
};

/// A parsed PTX module.
struct Module {
  /// `.version 8.5` → 8, 5. Absent when the module has no `.version`.
  std::optional<std::pair<uint32_t, uint32_t>> version;
  SourceLoc versionLoc;
  std::vector<std::string> targets; ///< `.target sm_90a, texmode_independent` → {"sm_90a", "texmode_independent"}
  SourceLoc targetLoc;
  bool hasTarget = false;
  uint32_t addressSize = 0; ///< 32/64; 0 when absent (PTX default is 32)
  SourceLoc addressSizeLoc;
  std::vector<TopLevel> items;

  bool operator==(const Module &other) const {
    return version == other.version && targets == other.targets && hasTarget == other.hasTarget &&
           addressSize == other.addressSize && items == other.items;
  }
};

inline bool Block::operator==(const Block &other) const { return statements == other.statements; }

inline bool Statement::operator==(const Statement &other) const {
  if (kind != other.kind) return false;
  switch (kind) {
  case Kind::Instruction: return instruction == other.instruction;
  case Kind::Label: return label == other.label;
  case Kind::Variable: return variable == other.variable;
  case Kind::Directive: return directive == other.directive;
  case Kind::Block: return block == other.block;
  }
  return false;
}

inline bool TopLevel::operator==(const TopLevel &other) const {
  if (kind != other.kind) return false;
  switch (kind) {
  case Kind::Function: return function == other.function;
  case Kind::Variable: return variable == other.variable;
  case Kind::Directive: return directive == other.directive;
  }
  return false;
}

/// The SM number of a target name: "sm_90a" → 90, "compute_80" → 80; 0 if none.
uint32_t targetSmNumber(const std::string &target);
/// True for arch-specific targets with an `a` suffix ("sm_90a", "sm_100a").
bool targetIsArchSpecific(const std::string &target);
/// True for family targets with an `f` suffix ("sm_100f").
bool targetIsFamilySpecific(const std::string &target);
/// The architecture to compile `module` for on a device (or at a request) of
/// `arch`: the module's own arch-specific or family target ("sm_90a",
/// "sm_100f") when it names the same SM as `arch` ("sm_90") — such PTX
/// compiles only for that target, and runs on that device — else `arch`.
std::string compileArchFor(const Module &module, const std::string &arch);

} // namespace ptxforge::ptx
