// GpuExecutor: Executor over the dlopen'd CUDA driver API. Every driver object
// (primary context, modules, allocations, events) is owned here and released
// in the destructor; every driver call is checked and its failure classified.
// Vendor-library calls go to cuBLAS, also dlopen'd, on first use.
#include "exec/GpuExecutor.h"

#include "exec/CudaDriver.h"
#include "exec/ColumnMajorCall.h"
#if PTXFORGE_HAVE_CUBLAS
#include "exec/Cublas.h"
#include "exec/CublasLt.h"
#endif

#include <climits>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ptxforge::exec {

namespace {

/// Kernel faults leave the context unusable ("sticky" errors): everything in it
/// is gone and only a new process (or a primary-context reset) recovers.
bool isStickyError(CUresult result) {
  switch (result) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED:
  case CUDA_ERROR_UNKNOWN:
    return true;
  default:
    return false;
  }
}

ExecErrorKind classify(CUresult result, ExecErrorKind fallback) {
  if (isStickyError(result))
    return ExecErrorKind::Crashed;
  switch (result) {
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return ExecErrorKind::OutOfResources;
  case CUDA_ERROR_OUT_OF_MEMORY: return ExecErrorKind::OutOfMemory;
  default: return fallback;
  }
}

std::string formatDim(const Dim3 &dim) {
  return "(" + std::to_string(dim.x) + "," + std::to_string(dim.y) + "," + std::to_string(dim.z) + ")";
}

/// Shared memory a kernel may take without opting in (cuFuncSetAttribute).
constexpr uint32_t kDefaultDynamicSharedLimit = 48 * 1024;

class GpuExecutor final : public Executor {
public:
  GpuExecutor(std::shared_ptr<const CudaDriver> driver, CUdevice device, CUcontext context)
      : driver_(std::move(driver)), device_(device), context_(context) {}
  ~GpuExecutor() override;

  Result<void> initialise();

  const DeviceProperties &properties() const override { return properties_; }
  Result<BufferHandle> allocate(uint64_t bytes) override;
  Result<void> free(BufferHandle buffer) override;
  bool pinHostMemory(void *data, uint64_t bytes) override;
  Result<void> copyToDevice(BufferHandle dst, uint64_t dstOffset, const void *src, uint64_t bytes) override;
  Result<void> copyToHost(void *dst, BufferHandle src, uint64_t srcOffset, uint64_t bytes) override;
  Result<void> memset(BufferHandle dst, uint64_t dstOffset, uint8_t value, uint64_t bytes) override;
  Result<void> copyOnDevice(BufferHandle dst, uint64_t dstOffset, BufferHandle src, uint64_t srcOffset,
                            uint64_t bytes) override;
  Result<GlobalVariable> getGlobal(ModuleHandle module, const std::string &name) override;
  Result<ModuleHandle> loadModule(const std::vector<uint8_t> &image, ModuleFormat format) override;
  Result<void> unloadModule(ModuleHandle module) override;
  Result<KernelInfo> getKernel(ModuleHandle module, const std::string &name) override;
  Result<void> launch(KernelHandle kernel, const LaunchConfig &config, const PackedArgs &args) override;
  Result<void> synchronize() override;
  Result<std::vector<float>> timeLaunch(KernelHandle kernel, const LaunchConfig &config, const PackedArgs &args,
                                        const TimingOptions &options) override;
  Result<void> flushL2() override;
  Result<TensorMapBytes> encodeTensorMap(BufferHandle buffer, uint64_t byteOffset, const TensorMapSpec &spec) override;
  Result<void> runLibraryCall(const LibraryCall &call) override;
  Result<std::vector<float>> timeLibraryCall(const LibraryCall &call, const TimingOptions &options) override;

private:
  struct KernelRecord {
    CUfunction function = nullptr;
    uint64_t module = 0;
    std::string name;
    uint32_t optedInSharedBytes = 0;
  };

  /// Turns a failed driver call into an Error; remembers sticky failures.
  Error fail(CUresult result, ExecErrorKind fallback, const std::string &what);
  /// The error every call returns once the context is dead.
  Result<void> checkAlive() const;
  Result<void> checkRange(BufferHandle buffer, uint64_t offset, uint64_t bytes, const char *what) const;
  Result<void> launchAsync(KernelRecord &kernel, const LaunchConfig &config, const PackedArgs &args);
  Result<void> enqueueFlush();
  /// Warm-up runs, then `options.repetitions` timed runs (each after an L2
  /// flush when asked) between two events; `enqueue` issues the work once.
  Result<std::vector<float>> timeRepeated(const TimingOptions &options, const std::function<Result<void>()> &enqueue,
                                          const std::string &what);
  /// Checks the call's sizes and operand ranges against the live buffers and
  /// enqueues it on the executor's stream (the legacy default stream).
  Result<void> enqueueLibraryCall(const LibraryCall &call);
#if PTXFORGE_HAVE_CUBLAS
  /// The cuBLAS handle, created on first use in this context.
  Result<const CublasHandle *> cublas();
  std::unique_ptr<CublasHandle> cublas_;
  /// The cuBLASLt handle (fp8 gemms) and its workspace, created on first use.
  Result<CublasLtHandle *> cublasLt();
  std::unique_ptr<CublasLtHandle> cublasLt_;
  CUdeviceptr cublasLtWorkspace_ = 0;
  static constexpr uint64_t kCublasLtWorkspaceBytes = uint64_t{32} << 20;
#endif

