// `ptxforge lint`, `fmt`, `compile` and `extract`: the commands that read one
// PTX file (or a model's answer) and report on it.
#include "Commands.h"

#include "Output.h"
#include "prompt/Extract.h"
#include "ptx/Lint.h"
#include "ptx/Parser.h"
#include "ptx/Printer.h"
#include "support/InputReader.h"
#include "tasks/Expression.h"
#include "tasks/LaunchDirective.h"
#include "toolchain/Compiler.h"
#include "toolchain/Json.h"
#include "toolchain/Occupancy.h"
#include "toolchain/SassLoops.h"
#include "toolchain/SassStats.h"
#include "tasks/Reference.h"
#include "GateOptions.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <iostream>
#include <map>
#include <sstream>
#include <memory>

#ifndef PTXFORGE_VERSION
#error "PTXFORGE_VERSION comes from project(VERSION) through tools/ptxforge/CMakeLists.txt"
#endif

namespace ptxforge::cli {

std::string_view versionString() { return "ptxforge " PTXFORGE_VERSION; }

Result<Input> readInput(const std::string &path) {
  Result<size_t> limit = maxInputBytesFromEnvironment();
  if (!limit) return limit.error();
  Input input;
  input.name = path == "-" ? "<stdin>" : path;
  Result<std::string> text =
      path == "-" ? readStreamBounded(stdin, input.name, *limit) : readFileBounded(path, *limit);
  if (!text) return text.error();
  input.text = std::move(*text);
  return input;
}

namespace {

/// Options of lint, fmt, compile and extract.
struct FileCli {
  std::string input = "-";
  std::string format = "text";
  std::string arch = "sm_90"; ///< compile's target (no device involved)
  int optLevel = 3;
  int maxRegisters = 0;
  std::string backend = toolchain::backendName(toolchain::gateCompilerBackend()); ///< the gate's, by default
  bool noLint = false;
  bool noSass = false;
  bool noWarnings = false;
  std::string task;                  ///< compile: nvcc's build of this task's reference beside the candidate
  std::vector<std::string> tasksDirs; ///< compile --task: extra task folders
};

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
    // Named barriers the kernel uses (a resource); the SASS line counts BAR instructions.
    if (usage.barriers) out += fmt::format(", {} named barrier{}", usage.barriers, usage.barriers == 1 ? "" : "s");
    out += "\n";
  }
  if (const std::optional<toolchain::OtherBackendRegisters> &other = result.otherBackend; other && other->differs)
    out += fmt::format("  {} gives {} {} registers ({}: {}): {}\n", other->backend, result.kernelName, other->registers,
                       result.backend, other->primaryRegisters, other->reason);
  for (const std::string &advisory : result.advisories) out += "  advisory: " + advisory + "\n";
  return out;
}

