// The PTX lexer: source text → tokens with 1-based line/column. Comments are
// dropped; malformed characters become Error tokens so the parser can report
// them at their location and keep going.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace ptxforge::ptx {

enum class TokenKind {
  Identifier, ///< `add`, `%r1`, `$L__BB0_1`, `_`
  DotName,    ///< `.reg`, `.f32`, `.shared::cta`, `.L2::cache_hint`, `.2d`
  Integer,    ///< `42`, `0x1F`, `017`, `0b101`, with optional `U` suffix
  Float,      ///< `0f3F800000`, `0d3FF0000000000000`, `1.5`, `2e-3`
  String,     ///< `"text"` including the quotes
  Punct,      ///< one of `, ; : { } [ ] ( ) < > + - @ ! | =`
  Error,      ///< a character or construct the lexer cannot read
  End,        ///< end of input
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string_view text;
  uint32_t line = 0;
  uint32_t column = 0;
  /// True when no other token precedes this one on its line.
  bool firstOnLine = false;

  bool isPunct(char c) const { return kind == TokenKind::Punct && text.size() == 1 && text[0] == c; }
  bool isDot(std::string_view name) const {
    return kind == TokenKind::DotName && text.size() == name.size() + 1 && text.substr(1) == name;
  }
};

/// Tokenizes the whole source; the last token is always End. Views point into `source`.
std::vector<Token> tokenize(std::string_view source);

} // namespace ptxforge::ptx
