// Run ownership through flock (RunLease.h). Every lock file is removed by its
// holder while it still holds the lock, and every taker checks after locking
// that the path still names the file it locked: so a file removed under a
// waiting taker is never mistaken for a lock (the classic unlink race).
#include "solve/RunLease.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <random>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ptxforge::solve {

namespace {

enum class LockState { Locked, Busy, Missing, Failed };

struct LockAttempt {
  LockState state = LockState::Failed;
  int fd = -1;
  int errorNumber = 0;
};

/// Opens `path` (creating it when `create`) and takes an exclusive flock.
LockAttempt lockFile(const std::string &path, bool create, bool wait) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
    if (fd < 0) {
      if (errno == ENOENT && !create) return {LockState::Missing, -1, 0};
      return {LockState::Failed, -1, errno};
    }
    int rc;
    do rc = ::flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB));
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      int error = errno;
      ::close(fd);
      if (error == EWOULDBLOCK) return {LockState::Busy, -1, 0};
      return {LockState::Failed, -1, error};
    }
    // The holder before us may have removed the file between our open and
    // our flock: then we hold a lock on a file nobody else can find.
    struct stat opened {}, named {};
    if (::fstat(fd, &opened) == 0 && ::stat(path.c_str(), &named) == 0 && opened.st_ino == named.st_ino &&
        opened.st_dev == named.st_dev)
      return {LockState::Locked, fd, 0};
    ::close(fd);
    if (!create) return {LockState::Missing, -1, 0};
  }
  return {LockState::Failed, -1, EAGAIN};
}

/// Removes a lock file while holding it, then lets it go.
void releaseFile(const std::string &path, int fd) {
  ::unlink(path.c_str());
  ::close(fd);
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string readSmallFile(int fd) {
  std::string text(4096, '\0');
  ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return text;
}

std::string runLockPath(const std::string &folder, int64_t runId) {
  return folder + "/run-" + std::to_string(runId) + ".lock";
}

/// "pid 4242 on host gpu1 since 2026-…" from an identity object.
std::string describeOwner(const nlohmann::json &identity) {
  if (!identity.is_object()) return "another process";
  std::string text = "pid " + (identity.contains("pid") ? identity["pid"].dump() : std::string("?"));
  if (identity.contains("host") && identity["host"].is_string())
    text += " on host " + identity["host"].get<std::string>();
  if (identity.contains("since") && identity["since"].is_string())
    text += " since " + identity["since"].get<std::string>();
  return text;
}

} // namespace

std::string leaseFolder(const std::string &storePath) {
  if (storePath.empty() || storePath == ":memory:" || storePath.starts_with("file::memory:")) return "";
  return storePath + ".leases";
}

Result<std::unique_ptr<RunOwner>> RunOwner::create(const std::string &storePath) {
  std::string folder = leaseFolder(storePath);
  nlohmann::json identity = {{"pid", static_cast<int64_t>(::getpid())}, {"host", hostName()}, {"since", store::utcNow()}};
  if (folder.empty()) return std::unique_ptr<RunOwner>(new RunOwner("", -1, "", std::move(identity)));
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) return makeError(ErrorKind::Io, fmt::format("cannot create the lease folder {}: {}", folder, error.message()));
  static std::atomic<uint64_t> counter{0};
  std::random_device random;
  std::string name = fmt::format("owner-{}-{}-{:08x}.lock", ::getpid(), counter++, random());
  std::string path = folder + "/" + name;
  LockAttempt attempt = lockFile(path, true, false);
  if (attempt.state != LockState::Locked)
    return makeError(ErrorKind::Io, fmt::format("cannot take the lease {}: {}", path,
                                                attempt.errorNumber ? std::strerror(attempt.errorNumber) : "held"));
  identity["lock"] = name;
  std::string text = identity.dump() + "\n";
  if (::write(attempt.fd, text.data(), text.size()) < 0) {
    // The text is only for people reading the folder; the lock is what counts.
  }
  return std::unique_ptr<RunOwner>(new RunOwner(folder, attempt.fd, path, std::move(identity)));
}

