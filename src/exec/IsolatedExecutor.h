// IsolatedExecutor: the Executor for untrusted kernels. The GPU work runs in a
// child process (ptxforge_exec_worker) spoken to over a socket (Protocol.h); a
// watchdog kills the child when a call passes its deadline (verdict timeout),
// a child that dies or reports a sticky driver error gives the verdict crashed,
// and the next call starts a fresh child. Only the request in flight and the
// dead context's buffers, modules and kernels are lost; handles are never
// reused, so a stale one is reported as such instead of aliasing a new buffer.
#pragma once

#include "exec/Executor.h"
#include "exec/Protocol.h"

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>

namespace ptxforge::exec {

struct IsolatedOptions {
  /// The worker executable. Empty: $PTXFORGE_EXEC_WORKER, then
  /// ptxforge_exec_worker beside the running executable, then the path the
  /// build put it at.
  std::string workerPath;
  uint32_t defaultTimeoutMs = 10'000; ///< deadline of a call that names none
  uint32_t startTimeoutMs = 60'000;   ///< deadline of the first call (driver init)
  int deviceOrdinal = 0;
  /// What the worker runs kernels on: "gpu" (the CUDA driver) or "emu" (the
  /// CPU PTX emulator, isolated so that an emulator fault or a runaway kernel
  /// costs a worker, never the caller).
  std::string backend = "gpu";
};

/// Where the worker executable would be found for `options` ("" if nowhere).
std::string findWorker(const IsolatedOptions &options);

/// One worker child process and its socket. Not thread-safe.
class WorkerProcess {
public:
  explicit WorkerProcess(IsolatedOptions options) : options_(std::move(options)) {}
  WorkerProcess(const WorkerProcess &) = delete;
  WorkerProcess &operator=(const WorkerProcess &) = delete;
  ~WorkerProcess();

  /// Spawns the child unless one is running.
  Result<void> ensureStarted();
  /// Sends `request` and waits at most `timeoutMs` for the answer. The worker
  /// is killed on a timeout (kind Timeout), reaped when it died (Crashed, with
  /// its exit status or signal), and killed after it reports a sticky error
  /// (Crashed). An error answer of any other kind leaves it running.
  Result<protocol::Response> call(const protocol::Request &request, uint32_t timeoutMs);
  /// SIGKILLs and reaps the child, if any.
  void stop();

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  /// How many children were started so far (1 after the first start).
  uint64_t starts() const { return starts_; }

  /// The staging area shared with every child (protocol::kStagingBytes of a
  /// memfd, made at the first start); null when it could not be made, and
  /// then every copy goes through the socket.
  uint8_t *staging() const { return staging_; }
  uint64_t stagingBytes() const { return staging_ ? protocol::kStagingBytes : 0; }

private:
  /// Makes the staging area once; a failure leaves it null.
  void makeStaging();

  /// Reaps the dead child and describes how it ended.
  std::string reap();

  IsolatedOptions options_;
  pid_t pid_ = -1;
  int socket_ = -1;
  uint64_t starts_ = 0;
  int stagingFd_ = -1;
  uint8_t *staging_ = nullptr;
  bool stagingTried_ = false;
};

class IsolatedExecutor final : public Executor {
public:
  /// Starts the worker and opens the device (Hello). A machine without a GPU
  /// gives the worker's "no GPU: ..." Error.
  static Result<std::unique_ptr<IsolatedExecutor>> create(const IsolatedOptions &options = {});

  const DeviceProperties &properties() const override { return properties_; }
  ModuleFormat moduleFormat() const override {
    return options_.backend == "emu" ? ModuleFormat::Ptx : ModuleFormat::Cubin;
  }
  Result<void> setAccessibleRange(BufferHandle buffer, uint64_t offset, uint64_t bytes) override;
  std::vector<LaunchFinding> takeFindings() override;
  std::vector<LaunchProfile> takeProfiles() override;
  Result<BufferHandle> allocate(uint64_t bytes) override;
  /// Freeing a buffer lost with a dead worker succeeds and does nothing.
  Result<void> free(BufferHandle buffer) override;
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
  /// Forwarded to the worker's GpuExecutor (cuBLAS is loaded there, so a
  /// fault inside it ends as a crashed worker, not a crashed caller).
  Result<TensorMapBytes> encodeTensorMap(BufferHandle buffer, uint64_t byteOffset, const TensorMapSpec &spec) override;
  Result<void> runLibraryCall(const LibraryCall &call) override;
  Result<std::vector<float>> timeLibraryCall(const LibraryCall &call, const TimingOptions &options) override;

  /// Times the worker was restarted after a crash or timeout.
  uint64_t workerRestarts() const { return worker_.starts() > 0 ? worker_.starts() - 1 : 0; }

private:
  explicit IsolatedExecutor(const IsolatedOptions &options) : options_(options), worker_(options) {}

  /// Restarts a dead worker (forgetting the old one's handles), sends, and
  /// turns an error answer into an Error.
  Result<protocol::Response> call(const protocol::Request &request, uint32_t timeoutMs);
  /// call() with the default deadline, for a request whose answer is only that it was done.
  Result<void> send(const protocol::Request &request);
  Result<void> startWorker();
  /// Translates a parent handle into the current worker's, or says why not.
  Result<uint64_t> remote(const std::map<uint64_t, uint64_t> &live, uint64_t id, const char *what) const;
  Result<PackedArgs> translate(const PackedArgs &args) const;
  /// A Launch or TimeLaunch request: the kernel and buffer handles translated to the worker's.
  Result<protocol::Request> launchRequest(protocol::Op op, KernelHandle kernel, const LaunchConfig &config,
                                          const PackedArgs &args) const;
  /// A RunLibraryCall or TimeLibraryCall request: the operands' buffers translated to the worker's.
  Result<protocol::Request> libraryRequest(protocol::Op op, const LibraryCall &call) const;
  /// The watchdog's deadline for a call. The emulator keeps its own deadline
  /// (the requested one) and reports a runaway kernel with the line it was
  /// at; the watchdog gives it two more seconds before killing the worker.
  uint32_t deadline(uint32_t requested) const {
    uint32_t base = requested ? requested : options_.defaultTimeoutMs;
    return options_.backend == "emu" ? base + 2000 : base;
  }

  IsolatedOptions options_;
  WorkerProcess worker_;
  DeviceProperties properties_;
  // Parent ids (never reused) -> the current worker's handles.
  std::map<uint64_t, uint64_t> buffers_;
  std::map<uint64_t, uint64_t> bufferBytes_;
  std::map<uint64_t, uint64_t> modules_;
  std::map<uint64_t, uint64_t> kernels_;
  uint64_t nextId_ = 1;
  uint64_t firstIdOfWorker_ = 1; ///< ids below this belonged to a dead worker
  std::string lastLoss_;         ///< why the previous worker's handles were lost
};

/// The IsolatedExecutor as a plain Executor.
Result<std::unique_ptr<Executor>> createIsolatedExecutor(const IsolatedOptions &options = {});

} // namespace ptxforge::exec
