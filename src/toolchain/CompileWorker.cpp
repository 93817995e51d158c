// CompileWorker: spawning ptxforge_compile_worker in a process group of its
// own, one request at a time over a socketpair with a poll-based deadline,
// its stderr drained alongside (a full pipe would stall it; the tail names
// what a crash printed), and a small pool of warm workers per process.
#include "toolchain/CompileWorker.h"
#include "support/Process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>

extern char **environ;

namespace ptxforge::toolchain {

namespace {

constexpr size_t kStderrTailBytes = 4096;
/// Idle workers kept per process: one per concurrent caller up to this many.
constexpr size_t kMaxIdleWorkers = 8;
/// A worker is replaced after this many compiles, bounding whatever a long
/// series of compiles leaks or fragments inside nvJitLink.
constexpr uint64_t kCompilesPerWorker = 2000;

std::atomic<uint64_t> gStarted{0}, gCompiles{0}, gCrashed{0}, gTimedOut{0};

std::string describeStatus(pid_t pid, int status) {
  return describeWaitStatus("the compile worker (pid " + std::to_string(pid) + ")", status);
}

/// One running ptxforge_compile_worker: its pid (also its process group), the
/// socket, and the read end of its stderr/stdout pipe.
class WorkerProcess {
public:
  static Result<std::unique_ptr<WorkerProcess>> spawn(const std::string &path);
  WorkerProcess(const WorkerProcess &) = delete;
  WorkerProcess &operator=(const WorkerProcess &) = delete;
  ~WorkerProcess() { killAndReap(); }

  /// What happened to one exchange; `Stale` = the worker was already gone
  /// before it read the request (not this request's doing).
  enum class Status { Done, Stale };
  Status exchange(const std::vector<uint8_t> &requestPayload, uint32_t timeoutMs, uint64_t maxReplyBytes,
                  WorkerOutcome &outcome);

  bool alive() const { return pid_ > 0; }
  const std::string &path() const { return path_; }
  uint64_t served() const { return served_; }
  int lastExitStatus() const { return lastStatus_; }

private:
  WorkerProcess(std::string path, pid_t pid, int socket, int errorPipe, std::string scratch)
      : path_(std::move(path)), pid_(pid), socket_(socket), errorPipe_(errorPipe), scratch_(std::move(scratch)) {}
  /// Reads whatever stderr holds now (non-blocking), keeping the tail.
  void drainStderr();
  /// Kills the whole process group (ptxas children included), reaps the
  /// worker, collects the rest of its stderr; returns how it ended.
  std::string killAndReap();

  std::string path_;
  pid_t pid_ = -1;
  int socket_ = -1;
  int errorPipe_ = -1;
  /// The worker's TMPDIR (ptxas temp files): removed with the worker, so
  /// that a killed ptxas leaves nothing behind.
  std::string scratch_;
  uint64_t served_ = 0;
  int lastStatus_ = 0;
  std::string stderrTail_;
  bool sawAllocationMarker_ = false;
  int endSignal_ = 0;
};

Result<std::unique_ptr<WorkerProcess>> WorkerProcess::spawn(const std::string &path) {
  int sockets[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0)
    return makeError(ErrorKind::Internal, std::string("socketpair: ") + std::strerror(errno));
  int pipeEnds[2];
  if (::pipe2(pipeEnds, O_CLOEXEC) != 0) {
    const int saved = errno;
    ::close(sockets[0]);
    ::close(sockets[1]);
    return makeError(ErrorKind::Internal, std::string("pipe2: ") + std::strerror(saved));
  }
  // dup2(fd, fd) would leave close-on-exec set; keep the child's end off fd 3.
  if (sockets[1] == 3) {
    const int moved = ::fcntl(sockets[1], F_DUPFD_CLOEXEC, 4);
    ::close(sockets[1]);
    sockets[1] = moved;
  }
  ::fcntl(pipeEnds[0], F_SETFL, ::fcntl(pipeEnds[0], F_GETFL) | O_NONBLOCK);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], STDERR_FILENO);
  posix_spawn_file_actions_adddup2(&actions, sockets[1], 3);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // A long-lived worker must not hold descriptors the caller opened without
  // close-on-exec (another tool's pipe would then never see EOF).
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);
#endif
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // A group of its own: the deadline kills the worker and any ptxas it runs.
  posix_spawnattr_setpgroup(&attributes, 0);
  // Whatever the calling thread blocks or ignores, the worker needs default
  // handling of the signals its limits raise (SIGALRM backstop, SIGXFSZ).
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int signal : {SIGALRM, SIGXFSZ, SIGSEGV, SIGABRT, SIGBUS, SIGPIPE})
    sigaddset(&defaults, signal);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  const char *tmp = std::getenv("TMPDIR");
  std::string scratch = std::string(tmp && *tmp ? tmp : "/tmp") + "/ptxforge-compile-XXXXXX";
  if (!::mkdtemp(scratch.data()))
    scratch.clear(); // the worker then uses the ordinary TMPDIR
  std::vector<std::string> arguments = {path, "--fd=3"};
  if (!scratch.empty())
    arguments.push_back("--tmpdir=" + scratch);
  std::vector<char *> argv;
  for (std::string &argument : arguments)
    argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_t child = -1;
  const int spawnError = ::posix_spawn(&child, path.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(sockets[1]);
  ::close(pipeEnds[1]);
  if (spawnError != 0) {
    ::close(sockets[0]);
    ::close(pipeEnds[0]);
    if (!scratch.empty())
      ::rmdir(scratch.c_str());
    return makeError(ErrorKind::Internal, "posix_spawn(" + path + "): " + std::strerror(spawnError));
  }
  ++gStarted;
  return std::unique_ptr<WorkerProcess>(new WorkerProcess(path, child, sockets[0], pipeEnds[0], std::move(scratch)));
}

