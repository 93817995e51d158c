// Module-scope initializers: a small lexer and a precedence-climbing
// evaluator for the PTX ISA's constant expressions.
#include "emu/Initializer.h"

#include "emu/Arith.h"

#include <fmt/format.h>

#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>

namespace ptxforge::emu {

namespace {

/// A constant: a 64-bit integer (signed unless a U suffix or an unsigned
/// operand made it unsigned) or a double. `literalBits` keeps the exact bits
/// of a lone 0f/0d literal so that NaN payloads survive.
struct Value {
  bool isFloat = false;
  bool isUnsigned = false;
  uint64_t integer = 0;
  double real = 0;
  unsigned literalWidth = 0; ///< 32 or 64 for an untouched 0f/0d literal
  uint64_t literalBits = 0;

  double asReal() const { return isFloat ? real : isUnsigned ? double(integer) : double(int64_t(integer)); }
  bool truthy() const { return isFloat ? real != 0 : integer != 0; }
  static Value ofInteger(uint64_t v, bool isUnsigned = false) {
    Value out;
    out.integer = v;
    out.isUnsigned = isUnsigned;
    return out;
  }
  static Value ofReal(double v) {
    Value out;
    out.isFloat = true;
    out.real = v;
    return out;
  }
};

class Evaluator {
public:
  Evaluator(const std::string &text, std::string &error) : text_(text), error_(error) {}