RunOwner::~RunOwner() {
  for (auto &[runId, fd] : runLocks_) releaseFile(runLockPath(folder_, runId), fd);
  if (fd_ >= 0) releaseFile(lockPath_, fd_);
}

Result<void> RunOwner::lockRun(int64_t runId, bool wait) {
  if (folder_.empty()) return {};
  for (const auto &held : runLocks_)
    if (held.first == runId) return {};
  std::string path = runLockPath(folder_, runId);
  LockAttempt attempt = lockFile(path, true, wait);
  if (attempt.state == LockState::Busy) {
    // Say who holds it: the holder wrote its identity into the file.
    std::string holder = "another process";
    if (int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
      nlohmann::json identity = nlohmann::json::parse(readSmallFile(fd), nullptr, false);
      ::close(fd);
      holder = describeOwner(identity);
    }
    return makeError(ErrorKind::InvalidInput,
                     fmt::format("run {} is being worked on by {}; wait for it to end (or stop it) before resuming",
                                 runId, holder));
  }
  if (attempt.state != LockState::Locked)
    return makeError(ErrorKind::Io, fmt::format("cannot take the lease {}: {}", path,
                                                std::strerror(attempt.errorNumber ? attempt.errorNumber : EIO)));
  std::string text = identity_.dump() + "\n";
  if (::ftruncate(attempt.fd, 0) != 0 || ::pwrite(attempt.fd, text.data(), text.size(), 0) < 0) {
    // As above: the text is informational.
  }
  runLocks_.emplace_back(runId, attempt.fd);
  return {};
}

void RunOwner::unlockRun(int64_t runId) {
  for (auto it = runLocks_.begin(); it != runLocks_.end(); ++it)
    if (it->first == runId) {
      releaseFile(runLockPath(folder_, runId), it->second);
      runLocks_.erase(it);
      return;
    }
}

Result<std::vector<int64_t>> reapDeadRuns(store::Store &store) {
  std::vector<int64_t> reaped;
  std::string folder = leaseFolder(store.path());
  if (folder.empty()) return reaped;
  Result<std::vector<store::RunRecord>> runs = store.runs();
  if (!runs) return runs.error();
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  for (const store::RunRecord &listed : *runs) {
    if (listed.runStatus() != store::RunStatus::Running) continue;
    std::string runPath = runLockPath(folder, listed.id);
    LockAttempt runLock = lockFile(runPath, true, false);
    if (runLock.state != LockState::Locked) continue; // someone works on it (or we cannot tell)
    // Read again under the lock: it may have ended or been resumed meanwhile.
    Result<store::RunRecord> run = store.run(listed.id);
    bool dead = run && run->runStatus() == store::RunStatus::Running;
    nlohmann::json owner = dead && run->summary.is_object() && run->summary.contains("owner")
                               ? run->summary["owner"]
                               : nlohmann::json(nullptr);
    if (dead && owner.is_object() && owner.contains("lock") && owner["lock"].is_string()) {
      std::string name = owner["lock"].get<std::string>();
      if (name.find('/') == std::string::npos && !name.empty() && name[0] != '.') {
        std::string ownerPath = folder + "/" + name;
        LockAttempt ownerLock = lockFile(ownerPath, false, false);
        if (ownerLock.state == LockState::Busy || ownerLock.state == LockState::Failed) dead = false;
        if (ownerLock.state == LockState::Locked) releaseFile(ownerPath, ownerLock.fd); // a dead owner's file
      }
    }
    if (dead) {
      nlohmann::json summary = run->summary.is_object() ? run->summary : nlohmann::json::object();
      summary.erase("owner");
      summary["stopped_because"] =
          owner.is_object() ? fmt::format("the process that ran it ({}) ended without finishing it", describeOwner(owner))
                            : std::string("the process that ran it ended without finishing it");
      if (Result<void> updated = store.updateRun(listed.id, store::RunStatus::Interrupted, summary); !updated) {
        releaseFile(runPath, runLock.fd);
        return updated.error();
      }
      reaped.push_back(listed.id);
    }
    releaseFile(runPath, runLock.fd);
  }
  return reaped;
}

} // namespace ptxforge::solve
