// task.toml's tensor-map parameters (type = "tensormap"): a good pair of maps,
// their numbers on a shape, the built-in TMA task, and broken tables, each with
// its located error (file:line:column).
#include "tasks/Inputs.h"
#include "tasks/TaskSpec.h"

#include <gtest/gtest.h>

using namespace ptxforge;
using namespace ptxforge::tasks;

namespace {

/// A transposition through two maps; line numbers matter to the tests.
const char *kMapToml = R"toml(name = "tt"
level = 1
description = "out = in transposed"
kernel = "tt"
symbols = ["M", "N"]
shapes = [{ M = 64, N = 96 }, { M = 36, N = 44 }]

[[params]]
name = "in"
type = "f32*"
role = "input"
count = "M * N"

[[params]]
name = "out"
type = "f32*"
role = "output"
count = "M * N"

[[params]]
name = "in_map"
type = "tensormap"
[params.tensor_map]
buffer = "in"
dims = ["N", "M"]
strides = ["4 * N"]
box = [32, 32]
swizzle = "128b"
l2_promotion = "128b"

[[params]]
name = "out_map"
type = "tensormap"
[params.tensor_map]
buffer = "out"
rank = 2
dims = ["M", "N"]
strides = ["4 * M"]
box = [32, 8]
element_strides = [1, 2]
oob_fill = "nan"

[launch]
block = ["32", "8", "1"]
grid = ["ceildiv(N, 32)", "ceildiv(M, 32)", "1"]
smem = "0"
)toml";