  bool atEnd() {
    skipSpace();
    return pos_ >= text_.size();
  }
  /// Consumes `punct` if it comes next. The parser keeps an initializer as
  /// tokens joined by spaces and lexes `<<` as two `<`, so the characters of
  /// a two-character operator may be spaced apart; and a single `<` must not
  /// take the first half of `<<` or `<=` (and so on).
  bool accept(const char *punct) {
    skipSpace();
    size_t at = pos_;
    for (const char *c = punct; *c; ++c) {
      if (c != punct)
        while (at < text_.size() && text_[at] == ' ') ++at;
      if (at >= text_.size() || text_[at] != *c) return false;
      ++at;
    }
    if (punct[1] == '\0') {
      size_t next = at;
      while (next < text_.size() && text_[next] == ' ') ++next;
      char c = punct[0], d = next < text_.size() ? text_[next] : '\0';
      if ((c == '<' && (d == '<' || d == '=')) || (c == '>' && (d == '>' || d == '=')) || (c == '&' && d == '&') ||
          (c == '|' && d == '|') || (c == '!' && d == '=') || (c == '=' && d == '='))
        return false;
    }
    pos_ = at;
    return true;
  }
  char peekChar() {
    skipSpace();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool fail(const std::string &message) {
    if (error_.empty()) error_ = message;
    return false;
  }

  /// expression := ternary
  bool expression(Value &out) { return ternary(out); }

private:
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  /// Nesting (parentheses, unary operators, conditionals, braces) is bounded
  /// so that a hostile initializer cannot exhaust the stack.
  struct Depth {
    Evaluator &e;
    explicit Depth(Evaluator &evaluator) : e(evaluator) { ++e.depth_; }
    ~Depth() { --e.depth_; }
  };

  bool ternary(Value &out) {
    Depth depth(*this);
    if (depth_ > kMaxDepth) return fail(fmt::format("the initializer nests deeper than {} levels", kMaxDepth));
    if (!binary(out, 0)) return false;
    if (!accept("?")) return true;
    Value yes, no;
    if (!expression(yes)) return false;
    if (!accept(":")) return fail("expected ':' in a conditional expression");
    if (!expression(no)) return false;
    out = out.truthy() ? yes : no;
    out.literalWidth = 0;
    return true;
  }

  /// Binary operators by C precedence, lowest first.
  static constexpr const char *kLevels[][4] = {
      {"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<=", ">=", "<", ">"}, {"<<", ">>"}, {"+", "-"},
      {"*", "/", "%"},
  };
  static constexpr int kLevelCount = sizeof(kLevels) / sizeof(kLevels[0]);

  bool binary(Value &out, int level) {
    if (level == kLevelCount) return unary(out);
    if (!binary(out, level + 1)) return false;
    for (;;) {
      const char *op = nullptr;
      for (const char *candidate : kLevels[level])
        if (candidate && accept(candidate)) {
          op = candidate;
          break;
        }
      if (!op) return true;
      Value right;
      if (!binary(right, level + 1)) return false;
      if (!apply(op, out, right)) return false;
    }
  }

  bool apply(std::string_view op, Value &left, const Value &right) {
    bool isFloat = left.isFloat || right.isFloat;
    bool isUnsigned = left.isUnsigned || right.isUnsigned;
    auto boolean = [&](bool v) {
      left = Value::ofInteger(v ? 1 : 0);
      return true;
    };
    if (op == "&&") return boolean(left.truthy() && right.truthy());
    if (op == "||") return boolean(left.truthy() || right.truthy());
    if (isFloat) {
      double a = left.asReal(), b = right.asReal();
      if (op == "+") left = Value::ofReal(a + b);
      else if (op == "-") left = Value::ofReal(a - b);
      else if (op == "*") left = Value::ofReal(a * b);
      else if (op == "/") left = Value::ofReal(a / b);
      else if (op == "<") return boolean(a < b);
      else if (op == ">") return boolean(a > b);
      else if (op == "<=") return boolean(a <= b);
      else if (op == ">=") return boolean(a >= b);
      else if (op == "==") return boolean(a == b);
      else if (op == "!=") return boolean(a != b);
      else return fail(fmt::format("operator '{}' takes integer operands, not floating-point ones", op));
      return true;
    }
    uint64_t a = left.integer, b = right.integer;
    int64_t sa = int64_t(a), sb = int64_t(b);
    uint64_t result = 0;
    if (op == "+") result = a + b;
    else if (op == "-") result = a - b;
    else if (op == "*") result = a * b;
    else if (op == "/" || op == "%") {
      if (b == 0) return fail("division by zero in a constant expression");
      if (isUnsigned) result = op == "/" ? a / b : a % b;
      else if (sa == INT64_MIN && sb == -1) result = op == "/" ? a : 0;
      else result = uint64_t(op == "/" ? sa / sb : sa % sb);
    } else if (op == "<<") result = b >= 64 ? 0 : a << b;
    else if (op == ">>") result = isUnsigned ? (b >= 64 ? 0 : a >> b) : uint64_t(sa >> std::min<uint64_t>(b, 63));
    else if (op == "&") result = a & b;
    else if (op == "|") result = a | b;
    else if (op == "^") result = a ^ b;
    else if (op == "<") return boolean(isUnsigned ? a < b : sa < sb);
    else if (op == ">") return boolean(isUnsigned ? a > b : sa > sb);
    else if (op == "<=") return boolean(isUnsigned ? a <= b : sa <= sb);
    else if (op == ">=") return boolean(isUnsigned ? a >= b : sa >= sb);
    else if (op == "==") return boolean(a == b);
    else if (op == "!=") return boolean(a != b);
    left = Value::ofInteger(result, isUnsigned);
    return true;
  }

  bool unary(Value &out) {
    Depth depth(*this);
    if (depth_ > kMaxDepth) return fail(fmt::format("the initializer nests deeper than {} levels", kMaxDepth));
    if (accept("-")) {
      if (!unary(out)) return false;
      out = out.isFloat ? Value::ofReal(-out.real) : Value::ofInteger(0 - out.integer, out.isUnsigned);
      return true;
    }
    if (accept("+")) {
      if (!unary(out)) return false;
      out.literalWidth = 0;
      return true;
    }
    if (accept("!")) {
      if (!unary(out)) return false;
      out = Value::ofInteger(out.truthy() ? 0 : 1);
      return true;
    }
    if (accept("~")) {
      if (!unary(out)) return false;
      if (out.isFloat) return fail("operator '~' takes an integer operand, not a floating-point one");
      out = Value::ofInteger(~out.integer, out.isUnsigned);
      return true;
    }
    if (accept("(")) {
      if (!expression(out)) return false;
      if (!accept(")")) return fail("expected ')'");
      out.literalWidth = 0;
      return true;
    }
    return literal(out);
  }

  bool literal(Value &out) {
    char c = peekChar();
    if (c == '\0') return fail("expected a constant, found the end of the initializer");
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%')
      return fail("it takes the address of a symbol, which the emulator does not support");
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return fail(fmt::format("unexpected '{}'", c));
    size_t start = pos_;
    auto isHex = [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)) != 0; };
    // 0f / 0d: float bit patterns.
    if (c == '0' && pos_ + 1 < text_.size() && std::strchr("fFdD", text_[pos_ + 1])) {
      bool single = text_[pos_ + 1] == 'f' || text_[pos_ + 1] == 'F';
      size_t digits = single ? 8 : 16, begin = pos_ + 2, end = begin;
      while (end < text_.size() && isHex(text_[end])) ++end;
      if (end - begin != digits)
        return fail(fmt::format("'{}' is not a {} literal ({} hex digits)", text_.substr(start, end - start),
                                single ? "0f" : "0d", digits));
      uint64_t bits = std::stoull(text_.substr(begin, digits), nullptr, 16);
      out = Value::ofReal(single ? double(std::bit_cast<float>(uint32_t(bits))) : std::bit_cast<double>(bits));
      out.literalWidth = single ? 32 : 64;
      out.literalBits = bits;
      pos_ = end;
      return true;
    }
    // Decimal floats: digits with a '.' or an exponent.
    size_t end = pos_;
    while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
    bool hexOrBinary = c == '0' && end == pos_ + 1 && end < text_.size() && std::strchr("xXbB", text_[end]);
    if (!hexOrBinary && end < text_.size() && (text_[end] == '.' || text_[end] == 'e' || text_[end] == 'E')) {
      std::string number = text_.substr(pos_, end - pos_);
      if (text_[end] == '.') {
        number += text_[end++];
        while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) number += text_[end++];
      }
      if (end < text_.size() && (text_[end] == 'e' || text_[end] == 'E')) {
        number += text_[end++];
        // The parser may have spaced the exponent's sign out (`1e - 3`).
        while (end < text_.size() && text_[end] == ' ') ++end;
        if (end < text_.size() && (text_[end] == '+' || text_[end] == '-')) number += text_[end++];
        while (end < text_.size() && text_[end] == ' ') ++end;
        size_t digits = end;
        while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) number += text_[end++];
        if (end == digits) return fail(fmt::format("'{}' has no exponent digits", number));
      }
      out = Value::ofReal(std::strtod(number.c_str(), nullptr));
      pos_ = end;
      return true;
    }
    // Integers: 0x hex, 0b binary, leading-0 octal, decimal; U suffix.
    int base = 10;
    size_t begin = pos_;
    if (hexOrBinary) {
      base = (text_[end] == 'x' || text_[end] == 'X') ? 16 : 2;
      begin = end + 1;
    } else if (c == '0' && end > pos_ + 1) {
      base = 8;
    }
    end = begin;
    while (end < text_.size() && std::isalnum(static_cast<unsigned char>(text_[end])) && text_[end] != 'U' &&
           text_[end] != 'u')
      ++end;
    std::string digits = text_.substr(begin, end - begin);
    uint64_t value = 0;
    bool ok = !digits.empty();
    for (char d : digits) {
      int digit = std::isdigit(static_cast<unsigned char>(d)) ? d - '0'
                  : std::isxdigit(static_cast<unsigned char>(d)) ? std::tolower(d) - 'a' + 10
                                                                 : 99;
      if (digit >= base || value > (UINT64_MAX - uint64_t(digit)) / uint64_t(base)) {
        ok = false;
        break;
      }
      value = value * uint64_t(base) + uint64_t(digit);
    }
    if (!ok)
      return fail(fmt::format("'{}' is not a number", text_.substr(start, std::max(end, start + 1) - start)));
    bool isUnsigned = end < text_.size() && (text_[end] == 'U' || text_[end] == 'u');
    pos_ = end + (isUnsigned ? 1 : 0);
    out = Value::ofInteger(value, isUnsigned);
    return true;
  }

  const std::string &text_;
  std::string &error_;
  size_t pos_ = 0;

