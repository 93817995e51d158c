// CompileProtocol: the flat little-endian codec of the compile worker's
// messages and blocking frame I/O over a Unix socket.
#include "toolchain/CompileProtocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ptxforge::toolchain::protocol {

namespace {

class Writer {
public:
  void u8(uint8_t value) { bytes_.push_back(value); }
  void u32(uint32_t value) { raw(&value, sizeof value); }
  void u64(uint64_t value) { raw(&value, sizeof value); }
  void i32(int32_t value) { raw(&value, sizeof value); }
  void f64(double value) { raw(&value, sizeof value); }
  void boolean(bool value) { u8(value ? 1 : 0); }
  void string(const std::string &value) {
    u64(value.size());
    raw(value.data(), value.size());
  }
  void blob(const std::vector<uint8_t> &value) {
    u64(value.size());
    raw(value.data(), value.size());
  }
  std::vector<uint8_t> take() { return std::move(bytes_); }

private:
  void raw(const void *data, size_t size) {
    const auto *begin = static_cast<const uint8_t *>(data);
    bytes_.insert(bytes_.end(), begin, begin + size);
  }
  std::vector<uint8_t> bytes_;
};

/// Reads fields in order; any overrun sets `failed` and yields zeros, checked once at the end.
class Reader {
public:
  explicit Reader(const std::vector<uint8_t> &bytes) : bytes_(bytes) {}
  uint8_t u8() {
    uint8_t value = 0;
    raw(&value, sizeof value);
    return value;
  }
  uint32_t u32() {
    uint32_t value = 0;
    raw(&value, sizeof value);
    return value;
  }
  uint64_t u64() {
    uint64_t value = 0;
    raw(&value, sizeof value);
    return value;
  }
  int32_t i32() {
    int32_t value = 0;
    raw(&value, sizeof value);
    return value;
  }
  double f64() {
    double value = 0;
    raw(&value, sizeof value);
    return value;
  }
  bool boolean() { return u8() != 0; }
  std::string string() {
    const uint64_t size = u64();
    if (!fits(size))
      return {};
    std::string value(reinterpret_cast<const char *>(bytes_.data() + at_), size);
    at_ += size;
    return value;
  }
  std::vector<uint8_t> blob() {
    const uint64_t size = u64();
    if (!fits(size))
      return {};
    std::vector<uint8_t> value(bytes_.begin() + static_cast<std::ptrdiff_t>(at_),
                               bytes_.begin() + static_cast<std::ptrdiff_t>(at_ + size));
    at_ += size;
    return value;
  }
  Result<void> finish(const char *what) const {
    if (failed_ || at_ != bytes_.size())
      return makeError(ErrorKind::Internal, std::string("malformed compile-worker ") + what + " (" +
                                                std::to_string(bytes_.size()) + " bytes)");
    return {};
  }

private:
  bool fits(uint64_t size) {
    if (failed_ || size > bytes_.size() - at_) {
      failed_ = true;
      return false;
    }
    return true;
  }
  void raw(void *out, size_t size) {
    if (!fits(size))
      return;
    std::memcpy(out, bytes_.data() + at_, size);
    at_ += size;
  }
  const std::vector<uint8_t> &bytes_;
  size_t at_ = 0;
  bool failed_ = false;
};

void writeBackend(Writer &out, const BackendRequest &backend) {
  out.u8(static_cast<uint8_t>(backend.backend));
  out.string(backend.arch);
  out.i32(backend.optLevel);
  out.i32(backend.maxRegisters);
  out.boolean(backend.generateLineInfo);
  out.boolean(backend.relocatable);
  out.string(backend.ptxasPath);
}

BackendRequest readBackend(Reader &in) {
  BackendRequest backend;
  backend.backend = in.u8() == 1 ? BackendKind::Ptxas : BackendKind::NvJitLink;
  backend.arch = in.string();
  backend.optLevel = in.i32();
  backend.maxRegisters = in.i32();
  backend.generateLineInfo = in.boolean();
  backend.relocatable = in.boolean();
  backend.ptxasPath = in.string();
  return backend;
}

} // namespace

std::vector<uint8_t> encode(const Request &request) {
  Writer out;
  writeBackend(out, request.backend);
  out.u64(request.memoryLimitBytes);
  out.u64(request.maxOutputBytes);
  out.u32(request.timeoutMs);
  out.string(request.ptx);
  return out.take();
}

Result<Request> decodeRequest(const std::vector<uint8_t> &payload) {
  Reader in(payload);
  Request request;
  request.backend = readBackend(in);
  request.memoryLimitBytes = in.u64();
  request.maxOutputBytes = in.u64();
  request.timeoutMs = in.u32();
  request.ptx = in.string();
  if (Result<void> done = in.finish("request"); !done)
    return done.error();
  return request;
}

std::vector<uint8_t> encode(const Response &response) {
  Writer out;
  out.boolean(response.isError);
  out.u8(static_cast<uint8_t>(response.errorKind));
  out.string(response.errorMessage);
  const RawCompile &raw = response.raw;
  out.boolean(raw.ok);
  out.blob(raw.cubin);
  out.string(raw.infoLog);
  out.string(raw.errorLog);
  out.f64(raw.compileMs);
  out.string(raw.toolVersion);
  out.string(raw.failure);
  out.boolean(raw.toolFailure);
  out.i32(raw.toolSignal);
  out.boolean(response.allocationFailed);
  out.u64(response.cubinBytesDropped);
  return out.take();
}

Result<Response> decodeResponse(const std::vector<uint8_t> &payload) {
  Reader in(payload);
  Response response;
  response.isError = in.boolean();
  const uint8_t kind = in.u8();
  response.errorKind = kind <= static_cast<uint8_t>(ErrorKind::Internal) ? static_cast<ErrorKind>(kind) : ErrorKind::Internal;
  response.errorMessage = in.string();
  RawCompile &raw = response.raw;
  raw.ok = in.boolean();
  raw.cubin = in.blob();
  raw.infoLog = in.string();
  raw.errorLog = in.string();
  raw.compileMs = in.f64();
  raw.toolVersion = in.string();
  raw.failure = in.string();
  raw.toolFailure = in.boolean();
  raw.toolSignal = in.i32();
  response.allocationFailed = in.boolean();
  response.cubinBytesDropped = in.u64();
  if (Result<void> done = in.finish("response"); !done)
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
