// Executor: the contract between the gate and whatever runs kernels — the CUDA
// driver in-process (GpuExecutor), the same behind a crash-proof worker process
// (IsolatedExecutor), and later the CPU PTX emulator. Allocate, copy, load a
// module, launch, time; every expected failure is a Result whose Error's code is
// a machine-readable ExecErrorKind name and whose message carries the driver's
// error name.
#pragma once

#include "exec/LaunchProfile.h"
#include "exec/TensorMap.h"
#include "support/Result.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace ptxforge::exec {

// ---------------------------------------------------------------------------
// Errors

/// Why an executor call failed, in the terms of the verification gate.
enum class ExecErrorKind : uint8_t {
  None = 0,        ///< not an executor error (success, or an Error from elsewhere)
  NoDevice,        ///< no driver / no GPU / cuInit failed (code "no-gpu")
  InvalidArgument, ///< the caller passed a bad handle, size or range (also stale handles)
  OutOfMemory,     ///< device allocation failed
  ModuleLoad,      ///< the driver rejected the cubin/PTX image or the kernel name
  LaunchError,     ///< the launch was refused (bad block size, too much shared memory...)
  OutOfResources,  ///< CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (registers x threads, ...)
  Crashed,         ///< the kernel faulted (sticky error) or the worker died; context lost
  Timeout,         ///< the watchdog killed the worker after the call's deadline
  Internal,        ///< anything else (a driver call failed unexpectedly, protocol error)
  Unavailable,     ///< this executor cannot do that (no vendor library here, an emulator)
  EmuUnsupported,  ///< the emulator does not implement a feature the module uses; Error.line says where
};

/// Stable kebab-case name ("launch-error", "crashed", "no-gpu", ...): the
/// Error code of executor failures; "none" for None.
const char *execErrorKindName(ExecErrorKind kind);

/// Builds the Error for an executor failure: code = execErrorKindName(kind),
/// message = `detail` (render() shows "<code>: <detail>"), location `line`
/// (0 = none). The broad ErrorKind is derived from `kind` (NoDevice,
/// Unavailable and EmuUnsupported -> ToolMissing, ModuleLoad -> Compile, a
/// candidate's fault -> InvalidInput, the rest -> Internal).
Error makeExecError(ExecErrorKind kind, const std::string &detail, uint32_t line = 0);

/// Reads the ExecErrorKind back from an Error's code (None for an Error that
/// is not an executor's). Never looks at the message.
ExecErrorKind execErrorKindOf(const Error &error);

// ---------------------------------------------------------------------------
// Handles and descriptions

/// What the device (or emulator) says about itself. Zero means "not reported".
struct DeviceProperties {
  std::string name;                 ///< "NVIDIA H200"
  int smMajor = 0, smMinor = 0;     ///< compute capability 9.0 -> sm_90
  uint64_t totalMemoryBytes = 0;
  int multiprocessorCount = 0;
  int clockRateKHz = 0;             ///< SM clock the driver reports
  int memoryClockRateKHz = 0;
  int memoryBusWidthBits = 0;
  int l2CacheBytes = 0;
  int maxThreadsPerBlock = 0;
  int maxSharedBytesPerBlockOptin = 0;
  int warpSize = 0;
  int driverVersion = 0;            ///< cuDriverGetVersion, e.g. 13000
  std::string backend;              ///< "gpu", "isolated-gpu", "emu"
  friend bool operator==(const DeviceProperties &, const DeviceProperties &) = default;

  /// "sm_90" — the arch string toolchain::compilePtx takes.
  std::string arch() const { return "sm_" + std::to_string(smMajor * 10 + smMinor); }
  /// Theoretical DRAM bandwidth from the reported clock and bus width (0 if unknown).
  double peakMemoryBandwidthGBs() const {
    return 2.0 * memoryClockRateKHz * 1e3 * (memoryBusWidthBits / 8.0) / 1e9;
  }
};

/// Opaque handle of a device buffer. For the GPU backends its value is the
/// device address; callers must not rely on that.
struct BufferHandle {
  uint64_t value = 0;
  explicit operator bool() const { return value != 0; }
  friend bool operator==(BufferHandle, BufferHandle) = default;
};
struct ModuleHandle {
  uint64_t value = 0;
  friend bool operator==(ModuleHandle, ModuleHandle) = default;
};
struct KernelHandle {
  uint64_t value = 0;
  friend bool operator==(KernelHandle, KernelHandle) = default;
};

/// The image handed to loadModule.
enum class ModuleFormat : uint8_t {
  Cubin, ///< an ELF from toolchain::compilePtx (GPU backends)
  Ptx,   ///< PTX text (the emulator; the GPU driver JIT-compiles it too)
};

