// LogParser: turns ptxas / nvJitLink text logs into Diagnostics, resource
// usage and advisories, so that callers (and models) never scrape logs.
#pragma once

#include "ptx/Diagnostic.h"
#include "toolchain/ResourceUsage.h"

#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::toolchain {

/// Diagnostic codes produced from compiler logs (stable, kebab-case).
inline constexpr const char *kCodeCompileSyntax = "compile-syntax";
inline constexpr const char *kCodeCompileType = "compile-type";
inline constexpr const char *kCodeCompileUnknownSymbol = "compile-unknown-symbol";
inline constexpr const char *kCodeCompileArch = "compile-arch";
inline constexpr const char *kCodeCompileResource = "compile-resource";
inline constexpr const char *kCodeCompileOther = "compile-other";

/// Parses the errors and warnings of a ptxas or nvJitLink log, e.g.
///   `ptxas /tmp/x.ptx, line 12; error   : Arguments mismatch for instruction 'add'`
///   `ptxas application ptx input, line 5; fatal   : Parsing error near ...`
///   `error   : Entry function 'k' uses too much shared data (...)`
/// Each becomes a Diagnostic with the PTX line (0 when the log names none),
/// a category `code` (compile-syntax, compile-type, compile-unknown-symbol,
/// compile-arch, compile-resource, compile-other), the original text trimmed
/// in `message`, and a hint where the category suggests one. Generic trailers
/// ("Ptx assembly aborted due to errors", nvJitLink's "ERROR 4: ...") are kept
/// only when the log has no more specific error. Info lines and advisories are
/// not diagnostics.
std::vector<ptx::Diagnostic> parseCompilerLog(std::string_view log);

/// Gives every diagnostic of a compile a line and a column in `ptx`, the
/// module that was compiled (the Diagnostic contract). A log line names a line
/// but no column: the column is that of the first token the message quotes
/// ('add', '%f3', 'wgmma.fence') found on that line, else of the line's first
/// token. A finding without a line (a resource limit, a crash, a trailer)
/// points at the function it quotes ("Entry function 'big' uses too much
/// shared data") or else at the module's first token, as the lint's
/// whole-module findings do. Diagnostics that already have both are kept.
void locateCompilerDiagnostics(std::vector<ptx::Diagnostic> &diagnostics, std::string_view ptx);

/// Classifies one compiler message text (without the "ptxas ..., line N;
/// error :" prefix) into one of the compile-* codes.
std::string classifyCompilerMessage(std::string_view message);

/// Parses resource lines of a verbose log: CUDA 13 ptxas ("Function properties
/// for f" + "Used N registers, used M barriers, K bytes smem"), older ptxas
/// ("Used N registers, 380 bytes cmem[0], 24 bytes lmem"), and nvJitLink's
/// link summary ("info : used N registers, ..., C bytes cmem[0], L bytes lmem").
/// Figures for the same function from several lines are merged.
ResourceReport parseResourceUsage(std::string_view log);

/// The advisory texts of a log ("info : Advisory: ...", "warning : ...
/// Advisory ...", "(C7510) Potential Performance Loss: ..."), each prefixed
/// with "line N: " when the log gives a line.
std::vector<std::string> parseAdvisories(std::string_view log);

} // namespace ptxforge::toolchain
