// Diagnostic: the contract between every checking stage (lint, compiler log
// parsing) and its consumers (the CLI, tests, and models reading feedback).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::ptx {

enum class Severity { Error, Warning, Note };

const char *severityName(Severity severity);

/// One finding about a PTX module. `code` is a stable kebab-case name
/// (`undeclared-register`, `syntax`, ...) that tools and models key on;
/// `message` names the offending token and what would be valid; `hint`
/// proposes a concrete fix (may be empty). Lines and columns are 1-based;
/// 0 means "no location" (e.g. a whole-module finding).
struct Diagnostic {
  std::string code;
  Severity severity = Severity::Error;
  uint32_t line = 0;
  uint32_t column = 0;
  std::string message;
  std::string hint;
};

/// True when any diagnostic is an error.
bool hasErrors(const std::vector<Diagnostic> &diagnostics);

/// Orders diagnostics by (line, column), keeping the original order of ties.
void sortByLocation(std::vector<Diagnostic> &diagnostics);

/// Renders diagnostics the way a compiler does:
///   file:line:col: error[code]: message
///     <source line>
///     <caret>
///   hint: ...
/// `source` is the module text (for the quoted line); may be empty.
std::string formatDiagnosticsText(const std::vector<Diagnostic> &diagnostics, std::string_view fileName,
                                  std::string_view source);

} // namespace ptxforge::ptx
