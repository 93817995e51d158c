// TaskSpec: task.toml parsing (toml++) and validation with located errors,
// reference.cu checks, and the suite scan.
#include "tasks/TaskSpec.h"

#include "support/InputReader.h"
#include "support/Text.h"
#include "tasks/LaunchDirective.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#ifndef PTXFORGE_SOURCE_DIR
#define PTXFORGE_SOURCE_DIR "."
#endif

namespace ptxforge::tasks {

// ---------------------------------------------------------------------------
// Enumerations

namespace {
struct TypeInfo {
  ElementType type;
  const char *name;
  size_t size;
};
constexpr TypeInfo kTypes[] = {
    {ElementType::F32, "f32", 4}, {ElementType::F64, "f64", 8}, {ElementType::F16, "f16", 2},
    {ElementType::BF16, "bf16", 2}, {ElementType::I8, "i8", 1},  {ElementType::U8, "u8", 1},
    {ElementType::I32, "i32", 4}, {ElementType::U32, "u32", 4}, {ElementType::I64, "i64", 8},
    {ElementType::U64, "u64", 8}, {ElementType::E4M3, "e4m3", 1},
};
} // namespace

const char *elementTypeName(ElementType type) {
  for (const TypeInfo &info : kTypes)
    if (info.type == type) return info.name;
  return "?";
}

std::optional<ElementType> parseElementType(std::string_view name) {
  for (const TypeInfo &info : kTypes)
    if (name == info.name) return info.type;
  return std::nullopt;
}

const char *validElementTypeNames() { return "f32 f64 f16 bf16 i8 u8 i32 u32 i64 u64 e4m3"; }

size_t elementSize(ElementType type) {
  for (const TypeInfo &info : kTypes)
    if (info.type == type) return info.size;
  return 0;
}

bool isFloatingType(ElementType type) {
  return type == ElementType::F32 || type == ElementType::F64 || type == ElementType::F16 ||
         type == ElementType::BF16 || type == ElementType::E4M3;
}

bool isSignedIntegerType(ElementType type) {
  return type == ElementType::I8 || type == ElementType::I32 || type == ElementType::I64;
}

const char *paramRoleName(ParamRole role) {
  switch (role) {
  case ParamRole::Input: return "input";
  case ParamRole::Output: return "output";
  case ParamRole::InOut: return "inout";
  case ParamRole::Scalar: return "scalar";
  }
  return "?";
}

const char *initDistributionName(InitDistribution distribution) {
  switch (distribution) {
  case InitDistribution::Uniform: return "uniform";
  case InitDistribution::Normal: return "normal";
  case InitDistribution::Int: return "int";
  case InitDistribution::Const: return "const";
  case InitDistribution::Iota: return "iota";
  case InitDistribution::IndexMod: return "index-mod";
  }
  return "?";
}

namespace {

/// What each vendor op takes: operand names (output last) and their element
/// types, and its size names.
struct VendorOpInfo {
  VendorOp op;
  const char *name;
  std::array<const char *, 3> operands;
  std::array<ElementType, 3> types;
  std::vector<std::string_view> sizes;
};
const VendorOpInfo kVendorOps[] = {
    {VendorOp::Gemm, "gemm", {"a", "b", "c"}, {ElementType::F32, ElementType::F32, ElementType::F32}, {"m", "n", "k"}},
    {VendorOp::GemmF16F32, "gemm_f16_f32", {"a", "b", "c"}, {ElementType::F16, ElementType::F16, ElementType::F32},
     {"m", "n", "k"}},
    {VendorOp::GemmBatched, "gemm_batched", {"a", "b", "c"}, {ElementType::F32, ElementType::F32, ElementType::F32},
     {"m", "n", "k", "batch"}},
    {VendorOp::Gemv, "gemv", {"a", "x", "y"}, {ElementType::F32, ElementType::F32, ElementType::F32}, {"m", "k"}},
    {VendorOp::GemmBf16F32, "gemm_bf16_f32", {"a", "b", "c"},
     {ElementType::BF16, ElementType::BF16, ElementType::F32}, {"m", "n", "k"}},
    {VendorOp::GemmE4M3F32, "gemm_e4m3_f32", {"a", "b", "c"},
     {ElementType::E4M3, ElementType::E4M3, ElementType::F32}, {"m", "n", "k"}},
};

const VendorOpInfo &vendorOpInfo(VendorOp op) {
  for (const VendorOpInfo &info : kVendorOps)
    if (info.op == op) return info;
  return kVendorOps[0];
}

/// Inclusive range of an integer type, as doubles (exact for the bounds used in checks).
std::pair<double, double> integerTypeRange(ElementType type) {
  switch (type) {
  case ElementType::I8: return {-128.0, 127.0};
  case ElementType::U8: return {0.0, 255.0};
  case ElementType::I32: return {-2147483648.0, 2147483647.0};
  case ElementType::U32: return {0.0, 4294967295.0};
  case ElementType::I64: return {-9223372036854775808.0, 9223372036854775807.0};
  case ElementType::U64: return {0.0, 18446744073709551615.0};
  default: return {-INFINITY, INFINITY};
  }
}

} // namespace

const char *vendorOpName(VendorOp op) { return vendorOpInfo(op).name; }

std::vector<std::string> vendorOperandNames(VendorOp op) {
  const VendorOpInfo &info = vendorOpInfo(op);
  return {info.operands.begin(), info.operands.end()};
}

std::vector<std::string> vendorSizeNames(VendorOp op) {
  const VendorOpInfo &info = vendorOpInfo(op);
  return {info.sizes.begin(), info.sizes.end()};
}

InitSpec defaultInit(ElementType type) {
  InitSpec init;
  if (isFloatingType(type)) {
    init.distribution = InitDistribution::Uniform;
    init.min = -4.0;
    init.max = 4.0;
  } else {
    init.distribution = InitDistribution::Int;
    bool isSigned = isSignedIntegerType(type);
    init.min = isSigned ? -1000.0 : 0.0;
    init.max = 999.0; // int bounds are inclusive: [-1000, 1000) of docs/tasks.md
    if (type == ElementType::I8) init.min = -128.0, init.max = 127.0;
    if (type == ElementType::U8) init.min = 0.0, init.max = 255.0;
  }
  init.given = false;
  return init;
}

Tolerance defaultTolerance(ElementType type) {
  Tolerance tolerance;
  switch (type) {
  case ElementType::F64: tolerance.atol = tolerance.rtol = 1e-10; break;
  case ElementType::F32: tolerance.atol = tolerance.rtol = 1e-5; break;
  case ElementType::F16: tolerance.atol = tolerance.rtol = 1e-3; break;
  case ElementType::BF16: tolerance.atol = tolerance.rtol = 1e-2; break;
  case ElementType::E4M3: tolerance.atol = tolerance.rtol = 1e-1; break; // 3 mantissa bits
  default: tolerance.atol = tolerance.rtol = 0.0; break;
  }
  return tolerance;
}

Tolerance toleranceFor(const TaskSpec &task, ElementType type) {
  Tolerance result = defaultTolerance(type);
  if (task.tolerance.atolGiven) result.atol = task.tolerance.atol, result.atolGiven = true;
  if (task.tolerance.rtolGiven) result.rtol = task.tolerance.rtol, result.rtolGiven = true;
  return result;
}

const ParamSpec *findParam(const TaskSpec &task, std::string_view name) {
  for (const ParamSpec &param : task.params)
    if (param.name == name) return &param;
  return nullptr;
}

const char *mapSwizzleName(MapSwizzle swizzle) {
  static const char *const names[] = {"none", "32b", "64b", "128b"};
  return names[static_cast<int>(swizzle)];
}
const char *mapL2PromotionName(MapL2Promotion promotion) {
  static const char *const names[] = {"none", "64b", "128b", "256b"};
  return names[static_cast<int>(promotion)];
}
const char *mapOobFillName(MapOobFill fill) { return fill == MapOobFill::Nan ? "nan" : "zero"; }

std::string describeTensorMapParam(const ParamSpec &param) {
  if (!param.tensorMap) return "";
  const TensorMapParam &map = *param.tensorMap;
  auto list = [](const auto &items, auto text) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + text(items[i]);
    return out + "]";
  };
  auto expression = [](const Expression &e) { return toString(e); };
  auto number = [](uint32_t n) { return std::to_string(n); };
  std::string out = "a TMA tensor map (tile mode) over `" + map.buffer + "`: " + elementTypeName(param.type) +
                    ", dims " + list(map.dims, expression) + " (innermost first), strides " +
                    list(map.strides, expression) + " bytes, box " + list(map.box, number);
  bool strided = false;
  for (uint32_t stride : map.elementStrides) strided |= stride != 1;
  if (strided) out += ", element strides " + list(map.elementStrides, number);
  out += std::string(", swizzle ") + mapSwizzleName(map.swizzle) + ", interleave none, L2 promotion " +
         mapL2PromotionName(map.l2Promotion) + ", out-of-bounds fill " + mapOobFillName(map.oobFill);
  return out;
}

size_t paramBytes(const ParamSpec &param) {
  if (param.tensorMap) return 128;
  return param.isPointer ? 8 : elementSize(param.type);
}

