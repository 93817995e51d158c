// The child-process runner (see Process.h): pipes, posix_spawn, one poll loop
// that feeds stdin, drains stdout and stderr and watches the deadline, the
// stop token and the child's exit.
#include "support/Process.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace ptxforge {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// Closes a file descriptor on scope exit.
class FileDescriptor {
public:
  explicit FileDescriptor(int fd = -1) : fd_(fd) {}
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  ~FileDescriptor() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }

private:
  int fd_;
};

/// posix_spawn_file_actions_t with its destroy call tied to scope.
class SpawnActions {
public:
  SpawnActions() { ok_ = posix_spawn_file_actions_init(&actions_) == 0; }
  SpawnActions(const SpawnActions &) = delete;
  SpawnActions &operator=(const SpawnActions &) = delete;
  ~SpawnActions() {
    if (ok_)
      posix_spawn_file_actions_destroy(&actions_);
  }
  bool ok() const { return ok_; }
  posix_spawn_file_actions_t *get() { return &actions_; }

private:
  posix_spawn_file_actions_t actions_{};
  bool ok_ = false;
};

/// posix_spawnattr_t with its destroy call tied to scope.
class SpawnAttributes {
public:
  SpawnAttributes() { ok_ = posix_spawnattr_init(&attributes_) == 0; }
  SpawnAttributes(const SpawnAttributes &) = delete;
  SpawnAttributes &operator=(const SpawnAttributes &) = delete;
  ~SpawnAttributes() {
    if (ok_)
      posix_spawnattr_destroy(&attributes_);
  }
  bool ok() const { return ok_; }
  posix_spawnattr_t *get() { return &attributes_; }

private:
  posix_spawnattr_t attributes_{};
  bool ok_ = false;
};

