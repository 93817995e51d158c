// task.toml loading and validation: a good task, and broken ones each with its located error.
#include "tasks/TaskSpec.h"

#include "TaskTestSupport.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

using namespace ptxforge;
using namespace ptxforge::tasks;
using namespace ptxforge::tasks::fixtures;

namespace {

std::string replaced(std::string text, const std::string &from, const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "fixture lacks: " << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// Loads `toml` as <tmp>/broken/task.toml and returns the error text with the folder prefix removed.
std::string loadError(const std::string &toml, const std::string &reference = kSaxpyReference) {
  TempDir dir;
  std::filesystem::path folder = writeTask(dir.path(), "broken", toml, reference);
  Result<TaskSpec> task = loadTask(folder);
  EXPECT_FALSE(task.ok()) << "loaded a broken task";
  if (task.ok()) return "";
  std::string message = task.error().message;
  std::string prefix = folder.string() + "/";
  for (size_t at = message.find(prefix); at != std::string::npos; at = message.find(prefix))
    message.erase(at, prefix.size());
  return message;
}

} // namespace

TEST(TaskSpec, LoadsTheDocumentedSaxpy) {
  TempDir dir;
  std::filesystem::path folder = writeTask(dir.path(), "saxpy", kSaxpyToml);
  Result<TaskSpec> loaded = loadTask(folder);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const TaskSpec &task = *loaded;
  EXPECT_EQ(task.name, "saxpy");
  EXPECT_EQ(task.level, 1);
  EXPECT_EQ(task.kernel, "saxpy");
  EXPECT_EQ(task.tags, (std::vector<std::string>{"elementwise", "memory-bound"}));
  EXPECT_EQ(task.symbols, (std::vector<std::string>{"n"}));
  ASSERT_EQ(task.shapes.size(), 3u);
  EXPECT_EQ(task.shapes[1].at("n"), 1000003);
  EXPECT_EQ(task.smallShapes, (std::vector<size_t>{0, 2}));
  ASSERT_EQ(task.params.size(), 4u);
  EXPECT_EQ(task.params[0].name, "x");
  EXPECT_TRUE(task.params[0].isPointer);
  EXPECT_EQ(task.params[0].type, ElementType::F32);
  EXPECT_EQ(task.params[0].role, ParamRole::Input);
  EXPECT_EQ(toString(task.params[0].count), "n");
  EXPECT_TRUE(task.params[0].init.given);
  EXPECT_EQ(task.params[0].init.distribution, InitDistribution::Uniform);
  EXPECT_EQ(task.params[0].init.min, -8.0);
  EXPECT_FALSE(task.params[1].init.given); // default uniform [-4, 4)
  EXPECT_EQ(task.params[1].init.min, -4.0);
  EXPECT_EQ(task.params[1].role, ParamRole::InOut);
  EXPECT_EQ(task.params[2].role, ParamRole::Scalar);
  ASSERT_TRUE(task.params[2].floatValue.has_value());
  EXPECT_EQ(*task.params[2].floatValue, 2.5);
  EXPECT_EQ(task.params[3].type, ElementType::I32);
  EXPECT_EQ(toString(task.params[3].value), "n");
  EXPECT_TRUE(task.tolerance.atolGiven);
  EXPECT_EQ(task.tolerance.rtol, 1e-5);
  ASSERT_TRUE(task.cost.flops.has_value());
  EXPECT_EQ(*evaluate(*task.cost.bytes, task.shapes[2]), 12 * 33);
  EXPECT_EQ(toString(task.launch.grid[0]), "ceildiv(n, 256)");
  EXPECT_EQ(task.folder, folder);
  EXPECT_NE(task.referenceSource.find("extern \"C\""), std::string::npos);
}

// `hints` (how the reference does it) is optional and kept apart from the description.
TEST(TaskSpec, HintsAreOptionalAndSeparateFromTheDescription) {
  TempDir dir;
  Result<TaskSpec> without = loadTask(writeTask(dir.path(), "plain", kSaxpyToml));
  ASSERT_TRUE(without.ok()) << without.error().message;
  EXPECT_EQ(without->hints, "");
  std::string toml = replaced(kSaxpyToml, "kernel = \"saxpy\"\n",
                              "hints = \"One element per thread.\"\nkernel = \"saxpy\"\n");
  Result<TaskSpec> with = loadTask(writeTask(dir.path(), "hinted", toml));
  ASSERT_TRUE(with.ok()) << with.error().message;
  EXPECT_EQ(with->hints, "One element per thread.");
  EXPECT_EQ(with->description, without->description);
}

TEST(TaskSpec, HintsMustBeAString) {
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "kernel = \"saxpy\"\n", "hints = [\"tiles\"]\nkernel = \"saxpy\"\n")),
            "task.toml:4:9: 'hints' must be a string, found an array");
}