int64_t elementsOf(const TaskSpec &task, const Shape &shape) {
  int64_t total = 0;
  for (const ParamSpec &param : task.params)
    if (param.isPointer)
      if (Result<int64_t> count = evaluate(param.count, shape)) total += *count;
  return total;
}

namespace {

/// Where checkTensorMapOnShape found a problem: the tensor_map key ("dims",
/// "strides" or "buffer") and the entry of its array.
struct MapProblemSite {
  std::string key = "buffer";
  size_t index = 0;
};

/// The checks of a tensor map that depend on the shape (cuTensorMapEncodeTiled's
/// rules for dims and strides, and that the tensor lies inside its buffer);
/// fills `out`. An empty string when the map is good.
std::string checkTensorMapOnShape(const TaskSpec &task, const ParamSpec &param, const Shape &shape,
                                  ResolvedTensorMap &out, MapProblemSite *site = nullptr) {
  auto at = [&](const char *key, size_t index) {
    if (site) site->key = key, site->index = index;
  };
  const TensorMapParam &map = *param.tensorMap;
  out.type = param.type;
  out.rank = map.rank;
  out.swizzle = map.swizzle;
  out.l2Promotion = map.l2Promotion;
  out.oobFill = map.oobFill;
  for (uint32_t i = 0; i < map.rank && i < 5; ++i) {
    out.box[i] = i < map.box.size() ? map.box[i] : 1;
    out.elementStrides[i] = i < map.elementStrides.size() ? map.elementStrides[i] : 1;
    at("dims", i);
    if (i >= map.dims.size()) return "dims has fewer entries than the rank";
    Result<int64_t> dim = evaluate(map.dims[i], shape);
    if (!dim) return "dims[" + std::to_string(i) + "] '" + toString(map.dims[i]) + "': " + dim.error().message;
    if (*dim < 1 || *dim > (int64_t(1) << 32))
      return "dims[" + std::to_string(i) + "] '" + toString(map.dims[i]) + "' is " + std::to_string(*dim) +
             " (a tensor map's dimension holds 1 to 2^32 elements)";
    out.dims[i] = static_cast<uint64_t>(*dim);
  }
  for (uint32_t i = 0; i + 1 < map.rank; ++i) {
    at("strides", i);
    if (i >= map.strides.size()) return "strides has fewer entries than the rank less one";
    Result<int64_t> stride = evaluate(map.strides[i], shape);
    if (!stride) return "strides[" + std::to_string(i) + "] '" + toString(map.strides[i]) + "': " + stride.error().message;
    if (*stride < 16 || *stride % 16 != 0 || *stride >= (int64_t(1) << 40))
      return "strides[" + std::to_string(i) + "] '" + toString(map.strides[i]) + "' is " + std::to_string(*stride) +
             " bytes; a tensor map's strides are multiples of 16 below 2^40 (declare shapes whose rows are a "
             "multiple of 16 bytes long)";
    out.strides[i] = static_cast<uint64_t>(*stride);
  }
  // The tensor's last element must lie inside the mapped buffer.
  at("buffer", 0);
  const ParamSpec &buffer = task.params[map.bufferIndex];
  Result<int64_t> count = evaluate(buffer.count, shape);
  if (!count) return "the buffer's count: " + count.error().message;
  unsigned __int128 last = static_cast<unsigned __int128>(out.dims[0] - 1) * elementSize(param.type);
  for (uint32_t i = 1; i < map.rank; ++i)
    last += static_cast<unsigned __int128>(out.dims[i] - 1) * out.strides[i - 1];
  last += elementSize(param.type);
  const unsigned __int128 have = static_cast<unsigned __int128>(*count) * elementSize(buffer.type);
  if (last > have)
    return "the tensor reaches " + std::to_string(static_cast<uint64_t>(last)) + " bytes into '" + buffer.name +
           "', which holds " + std::to_string(static_cast<uint64_t>(have)) + " (count '" + toString(buffer.count) +
           "'); check dims and strides";
  return "";
}

} // namespace

Result<ResolvedTensorMap> resolveTensorMap(const TaskSpec &task, const ParamSpec &param, const Shape &shape) {
  if (!param.tensorMap || param.tensorMap->bufferIndex >= task.params.size())
    return makeError(ErrorKind::InvalidInput, "param '" + param.name + "' is not a tensor map");
  ResolvedTensorMap out;
  if (std::string problem = checkTensorMapOnShape(task, param, shape, out); !problem.empty())
    return makeError(ErrorKind::InvalidInput,
                     "param '" + param.name + "': tensor_map: " + problem + " for " + shapeToString(shape));
  return out;
}

std::string shapeToString(const Shape &shape) {
  std::string out = "{";
  for (const auto &[name, value] : shape) {
    if (out.size() > 1) out += ", ";
    out += name + "=" + std::to_string(value);
  }
  return out + "}";
}

std::string compactShape(const TaskSpec &task, const Shape &shape) {
  std::string out;
  for (const std::string &symbol : task.symbols)
    if (auto it = shape.find(symbol); it != shape.end())
      out += (out.empty() ? "" : ",") + symbol + "=" + std::to_string(it->second);
  return out;
}

// ---------------------------------------------------------------------------
// Validation

