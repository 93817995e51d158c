// The PTX parser: text → Module plus syntax diagnostics. It recovers after an
// error (one bad line never hides the next) and reports a truncated module
// once, at its end.
#pragma once

#include "ptx/Ast.h"
#include "ptx/Diagnostic.h"

#include <string_view>
#include <vector>

namespace ptxforge::ptx {

struct ParseResult {
  Module module;
  /// Syntax diagnostics (code `syntax`), in source order. The module holds
  /// everything that could be parsed around them.
  std::vector<Diagnostic> diagnostics;
};

/// Parses a PTX module. Never throws on bad input; never crashes on truncated input.
ParseResult parse(std::string_view source);

} // namespace ptxforge::ptx
