// The exec backend: spawn, feed stdin, drain stdout/stderr, enforce the time
// limit, and interpret the answer.
#include "llm/ExecBackend.h"

#include "llm/RequestHash.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace ptxforge::llm {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kMaxStdoutBytes = 64u << 20;
constexpr size_t kStderrTailBytes = 2000;

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

std::string systemError(const std::string &call, int errorNumber) { return call + ": " + std::strerror(errorNumber); }

/// What a finished (or killed) child left behind.
struct ChildOutcome {
  int waitStatus = 0;
  std::string standardOutput;
  std::string standardError; ///< the tail only
  bool timedOut = false;
  bool cancelled = false;
  bool outputTooLarge = false;
  double elapsedMs = 0;
};

void keepTail(std::string &tail, const char *data, size_t size) {
  tail.append(data, size);
  if (tail.size() > 4 * kStderrTailBytes)
    tail.erase(0, tail.size() - kStderrTailBytes);
}

Result<ChildOutcome> runChild(const std::vector<std::string> &argv, const std::string &input, milliseconds timeout,
                              const std::stop_token &stop) {
  int inPipe[2], outPipe[2], errPipe[2];
  if (::pipe2(inPipe, O_CLOEXEC) != 0)
    return makeError(ErrorKind::Io, systemError("pipe2", errno));
  FileDescriptor inRead(inPipe[0]), inWrite(inPipe[1]);
  if (::pipe2(outPipe, O_CLOEXEC) != 0)
    return makeError(ErrorKind::Io, systemError("pipe2", errno));
  FileDescriptor outRead(outPipe[0]), outWrite(outPipe[1]);
  if (::pipe2(errPipe, O_CLOEXEC) != 0)
    return makeError(ErrorKind::Io, systemError("pipe2", errno));
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
      return makeError(ErrorKind::Internal, systemError("posix_spawn_file_actions_adddup2", rc));
  // Own process group, so a timeout kills the program and whatever it started;
  // default signal dispositions and an empty mask whatever this thread has.
  sigset_t emptyMask, defaults;
  sigemptyset(&emptyMask);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setflags(attributes.get(), POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(attributes.get(), 0);
  posix_spawnattr_setsigmask(attributes.get(), &emptyMask);
  posix_spawnattr_setsigdefault(attributes.get(), &defaults);

  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  auto start = Clock::now();
  pid_t pid = 0;
  if (int rc = posix_spawnp(&pid, argv[0].c_str(), actions.get(), attributes.get(), args.data(), environ); rc != 0)
    return makeError(ErrorKind::Io, "cannot start `" + argv[0] + "`: " + std::strerror(rc));
  inRead.reset();
  outWrite.reset();
  errWrite.reset();
  if (::fcntl(inWrite.get(), F_SETFL, ::fcntl(inWrite.get(), F_GETFL) | O_NONBLOCK) != 0) {
    // Not fatal: a blocking write only risks a deadlock with a program that
    // writes much before reading, so give up on the input instead.
    inWrite.reset();
  }

  ChildOutcome outcome;
  SigpipeBlock sigpipeBlock;
  auto deadline = start + timeout;
  size_t written = 0;
  bool exited = false;
  std::optional<Clock::time_point> exitedAt;
  char buffer[65536];
  if (input.empty())
    inWrite.reset();

  while (true) {
    if (stop.stop_requested()) {
      outcome.cancelled = true;
      break;
    }
    auto now = Clock::now();
    if (now >= deadline) {
      outcome.timedOut = true;
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
    bool pipesOpen = outRead.get() >= 0 || errRead.get() >= 0;
    // After the program exits, its pipes may be held open by a process it
    // left behind; read what is already there, briefly, and stop.
    if (exited && (!pipesOpen || now - *exitedAt > milliseconds(200)))
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
    // Wake at least every 20 ms for the stop token, the deadline and waitpid.
    int waitMs = 20;
    int ready = count > 0 ? ::poll(fds, count, waitMs) : (::usleep(waitMs * 1000), 0);
    if (ready < 0 && errno != EINTR)
      return makeError(ErrorKind::Io, systemError("poll", errno));
    if (ready <= 0)
      continue;

    if (inIndex >= 0 && (fds[inIndex].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t n = ::write(inWrite.get(), input.data() + written, input.size() - written);
      if (n > 0)
        written += static_cast<size_t>(n);
      else if (n < 0 && errno != EAGAIN && errno != EINTR)
        inWrite.reset(); // EPIPE: the program does not want (more) input
      if (written == input.size())
        inWrite.reset(); // EOF tells the program the request is complete
    }
    auto drain = [&](int index, FileDescriptor &fd, bool isStdout) {
      if (index < 0 || !(fds[index].revents & (POLLIN | POLLHUP | POLLERR)))
        return;
      ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
      if (n > 0) {
        if (isStdout) {
          if (outcome.standardOutput.size() + static_cast<size_t>(n) > kMaxStdoutBytes)
            outcome.outputTooLarge = true;
          else
            outcome.standardOutput.append(buffer, static_cast<size_t>(n));
        } else {
          keepTail(outcome.standardError, buffer, static_cast<size_t>(n));
        }
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        fd.reset();
      }
    };
    drain(outIndex, outRead, true);
    drain(errIndex, errRead, false);
    if (outcome.outputTooLarge)
      break;
  }

  // Whatever the program left running in its group goes now (the program
  // itself too, on a timeout or cancellation).
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  outcome.waitStatus = status;
  outcome.elapsedMs = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (outcome.standardError.size() > kStderrTailBytes)
    outcome.standardError.erase(0, outcome.standardError.size() - kStderrTailBytes);
  return outcome;
}

std::string stderrNote(const std::string &tail) {
  std::string_view text = tail;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  if (text.empty())
    return "; stderr was empty";
  return "; stderr ends with:\n" + std::string(text);
}

bool isExecutable(const std::string &path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

bool foundOnPath(const std::string &name) {
  const char *path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/bin:/bin";
  while (true) {
    size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    if (isExecutable((dir.empty() ? std::string(".") : dir) + "/" + name))
      return true;
    if (colon == std::string_view::npos)
      return false;
    rest.remove_prefix(colon + 1);
  }
}

} // namespace

Result<std::vector<std::string>> splitCommandLine(std::string_view commandLine) {
  std::vector<std::string> words;
  std::string word;
  bool inWord = false;
  for (size_t i = 0; i < commandLine.size(); ++i) {
    char c = commandLine[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (inWord)
        words.push_back(std::move(word));
      word.clear();
      inWord = false;
      continue;
    }
    inWord = true;
    if (c == '\\' && i + 1 < commandLine.size()) {
      word.push_back(commandLine[++i]);
    } else if (c == '\'' || c == '"') {
      size_t close = i + 1;
      for (; close < commandLine.size() && commandLine[close] != c; ++close) {
        if (c == '"' && commandLine[close] == '\\' && close + 1 < commandLine.size() &&
            (commandLine[close + 1] == '"' || commandLine[close + 1] == '\\'))
          ++close;
        word.push_back(commandLine[close]);
      }
      if (close >= commandLine.size())
        return makeError(ErrorKind::InvalidInput,
                         "exec: unterminated " + std::string(1, c) + " quote in `" + std::string(commandLine) + "`");
      i = close;
    } else {
      word.push_back(c);
    }
  }
  if (inWord)
    words.push_back(std::move(word));
  return words;
}

nlohmann::json execRequestJson(const Request &request, const std::string &hash) {
  nlohmann::json json = canonicalRequestJson(request);
  json["request_hash"] = hash;
  json["stream"] = request.stream;
  return json;
}

Result<Completion> parseExecOutput(std::string_view standardOutput) {
  std::string_view trimmed = standardOutput;
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front())))
    trimmed.remove_prefix(1);
  if (!trimmed.starts_with('{')) {
    Completion completion;
    completion.text = std::string(standardOutput);
    return completion;
  }
  nlohmann::json json = nlohmann::json::parse(trimmed, nullptr, false);
  if (!json.is_object())
    return makeError(ErrorKind::Io, "stdout starts with '{' but is not a JSON object; print plain text, or one "
                                    "object {\"text\": ...}");
  if (auto error = json.find("error"); error != json.end() && !error->is_null()) {
    std::string message = error->is_string() ? error->get<std::string>() : dumpJson(*error);
    return makeError(ErrorKind::Io, "the model reported an error: " + message);
  }
  Result<Completion> completion = completionFromJson(json);
  if (!completion)
    return makeError(ErrorKind::Io, "stdout is a JSON object but not a valid answer: " + completion.error().message);
  return completion;
}

