// Implementation of the ptxforge subcommands.
#include "Commands.h"

#include "ptx/Lint.h"
#include "ptx/Parser.h"
#include "ptx/Printer.h"
#include "support/InputReader.h"
#include "toolchain/Compiler.h"
#include "toolchain/Json.h"
#include "toolchain/SassStats.h"
#include "emu/EmuExecutor.h"
#include "exec/IsolatedExecutor.h"
#include "tasks/TaskSpec.h"
#include "verify/Ceilings.h"
#include "verify/Check.h"
#include "tasks/Reference.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>

namespace ptxforge::cli {

namespace {

constexpr int kExitOk = 0;
constexpr int kExitErrors = 1;
constexpr int kExitUsage = 2;

struct Input {
  std::string name; ///< for messages: the path, or "<stdin>"
  std::string text;
};

/// Reads a PTX file or standard input under the input size limit
/// (PTXFORGE_MAX_INPUT_BYTES, docs/limits.md): `lint /dev/zero` stops there,
/// and a directory or a read error is an error naming the path, not empty input.
std::optional<Input> readInput(const std::string &path) {
  Result<size_t> limit = maxInputBytesFromEnvironment();
  if (!limit) {
    fmt::print(stderr, "ptxforge: error: {}\n", limit.error().message);
    return std::nullopt;
  }
  Input input;
  input.name = path == "-" ? "<stdin>" : path;
  Result<std::string> text =
      path == "-" ? readStreamBounded(stdin, input.name, *limit) : readFileBounded(path, *limit);
  if (!text) {
    fmt::print(stderr, "ptxforge: error: {}\n", text.error().message);
    return std::nullopt;
  }
  input.text = std::move(*text);
  return input;
}

nlohmann::json diagnosticsJson(const std::vector<ptx::Diagnostic> &diagnostics) {
  return toolchain::toJson(diagnostics);
}

/// One line per kernel resource figure, the way `ptxas -v` people read them.
std::string formatCompileSummary(const toolchain::CompileResult &result) {
  if (!result.ok) return fmt::format("compile failed ({}, {:.1f} ms)\n", result.backend, result.compileMs);
  std::string out = fmt::format("compiled for {} with {} in {:.1f} ms, cubin {} bytes\n", result.arch, result.backend,
                                result.compileMs, result.cubin.size());
  for (const toolchain::ResourceUsage &usage : result.functions) {
    out += fmt::format("  {} {}: ", usage.isEntry ? "entry" : "func", usage.function);
    out += usage.registers >= 0 ? fmt::format("{} registers", usage.registers) : std::string("registers not reported");
    out += fmt::format(", {} B stack, {} B spill stores, {} B spill loads, {} B shared, {} B local", usage.stackFrameBytes,
                       usage.spillStoreBytes, usage.spillLoadBytes, usage.sharedBytes, usage.localBytes);
    if (usage.barriers) out += fmt::format(", {} barriers", usage.barriers);
    out += "\n";
  }
  for (const std::string &advisory : result.advisories) out += "  advisory: " + advisory + "\n";
  return out;
}

std::string formatSassSummary(const toolchain::SassStats &stats) {
  const toolchain::SassCounts &total = stats.total;
  std::string out = fmt::format("sass: {} instructions, {} FFMA / {} FMUL / {} FADD, {} tensor-core ops, {} barriers, "
                                "{} LDL / {} STL\n",
                                total.instructions, total.ffma, total.fmul, total.fadd, total.tensorCoreOps,
                                total.barriers, total.spillLoads, total.spillStores);
  auto widths = [](const std::map<int, int> &histogram) {
    std::string text;
    for (const auto &[bits, count] : histogram) text += fmt::format("{}{}x{}b", text.empty() ? "" : " ", count, bits);
    return text.empty() ? std::string("none") : text;
  };
  out += fmt::format("  global loads: {}; global stores: {}\n", widths(total.globalLoadWidths),
                     widths(total.globalStoreWidths));
  std::vector<std::pair<int, std::string>> top;
  for (const auto &[opcode, count] : total.opcodes) top.emplace_back(-count, opcode);
  std::sort(top.begin(), top.end());
  out += "  top opcodes:";
  for (size_t i = 0; i < top.size() && i < 10; ++i) out += fmt::format(" {} {}", top[i].second, -top[i].first);
  return out + "\n";
}

std::vector<ptx::Diagnostic> withoutWarnings(std::vector<ptx::Diagnostic> diagnostics, bool drop) {
  if (!drop) return diagnostics;
  std::erase_if(diagnostics, [](const ptx::Diagnostic &d) { return d.severity != ptx::Severity::Error; });
  return diagnostics;
}

std::string summaryLine(const std::vector<ptx::Diagnostic> &diagnostics) {
  size_t errors = 0, warnings = 0;
  for (const ptx::Diagnostic &d : diagnostics) (d.severity == ptx::Severity::Error ? errors : warnings)++;
  return fmt::format("{} error{}, {} warning{}\n", errors, errors == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s");
}

int runLint(const Options &options) {
  std::optional<Input> input = readInput(options.input);
  if (!input) return kExitUsage;
  std::vector<ptx::Diagnostic> diagnostics = withoutWarnings(ptx::lintSource(input->text), options.noWarnings);
  if (options.format == "json") {
    nlohmann::json out = {{"file", input->name},
                          {"ok", !ptx::hasErrors(diagnostics)},
                          {"diagnostics", diagnosticsJson(diagnostics)}};
    std::cout << out.dump(2) << '\n';
  } else {
    std::cout << ptx::formatDiagnosticsText(diagnostics, input->name, input->text);
    if (!diagnostics.empty()) std::cout << summaryLine(diagnostics);
  }
  return ptx::hasErrors(diagnostics) ? kExitErrors : kExitOk;
}

int runFmt(const Options &options) {
  std::optional<Input> input = readInput(options.input);
  if (!input) return kExitUsage;
  ptx::ParseResult parsed = ptx::parse(input->text);
  if (!parsed.diagnostics.empty()) {
    // Printing a partial module would silently drop what did not parse.
    std::cerr << ptx::formatDiagnosticsText(parsed.diagnostics, input->name, input->text);
    return kExitErrors;
  }
  std::cout << ptx::print(parsed.module);
  return kExitOk;
}

int runCompile(const Options &options) {
  std::optional<Input> input = readInput(options.input);
  if (!input) return kExitUsage;

  std::vector<ptx::Diagnostic> diagnostics;
  if (!options.noLint) {
    diagnostics = withoutWarnings(ptx::lintSource(input->text), options.noWarnings);
    if (ptx::hasErrors(diagnostics)) {
      // The lint is the cheaper gate; `--no-lint` asks the compiler anyway,
      // which is how lint false positives are found.
      if (options.format == "json") {
        nlohmann::json out = {{"file", input->name}, {"ok", false},          {"stage", "lint"},
                              {"diagnostics", diagnosticsJson(diagnostics)}, {"resources", nullptr},
                              {"sass", nullptr}, {"compile_ms", nullptr}};
        std::cout << out.dump(2) << '\n';
      } else {
        std::cout << ptx::formatDiagnosticsText(diagnostics, input->name, input->text);
        std::cout << summaryLine(diagnostics) << "not compiled: fix the lint errors, or pass --no-lint\n";
      }
      return kExitErrors;
    }
  }

  toolchain::CompileOptions compileOptions;
  compileOptions.arch = options.arch;
  compileOptions.optLevel = options.optLevel;
  compileOptions.maxRegisters = options.maxRegisters;
  compileOptions.backend =
      options.backend == "ptxas" ? toolchain::CompileOptions::Backend::Ptxas : toolchain::CompileOptions::Backend::NvJitLink;
  Result<toolchain::CompileResult> compiled = toolchain::compilePtx(input->text, compileOptions);
  if (!compiled) {
    fmt::print(stderr, "ptxforge: error: {}\n", compiled.error().message);
    return kExitUsage;
  }
  const toolchain::CompileResult &result = *compiled;
  for (const ptx::Diagnostic &d : result.diagnostics) diagnostics.push_back(d);
  ptx::sortByLocation(diagnostics);

  std::optional<toolchain::SassStats> sass;
  std::string sassUnavailable;
  if (result.ok && !options.noSass) {
    Result<toolchain::SassStats> stats = toolchain::sassStats(result.cubin);
    if (stats)
      sass = *stats;
    else
      sassUnavailable = stats.error().message;
  } else if (options.noSass) {
    sassUnavailable = "disabled by --no-sass";
  }

  if (options.format == "json") {
    nlohmann::json out = toolchain::toJson(result);
    out["file"] = input->name;
    out["stage"] = "compile";
    out["diagnostics"] = diagnosticsJson(diagnostics);
    if (sass)
      out["sass"] = toolchain::toJson(*sass);
    else
      out["sass"] = {{"available", false}, {"reason", sassUnavailable}};
    std::cout << out.dump(2) << '\n';
  } else {
    std::cout << ptx::formatDiagnosticsText(diagnostics, input->name, input->text);
    std::cout << formatCompileSummary(result);
    if (sass)
      std::cout << formatSassSummary(*sass);
    else if (result.ok)
      std::cout << "sass: unavailable (" << sassUnavailable << ")\n";
  }
  return result.ok ? kExitOk : kExitErrors;
}

} // namespace

std::optional<tasks::Suite> loadSuite(const std::vector<std::string> &tasksDirs) {
  std::vector<std::filesystem::path> extraRoots(tasksDirs.begin(), tasksDirs.end());
  Result<tasks::Suite> suite = tasks::loadSuite(tasks::taskSearchRoots(extraRoots));
  if (!suite) {
    fmt::print(stderr, "ptxforge: error: {}\n", suite.error().message);
    return std::nullopt;
  }
  return std::move(*suite);
}

namespace {

std::optional<tasks::Suite> loadSuite(const Options &options) { return cli::loadSuite(options.tasksDirs); }

/// The gate options that `check` and `baseline` share.
verify::CheckOptions checkOptionsFrom(const Options &options) {
  verify::CheckOptions checkOptions;
  checkOptions.arch = options.checkArch;
  checkOptions.seed = options.seed;
  checkOptions.trials = options.trials;
  checkOptions.timingRounds = options.timingRounds;
  checkOptions.launchTimeoutMs = options.launchTimeoutMs;
  return checkOptions;
}

} // namespace

std::optional<std::vector<size_t>> selectShapes(const tasks::TaskSpec &task, const std::string &spec) {
  std::vector<size_t> indices;
  if (spec == "all") return indices;
  if (spec == "small") return task.smallShapes;
  std::stringstream stream(spec);
  std::string item;
  while (std::getline(stream, item, ',')) {
    char *end = nullptr;
    unsigned long value = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value >= task.shapes.size()) {
      fmt::print(stderr, "ptxforge: error: --shapes: '{}' is not a shape index of '{}' (0..{}), 'all' or 'small'\n", item,
                 task.name, task.shapes.size() - 1);
      return std::nullopt;
    }
    indices.push_back(value);
  }
  return indices;
}

std::optional<tasks::Shape> parseShapeOption(const tasks::TaskSpec &task, const std::string &text) {
  tasks::Shape shape;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    size_t equals = item.find('=');
    std::string symbol = item.substr(0, equals);
    char *end = nullptr;
    long long value = equals == std::string::npos ? 0 : std::strtoll(item.c_str() + equals + 1, &end, 10);
    bool known = std::find(task.symbols.begin(), task.symbols.end(), symbol) != task.symbols.end();
    if (equals == std::string::npos || !known || value <= 0 || *end != '\0' || shape.count(symbol)) {
      std::string symbols;
      for (const std::string &s : task.symbols) symbols += (symbols.empty() ? "" : ",") + s + "=N";
      fmt::print(stderr, "ptxforge: error: --shape '{}': expected {} (each symbol of task '{}' once, positive)\n",
                 text, symbols, task.name);
      return std::nullopt;
    }
    shape[symbol] = value;
  }
  if (shape.size() != task.symbols.size()) {
    fmt::print(stderr, "ptxforge: error: --shape '{}': task '{}' has symbols", text, task.name);
    for (const std::string &s : task.symbols) fmt::print(stderr, " {}", s);
    fmt::print(stderr, "; give each one\n");
    return std::nullopt;
  }
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
      unavailable = created.error().message;
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
      fmt::print(stderr, "ptxforge: warning: the emulator runs in-process: {}\n", created.error().message);
      executor = emu::createEmuExecutor();
    }
    unavailable.clear();
  }
  return executor;
}

