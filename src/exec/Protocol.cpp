// Protocol: encoding, decoding and framed socket I/O of worker messages.
#include "exec/Protocol.h"
#include "support/ByteCodec.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace ptxforge::exec::protocol {

const char *opName(Op op) {
  switch (op) {
  case Op::Hello: return "hello";
  case Op::Allocate: return "allocate";
  case Op::Free: return "free";
  case Op::CopyToDevice: return "copy-to-device";
  case Op::CopyToHost: return "copy-to-host";
  case Op::Memset: return "memset";
  case Op::LoadModule: return "load-module";
  case Op::UnloadModule: return "unload-module";
  case Op::GetKernel: return "get-kernel";
  case Op::Launch: return "launch";
  case Op::Synchronize: return "synchronize";
  case Op::TimeLaunch: return "time-launch";
  case Op::FlushL2: return "flush-l2";
  case Op::RunLibraryCall: return "run-library-call";
  case Op::TimeLibraryCall: return "time-library-call";
  case Op::SetAccessibleRange: return "set-accessible-range";
  case Op::TakeFindings: return "take-findings";
  case Op::CopyOnDevice: return "copy-on-device";
  case Op::GetGlobal: return "get-global";
  case Op::CopyToDeviceStaged: return "copy-to-device-staged";
  case Op::CopyToHostStaged: return "copy-to-host-staged";
  case Op::TakeProfiles: return "take-profiles";
  case Op::EncodeTensorMap: return "encode-tensor-map";
  case Op::TestSleep: return "test-sleep";
  case Op::TestExit: return "test-exit";
  }
  return "unknown";
}

namespace {

using Writer = ByteWriter;
using Reader = ByteReader;

void putDim(Writer &writer, const Dim3 &dim) {
  writer.put(dim.x);
  writer.put(dim.y);
  writer.put(dim.z);
}
Dim3 getDim(Reader &reader) {
  Dim3 dim;
  dim.x = reader.get<uint32_t>();
  dim.y = reader.get<uint32_t>();
  dim.z = reader.get<uint32_t>();
  return dim;
}

Result<void> finish(const Reader &reader, const char *what) {
  if (reader.failed())
    return makeExecError(ExecErrorKind::Internal, std::string("protocol: truncated or malformed ") + what);
  if (!reader.atEnd())
    return makeExecError(ExecErrorKind::Internal, std::string("protocol: trailing bytes after ") + what);
  return {};
}

void putConfig(Writer &writer, const LaunchConfig &config) {
  putDim(writer, config.grid);
  putDim(writer, config.block);
  writer.put(config.dynamicSharedBytes);
  writer.put(config.timeoutMs);
  writer.put(static_cast<uint8_t>(config.profile ? 1 : 0));
}
LaunchConfig getConfig(Reader &reader) {
  LaunchConfig config;
  config.grid = getDim(reader);
  config.block = getDim(reader);
  config.dynamicSharedBytes = reader.get<uint32_t>();
  config.timeoutMs = reader.get<uint32_t>();
  config.profile = reader.get<uint8_t>() != 0;
  return config;
}

// A LaunchProfile: the launch's figures, then its lines.
void putProfile(Writer &writer, const LaunchProfile &profile) {
  writer.putString(profile.kernel);
  for (uint32_t value : profile.grid) writer.put(value);
  for (uint32_t value : profile.block) writer.put(value);
  writer.put(profile.warpInstructions);
  writer.put(profile.threadInstructions);
  writer.put(static_cast<uint32_t>(profile.lines.size()));
  for (const LineProfile &line : profile.lines) {
    writer.put(line.line);
    writer.putString(line.instruction);
    for (uint64_t value : {line.executions, line.globalRequests, line.globalSectors, line.globalIdealSectors,
                           line.globalBytes, line.sharedRequests, line.sharedWavefronts, line.sharedIdealWavefronts,
                           line.localRequests, line.localBytes})
      writer.put(value);
    writer.put(static_cast<uint8_t>((line.store ? 1 : 0) | (line.atomic ? 2 : 0)));
  }
}
LaunchProfile getProfile(Reader &reader) {
  LaunchProfile profile;
  profile.kernel = reader.getString();
  for (uint32_t &value : profile.grid) value = reader.get<uint32_t>();
  for (uint32_t &value : profile.block) value = reader.get<uint32_t>();
  profile.warpInstructions = reader.get<uint64_t>();
  profile.threadInstructions = reader.get<uint64_t>();
  const uint32_t lineCount = reader.getCount(4 + 8 + 10 * 8 + 1);
  for (uint32_t index = 0; index < lineCount; ++index) {
    LineProfile line;
    line.line = reader.get<uint32_t>();
    line.instruction = reader.getString();
    for (uint64_t *value : {&line.executions, &line.globalRequests, &line.globalSectors, &line.globalIdealSectors,
                            &line.globalBytes, &line.sharedRequests, &line.sharedWavefronts,
                            &line.sharedIdealWavefronts, &line.localRequests, &line.localBytes})
      *value = reader.get<uint64_t>();
    const uint8_t flags = reader.get<uint8_t>();
    line.store = flags & 1;
    line.atomic = flags & 2;
    profile.lines.push_back(std::move(line));
  }
  return profile;
}

void putOperand(Writer &writer, const LibraryOperand &operand) {
  writer.put(operand.buffer.value);
  writer.put(operand.byteOffset);
}
LibraryOperand getOperand(Reader &reader) {
  LibraryOperand operand;
  operand.buffer.value = reader.get<uint64_t>();
  operand.byteOffset = reader.get<uint64_t>();
  return operand;
}

void putLibraryCall(Writer &writer, const LibraryCall &call) {
  writer.put(static_cast<uint8_t>(call.op));
  writer.put(call.m);
  writer.put(call.n);
  writer.put(call.k);
  writer.put(call.batch);
  putOperand(writer, call.a);
  putOperand(writer, call.b);
  putOperand(writer, call.c);
  writer.put(call.timeoutMs);
}
LibraryCall getLibraryCall(Reader &reader) {
  LibraryCall call;
  const uint8_t op = reader.get<uint8_t>();
  if (op > uint8_t(LibraryOp::GemmE4M3F32))
    reader.fail();
  call.op = static_cast<LibraryOp>(op);
  call.m = reader.get<int64_t>();
  call.n = reader.get<int64_t>();
  call.k = reader.get<int64_t>();
  call.batch = reader.get<int64_t>();
  call.a = getOperand(reader);
  call.b = getOperand(reader);
  call.c = getOperand(reader);
  call.timeoutMs = reader.get<uint32_t>();
  return call;
}

bool validOp(uint8_t raw) {
  return (raw >= uint8_t(Op::Hello) && raw <= uint8_t(Op::EncodeTensorMap)) || raw == uint8_t(Op::TestSleep) ||
         raw == uint8_t(Op::TestExit);
}

} // namespace