void WorkerProcess::drainStderr() {
  if (errorPipe_ < 0)
    return;
  char buffer[16384];
  while (true) {
    const ssize_t got = ::read(errorPipe_, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return; // EAGAIN (nothing now) or EOF
    stderrTail_.append(buffer, static_cast<size_t>(got));
    // Scan before trimming so that a marker split across reads is still seen.
    if (stderrTail_.find(protocol::kAllocationFailedMarker) != std::string::npos)
      sawAllocationMarker_ = true;
    if (stderrTail_.size() > kStderrTailBytes)
      stderrTail_.erase(0, stderrTail_.size() - kStderrTailBytes);
  }
}

std::string WorkerProcess::killAndReap() {
  std::string how;
  if (pid_ > 0) {
    // Only our own child's group (its pgid is its pid), while the worker is
    // at worst a zombie, so the group id cannot have been reused.
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int status = 0;
    pid_t reaped;
    do
      reaped = ::waitpid(pid_, &status, 0);
    while (reaped < 0 && errno == EINTR);
    if (reaped == pid_) {
      how = describeStatus(pid_, status);
      lastStatus_ = status;
      endSignal_ = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    } else {
      how = "the compile worker (pid " + std::to_string(pid_) + ") could not be reaped";
    }
    pid_ = -1;
  }
  if (socket_ >= 0)
    ::close(socket_);
  socket_ = -1;
  if (errorPipe_ >= 0) {
    // Every writer is dead now: read to EOF (bounded, in case a stray
    // grandchild in another group still holds the pipe).
    for (int round = 0; round < 20; ++round) {
      pollfd entry{errorPipe_, POLLIN, 0};
      if (::poll(&entry, 1, 50) <= 0)
        break;
      const size_t before = stderrTail_.size();
      drainStderr();
      if (entry.revents & POLLHUP && stderrTail_.size() == before)
        break;
    }
    ::close(errorPipe_);
    errorPipe_ = -1;
  }
  if (!scratch_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(scratch_, ignored);
    scratch_.clear();
  }
  return how;
}

WorkerProcess::Status WorkerProcess::exchange(const std::vector<uint8_t> &requestPayload, uint32_t timeoutMs,
                                              uint64_t maxReplyBytes, WorkerOutcome &outcome) {
  stderrTail_.clear();
  sawAllocationMarker_ = false;
  endSignal_ = 0;
  drainStderr(); // anything left from before belongs to no compile
  stderrTail_.clear();
  sawAllocationMarker_ = false;

  auto finishDead = [&](WorkerOutcome::Kind kind) {
    outcome.kind = kind;
    outcome.how = killAndReap();
    outcome.signal = endSignal_;
    outcome.stderrTail = stderrTail_;
    outcome.allocationFailed = sawAllocationMarker_;
  };

  if (Result<void> sent = protocol::writeFrame(socket_, requestPayload); !sent) {
    finishDead(WorkerOutcome::Kind::Crashed);
    return Status::Stale;
  }

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  uint8_t header[protocol::kFrameHeaderBytes];
  size_t headerHave = 0;
  std::vector<uint8_t> payload;
  size_t payloadHave = 0;
  bool inPayload = false;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      finishDead(WorkerOutcome::Kind::TimedOut);
      ++gTimedOut;
      return Status::Done;
    }
    pollfd entries[2] = {{socket_, POLLIN, 0}, {errorPipe_, POLLIN, 0}};
    const int ready = ::poll(entries, 2, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (ready < 0) {
      if (errno == EINTR)
        continue;
      finishDead(WorkerOutcome::Kind::Crashed);
      outcome.how += std::string("; poll failed: ") + std::strerror(errno);
      return Status::Done;
    }
    if (entries[1].revents)
      drainStderr();
    if (!entries[0].revents)
      continue;
    ssize_t got;
    if (!inPayload)
      got = ::read(socket_, header + headerHave, sizeof header - headerHave);
    else
      got = ::read(socket_, payload.data() + payloadHave, payload.size() - payloadHave);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      finishDead(WorkerOutcome::Kind::Crashed);
      ++gCrashed;
      return Status::Done;
    }
    if (!inPayload) {
      headerHave += static_cast<size_t>(got);
      if (headerHave < sizeof header)
        continue;
      Result<uint64_t> length = protocol::parseFrameHeader(header);
      if (!length) {
        finishDead(WorkerOutcome::Kind::Crashed);
        outcome.how += "; it sent a malformed reply";
        return Status::Done;
      }
      if (*length > maxReplyBytes) {
        outcome.replyBytes = *length;
        finishDead(WorkerOutcome::Kind::OutputLimit);
        return Status::Done;
      }
      payload.resize(*length);
      inPayload = true;
    } else {
      payloadHave += static_cast<size_t>(got);
    }
    if (inPayload && payloadHave == payload.size())
      break;
  }

  Result<protocol::Response> response = protocol::decodeResponse(payload);
  if (!response) {
    finishDead(WorkerOutcome::Kind::Crashed);
    outcome.how += "; " + response.error().message;
    return Status::Done;
  }
  drainStderr(); // the marker is written before the reply: it is in the pipe now
  ++served_;
  ++gCompiles;
  outcome.kind = WorkerOutcome::Kind::Answered;
  outcome.response = std::move(*response);
  outcome.stderrTail = stderrTail_;
  outcome.allocationFailed = sawAllocationMarker_ || outcome.response.allocationFailed;
  if (outcome.allocationFailed)
    killAndReap(); // nvJitLink's heap after a failed allocation is not worth trusting
  return Status::Done;
}