namespace {

int runCheck(const Options &options) {
  std::optional<Input> input = readInput(options.input);
  if (!input) return kExitUsage;
  std::optional<tasks::Suite> suite = loadSuite(options);
  if (!suite) return kExitUsage;
  const tasks::TaskSpec *task = nullptr;
  for (const tasks::TaskSpec &candidate : suite->tasks)
    if (candidate.name == options.task) task = &candidate;
  if (!task) {
    fmt::print(stderr, "ptxforge: error: unknown task '{}' (see `ptxforge tasks`)\n", options.task);
    return kExitUsage;
  }
  std::string noExecutor;
  std::unique_ptr<exec::Executor> executor = createExecutor(options.executor, noExecutor);
  bool emulated = executor && executor->moduleFormat() == exec::ModuleFormat::Ptx;
  // The emulator checks the task's small shapes unless told otherwise.
  std::optional<std::vector<size_t>> shapes =
      selectShapes(*task, !options.shapes.empty() ? options.shapes : emulated ? "small" : "all");
  if (!shapes) return kExitUsage;

  verify::CheckOptions checkOptions = checkOptionsFrom(options);
  checkOptions.seed = options.checkSeed;
  checkOptions.shapeIndices = *shapes;
  checkOptions.benchmark = !options.noBench;
  checkOptions.lint = !options.noLint;
  checkOptions.drawnShapes = options.drawnShapes;
  for (const std::string &text : options.explicitShapes) {
    std::optional<tasks::Shape> shape = parseShapeOption(*task, text);
    if (!shape) return kExitUsage;
    checkOptions.extraShapes.push_back(std::move(*shape));
  }
  // On a GPU machine the emulator's sanitizers are a second opinion that
  // `correct` needs too; `--executor gpu` (or --no-sanitizer) runs the GPU alone.
  std::unique_ptr<exec::Executor> sanitizer;
  std::string sanitizerSkipped;
  if (executor && !emulated) {
    if (options.executor == "gpu" || options.noSanitizer) {
      sanitizerSkipped = "the emulator's sanitizers (memory, races, initialization) were not run: --executor auto runs them";
    } else {
      std::string unavailable;
      sanitizer = createExecutor("emu", unavailable);
      if (!sanitizer) sanitizerSkipped = "the emulator's sanitizers could not start: " + unavailable;
      checkOptions.sanitizer = sanitizer.get();
    }
  }
  Result<verify::CheckResult> checked = verify::check(*task, input->text, executor.get(), checkOptions);
  if (!checked) {
    if (options.format == "json") {
      nlohmann::json out = {{"file", input->name}, {"verdict", nullptr}, {"error", checked.error().message}};
      std::cout << out.dump(2) << '\n';
    } else {
      fmt::print(stderr, "ptxforge: error: {}\n", checked.error().message);
    }
    return kExitUsage;
  }
  verify::CheckResult &result = *checked;
  if (!noExecutor.empty() && result.verdict == verify::Verdict::NotVerified) result.summary += " (" + noExecutor + ")";
  if (!sanitizerSkipped.empty())
    result.diagnostics.push_back({"sanitizer-skipped", ptx::Severity::Warning, 1, 1, sanitizerSkipped, ""});
  if (options.format == "json") {
    nlohmann::json out = verify::toJson(result);
    out["file"] = input->name;
    std::cout << out.dump(2) << '\n';
  } else {
    std::cout << ptx::formatDiagnosticsText(result.diagnostics, input->name, input->text);
    std::cout << verify::formatText(result);
  }
  if (result.verdict == verify::Verdict::NotVerified) return kExitUsage;
  return result.verdict == verify::Verdict::Correct ? kExitOk : kExitErrors;
}

/// `ptxforge baseline [NAME...]`: every selected task's reference checked
/// against itself, as a table of the nvcc baseline's time, throughput and
/// resources. A speedup far from 1.00 means the measurement is noisy.
/// The tasks named on the command line (all when none), of --level if given;
/// nullopt after reporting an unknown name.
std::optional<std::vector<const tasks::TaskSpec *>> selectTasks(const Options &options, const tasks::Suite &suite) {
  std::vector<const tasks::TaskSpec *> selected;
  for (const tasks::TaskSpec &task : suite.tasks) {
    bool named = options.baselineTasks.empty() ||
                 std::find(options.baselineTasks.begin(), options.baselineTasks.end(), task.name) != options.baselineTasks.end();
    if (named && (options.level == 0 || task.level == options.level)) selected.push_back(&task);
  }
  for (const std::string &name : options.baselineTasks)
    if (std::none_of(selected.begin(), selected.end(), [&](const tasks::TaskSpec *t) { return t->name == name; })) {
      fmt::print(stderr, "ptxforge: error: unknown task '{}' (see `ptxforge tasks`)\n", name);
      return std::nullopt;
    }
  return selected;
}

/// `ptxforge crosscheck [NAME...]`: every selected task's reference run on the
/// GPU and in the emulator with the same inputs (the small shapes), and how
/// far apart the outputs are: bit-identical elements, errors, tolerance.
int runCrossCheck(const Options &options) {
  std::optional<tasks::Suite> suite = loadSuite(options);
  if (!suite) return kExitUsage;
  std::optional<std::vector<const tasks::TaskSpec *>> selected = selectTasks(options, *suite);
  if (!selected) return kExitUsage;
  Result<std::unique_ptr<exec::Executor>> gpu = exec::createIsolatedExecutor();
  if (!gpu) {
    fmt::print(stderr, "ptxforge: error: crosscheck needs a GPU: {}\n", gpu.error().message);
    return kExitUsage;
  }
  std::unique_ptr<exec::Executor> emulator = emu::createEmuExecutor();
  verify::CheckOptions checkOptions = checkOptionsFrom(options);
  nlohmann::json all = nlohmann::json::array();
  std::string table = fmt::format("{} ({}) against the ptxforge emulator, task references, seed {}, {} trial(s)\n\n"
                                  "| task | shape | output | type | elements | bit-identical | max abs error | "
                                  "max rel error | within tolerance |\n|---|---|---|---|---|---|---|---|---|\n",
                                  (*gpu)->properties().name, (*gpu)->properties().arch(), options.seed,
                                  checkOptions.trials);
  bool allPassed = true;
  for (const tasks::TaskSpec *task : *selected) {
    Result<verify::CrossCheckResult> result = verify::crossCheck(*task, **gpu, *emulator, checkOptions);
    if (!result) {
      fmt::print(stderr, "crosscheck {}: {}\n", task->name, result.error().message);
      table += fmt::format("| {} | | | | | | | | error: {} |\n", task->name, result.error().message);
      all.push_back({{"task", task->name}, {"error", result.error().message}});
      allPassed = false;
      continue;
    }
    all.push_back(verify::toJson(*result));
    allPassed = allPassed && result->passed;
    // One line per (shape, output), with the worst trial's errors.
    std::map<std::pair<size_t, std::string>, const verify::CrossCheckRow *> worst;
    std::map<std::pair<size_t, std::string>, size_t> identical, elements;
    for (const verify::CrossCheckRow &row : result->rows) {
      auto key = std::make_pair(row.shapeIndex, row.param);
      identical[key] += row.identical;
      elements[key] += row.count;
      const verify::CrossCheckRow *&w = worst[key];
      if (!w || (w->compare.passed && !row.compare.passed) || row.compare.maxAbsError > w->compare.maxAbsError) w = &row;
    }
    for (auto &[key, row] : worst)
      table += fmt::format("| {} | {} | {} | {} | {} | {:.2f}% | {:.3g} | {:.3g} | {} |\n", task->name,
                           tasks::shapeToString(row->shape), row->param, tasks::elementTypeName(row->type),
                           elements[key], 100.0 * static_cast<double>(identical[key]) /
                                              static_cast<double>(std::max<size_t>(1, elements[key])),
                           row->compare.maxAbsError, row->compare.maxRelError, row->compare.passed ? "yes" : "NO");
  }
  if (!options.outputJson.empty()) {
    std::ofstream out(options.outputJson);
    out << all.dump(2) << '\n';
    if (!out) {
      fmt::print(stderr, "ptxforge: error: cannot write '{}'\n", options.outputJson);
      return kExitUsage;
    }
  }
  if (options.format == "json")
    std::cout << all.dump(2) << '\n';
  else
    std::cout << table;
  return allPassed ? kExitOk : kExitErrors;
}

/// The vendor columns of one `baseline` row, and its "vendor" JSON.
struct VendorColumns {
  std::string timing = "\u2014", gflops = "\u2014", ratio = "\u2014";
  nlohmann::json json = nullptr;
};

/// For a task with [vendor]: the library on the shape the reference was timed
/// on, checked against the reference, then timed. A library result outside the
/// tolerance clears `allCorrect` (the task's [vendor] is wrong); a library the
/// executor lacks is reported and leaves it.
VendorColumns vendorColumns(const tasks::TaskSpec &task, const verify::CheckResult &result, exec::Executor &executor,
                            const verify::CheckOptions &checkOptions, bool &allCorrect) {
  VendorColumns columns;
  if (!task.vendor) return columns;
  if (result.benchmarks.empty()) {
    columns.timing = "not run";
    columns.json = {{"error", "not run: the reference's own check was not timed (" + result.summary + ")"}};
    return columns;
  }
  const verify::BenchmarkReport &reference = result.benchmarks.front();
  Result<verify::VendorReport> vendor = verify::vendorBaseline(task, executor, checkOptions, reference.shapeIndex);
  if (!vendor) {
    std::cerr << "baseline " << task.name << ": vendor: " << vendor.error().message << '\n';
    columns.timing = exec::execErrorKindOf(vendor.error()) == exec::ExecErrorKind::Unavailable ? "unavailable" : "error";
    columns.json = {{"error", vendor.error().message}};
    return columns;
  }
  std::cerr << "baseline " << task.name << ": vendor: " << vendor->summary << '\n';
  columns.json = verify::toJson(*vendor);
  if (!vendor->passed || !vendor->timing) {
    columns.timing = "WRONG";
    allCorrect = false;
    return columns;
  }
  const verify::TimingStats &timing = *vendor->timing;
  columns.timing = fmt::format("{:.4f} [{:.4f}, {:.4f}]", timing.median, timing.p10, timing.p90);
  if (vendor->gflops) columns.gflops = fmt::format("{:.0f}", *vendor->gflops);
  const double ratio = timing.median / reference.baseline.median;
  columns.ratio = fmt::format("{:.3f}", ratio);
  columns.json["reference_median_ms"] = reference.baseline.median;
  columns.json["nvcc_over_vendor_speed"] = ratio;
  return columns;
}

int runBaseline(const Options &options) {
  std::optional<tasks::Suite> suite = loadSuite(options);
  if (!suite) return kExitUsage;
  std::optional<std::vector<const tasks::TaskSpec *>> chosen = selectTasks(options, *suite);
  if (!chosen) return kExitUsage;
  const std::vector<const tasks::TaskSpec *> &selected = *chosen;
  Result<std::unique_ptr<exec::Executor>> executor = exec::createIsolatedExecutor();
  if (!executor) {
    fmt::print(stderr, "ptxforge: error: baseline needs a GPU: {}\n", executor.error().message);
    return kExitUsage;
  }
  const exec::DeviceProperties &device = (*executor)->properties();
  verify::CheckOptions checkOptions = checkOptionsFrom(options);

  nlohmann::json all = nlohmann::json::array();
  std::string table = fmt::format("Baselines on {} ({}), NVRTC references, seed {}\n\n", device.name, device.arch(),
                                  options.seed);
  table += "| task | level | timed shape | median ms [p10, p90] | self speedup | GB/s | GFLOP/s | DRAM peak | "
           "registers | spill B (st/ld) | verdict | vendor ms [p10, p90] | vendor GFLOP/s | nvcc/vendor speed |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  bool allCorrect = true;
  for (const tasks::TaskSpec *task : selected) {
    Result<tasks::CompiledReference> reference =
        tasks::compileReference(*task, options.checkArch.empty() ? device.arch() : options.checkArch);
    if (!reference) {
      fmt::print(stderr, "ptxforge: error: {}: {}\n", task->name, reference.error().message);
      allCorrect = false;
      continue;
    }
    Result<verify::CheckResult> checked = verify::check(*task, reference->ptx, executor->get(), checkOptions);
    if (!checked) {
      fmt::print(stderr, "ptxforge: error: {}: {}\n", task->name, checked.error().message);
      allCorrect = false;
      continue;
    }
    const verify::CheckResult &result = *checked;
    allCorrect = allCorrect && result.verdict == verify::Verdict::Correct;
    nlohmann::json json = verify::toJson(result);
    json["level"] = task->level;
    VendorColumns vendor = vendorColumns(*task, result, **executor, checkOptions, allCorrect);
    json["vendor"] = std::move(vendor.json);
    all.push_back(std::move(json));
    std::string timing = "-", speedup = "-", gbps = "-", gflops = "-", peak = "-", shape = "-";
    if (!result.benchmarks.empty()) {
      const verify::BenchmarkReport &b = result.benchmarks.front();
      shape = tasks::shapeToString(b.shape);
      timing = fmt::format("{:.4f} [{:.4f}, {:.4f}]", b.baseline.median, b.baseline.p10, b.baseline.p90);
      speedup = fmt::format("{:.3f} [{:.3f}, {:.3f}]", b.speedup, b.speedupLow, b.speedupHigh);
      if (b.baselineGbps) gbps = fmt::format("{:.0f}", *b.baselineGbps);
      if (b.baselineGflops) gflops = fmt::format("{:.0f}", *b.baselineGflops);
      if (b.baselineGbps && device.peakMemoryBandwidthGBs() > 0)
        peak = fmt::format("{:.0f}%", 100.0 * *b.baselineGbps / device.peakMemoryBandwidthGBs());
    }
    std::string registers = "-", spills = "-";
    if (result.compile) {
      registers = std::to_string(result.compile->resources.registers);
      spills = fmt::format("{}/{}", result.compile->resources.spillStoreBytes, result.compile->resources.spillLoadBytes);
    }
    table += fmt::format("| {} | L{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", task->name,
                         task->level, shape, timing, speedup, gbps, gflops, peak, registers, spills,
                         verify::verdictName(result.verdict), vendor.timing, vendor.gflops, vendor.ratio);
    std::cerr << "baseline " << task->name << ": " << result.summary << '\n';
  }
  if (!options.outputJson.empty()) {
    std::ofstream out(options.outputJson);
    out << all.dump(2) << '\n';
    if (!out) {
      fmt::print(stderr, "ptxforge: error: cannot write '{}'\n", options.outputJson);
      return kExitUsage;
    }
  }
  if (options.format == "json")
    std::cout << all.dump(2) << '\n';
  else
    std::cout << table << "\nvendor: the task's [vendor] operation (cuBLAS) on the timed shape, checked against the "
                          "reference first, then timed with the same protocol (not interleaved); nvcc/vendor speed = "
                          "vendor median / reference median, below 1 where the nvcc reference is slower. "
                          "\u2014: the task has no [vendor].\n";
  return allCorrect ? kExitOk : kExitErrors;
}

/// `ptxforge device`: the device, and its measured ceilings (cached per device).
int runDevice(const Options &options) {
  Result<std::unique_ptr<exec::Executor>> executor = exec::createIsolatedExecutor();
  if (!executor) {
    fmt::print(stderr, "ptxforge: error: {}\n", executor.error().message);
    return kExitUsage;
  }
  const exec::DeviceProperties &device = (*executor)->properties();
  std::optional<verify::DeviceCeilings> ceilings = verify::loadCachedCeilings(device.name);
  bool measured = false;
  if (!ceilings || options.refresh) {
    Result<verify::DeviceCeilings> fresh = verify::measureCeilings(**executor);
    if (!fresh) {
      fmt::print(stderr, "ptxforge: error: measuring the ceilings failed: {}\n", fresh.error().message);
      return kExitErrors;
    }
    ceilings = *fresh;
    measured = true;
    if (Result<void> stored = verify::storeCeilings(*ceilings); !stored)
      fmt::print(stderr, "ptxforge: warning: ceilings not cached: {}\n", stored.error().message);
  }
  if (options.format == "json") {
    nlohmann::json out = verify::toJson(*ceilings);
    out["sms"] = device.multiprocessorCount;
    out["memory_bytes"] = device.totalMemoryBytes;
    out["theoretical_dram_gbs"] = device.peakMemoryBandwidthGBs();
    out["cached"] = !measured;
    out["cache_file"] = verify::ceilingsCachePath(device.name).string();
    std::cout << out.dump(2) << '\n';
  } else {
    fmt::print("{} ({}), {} SMs, {:.1f} GiB, driver {}\n", device.name, device.arch(), device.multiprocessorCount,
               static_cast<double>(device.totalMemoryBytes) / (1ull << 30), device.driverVersion);
    fmt::print("  theoretical DRAM bandwidth: {:.0f} GB/s\n", device.peakMemoryBandwidthGBs());
    fmt::print("  measured ({}{}): copy {:.0f} GB/s ({:.0f}% of theoretical), FP32 FMA {:.0f} GFLOP/s, FP16 FMA {:.0f} "
               "GFLOP/s\n",
               measured ? "now" : "cached ", measured ? "" : ceilings->measuredAt, ceilings->copyGBs,
               100.0 * ceilings->copyGBs / std::max(1.0, device.peakMemoryBandwidthGBs()), ceilings->fp32Gflops,
               ceilings->fp16Gflops);
  }
  return kExitOk;
}

/// `ptxforge reference NAME`: the PTX NVRTC makes of a task's reference.
int runReference(const Options &options) {
  std::optional<tasks::Suite> suite = loadSuite(options);
  if (!suite) return kExitUsage;
  for (const tasks::TaskSpec &task : suite->tasks) {
    if (task.name != options.task) continue;
    Result<tasks::CompiledReference> reference =
        tasks::compileReference(task, options.checkArch.empty() ? "sm_90" : options.checkArch);
    if (!reference) {
      fmt::print(stderr, "ptxforge: error: {}\n", reference.error().message);
      return kExitErrors;
    }
    std::cout << reference->ptx;
    return kExitOk;
  }
  fmt::print(stderr, "ptxforge: error: unknown task '{}' (see `ptxforge tasks`)\n", options.task);
  return kExitUsage;
}

void addInput(CLI::App *command, Options &options) {
  command->add_option("input", options.input, "PTX file to read, or - for standard input")->default_val("-");
}

void addFormat(CLI::App *command, Options &options) {
  command->add_option("--format", options.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
}

} // namespace

std::string_view versionString() { return "ptxforge 0.1.0"; }

void registerCommands(CLI::App &app, Options &options) {
  CLI::App *lint = app.add_subcommand("lint", "Parse and statically check a PTX module");
  addInput(lint, options);
  addFormat(lint, options);
  lint->add_flag("--no-warnings", options.noWarnings, "Report errors only");
  lint->callback([&options] { options.exitCode = runLint(options); });

  CLI::App *fmtCommand = app.add_subcommand("fmt", "Print the module in ptxforge's normalized layout");
  addInput(fmtCommand, options);
  fmtCommand->callback([&options] { options.exitCode = runFmt(options); });

  CLI::App *compile = app.add_subcommand("compile", "Lint, then compile PTX to a cubin and report resources and SASS");
  addInput(compile, options);
  addFormat(compile, options);
  compile->add_option("--arch", options.arch, "Target GPU architecture, e.g. sm_80, sm_90, sm_90a")
      ->envname("PTXFORGE_ARCH")
      ->default_val("sm_90");
  compile->add_option("--opt", options.optLevel, "ptxas optimization level")->check(CLI::Range(0, 3))->default_val(3);
  compile->add_option("--maxrregcount", options.maxRegisters, "Register limit per thread (0: no limit)")
      ->check(CLI::Range(0, 255))
      ->default_val(0);
  compile->add_option("--backend", options.backend, "nvjitlink (in-process) or ptxas (subprocess)")
      ->check(CLI::IsMember({"nvjitlink", "ptxas"}))
      ->envname("PTXFORGE_BACKEND")
      ->default_val("nvjitlink");
  compile->add_flag("--no-lint", options.noLint, "Compile even when the lint finds errors");
  compile->add_flag("--no-sass", options.noSass, "Skip SASS statistics (nvdisasm)");
  compile->add_flag("--no-warnings", options.noWarnings, "Report errors only");
  compile->callback([&options] { options.exitCode = runCompile(options); });

  CLI::App *check = app.add_subcommand("check", "Verify a candidate against a task: lint, compile, run, compare, time");
  addInput(check, options);
  addFormat(check, options);
  check->add_option("--task", options.task, "Task name (see `ptxforge tasks`)")->required();
  check->add_option("--tasks-dir", options.tasksDirs, "Extra folder of tasks (repeatable)");
  check->add_option("--executor", options.executor, "gpu, emu (the CPU emulator), or auto (the GPU if there is one, else emu)")
      ->check(CLI::IsMember({"gpu", "emu", "auto"}))
      ->envname("PTXFORGE_EXECUTOR")
      ->default_val("auto");
  check->add_option("--arch", options.checkArch, "Target architecture (default: the device's)")->envname("PTXFORGE_ARCH");
  check->add_option("--shapes", options.shapes,
                    "all, small, or shape indices such as 0,2 (default: all on a GPU, small on the emulator)");
  check->add_option("--seed", options.checkSeed,
                    "Seed of the inputs, poison, guard bytes, drawn shapes and timing schedule (default: a fresh "
                    "random seed per check, recorded in the result; give it to reproduce a check)");
  check->add_option("--shape", options.explicitShapes, "An extra shape to check, e.g. M=256,N=256,K=64 (repeatable)");
  check->add_option("--drawn-shapes", options.drawnShapes,
                    "Extra shapes drawn at random from the ranges the task's shapes span")
      ->check(CLI::Range(0, 16))
      ->default_val(3);
  check->add_flag("--no-sanitizer", options.noSanitizer, "On a GPU, skip the emulator's sanitizer pass");
  check->add_option("--trials", options.trials, "Trials of fresh inputs per shape")->check(CLI::Range(1, 100))->default_val(3);
  check->add_option("--timing-rounds", options.timingRounds, "Interleaved timing rounds (5 repetitions each)")
      ->check(CLI::Range(1, 1000))
      ->default_val(10);
  check->add_option("--timeout-ms", options.launchTimeoutMs, "Watchdog deadline of one launch")->default_val(10000);
  check->add_flag("--no-bench", options.noBench, "Check correctness only");
  check->add_flag("--no-lint", options.noLint, "Go on past lint errors (to find lint false positives)");
  check->callback([&options] { options.exitCode = runCheck(options); });

  CLI::App *baseline = app.add_subcommand(
      "baseline", "Check every task's reference against itself on the GPU: the nvcc baseline table, with cuBLAS "
                  "beside the tasks that declare [vendor]");
  baseline->add_option("tasks", options.baselineTasks, "Task names (default: the whole suite)");
  baseline->add_option("--level", options.level, "Only tasks of this level")->check(CLI::Range(1, 3));
  baseline->add_option("--tasks-dir", options.tasksDirs, "Extra folder of tasks (repeatable)");
  baseline->add_option("--arch", options.checkArch, "Target architecture (default: the device's)");
  baseline->add_option("--seed", options.seed, "Seed of the random inputs")->default_val(1);
  baseline->add_option("--trials", options.trials, "Trials per shape")->check(CLI::Range(1, 100))->default_val(3);
  baseline->add_option("--timing-rounds", options.timingRounds, "Interleaved timing rounds")->default_val(10);
  baseline->add_option("--timeout-ms", options.launchTimeoutMs, "Watchdog deadline of one launch")->default_val(10000);
  baseline->add_option("--json", options.outputJson, "Also write every check result as JSON here");
  addFormat(baseline, options);
  baseline->callback([&options] { options.exitCode = runBaseline(options); });

  CLI::App *crosscheck = app.add_subcommand(
      "crosscheck", "Run every task's reference on the GPU and in the emulator with the same inputs; compare outputs");
  crosscheck->add_option("tasks", options.baselineTasks, "Task names (default: the whole suite)");
  crosscheck->add_option("--level", options.level, "Only tasks of this level")->check(CLI::Range(1, 3));
  crosscheck->add_option("--tasks-dir", options.tasksDirs, "Extra folder of tasks (repeatable)");
  crosscheck->add_option("--arch", options.checkArch, "Target architecture (default: sm_90)");
  crosscheck->add_option("--seed", options.seed, "Seed of the random inputs")->default_val(1);
  crosscheck->add_option("--trials", options.trials, "Input sets per shape")->check(CLI::Range(1, 100))->default_val(3);
  crosscheck->add_option("--timeout-ms", options.launchTimeoutMs, "Watchdog deadline of one launch")->default_val(60000);
  crosscheck->add_option("--json", options.outputJson, "Also write the comparison as JSON here");
  addFormat(crosscheck, options);
  crosscheck->callback([&options] { options.exitCode = runCrossCheck(options); });

  CLI::App *deviceCommand = app.add_subcommand("device", "Show the GPU and its measured ceilings (copy GB/s, FP32/FP16 GFLOP/s)");
  deviceCommand->add_flag("--refresh", options.refresh, "Measure again instead of using the cached figures");
  addFormat(deviceCommand, options);
  deviceCommand->callback([&options] { options.exitCode = runDevice(options); });

  CLI::App *reference = app.add_subcommand("reference", "Print the PTX that NVRTC makes of a task's reference kernel");
  reference->add_option("task", options.task, "Task name")->required();
  reference->add_option("--arch", options.checkArch, "Target architecture")->default_val("sm_90");
  reference->add_option("--tasks-dir", options.tasksDirs, "Extra folder of tasks (repeatable)");
  reference->callback([&options] { options.exitCode = runReference(options); });
}

} // namespace ptxforge::cli
