// The Executor interface over the emulator.
#include "emu/EmuExecutor.h"

#include "emu/Async.h"
#include "emu/Decoder.h"
#include "emu/Profile.h"
#include "ptx/Parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <thread>

namespace ptxforge::emu {

namespace {

using exec::ExecErrorKind;
using exec::makeExecError;

/// A launch the driver would refuse, with the driver's error name as its
/// cause (what GpuExecutor reports for the same launch).
Error refused(ExecErrorKind kind, const std::string &message, const char *cause) {
  Error error = makeExecError(kind, message + " (" + cause + ")");
  error.cause = cause;
  return error;
}

constexpr uint64_t kAllocationGap = uint64_t(1) << 20; // unmapped space between buffers

class EmuExecutor final : public exec::Executor {
public:
  explicit EmuExecutor(const EmuOptions &options) : options_(options) {
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    properties_.name = "ptxforge PTX emulator";
    properties_.smMajor = options.smMajor;
    properties_.smMinor = options.smMinor;
    properties_.totalMemoryBytes = uint64_t(16) << 30;
    properties_.multiprocessorCount = static_cast<int>(options.checks.hostThreads ? options.checks.hostThreads : cores);
    properties_.maxThreadsPerBlock = 1024;
    properties_.maxSharedBytesPerBlockOptin = 227 * 1024;
    properties_.warpSize = static_cast<int>(kWarpSize);
    properties_.backend = "emu";
  }

  const exec::DeviceProperties &properties() const override { return properties_; }
  exec::ModuleFormat moduleFormat() const override { return exec::ModuleFormat::Ptx; }

  Result<exec::BufferHandle> allocate(uint64_t bytes) override {
    if (bytes > properties_.totalMemoryBytes)
      return makeExecError(ExecErrorKind::OutOfMemory, fmt::format("cannot allocate {} bytes", bytes));
    auto allocation = std::make_unique<Allocation>();
    allocation->base = reserve(bytes);
    try {
      allocation->bytes.assign(bytes, 0);
    } catch (const std::bad_alloc &) {
      return makeExecError(ExecErrorKind::OutOfMemory, fmt::format("cannot allocate {} bytes of host memory", bytes));
    }
    allocation->accessibleBegin = 0;
    allocation->accessibleEnd = bytes;
    exec::BufferHandle handle{allocation->base};
    buffers_[allocation->base] = std::move(allocation);
    return handle;
  }

  Result<void> free(exec::BufferHandle buffer) override {
    if (!buffers_.erase(buffer.value))
      return makeExecError(ExecErrorKind::InvalidArgument, fmt::format("free of an unknown buffer 0x{:x}", buffer.value));
    return {};
  }

  Result<void> copyToDevice(exec::BufferHandle dst, uint64_t dstOffset, const void *src, uint64_t bytes) override {
    Result<uint8_t *> p = span(dst, dstOffset, bytes);
    if (!p) return p.error();
    if (bytes) std::memcpy(*p, src, bytes);
    return {};
  }
  Result<void> copyToHost(void *dst, exec::BufferHandle src, uint64_t srcOffset, uint64_t bytes) override {
    Result<uint8_t *> p = span(src, srcOffset, bytes);
    if (!p) return p.error();
    if (bytes) std::memcpy(dst, *p, bytes);
    return {};
  }
  Result<void> memset(exec::BufferHandle dst, uint64_t dstOffset, uint8_t value, uint64_t bytes) override {
    Result<uint8_t *> p = span(dst, dstOffset, bytes);
    if (!p) return p.error();
    if (bytes) std::memset(*p, value, bytes);
    return {};
  }
  Result<void> setAccessibleRange(exec::BufferHandle buffer, uint64_t offset, uint64_t bytes) override {
    auto it = buffers_.find(buffer.value);
    if (it == buffers_.end())
      return makeExecError(ExecErrorKind::InvalidArgument, fmt::format("unknown buffer 0x{:x}", buffer.value));
    if (offset > it->second->bytes.size() || bytes > it->second->bytes.size() - offset)
      return makeExecError(ExecErrorKind::InvalidArgument, "accessible range outside the buffer");
    it->second->accessibleBegin = offset;
    it->second->accessibleEnd = offset + bytes;
    return {};
  }