namespace {

bool isIdentifier(std::string_view text) {
  if (text.empty() || !(std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_')) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool isTaskName(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string joinNames(const std::vector<std::string_view> &names, const char *separator = ", ") {
  std::string out;
  for (std::string_view name : names) {
    if (!out.empty()) out += separator;
    out += name;
  }
  return out;
}

/// " (did you mean 'count'?)" when a valid name is within two edits.
std::string suggestion(std::string_view wrong, const std::vector<std::string_view> &valid) {
  std::string_view best;
  size_t bestDistance = 3;
  for (std::string_view candidate : valid) {
    size_t distance = editDistance(wrong, candidate);
    // A one-letter name is "one edit" from every other one-letter name: no suggestion then.
    if (distance < bestDistance && distance < wrong.size()) bestDistance = distance, best = candidate;
  }
  return best.empty() ? std::string() : " (did you mean '" + std::string(best) + "'?)";
}

/// Shortest text for a number in messages: "8", "-0.5", "1e-05".
std::string formatNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  // Prefer the shortest representation that reads back exactly.
  for (int precision = 1; precision <= 17; ++precision) {
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", precision, value);
    if (std::strtod(shorter, nullptr) == value) return shorter;
  }
  return buffer;
}

const char *nodeTypeName(const toml::node &node) {
  switch (node.type()) {
  case toml::node_type::table: return "a table";
  case toml::node_type::array: return "an array";
  case toml::node_type::string: return "a string";
  case toml::node_type::integer: return "an integer";
  case toml::node_type::floating_point: return "a float";
  case toml::node_type::boolean: return "a boolean";
  case toml::node_type::date:
  case toml::node_type::time:
  case toml::node_type::date_time: return "a date/time";
  default: return "nothing";
  }
}

/// Collects located errors while walking the document.
class Validator {
public:
  explicit Validator(std::string fileName) : fileName_(std::move(fileName)) {}

  void error(const toml::source_region &where, const std::string &message) {
    std::string location = fileName_;
    if (where.begin.line) {
      location += ":" + std::to_string(where.begin.line);
      if (where.begin.column) location += ":" + std::to_string(where.begin.column);
    }
    errors_.push_back({where.begin.line, where.begin.column, location + ": " + message});
  }
  void error(const toml::source_region &where, uint32_t columnOffset, const std::string &message) {
    toml::source_region shifted = where;
    if (shifted.begin.line) shifted.begin.column += columnOffset;
    error(shifted, message);
  }
  /// Errors without a place in task.toml (reference.cu, whole-file problems) come after the located ones.
  void errorNoLocation(const std::string &message) {
    errors_.push_back({std::numeric_limits<uint32_t>::max(), 0, fileName_ + ": " + message});
  }
  /// An error about another file; `text` carries its own "path: " prefix.
  void errorInOtherFile(const std::string &text) {
    errors_.push_back({std::numeric_limits<uint32_t>::max(), 0, text});
  }

  bool hasErrors() const { return !errors_.empty(); }
  /// All errors, one per line, in file order.
  Error makeFailure() const {
    std::vector<LocatedError> sorted = errors_;
    std::stable_sort(sorted.begin(), sorted.end(), [](const LocatedError &a, const LocatedError &b) {
      return a.line != b.line ? a.line < b.line : a.column < b.column;
    });
    std::string message;
    for (const LocatedError &error : sorted) message += (message.empty() ? "" : "\n") + error.text;
    return makeError(ErrorKind::InvalidInput, message);
  }

  /// Unknown keys are errors: a typo must not silently fall back to a default.
  void checkKeys(const toml::table &table, const std::vector<std::string_view> &allowed, const std::string &context) {
    for (auto &&[key, node] : table) {
      (void)node;
      if (std::find(allowed.begin(), allowed.end(), key.str()) != allowed.end()) continue;
      error(key.source(), context + "unknown key '" + std::string(key.str()) + "'" + suggestion(key.str(), allowed) +
                              " (valid: " + joinNames(allowed) + ")");
    }
  }

  std::optional<std::string> getString(const toml::table &table, std::string_view key, bool required,
                                       const toml::source_region &tableWhere, const std::string &context) {
    const toml::node *node = table.get(key);
    if (!node) {
      if (required) missing(tableWhere, context, key);
      return std::nullopt;
    }
    if (!node->is_string()) {
      error(node->source(), context + "'" + std::string(key) + "' must be a string, found " + nodeTypeName(*node));
      return std::nullopt;
    }
    return node->as_string()->get();
  }

  void missing(const toml::source_region &tableWhere, const std::string &context, std::string_view key) {
    if (tableWhere.begin.line)
      error(tableWhere, context + "missing required key '" + std::string(key) + "'");
    else
      errorNoLocation(context + "missing required key '" + std::string(key) + "'");
  }

  /// An expression given as a string ("ceildiv(n, 256)") or an integer. Syntax
  /// errors and unknown symbols point at the offending character inside the string.
  std::optional<Expression> getExpression(const toml::node &node, const std::vector<std::string> &symbols,
                                          const std::string &what) {
    if (const auto *integer = node.as_integer()) return Expression::integer(integer->get());
    if (!node.is_string()) {
      error(node.source(), what + " must be an expression string or an integer, found " + nodeTypeName(node));
      return std::nullopt;
    }
    const std::string &text = node.as_string()->get();
    // The node's region starts at the opening quote; column N of the text is
    // quote column + N for single-line strings without escapes.
    auto parsed = parseExpressionLocated(text);
    if (auto *syntax = std::get_if<ExpressionSyntaxError>(&parsed)) {
      error(node.source(), syntax->column, what + " '" + text + "': " + syntax->message);
      return std::nullopt;
    }
    Expression expression = std::get<Expression>(std::move(parsed));
    bool good = true;
    for (const SymbolUse &use : symbolUses(expression)) {
      if (std::find(symbols.begin(), symbols.end(), use.name) != symbols.end()) continue;
      std::vector<std::string_view> valid(symbols.begin(), symbols.end());
      error(node.source(), use.column,
            what + " '" + text + "': unknown symbol '" + use.name + "'" + suggestion(use.name, valid) +
                " (declared symbols: " + (valid.empty() ? std::string("none") : joinNames(valid)) + ")");
      good = false;
    }
    if (!good) return std::nullopt;
    return expression;
  }

  std::optional<double> getNumber(const toml::node &node, const std::string &what) {
    if (const auto *integer = node.as_integer()) return static_cast<double>(integer->get());
    if (const auto *floating = node.as_floating_point()) return floating->get();
    error(node.source(), what + " must be a number, found " + nodeTypeName(node));
    return std::nullopt;
  }

  const std::string &fileName() const { return fileName_; }

private:
  struct LocatedError {
    uint32_t line = 0;
    uint32_t column = 0;
    std::string text;
  };
  std::string fileName_;
  std::vector<LocatedError> errors_;
};

void parseInit(Validator &v, const toml::node &node, ParamSpec &param, const std::string &context) {
  const toml::table *table = node.as_table();
  if (!table) {
    v.error(node.source(), context + "'init' must be a table like { dist = \"uniform\", min = -1.0, max = 1.0 }, found " +
                               nodeTypeName(node));
    return;
  }
  static const std::vector<std::string_view> allKeys = {"dist",  "min",     "max",         "mean",
                                                        "stddev", "value", "modulus", "trial_scales"};
  v.checkKeys(*table, allKeys, context + "init: ");
  InitSpec init = defaultInit(param.type);
  init.given = true;
  std::optional<std::string> dist = v.getString(*table, "dist", true, node.source(), context + "init: ");
  if (!dist) return;
  static const std::vector<std::string_view> distNames = {"uniform", "normal", "int", "const", "iota", "index-mod"};
  std::vector<std::string_view> uses;
  if (*dist == "uniform") init.distribution = InitDistribution::Uniform, uses = {"min", "max", "trial_scales"};
  else if (*dist == "normal") init.distribution = InitDistribution::Normal, uses = {"mean", "stddev", "trial_scales"};
  else if (*dist == "int") init.distribution = InitDistribution::Int, uses = {"min", "max"};
  else if (*dist == "const") init.distribution = InitDistribution::Const, uses = {"value"};
  else if (*dist == "iota") init.distribution = InitDistribution::Iota;
  else if (*dist == "index-mod") init.distribution = InitDistribution::IndexMod, uses = {"modulus"};
  else {
    v.error(table->get("dist")->source(), context + "init: unknown dist '" + *dist + "'" + suggestion(*dist, distNames) +
                                              " (valid: " + joinNames(distNames) + ")");
    return;
  }
  // Keys of another distribution are mistakes (e.g. stddev with uniform).
  for (auto &&[key, value] : *table) {
    if (key.str() == "dist" || std::find(allKeys.begin(), allKeys.end(), key.str()) == allKeys.end()) continue;
    if (std::find(uses.begin(), uses.end(), key.str()) == uses.end())
      v.error(key.source(), context + "init: key '" + std::string(key.str()) + "' does not apply to dist '" + *dist +
                                "' (it uses: " + (uses.empty() ? std::string("no parameters") : joinNames(uses)) + ")");
    (void)value;
  }
  auto number = [&](std::string_view key, double &target) {
    if (const toml::node *n = table->get(key)) {
      if (auto value = v.getNumber(*n, context + "init." + std::string(key))) target = *value;
    }
  };
  if (const toml::node *scales = table->get("trial_scales")) {
    const toml::array *array = scales->as_array();
    if (!array || array->empty() || array->size() > 16) {
      v.error(scales->source(), context + "init: trial_scales must be an array of 1 to 16 positive numbers, e.g. "
                                          "[1.0, 0.001]");
    } else {
      for (const toml::node &element : *array) {
        std::optional<double> value = v.getNumber(element, context + "init.trial_scales");
        if (!value) break;
        if (!(*value > 0)) {
          v.error(element.source(), context + "init: trial_scales must be positive, found " + formatNumber(*value));
          break;
        }
        init.trialScales.push_back(*value);
      }
    }
  }
  if (init.distribution == InitDistribution::Uniform) {
    number("min", init.min);
    number("max", init.max);
    if (!(init.min < init.max))
      v.error(node.source(), context + "init: min (" + formatNumber(init.min) + ") must be less than max (" +
                                 formatNumber(init.max) + "); the range is [min, max)");
    else if (!isFloatingType(param.type)) {
      // Uniform over an integer type: the integers of [min, max).
      init.distribution = InitDistribution::Int;
      init.min = std::ceil(init.min);
      init.max = std::ceil(init.max) - 1;
      if (init.min > init.max)
        v.error(node.source(), context + "init: [min, max) holds no integer for type " + elementTypeName(param.type));
    }
  } else if (init.distribution == InitDistribution::Int) {
    number("min", init.min);
    number("max", init.max);
    if (init.min != std::floor(init.min) || init.max != std::floor(init.max))
      v.error(node.source(), context + "init: dist 'int' needs integer min and max");
    else if (init.min > init.max)
      v.error(node.source(), context + "init: min (" + formatNumber(init.min) + ") must not exceed max (" +
                                 formatNumber(init.max) + "); the range is [min, max], both included");
  }
  if (init.distribution == InitDistribution::Int && !isFloatingType(param.type)) {
    auto [lowest, highest] = integerTypeRange(param.type);
    if (init.min < lowest || init.max > highest)
      v.error(node.source(), context + "init: range [" + formatNumber(init.min) + ", " + formatNumber(init.max) +
                                 "] does not fit type " + elementTypeName(param.type) + " [" + formatNumber(lowest) +
                                 ", " + formatNumber(highest) + "]");
  }
  if (init.distribution == InitDistribution::Normal) {
    number("mean", init.mean);
    number("stddev", init.stddev);
    if (!(init.stddev > 0)) v.error(node.source(), context + "init: stddev must be > 0");
    if (!isFloatingType(param.type))
      v.error(node.source(), context + "init: dist 'normal' needs a floating type, not " + elementTypeName(param.type));
  }
  if (init.distribution == InitDistribution::Const) {
    if (!table->get("value")) v.missing(node.source(), context + "init: ", "value");
    number("value", init.value);
    if (!isFloatingType(param.type)) {
      auto [lowest, highest] = integerTypeRange(param.type);
      if (init.value != std::floor(init.value) || init.value < lowest || init.value > highest)
        v.error(node.source(), context + "init: const value " + formatNumber(init.value) + " is not a " +
                                   elementTypeName(param.type));
    }
  }
  if (init.distribution == InitDistribution::IndexMod) {
    const toml::node *modulus = table->get("modulus");
    if (!modulus) v.missing(node.source(), context + "init: ", "modulus");
    else if (!modulus->is_integer() || modulus->as_integer()->get() <= 0)
      v.error(modulus->source(), context + "init: modulus must be a positive integer");
    else init.modulus = modulus->as_integer()->get();
  }
  param.init = init;
}

/// A `[params.tensor_map]` table (docs/tasks.md "Tensor maps"); `param` has
/// its name. The buffer must be an earlier pointer parameter.
void parseTensorMap(Validator &v, const toml::node *node, const toml::source_region &paramWhere,
                    const std::vector<std::string> &symbols, const TaskSpec &task, ParamSpec &param,
                    const std::string &context) {
  const std::string where = context + "tensor_map: ";
  if (!node) {
    v.error(paramWhere, context + "type 'tensormap' needs a [params.tensor_map] table (buffer, dims, strides, box, ...)");
    return;
  }
  const toml::table *table = node->as_table();
  if (!table) {
    v.error(node->source(), context + "'tensor_map' must be a table");
    return;
  }
  v.checkKeys(*table, {"buffer", "dtype", "rank", "dims", "strides", "box", "element_strides", "swizzle", "interleave",
                       "l2_promotion", "oob_fill"},
              where);
  TensorMapParam map;
  bool typeKnown = false;
  if (std::optional<std::string> buffer = v.getString(*table, "buffer", true, node->source(), where)) {
    map.buffer = *buffer;
    const toml::source_region &at = table->get("buffer")->source();
    auto found = std::find_if(task.params.begin(), task.params.end(),
                              [&](const ParamSpec &p) { return p.name == *buffer; });
    if (found == task.params.end()) {
      std::vector<std::string_view> names;
      for (const ParamSpec &p : task.params)
        if (p.isPointer) names.push_back(p.name);
      v.error(at, where + "buffer '" + *buffer + "' is not a pointer parameter declared before this one" +
                      suggestion(*buffer, names) +
                      " (earlier pointers: " + (names.empty() ? std::string("none") : joinNames(names)) + ")");
    } else if (!found->isPointer) {
      v.error(at, where + "buffer '" + *buffer + "' is not a pointer parameter");
    } else {
      map.bufferIndex = static_cast<size_t>(found - task.params.begin());
      param.type = found->type;
      typeKnown = true;
    }
  }
  if (std::optional<std::string> dtype = v.getString(*table, "dtype", false, node->source(), where)) {
    if (std::optional<ElementType> type = parseElementType(*dtype)) param.type = *type, typeKnown = true;
    else
      v.error(table->get("dtype")->source(), where + "unknown dtype '" + *dtype + "' (valid: " +
                                                 validElementTypeNames() + ")");
  }
  // Arrays of expressions (dims, strides) and of small integers (box, element_strides).
  auto expressions = [&](std::string_view key, std::vector<Expression> &into, bool required) -> const toml::array * {
    const toml::node *n = table->get(key);
    if (!n) {
      if (required) v.missing(node->source(), where, key);
      return nullptr;
    }
    const toml::array *array = n->as_array();
    if (!array) {
      v.error(n->source(), where + "'" + std::string(key) + "' must be an array of expressions like [\"N\", \"M\"]");
      return nullptr;
    }
    for (size_t i = 0; i < array->size(); ++i)
      if (auto e = v.getExpression(*array->get(i), symbols, where + std::string(key) + "[" + std::to_string(i) + "]"))
        into.push_back(std::move(*e));
      else
        into.push_back(Expression::integer(0));
    return array;
  };
  auto integers = [&](std::string_view key, std::vector<uint32_t> &into, uint32_t low, uint32_t high,
                      bool required) -> const toml::array * {
    const toml::node *n = table->get(key);
    if (!n) {
      if (required) v.missing(node->source(), where, key);
      return nullptr;
    }
    const toml::array *array = n->as_array();
    if (!array) {
      v.error(n->source(), where + "'" + std::string(key) + "' must be an array of integers like [32, 32]");
      return nullptr;
    }
    for (const toml::node &element : *array) {
      if (!element.is_integer() || element.as_integer()->get() < low || element.as_integer()->get() > high) {
        v.error(element.source(), where + std::string(key) + ": each entry must be an integer in [" +
                                      std::to_string(low) + ", " + std::to_string(high) + "]");
        into.push_back(low);
      } else {
        into.push_back(static_cast<uint32_t>(element.as_integer()->get()));
      }
    }
    return array;
  };
  const toml::array *dims = expressions("dims", map.dims, true);
  const toml::array *strides = expressions("strides", map.strides, true);
  const toml::array *box = integers("box", map.box, 1, 256, true);
  const toml::array *elementStrides = integers("element_strides", map.elementStrides, 1, 8, false);
  map.rank = static_cast<uint32_t>(map.dims.size());
  if (const toml::node *rank = table->get("rank")) {
    if (!rank->is_integer() || rank->as_integer()->get() < 1 || rank->as_integer()->get() > 5)
      v.error(rank->source(), where + "rank must be an integer from 1 to 5");
    else if (dims && static_cast<size_t>(rank->as_integer()->get()) != map.dims.size())
      v.error(rank->source(), where + "rank " + std::to_string(rank->as_integer()->get()) + " but dims has " +
                                  std::to_string(map.dims.size()) + " entries");
  }
  if (dims && (map.rank < 1 || map.rank > 5))
    v.error(dims->source(), where + "dims must have 1 to 5 entries (the rank), innermost first");
  if (dims && strides && map.strides.size() + 1 != map.dims.size())
    v.error(strides->source(), where + "strides must have one entry per dimension after the first (" +
                                   std::to_string(map.dims.size() > 0 ? map.dims.size() - 1 : 0) +
                                   "), the bytes between consecutive indices");
  if (dims && box && map.box.size() != map.dims.size())
    v.error(box->source(), where + "box must have one entry per dimension (" + std::to_string(map.dims.size()) + ")");
  if (elementStrides && dims && map.elementStrides.size() != map.dims.size())
    v.error(elementStrides->source(),
            where + "element_strides must have one entry per dimension (" + std::to_string(map.dims.size()) + ")");
  auto choice = [&](std::string_view key, const std::vector<std::string_view> &names, int &out) {
    std::optional<std::string> text = v.getString(*table, key, false, node->source(), where);
    if (!text) return;
    auto it = std::find(names.begin(), names.end(), *text);
    if (it == names.end())
      v.error(table->get(key)->source(), where + "unknown " + std::string(key) + " '" + *text + "'" +
                                             suggestion(*text, names) + " (valid: " + joinNames(names) + ")");
    else out = static_cast<int>(it - names.begin());
  };
  int swizzle = 0, interleave = 0, l2 = 0, fill = 0;
  choice("swizzle", {"none", "32b", "64b", "128b"}, swizzle);
  choice("interleave", {"none"}, interleave);
  choice("l2_promotion", {"none", "64b", "128b", "256b"}, l2);
  choice("oob_fill", {"zero", "nan"}, fill);
  map.swizzle = static_cast<MapSwizzle>(swizzle);
  map.l2Promotion = static_cast<MapL2Promotion>(l2);
  map.oobFill = static_cast<MapOobFill>(fill);
  if (typeKnown && !map.box.empty()) {
    const uint64_t inner = uint64_t(map.box[0]) * elementSize(param.type);
    const uint32_t span = map.swizzle == MapSwizzle::None ? 0 : 16u << static_cast<int>(map.swizzle);
    if (inner % 16 != 0)
      v.error(box->source(), where + "the box's inner dimension is " + std::to_string(inner) +
                                 " bytes; it must be a multiple of 16");
    else if (span && inner > span)
      v.error(box->source(), where + "the box's inner dimension is " + std::to_string(inner) + " bytes, more than the " +
                                 std::to_string(span) + "-byte swizzle span");
  }
  if (typeKnown && map.oobFill == MapOobFill::Nan && !isFloatingType(param.type))
    v.error(table->get("oob_fill")->source(),
            where + "oob_fill 'nan' needs a floating type, not " + elementTypeName(param.type));
  else if (typeKnown && map.oobFill == MapOobFill::Nan && param.type == ElementType::E4M3)
    v.error(table->get("oob_fill")->source(), where + "oob_fill 'nan' fills 16-bit or wider elements; e4m3 takes 'zero'");
  param.tensorMap = std::move(map);
}

void parseParam(Validator &v, const toml::node &node, size_t index, const std::vector<std::string> &symbols,
                TaskSpec &task) {
  std::string context = "params[" + std::to_string(index) + "]: ";
  const toml::table *table = node.as_table();
  if (!table) {
    v.error(node.source(), context + "each [[params]] entry must be a table, found " + nodeTypeName(node));
    return;
  }
  ParamSpec param;
  std::optional<std::string> name = v.getString(*table, "name", true, node.source(), context);
  if (name) {
    if (!isIdentifier(*name))
      v.error(table->get("name")->source(), context + "name '" + *name + "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
    else if (findParam(task, *name))
      v.error(table->get("name")->source(), context + "duplicate parameter name '" + *name + "'");
    param.name = *name;
    context = "param '" + *name + "': ";
  }
  // A tensor map: its own keys only.
  const toml::node *typeNode = table->get("type");
  const bool tensorMap = typeNode && typeNode->is_string() && typeNode->as_string()->get() == "tensormap";
  if (!tensorMap) v.checkKeys(*table, {"name", "type", "role", "count", "value", "init"}, context);
  if (tensorMap) {
    v.checkKeys(*table, {"name", "type", "role", "count", "value", "init", "tensor_map"}, context);
    for (std::string_view key : {"count", "value", "init"})
      if (const toml::node *n = table->get(key))
        v.error(n->source(), context + "'" + std::string(key) + "' does not apply to a tensor map (it has a "
                                                                "[params.tensor_map] table)");
    if (const toml::node *role = table->get("role"); role && !(role->is_string() && role->as_string()->get() == "scalar"))
      v.error(role->source(), context + "a tensor map is passed by value: leave 'role' out (or write \"scalar\")");
    param.role = ParamRole::Scalar;
    parseTensorMap(v, table->get("tensor_map"), node.source(), symbols, task, param, context);
    task.params.push_back(std::move(param));
    return;
  }

  bool typeOk = false;
  if (std::optional<std::string> typeText = v.getString(*table, "type", true, node.source(), context)) {
    std::string base = *typeText;
    while (!base.empty() && std::isspace(static_cast<unsigned char>(base.back()))) base.pop_back();
    if (!base.empty() && base.back() == '*') {
      param.isPointer = true;
      base.pop_back();
      while (!base.empty() && std::isspace(static_cast<unsigned char>(base.back()))) base.pop_back();
    }
    if (std::optional<ElementType> type = parseElementType(base)) {
      param.type = *type;
      typeOk = true;
    } else {
      std::vector<std::string_view> valid = {"f32", "f64", "f16", "bf16", "i8", "u8", "i32", "u32", "i64", "u64", "e4m3"};
      v.error(table->get("type")->source(), context + "unknown type '" + *typeText + "'" + suggestion(base, valid) +
                                                " (valid: " + validElementTypeNames() +
                                                ", with a trailing * for pointers)");
    }
  }

  bool roleOk = false;
  if (std::optional<std::string> role = v.getString(*table, "role", false, node.source(), context)) {
    static const std::vector<std::string_view> roles = {"input", "output", "inout", "scalar"};
    const toml::source_region &where = table->get("role")->source();
    if (*role == "input") param.role = ParamRole::Input, roleOk = true;
    else if (*role == "output") param.role = ParamRole::Output, roleOk = true;
    else if (*role == "inout") param.role = ParamRole::InOut, roleOk = true;
    else if (*role == "scalar") param.role = ParamRole::Scalar, roleOk = true;
    else v.error(where, context + "unknown role '" + *role + "'" + suggestion(*role, roles) + " (valid: input, output, inout, scalar)");
    if (roleOk && typeOk && param.isPointer && param.role == ParamRole::Scalar)
      v.error(where, context + "role 'scalar' is for by-value parameters, but the type is a pointer (use input, output or inout)");
    if (roleOk && typeOk && !param.isPointer && param.role != ParamRole::Scalar)
      v.error(where, context + "role '" + *role + "' needs a pointer type (write '" + elementTypeName(param.type) +
                         "*'), or use role 'scalar'");
  } else if (!table->get("role")) {
    if (typeOk && param.isPointer)
      v.error(node.source(), context + "missing required key 'role' (pointers are input, output or inout)");
    param.role = ParamRole::Scalar;
  }

  const toml::node *count = table->get("count");
  const toml::node *value = table->get("value");
  const toml::node *init = table->get("init");
  if (typeOk && param.isPointer) {
    if (!count) v.error(node.source(), context + "missing required key 'count' (the buffer's element count, e.g. \"n\")");
    if (value) v.error(value->source(), context + "'value' is for scalars; a pointer takes 'count'");
  }
  if (typeOk && !param.isPointer) {
    if (!value) v.error(node.source(), context + "missing required key 'value' (the scalar's value, e.g. \"n\" or \"2.5\")");
    if (count) v.error(count->source(), context + "'count' is for pointers; a scalar takes 'value'");
    if (init) v.error(init->source(), context + "'init' is for input and inout buffers, not scalars");
  }
  if (count && param.isPointer) {
    if (auto expression = v.getExpression(*count, symbols, context + "count")) param.count = std::move(*expression);
  }
  if (value && typeOk && !param.isPointer) {
    if (isFloatingType(param.type) && value->is_floating_point()) {
      param.floatValue = value->as_floating_point()->get();
    } else if (value->is_floating_point()) {
      v.error(value->source(), context + "value " + formatNumber(value->as_floating_point()->get()) +
                                   " is not an integer, but the type is " + elementTypeName(param.type));
    } else if (value->is_string() && isFloatingType(param.type) &&
               std::holds_alternative<ExpressionSyntaxError>(parseExpressionLocated(value->as_string()->get()))) {
      // Not an integer expression: a floating literal such as "2.5" or "1e-3".
      const std::string &text = value->as_string()->get();
      char *end = nullptr;
      double parsed = std::strtod(text.c_str(), &end);
      if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(parsed))
        param.floatValue = parsed;
      else
        v.getExpression(*value, symbols, context + "value"); // reports the expression syntax error
    } else if (auto expression = v.getExpression(*value, symbols, context + "value")) {
      param.value = std::move(*expression);
    }
  }
  if (init && typeOk && param.isPointer) {
    if (roleOk && param.role == ParamRole::Output)
      v.error(init->source(), context + "'init' is for input and inout buffers; outputs are pre-filled with NaN by the checker");
    else
      parseInit(v, *init, param, context);
  } else if (typeOk) {
    param.init = defaultInit(param.type);
  }
  task.params.push_back(std::move(param));
}

template <size_t N>
void parseTriple(Validator &v, const toml::table &table, std::string_view key, const toml::source_region &tableWhere,
                 const std::vector<std::string> &symbols, std::array<Expression, N> &out,
                 std::vector<toml::source_region> &where) {
  const toml::node *node = table.get(key);
  if (!node) {
    v.missing(tableWhere, "[launch]: ", key);
    return;
  }
  const toml::array *array = node->as_array();
  if (!array || array->size() != N) {
    v.error(node->source(), "[launch]: '" + std::string(key) + "' must be an array of " + std::to_string(N) +
                                " expressions like [\"ceildiv(n, 256)\", \"1\", \"1\"]");
    return;
  }
  for (size_t i = 0; i < N; ++i) {
    const toml::node &element = *array->get(i);
    if (auto expression = v.getExpression(element, symbols, "[launch]: " + std::string(key) + "[" + std::to_string(i) + "]"))
      out[i] = std::move(*expression);
    where.push_back(element.source());
  }
}

/// [vendor]: the library, the op, its operands (pointer parameters of the
/// right type and role) and its sizes (expressions). Needs the params parsed.
void parseVendor(Validator &v, const toml::node &node, TaskSpec &task) {
  const toml::table *table = node.as_table();
  if (!table) {
    v.error(node.source(), std::string("[vendor] must be a table, found ") + nodeTypeName(node));
    return;
  }
  static const std::vector<std::string_view> allKeys = {"library", "op", "a", "b", "c", "x",
                                                        "y",       "m",  "n", "k", "batch"};
  v.checkKeys(*table, allKeys, "[vendor]: ");
  VendorSpec vendor;
  bool good = true;
  if (std::optional<std::string> library = v.getString(*table, "library", true, node.source(), "[vendor]: ")) {
    static const std::vector<std::string_view> libraries = {"cublas"};
    if (*library != "cublas") {
      v.error(table->get("library")->source(), "[vendor]: unknown library '" + *library + "'" +
                                                   suggestion(*library, libraries) + " (valid: cublas)");
      good = false;
    }
    vendor.library = *library;
  } else {
    good = false;
  }
  std::optional<std::string> opName = v.getString(*table, "op", true, node.source(), "[vendor]: ");
  if (!opName) return;
  const VendorOpInfo *info = nullptr;
  for (const VendorOpInfo &candidate : kVendorOps)
    if (*opName == candidate.name) info = &candidate;
  if (!info) {
    std::vector<std::string_view> names;
    for (const VendorOpInfo &candidate : kVendorOps) names.push_back(candidate.name);
    v.error(table->get("op")->source(), "[vendor]: unknown op '" + *opName + "'" + suggestion(*opName, names) +
                                            " (valid: " + joinNames(names) + ")");
    return;
  }
  vendor.op = info->op;
  std::vector<std::string_view> uses(info->operands.begin(), info->operands.end());
  uses.insert(uses.end(), info->sizes.begin(), info->sizes.end());
  const std::string usesText = " (op '" + *opName + "' uses: " + joinNames(uses) + ")";
  // Keys of another op are mistakes (e.g. x with gemm, batch with gemm).
  for (auto &&[key, value] : *table) {
    (void)value;
    if (key.str() == "library" || key.str() == "op") continue;
    if (std::find(allKeys.begin(), allKeys.end(), key.str()) == allKeys.end()) continue;
    if (std::find(uses.begin(), uses.end(), key.str()) == uses.end()) {
      v.error(key.source(), "[vendor]: key '" + std::string(key.str()) + "' does not apply to op '" + *opName + "'" +
                                usesText);
      good = false;
    }
  }

  std::vector<std::string_view> pointerNames;
  for (const ParamSpec &param : task.params)
    if (param.isPointer) pointerNames.push_back(param.name);
  const std::string pointersText =
      " (buffer parameters: " + (pointerNames.empty() ? std::string("none") : joinNames(pointerNames)) + ")";
  for (size_t index = 0; index < info->operands.size(); ++index) {
    const std::string operand = info->operands[index];
    const bool output = index + 1 == info->operands.size();
    std::optional<std::string> paramName = v.getString(*table, operand, true, node.source(), "[vendor]: ");
    if (!paramName) {
      good = false;
      continue;
    }
    const toml::source_region &where = table->get(operand)->source();
    const std::string context = "[vendor]: " + operand + " = '" + *paramName + "'";
    const ParamSpec *param = findParam(task, *paramName);
    if (!param) {
      v.error(where, context + " is not a parameter" + suggestion(*paramName, pointerNames) + pointersText);
      good = false;
      continue;
    }
    if (!param->isPointer) {
      v.error(where, context + " is a scalar; op '" + *opName + "' needs a buffer for " + operand + pointersText);
      good = false;
      continue;
    }
    const ElementType want = info->types[index];
    if (param->type != want) {
      v.error(where, context + " is " + elementTypeName(param->type) + "*, but op '" + *opName + "' " +
                         (output ? "writes " : "reads ") + operand + " as " + elementTypeName(want) + "*");
      good = false;
    }
    const bool roleOk = output ? param->role == ParamRole::Output || param->role == ParamRole::InOut
                               : param->role == ParamRole::Input || param->role == ParamRole::InOut;
    if (!roleOk) {
      v.error(where, context + " has role " + paramRoleName(param->role) + ", but op '" + *opName + "' " +
                         (output ? "writes " + operand + ": it must be an output or inout buffer"
                                 : "reads " + operand + ": it must be an input or inout buffer"));
      good = false;
    }
    if (output)
      for (size_t other = 0; other + 1 < info->operands.size(); ++other) {
        auto found = vendor.operands.find(info->operands[other]);
        if (found != vendor.operands.end() && found->second == *paramName) {
          v.error(where, context + " is also " + info->operands[other] + "; the output must be a buffer of its own");
          good = false;
        }
      }
    vendor.operands[operand] = *paramName;
  }
  for (std::string_view size : info->sizes) {
    const toml::node *sizeNode = table->get(size);
    if (!sizeNode) {
      v.missing(node.source(), "[vendor]: ", size);
      good = false;
      continue;
    }
    std::optional<Expression> expression =
        v.getExpression(*sizeNode, task.symbols, "[vendor]: " + std::string(size));
    if (!expression) {
      good = false;
      continue;
    }
    vendor.sizes[std::string(size)] = std::move(*expression);
  }
  if (good) task.vendor = std::move(vendor);
}

/// The vendor op's sizes on `shape`, then each operand's element count against
/// its parameter's: the op must read and write exactly the task's buffers.
void checkVendorOnShape(const toml::table &vendorTable, const TaskSpec &task, const Shape &shape,
                        const std::string &forShape,
                        const std::function<void(const std::string &, const toml::source_region &, const std::string &)>
                            &once) {
  const VendorSpec &vendor = *task.vendor;
  const VendorOpInfo &info = vendorOpInfo(vendor.op);
  std::map<std::string, int64_t> sizes;
  for (const auto &[name, expression] : vendor.sizes) {
    const toml::source_region &where = vendorTable.get(name)->source();
    Result<int64_t> value = evaluate(expression, shape);
    if (!value) {
      once("vendor " + name, where, "[vendor]: " + name + " '" + toString(expression) + "'" + forShape + ": " +
                                        value.error().message);
      return;
    }
    if (*value < 1 || *value > std::numeric_limits<int32_t>::max()) {
      once("vendor " + name, where,
           "[vendor]: " + name + " = '" + toString(expression) + "' is " + std::to_string(*value) + forShape +
               " (the library takes sizes in [1, 2147483647])");
      return;
    }
    sizes[name] = *value;
  }
  auto product = [&](const std::vector<std::string> &names, int64_t &out) {
    out = 1;
    for (const std::string &name : names)
      if (__builtin_mul_overflow(out, sizes.at(name), &out)) return false;
    return true;
  };
  // The elements each operand holds, as products of the op's sizes.
  using Names = std::vector<std::string>;
  std::array<Names, 3> needs = {Names{"m", "k"}, Names{"k", "n"}, Names{"m", "n"}};
  if (vendor.op == VendorOp::Gemv) needs = {Names{"m", "k"}, Names{"k"}, Names{"m"}};
  if (vendor.op == VendorOp::GemmBatched)
    needs = {Names{"batch", "m", "k"}, Names{"batch", "k", "n"}, Names{"batch", "m", "n"}};
  if (vendor.op == VendorOp::GemmE4M3F32) needs[1] = {"n", "k"}; // b is n x k (K-major)
  if (vendor.op == VendorOp::GemmBf16F32) needs[1] = {"n", "k"}; // b is n x k (K-major)
  for (size_t index = 0; index < info.operands.size(); ++index) {
    const std::string operand = info.operands[index];
    const ParamSpec &param = *findParam(task, vendor.operands.at(operand));
    const toml::source_region &where = vendorTable.get(operand)->source();
    std::string formula;
    for (const std::string &name : needs[index]) formula += (formula.empty() ? "" : " * ") + name;
    int64_t need = 0;
    const bool fits = product(needs[index], need);
    Result<int64_t> count = evaluate(param.count, shape);
    if (!count) continue; // reported with the parameter
    if (!fits || need != *count)
      once("vendor count " + operand, where,
           "[vendor]: op '" + std::string(info.name) + "' " + (index + 1 == info.operands.size() ? "writes " : "reads ") +
               formula + " = " + (fits ? std::to_string(need) : std::string("(overflow)")) + " elements of " +
               operand + " = '" + param.name + "', which holds " + std::to_string(*count) + " (count '" +
               toString(param.count) + "')" + forShape + "; check the sizes and which parameter each operand names");
  }
}

bool containsWord(std::string_view text, std::string_view word) {
  for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
    auto isWordChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    bool startOk = at == 0 || !isWordChar(text[at - 1]);
    bool endOk = at + word.size() == text.size() || !isWordChar(text[at + word.size()]);
    if (startOk && endOk) return true;
  }
  return false;
}

} // namespace