  std::shared_ptr<const CudaDriver> driver_;
  CUdevice device_;
  CUcontext context_;
  DeviceProperties properties_;
  std::map<CUdeviceptr, uint64_t> allocations_; ///< address -> bytes
  /// Module variables handed out by getGlobal: address -> (bytes, module id).
  std::map<CUdeviceptr, std::pair<uint64_t, uint64_t>> globals_;
  std::map<uint64_t, CUmodule> modules_;
  std::map<uint64_t, KernelRecord> kernels_;
  uint64_t nextId_ = 1;
  CUevent startEvent_ = nullptr;
  CUevent stopEvent_ = nullptr;
  CUdeviceptr flushBuffer_ = 0;
  std::vector<void *> pinned_; ///< host ranges page-locked by pinHostMemory
  uint64_t flushBytes_ = 0;
  std::string contextLost_; ///< non-empty after a sticky error: what killed it
};

GpuExecutor::~GpuExecutor() {
#if PTXFORGE_HAVE_CUBLAS
  cublas_.reset(); // cublasDestroy needs the context, released below
  cublasLt_.reset();
  if (cublasLtWorkspace_)
    driver_->memFree(cublasLtWorkspace_);
#endif
  // After a sticky error these calls fail; there is nothing better to do than
  // let the driver reclaim everything with the context.
  for (auto &[address, bytes] : allocations_)
    driver_->memFree(address);
  if (flushBuffer_)
    driver_->memFree(flushBuffer_);
  for (auto &[id, module] : modules_)
    driver_->moduleUnload(module);
  for (void *data : pinned_)
    if (driver_->memHostUnregister)
      driver_->memHostUnregister(data);
  if (startEvent_)
    driver_->eventDestroy(startEvent_);
  if (stopEvent_)
    driver_->eventDestroy(stopEvent_);
  driver_->primaryCtxRelease(device_);
}

Error GpuExecutor::fail(CUresult result, ExecErrorKind fallback, const std::string &what) {
  const ExecErrorKind kind = classify(result, fallback);
  std::string detail = driver_->describe(result) + " in " + what;
  if (kind == ExecErrorKind::Crashed) {
    contextLost_ = detail;
    detail += "; the CUDA context is lost (sticky error): all buffers, modules and kernels are gone";
  }
  Error error = makeExecError(kind, detail);
  error.cause = driver_->errorName(result);
  return error;
}

Result<void> GpuExecutor::checkAlive() const {
  if (contextLost_.empty())
    return {};
  return makeExecError(ExecErrorKind::Crashed, "the CUDA context was lost earlier (" + contextLost_ +
                                                   "); create a new executor");
}

Result<void> GpuExecutor::initialise() {
  CUresult result = driver_->ctxSetCurrent(context_);
  if (result != CUDA_SUCCESS)
    return makeExecError(ExecErrorKind::NoDevice, "cuCtxSetCurrent: " + driver_->describe(result));

  char name[256] = {};
  driver_->deviceGetName(name, sizeof name - 1, device_);
  properties_.name = name;
  properties_.backend = "gpu";
  size_t totalMemory = 0;
  if (driver_->deviceTotalMem(&totalMemory, device_) == CUDA_SUCCESS)
    properties_.totalMemoryBytes = totalMemory;
  driver_->driverGetVersion(&properties_.driverVersion);
  auto attribute = [&](CUdevice_attribute which) {
    int value = 0;
    return driver_->deviceGetAttribute(&value, which, device_) == CUDA_SUCCESS ? value : 0;
  };
  properties_.smMajor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  properties_.smMinor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  properties_.multiprocessorCount = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  properties_.clockRateKHz = attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  properties_.memoryClockRateKHz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  properties_.memoryBusWidthBits = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  properties_.l2CacheBytes = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  properties_.maxThreadsPerBlock = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  properties_.maxSharedBytesPerBlockOptin = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  properties_.warpSize = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);

  if ((result = driver_->eventCreate(&startEvent_, CU_EVENT_DEFAULT)) != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::Internal, "cuEventCreate");
  if ((result = driver_->eventCreate(&stopEvent_, CU_EVENT_DEFAULT)) != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::Internal, "cuEventCreate");
  return {};
}

