// Expression: the small integer expression language of task specs and launch
// directives (docs/tasks.md): int64 literals, size symbols, + - * / % with the
// usual precedence, unary minus, parentheses, ceildiv/min/max.
#pragma once

#include "support/Result.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ptxforge::tasks {

/// A parsed expression tree. A default-constructed Expression is the literal 0.
struct Expression {
  enum class Kind { Integer, Symbol, Negate, Add, Subtract, Multiply, Divide, Modulo, CeilDiv, Min, Max };
  Kind kind = Kind::Integer;
  int64_t value = 0;               ///< Kind::Integer
  std::string name;                ///< Kind::Symbol
  std::vector<Expression> operands; ///< 1 for Negate, 2 for the binary operators and functions
  uint32_t column = 1;             ///< 1-based column of the node's first character in the parsed text

  /// A literal, for defaults built in code (e.g. a launch dimension of 1).
  static Expression integer(int64_t value);
};

/// Why a text is not an expression; `column` is 1-based within the parsed text.
struct ExpressionSyntaxError {
  uint32_t column = 0;
  std::string message; ///< says what was expected and what was found, without the column
};

/// Parses `text` (at most 1024 characters, 200 levels of nesting); on failure keeps the column separate so that callers that
/// embed expressions in a larger file (task.toml, a PTX comment) can relocate it.
std::variant<Expression, ExpressionSyntaxError> parseExpressionLocated(std::string_view text);

/// Parses `text`. The error message starts with "column N: " and says what was expected.
Result<Expression> parseExpression(std::string_view text);

/// Evaluates with checked int64 arithmetic. `/` and `%` truncate toward zero
/// (C semantics), `ceildiv(a, b)` is the mathematical ceiling of a / b. Unknown
/// symbols, division by zero and overflow are errors (ErrorKind::InvalidInput).
Result<int64_t> evaluate(const Expression &expression, const std::map<std::string, int64_t> &symbols);

/// One occurrence of a symbol, with its 1-based column in the parsed text.
struct SymbolUse {
  std::string name;
  uint32_t column = 0;
};

/// Every symbol occurrence, in source order (duplicates kept).
std::vector<SymbolUse> symbolUses(const Expression &expression);

/// The distinct symbols an expression uses, sorted.
std::vector<std::string> symbolsOf(const Expression &expression);

/// Canonical text (fully parenthesised binary operators), e.g. "ceildiv(n, 256)".
std::string toString(const Expression &expression);

} // namespace ptxforge::tasks
