// The PTX parser. Recursive descent over the token vector, with statement-level
// error recovery: after a syntax error it skips to the end of the statement
// (`;`), the end of the block (`}`), or the next line, whichever comes first,
// so one bad line costs one diagnostic. End of input inside a construct is
// reported once, as a truncated module.
#include "ptx/Parser.h"

#include "ptx/Lexer.h"

#include <cerrno>
#include <cstdlib>
#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <set>
#include <string>

namespace ptxforge::ptx {

namespace {

/// Thrown inside one statement's parse to unwind to the recovery point. It
/// never leaves this file.
struct SyntaxError {};

/// Counts one level of `{` or `(` nesting for as long as it lives (including
/// while a SyntaxError unwinds through it).
class NestingLevel {
public:
  explicit NestingLevel(uint32_t &depth) : depth_(depth) { ++depth_; }
  ~NestingLevel() { --depth_; }
  NestingLevel(const NestingLevel &) = delete;
  NestingLevel &operator=(const NestingLevel &) = delete;

private:
  uint32_t &depth_;
};

/// Vector components (`.x` … `.w`, `.r` … `.a`) and the byte / half-word
/// selectors of video instructions (`.b0` … `.b3`, `.h0`, `.h1`).
bool isComponentName(std::string_view text) {
  return text == ".x" || text == ".y" || text == ".z" || text == ".w" || text == ".r" || text == ".g" ||
         text == ".b" || text == ".a" || text == ".b0" || text == ".b1" || text == ".b2" || text == ".b3" ||
         text == ".h0" || text == ".h1";
}

bool isTypeName(std::string_view name) {
  static const char *const kTypes[] = {"b8",  "b16",  "b32",  "b64",    "b128",   "s8",   "s16",  "s32",
                                       "s64", "u8",   "u16",  "u32",    "u64",    "f16",  "f16x2", "bf16",
                                       "bf16x2", "tf32", "f32", "f64", "pred", "e4m3", "e5m2", "e4m3x2",
                                       "e5m2x2", "texref", "samplerref", "surfref", "s16x2", "u16x2",
                                       "e2m1", "e2m3", "e3m2", "ue8m0", "e2m1x2", "e2m3x2", "e3m2x2", "ue8m0x2"};
  for (const char *type : kTypes)
    if (name == type) return true;
  return false;
}

std::optional<StateSpace> stateSpaceFromDot(std::string_view dotName) {
  std::string_view name = dotName.substr(1);
  size_t colons = name.find("::");
  if (colons != std::string_view::npos) name = name.substr(0, colons);
  if (name == "reg") return StateSpace::Reg;
  if (name == "sreg") return StateSpace::Sreg;
  if (name == "const") return StateSpace::Const;
  if (name == "global") return StateSpace::Global;
  if (name == "local") return StateSpace::Local;
  if (name == "param") return StateSpace::Param;
  if (name == "shared") return StateSpace::Shared;
  if (name == "tex") return StateSpace::Tex;
  return std::nullopt;
}

bool isLinkage(const Token &token) {
  return token.isDot("visible") || token.isDot("extern") || token.isDot("weak") || token.isDot("common");
}

/// Joins tokens into normalized text: one space between tokens, none before
/// `,;)]}` or after `([{`. Re-lexing the result gives the same tokens back,
/// which is what makes printing idempotent.
std::string joinTokens(const std::vector<Token> &tokens, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) {
    const Token &t = tokens[i];
    bool noSpace = out.empty() || t.isPunct(',') || t.isPunct(';') || t.isPunct(')') || t.isPunct(']') ||
                   t.isPunct('}') ||
                   (i > begin && (tokens[i - 1].isPunct('(') || tokens[i - 1].isPunct('[') || tokens[i - 1].isPunct('{')));
    if (!noSpace) out += ' ';
    out += t.text;
  }
  return out;
}

std::string describe(const Token &token) {
  switch (token.kind) {
  case TokenKind::End: return "end of input";
  case TokenKind::String: return "string " + std::string(token.text);
  default: return "'" + std::string(token.text) + "'";
  }
}

class Parser {
public:
  explicit Parser(std::string_view source) : tokens_(tokenize(source)) {}

  ParseResult run() {
    ParseResult result;
    result_ = &result;
    reportLexErrors();
    while (!atEnd()) {
      size_t before = pos_;
      try {
        parseTopLevel(result.module);
      } catch (const SyntaxError &) {
        recoverTopLevel();
        recordUnreadNames(before, pos_);
      }
      if (pos_ == before) ++pos_; // always make progress
    }
    sortByLocation(result.diagnostics);
    return result;
  }

private:
  // ---- token access -------------------------------------------------------

  const Token &peek(size_t ahead = 0) const {
    size_t index = pos_ + ahead;
    return index < tokens_.size() ? tokens_[index] : tokens_.back();
  }
  const Token &next() {
    const Token &token = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return token;
  }
  bool atEnd() const { return peek().kind == TokenKind::End; }
  SourceLoc locOf(const Token &token) const { return SourceLoc{token.line, token.column}; }

  bool acceptPunct(char c) {
    if (!peek().isPunct(c)) return false;
    next();
    return true;
  }

  // ---- diagnostics --------------------------------------------------------