Result<TaskSpec> parseTask(std::string_view tomlText, const std::string &fileName,
                           const std::optional<std::string> &referenceSource) {
  toml::table document;
  try {
    document = toml::parse(tomlText, fileName);
  } catch (const toml::parse_error &error) {
    // toml++ throws on syntax errors; this is the boundary where it becomes a value.
    const toml::source_region &where = error.source();
    return makeError(ErrorKind::InvalidInput, fileName + ":" + std::to_string(where.begin.line) + ":" +
                                                  std::to_string(where.begin.column) + ": TOML syntax error: " +
                                                  std::string(error.description()));
  }

  Validator v(fileName);
  TaskSpec task;
  toml::source_region noWhere{}; // value-initialized: line 0 means "no location"
  v.checkKeys(document, {"name", "level", "description", "hints", "kernel", "tags", "symbols", "shapes", "small_shapes", "params",
                         "tolerance", "cost", "launch", "vendor"},
              "");

  if (auto name = v.getString(document, "name", true, noWhere, "")) {
    if (!isTaskName(*name))
      v.error(document.get("name")->source(), "name '" + *name + "' must match [a-z0-9_]+");
    task.name = *name;
  }
  if (const toml::node *level = document.get("level")) {
    if (!level->is_integer() || level->as_integer()->get() < 1 || level->as_integer()->get() > 3)
      v.error(level->source(), "level must be 1, 2 or 3 (1 memory-bound, 2 reductions/row ops, 3 compute-bound)");
    else task.level = static_cast<int>(level->as_integer()->get());
  } else {
    v.missing(noWhere, "", "level");
  }
  if (auto description = v.getString(document, "description", true, noWhere, "")) task.description = *description;
  if (auto hints = v.getString(document, "hints", false, noWhere, "")) task.hints = *hints;
  if (auto kernel = v.getString(document, "kernel", true, noWhere, "")) {
    if (!isIdentifier(*kernel))
      v.error(document.get("kernel")->source(), "kernel '" + *kernel + "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
    task.kernel = *kernel;
  }
  if (const toml::node *tags = document.get("tags")) {
    const toml::array *array = tags->as_array();
    if (!array) v.error(tags->source(), "tags must be an array of strings");
    else
      for (const toml::node &tag : *array) {
        if (tag.is_string()) task.tags.push_back(tag.as_string()->get());
        else v.error(tag.source(), std::string("tags: each tag must be a string, found ") + nodeTypeName(tag));
      }
  }

  // Symbols.
  if (const toml::node *symbols = document.get("symbols")) {
    const toml::array *array = symbols->as_array();
    if (!array) v.error(symbols->source(), "symbols must be an array of names like [\"m\", \"n\"]");
    else
      for (const toml::node &symbol : *array) {
        if (!symbol.is_string()) {
          v.error(symbol.source(), std::string("symbols: each symbol must be a string, found ") + nodeTypeName(symbol));
          continue;
        }
        const std::string &name = symbol.as_string()->get();
        if (!isIdentifier(name) || name == "ceildiv" || name == "min" || name == "max")
          v.error(symbol.source(), "symbols: '" + name + "' is not a valid symbol name (an identifier other than ceildiv/min/max)");
        else if (std::find(task.symbols.begin(), task.symbols.end(), name) != task.symbols.end())
          v.error(symbol.source(), "symbols: duplicate symbol '" + name + "'");
        else task.symbols.push_back(name);
      }
  } else {
    v.missing(noWhere, "", "symbols");
  }

  // Shapes.
  if (const toml::node *shapes = document.get("shapes")) {
    const toml::array *array = shapes->as_array();
    if (!array || array->empty()) v.error(shapes->source(), "shapes must be a non-empty array of tables like [{ n = 1024 }]");
    else
      for (size_t index = 0; index < array->size(); ++index) {
        const toml::node &node = *array->get(index);
        std::string context = "shapes[" + std::to_string(index) + "]: ";
        const toml::table *table = node.as_table();
        if (!table) {
          v.error(node.source(), context + "must be a table like { n = 1024 }, found " + nodeTypeName(node));
          continue;
        }
        Shape shape;
        for (auto &&[key, value] : *table) {
          std::string name(key.str());
          if (std::find(task.symbols.begin(), task.symbols.end(), name) == task.symbols.end()) {
            std::vector<std::string_view> valid(task.symbols.begin(), task.symbols.end());
            v.error(key.source(), context + "'" + name + "' is not a declared symbol" + suggestion(name, valid) +
                                      " (symbols: " + joinNames(valid) + ")");
            continue;
          }
          if (!value.is_integer() || value.as_integer()->get() < 0) {
            v.error(value.source(), context + "'" + name + "' must be an integer >= 0");
            continue;
          }
          shape[name] = value.as_integer()->get();
        }
        for (const std::string &symbol : task.symbols)
          if (!table->get(symbol))
            v.error(node.source(), context + "missing a value for symbol '" + symbol + "' (every shape gives every symbol)");
        task.shapes.push_back(std::move(shape));
      }
  } else {
    v.missing(noWhere, "", "shapes");
  }

  // Params.
  if (const toml::node *params = document.get("params")) {
    const toml::array *array = params->as_array();
    if (!array || array->empty()) v.error(params->source(), "params must be a non-empty array of tables ([[params]])");
    else
      for (size_t index = 0; index < array->size(); ++index)
        parseParam(v, *array->get(index), index, task.symbols, task);
  } else {
    v.missing(noWhere, "", "params ([[params]] tables)");
  }
  bool hasOutput = std::any_of(task.params.begin(), task.params.end(), [](const ParamSpec &param) { return param.isOutput(); });
  // Only on an otherwise clean [[params]]: an unknown role already explains a missing output.
  if (!task.params.empty() && !hasOutput && !v.hasErrors())
    v.error(document.get("params")->source(), "no output: at least one pointer parameter must have role 'output' or 'inout'");

  // Tolerance.
  if (const toml::node *tolerance = document.get("tolerance")) {
    if (const toml::table *table = tolerance->as_table()) {
      v.checkKeys(*table, {"atol", "rtol"}, "[tolerance]: ");
      for (std::string_view key : {"atol", "rtol"}) {
        const toml::node *node = table->get(key);
        if (!node) continue;
        std::optional<double> number = v.getNumber(*node, "[tolerance]: " + std::string(key));
        if (!number) continue;
        if (!(*number >= 0) || !std::isfinite(*number)) {
          v.error(node->source(), "[tolerance]: " + std::string(key) + " must be a finite number >= 0");
          continue;
        }
        if (key == "atol") task.tolerance.atol = *number, task.tolerance.atolGiven = true;
        else task.tolerance.rtol = *number, task.tolerance.rtolGiven = true;
      }
    } else {
      v.error(tolerance->source(), "[tolerance] must be a table");
    }
  }

  // Cost.
  std::optional<toml::source_region> flopsWhere, bytesWhere;
  if (const toml::node *cost = document.get("cost")) {
    if (const toml::table *table = cost->as_table()) {
      v.checkKeys(*table, {"flops", "bytes"}, "[cost]: ");
      if (const toml::node *flops = table->get("flops")) {
        task.cost.flops = v.getExpression(*flops, task.symbols, "[cost]: flops");
        flopsWhere = flops->source();
      }
      if (const toml::node *bytes = table->get("bytes")) {
        task.cost.bytes = v.getExpression(*bytes, task.symbols, "[cost]: bytes");
        bytesWhere = bytes->source();
      }
    } else {
      v.error(cost->source(), "[cost] must be a table");
    }
  }

  // Default launch.
  toml::source_region launchWhere{};
  if (const toml::node *launch = document.get("launch")) {
    if (const toml::table *table = launch->as_table()) {
      launchWhere = launch->source();
      v.checkKeys(*table, {"block", "grid", "smem"}, "[launch]: ");
      std::vector<toml::source_region> where;
      parseTriple(v, *table, "block", launch->source(), task.symbols, task.launch.block, where);
      parseTriple(v, *table, "grid", launch->source(), task.symbols, task.launch.grid, where);
      if (const toml::node *smem = table->get("smem"))
        if (auto expression = v.getExpression(*smem, task.symbols, "[launch]: smem")) task.launch.smem = *expression;
    } else {
      v.error(launch->source(), "[launch] must be a table");
    }
  } else {
    v.missing(noWhere, "", "launch (the [launch] table with block, grid and smem)");
  }

  // Vendor-library equivalent (validated after params).
  if (const toml::node *vendor = document.get("vendor")) parseVendor(v, *vendor, task);

  // Small shapes (validated after shapes).
  if (const toml::node *small = document.get("small_shapes")) {
    const toml::array *array = small->as_array();
    if (!array) v.error(small->source(), "small_shapes must be an array of shape indices");
    else
      for (const toml::node &entry : *array) {
        if (!entry.is_integer() || entry.as_integer()->get() < 0 ||
            static_cast<size_t>(entry.as_integer()->get()) >= task.shapes.size()) {
          v.error(entry.source(), "small_shapes: each entry must be an index into shapes (0.." +
                                      std::to_string(task.shapes.empty() ? 0 : task.shapes.size() - 1) + ")");
          continue;
        }
        size_t index = static_cast<size_t>(entry.as_integer()->get());
        if (std::find(task.smallShapes.begin(), task.smallShapes.end(), index) != task.smallShapes.end())
          v.error(entry.source(), "small_shapes: duplicate index " + std::to_string(index));
        else task.smallShapes.push_back(index);
      }
  }

  if (v.hasErrors()) return v.makeFailure();

  // Everything parsed: evaluate every formula on every shape, so that a task
  // that divides by zero or launches an impossible grid fails here, not in the gate.
  std::vector<int64_t> shapeElements(task.shapes.size(), 0);
  // Each formula is reported for its first failing shape only: the same mistake on every shape says nothing new.
  std::set<std::string> failedSites;
  auto once = [&](const std::string &site, const toml::source_region &where, const std::string &message) {
    if (failedSites.insert(site).second) v.error(where, message);
  };
  for (size_t shapeIndex = 0; shapeIndex < task.shapes.size(); ++shapeIndex) {
    const Shape &shape = task.shapes[shapeIndex];
    std::string forShape = " for shape " + std::to_string(shapeIndex) + " " + shapeToString(shape);
    const toml::array &paramArray = *document.get("params")->as_array();
    for (size_t p = 0; p < task.params.size(); ++p) {
      const ParamSpec &param = task.params[p];
      const toml::table &table = *paramArray.get(p)->as_table();
      std::string context = "param '" + param.name + "': ";
      if (param.tensorMap) {
        ResolvedTensorMap resolved;
        MapProblemSite site;
        if (std::string problem = checkTensorMapOnShape(task, param, shape, resolved, &site); !problem.empty()) {
          const toml::table &map = *table.get("tensor_map")->as_table();
          const toml::node *key = map.get(site.key);
          const toml::node *entry = key && key->as_array() && site.index < key->as_array()->size()
                                        ? key->as_array()->get(site.index)
                                        : key;
          once("tensor_map " + param.name, entry ? entry->source() : map.source(),
               context + "tensor_map: " + problem + forShape);
        }
      } else if (param.isPointer) {
        const toml::source_region &where = table.get("count")->source();
        Result<int64_t> count = evaluate(param.count, shape);
        if (!count)
          once("count " + param.name, where,
               context + "count '" + toString(param.count) + "'" + forShape + ": " + count.error().message);
        else if (*count < 0)
          once("count " + param.name, where,
               context + "count '" + toString(param.count) + "' is " + std::to_string(*count) + forShape +
                   " (must be >= 0)");
        else if (__builtin_add_overflow(shapeElements[shapeIndex], *count, &shapeElements[shapeIndex]))
          shapeElements[shapeIndex] = std::numeric_limits<int64_t>::max();
      } else if (!param.floatValue) {
        const toml::source_region &where = table.get("value")->source();
        Result<int64_t> value = evaluate(param.value, shape);
        if (!value) {
          once("value " + param.name, where,
               context + "value '" + toString(param.value) + "'" + forShape + ": " + value.error().message);
        } else if (!isFloatingType(param.type)) {
          auto [lowest, highest] = integerTypeRange(param.type);
          bool fits = param.type == ElementType::U64   ? *value >= 0
                      : param.type == ElementType::I64 ? true
                                                       : static_cast<double>(*value) >= lowest &&
                                                             static_cast<double>(*value) <= highest;
          if (!fits)
            once("value " + param.name, where,
                 context + "value " + std::to_string(*value) + forShape + " does not fit type " +
                     elementTypeName(param.type));
        }
      }
    }
    for (auto [cost, where, what] : {std::tuple{&task.cost.flops, flopsWhere, "flops"},
                                     std::tuple{&task.cost.bytes, bytesWhere, "bytes"}}) {
      if (!*cost || !where) continue;
      Result<int64_t> value = evaluate(**cost, shape);
      if (!value) once(what, *where, std::string("[cost]: ") + what + forShape + ": " + value.error().message);
      else if (*value < 0)
        once(what, *where, std::string("[cost]: ") + what + " is " + std::to_string(*value) + forShape + " (must be >= 0)");
    }
    Result<ResolvedLaunch> launch = evaluateLaunch(task.launch.block, task.launch.grid, task.launch.smem, shape);
    if (!launch) once("launch", launchWhere, "[launch]" + forShape + ": " + launch.error().message);
    if (task.vendor) checkVendorOnShape(*document.get("vendor")->as_table(), task, shape, forShape, once);
  }

  if (task.smallShapes.empty() && !task.shapes.empty()) {
    // Default: the shape with the fewest buffer elements (the emulator is slow).
    size_t smallest = 0;
    for (size_t i = 1; i < shapeElements.size(); ++i)
      if (shapeElements[i] < shapeElements[smallest]) smallest = i;
    task.smallShapes.push_back(smallest);
  }

  if (referenceSource) {
    std::string referenceName = fileName;
    size_t slash = referenceName.find_last_of('/');
    referenceName = (slash == std::string::npos ? std::string() : referenceName.substr(0, slash + 1)) + "reference.cu";
    if (referenceSource->find("extern \"C\"") == std::string::npos)
      v.errorInOtherFile(referenceName + ": no extern \"C\" declaration; declare the kernel extern \"C\" __global__ so "
                                         "that its PTX name is '" + task.kernel + "' and not a C++-mangled one");
    if (!task.kernel.empty() && !containsWord(*referenceSource, task.kernel))
      v.errorInOtherFile(referenceName + ": kernel '" + task.kernel + "' (task.toml's kernel) does not appear in it");
    task.referenceSource = *referenceSource;
  }

  if (v.hasErrors()) return v.makeFailure();
  return task;
}

Result<TaskSpec> loadTask(const std::filesystem::path &folder) {
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec))
    return makeError(ErrorKind::Io, folder.string() + ": not a task folder (not a directory)");
  std::filesystem::path tomlPath = folder / "task.toml";
  std::filesystem::path referencePath = folder / "reference.cu";
  Result<std::string> tomlText = readFileBounded(tomlPath.string(), kDefaultMaxInputBytes);
  if (!tomlText) return makeError(ErrorKind::Io, tomlPath.string() + ": cannot read task.toml");
  if (!std::filesystem::exists(referencePath, ec))
    return makeError(ErrorKind::InvalidInput,
                     referencePath.string() + ": missing reference.cu (every task needs its trusted CUDA reference)");
  Result<std::string> referenceText = readFileBounded(referencePath.string(), kDefaultMaxInputBytes);
  if (!referenceText) return makeError(ErrorKind::Io, referencePath.string() + ": cannot read reference.cu");
  Result<TaskSpec> task = parseTask(*tomlText, tomlPath.string(), *referenceText);
  if (!task) return task;
  task->folder = folder;
  return task;
}

