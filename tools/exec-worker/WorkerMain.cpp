// ptxforge_exec_worker: the child process of IsolatedExecutor. It owns one
// GpuExecutor (or, with --backend=emu, one emulator executor) and serves
// Protocol.h requests on the socket passed as --fd=N, one at a time, until the
// parent closes the socket. After a sticky driver error it answers, then
// exits: its context is dead and the parent starts a fresh worker. Not meant
// to be run by hand.
#include "emu/EmuExecutor.h"
#include "exec/GpuExecutor.h"
#include "exec/Protocol.h"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

using namespace ptxforge;
using namespace ptxforge::exec;
using protocol::Op;
using protocol::Request;
using protocol::Response;

namespace {

/// Exit status after reporting a sticky error (the parent reaps it).
constexpr int kExitAfterCrash = 3;

void setError(Response &response, const Error &error) {
  response.status = execErrorKindOf(error);
  if (response.status == ExecErrorKind::None)
    response.status = ExecErrorKind::Internal;
  // The status byte is the code; an Error from outside the executor layer
  // (no executor code) travels as Internal with its code kept in the text.
  response.message = response.status == execErrorKindOf(error) ? error.message : render(error);
  response.line = error.line;
  response.cause = error.cause;
}

class Worker {
public:
  Worker(int device, bool emulator, bool testMode, uint8_t *staging, uint64_t stagingBytes)
      : device_(device), emulator_(emulator), testMode_(testMode), staging_(staging), stagingBytes_(stagingBytes) {}
  /// The emulator's errors are the kernel's, not a dead context's: no restart.
  bool crashIsSticky() const { return !emulator_; }

  Response serve(const Request &request);

private:
  /// Opens the device on first use, so that test requests need no GPU.
  Result<Executor *> gpu();

  int device_;
  bool emulator_;
  bool testMode_;
  uint8_t *staging_;       ///< the shared staging area; null: none (--staging not given)
  uint64_t stagingBytes_;
  std::unique_ptr<Executor> executor_;
};

Result<Executor *> Worker::gpu() {
  if (!executor_ && emulator_)
    executor_ = emu::createEmuExecutor();
  if (!executor_) {
    Result<std::unique_ptr<Executor>> created = createGpuExecutor(device_);
    if (!created)
      return created.error();
    executor_ = std::move(*created);
    // The staging area is copied to and from for every large buffer: page-locked,
    // the device reads and writes it by DMA instead of through the driver's bounce
    // buffers.
    if (staging_ && !std::getenv("PTXFORGE_EXEC_NO_PIN"))
      (void)executor_->pinHostMemory(staging_, stagingBytes_);
  }
  return executor_.get();
}

Response Worker::serve(const Request &request) {
  Response response;
  if (request.op == Op::TestSleep || request.op == Op::TestExit) {
    if (!testMode_) {
      setError(response, makeExecError(ExecErrorKind::InvalidArgument,
                                       "test operations need PTXFORGE_EXEC_WORKER_TEST=1"));
      return response;
    }
    if (request.op == Op::TestExit)
      std::_Exit(static_cast<int>(request.value));
    std::this_thread::sleep_for(std::chrono::milliseconds(request.value));
    return response;
  }

  Result<Executor *> opened = gpu();
  if (!opened) {
    setError(response, opened.error());
    return response;
  }
  Executor &executor = **opened;
  auto check = [&](const auto &result) {
    if (!result)
      setError(response, result.error());
    return static_cast<bool>(result);
  };

  switch (request.op) {
  case Op::Hello:
    response.properties = executor.properties();
    break;
  case Op::Allocate:
    if (auto handle = executor.allocate(request.bytes); check(handle))
      response.handle = handle->value;
    break;
  case Op::Free:
    check(executor.free(BufferHandle{request.handle}));
    break;
  case Op::CopyToDevice:
    if (request.data.size() != request.bytes) {
      setError(response, makeExecError(ExecErrorKind::Internal, "copy-to-device: size and data disagree"));
      break;
    }
    check(executor.copyToDevice(BufferHandle{request.handle}, request.offset, request.data.data(), request.bytes));
    break;
  case Op::CopyToHost:
    response.data.resize(request.bytes);
    if (!check(executor.copyToHost(response.data.data(), BufferHandle{request.handle}, request.offset, request.bytes)))
      response.data.clear();
    break;
  case Op::Memset:
    check(executor.memset(BufferHandle{request.handle}, request.offset, static_cast<uint8_t>(request.value),
                          request.bytes));
    break;
  case Op::LoadModule:
    if (auto module = executor.loadModule(request.data, request.format); check(module))
      response.handle = module->value;
    break;
  case Op::UnloadModule:
    check(executor.unloadModule(ModuleHandle{request.handle}));
    break;
  case Op::GetKernel:
    if (auto kernel = executor.getKernel(ModuleHandle{request.handle}, request.name); check(kernel))
      response.kernel = *kernel;
    break;
  case Op::Launch:
    check(executor.launch(KernelHandle{request.handle}, request.config, request.args));
    break;
  case Op::Synchronize:
    check(executor.synchronize());
    break;
  case Op::TimeLaunch:
    if (auto timings = executor.timeLaunch(KernelHandle{request.handle}, request.config, request.args, request.timing);
        check(timings))
      response.timings = std::move(*timings);
    break;
  case Op::FlushL2:
    check(executor.flushL2());
    break;
  case Op::RunLibraryCall:
    check(executor.runLibraryCall(request.library));
    break;
  case Op::TimeLibraryCall:
    if (auto timings = executor.timeLibraryCall(request.library, request.timing); check(timings))
      response.timings = std::move(*timings);
    break;
  case Op::SetAccessibleRange:
    check(executor.setAccessibleRange(BufferHandle{request.handle}, request.offset, request.bytes));
    break;
  case Op::TakeFindings:
    response.findings = executor.takeFindings();
    break;
  case Op::TakeProfiles:
    response.profiles = executor.takeProfiles();
    break;
  case Op::EncodeTensorMap:
    if (std::optional<TensorMapSpec> spec = deserializeTensorMapSpec(request.data); !spec)
      setError(response, makeExecError(ExecErrorKind::Internal, "a malformed tensor-map spec in the request"));
    else if (auto map = executor.encodeTensorMap(BufferHandle{request.handle}, request.offset, *spec); check(map))
      response.data.assign(map->begin(), map->end());
    break;
  case Op::CopyOnDevice:
    check(executor.copyOnDevice(BufferHandle{request.handle}, request.offset, BufferHandle{request.handle2},
                                request.offset2, request.bytes));
    break;
  case Op::GetGlobal:
    if (auto global = executor.getGlobal(ModuleHandle{request.handle}, request.name); check(global)) {
      response.handle = global->handle.value;
      response.bytes = global->bytes;
    }
    break;
  case Op::CopyToDeviceStaged:
  case Op::CopyToHostStaged:
    if (!staging_ || request.bytes > stagingBytes_) {
      setError(response, makeExecError(ExecErrorKind::Internal,
                                       "staged copy of " + std::to_string(request.bytes) + " bytes: the staging area holds " +
                                           std::to_string(staging_ ? stagingBytes_ : 0)));
      break;
    }
    if (request.op == Op::CopyToDeviceStaged)
      check(executor.copyToDevice(BufferHandle{request.handle}, request.offset, staging_, request.bytes));
    else
      check(executor.copyToHost(staging_, BufferHandle{request.handle}, request.offset, request.bytes));
    break;
  case Op::TestSleep:
  case Op::TestExit:
    break; // handled above
  }
  return response;
}

} // namespace