Result<BufferHandle> GpuExecutor::allocate(uint64_t bytes) {
  if (Result<void> alive = checkAlive(); !alive)
    return alive.error();
  if (bytes == 0)
    return makeExecError(ExecErrorKind::InvalidArgument, "allocate(0): a buffer needs at least one byte");
  CUdeviceptr address = 0;
  if (CUresult result = driver_->memAlloc(&address, bytes); result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::OutOfMemory, "cuMemAlloc(" + std::to_string(bytes) + " bytes)");
  allocations_[address] = bytes;
  return BufferHandle{address};
}

Result<void> GpuExecutor::free(BufferHandle buffer) {
  auto found = allocations_.find(buffer.value);
  if (found == allocations_.end())
    return makeExecError(ExecErrorKind::InvalidArgument, "free: unknown buffer handle");
  allocations_.erase(found);
  if (CUresult result = driver_->memFree(buffer.value); result != CUDA_SUCCESS && contextLost_.empty())
    return fail(result, ExecErrorKind::Internal, "cuMemFree");
  return {};
}

Result<void> GpuExecutor::checkRange(BufferHandle buffer, uint64_t offset, uint64_t bytes, const char *what) const {
  uint64_t size = 0;
  if (auto found = allocations_.find(buffer.value); found != allocations_.end())
    size = found->second;
  else if (auto global = globals_.find(buffer.value); global != globals_.end())
    size = global->second.first;
  else
    return makeExecError(ExecErrorKind::InvalidArgument, std::string(what) + ": unknown or stale buffer handle");
  if (offset > size || bytes > size - offset)
    return makeExecError(ExecErrorKind::InvalidArgument,
                         std::string(what) + ": range [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                             ") exceeds the buffer's " + std::to_string(size) + " bytes");
  return {};
}

bool GpuExecutor::pinHostMemory(void *data, uint64_t bytes) {
  if (!driver_->memHostRegister || !data || bytes == 0 || !checkAlive())
    return false;
  if (driver_->memHostRegister(data, bytes, CU_MEMHOSTREGISTER_PORTABLE) != CUDA_SUCCESS)
    return false;
  pinned_.push_back(data);
  return true;
}

Result<void> GpuExecutor::copyToDevice(BufferHandle dst, uint64_t dstOffset, const void *src, uint64_t bytes) {
  if (Result<void> ok = checkAlive(); !ok)
    return ok;
  if (Result<void> ok = checkRange(dst, dstOffset, bytes, "copyToDevice"); !ok)
    return ok;
  if (CUresult result = driver_->memcpyHtoD(dst.value + dstOffset, src, bytes); result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::Internal, "cuMemcpyHtoD");
  return {};
}

Result<void> GpuExecutor::copyToHost(void *dst, BufferHandle src, uint64_t srcOffset, uint64_t bytes) {
  if (Result<void> ok = checkAlive(); !ok)
    return ok;
  if (Result<void> ok = checkRange(src, srcOffset, bytes, "copyToHost"); !ok)
    return ok;
  if (CUresult result = driver_->memcpyDtoH(dst, src.value + srcOffset, bytes); result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::Internal, "cuMemcpyDtoH");
  return {};
}

Result<void> GpuExecutor::memset(BufferHandle dst, uint64_t dstOffset, uint8_t value, uint64_t bytes) {
  if (Result<void> ok = checkAlive(); !ok)
    return ok;
  if (Result<void> ok = checkRange(dst, dstOffset, bytes, "memset"); !ok)
    return ok;
  if (CUresult result = driver_->memsetD8(dst.value + dstOffset, value, bytes); result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::Internal, "cuMemsetD8");
  return {};
}

Result<void> GpuExecutor::copyOnDevice(BufferHandle dst, uint64_t dstOffset, BufferHandle src, uint64_t srcOffset,
                                       uint64_t bytes) {
  if (Result<void> ok = checkAlive(); !ok)
    return ok;
  if (Result<void> ok = checkRange(dst, dstOffset, bytes, "copyOnDevice (destination)"); !ok)
    return ok;
  if (Result<void> ok = checkRange(src, srcOffset, bytes, "copyOnDevice (source)"); !ok)
    return ok;
  if (CUresult result = driver_->memcpyDtoD(dst.value + dstOffset, src.value + srcOffset, bytes);
      result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::Internal, "cuMemcpyDtoD");
  return {};
}

