// `ptxforge run`: see RunCommand.h. Buffers are laid out as the gate lays
// them out (verify/Check.cpp): a guard zone on either side, filled with a
// known byte and declared inaccessible to the emulator, so that an
// out-of-bounds access is a memcheck finding on the emulator and a changed
// guard byte on the GPU.
#include "RunCommand.h"

#include "Commands.h"
#include "GateOptions.h"
#include "ModelOptions.h"
#include "Output.h"
#include "emu/Arith.h"
#include "exec/Executor.h"
#include "ptx/Parser.h"
#include "support/InputReader.h"
#include "toolchain/Compiler.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <set>

namespace ptxforge::cli {
namespace {

/// Bytes of guard zone before and after every buffer (as the gate's).
constexpr uint64_t kGuardBytes = 1024;
/// The guard zones' fill; a kernel that writes this exact byte out of bounds
/// goes unnoticed on the GPU (the emulator checks every access).
constexpr uint8_t kGuardByte = 0xa5;
/// Elements of one buffer: far above any device's memory, low enough that
/// COUNT x 8 cannot overflow.
constexpr uint64_t kMaxElements = uint64_t{1} << 40;

/// An element type of a buffer or scalar.
enum class ElementType { U8, S8, U16, S16, U32, S32, U64, S64, F16, BF16, F32, F64 };

struct TypeInfo {
  const char *name;
  ElementType type;
  uint32_t bytes;
};

constexpr TypeInfo kTypes[] = {
    {"u8", ElementType::U8, 1},     {"s8", ElementType::S8, 1},     {"u16", ElementType::U16, 2},
    {"s16", ElementType::S16, 2},   {"u32", ElementType::U32, 4},   {"s32", ElementType::S32, 4},
    {"u64", ElementType::U64, 8},   {"s64", ElementType::S64, 8},   {"f16", ElementType::F16, 2},
    {"bf16", ElementType::BF16, 2}, {"f32", ElementType::F32, 4},   {"f64", ElementType::F64, 8},
    {"b8", ElementType::U8, 1},     {"b16", ElementType::U16, 2},   {"b32", ElementType::U32, 4},
    {"b64", ElementType::U64, 8},
};

std::string typeNames() {
  std::string names;
  for (const TypeInfo &info : kTypes) names += (names.empty() ? "" : ", ") + std::string(info.name);
  return names;
}

const TypeInfo *findType(std::string_view name) {
  for (const TypeInfo &info : kTypes)
    if (name == info.name) return &info;
  return nullptr;
}

bool isFloat(ElementType type) {
  return type == ElementType::F16 || type == ElementType::BF16 || type == ElementType::F32 || type == ElementType::F64;
}
bool isSigned(ElementType type) {
  return type == ElementType::S8 || type == ElementType::S16 || type == ElementType::S32 || type == ElementType::S64;
}

/// Writes `value` as `info`'s type (little-endian, as the device) at `out`.
void storeFloat(const TypeInfo &info, double value, uint8_t *out) {
  switch (info.type) {
  case ElementType::F16: {
    uint16_t bits = emu::f64ToF16(value, emu::Rounding::Rn);
    std::memcpy(out, &bits, 2);
    break;
  }
  case ElementType::BF16: {
    uint16_t bits = emu::f64ToBf16(value, emu::Rounding::Rn);
    std::memcpy(out, &bits, 2);
    break;
  }
  case ElementType::F32: {
    float f = static_cast<float>(value);
    std::memcpy(out, &f, 4);
    break;
  }
  default:
    std::memcpy(out, &value, 8);
  }
}

void storeInteger(const TypeInfo &info, uint64_t bits, uint8_t *out) { std::memcpy(out, &bits, info.bytes); }

/// One value of `info`'s type from text: decimal or 0x hex integers in the
/// type's range, any strtod number (inf, nan included) for floats.
Result<void> parseValue(const TypeInfo &info, const std::string &text, uint8_t *out) {
  auto bad = [&](std::string_view why) {
    return makeError(ErrorKind::InvalidInput, fmt::format("'{}' is not {} {}", text, why, info.name));
  };
  if (text.empty()) return bad("a value of type");
  char *end = nullptr;
  errno = 0;
  if (isFloat(info.type)) {
    double value = std::strtod(text.c_str(), &end);
    if (*end != '\0') return bad("a number of type");
    storeFloat(info, value, out);
    return {};
  }
  const unsigned bits = info.bytes * 8;
  if (isSigned(info.type)) {
    long long value = std::strtoll(text.c_str(), &end, 0);
    const long long low = bits == 64 ? std::numeric_limits<long long>::min() : -(1ll << (bits - 1));
    const long long high = bits == 64 ? std::numeric_limits<long long>::max() : (1ll << (bits - 1)) - 1;
    if (*end != '\0' || errno == ERANGE || value < low || value > high) return bad("an integer in the range of");
    storeInteger(info, static_cast<uint64_t>(value), out);
    return {};
  }
  if (text[0] == '-') return bad("an integer in the range of");
  unsigned long long value = std::strtoull(text.c_str(), &end, 0);
  const unsigned long long high = bits == 64 ? std::numeric_limits<unsigned long long>::max() : (1ull << bits) - 1;
  if (*end != '\0' || errno == ERANGE || value > high) return bad("an integer in the range of");
  storeInteger(info, value, out);
  return {};
}

/// Element `index` of `bytes` as JSON: a number (floats through double; NaN
/// and infinities as the strings "nan", "inf", "-inf", which JSON lacks).
nlohmann::json elementJson(const TypeInfo &info, const uint8_t *element) {
  auto floatJson = [](double value) -> nlohmann::json {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    return value;
  };
  switch (info.type) {
  case ElementType::U8: return element[0];
  case ElementType::S8: return static_cast<int8_t>(element[0]);
  case ElementType::U16: { uint16_t v; std::memcpy(&v, element, 2); return v; }
  case ElementType::S16: { int16_t v; std::memcpy(&v, element, 2); return v; }
  case ElementType::U32: { uint32_t v; std::memcpy(&v, element, 4); return v; }
  case ElementType::S32: { int32_t v; std::memcpy(&v, element, 4); return v; }
  case ElementType::U64: { uint64_t v; std::memcpy(&v, element, 8); return v; }
  case ElementType::S64: { int64_t v; std::memcpy(&v, element, 8); return v; }
  case ElementType::F16: { uint16_t v; std::memcpy(&v, element, 2); return floatJson(emu::f16ToF32(v)); }
  case ElementType::BF16: { uint16_t v; std::memcpy(&v, element, 2); return floatJson(emu::bf16ToF32(v)); }
  case ElementType::F32: { float v; std::memcpy(&v, element, 4); return floatJson(v); }
  case ElementType::F64: { double v; std::memcpy(&v, element, 8); return floatJson(v); }
  }
  return nullptr;
}

/// A --buffer: NAME=TYPE:COUNT[:INIT].
struct BufferSpec {
  std::string name;
  const TypeInfo *type = nullptr;
  uint64_t count = 0;
  std::vector<uint8_t> data; ///< count * type->bytes, initialized
  uint64_t bytes() const { return count * type->bytes; }
};

/// A --scalar: NAME=TYPE:VALUE.
struct ScalarSpec {
  std::string name;
  const TypeInfo *type = nullptr;
  std::vector<uint8_t> data; ///< type->bytes
};

/// A kernel argument, in the order given.
struct Argument {
  bool isBuffer = false;
  size_t index = 0; ///< into buffers or scalars
};

/// Splits "NAME=REST"; the error names the option and what it expects.
Result<std::pair<std::string, std::string>> splitName(const std::string &option, const std::string &text,
                                                      std::string_view form) {
  size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0)
    return makeError(ErrorKind::InvalidInput, fmt::format("{} '{}': expected {}", option, text, form));
  return std::make_pair(text.substr(0, equals), text.substr(equals + 1));
}

Result<const TypeInfo *> typeOf(const std::string &option, const std::string &text, const std::string &name) {
  const TypeInfo *type = findType(name);
  if (!type)
    return makeError(ErrorKind::InvalidInput,
                     fmt::format("{} '{}': unknown type '{}' (types: {})", option, text, name, typeNames()));
  return type;
}

/// Fills `buffer.data` from INIT: zeros, iota, random:SEED, @FILE or a list of values.
Result<void> initialize(BufferSpec &buffer, const std::string &init, const std::string &where) {
  const TypeInfo &type = *buffer.type;
  buffer.data.assign(buffer.bytes(), 0);
  if (init.empty() || init == "zeros") return {};
  if (init == "iota") {
    for (uint64_t i = 0; i < buffer.count; ++i) {
      uint8_t *out = buffer.data.data() + i * type.bytes;
      if (isFloat(type.type))
        storeFloat(type, static_cast<double>(i), out);
      else
        storeInteger(type, i, out); // wraps for narrow types, as a counter would
    }
    return {};
  }
  if (init.rfind("random:", 0) == 0) {
    char *end = nullptr;
    std::string seedText = init.substr(7);
    unsigned long long seed = std::strtoull(seedText.c_str(), &end, 0);
    if (seedText.empty() || *end != '\0')
      return makeError(ErrorKind::InvalidInput, fmt::format("{}: 'random:{}': the seed is not an integer", where, seedText));
    // Floats in [-1, 1); integers in [0, 100) (signed: [-100, 100)): small
    // enough for sums and products not to overflow in a test kernel.
    std::mt19937_64 generator(seed);
    std::uniform_real_distribution<double> real(-1.0, 1.0);
    std::uniform_int_distribution<int64_t> integer(isSigned(type.type) ? -100 : 0, 99);
    for (uint64_t i = 0; i < buffer.count; ++i) {
      uint8_t *out = buffer.data.data() + i * type.bytes;
      if (isFloat(type.type))
        storeFloat(type, real(generator), out);
      else
        storeInteger(type, static_cast<uint64_t>(integer(generator)), out);
    }
    return {};
  }
  if (init[0] == '@') {
    Result<size_t> limit = maxInputBytesFromEnvironment();
    if (!limit) return limit.error();
    Result<std::string> file = readFileBounded(init.substr(1), *limit);
    if (!file) return makeError(file.error().kind, where + ": " + file.error().message);
    if (file->size() != buffer.bytes())
      return makeError(ErrorKind::InvalidInput,
                       fmt::format("{}: '{}' holds {} bytes; {} {} x {} needs exactly {}", where, init.substr(1),
                                   file->size(), buffer.count, type.name, type.bytes, buffer.bytes()));
    std::memcpy(buffer.data.data(), file->data(), file->size());
    return {};
  }
  std::vector<std::string> values;
  size_t start = 0;
  while (true) {
    size_t comma = init.find(',', start);
    values.push_back(init.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (values.size() != buffer.count)
    return makeError(ErrorKind::InvalidInput,
                     fmt::format("{}: {} values given for {} elements (or give zeros, iota, random:SEED or @FILE)",
                                 where, values.size(), buffer.count));
  for (size_t i = 0; i < values.size(); ++i)
    if (Result<void> parsed = parseValue(type, values[i], buffer.data.data() + i * type.bytes); !parsed)
      return makeError(ErrorKind::InvalidInput, fmt::format("{}: value {}: {}", where, i, parsed.error().message));
  return {};
}

Result<BufferSpec> parseBuffer(const std::string &text) {
  constexpr std::string_view form = "NAME=TYPE:COUNT[:zeros|iota|random:SEED|@FILE|V1,V2,...]";
  Result<std::pair<std::string, std::string>> named = splitName("--buffer", text, form);
  if (!named) return named.error();
  const std::string &rest = named->second;
  size_t colon = rest.find(':');
  if (colon == std::string::npos)
    return makeError(ErrorKind::InvalidInput, fmt::format("--buffer '{}': expected {}", text, form));
  BufferSpec buffer;
  buffer.name = named->first;
  Result<const TypeInfo *> type = typeOf("--buffer", text, rest.substr(0, colon));
  if (!type) return type.error();
  buffer.type = *type;
  size_t next = rest.find(':', colon + 1);
  std::string countText = rest.substr(colon + 1, next == std::string::npos ? std::string::npos : next - colon - 1);
  char *end = nullptr;
  errno = 0;
  unsigned long long count = std::strtoull(countText.c_str(), &end, 10);
  if (countText.empty() || *end != '\0' || errno == ERANGE || count == 0 || count > kMaxElements ||
      countText[0] == '-')
    return makeError(ErrorKind::InvalidInput,
                     fmt::format("--buffer '{}': the count '{}' is not a positive integer", text, countText));
  buffer.count = count;
  std::string init = next == std::string::npos ? std::string() : rest.substr(next + 1);
  if (Result<void> filled = initialize(buffer, init, "--buffer " + buffer.name); !filled) return filled.error();
  return buffer;
}

Result<ScalarSpec> parseScalar(const std::string &text) {
  constexpr std::string_view form = "NAME=TYPE:VALUE";
  Result<std::pair<std::string, std::string>> named = splitName("--scalar", text, form);
  if (!named) return named.error();
  const std::string &rest = named->second;
  size_t colon = rest.find(':');
  if (colon == std::string::npos)
    return makeError(ErrorKind::InvalidInput, fmt::format("--scalar '{}': expected {}", text, form));
  ScalarSpec scalar;
  scalar.name = named->first;
  Result<const TypeInfo *> type = typeOf("--scalar", text, rest.substr(0, colon));
  if (!type) return type.error();
  scalar.type = *type;
  scalar.data.assign(scalar.type->bytes, 0);
  if (Result<void> parsed = parseValue(*scalar.type, rest.substr(colon + 1), scalar.data.data()); !parsed)
    return makeError(ErrorKind::InvalidInput, "--scalar " + scalar.name + ": " + parsed.error().message);
  return scalar;
}

/// "X[,Y[,Z]]", each at least 1.
Result<exec::Dim3> parseDim(const std::string &option, const std::string &text) {
  std::vector<uint32_t> values;
  size_t start = 0;
  while (values.size() < 4) {
    size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    char *end = nullptr;
    errno = 0;
    unsigned long value = std::strtoul(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || errno == ERANGE || value == 0 || value > 0xffffffffu || part[0] == '-')
      return makeError(ErrorKind::InvalidInput,
                       fmt::format("{} '{}': expected X[,Y,Z], positive integers", option, text));
    values.push_back(static_cast<uint32_t>(value));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (values.size() > 3)
    return makeError(ErrorKind::InvalidInput, fmt::format("{} '{}': at most three dimensions", option, text));
  exec::Dim3 dim;
  dim.x = values[0];
  if (values.size() > 1) dim.y = values[1];
  if (values.size() > 2) dim.z = values[2];
  return dim;
}

struct RunCli {
  std::string file;
  std::string kernel;
  std::string grid, block;
  uint32_t sharedBytes = 0;
  std::vector<std::string> buffers, scalars, dumps;
  std::string executor = "auto";
  std::string format = "text";
  uint32_t timeoutMs = 0;
  /// --buffer and --scalar interleaved as given: the kernel's parameter order.
  std::vector<bool> argumentIsBuffer;
};

/// Bytes of a PTX parameter's type (`u64` -> 8); 0 for types without a size.
uint32_t paramBytes(const ptx::VariableDecl &param) {
  uint64_t elements = 1;
  for (uint64_t dim : param.arrayDims) elements *= dim;
  const std::string &type = param.type;
  size_t digits = type.find_first_of("0123456789");
  if (digits == std::string::npos) return 0;
  uint32_t bits = static_cast<uint32_t>(std::strtoul(type.c_str() + digits, nullptr, 10));
  if (type.find('x') != std::string::npos) bits *= 2; // f16x2, bf16x2
  return static_cast<uint32_t>(bits / 8 * elements * std::max(1u, param.vectorWidth));
}

std::string describeParam(const ptx::VariableDecl &param) {
  std::string text = ".param ." + param.type + " " + param.name;
  for (uint64_t dim : param.arrayDims) text += fmt::format("[{}]", dim);
  return text;
}

/// The entry's parameters against the arguments given: count, and for each
/// the size (a buffer is a 64-bit address).
Result<void> checkSignature(const ptx::Function &entry, const std::vector<Argument> &arguments,
                            const std::vector<BufferSpec> &buffers, const std::vector<ScalarSpec> &scalars) {
  std::string signature;
  for (const ptx::VariableDecl &param : entry.params)
    signature += (signature.empty() ? "" : ", ") + describeParam(param);
  if (entry.params.size() != arguments.size())
    return makeError(ErrorKind::InvalidInput,
                     fmt::format("'{}' takes {} parameters ({}); {} given (--buffer and --scalar, in order)",
                                 entry.name, entry.params.size(), signature, arguments.size()));
  for (size_t i = 0; i < arguments.size(); ++i) {
    const ptx::VariableDecl &param = entry.params[i];
    const Argument &argument = arguments[i];
    const std::string given = argument.isBuffer ? "--buffer " + buffers[argument.index].name + " (an address, 8 bytes)"
                                                : fmt::format("--scalar {} ({}, {} bytes)", scalars[argument.index].name,
                                                              scalars[argument.index].type->name,
                                                              scalars[argument.index].type->bytes);
    const uint32_t expected = argument.isBuffer ? 8 : scalars[argument.index].type->bytes;
    if (paramBytes(param) != expected)
      return makeError(ErrorKind::InvalidInput,
                       fmt::format("parameter {} of '{}' is `{}` ({} bytes), but argument {} is {}", i + 1,
                                   entry.name, describeParam(param), paramBytes(param), i + 1, given));
  }
  return {};
}

/// What came back: the findings, guard damage, outputs.
struct RunReport {
  std::string executor;
  std::optional<Error> launchError;
  std::vector<exec::LaunchFinding> findings; ///< the executor's and the guard zones' ("guard")
  nlohmann::json outputs = nlohmann::json::object();
  std::vector<std::pair<std::string, std::string>> written; ///< buffer, path
};

Result<std::vector<uint8_t>> moduleImage(exec::Executor &executor, const std::string &ptxText, const ptx::Module &module,
                                         const std::string &kernel) {
  if (executor.moduleFormat() == exec::ModuleFormat::Ptx) return std::vector<uint8_t>(ptxText.begin(), ptxText.end());
  toolchain::CompileOptions options;
  // A module for the device's arch-specific variant (`.target sm_90a` on an
  // sm_90 GPU) compiles for that variant, as check does.
  options.arch = ptx::compileArchFor(module, executor.properties().arch());
  options.entryName = kernel;
  Result<toolchain::CompileResult> compiled = toolchain::compilePtx(ptxText, options);
  if (!compiled) return compiled.error();
  if (!compiled->ok) {
    std::string why = compiled->diagnostics.empty() ? compiled->errorLog : compiled->diagnostics.front().message;
    return makeError(ErrorKind::Compile, "does not compile for " + options.arch + ": " + why);
  }
  return std::move(compiled->cubin);
}

int runKernel(const RunCli &cli) {
  const std::string &format = cli.format;
  // Arguments first: a typo should not wait for an executor to start.
  std::vector<BufferSpec> buffers;
  std::vector<ScalarSpec> scalars;
  std::vector<Argument> arguments;
  std::set<std::string> names;
  size_t nextBuffer = 0, nextScalar = 0;
  for (bool isBuffer : cli.argumentIsBuffer) {
    std::string name;
    if (isBuffer) {
      Result<BufferSpec> buffer = parseBuffer(cli.buffers[nextBuffer++]);
      if (!buffer) return fail(format, buffer.error());
      name = buffer->name;
      arguments.push_back({true, buffers.size()});
      buffers.push_back(std::move(buffer.value()));
    } else {
      Result<ScalarSpec> scalar = parseScalar(cli.scalars[nextScalar++]);
      if (!scalar) return fail(format, scalar.error());
      name = scalar->name;
      arguments.push_back({false, scalars.size()});
      scalars.push_back(std::move(scalar.value()));
    }
    if (!names.insert(name).second) return fail(format, fmt::format("two arguments are named '{}'", name));
  }
  std::vector<std::pair<size_t, std::string>> dumps; ///< buffer index, path ("" : print)
  for (const std::string &dump : cli.dumps) {
    size_t equals = dump.find('=');
    std::string name = dump.substr(0, equals);
    std::string path = equals == std::string::npos ? std::string() : dump.substr(equals + 1);
    auto found = std::find_if(buffers.begin(), buffers.end(), [&](const BufferSpec &b) { return b.name == name; });
    if (found == buffers.end())
      return fail(format, fmt::format("--dump {}: no --buffer named '{}'", dump, name));
    if (equals != std::string::npos && path.empty()) return fail(format, fmt::format("--dump {}: empty path", dump));
    dumps.emplace_back(static_cast<size_t>(found - buffers.begin()), path);
  }
  Result<exec::Dim3> grid = parseDim("--grid", cli.grid);
  if (!grid) return fail(format, grid.error());
  Result<exec::Dim3> block = parseDim("--block", cli.block);
  if (!block) return fail(format, block.error());

  Result<Input> input = readInput(cli.file);
  if (!input) return fail(format, input.error());
  ptx::ParseResult parsed = ptx::parse(input->text);
  if (!parsed.diagnostics.empty()) {
    if (format != "json") std::cerr << ptx::formatDiagnosticsText(parsed.diagnostics, input->name, input->text);
    const ptx::Diagnostic &first = parsed.diagnostics.front();
    Error error = makeError(ErrorKind::InvalidInput, input->name + ": the PTX does not parse: " + first.message);
    error.line = first.line;
    return fail(format, error);
  }
  const ptx::Function *entry = nullptr;
  std::string entries;
  for (const ptx::TopLevel &item : parsed.module.items)
    if (item.kind == ptx::TopLevel::Kind::Function && item.function.isEntry) {
      entries += (entries.empty() ? "" : ", ") + item.function.name;
      if (item.function.name == cli.kernel) entry = &item.function;
    }
  if (!entry)
    return fail(format, fmt::format("{}: no .entry '{}' (entries: {})", input->name, cli.kernel,
                                    entries.empty() ? std::string("none") : entries));
  if (Result<void> matches = checkSignature(*entry, arguments, buffers, scalars); !matches)
    return fail(format, matches.error());

  std::string unavailable;
  std::unique_ptr<exec::Executor> executor = createExecutor(cli.executor, unavailable);
  if (!executor) return fail(format, "no executor: " + unavailable);
  RunReport report;
  report.executor = executor->properties().backend;
  Result<std::vector<uint8_t>> image = moduleImage(*executor, input->text, parsed.module, cli.kernel);
  if (!image) return fail(format, makeError(image.error().kind, input->name + ": " + image.error().message));
  Result<exec::ModuleHandle> module = executor->loadModule(*image, executor->moduleFormat());
  if (!module) return fail(format, module.error());
  Result<exec::KernelInfo> kernel = executor->getKernel(*module, cli.kernel);
  if (!kernel) return fail(format, kernel.error());

  std::vector<exec::DeviceBuffer> device;
  exec::KernelArgs args;
  for (const BufferSpec &buffer : buffers) {
    Result<exec::DeviceBuffer> allocated = executor->allocateBuffer(buffer.bytes() + 2 * kGuardBytes);
    if (!allocated) return fail(format, makeError(allocated.error().kind, "--buffer " + buffer.name + ": " + render(allocated.error())));
    if (Result<void> ranged = executor->setAccessibleRange(allocated->handle(), kGuardBytes, buffer.bytes()); !ranged)
      return fail(format, ranged.error());
    std::vector<uint8_t> layout(buffer.bytes() + 2 * kGuardBytes, kGuardByte);
    std::memcpy(layout.data() + kGuardBytes, buffer.data.data(), buffer.bytes());
    if (Result<void> copied = executor->copyToDevice(allocated->handle(), 0, layout.data(), layout.size()); !copied)
      return fail(format, copied.error());
    device.push_back(std::move(allocated.value()));
  }
  for (const Argument &argument : arguments) {
    if (argument.isBuffer)
      args.buffer(device[argument.index].handle(), kGuardBytes);
    else {
      const ScalarSpec &scalar = scalars[argument.index];
      args.raw(scalar.data.data(), scalar.data.size(), scalar.data.size());
    }
  }
  exec::LaunchConfig config;
  config.grid = *grid;
  config.block = *block;
  config.dynamicSharedBytes = cli.sharedBytes;
  config.timeoutMs = cli.timeoutMs;
  if (Result<void> launched = executor->launch(kernel->handle, config, args.pack()); !launched)
    report.launchError = launched.error();
  report.findings = executor->takeFindings();

  // After a crash the buffers are gone; otherwise read them back whole, guards included.
  if (!report.launchError) {
    for (size_t i = 0; i < buffers.size(); ++i) {
      BufferSpec &buffer = buffers[i];
      std::vector<uint8_t> layout(buffer.bytes() + 2 * kGuardBytes);
      if (Result<void> copied = executor->copyToHost(layout.data(), device[i].handle(), 0, layout.size()); !copied)
        return fail(format, copied.error());
      for (int side = 0; side < 2; ++side) {
        const uint8_t *guard = layout.data() + (side == 0 ? 0 : kGuardBytes + buffer.bytes());
        size_t changed = 0, first = 0;
        for (size_t b = 0; b < kGuardBytes; ++b)
          if (guard[b] != kGuardByte && changed++ == 0) first = b;
        if (changed)
          report.findings.push_back(
              {"guard", true,
               fmt::format("{} byte(s) {} buffer '{}' changed (first: byte {} {} it)", changed,
                           side == 0 ? "before" : "after", buffer.name,
                           side == 0 ? kGuardBytes - first : first + 1, side == 0 ? "before" : "after"),
               0});
      }
      std::memcpy(buffer.data.data(), layout.data() + kGuardBytes, buffer.bytes());
    }
    for (const auto &[index, path] : dumps) {
      const BufferSpec &buffer = buffers[index];
      if (!path.empty()) {
        std::string_view bytes(reinterpret_cast<const char *>(buffer.data.data()), buffer.data.size());
        if (Result<void> written = writeTextFile(path, bytes); !written) return fail(format, written.error());
        report.written.emplace_back(buffer.name, path);
        report.outputs[buffer.name] = {{"type", buffer.type->name}, {"count", buffer.count}, {"path", path}};
        continue;
      }
      nlohmann::json values = nlohmann::json::array();
      for (uint64_t e = 0; e < buffer.count; ++e)
        values.push_back(elementJson(*buffer.type, buffer.data.data() + e * buffer.type->bytes));
      report.outputs[buffer.name] = {{"type", buffer.type->name}, {"count", buffer.count}, {"values", std::move(values)}};
    }
  }

  const bool clean = !report.launchError && report.findings.empty();
  if (format == "json") {
    nlohmann::json findings = nlohmann::json::array();
    for (const exec::LaunchFinding &finding : report.findings) {
      nlohmann::json f = {{"check", finding.check}, {"fatal", finding.fatal}, {"message", finding.message}};
      f["line"] = finding.line ? nlohmann::json(finding.line) : nlohmann::json(nullptr);
      findings.push_back(std::move(f));
    }
    nlohmann::json document = {
        {"ok", clean},
        {"file", input->name},
        {"kernel", cli.kernel},
        {"executor", report.executor},
        {"grid", {grid->x, grid->y, grid->z}},
        {"block", {block->x, block->y, block->z}},
        {"error", report.launchError ? nlohmann::json(render(*report.launchError)) : nlohmann::json(nullptr)},
        {"findings", std::move(findings)},
        {"outputs", report.outputs}};
    std::cout << document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    return clean ? kExitOk : kExitErrors;
  }
  fmt::print("ran {} on {}: grid {},{},{} block {},{},{}\n", cli.kernel, report.executor, grid->x, grid->y, grid->z,
             block->x, block->y, block->z);
  bool fatalFinding = false;
  for (const exec::LaunchFinding &finding : report.findings) {
    // The emulator's messages already open with their check's name.
    std::string message = finding.message.rfind(finding.check + ": ", 0) == 0
                              ? finding.message.substr(finding.check.size() + 2)
                              : finding.message;
    fmt::print("{}{}: {}{}: {}\n", input->name, finding.line ? fmt::format(":{}", finding.line) : std::string(),
               finding.check, finding.fatal ? "" : " (warning)", message);
    fatalFinding = fatalFinding || finding.fatal;
  }
  if (report.launchError)
    fmt::print("launch failed: {}\n", fatalFinding ? std::string("stopped at the finding above")
                                                   : render(*report.launchError));
  for (const auto &[index, path] : dumps) {
    const BufferSpec &buffer = buffers[index];
    if (report.launchError) break;
    if (!path.empty()) {
      fmt::print("{} ({}[{}]) written to {}\n", buffer.name, buffer.type->name, buffer.count, path);
      continue;
    }
    std::string values;
    for (const nlohmann::json &value : report.outputs[buffer.name]["values"])
      values += (values.empty() ? "" : " ") + (value.is_string() ? value.get<std::string>() : value.dump());
    fmt::print("{} ({}[{}]): {}\n", buffer.name, buffer.type->name, buffer.count, values);
  }
  return clean ? kExitOk : kExitErrors;
}

} // namespace

void registerRunCommand(CLI::App &app, int &exitCode) {
  auto shared = std::make_shared<RunCli>();
  RunCli &cli = *shared;
  CLI::App *command = app.add_subcommand(
      "run", "Run any kernel of a PTX file on buffers and scalars given here, and print or write its outputs");
  command->add_option("file", cli.file, "PTX file (- for standard input)")->required();
  command->add_option("--kernel,-k", cli.kernel, "The .entry to launch")->required();
  command->add_option("--grid", cli.grid, "Blocks: X[,Y,Z]")->required();
  command->add_option("--block", cli.block, "Threads per block: X[,Y,Z]")->required();
  command->add_option("--smem", cli.sharedBytes, "Dynamic shared memory bytes")->capture_default_str();
  CLI::Option *bufferOption = command->add_option(
      "--buffer", cli.buffers,
      "A buffer parameter: NAME=TYPE:COUNT[:INIT], INIT one of zeros (default), iota, random:SEED, @FILE (raw "
      "little-endian), V1,V2,... (repeatable; parameters in the order given)")
      ->allow_extra_args(false);
  CLI::Option *scalarOption =
      command->add_option("--scalar", cli.scalars, "A scalar parameter: NAME=TYPE:VALUE (repeatable)")
          ->allow_extra_args(false);
  command->add_option("--dump", cli.dumps, "Print buffer NAME after the launch, or write it raw to PATH: NAME[=PATH] "
                                           "(repeatable)")
      ->allow_extra_args(false);
  command->add_option("--executor", cli.executor, "gpu, emu, or auto (the GPU when there is one)")
      ->check(CLI::IsMember({"gpu", "emu", "auto"}))
      ->envname("PTXFORGE_EXECUTOR")
      ->capture_default_str();
  command->add_option("--timeout-ms", cli.timeoutMs, "Watchdog deadline of the launch (0: the executor's default)");
  addFormatFlag(command, cli.format);
  command->callback([&exitCode, shared, command, bufferOption, scalarOption] {
    // CLI11 keeps each option's values apart; the parse order interleaves them.
    shared->argumentIsBuffer.clear();
    for (const CLI::Option *option : command->parse_order()) {
      if (option == bufferOption) shared->argumentIsBuffer.push_back(true);
      if (option == scalarOption) shared->argumentIsBuffer.push_back(false);
    }
    assert(shared->argumentIsBuffer.size() == shared->buffers.size() + shared->scalars.size() &&
           "one value per --buffer / --scalar occurrence (allow_extra_args(false))");
    exitCode = runKernel(*shared);
  });
}

} // namespace ptxforge::cli
