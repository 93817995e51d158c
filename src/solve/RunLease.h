// Who is working on a run. A run's status alone cannot say whether the
// process that set it to `running` is still alive (kill -9, a power cut, an
// OOM kill leave it `running` for ever), and two processes resuming one run
// would each ask the model for the same answers. So ownership is explicit:
// advisory file locks (flock) in a folder beside the store, which the kernel
// drops when the holder dies, however it dies.
//
//   <store>.leases/owner-<pid>-<n>-<random>.lock   held by one solve() call
//                                                   from before its run exists
//   <store>.leases/run-<id>.lock                    held while a process works
//                                                   on run <id>; its text names
//                                                   the holder (pid, host, since)
//
// A run's summary carries {"owner": {"pid", "host", "since", "lock"}} while it
// is `running`. reapDeadRuns marks a `running` run `interrupted` when neither
// its run lock nor its owner lock is held. The owner lock closes the window
// between createRun and taking the run lock: a new run is never reaped.
// A store at ":memory:" (or "") has no leases: no other process can see it.
// flock does not work across hosts on every network filesystem; the host is
// recorded so that a message can say where the owner runs.
#pragma once

#include "store/Store.h"
#include "support/Result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ptxforge::solve {

/// The folder of a store's lock files: "<store path>.leases"; "" for an in-memory store.
std::string leaseFolder(const std::string &storePath);

/// This process's claim on runs, held from before a run is created until the
/// run ends. Released (and its file removed) when destroyed.
class RunOwner {
public:
  /// Creates and locks a fresh owner file. An Io error names the folder when
  /// it cannot be created.
  static Result<std::unique_ptr<RunOwner>> create(const std::string &storePath);
  ~RunOwner();
  RunOwner(const RunOwner &) = delete;
  RunOwner &operator=(const RunOwner &) = delete;

  /// {"pid", "host", "since", "lock"}: what a run's summary records as its owner.
  const nlohmann::json &identity() const { return identity_; }

  /// Takes run `runId`'s lock. `wait`: block until it is free (a new run,
  /// which only a reaper can be holding for an instant); otherwise fail at
  /// once with InvalidInput naming the holder ("run 7 is being worked on by
  /// pid 4242 on host gpu1 since ...").
  Result<void> lockRun(int64_t runId, bool wait);
  /// Releases run `runId`'s lock (and removes its file).
  void unlockRun(int64_t runId);

private:
  RunOwner(std::string folder, int fd, std::string lockPath, nlohmann::json identity)
      : folder_(std::move(folder)), fd_(fd), lockPath_(std::move(lockPath)), identity_(std::move(identity)) {}

  std::string folder_;
  int fd_ = -1;          ///< the owner lock; -1 for an in-memory store
  std::string lockPath_;
  nlohmann::json identity_;
  std::vector<std::pair<int64_t, int>> runLocks_; ///< run id -> its lock's fd
};

/// Marks every `running` run of `store` whose owner is gone as `interrupted`,
/// with stopped_because naming the owner that vanished. Returns their ids.
Result<std::vector<int64_t>> reapDeadRuns(store::Store &store);

} // namespace ptxforge::solve