TEST(TaskSpec, DefaultsWhereTheTomlIsSilent) {
  std::string toml = replaced(kSaxpyToml, "small_shapes = [0, 2]\n", "\n");
  toml = replaced(toml, "[tolerance]\natol = 1e-5\nrtol = 1e-5\n", "");
  TempDir dir;
  Result<TaskSpec> task = loadTask(writeTask(dir.path(), "t", toml));
  ASSERT_TRUE(task.ok()) << task.error().message;
  EXPECT_EQ(task->smallShapes, (std::vector<size_t>{2})); // the smallest shape
  EXPECT_FALSE(task->tolerance.atolGiven);
  Tolerance half = toleranceFor(*task, ElementType::F16);
  EXPECT_EQ(half.atol, 1e-3);
  Tolerance integer = toleranceFor(*task, ElementType::I32);
  EXPECT_FALSE(integer.atolGiven);
  InitSpec u8 = defaultInit(ElementType::U8);
  EXPECT_EQ(u8.distribution, InitDistribution::Int);
  EXPECT_EQ(u8.max, 255.0); // int bounds are inclusive
}

TEST(TaskSpec, AcceptsIntegersAndFloatLiteralsWhereExpressionsGo) {
  std::string toml = replaced(kSaxpyToml, "value = \"2.5\"", "value = 2.5");
  toml = replaced(toml, "block = [\"256\", \"1\", \"1\"]", "block = [256, 1, 1]");
  TempDir dir;
  Result<TaskSpec> task = loadTask(writeTask(dir.path(), "t", toml));
  ASSERT_TRUE(task.ok()) << task.error().message;
  EXPECT_EQ(*task->params[2].floatValue, 2.5);
  EXPECT_EQ(task->launch.block[0].value, 256);
}

// Each broken task names the file, line and column of its mistake, and what is valid.
TEST(TaskSpec, UnknownTopLevelKey) {
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "tags = ", "tag = ")),
            "task.toml:5:1: unknown key 'tag' (did you mean 'tags'?) (valid: name, level, description, hints, kernel, "
            "tags, symbols, shapes, small_shapes, params, tolerance, cost, launch, vendor)");
}

// A key missing at the top level has no line to point at: the file alone,
// never an uninitialized line and column (it printed "task.toml:270324448:32596").
TEST(TaskSpec, MissingTopLevelKeyNamesTheFileWithoutALocation) {
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "kernel = \"saxpy\"\n", "")),
            "task.toml: missing required key 'kernel'");
}

TEST(TaskSpec, UnknownParamKey) {
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "count = \"n\"\ninit", "cuont = \"n\"\ninit")),
            "task.toml:14:1: param 'x': missing required key 'count' (the buffer's element count, e.g. \"n\")\n"
            "task.toml:18:1: param 'x': unknown key 'cuont' (did you mean 'count'?) (valid: name, type, role, count, "
            "value, init)");
}

