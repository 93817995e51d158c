// `ptxforge check`, `baseline`, `crosscheck`, `device` and `reference`: the
// commands that run the gate (verify::check) or show what it measures against.
#include "Commands.h"
#include "GateOptions.h"
#include "ModelOptions.h"
#include "Output.h"

#include "emu/EmuExecutor.h"
#include "exec/IsolatedExecutor.h"
#include "prompt/Extract.h"
#include "report/GateTables.h"
#include "serve/Gate.h"
#include "ptx/Lint.h"
#include "tasks/Reference.h"
#include "verify/Ceilings.h"
#include "verify/Check.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

namespace ptxforge::cli {
namespace {

struct CheckCli {
  std::string input = "-";
  GateFlags gate;
  std::string task;
  std::string shapes; ///< empty: all on a GPU, small on the emulator
  std::optional<uint64_t> seed;
  std::vector<std::string> extraShapes;
  int drawnShapes = verify::CheckOptions{}.drawnShapes;
  bool noSanitizer = false;
  bool noBench = false;
  bool noLint = false;
  bool profile = false;
};

/// baseline and crosscheck.
struct SuiteCli {
  GateFlags gate;
  std::vector<std::string> tasks;
  int level = 0;
  uint64_t seed = 1;
  std::string outputJson;
};

struct DeviceCli {
  bool refresh = false;
  std::string format = "text";
};

struct ReferenceCli {
  GateFlags gate;
  std::string task;
};

void printCheck(const CheckCli &cli, const Input &input, const serve::AnswerPtx &candidate,
                const serve::AnswerCheck &checked) {
  const verify::CheckResult &result = checked.result;
  if (cli.gate.format == "json") {
    nlohmann::json out = serve::toJson(checked);
    out["file"] = input.name;
    std::cout << out.dump(2) << '\n';
    return;
  }
  const bool answerLines = candidate.extracted && !candidate.extracted->directiveMoved;
  if (candidate.extracted)
    fmt::print("{}: PTX taken from lines {}-{} ({}){}\n", input.name, candidate.extracted->firstLine,
               candidate.extracted->lastLine, prompt::ptxSourceName(candidate.extracted->source),
               answerLines ? "" : "; diagnostics count lines of the module");
  std::cout << ptx::formatDiagnosticsText(result.diagnostics, input.name, answerLines ? input.text : candidate.ptx)
            << verify::formatText(result);
}

/// The request of `check`'s flags.
serve::CheckRequest checkRequestFor(const CheckCli &cli, const Input &input) {
  serve::CheckRequest request;
  request.task = cli.task;
  request.text = input.text;
  request.shapes = cli.shapes;
  request.extraShapes = cli.extraShapes;
  request.seed = cli.seed;
  request.trials = cli.gate.trials;
  request.drawnShapes = cli.drawnShapes;
  request.timingRounds = cli.gate.timingRounds;
  request.launchTimeoutMs = cli.gate.launchTimeoutMs;
  request.arch = cli.gate.arch;
  request.benchmark = !cli.noBench;
  request.lint = !cli.noLint;
  request.profile = cli.profile;
  request.sanitizer = !cli.noSanitizer;
  return request;
}

int runCheck(const CheckCli &cli) {
  const std::string &format = cli.gate.format;
  Result<Input> input = readInput(cli.input);
  if (!input) return fail(format, input.error());
  nlohmann::json context = {{"file", input->name}, {"task", cli.task}};
  // An answer without PTX is an error of the input here (the service and the
  // reward make it the verdict no-ptx).
  Result<serve::AnswerPtx> candidate = serve::ptxOfAnswer(input->text);
  if (!candidate) return fail(format, candidate.error(), kExitErrors, context);
  Result<tasks::Suite> suite = loadSuite(cli.gate.tasksDirs);
  if (!suite) return fail(format, suite.error(), kExitUsage, context);
  Result<const tasks::TaskSpec *> task = findTask(*suite, cli.task);
  if (!task) return fail(format, task.error(), kExitUsage, context);

  // `--executor gpu` runs the GPU alone: the emulator's sanitizers are for `auto`.
  serve::Gate gate({.executor = cli.gate.executor, .deviceOrdinal = 0, .sanitizer = cli.gate.executor != "gpu"});
  Result<serve::AnswerCheck> checked = gate.check(**task, checkRequestFor(cli, *input));
  if (!checked) {
    // A bad --shape or --shapes is a usage error, like the flags CLI11 checks;
    // anything else means the gate itself failed (no verdict).
    if (checked.error().kind == ErrorKind::InvalidInput) return fail(format, checked.error(), kExitUsage, context);
    return fail(format, checked.error(), kExitUsage, {{"file", input->name}, {"verdict", nullptr}});
  }
  printCheck(cli, *input, *candidate, *checked);
  const verify::Verdict verdict = checked->result.verdict;
  if (verdict == verify::Verdict::NotVerified) return kExitUsage;
  return verdict == verify::Verdict::Correct ? kExitOk : kExitErrors;
}

/// The tasks a suite command names, and the GPU it needs.
struct SuiteRun {
  tasks::Suite suite;
  std::vector<const tasks::TaskSpec *> selected;
  std::unique_ptr<exec::Executor> gpu;
};

Result<SuiteRun> startSuiteRun(const SuiteCli &cli, const char *command) {
  Result<tasks::Suite> suite = loadSuite(cli.gate.tasksDirs);
  if (!suite) return suite.error();
  SuiteRun run{std::move(*suite), {}, nullptr};
  Result<std::vector<const tasks::TaskSpec *>> selected = selectTasks(run.suite, cli.tasks, cli.level);
  if (!selected) return selected.error();
  run.selected = std::move(*selected);
  Result<std::unique_ptr<exec::Executor>> gpu = exec::createIsolatedExecutor();
  if (!gpu) {
    Error error = gpu.error();
    error.message = fmt::format("{} needs a GPU: {}", command, error.message);
    return error;
  }
  run.gpu = std::move(*gpu);
  return run;
}

/// --json FILE, then stdout: the table, or the same JSON under --format json.
int finishSuiteRun(const SuiteCli &cli, const nlohmann::json &all, const std::string &table, bool passed) {
  if (!cli.outputJson.empty())
    if (Result<void> written = writeTextFile(cli.outputJson, all.dump(2) + "\n"); !written)
      return fail(cli.gate.format, written.error());
  std::cout << (cli.gate.format == "json" ? all.dump(2) + "\n" : table);
  return passed ? kExitOk : kExitErrors;
}

/// `ptxforge crosscheck [NAME...]`: every selected task's reference run on the
/// GPU and in the emulator with the same inputs (the small shapes), and how
/// far apart the outputs are: bit-identical elements, errors, tolerance.
int runCrossCheck(const SuiteCli &cli) {
  Result<SuiteRun> run = startSuiteRun(cli, "crosscheck");
  if (!run) return fail(cli.gate.format, run.error());
  std::unique_ptr<exec::Executor> emulator = emu::createEmuExecutor();
  verify::CheckOptions options = checkOptionsFrom(cli.gate);
  options.seed = cli.seed;
  nlohmann::json all = nlohmann::json::array();
  std::string table = report::crossCheckHeader(run->gpu->properties(), cli.seed, options.trials);
  bool allPassed = true;
  for (const tasks::TaskSpec *task : run->selected) {
    Result<verify::CrossCheckResult> result = verify::crossCheck(*task, *run->gpu, *emulator, options);
    if (!result) {
      fmt::print(stderr, "crosscheck {}: {}\n", task->name, render(result.error()));
      table += fmt::format("| {} | | | | | | | | error: {} |\n", task->name, render(result.error()));
      all.push_back({{"task", task->name}, {"error", render(result.error())}});
      allPassed = false;
      continue;
    }
    all.push_back(verify::toJson(*result));
    allPassed = allPassed && result->passed;
    table += report::crossCheckRows(*task, *result);
  }
  return finishSuiteRun(cli, all, table, allPassed);
}

/// For a task with [vendor]: the library on the shape the reference was timed
/// on, checked against the reference, then timed. A library result outside the
/// tolerance clears `allCorrect` (the task's [vendor] is wrong); a library the
/// executor lacks is reported and leaves it. Returns the row's cells and sets `json`.
report::VendorCells vendorCells(const tasks::TaskSpec &task, const verify::CheckResult &result, exec::Executor &executor,
                                const verify::CheckOptions &options, nlohmann::json &json, bool &allCorrect) {
  report::VendorCells cells;
  json = nullptr;
  if (!task.vendor) return cells;
  if (result.benchmarks.empty()) {
    cells.timing = "not run";
    json = {{"error", "not run: the reference's own check was not timed (" + result.summary + ")"}};
    return cells;
  }
  const verify::BenchmarkReport &reference = result.benchmarks.front();
  Result<verify::VendorReport> vendor = verify::vendorBaseline(task, executor, options, reference.shapeIndex);
  if (!vendor) {
    std::cerr << "baseline " << task.name << ": vendor: " << render(vendor.error()) << '\n';
    cells.timing = exec::execErrorKindOf(vendor.error()) == exec::ExecErrorKind::Unavailable ? "unavailable" : "error";
    json = {{"error", render(vendor.error())}};
    return cells;
  }
  std::cerr << "baseline " << task.name << ": vendor: " << vendor->summary << '\n';
  json = verify::toJson(*vendor);
  if (!vendor->passed || !vendor->timing) {
    cells.timing = "WRONG";
    allCorrect = false;
    return cells;
  }
  const verify::TimingStats &timing = *vendor->timing;
  cells.timing = fmt::format("{:.4f} [{:.4f}, {:.4f}]", timing.median, timing.p10, timing.p90);
  if (vendor->gflops) cells.gflops = fmt::format("{:.0f}", *vendor->gflops);
  const double ratio = timing.median / reference.baseline.median;
  cells.ratio = fmt::format("{:.3f}", ratio);
  json["reference_median_ms"] = reference.baseline.median;
  json["nvcc_over_vendor_speed"] = ratio;
  return cells;
}

/// `ptxforge baseline [NAME...]`: every selected task's reference checked
/// against itself, as a table of the nvcc baseline's time, throughput and
/// resources. A speedup far from 1.00 means the measurement is noisy.
int runBaseline(const SuiteCli &cli) {
  Result<SuiteRun> run = startSuiteRun(cli, "baseline");
  if (!run) return fail(cli.gate.format, run.error());
  const exec::DeviceProperties &device = run->gpu->properties();
  verify::CheckOptions options = checkOptionsFrom(cli.gate);
  options.seed = cli.seed;
  nlohmann::json all = nlohmann::json::array();
  std::string table = report::baselineHeader(device, cli.seed);
  bool allCorrect = true;
  for (const tasks::TaskSpec *task : run->selected) {
    Result<tasks::CompiledReference> reference =
        tasks::compileReference(*task, cli.gate.arch.empty() ? device.arch() : cli.gate.arch);
    Result<verify::CheckResult> checked =
        reference ? verify::check(*task, reference->ptx, run->gpu.get(), options) : Result<verify::CheckResult>(reference.error());
    if (!checked) {
      fmt::print(stderr, "ptxforge: error: {}: {}\n", task->name, render(checked.error()));
      all.push_back({{"task", task->name}, {"error", render(checked.error())}});
      allCorrect = false;
      continue;
    }
    allCorrect = allCorrect && checked->verdict == verify::Verdict::Correct;
    nlohmann::json json = verify::toJson(*checked);
    json["level"] = task->level;
    report::VendorCells vendor = vendorCells(*task, *checked, *run->gpu, options, json["vendor"], allCorrect);
    all.push_back(std::move(json));
    table += report::baselineRow(*task, *checked, device, vendor);
    std::cerr << "baseline " << task->name << ": " << checked->summary << '\n';
  }
  return finishSuiteRun(cli, all, table + report::baselineFooter(), allCorrect);
}

/// `ptxforge device`: the device, and its measured ceilings (cached per device).
int runDevice(const DeviceCli &cli) {
  Result<std::unique_ptr<exec::Executor>> executor = exec::createIsolatedExecutor();
  if (!executor) return fail(cli.format, executor.error());
  const exec::DeviceProperties &device = (*executor)->properties();
  std::optional<verify::DeviceCeilings> ceilings = verify::loadCachedCeilings(device.name);
  bool measured = false;
  if (!ceilings || cli.refresh) {
    Result<verify::DeviceCeilings> fresh = verify::measureCeilings(**executor);
    if (!fresh) {
      Error error = fresh.error();
      error.message = "measuring the ceilings failed: " + error.message;
      return fail(cli.format, error, kExitErrors);
    }
    ceilings = *fresh;
    measured = true;
    if (Result<void> stored = verify::storeCeilings(*ceilings); !stored)
      fmt::print(stderr, "ptxforge: warning: ceilings not cached: {}\n", render(stored.error()));
  }
  if (cli.format == "json") {
    nlohmann::json out = verify::toJson(*ceilings);
    out["sms"] = device.multiprocessorCount;
    out["memory_bytes"] = device.totalMemoryBytes;
    out["theoretical_dram_gbs"] = device.peakMemoryBandwidthGBs();
    out["cached"] = !measured;
    out["cache_file"] = verify::ceilingsCachePath(device.name).string();
    std::cout << out.dump(2) << '\n';
    return kExitOk;
  }
  fmt::print("{} ({}), {} SMs, {:.1f} GiB, driver {}\n", device.name, device.arch(), device.multiprocessorCount,
             static_cast<double>(device.totalMemoryBytes) / (1ull << 30), device.driverVersion);
  fmt::print("  theoretical DRAM bandwidth: {:.0f} GB/s\n", device.peakMemoryBandwidthGBs());
  fmt::print("  measured ({}{}): copy {:.0f} GB/s ({:.0f}% of theoretical), FP32 FMA {:.0f} GFLOP/s, FP16 FMA {:.0f} "
             "GFLOP/s\n",
             measured ? "now" : "cached ", measured ? "" : ceilings->measuredAt, ceilings->copyGBs,
             100.0 * ceilings->copyGBs / std::max(1.0, device.peakMemoryBandwidthGBs()), ceilings->fp32Gflops,
             ceilings->fp16Gflops);
  return kExitOk;
}

/// `ptxforge reference NAME`: the PTX NVRTC makes of a task's reference.
int runReference(const ReferenceCli &cli) {
  const std::string &format = cli.gate.format;
  Result<tasks::Suite> suite = loadSuite(cli.gate.tasksDirs);
  if (!suite) return fail(format, suite.error());
  Result<const tasks::TaskSpec *> task = findTask(*suite, cli.task);
  if (!task) return fail(format, task.error(), kExitUsage, {{"task", cli.task}});
  Result<tasks::CompiledReference> reference = tasks::compileReference(**task, cli.gate.arch);
  if (!reference) return fail(format, reference.error(), kExitErrors, {{"task", cli.task}});
  if (format == "json")
    std::cout << nlohmann::json{{"task", cli.task}, {"arch", cli.gate.arch}, {"ptx", reference->ptx}}.dump(2) << '\n';
  else
    std::cout << reference->ptx;
  return kExitOk;
}

void registerCheck(CLI::App &app, int &exitCode) {
  auto shared = std::make_shared<CheckCli>();
  CheckCli &cli = *shared;
  CLI::App *check = app.add_subcommand("check", "Verify a candidate against a task: lint, compile, run, compare, time");
  check->add_option("input", cli.input, "PTX file, or a model's answer holding a ```ptx block; - for standard input")
      ->capture_default_str();
  check->add_option("--task", cli.task, "Task name (see `ptxforge tasks`)")->required();
  addGateFlags(check, cli.gate);
  check->add_option("--shapes", cli.shapes,
                    "all, small, or shape indices such as 0,2 (default: all on a GPU, small on the emulator)");
  check->add_option("--seed", cli.seed,
                    "Seed of the inputs, poison, guard bytes, drawn shapes and timing schedule (default: a fresh "
                    "random seed per check, recorded in the result; give it to reproduce a check)");
  check->add_option("--shape", cli.extraShapes, "An extra shape to check, e.g. M=256,N=256,K=64 (repeatable)");
  check->add_option("--drawn-shapes", cli.drawnShapes, "Extra shapes drawn at random from the ranges the task's shapes span")
      ->check(CLI::Range(0, 16))
      ->capture_default_str();
  check->add_flag("--no-sanitizer", cli.noSanitizer, "On a GPU, skip the emulator's sanitizer pass");
  check->add_flag("--no-bench", cli.noBench, "Check correctness only");
  check->add_flag("--no-lint", cli.noLint, "Go on past lint errors (to find lint false positives)");
  check->add_flag("--profile", cli.profile,
                  "After a correct verdict, profile the candidate and the reference in the emulator (bank conflicts, "
                  "sectors per request per line) and estimate their time ratio (docs/emulator.md); on a GPU, also "
                  "Nsight Compute on one launch of each (profile.ncu, docs/profile.md)");
  check->callback([shared, &exitCode] { exitCode = runCheck(*shared); });
}

CLI::App *addSuiteCommand(CLI::App &app, const char *name, const char *description, SuiteCli &cli, unsigned gateFlags) {
  CLI::App *command = app.add_subcommand(name, description);
  command->add_option("tasks", cli.tasks, "Task names (default: the whole suite)");
  command->add_option("--level", cli.level, "Only tasks of this level")->check(CLI::Range(1, 3));
  addGateFlags(command, cli.gate, gateFlags);
  command->add_option("--seed", cli.seed, "Seed of the random inputs")->capture_default_str();
  command->add_option("--json", cli.outputJson, "Also write the results as JSON here");
  return command;
}

} // namespace

void registerGateCommands(CLI::App &app, int &exitCode) {
  registerCheck(app, exitCode);

  auto baselineCli = std::make_shared<SuiteCli>();
  addSuiteCommand(app, "baseline",
                  "Check every task's reference against itself on the GPU: the nvcc baseline table, with cuBLAS "
                  "beside the tasks that declare [vendor]",
                  *baselineCli, kAllGateFlags & ~kExecutorFlag)
      ->callback([baselineCli, &exitCode] { exitCode = runBaseline(*baselineCli); });

  auto crossCli = std::make_shared<SuiteCli>();
  // The emulator runs each reference's small shapes, GEMMs included, far
  // slower than the GPU: this command's launch deadline is a minute.
  crossCli->gate.launchTimeoutMs = 60'000;
  addSuiteCommand(app, "crosscheck",
                  "Run every task's reference on the GPU and in the emulator with the same inputs; compare outputs",
                  *crossCli, kAllGateFlags & ~(kExecutorFlag | kTimingRoundsFlag))
      ->callback([crossCli, &exitCode] { exitCode = runCrossCheck(*crossCli); });

  auto deviceCli = std::make_shared<DeviceCli>();
  CLI::App *device = app.add_subcommand("device", "Show the GPU and its measured ceilings (copy GB/s, FP32/FP16 GFLOP/s)");
  device->add_flag("--refresh", deviceCli->refresh, "Measure again instead of using the cached figures");
  addFormatFlag(device, deviceCli->format);
  device->callback([deviceCli, &exitCode] { exitCode = runDevice(*deviceCli); });

  auto referenceCli = std::make_shared<ReferenceCli>();
  referenceCli->gate.arch = "sm_90"; // no device involved: a fixed default target
  CLI::App *reference = app.add_subcommand("reference", "Print the PTX that NVRTC makes of a task's reference kernel");
  reference->add_option("task", referenceCli->task, "Task name (see `ptxforge tasks`)")->required();
  reference->add_option("--arch", referenceCli->gate.arch, "Target architecture")->capture_default_str();
  addGateFlags(reference, referenceCli->gate, kTasksDirFlag | kFormatFlag);
  reference->callback([referenceCli, &exitCode] { exitCode = runReference(*referenceCli); });
}

} // namespace ptxforge::cli