namespace {

/// Larger task files are refused before they are read: a task.toml or a
/// reference.cu is a few KiB, and a symlink to /dev/zero must not be read.
constexpr std::uintmax_t kMaxTaskFileBytes = std::uintmax_t{4} << 20;

/// Every folder under `root` (root included) that holds an entry named
/// task.toml, in no particular order. A folder that cannot be listed is
/// reported in `errors` and the rest of the tree is still scanned; symlinked
/// and hidden (.git, caches) folders are not entered.
void findTaskFolders(const std::filesystem::path &root, std::vector<std::filesystem::path> &folders,
                     std::vector<TaskLoadError> &errors) {
  std::vector<std::filesystem::path> pending{root};
  while (!pending.empty()) {
    std::filesystem::path dir = std::move(pending.back());
    pending.pop_back();
    std::error_code ec;
    std::filesystem::directory_iterator it(dir, std::filesystem::directory_options::skip_permission_denied, ec);
    if (ec) {
      errors.push_back({dir, makeError(ErrorKind::Io, dir.string() + ": cannot scan: " + ec.message())});
      continue;
    }
    bool holdsTask = false;
    for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      const std::filesystem::directory_entry &entry = *it;
      std::string name = entry.path().filename().string();
      if (name == "task.toml") {
        holdsTask = true; // whatever it is: a task.toml that is not a file is a broken task, reported
        continue;
      }
      std::error_code typeEc;
      if (entry.is_symlink(typeEc) || !entry.is_directory(typeEc)) continue;
      if (!name.empty() && name[0] == '.') continue;
      pending.push_back(entry.path());
    }
    if (ec) errors.push_back({dir, makeError(ErrorKind::Io, dir.string() + ": cannot scan: " + ec.message())});
    if (holdsTask) folders.push_back(dir);
  }
}