  void report(const Token &at, std::string message, std::string hint = {}, const char *code = "syntax") {
    if (at.kind == TokenKind::End) {
      reportTruncated(std::move(message));
      return;
    }
    if (at.kind == TokenKind::Error) {
      // The lexer already produced one diagnostic for this token.
      if (lexErrorsReported_.count(&at - tokens_.data())) return;
    }
    // One diagnostic per line is enough: later ones on it are cascades.
    if (at.line == lastErrorLine_) return;
    lastErrorLine_ = at.line;
    result_->diagnostics.push_back(
        Diagnostic{code, Severity::Error, at.line, at.column, std::move(message), std::move(hint)});
  }

  [[noreturn]] void fail(const Token &at, std::string message, std::string hint = {}) {
    report(at, std::move(message), std::move(hint));
    throw SyntaxError{};
  }

  void reportTooDeep(const Token &at) {
    report(at,
           "'" + std::string(at.text) + "' nests deeper than " + std::to_string(kMaxNestingDepth) +
               " levels of blocks and operand lists, the limit of the PTX front end",
           "PTX nests blocks and operand lists a few levels deep at most; remove the extra levels",
           "nesting-too-deep");
  }

  void reportTruncated(std::string context) {
    if (truncatedReported_) return;
    truncatedReported_ = true;
    const Token &end = tokens_.back();
    // A half-written last line (`add.` or `.reg .b3`) is explained by the
    // truncation: drop what was reported on it so the model sees one error.
    std::erase_if(result_->diagnostics, [&](const Diagnostic &d) { return d.line == end.line; });
    std::string message = "unexpected end of input: the module is truncated";
    if (!context.empty()) message += " (" + context + ")";
    std::string hint;
    if (!openFunction_.empty())
      hint = "finish the body of '" + openFunction_ + "' (opened at line " + std::to_string(openFunctionLine_) +
             ") and close it with '}'";
    result_->diagnostics.push_back(
        Diagnostic{"syntax", Severity::Error, end.line, end.column, std::move(message), std::move(hint)});
  }

  void reportLexErrors() {
    for (size_t i = 0; i < tokens_.size(); ++i) {
      const Token &t = tokens_[i];
      if (t.kind != TokenKind::Error) continue;
      std::string message, hint;
      if (t.text.substr(0, 2) == "/*")
        message = "unterminated block comment";
      else if (!t.text.empty() && t.text[0] == '"')
        message = "unterminated string literal";
      else if (!t.text.empty() && (std::isdigit(static_cast<unsigned char>(t.text[0]))))
        message = "malformed number '" + std::string(t.text) + "'";
      else if (t.text == "%")
        message = strayPercentMessage(i, hint);
      else
        message = "unexpected character '" + std::string(t.text) + "'";
      result_->diagnostics.push_back(Diagnostic{"syntax", Severity::Error, t.line, t.column, message, hint});
      lexErrorsReported_.insert(i);
    }
  }

  /// A `%` that no name follows: most often a doubled sigil (`%%r34`, as C
  /// format strings and inline asm write it).
  std::string strayPercentMessage(size_t index, std::string &hint) const {
    const Token &percent = tokens_[index];
    const Token &after = tokens_[index + 1]; // the last token is End, never an Error
    bool glued = after.line == percent.line && after.column == percent.column + 1;
    if (glued && after.kind == TokenKind::Identifier && after.text[0] == '%') {
      hint = "write `" + std::string(after.text) + "`";
      return "stray '%' before '" + std::string(after.text) + "': a register name has a single '%'";
    }
    hint = "a register name follows its '%' directly, as in %r1";
    return "stray '%' with no register name after it";
  }

  // ---- recovery -----------------------------------------------------------

  /// Inside a body: skip to after `;`, or to `}` / the next line's first token.
  void recoverStatement(uint32_t errorLine) {
    while (!atEnd()) {
      const Token &t = peek();
      if (t.isPunct(';')) {
        next();
        return;
      }
      if (t.isPunct('}')) return;
      if (t.firstOnLine && t.line > errorLine) return;
      next();
    }
  }

  /// Keeps the names of a statement that failed to parse (tokens [begin,
  /// end)) when it could have declared one: a declaration, a directive, a
  /// label, anything at module level. An instruction declares nothing, so the
  /// names in a broken instruction stay checked.
  void recordUnreadNames(size_t begin, size_t end) {
    if (begin >= tokens_.size()) return;
    const Token &first = tokens_[begin];
    bool instruction = first.isPunct('@') || (first.kind == TokenKind::Identifier && !tokens_[begin + 1].isPunct(':'));
    if (instruction && !openFunction_.empty()) return;
    for (size_t i = begin; i < end && i < tokens_.size(); ++i)
      if (tokens_[i].kind == TokenKind::Identifier) result_->unreadNames.emplace(tokens_[i].text);
  }

  /// At module level: skip to the next token that can start a top-level item
  /// at the beginning of a line.
  void recoverTopLevel() {
    int depth = 0;
    while (!atEnd()) {
      const Token &t = peek();
      if (t.isPunct('{')) ++depth;
      if (t.isPunct('}')) {
        next();
        if (--depth <= 0) return;
        continue;
      }
      if (depth == 0 && t.isPunct(';')) {
        next();
        return;
      }
      if (depth == 0 && t.firstOnLine && t.kind == TokenKind::DotName && pos_ > 0) {
        if (isLinkage(t) || t.isDot("entry") || t.isDot("func") || t.isDot("global") || t.isDot("const") ||
            t.isDot("shared") || t.isDot("version") || t.isDot("target") || t.isDot("address_size") ||
            t.isDot("file"))
          return;
      }
      next();
    }
  }