Result<std::unique_ptr<Backend>> ExecBackend::create(const std::string &commandLine, const BackendOptions &options) {
  Result<std::vector<std::string>> argv = splitCommandLine(commandLine);
  if (!argv)
    return argv.error();
  if (argv->empty())
    return makeError(ErrorKind::InvalidInput, "exec: no command given (exec:COMMAND [ARG...])");
  const std::string &program = argv->front();
  if (program.find('/') != std::string::npos) {
    if (!isExecutable(program))
      return makeError(ErrorKind::InvalidInput, "exec: `" + program + "` is not an executable file");
  } else if (!foundOnPath(program)) {
    return makeError(ErrorKind::InvalidInput, "exec: `" + program + "` was not found on PATH");
  }
  return std::unique_ptr<Backend>(new ExecBackend(commandLine, std::move(*argv), options.requestTimeout));
}

Result<Completion> ExecBackend::completeValid(const Request &request, const std::string &hash,
                                              const CallContext &context) {
  std::string input = dumpJson(execRequestJson(request, hash)) + "\n";
  Result<ChildOutcome> ran = runChild(argv_, input, timeout_, context.stop);
  auto failure = [&](std::string message) { return makeError(ErrorKind::Io, "exec: `" + commandLine_ + "` " + message); };
  if (!ran)
    return failure(ran.error().message);
  const ChildOutcome &child = *ran;
  if (child.cancelled)
    return failure("was cancelled and killed");
  if (child.timedOut)
    return failure("timed out after " + std::to_string(timeout_.count()) + " ms and was killed" +
                   stderrNote(child.standardError));
  if (child.outputTooLarge)
    return failure("printed more than " + std::to_string(kMaxStdoutBytes >> 20) + " MiB and was killed");
  if (WIFSIGNALED(child.waitStatus)) {
    int signal = WTERMSIG(child.waitStatus);
    return failure("was killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")" +
                   stderrNote(child.standardError));
  }
  if (!WIFEXITED(child.waitStatus) || WEXITSTATUS(child.waitStatus) != 0)
    return failure("exited with status " + std::to_string(WEXITSTATUS(child.waitStatus)) +
                   stderrNote(child.standardError));

  Result<Completion> completion = parseExecOutput(child.standardOutput);
  if (!completion)
    return failure(completion.error().message);
  completion->backend = "exec";
  completion->latencyMs = child.elapsedMs;
  completion->firstTokenMs.reset();
  completion->attempts = 1;
  if (completion->model.empty())
    completion->model = request.model.empty() ? commandLine_ : request.model;
  if (context.onText && !completion->text.empty())
    context.onText(completion->text);
  return completion;
}

} // namespace ptxforge::llm
