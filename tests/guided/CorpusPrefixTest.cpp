// Prefix checking agrees with the whole-module parser and lint on the nvcc
// corpus (tests/corpus): every module cut at its statement boundaries is
// "valid so far" where the whole module lints clean, and a hallucinated
// opcode planted in a module is reported by the prefix cut after it exactly
// where the whole-module lint reports it, and not by the cut before it.
//
// Every boundary of every module would be quadratic (a debug module has
// thousands): by default each module is cut at 32 evenly spaced boundaries
// plus its last; PTXFORGE_PREFIX_ALL=1 cuts at every one.
#include "ptx/Lint.h"
#include "ptx/Prefix.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

namespace ptxforge::ptx {
namespace {

struct CorpusFile {
  std::string name; ///< config/kernel
  std::string path;
};

std::vector<CorpusFile> corpusFiles() {
  std::vector<CorpusFile> files;
  std::ifstream manifest(PTXFORGE_CORPUS_MANIFEST);
  for (std::string line; std::getline(manifest, line);) {
    std::vector<std::string> fields;
    std::stringstream row(line);
    for (std::string field; std::getline(row, field, '\t');) fields.push_back(field);
    if (fields.size() == 4) files.push_back({fields[0] + "/" + fields[1], fields[3]});
  }
  return files;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<size_t> sampled(const std::vector<size_t> &all) {
  const char *every = std::getenv("PTXFORGE_PREFIX_ALL");
  if ((every && std::string(every) == "1") || all.size() <= 33) return all;
  std::vector<size_t> out;
  for (size_t i = 0; i < 32; ++i) out.push_back(all[i * all.size() / 32]);
  out.push_back(all.back());
  return out;
}

bool sameFinding(const Diagnostic &a, const Diagnostic &b) {
  return a.code == b.code && a.line == b.line && a.column == b.column;
}

class CorpusPrefix : public ::testing::Test {
protected:
  void SetUp() override {
    files_ = corpusFiles();
    if (files_.empty()) GTEST_SKIP() << "no nvcc corpus (" << PTXFORGE_CORPUS_MANIFEST << "): nvcc not found at configure time";
  }
  std::vector<CorpusFile> files_;
};

TEST_F(CorpusPrefix, CutsOfCleanModulesAreValidSoFar) {
  LintOptions options;
  options.limits = DiagnosticLimits::unlimited();
  size_t cuts = 0;
  for (const CorpusFile &file : files_) {
    std::string text = readFile(file.path);
    ASSERT_FALSE(text.empty()) << file.path << " (build the corpus_ptx target)";
    std::vector<Diagnostic> whole = lintSource(text, options);
    for (size_t cut : sampled(statementBoundaries(text))) {
      ++cuts;
      PrefixCheck check = checkPrefix(std::string_view(text).substr(0, cut), options);
      if (!check.error) continue;
      bool inWhole = false;
      for (const Diagnostic &d : whole) inWhole = inWhole || sameFinding(d, *check.error);
      EXPECT_TRUE(inWhole) << file.name << " cut at byte " << cut << ": " << check.error->code << " at line "
                           << check.error->line << ": " << check.error->message;
    }
  }
  EXPECT_GT(cuts, files_.size());
}

TEST_F(CorpusPrefix, PlantedOpcodeIsFoundWhereTheLintFindsIt) {
  LintOptions options;
  options.limits = DiagnosticLimits::unlimited();
  std::regex instruction(R"(^(\s*)([a-z][a-z0-9]*)(\.[a-z0-9.:_]+\s))");
  size_t planted = 0;
  for (const CorpusFile &file : files_) {
    std::string text = readFile(file.path);
    std::vector<size_t> cuts = statementBoundaries(text);
    // The instruction after the middle boundary: its line becomes `frobnicate.xyz …`.
    size_t middle = cuts.empty() ? 0 : cuts[cuts.size() / 2];
    size_t lineStart = text.find('\n', middle);
    std::smatch match;
    std::string line;
    while (lineStart != std::string::npos) {
      size_t lineEnd = text.find('\n', lineStart + 1);
      line = text.substr(lineStart + 1, lineEnd - lineStart - 1);
      if (std::regex_search(line, match, instruction) && line.find(';') != std::string::npos) break;
      lineStart = lineEnd;
    }
    if (lineStart == std::string::npos) continue;
    std::string mutated = text.substr(0, lineStart + 1) + match[1].str() + "frobnicate" +
                          line.substr(match[1].length() + match[2].length()) + text.substr(lineStart + 1 + line.size());
    uint32_t badLine = static_cast<uint32_t>(std::count(text.begin(), text.begin() + lineStart + 1, '\n')) + 1;
    std::vector<Diagnostic> whole = lintSource(mutated, options);
    const Diagnostic *first = nullptr;
    for (const Diagnostic &d : whole)
      if (d.severity == Severity::Error && !first) first = &d;
    ASSERT_TRUE(first) << file.name;
    EXPECT_EQ(first->code, "unknown-instruction") << file.name;
    EXPECT_EQ(first->line, badLine) << file.name;

    std::vector<size_t> mutatedCuts = statementBoundaries(mutated);
    size_t after = 0, before = 0;
    size_t badOffset = lineStart + 1 + mutated.substr(lineStart + 1).find(';') + 1;
    for (size_t cut : mutatedCuts) {
      if (cut <= lineStart + 1) before = cut;
      if (cut >= badOffset) {
        after = cut;
        break;
      }
    }
    PrefixCheck beforeCheck = checkPrefix(std::string_view(mutated).substr(0, before), options);
    EXPECT_FALSE(beforeCheck.error) << file.name << ": " << beforeCheck.error->message;
    PrefixCheck afterCheck = checkPrefix(std::string_view(mutated).substr(0, after), options);
    ASSERT_TRUE(afterCheck.error) << file.name;
    EXPECT_TRUE(sameFinding(*afterCheck.error, *first)) << file.name << ": " << afterCheck.error->code << " at line "
                                                        << afterCheck.error->line;
    EXPECT_EQ(afterCheck.validBytes, lineStart + 1) << file.name;
    ++planted;
  }
  EXPECT_GT(planted, files_.size() / 2);
}

} // namespace
} // namespace ptxforge::ptx