int main(int argc, char **argv) {
  int fd = -1;
  int device = 0;
  bool emulator = false;
  int stagingFd = -1;
  uint64_t stagingBytes = 0;
  for (int index = 1; index < argc; ++index) {
    if (std::strcmp(argv[index], "--backend=emu") == 0)
      emulator = true;
    if (std::strncmp(argv[index], "--fd=", 5) == 0)
      fd = std::atoi(argv[index] + 5);
    else if (std::strncmp(argv[index], "--device=", 9) == 0)
      device = std::atoi(argv[index] + 9);
    else if (std::strncmp(argv[index], "--staging=", 10) == 0) { // --staging=FD:BYTES
      char *end = nullptr;
      stagingFd = static_cast<int>(std::strtol(argv[index] + 10, &end, 10));
      if (end && *end == ':')
        stagingBytes = std::strtoull(end + 1, nullptr, 10);
    }
  }
  // The staging area the parent created; without it large copies go through the socket.
  uint8_t *staging = nullptr;
  if (stagingFd >= 0 && stagingBytes > 0) {
    void *mapped = ::mmap(nullptr, stagingBytes, PROT_READ | PROT_WRITE, MAP_SHARED, stagingFd, 0);
    if (mapped != MAP_FAILED)
      staging = static_cast<uint8_t *>(mapped);
    ::close(stagingFd);
  }
  if (fd < 0) {
    std::fprintf(stderr, "ptxforge_exec_worker: started by IsolatedExecutor with --fd=N; not for direct use\n");
    return 2;
  }
  const char *testFlag = std::getenv("PTXFORGE_EXEC_WORKER_TEST");
  Worker worker(device, emulator, testFlag && std::strcmp(testFlag, "1") == 0, staging, staging ? stagingBytes : 0);

  for (;;) {
    Result<std::vector<uint8_t>> payload = protocol::readFrame(fd, -1);
    if (!payload)
      return 0; // the parent closed the socket (or went away): done
    Response response;
    Result<Request> request = protocol::decodeRequest(*payload);
    if (!request)
      setError(response, request.error());
    else
      response = worker.serve(*request);
    if (!protocol::writeFrame(fd, protocol::encode(response)))
      return 0;
    if (response.status == ExecErrorKind::Crashed && worker.crashIsSticky())
      return kExitAfterCrash; // the context is dead; a fresh process is the only cure
  }
}
