// See GateOptions.h.
#include "GateOptions.h"

#include "Output.h"
#include "emu/EmuExecutor.h"
#include "exec/IsolatedExecutor.h"
#include "support/Text.h"

#include <fmt/format.h>

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
    command->add_option("--arch", flags.arch, "Target architecture, e.g. sm_90 (default: the device's)")
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

Result<tasks::Suite> loadSuite(const std::vector<std::string> &tasksDirs) {
  std::vector<std::filesystem::path> extraRoots(tasksDirs.begin(), tasksDirs.end());
  std::vector<std::filesystem::path> roots = tasks::taskSearchRoots(extraRoots);
  if (roots.empty())
    return makeError(ErrorKind::InvalidInput, "no-task-roots",
                     fmt::format("the built-in suite {} was not found; pass --tasks-dir or set PTXFORGE_TASKS_DIR",
                                 tasks::builtinTasksDir().string()));
  return tasks::loadSuite(roots);
}

Result<const tasks::TaskSpec *> findTask(const tasks::Suite &suite, std::string_view name) {
  const tasks::TaskSpec *nearest = nullptr;
  size_t best = 0;
  for (const tasks::TaskSpec &task : suite.tasks) {
    if (task.name == name) return &task;
    size_t distance = editDistance(name, task.name, {.ignoreCase = true, .transpositions = true});
    if (!nearest || distance < best) nearest = &task, best = distance;
  }
  std::string message = fmt::format("'{}'", name); // render() puts the code "unknown-task" first
  // A suggestion only when it is near: a third of the name's letters wrong at most.
  if (nearest && best <= std::max<size_t>(2, name.size() / 3)) {
    message += fmt::format("; did you mean '{}'? (`ptxforge tasks` lists them)", nearest->name);
  } else {
    std::string names;
    for (const tasks::TaskSpec &task : suite.tasks) names += (names.empty() ? "" : ", ") + task.name;
    message += "; known tasks: " + (names.empty() ? std::string("none") : names);
  }
  return makeError(ErrorKind::InvalidInput, "unknown-task", message);
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

Result<std::vector<size_t>> selectShapes(const tasks::TaskSpec &task, const std::string &spec) {
  std::vector<size_t> indices;
  if (spec == "all") return indices;
  if (spec == "small") return task.smallShapes;
  std::stringstream stream(spec);
  std::string item;
  while (std::getline(stream, item, ',')) {
    char *end = nullptr;
    unsigned long value = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value >= task.shapes.size())
      return makeError(ErrorKind::InvalidInput,
                       fmt::format("--shapes: '{}' is not a shape index of '{}' (0..{}), 'all' or 'small'", item,
                                   task.name, task.shapes.size() - 1));
    indices.push_back(value);
  }
  return indices;
}

Result<tasks::Shape> parseShapeOption(const tasks::TaskSpec &task, const std::string &text) {
  std::string expected;
  for (const std::string &s : task.symbols) expected += (expected.empty() ? "" : ",") + s + "=N";
  const Error bad = makeError(ErrorKind::InvalidInput, fmt::format("--shape '{}': expected {} (each symbol of task "
                                                                   "'{}' once, positive)",
                                                                   text, expected, task.name));
  tasks::Shape shape;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    size_t equals = item.find('=');
    std::string symbol = item.substr(0, equals);
    char *end = nullptr;
    long long value = equals == std::string::npos ? 0 : std::strtoll(item.c_str() + equals + 1, &end, 10);
    bool known = std::find(task.symbols.begin(), task.symbols.end(), symbol) != task.symbols.end();
    if (equals == std::string::npos || !known || value <= 0 || *end != '\0' || shape.count(symbol)) return bad;
    shape[symbol] = value;
  }
  if (shape.size() != task.symbols.size()) return bad;
  return shape;
}

std::unique_ptr<exec::Executor> createExecutor(const std::string &choice, std::string &unavailable) {
  std::unique_ptr<exec::Executor> executor;
  unavailable.clear();
  if (choice == "gpu" || choice == "auto") {
    Result<std::unique_ptr<exec::Executor>> created = exec::createIsolatedExecutor();
    if (created)
      executor = std::move(*created);
    else
      unavailable = render(created.error());
  }
  // `auto`: the GPU when there is one, the CPU emulator otherwise. The
  // emulator runs in a worker process too, so that nothing a candidate does
  // (or an emulator bug it finds) can take ptxforge down; in-process if the
  // worker cannot start.
  if (choice == "emu" || (choice == "auto" && !executor)) {
    exec::IsolatedOptions isolated;
    isolated.backend = "emu";
    Result<std::unique_ptr<exec::Executor>> created = exec::createIsolatedExecutor(isolated);
    if (created) {
      executor = std::move(*created);
    } else {
      fmt::print(stderr, "ptxforge: warning: the emulator runs in-process: {}\n", render(created.error()));
      executor = emu::createEmuExecutor();
    }
    unavailable.clear();
  }
  return executor;
}

} // namespace ptxforge::cli