Result<TensorMapBytes> GpuExecutor::encodeTensorMap(BufferHandle buffer, uint64_t byteOffset, const TensorMapSpec &spec) {
  if (Result<void> ok = checkAlive(); !ok)
    return ok.error();
  const uint64_t address = buffer.value + byteOffset;
  if (std::vector<std::string> problems = tensorMapProblems(spec, address); !problems.empty()) {
    std::string text;
    for (const std::string &problem : problems)
      text += (text.empty() ? "" : "; ") + problem;
    return makeExecError(ExecErrorKind::InvalidArgument, "tensor map " + describeTensorMap(spec) + ": " + text);
  }
  // The map must not reach past the buffer: the copy engine checks only the map's own bounds.
  if (Result<void> ok = checkRange(buffer, byteOffset, tensorMapFootprintBytes(spec), "tensor map"); !ok)
    return ok.error();
  if (!driver_->tensorMapEncodeTiled)
    return makeExecError(ExecErrorKind::Unavailable, "the CUDA driver lacks cuTensorMapEncodeTiled (driver too old?)");
  CUtensorMap map;
  std::memset(&map, 0, sizeof map);
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], elementStrides[5];
  for (uint32_t i = 0; i < 5; ++i) {
    dims[i] = spec.globalDim[i];
    box[i] = spec.boxDim[i];
    elementStrides[i] = spec.elementStrides[i];
    if (i < 4)
      strides[i] = spec.globalStrides[i];
  }
  CUresult result = driver_->tensorMapEncodeTiled(
      &map, static_cast<CUtensorMapDataType>(spec.dataType), spec.rank, reinterpret_cast<void *>(address), dims, strides,
      box, elementStrides, static_cast<CUtensorMapInterleave>(spec.interleave),
      static_cast<CUtensorMapSwizzle>(spec.swizzle), static_cast<CUtensorMapL2promotion>(spec.l2Promotion),
      static_cast<CUtensorMapFloatOOBfill>(spec.oobFill));
  if (result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::InvalidArgument, "cuTensorMapEncodeTiled(" + describeTensorMap(spec) + ")");
  static_assert(sizeof(CUtensorMap) == sizeof(TensorMapBytes), "CUtensorMap is 128 bytes");
  TensorMapBytes bytes;
  std::memcpy(bytes.data(), &map, bytes.size());
  return bytes;
}

Result<GlobalVariable> GpuExecutor::getGlobal(ModuleHandle module, const std::string &name) {
  if (Result<void> alive = checkAlive(); !alive)
    return alive.error();
  auto found = modules_.find(module.value);
  if (found == modules_.end())
    return makeExecError(ExecErrorKind::InvalidArgument, "getGlobal: unknown module handle");
  CUdeviceptr address = 0;
  size_t bytes = 0;
  if (CUresult result = driver_->moduleGetGlobal(&address, &bytes, found->second, name.c_str()); result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::InvalidArgument, "cuModuleGetGlobal('" + name + "')");
  globals_[address] = {bytes, module.value};
  return GlobalVariable{BufferHandle{address}, bytes};
}

Result<ModuleHandle> GpuExecutor::loadModule(const std::vector<uint8_t> &image, ModuleFormat format) {
  if (Result<void> alive = checkAlive(); !alive)
    return alive.error();
  if (image.empty())
    return makeExecError(ExecErrorKind::InvalidArgument, "loadModule: empty image");
  std::vector<uint8_t> terminated;
  const void *data = image.data();
  if (format == ModuleFormat::Ptx && image.back() != 0) {
    // cuModuleLoadData reads PTX as a NUL-terminated string.
    terminated = image;
    terminated.push_back(0);
    data = terminated.data();
  }
  CUmodule module = nullptr;
  if (CUresult result = driver_->moduleLoadData(&module, data); result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::ModuleLoad,
                std::string("cuModuleLoadData (") + (format == ModuleFormat::Cubin ? "cubin" : "PTX") + ", " +
                    std::to_string(image.size()) + " bytes)");
  const uint64_t id = nextId_++;
  modules_[id] = module;
  return ModuleHandle{id};
}

Result<void> GpuExecutor::unloadModule(ModuleHandle module) {
  auto found = modules_.find(module.value);
  if (found == modules_.end())
    return makeExecError(ExecErrorKind::InvalidArgument, "unloadModule: unknown module handle");
  for (auto it = kernels_.begin(); it != kernels_.end();)
    it = it->second.module == module.value ? kernels_.erase(it) : std::next(it);
  for (auto it = globals_.begin(); it != globals_.end();)
    it = it->second.second == module.value ? globals_.erase(it) : std::next(it);
  CUresult result = driver_->moduleUnload(found->second);
  modules_.erase(found);
  if (result != CUDA_SUCCESS && contextLost_.empty())
    return fail(result, ExecErrorKind::Internal, "cuModuleUnload");
  return {};
}

Result<KernelInfo> GpuExecutor::getKernel(ModuleHandle module, const std::string &name) {
  if (Result<void> alive = checkAlive(); !alive)
    return alive.error();
  auto found = modules_.find(module.value);
  if (found == modules_.end())
    return makeExecError(ExecErrorKind::InvalidArgument, "getKernel: unknown or stale module handle");
  CUfunction function = nullptr;
  if (CUresult result = driver_->moduleGetFunction(&function, found->second, name.c_str()); result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::ModuleLoad, "cuModuleGetFunction('" + name + "'): no such .entry in the module?");
  KernelInfo info;
  auto attribute = [&](CUfunction_attribute which) {
    int value = 0;
    return driver_->funcGetAttribute(&value, which, function) == CUDA_SUCCESS ? value : 0;
  };
  info.maxThreadsPerBlock = attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.registerCount = attribute(CU_FUNC_ATTRIBUTE_NUM_REGS);
  info.staticSharedBytes = attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  info.localBytes = attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  const uint64_t id = nextId_++;
  kernels_[id] = KernelRecord{function, module.value, name, 0};
  info.handle = KernelHandle{id};
  return info;
}

