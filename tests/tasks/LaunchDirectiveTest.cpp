// `// @ptxforge` launch directives: parsing, located diagnostics, fallback to the task's launch.
#include "tasks/LaunchDirective.h"

#include "TaskTestSupport.h"

#include <gtest/gtest.h>

using namespace ptxforge;
using namespace ptxforge::tasks;
using namespace ptxforge::tasks::fixtures;

namespace {

const std::vector<std::string> kSymbols = {"M", "N", "K"};

/// "line:column: message" for each diagnostic, for compact expectations.
std::vector<std::string> located(const LaunchDirectiveScan &scan) {
  std::vector<std::string> out;
  for (const ptx::Diagnostic &d : scan.diagnostics) {
    EXPECT_EQ(d.code, "launch-directive");
    EXPECT_EQ(d.severity, ptx::Severity::Error);
    EXPECT_FALSE(d.hint.empty());
    out.push_back(std::to_string(d.line) + ":" + std::to_string(d.column) + ": " + d.message);
  }
  return out;
}

TaskSpec saxpyTask() {
  Result<TaskSpec> task = parseTask(kSaxpyToml, "task.toml", std::nullopt);
  EXPECT_TRUE(task.ok()) << (task.ok() ? "" : task.error().message);
  return task.ok() ? *task : TaskSpec{};
}

} // namespace

TEST(LaunchDirective, ParsesAllKeys) {
  LaunchDirectiveScan scan = parseLaunchDirectives(
      ".version 8.0\n"
      "// @ptxforge block=(16,16,1) grid=(ceildiv(N, 64), ceildiv(M,64), 1) smem=4*64*K\n"
      ".visible .entry k() { ret; }\n",
      kSymbols);
  EXPECT_TRUE(scan.diagnostics.empty()) << located(scan)[0];
  EXPECT_EQ(scan.directiveCount, 1u);
  ASSERT_TRUE(scan.config.blockGiven && scan.config.gridGiven && scan.config.smemGiven);
  EXPECT_EQ(toString(scan.config.block[1]), "16");
  EXPECT_EQ(toString(scan.config.grid[0]), "ceildiv(N, 64)");
  EXPECT_EQ(toString(scan.config.grid[1]), "ceildiv(M, 64)");
  EXPECT_EQ(toString(scan.config.smem), "4 * 64 * K");
}

TEST(LaunchDirective, DirectivesMaySpreadOverLinesAndShortTuplesPadWithOne) {
  LaunchDirectiveScan scan = parseLaunchDirectives("//@ptxforge block=256\n"
                                                   "\t// @ptxforge   grid = (ceildiv(N,256))\n",
                                                   kSymbols);
  EXPECT_TRUE(scan.diagnostics.empty());
  EXPECT_EQ(scan.directiveCount, 2u);
  EXPECT_EQ(toString(scan.config.block[0]), "256");
  EXPECT_EQ(toString(scan.config.block[2]), "1");
  EXPECT_EQ(toString(scan.config.grid[0]), "ceildiv(N, 256)");
  EXPECT_EQ(toString(scan.config.grid[1]), "1");
  EXPECT_FALSE(scan.config.smemGiven);
}

TEST(LaunchDirective, IgnoresOtherCommentsStringsAndBlockComments) {
  LaunchDirectiveScan scan = parseLaunchDirectives(".file 1 \"a// @ptxforge bogus\"\n"
                                                   "/* // @ptxforge block=(1,1,1)\n"
                                                   "   still a comment */ // plain comment\n"
                                                   "// @ptxforgery is not the marker\n"
                                                   "// see @ptxforge docs\n",
                                                   kSymbols);
  EXPECT_TRUE(scan.diagnostics.empty()) << located(scan)[0];
  EXPECT_EQ(scan.directiveCount, 0u);
  EXPECT_FALSE(scan.config.blockGiven);
}