std::string formatSassSummary(const toolchain::SassStats &stats) {
  const toolchain::SassCounts &total = stats.total;
  // "BAR instructions", not "barriers": the resource line above counts the named barriers the kernel uses.
  std::string out = fmt::format("sass (whole cubin): {} instructions, {} FFMA / {} FMUL / {} FADD, {} tensor-core ops, "
                                "{} BAR instructions, {} LDL / {} STL\n",
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

/// The loops of `kernel` in the SASS and its hot loop's mix, or nullopt with `why`.
struct KernelLoops {
  toolchain::FunctionLoops loops;
  std::string why; ///< when the loops are unavailable
};

KernelLoops kernelLoops(const toolchain::SassStats &stats, const std::string &kernel) {
  KernelLoops out;
  Result<std::vector<toolchain::FunctionLoops>> loops = toolchain::sassLoops(stats);
  if (!loops) {
    out.why = loops.error().message;
    return out;
  }
  const toolchain::FunctionLoops *function = toolchain::pickFunction(*loops, kernel);
  if (!function) {
    out.why = "no function in the SASS";
    return out;
  }
  out.loops = *function;
  return out;
}

std::string formatLoops(const KernelLoops &k) {
  if (!k.why.empty()) return "  loops: unavailable (" + k.why + ")\n";
  const toolchain::FunctionLoops &f = k.loops;
  int depth = 0, waits = 0;
  for (const toolchain::SassLoop &loop : f.loops) {
    depth = std::max(depth, loop.depth);
    waits += loop.waitLoop ? 1 : 0;
  }
  std::string out = fmt::format("  loops of {}: {} in {} basic blocks, nesting depth {}{}\n", f.function,
                                f.loops.size(), f.blocks, depth,
                                waits ? fmt::format(" ({} of them mbarrier wait loops)", waits) : std::string());
  if (!f.note.empty()) out += "  note: " + f.note + "\n";
  if (!f.hot) return out + "  hot loop: none (straight-line code)\n";
  const toolchain::SassLoop &hot = f.loops[static_cast<size_t>(*f.hot)];
  out += fmt::format("  hot loop (innermost, depth {}, instructions {}-{}): {}\n", hot.depth, hot.first, hot.last,
                     toolchain::describeMix(hot.mix));
  out += "    top opcodes: " + toolchain::topOpcodes(hot.mix) + "\n";
  return out;
}

std::string formatLoopDiff(const toolchain::HotLoopDiff &diff) {
  std::string out = "hot loop, candidate vs reference (opcode: candidate / reference):";
  if (diff.opcodes.empty()) out += " the same opcode counts";
  for (const auto &[op, counts] : diff.opcodes) out += fmt::format(" {} {}/{}", op, counts.first, counts.second);
  out += fmt::format("\n  aligned by opcode ({} alike):\n", diff.alike);
  size_t width = 10;
  for (const auto &[left, right] : diff.aligned) width = std::max(width, std::min<size_t>(left.size(), 48));
  for (const auto &[left, right] : diff.aligned) {
    std::string l = left.size() > 48 ? left.substr(0, 45) + "..." : left;
    out += fmt::format("    {:<{}} | {}\n", l.empty() ? "-" : l, width, right.empty() ? "-" : right);
  }
  return out;
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

int runLint(const FileCli &cli) {
  Result<Input> input = readInput(cli.input);
  if (!input) return fail(cli.format, input.error());
  std::vector<ptx::Diagnostic> diagnostics = withoutWarnings(ptx::lintSource(input->text), cli.noWarnings);
  if (cli.format == "json") {
    nlohmann::json out = {{"file", input->name},
                          {"ok", !ptx::hasErrors(diagnostics)},
                          {"diagnostics", toolchain::toJson(diagnostics)}};
    std::cout << out.dump(2) << '\n';
  } else if (diagnostics.empty()) {
    std::cout << input->name << (cli.noWarnings ? ": no errors\n" : ": no errors or warnings\n");
  } else {
    std::cout << ptx::formatDiagnosticsText(diagnostics, input->name, input->text) << summaryLine(diagnostics);
  }
  return ptx::hasErrors(diagnostics) ? kExitErrors : kExitOk;
}

int runFmt(const FileCli &cli) {
  Result<Input> input = readInput(cli.input);
  if (!input) return fail(cli.format, input.error());
  ptx::ParseResult parsed = ptx::parse(input->text);
  // Printing a partial module would silently drop what did not parse.
  const bool ok = parsed.diagnostics.empty();
  if (cli.format == "json") {
    nlohmann::json out = {{"file", input->name},
                          {"ok", ok},
                          {"diagnostics", toolchain::toJson(parsed.diagnostics)},
                          {"text", ok ? nlohmann::json(ptx::print(parsed.module)) : nlohmann::json(nullptr)}};
    std::cout << out.dump(2) << '\n';
  } else if (ok) {
    std::cout << ptx::print(parsed.module);
  } else {
    std::cerr << ptx::formatDiagnosticsText(parsed.diagnostics, input->name, input->text);
  }
  return ok ? kExitOk : kExitErrors;
}

/// compile's JSON and text when the lint stopped it.
int reportLintStop(const FileCli &cli, const Input &input, const std::vector<ptx::Diagnostic> &diagnostics) {
  if (cli.format == "json") {
    nlohmann::json out = {{"file", input.name},        {"ok", false},     {"stage", "lint"},
                          {"diagnostics", toolchain::toJson(diagnostics)}, {"resources", nullptr},
                          {"sass", nullptr},           {"compile_ms", nullptr}};
    std::cout << out.dump(2) << '\n';
  } else {
    std::cout << ptx::formatDiagnosticsText(diagnostics, input.name, input.text) << summaryLine(diagnostics)
              << "not compiled: fix the lint errors, or pass --no-lint\n";
  }
  return kExitErrors;
}

toolchain::CompileOptions compileOptionsFrom(const FileCli &cli) {
  toolchain::CompileOptions options;
  options.arch = cli.arch;
  options.optLevel = cli.optLevel;
  options.maxRegisters = cli.maxRegisters;
  options.backend = cli.backend == "ptxas" ? toolchain::CompileOptions::Backend::Ptxas
                                           : toolchain::CompileOptions::Backend::NvJitLink;
  return options;
}

/// The occupancy a module's `// @ptxforge` launch directive implies for its
/// first entry: the block (and dynamic shared memory) must be numbers; the
/// grid, when it is a number too, gives the waves. nullopt otherwise.
struct DirectiveOccupancy {
  std::array<int64_t, 3> block{1, 1, 1};
  int64_t dynamicShared = 0;
  std::optional<int64_t> gridBlocks;
  const toolchain::ResourceUsage *entry = nullptr;
  toolchain::Occupancy occupancy;
};

std::optional<DirectiveOccupancy> directiveOccupancy(const std::string &text, const toolchain::CompileResult &result) {
  if (!result.ok) return std::nullopt;
  std::optional<toolchain::SmLimits> limits = toolchain::smLimitsFor(result.arch);
  if (!limits) return std::nullopt;
  // No task here: every name on a directive line may be a shape symbol.
  std::vector<std::string> names;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("@ptxforge") == std::string::npos) continue;
    for (size_t at = 0; at < line.size();) {
      if (std::isalpha(static_cast<unsigned char>(line[at])) || line[at] == '_') {
        size_t end = at;
        while (end < line.size() && (std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_')) ++end;
        names.push_back(line.substr(at, end - at));
        at = end;
      } else {
        ++at;
      }
    }
  }
  if (names.empty()) return std::nullopt;
  tasks::LaunchDirectiveScan scan = tasks::parseLaunchDirectives(text, names);
  if (!scan.diagnostics.empty() || !scan.config.blockGiven) return std::nullopt;
  DirectiveOccupancy out;
  const std::map<std::string, int64_t> none;
  for (size_t i = 0; i < 3; ++i) {
    Result<int64_t> dim = tasks::evaluate(scan.config.block[i], none);
    if (!dim || *dim <= 0) return std::nullopt;
    out.block[i] = *dim;
  }
  if (scan.config.smemGiven) {
    Result<int64_t> smem = tasks::evaluate(scan.config.smem, none);
    if (!smem || *smem < 0) return std::nullopt;
    out.dynamicShared = *smem;
  }
  if (scan.config.gridGiven) {
    int64_t blocks = 1;
    bool known = true;
    for (size_t i = 0; i < 3 && known; ++i) {
      Result<int64_t> dim = tasks::evaluate(scan.config.grid[i], none);
      known = dim && *dim > 0;
      if (known) blocks *= *dim;
    }
    if (known) out.gridBlocks = blocks;
  }
  for (const toolchain::ResourceUsage &usage : result.functions)
    if (usage.isEntry && usage.registers >= 0) {
      out.entry = &usage;
      break;
    }
  if (!out.entry) return std::nullopt;
  out.occupancy = toolchain::computeOccupancy(*limits, out.entry->registers,
                                              static_cast<int>(out.block[0] * out.block[1] * out.block[2]),
                                              out.entry->sharedBytes, static_cast<int>(out.dynamicShared),
                                              out.gridBlocks.value_or(0));
  return out;
}

std::string formatDirectiveOccupancy(const DirectiveOccupancy &o) {
  return fmt::format("occupancy of {} for the launch directive's block {}x{}x{} ({} B dynamic shared): {}\n",
                     o.entry->function, o.block[0], o.block[1], o.block[2], o.dynamicShared,
                     toolchain::describe(o.occupancy));
}

nlohmann::json directiveOccupancyJson(const std::optional<DirectiveOccupancy> &o) {
  if (!o) return nullptr;
  const toolchain::Occupancy &x = o->occupancy;
  return {{"entry", o->entry->function},
          {"block", o->block},
          {"dynamic_shared_bytes", o->dynamicShared},
          {"grid_blocks", o->gridBlocks ? nlohmann::json(*o->gridBlocks) : nlohmann::json(nullptr)},
          {"registers", o->entry->registers},
          {"launchable", x.launchable},
          {"blocks_per_sm", x.blocksPerSm},
          {"warps_per_sm", x.warpsPerSm},
          {"occupancy", x.occupancy},
          {"limiter", x.limiter},
          {"waves", x.waves},
          {"sm_count", x.smCount}};
}

nlohmann::json loopsJson(const KernelLoops &k) {
  if (!k.why.empty()) return nlohmann::json{{"available", false}, {"reason", k.why}};
  return toolchain::toJson(k.loops);
}

/// The task's reference compiled as a candidate would be (same arch, options and backend).
struct ReferenceSide {
  toolchain::CompileResult compile;
  std::optional<toolchain::SassStats> sass;
  std::string sassUnavailable;
  std::optional<KernelLoops> loops;
};

Result<ReferenceSide> referenceSide(const FileCli &cli, bool withSass) {
  Result<tasks::Suite> suite = loadSuite(cli.tasksDirs);
  if (!suite) return suite.error();
  Result<const tasks::TaskSpec *> task = findTask(*suite, cli.task);
  if (!task) return task.error();
  Result<tasks::CompiledReference> built = tasks::compileReference(**task, cli.arch);
  if (!built) return makeError(built.error().kind, "the task's reference: " + built.error().message);
  toolchain::CompileOptions options = compileOptionsFrom(cli);
  options.entryName = (*task)->kernel;
  Result<toolchain::CompileResult> compiled = toolchain::compilePtx(built->ptx, options);
  if (!compiled) return compiled.error();
  if (!compiled->ok)
    return makeError(ErrorKind::Compile, "the task's reference did not compile: " + compiled->errorLog);
  ReferenceSide side;
  side.compile = std::move(*compiled);
  side.sassUnavailable = withSass ? "" : "disabled by --no-sass";
  if (withSass) {
    Result<toolchain::SassStats> stats = toolchain::sassStats(side.compile.cubin);
    if (stats) {
      side.sass = std::move(*stats);
      side.loops = kernelLoops(*side.sass, side.compile.kernelName);
    } else {
      side.sassUnavailable = render(stats.error());
    }
  }
  return side;
}

nlohmann::json referenceJson(const ReferenceSide &side) {
  nlohmann::json out = {{"backend", side.compile.backend},
                        {"kernel", side.compile.kernelName},
                        {"resources", toolchain::toJson(side.compile.resources)}};
  out["sass"] = side.sass ? toolchain::toJson(*side.sass)
                          : nlohmann::json{{"available", false}, {"reason", side.sassUnavailable}};
  if (side.sass) out["sass"]["loops"] = loopsJson(*side.loops);
  return out;
}

int runCompile(const FileCli &asked) {
  Result<Input> input = readInput(asked.input);
  if (!input) return fail(asked.format, input.error());
  const ptx::ParseResult parsed = ptx::parse(input->text);
  // `.target sm_90a` PTX compiles for sm_90a only: --arch sm_90 (the default) means that.
  FileCli cli = asked;
  cli.arch = ptx::compileArchFor(parsed.module, asked.arch);
  std::vector<ptx::Diagnostic> diagnostics;
  if (!cli.noLint) {
    // The lint is the cheaper gate; `--no-lint` asks the compiler anyway,
    // which is how lint false positives are found.
    diagnostics = withoutWarnings(ptx::lintParsed(parsed), cli.noWarnings);
    if (ptx::hasErrors(diagnostics)) return reportLintStop(cli, *input, diagnostics);
  }
  Result<toolchain::CompileResult> compiled = toolchain::compilePtx(input->text, compileOptionsFrom(cli));
  if (!compiled) return fail(cli.format, compiled.error(), kExitUsage, {{"file", input->name}});
  if (compiled->ok) {
    // The other backend's count beside the one asked for (docs/register-counts.md).
    Result<toolchain::OtherBackendRegisters> other =
        toolchain::compareWithOtherBackend(input->text, compileOptionsFrom(cli), *compiled);
    compiled->otherBackend = other ? *other : toolchain::OtherBackendRegisters{
        cli.backend == "ptxas" ? "nvjitlink" : "ptxas", -1, -1, false, "not compiled: " + other.error().message, false};
  }
  const toolchain::CompileResult &result = *compiled;
  diagnostics.insert(diagnostics.end(), result.diagnostics.begin(), result.diagnostics.end());
  ptx::sortByLocation(diagnostics);

  const std::optional<DirectiveOccupancy> occupancy = directiveOccupancy(input->text, result);
  std::optional<toolchain::SassStats> sass;
  std::string sassUnavailable = cli.noSass ? "disabled by --no-sass" : "";
  if (result.ok && !cli.noSass) {
    Result<toolchain::SassStats> stats = toolchain::sassStats(result.cubin);
    if (stats)
      sass = *stats;
    else
      sassUnavailable = render(stats.error());
  }
  std::optional<KernelLoops> loops;
  if (sass) loops = kernelLoops(*sass, result.kernelName);
  // --task: nvcc's build of the task's reference (NVRTC's PTX, the same backend), side by side.
  std::optional<ReferenceSide> reference;
  if (!cli.task.empty() && result.ok) {
    Result<ReferenceSide> built = referenceSide(cli, !cli.noSass);
    if (!built) return fail(cli.format, built.error(), kExitUsage, {{"file", input->name}, {"task", cli.task}});
    reference = std::move(*built);
  }
  std::optional<toolchain::HotLoopDiff> diff;
  if (loops && loops->loops.hot && reference && reference->loops && reference->loops->loops.hot)
    diff = toolchain::diffHotLoops(loops->loops.loops[static_cast<size_t>(*loops->loops.hot)],
                                   reference->loops->loops.loops[static_cast<size_t>(*reference->loops->loops.hot)]);
  if (cli.format == "json") {
    nlohmann::json out = toolchain::toJson(result);
    out["file"] = input->name;
    out["stage"] = "compile";
    out["diagnostics"] = toolchain::toJson(diagnostics);
    out["sass"] = sass ? toolchain::toJson(*sass) : nlohmann::json{{"available", false}, {"reason", sassUnavailable}};
    if (sass) out["sass"]["loops"] = loopsJson(*loops);
    out["occupancy"] = directiveOccupancyJson(occupancy);
    if (!cli.task.empty()) {
      out["reference"] = reference ? referenceJson(*reference) : nlohmann::json(nullptr);
      out["hot_loop_diff"] = diff ? toolchain::toJson(*diff) : nlohmann::json(nullptr);
    }
    std::cout << out.dump(2) << '\n';
  } else {
    std::cout << ptx::formatDiagnosticsText(diagnostics, input->name, input->text) << formatCompileSummary(result);
    if (occupancy) std::cout << formatDirectiveOccupancy(*occupancy);
    if (sass)
      std::cout << formatSassSummary(*sass) << formatLoops(*loops);
    else if (result.ok)
      std::cout << "sass: unavailable (" << sassUnavailable << ")\n";
    if (reference) {
      std::cout << "\nreference of " << cli.task << " (NVRTC's PTX of reference.cu, " << reference->compile.backend
                << "):\n" << formatCompileSummary(reference->compile);
      if (reference->sass)
        std::cout << formatSassSummary(*reference->sass) << formatLoops(*reference->loops);
      else
        std::cout << "sass: unavailable (" << reference->sassUnavailable << ")\n";
      if (diff) std::cout << "\n" << formatLoopDiff(*diff);
    }
  }
  return result.ok ? kExitOk : kExitErrors;
}

/// `ptxforge extract FILE`: the PTX module of a model's answer, as solve takes it.
int runExtract(const FileCli &cli) {
  Result<Input> input = readInput(cli.input);
  if (!input) return fail(cli.format, input.error());
  Result<prompt::ExtractedPtx> extracted = prompt::extractPtx(input->text);
  if (!extracted) return fail(cli.format, extracted.error(), kExitErrors, {{"file", input->name}});
  if (cli.format == "json") {
    nlohmann::json out = {{"file", input->name},
                          {"ptx", extracted->ptx},
                          {"source", prompt::ptxSourceName(extracted->source)},
                          {"first_line", extracted->firstLine},
                          {"last_line", extracted->lastLine},
                          {"candidate_blocks", extracted->candidateBlocks},
                          {"notes", extracted->notes}};
    std::cout << out.dump(2) << '\n';
  } else {
    std::cout << extracted->ptx;
    for (const std::string &note : extracted->notes) fmt::print(stderr, "ptxforge: note: {}\n", note);
  }
  return kExitOk;
}

void addInput(CLI::App *command, FileCli &cli, const char *what = "PTX file to read, or - for standard input") {
  command->add_option("input", cli.input, what)->capture_default_str();
}

} // namespace

void registerCommands(CLI::App &app, int &exitCode) {
  // Each command's options live as long as the callbacks that hold them.
  auto lintCli = std::make_shared<FileCli>();
  CLI::App *lint = app.add_subcommand("lint", "Parse and statically check a PTX module");
  addInput(lint, *lintCli);
  addFormatFlag(lint, lintCli->format);
  lint->add_flag("--no-warnings", lintCli->noWarnings, "Report errors only");
  lint->callback([lintCli, &exitCode] { exitCode = runLint(*lintCli); });

  auto fmtCli = std::make_shared<FileCli>();
  CLI::App *fmtCommand = app.add_subcommand("fmt", "Print the module in ptxforge's normalized layout");
  addInput(fmtCommand, *fmtCli);
  addFormatFlag(fmtCommand, fmtCli->format);
  fmtCommand->callback([fmtCli, &exitCode] { exitCode = runFmt(*fmtCli); });

  auto compileCli = std::make_shared<FileCli>();
  FileCli &c = *compileCli;
  CLI::App *compile = app.add_subcommand("compile", "Lint, then compile PTX to a cubin and report resources and SASS");
  addInput(compile, c);
  addFormatFlag(compile, c.format);
  compile->add_option("--arch", c.arch,
                      "Target GPU architecture, e.g. sm_80, sm_90, sm_90a (PTX with .target sm_90a is compiled for "
                      "sm_90a when sm_90 is asked for)")
      ->envname("PTXFORGE_ARCH")
      ->capture_default_str();
  compile->add_option("--opt", c.optLevel, "ptxas optimization level")->check(CLI::Range(0, 3))->capture_default_str();
  compile->add_option("--maxrregcount", c.maxRegisters, "Register limit per thread (0: no limit)")
      ->check(CLI::Range(0, 255))
      ->capture_default_str();
  compile->add_option("--backend", c.backend,
                      "ptxas (a whole program, what nvcc -O3 builds) or nvjitlink (relocatable code); both run in "
                      "the compile worker. Default: the gate's compiler ($PTXFORGE_GATE_COMPILER, else ptxas)")
      ->check(CLI::IsMember({"nvjitlink", "ptxas"}))
      ->envname("PTXFORGE_BACKEND")
      ->capture_default_str();
  compile->add_flag("--no-lint", c.noLint, "Compile even when the lint finds errors");
  compile->add_flag("--no-sass", c.noSass, "Skip SASS statistics (nvdisasm)");
  compile->add_option("--task", c.task,
                      "Compile this task's reference too (NVRTC's PTX, same arch and backend) and show its resources, "
                      "SASS loops and hot loop beside the candidate's, with a diff of the two hot loops");
  compile->add_option("--tasks-dir", c.tasksDirs, "Extra task folders for --task (also $PTXFORGE_TASKS_DIR)");
  compile->add_flag("--no-warnings", c.noWarnings, "Report errors only");
  compile->callback([compileCli, &exitCode] { exitCode = runCompile(*compileCli); });

  auto extractCli = std::make_shared<FileCli>();
  CLI::App *extract = app.add_subcommand(
      "extract", "Print the PTX module of a model's answer (markdown, fences, chatter) as solve takes it");
  addInput(extract, *extractCli, "The answer to read, or - for standard input");
  addFormatFlag(extract, extractCli->format);
  extract->callback([extractCli, &exitCode] { exitCode = runExtract(*extractCli); });
}

} // namespace ptxforge::cli
