// Prefix checking (see Prefix.h): the complete statements of a prefix are
// parsed and linted as a module of their own; the parser's truncation report
// and the findings a later line may fix are set aside.
#include "ptx/Prefix.h"

#include "ptx/Lexer.h"
#include "ptx/Parser.h"

#include <algorithm>
#include <string>

namespace ptxforge::ptx {

namespace {

/// Directives that end with their line rather than with `;`.
bool isLineDirective(const Token &token) {
  return token.isDot("version") || token.isDot("target") || token.isDot("address_size") || token.isDot("loc") ||
         token.isDot("file");
}

size_t offsetAfter(std::string_view text, const Token &token) {
  return static_cast<size_t>(token.text.data() - text.data()) + token.text.size();
}

} // namespace

std::vector<size_t> statementBoundaries(std::string_view text) {
  std::vector<Token> tokens = tokenize(text);
  std::vector<size_t> out;
  bool lineDirective = false;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    const Token &t = tokens[i];
    if (t.firstOnLine) lineDirective = isLineDirective(t);
    const Token &next = tokens[i + 1];
    bool boundary = t.isPunct(';') || t.isPunct('{') || t.isPunct('}');
    // A label: `name:` first on its line (a `name :` prototype goes on to `;`).
    if (t.isPunct(':') && i > 0 && tokens[i - 1].firstOnLine && tokens[i - 1].kind == TokenKind::Identifier &&
        !next.isDot("callprototype") && !next.isDot("calltargets") && !next.isDot("branchtargets"))
      boundary = true;
    if (lineDirective && (next.firstOnLine || next.kind == TokenKind::End)) boundary = true;
    if (boundary) out.push_back(offsetAfter(text, t));
  }
  return out;
}

bool fixableByContinuation(std::string_view code) {
  return code == "undeclared-register" || code == "undeclared-symbol" || code == "undefined-label" ||
         code == "missing-directive";
}

PrefixCheck checkPrefix(std::string_view prefix, const LintOptions &options) {
  PrefixCheck result;
  std::vector<size_t> boundaries = statementBoundaries(prefix);
  result.completeBytes = boundaries.empty() ? 0 : boundaries.back();
  result.validBytes = result.completeBytes;
  // A newline after the last statement puts the parser's end-of-input report
  // on a line of its own, so that it never hides a finding on that statement.
  std::string complete(prefix.substr(0, result.completeBytes));
  complete += '\n';
  uint32_t endLine = static_cast<uint32_t>(std::count(complete.begin(), complete.end(), '\n')) + 1;

  LintOptions lintOptions = options;
  lintOptions.limits = DiagnosticLimits::unlimited();
  ParseResult parsed = parse(complete, DiagnosticLimits::unlimited());
  for (const Diagnostic &d : lintParsed(parsed, lintOptions)) {
    if (d.severity != Severity::Error || fixableByContinuation(d.code)) continue;
    // The truncation report (an unclosed function or block) sits at the end.
    if (d.code == "syntax" && d.line >= endLine) continue;
    result.error = d;
    // Continue from the start of the line that holds the error.
    size_t offset = 0;
    for (uint32_t line = 1; line < d.line && offset < complete.size(); ++line) {
      size_t newline = complete.find('\n', offset);
      if (newline == std::string::npos) break;
      offset = newline + 1;
    }
    result.validBytes = std::min(offset, result.completeBytes);
    return result;
  }
  return result;
}

} // namespace ptxforge::ptx
