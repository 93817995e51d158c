// CompileWorker: the parent side of ptxforge_compile_worker — finding and
// spawning it, the wall-clock deadline, turning a crash or a kill into an
// outcome, and the per-process pool of warm workers that compilePtx reuses.
#pragma once

#include "support/Result.h"
#include "toolchain/CompileProtocol.h"

#include <cstdint>
#include <string>

namespace ptxforge::toolchain {

/// How one compile sent to a worker ended.
struct WorkerOutcome {
  enum class Kind {
    Answered,    ///< the worker replied; see `response`
    Crashed,     ///< the worker died (signal or exit) before replying
    TimedOut,    ///< the deadline passed; the worker's process group was killed
    OutputLimit, ///< the reply was larger than the output cap; the worker was killed
  };
  Kind kind = Kind::Answered;
  protocol::Response response;
  std::string how;          ///< e.g. "the compile worker (pid 123) was killed by signal 11 (Segmentation fault)"
  int signal = 0;           ///< the signal that ended the worker, 0 when none
  std::string stderrTail;   ///< the last few KiB the worker (and nvJitLink/ptxas) wrote to stderr
  bool allocationFailed = false; ///< an allocation failed (stderr marker or the reply's flag)
  uint64_t replyBytes = 0;  ///< the announced reply size (OutputLimit)
  bool retried = false;     ///< the compile crashed in a used worker and was rerun in a fresh one
};

/// Sends `request` to a warm worker (starting one when none is idle) and waits
/// at most request.timeoutMs for the answer. A crash in a worker that had
/// served earlier compiles is retried once in a fresh worker, so that damage
/// left by an earlier module is never blamed on this one. Thread-safe: each
/// caller holds its own worker for the duration of the call. An Error only
/// when no worker can be started (not found, spawn failed).
Result<WorkerOutcome> compileInWorker(const protocol::Request &request, const std::string &workerPath,
                                      uint64_t maxReplyBytes);

/// Where the worker executable is: `explicitPath` if given, else
/// $PTXFORGE_COMPILE_WORKER, else ptxforge_compile_worker next to the running
/// executable, else the build tree's copy. Empty when none is executable.
std::string findCompileWorker(const std::string &explicitPath);

/// Process-wide counts, for tests and benchmarks.
struct CompileWorkerCounters {
  uint64_t started = 0;  ///< worker processes spawned
  uint64_t compiles = 0; ///< requests answered
  uint64_t crashed = 0;  ///< workers that died during a request
  uint64_t timedOut = 0; ///< workers killed at the deadline
};
CompileWorkerCounters compileWorkerCounters();

/// Stops every idle worker (the next compile starts a fresh one).
void stopIdleCompileWorkers();

} // namespace ptxforge::toolchain
