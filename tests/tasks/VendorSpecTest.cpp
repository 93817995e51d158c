// task.toml's [vendor] table: a good gemm, the built-in tasks that declare one,
// and broken tables, each with its located error (file:line:column).
#include "tasks/TaskSpec.h"

#include <gtest/gtest.h>

using namespace ptxforge;
using namespace ptxforge::tasks;

namespace {

/// A row-major gemm with its cuBLAS equivalent; line numbers matter to the tests.
const char *kGemmToml = R"toml(name = "mm"
level = 3
description = "C = A * B, row-major"
kernel = "mm"
symbols = ["M", "N", "K"]
shapes = [{ M = 64, N = 48, K = 40 }, { M = 37, N = 29, K = 23 }]

[[params]]
name = "A"
type = "f32*"
role = "input"
count = "M * K"

[[params]]
name = "B"
type = "f32*"
role = "input"
count = "K * N"

[[params]]
name = "C"
type = "f32*"
role = "output"
count = "M * N"

[[params]]
name = "M"
type = "i32"
value = "M"

[launch]
block = ["256", "1", "1"]
grid = ["ceildiv(N, 128)", "ceildiv(M, 128)", "1"]
smem = "0"

[vendor]
library = "cublas"
op = "gemm"
a = "A"
b = "B"
c = "C"
m = "M"
n = "N"
k = "K"
)toml";

std::string replaced(std::string text, const std::string &from, const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "fixture lacks: " << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

Result<TaskSpec> parse(const std::string &toml) { return parseTask(toml, "task.toml", std::nullopt); }

std::string parseError(const std::string &toml) {
  Result<TaskSpec> task = parse(toml);
  EXPECT_FALSE(task.ok()) << "parsed a broken [vendor]";
  return task.ok() ? std::string() : task.error().message;
}

} // namespace

TEST(VendorSpec, AGemmLoads) {
  Result<TaskSpec> task = parse(kGemmToml);
  ASSERT_TRUE(task.ok()) << task.error().message;
  ASSERT_TRUE(task->vendor.has_value());
  const VendorSpec &vendor = *task->vendor;
  EXPECT_EQ(vendor.library, "cublas");
  EXPECT_EQ(vendor.op, VendorOp::Gemm);
  EXPECT_EQ(vendor.operands, (std::map<std::string, std::string>{{"a", "A"}, {"b", "B"}, {"c", "C"}}));
  ASSERT_EQ(vendor.sizes.size(), 3u);
  EXPECT_EQ(*evaluate(vendor.sizes.at("n"), task->shapes[1]), 29);
  EXPECT_EQ(vendorOperandNames(VendorOp::Gemv), (std::vector<std::string>{"a", "x", "y"}));
  EXPECT_EQ(vendorSizeNames(VendorOp::GemmBatched), (std::vector<std::string>{"m", "n", "k", "batch"}));
  EXPECT_STREQ(vendorOpName(VendorOp::GemmF16F32), "gemm_f16_f32");
}

TEST(VendorSpec, IsOptional) {
  std::string toml = kGemmToml;
  toml.erase(toml.find("\n[vendor]"));
  Result<TaskSpec> task = parse(toml + "\n");
  ASSERT_TRUE(task.ok()) << task.error().message;
  EXPECT_FALSE(task->vendor.has_value());
}

TEST(VendorSpec, TheBuiltinGemmTasksDeclareTheirCublasOps) {
  if (!std::filesystem::is_directory(builtinTasksDir())) GTEST_SKIP() << "no built-in suite at " << builtinTasksDir();
  Result<Suite> suite = loadSuite({builtinTasksDir()});
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  std::map<std::string, VendorOp> expected = {{"sgemm", VendorOp::Gemm},
                                              {"hgemm", VendorOp::GemmF16F32},
                                              {"batched_gemm", VendorOp::GemmBatched},
                                              {"gemv", VendorOp::Gemv},
                                              {"bf16_gemm", VendorOp::GemmBf16F32},
                                              {"fp8_gemm_e4m3", VendorOp::GemmE4M3F32}};
  for (const TaskSpec &task : suite->tasks) {
    auto want = expected.find(task.name);
    if (want == expected.end()) {
      EXPECT_FALSE(task.vendor.has_value()) << task.name;
      continue;
    }
    ASSERT_TRUE(task.vendor.has_value()) << task.name;
    EXPECT_EQ(task.vendor->op, want->second) << task.name;
    EXPECT_EQ(task.vendor->library, "cublas");
    expected.erase(want);
  }
  EXPECT_TRUE(expected.empty()) << expected.begin()->first << " is missing from the suite";
}

