// Running a child process without a shell: posix_spawn with its stdin fed from
// a string, stdout and stderr captured (with caps), a deadline, cancellation
// and its own process group, so that a timeout takes down whatever it started.
// The one spawner of the project: the toolchain's ptxas/nvdisasm runs and the
// llm exec backend go through here. (The exec and compile workers keep their
// own spawn: they talk over a socketpair, not pipes.)
#pragma once

#include "support/Result.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge {

/// How to run a child.
struct ProcessOptions {
  /// Written to the child's stdin, which is then closed (EOF); an empty string
  /// gives it an immediately closed stdin.
  std::string standardInput;
  /// Kill the child (and its process group) after this long; none = wait forever.
  std::optional<std::chrono::milliseconds> timeout;
  /// Kill the child when stop is requested.
  std::stop_token stop;
  /// Stdout beyond this many bytes stops the run: the child is killed and
  /// outputTooLarge set (what fit is kept).
  size_t maxStdoutBytes = SIZE_MAX;
  /// Only the last this-many bytes of stderr are kept (a log's tail is where
  /// the error is).
  size_t stderrTailBytes = SIZE_MAX;
  /// Look argv[0] up on PATH when it has no slash (posix_spawnp).
  bool searchPath = false;
  /// Start the child in a process group of its own, and kill that whole group
  /// when the run ends (whatever the child left running goes with it). Off
  /// when the caller's own group must stay the unit that is killed (a worker
  /// whose deadline kills its group, children included).
  bool ownProcessGroup = true;
};

/// What a finished (or killed) child left behind.
struct ProcessResult {
  int exitCode = -1;  ///< exit status, or 128+signal when killed by a signal
  int waitStatus = 0; ///< the raw waitpid status (WIFEXITED, WTERMSIG...)
  std::string standardOutput;
  std::string standardError; ///< the tail, under ProcessOptions::stderrTailBytes
  bool timedOut = false;
  bool cancelled = false;
  bool outputTooLarge = false;
  double elapsedMs = 0;
};

/// Runs `argv` (argv[0] a path, or a name with searchPath) with `options`.
/// An Error only when the process cannot be started (code "spawn-failed") or
/// a system call fails; a non-zero exit, a timeout or a kill is a ProcessResult.
[[nodiscard]] Result<ProcessResult> runProcess(const std::vector<std::string> &argv,
                                               const ProcessOptions &options = {});

/// Searches PATH for an executable named `name` (empty PATH entries are the
/// current directory).
std::optional<std::string> findOnPath(std::string_view name);

/// True when `path` names an executable regular file.
bool isExecutableFile(const std::string &path);

/// One of our helper programs (a worker, a launcher): `explicitPath` when
/// given, else $`variable` when set, else `name` beside the running binary,
/// else `buildPath` (where the build put it; may be null). "" when none is an
/// executable file; an explicit or environment choice is never passed over.
std::string findHelperProgram(const std::string &explicitPath, const char *variable, const char *name,
                              const char *buildPath);

/// How a waited-for process ended, for messages: "WHO was killed by signal 9
/// (Killed)", "WHO exited with status 3", or "WHO ended".
std::string describeWaitStatus(const std::string &who, int waitStatus);

} // namespace ptxforge