TEST(TaskSpec, UnknownType) {
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "type = \"f32*\"\nrole = \"input\"", "type = \"f31*\"\nrole = \"input\"")),
            "task.toml:16:8: param 'x': unknown type 'f31*' (did you mean 'f32'?) (valid: f32 f64 f16 bf16 i8 u8 i32 u32 "
            "i64 u64 e4m3, with a trailing * for pointers)");
}

TEST(TaskSpec, UnknownRole) {
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "role = \"inout\"", "role = \"inoot\"")),
            "task.toml:24:8: param 'y': unknown role 'inoot' (did you mean 'inout'?) (valid: input, output, inout, scalar)");
}

TEST(TaskSpec, ShapeMissingASymbol) {
  std::string toml = replaced(kSaxpyToml, "symbols = [\"n\"]", "symbols = [\"n\", \"m\"]");
  toml = replaced(toml, "  { n = 1048576 },\n  { n = 1000003 },\n  { n = 33 },",
                  "  { n = 1048576, m = 1 },\n  { n = 1000003 },\n  { n = 33, m = 2 },");
  EXPECT_EQ(loadError(toml), "task.toml:9:3: shapes[1]: missing a value for symbol 'm' (every shape gives every symbol)");
}

TEST(TaskSpec, ShapeWithAnUndeclaredSymbol) {
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "{ n = 33 }", "{ n = 33, k = 4 }")),
            "task.toml:10:13: shapes[2]: 'k' is not a declared symbol (symbols: n)");
}

TEST(TaskSpec, ExpressionWithAnUnknownSymbol) {
  // The column points at the symbol inside the string.
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "bytes = \"12 * n\"", "bytes = \"12 * m\"")),
            "task.toml:45:15: [cost]: bytes '12 * m': unknown symbol 'm' (declared symbols: n)");
}

TEST(TaskSpec, ExpressionSyntaxError) {
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "\"ceildiv(n, 256)\"", "\"ceildiv(n 256)\"")),
            "task.toml:49:20: [launch]: grid[0] 'ceildiv(n 256)': expected ',' between the two arguments of ceildiv(a, b), "
            "found '256'");
}

TEST(TaskSpec, MissingReferenceCu) {
  EXPECT_EQ(loadError(kSaxpyToml, ""),
            "reference.cu: missing reference.cu (every task needs its trusted CUDA reference)");
}

TEST(TaskSpec, ReferenceWithoutExternCOrKernel) {
  std::string message = loadError(kSaxpyToml, "__global__ void other(float *x) {}\n");
  EXPECT_NE(message.find("reference.cu: no extern \"C\" declaration"), std::string::npos) << message;
  EXPECT_NE(message.find("reference.cu: kernel 'saxpy' (task.toml's kernel) does not appear in it"), std::string::npos) << message;
}

TEST(TaskSpec, PointerWithoutCountAndScalarWithoutValue) {
  std::string toml = replaced(kSaxpyToml, "role = \"inout\"\ncount = \"n\"\n", "role = \"inout\"\n");
  toml = replaced(toml, "role = \"scalar\"\nvalue = \"2.5\"\n", "role = \"scalar\"\n");
  EXPECT_EQ(loadError(toml),
            "task.toml:21:1: param 'y': missing required key 'count' (the buffer's element count, e.g. \"n\")\n"
            "task.toml:26:1: param 'a': missing required key 'value' (the scalar's value, e.g. \"n\" or \"2.5\")");
}

TEST(TaskSpec, NoOutput) {
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "role = \"inout\"", "role = \"input\"")),
            "task.toml:14:1: no output: at least one pointer parameter must have role 'output' or 'inout'");
}

TEST(TaskSpec, KernelNameNotAnIdentifier) {
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "kernel = \"saxpy\"", "kernel = \"sax-py\"")),
            "task.toml:4:10: kernel 'sax-py' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
}