std::string replaced(std::string text, const std::string &from, const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// The located error message of a task that must not load.
std::string failure(const std::string &toml) {
  Result<TaskSpec> task = parseTask(toml, "task.toml", std::nullopt);
  EXPECT_FALSE(task) << "loaded: " << toml;
  return task ? std::string() : task.error().message;
}

TEST(TensorMapSpec, APairOfMapsLoads) {
  Result<TaskSpec> task = parseTask(kMapToml, "task.toml", std::nullopt);
  ASSERT_TRUE(task) << task.error().message;
  const ParamSpec &in = task->params[2];
  ASSERT_TRUE(in.tensorMap);
  EXPECT_FALSE(in.isPointer);
  EXPECT_EQ(in.role, ParamRole::Scalar);
  EXPECT_EQ(in.type, ElementType::F32); // the buffer's
  EXPECT_EQ(in.tensorMap->buffer, "in");
  EXPECT_EQ(in.tensorMap->bufferIndex, 0u);
  EXPECT_EQ(in.tensorMap->rank, 2u);
  EXPECT_EQ(in.tensorMap->swizzle, MapSwizzle::B128);
  EXPECT_EQ(in.tensorMap->l2Promotion, MapL2Promotion::B128);
  EXPECT_EQ(in.tensorMap->oobFill, MapOobFill::Zero);
  EXPECT_EQ(paramBytes(in), 128u);
  EXPECT_EQ(paramBytes(task->params[0]), 8u);
  const ParamSpec &out = task->params[3];
  EXPECT_EQ(out.tensorMap->bufferIndex, 1u);
  EXPECT_EQ(out.tensorMap->oobFill, MapOobFill::Nan);
  EXPECT_EQ(out.tensorMap->elementStrides, (std::vector<uint32_t>{1, 2}));
  EXPECT_NE(describeTensorMapParam(in).find("over `in`: f32, dims [N, M] (innermost first), strides [4 * N] bytes, "
                                            "box [32, 32], swizzle 128b"),
            std::string::npos)
      << describeTensorMapParam(in);
  // A map is no scalar the host can make.
  EXPECT_FALSE(scalarArgument(in, task->shapes[0]));
}

TEST(TensorMapSpec, ResolvesOnAShape) {
  Result<TaskSpec> task = parseTask(kMapToml, "task.toml", std::nullopt);
  ASSERT_TRUE(task) << task.error().message;
  Result<ResolvedTensorMap> map = resolveTensorMap(*task, task->params[2], {{"M", 36}, {"N", 44}});
  ASSERT_TRUE(map) << map.error().message;
  EXPECT_EQ(map->rank, 2u);
  EXPECT_EQ(map->dims[0], 44u);
  EXPECT_EQ(map->dims[1], 36u);
  EXPECT_EQ(map->strides[0], 176u);
  EXPECT_EQ(map->box[0], 32u);
  EXPECT_EQ(map->box[1], 32u);
  EXPECT_EQ(map->elementStrides[1], 1u);
  // A drawn shape whose rows are not a multiple of 16 bytes.
  Result<ResolvedTensorMap> ragged = resolveTensorMap(*task, task->params[2], {{"M", 36}, {"N", 45}});
  ASSERT_FALSE(ragged);
  EXPECT_NE(ragged.error().message.find("param 'in_map': tensor_map: strides[0] '4 * N' is 180 bytes"),
            std::string::npos)
      << ragged.error().message;
  EXPECT_FALSE(resolveTensorMap(*task, task->params[0], {{"M", 36}, {"N", 44}})); // not a map
}

TEST(TensorMapSpec, TheBuiltinTmaTaskLoads) {
  if (!std::filesystem::is_directory(builtinTasksDir())) GTEST_SKIP() << "no built-in suite at " << builtinTasksDir();
  Result<TaskSpec> task = loadTask(builtinTasksDir() / "L1" / "tma_transpose_2d");
  ASSERT_TRUE(task) << task.error().message;
  int maps = 0;
  for (const ParamSpec &param : task->params) maps += param.tensorMap.has_value();
  EXPECT_EQ(maps, 2);
}

TEST(TensorMapSpec, StridesThatAreNoMultipleOf16OnAShape) {
  std::string message = failure(replaced(kMapToml, "{ M = 36, N = 44 }", "{ M = 33, N = 47 }"));
  EXPECT_NE(message.find("task.toml:26:12: param 'in_map': tensor_map: strides[0] '4 * N' is 188 bytes; a tensor "
                         "map's strides are multiples of 16 below 2^40"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("for shape 1 {M=33, N=47}"), std::string::npos) << message;
}

TEST(TensorMapSpec, TheBufferMustBeAnEarlierPointer) {
  std::string message = failure(replaced(kMapToml, "buffer = \"in\"", "buffer = \"inn\""));
  EXPECT_NE(message.find("task.toml:24:10: param 'in_map': tensor_map: buffer 'inn' is not a pointer parameter "
                         "declared before this one (did you mean 'in'?)"),
            std::string::npos)
      << message;
}

TEST(TensorMapSpec, BoxRulesAndEnumerations) {
  // 64 x 4 bytes in a 128-byte swizzle span.
  std::string wide = failure(replaced(kMapToml, "box = [32, 32]", "box = [64, 32]"));
  EXPECT_NE(wide.find("task.toml:27:7: param 'in_map': tensor_map: the box's inner dimension is 256 bytes, more "
                      "than the 128-byte swizzle span"),
            std::string::npos)
      << wide;
  std::string odd = failure(replaced(kMapToml, "box = [32, 8]", "box = [3, 8]"));
  EXPECT_NE(odd.find("the box's inner dimension is 12 bytes; it must be a multiple of 16"), std::string::npos) << odd;
  std::string big = failure(replaced(kMapToml, "box = [32, 8]", "box = [32, 300]"));
  EXPECT_NE(big.find("box: each entry must be an integer in [1, 256]"), std::string::npos) << big;
  std::string swizzle = failure(replaced(kMapToml, "swizzle = \"128b\"", "swizzle = \"128\""));
  EXPECT_NE(swizzle.find("task.toml:28:11: param 'in_map': tensor_map: unknown swizzle '128' (did you mean '128b'?) "
                         "(valid: none, 32b, 64b, 128b)"),
            std::string::npos)
      << swizzle;
  std::string interleave = failure(replaced(kMapToml, "swizzle = \"128b\"", "interleave = \"16b\""));
  EXPECT_NE(interleave.find("unknown interleave '16b'"), std::string::npos) << interleave;
}

TEST(TensorMapSpec, CountsOfDimsStridesAndBox) {
  std::string rank = failure(replaced(kMapToml, "rank = 2", "rank = 3"));
  EXPECT_NE(rank.find("task.toml:36:8: param 'out_map': tensor_map: rank 3 but dims has 2 entries"), std::string::npos)
      << rank;
  std::string strides = failure(replaced(kMapToml, "strides = [\"4 * N\"]", "strides = [\"4 * N\", \"16\"]"));
  EXPECT_NE(strides.find("strides must have one entry per dimension after the first (1)"), std::string::npos)
      << strides;
  std::string box = failure(replaced(kMapToml, "box = [32, 32]", "box = [32]"));
  EXPECT_NE(box.find("box must have one entry per dimension (2)"), std::string::npos) << box;
  std::string symbol = failure(replaced(kMapToml, "dims = [\"N\", \"M\"]", "dims = [\"N\", \"K\"]"));
  EXPECT_NE(symbol.find("unknown symbol 'K'"), std::string::npos) << symbol;
}

TEST(TensorMapSpec, TheTensorMustLieInsideItsBuffer) {
  std::string message = failure(replaced(kMapToml, "dims = [\"N\", \"M\"]", "dims = [\"N\", \"M + 1\"]"));
  EXPECT_NE(message.find("task.toml:24:10: param 'in_map': tensor_map: the tensor reaches 24960 bytes into 'in', which holds 24576 "
                         "(count 'M * N'); check dims and strides for shape 0 {M=64, N=96}"),
            std::string::npos)
      << message;
}

TEST(TensorMapSpec, KeysThatDoNotApply) {
  std::string count = failure(replaced(kMapToml, "type = \"tensormap\"\n[params.tensor_map]\nbuffer = \"in\"",
                                       "type = \"tensormap\"\ncount = \"M\"\n[params.tensor_map]\nbuffer = \"in\""));
  EXPECT_NE(count.find("param 'in_map': 'count' does not apply to a tensor map"), std::string::npos) << count;
  std::string missing = failure(replaced(kMapToml, "type = \"tensormap\"\n[params.tensor_map]\nbuffer = \"in\"\n"
                                                   "dims = [\"N\", \"M\"]\nstrides = [\"4 * N\"]\nbox = [32, 32]\n"
                                                   "swizzle = \"128b\"\nl2_promotion = \"128b\"\n",
                                         "type = \"tensormap\"\n"));
  EXPECT_NE(missing.find("type 'tensormap' needs a [params.tensor_map] table"), std::string::npos) << missing;
  std::string nan = failure(replaced(kMapToml, "name = \"out\"\ntype = \"f32*\"", "name = \"out\"\ntype = \"u32*\""));
  EXPECT_NE(nan.find("oob_fill 'nan' needs a floating type, not u32"), std::string::npos) << nan;
}

} // namespace
