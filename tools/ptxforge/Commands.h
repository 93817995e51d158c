// The ptxforge subcommands and their one option table.
#pragma once

#include "exec/Executor.h"
#include "tasks/TaskSpec.h"

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>

#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::cli {

/// Every option of every subcommand, documented once where it is registered.
struct Options {
  std::string input = "-";
  std::string format = "text";
  std::string arch = "sm_90";
  int optLevel = 3;
  int maxRegisters = 0;
  std::string backend = "nvjitlink";
  bool noLint = false;
  bool noSass = false;
  bool noWarnings = false;
  // check
  std::string task;
  std::string checkArch; ///< empty: the device's architecture
  std::vector<std::string> tasksDirs;
  std::string executor = "auto";
  std::string shapes; ///< empty: all on a GPU, small on the emulator
  uint64_t seed = 1;                   ///< baseline, crosscheck
  std::optional<uint64_t> checkSeed;   ///< check: unset draws a fresh seed per check
  std::vector<std::string> explicitShapes; ///< check --shape M=256,N=256,K=64 (repeatable)
  int drawnShapes = 3;
  bool noSanitizer = false;
  int trials = 3;
  bool noBench = false;
  int timingRounds = 10;
  uint32_t launchTimeoutMs = 10000;
  // baseline
  std::vector<std::string> baselineTasks;
  int level = 0;
  std::string outputJson;
  bool refresh = false;
  int exitCode = 0;
};

std::string_view versionString();

// Helpers the command files share. Each prints its own error to stderr.

/// The suite (built-in, the given folders, $PTXFORGE_TASKS_DIR).
std::optional<tasks::Suite> loadSuite(const std::vector<std::string> &tasksDirs);
/// "all" (empty: every shape), "small", or a comma-separated list of shape indices.
std::optional<std::vector<size_t>> selectShapes(const tasks::TaskSpec &task, const std::string &spec);
/// Parses `--shape M=256,N=256,K=64` for `task`: every symbol given once,
/// positive; nullopt after printing the problem.
std::optional<tasks::Shape> parseShapeOption(const tasks::TaskSpec &task, const std::string &text);
/// "gpu", "emu" or "auto" (the GPU when there is one, else the emulator), in
/// a worker process. Null when the choice is "gpu" and there is none; then
/// `unavailable` says why.
std::unique_ptr<exec::Executor> createExecutor(const std::string &choice, std::string &unavailable);

/// Adds `lint`, `fmt`, `compile`, `check`, `baseline` and `reference` to the app; their callbacks set `options.exitCode`.
void registerCommands(CLI::App &app, Options &options);

} // namespace ptxforge::cli
