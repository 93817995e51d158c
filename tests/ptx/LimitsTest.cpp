// The front end's limits on hostile or runaway input (docs/limits.md): nesting
// depth, quoted excerpts, diagnostics per module, repeats, control bytes, and
// that every diagnostic has a location. Each test is a regression test for an
// input that once crashed the parser or flooded the output.
#include "ptx/Lint.h"
#include "ptx/Parser.h"
#include "ptx/Printer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

using namespace ptxforge::ptx;

namespace {

const std::string kHeader = ".version 8.5\n.target sm_90\n.address_size 64\n";

std::string kernelWith(const std::string &body) {
  return kHeader + ".visible .entry k()\n{\n\t.reg .b32 %r<8>;\n" + body + "\n\tret;\n}\n";
}

std::string repeat(const std::string &text, size_t times) {
  std::string out;
  out.reserve(text.size() * times);
  for (size_t i = 0; i < times; ++i) out += text;
  return out;
}

size_t countCode(const std::vector<Diagnostic> &diagnostics, const std::string &code) {
  return static_cast<size_t>(
      std::count_if(diagnostics.begin(), diagnostics.end(), [&](const Diagnostic &d) { return d.code == code; }));
}

size_t longestLine(const std::string &text) {
  size_t longest = 0, start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    longest = std::max(longest, end - start);
    start = end + 1;
  }
  return longest;
}

} // namespace

// --- nesting depth ----------------------------------------------------------

TEST(NestingLimit, BlocksAtTheLimitParseLintPrintAndRoundTrip) {
  // The deepest nesting the front end accepts: every recursive walk (parser,
  // lint, printer, AST equality, destruction) must run at this depth.
  std::string body = repeat("{\n", kMaxNestingDepth) + "\tadd.s32 %r1, %r2, %r3;\n" + repeat("}\n", kMaxNestingDepth);
  ParseResult parsed = parse(kernelWith(body));
  ASSERT_TRUE(parsed.diagnostics.empty()) << parsed.diagnostics.front().message;
  EXPECT_TRUE(lint(parsed.module).empty());
  ParseResult again = parse(print(parsed.module));
  EXPECT_TRUE(again.diagnostics.empty());
  EXPECT_TRUE(again.module == parsed.module);
}

TEST(NestingLimit, OperandListsCountTogetherWithBlocks) {
  // 255 blocks + one `(` list is at the limit; one more `(` is past it.
  std::string blocks = repeat("{\n", kMaxNestingDepth - 1);
  std::string closes = repeat("}\n", kMaxNestingDepth - 1);
  ParseResult atLimit = parse(kernelWith(blocks + "\tcall (%r1), f;\n" + closes));
  EXPECT_EQ(countCode(atLimit.diagnostics, "nesting-too-deep"), 0u);
  ParseResult past = parse(kernelWith(blocks + "\tcall ((%r1)), f;\n" + closes));
  EXPECT_EQ(countCode(past.diagnostics, "nesting-too-deep"), 1u);
}

TEST(NestingLimit, EightThousandBracesAreOneLocatedError) {
  // Used to overflow the stack in parseStatements.
  ParseResult result = parse(kernelWith(repeat("{", 8000) + repeat("}", 8000) + "\n\tadd.s32 %r1, %r2, %r3;"));
  ASSERT_EQ(result.diagnostics.size(), 1u);
  const Diagnostic &d = result.diagnostics.front();
  EXPECT_EQ(d.code, "nesting-too-deep");
  EXPECT_EQ(d.line, 7u);
  EXPECT_EQ(d.column, kMaxNestingDepth + 1);
  EXPECT_NE(d.message.find(std::to_string(kMaxNestingDepth)), std::string::npos);
  // The rest of the body still parses: the add and the ret follow the skipped block.
  const std::vector<Statement> &body = result.module.items.back().function.body;
  EXPECT_EQ(body.back().instruction.opcode, "ret");
}

TEST(NestingLimit, FourThousandParenthesesAreOneLocatedError) {
  // Used to overflow the stack in parseOperand / parseBracedList.
  ParseResult result = parse(kernelWith("\tcall " + repeat("(", 4000) + "%r1" + repeat(")", 4000) + ", f;"));
  ASSERT_EQ(result.diagnostics.size(), 1u);
  EXPECT_EQ(result.diagnostics[0].code, "nesting-too-deep");
  EXPECT_EQ(result.diagnostics[0].line, 7u);
  EXPECT_EQ(result.diagnostics[0].column, 7u + kMaxNestingDepth);
  // And the lint of what parsed, and its printing, are fine too.
  (void)lintSource(kernelWith("\tcall " + repeat("(", 4000) + "%r1" + repeat(")", 4000) + ", f;"));
  (void)print(result.module);
}

