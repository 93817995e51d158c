// TaskSpec: a task folder (task.toml + reference.cu, docs/tasks.md) loaded and
// validated, and the suite of tasks found under search roots.
#pragma once

#include "support/Result.h"
#include "tasks/Expression.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::tasks {

/// Element type of a parameter (the part of `type` before an optional '*').
/// E4M3 is OCP FP8 (1 sign, 4 exponent bits biased by 7, 3 mantissa bits; no
/// infinities, 0x7f/0xff NaN, largest finite 448): the inputs of fp8 tensor cores.
enum class ElementType { F32, F64, F16, BF16, I8, U8, I32, U32, I64, U64, E4M3 };

/// "f32", "bf16", ...
const char *elementTypeName(ElementType type);
/// Parses a type name without the pointer star; nullopt for unknown names.
std::optional<ElementType> parseElementType(std::string_view name);
/// "f32 f64 f16 bf16 i8 u8 i32 u32 i64 u64 e4m3", for error messages.
const char *validElementTypeNames();
/// Size in bytes of one element.
size_t elementSize(ElementType type);
bool isFloatingType(ElementType type);
bool isSignedIntegerType(ElementType type);

/// How a parameter is used by the kernel.
enum class ParamRole { Input, Output, InOut, Scalar };
const char *paramRoleName(ParamRole role);

/// How an input buffer is filled (docs/tasks.md "Init distributions").
enum class InitDistribution { Uniform, Normal, Int, Const, Iota, IndexMod };
const char *initDistributionName(InitDistribution distribution);

/// Parameters of the distribution; only the fields of `distribution` matter.
/// `uniform` draws reals from the half-open [min, max); `int` draws integers
/// from the closed [min, max] (so that `max = 255` reaches every u8 value).
/// `uniform` on an integer type is stored as `int` over [ceil(min), ceil(max) - 1].
struct InitSpec {
  InitDistribution distribution = InitDistribution::Uniform;
  double min = -4.0;
  double max = 4.0;
  double mean = 0.0;
  double stddev = 1.0;
  double value = 0.0;
  int64_t modulus = 1;
  /// Uniform and normal only: trial t draws from the range (or mean and
  /// stddev) scaled by trialScales[t % size], so that some trials reach
  /// values where a wrong constant (an eps) or precision shows. Empty: 1.
  std::vector<double> trialScales;
  bool given = false; ///< false: the type's default (no `init` in task.toml)
};

/// The default init of docs/tasks.md for a type: uniform [-4, 4) for floats,
/// int [-1000, 999] for signed and [0, 999] for unsigned integers, narrowed to
/// the type's range for 8-bit types ([-128, 127], [0, 255]).
InitSpec defaultInit(ElementType type);

/// A tensor map's swizzle, L2 promotion and out-of-bounds fill (docs/tasks.md
/// "Tensor maps"); the numbers are CUDA's (CUtensorMapSwizzle, ...).
enum class MapSwizzle : uint8_t { None = 0, B32, B64, B128 };
enum class MapL2Promotion : uint8_t { None = 0, B64, B128, B256 };
enum class MapOobFill : uint8_t { Zero = 0, Nan };

/// A tensor-map parameter (`type = "tensormap"`): a TMA tensor map, passed by
/// value (`.param .align 64 .b8 name[128]`), that the executor encodes over
/// the buffer of an earlier pointer parameter. Tile mode, no interleave.
struct TensorMapParam {
  std::string buffer;      ///< the pointer parameter it maps
  size_t bufferIndex = 0;  ///< its index in TaskSpec::params (before the map's)
  uint32_t rank = 1;       ///< 1..5
  std::vector<Expression> dims;    ///< elements per dimension, innermost first (rank of them)
  std::vector<Expression> strides; ///< bytes between consecutive indices of dimensions 1.. (rank - 1)
  std::vector<uint32_t> box;       ///< elements per box dimension, 1..256
  std::vector<uint32_t> elementStrides; ///< traversal steps, 1..8 (default all 1)
  MapSwizzle swizzle = MapSwizzle::None;
  MapL2Promotion l2Promotion = MapL2Promotion::None;
  MapOobFill oobFill = MapOobFill::Zero;
};

/// "none", "32b", "64b", "128b" (and the like for the other two).
const char *mapSwizzleName(MapSwizzle swizzle);
const char *mapL2PromotionName(MapL2Promotion promotion);
const char *mapOobFillName(MapOobFill fill);

