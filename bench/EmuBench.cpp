// Benchmark of the CPU emulator: for a few tasks of the suite, the wall time of
// a whole `check` of the task's reference against itself on its small shapes
// (lint, compile, then reference and candidate run in the emulator, three
// trials), and the emulated thread-instructions per second per host core.
// Each task is measured with 1 host thread and with all cores, side by side.
//
//   ptxforge_emu_bench [--tasks vector_add,softmax_rows,...] [--reps 5] [--json FILE] [--profile]
//                      [--seed N] [--threads N]
//
// --profile runs every launch of the check with the emulator's profile on
// (exec::LaunchConfig::profile), to measure what counting costs. --seed pins
// the checks' seed (the same inputs and drawn shapes in every repetition and
// build, for profiling under valgrind); --threads runs one host thread count.
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
#include <optional>
#include <thread>

using namespace ptxforge;

namespace {

/// Forwards everything to the emulator, with the profile on for every launch.
class ProfilingExecutor final : public exec::Executor {
public:
  explicit ProfilingExecutor(exec::Executor &inner) : inner_(inner) {}
  const exec::DeviceProperties &properties() const override { return inner_.properties(); }
  exec::ModuleFormat moduleFormat() const override { return inner_.moduleFormat(); }
  Result<exec::BufferHandle> allocate(uint64_t bytes) override { return inner_.allocate(bytes); }
  Result<void> free(exec::BufferHandle buffer) override { return inner_.free(buffer); }
  Result<void> copyToDevice(exec::BufferHandle dst, uint64_t offset, const void *src, uint64_t bytes) override {
    return inner_.copyToDevice(dst, offset, src, bytes);
  }
  Result<void> copyToHost(void *dst, exec::BufferHandle src, uint64_t offset, uint64_t bytes) override {
    return inner_.copyToHost(dst, src, offset, bytes);
  }
  Result<void> memset(exec::BufferHandle dst, uint64_t offset, uint8_t value, uint64_t bytes) override {
    return inner_.memset(dst, offset, value, bytes);
  }
  Result<void> copyOnDevice(exec::BufferHandle dst, uint64_t dstOffset, exec::BufferHandle src, uint64_t srcOffset,
                            uint64_t bytes) override {
    return inner_.copyOnDevice(dst, dstOffset, src, srcOffset, bytes);
  }
  Result<void> setAccessibleRange(exec::BufferHandle buffer, uint64_t offset, uint64_t bytes) override {
    return inner_.setAccessibleRange(buffer, offset, bytes);
  }
  Result<exec::ModuleHandle> loadModule(const std::vector<uint8_t> &image, exec::ModuleFormat format) override {
    return inner_.loadModule(image, format);
  }
  Result<void> unloadModule(exec::ModuleHandle module) override { return inner_.unloadModule(module); }
  Result<exec::KernelInfo> getKernel(exec::ModuleHandle module, const std::string &name) override {
    return inner_.getKernel(module, name);
  }
  Result<exec::GlobalVariable> getGlobal(exec::ModuleHandle module, const std::string &name) override {
    return inner_.getGlobal(module, name);
  }
  Result<void> launch(exec::KernelHandle kernel, const exec::LaunchConfig &config, const exec::PackedArgs &args) override {
    exec::LaunchConfig profiled = config;
    profiled.profile = true;
    Result<void> ran = inner_.launch(kernel, profiled, args);
    (void)inner_.takeProfiles();
    return ran;
  }
  Result<void> synchronize() override { return inner_.synchronize(); }
  Result<std::vector<float>> timeLaunch(exec::KernelHandle kernel, const exec::LaunchConfig &config,
                                        const exec::PackedArgs &args, const exec::TimingOptions &options) override {
    return inner_.timeLaunch(kernel, config, args, options);
  }
  Result<void> flushL2() override { return inner_.flushL2(); }
  std::vector<exec::LaunchFinding> takeFindings() override { return inner_.takeFindings(); }

private:
  exec::Executor &inner_;
};

} // namespace

int main(int argc, char **argv) {
  CLI::App app("Emulator speed: check time and thread-instructions per second per core");
  std::vector<std::string> names = {"vector_add", "saxpy",     "gelu",  "transpose_2d", "sum_reduction",
                                    "softmax_rows", "layernorm", "inclusive_scan_i32", "sgemm", "hgemm"};
  int reps = 5;
  std::string jsonPath;
  bool profile = false;
  std::optional<uint64_t> seed;
  unsigned onlyThreads = 0;
  app.add_option("--tasks", names, "Tasks to run")->delimiter(',');
  app.add_option("--reps", reps, "Checks per task and thread count");
  app.add_option("--json", jsonPath, "Write the results here");
  app.add_flag("--profile", profile, "Profile every launch (what the emulator's profile costs)");
  app.add_option("--seed", seed, "Pin the checks' seed (default: a fresh one per check, as the gate draws)");
  app.add_option("--threads", onlyThreads, "Only this many host threads (default: 1, then every core)");
  CLI11_PARSE(app, argc, argv);

  Result<tasks::Suite> suite = tasks::loadSuite(tasks::taskSearchRoots());
  if (!suite) {
    fmt::print(stderr, "error: {}\n", suite.error().message);
    return 2;
  }
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<unsigned> threadCounts = {1};
  if (cores > 1) threadCounts.push_back(cores);
  if (onlyThreads) threadCounts = {onlyThreads};

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
      std::vector<double> wall, rates;
      emu::EmuCounters last;
      for (int rep = 0; rep < reps; ++rep) {
        emu::EmuOptions options;
        options.checks.hostThreads = threads;
        std::unique_ptr<exec::Executor> executor = emu::createEmuExecutor(options);
        verify::CheckOptions check;
        check.shapeIndices = task->smallShapes;
        check.seed = seed;
        auto start = std::chrono::steady_clock::now();
        ProfilingExecutor profiling(*executor);
        Result<verify::CheckResult> result =
            verify::check(*task, reference->ptx, profile ? &profiling : executor.get(), check);
        wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        if (!result || result->verdict != verify::Verdict::Correct) {
          fmt::print(stderr, "error: {}: {}\n", name, result ? result->summary : result.error().message);
          return 1;
        }
        last = *emu::emuCounters(*executor);
        rates.push_back(last.launchSeconds > 0 ? last.threadInstructions / last.launchSeconds / threads / 1e6 : 0);
      }
      Spread s = spreadOf(wall);
      // The rate of the median repetition (one repetition's rate is noisy on a shared machine).
      double perCore = spreadOf(rates).median;
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
                      {"mega_thread_instructions_per_second_per_core", perCore},
                      {"rate_spread", {{"median", spreadOf(rates).median}, {"p10", spreadOf(rates).p10}, {"p90", spreadOf(rates).p90}}}});
    }
  }
  if (!jsonPath.empty()) {
    std::ofstream out(jsonPath);
    out << nlohmann::json{{"host_cores", cores}, {"reps", reps}, {"profile", profile}, {"rows", rows}}.dump(2) << '\n';
  }
  return 0;
}