/// Idle workers, shared by every caller of the process. Leaked on purpose: no
/// destruction-order hazards at exit, and a worker whose parent is gone sees
/// EOF on its socket and exits by itself.
struct WorkerPool {
  std::mutex mutex;
  std::vector<std::unique_ptr<WorkerProcess>> idle;
};

void stopIdleAtExit() { stopIdleCompileWorkers(); }

WorkerPool &pool() {
  static WorkerPool *instance = [] {
    // Idle workers would outlive us anyway (EOF ends them); stopping them at
    // exit also removes their scratch folders.
    std::atexit(stopIdleAtExit);
    return new WorkerPool;
  }();
  return *instance;
}

Result<std::unique_ptr<WorkerProcess>> acquire(const std::string &path, bool fresh) {
  if (!fresh) {
    std::lock_guard<std::mutex> lock(pool().mutex);
    auto &idle = pool().idle;
    for (auto it = idle.rbegin(); it != idle.rend(); ++it) {
      if ((*it)->path() == path && (*it)->alive()) {
        std::unique_ptr<WorkerProcess> worker = std::move(*it);
        idle.erase(std::next(it).base());
        return worker;
      }
    }
  }
  return WorkerProcess::spawn(path);
}

void release(std::unique_ptr<WorkerProcess> worker) {
  if (!worker->alive() || worker->served() >= kCompilesPerWorker)
    return; // destroyed here, outside the lock
  std::unique_ptr<WorkerProcess> surplus;
  {
    std::lock_guard<std::mutex> lock(pool().mutex);
    if (pool().idle.size() < kMaxIdleWorkers)
      pool().idle.push_back(std::move(worker));
    else
      surplus = std::move(worker);
  }
}

} // namespace

