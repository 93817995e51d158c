// The forms of `cvt` (see ConversionRules.h). Scalar conversions follow a few
// rules by the kind of conversion (integer ↔ integer, float → integer, ...);
// the packed conversions (f16x2, fp8, fp6, fp4, ue8m0) are a table.
#include "ptx/ConversionRules.h"

#include "support/Text.h"

#include <algorithm>
#include <string_view>

namespace ptxforge::ptx {

namespace {

bool isIntType(std::string_view t) {
  return t == "s8" || t == "s16" || t == "s32" || t == "s64" || t == "u8" || t == "u16" || t == "u32" || t == "u64";
}
bool isScalarFloat(std::string_view t) { return t == "f16" || t == "bf16" || t == "f32" || t == "f64"; }
bool isScalar(std::string_view t) { return isIntType(t) || isScalarFloat(t) || t == "tf32"; }
bool isFloatRounding(std::string_view r) { return r == "rn" || r == "rz" || r == "rm" || r == "rp"; }
bool isIntegerRounding(std::string_view r) { return r == "rni" || r == "rzi" || r == "rmi" || r == "rpi"; }
bool isRounding(std::string_view r) { return isFloatRounding(r) || isIntegerRounding(r) || r == "rna" || r == "rs"; }

/// Every value of integer type `src` fits in `dst` (then `.sat` has nothing to clamp).
bool integerRangeFits(std::string_view dst, std::string_view src) {
  auto bits = [](std::string_view t) { return std::stoi(std::string(t.substr(1))); };
  bool dstSigned = dst[0] == 's', srcSigned = src[0] == 's';
  if (dstSigned == srcSigned) return bits(dst) >= bits(src);
  if (dstSigned) return bits(dst) > bits(src); // unsigned into a wider signed type
  return false;                                // a negative value never fits an unsigned type
}

/// A cvt's modifiers, sorted into their roles.
struct Form {
  std::string dst, src;
  size_t dstIndex = SIZE_MAX, srcIndex = SIZE_MAX;
  std::string rounding;
  size_t roundingIndex = SIZE_MAX;
  size_t extraRoundingIndex = SIZE_MAX; ///< a second rounding mode
  size_t ftz = SIZE_MAX, sat = SIZE_MAX, satfinite = SIZE_MAX, relu = SIZE_MAX;
  std::vector<std::string> modifiers;