public:
  static constexpr int kMaxDepth = 64;
  int depth_ = 0;
};

/// The bits of one element of `type` from a constant.
bool elementBits(const Value &value, DType type, uint64_t &bits, std::string &error) {
  switch (type) {
  case DType::F32:
    if (value.literalWidth == 32) bits = value.literalBits;
    else bits = std::bit_cast<uint32_t>(float(value.asReal()));
    return true;
  case DType::F64:
    if (value.literalWidth == 64) bits = value.literalBits;
    else bits = std::bit_cast<uint64_t>(value.asReal());
    return true;
  case DType::F16:
  case DType::BF16:
  case DType::F16x2:
  case DType::BF16x2:
    if (!value.isFloat) {
      bits = value.integer; // a bit pattern, as in mov.b16
    } else {
      bool bf16 = type == DType::BF16 || type == DType::BF16x2;
      double v = value.asReal();
      uint16_t half = bf16 ? f64ToBf16(v, Rounding::Rn) : f64ToF16(v, Rounding::Rn);
      if (dtypeBits(type) == 32) return (error = "a packed half-precision element must be a bit pattern"), false;
      bits = half;
    }
    return true;
  default: break;
  }
  if (value.isFloat) {
    if (value.literalWidth && value.literalWidth == dtypeBits(type)) {
      bits = value.literalBits; // 0f/0d into a .b32/.b64: the bit pattern
      return true;
    }
    error = fmt::format("a floating-point value cannot initialize a .{} element", dtypeName(type));
    return false;
  }
  bits = value.integer;
  return true;
}

} // namespace

bool evaluateInitializer(const std::string &text, DType type, std::vector<uint8_t> &out, std::string &error) {
  unsigned bytes = type == DType::Pred ? 1 : dtypeBytes(type);
  if (type == DType::None || type == DType::B128 || bytes == 0 || bytes > 8)
    return (error = fmt::format("initializers of .{} variables are not supported", dtypeName(type))), false;
  Evaluator eval(text, error);
  // items := '{' [item (',' item)*] '}' | expression
  std::function<bool()> item = [&]() -> bool {
    if (eval.accept("{")) {
      if (++eval.depth_ > Evaluator::kMaxDepth)
        return eval.fail(fmt::format("the initializer nests deeper than {} levels", Evaluator::kMaxDepth));
      if (eval.accept("}")) {
        --eval.depth_;
        return true;
      }
      do {
        if (!item()) return false;
      } while (eval.accept(","));
      if (!eval.accept("}")) return eval.fail("expected ',' or '}'");
      --eval.depth_;
      return true;
    }
    Value value;
    if (!eval.expression(value)) return false;
    uint64_t bits = 0;
    if (!elementBits(value, type, bits, error)) return false;
    size_t at = out.size();
    out.resize(at + bytes);
    std::memcpy(out.data() + at, &bits, bytes); // little endian host, as the GPU
    return true;
  };
  if (!item()) return false;
  if (!eval.atEnd()) return eval.fail(fmt::format("unexpected '{}' after the initializer", eval.peekChar()));
  return true;
}

} // namespace ptxforge::emu
