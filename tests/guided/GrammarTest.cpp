// The grammar generator (ptx/Grammar.h): each format's syntax, the target and
// task options, and the operand counts it shares with the lint. Whether real
// matchers accept and reject what they should is test_grammar.py's job.
#include "ptx/Grammar.h"
#include "ptx/InstructionTable.h"
#include "ptx/Lint.h"

#include <gtest/gtest.h>

#include <cctype>
#include <regex>
#include <set>
#include <sstream>

namespace ptxforge::ptx {
namespace {

std::string grammar(GrammarFormat format, std::string arch = {}, std::optional<EntrySignature> entry = {}) {
  GrammarOptions options;
  options.format = format;
  options.arch = std::move(arch);
  options.entry = std::move(entry);
  Result<std::string> text = generateGrammar(options);
  EXPECT_TRUE(text.ok()) << (text.ok() ? "" : text.error().message);
  return text.ok() ? text.value() : std::string();
}

/// The rule names a grammar defines, in order.
std::vector<std::string> definedNames(const std::string &text, const std::string &separator) {
  std::vector<std::string> names;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find(separator);
    if (line.empty() || line[0] == '#' || line[0] == '/' || at == std::string::npos) continue;
    names.push_back(line.substr(0, at));
  }
  return names;
}

TEST(Grammar, GbnfRulesAreOneLineWithGbnfNames) {
  std::string text = grammar(GrammarFormat::Gbnf);
  std::vector<std::string> names = definedNames(text, " ::= ");
  ASSERT_FALSE(names.empty());
  EXPECT_NE(std::find(names.begin(), names.end(), "root"), names.end());
  // llama.cpp's rule names: letters, digits and dashes.
  for (const std::string &name : names) EXPECT_TRUE(std::regex_match(name, std::regex("[a-z0-9-]+"))) << name;
  // Every line is a comment, blank, or one whole rule.
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    EXPECT_TRUE(line.empty() || line[0] == '#' || line.find(" ::= ") != std::string::npos) << line;
}

TEST(Grammar, EbnfIsTheGbnfSubsetXgrammarReads) {
  // Past the header comment the two are the same rules.
  auto body = [](const std::string &text) { return text.substr(text.find("\n\n")); };
  EXPECT_EQ(body(grammar(GrammarFormat::Gbnf)), body(grammar(GrammarFormat::Ebnf)));
}

TEST(Grammar, LarkHasAStartRuleAndUppercaseTerminals) {
  std::string text = grammar(GrammarFormat::Lark);
  std::vector<std::string> names = definedNames(text, ": ");
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "start");
  EXPECT_NE(text.find("\nMN_ADD: \"add\" (\".\" MOD_ADD)*\n"), std::string::npos);
  EXPECT_NE(text.find("\nroot: "), std::string::npos);
  for (const std::string &name : names) EXPECT_TRUE(std::regex_match(name, std::regex("[a-z0-9_]+|[A-Z0-9_]+"))) << name;
  // No whitespace is ignored implicitly: blanks are in the rules.
  EXPECT_EQ(text.find("%ignore"), std::string::npos);
}

TEST(Grammar, ModifiersComeFromTheInstructionTable) {
  std::string text = grammar(GrammarFormat::Gbnf);
  std::smatch popc;
  ASSERT_TRUE(std::regex_search(text, popc, std::regex("\nmod-popc ::= ([^\n]*)\n")));
  EXPECT_EQ(popc[1].str(), "\"b32\" | \"b64\"");
  EXPECT_EQ(text.find("mn-frobnicate"), std::string::npos);
}

/// Every modifier word the table knows, accepted by an entry in the lint's
/// check, is among that entry's modifiers in the grammar.
TEST(Grammar, EveryModifierTheLintAcceptsIsInTheGrammar) {
  std::string text = grammar(GrammarFormat::Gbnf);
  std::set<std::string> universe;
  for (const OpcodeEntry &entry : allInstructions())
    for (const char *slot : {"type", "comparison", "rounding mode", "boolean operation", "operation", "state space",
                             "cache operator", "memory ordering", "scope", "vector width", "cache eviction", "layout",
                             "shuffle mode", "vote mode", "width", "precision", "modifier"})
      for (const std::string &m : validModifiersInSlot(entry, slot))
        if (m.back() != '*') universe.insert(m);
  ASSERT_GT(universe.size(), 100u);
  size_t checked = 0;
  for (const OpcodeEntry &entry : allInstructions()) {
    if (entry.anyModifier) continue;
    std::string name = "mod-";
    for (char c : entry.name) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    std::smatch rule;
    std::string body;
    if (std::regex_search(text, rule, std::regex("\n" + name + " ::= ([^\n]*)\n"))) body = rule[1].str();
    for (const std::string &m : universe) {
      if (!entryAllowsModifier(entry, m)) continue;
      ++checked;
      EXPECT_NE(body.find("\"" + m + "\""), std::string::npos) << entry.name << " ." << m;
    }
  }
  EXPECT_GT(checked, 1000u);
}

