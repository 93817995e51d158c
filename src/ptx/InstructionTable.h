// The PTX instruction table: which opcodes exist, which modifiers each one
// accepts, and which target / PTX ISA version each opcode or modifier needs.
//
// The data lives in one static array in InstructionTable.cpp (space-separated
// modifier sets, parsed once into hash maps at first use). The table is
// deliberately permissive: it must accept everything ptxas accepts (nvcc's own
// output for sm_75 … sm_90a lints clean), so a modifier is only rejected when
// it is certainly wrong for the opcode.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::ptx {

/// Class of a PTX fundamental type.
enum class TypeClass { Bit, Signed, Unsigned, Float, Pred };

/// Width and class of a type name: "b32" → {Bit, 32}, "f16x2" → {Float, 32}.
struct TypeInfo {
  TypeClass typeClass = TypeClass::Bit;
  uint32_t bits = 0;
  bool operator==(const TypeInfo &) const = default;
};

/// The type behind a type name (without the dot); nullopt for non-types.
/// Knows b8…b128, s/u8…64, f16 f16x2 bf16 bf16x2 tf32 f32 f32x2 f64, the fp8/fp6/fp4
/// packed types (e4m3x2, e5m2x2, …), s16x2/u16x2, and pred.
std::optional<TypeInfo> typeInfo(std::string_view typeName);

/// "a 32-bit float", "a predicate", ... for messages.
std::string describeType(const TypeInfo &type);

/// A minimum target: SM number, whether the arch-specific `a` suffix is
/// required, and the minimum PTX ISA version (major*10 + minor, e.g. 78 = 7.8).
struct ArchGate {
  uint32_t sm = 0;
  bool archSpecific = false;
  uint32_t ptx = 0;
  /// Arch-specific features are not carried forward: the SM numbers whose
  /// `a`/`f` targets have this one, space-separated ("90" for wgmma, "100 103
  /// 110" for tcgen05); empty when every SM from `sm` on has it.
  std::string sms;
  /// Only the `a` targets have it, not the `f` family targets (`cvt.rs` with
  /// four-element packs).
  bool archOnly = false;
};

/// The newest PTX ISA version the table knows, and the newest CUDA 13.0's
/// ptxas accepts ("Unsupported .version 9.1; current version is '9.0'").
inline constexpr uint32_t kNewestPtxVersion = 90;

/// "sm_90a", "sm_80", "sm_100a/sm_103a"; empty when sm is 0.
std::string gateTargetName(const ArchGate &gate);
/// "8.0"; empty when ptx is 0.
std::string gatePtxName(const ArchGate &gate);

/// True when a target meets the gate's SM part (the PTX version aside):
/// `sm` is the target's SM number, `archSpecific` its `a` suffix, `family`
/// its `f` suffix.
bool targetMeetsGate(const ArchGate &gate, uint32_t sm, bool archSpecific, bool family);

/// The minimum PTX ISA version that knows a target ("sm_90a" → 80); 0 if unknown.
uint32_t minPtxForTarget(std::string_view target);

/// One opcode (possibly multi-part, like "cp.async.bulk.tensor").
struct OpcodeEntry {
  std::string name;  ///< dotted full name: "add", "cp.async.bulk", "mbarrier.try_wait"
  ArchGate gate;     ///< what the opcode itself needs
  bool anyModifier = false; ///< modifier chain not checked (texture/surface, tcgen05, …)
};

/// A requirement that an instruction places on the target, with what needs it.
struct Requirement {
  ArchGate gate;
  std::string feature; ///< "`cp.async`", "`.bf16` on `add`"
};

/// A table match: the entry and how many leading modifiers its name consumed
/// (for `cp` + {async, bulk, global} matching "cp.async.bulk", consumed = 2).
struct OpcodeMatch {
  const OpcodeEntry *entry = nullptr;
  size_t consumed = 0;
};

/// What is wrong with a modifier chain.
struct ModifierProblem {
  size_t index = 0;           ///< index into the instruction's modifiers
  std::string modifier;       ///< the offending modifier, without dot
  std::string slot;           ///< "type", "comparison", "rounding mode", ... or "modifier"
  std::vector<std::string> valid; ///< valid modifiers of that slot for this opcode
  std::string suggestion;     ///< nearest valid modifier (may be empty)
};

/// Finds the longest table entry matching `opcode` + leading `modifiers`.
std::optional<OpcodeMatch> lookupInstruction(std::string_view opcode, const std::vector<std::string> &modifiers);

/// True when some table entry starts with this base opcode ("cp", "add").
bool isKnownBaseOpcode(std::string_view opcode);

/// The nearest valid opcodes by edit distance (dotted names where the base
/// opcode exists but the sub-opcode does not); at most `limit`.
std::vector<std::string> nearestOpcodes(std::string_view opcode, const std::vector<std::string> &modifiers,
                                        size_t limit = 3);

/// Checks the modifiers after the matched name; the first invalid one, if any.
std::optional<ModifierProblem> checkModifiers(const OpcodeMatch &match, const std::vector<std::string> &modifiers);

/// The modifiers the entry accepts in a slot ("type", "comparison", ...), in table order.
std::vector<std::string> validModifiersInSlot(const OpcodeEntry &entry, std::string_view slot);

/// True when the entry accepts the modifier.
bool entryAllowsModifier(const OpcodeEntry &entry, std::string_view modifier);

/// Every requirement the instruction places on the target: the entry's gate
/// and the gates of the modifiers it uses (only non-trivial ones).
std::vector<Requirement> instructionRequirements(const OpcodeMatch &match, const std::vector<std::string> &modifiers);

/// Levenshtein distance (for suggestions). Strings over 64 bytes are never a
/// near miss of a PTX name: for them it returns the longer length without
/// the quadratic table (a 20,000-character token would cost 10^8 steps per
/// candidate).
size_t editDistance(std::string_view a, std::string_view b);

/// All entries (for tests and docs).
const std::vector<OpcodeEntry> &allInstructions();

} // namespace ptxforge::ptx