std::vector<uint8_t> encode(const Request &request) {
  Writer writer;
  writer.put(static_cast<uint8_t>(request.op));
  writer.put(request.handle);
  writer.put(request.offset);
  writer.put(request.handle2);
  writer.put(request.offset2);
  writer.put(request.bytes);
  writer.put(request.value);
  writer.put(static_cast<uint8_t>(request.format));
  writer.putString(request.name);
  writer.putBytes(request.data.data(), request.data.size());
  putConfig(writer, request.config);
  writer.putBytes(request.args.bytes.data(), request.args.bytes.size());
  writer.put(static_cast<uint32_t>(request.args.slots.size()));
  for (const PackedArgs::Slot &slot : request.args.slots) {
    writer.put(slot.offset);
    writer.put(slot.size);
    writer.put(static_cast<uint8_t>(slot.isBuffer));
    writer.put(slot.bufferOffset);
  }
  writer.put(request.timing.warmupLaunches);
  writer.put(request.timing.repetitions);
  writer.put(static_cast<uint8_t>(request.timing.flushL2));
  writer.put(request.timing.timeoutMs);
  writer.put(static_cast<uint32_t>(request.timing.beforeEachLaunch.size()));
  for (const MemoryOp &op : request.timing.beforeEachLaunch) {
    writer.put(op.dst.value);
    writer.put(op.dstOffset);
    writer.put(op.src.value);
    writer.put(op.srcOffset);
    writer.put(op.bytes);
    writer.put(op.fill);
  }
  putLibraryCall(writer, request.library);
  return writer.take();
}