// Each broken [vendor] names the file, line and column of its mistake, and what is valid.
TEST(VendorSpec, UnknownLibrary) {
  EXPECT_EQ(parseError(replaced(kGemmToml, "library = \"cublas\"", "library = \"cublass\"")),
            "task.toml:37:11: [vendor]: unknown library 'cublass' (did you mean 'cublas'?) (valid: cublas)");
}

TEST(VendorSpec, UnknownOp) {
  EXPECT_EQ(parseError(replaced(kGemmToml, "op = \"gemm\"", "op = \"gemn\"")),
            "task.toml:38:6: [vendor]: unknown op 'gemn' (did you mean 'gemm'?) (valid: gemm, gemm_f16_f32, "
            "gemm_batched, gemv, gemm_bf16_f32, gemm_e4m3_f32)");
}

TEST(VendorSpec, UnknownKeyAndKeyOfAnotherOp) {
  EXPECT_EQ(parseError(replaced(kGemmToml, "a = \"A\"", "a = \"A\"\nx = \"B\"\nbatches = \"1\"")),
            "task.toml:40:1: [vendor]: key 'x' does not apply to op 'gemm' (op 'gemm' uses: a, b, c, m, n, k)\n"
            "task.toml:41:1: [vendor]: unknown key 'batches' (did you mean 'batch'?) (valid: library, op, a, b, c, x, "
            "y, m, n, k, batch)");
}

TEST(VendorSpec, OperandThatIsNoBuffer) {
  EXPECT_EQ(parseError(replaced(replaced(kGemmToml, "a = \"A\"", "a = \"AA\""), "b = \"B\"", "b = \"M\"")),
            "task.toml:39:5: [vendor]: a = 'AA' is not a parameter (did you mean 'A'?) (buffer parameters: A, B, C)\n"
            "task.toml:40:5: [vendor]: b = 'M' is a scalar; op 'gemm' needs a buffer for b (buffer parameters: A, B, "
            "C)");
}

TEST(VendorSpec, OperandTypesMustMatchTheOp) {
  EXPECT_EQ(parseError(replaced(kGemmToml, "op = \"gemm\"", "op = \"gemm_f16_f32\"")),
            "task.toml:39:5: [vendor]: a = 'A' is f32*, but op 'gemm_f16_f32' reads a as f16*\n"
            "task.toml:40:5: [vendor]: b = 'B' is f32*, but op 'gemm_f16_f32' reads b as f16*");
}

TEST(VendorSpec, OutputMustBeAnOutputOfItsOwn) {
  EXPECT_EQ(parseError(replaced(kGemmToml, "c = \"C\"", "c = \"A\"")),
            "task.toml:41:5: [vendor]: c = 'A' has role input, but op 'gemm' writes c: it must be an output or inout "
            "buffer\n"
            "task.toml:41:5: [vendor]: c = 'A' is also a; the output must be a buffer of its own");
  EXPECT_EQ(parseError(replaced(kGemmToml, "a = \"A\"", "a = \"C\"")),
            "task.toml:39:5: [vendor]: a = 'C' has role output, but op 'gemm' reads a: it must be an input or inout "
            "buffer\n"
            "task.toml:41:5: [vendor]: c = 'C' is also a; the output must be a buffer of its own");
}

TEST(VendorSpec, MissingSizeAndUnknownSymbol) {
  EXPECT_EQ(parseError(replaced(replaced(kGemmToml, "k = \"K\"\n", ""), "m = \"M\"", "m = \"Mx\"")),
            "task.toml:36:1: [vendor]: missing required key 'k'\n"
            "task.toml:42:6: [vendor]: m 'Mx': unknown symbol 'Mx' (did you mean 'M'?) (declared symbols: M, N, K)");
}

