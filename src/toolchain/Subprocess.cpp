// Subprocess: posix_spawn with pipes (no shell, so no quoting bugs with odd
// paths) and RAII temporary files.
#include "toolchain/Subprocess.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace ptxforge::toolchain {

namespace {

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

Error systemError(std::string_view call, int errorNumber) {
  return makeError(ErrorKind::Io, std::string(call) + " failed: " + std::strerror(errorNumber));
}

} // namespace

Result<ProcessOutput> runProcess(const std::vector<std::string> &argv) {
  if (argv.empty())
    return makeError(ErrorKind::Internal, "runProcess: empty argument vector");
  int outPipe[2];
  int errPipe[2];
  if (::pipe2(outPipe, O_CLOEXEC) != 0)
    return systemError("pipe2", errno);
  FileDescriptor outRead(outPipe[0]), outWrite(outPipe[1]);
  if (::pipe2(errPipe, O_CLOEXEC) != 0)
    return systemError("pipe2", errno);
  FileDescriptor errRead(errPipe[0]), errWrite(errPipe[1]);

  SpawnActions actions;
  if (!actions.ok())
    return makeError(ErrorKind::Internal, "posix_spawn_file_actions_init failed");
  // dup2 clears O_CLOEXEC on the child's 1 and 2; every other pipe end closes on exec.
  if (int rc = posix_spawn_file_actions_adddup2(actions.get(), outWrite.get(), STDOUT_FILENO); rc != 0)
    return systemError("posix_spawn_file_actions_adddup2", rc);
  if (int rc = posix_spawn_file_actions_adddup2(actions.get(), errWrite.get(), STDERR_FILENO); rc != 0)
    return systemError("posix_spawn_file_actions_adddup2", rc);
  if (int rc = posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0); rc != 0)
    return systemError("posix_spawn_file_actions_addopen", rc);

  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  if (int rc = posix_spawn(&pid, argv[0].c_str(), actions.get(), nullptr, args.data(), environ); rc != 0)
    return makeError(ErrorKind::ToolMissing, "posix_spawn(" + argv[0] + ") failed: " + std::strerror(rc));
  outWrite.reset();
  errWrite.reset();

  // Drain both pipes together: a child that fills one while we block on the
  // other would deadlock.
  ProcessOutput output;
  pollfd fds[2] = {{outRead.get(), POLLIN, 0}, {errRead.get(), POLLIN, 0}};
  std::string *sinks[2] = {&output.standardOutput, &output.standardError};
  int open = 2;
  char buffer[65536];
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1; // poll ignores negative descriptors
        --open;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return systemError("waitpid", errno);
  }
  output.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return output;
}

bool isExecutableFile(const std::string &path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::optional<std::string> findOnPath(std::string_view name) {
  const char *path = std::getenv("PATH");
  if (!path)
    return std::nullopt;
  std::string_view rest(path);
  while (true) {
    size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    if (!dir.empty()) {
      std::string candidate = dir + "/" + std::string(name);
      if (isExecutableFile(candidate))
        return candidate;
    }
    if (colon == std::string_view::npos)
      return std::nullopt;
    rest.remove_prefix(colon + 1);
  }
}

Result<TempFile> TempFile::create(std::string_view suffix) {
  const char *dir = std::getenv("TMPDIR");
  std::string pattern = std::string(dir && *dir ? dir : "/tmp") + "/ptxforge-XXXXXX" + std::string(suffix);
  int fd = ::mkstemps(pattern.data(), static_cast<int>(suffix.size()));
  if (fd < 0)
    return systemError("mkstemps(" + pattern + ")", errno);
  ::close(fd);
  return TempFile(std::move(pattern));
}

TempFile::TempFile(TempFile &&other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }

TempFile &TempFile::operator=(TempFile &&other) noexcept {
  if (this != &other) {
    if (!path_.empty())
      ::unlink(path_.c_str());
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

TempFile::~TempFile() {
  if (!path_.empty())
    ::unlink(path_.c_str());
}

Result<void> TempFile::write(std::string_view bytes) const {
  std::ofstream stream(path_, std::ios::binary | std::ios::trunc);
  stream.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!stream)
    return makeError(ErrorKind::Io, "cannot write temporary file " + path_);
  return {};
}

Result<std::vector<uint8_t>> TempFile::read() const {
  std::ifstream stream(path_, std::ios::binary);
  if (!stream)
    return makeError(ErrorKind::Io, "cannot read temporary file " + path_);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  return bytes;
}

} // namespace ptxforge::toolchain