TEST(NestingLimit, DeepUnclosedBlocksAreTruncationNotACrash) {
  ParseResult result = parse(kernelWith(repeat("{", 20000)));
  EXPECT_EQ(countCode(result.diagnostics, "nesting-too-deep"), 1u);
  for (const Diagnostic &d : result.diagnostics) EXPECT_GT(d.line, 0u);
}

// --- stray '%' ----------------------------------------------------------------

TEST(StrayPercent, DoubledSigilHasItsOwnMessage) {
  ParseResult result = parse(kernelWith("\tadd.s32 %%r3, %r1, 1;"));
  ASSERT_EQ(result.diagnostics.size(), 1u);
  const Diagnostic &d = result.diagnostics[0];
  EXPECT_EQ(d.code, "syntax");
  EXPECT_EQ(d.line, 7u);
  EXPECT_EQ(d.column, 10u);
  EXPECT_EQ(d.message, "stray '%' before '%r3': a register name has a single '%'");
  EXPECT_EQ(d.hint, "write `%r3`");
}

TEST(StrayPercent, LonePercent) {
  ParseResult result = parse(kernelWith("\tadd.s32 %r1, %, 1;"));
  ASSERT_EQ(result.diagnostics.size(), 1u);
  EXPECT_EQ(result.diagnostics[0].message, "stray '%' with no register name after it");
}

// --- excerpts and escaping ----------------------------------------------------