std::string findCompileWorker(const std::string &explicitPath) {
#ifndef PTXFORGE_COMPILE_WORKER_BUILD_PATH
#define PTXFORGE_COMPILE_WORKER_BUILD_PATH nullptr
#endif
  return findHelperProgram(explicitPath, "PTXFORGE_COMPILE_WORKER", "ptxforge_compile_worker",
                           PTXFORGE_COMPILE_WORKER_BUILD_PATH);
}

Result<WorkerOutcome> compileInWorker(const protocol::Request &request, const std::string &workerPath,
                                      uint64_t maxReplyBytes) {
  const std::string path = findCompileWorker(workerPath);
  if (path.empty())
    return makeError(ErrorKind::ToolMissing,
                     workerPath.empty()
                         ? std::string("ptxforge_compile_worker not found: install it next to the executable, set "
                                       "PTXFORGE_COMPILE_WORKER to its path, or set CompileOptions::workerPath "
                                       "(CompileOptions::isolation = InProcess compiles trusted PTX without it)")
                         : "compile worker '" + workerPath + "' (CompileOptions::workerPath) is not executable");
  const std::vector<uint8_t> payload = protocol::encode(request);
  bool retried = false;
  bool needFresh = false;
  // Attempts: a stale idle worker or a crash in a used worker earns a rerun
  // in a fresh worker; a crash in a fresh worker is this module's doing.
  for (int attempt = 0; attempt < 3; ++attempt) {
    Result<std::unique_ptr<WorkerProcess>> acquired = acquire(path, needFresh);
    if (!acquired)
      return acquired.error();
    std::unique_ptr<WorkerProcess> worker = std::move(*acquired);
    const bool fresh = worker->served() == 0;
    WorkerOutcome outcome;
    const WorkerProcess::Status status = worker->exchange(payload, request.timeoutMs, maxReplyBytes, outcome);
    const bool died = outcome.kind == WorkerOutcome::Kind::Crashed;
    // A fresh worker that dies before reading the request, or exits with the
    // loader's 127 or its own usage/protocol codes 2 and 3, could not run at
    // all (a missing libnvJitLink, a stale build): the tool's failure, not the PTX's.
    const int exitStatus = WIFEXITED(worker->lastExitStatus()) ? WEXITSTATUS(worker->lastExitStatus()) : -1;
    if (fresh && died && outcome.signal == 0 && !outcome.allocationFailed &&
        (status == WorkerProcess::Status::Stale || exitStatus == 2 || exitStatus == 3 || exitStatus == 127))
      return makeError(ErrorKind::Internal, "ptxforge_compile_worker (" + path + ") could not serve a compile: " +
                                                outcome.how + (outcome.stderrTail.empty() ? "" : "; it printed: " + outcome.stderrTail));
    if (!fresh && attempt < 2 && (status == WorkerProcess::Status::Stale || died)) {
      retried = retried || status != WorkerProcess::Status::Stale;
      needFresh = true;
      continue;
    }
    outcome.retried = retried;
    release(std::move(worker));
    return outcome;
  }
  return makeError(ErrorKind::Internal, "ptxforge_compile_worker (" + path + ") kept dying before answering");
}

CompileWorkerCounters compileWorkerCounters() {
  return CompileWorkerCounters{gStarted.load(), gCompiles.load(), gCrashed.load(), gTimedOut.load()};
}

void stopIdleCompileWorkers() {
  std::vector<std::unique_ptr<WorkerProcess>> stopping;
  {
    std::lock_guard<std::mutex> lock(pool().mutex);
    stopping.swap(pool().idle);
  }
  // Destructors kill and reap, outside the lock.
}

} // namespace ptxforge::toolchain