Result<void> GpuExecutor::launchAsync(KernelRecord &kernel, const LaunchConfig &config, const PackedArgs &args) {
  for (size_t index = 0; index < args.slots.size(); ++index) {
    const PackedArgs::Slot &slot = args.slots[index];
    if (slot.offset + uint64_t(slot.size) > args.bytes.size())
      return makeExecError(ExecErrorKind::InvalidArgument, "argument " + std::to_string(index) + " lies outside the packed bytes");
    if (slot.isBuffer) {
      uint64_t address = 0;
      std::memcpy(&address, args.bytes.data() + slot.offset, sizeof address);
      auto allocation = allocations_.find(address);
      if (allocation == allocations_.end())
        return makeExecError(ExecErrorKind::InvalidArgument,
                             "argument " + std::to_string(index) + " of '" + kernel.name +
                                 "' is not a live buffer (freed, or lost with a crashed context)");
      if (slot.bufferOffset > allocation->second)
        return makeExecError(ExecErrorKind::InvalidArgument,
                             "argument " + std::to_string(index) + " of '" + kernel.name + "': offset " +
                                 std::to_string(slot.bufferOffset) + " lies past the end of its " +
                                 std::to_string(allocation->second) + "-byte buffer");
    }
  }
  // Above 48 KiB of dynamic shared memory a kernel must opt in; the driver
  // refuses more than the device's opt-in maximum with CUDA_ERROR_INVALID_VALUE.
  if (config.dynamicSharedBytes > kDefaultDynamicSharedLimit && config.dynamicSharedBytes > kernel.optedInSharedBytes) {
    if (CUresult result = driver_->funcSetAttribute(kernel.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                    static_cast<int>(config.dynamicSharedBytes));
        result != CUDA_SUCCESS)
      return fail(result, ExecErrorKind::LaunchError,
                  "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES=" + std::to_string(config.dynamicSharedBytes) +
                      ") for '" + kernel.name + "' (device opt-in maximum " +
                      std::to_string(properties_.maxSharedBytesPerBlockOptin) + " bytes)");
    kernel.optedInSharedBytes = config.dynamicSharedBytes;
  }
  std::vector<uint8_t> storage = args.bytes; // the driver reads through non-const pointers
  std::vector<void *> parameters;
  parameters.reserve(args.slots.size());
  for (const PackedArgs::Slot &slot : args.slots) {
    if (slot.isBuffer && slot.bufferOffset) {
      uint64_t address = 0;
      std::memcpy(&address, storage.data() + slot.offset, sizeof address);
      address += slot.bufferOffset;
      std::memcpy(storage.data() + slot.offset, &address, sizeof address);
    }
    parameters.push_back(storage.data() + slot.offset);
  }
  CUresult result = driver_->launchKernel(kernel.function, config.grid.x, config.grid.y, config.grid.z, config.block.x,
                                          config.block.y, config.block.z, config.dynamicSharedBytes, nullptr,
                                          parameters.empty() ? nullptr : parameters.data(), nullptr);
  if (result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::LaunchError,
                "cuLaunchKernel('" + kernel.name + "', grid=" + formatDim(config.grid) +
                    ", block=" + formatDim(config.block) + ", dynamic smem=" + std::to_string(config.dynamicSharedBytes) + ")");
  return {};
}

Result<void> GpuExecutor::launch(KernelHandle kernel, const LaunchConfig &config, const PackedArgs &args) {
  if (Result<void> ok = checkAlive(); !ok)
    return ok;
  auto found = kernels_.find(kernel.value);
  if (found == kernels_.end())
    return makeExecError(ExecErrorKind::InvalidArgument, "launch: unknown or stale kernel handle");
  if (Result<void> ok = launchAsync(found->second, config, args); !ok)
    return ok;
  if (CUresult result = driver_->ctxSynchronize(); result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::Internal, "cuCtxSynchronize after launching '" + found->second.name + "'");
  return {};
}

Result<void> GpuExecutor::synchronize() {
  if (Result<void> ok = checkAlive(); !ok)
    return ok;
  if (CUresult result = driver_->ctxSynchronize(); result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::Internal, "cuCtxSynchronize");
  return {};
}

Result<void> GpuExecutor::enqueueFlush() {
  if (!flushBuffer_) {
    // Twice the L2 so that no line of the kernel's data survives, whatever the
    // replacement policy; 64 MiB when the driver does not report the size.
    flushBytes_ = properties_.l2CacheBytes > 0 ? 2ull * properties_.l2CacheBytes : 64ull << 20;
    if (CUresult result = driver_->memAlloc(&flushBuffer_, flushBytes_); result != CUDA_SUCCESS) {
      flushBuffer_ = 0;
      return fail(result, ExecErrorKind::OutOfMemory, "cuMemAlloc of the L2 flush buffer");
    }
  }
  if (CUresult result = driver_->memsetD8(flushBuffer_, 0x5a, flushBytes_); result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::Internal, "cuMemsetD8 (L2 flush)");
  return {};
}