TEST(DiagnosticText, LongLineIsQuotedAsAWindowAroundTheColumn) {
  // 20,000 characters of undeclared registers on one line: each diagnostic
  // used to quote the whole line (35 MB of output for this input).
  std::string line;
  for (int i = 0; line.size() < 20000; ++i) line += "mov.b32 %a" + std::to_string(i) + ", 1;";
  std::string source = kernelWith(line);
  std::vector<Diagnostic> diagnostics = lintSource(source);
  std::string text = formatDiagnosticsText(diagnostics, "long.ptx", source, 160);
  EXPECT_LE(longestLine(text), 300u);
  EXPECT_LT(text.size(), 300'000u);
  // The window keeps the token under the caret: find the diagnostic of %a400.
  size_t at = text.find("register `%a400` is not declared");
  ASSERT_NE(at, std::string::npos);
  size_t excerpt = text.find('\n', at) + 1;
  std::string quoted = text.substr(excerpt, text.find('\n', excerpt) - excerpt);
  size_t caretLineStart = excerpt + quoted.size() + 1;
  std::string caretLine = text.substr(caretLineStart, text.find('\n', caretLineStart) - caretLineStart);
  EXPECT_EQ(quoted.substr(0, 5), "  ...");
  EXPECT_EQ(quoted.substr(quoted.size() - 3), "...");
  EXPECT_EQ(quoted.substr(caretLine.size() - 1, 5), "%a400");
}

TEST(DiagnosticText, ALongLineOfStrayContinuationBytesIsQuotedInBounds) {
  // Found by the parser fuzzer: a line that starts with 1,280 UTF-8
  // continuation bytes and is longer than the window moved the window's end
  // below zero and read past the source.
  for (std::string head : {std::string(1280, '\x97'), "\xe2\x82" + std::string(1278, '\x97'), std::string(3, '\x97')}) {
    std::string source = ".entry k()\n{\n" + head + "\x01" + "cal,l selp\n}\n";
    std::vector<Diagnostic> diagnostics = lintSource(source);
    ASSERT_FALSE(diagnostics.empty());
    std::string text = formatDiagnosticsText(diagnostics, "cont.ptx", source, 160);
    EXPECT_LE(longestLine(text), 1000u);
    EXPECT_NE(text.find("\\x97"), std::string::npos) << text;
  }
}

TEST(DiagnosticText, ControlBytesAreShownEscaped) {
  std::string source = kernelWith("\tadd.s32 %r1, \x1b[2J\x07, 1;\x1b]0;title\x07");
  std::string text = formatDiagnosticsText(lintSource(source), "esc.ptx", source);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_NE(text.find("\\x1b"), std::string::npos) << text;
  // The caret still points at the escaped byte (4 columns wide).
  EXPECT_NE(text.find("  \tadd.s32 %r1, \\x1b[2J\\x07, 1;\\x1b]0;title\\x07\n  \t             ^\n"), std::string::npos)
      << text;
}

TEST(DiagnosticText, SanitizedMessagesAreValidUtf8AndShort) {
  EXPECT_EQ(sanitizeDiagnosticText("bad \xff byte, C1 \xc2\x9b, ok \xc3\xa9"), "bad \\xff byte, C1 \\xc2\\x9b, ok \xc3\xa9");
  std::string word = "`%" + std::string(20000, 'q') + "`";
  std::string shortened = sanitizeDiagnosticText("register " + word + " is not declared");
  EXPECT_LT(shortened.size(), 130u);
  EXPECT_EQ(shortened.substr(0, 11), "register `%");
  EXPECT_NE(shortened.find("qqq...qqq"), std::string::npos);
  EXPECT_EQ(shortened.substr(shortened.size() - 18), "q` is not declared");
}

// --- how many diagnostics -------------------------------------------------------

TEST(DiagnosticLimitsTest, ManyFindingsEndWithOneNote) {
  std::string body;
  for (int i = 0; i < 2000; ++i) body += "\tmov.b32 %q" + std::to_string(i) + ", 1;\n";
  DiagnosticLimits limits;
  limits.maxPerModule = 100;
  LintOptions options;
  options.limits = limits;
  std::vector<Diagnostic> diagnostics = lintSource(kernelWith(body), options);
  ASSERT_EQ(diagnostics.size(), 101u);
  const Diagnostic &note = diagnostics.back();
  EXPECT_EQ(note.code, kDiagnosticsSuppressedCode);
  EXPECT_EQ(note.severity, Severity::Note);
  EXPECT_EQ(note.message, "1900 more diagnostics not shown (1900 past the limit of 100 per module)");
  EXPECT_EQ(note.line, diagnostics[99].line + 1); // the first one dropped
  EXPECT_GT(note.column, 0u);
  options.limits = DiagnosticLimits::unlimited();
  EXPECT_EQ(lintSource(kernelWith(body), options).size(), 2000u);
}

TEST(DiagnosticLimitsTest, RepeatsOfOneFindingAreCapped) {
  std::string body = repeat("\tfrobnicate.b32 %r1, %r2;\n", 50);
  std::vector<Diagnostic> diagnostics = lintSource(kernelWith(body));
  EXPECT_EQ(countCode(diagnostics, "unknown-instruction"), DiagnosticLimits{}.maxRepeats);
  ASSERT_EQ(diagnostics.back().code, kDiagnosticsSuppressedCode);
  EXPECT_EQ(diagnostics.back().message, "40 more diagnostics not shown (40 repeating a finding already shown 10 times)");
}

TEST(DiagnosticLimitsTest, SyntaxErrorsOfParseAreCappedToo) {
  std::string source = kernelWith(repeat("\t#\n", 5000));
  ParseResult result = parse(source);
  EXPECT_LE(result.diagnostics.size(), DiagnosticLimits{}.maxPerModule + 1);
  EXPECT_EQ(result.diagnostics.back().code, kDiagnosticsSuppressedCode);
}

// --- every diagnostic is located -----------------------------------------------

TEST(DiagnosticLocations, EveryDiagnosticHasALineAndColumn) {
  const char *const sources[] = {
      "",
      "\n\n",
      ".address_size 64\n.visible .entry k()\n{\n\tret;\n}\n",
      ".visible .entry k()\n{\n\tret;\n}\n",
      ".version 8.5\n.target sm_90\n.visible .entry k(\n",
      ".version 8.5\n.target sm_90\n.global .b32 g\n",
      ".version 7.0\n.target sm_100a\n",
      ".version 8.5\n.target sm_90\n.visible .entry k()\n{\n\t.reg .b32 %r<2>;\n\tbra L;\n\tcall f;\n\t@%r1 bra L;\n}\n",
      "/* unterminated",
      "\"unterminated",
      "\x1b[31m",
  };
  for (const char *source : sources) {
    for (const Diagnostic &d : lintSource(source)) {
      EXPECT_GT(d.line, 0u) << "[" << d.code << "] " << d.message << " in: " << source;
      EXPECT_GT(d.column, 0u) << "[" << d.code << "] " << d.message << " in: " << source;
    }
  }
}