/// What the driver says about a loaded kernel.
struct KernelInfo {
  KernelHandle handle;
  int maxThreadsPerBlock = 0; ///< for this kernel's register count
  int registerCount = 0;
  int staticSharedBytes = 0;
  int localBytes = 0;         ///< per-thread local memory (spills, stack)
  friend bool operator==(const KernelInfo &, const KernelInfo &) = default;
};

/// A problem a sanitizing executor (the CPU emulator) found during the last
/// launch, located in the PTX. Fatal findings are also the launch's error.
struct LaunchFinding {
  std::string check;   ///< "memcheck", "racecheck", "initcheck", "synccheck", "unsupported", "timeout", "trap"
  bool fatal = true;
  std::string message; ///< one sentence: what, where (thread, block, address)
  uint32_t line = 0;   ///< 1-based PTX line; 0 when not tied to one
  uint32_t column = 0; ///< 1-based PTX column of the operand at fault; 0 when not known
  friend bool operator==(const LaunchFinding &, const LaunchFinding &) = default;
};

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  friend bool operator==(const Dim3 &, const Dim3 &) = default;
};

/// Launch geometry. `timeoutMs` is the watchdog deadline for this one call
/// (isolated executor only); 0 takes the executor's default.
struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  uint32_t dynamicSharedBytes = 0; ///< > 48 KiB opts the kernel in automatically
  uint32_t timeoutMs = 0;
  /// Count memory behaviour per PTX line during this launch (the emulator;
  /// other executors ignore it): takeProfiles() returns it.
  bool profile = false;
  friend bool operator==(const LaunchConfig &, const LaunchConfig &) = default;
};

/// One device-side memory operation: copy `bytes` from `src` (at
/// `srcOffset`) to `dst` (at `dstOffset`), or, when `src` is null, fill them
/// with the byte `fill`. The gate uses these to poison outputs and restore
/// module state before every launch, outside the timed events.
struct MemoryOp {
  BufferHandle dst;
  uint64_t dstOffset = 0;
  BufferHandle src; ///< null: a fill with `fill`
  uint64_t srcOffset = 0;
  uint64_t bytes = 0;
  uint8_t fill = 0;
  friend bool operator==(const MemoryOp &, const MemoryOp &) = default;
};

/// How timeLaunch repeats a launch.
struct TimingOptions {
  uint32_t warmupLaunches = 1;
  uint32_t repetitions = 10;
  bool flushL2 = true; ///< flushL2() before every timed repetition
  uint32_t timeoutMs = 0; ///< deadline for the whole timing call (isolated); 0 = default
  /// Done in order before every launch, warm-ups included, before the L2
  /// flush and outside the timed event pair, so that every timed launch starts
  /// from the same memory as a checked one.
  std::vector<MemoryOp> beforeEachLaunch;
  friend bool operator==(const TimingOptions &, const TimingOptions &) = default;
};

/// A module-scope variable of a loaded module (a `.global` in the PTX): a
/// buffer handle the copy calls accept, valid until the module is unloaded.
struct GlobalVariable {
  BufferHandle handle;
  uint64_t bytes = 0;
  friend bool operator==(const GlobalVariable &, const GlobalVariable &) = default;
};

// ---------------------------------------------------------------------------
// Vendor-library calls

/// The operations an executor may run through a vendor library (cuBLAS on the
/// GPU) as a second baseline. Every matrix is row-major and dense (its leading
/// dimension is its row length), as the tasks store them; the executor maps
/// that onto the library's own conventions.
enum class LibraryOp : uint8_t {
  Gemm,        ///< c (m x n) = a (m x k) * b (k x n), f32
  GemmF16F32,  ///< the same with f16 a and b, f32 c, f32 accumulation
  GemmBatched, ///< `batch` f32 gemms, each operand's matrices stored one after another
  Gemv,        ///< c (m) = a (m x k) * b (k), f32: b is x, c is y; n is unused
  /// c (m x n) = a (m x k) * b^T with b n x k ("K-major"), bf16 a and b, f32 c,
  /// f32 accumulation
  GemmBf16F32,
  /// c (m x n) = a (m x k) * b^T with b n x k ("K-major"), e4m3 a and b, f32 c,
  /// f32 accumulation: cuBLASLt (plain cuBLAS has no fp8 gemm)
  GemmE4M3F32,
};

/// "gemm", "gemm_f16_f32", "gemm_batched", "gemv", "gemm_bf16_f32" (the names task.toml uses).
const char *libraryOpName(LibraryOp op);

/// One operand: a buffer and where the data starts in it (the gate passes
/// interior pointers past a guard zone, as for kernel arguments).
struct LibraryOperand {
  BufferHandle buffer;
  uint64_t byteOffset = 0;
  friend bool operator==(const LibraryOperand &, const LibraryOperand &) = default;
};

