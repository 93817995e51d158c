// CompileProtocol: the flat little-endian codec of the compile worker's
// messages and blocking frame I/O over a Unix socket.
#include "toolchain/CompileProtocol.h"
#include "support/ByteCodec.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ptxforge::toolchain::protocol {

namespace {

using Writer = ByteWriter;
using Reader = ByteReader;

Result<void> finish(const Reader &in, const char *what) {
  if (in.failed() || !in.atEnd())
    return makeError(ErrorKind::Internal, std::string("malformed compile-worker ") + what + " (" +
                                              std::to_string(in.size()) + " bytes)");
  return {};
}

void writeBackend(Writer &out, const BackendRequest &backend) {
  out.put<uint8_t>(static_cast<uint8_t>(backend.backend));
  out.putString(backend.arch);
  out.put<int32_t>(backend.optLevel);
  out.put<int32_t>(backend.maxRegisters);
  out.putBool(backend.generateLineInfo);
  out.putBool(backend.relocatable);
  out.putString(backend.ptxasPath);
}

BackendRequest readBackend(Reader &in) {
  BackendRequest backend;
  backend.backend = in.get<uint8_t>() == 1 ? BackendKind::Ptxas : BackendKind::NvJitLink;
  backend.arch = in.getString();
  backend.optLevel = in.get<int32_t>();
  backend.maxRegisters = in.get<int32_t>();
  backend.generateLineInfo = in.getBool();
  backend.relocatable = in.getBool();
  backend.ptxasPath = in.getString();
  return backend;
}

} // namespace

std::vector<uint8_t> encode(const Request &request) {
  Writer out;
  writeBackend(out, request.backend);
  out.put<uint64_t>(request.memoryLimitBytes);
  out.put<uint64_t>(request.maxOutputBytes);
  out.put<uint32_t>(request.timeoutMs);
  out.putString(request.ptx);
  return out.take();
}

Result<Request> decodeRequest(const std::vector<uint8_t> &payload) {
  Reader in(payload);
  Request request;
  request.backend = readBackend(in);
  request.memoryLimitBytes = in.get<uint64_t>();
  request.maxOutputBytes = in.get<uint64_t>();
  request.timeoutMs = in.get<uint32_t>();
  request.ptx = in.getString();
  if (Result<void> done = finish(in, "request"); !done)
    return done.error();
  return request;
}

std::vector<uint8_t> encode(const Response &response) {
  Writer out;
  out.putBool(response.isError);
  out.put<uint8_t>(static_cast<uint8_t>(response.errorKind));
  out.putString(response.errorMessage);
  const RawCompile &raw = response.raw;
  out.putBool(raw.ok);
  out.putBytes(raw.cubin);
  out.putString(raw.infoLog);
  out.putString(raw.errorLog);
  out.put<double>(raw.compileMs);
  out.putString(raw.toolVersion);
  out.putString(raw.failure);
  out.putBool(raw.toolFailure);
  out.put<int32_t>(raw.toolSignal);
  out.putBool(response.allocationFailed);
  out.put<uint64_t>(response.cubinBytesDropped);
  return out.take();
}

Result<Response> decodeResponse(const std::vector<uint8_t> &payload) {
  Reader in(payload);
  Response response;
  response.isError = in.getBool();
  const uint8_t kind = in.get<uint8_t>();
  response.errorKind = kind <= static_cast<uint8_t>(ErrorKind::Internal) ? static_cast<ErrorKind>(kind) : ErrorKind::Internal;
  response.errorMessage = in.getString();
  RawCompile &raw = response.raw;
  raw.ok = in.getBool();
  raw.cubin = in.getBytes();
  raw.infoLog = in.getString();
  raw.errorLog = in.getString();
  raw.compileMs = in.get<double>();
  raw.toolVersion = in.getString();
  raw.failure = in.getString();
  raw.toolFailure = in.getBool();
  raw.toolSignal = in.get<int32_t>();
  response.allocationFailed = in.getBool();
  response.cubinBytesDropped = in.get<uint64_t>();
  if (Result<void> done = finish(in, "response"); !done)
    return done.error();
  return response;
}

std::vector<uint8_t> frameHeader(uint64_t payloadBytes) {
  std::vector<uint8_t> header(kFrameHeaderBytes);
  std::memcpy(header.data(), &kFrameMagic, 4);
  std::memcpy(header.data() + 4, &payloadBytes, 8);
  return header;
}

Result<uint64_t> parseFrameHeader(const uint8_t *header) {
  uint32_t magic = 0;
  uint64_t length = 0;
  std::memcpy(&magic, header, 4);
  std::memcpy(&length, header + 4, 8);
  if (magic != kFrameMagic)
    return makeError(ErrorKind::Internal, "compile-worker frame with a bad magic number");
  return length;
}

namespace {

Result<void> sendAll(int socket, const uint8_t *data, size_t size) {
  while (size > 0) {
    const ssize_t sent = ::send(socket, data, size, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR)
        continue;
      return makeError(ErrorKind::Io, std::string("send to the compile worker socket: ") + std::strerror(errno));
    }
    data += sent;
    size -= static_cast<size_t>(sent);
  }
  return {};
}

/// Reads exactly `size` bytes; `clean` tells whether EOF came before the first byte.
Result<void> readAll(int socket, uint8_t *data, size_t size, bool &clean) {
  size_t done = 0;
  clean = false;
  while (done < size) {
    const ssize_t got = ::read(socket, data + done, size - done);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return makeError(ErrorKind::Io, std::string("read from the compile worker socket: ") + std::strerror(errno));
    }
    if (got == 0) {
      clean = done == 0;
      return makeError(ErrorKind::Io, clean ? "" : "the compile worker socket closed inside a frame");
    }
    done += static_cast<size_t>(got);
  }
  return {};
}

} // namespace

Result<void> writeFrame(int socket, const std::vector<uint8_t> &payload) {
  const std::vector<uint8_t> header = frameHeader(payload.size());
  if (Result<void> sent = sendAll(socket, header.data(), header.size()); !sent)
    return sent;
  return sendAll(socket, payload.data(), payload.size());
}

Result<std::vector<uint8_t>> readFrameBlocking(int socket, uint64_t maxPayloadBytes) {
  uint8_t header[kFrameHeaderBytes];
  bool clean = false;
  if (Result<void> got = readAll(socket, header, sizeof header, clean); !got)
    return got.error();
  Result<uint64_t> length = parseFrameHeader(header);
  if (!length)
    return length.error();
  if (*length > maxPayloadBytes)
    return makeError(ErrorKind::InvalidInput, "compile-worker frame of " + std::to_string(*length) +
                                                  " bytes exceeds the " + std::to_string(maxPayloadBytes) + "-byte cap");
  std::vector<uint8_t> payload(*length);
  if (Result<void> got = readAll(socket, payload.data(), payload.size(), clean); !got)
    return got.error();
  return payload;
}

} // namespace ptxforge::toolchain::protocol
