// Expression: recursive-descent parser, checked evaluator and printer.
#include "tasks/Expression.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>

namespace ptxforge::tasks {

Expression Expression::integer(int64_t value) {
  Expression expression;
  expression.kind = Kind::Integer;
  expression.value = value;
  return expression;
}

namespace {

bool isIdentifierStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Grammar (lowest precedence first):
///   sum     := product (('+' | '-') product)*
///   product := unary (('*' | '/' | '%') unary)*
///   unary   := '-' unary | primary
///   primary := INTEGER | SYMBOL | FUNC '(' sum ',' sum ')' | '(' sum ')'
class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::variant<Expression, ExpressionSyntaxError> parse() {
    // Evaluation, printing and destruction recurse over the tree; a length cap
    // bounds its depth (a chain a+a+...+a is as deep as it is long).
    if (text_.size() > kMaxLength) {
      position_ = kMaxLength;
      return fail("expression longer than " + std::to_string(kMaxLength) + " characters");
    }
    skipSpace();
    if (position_ == text_.size()) return fail("expected an expression, found the end of the text");
    Expression result = parseSum();
    if (error_) return *error_;
    skipSpace();
    if (position_ != text_.size())
      return fail("expected an operator (+ - * / %) or the end of the expression, found " + describeHere());
    return result;
  }

private:
  // Depth cap so that hostile input ("((((...") cannot overflow the stack.
  static constexpr int kMaxDepth = 200;
  static constexpr size_t kMaxLength = 1024;

  std::string_view text_;
  size_t position_ = 0;
  int depth_ = 0;
  std::optional<ExpressionSyntaxError> error_;

  uint32_t column() const { return static_cast<uint32_t>(position_ + 1); }

  ExpressionSyntaxError fail(std::string message) {
    if (!error_) error_ = ExpressionSyntaxError{column(), std::move(message)};
    return *error_;
  }

