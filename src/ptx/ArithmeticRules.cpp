// The forms of the arithmetic and comparison instructions (see ArithmeticRules.h).
#include "ptx/ArithmeticRules.h"

#include "support/Text.h"

#include <string_view>

namespace ptxforge::ptx {

namespace {

/// A modifier of some opcodes and the types it applies to with them.
struct ModifierRule {
  std::string_view ops, modifiers, types;
};

constexpr std::string_view kFloats = "f16 f16x2 bf16 bf16x2 f32 f64";
constexpr std::string_view kIntegers = "u16 s16 u32 s32 u64 s64";

constexpr ModifierRule kRules[] = {
    {"add sub mul fma", "rn", kFloats},
    {"add sub mul", "rz rm rp", "f32 f64"},
    {"fma", "rz rm rp", "bf16 bf16x2 f32 f64"},
    {"mad div sqrt rcp", "rn rz rm rp", "f32 f64"},
    {"add sub mul fma min max abs neg setp set", "ftz", "f16 f16x2 f32"},
    {"mad div sqrt sin cos lg2", "ftz", "f32"},
    {"rcp rsqrt", "ftz", "f32 f64"},
    {"ex2", "ftz", "bf16 bf16x2 f32"},
    {"add sub", "sat", "s32 f16 f16x2 f32"},
    {"mul fma", "sat", "f16 f16x2 f32"},
    {"mad", "sat", "s32 f32"},
    {"add sub", "cc", "u32 s32 u64 s64"},
    {"mul mad", "lo hi", kIntegers},
    {"mul mad", "wide", "u16 s16 u32 s32"},
    {"min max", "NaN xorsign", "f16 f16x2 bf16 bf16x2 f32"},
    {"min max", "relu", "s32 s16x2"},
    {"fma", "relu oob", "f16 f16x2 bf16 bf16x2"},
    {"div", "approx full", "f32"},
    {"sqrt sin cos lg2", "approx", "f32"},
    {"rcp rsqrt", "approx", "f32 f64"},
    {"ex2 tanh", "approx", "f16 f16x2 bf16 bf16x2 f32"},
    {"redux.sync", "add", "u32 s32"},
    {"redux.sync", "min max", "u32 s32 f32"},
    {"redux.sync", "and or xor", "b32"},
};

/// The comparisons and the types they order.
constexpr ModifierRule kComparisons[] = {
    {"setp set", "eq ne", "u16 s16 u32 s32 u64 s64 b16 b32 b64 f16 f16x2 bf16 bf16x2 f32 f64"},
    {"setp set", "lt le gt ge", "u16 s16 u32 s32 u64 s64 f16 f16x2 bf16 bf16x2 f32 f64"},
    {"setp set", "lo ls hi hs", "u16 u32 u64"},
    {"setp set", "equ neu ltu leu gtu geu num nan", kFloats},
};

bool isType(std::string_view m) {
  return hasWord("b8 b16 b32 b64 b128 u8 s8 u16 s16 u32 s32 u64 s64 f16 f16x2 bf16 bf16x2 f32 f64 s16x2 u16x2 pred",
                  m);
}

/// The instruction with `add` inserted after the opcode (empty: nothing)
/// and modifier `drop` removed (SIZE_MAX: none).
std::string spelled(const std::string &op, const std::vector<std::string> &modifiers, size_t drop,
                    const std::string &add = "") {
  std::string s = op + (add.empty() ? "" : "." + add);
  for (size_t i = 0; i < modifiers.size(); ++i)
    if (i != drop) s += "." + modifiers[i];
  return s;
}

std::string listTypes(std::string_view types) {
  std::string out;
  size_t pos = 0;
  while (pos < types.size()) {
    size_t end = types.find(' ', pos);
    if (end == std::string_view::npos) end = types.size();
    out += (out.empty() ? "." : ", .") + std::string(types.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

bool has(const std::vector<std::string> &modifiers, std::string_view list) {
  for (const std::string &m : modifiers)
    if (hasWord(list, m)) return true;
  return false;
}

/// A form that lacks a modifier it needs: what and the fix.
std::optional<FormProblem> missingModifier(const std::string &op, const std::vector<std::string> &modifiers,
                                           const std::string &type, uint32_t targetSm, uint32_t ptxVersion) {
  bool isFloat = hasWord(kFloats, type);
  bool integer = hasWord(kIntegers, type);
  bool modern = targetSm == 0 || targetSm >= 20;
  auto needs = [&](const std::string &what, const std::string &add) {
    return FormProblem{SIZE_MAX, "`" + spelled(op, modifiers, SIZE_MAX) + "` needs " + what,
                       "did you mean `" + spelled(op, modifiers, SIZE_MAX, add) + "`?"};
  };
  if ((op == "mul" || op == "mad") && integer && !has(modifiers, "lo hi wide"))
    return needs("`.lo`, `.hi` or `.wide`: which part of the double-width product to keep", "lo");
  // Before PTX ISA 1.4 a float div, sqrt, rcp, ex2, ... without a modifier
  // was the approximate one, and mad.f64 needed no rounding mode.
  if (!isFloat || (ptxVersion != 0 && ptxVersion < 14)) return std::nullopt;
  bool rounds = has(modifiers, "rn rz rm rp");
  if (((op == "mad" && modern) || op == "fma") && !rounds)
    return needs("a rounding mode (`.rn`, `.rz`, `.rm`, `.rp`): it is a fused multiply-add", "rn");
  if (op == "div" && !rounds && !has(modifiers, "approx full"))
    return type == "f32" ? needs("`.rn` (IEEE-rounded), `.full` (within 2 ulp) or `.approx`", "rn")
                         : needs("a rounding mode (`.rn`, `.rz`, `.rm`, `.rp`)", "rn");
  if ((op == "sqrt" || op == "rcp") && !rounds && !has(modifiers, "approx"))
    return needs("`.rn` (IEEE-rounded) or `.approx`", "rn");
  if ((op == "rsqrt" || op == "sin" || op == "cos" || op == "lg2" || op == "ex2" || op == "tanh") &&
      !has(modifiers, "approx"))
    return needs("`.approx`: there is only the approximate form", "approx");
  if (op == "rcp" && type == "f64" && has(modifiers, "approx") && !has(modifiers, "ftz"))
    return needs("`.ftz`: the f64 reciprocal approximation flushes subnormals", "ftz");
  if (op == "ex2" && (type == "bf16" || type == "bf16x2") && !has(modifiers, "ftz"))
    return needs("`.ftz`", "ftz");
  return std::nullopt;
}

} // namespace

std::optional<FormProblem> checkArithmetic(const std::string &op, const std::vector<std::string> &modifiers,
                                           uint32_t targetSm, uint32_t ptxVersion) {
  static constexpr std::string_view kOps =
      "add sub mul mad fma min max div abs neg sqrt rcp rsqrt sin cos lg2 ex2 tanh setp set redux.sync";
  if (!hasWord(kOps, op)) return std::nullopt;
  std::string type;
  for (const std::string &m : modifiers)
    if (isType(m)) type = m; // the last: set's source type, setp's only one
  if (type.empty()) return std::nullopt;

  for (size_t i = 0; i < modifiers.size(); ++i) {
    const std::string &m = modifiers[i];
    if (op == "setp" || op == "set") {
      for (const ModifierRule &rule : kComparisons) {
        if (!hasWord(rule.modifiers, m) || hasWord(rule.types, type)) continue;
        // The comparison of the same meaning for this type, where there is one.
        std::string fix;
        std::string_view unsignedOf = m == "lt" ? "lo" : m == "le" ? "ls" : m == "gt" ? "hi" : m == "ge" ? "hs" : "";
        std::string_view orderedOf = m == "lo" ? "lt" : m == "ls" ? "le" : m == "hi" ? "gt" : m == "hs" ? "ge" : "";
        std::string why;
        if (type[0] == 'b' && type != "bf16" && type != "bf16x2") {
          why = "a .b type has no order; compare as .s or .u";
          fix = "`" + op + "." + m + ".s" + type.substr(1) + "`" +
                (unsignedOf.empty() ? "" : " or `" + op + "." + std::string(unsignedOf) + ".u" + type.substr(1) + "`");
        } else if (!orderedOf.empty()) {
          why = "`." + m + "` is the unsigned comparison";
          fix = "`" + op + "." + std::string(orderedOf) + "." + type + "`";
        } else {
          why = "`." + m + "` compares floats (unordered, or for NaN)";
          if (m.size() == 3 && m.back() == 'u') fix = "`" + op + "." + m.substr(0, 2) + "." + type + "`";
        }
        return FormProblem{i, "`" + spelled(op, modifiers, SIZE_MAX) + "`: `." + m + "` does not compare ." + type +
                                  " (" + why + ")",
                           fix.empty() ? "use a comparison for ." + type : "did you mean " + fix + "?"};
      }
    }
    for (const ModifierRule &rule : kRules) {
      if (!hasWord(rule.ops, op) || !hasWord(rule.modifiers, m) || hasWord(rule.types, type)) continue;
      std::string hint = "remove `." + m + "`";
      std::vector<std::string> rest = modifiers;
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
      if (std::optional<FormProblem> after = missingModifier(op, rest, type, targetSm, ptxVersion)) {
        size_t at = after->hint.find('`');
        if (at != std::string::npos) hint = after->hint;
      } else {
        hint = "did you mean `" + spelled(op, modifiers, i) + "`?";
      }
      return FormProblem{i,
                         "`." + m + "` does not apply to `" + spelled(op, modifiers, SIZE_MAX) + "`: `" + op + "." + m +
                             "` takes " + listTypes(rule.types),
                         hint};
    }
  }
  if (op == "mad" && type == "s32" && has(modifiers, "sat") && !has(modifiers, "hi")) {
    size_t at = 0;
    while (modifiers[at] != "sat") ++at;
    return FormProblem{at, "`" + spelled(op, modifiers, SIZE_MAX) + "`: an integer `mad` saturates only with `.hi`",
                       "remove `.sat`, or use `mad.hi.sat.s32`"};
  }
  return missingModifier(op, modifiers, type, targetSm, ptxVersion);
}

} // namespace ptxforge::ptx