  Result<exec::ModuleHandle> loadModule(const std::vector<uint8_t> &image, exec::ModuleFormat format) override {
    if (format != exec::ModuleFormat::Ptx)
      return makeExecError(ExecErrorKind::ModuleLoad, "the emulator runs PTX, not cubins (ModuleFormat::Ptx)");
    std::string text(image.begin(), image.end());
    while (!text.empty() && text.back() == '\0') text.pop_back();
    ptx::ParseResult parsed = ptx::parse(text);
    for (const ptx::Diagnostic &d : parsed.diagnostics)
      if (d.severity == ptx::Severity::Error)
        return makeExecError(ExecErrorKind::ModuleLoad, "the PTX does not parse: " + d.message, d.line);
    uint64_t globalBase = reserve(uint64_t(64) << 20);
    Result<Program> program = decodeModule(parsed.module, globalBase);
    if (!program) {
      // The decoder's code says whether the emulator lacks a feature (not the
      // module's fault) or the module makes no sense; its line travels as is.
      const Error &error = program.error();
      return makeExecError(error.code == kEmuUnsupportedCode ? ExecErrorKind::EmuUnsupported : ExecErrorKind::ModuleLoad,
                           error.message, error.line);
    }
    auto module = std::make_unique<Module>();
    module->program = std::move(*program);
    if (module->program.globalImage.size() > (uint64_t(64) << 20))
      return makeExecError(ExecErrorKind::ModuleLoad, "the module's .global variables exceed 64 MiB");
    module->globals.base = globalBase;
    module->globals.bytes = module->program.globalImage;
    module->globals.accessibleBegin = 0;
    module->globals.accessibleEnd = module->globals.bytes.size();
    uint64_t id = nextModule_++;
    modules_[id] = std::move(module);
    return exec::ModuleHandle{id};
  }

  Result<void> unloadModule(exec::ModuleHandle module) override {
    auto it = modules_.find(module.value);
    if (it == modules_.end())
      return makeExecError(ExecErrorKind::InvalidArgument, fmt::format("unknown module {}", module.value));
    for (auto view = globalViews_.begin(); view != globalViews_.end();)
      view = view->second.module == it->second.get() ? globalViews_.erase(view) : std::next(view);
    modules_.erase(it);
    return {};
  }

  Result<exec::GlobalVariable> getGlobal(exec::ModuleHandle module, const std::string &name) override {
    auto it = modules_.find(module.value);
    if (it == modules_.end())
      return makeExecError(ExecErrorKind::InvalidArgument, fmt::format("unknown module {}", module.value));
    const auto &variables = it->second->program.globalVariables;
    auto found = variables.find(name);
    if (found == variables.end())
      return makeExecError(ExecErrorKind::InvalidArgument, fmt::format("the module has no .global '{}'", name));
    const auto [offset, bytes] = found->second;
    // The variable's own address is its handle: the copy calls find it here.
    const uint64_t handle = it->second->globals.base + offset;
    globalViews_[handle] = {it->second.get(), offset, bytes};
    return exec::GlobalVariable{exec::BufferHandle{handle}, bytes};
  }

  Result<exec::KernelInfo> getKernel(exec::ModuleHandle module, const std::string &name) override {
    auto it = modules_.find(module.value);
    if (it == modules_.end())
      return makeExecError(ExecErrorKind::InvalidArgument, fmt::format("unknown module {}", module.value));
    const Program &program = it->second->program;
    for (size_t i = 0; i < program.kernels.size(); ++i) {
      if (program.kernels[i].name != name) continue;
      exec::KernelInfo info;
      info.handle = exec::KernelHandle{(module.value << 32) | i};
      info.maxThreadsPerBlock = program.kernels[i].maxThreads ? static_cast<int>(program.kernels[i].maxThreads) : 1024;
      info.registerCount = 0; // the emulator has no register allocator; ptxas's count is in the compile report
      info.staticSharedBytes = static_cast<int>(program.kernels[i].staticSharedBytes);
      info.localBytes = static_cast<int>(program.localBytes);
      return info;
    }
    return makeExecError(ExecErrorKind::ModuleLoad, fmt::format("the module has no kernel '{}'", name));
  }

