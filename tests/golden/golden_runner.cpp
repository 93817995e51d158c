// Golden test runner for the lint: lints a .ptx file, renders the diagnostics
// in the canonical text format and compares them with the .expected file
// beside it. It also checks every `// expect: <code>[, <code>]` comment: the
// named code must be reported on that line, and every error or warning must be
// on a line that expects it (so a regenerated golden file can neither lose a
// finding nor gain a cascade). `// expect-eof: <code>` expects a finding after
// the last line (a truncated module); `// expect-module: <code>` a finding
// without a line (the front end's own findings all have one now: a missing
// `.version` points at the module's first directive).
//
//   golden_runner FILE.ptx FILE.expected      compare (exit 1 on mismatch)
//   golden_runner --update FILE.ptx FILE.expected   rewrite the expected file
//   golden_runner --print FILE.ptx            print the diagnostics
#include "ptx/Lint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace ptxforge::ptx;

namespace {

bool readFile(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  out = buffer.str();
  return true;
}

std::vector<std::string> splitLines(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// A minimal line diff (longest common subsequence), enough to read a failure.
void printDiff(const std::vector<std::string> &expected, const std::vector<std::string> &actual) {
  size_t n = expected.size(), m = actual.size();
  std::vector<std::vector<size_t>> lcs(n + 1, std::vector<size_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = expected[i] == actual[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && expected[i] == actual[j]) {
      std::cout << "  " << expected[i] << "\n";
      ++i, ++j;
    } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
      std::cout << "+ " << actual[j++] << "\n";
    } else {
      std::cout << "- " << expected[i++] << "\n";
    }
  }
}

std::vector<std::string> parseCodes(const std::string &text) {
  std::vector<std::string> codes;
  std::string current;
  for (char c : text) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\r') {
      if (!current.empty()) codes.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) codes.push_back(current);
  return codes;
}

/// Checks the `// expect:` comments against the diagnostics; returns problems.
std::vector<std::string> checkExpectations(const std::string &source, const std::vector<Diagnostic> &diagnostics) {
  std::vector<std::string> lines = splitLines(source);
  std::map<uint32_t, std::vector<std::string>> expected; // line → codes
  std::vector<std::string> eofCodes;
  for (size_t i = 0; i < lines.size(); ++i) {
    size_t modulePos = lines[i].find("// expect-module:");
    if (modulePos != std::string::npos) {
      for (const std::string &c : parseCodes(lines[i].substr(modulePos + 17))) expected[0].push_back(c);
      continue;
    }
    size_t pos = lines[i].find("// expect-eof:");
    if (pos != std::string::npos) {
      for (const std::string &c : parseCodes(lines[i].substr(pos + 14))) eofCodes.push_back(c);
      continue;
    }
    pos = lines[i].find("// expect:");
    if (pos != std::string::npos) expected[static_cast<uint32_t>(i + 1)] = parseCodes(lines[i].substr(pos + 10));
  }
  uint32_t lastLine = static_cast<uint32_t>(lines.size());
  std::vector<std::string> problems;
  for (const auto &[line, codes] : expected)
    for (const std::string &code : codes) {
      if (line == 0 && code.empty()) continue;
      bool found = false;
      for (const Diagnostic &d : diagnostics) found = found || (d.line == line && d.code == code);
      if (!found)
        problems.push_back((line ? "line " + std::to_string(line) : std::string("module")) + ": expected `" + code +
                           "`, not reported");
    }
  for (const std::string &code : eofCodes) {
    bool found = false;
    for (const Diagnostic &d : diagnostics) found = found || (d.code == code && d.line >= lastLine);
    if (!found) problems.push_back("end of file: expected `" + code + "`, not reported");
  }
  for (const Diagnostic &d : diagnostics) {
    if (d.severity == Severity::Note) continue;
    auto it = expected.find(d.line);
    bool ok = it != expected.end() && std::find(it->second.begin(), it->second.end(), d.code) != it->second.end();
    if (!ok && d.line >= lastLine) ok = std::find(eofCodes.begin(), eofCodes.end(), d.code) != eofCodes.end();
    if (!ok)
      problems.push_back("line " + std::to_string(d.line) + ": unexpected `" + d.code + "`: " + d.message);
  }
  return problems;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool update = false, print = false;
  std::vector<std::string> files;
  for (const std::string &a : args) {
    if (a == "--update") update = true;
    else if (a == "--print") print = true;
    else files.push_back(a);
  }
  if (files.empty() || (!print && files.size() != 2)) {
    std::cerr << "usage: golden_runner [--update] FILE.ptx FILE.expected | --print FILE.ptx...\n";
    return 2;
  }
  if (print) {
    int status = 0;
    for (const std::string &file : files) {
      std::string source;
      if (!readFile(file, source)) {
        std::cerr << "cannot read " << file << "\n";
        return 2;
      }
      std::vector<Diagnostic> diagnostics = lintSource(source);
      std::cout << formatDiagnosticsText(diagnostics, std::filesystem::path(file).filename().string(), source);
      if (hasErrors(diagnostics)) status = 1;
    }
    return status;
  }

  std::string source;
  if (!readFile(files[0], source)) {
    std::cerr << "cannot read " << files[0] << "\n";
    return 2;
  }
  std::vector<Diagnostic> diagnostics = lintSource(source);
  std::string actual =
      formatDiagnosticsText(diagnostics, std::filesystem::path(files[0]).filename().string(), source);

  if (update) {
    std::ofstream out(files[1], std::ios::binary);
    out << actual;
    if (!out) {
      std::cerr << "cannot write " << files[1] << "\n";
      return 2;
    }
  }

  int status = 0;
  std::string expected;
  if (!update) {
    if (!readFile(files[1], expected)) {
      std::cerr << "cannot read " << files[1] << " (run scripts/update_golden.sh)\n";
      return 1;
    }
    if (expected != actual) {
      std::cout << "MISMATCH " << files[0] << " (- expected, + actual):\n";
      printDiff(splitLines(expected), splitLines(actual));
      status = 1;
    }
  }
  for (const std::string &problem : checkExpectations(source, diagnostics)) {
    std::cout << files[0] << ": " << problem << "\n";
    status = 1;
  }
  if (status == 0 && !update) std::cout << "OK " << files[0] << "\n";
  return status;
}