  void skipSpace() {
    while (position_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[position_]))) ++position_;
  }

  std::string describeHere() const {
    if (position_ >= text_.size()) return "the end of the text";
    size_t end = position_ + 1;
    if (isIdentifierChar(text_[position_]))
      while (end < text_.size() && isIdentifierChar(text_[end])) ++end;
    return "'" + std::string(text_.substr(position_, end - position_)) + "'";
  }

  static Expression binary(Expression::Kind kind, Expression left, Expression right, uint32_t column) {
    Expression node;
    node.kind = kind;
    node.column = column;
    node.operands.push_back(std::move(left));
    node.operands.push_back(std::move(right));
    return node;
  }

  Expression parseSum() {
    Expression left = parseProduct();
    while (!error_) {
      skipSpace();
      if (position_ >= text_.size() || (text_[position_] != '+' && text_[position_] != '-')) break;
      Expression::Kind kind = text_[position_] == '+' ? Expression::Kind::Add : Expression::Kind::Subtract;
      ++position_;
      Expression right = parseProduct();
      uint32_t column = left.column;
      left = binary(kind, std::move(left), std::move(right), column);
    }
    return left;
  }

  Expression parseProduct() {
    Expression left = parseUnary();
    while (!error_) {
      skipSpace();
      if (position_ >= text_.size()) break;
      char c = text_[position_];
      Expression::Kind kind;
      if (c == '*') kind = Expression::Kind::Multiply;
      else if (c == '/') kind = Expression::Kind::Divide;
      else if (c == '%') kind = Expression::Kind::Modulo;
      else break;
      ++position_;
      Expression right = parseUnary();
      uint32_t column = left.column;
      left = binary(kind, std::move(left), std::move(right), column);
    }
    return left;
  }

  Expression parseUnary() {
    skipSpace();
    if (position_ < text_.size() && text_[position_] == '-') {
      uint32_t column = this->column();
      ++position_;
      skipSpace();
      // "-<digits>" is one literal, so that INT64_MIN can be written.
      if (position_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[position_]))) {
        Expression literal = parseInteger(/*negative=*/true);
        literal.column = column;
        return literal;
      }
      if (++depth_ > kMaxDepth) {
        fail("expression nested too deeply (more than 200 levels)");
        return {};
      }
      Expression operand = parseUnary();
      --depth_;
      Expression node;
      node.kind = Expression::Kind::Negate;
      node.column = column;
      node.operands.push_back(std::move(operand));
      return node;
    }
    return parsePrimary();
  }

  Expression parseInteger(bool negative) {
    Expression node;
    node.column = column();
    size_t start = position_;
    uint64_t value = 0;
    bool tooBig = false;
    while (position_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[position_]))) {
      uint64_t digit = static_cast<uint64_t>(text_[position_] - '0');
      if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) tooBig = true;
      else value = value * 10 + digit;
      ++position_;
    }
    if (position_ < text_.size() && (isIdentifierChar(text_[position_]) || text_[position_] == '.')) {
      size_t end = position_;
      while (end < text_.size() && (isIdentifierChar(text_[end]) || text_[end] == '.')) ++end;
      std::string literal(text_.substr(start, end - start));
      position_ = start;
      fail("expected an integer, found '" + literal + "' (only decimal integers are allowed)");
      return node;
    }
    uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (negative ? 1 : 0);
    if (tooBig || value > limit) {
      std::string literal(text_.substr(start, position_ - start));
      position_ = start;
      fail("integer " + std::string(negative ? "-" : "") + literal + " does not fit in int64");
      return node;
    }
    node.kind = Expression::Kind::Integer;
    // Negate in uint64 space: -(2^63) is INT64_MIN without signed overflow.
    node.value = negative ? static_cast<int64_t>(~value + 1) : static_cast<int64_t>(value);
    return node;
  }

  Expression parsePrimary() {
    skipSpace();
    Expression node;
    node.column = column();
    if (position_ >= text_.size()) {
      fail("expected an operand (integer, symbol, ceildiv/min/max or '('), found the end of the text");
      return node;
    }
    char c = text_[position_];
    if (std::isdigit(static_cast<unsigned char>(c))) return parseInteger(/*negative=*/false);
    if (isIdentifierStart(c)) {
      size_t start = position_;
      while (position_ < text_.size() && isIdentifierChar(text_[position_])) ++position_;
      std::string name(text_.substr(start, position_ - start));
      size_t afterName = position_;
      skipSpace();
      bool call = position_ < text_.size() && text_[position_] == '(';
      if (name == "ceildiv" || name == "min" || name == "max") {
        if (!call) {
          fail("expected '(' after function '" + name + "', found " + describeHere());
          return node;
        }
        node.kind = name == "ceildiv" ? Expression::Kind::CeilDiv
                    : name == "min"   ? Expression::Kind::Min
                                      : Expression::Kind::Max;
        ++position_;
        if (++depth_ > kMaxDepth) {
          fail("expression nested too deeply (more than 200 levels)");
          return node;
        }
        node.operands.push_back(parseSum());
        if (error_) return node;
        skipSpace();
        if (position_ >= text_.size() || text_[position_] != ',') {
          fail("expected ',' between the two arguments of " + name + "(a, b), found " + describeHere());
          return node;
        }
        ++position_;
        node.operands.push_back(parseSum());
        if (error_) return node;
        skipSpace();
        if (position_ >= text_.size() || text_[position_] != ')') {
          fail("expected ')' closing " + name + "(a, b), found " + describeHere());
          return node;
        }
        ++position_;
        --depth_;
        return node;
      }
      if (call) {
        position_ = start;
        fail("unknown function '" + name + "' (valid: ceildiv, min, max)");
        return node;
      }
      position_ = afterName;
      node.kind = Expression::Kind::Symbol;
      node.name = std::move(name);
      return node;
    }
    if (c == '(') {
      ++position_;
      if (++depth_ > kMaxDepth) {
        fail("expression nested too deeply (more than 200 levels)");
        return node;
      }
      Expression inner = parseSum();
      if (error_) return inner;
      skipSpace();
      if (position_ >= text_.size() || text_[position_] != ')') {
        fail("expected ')' closing the '(' at column " + std::to_string(node.column) + ", found " + describeHere());
        return inner;
      }
      ++position_;
      --depth_;
      return inner;
    }
    fail("expected an operand (integer, symbol, ceildiv/min/max or '('), found " + describeHere());
    return node;
  }
};

Error evaluationError(const Expression &node, std::string message) {
  return makeError(ErrorKind::InvalidInput, "column " + std::to_string(node.column) + ": " + message);
}

