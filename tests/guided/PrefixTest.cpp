// Prefix checking (ptx/Prefix.h) on small modules: what no continuation can
// fix is reported at the place the whole-module lint reports it; what a later
// line may fix is not reported early.
#include "ptx/Prefix.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace ptxforge::ptx {
namespace {

const std::string kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n";

std::string kernel(const std::string &body) { return kHeader + ".visible .entry k(.param .u64 p)\n{\n" + body; }

TEST(Prefix, BoundariesFollowStatements) {
  std::string text = ".version 8.0\n.target sm_90\n.address_size 64\n.entry k()\n{\n.reg .b32 %r<2>;\n$L1:\n"
                     "add.s32 %r1, %r1, 1;\nproto : .callprototype ()_ ();\n}\n";
  std::vector<size_t> cuts = statementBoundaries(text);
  ASSERT_EQ(cuts.size(), 9u);
  EXPECT_EQ(text.substr(0, cuts[0]), ".version 8.0");
  EXPECT_EQ(text.substr(0, cuts[1]), ".version 8.0\n.target sm_90");
  EXPECT_EQ(text.substr(cuts[3] - 1, 1), "{");
  EXPECT_EQ(text.substr(cuts[5] - 4, 4), "$L1:");
  EXPECT_EQ(text.substr(cuts[7] - 1, 1), ";"); // the prototype is one statement, not a label
  EXPECT_EQ(text.substr(cuts[8] - 1, 1), "}");
}

TEST(Prefix, ValidSoFarWhenALaterLineMayFixIt) {
  // %r9 undeclared yet, $L2 not yet defined, the body not closed.
  PrefixCheck check = checkPrefix(kernel(".reg .b32 %r<3>;\nadd.s32 %r1, %r9, 1;\n@%p1 bra $L2;\nmov.u32 %r2, 0"));
  EXPECT_FALSE(check.error) << check.error->code << ": " << check.error->message;
  // The half-written `mov` is not part of the complete statements.
  std::string text = kernel(".reg .b32 %r<3>;\nadd.s32 %r1, %r9, 1;\n@%p1 bra $L2;\nmov.u32 %r2, 0");
  EXPECT_EQ(text.substr(0, check.completeBytes), kernel(".reg .b32 %r<3>;\nadd.s32 %r1, %r9, 1;\n@%p1 bra $L2;"));
  EXPECT_EQ(check.validBytes, check.completeBytes);
}

TEST(Prefix, EmptyAndHeaderOnlyPrefixesAreValid) {
  EXPECT_FALSE(checkPrefix("").error);
  EXPECT_FALSE(checkPrefix("// a comment\n").error);
  EXPECT_FALSE(checkPrefix(".version 8.0\n.tar").error);
  EXPECT_FALSE(checkPrefix(kHeader + ".visible .entry k(").error);
}

struct Unfixable {
  const char *body;
  const char *code;
  uint32_t line; ///< in the whole text
};

class PrefixUnfixable : public ::testing::TestWithParam<Unfixable> {};

TEST_P(PrefixUnfixable, ReportedAtItsLine) {
  const Unfixable &u = GetParam();
  std::string text = kernel(std::string(".reg .b32 %r<3>;\n.reg .f32 %f<3>;\n") + u.body + "\nmov.u32 %r1, 0");
  PrefixCheck check = checkPrefix(text);
  ASSERT_TRUE(check.error) << u.body;
  EXPECT_EQ(check.error->code, u.code) << check.error->message;
  EXPECT_EQ(check.error->line, u.line);
  // The cut goes back to the start of the bad statement's line.
  EXPECT_EQ(text.substr(check.validBytes, std::string(u.body).size()), u.body);
  // And the whole module, finished, says the same at the same place.
  std::vector<Diagnostic> whole = lintSource(text + ";\nret;\n}\n");
  bool found = false;
  for (const Diagnostic &d : whole) found = found || (d.code == u.code && d.line == u.line);
  EXPECT_TRUE(found) << u.body;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PrefixUnfixable,
    ::testing::Values(Unfixable{"fmad.f32 %f1, %f2, %f2, %f2;", "unknown-instruction", 8},
                      Unfixable{"add.f33 %f1, %f2, %f2;", "invalid-instruction-type", 8},
                      Unfixable{"popc.f32 %r1, %f2;", "invalid-instruction-type", 8},
                      Unfixable{"ld.global.rn.f32 %f1, [%r1];", "invalid-instruction-type", 8},
                      Unfixable{"add.s32 %r1, %r2;", "operand-count", 8},
                      Unfixable{"add.s32 %r1, %f2, 1;", "register-type-mismatch", 8},
                      Unfixable{"add.s32 %r1, %r2 %r2;", "syntax", 8}));

TEST(Prefix, FirstUnfixableWins) {
  PrefixCheck check = checkPrefix(kernel(".reg .b32 %r<3>;\nadd.s32 %r1, %r7, 1;\nfoo.bar %r1;\nbaz %r2;\n"));
  ASSERT_TRUE(check.error);
  EXPECT_EQ(check.error->code, "unknown-instruction");
  EXPECT_EQ(check.error->line, 8u);
}

/// The lint goldens (tests/golden/lint: modules with planted mistakes) cut
/// at every statement boundary: a prefix reports only what the whole module
/// reports, at the same place, and the whole module's first error that no
/// continuation could fix is reported by the cut after its statement.
TEST(Prefix, AgreesWithTheLintOnTheGoldens) {
  std::filesystem::path folder = std::filesystem::path(PTXFORGE_SOURCE_DIR) / "tests" / "golden" / "lint";
  size_t modules = 0, found = 0;
  for (const auto &file : std::filesystem::directory_iterator(folder)) {
    if (file.path().extension() != ".ptx") continue;
    std::ifstream in(file.path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LintOptions options;
    options.limits = DiagnosticLimits::unlimited();
    std::vector<Diagnostic> whole = lintSource(text, options);
    const Diagnostic *firstUnfixable = nullptr;
    for (const Diagnostic &d : whole)
      if (!firstUnfixable && d.severity == Severity::Error && !fixableByContinuation(d.code)) firstUnfixable = &d;
    ++modules;
    bool reported = false;
    for (size_t cut : statementBoundaries(text)) {
      PrefixCheck check = checkPrefix(std::string_view(text).substr(0, cut), options);
      if (!check.error) continue;
      bool inWhole = false;
      for (const Diagnostic &d : whole)
        inWhole = inWhole || (d.code == check.error->code && d.line == check.error->line);
      EXPECT_TRUE(inWhole) << file.path().filename() << " cut at " << cut << ": " << check.error->code << " line "
                           << check.error->line << ": " << check.error->message;
      if (firstUnfixable && check.error->code == firstUnfixable->code && check.error->line == firstUnfixable->line)
        reported = true;
    }
    // An error at the very end (a truncated module) only the whole module shows.
    if (firstUnfixable && firstUnfixable->code != "syntax") {
      EXPECT_TRUE(reported) << file.path().filename() << ": " << firstUnfixable->code << " at line "
                            << firstUnfixable->line << " never reported by a prefix";
      found += reported;
    }
  }
  EXPECT_GT(modules, 30u);
  EXPECT_GT(found, 20u);
}

} // namespace
} // namespace ptxforge::ptx