  // ---- numbers ------------------------------------------------------------

  /// Parses an integer token's value (two's complement for negatives).
  int64_t integerValue(const Token &token, bool negative) {
    std::string text(token.text);
    if (!text.empty() && (text.back() == 'U' || text.back() == 'u')) text.pop_back();
    int base = 10;
    size_t start = 0;
    if (text.size() > 1 && text[0] == '0') {
      if (text[1] == 'x' || text[1] == 'X') {
        base = 16;
        start = 2;
      } else if (text[1] == 'b' || text[1] == 'B') {
        base = 2;
        start = 2;
      } else {
        base = 8;
        start = 1;
      }
    }
    errno = 0;
    char *end = nullptr;
    unsigned long long value = std::strtoull(text.c_str() + start, &end, base);
    if (errno == ERANGE || end == text.c_str() + start || *end != '\0')
      fail(token, "integer literal '" + std::string(token.text) + "' is out of range or malformed",
           "integer immediates must fit in 64 bits");
    uint64_t bits = negative ? (~static_cast<uint64_t>(value) + 1) : static_cast<uint64_t>(value);
    return static_cast<int64_t>(bits);
  }

  double floatValue(const Token &token, bool negative) {
    std::string text(token.text);
    double value = 0.0;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'f' || text[1] == 'F')) {
      if (text.size() != 10)
        fail(token, "single-precision literal '" + text + "' must have exactly 8 hex digits after 0f",
             "e.g. 0f3F800000 is 1.0");
      uint32_t bits = static_cast<uint32_t>(std::strtoul(text.c_str() + 2, nullptr, 16));
      float f;
      std::memcpy(&f, &bits, sizeof f);
      value = f;
    } else if (text.size() > 2 && text[0] == '0' && (text[1] == 'd' || text[1] == 'D')) {
      if (text.size() != 18)
        fail(token, "double-precision literal '" + text + "' must have exactly 16 hex digits after 0d",
             "e.g. 0d3FF0000000000000 is 1.0");
      uint64_t bits = std::strtoull(text.c_str() + 2, nullptr, 16);
      std::memcpy(&value, &bits, sizeof value);
    } else {
      value = std::strtod(text.c_str(), nullptr);
    }
    return negative ? -value : value;
  }

  uint32_t expectSmallInteger(const char *what) {
    const Token &t = peek();
    if (t.kind != TokenKind::Integer) fail(t, std::string("expected ") + what + ", found " + describe(t));
    next();
    int64_t value = integerValue(t, false);
    if (value < 0 || value > 0xFFFFFFFFll) fail(t, std::string(what) + " is out of range");
    return static_cast<uint32_t>(value);
  }

  // ---- module level -------------------------------------------------------

  void parseTopLevel(Module &module) {
    const Token &t = peek();
    if (t.kind == TokenKind::Error) {
      next();
      return; // already reported by the lexer
    }
    if (t.isDot("version")) return parseVersion(module);
    if (t.isDot("target")) return parseTarget(module);
    if (t.isDot("address_size")) {
      module.addressSizeLoc = locOf(t);
      next();
      const Token &value = peek();
      module.addressSize = expectSmallInteger("an address size (32 or 64)");
      if (module.addressSize != 32 && module.addressSize != 64)
        report(value, "address size must be 32 or 64, found " + std::string(value.text));
      acceptPunct(';');
      return;
    }
    if (t.isDot("file") || t.isDot("loc")) {
      TopLevel item;
      item.kind = TopLevel::Kind::Directive;
      item.directive = parseLineDirective();
      module.items.push_back(std::move(item));
      return;
    }
    if (t.isDot("section")) {
      TopLevel item;
      item.kind = TopLevel::Kind::Directive;
      item.directive = parseSection();
      module.items.push_back(std::move(item));
      return;
    }
    if (t.isDot("pragma")) {
      TopLevel item;
      item.kind = TopLevel::Kind::Directive;
      item.directive = parseSemicolonDirective();
      module.items.push_back(std::move(item));
      return;
    }
    // Linkage, then either a function or a variable.
    size_t look = 0;
    while (isLinkage(peek(look))) ++look;
    const Token &head = peek(look);
    if (head.isDot("entry") || head.isDot("func")) {
      TopLevel item;
      item.kind = TopLevel::Kind::Function;
      parseFunction(item.function);
      module.items.push_back(std::move(item));
      return;
    }
    if (head.kind == TokenKind::DotName && stateSpaceFromDot(head.text)) {
      std::vector<VariableDecl> decls = parseVariableDecls(/*allowMultiple=*/true);
      for (VariableDecl &decl : decls) {
        TopLevel item;
        item.kind = TopLevel::Kind::Variable;
        item.variable = std::move(decl);
        module.items.push_back(std::move(item));
      }
      return;
    }
    if (head.kind == TokenKind::DotName) {
      // Unknown module-level directive (e.g. `.alias`): keep it as text.
      TopLevel item;
      item.kind = TopLevel::Kind::Directive;
      item.directive = parseSemicolonDirective();
      module.items.push_back(std::move(item));
      return;
    }
    if (head.kind == TokenKind::End) fail(head, "expected a declaration after linkage");
    fail(head, "expected a directive, '.entry', '.func' or a variable declaration at module level, found " +
                   describe(head),
         head.kind == TokenKind::Identifier ? "instructions must be inside the body of an .entry or .func" : "");
  }

  void parseVersion(Module &module) {
    const Token &directive = next();
    const Token &value = peek();
    if (value.kind != TokenKind::Float && value.kind != TokenKind::Integer)
      fail(value, "expected a PTX version such as 8.5 after .version, found " + describe(value));
    next();
    std::string text(value.text);
    size_t dot = text.find('.');
    uint32_t major = static_cast<uint32_t>(std::strtoul(text.c_str(), nullptr, 10));
    uint32_t minor = dot == std::string::npos ? 0 : static_cast<uint32_t>(std::strtoul(text.c_str() + dot + 1, nullptr, 10));
    if (module.version) report(directive, "duplicate .version directive");
    module.version = std::make_pair(major, minor);
    module.versionLoc = locOf(directive);
    acceptPunct(';');
  }

  void parseTarget(Module &module) {
    const Token &directive = next();
    if (module.hasTarget) report(directive, "duplicate .target directive");
    module.hasTarget = true;
    module.targetLoc = locOf(directive);
    module.targets.clear();
    do {
      const Token &name = peek();
      if (name.kind != TokenKind::Identifier)
        fail(name, "expected a target name such as sm_90 after .target, found " + describe(name));
      next();
      module.targets.emplace_back(name.text);
    } while (acceptPunct(','));
    acceptPunct(';');
  }

  /// `.loc` and `.file` end at the end of their line (no `;`).
  Directive parseLineDirective() {
    const Token &directive = next();
    Directive result;
    result.loc = locOf(directive);
    result.name = std::string(directive.text.substr(1));
    size_t begin = pos_;
    while (!atEnd() && !peek().firstOnLine && !peek().isPunct(';')) next();
    result.text = joinTokens(tokens_, begin, pos_);
    if (peek().isPunct(';') && !peek().firstOnLine) next();
    return result;
  }

  /// `.section .debug_info { … }`: kept verbatim (normalized), never interpreted.
  Directive parseSection() {
    const Token &directive = next();
    Directive result;
    result.loc = locOf(directive);
    result.name = "section";
    size_t begin = pos_;
    while (!atEnd() && !peek().isPunct('{') && !peek().isPunct(';')) next();
    if (peek().isPunct('{')) {
      int depth = 0;
      while (!atEnd()) {
        const Token &t = next();
        if (t.isPunct('{')) ++depth;
        if (t.isPunct('}') && --depth == 0) break;
      }
      if (depth != 0) reportTruncated("inside a .section block");
    }
    result.text = joinTokens(tokens_, begin, pos_);
    acceptPunct(';');
    return result;
  }

  /// Directives that end with `;` (`.pragma "nounroll";`, `.callprototype …;`).
  Directive parseSemicolonDirective() {
    const Token &directive = next();
    Directive result;
    result.loc = locOf(directive);
    result.name = std::string(directive.text.substr(1));
    size_t begin = pos_;
    while (!atEnd() && !peek().isPunct(';') && !peek().isPunct('}')) next();
    result.text = joinTokens(tokens_, begin, pos_);
    if (!acceptPunct(';')) fail(peek(), "expected ';' after ." + result.name + " directive, found " + describe(peek()));
    return result;
  }

  // ---- declarations -------------------------------------------------------

  /// Variable declaration(s) in any state space. `.reg .b32 %r<4>, %x;` yields
  /// two declarations sharing the type. Consumes the final `;` when
  /// `terminated` (statements) and not for parameters.
  std::vector<VariableDecl> parseVariableDecls(bool allowMultiple, bool terminated = true) {
    VariableDecl base;
    base.loc = locOf(peek());
    while (isLinkage(peek())) {
      if (!base.linkage.empty()) report(peek(), "more than one linkage directive");
      base.linkage = std::string(next().text.substr(1));
    }
    const Token &spaceToken = peek();
    std::optional<StateSpace> space =
        spaceToken.kind == TokenKind::DotName ? stateSpaceFromDot(spaceToken.text) : std::nullopt;
    if (!space)
      fail(spaceToken, "expected a state space (.reg, .param, .shared, .global, .local, .const), found " +
                           describe(spaceToken));
    next();
    base.space = *space;
    size_t colons = spaceToken.text.find("::");
    if (colons != std::string_view::npos) base.spaceQualifier = std::string(spaceToken.text.substr(colons + 2));

    // Attributes and type. `.align` and `.vN` come before the type (ptxas
    // fails to parse `.reg .b32 .v2 %v`); `.ptr` attributes follow it.
    while (peek().kind == TokenKind::DotName) {
      std::string_view name = peek().text.substr(1);
      if ((name == "align" || name == "v2" || name == "v4" || name == "v8") && !base.type.empty())
        report(peek(), "'." + std::string(name) + "' must come before the type in a declaration",
               "write ." + std::string(stateSpaceName(base.space)) + " " +
                   (name == "align" ? std::string(".align N") : "." + std::string(name)) + " ." + base.type + " ...");
      if (name == "align") {
        next();
        base.align = expectSmallInteger("an alignment");
      } else if (name == "v2" || name == "v4" || name == "v8") {
        next();
        base.vectorWidth = static_cast<uint32_t>(name[1] - '0');
      } else if (name == "ptr") {
        next();
        base.isPtr = true;
        while (peek().kind == TokenKind::DotName) {
          std::string_view attribute = peek().text.substr(1);
          if (attribute == "align") {
            next();
            base.ptrAlign = expectSmallInteger("a pointer alignment");
          } else if (attribute == "global" || attribute == "shared" || attribute == "const" ||
                     attribute == "local") {
            next();
            base.ptrSpace = std::string(attribute);
          } else {
            break;
          }
        }
      } else if (isTypeName(name)) {
        if (!base.type.empty()) report(peek(), "more than one type in declaration ('." + base.type + "' and '." +
                                                   std::string(name) + "')");
        base.type = std::string(name);
        next();
      } else if (name == "attribute") {
        // `.attribute(.managed)` on globals: keep it in the type position's neighbour.
        next();
        size_t begin = pos_;
        if (acceptPunct('(')) {
          while (!atEnd() && !peek().isPunct(')')) next();
          acceptPunct(')');
        }
        base.linkage += (base.linkage.empty() ? "" : " ") + std::string("attribute") + joinTokens(tokens_, begin, pos_);
      } else {
        fail(peek(), "unexpected '" + std::string(peek().text) + "' in a ." + stateSpaceName(base.space) +
                         " declaration",
             "a declaration reads: ." + std::string(stateSpaceName(base.space)) +
                 " [.align N] [.v2|.v4] .TYPE name[<count>|[size]] [= initializer];");
      }
    }
    if (base.type.empty())
      fail(peek(), "missing type in ." + std::string(stateSpaceName(base.space)) + " declaration before " +
                       describe(peek()),
           "add a type such as .b32, .u64, .f32 or .pred");

    std::vector<VariableDecl> decls;
    while (true) {
      VariableDecl decl = base;
      const Token &name = peek();
      if (name.kind != TokenKind::Identifier)
        fail(name, "expected a name in ." + std::string(stateSpaceName(base.space)) + " declaration, found " +
                       describe(name));
      next();
      decl.loc = decls.empty() ? base.loc : locOf(name);
      decl.name = std::string(name.text);
      if (acceptPunct('<')) {
        decl.rangeCount = expectSmallInteger("a register count");
        if (!acceptPunct('>')) fail(peek(), "expected '>' after register count, found " + describe(peek()));
      }
      while (peek().isPunct('[')) {
        next();
        if (acceptPunct(']')) {
          decl.arrayDims.push_back(0);
          continue;
        }
        decl.arrayDims.push_back(expectSmallInteger("an array size"));
        if (!acceptPunct(']')) fail(peek(), "expected ']' after array size, found " + describe(peek()));
      }
      if (peek().isPunct('=')) {
        next();
        size_t begin = pos_;
        int depth = 0;
        while (!atEnd()) {
          const Token &t = peek();
          if (t.isPunct('{') || t.isPunct('(')) ++depth;
          if (t.isPunct('}') || t.isPunct(')')) {
            if (depth == 0) break;
            --depth;
          }
          if (depth == 0 && (t.isPunct(';') || t.isPunct(','))) break;
          next();
        }
        if (pos_ == begin) fail(peek(), "expected an initializer after '='");
        decl.initializer = joinTokens(tokens_, begin, pos_);
      }
      decls.push_back(std::move(decl));
      if (allowMultiple && acceptPunct(',')) continue;
      break;
    }
    if (terminated && !acceptPunct(';'))
      fail(peek(), "expected ';' after declaration of '" + decls.back().name + "', found " + describe(peek()));
    return decls;
  }

  // ---- functions ----------------------------------------------------------

  std::vector<VariableDecl> parseParamList() {
    std::vector<VariableDecl> params;
    if (!acceptPunct('(')) fail(peek(), "expected '(' to open a parameter list, found " + describe(peek()));
    if (acceptPunct(')')) return params;
    do {
      std::vector<VariableDecl> decl = parseVariableDecls(/*allowMultiple=*/false, /*terminated=*/false);
      params.push_back(std::move(decl.front()));
    } while (acceptPunct(','));
    if (!acceptPunct(')')) fail(peek(), "expected ',' or ')' in parameter list, found " + describe(peek()));
    return params;
  }

  void parseFunction(Function &function) {
    function.loc = locOf(peek());
    while (isLinkage(peek())) function.linkage = std::string(next().text.substr(1));
    function.isEntry = next().isDot("entry");
    if (!function.isEntry && peek().isPunct('(')) function.returnParams = parseParamList();
    const Token &name = peek();
    if (name.kind != TokenKind::Identifier)
      fail(name, std::string("expected a function name after ") + (function.isEntry ? ".entry" : ".func") +
                     ", found " + describe(name));
    next();
    function.name = std::string(name.text);
    function.nameLoc = locOf(name);
    if (peek().isPunct('(')) function.params = parseParamList();

    // Tuning directives; a directive that begins a module-level item ends an
    // old-style prototype that has no `;` (see startsModuleItem).
    while (peek().kind == TokenKind::DotName && !startsModuleItem(peek())) {
      const Token &directive = next();
      TuningDirective tuning;
      tuning.loc = locOf(directive);
      tuning.name = std::string(directive.text.substr(1));
      if (tuning.name == "pragma") {
        size_t begin = pos_;
        while (!atEnd() && !peek().isPunct(';')) next();
        tuning.values.push_back(joinTokens(tokens_, begin, pos_));
        acceptPunct(';');
      } else {
        while (peek().kind == TokenKind::Integer) {
          tuning.values.emplace_back(next().text);
          if (!acceptPunct(',')) break;
        }
      }
      function.tuning.push_back(std::move(tuning));
    }

    if (acceptPunct(';')) return; // declaration only
    // nvopencc (CUDA 2.x-4.x) wrote prototypes without the closing `;`, one
    // per line, before the bodies: `.visible .func (.param .s32 r) f (.param
    // .s32 a)` followed directly by the next item. ptxas accepts them.
    if (peek().firstOnLine && startsModuleItem(peek())) return;
    const Token &open = peek();
    if (!open.isPunct('{'))
      fail(open, "expected '{' to open the body of '" + function.name + "' or ';' for a declaration, found " +
                     describe(open));
    next();
    function.hasBody = true;
    openFunction_ = function.name;
    openFunctionLine_ = open.line;
    parseStatements(function.body, /*nested=*/false);
    if (peek().isPunct('}')) {
      function.closeLoc = locOf(peek());
      next();
    } else if (atEnd()) {
      reportTruncated("");
    } // else: the next function starts here; already reported
    openFunction_.clear();
  }

  /// Parses statements until the `}` that closes this block (left unconsumed)
  /// or end of input.
  void parseStatements(std::vector<Statement> &statements, bool nested) {
    while (!atEnd() && !peek().isPunct('}')) {
      if (startsNextFunction()) {
        // Most likely a missing '}': say so once and let the module level
        // parse the next function instead of cascading errors through it.
        const Token &t = peek();
        report(t, "'" + std::string(t.text) + "' cannot appear inside a function body",
               "close the body of '" + openFunction_ + "' (opened at line " + std::to_string(openFunctionLine_) +
                   ") with '}' first");
        return;
      }
      size_t before = pos_;
      uint32_t line = peek().line;
      try {
        parseStatement(statements, nested);
      } catch (const SyntaxError &) {
        recoverStatement(std::max(line, lastErrorLine_));
        recordUnreadNames(before, pos_);
      }
      if (pos_ == before) next();
    }
  }

  void parseStatement(std::vector<Statement> &statements, bool nested) {
    const Token &t = peek();
    if (t.kind == TokenKind::Error) {
      next();
      return;
    }
    if (t.isPunct('{')) {
      if (depth_ >= kMaxNestingDepth) return skipTooDeepBlock();
      NestingLevel level(depth_);
      Statement statement;
      statement.kind = Statement::Kind::Block;
      statement.block.loc = locOf(t);
      next();
      parseStatements(statement.block.statements, /*nested=*/true);
      if (!acceptPunct('}') && atEnd()) reportTruncated("");
      statements.push_back(std::move(statement));
      return;
    }
    if (t.isPunct(';')) {
      next(); // empty statement
      return;
    }
    if (t.kind == TokenKind::DotName) {
      if (t.isDot("loc") || t.isDot("file")) {
        Statement statement;
        statement.kind = Statement::Kind::Directive;
        statement.directive = parseLineDirective();
        statements.push_back(std::move(statement));
        return;
      }
      if (stateSpaceFromDot(t.text) || isLinkage(t)) {
        for (VariableDecl &decl : parseVariableDecls(/*allowMultiple=*/true)) {
          Statement statement;
          statement.kind = Statement::Kind::Variable;
          statement.variable = std::move(decl);
          statements.push_back(std::move(statement));
        }
        return;
      }
      Statement statement;
      statement.kind = Statement::Kind::Directive;
      statement.directive = parseSemicolonDirective();
      statements.push_back(std::move(statement));
      return;
    }
    if (t.kind == TokenKind::Identifier && peek(1).isPunct(':')) {
      Statement statement;
      statement.kind = Statement::Kind::Label;
      statement.label.loc = locOf(t);
      statement.label.name = std::string(t.text);
      next();
      next();
      statements.push_back(std::move(statement));
      return;
    }
    (void)nested;
    Statement statement;
    statement.kind = Statement::Kind::Instruction;
    parseInstruction(statement.instruction);
    statements.push_back(std::move(statement));
  }

  /// At a `{` one level past kMaxNestingDepth: reports it and skips to its
  /// matching `}` without recursing (the skipped block is not in the tree).
  void skipTooDeepBlock() {
    reportTooDeep(peek());
    size_t open = 0;
    while (!atEnd()) {
      const Token &t = next();
      if (t.isPunct('{')) ++open;
      if (t.isPunct('}') && --open == 0) return;
    }
    reportTruncated("");
  }

  /// True at a directive that begins a module-level item (a function, a
  /// variable or a module directive), never a function's tuning directive.
  static bool startsModuleItem(const Token &t) {
    if (t.kind != TokenKind::DotName) return false;
    if (isLinkage(t) || stateSpaceFromDot(t.text)) return true;
    for (std::string_view name : {"entry", "func", "version", "target", "address_size", "file", "loc", "section",
                                  "alias"})
      if (t.isDot(name)) return true;
    return false;
  }

  /// True at a token that can only begin a new module-level item.
  bool startsNextFunction() const {
    size_t look = 0;
    while (isLinkage(peek(look))) ++look;
    const Token &t = peek(look);
    return t.isDot("entry") || t.isDot("func") || t.isDot("version") || t.isDot("target") ||
           t.isDot("address_size");
  }

  // ---- instructions -------------------------------------------------------

  void parseInstruction(Instruction &instruction) {
    instruction.loc = locOf(peek());
    if (peek().isPunct('@')) {
      next();
      if (acceptPunct('!')) instruction.guardNegated = true;
      const Token &guard = peek();
      if (guard.kind != TokenKind::Identifier)
        fail(guard, "expected a predicate register after '@', found " + describe(guard), "e.g. @%p1 or @!%p1");
      next();
      instruction.guard = std::string(guard.text);
      instruction.guardLoc = locOf(guard);
    }
    const Token &opcode = peek();
    if (opcode.kind != TokenKind::Identifier)
      fail(opcode, "expected an instruction, found " + describe(opcode));
    if (opcode.text[0] == '%' && instruction.guard.empty() && peek(1).kind == TokenKind::Identifier &&
        peek(1).line == opcode.line) {
      // `%p1 bra.uni L1;`: quote the instruction as written, from the source text.
      size_t last = pos_ + 1;
      while (last + 1 < tokens_.size() && tokens_[last + 1].line == opcode.line && !tokens_[last].isPunct(';')) ++last;
      const char *begin = peek(1).text.data();
      std::string_view written(begin, static_cast<size_t>(tokens_[last].text.data() + tokens_[last].text.size() - begin));
      std::string rest;
      for (char c : written) {
        bool space = c == ' ' || c == '\t';
        if (!space) rest += c;
        else if (!rest.empty() && rest.back() != ' ') rest += ' ';
      }
      fail(opcode,
           "register '" + std::string(opcode.text) + "' where an instruction belongs: a guard predicate is "
                                                     "written with '@'",
           "write `@" + std::string(opcode.text) + " " + rest + "` (or `@!" + std::string(opcode.text) +
               "` to negate it)");
    }
    if (opcode.text[0] == '%')
      // `%p1` alone on its line (what followed it commented out, say): a
      // register is never an opcode, wherever the next token is.
      fail(opcode, "register '" + std::string(opcode.text) + "' where an instruction belongs",
           "an instruction starts with its opcode (`bra`, `mov.u32`, ...); a guard predicate is written `@" +
               std::string(opcode.text) + "` before it");
    next();
    instruction.opcode = std::string(opcode.text);
    while (peek().kind == TokenKind::DotName) {
      const Token &modifier = next();
      instruction.modifiers.emplace_back(modifier.text.substr(1));
      instruction.modifierLocs.push_back(locOf(modifier));
    }
    if (acceptPunct(';')) return;
    while (true) {
      instruction.operands.push_back(parseOperand());
      if (acceptPunct(',')) continue;
      if (acceptPunct(';')) return;
      const Token &t = peek();
      if (t.kind == TokenKind::End) fail(t, "inside instruction '" + instruction.opcode + "'");
      if (t.firstOnLine) {
        // Point at the end of the line that lacks the ';', not at the next line.
        Token end = tokens_[pos_ - 1];
        end.column += static_cast<uint32_t>(end.text.size());
        end.kind = TokenKind::Punct;
        report(end, "expected ';' after instruction '" + instruction.opcode + "', found " + describe(t) +
                        " on the next line",
               "end every instruction with ';'");
        throw SyntaxError{};
      }
      fail(t, "expected ',' or ';' after operand of '" + instruction.opcode + "', found " + describe(t));
    }
  }

  /// Name with optional component suffix (`%tid.x`).
  Operand parseName() {
    const Token &name = next();
    Operand operand;
    operand.loc = locOf(name);
    operand.kind = name.text == "_" ? Operand::Kind::Sink : Operand::Kind::Name;
    operand.name = std::string(name.text);
    if (operand.kind == Operand::Kind::Name && peek().kind == TokenKind::DotName && isComponentName(peek().text))
      operand.name += next().text;
    return operand;
  }

  Operand parseNumber(bool negative, const Token &signToken) {
    const Token &t = next();
    Operand operand;
    operand.loc = locOf(negative ? signToken : t);
    operand.text = (negative ? "-" : "") + std::string(t.text);
    if (t.kind == TokenKind::Integer) {
      operand.kind = Operand::Kind::Integer;
      operand.intValue = integerValue(t, negative);
    } else {
      operand.kind = Operand::Kind::Float;
      operand.floatValue = floatValue(t, negative);
    }
    return operand;
  }

  Operand parseOperand() {
    const Token &t = peek();
    if (t.isPunct('[')) return parseAddress();
    if (t.isPunct('{')) return parseBracedList('{', '}', Operand::Kind::Vector);
    if (t.isPunct('(')) return parseBracedList('(', ')', Operand::Kind::List);
    if (t.isPunct('!')) {
      next();
      if (peek().kind != TokenKind::Identifier)
        fail(peek(), "expected a predicate after '!', found " + describe(peek()));
      Operand operand = parseName();
      operand.negated = true;
      operand.loc = locOf(t);
      return operand;
    }
    if (t.isPunct('-') && peek(1).kind == TokenKind::Identifier) {
      next();
      Operand operand = parseName();
      operand.minus = true;
      operand.loc = locOf(t);
      return operand;
    }
    if (t.isPunct('-') || t.isPunct('+')) {
      const Token &sign = next();
      if (peek().kind != TokenKind::Integer && peek().kind != TokenKind::Float)
        fail(peek(), "expected a number after '" + std::string(sign.text) + "', found " + describe(peek()));
      return parseNumber(sign.isPunct('-'), sign);
    }
    if (t.kind == TokenKind::Integer || t.kind == TokenKind::Float) return parseNumber(false, t);
    if (t.kind == TokenKind::Identifier) {
      Operand operand = parseName();
      if (peek().isPunct('|')) {
        next();
        if (peek().kind != TokenKind::Identifier)
          fail(peek(), "expected a second destination after '|', found " + describe(peek()));
        Operand pair;
        pair.kind = Operand::Kind::Pair;
        pair.loc = operand.loc;
        pair.elements.push_back(std::move(operand));
        pair.elements.push_back(parseName());
        return pair;
      }
      if (operand.kind == Operand::Kind::Name && (peek().isPunct('+') || peek().isPunct('-')) &&
          peek(1).kind == TokenKind::Integer) {
        bool negative = next().isPunct('-');
        operand.kind = Operand::Kind::SymbolExpr;
        operand.intValue = integerValue(next(), negative);
      }
      return operand;
    }
    if (t.kind == TokenKind::End) fail(t, "expected an operand");
    fail(t, "expected an operand, found " + describe(t),
         "operands are registers (%r1), immediates (42, 0f3F800000), addresses ([%rd1+8]) or vectors ({%f1, %f2})");
  }

  Operand parseBracedList(char open, char close, Operand::Kind kind) {
    if (depth_ >= kMaxNestingDepth) {
      reportTooDeep(peek());
      throw SyntaxError{};
    }
    NestingLevel level(depth_);
    const Token &start = next();
    Operand operand;
    operand.kind = kind;
    operand.loc = locOf(start);
    if (acceptPunct(close)) return operand;
    while (true) {
      if (peek().isPunct('{') || peek().isPunct('['))
        fail(peek(), std::string("unexpected '") + std::string(peek().text) + "' inside '" + open + "…" + close + "'");
      operand.elements.push_back(parseOperand());
      if (acceptPunct(',')) continue;
      if (acceptPunct(close)) return operand;
      fail(peek(), std::string("expected ',' or '") + close + "' in operand list, found " + describe(peek()));
    }
  }

  /// `[%rd1]`, `[%rd1+8]`, `[%rd1+-8]`, `[sym+4]`, `[1024]`, `[tmap, {%r1, %r2}]`.
  Operand parseAddress() {
    const Token &open = next();
    Operand operand;
    operand.kind = Operand::Kind::Address;
    operand.loc = locOf(open);
    const Token &first = peek();
    if (first.kind == TokenKind::Identifier) {
      operand.name = std::string(next().text);
      // `%r` vector component in an address is not PTX; components stop here.
    } else if (first.kind == TokenKind::Integer) {
      operand.intValue = integerValue(next(), false);
    } else if (first.isPunct('-') && peek(1).kind == TokenKind::Integer) {
      next();
      operand.intValue = integerValue(next(), true);
    } else {
      fail(first, "expected a register, symbol or immediate address after '[', found " + describe(first),
           "addresses read [%rd1], [%rd1+16], [symbol+4] or [0x100]");
    }
    while (peek().isPunct('+') || peek().isPunct('-')) {
      bool negative = next().isPunct('-');
      if (peek().isPunct('-')) { // `+-8` as nvcc writes negative offsets
        next();
        negative = !negative;
      }
      const Token &offset = peek();
      if (offset.kind != TokenKind::Integer)
        fail(offset, "expected an integer offset in address, found " + describe(offset),
             "register + register addressing is not PTX; compute the sum with add first");
      next();
      operand.intValue += integerValue(offset, negative);
    }
    if (acceptPunct(',')) {
      if (!peek().isPunct('{')) fail(peek(), "expected '{' with coordinates after ',' in address, found " + describe(peek()));
      operand.elements.push_back(parseBracedList('{', '}', Operand::Kind::Vector));
    }
    if (!acceptPunct(']')) fail(peek(), "expected ']' to close the address, found " + describe(peek()));
    return operand;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  ParseResult *result_ = nullptr;
  std::set<size_t> lexErrorsReported_;
  uint32_t lastErrorLine_ = 0;
  bool truncatedReported_ = false;
  /// Current `{`/`(` nesting (blocks and operand lists), at most kMaxNestingDepth.
  uint32_t depth_ = 0;
  std::string openFunction_;
  uint32_t openFunctionLine_ = 0;
};

} // namespace

ParseResult parse(std::string_view source, const DiagnosticLimits &limits) {
  ParseResult result = Parser(source).run();
  applyDiagnosticLimits(result.diagnostics, limits);
  return result;
}

} // namespace ptxforge::ptx