/// One kernel parameter, in signature order.
struct ParamSpec {
  std::string name;
  ElementType type = ElementType::F32;
  bool isPointer = false;
  ParamRole role = ParamRole::Input;
  Expression count;  ///< element count (pointers only)
  Expression value;  ///< value (scalars only) when not a floating literal
  /// A floating scalar given as a literal such as 2.5 (the expression
  /// language is integer-only); when set it is the scalar's value.
  std::optional<double> floatValue;
  InitSpec init;     ///< inputs and inouts only
  /// A tensor map (not a pointer, role Scalar; `type` is its element type).
  std::optional<TensorMapParam> tensorMap;

  /// A buffer the kernel writes (Output or InOut), compared after the launch.
  bool isOutput() const { return isPointer && (role == ParamRole::Output || role == ParamRole::InOut); }
};

/// "a TMA tensor map over `in`: f32, dims [N, M] (innermost first), strides
/// [4 * N] bytes, box [32, 32], swizzle 128b, ..." for prompts and `task show`.
std::string describeTensorMapParam(const ParamSpec &param);

/// The parameter's size in the kernel's parameter list: 8 for a pointer, 128
/// for a tensor map, the element size for a scalar.
size_t paramBytes(const ParamSpec &param);



/// |got - want| <= atol + rtol * |want|. Integers compare exactly unless atolGiven.
struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-5;
  bool atolGiven = false;
  bool rtolGiven = false;
};

/// Per-type tolerance used where task.toml gives none: f64 1e-10, f32 1e-5,
/// f16 1e-3, bf16 1e-2 (both atol and rtol); integers exact.
Tolerance defaultTolerance(ElementType type);

/// Work per launch, for GFLOP/s and GB/s; absent formulas are unknown.
struct CostModel {
  std::optional<Expression> flops;
  std::optional<Expression> bytes;
};

/// The task's default launch (expressions over the symbols).
struct LaunchSpec {
  std::array<Expression, 3> block;
  std::array<Expression, 3> grid;
  Expression smem;
};

/// Values of the size symbols for one problem instance.
using Shape = std::map<std::string, int64_t>;

/// An operation a vendor library has (docs/tasks.md "[vendor]"). Every matrix
/// is row-major and dense, as the tasks store them.
enum class VendorOp {
  Gemm,        ///< c (m x n) = a (m x k) * b (k x n), f32
  GemmF16F32,  ///< the same with f16 a and b, f32 c, f32 accumulation
  GemmBatched, ///< `batch` f32 gemms, the matrices of each operand one after another
  Gemv,        ///< y (m) = a (m x k) * x (k), f32
  GemmBf16F32, ///< c (m x n) = a (m x k) * b^T, b n x k ("K-major"); bf16 a and b, f32 c
  GemmE4M3F32, ///< c (m x n) = a (m x k) * b^T, b n x k ("K-major"); e4m3 a and b, f32 c (cuBLASLt)
};

/// "gemm", "gemm_f16_f32", "gemm_batched", "gemv", "gemm_bf16_f32".
const char *vendorOpName(VendorOp op);

/// The task's operation in a vendor library: `ptxforge baseline` checks the
/// library against the reference and times it as a second baseline.
struct VendorSpec {
  std::string library = "cublas"; ///< the only one so far
  VendorOp op = VendorOp::Gemm;
  /// The op's operands, each the name of a pointer parameter: "a", "b", "c"
  /// for the gemm ops, "a", "x", "y" for gemv. The last is the output.
  std::map<std::string, std::string> operands;
  /// The op's sizes, expressions over the symbols: "m", "n", "k" for the gemm
  /// ops, plus "batch" for gemm_batched; "m", "k" for gemv.
  std::map<std::string, Expression> sizes;
};

/// The operand names of `op` in order, the output last: {"a", "b", "c"} or {"a", "x", "y"}.
std::vector<std::string> vendorOperandNames(VendorOp op);
/// The size names of `op`: {"m", "n", "k"}, {"m", "n", "k", "batch"} or {"m", "k"}.
std::vector<std::string> vendorSizeNames(VendorOp op);