TEST(TaskSpec, TomlSyntaxError) {
  std::string message = loadError(replaced(kSaxpyToml, "level = 1", "level = = 1"));
  EXPECT_EQ(message.substr(0, 34), "task.toml:2:9: TOML syntax error: ") << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(TaskSpec, ScalarRoleOnPointerAndInitOnOutput) {
  std::string toml = replaced(kSaxpyToml, "type = \"f32\"\nrole = \"scalar\"", "type = \"f32\"\nrole = \"input\"");
  EXPECT_EQ(loadError(toml), "task.toml:30:8: param 'a': role 'input' needs a pointer type (write 'f32*'), or use role 'scalar'");
  toml = replaced(kSaxpyToml, "role = \"inout\"\ncount = \"n\"", "role = \"output\"\ncount = \"n\"\ninit = { dist = \"iota\" }");
  EXPECT_EQ(loadError(toml), "task.toml:26:8: param 'y': 'init' is for input and inout buffers; outputs are pre-filled "
                             "with NaN by the checker");
}

TEST(TaskSpec, BadInit) {
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "dist = \"uniform\", min = -8.0, max = 8.0", "dist = \"normal\", min = -8.0")),
            "task.toml:19:27: param 'x': init: key 'min' does not apply to dist 'normal' (it uses: mean, stddev, trial_scales)");
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "dist = \"uniform\"", "dist = \"uniformm\"")),
            "task.toml:19:17: param 'x': init: unknown dist 'uniformm' (did you mean 'uniform'?) (valid: uniform, normal, "
            "int, const, iota, index-mod)");
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "min = -8.0, max = 8.0", "min = 8.0, max = -8.0")),
            "task.toml:19:8: param 'x': init: min (8) must be less than max (-8); the range is [min, max)");
  std::string bytes = replaced(kSaxpyToml, "type = \"f32*\"\nrole = \"input\"", "type = \"u8*\"\nrole = \"input\"");
  EXPECT_EQ(loadError(replaced(bytes, "dist = \"uniform\", min = -8.0, max = 8.0", "dist = \"int\", min = 0, max = 256")),
            "task.toml:19:8: param 'x': init: range [0, 256] does not fit type u8 [0, 255]");
}

TEST(TaskSpec, LaunchThatFailsOnAShape) {
  EXPECT_EQ(loadError(replaced(kSaxpyToml, "block = [\"256\", \"1\", \"1\"]", "block = [\"256\", \"8\", \"1\"]")),
            "task.toml:47:1: [launch] for shape 0 {n=1048576}: block (256,8,1) has 2048 threads (at most 1024 per block)");
}

TEST(TaskSpec, CountThatDividesByZero) {
  std::string message = loadError(replaced(kSaxpyToml, "count = \"n\"\ninit", "count = \"n / (n - 33)\"\ninit"));
  EXPECT_EQ(message, "task.toml:18:9: param 'x': count 'n / (n - 33)' for shape 2 {n=33}: column 1: division by zero in "
                     "n / (n - 33) (/ by n - 33 = 0)");
}

TEST(TaskSpec, SeveralErrorsAreAllReported) {
  std::string toml = replaced(kSaxpyToml, "level = 1", "level = 7");
  toml = replaced(toml, "name = \"saxpy\"", "name = \"Saxpy\"");
  std::string message = loadError(toml);
  EXPECT_EQ(message, "task.toml:1:8: name 'Saxpy' must match [a-z0-9_]+\n"
                     "task.toml:2:9: level must be 1, 2 or 3 (1 memory-bound, 2 reductions/row ops, 3 compute-bound)");
}

