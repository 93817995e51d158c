// The PTX parser: text → Module plus syntax diagnostics. It recovers after an
// error (one bad line never hides the next) and reports a truncated module
// once, at its end.
#pragma once

#include "ptx/Ast.h"
#include "ptx/Diagnostic.h"

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::ptx {

/// How deeply `{ … }` blocks and `(…)` / `{…}` operand lists may nest, counted
/// together. The parser and every walk over the tree (lint, printer, AST
/// equality) recurse once per level, so this bounds their stack use; nvcc's
/// PTX nests three levels at most. Deeper input gets a `nesting-too-deep`
/// error at the first `{` or `(` past the limit, and that construct is
/// skipped. Fixed at build time (docs/limits.md): raising it trades stack
/// safety for nothing real PTX needs; `-DPTXFORGE_PTX_MAX_NESTING=N` exists
/// only to check that the fuzzer still finds the overflow without it.
#ifdef PTXFORGE_PTX_MAX_NESTING
inline constexpr uint32_t kMaxNestingDepth = PTXFORGE_PTX_MAX_NESTING;
#else
inline constexpr uint32_t kMaxNestingDepth = 256;
#endif

struct ParseResult {
  Module module;
  /// Syntax diagnostics (code `syntax`, or `nesting-too-deep`), in source
  /// order, shortened by the DiagnosticLimits passed to parse. The module
  /// holds everything that could be parsed around them.
  std::vector<Diagnostic> diagnostics;
  /// The names (registers, labels, symbols) in the statements the parser
  /// could not read. A broken `.reg .b32 %r<5` or `L1 ;` may have meant to
  /// declare them, so the lint does not call them undeclared: one bad line
  /// costs one diagnostic, and the rest of the function is still checked.
  std::set<std::string> unreadNames;
};

/// Parses a PTX module. Never throws on bad input; never crashes on truncated
/// or hostile input (see kMaxNestingDepth).
ParseResult parse(std::string_view source, const DiagnosticLimits &limits = DiagnosticLimits::fromEnvironment());

} // namespace ptxforge::ptx