Result<Request> decodeRequest(const std::vector<uint8_t> &payload) {
  Reader reader(payload);
  Request request;
  const uint8_t op = reader.get<uint8_t>();
  if (!validOp(op))
    reader.fail();
  request.op = static_cast<Op>(op);
  request.handle = reader.get<uint64_t>();
  request.offset = reader.get<uint64_t>();
  request.handle2 = reader.get<uint64_t>();
  request.offset2 = reader.get<uint64_t>();
  request.bytes = reader.get<uint64_t>();
  request.value = reader.get<uint32_t>();
  const uint8_t format = reader.get<uint8_t>();
  if (format > uint8_t(ModuleFormat::Ptx))
    reader.fail();
  request.format = static_cast<ModuleFormat>(format);
  request.name = reader.getString();
  request.data = reader.getBytes();
  request.config = getConfig(reader);
  request.args.bytes = reader.getBytes();
  const uint32_t slotCount = reader.getCount(17);
  for (uint32_t index = 0; index < slotCount; ++index) {
    PackedArgs::Slot slot;
    slot.offset = reader.get<uint32_t>();
    slot.size = reader.get<uint32_t>();
    slot.isBuffer = reader.get<uint8_t>() != 0;
    slot.bufferOffset = reader.get<uint64_t>();
    request.args.slots.push_back(slot);
  }
  request.timing.warmupLaunches = reader.get<uint32_t>();
  request.timing.repetitions = reader.get<uint32_t>();
  request.timing.flushL2 = reader.get<uint8_t>() != 0;
  request.timing.timeoutMs = reader.get<uint32_t>();
  const uint32_t opCount = reader.getCount(41);
  for (uint32_t index = 0; index < opCount; ++index) {
    MemoryOp op;
    op.dst.value = reader.get<uint64_t>();
    op.dstOffset = reader.get<uint64_t>();
    op.src.value = reader.get<uint64_t>();
    op.srcOffset = reader.get<uint64_t>();
    op.bytes = reader.get<uint64_t>();
    op.fill = reader.get<uint8_t>();
    request.timing.beforeEachLaunch.push_back(op);
  }
  request.library = getLibraryCall(reader);
  if (Result<void> ok = finish(reader, "request"); !ok)
    return ok.error();
  return request;
}

std::vector<uint8_t> encode(const Response &response) {
  Writer writer;
  writer.put(static_cast<uint8_t>(response.status));
  writer.putString(response.message);
  writer.put(response.line);
  writer.putString(response.cause);
  writer.put(response.handle);
  writer.put(response.bytes);
  writer.putBytes(response.data.data(), response.data.size());
  writer.put(static_cast<uint32_t>(response.timings.size()));
  for (float timing : response.timings)
    writer.put(timing);
  const KernelInfo &kernel = response.kernel;
  writer.put(kernel.handle.value);
  writer.put(kernel.maxThreadsPerBlock);
  writer.put(kernel.registerCount);
  writer.put(kernel.staticSharedBytes);
  writer.put(kernel.localBytes);
  const DeviceProperties &properties = response.properties;
  writer.putString(properties.name);
  writer.put(properties.smMajor);
  writer.put(properties.smMinor);
  writer.put(properties.totalMemoryBytes);
  writer.put(properties.multiprocessorCount);
  writer.put(properties.clockRateKHz);
  writer.put(properties.memoryClockRateKHz);
  writer.put(properties.memoryBusWidthBits);
  writer.put(properties.l2CacheBytes);
  writer.put(properties.maxThreadsPerBlock);
  writer.put(properties.maxSharedBytesPerBlockOptin);
  writer.put(properties.warpSize);
  writer.put(properties.driverVersion);
  writer.putString(properties.backend);
  writer.put(static_cast<uint32_t>(response.findings.size()));
  for (const LaunchFinding &finding : response.findings) {
    writer.putString(finding.check);
    writer.put(static_cast<uint8_t>(finding.fatal ? 1 : 0));
    writer.putString(finding.message);
    writer.put(finding.line);
    writer.put(finding.column);
  }
  writer.put(static_cast<uint32_t>(response.profiles.size()));
  for (const LaunchProfile &profile : response.profiles) putProfile(writer, profile);
  return writer.take();
}

Result<Response> decodeResponse(const std::vector<uint8_t> &payload) {
  Reader reader(payload);
  Response response;
  const uint8_t status = reader.get<uint8_t>();
  if (status > uint8_t(ExecErrorKind::EmuUnsupported))
    reader.fail();
  response.status = static_cast<ExecErrorKind>(status);
  response.message = reader.getString();
  response.line = reader.get<uint32_t>();
  response.cause = reader.getString();
  response.handle = reader.get<uint64_t>();
  response.bytes = reader.get<uint64_t>();
  response.data = reader.getBytes();
  const uint32_t timingCount = reader.getCount(sizeof(float));
  for (uint32_t index = 0; index < timingCount; ++index)
    response.timings.push_back(reader.get<float>());
  KernelInfo &kernel = response.kernel;
  kernel.handle.value = reader.get<uint64_t>();
  kernel.maxThreadsPerBlock = reader.get<int>();
  kernel.registerCount = reader.get<int>();
  kernel.staticSharedBytes = reader.get<int>();
  kernel.localBytes = reader.get<int>();
  DeviceProperties &properties = response.properties;
  properties.name = reader.getString();
  properties.smMajor = reader.get<int>();
  properties.smMinor = reader.get<int>();
  properties.totalMemoryBytes = reader.get<uint64_t>();
  properties.multiprocessorCount = reader.get<int>();
  properties.clockRateKHz = reader.get<int>();
  properties.memoryClockRateKHz = reader.get<int>();
  properties.memoryBusWidthBits = reader.get<int>();
  properties.l2CacheBytes = reader.get<int>();
  properties.maxThreadsPerBlock = reader.get<int>();
  properties.maxSharedBytesPerBlockOptin = reader.get<int>();
  properties.warpSize = reader.get<int>();
  properties.driverVersion = reader.get<int>();
  properties.backend = reader.getString();
  const uint32_t findingCount = reader.getCount(8 + 1 + 8 + 4 + 4);
  for (uint32_t index = 0; index < findingCount; ++index) {
    LaunchFinding finding;
    finding.check = reader.getString();
    finding.fatal = reader.get<uint8_t>() != 0;
    finding.message = reader.getString();
    finding.line = reader.get<uint32_t>();
    finding.column = reader.get<uint32_t>();
    response.findings.push_back(std::move(finding));
  }
  const uint32_t profileCount = reader.getCount(8 + 6 * 4 + 8 + 8 + 4);
  for (uint32_t index = 0; index < profileCount; ++index) response.profiles.push_back(getProfile(reader));
  if (Result<void> ok = finish(reader, "response"); !ok)
    return ok.error();
  return response;
}

