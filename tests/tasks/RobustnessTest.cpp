// Untrusted text (model-written directives, user task files) must give
// diagnostics, never crashes: random inputs through every parser. Run under
// the sanitizer build, this is a small deterministic fuzz.
#include "tasks/Expression.h"
#include "tasks/LaunchDirective.h"
#include "tasks/TaskSpec.h"

#include "TaskTestSupport.h"

#include <gtest/gtest.h>

#include <random>

using namespace ptxforge;
using namespace ptxforge::tasks;

namespace {

std::string randomText(std::mt19937_64 &rng, std::string_view alphabet, size_t maxLength) {
  std::string text(rng() % (maxLength + 1), ' ');
  for (char &c : text) c = alphabet[rng() % alphabet.size()];
  return text;
}

} // namespace

TEST(Robustness, RandomExpressionsParseOrFailCleanly) {
  std::mt19937_64 rng(1);
  const std::map<std::string, int64_t> symbols = {{"n", 7}, {"m", -3}, {"big", int64_t{1} << 62}};
  for (int i = 0; i < 20000; ++i) {
    std::string text = randomText(rng, "0123456789 +-*/%()nmbig,ceildivminax9", 40);
    auto parsed = parseExpressionLocated(text);
    if (auto *error = std::get_if<ExpressionSyntaxError>(&parsed)) {
      ASSERT_GE(error->column, 1u) << text;
      ASSERT_LE(error->column, text.size() + 1) << text;
      continue;
    }
    const Expression &expression = std::get<Expression>(parsed);
    (void)evaluate(expression, symbols);
    // The printed form parses back to the same value.
    Result<Expression> reparsed = parseExpression(toString(expression));
    ASSERT_TRUE(reparsed.ok()) << text << " printed as " << toString(expression);
    Result<int64_t> a = evaluate(expression, symbols), b = evaluate(*reparsed, symbols);
    ASSERT_EQ(a.ok(), b.ok()) << text;
    if (a.ok()) {
      ASSERT_EQ(*a, *b) << text;
    }
  }
}

TEST(Robustness, RandomDirectivesGiveLocatedDiagnostics) {
  std::mt19937_64 rng(2);
  for (int i = 0; i < 20000; ++i) {
    std::string text = "// @ptxforge " + randomText(rng, "blockgridsmem=(),0123 n+*/\t\"", 60) + "\n";
    LaunchDirectiveScan scan = parseLaunchDirectives(text, {"n"});
    for (const ptx::Diagnostic &d : scan.diagnostics) {
      ASSERT_EQ(d.line, 1u) << text;
      ASSERT_GE(d.column, 1u) << text;
      ASSERT_LE(d.column, text.size()) << text;
    }
  }
}

TEST(Robustness, MangledTaskFilesGiveErrors) {
  std::mt19937_64 rng(3);
  std::string good = fixtures::kSaxpyToml;
  for (int i = 0; i < 300; ++i) {
    std::string text = good;
    for (int edits = 0; edits < 3; ++edits) {
      size_t at = rng() % text.size();
      switch (rng() % 3) {
      case 0: text.erase(at, 1 + rng() % 8); break;
      case 1: text.insert(at, 1, "=[]{}\",.#0an*-\n"[rng() % 16]); break;
      default: text[at] = "=[]{}\",.#0an*-\n"[rng() % 16]; break;
      }
    }
    Result<TaskSpec> task = parseTask(text, "task.toml", std::string(fixtures::kSaxpyReference));
    if (!task.ok()) {
      ASSERT_EQ(task.error().message.rfind("task.toml", 0), 0u) << task.error().message;
    }
  }
}