/// A loaded, validated task.
struct TaskSpec {
  std::string name;
  int level = 1;
  /// What the kernel computes: the contract (the operation, buffer layouts and
  /// sizes, guarantees such as alignment, what the tolerance allows). Every
  /// prompt carries it.
  std::string description;
  /// How the reference does it (tiles, block shapes, vector widths, shared-memory
  /// layouts, ...): an implementation recipe, empty when the task has none. Only
  /// the prompt strategies that say so carry it (docs/prompts.md).
  std::string hints;
  std::string kernel;
  std::vector<std::string> tags;
  std::vector<std::string> symbols;
  std::vector<Shape> shapes;
  std::vector<size_t> smallShapes; ///< indices into shapes
  std::vector<ParamSpec> params;
  Tolerance tolerance;             ///< as given; see toleranceFor()
  CostModel cost;
  LaunchSpec launch;
  std::optional<VendorSpec> vendor; ///< absent: no vendor-library equivalent
  std::filesystem::path folder;
  std::string referenceSource;     ///< reference.cu text
};

/// The elements of every buffer of `task` at `shape`, summed (a count that
/// does not evaluate adds nothing): a launch's size for ordering shapes.
int64_t elementsOf(const TaskSpec &task, const Shape &shape);

/// A tensor map's numbers for one shape.
struct ResolvedTensorMap {
  ElementType type = ElementType::F32;
  uint32_t rank = 1;
  std::array<uint64_t, 5> dims{};
  std::array<uint64_t, 4> strides{};
  std::array<uint32_t, 5> box{};
  std::array<uint32_t, 5> elementStrides{1, 1, 1, 1, 1};
  MapSwizzle swizzle = MapSwizzle::None;
  MapL2Promotion l2Promotion = MapL2Promotion::None;
  MapOobFill oobFill = MapOobFill::Zero;
};

/// Evaluates a tensor-map parameter's dims and strides on `shape`; an Error
/// (InvalidInput, "param 'NAME': ...") when an expression fails or leaves the
/// ranges a map allows (the load-time checks, for a drawn shape).
Result<ResolvedTensorMap> resolveTensorMap(const TaskSpec &task, const ParamSpec &param, const Shape &shape);

/// The tolerance for an output of `type`: what task.toml gives, the rest from defaultTolerance(type).
Tolerance toleranceFor(const TaskSpec &task, ElementType type);

/// Looks a parameter up by name; nullptr when absent.
const ParamSpec *findParam(const TaskSpec &task, std::string_view name);

/// Renders a shape as "{m=3, n=5}" for messages.
std::string shapeToString(const Shape &shape);

/// "M=1000,N=1000,K=1000": the task's symbols in declared order, as
/// `--extra-shape` and the audit write a shape.
std::string compactShape(const TaskSpec &task, const Shape &shape);

/// Loads `folder`/task.toml and `folder`/reference.cu and validates them.
/// Errors are ErrorKind::InvalidInput (or Io for unreadable files); the message
/// holds one line per problem, each "<folder>/task.toml:LINE:COL: what is wrong (what is valid)".
Result<TaskSpec> loadTask(const std::filesystem::path &folder);

/// Parses task text directly (no reference.cu checks unless `referenceSource`
/// is given); `fileName` prefixes the located errors. Used by loadTask and tests.
Result<TaskSpec> parseTask(std::string_view tomlText, const std::string &fileName,
                           const std::optional<std::string> &referenceSource);

/// A task folder that failed to load.
struct TaskLoadError {
  std::filesystem::path folder;
  Error error;
};

/// Every task found under the search roots. One broken task does not hide the
/// others: it is reported in `errors` and the good tasks are still returned.
struct Suite {
  std::vector<TaskSpec> tasks;       ///< sorted by (level, name)
  std::vector<TaskLoadError> errors; ///< broken folders, duplicate names
};

/// Scans each root recursively for `*/task.toml` (a root that is itself a task
/// folder counts too). When two folders define the same task name, the one
/// from the earlier root (then the earlier path) wins and the other is an
/// error. A missing or unreadable root is an Error for the whole call.
Result<Suite> loadSuite(const std::vector<std::filesystem::path> &roots);

/// The built-in suite: <source dir>/tasks (compile definition PTXFORGE_SOURCE_DIR).
std::filesystem::path builtinTasksDir();

/// The roots to scan, in priority order: `extraRoots` (--tasks-dir), then the
/// ':'-separated entries of $PTXFORGE_TASKS_DIR, then the built-in suite when it exists.
std::vector<std::filesystem::path> taskSearchRoots(const std::vector<std::filesystem::path> &extraRoots = {});

} // namespace ptxforge::tasks