/// One vendor-library call: c = a * b (alpha 1, beta 0: c is overwritten).
struct LibraryCall {
  LibraryOp op = LibraryOp::Gemm;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;    ///< GemmBatched only
  LibraryOperand a, b, c;
  uint32_t timeoutMs = 0; ///< watchdog deadline of runLibraryCall (isolated); 0 = default
  friend bool operator==(const LibraryCall &, const LibraryCall &) = default;
};

/// Element counts the call reads or writes in each operand: {a, b, c}.
struct LibraryOperandCounts {
  uint64_t a = 0, b = 0, c = 0;
};
LibraryOperandCounts libraryOperandCounts(const LibraryCall &call);
/// Element sizes in bytes: {a, b, c} (2 for the f16 or bf16 inputs of GemmF16F32 and
/// GemmBf16F32, else 4).
LibraryOperandCounts libraryElementBytes(LibraryOp op);

// ---------------------------------------------------------------------------
// Kernel arguments

/// A kernel's parameter list, packed as the PTX ABI lays out a .param space:
/// each value at an offset aligned to its own alignment. `bytes` is that image;
/// `slots` say where each parameter starts, so that an executor can hand the
/// driver one pointer per parameter (cuLaunchKernel's kernelParams) or check the
/// buffers a launch touches.
struct PackedArgs {
  struct Slot {
    uint32_t offset = 0;
    uint32_t size = 0;
    bool isBuffer = false; ///< a BufferHandle's address (checked for staleness)
    /// For buffers: the kernel receives the buffer's address plus this many
    /// bytes (an interior pointer, e.g. past a guard zone). The packed bytes
    /// hold the handle itself.
    uint64_t bufferOffset = 0;
    friend bool operator==(const Slot &, const Slot &) = default;
  };
  std::vector<uint8_t> bytes;
  std::vector<Slot> slots;
  friend bool operator==(const PackedArgs &, const PackedArgs &) = default;
};

/// Builds a PackedArgs in parameter order:
///   KernelArgs().buffer(a).buffer(b).scalar<uint32_t>(n).pack()
class KernelArgs {
public:
  /// A device buffer's address (a .u64 parameter), plus `byteOffset` bytes
  /// (which must lie inside the buffer).
  KernelArgs &buffer(BufferHandle handle, uint64_t byteOffset = 0);
  /// A trivially copyable value: integers, floats, small structs.
  template <typename T> KernelArgs &scalar(const T &value) {
    static_assert(std::is_trivially_copyable_v<T>, "kernel arguments are copied bytewise");
    return raw(&value, sizeof(T), alignof(T), false);
  }
  /// `size` bytes at `alignment` (a power of two), for .b8 arrays / .align params.
  KernelArgs &raw(const void *data, size_t size, size_t alignment, bool isBuffer = false);

  const PackedArgs &packed() const { return packed_; }
  PackedArgs pack() const { return packed_; }

private:
  PackedArgs packed_;
};

// ---------------------------------------------------------------------------
// The interface

class Executor;

/// Owns one device buffer: frees it when destroyed. Freeing a buffer whose
/// context died (a crashed isolated worker) is a silent no-op.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(Executor &executor, BufferHandle handle, uint64_t bytes)
      : executor_(&executor), handle_(handle), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { reset(); }

  BufferHandle handle() const { return handle_; }
  uint64_t bytes() const { return bytes_; }
  explicit operator bool() const { return static_cast<bool>(handle_); }
  void reset();

private:
  Executor *executor_ = nullptr;
  BufferHandle handle_;
  uint64_t bytes_ = 0;
};

/// Runs kernels on one device. Not thread-safe: one caller at a time.
///
/// Failure contract: after an error of kind Crashed or Timeout every buffer,
/// module and kernel handle obtained before it is gone (the context died);
/// using one gives InvalidArgument naming it stale. The caller allocates,
/// uploads and loads again; the executor itself stays usable (the isolated
/// executor restarts its worker on the next call).
class Executor {
public:
  virtual ~Executor() = default;

  virtual const DeviceProperties &properties() const = 0;
  /// The image format loadModule wants: a cubin for the GPU backends, PTX for
  /// the emulator.
  virtual ModuleFormat moduleFormat() const { return ModuleFormat::Cubin; }

  virtual Result<BufferHandle> allocate(uint64_t bytes) = 0;
  virtual Result<void> free(BufferHandle buffer) = 0;
  /// allocate() wrapped in a DeviceBuffer.
  Result<DeviceBuffer> allocateBuffer(uint64_t bytes);