TEST(VendorSpec, SwappedSizesDisagreeWithTheBufferCounts) {
  // m and n exchanged: A (M x K) and B (K x N) no longer hold what gemm reads
  // on the non-square shape; C happens to (M * N = N * M).
  EXPECT_EQ(parseError(replaced(replaced(kGemmToml, "m = \"M\"", "m = \"N\""), "n = \"N\"", "n = \"M\"")),
            "task.toml:39:5: [vendor]: op 'gemm' reads m * k = 1920 elements of a = 'A', which holds 2560 (count "
            "'M * K') for shape 0 {K=40, M=64, N=48}; check the sizes and which parameter each operand names\n"
            "task.toml:40:5: [vendor]: op 'gemm' reads k * n = 2560 elements of b = 'B', which holds 1920 (count "
            "'K * N') for shape 0 {K=40, M=64, N=48}; check the sizes and which parameter each operand names");
}

TEST(VendorSpec, SizeOutOfRange) {
  EXPECT_EQ(parseError(replaced(kGemmToml, "m = \"M\"", "m = \"M - 64\"")),
            "task.toml:42:5: [vendor]: m = 'M - 64' is 0 for shape 0 {K=40, M=64, N=48} (the library takes sizes in "
            "[1, 2147483647])");
}

TEST(VendorSpec, MustBeATable) {
  std::string toml = kGemmToml;
  toml.erase(toml.find("\n[vendor]"));
  toml = replaced(toml, "symbols = ", "vendor = \"cublas\"\nsymbols = ");
  EXPECT_EQ(parseError(toml), "task.toml:5:10: [vendor] must be a table, found a string");
}

TEST(VendorSpec, GemvAndBatchedGemm) {
  // gemv: y (M) = A (M x K) x (K), over the same buffers renamed.
  std::string gemv = replaced(kGemmToml, "count = \"K * N\"", "count = \"K\"");
  gemv = replaced(gemv, "count = \"M * N\"", "count = \"M\"");
  gemv = replaced(gemv, "op = \"gemm\"\na = \"A\"\nb = \"B\"\nc = \"C\"\nm = \"M\"\nn = \"N\"\nk = \"K\"",
                  "op = \"gemv\"\na = \"A\"\nx = \"B\"\ny = \"C\"\nm = \"M\"\nk = \"K\"");
  Result<TaskSpec> task = parse(gemv);
  ASSERT_TRUE(task.ok()) << task.error().message;
  EXPECT_EQ(task->vendor->op, VendorOp::Gemv);
  EXPECT_EQ(task->vendor->operands.at("y"), "C");
  // A gemv given a gemm's b: the key does not apply.
  EXPECT_NE(parseError(replaced(gemv, "x = \"B\"", "b = \"B\"")).find("key 'b' does not apply to op 'gemv'"),
            std::string::npos);

  std::string batched =
      replaced(kGemmToml, "symbols = [\"M\", \"N\", \"K\"]", "symbols = [\"M\", \"N\", \"K\", \"batch\"]");
  batched = replaced(batched, "shapes = [{ M = 64, N = 48, K = 40 }, { M = 37, N = 29, K = 23 }]",
                     "shapes = [{ M = 64, N = 48, K = 40, batch = 3 }]");
  batched = replaced(batched, "count = \"M * K\"", "count = \"batch * M * K\"");
  batched = replaced(batched, "count = \"K * N\"", "count = \"batch * K * N\"");
  batched = replaced(batched, "count = \"M * N\"", "count = \"batch * M * N\"");
  batched = replaced(batched, "op = \"gemm\"", "op = \"gemm_batched\"");
  EXPECT_NE(parseError(batched).find("task.toml:36:1: [vendor]: missing required key 'batch'"), std::string::npos);
  task = parse(batched + "batch = \"batch\"\n");
  ASSERT_TRUE(task.ok()) << task.error().message;
  EXPECT_EQ(task->vendor->op, VendorOp::GemmBatched);
  EXPECT_EQ(*evaluate(task->vendor->sizes.at("batch"), task->shapes[0]), 3);
}