Result<int64_t> evaluateNode(const Expression &node, const std::map<std::string, int64_t> &symbols) {
  using Kind = Expression::Kind;
  switch (node.kind) {
  case Kind::Integer:
    return node.value;
  case Kind::Symbol: {
    auto found = symbols.find(node.name);
    if (found == symbols.end()) {
      std::string known;
      for (const auto &[name, value] : symbols) known += (known.empty() ? "" : ", ") + name;
      return evaluationError(node, "unknown symbol '" + node.name + "' (known: " +
                                       (known.empty() ? std::string("none") : known) + ")");
    }
    return found->second;
  }
  case Kind::Negate: {
    Result<int64_t> operand = evaluateNode(node.operands[0], symbols);
    if (!operand) return operand;
    if (*operand == std::numeric_limits<int64_t>::min())
      return evaluationError(node, "overflow: -(" + std::to_string(*operand) + ") does not fit in int64");
    return -*operand;
  }
  default:
    break;
  }
  assert(node.operands.size() == 2 && "binary expression node without two operands");
  Result<int64_t> leftResult = evaluateNode(node.operands[0], symbols);
  if (!leftResult) return leftResult;
  Result<int64_t> rightResult = evaluateNode(node.operands[1], symbols);
  if (!rightResult) return rightResult;
  int64_t left = *leftResult, right = *rightResult;
  int64_t out = 0;
  auto overflow = [&](const char *op) {
    return evaluationError(node, std::string("overflow: ") + std::to_string(left) + " " + op + " " +
                                     std::to_string(right) + " does not fit in int64");
  };
  switch (node.kind) {
  case Kind::Add:
    if (__builtin_add_overflow(left, right, &out)) return overflow("+");
    return out;
  case Kind::Subtract:
    if (__builtin_sub_overflow(left, right, &out)) return overflow("-");
    return out;
  case Kind::Multiply:
    if (__builtin_mul_overflow(left, right, &out)) return overflow("*");
    return out;
  case Kind::Divide:
  case Kind::Modulo:
  case Kind::CeilDiv: {
    const char *op = node.kind == Kind::Divide ? "/" : node.kind == Kind::Modulo ? "%" : "ceildiv";
    if (right == 0)
      return evaluationError(node, std::string("division by zero in ") + toString(node) + " (" + op + " by " +
                                       toString(node.operands[1]) + " = 0)");
    if (left == std::numeric_limits<int64_t>::min() && right == -1) {
      if (node.kind == Kind::Modulo) return int64_t{0};
      return overflow(op);
    }
    if (node.kind == Kind::Divide) return left / right;
    if (node.kind == Kind::Modulo) return left % right;
    int64_t quotient = left / right;
    // Truncation rounded toward zero; the true quotient was above it when the
    // remainder is nonzero and the operands have the same sign.
    if (left % right != 0 && ((left < 0) == (right < 0))) ++quotient;
    return quotient;
  }
  case Kind::Min:
    return std::min(left, right);
  case Kind::Max:
    return std::max(left, right);
  default:
    break;
  }
  return makeError(ErrorKind::Internal, "evaluate: unhandled expression kind");
}

void collectUses(const Expression &node, std::vector<SymbolUse> &uses) {
  if (node.kind == Expression::Kind::Symbol) uses.push_back({node.name, node.column});
  for (const Expression &operand : node.operands) collectUses(operand, uses);
}

int precedence(Expression::Kind kind) {
  switch (kind) {
  case Expression::Kind::Add:
  case Expression::Kind::Subtract:
    return 1;
  case Expression::Kind::Multiply:
  case Expression::Kind::Divide:
  case Expression::Kind::Modulo:
    return 2;
  case Expression::Kind::Negate:
    return 3;
  default:
    return 4; // atoms and calls
  }
}

} // namespace

std::variant<Expression, ExpressionSyntaxError> parseExpressionLocated(std::string_view text) {
  return Parser(text).parse();
}

Result<Expression> parseExpression(std::string_view text) {
  auto parsed = parseExpressionLocated(text);
  if (auto *error = std::get_if<ExpressionSyntaxError>(&parsed))
    return makeError(ErrorKind::InvalidInput, "column " + std::to_string(error->column) + ": " + error->message);
  return std::get<Expression>(std::move(parsed));
}

Result<int64_t> evaluate(const Expression &expression, const std::map<std::string, int64_t> &symbols) {
  return evaluateNode(expression, symbols);
}

std::vector<SymbolUse> symbolUses(const Expression &expression) {
  std::vector<SymbolUse> uses;
  collectUses(expression, uses);
  return uses;
}

std::vector<std::string> symbolsOf(const Expression &expression) {
  std::vector<std::string> names;
  for (SymbolUse &use : symbolUses(expression)) names.push_back(std::move(use.name));
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string toString(const Expression &expression) {
  using Kind = Expression::Kind;
  switch (expression.kind) {
  case Kind::Integer:
    return std::to_string(expression.value);
  case Kind::Symbol:
    return expression.name;
  case Kind::Negate: {
    const Expression &operand = expression.operands[0];
    std::string inner = toString(operand);
    return precedence(operand.kind) < precedence(Kind::Negate) ? "-(" + inner + ")" : "-" + inner;
  }
  case Kind::CeilDiv:
  case Kind::Min:
  case Kind::Max: {
    const char *name = expression.kind == Kind::CeilDiv ? "ceildiv" : expression.kind == Kind::Min ? "min" : "max";
    return std::string(name) + "(" + toString(expression.operands[0]) + ", " + toString(expression.operands[1]) + ")";
  }
  default:
    break;
  }
  const char *op = expression.kind == Kind::Add        ? " + "
                   : expression.kind == Kind::Subtract ? " - "
                   : expression.kind == Kind::Multiply ? " * "
                   : expression.kind == Kind::Divide   ? " / "
                                                       : " % ";
  int own = precedence(expression.kind);
  const Expression &left = expression.operands[0], &right = expression.operands[1];
  std::string leftText = toString(left), rightText = toString(right);
  // Left-associative: the left side needs parentheses only when it binds
  // looser, the right side also when it binds equally (a - (b - c)).
  // A negative literal on the right of an operator reads fine as "a - -3"; keep it parenthesised for clarity.
  if (precedence(left.kind) < own) leftText = "(" + leftText + ")";
  if (precedence(right.kind) <= own || (right.kind == Kind::Integer && right.value < 0))
    rightText = "(" + rightText + ")";
  return leftText + op + rightText;
}

} // namespace ptxforge::tasks
