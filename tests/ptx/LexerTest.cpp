// Lexer tests: token kinds, spellings and locations for PTX's lexical forms.
#include "ptx/Lexer.h"

#include <gtest/gtest.h>

using namespace ptxforge::ptx;

namespace {

std::vector<std::pair<TokenKind, std::string>> kinds(std::string_view source) {
  std::vector<std::pair<TokenKind, std::string>> out;
  for (const Token &t : tokenize(source)) out.emplace_back(t.kind, std::string(t.text));
  return out;
}

} // namespace

TEST(Lexer, OpcodeWithModifierChain) {
  auto tokens = kinds("ld.global.nc.v4.f32");
  ASSERT_EQ(tokens.size(), 6u);
  EXPECT_EQ(tokens[0], std::make_pair(TokenKind::Identifier, std::string("ld")));
  EXPECT_EQ(tokens[1], std::make_pair(TokenKind::DotName, std::string(".global")));
  EXPECT_EQ(tokens[4], std::make_pair(TokenKind::DotName, std::string(".f32")));
  EXPECT_EQ(tokens[5].first, TokenKind::End);
}

TEST(Lexer, DoubleColonStaysInsideModifier) {
  auto tokens = kinds("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes");
  EXPECT_EQ(tokens[3].second, ".shared::cluster");
  EXPECT_EQ(tokens[5].second, ".mbarrier::complete_tx::bytes");
}

TEST(Lexer, NumberForms) {
  auto tokens = kinds("42 0x1Fu 017 0b101 0f3F800000 0d3FF0000000000000 1.5 2e-3 1.");
  std::vector<TokenKind> expected = {TokenKind::Integer, TokenKind::Integer, TokenKind::Integer,
                                     TokenKind::Integer, TokenKind::Float,   TokenKind::Float,
                                     TokenKind::Float,   TokenKind::Float,   TokenKind::Float};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(tokens[i].first, expected[i]) << tokens[i].second;
  EXPECT_EQ(tokens[1].second, "0x1Fu");
}

TEST(Lexer, IdentifiersWithSigils) {
  auto tokens = kinds("%r1 $L__BB0_1 __local_depot0 %tid.x _");
  EXPECT_EQ(tokens[0].second, "%r1");
  EXPECT_EQ(tokens[1].second, "$L__BB0_1");
  EXPECT_EQ(tokens[3].second, "%tid");
  EXPECT_EQ(tokens[4].second, ".x");
  EXPECT_EQ(tokens[5].second, "_");
}

TEST(Lexer, CommentsAreSkippedAndLocationsAreOneBased) {
  auto tokens = tokenize("// header\n/* block\n comment */  ret;\n\tadd");
  ASSERT_GE(tokens.size(), 3u);
  EXPECT_EQ(tokens[0].text, "ret");
  EXPECT_EQ(tokens[0].line, 3u);
  EXPECT_EQ(tokens[0].column, 14u);
  EXPECT_TRUE(tokens[0].firstOnLine);
  EXPECT_FALSE(tokens[1].firstOnLine);
  EXPECT_EQ(tokens[2].line, 4u);
  EXPECT_EQ(tokens[2].column, 2u);
}

TEST(Lexer, MalformedInputBecomesErrorTokens) {
  EXPECT_EQ(kinds("/* never closed")[0].first, TokenKind::Error);
  EXPECT_EQ(kinds("\"no end")[0].first, TokenKind::Error);
  EXPECT_EQ(kinds("12abc")[0].first, TokenKind::Error);
  EXPECT_EQ(kinds("#")[0].first, TokenKind::Error);
  EXPECT_EQ(kinds("\xE2\x82\xAC")[0].second, "\xE2\x82\xAC"); // one error per UTF-8 character
}
