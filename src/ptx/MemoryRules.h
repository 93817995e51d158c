// The forms of the memory instructions. The instruction table accepts the
// union of an opcode's modifiers; which of them go together is narrower:
// for `atom` and `red`, which type an operation takes, which forms are
// vectors, where `.noftz` is required and which memory orders each allows;
// for `ld` and `st`, which cache operators each takes (`.ca` loads, `.wb`
// stores), where `.nc`, the L1/L2 hints and the memory orders apply (global
// and shared memory, not const, local or param), and that `st.const` does not
// exist. The rules are ptxas 13.0's, found by assembling every combination;
// `lint_vs_ptxas --atom-forms` and `--memory-forms` (tests/external) hold the
// lint to them.
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

/// Checks the modifiers of `ld` or `st` (`op`; those after it). nullopt when
/// the combination is valid (types and vector widths are the table's and
/// checkVectorAccess's).
std::optional<FormProblem> checkLoadStore(const std::string &op, const std::vector<std::string> &modifiers);

} // namespace ptxforge::ptx
