// Diagnostic: the contract between every checking stage (lint, compiler log
// parsing) and its consumers (the CLI, tests, and models reading feedback).
// It also owns the output limits that keep diagnostics of hostile or runaway
// input small (docs/limits.md).
#pragma once

#include <cstddef>
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
/// every diagnostic the front end produces has both (a whole-module finding
/// points at the module's first token).
struct Diagnostic {
  std::string code;
  Severity severity = Severity::Error;
  uint32_t line = 0;
  uint32_t column = 0;
  std::string message;
  std::string hint;
};

/// The code of the note that closes a list shortened by DiagnosticLimits.
inline constexpr const char *kDiagnosticsSuppressedCode = "diagnostics-suppressed";

/// How much a module's diagnostics may say. The defaults keep the output of a
/// 10 MB file of errors to a few hundred KB; each has an environment variable
/// that raises it (see fromEnvironment and docs/limits.md). 0 means no limit.
struct DiagnosticLimits {
  /// At most this many diagnostics per module; the rest are summed up in one note.
  size_t maxPerModule = 500;
  /// At most this many diagnostics with the same code and message (the same
  /// finding about the same token); later repeats count towards the note.
  size_t maxRepeats = 10;
  /// Columns of a source line quoted under a diagnostic: a longer line is
  /// shown as a window around the column, with `...` where it was cut.
  size_t excerptColumns = 160;

  /// The defaults, overridden by PTXFORGE_MAX_DIAGNOSTICS, PTXFORGE_MAX_REPEATS
  /// and PTXFORGE_EXCERPT_COLUMNS when set to a number (malformed values are ignored).
  static DiagnosticLimits fromEnvironment();
  /// No limits: for stages that merge lists and limit the merged one.
  static DiagnosticLimits unlimited() { return DiagnosticLimits{0, 0, 0}; }
};

/// True when any diagnostic is an error.
bool hasErrors(const std::vector<Diagnostic> &diagnostics);

/// Orders diagnostics by (line, column), keeping the original order of ties.
void sortByLocation(std::vector<Diagnostic> &diagnostics);

/// Applies `limits` to a list in source order: drops repeats past maxRepeats
/// and everything past maxPerModule, then appends one `diagnostics-suppressed`
/// note (located at the first dropped diagnostic) saying how many were dropped
/// and how to see them. Also makes every kept message and hint safe to print
/// (see sanitizeDiagnosticText).
void applyDiagnosticLimits(std::vector<Diagnostic> &diagnostics, const DiagnosticLimits &limits);

/// Text from the input made safe for a terminal, a JSON encoder and a model's
/// context: control bytes (other than tab), DEL, C1 controls and bytes that are
/// not valid UTF-8 become `\xNN`; words (runs without spaces) longer than 96
/// bytes keep their first 64 and last 24 bytes around `...`.
std::string sanitizeDiagnosticText(std::string_view text);

/// Renders diagnostics the way a compiler does:
///   file:line:col: error[code]: message
///     <source line, or a window of excerptColumns around the column>
///     <caret>
///   hint: ...
/// `source` is the module text (for the quoted line); may be empty. Control
/// bytes in the quoted line are shown escaped (`\x1b`), never echoed.
std::string formatDiagnosticsText(const std::vector<Diagnostic> &diagnostics, std::string_view fileName,
                                  std::string_view source,
                                  size_t excerptColumns = DiagnosticLimits::fromEnvironment().excerptColumns);

} // namespace ptxforge::ptx