/// Why a task's file cannot be read as one, if it cannot: not a regular file
/// (a FIFO would block the scan, a device never end), or too large.
std::optional<Error> unreadableTaskFile(const std::filesystem::path &path) {
  std::error_code ec;
  std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) return std::nullopt; // loadTask says it is missing
  if (!std::filesystem::is_regular_file(status))
    return makeError(ErrorKind::InvalidInput,
                     path.string() + ": not a regular file (a directory, FIFO or device); a task's files are plain files");
  std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxTaskFileBytes)
    return makeError(ErrorKind::InvalidInput, path.string() + ": " + std::to_string(size) + " bytes, more than a task " +
                                                  "file may hold (" + std::to_string(kMaxTaskFileBytes >> 20) + " MiB)");
  return std::nullopt;
}

} // namespace

Result<Suite> loadSuite(const std::vector<std::filesystem::path> &roots) {
  Suite suite;
  std::map<std::string, std::filesystem::path> seen; // task name -> folder that defined it
  for (const std::filesystem::path &root : roots) {
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec))
      return makeError(ErrorKind::Io, root.string() + ": task search root is not a directory");
    // Every folder is scanned and every task loaded: a broken one is reported
    // with its error and the good ones are kept.
    std::vector<std::filesystem::path> folders;
    findTaskFolders(root, folders, suite.errors);
    std::sort(folders.begin(), folders.end());
    for (const std::filesystem::path &folder : folders) {
      std::optional<Error> unreadable = unreadableTaskFile(folder / "task.toml");
      if (!unreadable) unreadable = unreadableTaskFile(folder / "reference.cu");
      if (unreadable) {
        suite.errors.push_back({folder, *unreadable});
        continue;
      }
      Result<TaskSpec> task = loadTask(folder);
      if (!task) {
        suite.errors.push_back({folder, task.error()});
        continue;
      }
      auto [previous, inserted] = seen.emplace(task->name, folder);
      if (!inserted) {
        suite.errors.push_back({folder, makeError(ErrorKind::InvalidInput,
                                                  (folder / "task.toml").string() + ": duplicate task name '" +
                                                      task->name + "' (already defined by " +
                                                      previous->second.string() + ")")});
        continue;
      }
      suite.tasks.push_back(std::move(task).value());
    }
  }
  std::stable_sort(suite.tasks.begin(), suite.tasks.end(), [](const TaskSpec &a, const TaskSpec &b) {
    return a.level != b.level ? a.level < b.level : a.name < b.name;
  });
  return suite;
}

