// CompileProtocol: the messages between compilePtx (parent) and
// ptxforge_compile_worker (child). One request, one response, strictly in
// turn, over a Unix stream socket. Each message is a frame
//
//   u32 magic 'PXC1' | u64 payload length | payload
//
// whose payload is the message's fields in a fixed order, little-endian
// (parent and worker come from the same build): integers as-is, strings and
// byte blobs as u64 length + bytes. Every field is always written.
#pragma once

#include "support/Result.h"
#include "toolchain/CompileBackend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ptxforge::toolchain::protocol {

constexpr uint32_t kFrameMagic = 0x31435850; // "PXC1" little-endian
constexpr size_t kFrameHeaderBytes = 12;
/// The worker cuts each log to this size (a runaway log is not worth a pipe).
constexpr size_t kMaxLogBytes = 1u << 20;
/// A line the worker writes to its stderr when an allocation fails, so that
/// the parent can tell a memory limit from a crash even when the worker dies.
constexpr const char *kAllocationFailedMarker = "ptxforge-compile-worker: allocation failed";

struct Request {
  BackendRequest backend;
  uint64_t memoryLimitBytes = 0; ///< RLIMIT_AS for the compile; 0 = none
  uint64_t maxOutputBytes = 0;   ///< the cubin cap (and RLIMIT_FSIZE for ptxas); 0 = none
  uint32_t timeoutMs = 0;        ///< the worker's own backstop alarm (the parent enforces the deadline)
  std::string ptx;
  friend bool operator==(const Request &, const Request &) = default;
};

struct Response {
  bool isError = false;            ///< runBackend returned an Error
  ErrorKind errorKind = ErrorKind::Internal;
  std::string errorMessage;
  RawCompile raw;                  ///< when !isError
  bool allocationFailed = false;   ///< an allocation failed during the compile (the memory limit)
  uint64_t cubinBytesDropped = 0;  ///< the cubin exceeded maxOutputBytes: its size (the cubin is not sent)
  friend bool operator==(const Response &, const Response &) = default;
};

std::vector<uint8_t> encode(const Request &request);
std::vector<uint8_t> encode(const Response &response);
Result<Request> decodeRequest(const std::vector<uint8_t> &payload);
Result<Response> decodeResponse(const std::vector<uint8_t> &payload);

/// The 12-byte header for a payload of `payloadBytes`.
std::vector<uint8_t> frameHeader(uint64_t payloadBytes);
/// Parses a header; an Error when the magic is wrong.
Result<uint64_t> parseFrameHeader(const uint8_t *header);

/// Writes a whole frame (header + payload) to a socket, retrying short writes
/// and EINTR; never raises SIGPIPE (a dead peer is an Error).
Result<void> writeFrame(int socket, const std::vector<uint8_t> &payload);
/// Reads one frame, blocking. An Error with an empty message means a clean
/// end of stream before any byte of a frame.
Result<std::vector<uint8_t>> readFrameBlocking(int socket, uint64_t maxPayloadBytes);

} // namespace ptxforge::toolchain::protocol
