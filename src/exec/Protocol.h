// Protocol: the messages between IsolatedExecutor (parent) and
// ptxforge_exec_worker (child). One request, one response, strictly in turn,
// over a Unix stream socket. Each message is a frame:
//
//   u32 magic 'PXF1' | u32 payload length | payload
//
// and a payload is the message's fields in a fixed order, little-endian
// (parent and child are the same binary build on the same machine):
// integers as-is, strings and byte blobs as u64 length + bytes, vectors as
// u32 count + elements. Requests and responses are flat structs: every field is
// always written (unused ones are empty or zero, a few bytes), which keeps the
// codec obvious and the round trip exact.
#pragma once

#include "exec/Executor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ptxforge::exec::protocol {

constexpr uint32_t kFrameMagic = 0x31465850; // "PXF1" little-endian
constexpr uint32_t kMaxFrameBytes = 1u << 31; // 2 GiB: larger copies are split by the caller

enum class Op : uint8_t {
  Hello = 1,    ///< open the device; the response carries DeviceProperties
  Allocate,     ///< bytes -> handle
  Free,         ///< handle
  CopyToDevice, ///< handle, offset, data
  CopyToHost,   ///< handle, offset, bytes -> data
  Memset,       ///< handle, offset, value, bytes
  LoadModule,   ///< format, data -> handle
  UnloadModule, ///< handle
  GetKernel,    ///< handle (module), name -> kernel
  Launch,       ///< handle (kernel), config, args
  Synchronize,
  TimeLaunch,   ///< handle (kernel), config, args, timing -> timings
  FlushL2,
  RunLibraryCall,  ///< library -> (nothing): one vendor-library call, synchronous
  TimeLibraryCall, ///< library, timing -> timings
  SetAccessibleRange, ///< handle, offset, bytes
  TakeFindings,       ///< -> findings (the emulator's sanitizers)
  CopyOnDevice,       ///< handle (dst), offset, handle2 (src), offset2, bytes
  GetGlobal,          ///< handle (module), name -> handle, bytes
  /// Large copies through the shared staging area (StagingArea) instead of
  /// the socket: the parent puts `bytes` at its start, or the worker does.
  CopyToDeviceStaged, ///< handle, offset, bytes (the data: staging[0, bytes))
  CopyToHostStaged,   ///< handle, offset, bytes -> staging[0, bytes)
  TakeProfiles,       ///< -> profiles (the emulator's profiled launches)
  EncodeTensorMap,    ///< handle, offset, data (serializeTensorMapSpec) -> data (the 128-byte map)
  // Test-only operations, honoured only when the worker runs with
  // PTXFORGE_EXEC_WORKER_TEST=1 in its environment.
  TestSleep = 100, ///< value = milliseconds to sleep before answering
  TestExit,        ///< the worker exits at once with status `value`, answering nothing
};

const char *opName(Op op);

/// The staging area: a memfd both processes map, for copies of
/// kStagedCopyMinBytes or more (one copy each side, instead of the socket's
/// encode, write, read and decode). Copies larger than the area go in pieces.
constexpr uint64_t kStagingBytes = 64ull << 20;
constexpr uint64_t kStagedCopyMinBytes = 256ull << 10;

struct Request {
  Op op = Op::Hello;
  uint64_t handle = 0;
  uint64_t offset = 0;
  uint64_t handle2 = 0; ///< a second buffer (CopyOnDevice's source)
  uint64_t offset2 = 0;
  uint64_t bytes = 0;
  uint32_t value = 0;
  ModuleFormat format = ModuleFormat::Cubin;
  std::string name;
  std::vector<uint8_t> data;
  LaunchConfig config;
  PackedArgs args;
  TimingOptions timing;
  LibraryCall library; ///< buffer handles are the worker's (translated by the parent)
  friend bool operator==(const Request &, const Request &) = default;
};

struct Response {
  ExecErrorKind status = ExecErrorKind::None; ///< None = success
  std::string message;                        ///< the Error message when status != None (without the code)
  uint32_t line = 0;                          ///< the Error's line (an emulator's load error), 0 = none
  std::string cause;                          ///< the Error's cause (the driver's error name)
  uint64_t handle = 0;
  uint64_t bytes = 0; ///< GetGlobal: the variable's size
  std::vector<uint8_t> data;
  std::vector<float> timings;
  KernelInfo kernel;
  DeviceProperties properties;
  std::vector<LaunchFinding> findings;
  std::vector<LaunchProfile> profiles;
  friend bool operator==(const Response &, const Response &) = default;
};

std::vector<uint8_t> encode(const Request &request);
std::vector<uint8_t> encode(const Response &response);
/// Decodes a payload (without the frame header). An Error (kind Internal) when
/// the bytes are truncated, have trailing garbage or an unknown enum value.
Result<Request> decodeRequest(const std::vector<uint8_t> &payload);
Result<Response> decodeResponse(const std::vector<uint8_t> &payload);

/// Writes header + payload to `fd`, retrying short writes; never raises SIGPIPE.
Result<void> writeFrame(int fd, const std::vector<uint8_t> &payload);
/// Reads one frame's payload. `deadlineMs` < 0 waits forever; otherwise an
/// Error of kind Timeout when the frame has not fully arrived in time. A closed
/// peer gives an Error of kind Crashed ("connection closed").
Result<std::vector<uint8_t>> readFrame(int fd, int deadlineMs);

} // namespace ptxforge::exec::protocol