Result<void> GpuExecutor::flushL2() {
  if (Result<void> ok = checkAlive(); !ok)
    return ok;
  if (Result<void> ok = enqueueFlush(); !ok)
    return ok;
  return synchronize();
}

Result<std::vector<float>> GpuExecutor::timeRepeated(const TimingOptions &options,
                                                     const std::function<Result<void>()> &enqueue,
                                                     const std::string &what) {
  // The memory operations run on the same (legacy default) stream as the
  // launches, so each completes before the next launch and before the events.
  auto prepare = [&]() -> Result<void> {
    for (const MemoryOp &op : options.beforeEachLaunch)
      if (Result<void> ok = apply(op); !ok)
        return ok;
    return {};
  };
  for (uint32_t warmup = 0; warmup < options.warmupLaunches; ++warmup) {
    if (Result<void> ok = prepare(); !ok)
      return ok.error();
    if (Result<void> ok = enqueue(); !ok)
      return ok.error();
  }
  if (CUresult result = driver_->ctxSynchronize(); result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::Internal, "cuCtxSynchronize after the warm-up runs of " + what);

  std::vector<float> milliseconds;
  milliseconds.reserve(options.repetitions);
  for (uint32_t repetition = 0; repetition < options.repetitions; ++repetition) {
    if (Result<void> ok = prepare(); !ok)
      return ok.error();
    if (options.flushL2)
      if (Result<void> ok = enqueueFlush(); !ok)
        return ok.error();
    CUresult result = driver_->eventRecord(startEvent_, nullptr);
    if (result != CUDA_SUCCESS)
      return fail(result, ExecErrorKind::Internal, "cuEventRecord");
    if (Result<void> ok = enqueue(); !ok)
      return ok.error();
    if ((result = driver_->eventRecord(stopEvent_, nullptr)) != CUDA_SUCCESS)
      return fail(result, ExecErrorKind::Internal, "cuEventRecord");
    if ((result = driver_->eventSynchronize(stopEvent_)) != CUDA_SUCCESS)
      return fail(result, ExecErrorKind::Internal, "cuEventSynchronize after a timed run of " + what);
    float elapsed = 0;
    if ((result = driver_->eventElapsedTime(&elapsed, startEvent_, stopEvent_)) != CUDA_SUCCESS)
      return fail(result, ExecErrorKind::Internal, "cuEventElapsedTime");
    milliseconds.push_back(elapsed);
  }
  return milliseconds;
}

Result<std::vector<float>> GpuExecutor::timeLaunch(KernelHandle kernel, const LaunchConfig &config,
                                                   const PackedArgs &args, const TimingOptions &options) {
  if (Result<void> ok = checkAlive(); !ok)
    return ok.error();
  auto found = kernels_.find(kernel.value);
  if (found == kernels_.end())
    return makeExecError(ExecErrorKind::InvalidArgument, "timeLaunch: unknown or stale kernel handle");
  KernelRecord &record = found->second;
  return timeRepeated(options, [&] { return launchAsync(record, config, args); }, "'" + record.name + "'");
}

#if PTXFORGE_HAVE_CUBLAS
Result<const CublasHandle *> GpuExecutor::cublas() {
  if (cublas_)
    return cublas_.get();
  Result<std::shared_ptr<const Cublas>> loaded = Cublas::load();
  if (!loaded)
    return loaded.error();
  const Cublas &library = **loaded;
  cublasHandle_t raw = nullptr;
  // cuBLAS's runtime adopts the context current on this thread: the primary
  // context initialise() made current.
  if (cublasStatus_t status = library.create(&raw); status != CUBLAS_STATUS_SUCCESS)
    return makeExecError(ExecErrorKind::Unavailable,
                         "cublasCreate (" + library.libraryName + "): " + library.describe(status));
  auto handle = std::make_unique<CublasHandle>(*loaded, raw);
  // The executor launches and records its events on the legacy default
  // stream (a null CUstream), so cuBLAS must use it too for the events to
  // bracket its kernels.
  if (cublasStatus_t status = library.setStream(raw, nullptr); status != CUBLAS_STATUS_SUCCESS)
    return makeExecError(ExecErrorKind::Internal, "cublasSetStream: " + library.describe(status));
  if (cublasStatus_t status = library.setPointerMode(raw, CUBLAS_POINTER_MODE_HOST); status != CUBLAS_STATUS_SUCCESS)
    return makeExecError(ExecErrorKind::Internal, "cublasSetPointerMode: " + library.describe(status));
  // The default math mode keeps at least the precision asked for: no TF32 for
  // SGEMM (it would fail the tasks' f32 tolerances), tensor cores for f16 inputs.
  if (cublasStatus_t status = library.setMathMode(raw, CUBLAS_DEFAULT_MATH); status != CUBLAS_STATUS_SUCCESS)
    return makeExecError(ExecErrorKind::Internal, "cublasSetMathMode: " + library.describe(status));
  cublas_ = std::move(handle);
  return cublas_.get();
}

