// Every diagnostic code the PTX front end documents, walked one by one: each
// has a module here that produces it, and every diagnostic of that module has
// a line and a column inside the text (the Diagnostic contract; a whole-module
// finding points at the module's first token). The list of codes is read from
// docs/diagnostics.md's table (plus the front end's codes in docs/limits.md), so that a
// code added to the documentation without a case here fails this test.
#include "ptx/Lint.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace ptxforge::ptx;

namespace {

std::string kernel(const std::string &body, const std::string &target = "sm_90", const std::string &version = "8.5") {
  return ".version " + version + "\n.target " + target +
         "\n.address_size 64\n\n"
         ".visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .u32 k_param_1\n)\n{\n"
         "\t.reg .pred \t%p<4>;\n\t.reg .f32 \t%f<8>;\n\t.reg .b32 \t%r<8>;\n\t.reg .b64 \t%rd<8>;\n\n" +
         body + "\n\tret;\n}\n";
}

std::string repeat(const std::string &text, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += text;
  return out;
}

/// One module per code. `line` is where the code's first diagnostic belongs
/// and `column` the token it points at (0: any column on that line).
struct CodeCase {
  std::string code;
  std::string source;
  uint32_t line = 0;
  uint32_t column = 0;
};

/// The kernel() body starts on line 15.
constexpr uint32_t kBody = 15;

std::vector<CodeCase> codeCases() {
  return {
      {"syntax", kernel("\tadd.s32 %r1 %r2, %r3;"), kBody, 14},
      {"missing-directive", "\n.visible .entry k()\n{\n\tret;\n}\n", 2, 1},
      {"invalid-directive", ".version 9.9\n.target sm_90\n", 1, 0},
      {"legacy-ptx", ".version 1.4\n.target sm_10\n.entry k()\n{\nexit;\n}\n", 1, 0},
      {"undeclared-register", kernel("\tmov.u32 %q1, 1;"), kBody, 10},
      {"register-type-mismatch", kernel("\tadd.f32 %f1, %rd1, %f2;"), kBody, 15},
      {"immediate-type-mismatch", kernel("\tadd.f32 %f1, %f2, 1;"), kBody, 20},
      {"special-register-operand", kernel("\tadd.u32 %r1, %tid.x, 1;"), kBody, 15},
      {"unknown-instruction", kernel("\tfrobnicate.b32 %r1, %r2;"), kBody, 2},
      {"invalid-instruction-type", kernel("\tpopc.f32 %r1, %f1;"), kBody, 0},
      {"invalid-register-type", kernel("\t.reg .bf16 %h<2>;"), kBody, 0},
      {"invalid-declaration", kernel("\t.reg .b32 %z = 0;"), kBody, 0},
      {"operand-count", kernel("\tadd.s32 %r1, %r2;"), kBody, 0},
      {"invalid-immediate", kernel("\tsetmaxnreg.inc.sync.aligned.u32 23;", "sm_90a"), kBody, 0},
      {"undefined-label", kernel("\tbra L_nowhere;"), kBody, 6},
      {"undeclared-symbol", kernel("\tld.param.u32 %r1, [nothing];"), kBody, 0},
      {"duplicate-declaration", kernel("\t.reg .b32 %r<8>;"), kBody, 0},
      {"duplicate-label", kernel("L1:\n\tbra L1;\nL1:\n"), kBody + 2, 1},
      {"arch-feature", kernel("\twgmma.fence.sync.aligned;", "sm_80", "8.0"), kBody, 0},
      {"generic-address", kernel("\tld.param.u64 %rd1, [k_param_0];\n\tld.global.f32 %f1, [%rd1];"), kBody + 1, 0},
      {"nesting-too-deep", kernel(repeat("{", 300) + repeat("}", 300)), kBody, 0},
      {kDiagnosticsSuppressedCode, kernel(repeat("\tfrobnicate.b32 %r1, %r2;\n", 20)), 0, 0},
  };
}

/// The codes of a docs page's first table whose rows start "| `code` |".
std::set<std::string> documentedCodes(const std::string &page, bool firstTableOnly) {
  std::ifstream in(std::string(PTXFORGE_DOCS_DIR) + "/" + page);
  EXPECT_TRUE(in) << "cannot read docs/" << page;
  std::set<std::string> codes;
  bool inTable = false;
  for (std::string line; std::getline(in, line);) {
    const bool row = line.rfind("|", 0) == 0;
    if (inTable && !row && firstTableOnly) break;
    inTable = row;
    for (size_t at = line.find("[", 0); !firstTableOnly && at != std::string::npos; at = line.find("[", at + 1)) {
      // docs/limits.md names codes as `error[code]` / `note[code]`.
      size_t end = line.find(']', at);
      std::string name = end == std::string::npos ? "" : line.substr(at + 1, end - at - 1);
      if (!name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz-") == std::string::npos &&
          name.find('-') != std::string::npos)
        codes.insert(name);
    }
    if (firstTableOnly && row && line.rfind("| `", 0) == 0) {
      size_t end = line.find('`', 3);
      if (end != std::string::npos) codes.insert(line.substr(3, end - 3));
    }
  }
  return codes;
}

/// The 1-based line `number` of `source`, without its newline.
std::string lineOf(const std::string &source, uint32_t number) {
  std::istringstream in(source);
  std::string line;
  for (uint32_t i = 0; i < number && std::getline(in, line); ++i) {
  }
  return line;
}

TEST(DiagnosticCodes, EveryDocumentedCodeHasACase) {
  std::set<std::string> documented = documentedCodes("diagnostics.md", true);
  // limits.md also names the compiler's codes (compile-*, compiler-crashed): tests/toolchain walks those.
  for (const std::string &code : documentedCodes("limits.md", false))
    if (code.rfind("compile", 0) != 0) documented.insert(code);
  EXPECT_GE(documented.size(), 20u) << "the docs' tables were not found";
  std::set<std::string> covered;
  for (const CodeCase &c : codeCases()) covered.insert(c.code);
  for (const std::string &code : documented) EXPECT_TRUE(covered.count(code)) << "no case for documented code " << code;
  for (const std::string &code : covered) EXPECT_TRUE(documented.count(code)) << "code " << code << " is not documented";
}

TEST(DiagnosticCodes, EveryCodeIsProducedWithALineAndAColumnInsideTheText) {
  for (const CodeCase &c : codeCases()) {
    SCOPED_TRACE(c.code);
    std::vector<Diagnostic> diagnostics = lintSource(c.source);
    const Diagnostic *found = nullptr;
    for (const Diagnostic &d : diagnostics)
      if (d.code == c.code && !found) found = &d;
    ASSERT_NE(found, nullptr) << formatDiagnosticsText(diagnostics, "case.ptx", c.source);
    if (c.line != 0) {
      EXPECT_EQ(found->line, c.line) << found->message;
    }
    if (c.column != 0) {
      EXPECT_EQ(found->column, c.column) << found->message;
    }
    for (const Diagnostic &d : diagnostics) {
      EXPECT_GT(d.line, 0u) << "[" << d.code << "] " << d.message;
      EXPECT_GT(d.column, 0u) << "[" << d.code << "] " << d.message;
      // The column names a character of the line (or the end of the last line).
      const std::string text = lineOf(c.source, d.line);
      EXPECT_LE(d.column, text.size() + 1) << "[" << d.code << "] " << d.message << " at " << d.line << ":" << d.column;
    }
  }
}

} // namespace
