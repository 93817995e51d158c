// The PTX lexer. PTX's lexical grammar is small; the subtle parts are the
// float forms (`0f`/`0d` + hex bits), `::` inside modifiers, and identifiers
// that begin with `%` or `$`.
#include "ptx/Lexer.h"

namespace ptxforge::ptx {

namespace {

bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%';
}
bool isIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isHexDigit(char c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

class Lexer {
public:
  explicit Lexer(std::string_view source) : src_(source) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    tokens.reserve(src_.size() / 4 + 1);
    uint32_t lastLine = 0;
    while (true) {
      skipSpaceAndComments(tokens);
      Token token;
      token.line = line_;
      token.column = column();
      token.firstOnLine = line_ != lastLine;
      if (pos_ >= src_.size()) {
        token.kind = TokenKind::End;
        token.text = src_.substr(src_.size());
        tokens.push_back(token);
        return tokens;
      }
      size_t start = pos_;
      token.kind = lexOne();
      token.text = src_.substr(start, pos_ - start);
      lastLine = token.line;
      tokens.push_back(token);
    }
  }

private:
  uint32_t column() const { return static_cast<uint32_t>(pos_ - lineStart_ + 1); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0'; }

  void newline() {
    ++line_;
    lineStart_ = pos_;
  }

  void skipSpaceAndComments(std::vector<Token> &tokens) {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == '\n') {
        ++pos_;
        newline();
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++pos_;
      } else if (c == '/' && peek(1) == '/') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else if (c == '/' && peek(1) == '*') {
        Token start{TokenKind::Error, {}, line_, column(), false};
        size_t begin = pos_;
        pos_ += 2;
        bool closed = false;
        while (pos_ < src_.size()) {
          if (src_[pos_] == '*' && peek(1) == '/') {
            pos_ += 2;
            closed = true;
            break;
          }
          if (src_[pos_++] == '\n') newline();
        }
        if (!closed) {
          start.text = src_.substr(begin, 2);
          tokens.push_back(start); // "unterminated comment"; reported by the parser
        }
      } else {
        return;
      }
    }
  }

  TokenKind lexOne() {
    char c = src_[pos_];
    if (c == '.') {
      if (isIdentChar(peek(1))) {
        ++pos_;
        lexDotNameBody();
        return TokenKind::DotName;
      }
      if (isDigit(peek(1))) return lexNumber();
      ++pos_;
      return TokenKind::Error;
    }
    if (c == '%' && !isIdentChar(peek(1))) {
      ++pos_; // a lone `%` (as in `%%r1`): the parser explains it
      return TokenKind::Error;
    }
    if (isIdentStart(c)) {
      ++pos_;
      while (pos_ < src_.size() && isIdentChar(src_[pos_])) ++pos_;
      return TokenKind::Identifier;
    }
    if (isDigit(c)) return lexNumber();
    if (c == '"') {
      ++pos_;
      while (pos_ < src_.size() && src_[pos_] != '"' && src_[pos_] != '\n') {
        if (src_[pos_] == '\\' && pos_ + 1 < src_.size()) ++pos_;
        ++pos_;
      }
      if (pos_ < src_.size() && src_[pos_] == '"') {
        ++pos_;
        return TokenKind::String;
      }
      return TokenKind::Error; // unterminated string
    }
    switch (c) {
    case ',': case ';': case ':': case '{': case '}': case '[': case ']': case '(': case ')':
    case '<': case '>': case '+': case '-': case '@': case '!': case '|': case '=':
      ++pos_;
      return TokenKind::Punct;
    default:
      break;
    }
    // Consume one UTF-8 sequence so the error token is one character, not one byte.
    ++pos_;
    while (pos_ < src_.size() && (static_cast<unsigned char>(src_[pos_]) & 0xC0) == 0x80) ++pos_;
    return TokenKind::Error;
  }

  // After the leading '.': name characters, with `::part` continuations
  // (`.shared::cta`, `.L2::cache_hint`, `.mbarrier::complete_tx::bytes`).
  void lexDotNameBody() {
    while (true) {
      while (pos_ < src_.size() && isIdentChar(src_[pos_])) ++pos_;
      if (peek() == ':' && peek(1) == ':' && isIdentChar(peek(2))) {
        pos_ += 2;
        continue;
      }
      return;
    }
  }

  TokenKind lexNumber() {
    char c = peek();
    if (c == '0' && (peek(1) == 'f' || peek(1) == 'F' || peek(1) == 'd' || peek(1) == 'D') && isHexDigit(peek(2))) {
      pos_ += 2;
      while (isHexDigit(peek())) ++pos_;
      return TokenKind::Float;
    }
    if (c == '0' && (peek(1) == 'x' || peek(1) == 'X') && isHexDigit(peek(2))) {
      pos_ += 2;
      while (isHexDigit(peek())) ++pos_;
      if (peek() == 'U' || peek() == 'u') ++pos_;
      return TokenKind::Integer;
    }
    if (c == '0' && (peek(1) == 'b' || peek(1) == 'B') && (peek(2) == '0' || peek(2) == '1')) {
      pos_ += 2;
      while (peek() == '0' || peek() == '1') ++pos_;
      if (peek() == 'U' || peek() == 'u') ++pos_;
      return TokenKind::Integer;
    }
    bool isFloat = false;
    while (isDigit(peek())) ++pos_;
    if (peek() == '.' && isDigit(peek(1))) {
      isFloat = true;
      ++pos_;
      while (isDigit(peek())) ++pos_;
    } else if (peek() == '.' && !isIdentChar(peek(1))) {
      isFloat = true; // "1." is a valid float literal
      ++pos_;
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (isDigit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && isDigit(peek(2))))) {
      isFloat = true;
      pos_ += 2;
      while (isDigit(peek())) ++pos_;
    }
    if (!isFloat && (peek() == 'U' || peek() == 'u')) ++pos_;
    // A number glued to letters ("12abc") is one malformed token, not two.
    if (isIdentChar(peek())) {
      while (isIdentChar(peek())) ++pos_;
      return TokenKind::Error;
    }
    return isFloat ? TokenKind::Float : TokenKind::Integer;
  }

  std::string_view src_;
  size_t pos_ = 0;
  size_t lineStart_ = 0;
  uint32_t line_ = 1;
};

} // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

} // namespace ptxforge::ptx
