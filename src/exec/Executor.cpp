// Executor: error helpers, argument packing and the buffer RAII wrapper shared
// by every backend.
#include "exec/Executor.h"

#include <array>
#include <cassert>

namespace ptxforge::exec {

namespace {
struct KindName {
  ExecErrorKind kind;
  const char *name;
};
constexpr std::array<KindName, 11> kKindNames{{
    {ExecErrorKind::NoDevice, "no-gpu"},
    {ExecErrorKind::InvalidArgument, "invalid-argument"},
    {ExecErrorKind::OutOfMemory, "out-of-memory"},
    {ExecErrorKind::ModuleLoad, "module-load"},
    {ExecErrorKind::LaunchError, "launch-error"},
    {ExecErrorKind::OutOfResources, "out-of-resources"},
    {ExecErrorKind::Crashed, "crashed"},
    {ExecErrorKind::Timeout, "timeout"},
    {ExecErrorKind::Internal, "internal"},
    {ExecErrorKind::Unavailable, "unavailable"},
    {ExecErrorKind::EmuUnsupported, "emu-unsupported"},
}};
} // namespace

const char *execErrorKindName(ExecErrorKind kind) {
  for (const KindName &entry : kKindNames)
    if (entry.kind == kind)
      return entry.name;
  return "none";
}

Error makeExecError(ExecErrorKind kind, const std::string &detail, uint32_t line) {
  ErrorKind broad = ErrorKind::Internal;
  switch (kind) {
  case ExecErrorKind::NoDevice:
  case ExecErrorKind::Unavailable:
  case ExecErrorKind::EmuUnsupported: broad = ErrorKind::ToolMissing; break;
  case ExecErrorKind::ModuleLoad: broad = ErrorKind::Compile; break;
  case ExecErrorKind::InvalidArgument:
  case ExecErrorKind::LaunchError:
  case ExecErrorKind::OutOfResources:
  case ExecErrorKind::Crashed:
  case ExecErrorKind::Timeout: broad = ErrorKind::InvalidInput; break;
  default: break;
  }
  return makeError(broad, execErrorKindName(kind), detail, line);
}

ExecErrorKind execErrorKindOf(const Error &error) {
  if (error.code.empty())
    return ExecErrorKind::None;
  for (const KindName &entry : kKindNames)
    if (error.code == entry.name)
      return entry.kind;
  return ExecErrorKind::None;
}

KernelArgs &KernelArgs::buffer(BufferHandle handle, uint64_t byteOffset) {
  const uint64_t address = handle.value;
  raw(&address, sizeof address, alignof(uint64_t), true);
  packed_.slots.back().bufferOffset = byteOffset;
  return *this;
}

KernelArgs &KernelArgs::raw(const void *data, size_t size, size_t alignment, bool isBuffer) {
  assert(alignment != 0 && (alignment & (alignment - 1)) == 0 && "alignment must be a power of two");
  // The .param space of an .entry aligns each parameter to its own alignment,
  // as the C ABI lays out a struct; the driver reads the same layout.
  size_t offset = (packed_.bytes.size() + alignment - 1) & ~(alignment - 1);
  packed_.bytes.resize(offset + size, 0);
  if (size != 0)
    std::memcpy(packed_.bytes.data() + offset, data, size);
  packed_.slots.push_back({static_cast<uint32_t>(offset), static_cast<uint32_t>(size), isBuffer, 0});
  return *this;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    executor_ = other.executor_;
    handle_ = other.handle_;
    bytes_ = other.bytes_;
    other.executor_ = nullptr;
    other.handle_ = {};
    other.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (executor_ && handle_)
    (void)executor_->free(handle_); // a stale handle after a crash is fine to drop
  executor_ = nullptr;
  handle_ = {};
  bytes_ = 0;
}

const char *libraryOpName(LibraryOp op) {
  switch (op) {
  case LibraryOp::Gemm: return "gemm";
  case LibraryOp::GemmF16F32: return "gemm_f16_f32";
  case LibraryOp::GemmBatched: return "gemm_batched";
  case LibraryOp::Gemv: return "gemv";
  case LibraryOp::GemmE4M3F32: return "gemm_e4m3_f32";
  case LibraryOp::GemmBf16F32: return "gemm_bf16_f32";
  }
  return "unknown";
}

LibraryOperandCounts libraryOperandCounts(const LibraryCall &call) {
  auto count = [](int64_t x, int64_t y, int64_t z = 1) {
    return x > 0 && y > 0 && z > 0 ? uint64_t(x) * uint64_t(y) * uint64_t(z) : 0;
  };
  if (call.op == LibraryOp::Gemv)
    return {count(call.m, call.k), count(call.k, 1), count(call.m, 1)};
  const int64_t batch = call.op == LibraryOp::GemmBatched ? call.batch : 1;
  return {count(call.m, call.k, batch), count(call.k, call.n, batch), count(call.m, call.n, batch)};
}

LibraryOperandCounts libraryElementBytes(LibraryOp op) {
  if (op == LibraryOp::GemmE4M3F32) return {1, 1, 4};
  if (op == LibraryOp::GemmF16F32 || op == LibraryOp::GemmBf16F32) return {2, 2, 4};
  return {4, 4, 4};
}

Result<void> Executor::copyOnDevice(BufferHandle dst, uint64_t dstOffset, BufferHandle src, uint64_t srcOffset,
                                    uint64_t bytes) {
  std::vector<uint8_t> staging(bytes);
  if (Result<void> read = copyToHost(staging.data(), src, srcOffset, bytes); !read)
    return read;
  return copyToDevice(dst, dstOffset, staging.data(), bytes);
}

Result<void> Executor::apply(const MemoryOp &op) {
  if (!op.src)
    return memset(op.dst, op.dstOffset, op.fill, op.bytes);
  return copyOnDevice(op.dst, op.dstOffset, op.src, op.srcOffset, op.bytes);
}

Result<GlobalVariable> Executor::getGlobal(ModuleHandle module, const std::string &name) {
  (void)module;
  return makeExecError(ExecErrorKind::Unavailable, "module variable '" + name + "': not available on this executor (" +
                                                       (properties().backend.empty() ? "unnamed" : properties().backend) +
                                                       ")");
}

Result<TensorMapBytes> Executor::encodeTensorMap(BufferHandle buffer, uint64_t byteOffset, const TensorMapSpec &spec) {
  (void)buffer, (void)byteOffset, (void)spec;
  return makeExecError(ExecErrorKind::Unavailable, "tensor maps are not available on this executor");
}

Result<void> Executor::runLibraryCall(const LibraryCall &call) {
  return makeExecError(ExecErrorKind::Unavailable,
                       std::string("vendor-library calls (") + libraryOpName(call.op) +
                           ") are not available on this executor (" +
                           (properties().backend.empty() ? "unnamed" : properties().backend) + ")");
}

Result<std::vector<float>> Executor::timeLibraryCall(const LibraryCall &call, const TimingOptions &options) {
  (void)options;
  Result<void> unavailable = Executor::runLibraryCall(call);
  return unavailable.error();
}

Result<DeviceBuffer> Executor::allocateBuffer(uint64_t bytes) {
  Result<BufferHandle> handle = allocate(bytes);
  if (!handle)
    return handle.error();
  return DeviceBuffer(*this, *handle, bytes);
}

} // namespace ptxforge::exec