TEST(Grammar, ArchLeavesOutWhatTheTargetLacks) {
  std::string any = grammar(GrammarFormat::Gbnf);
  std::string sm80 = grammar(GrammarFormat::Gbnf, "sm_80");
  std::string sm90a = grammar(GrammarFormat::Gbnf, "sm_90a");
  EXPECT_NE(any.find("mn-wgmma-mma-async ::="), std::string::npos);
  EXPECT_EQ(sm80.find("mn-wgmma-mma-async ::="), std::string::npos);
  EXPECT_NE(sm90a.find("mn-wgmma-mma-async ::="), std::string::npos);
  EXPECT_EQ(sm80.find("mn-elect-sync ::="), std::string::npos);
  // `.bf16` on add needs sm_90: gone from add's modifiers on sm_80.
  std::smatch add;
  ASSERT_TRUE(std::regex_search(sm80, add, std::regex("\nmod-add ::= ([^\n]*)\n")));
  EXPECT_EQ(add[1].str().find("\"bf16\""), std::string::npos);
  EXPECT_NE(add[1].str().find("\"f32\""), std::string::npos);
  EXPECT_NE(sm80.find("target ::= \"sm_80\""), std::string::npos);
}

TEST(Grammar, UnknownTargetIsAnError) {
  GrammarOptions options;
  options.arch = "sm_999";
  Result<std::string> text = generateGrammar(options);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().code, "unknown-target");
  EXPECT_NE(text.error().message.find("sm_999"), std::string::npos);
}

TEST(Grammar, TaskEntryFixesNameAndParameters) {
  std::string text = grammar(GrammarFormat::Gbnf, "sm_90", EntrySignature{"saxpy", {"u64", "u64", "f32", "u32"}});
  EXPECT_NE(text.find("\"saxpy_param_0\""), std::string::npos);
  EXPECT_NE(text.find("\".f32\" (ws? "), std::string::npos);
  EXPECT_NE(text.find("\"saxpy_param_3\""), std::string::npos);
  EXPECT_EQ(text.find("saxpy_param_4"), std::string::npos);
  // The only `.entry` is the task's.
  EXPECT_EQ(text.find("\nentry ::="), std::string::npos);
  EXPECT_NE(text.find("\ntask-entry ::="), std::string::npos);

  GrammarOptions bad;
  bad.entry = EntrySignature{"saxpy", {"float"}};
  Result<std::string> rejected = generateGrammar(bad);
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.error().code, "invalid-param-type");
  bad.entry = EntrySignature{"sa xpy", {}};
  EXPECT_FALSE(generateGrammar(bad).ok());
}

TEST(Grammar, FormatNamesRoundTrip) {
  for (GrammarFormat format : {GrammarFormat::Gbnf, GrammarFormat::Lark, GrammarFormat::Ebnf})
    EXPECT_EQ(parseGrammarFormat(grammarFormatName(format)), format);
  EXPECT_FALSE(parseGrammarFormat("bnf"));
}

/// The operand counts the grammar fixes are the counts the lint's
/// `operand-count` check accepts: one operand fewer or more is a lint error.
TEST(Grammar, OperandCountsAgreeWithTheLint) {
  auto lintsCount = [](const std::string &opcode, size_t operands) {
    std::string text = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n"
                       ".reg .b32 %r<9>;\n" + opcode;
    for (size_t i = 0; i < operands; ++i) text += std::string(i ? ", " : " ") + "%r1";
    text += ";\nret;\n}\n";
    for (const Diagnostic &d : lintSource(text))
      if (d.code == "operand-count") return true;
    return false;
  };
  std::vector<std::string> opcodes = grammarCountedOpcodes();
  ASSERT_GT(opcodes.size(), 40u);
  for (const std::string &opcode : opcodes) {
    auto [min, max] = *grammarOperandCount(opcode);
    for (size_t n = min; n <= max; ++n) EXPECT_FALSE(lintsCount(opcode, n)) << opcode << " with " << n;
    if (min > 0) {
      EXPECT_TRUE(lintsCount(opcode, min - 1)) << opcode << " with " << min - 1;
    }
    EXPECT_TRUE(lintsCount(opcode, max + 1)) << opcode << " with " << max + 1;
  }
  EXPECT_FALSE(grammarOperandCount("mma"));
}

} // namespace
} // namespace ptxforge::ptx
