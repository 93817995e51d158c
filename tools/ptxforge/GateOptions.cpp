// See GateOptions.h.
#include "GateOptions.h"

#include "Output.h"
#include "emu/EmuExecutor.h"
#include "exec/IsolatedExecutor.h"
#include "support/Text.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace ptxforge::cli {

void addGateFlags(CLI::App *command, GateFlags &flags, unsigned which) {
  // capture_default_str() shows the member's value in --help; the members are
  // initialized from verify::CheckOptions{}. (No default_val(): it writes the
  // variable at registration time.)
  if (which & kArchFlag)
    command->add_option("--arch", flags.arch,
                        "Target architecture, e.g. sm_90 (default: the device's; PTX with .target sm_90a is "
                        "compiled for sm_90a on an sm_90 device)")
        ->envname("PTXFORGE_ARCH");
  if (which & kExecutorFlag)
    command->add_option("--executor", flags.executor,
                        "gpu, emu (the CPU emulator), or auto (the GPU if there is one, else emu)")
        ->check(CLI::IsMember({"gpu", "emu", "auto"}))
        ->envname("PTXFORGE_EXECUTOR")
        ->capture_default_str();
  if (which & kTrialsFlag)
    command->add_option("--trials", flags.trials, "Trials of fresh inputs per shape")
        ->check(CLI::Range(1, 100))
        ->envname("PTXFORGE_TRIALS")
        ->capture_default_str();
  if (which & kTimingRoundsFlag)
    command->add_option("--timing-rounds", flags.timingRounds,
                        fmt::format("Interleaved timing rounds ({} launches each on average)",
                                    verify::CheckOptions{}.repetitionsPerRound))
        ->check(CLI::Range(1, 1000))
        ->envname("PTXFORGE_TIMING_ROUNDS")
        ->capture_default_str();
  if (which & kTimeoutFlag)
    command->add_option("--timeout-ms", flags.launchTimeoutMs, "Watchdog deadline of one launch, in milliseconds")
        ->check(CLI::Range(1u, 3'600'000u))
        ->envname("PTXFORGE_TIMEOUT_MS")
        ->capture_default_str();
  if (which & kTasksDirFlag)
    command->add_option("--tasks-dir", flags.tasksDirs,
                        "Extra folder of tasks, searched before $PTXFORGE_TASKS_DIR (':'-separated) and the "
                        "built-in suite (repeatable)");
  if (which & kFormatFlag) addFormatFlag(command, flags.format);
}

verify::CheckOptions checkOptionsFrom(const GateFlags &flags) {
  verify::CheckOptions options;
  options.arch = flags.arch;
  options.trials = flags.trials;
  options.timingRounds = flags.timingRounds;
  options.launchTimeoutMs = flags.launchTimeoutMs;
  return options;
}

Result<std::vector<const tasks::TaskSpec *>> selectTasks(const tasks::Suite &suite,
                                                         const std::vector<std::string> &names, int level) {
  std::vector<const tasks::TaskSpec *> selected;
  for (const std::string &name : names)
    if (Result<const tasks::TaskSpec *> found = findTask(suite, name); !found) return found.error();
  for (const tasks::TaskSpec &task : suite.tasks) {
    bool named = names.empty() || std::find(names.begin(), names.end(), task.name) != names.end();
    if (named && (level == 0 || task.level == level)) selected.push_back(&task);
  }
  return selected;
}

Result<CheckingSetup> setUpChecking(const std::string &executorChoice, const std::string &gateUrl) {
  CheckingSetup setup;
  if (gateUrl.empty()) {
    std::string unavailable;
    setup.executor = createExecutor(executorChoice, unavailable);
    if (!setup.executor) return makeError(ErrorKind::ToolMissing, "no-executor", unavailable);
    if (setup.executor->moduleFormat() != exec::ModuleFormat::Ptx)
      setup.sanitizer = createExecutor("emu", setup.sanitizerUnavailable);
    return setup;
  }
  serve::RemoteGateOptions options;
  options.url = gateUrl;
  if (const char *key = std::getenv("PTXFORGE_SERVE_API_KEY"); key && *key) options.apiKey = key;
  setup.remote = std::make_shared<serve::RemoteGate>(options);
  Result<nlohmann::json> health = setup.remote->health();
  if (!health) return health.error();
  setup.executor = serve::describeRemoteDevice(*health, gateUrl);
  return setup;
}

void addRemoteGateFlag(CLI::App *command, std::string &url) {
  command->add_option("--gate", url,
                      "Check candidates on a running `ptxforge serve` at this URL (http://host:8177) instead of an "
                      "executor of this process; PTXFORGE_SERVE_API_KEY is sent when set")
      ->envname("PTXFORGE_GATE");
}

} // namespace ptxforge::cli