TEST(TaskSuite, GoodTasksLoadAndBrokenOnesAreListed) {
  TempDir dir;
  writeTask(dir.path() / "L1", "saxpy", kSaxpyToml);
  std::string other = replaced(kSaxpyToml, "name = \"saxpy\"", "name = \"saxpy2\"");
  other = replaced(other, "level = 1", "level = 2");
  writeTask(dir.path() / "L2", "saxpy2", other);
  writeTask(dir.path() / "L1", "broken", replaced(kSaxpyToml, "tags = ", "tagz = "));
  writeTask(dir.path() / "L3", "dup", kSaxpyToml); // same name as L1/saxpy
  writeFile(dir.path() / "README.md", "not a task");

  Result<Suite> suite = loadSuite({dir.path()});
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  ASSERT_EQ(suite->tasks.size(), 2u);
  EXPECT_EQ(suite->tasks[0].name, "saxpy");
  EXPECT_EQ(suite->tasks[1].name, "saxpy2");
  ASSERT_EQ(suite->errors.size(), 2u);
  EXPECT_EQ(suite->errors[0].folder, dir.path() / "L1" / "broken");
  EXPECT_NE(suite->errors[0].error.message.find("L1/broken/task.toml:5:1: unknown key 'tagz'"), std::string::npos)
      << suite->errors[0].error.message;
  EXPECT_EQ(suite->errors[1].folder, dir.path() / "L3" / "dup");
  EXPECT_NE(suite->errors[1].error.message.find("duplicate task name 'saxpy'"), std::string::npos);

  Result<Suite> missing = loadSuite({dir.path() / "nope"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("not a directory"), std::string::npos);
}

TEST(TaskSuite, SearchRootsPutExtraRootsFirstThenTheEnvironment) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "a");
  std::filesystem::create_directories(dir.path() / "b");
  std::string env = (dir.path() / "b").string() + ":" + (dir.path() / "a").string();
  ::setenv("PTXFORGE_TASKS_DIR", env.c_str(), 1);
  std::vector<std::filesystem::path> roots = taskSearchRoots({dir.path() / "a"});
  ::unsetenv("PTXFORGE_TASKS_DIR");
  ASSERT_GE(roots.size(), 2u);
  EXPECT_EQ(roots[0], dir.path() / "a");
  EXPECT_EQ(roots[1], dir.path() / "b"); // "a" again is dropped
  if (roots.size() == 3) {
    EXPECT_EQ(roots[2], builtinTasksDir());
  }
}

// The suite that ships with ptxforge loads without errors (skipped until it exists).
TEST(TaskSuite, BuiltinSuiteLoadsCleanly) {
  if (!std::filesystem::is_directory(builtinTasksDir())) GTEST_SKIP() << "no built-in suite at " << builtinTasksDir();
  Result<Suite> suite = loadSuite({builtinTasksDir()});
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  for (const TaskLoadError &error : suite->errors) ADD_FAILURE() << error.error.message;
}

// A built-in task's description is the contract only: what is computed, the
// layouts, sizes, guarantees and what the tolerance allows. How the reference
// computes it (blocks, threads, tiles, shared memory, vector widths, shuffles,
// prefetch, tensor-core instructions) belongs in `hints`, which zero-shot
// prompts leave out (docs/prompts.md).
TEST(TaskSuite, BuiltinDescriptionsStateTheContractAndHintsTheRecipe) {
  if (!std::filesystem::is_directory(builtinTasksDir())) GTEST_SKIP() << "no built-in suite at " << builtinTasksDir();
  Result<Suite> suite = loadSuite({builtinTasksDir()});
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  ASSERT_FALSE(suite->tasks.empty());
  const std::regex recipe(R"(\bthreads?\b|\bblocks?\b|\bwarps?\b|shuffle|shared memory|prefetch|\btiles?\b|float4|)"
                          R"(half2|register|\bmma\b|ldmatrix|atomic|grid|coalesc|unroll|\bbanks?\b|\bBK\b|per thread)",
                          std::regex::icase);
  for (const TaskSpec &task : suite->tasks) {
    EXPECT_FALSE(std::regex_search(task.description, recipe))
        << task.name << ": the description names an implementation detail; move it to hints: " << task.description;
    EXPECT_FALSE(task.hints.empty()) << task.name << ": no hints (say how the reference computes it)";
  }
}