TEST(LaunchDirective, EachKindOfMistakeIsLocated) {
  // Columns are 1-based; each expectation points at the bad part of its line.
  LaunchDirectiveScan scan = parseLaunchDirectives("// @ptxforge blok=(1,1,1)\n"               // unknown key
                                                   "// @ptxforge grid=(1,2,3,4)\n"              // too many elements
                                                   "// @ptxforge smem=4*\n"                     // unparsable
                                                   "// @ptxforge block=(32, n, 1)\n"            // symbol not in the task
                                                   "// @ptxforge block=(32,,1)\n"               // empty element
                                                   "// @ptxforge grid=(ceildiv(N,64),1\n"       // unbalanced
                                                   "// @ptxforge 256\n"                         // not key=value
                                                   "// @ptxforge smem=0 smem=1\n"               // duplicate
                                                   "// @ptxforge\n",                            // empty
                                                   kSymbols);
  EXPECT_EQ(located(scan), (std::vector<std::string>{
                               "1:14: unknown key 'blok' (valid: block, grid, smem)",
                               "2:19: grid=(1,2,3,4) has 4 elements; expected at most 3 (x, y, z)",
                               "3:21: smem '4*': expected an operand (integer, symbol, ceildiv/min/max or '('), found the "
                               "end of the text",
                               "4:25: block.y: unknown symbol 'n' (the task's symbols: M, N, K)",
                               "5:24: block=(32,,1): empty element 2",
                               "6:19: unbalanced parentheses in grid=(ceildiv(N,64),1",
                               "7:14: expected key=value, found '256'",
                               "8:21: duplicate key 'smem' (already given)",
                               "9:4: empty @ptxforge directive",
                           }));
  EXPECT_TRUE(scan.config.smemGiven); // the first smem=0 stands
  EXPECT_FALSE(scan.config.blockGiven);
  EXPECT_FALSE(scan.config.gridGiven);
}

TEST(LaunchDirective, ResolveFallsBackToTheTaskLaunch) {
  TaskSpec task = saxpyTask();
  LaunchDirectiveScan scan = parseLaunchDirectives("// @ptxforge block=(128,1,1) grid=(ceildiv(n,128),1,1)\n", task.symbols);
  ASSERT_TRUE(scan.diagnostics.empty());
  Result<ResolvedLaunch> launch = resolveLaunch(scan.config, task, task.shapes[1]); // n = 1000003
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  EXPECT_EQ(launch->block, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_EQ(launch->grid, (std::array<uint32_t, 3>{7813, 1, 1}));
  EXPECT_EQ(launch->smem, 0u);

  Result<ResolvedLaunch> defaults = resolveLaunch(LaunchConfig{}, task, task.shapes[1]);
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->block, (std::array<uint32_t, 3>{256, 1, 1}));
  EXPECT_EQ(defaults->grid, (std::array<uint32_t, 3>{3907, 1, 1}));

  LaunchDirectiveScan smemOnly = parseLaunchDirectives("// @ptxforge smem=1024\n", task.symbols);
  Result<ResolvedLaunch> mixed = resolveLaunch(smemOnly.config, task, task.shapes[2]);
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->smem, 1024u);
  EXPECT_EQ(mixed->grid[0], 1u); // ceildiv(33, 256)
}

TEST(LaunchDirective, ResolveRejectsImpossibleLaunches) {
  TaskSpec task = saxpyTask();
  auto resolveError = [&](const std::string &directive, size_t shape) {
    LaunchDirectiveScan scan = parseLaunchDirectives(directive, task.symbols);
    EXPECT_TRUE(scan.diagnostics.empty()) << directive;
    Result<ResolvedLaunch> launch = resolveLaunch(scan.config, task, task.shapes[shape]);
    EXPECT_FALSE(launch.ok()) << directive;
    return launch.ok() ? std::string() : launch.error().message;
  };
  EXPECT_EQ(resolveError("// @ptxforge block=(64,32,1)", 0),
            "block (64,32,1) has 2048 threads (at most 1024 per block)");
  EXPECT_EQ(resolveError("// @ptxforge block=(0,1,1)", 0), "block.x = 0 is 0 for {n=1048576} (must be in 1..1024)");
  EXPECT_EQ(resolveError("// @ptxforge grid=(1,n,1)", 0), "grid.y = n is 1048576 for {n=1048576} (must be in 1..65535)");
  EXPECT_EQ(resolveError("// @ptxforge grid=(n-100,1,1)", 2), "grid.x = n - 100 is -67 for {n=33} (must be in 1..2147483647)");
  EXPECT_EQ(resolveError("// @ptxforge smem=228*1024", 0), "smem = 228 * 1024 is 233472 for {n=1048576} (must be in 0..232448)");
  EXPECT_EQ(resolveError("// @ptxforge block=(1,1,128)", 0), "block.z = 128 is 128 for {n=1048576} (must be in 1..64)");
  EXPECT_EQ(resolveError("// @ptxforge grid=(n/(n-33),1,1)", 2),
            "grid.x = n / (n - 33): column 1: division by zero in n / (n - 33) (/ by n - 33 = 0)");
}
