// The forms of `atom` and `red`. The instruction table accepts the union of
// their modifiers; which type an operation takes, which forms are vectors,
// where `.noftz` is required and which memory orders each allows are ptxas
// 13.0's rules, found by assembling every combination; `lint_vs_ptxas
// --atom-forms` (tests/external) holds the lint to them.
#pragma once

#include "ptx/ConversionRules.h"

#include <optional>
#include <string>
#include <vector>

namespace ptxforge::ptx {

/// Checks the modifiers of `atom` or `red` (`op`; those after it: {"global",
/// "add", "f32"}). nullopt when the form is valid, and when the modifiers name
/// no operation or no type (the table reports those).
std::optional<FormProblem> checkAtomic(const std::string &op, const std::vector<std::string> &modifiers);

} // namespace ptxforge::ptx
