// reference.cu through NVRTC and nvJitLink, and the on-disk cache (label jit: needs the toolkit, not a GPU).
#include "support/InputReader.h"
#include "tasks/Reference.h"

#include "TaskTestSupport.h"

#include <gtest/gtest.h>

#include <fstream>

using namespace ptxforge;
using namespace ptxforge::tasks;
using namespace ptxforge::tasks::fixtures;

namespace {

TaskSpec saxpyTask() {
  Result<TaskSpec> task = parseTask(kSaxpyToml, "task.toml", std::string(kSaxpyReference));
  EXPECT_TRUE(task.ok()) << (task.ok() ? "" : task.error().message);
  return task.ok() ? *task : TaskSpec{};
}

} // namespace

TEST(Reference, CompilesThenHitsTheCache) {
  TempDir cache;
  ReferenceOptions options;
  options.cacheDir = cache.path();
  TaskSpec task = saxpyTask();

  Result<CompiledReference> first = compileReference(task, "sm_90", options);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_FALSE(first->fromCache);
  EXPECT_NE(first->ptx.find(".visible .entry saxpy("), std::string::npos);
  EXPECT_NE(first->ptx.find(".target sm_90"), std::string::npos);
  ASSERT_GE(first->cubin.size(), 4u);
  EXPECT_EQ(first->cubin[0], 0x7f); // ELF
  EXPECT_EQ(first->cubin[1], 'E');
  EXPECT_EQ(first->cacheKey.size(), 16u);
  EXPECT_EQ(first->nvrtcVersion.rfind("NVRTC ", 0), 0u);
  EXPECT_TRUE(std::filesystem::exists(cache.path() / "reference" / (first->cacheKey + ".bin")));

  Result<CompiledReference> second = compileReference(task, "sm_90", options);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_TRUE(second->fromCache);
  EXPECT_EQ(second->ptx, first->ptx);
  EXPECT_EQ(second->cubin, first->cubin);
  EXPECT_EQ(second->cacheKey, first->cacheKey);

  // A different architecture is a different entry.
  Result<CompiledReference> other = compileReference(task, "sm_80", options);
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_FALSE(other->fromCache);
  EXPECT_NE(other->cacheKey, first->cacheKey);
}

TEST(Reference, CorruptCacheEntryIsRebuilt) {
  TempDir cache;
  ReferenceOptions options;
  options.cacheDir = cache.path();
  TaskSpec task = saxpyTask();
  Result<CompiledReference> first = compileReference(task, "sm_90", options);
  ASSERT_TRUE(first.ok()) << first.error().message;
  std::filesystem::path entry = cache.path() / "reference" / (first->cacheKey + ".bin");

  // Flip one byte in the middle (checksum mismatch), then truncate (size mismatch).
  for (int damage = 0; damage < 2; ++damage) {
    std::string bytes;
    {
      std::ifstream in(entry, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    ASSERT_GT(bytes.size(), 100u);
    if (damage == 0) bytes[bytes.size() / 2] ^= 0x5a;
    else bytes.resize(bytes.size() / 3);
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << bytes;

    Result<CompiledReference> rebuilt = compileReference(task, "sm_90", options);
    ASSERT_TRUE(rebuilt.ok()) << rebuilt.error().message;
    EXPECT_FALSE(rebuilt->fromCache);
    EXPECT_EQ(rebuilt->ptx, first->ptx);
    Result<CompiledReference> again = compileReference(task, "sm_90", options);
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->fromCache); // the rebuilt entry replaced the corrupt one
  }
}

TEST(Reference, HalfHeadersAreAvailable) {
  TempDir cache;
  ReferenceOptions options;
  options.cacheDir = cache.path();
  Result<CompiledReference> compiled = compileReferenceSource(
      "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
      "extern \"C\" __global__ void halves(const __half *x, __nv_bfloat16 *y, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) y[i] = __float2bfloat16(__half2float(x[i]) * 2.0f);\n"
      "}\n",
      "halves", "sm_90", options);
  ASSERT_TRUE(compiled.ok()) << compiled.error().message;
  EXPECT_NE(compiled->ptx.find(".entry halves("), std::string::npos);
}

TEST(Reference, CompileErrorsCarryNvrtcsLog) {
  ReferenceOptions options;
  options.useCache = false;
  Result<CompiledReference> broken =
      compileReferenceSource("extern \"C\" __global__ void k(float *x) { x[0] = undefined_name; }\n", "k", "sm_90", options);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().kind, ErrorKind::Compile);
  EXPECT_NE(broken.error().message.find("undefined_name"), std::string::npos) << broken.error().message;

  Result<CompiledReference> mangled =
      compileReferenceSource("__global__ void k(float *x) { x[0] = 1.0f; }\n", "k", "sm_90", options);
  ASSERT_FALSE(mangled.ok());
  EXPECT_NE(mangled.error().message.find("no .entry 'k'"), std::string::npos) << mangled.error().message;

  Result<CompiledReference> badArch = compileReferenceSource("", "k", "compute_90", options);
  ASSERT_FALSE(badArch.ok());
  EXPECT_EQ(badArch.error().kind, ErrorKind::InvalidInput);
}

TEST(Reference, CacheDirectoryFollowsTheEnvironment) {
  ::setenv("PTXFORGE_CACHE_DIR", "/tmp/pf-cache-test", 1);
  EXPECT_EQ(cacheRoot(), std::filesystem::path("/tmp/pf-cache-test"));
  ::unsetenv("PTXFORGE_CACHE_DIR");
  const char *xdg = std::getenv("XDG_CACHE_HOME");
  std::string saved = xdg ? xdg : "";
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(cacheRoot(), std::filesystem::path("/tmp/xdg/ptxforge"));
  if (xdg) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else ::unsetenv("XDG_CACHE_HOME");
}

// Every reference of the built-in suite compiles for sm_90 (skipped until the suite exists).
TEST(Reference, BuiltinSuiteCompiles) {
  if (!std::filesystem::is_directory(builtinTasksDir())) GTEST_SKIP() << "no built-in suite at " << builtinTasksDir();
  Result<Suite> suite = loadSuite({builtinTasksDir()});
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  TempDir cache;
  ReferenceOptions options;
  options.cacheDir = cache.path();
  for (const TaskSpec &task : suite->tasks) {
    Result<CompiledReference> compiled = compileReference(task, "sm_90", options);
    EXPECT_TRUE(compiled.ok()) << task.name << ": " << (compiled.ok() ? "" : compiled.error().message);
  }
}
