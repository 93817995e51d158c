// IsolatedExecutor: the parent side of the worker protocol — spawning, the
// watchdog, restarts, and the handle bookkeeping that survives a dead worker.
#include "exec/IsolatedExecutor.h"

#include "support/Parallel.h"
#include "support/Process.h"

#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

extern char **environ;

namespace ptxforge::exec {

using protocol::Op;
using protocol::Request;
using protocol::Response;

namespace {

/// The worker's Error rebuilt from its parts: the status byte is the code.
Error errorFromWorker(const Response &response) {
  Error error = makeExecError(response.status, response.message, response.line);
  error.cause = response.cause;
  return error;
}

constexpr const char *kLostHandles =
    "; the worker's CUDA context is gone with it: its buffers, modules and kernels are lost — "
    "allocate, upload and load again (the next call starts a fresh worker)";

} // namespace

std::string findWorker(const IsolatedOptions &options) {
#ifndef PTXFORGE_EXEC_WORKER_BUILD_PATH
#define PTXFORGE_EXEC_WORKER_BUILD_PATH nullptr
#endif
  return findHelperProgram(options.workerPath, "PTXFORGE_EXEC_WORKER", "ptxforge_exec_worker",
                           PTXFORGE_EXEC_WORKER_BUILD_PATH);
}

// ---------------------------------------------------------------------------
// WorkerProcess

WorkerProcess::~WorkerProcess() {
  stop();
  if (staging_)
    ::munmap(staging_, protocol::kStagingBytes);
  if (stagingFd_ >= 0)
    ::close(stagingFd_);
}

void WorkerProcess::makeStaging() {
  if (stagingTried_)
    return;
  stagingTried_ = true;
  // PTXFORGE_EXEC_STAGING=0: every copy through the socket (to compare, or to debug).
  if (const char *setting = std::getenv("PTXFORGE_EXEC_STAGING"); setting && std::strcmp(setting, "0") == 0)
    return;
  // Close-on-exec: only the child's dup2'ed copy survives its exec.
  const int fd = ::memfd_create("ptxforge-staging", MFD_CLOEXEC);
  if (fd < 0)
    return;
  if (::ftruncate(fd, static_cast<off_t>(protocol::kStagingBytes)) != 0) {
    ::close(fd);
    return;
  }
  void *mapped = ::mmap(nullptr, protocol::kStagingBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) {
    ::close(fd);
    return;
  }
  stagingFd_ = fd;
  staging_ = static_cast<uint8_t *>(mapped);
}

Result<void> WorkerProcess::ensureStarted() {
  if (running())
    return {};
  const std::string path = findWorker(options_);
  if (path.empty())
    return makeExecError(ExecErrorKind::Internal,
                         "ptxforge_exec_worker not found (set PTXFORGE_EXEC_WORKER or IsolatedOptions::workerPath)");
  int sockets[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0)
    return makeExecError(ExecErrorKind::Internal, std::string("socketpair: ") + std::strerror(errno));
  // The child gets its end as fd 3 (dup2 clears close-on-exec); every other
  // descriptor of ours, the parent's end included, closes on exec.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sockets[1], 3);
  const std::string deviceArgument = "--device=" + std::to_string(options_.deviceOrdinal);
  std::vector<std::string> arguments = {path, "--fd=3", deviceArgument, "--backend=" + options_.backend};
  // The staging area as fd 4, mapped by the child at start.
  makeStaging();
  if (staging_) {
    posix_spawn_file_actions_adddup2(&actions, stagingFd_, 4);
    arguments.push_back("--staging=4:" + std::to_string(protocol::kStagingBytes));
  }
  std::vector<char *> argv;
  for (std::string &argument : arguments)
    argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_t child = -1;
  const int spawnError = ::posix_spawn(&child, path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(sockets[1]);
  if (spawnError != 0) {
    ::close(sockets[0]);
    return makeExecError(ExecErrorKind::Internal, "posix_spawn(" + path + "): " + std::strerror(spawnError));
  }
  pid_ = child;
  socket_ = sockets[0];
  ++starts_;
  return {};
}

std::string WorkerProcess::reap() {
  std::string how = "the worker process ended";
  if (pid_ > 0) {
    int status = 0;
    pid_t result;
    do
      result = ::waitpid(pid_, &status, 0);
    while (result < 0 && errno == EINTR);
    if (result == pid_ && (WIFSIGNALED(status) || WIFEXITED(status)))
      how = describeWaitStatus("the worker process (pid " + std::to_string(pid_) + ")", status);
  }
  if (socket_ >= 0)
    ::close(socket_);
  socket_ = -1;
  pid_ = -1;
  return how;
}

void WorkerProcess::stop() {
  if (pid_ > 0)
    ::kill(pid_, SIGKILL); // only our own child, by its id
  if (pid_ > 0 || socket_ >= 0)
    reap();
}

Result<Response> WorkerProcess::call(const Request &request, uint32_t timeoutMs) {
  if (Result<void> started = ensureStarted(); !started)
    return started.error();
  const char *operation = protocol::opName(request.op);
  if (Result<void> sent = protocol::writeFrame(socket_, protocol::encode(request)); !sent) {
    // The child closed its end: it died (or is dying); find out how.
    ::kill(pid_, SIGKILL);
    return makeExecError(ExecErrorKind::Crashed,
                         std::string("'") + operation + "' could not be sent: " + reap() + kLostHandles);
  }
  Result<std::vector<uint8_t>> payload = protocol::readFrame(socket_, static_cast<int>(std::min<uint32_t>(timeoutMs, INT_MAX)));
  if (!payload) {
    const ExecErrorKind kind = execErrorKindOf(payload.error());
    if (kind == ExecErrorKind::Timeout) {
      // The watchdog: a kernel that never ends (or a wedged driver call) is
      // stopped by killing the process; the driver tears the context down.
      const pid_t victim = pid_;
      stop();
      return makeExecError(ExecErrorKind::Timeout, std::string("'") + operation + "' did not finish within " +
                                                       std::to_string(timeoutMs) + " ms; the watchdog killed worker pid " +
                                                       std::to_string(victim) + kLostHandles);
    }
    if (kind == ExecErrorKind::Crashed)
      return makeExecError(ExecErrorKind::Crashed,
                           std::string("during '") + operation + "' " + reap() + kLostHandles);
    stop();
    return makeExecError(ExecErrorKind::Internal, std::string("during '") + operation + "': " +
                                                      payload.error().message + "; worker stopped");
  }
  Result<Response> response = protocol::decodeResponse(*payload);
  if (!response) {
    stop();
    return response.error();
  }
  if (response->status == ExecErrorKind::Crashed && options_.backend != "emu") {
    // A sticky error: the child's context is dead. It exits by itself after
    // answering; make sure of it and reap it.
    stop();
    response->message += " (worker stopped; the next call starts a fresh one)";
  }
  return response;
}

// ---------------------------------------------------------------------------
// IsolatedExecutor

Result<std::unique_ptr<IsolatedExecutor>> IsolatedExecutor::create(const IsolatedOptions &options) {
  std::unique_ptr<IsolatedExecutor> executor(new IsolatedExecutor(options));
  if (Result<void> started = executor->startWorker(); !started)
    return started.error();
  return executor;
}

Result<std::unique_ptr<Executor>> createIsolatedExecutor(const IsolatedOptions &options) {
  Result<std::unique_ptr<IsolatedExecutor>> created = IsolatedExecutor::create(options);
  if (!created)
    return created.error();
  return std::unique_ptr<Executor>(std::move(*created));
}

Result<void> IsolatedExecutor::startWorker() {
  Request hello;
  hello.op = Op::Hello;
  Result<Response> answer = worker_.call(hello, options_.startTimeoutMs);
  if (!answer)
    return answer.error();
  if (answer->status != ExecErrorKind::None) {
    worker_.stop();
    return errorFromWorker(*answer);
  }
  properties_ = answer->properties;
  properties_.backend = "isolated-" + options_.backend;
  return {};
}

Result<Response> IsolatedExecutor::call(const Request &request, uint32_t timeoutMs) {
  if (!worker_.running()) {
    if (Result<void> started = startWorker(); !started)
      return started.error();
  }
  // PTXFORGE_TRACE_EXEC=1: one line per request on stderr (operation, bytes,
  // round-trip time), to see where a check's host time goes.
  static const bool trace = std::getenv("PTXFORGE_TRACE_EXEC") != nullptr;
  const auto sent = std::chrono::steady_clock::now();
  Result<Response> answer = worker_.call(request, timeoutMs);
  if (trace)
    std::fprintf(stderr, "ptxforge exec-trace: %s %llu %.3f\n", protocol::opName(request.op),
                 static_cast<unsigned long long>(request.bytes ? request.bytes : request.data.size()),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count());
  if (!worker_.running()) {
    // Everything the dead worker held is gone; ids handed out so far become
    // stale, and are named so if used again.
    buffers_.clear();
    bufferBytes_.clear();
    modules_.clear();
    kernels_.clear();
    firstIdOfWorker_ = nextId_;
    lastLoss_ = !answer                                  ? render(answer.error())
                : answer->status != ExecErrorKind::None ? render(errorFromWorker(*answer))
                                                        : answer->message;
  }
  if (!answer)
    return answer.error();
  if (answer->status != ExecErrorKind::None)
    return errorFromWorker(*answer);
  return answer;
}

Result<void> IsolatedExecutor::send(const Request &request) {
  Result<Response> answer = call(request, options_.defaultTimeoutMs);
  if (!answer)
    return answer.error();
  return {};
}

Result<uint64_t> IsolatedExecutor::remote(const std::map<uint64_t, uint64_t> &live, uint64_t id,
                                          const char *what) const {
  auto found = live.find(id);
  if (found != live.end())
    return found->second;
  if (id != 0 && id < firstIdOfWorker_)
    return makeExecError(ExecErrorKind::InvalidArgument,
                         std::string("stale ") + what + " handle: it was lost when the worker died (" + lastLoss_ + ")");
  return makeExecError(ExecErrorKind::InvalidArgument, std::string("unknown ") + what + " handle");
}

Result<PackedArgs> IsolatedExecutor::translate(const PackedArgs &args) const {
  PackedArgs translated = args;
  for (size_t index = 0; index < args.slots.size(); ++index) {
    const PackedArgs::Slot &slot = args.slots[index];
    if (!slot.isBuffer)
      continue;
    if (slot.size != sizeof(uint64_t) || slot.offset + uint64_t(slot.size) > args.bytes.size())
      return makeExecError(ExecErrorKind::InvalidArgument, "argument " + std::to_string(index) + ": malformed buffer slot");
    uint64_t id = 0;
    std::memcpy(&id, args.bytes.data() + slot.offset, sizeof id);
    Result<uint64_t> address = remote(buffers_, id, "buffer");
    if (!address)
      return makeExecError(ExecErrorKind::InvalidArgument,
                           "argument " + std::to_string(index) + ": " + address.error().message);
    std::memcpy(translated.bytes.data() + slot.offset, &*address, sizeof(uint64_t));
  }
  return translated;
}

Result<BufferHandle> IsolatedExecutor::allocate(uint64_t bytes) {
  Result<Response> answer = call({.op = Op::Allocate, .bytes = bytes}, options_.defaultTimeoutMs);
  if (!answer)
    return answer.error();
  const uint64_t id = nextId_++;
  buffers_[id] = answer->handle;
  bufferBytes_[id] = bytes;
  return BufferHandle{id};
}

Result<void> IsolatedExecutor::free(BufferHandle buffer) {
  if (buffer.value != 0 && buffer.value < firstIdOfWorker_ && !buffers_.count(buffer.value))
    return {}; // lost with a dead worker: nothing left to free
  Result<uint64_t> address = remote(buffers_, buffer.value, "buffer");
  if (!address)
    return address.error();
  buffers_.erase(buffer.value);
  bufferBytes_.erase(buffer.value);
  return send({.op = Op::Free, .handle = *address});
}

namespace {

/// memcpy for buffers of many megabytes, in chunks on all cores: one thread
/// moves about 10 GB/s at best and pays for the first touch of every page of
/// a fresh destination alone; a check moves gigabytes.
void parallelCopy(void *dst, const void *src, uint64_t bytes) {
  constexpr uint64_t kChunk = uint64_t{4} << 20;
  auto *out = static_cast<uint8_t *>(dst);
  const auto *in = static_cast<const uint8_t *>(src);
  forEachChunk(static_cast<size_t>((bytes + kChunk - 1) / kChunk), 0, [&](size_t chunk) {
    const uint64_t begin = chunk * kChunk;
    std::memcpy(out + begin, in + begin, std::min(kChunk, bytes - begin));
  });
}

} // namespace

Result<void> IsolatedExecutor::copyToDevice(BufferHandle dst, uint64_t dstOffset, const void *src, uint64_t bytes) {
  Result<uint64_t> address = remote(buffers_, dst.value, "buffer");
  if (!address)
    return address.error();
  const auto *raw = static_cast<const uint8_t *>(src);
  if (bytes >= protocol::kStagedCopyMinBytes) {
    if (!worker_.running())
      if (Result<void> started = startWorker(); !started)
        return started.error();
    if (uint8_t *staging = worker_.staging()) {
      // In pieces of the staging area: one copy here, one in the worker.
      for (uint64_t done = 0; done < bytes;) {
        const uint64_t piece = std::min(bytes - done, worker_.stagingBytes());
        parallelCopy(staging, raw + done, piece);
        if (Result<void> sent =
                send({.op = Op::CopyToDeviceStaged, .handle = *address, .offset = dstOffset + done, .bytes = piece});
            !sent)
          return sent;
        done += piece;
      }
      return {};
    }
  }
  return send({.op = Op::CopyToDevice,
               .handle = *address,
               .offset = dstOffset,
               .bytes = bytes,
               .data = std::vector<uint8_t>(raw, raw + bytes)});
}

Result<void> IsolatedExecutor::copyToHost(void *dst, BufferHandle src, uint64_t srcOffset, uint64_t bytes) {
  Result<uint64_t> address = remote(buffers_, src.value, "buffer");
  if (!address)
    return address.error();
  if (bytes >= protocol::kStagedCopyMinBytes) {
    if (!worker_.running())
      if (Result<void> started = startWorker(); !started)
        return started.error();
    if (const uint8_t *staging = worker_.staging()) {
      auto *raw = static_cast<uint8_t *>(dst);
      for (uint64_t done = 0; done < bytes;) {
        const uint64_t piece = std::min(bytes - done, worker_.stagingBytes());
        if (Result<void> sent =
                send({.op = Op::CopyToHostStaged, .handle = *address, .offset = srcOffset + done, .bytes = piece});
            !sent)
          return sent;
        parallelCopy(raw + done, staging, piece);
        done += piece;
      }
      return {};
    }
  }
  Result<Response> answer =
      call({.op = Op::CopyToHost, .handle = *address, .offset = srcOffset, .bytes = bytes}, options_.defaultTimeoutMs);
  if (!answer)
    return answer.error();
  if (answer->data.size() != bytes)
    return makeExecError(ExecErrorKind::Internal, "copyToHost: the worker sent " + std::to_string(answer->data.size()) +
                                                      " bytes for " + std::to_string(bytes));
  if (bytes != 0)
    std::memcpy(dst, answer->data.data(), bytes);
  return {};
}

Result<void> IsolatedExecutor::setAccessibleRange(BufferHandle buffer, uint64_t offset, uint64_t bytes) {
  Result<uint64_t> address = remote(buffers_, buffer.value, "buffer");
  if (!address)
    return address.error();
  return send({.op = Op::SetAccessibleRange, .handle = *address, .offset = offset, .bytes = bytes});
}

std::vector<LaunchFinding> IsolatedExecutor::takeFindings() {
  if (options_.backend != "emu" || !worker_.running())
    return {}; // a dead worker's findings died with it (its error said what happened)
  Result<Response> answer = call({.op = Op::TakeFindings}, options_.defaultTimeoutMs);
  if (!answer)
    return {};
  return std::move(answer->findings);
}

Result<TensorMapBytes> IsolatedExecutor::encodeTensorMap(BufferHandle buffer, uint64_t byteOffset,
                                                         const TensorMapSpec &spec) {
  // The worker encodes: the map holds its own device address of the buffer.
  Result<uint64_t> address = remote(buffers_, buffer.value, "buffer");
  if (!address)
    return address.error();
  Result<Response> answer = call(
      {.op = Op::EncodeTensorMap, .handle = *address, .offset = byteOffset, .data = serializeTensorMapSpec(spec)},
      options_.defaultTimeoutMs);
  if (!answer)
    return answer.error();
  TensorMapBytes map{};
  if (answer->data.size() != map.size())
    return makeExecError(ExecErrorKind::Internal, "the worker's tensor map is " + std::to_string(answer->data.size()) +
                                                      " bytes, not 128");
  std::copy(answer->data.begin(), answer->data.end(), map.begin());
  return map;
}

std::vector<LaunchProfile> IsolatedExecutor::takeProfiles() {
  if (options_.backend != "emu" || !worker_.running())
    return {};
  Result<Response> answer = call({.op = Op::TakeProfiles}, options_.defaultTimeoutMs);
  if (!answer)
    return {};
  return std::move(answer->profiles);
}

Result<void> IsolatedExecutor::memset(BufferHandle dst, uint64_t dstOffset, uint8_t value, uint64_t bytes) {
  Result<uint64_t> address = remote(buffers_, dst.value, "buffer");
  if (!address)
    return address.error();
  return send({.op = Op::Memset, .handle = *address, .offset = dstOffset, .bytes = bytes, .value = value});
}

Result<void> IsolatedExecutor::copyOnDevice(BufferHandle dst, uint64_t dstOffset, BufferHandle src, uint64_t srcOffset,
                                            uint64_t bytes) {
  Result<uint64_t> to = remote(buffers_, dst.value, "buffer");
  if (!to)
    return to.error();
  Result<uint64_t> from = remote(buffers_, src.value, "buffer");
  if (!from)
    return from.error();
  return send({.op = Op::CopyOnDevice,
               .handle = *to,
               .offset = dstOffset,
               .handle2 = *from,
               .offset2 = srcOffset,
               .bytes = bytes});
}

Result<GlobalVariable> IsolatedExecutor::getGlobal(ModuleHandle module, const std::string &name) {
  Result<uint64_t> remoteModule = remote(modules_, module.value, "module");
  if (!remoteModule)
    return remoteModule.error();
  Result<Response> answer =
      call({.op = Op::GetGlobal, .handle = *remoteModule, .name = name}, options_.defaultTimeoutMs);
  if (!answer)
    return answer.error();
  // A buffer id like any other, so that the copy calls and MemoryOps accept
  // it; it is never freed (the module owns the memory).
  const uint64_t id = nextId_++;
  buffers_[id] = answer->handle;
  bufferBytes_[id] = answer->bytes;
  return GlobalVariable{BufferHandle{id}, answer->bytes};
}

Result<ModuleHandle> IsolatedExecutor::loadModule(const std::vector<uint8_t> &image, ModuleFormat format) {
  Result<Response> answer = call({.op = Op::LoadModule, .format = format, .data = image}, options_.defaultTimeoutMs);
  if (!answer)
    return answer.error();
  const uint64_t id = nextId_++;
  modules_[id] = answer->handle;
  return ModuleHandle{id};
}

Result<void> IsolatedExecutor::unloadModule(ModuleHandle module) {
  if (module.value != 0 && module.value < firstIdOfWorker_ && !modules_.count(module.value))
    return {};
  Result<uint64_t> remoteModule = remote(modules_, module.value, "module");
  if (!remoteModule)
    return remoteModule.error();
  modules_.erase(module.value);
  return send({.op = Op::UnloadModule, .handle = *remoteModule});
}

Result<KernelInfo> IsolatedExecutor::getKernel(ModuleHandle module, const std::string &name) {
  Result<uint64_t> remoteModule = remote(modules_, module.value, "module");
  if (!remoteModule)
    return remoteModule.error();
  Result<Response> answer =
      call({.op = Op::GetKernel, .handle = *remoteModule, .name = name}, options_.defaultTimeoutMs);
  if (!answer)
    return answer.error();
  KernelInfo info = answer->kernel;
  const uint64_t id = nextId_++;
  kernels_[id] = info.handle.value;
  info.handle = KernelHandle{id};
  return info;
}

Result<Request> IsolatedExecutor::launchRequest(Op op, KernelHandle kernel, const LaunchConfig &config,
                                                const PackedArgs &args) const {
  Result<uint64_t> remoteKernel = remote(kernels_, kernel.value, "kernel");
  if (!remoteKernel)
    return remoteKernel.error();
  Result<PackedArgs> translated = translate(args);
  if (!translated)
    return translated.error();
  return Request{.op = op, .handle = *remoteKernel, .config = config, .args = std::move(*translated)};
}

Result<void> IsolatedExecutor::launch(KernelHandle kernel, const LaunchConfig &config, const PackedArgs &args) {
  Result<Request> request = launchRequest(Op::Launch, kernel, config, args);
  if (!request)
    return request.error();
  Result<Response> answer = call(*request, deadline(config.timeoutMs));
  if (!answer)
    return answer.error();
  return {};
}

Result<void> IsolatedExecutor::synchronize() {
  if (!worker_.running())
    return {}; // nothing outstanding in a worker that does not exist yet
  return send({.op = Op::Synchronize});
}

Result<std::vector<float>> IsolatedExecutor::timeLaunch(KernelHandle kernel, const LaunchConfig &config,
                                                        const PackedArgs &args, const TimingOptions &options) {
  Result<Request> request = launchRequest(Op::TimeLaunch, kernel, config, args);
  if (!request)
    return request.error();
  request->timing = options;
  for (MemoryOp &op : request->timing.beforeEachLaunch) {
    Result<uint64_t> dst = remote(buffers_, op.dst.value, "buffer");
    if (!dst)
      return dst.error();
    op.dst.value = *dst;
    if (op.src) {
      Result<uint64_t> src = remote(buffers_, op.src.value, "buffer");
      if (!src)
        return src.error();
      op.src.value = *src;
    }
  }
  Result<Response> answer = call(*request, deadline(options.timeoutMs));
  if (!answer)
    return answer.error();
  return std::move(answer->timings);
}

Result<Request> IsolatedExecutor::libraryRequest(Op op, const LibraryCall &call) const {
  Request request{.op = op, .library = call};
  const std::pair<LibraryOperand *, const char *> operands[] = {
      {&request.library.a, "a"}, {&request.library.b, "b"}, {&request.library.c, "c"}};
  for (auto [operand, name] : operands) {
    Result<uint64_t> address = remote(buffers_, operand->buffer.value, "buffer");
    if (!address)
      return makeExecError(ExecErrorKind::InvalidArgument, std::string("library call ") + libraryOpName(call.op) +
                                                               ", operand " + name + ": " + address.error().message);
    operand->buffer.value = *address;
  }
  return request;
}

Result<void> IsolatedExecutor::runLibraryCall(const LibraryCall &libraryCall) {
  Result<Request> request = libraryRequest(Op::RunLibraryCall, libraryCall);
  if (!request)
    return request.error();
  // The first call also loads cuBLAS (hundreds of MB) and creates its handle:
  // at least the start-up deadline.
  Result<Response> answer = call(*request, std::max(deadline(libraryCall.timeoutMs), options_.startTimeoutMs));
  if (!answer)
    return answer.error();
  return {};
}

Result<std::vector<float>> IsolatedExecutor::timeLibraryCall(const LibraryCall &libraryCall,
                                                             const TimingOptions &options) {
  Result<Request> request = libraryRequest(Op::TimeLibraryCall, libraryCall);
  if (!request)
    return request.error();
  request->timing = options;
  Result<Response> answer = call(*request, std::max(deadline(options.timeoutMs), options_.startTimeoutMs));
  if (!answer)
    return answer.error();
  return std::move(answer->timings);
}

Result<void> IsolatedExecutor::flushL2() { return send({.op = Op::FlushL2}); }

} // namespace ptxforge::exec