namespace {

Result<void> writeAll(int fd, const uint8_t *data, size_t size) {
  while (size > 0) {
    // send() with MSG_NOSIGNAL: a dead peer is an EPIPE error, not a SIGPIPE
    // that would kill the parent.
    ssize_t written = ::send(fd, data, size, MSG_NOSIGNAL);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      const ExecErrorKind kind = (errno == EPIPE || errno == ECONNRESET) ? ExecErrorKind::Crashed : ExecErrorKind::Internal;
      return makeExecError(kind, std::string("protocol: send failed: ") + std::strerror(errno));
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
  return {};
}

/// Reads exactly `size` bytes before `deadline` (steady clock; max() = none).
Result<void> readAll(int fd, uint8_t *data, size_t size, std::chrono::steady_clock::time_point deadline, bool forever) {
  while (size > 0) {
    int waitMs = -1;
    if (!forever) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return makeExecError(ExecErrorKind::Timeout, "deadline passed");
      waitMs = static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
    }
    pollfd descriptor{fd, POLLIN, 0};
    int ready = ::poll(&descriptor, 1, waitMs);
    if (ready < 0) {
      if (errno == EINTR)
        continue;
      return makeExecError(ExecErrorKind::Internal, std::string("protocol: poll failed: ") + std::strerror(errno));
    }
    if (ready == 0)
      continue; // the deadline check above decides
    ssize_t got = ::read(fd, data, size);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN)
        continue;
      if (errno == ECONNRESET)
        return makeExecError(ExecErrorKind::Crashed, "connection closed");
      return makeExecError(ExecErrorKind::Internal, std::string("protocol: read failed: ") + std::strerror(errno));
    }
    if (got == 0)
      return makeExecError(ExecErrorKind::Crashed, "connection closed");
    data += got;
    size -= static_cast<size_t>(got);
  }
  return {};
}

} // namespace

Result<void> writeFrame(int fd, const std::vector<uint8_t> &payload) {
  if (payload.size() > kMaxFrameBytes)
    return makeExecError(ExecErrorKind::InvalidArgument,
                         "protocol: message of " + std::to_string(payload.size()) + " bytes exceeds the 2 GiB frame limit");
  uint32_t header[2] = {kFrameMagic, static_cast<uint32_t>(payload.size())};
  if (Result<void> ok = writeAll(fd, reinterpret_cast<const uint8_t *>(header), sizeof header); !ok)
    return ok;
  return writeAll(fd, payload.data(), payload.size());
}

Result<std::vector<uint8_t>> readFrame(int fd, int deadlineMs) {
  const bool forever = deadlineMs < 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(forever ? 0 : deadlineMs);
  uint32_t header[2] = {0, 0};
  if (Result<void> ok = readAll(fd, reinterpret_cast<uint8_t *>(header), sizeof header, deadline, forever); !ok)
    return ok.error();
  if (header[0] != kFrameMagic)
    return makeExecError(ExecErrorKind::Internal, "protocol: bad frame magic (not a ptxforge worker?)");
  if (header[1] > kMaxFrameBytes)
    return makeExecError(ExecErrorKind::Internal, "protocol: frame length " + std::to_string(header[1]) + " too large");
  std::vector<uint8_t> payload(header[1]);
  if (Result<void> ok = readAll(fd, payload.data(), payload.size(), deadline, forever); !ok)
    return ok.error();
  return payload;
}

} // namespace ptxforge::exec::protocol