Result<CublasLtHandle *> GpuExecutor::cublasLt() {
  if (cublasLt_)
    return cublasLt_.get();
  Result<std::shared_ptr<const CublasLt>> loaded = CublasLt::load();
  if (!loaded)
    return loaded.error();
  cublasLtHandle_t raw = nullptr;
  if (cublasStatus_t status = (*loaded)->create(&raw); status != CUBLAS_STATUS_SUCCESS)
    return makeExecError(ExecErrorKind::Unavailable,
                         "cublasLtCreate (" + (*loaded)->libraryName + "): " + (*loaded)->describe(status));
  auto handle = std::make_unique<CublasLtHandle>(*loaded, raw);
  // The workspace is the executor's own memory, outside the buffers a check
  // hands out (and their guard zones).
  if (!cublasLtWorkspace_)
    if (CUresult result = driver_->memAlloc(&cublasLtWorkspace_, kCublasLtWorkspaceBytes); result != CUDA_SUCCESS)
      return fail(result, ExecErrorKind::OutOfMemory, "cuMemAlloc(cuBLASLt workspace)");
  cublasLt_ = std::move(handle);
  return cublasLt_.get();
}
#endif

Result<void> GpuExecutor::enqueueLibraryCall(const LibraryCall &call) {
  const char *name = libraryOpName(call.op);
  auto fitsInt = [](int64_t value) { return value >= 1 && value <= INT_MAX; };
  const bool gemv = call.op == LibraryOp::Gemv;
  if (!fitsInt(call.m) || !fitsInt(call.k) || (!gemv && !fitsInt(call.n)) ||
      (call.op == LibraryOp::GemmBatched && !fitsInt(call.batch)))
    return makeExecError(ExecErrorKind::InvalidArgument,
                         std::string(name) + ": sizes m=" + std::to_string(call.m) + " n=" + std::to_string(call.n) +
                             " k=" + std::to_string(call.k) + " batch=" + std::to_string(call.batch) +
                             " must lie in [1, 2^31-1] (n and batch only where the op uses them)");
  const LibraryOperandCounts counts = libraryOperandCounts(call);
  const LibraryOperandCounts elementBytes = libraryElementBytes(call.op);
  // Every operand must lie inside a live buffer: a wrong size is an error
  // here, not a read past the end inside cuBLAS.
  const std::string where = std::string("library call ") + name + ", operand ";
  const std::string names[3] = {where + "a", where + (gemv ? "x" : "b"), where + (gemv ? "y" : "c")};
  const LibraryOperand *operands[3] = {&call.a, &call.b, &call.c};
  const uint64_t bytes[3] = {counts.a * elementBytes.a, counts.b * elementBytes.b, counts.c * elementBytes.c};
  for (int i = 0; i < 3; ++i)
    if (Result<void> ok = checkRange(operands[i]->buffer, operands[i]->byteOffset, bytes[i], names[i].c_str()); !ok)
      return ok;
#if PTXFORGE_HAVE_CUBLAS
  if (call.op == LibraryOp::GemmE4M3F32) {
    Result<CublasLtHandle *> lt = cublasLt();
    if (!lt)
      return lt.error();
    auto at = [](const LibraryOperand &operand) {
      return reinterpret_cast<void *>(static_cast<uintptr_t>(operand.buffer.value + operand.byteOffset));
    };
    return (*lt)->fp8Gemm({call.m, call.n, call.k, at(call.a), at(call.b), at(call.c),
                           reinterpret_cast<void *>(static_cast<uintptr_t>(cublasLtWorkspace_)),
                           kCublasLtWorkspaceBytes});
  }
  Result<const CublasHandle *> handle = cublas();
  if (!handle)
    return handle.error();
  const Cublas &library = (*handle)->library();
  cublasHandle_t raw = (*handle)->get();
  auto pointer = [](const LibraryOperand &operand) {
    return reinterpret_cast<void *>(static_cast<uintptr_t>(operand.buffer.value + operand.byteOffset));
  };
  // cuBLAS is column-major; ColumnMajorCall restates the row-major call in its
  // terms (operands and m/n swapped for gemm, A transposed for gemv).
  const ColumnMajorCall blas = columnMajorCall(call);
  const void *blasA = pointer(blas.swapOperands ? call.b : call.a);
  const void *blasB = pointer(blas.swapOperands ? call.a : call.b);
  void *blasC = pointer(call.c);
  const int m = static_cast<int>(blas.m), n = static_cast<int>(blas.n), k = static_cast<int>(blas.k);
  const int lda = static_cast<int>(blas.lda), ldb = static_cast<int>(blas.ldb), ldc = static_cast<int>(blas.ldc);
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  std::string function;
  switch (call.op) {
  case LibraryOp::Gemm:
    function = "cublasSgemm";
    status = library.sgemm(raw, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, static_cast<const float *>(blasA), lda,
                           static_cast<const float *>(blasB), ldb, &zero, static_cast<float *>(blasC), ldc);
    break;
  case LibraryOp::GemmF16F32:
    function = "cublasGemmEx(f16 x f16 -> f32, CUBLAS_COMPUTE_32F)";
    status = library.gemmEx(raw, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, blasA, CUDA_R_16F, lda, blasB, CUDA_R_16F,
                            ldb, &zero, blasC, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    break;
  case LibraryOp::GemmBf16F32:
    function = "cublasGemmEx(bf16 x bf16^T -> f32, CUBLAS_COMPUTE_32F)";
    status = library.gemmEx(raw, blas.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, blasA,
                            CUDA_R_16BF, lda, blasB, CUDA_R_16BF, ldb, &zero, blasC, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT);
    break;
  case LibraryOp::GemmBatched:
    function = "cublasSgemmStridedBatched";
    status = library.sgemmStridedBatched(raw, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one,
                                         static_cast<const float *>(blasA), lda, blas.strideA,
                                         static_cast<const float *>(blasB), ldb, blas.strideB, &zero,
                                         static_cast<float *>(blasC), ldc, blas.strideC, static_cast<int>(blas.batch));
    break;
  case LibraryOp::GemmE4M3F32: break; // cuBLASLt, above
  case LibraryOp::Gemv:
    function = "cublasSgemv(CUBLAS_OP_T)";
    status = library.sgemv(raw, blas.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, &one,
                           static_cast<const float *>(blasA), lda, static_cast<const float *>(blasB), 1, &zero,
                           static_cast<float *>(blasC), 1);
    break;
  }
  if (status != CUBLAS_STATUS_SUCCESS)
    return makeExecError(status == CUBLAS_STATUS_ALLOC_FAILED ? ExecErrorKind::OutOfMemory : ExecErrorKind::Internal,
                         function + " for " + name + " (m=" + std::to_string(call.m) + ", n=" + std::to_string(call.n) +
                             ", k=" + std::to_string(call.k) + ", batch=" + std::to_string(call.batch) +
                             "): " + library.describe(status));
  return {};
#else
  return makeExecError(ExecErrorKind::Unavailable,
                       std::string("cuBLAS not found: ptxforge was built without cublas_v2.h, so ") + name +
                           " cannot run through it");
#endif
}

Result<void> GpuExecutor::runLibraryCall(const LibraryCall &call) {
  if (Result<void> ok = checkAlive(); !ok)
    return ok;
  if (Result<void> ok = enqueueLibraryCall(call); !ok)
    return ok;
  if (CUresult result = driver_->ctxSynchronize(); result != CUDA_SUCCESS)
    return fail(result, ExecErrorKind::Internal,
                std::string("cuCtxSynchronize after the library call ") + libraryOpName(call.op));
  return {};
}

Result<std::vector<float>> GpuExecutor::timeLibraryCall(const LibraryCall &call, const TimingOptions &options) {
  if (Result<void> ok = checkAlive(); !ok)
    return ok.error();
  return timeRepeated(options, [&] { return enqueueLibraryCall(call); }, libraryOpName(call.op));
}

} // namespace

