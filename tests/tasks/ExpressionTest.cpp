// The expression language of task specs and launch directives.
#include "tasks/Expression.h"

#include <gtest/gtest.h>

#include <limits>

using namespace ptxforge;
using namespace ptxforge::tasks;

namespace {

int64_t eval(std::string_view text, const std::map<std::string, int64_t> &symbols = {}) {
  Result<Expression> parsed = parseExpression(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error().message);
  if (!parsed) return -999999;
  Result<int64_t> value = evaluate(*parsed, symbols);
  EXPECT_TRUE(value.ok()) << text << ": " << (value.ok() ? "" : value.error().message);
  return value.ok() ? *value : -999999;
}

std::string parseError(std::string_view text) {
  Result<Expression> parsed = parseExpression(text);
  EXPECT_FALSE(parsed.ok()) << text << " parsed";
  return parsed.ok() ? "" : parsed.error().message;
}

std::string evalError(std::string_view text, const std::map<std::string, int64_t> &symbols = {}) {
  Result<Expression> parsed = parseExpression(text);
  EXPECT_TRUE(parsed.ok()) << text;
  if (!parsed) return "";
  Result<int64_t> value = evaluate(*parsed, symbols);
  EXPECT_FALSE(value.ok()) << text << " evaluated to " << *value;
  return value.ok() ? "" : value.error().message;
}

} // namespace

TEST(Expression, Precedence) {
  EXPECT_EQ(eval("2 + 3 * 4"), 14);
  EXPECT_EQ(eval("(2 + 3) * 4"), 20);
  EXPECT_EQ(eval("10 - 4 - 3"), 3);   // left associative
  EXPECT_EQ(eval("100 / 10 / 5"), 2);
  EXPECT_EQ(eval("7 % 4 * 3"), 9);
  EXPECT_EQ(eval("-2 * 3"), -6);
  EXPECT_EQ(eval("- (2 + 3)"), -5);
  EXPECT_EQ(eval("--4"), 4);
  EXPECT_EQ(eval("2 * -3"), -6);
}

TEST(Expression, IntegerDivisionTruncatesTowardZero) {
  EXPECT_EQ(eval("7 / 2"), 3);
  EXPECT_EQ(eval("-7 / 2"), -3);
  EXPECT_EQ(eval("-7 % 2"), -1);
  EXPECT_EQ(eval("7 % -2"), 1);
}

TEST(Expression, Functions) {
  EXPECT_EQ(eval("ceildiv(n, 256)", {{"n", 1000003}}), 3907);
  EXPECT_EQ(eval("ceildiv(n, 256)", {{"n", 1024}}), 4);
  EXPECT_EQ(eval("ceildiv(0, 256)"), 0);
  EXPECT_EQ(eval("ceildiv(-7, 2)"), -3);
  EXPECT_EQ(eval("ceildiv(-7, -2)"), 4);
  EXPECT_EQ(eval("min(M, N) + max(M, N)", {{"M", 3}, {"N", 5}}), 8);
  EXPECT_EQ(eval("max(1, min(2, 3))"), 2);
  EXPECT_EQ(eval("ceildiv( n , 64 )*64", {{"n", 65}}), 128);
}

TEST(Expression, Int64Extremes) {
  EXPECT_EQ(eval("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(eval("-9223372036854775808"), std::numeric_limits<int64_t>::min());
}

TEST(Expression, SyntaxErrorsSayColumnAndWhatWasExpected) {
  EXPECT_EQ(parseError(""), "column 1: expected an expression, found the end of the text");
  EXPECT_EQ(parseError("n +"), "column 4: expected an operand (integer, symbol, ceildiv/min/max or '('), found the end of the text");
  EXPECT_EQ(parseError("(n + 1"), "column 7: expected ')' closing the '(' at column 1, found the end of the text");
  EXPECT_EQ(parseError("n 2"), "column 3: expected an operator (+ - * / %) or the end of the expression, found '2'");
  EXPECT_EQ(parseError("ceildiv(n 256)"), "column 11: expected ',' between the two arguments of ceildiv(a, b), found '256'");
  EXPECT_EQ(parseError("floor(n, 2)"), "column 1: unknown function 'floor' (valid: ceildiv, min, max)");
  EXPECT_EQ(parseError("2.5 * n"), "column 1: expected an integer, found '2.5' (only decimal integers are allowed)");
  EXPECT_EQ(parseError("n * $"), "column 5: expected an operand (integer, symbol, ceildiv/min/max or '('), found '$'");
  EXPECT_EQ(parseError("max"), "column 4: expected '(' after function 'max', found the end of the text");
  EXPECT_EQ(parseError("99999999999999999999"), "column 1: integer 99999999999999999999 does not fit in int64");
}

TEST(Expression, DeepNestingIsAnErrorNotACrash) {
  std::string text(5000, '(');
  text += "1";
  text += std::string(5000, ')');
  EXPECT_NE(parseError(text).find("longer than 1024 characters"), std::string::npos);
  std::string nested = std::string(300, '(') + "1" + std::string(300, ')');
  EXPECT_NE(parseError(nested).find("nested too deeply"), std::string::npos);
  std::string negations = std::string(300, '-') + "n";
  EXPECT_NE(parseError(negations).find("nested too deeply"), std::string::npos);
  std::string chain = "1";
  while (chain.size() < 1000) chain += "+1";
  EXPECT_EQ(eval(chain), 501); // 1001 characters: 501 ones
}

TEST(Expression, EvaluationErrors) {
  EXPECT_EQ(evalError("n / (m - 3)", {{"n", 1}, {"m", 3}}), "column 1: division by zero in n / (m - 3) (/ by m - 3 = 0)");
  EXPECT_NE(evalError("ceildiv(n, 0)", {{"n", 1}}).find("division by zero"), std::string::npos);
  EXPECT_NE(evalError("n % 0", {{"n", 1}}).find("division by zero"), std::string::npos);
  EXPECT_EQ(evalError("2 * k", {{"n", 1}}), "column 5: unknown symbol 'k' (known: n)");
  EXPECT_NE(evalError("9223372036854775807 + 1").find("overflow"), std::string::npos);
  EXPECT_NE(evalError("n * n", {{"n", int64_t{1} << 40}}).find("overflow"), std::string::npos);
  EXPECT_NE(evalError("-9223372036854775808 / -1").find("overflow"), std::string::npos);
  EXPECT_NE(evalError("-(-9223372036854775808)").find("overflow"), std::string::npos);
}

TEST(Expression, SymbolsAndPrinting) {
  Result<Expression> parsed = parseExpression("ceildiv(N, 64) * M + N");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(symbolsOf(*parsed), (std::vector<std::string>{"M", "N"}));
  std::vector<SymbolUse> uses = symbolUses(*parsed);
  ASSERT_EQ(uses.size(), 3u);
  EXPECT_EQ(uses[0].name, "N");
  EXPECT_EQ(uses[0].column, 9u);
  EXPECT_EQ(uses[1].name, "M");
  EXPECT_EQ(uses[1].column, 18u);
  EXPECT_EQ(toString(*parsed), "ceildiv(N, 64) * M + N");
  for (const char *text : {"a - (b - c)", "(a + b) * c", "a * b + c", "-(a + b)", "a / (b * c)", "-3 * n", "n - (-3)"}) {
    Result<Expression> expression = parseExpression(text);
    ASSERT_TRUE(expression.ok()) << text;
    EXPECT_EQ(toString(*expression), text);
  }
}