  Result<void> launch(exec::KernelHandle kernel, const exec::LaunchConfig &config, const exec::PackedArgs &args) override {
    auto it = modules_.find(kernel.value >> 32);
    if (it == modules_.end())
      return makeExecError(ExecErrorKind::InvalidArgument, fmt::format("unknown kernel handle 0x{:x}", kernel.value));
    Module &module = *it->second;
    const Program &program = module.program;
    size_t index = kernel.value & 0xffffffffu;
    if (index >= program.kernels.size())
      return makeExecError(ExecErrorKind::InvalidArgument, fmt::format("unknown kernel handle 0x{:x}", kernel.value));
    const KernelDesc &desc = program.kernels[index];

    uint64_t threads = uint64_t(config.block.x) * config.block.y * config.block.z;
    uint64_t ctas = uint64_t(config.grid.x) * config.grid.y * config.grid.z;
    if (threads == 0 || ctas == 0)
      return refused(ExecErrorKind::LaunchError, "empty grid or block", "CUDA_ERROR_INVALID_VALUE");
    if (threads > 1024 || config.block.z > 64)
      return refused(ExecErrorKind::LaunchError,
                     fmt::format("a block of {} threads exceeds the limit of 1024", threads),
                     "CUDA_ERROR_INVALID_VALUE");
    if (desc.maxThreads && threads > desc.maxThreads)
      return refused(ExecErrorKind::LaunchError,
                     fmt::format("a block of {} threads exceeds the kernel's .maxntid/.reqntid of {}", threads,
                                 desc.maxThreads),
                     "CUDA_ERROR_INVALID_VALUE");
    if (desc.reqntid[0] && (config.block.x != desc.reqntid[0] || config.block.y != desc.reqntid[1] ||
                            config.block.z != desc.reqntid[2]))
      return refused(ExecErrorKind::LaunchError, "the block does not match the kernel's .reqntid",
                     "CUDA_ERROR_INVALID_VALUE");
    if (desc.clusterDim[0]) {
      // A cluster launch: the grid is whole clusters, of at most 8 CTAs (the
      // portable size; more needs an attribute the gate does not set).
      const uint32_t *c = desc.clusterDim;
      if (desc.clusterSize() > 8)
        return refused(ExecErrorKind::LaunchError,
                       fmt::format("a cluster of {}x{}x{} CTAs exceeds the portable cluster size of 8", c[0], c[1],
                                   c[2]),
                       "CUDA_ERROR_INVALID_CLUSTER_SIZE");
      if (config.grid.x % c[0] || config.grid.y % c[1] || config.grid.z % c[2])
        return refused(ExecErrorKind::LaunchError,
                       fmt::format("the grid ({},{},{}) is not a whole number of {}x{}x{} clusters", config.grid.x,
                                   config.grid.y, config.grid.z, c[0], c[1], c[2]),
                       "CUDA_ERROR_INVALID_CLUSTER_SIZE");
    }
    if (config.grid.y > 65535 || config.grid.z > 65535)
      return refused(ExecErrorKind::LaunchError, "grid.y and grid.z are limited to 65535",
                     "CUDA_ERROR_INVALID_VALUE");
    uint64_t shared = program.sharedBytesOf(desc, config.dynamicSharedBytes);
    if (shared > uint64_t(properties_.maxSharedBytesPerBlockOptin))
      return refused(ExecErrorKind::LaunchError,
                     fmt::format("{} bytes of shared memory exceed the limit of {}", shared,
                                 properties_.maxSharedBytesPerBlockOptin),
                     "CUDA_ERROR_INVALID_VALUE");
    // The emulator's own memory per CTA: every thread's registers and local memory.
    constexpr uint64_t kCtaBudget = uint64_t(256) << 20;
    // A cluster's CTAs are alive together.
    uint64_t together = threads * desc.clusterSize();
    if (together * program.slotCount * 8 > kCtaBudget || together * program.localBytes > kCtaBudget)
      return refused(ExecErrorKind::OutOfResources,
                     fmt::format("{} threads x ({} registers, {} bytes of local memory) exceed the emulator's "
                                 "256 MiB per CTA (or cluster)",
                                 together, program.slotCount, program.localBytes),
                     "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
    if (args.bytes.size() < desc.paramBytes)
      return makeExecError(ExecErrorKind::InvalidArgument,
                           fmt::format("the kernel takes {} bytes of parameters; {} were given", desc.paramBytes,
                                       args.bytes.size()));

    // Parameters: buffers become their device address plus the offset.
    std::vector<uint8_t> params = args.bytes;
    for (const exec::PackedArgs::Slot &slot : args.slots) {
      if (!slot.isBuffer) continue;
      uint64_t handle = 0;
      std::memcpy(&handle, params.data() + slot.offset, std::min<size_t>(8, slot.size));
      if (!buffers_.count(handle))
        return makeExecError(ExecErrorKind::InvalidArgument, fmt::format("stale or unknown buffer 0x{:x}", handle));
      uint64_t address = handle + slot.bufferOffset;
      std::memcpy(params.data() + slot.offset, &address, std::min<size_t>(8, slot.size));
    }

    Launch launch;
    launch.program = &program;
    launch.kernel = &desc;
    for (auto &[base, allocation] : buffers_) launch.allocations.push_back(allocation.get());
    launch.allocations.push_back(&module.globals);
    std::sort(launch.allocations.begin(), launch.allocations.end(),
              [](const Allocation *a, const Allocation *b) { return a->base < b->base; });
    launch.params = params.data();
    launch.paramBytes = static_cast<uint32_t>(params.size());
    launch.grid = {config.grid.x, config.grid.y, config.grid.z};
    launch.block = {config.block.x, config.block.y, config.block.z};
    launch.dynamicSharedBytes = config.dynamicSharedBytes;
    launch.checks = options_.checks;
    uint32_t timeoutMs = config.timeoutMs ? config.timeoutMs : options_.checks.timeoutMs;
    if (timeoutMs) {
      launch.checks.timeoutMs = timeoutMs;
      launch.hasDeadline = true;
      launch.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    }
    // A profiled launch runs an instrumented copy of the program (Profile.h).
    std::unique_ptr<LaunchProfiler> profiler;
    if (config.profile) {
      profiler = std::make_unique<LaunchProfiler>(program);
      launch.program = &profiler->program();
      launch.profile = profiler.get();
    }
    auto start = std::chrono::steady_clock::now();
    runLaunch(launch);
    if (profiler) profiles_.push_back(profiler->finish(launch));
    counters_.launches += 1;
    counters_.warpInstructions += launch.steps.load();
    counters_.threadInstructions += launch.threadInstructions.load();
    counters_.launchSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const Finding *fatal = nullptr;
    for (const Finding &f : launch.findings) {
      findings_.push_back({f.check, f.fatal, f.text(), f.line, f.column});
      if (f.fatal && !fatal) fatal = &f;
    }
    if (fatal) {
      if (fatal->check == "timeout") // the kind's name already says it
        return makeExecError(ExecErrorKind::Timeout, fatal->message.substr(fatal->message.rfind("timeout: ", 0) == 0 ? 9 : 0));
      return makeExecError(ExecErrorKind::Crashed, fatal->message);
    }
    return {};
  }

  Result<exec::TensorMapBytes> encodeTensorMap(exec::BufferHandle buffer, uint64_t byteOffset,
                                               const exec::TensorMapSpec &spec) override {
    const uint64_t address = buffer.value + byteOffset;
    if (std::vector<std::string> problems = exec::tensorMapProblems(spec, address); !problems.empty()) {
      std::string text;
      for (const std::string &problem : problems) text += (text.empty() ? "" : "; ") + problem;
      return makeExecError(ExecErrorKind::InvalidArgument, "tensor map " + exec::describeTensorMap(spec) + ": " + text);
    }
    // As on the GPU, the tensor must lie inside the buffer; the copies check every element against memcheck too.
    if (Result<uint8_t *> inside = span(buffer, byteOffset, exec::tensorMapFootprintBytes(spec)); !inside)
      return makeExecError(ExecErrorKind::InvalidArgument, "tensor map " + exec::describeTensorMap(spec) + ": " +
                                                               inside.error().message);
    return encodeEmuTensorMap(address, spec);
  }

  Result<void> synchronize() override { return {}; }

  Result<std::vector<float>> timeLaunch(exec::KernelHandle, const exec::LaunchConfig &, const exec::PackedArgs &,
                                        const exec::TimingOptions &) override {
    return makeExecError(ExecErrorKind::Internal,
                         "the emulator cannot time kernels: timing needs a GPU (--executor gpu)");
  }
  Result<void> flushL2() override { return {}; }

  std::vector<exec::LaunchFinding> takeFindings() override { return std::exchange(findings_, {}); }
  std::vector<exec::LaunchProfile> takeProfiles() override { return std::exchange(profiles_, {}); }
  const EmuCounters &counters() const { return counters_; }

private:
  struct Module {
    Program program;
    Allocation globals;
  };

  uint64_t reserve(uint64_t bytes) {
    uint64_t base = nextAddress_;
    nextAddress_ = (base + bytes + kAllocationGap + 255) & ~uint64_t(255);
    return base;
  }

  Result<uint8_t *> span(exec::BufferHandle buffer, uint64_t offset, uint64_t bytes) {
    if (auto view = globalViews_.find(buffer.value); view != globalViews_.end()) {
      const GlobalView &global = view->second;
      if (offset > global.bytes || bytes > global.bytes - offset)
        return makeExecError(ExecErrorKind::InvalidArgument,
                             fmt::format("copy of {} bytes at offset {} outside the {}-byte module variable", bytes,
                                         offset, global.bytes));
      return global.module->globals.bytes.data() + global.offset + offset;
    }
    auto it = buffers_.find(buffer.value);
    if (it == buffers_.end())
      return makeExecError(ExecErrorKind::InvalidArgument, fmt::format("unknown or freed buffer 0x{:x}", buffer.value));
    std::vector<uint8_t> &data = it->second->bytes;
    if (offset > data.size() || bytes > data.size() - offset)
      return makeExecError(ExecErrorKind::InvalidArgument,
                           fmt::format("copy of {} bytes at offset {} outside the {}-byte buffer", bytes, offset,
                                       data.size()));
    return data.data() + offset;
  }

  EmuOptions options_;
  exec::DeviceProperties properties_;
  std::map<uint64_t, std::unique_ptr<Allocation>> buffers_;
  std::map<uint64_t, std::unique_ptr<Module>> modules_;
  /// Module variables handed out by getGlobal, by handle (their address).
  struct GlobalView {
    Module *module = nullptr;
    uint64_t offset = 0, bytes = 0;
  };
  std::map<uint64_t, GlobalView> globalViews_;
  uint64_t nextModule_ = 1;
  uint64_t nextAddress_ = kGlobalBase;
  std::vector<exec::LaunchFinding> findings_;
  std::vector<exec::LaunchProfile> profiles_;
  EmuCounters counters_;
};

} // namespace

std::unique_ptr<exec::Executor> createEmuExecutor(const EmuOptions &options) {
  return std::make_unique<EmuExecutor>(options);
}

std::optional<EmuCounters> emuCounters(const exec::Executor &executor) {
  if (const auto *emu = dynamic_cast<const EmuExecutor *>(&executor)) return emu->counters();
  return std::nullopt;
}

} // namespace ptxforge::emu