  /// Page-locks a host range that copies go through again and again (the
  /// isolated worker's staging area), so that the device copies it by DMA.
  /// A hint: false where the executor does not (the default) or cannot.
  virtual bool pinHostMemory(void *data, uint64_t bytes) {
    (void)data, (void)bytes;
    return false;
  }
  virtual Result<void> copyToDevice(BufferHandle dst, uint64_t dstOffset, const void *src, uint64_t bytes) = 0;
  virtual Result<void> copyToHost(void *dst, BufferHandle src, uint64_t srcOffset, uint64_t bytes) = 0;
  virtual Result<void> memset(BufferHandle dst, uint64_t dstOffset, uint8_t value, uint64_t bytes) = 0;
  /// Copies between two device buffers (module variables included). The
  /// default goes through host memory; the GPU backends copy on the device.
  virtual Result<void> copyOnDevice(BufferHandle dst, uint64_t dstOffset, BufferHandle src, uint64_t srcOffset,
                                    uint64_t bytes);
  /// Runs one MemoryOp now (copyOnDevice or memset).
  Result<void> apply(const MemoryOp &op);
  /// Declares that kernels may only touch [offset, offset + bytes) of `buffer`
  /// (the rest is a guard zone). Executors that check accesses (the emulator)
  /// report any other access as out of bounds; the GPU backends ignore it.
  virtual Result<void> setAccessibleRange(BufferHandle buffer, uint64_t offset, uint64_t bytes) {
    (void)buffer, (void)offset, (void)bytes;
    return {};
  }

  virtual Result<ModuleHandle> loadModule(const std::vector<uint8_t> &image, ModuleFormat format) = 0;
  virtual Result<void> unloadModule(ModuleHandle module) = 0;
  virtual Result<KernelInfo> getKernel(ModuleHandle module, const std::string &name) = 0;
  /// The module-scope variable `name` of a loaded module, as a buffer the copy
  /// calls take (not to be freed). Default: Unavailable.
  virtual Result<GlobalVariable> getGlobal(ModuleHandle module, const std::string &name);

  /// Launches and waits for the kernel to finish: a fault of the kernel is this
  /// call's error (Crashed, with the driver's error name).
  virtual Result<void> launch(KernelHandle kernel, const LaunchConfig &config, const PackedArgs &args) = 0;
  /// Waits for all outstanding work.
  virtual Result<void> synchronize() = 0;
  /// Launches `warmupLaunches + repetitions` times; returns the device-event
  /// elapsed time of each timed repetition in milliseconds.
  virtual Result<std::vector<float>> timeLaunch(KernelHandle kernel, const LaunchConfig &config,
                                                const PackedArgs &args, const TimingOptions &options) = 0;
  /// Evicts the L2 cache (writes a buffer larger than it).
  virtual Result<void> flushL2() = 0;
  /// The sanitizer findings of the launches since the last call (the
  /// emulator's memcheck, racecheck, initcheck, synccheck); empty for the GPU.
  virtual std::vector<LaunchFinding> takeFindings() { return {}; }
  /// The profiles of the launches since the last call that asked for one
  /// (LaunchConfig::profile), in launch order; empty where the executor does
  /// not profile (the GPU: Nsight Compute does that).
  virtual std::vector<LaunchProfile> takeProfiles() { return {}; }

  /// Encodes a tiled tensor map (TensorMap.h) over `buffer` from `byteOffset`
  /// on, for a kernel parameter: cuTensorMapEncodeTiled on the GPU (the
  /// isolated worker encodes its own buffers), the emulator's own 128 bytes,
  /// which its cp.async.bulk.tensor decodes. A spec that breaks the driver's
  /// rules (tensorMapProblems) is InvalidArgument on every executor. Default:
  /// Unavailable.
  virtual Result<TensorMapBytes> encodeTensorMap(BufferHandle buffer, uint64_t byteOffset, const TensorMapSpec &spec);

  /// Runs one vendor-library call (cuBLAS on the GPU) and waits for it. The
  /// default, for executors without a vendor library (the emulator): an Error
  /// of kind Unavailable, "... not available on this executor".
  virtual Result<void> runLibraryCall(const LibraryCall &call);
  /// Times a vendor-library call as timeLaunch times a kernel: warm-up calls,
  /// the L2 flushed before each repetition, device events; milliseconds per
  /// timed repetition. Default: Unavailable, as runLibraryCall.
  virtual Result<std::vector<float>> timeLibraryCall(const LibraryCall &call, const TimingOptions &options);

  // Typed conveniences over the byte-level calls.
  template <typename T> Result<void> upload(BufferHandle dst, const std::vector<T> &values) {
    return copyToDevice(dst, 0, values.data(), values.size() * sizeof(T));
  }
  template <typename T> Result<std::vector<T>> download(BufferHandle src, size_t count) {
    std::vector<T> values(count);
    Result<void> copied = copyToHost(values.data(), src, 0, count * sizeof(T));
    if (!copied)
      return copied.error();
    return values;
  }
};

} // namespace ptxforge::exec
