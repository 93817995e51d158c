// The nvcc corpus test: every PTX file nvcc wrote for tests/corpus/kernels
// must parse without diagnostics, print and re-parse to an equal Module, lint
// without errors, and (original and printed) assemble with ptxas.
//
// The file list comes from the manifest that tests/corpus/CMakeLists.txt
// writes (PTXFORGE_CORPUS_MANIFEST); one test instance per PTX file.
#include "emu/EmuExecutor.h"
#include "ptx/Ast.h"
#include "ptx/Diagnostic.h"
#include "ptx/Lint.h"
#include "ptx/Parser.h"
#include "ptx/Printer.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace {

namespace fs = std::filesystem;
using namespace ptxforge;

/// One manifest line: a PTX file and how nvcc made it.
struct CorpusEntry {
  std::string config; ///< "o3-sm80", "debug-sm80", ...
  std::string kernel; ///< the .cu file's stem
  std::string target; ///< the -arch nvcc was given
  std::string path;   ///< the generated .ptx
};

/// How gtest shows a parameter in failure messages.
void PrintTo(const CorpusEntry &entry, std::ostream *out) {
  *out << entry.config << "/" << entry.kernel << " (" << entry.path << ")";
}

std::vector<CorpusEntry> readManifest() {
  std::vector<CorpusEntry> entries;
  std::ifstream in(PTXFORGE_CORPUS_MANIFEST);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    CorpusEntry entry;
    std::getline(fields, entry.config, '\t');
    std::getline(fields, entry.kernel, '\t');
    std::getline(fields, entry.target, '\t');
    std::getline(fields, entry.path);
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::string testName(const testing::TestParamInfo<CorpusEntry> &info) {
  std::string name = info.param.config + "__" + info.param.kernel;
  for (char &c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Where failing cases leave their printed PTX for inspection.
fs::path failureDir(const CorpusEntry &entry) {
  fs::path dir = fs::path(PTXFORGE_CORPUS_MANIFEST).parent_path() / "failures" / entry.config;
  fs::create_directories(dir);
  return dir;
}

std::string lineOf(std::string_view text, uint32_t line) {
  size_t start = 0;
  for (uint32_t i = 1; i < line && start != std::string_view::npos; ++i) {
    start = text.find('\n', start);
    if (start != std::string_view::npos) ++start;
  }
  if (start == std::string_view::npos || start >= text.size()) return "";
  size_t end = text.find('\n', start);
  return std::string(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
}

// ---------------------------------------------------------------------------
// Round-trip mismatch reporting: say *where* two modules differ, not just that
// they do, so that a printer/parser bug is one look away.

std::string describeStatement(const ptx::Statement &statement) {
  switch (statement.kind) {
  case ptx::Statement::Kind::Instruction: return "instruction `" + ptx::printInstruction(statement.instruction) + "`";
  case ptx::Statement::Kind::Label: return "label `" + statement.label.name + ":`";
  case ptx::Statement::Kind::Variable: return "variable `" + ptx::printVariable(statement.variable) + "`";
  case ptx::Statement::Kind::Directive:
    return "directive `." + statement.directive.name + " " + statement.directive.text + "`";
  case ptx::Statement::Kind::Block: return "block of " + std::to_string(statement.block.statements.size()) + " statements";
  }
  return "?";
}

uint32_t lineOfStatement(const ptx::Statement &statement) {
  switch (statement.kind) {
  case ptx::Statement::Kind::Instruction: return statement.instruction.loc.line;
  case ptx::Statement::Kind::Label: return statement.label.loc.line;
  case ptx::Statement::Kind::Variable: return statement.variable.loc.line;
  case ptx::Statement::Kind::Directive: return statement.directive.loc.line;
  case ptx::Statement::Kind::Block: return statement.block.loc.line;
  }
  return 0;
}

/// First difference between two statement lists, or empty when equal.
std::string diffStatements(const std::vector<ptx::Statement> &first, const std::vector<ptx::Statement> &second,
                           const std::string &where) {
  size_t count = std::min(first.size(), second.size());
  for (size_t i = 0; i < count; ++i) {
    if (first[i] == second[i]) continue;
    if (first[i].kind == ptx::Statement::Kind::Block && second[i].kind == ptx::Statement::Kind::Block)
      return diffStatements(first[i].block.statements, second[i].block.statements,
                            where + " block #" + std::to_string(i));
    return where + " statement #" + std::to_string(i) + " (original line " + std::to_string(lineOfStatement(first[i])) +
           "):\n  original: " + describeStatement(first[i]) + "\n  reparsed: " + describeStatement(second[i]);
  }
  if (first.size() != second.size())
    return where + ": " + std::to_string(first.size()) + " statements originally, " + std::to_string(second.size()) +
           " after printing";
  return "";
}

std::string diffModules(const ptx::Module &first, const ptx::Module &second) {
  if (first.version != second.version) return "the .version differs";
  if (first.targets != second.targets || first.hasTarget != second.hasTarget) return "the .target differs";
  if (first.addressSize != second.addressSize) return "the .address_size differs";
  size_t count = std::min(first.items.size(), second.items.size());
  for (size_t i = 0; i < count; ++i) {
    const ptx::TopLevel &a = first.items[i], &b = second.items[i];
    if (a == b) continue;
    std::string where = "top-level item #" + std::to_string(i);
    if (a.kind != b.kind) return where + ": kinds differ";
    switch (a.kind) {
    case ptx::TopLevel::Kind::Variable:
      return where + ":\n  original: " + ptx::printVariable(a.variable) + "\n  reparsed: " + ptx::printVariable(b.variable);
    case ptx::TopLevel::Kind::Directive:
      return where + ":\n  original: ." + a.directive.name + " " + a.directive.text + "\n  reparsed: ." +
             b.directive.name + " " + b.directive.text;
    case ptx::TopLevel::Kind::Function: {
      const ptx::Function &f = a.function, &g = b.function;
      where += " (function " + f.name + ")";
      if (f.isEntry != g.isEntry || f.linkage != g.linkage || f.name != g.name) return where + ": header differs";
      if (f.returnParams != g.returnParams) return where + ": return parameters differ";
      if (f.params != g.params) return where + ": parameters differ";
      if (f.tuning != g.tuning) return where + ": tuning directives differ";
      if (f.hasBody != g.hasBody) return where + ": body presence differs";
      std::string inBody = diffStatements(f.body, g.body, where);
      return inBody.empty() ? where + ": differs (no field found)" : inBody;
    }
    }
  }
  return std::to_string(first.items.size()) + " top-level items originally, " + std::to_string(second.items.size()) +
         " after printing";
}

// ---------------------------------------------------------------------------
// ptxas, run without a shell.

struct ProcessResult {
  int exitCode = -1;
  std::string output; ///< stdout and stderr together
};

ProcessResult runProcess(const std::vector<std::string> &argv) {
  ProcessResult result;
  char logTemplate[] = "/tmp/ptxforge-corpus-log-XXXXXX";
  int logFd = mkstemp(logTemplate);
  if (logFd < 0) {
    result.output = std::string("mkstemp failed: ") + std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, logFd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, logFd, STDERR_FILENO);
  std::vector<char *> args;
  for (const std::string &arg : argv) args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int spawnError = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(logFd);
  if (spawnError != 0) {
    result.output = "posix_spawn " + argv[0] + " failed: " + std::strerror(spawnError);
  } else {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.output = readFile(logTemplate);
  }
  unlink(logTemplate);
  return result;
}

/// The first name after `.target` in the text (for the original file, so the
/// ptxas check does not depend on the parser under test).
std::string firstTargetInText(const std::string &text) {
  size_t at = text.find("\n.target");
  if (at == std::string::npos) return "";
  at += std::strlen("\n.target");
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
  size_t end = at;
  while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
  return text.substr(at, end - at);
}

/// Separately compiled modules (-rdc=true) reference functions and variables
/// of other translation units; ptxas needs -c (relocatable output) for them.
/// (`.extern .shared` is dynamic shared memory, resolved at launch: no -c.)
bool hasExternReferences(const std::string &text) {
  for (const char *prefix : {"\n.extern .func", "\n.extern .global", "\n.extern .const"})
    if (text.find(prefix) != std::string::npos) return true;
  return false;
}

ProcessResult assemble(const std::string &ptxPath, const std::string &target, bool relocatable) {
  std::vector<std::string> argv = {PTXFORGE_PTXAS, "-arch=" + target};
  if (relocatable) argv.push_back("-c");
  argv.insert(argv.end(), {"-o", "/dev/null", ptxPath});
  return runProcess(argv);
}

// ---------------------------------------------------------------------------

class CorpusFrontEnd : public testing::TestWithParam<CorpusEntry> {};
class CorpusPtxas : public testing::TestWithParam<CorpusEntry> {};

TEST_P(CorpusFrontEnd, ParsesWithoutDiagnostics) {
  const CorpusEntry &entry = GetParam();
  std::string source = readFile(entry.path);
  ASSERT_FALSE(source.empty()) << entry.path << " is missing or empty (build the corpus_ptx target)";
  ptx::ParseResult parsed = ptx::parse(source);
  EXPECT_TRUE(parsed.diagnostics.empty()) << ptx::formatDiagnosticsText(parsed.diagnostics, entry.path, source);
  EXPECT_FALSE(parsed.module.items.empty()) << entry.path << ": parsed to an empty module";
}

TEST_P(CorpusFrontEnd, RoundTripsThroughPrinter) {
  const CorpusEntry &entry = GetParam();
  std::string source = readFile(entry.path);
  ASSERT_FALSE(source.empty()) << entry.path << " is missing or empty (build the corpus_ptx target)";
  ptx::ParseResult first = ptx::parse(source);
  std::string printed = ptx::print(first.module);
  ptx::ParseResult second = ptx::parse(printed);
  fs::path printedPath = failureDir(entry) / (entry.kernel + ".printed.ptx");
  bool ok = second.diagnostics.empty() && first.module == second.module;
  if (!ok) std::ofstream(printedPath) << printed;
  EXPECT_TRUE(second.diagnostics.empty()) << "printed text (kept in " << printedPath.string() << ") does not parse:\n"
                                          << ptx::formatDiagnosticsText(second.diagnostics, printedPath.string(), printed);
  if (second.diagnostics.empty()) {
    EXPECT_TRUE(first.module == second.module)
        << entry.path << ": parse(print(m)) != m; printed text kept in " << printedPath.string() << "\n"
        << diffModules(first.module, second.module);
  }
}

TEST_P(CorpusFrontEnd, LintHasNoErrors) {
  const CorpusEntry &entry = GetParam();
  std::string source = readFile(entry.path);
  ASSERT_FALSE(source.empty()) << entry.path << " is missing or empty (build the corpus_ptx target)";
  std::vector<ptx::Diagnostic> diagnostics = ptx::lintSource(source);
  if (ptx::hasErrors(diagnostics)) {
    // All diagnostics (warnings too), then each error's source line again in
    // case the formatter's quoting is what is broken.
    std::string report = ptx::formatDiagnosticsText(diagnostics, entry.path, source);
    for (const ptx::Diagnostic &d : diagnostics)
      if (d.severity == ptx::Severity::Error)
        report += entry.path + ":" + std::to_string(d.line) + ": [" + d.code + "] | " + lineOf(source, d.line) + "\n";
    ADD_FAILURE() << "lint errors in " << entry.path << ":\n" << report;
  }
}

// The emulator on real nvcc output: every module loads, or is refused as
// emu-unsupported (textures, wmma, mbarrier, printf, function-pointer
// tables...). Anything else (an "invalid" module, an internal error) is a
// decoder bug.
TEST_P(CorpusFrontEnd, EmulatorLoadsOrNamesWhatItLacks) {
  const CorpusEntry &entry = GetParam();
  std::string source = readFile(entry.path);
  ASSERT_FALSE(source.empty()) << entry.path << " is missing or empty (build the corpus_ptx target)";
  std::unique_ptr<exec::Executor> executor = emu::createEmuExecutor();
  Result<exec::ModuleHandle> module =
      executor->loadModule(std::vector<uint8_t>(source.begin(), source.end()), exec::ModuleFormat::Ptx);
  if (!module) {
    EXPECT_EQ(exec::execErrorKindOf(module.error()), exec::ExecErrorKind::EmuUnsupported)
        << entry.path << ": " << render(module.error());
  }
}

TEST_P(CorpusPtxas, OriginalAssembles) {
  const CorpusEntry &entry = GetParam();
  std::string source = readFile(entry.path);
  ASSERT_FALSE(source.empty()) << entry.path << " is missing or empty (build the corpus_ptx target)";
  std::string target = firstTargetInText(source);
  ASSERT_FALSE(target.empty()) << entry.path << ": no .target line";
  ProcessResult result = assemble(entry.path, target, hasExternReferences(source));
  EXPECT_EQ(result.exitCode, 0) << "ptxas -arch=" << target << " " << entry.path << ":\n" << result.output;
}

TEST_P(CorpusPtxas, PrintedAssembles) {
  const CorpusEntry &entry = GetParam();
  std::string source = readFile(entry.path);
  ASSERT_FALSE(source.empty()) << entry.path << " is missing or empty (build the corpus_ptx target)";
  ptx::ParseResult parsed = ptx::parse(source);
  ASSERT_FALSE(parsed.module.targets.empty()) << entry.path << ": the parsed module has no .target";
  std::string printed = ptx::print(parsed.module);

  char pathTemplate[] = "/tmp/ptxforge-corpus-XXXXXX.ptx";
  int fd = mkstemps(pathTemplate, 4);
  ASSERT_GE(fd, 0) << "mkstemps: " << std::strerror(errno);
  bool written = write(fd, printed.data(), printed.size()) == static_cast<ssize_t>(printed.size());
  close(fd);
  ASSERT_TRUE(written) << "could not write " << pathTemplate;

  const std::string &target = parsed.module.targets.front();
  ProcessResult result = assemble(pathTemplate, target, hasExternReferences(printed));
  if (result.exitCode != 0) {
    fs::path kept = failureDir(entry) / (entry.kernel + ".printed.ptx");
    fs::copy_file(pathTemplate, kept, fs::copy_options::overwrite_existing);
    ADD_FAILURE() << "ptxas -arch=" << target << " on the printed " << entry.path << " (kept in " << kept.string()
                  << ") exited " << result.exitCode << ":\n"
                  << result.output;
  }
  unlink(pathTemplate);
}

INSTANTIATE_TEST_SUITE_P(Nvcc, CorpusFrontEnd, testing::ValuesIn(readManifest()), testName);
INSTANTIATE_TEST_SUITE_P(Nvcc, CorpusPtxas, testing::ValuesIn(readManifest()), testName);

} // namespace
