// Static checks over a parsed PTX module. Each check has a stable code (see
// docs/diagnostics.md); messages name the token and what would be valid, hints
// propose the fix.
#pragma once

#include "ptx/Ast.h"
#include "ptx/Diagnostic.h"
#include "ptx/Parser.h"

#include <string_view>
#include <vector>

namespace ptxforge::ptx {

struct LintOptions {
  /// Report the `generic-address` warning.
  bool warnGenericAddress = true;
  /// How many diagnostics the result may hold (docs/limits.md).
  DiagnosticLimits limits = DiagnosticLimits::fromEnvironment();
};

/// Semantic checks on a module that parsed (possibly with syntax errors; the
/// checks skip what the parser could not recover). Does not repeat syntax
/// diagnostics.
std::vector<Diagnostic> lint(const Module &module, const LintOptions &options = {});

/// Parse + lint in one call: syntax diagnostics and lint diagnostics, sorted
/// by location, then shortened by `options.limits` as one list.
std::vector<Diagnostic> lintSource(std::string_view source, const LintOptions &options = {});

/// What lintSource gives for the text `parsed` came from, without parsing it
/// again (parse it with DiagnosticLimits::unlimited() for the same result).
std::vector<Diagnostic> lintParsed(const ParseResult &parsed, const LintOptions &options = {});

} // namespace ptxforge::ptx