  std::string name() const {
    std::string s = "cvt";
    for (const std::string &m : modifiers) s += "." + m;
    return s;
  }
  /// The instruction with modifier `index` replaced by `with` (removed when empty).
  std::string replaced(size_t index, const std::string &with) const {
    std::string s = "cvt";
    for (size_t i = 0; i < modifiers.size(); ++i) {
      if (i != index) s += "." + modifiers[i];
      else if (!with.empty()) s += "." + with;
    }
    return s;
  }
  /// The instruction with `rounding` inserted in front.
  std::string withRounding(const std::string &rounding) const {
    std::string s = "cvt." + rounding;
    for (const std::string &m : modifiers) s += "." + m;
    return s;
  }
  std::string pair() const { return "`." + dst + "." + src + "`"; }
};

std::optional<Form> readForm(const std::vector<std::string> &modifiers) {
  Form form;
  form.modifiers = modifiers;
  std::vector<size_t> types;
  for (size_t i = 0; i < modifiers.size(); ++i) {
    const std::string &m = modifiers[i];
    if (typeInfo(m)) {
      types.push_back(i);
    } else if (isRounding(m)) {
      if (form.roundingIndex == SIZE_MAX) {
        form.rounding = m;
        form.roundingIndex = i;
      } else if (form.extraRoundingIndex == SIZE_MAX) {
        form.extraRoundingIndex = i;
      }
    } else if (m == "ftz") {
      form.ftz = i;
    } else if (m == "sat") {
      form.sat = i;
    } else if (m == "satfinite") {
      form.satfinite = i;
    } else if (m == "relu") {
      form.relu = i;
    }
  }
  if (types.size() != 2) return std::nullopt;
  form.dstIndex = types[0];
  form.srcIndex = types[1];
  form.dst = modifiers[types[0]];
  form.src = modifiers[types[1]];
  return form;
}

ArchGate gate(uint32_t sm, uint32_t ptx, bool archSpecific = false, const char *sms = "", bool archOnly = false) {
  ArchGate g;
  g.sm = sm;
  g.ptx = ptx;
  g.archSpecific = archSpecific;
  g.sms = sms;
  g.archOnly = archOnly;
  return g;
}

FormProblem problem(size_t index, std::string message, std::string hint) {
  return FormProblem{index, std::move(message), std::move(hint)};
}

/// Packed conversions: the forms that exist, as ptxas 13.0 accepts them.
struct PackedForm {
  const char *dsts;
  const char *srcs;
  const char *roundings;  ///< exactly one of these is required
  const char *required;   ///< flags the form must carry
  const char *optional;   ///< flags it may carry
  ArchGate gate;
};

const PackedForm kPackedForms[] = {
    {"f16x2 bf16x2", "f32", "rn rz", "", "relu satfinite", gate(80, 70)},
    {"f16x2 bf16x2", "f32", "rs", "", "relu satfinite", gate(100, 87, true, "100 103", true)},
    {"e4m3x2 e5m2x2", "f32 f16x2", "rn", "satfinite", "relu", gate(89, 78)},
    {"f16x2", "e4m3x2 e5m2x2", "rn", "", "relu", gate(89, 78)},
    {"e2m1x2 e2m3x2 e3m2x2", "f32", "rn", "satfinite", "relu", gate(100, 86, true)},
    {"e2m1x2", "f16x2", "rn", "satfinite", "relu", gate(100, 86, true)},
    {"f16x2", "e2m1x2 e2m3x2 e3m2x2", "rn", "", "relu", gate(100, 86, true)},
    {"ue8m0x2", "f32 bf16x2", "rz rp", "", "satfinite", gate(100, 86, true)},
    {"bf16x2", "ue8m0x2", "rn", "", "", gate(100, 86, true)},
    {"e4m3x4 e5m2x4 e2m3x4 e3m2x4 e2m1x4", "f32", "rs", "satfinite", "relu", gate(100, 87, true, "100 103", true)},
};

std::optional<FormProblem> checkPacked(const Form &form) {
  const PackedForm *pairMatch = nullptr;
  for (const PackedForm &p : kPackedForms) {
    if (!hasWord(p.dsts, form.dst) || !hasWord(p.srcs, form.src)) continue;
    pairMatch = &p;
    if (!form.rounding.empty() && hasWord(p.roundings, form.rounding)) break;
  }
  if (!pairMatch)
    return problem(form.srcIndex, "`cvt` has no " + form.pair() + " form",
                   "packed conversions go between .f32, .f16x2 or .bf16x2 and the fp8, fp6, fp4 and ue8m0 packs; "
                   "see the PTX ISA's cvt section");
  const PackedForm &p = *pairMatch;
  std::string roundings = p.roundings;
  for (const PackedForm &q : kPackedForms)
    if (&q != &p && hasWord(q.dsts, form.dst) && hasWord(q.srcs, form.src)) roundings += std::string(" ") + q.roundings;
  std::string first(p.roundings, 2); // every rounding mode of the table is two letters
  if (form.rounding.empty()) {
    std::string message(1, '`'); // (built in steps: GCC 12 warns falsely on "`" + std::string)
    message += form.name();
    message += "` needs a rounding mode; valid: " + roundings;
    return problem(SIZE_MAX, message, "did you mean `" + form.withRounding(first) + "`?");
  }
  if (!hasWord(p.roundings, form.rounding)) {
    std::string message = "`." + form.rounding;
    message += "` is not a rounding mode of " + form.pair() + "; valid: " + roundings;
    return problem(form.roundingIndex, message, "did you mean `" + form.replaced(form.roundingIndex, first) + "`?");
  }
  if (form.extraRoundingIndex != SIZE_MAX)
    return problem(form.extraRoundingIndex, "`" + form.name() + "` has two rounding modes",
                   "keep one: `" + form.replaced(form.extraRoundingIndex, "") + "`");
  for (size_t index : {form.ftz, form.sat, form.satfinite, form.relu}) {
    if (index == SIZE_MAX) continue;
    const std::string &flag = form.modifiers[index];
    if (hasWord(p.required, flag) || hasWord(p.optional, flag)) continue;
    return problem(index, "`." + flag + "` does not apply to " + form.pair() + " conversions",
                   "remove it: `" + form.replaced(index, "") + "`");
  }
  if (hasWord(p.required, "satfinite") && form.satfinite == SIZE_MAX)
    return problem(SIZE_MAX, "`" + form.name() + "` needs `.satfinite`: " + form.pair() + " conversions saturate to the "
                                                                                      "largest finite value",
                   "did you mean `" + form.replaced(form.roundingIndex, form.rounding + ".satfinite") + "`?");
  return std::nullopt;
}

/// The rounding modes a scalar form requires or allows.
struct RoundingRule {
  bool required = false;
  const char *allowed = ""; ///< space-separated
  const char *why = "";     ///< why other modes do not apply
};

RoundingRule roundingRule(const Form &form) {
  const std::string &d = form.dst, &s = form.src;
  if (d == "tf32") return {true, "rna rn rz", "a conversion to .tf32 rounds with .rna, .rn or .rz"};
  if (isIntType(d) && isIntType(s)) return {false, "", "integer-to-integer conversions do not round"};
  if (isIntType(d)) return {true, "rni rzi rmi rpi", "a float-to-integer conversion rounds to an integer value"};
  if (isIntType(s)) return {true, "rn rz rm rp", "an integer-to-float conversion rounds with .rn, .rz, .rm or .rp"};
  if (d == s) return {false, "rni rzi rmi rpi", "rounding a float to an integral value uses .rni, .rzi, .rmi or .rpi"};
  if ((d == "f32" || d == "f64") && (s == "f16" || (d == "f64" && s == "f32")))
    return {false, "", "widening a float is exact"};
  if (s == "bf16" || (d == "bf16" && s == "f16")) return {false, "rn rz rm rp", "use .rn, .rz, .rm or .rp"};
  return {true, "rn rz rm rp", "a narrowing float conversion rounds with .rn, .rz, .rm or .rp"};
}

std::string roundingSuggestion(const RoundingRule &rule, const std::string &written) {
  // .rn written for a float → integer conversion most likely meant .rni, and the other way round.
  std::string candidate = isIntegerRounding(written) ? written.substr(0, 2) : written + "i";
  if (hasWord(rule.allowed, candidate)) return candidate;
  if (hasWord(rule.allowed, "rzi")) return "rzi";
  if (hasWord(rule.allowed, "rn")) return "rn";
  return "";
}

std::optional<FormProblem> checkScalar(const Form &form) {
  const std::string &d = form.dst, &s = form.src;
  if (s == "tf32")
    return problem(form.srcIndex, "`.tf32` is not a source type of `cvt`: a tf32 value is an f32 bit pattern",
                   "read it as .f32 (it already is one), or move its bits with `mov.b32`");
  if (d == "tf32" && s != "f32")
    return problem(form.srcIndex, "`cvt` converts to `.tf32` from `.f32` only", "convert to .f32 first");
  if ((d == "bf16" && (s == "s8" || s == "u8")) || (s == "bf16" && (d == "s8" || d == "u8")))
    return problem(form.srcIndex, "`cvt` has no " + form.pair() + " form: bf16 converts to and from 16-, 32- and 64-bit "
                                                                  "integers only",
                   "go through a 16-bit integer (`." + std::string(d == "bf16" ? "s16" : d) + "`) or .f32");

  RoundingRule rule = roundingRule(form);
  if (form.extraRoundingIndex != SIZE_MAX)
    return problem(form.extraRoundingIndex, "`" + form.name() + "` has two rounding modes",
                   "keep one: `" + form.replaced(form.extraRoundingIndex, "") + "`");
  if (!form.rounding.empty() && !hasWord(rule.allowed, form.rounding)) {
    std::string suggestion = roundingSuggestion(rule, form.rounding);
    std::string hint = suggestion.empty() ? "remove it: `" + form.replaced(form.roundingIndex, "") + "`"
                                          : "did you mean `" + form.replaced(form.roundingIndex, suggestion) + "`?";
    std::string message = "`." + form.rounding + "` does not apply to `cvt." + d + "." + s + "`: " + rule.why;
    if (std::string_view(rule.allowed).empty()) message = "`" + form.name() + "` takes no rounding mode: " + rule.why;
    return problem(form.roundingIndex, message, hint);
  }
  if (form.rounding.empty() && rule.required) {
    std::string first = std::string(rule.allowed).substr(0, std::string(rule.allowed).find(' '));
    std::string what = isIntType(d) ? "a float-to-integer conversion must say how to round (`.rzi` truncates like C, "
                                      "`.rni` rounds to nearest even)"
                                    : s + " → " + d + " can lose precision";
    return problem(SIZE_MAX, "`" + form.name() + "` needs a rounding mode: " + what + "; valid: " + rule.allowed,
                   "did you mean `" + form.withRounding(first) + "`?");
  }

  bool involvesBf16 = d == "bf16" || s == "bf16";
  if (form.ftz != SIZE_MAX && (d == "tf32" || (d != "f32" && s != "f32")))
    return problem(form.ftz, "`.ftz` does not apply to `" + form.name() + "`: it flushes .f32 subnormals, and " +
                                 (d == "tf32" ? std::string("a .tf32 conversion takes none") : "neither type is .f32"),
                   "remove it: `" + form.replaced(form.ftz, "") + "`");
  if (form.sat != SIZE_MAX) {
    std::string why;
    if (involvesBf16 || d == "tf32") why = "bf16 and tf32 conversions do not clamp to [0, 1]; `.satfinite` saturates "
                                           "to the largest finite value";
    else if (isIntType(d) && isIntType(s) && integerRangeFits(d, s)) why = "every ." + s + " value fits in ." + d;
    if (!why.empty()) {
      bool satfiniteFits = (d == "bf16" || d == "tf32" || d == "f16") && s == "f32" && form.satfinite == SIZE_MAX;
      return problem(form.sat, "`.sat` does not apply to `" + form.name() + "`: " + why,
                     satfiniteFits ? "did you mean `" + form.replaced(form.sat, "satfinite") + "`?"
                                   : "remove it: `" + form.replaced(form.sat, "") + "`");
    }
  }
  bool roundsNearOrZero = form.rounding == "rn" || form.rounding == "rz";
  if (form.relu != SIZE_MAX) {
    if (!((d == "f16" || d == "bf16" || d == "tf32") && s == "f32"))
      return problem(form.relu, "`.relu` applies only to f32 → f16, bf16 or tf32 conversions, not to " + form.pair(),
                     "remove it, or clamp with `max` first");
    if (!roundsNearOrZero)
      return problem(form.relu, "`.relu` goes with `.rn` or `.rz` only, not `." + form.rounding + "`",
                     "did you mean `" + form.replaced(form.roundingIndex, "rn") + "`?");
    if (form.ftz != SIZE_MAX)
      return problem(form.ftz, "`.ftz` cannot be combined with `.relu`", "remove it: `" + form.replaced(form.ftz, "") + "`");
  }
  if (form.satfinite != SIZE_MAX) {
    if (!((d == "f16" || d == "bf16" || d == "tf32") && s == "f32"))
      return problem(form.satfinite, "`.satfinite` applies only to f32 → f16, bf16 or tf32 conversions, not to " +
                                         form.pair(),
                     form.sat == SIZE_MAX && !involvesBf16 ? "did you mean `" + form.replaced(form.satfinite, "sat") + "`?"
                                                           : "remove it: `" + form.replaced(form.satfinite, "") + "`");
    if (!roundsNearOrZero && !(d == "tf32" && form.rounding == "rna"))
      return problem(form.satfinite, "`.satfinite` goes with `.rn` or `.rz` only, not `." + form.rounding + "`",
                     "did you mean `" + form.replaced(form.roundingIndex, "rn") + "`?");
    if (form.ftz != SIZE_MAX)
      return problem(form.ftz, "`.ftz` cannot be combined with `.satfinite`",
                     "remove it: `" + form.replaced(form.ftz, "") + "`");
    if (form.sat != SIZE_MAX)
      return problem(form.sat, "`.sat` cannot be combined with `.satfinite`",
                     "keep one: `" + form.replaced(form.sat, "") + "`");
  }
  if (form.relu != SIZE_MAX && form.rounding == "rna")
    return problem(form.relu, "`.relu` cannot be combined with `.rna`", "remove it: `" + form.replaced(form.relu, "") + "`");
  return std::nullopt;
}

} // namespace

std::optional<FormProblem> checkConversion(const std::vector<std::string> &modifiers) {
  std::optional<Form> form = readForm(modifiers);
  if (!form) return std::nullopt;
  if (isScalar(form->dst) && isScalar(form->src)) return checkScalar(*form);
  return checkPacked(*form);
}

std::vector<Requirement> conversionRequirements(const std::vector<std::string> &modifiers) {
  std::vector<Requirement> out;
  std::optional<Form> form = readForm(modifiers);
  if (!form || checkConversion(modifiers)) return out;
  const std::string &d = form->dst, &s = form->src;
  std::string pair = "`cvt." + d + "." + s + "`";
  if (!isScalar(d) || !isScalar(s)) {
    for (const PackedForm &p : kPackedForms)
      if (hasWord(p.dsts, d) && hasWord(p.srcs, s) && hasWord(p.roundings, form->rounding)) {
        std::string feature = form->rounding == "rs" ? "`.rs` on " + pair : pair;
        out.push_back(Requirement{p.gate, feature});
        break;
      }
    // (fp8 packs need `.satfinite` anyway, from PTX ISA 7.8 on sm_90; sm_89 wants 8.1, which is not checked.)
    if (form->satfinite != SIZE_MAX && (d == "f16x2" || d == "bf16x2"))
      out.push_back(Requirement{gate(0, 81), "`.satfinite` on " + pair});
    return out;
  }
  if (d == "bf16" && s == "f32") {
    out.push_back(Requirement{gate(80, 70), pair});
  } else if (d == "f32" && s == "bf16") {
    out.push_back(Requirement{gate(80, 71), pair});
    if (form->ftz != SIZE_MAX) out.push_back(Requirement{gate(90, 78), "`.ftz` on " + pair});
  } else if (d == "bf16" || s == "bf16") {
    out.push_back(Requirement{gate(90, 78), pair});
  }
  if (d == "tf32") {
    if (form->rounding == "rna") out.push_back(Requirement{gate(80, 70), "`cvt.rna.tf32.f32`"});
    else out.push_back(Requirement{gate(90, 78), "`." + form->rounding + "` on `cvt.tf32.f32`"});
    if (form->satfinite != SIZE_MAX) {
      if (form->rounding == "rna") out.push_back(Requirement{gate(0, 81), "`.satfinite` on `cvt.tf32.f32`"});
      else out.push_back(Requirement{gate(100, 86), "`.satfinite` on `cvt." + form->rounding + ".tf32.f32`"});
    }
  }
  if (form->relu != SIZE_MAX && d != "tf32") out.push_back(Requirement{gate(80, 70), "`.relu` on " + pair});
  if (form->satfinite != SIZE_MAX && d != "tf32")
    out.push_back(Requirement{gate(0, 81), "`.satfinite` on " + pair});
  return out;
}

} // namespace ptxforge::ptx