/// Blocks SIGPIPE in this thread while alive, so that writing to a child that
/// closed its stdin yields EPIPE instead of killing the process; a SIGPIPE
/// raised meanwhile is consumed before the mask is restored.
class SigpipeBlock {
public:
  SigpipeBlock() {
    sigset_t pipeOnly;
    sigemptyset(&pipeOnly);
    sigaddset(&pipeOnly, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    wasPending_ = sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipeOnly, &previous_) == 0;
  }
  SigpipeBlock(const SigpipeBlock &) = delete;
  SigpipeBlock &operator=(const SigpipeBlock &) = delete;
  ~SigpipeBlock() {
    if (!blocked_)
      return;
    if (!wasPending_) {
      sigset_t pipeOnly;
      sigemptyset(&pipeOnly);
      sigaddset(&pipeOnly, SIGPIPE);
      timespec zero{0, 0};
      while (sigtimedwait(&pipeOnly, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }

private:
  sigset_t previous_{};
  bool blocked_ = false;
  bool wasPending_ = false;
};

Error systemError(const std::string &call, int errorNumber) {
  return makeError(ErrorKind::Io, call + " failed: " + std::strerror(errorNumber));
}

/// Appends to a tail buffer, trimming it now and then (not on every chunk).
void keepTail(std::string &tail, const char *data, size_t size, size_t tailBytes) {
  tail.append(data, size);
  if (tailBytes != SIZE_MAX && tail.size() > 4 * tailBytes + 65536)
    tail.erase(0, tail.size() - tailBytes);
}

} // namespace

Result<ProcessResult> runProcess(const std::vector<std::string> &argv, const ProcessOptions &options) {
  if (argv.empty())
    return makeError(ErrorKind::Internal, "runProcess: empty argument vector");
  int inPipe[2], outPipe[2], errPipe[2];
  if (::pipe2(inPipe, O_CLOEXEC) != 0)
    return systemError("pipe2", errno);
  FileDescriptor inRead(inPipe[0]), inWrite(inPipe[1]);
  if (::pipe2(outPipe, O_CLOEXEC) != 0)
    return systemError("pipe2", errno);
  FileDescriptor outRead(outPipe[0]), outWrite(outPipe[1]);
  if (::pipe2(errPipe, O_CLOEXEC) != 0)
    return systemError("pipe2", errno);
  FileDescriptor errRead(errPipe[0]), errWrite(errPipe[1]);

  SpawnActions actions;
  SpawnAttributes attributes;
  if (!actions.ok() || !attributes.ok())
    return makeError(ErrorKind::Internal, "posix_spawn set-up failed");
  // dup2 clears O_CLOEXEC on the child's 0, 1 and 2; every other pipe end
  // (including those of children other threads spawn concurrently) closes on exec.
  for (auto [fd, target] : {std::pair{inRead.get(), STDIN_FILENO}, std::pair{outWrite.get(), STDOUT_FILENO},
                            std::pair{errWrite.get(), STDERR_FILENO}})
    if (int rc = posix_spawn_file_actions_adddup2(actions.get(), fd, target); rc != 0)
      return systemError("posix_spawn_file_actions_adddup2", rc);
  // Own process group (by default), so a timeout kills the program and
  // whatever it started; default signal dispositions and an empty mask whatever this thread has.
  sigset_t emptyMask, defaults;
  sigemptyset(&emptyMask);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (options.ownProcessGroup)
    flags |= POSIX_SPAWN_SETPGROUP;
  posix_spawnattr_setflags(attributes.get(), flags);
  posix_spawnattr_setpgroup(attributes.get(), 0);
  posix_spawnattr_setsigmask(attributes.get(), &emptyMask);
  posix_spawnattr_setsigdefault(attributes.get(), &defaults);

  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  const auto start = Clock::now();
  pid_t pid = 0;
  const int spawned = options.searchPath
                          ? posix_spawnp(&pid, argv[0].c_str(), actions.get(), attributes.get(), args.data(), environ)
                          : posix_spawn(&pid, argv[0].c_str(), actions.get(), attributes.get(), args.data(), environ);
  if (spawned != 0)
    return makeError(ErrorKind::ToolMissing, "spawn-failed", "cannot start `" + argv[0] + "`: " + std::strerror(spawned));
  inRead.reset();
  outWrite.reset();
  errWrite.reset();
  if (::fcntl(inWrite.get(), F_SETFL, ::fcntl(inWrite.get(), F_GETFL) | O_NONBLOCK) != 0) {
    // Not fatal: a blocking write only risks a deadlock with a program that
    // writes much before reading, so give up on the input instead.
    inWrite.reset();
  }

  ProcessResult result;
  SigpipeBlock sigpipeBlock;
  const std::string &input = options.standardInput;
  size_t written = 0;
  bool exited = false;
  Clock::time_point exitedAt;
  char buffer[65536];
  if (input.empty())
    inWrite.reset();

  while (true) {
    if (options.stop.stop_requested()) {
      result.cancelled = true;
      break;
    }
    const auto now = Clock::now();
    if (options.timeout && now >= start + *options.timeout) {
      result.timedOut = true;
      break;
    }
    if (!exited) {
      // WNOWAIT leaves the zombie in place: its pid, and so its process
      // group id, cannot be reused before the kill below.
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
        exited = true;
        exitedAt = now;
      }
    }
    const bool pipesOpen = outRead.get() >= 0 || errRead.get() >= 0;
    // After the program exits, its pipes may be held open by a process it
    // left behind; read what is already there, briefly, and stop.
    if (exited && (!pipesOpen || now - exitedAt > milliseconds(200)))
      break;

    pollfd fds[3];
    int count = 0;
    int inIndex = -1, outIndex = -1, errIndex = -1;
    if (inWrite.get() >= 0) {
      inIndex = count;
      fds[count++] = {inWrite.get(), POLLOUT, 0};
    }
    if (outRead.get() >= 0) {
      outIndex = count;
      fds[count++] = {outRead.get(), POLLIN, 0};
    }
    if (errRead.get() >= 0) {
      errIndex = count;
      fds[count++] = {errRead.get(), POLLIN, 0};
    }
    // Wake at least every 20 ms for the stop token, the deadline and the exit.
    constexpr int kWakeMs = 20;
    const int ready = count > 0 ? ::poll(fds, count, kWakeMs) : (::usleep(kWakeMs * 1000), 0);
    if (ready < 0 && errno != EINTR) {
      const int saved = errno;
      ::kill(options.ownProcessGroup ? -pid : pid, SIGKILL);
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      return systemError("poll", saved);
    }
    if (ready <= 0)
      continue;

    if (inIndex >= 0 && (fds[inIndex].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t n = ::write(inWrite.get(), input.data() + written, input.size() - written);
      if (n > 0)
        written += static_cast<size_t>(n);
      else if (n < 0 && errno != EAGAIN && errno != EINTR)
        inWrite.reset(); // EPIPE: the program does not want (more) input
      if (written == input.size())
        inWrite.reset(); // EOF tells the program the input is complete
    }
    auto drain = [&](int index, FileDescriptor &fd, bool isStdout) {
      if (index < 0 || !(fds[index].revents & (POLLIN | POLLHUP | POLLERR)))
        return;
      ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
      if (n > 0) {
        if (isStdout) {
          if (result.standardOutput.size() + static_cast<size_t>(n) > options.maxStdoutBytes)
            result.outputTooLarge = true;
          else
            result.standardOutput.append(buffer, static_cast<size_t>(n));
        } else {
          keepTail(result.standardError, buffer, static_cast<size_t>(n), options.stderrTailBytes);
        }
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        fd.reset();
      }
    };
    drain(outIndex, outRead, true);
    drain(errIndex, errRead, false);
    if (result.outputTooLarge)
      break;
  }

  // Whatever the program left running in its group goes now (the program
  // itself too, on a timeout, a cancellation or too much output). The child,
  // exited or not, is not reaped yet, so neither its pid nor its group id can
  // have been reused.
  ::kill(options.ownProcessGroup ? -pid : pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return systemError("waitpid", errno);
  }
  result.waitStatus = status;
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  result.elapsedMs = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (result.standardError.size() > options.stderrTailBytes)
    result.standardError.erase(0, result.standardError.size() - options.stderrTailBytes);
  return result;
}

bool isExecutableFile(const std::string &path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string findHelperProgram(const std::string &explicitPath, const char *variable, const char *name,
                              const char *buildPath) {
  if (!explicitPath.empty()) return isExecutableFile(explicitPath) ? explicitPath : "";
  if (const char *setting = std::getenv(variable); setting && *setting)
    return isExecutableFile(setting) ? setting : "";
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error && isExecutableFile((self.parent_path() / name).string())) return (self.parent_path() / name).string();
  if (buildPath && isExecutableFile(buildPath)) return buildPath;
  return "";
}

std::string describeWaitStatus(const std::string &who, int waitStatus) {
  if (WIFSIGNALED(waitStatus))
    return who + " was killed by signal " + std::to_string(WTERMSIG(waitStatus)) + " (" + strsignal(WTERMSIG(waitStatus)) +
           ")";
  if (WIFEXITED(waitStatus)) return who + " exited with status " + std::to_string(WEXITSTATUS(waitStatus));
  return who + " ended";
}

std::optional<std::string> findOnPath(std::string_view name) {
  const char *path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/bin:/bin";
  while (true) {
    const size_t colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    // An empty entry is the current directory, as for execvp.
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + std::string(name);
    if (isExecutableFile(candidate))
      return candidate;
    if (colon == std::string_view::npos)
      return std::nullopt;
    rest.remove_prefix(colon + 1);
  }
}

} // namespace ptxforge
