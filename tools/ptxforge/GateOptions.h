// The gate's option group, declared once for every command that checks
// kernels (check, baseline, crosscheck, solve, eval), and the set-up those
// commands share: task lookup, shape selection and the executor.
#pragma once

#include "exec/Executor.h"
#include "serve/Gate.h"
#include "serve/Remote.h"
#include "tasks/TaskSpec.h"
#include "verify/Check.h"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::cli {

/// The gate flags. Defaults come from verify::CheckOptions{}, so that the help
/// text (which reads these members) and the behaviour cannot drift.
struct GateFlags {
  std::string arch = verify::CheckOptions{}.arch; ///< empty: the device's architecture
  int trials = verify::CheckOptions{}.trials;
  int timingRounds = verify::CheckOptions{}.timingRounds;
  uint32_t launchTimeoutMs = verify::CheckOptions{}.launchTimeoutMs;
  std::string executor = "auto";
  std::vector<std::string> tasksDirs;
  std::string format = "text";
};

/// Which members of the group a command takes.
enum GateFlag : unsigned {
  kArchFlag = 1u << 0,
  kTrialsFlag = 1u << 1,
  kTimingRoundsFlag = 1u << 2,
  kTimeoutFlag = 1u << 3,
  kExecutorFlag = 1u << 4,
  kTasksDirFlag = 1u << 5,
  kFormatFlag = 1u << 6,
  kAllGateFlags = (1u << 7) - 1,
};

/// Registers the chosen gate flags on `command`, each with its environment
/// twin (PTXFORGE_ARCH, PTXFORGE_TRIALS, PTXFORGE_TIMING_ROUNDS,
/// PTXFORGE_TIMEOUT_MS, PTXFORGE_EXECUTOR; --tasks-dir's is
/// PTXFORGE_TASKS_DIR, read by the task loader) and the default `flags` holds.
void addGateFlags(CLI::App *command, GateFlags &flags, unsigned which = kAllGateFlags);

/// verify::CheckOptions with the gate flags applied.
verify::CheckOptions checkOptionsFrom(const GateFlags &flags);

// Set-up shared with `ptxforge serve` and the Python package (serve/Gate.h):
// the suite, task lookup with "did you mean", shape selection, executors.
using serve::createExecutor;
using serve::findTask;
using serve::loadSuite;
using serve::parseShapeOption;
using serve::selectShapes;

/// Where solve and eval check candidates: an executor of this process
/// (`--executor`), or with `--gate URL` a running `ptxforge serve` (`remote`),
/// and then `executor` only describes its device (from /healthz) for
/// provenance. The URL must answer /healthz before anything starts; an
/// executor that cannot start is an error naming why.
struct CheckingSetup {
  std::unique_ptr<exec::Executor> executor;
  std::shared_ptr<serve::RemoteGate> remote;
  /// With a GPU executor: the emulator, whose sanitizers check every
  /// candidate again on the task's small shapes (races, out-of-bounds reads
  /// and uninitialized values that a GPU run does not show), as `check` does.
  /// Null on the emulator, with --gate, or when the emulator cannot start
  /// (`sanitizerUnavailable` says why).
  std::unique_ptr<exec::Executor> sanitizer;
  std::string sanitizerUnavailable;
};
Result<CheckingSetup> setUpChecking(const std::string &executorChoice, const std::string &gateUrl);
/// Registers `--gate URL` (PTXFORGE_GATE) on `command`.
void addRemoteGateFlag(CLI::App *command, std::string &url);

/// The tasks named (all when none), of `level` unless it is 0; an unknown
/// name is findTask's error.
Result<std::vector<const tasks::TaskSpec *>> selectTasks(const tasks::Suite &suite,
                                                         const std::vector<std::string> &names, int level);

} // namespace ptxforge::cli
