// Prefix checking: is the beginning of a module, as a model streams it, still
// on a path to a valid module? The answer is "valid so far", or the first
// error that no continuation can fix (an unknown opcode, a modifier or type
// the opcode does not take, a wrong operand count, a malformed statement),
// located as the whole-module lint would locate it. Findings a later line
// may fix (a register or symbol declared later, a label defined later, an
// unclosed block, a missing directive) are not reported early.
#pragma once

#include "ptx/Diagnostic.h"
#include "ptx/Lint.h"

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace ptxforge::ptx {

struct PrefixCheck {
  /// The bytes of the prefix that form complete statements (up to the last
  /// statement boundary); what follows is a statement still being written.
  size_t completeBytes = 0;
  /// The first unfixable error in the complete part; nullopt: valid so far.
  std::optional<Diagnostic> error;
  /// With an error: the byte offset where the statement holding it begins
  /// (the start of its line), the point to continue from after a cut.
  size_t validBytes = 0;
};

/// Byte offsets just after each statement boundary of `text`: after `;`,
/// `{`, `}`, a label's `:`, and the end of a line-long directive (`.version`,
/// `.target`, `.address_size`, `.loc`, `.file`). In increasing order.
std::vector<size_t> statementBoundaries(std::string_view text);

/// True for diagnostic codes that a later part of the module may resolve
/// (undeclared-register, undeclared-symbol, undefined-label,
/// missing-directive), which prefix checking therefore never reports.
bool fixableByContinuation(std::string_view code);

/// Checks the complete statements of `prefix`: parse + lint, keeping the first
/// error that is not fixable by continuation and is not the parser's
/// "truncated" report at the end.
PrefixCheck checkPrefix(std::string_view prefix, const LintOptions &options = {});

} // namespace ptxforge::ptx
