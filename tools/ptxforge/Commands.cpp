// Implementation of the ptxforge subcommands.
#include "Commands.h"

#include "ptx/Lint.h"
#include "ptx/Parser.h"
#include "ptx/Printer.h"
#include "toolchain/Compiler.h"
#include "toolchain/Json.h"
#include "toolchain/SassStats.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
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

std::optional<Input> readInput(const std::string &path) {
  Input input;
  if (path == "-") {
    input.name = "<stdin>";
    input.text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return input;
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    fmt::print(stderr, "ptxforge: error: cannot open '{}'\n", path);
    return std::nullopt;
  }
  std::ostringstream buffer;
  buffer << file.rdbuf();
  if (file.bad()) {
    fmt::print(stderr, "ptxforge: error: cannot read '{}'\n", path);
    return std::nullopt;
  }
  input.name = path;
  input.text = buffer.str();
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
}

} // namespace ptxforge::cli