std::filesystem::path builtinTasksDir() { return std::filesystem::path(PTXFORGE_SOURCE_DIR) / "tasks"; }

std::vector<std::filesystem::path> taskSearchRoots(const std::vector<std::filesystem::path> &extraRoots) {
  std::vector<std::filesystem::path> roots = extraRoots;
  if (const char *env = std::getenv("PTXFORGE_TASKS_DIR"); env && *env) {
    std::string_view list = env;
    while (!list.empty()) {
      size_t colon = list.find(':');
      std::string_view entry = list.substr(0, colon);
      if (!entry.empty()) roots.emplace_back(std::string(entry));
      if (colon == std::string_view::npos) break;
      list.remove_prefix(colon + 1);
    }
  }
  std::error_code ec;
  if (std::filesystem::is_directory(builtinTasksDir(), ec)) roots.push_back(builtinTasksDir());
  // The same folder named twice would report every task as a duplicate of itself.
  std::vector<std::filesystem::path> unique;
  for (const std::filesystem::path &root : roots) {
    std::filesystem::path canonical = std::filesystem::weakly_canonical(root, ec);
    if (ec) canonical = root;
    bool already = std::any_of(unique.begin(), unique.end(), [&](const std::filesystem::path &other) {
      std::error_code otherEc;
      std::filesystem::path otherCanonical = std::filesystem::weakly_canonical(other, otherEc);
      return (otherEc ? other : otherCanonical) == canonical;
    });
    if (!already) unique.push_back(root);
  }
  return unique;
}

} // namespace ptxforge::tasks