Result<std::unique_ptr<Executor>> createGpuExecutor(int ordinal) {
  Result<std::shared_ptr<const CudaDriver>> loaded = CudaDriver::load();
  if (!loaded)
    return loaded.error();
  std::shared_ptr<const CudaDriver> driver = *loaded;
  if (CUresult result = driver->init(0); result != CUDA_SUCCESS)
    return makeExecError(ExecErrorKind::NoDevice, "cuInit failed: " + driver->describe(result));
  int count = 0;
  if (CUresult result = driver->deviceGetCount(&count); result != CUDA_SUCCESS)
    return makeExecError(ExecErrorKind::NoDevice, "cuDeviceGetCount failed: " + driver->describe(result));
  if (ordinal < 0 || ordinal >= count)
    return makeExecError(ExecErrorKind::NoDevice, "device " + std::to_string(ordinal) + " requested, the driver sees " +
                                                      std::to_string(count));
  CUdevice device = 0;
  if (CUresult result = driver->deviceGet(&device, ordinal); result != CUDA_SUCCESS)
    return makeExecError(ExecErrorKind::NoDevice, "cuDeviceGet: " + driver->describe(result));
  CUcontext context = nullptr;
  if (CUresult result = driver->primaryCtxRetain(&context, device); result != CUDA_SUCCESS)
    return makeExecError(ExecErrorKind::NoDevice, "cuDevicePrimaryCtxRetain: " + driver->describe(result));
  // From here the executor owns the retained context and releases it.
  auto executor = std::make_unique<GpuExecutor>(driver, device, context);
  if (Result<void> ok = executor->initialise(); !ok)
    return ok.error();
  return std::unique_ptr<Executor>(std::move(executor));
}

} // namespace ptxforge::exec
