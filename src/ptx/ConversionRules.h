// The forms of `cvt`. The instruction table accepts the union of cvt's
// modifiers; which of them one conversion takes depends on its pair of types:
// f32 → f16 must round (`cvt.rn.f16.f32`), f16 → f32 must not, float → integer
// rounds to an integer (`.rzi`), `.sat` clamps but not on bf16, `.satfinite`
// and `.relu` go with `.rn`/`.rz` on conversions from f32, and what each form
// needs of the target (`cvt.bf16.f16` sm_90, `cvt.rn.tf32.f32` sm_90). The
// rules are ptxas 13.0's, found by assembling every combination; `lint_vs_ptxas
// --cvt-forms` (tests/external) holds the lint to them.
#pragma once

#include "ptx/InstructionTable.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ptxforge::ptx {

/// What is wrong with a cvt's form.
struct FormProblem {
  /// The modifier at fault (an index into cvt's modifiers), or SIZE_MAX when
  /// the form lacks something (a rounding mode, say).
  size_t modifierIndex = SIZE_MAX;
  std::string message;
  std::string hint;
};

/// Checks a cvt's modifiers (those after `cvt`: {"rn", "f16", "f32"}) against
/// the form its two types make. nullopt when the form is valid, and when the
/// modifiers do not name exactly two types (the table reports those).
std::optional<FormProblem> checkConversion(const std::vector<std::string> &modifiers);

/// What a cvt form needs of the target and the PTX ISA version (`cvt.bf16.f16`
/// sm_90 and PTX 7.8). Empty when it needs nothing or is not a valid form.
std::vector<Requirement> conversionRequirements(const std::vector<std::string> &modifiers);

} // namespace ptxforge::ptx
