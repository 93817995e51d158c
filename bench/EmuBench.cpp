// Benchmark of the CPU emulator: for a few tasks of the suite, the wall time of
// a whole `check` of the task's reference against itself on its small shapes
// (lint, compile, then reference and candidate run in the emulator, three
// trials), and the emulated thread-instructions per second per host core.
// Each task is measured with 1 host thread and with all cores, side by side.
//
//   ptxforge_emu_bench [--tasks vector_add,softmax_rows,...] [--reps 5] [--json FILE]
#include "emu/EmuExecutor.h"
#include "support/Stats.h"
#include "tasks/Reference.h"
#include "tasks/TaskSpec.h"
#include "verify/Check.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

using namespace ptxforge;

int main(int argc, char **argv) {
  CLI::App app("Emulator speed: check time and thread-instructions per second per core");
  std::vector<std::string> names = {"vector_add", "saxpy",     "gelu",  "transpose_2d", "sum_reduction",
                                    "softmax_rows", "layernorm", "inclusive_scan_i32", "sgemm", "hgemm"};
  int reps = 5;
  std::string jsonPath;
  app.add_option("--tasks", names, "Tasks to run")->delimiter(',');
  app.add_option("--reps", reps, "Checks per task and thread count");
  app.add_option("--json", jsonPath, "Write the results here");
  CLI11_PARSE(app, argc, argv);

  Result<tasks::Suite> suite = tasks::loadSuite(tasks::taskSearchRoots());
  if (!suite) {
    fmt::print(stderr, "error: {}\n", suite.error().message);
    return 2;
  }
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<unsigned> threadCounts = {1};
  if (cores > 1) threadCounts.push_back(cores);

  nlohmann::json rows = nlohmann::json::array();
  fmt::print("| task | small shapes | host threads | check ms (median [p10, p90]) | launches | thread-instructions | "
             "M thread-instr/s per core |\n|---|---|---|---|---|---|---|\n");
  for (const std::string &name : names) {
    const tasks::TaskSpec *task = nullptr;
    for (const tasks::TaskSpec &t : suite->tasks)
      if (t.name == name) task = &t;
    if (!task) {
      fmt::print(stderr, "error: no task '{}'\n", name);
      return 2;
    }
    Result<tasks::CompiledReference> reference = tasks::compileReference(*task, "sm_90");
    if (!reference) {
      fmt::print(stderr, "error: {}: {}\n", name, reference.error().message);
      return 2;
    }
    std::string shapes;
    for (size_t index : task->smallShapes) shapes += (shapes.empty() ? "" : " ") + tasks::shapeToString(task->shapes[index]);
    for (unsigned threads : threadCounts) {
      std::vector<double> wall;
      emu::EmuCounters last;
      for (int rep = 0; rep < reps; ++rep) {
        emu::EmuOptions options;
        options.checks.hostThreads = threads;
        std::unique_ptr<exec::Executor> executor = emu::createEmuExecutor(options);
        verify::CheckOptions check;
        check.shapeIndices = task->smallShapes;
        auto start = std::chrono::steady_clock::now();
        Result<verify::CheckResult> result = verify::check(*task, reference->ptx, executor.get(), check);
        wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        if (!result || result->verdict != verify::Verdict::Correct) {
          fmt::print(stderr, "error: {}: {}\n", name, result ? result->summary : result.error().message);
          return 1;
        }
        last = *emu::emuCounters(*executor);
      }
      Spread s = spreadOf(wall);
      double perCore = last.launchSeconds > 0 ? last.threadInstructions / last.launchSeconds / threads / 1e6 : 0;
      fmt::print("| {} | {} | {} | {:.0f} [{:.0f}, {:.0f}] | {} | {:.3g} | {:.0f} |\n", name, shapes, threads, s.median,
                 s.p10, s.p90, last.launches, static_cast<double>(last.threadInstructions), perCore);
      rows.push_back({{"task", name},
                      {"shapes", shapes},
                      {"host_threads", threads},
                      {"check_ms", {{"median", s.median}, {"p10", s.p10}, {"p90", s.p90}, {"min", s.min}, {"max", s.max}}},
                      {"launches", last.launches},
                      {"thread_instructions", last.threadInstructions},
                      {"warp_instructions", last.warpInstructions},
                      {"launch_seconds", last.launchSeconds},
                      {"mega_thread_instructions_per_second_per_core", perCore}});
    }
  }
  if (!jsonPath.empty()) {
    std::ofstream out(jsonPath);
    out << nlohmann::json{{"host_cores", cores}, {"reps", reps}, {"rows", rows}}.dump(2) << '\n';
  }
  return 0;
}
