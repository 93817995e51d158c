// Benchmark of the first two gate stages over a varied PTX set (the nvcc
// corpus): parse+lint time per KB, and compile time in-process (nvJitLink)
// against a ptxas subprocess. Prints a Markdown table and writes JSON.
//
//   ptxforge_bench --manifest build/tests/corpus/corpus_manifest.tsv
//       --json docs/results/frontend-bench.json [--lint-reps 21] [--compile-reps 7] [--compile-files 12]
//       [--extra examples/saxpy.ptx]
#include "ptx/Lint.h"
#include "ptx/Parser.h"
#include "support/Stats.h"
#include "toolchain/Compiler.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using ptxforge::Spread;
using ptxforge::spreadOf;
using Clock = std::chrono::steady_clock;

struct Sample {
  std::string name;
  std::string arch;
  std::string text;
};

nlohmann::json toJson(const Spread &s) {
  return {{"median", s.median}, {"p10", s.p10}, {"p90", s.p90}, {"min", s.min}, {"max", s.max}};
}

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::vector<Sample> readManifest(const std::string &path) {
  std::vector<Sample> samples;
  std::ifstream manifest(path);
  std::string line;
  while (std::getline(manifest, line)) {
    std::istringstream fields(line);
    std::string config, kernel, target, file;
    if (!std::getline(fields, config, '\t') || !std::getline(fields, kernel, '\t') ||
        !std::getline(fields, target, '\t') || !std::getline(fields, file, '\t'))
      continue;
    std::ifstream input(file);
    if (!input) continue;
    std::ostringstream text;
    text << input.rdbuf();
    samples.push_back({kernel + "/" + config, target, text.str()});
  }
  return samples;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"ptxforge front-end benchmark: parse+lint and compile times over a PTX set"};
  std::string manifestPath, jsonPath;
  int lintReps = 21, compileReps = 7, compileFiles = 12;
  app.add_option("--manifest", manifestPath, "TSV manifest of PTX files (config, kernel, target, path)")->required();
  app.add_option("--json", jsonPath, "Write the results as JSON here");
  app.add_option("--lint-reps", lintReps, "Repetitions per file for parse+lint")->check(CLI::Range(1, 1000));
  app.add_option("--compile-reps", compileReps, "Repetitions per file and backend for compile")->check(CLI::Range(1, 100));
  app.add_option("--compile-files", compileFiles, "How many files to compile (spread over the set)")->check(CLI::Range(1, 10000));
  std::vector<std::string> extraFiles;
  app.add_option("--extra", extraFiles, "Further PTX files to compile first (e.g. a small single kernel)");
  CLI11_PARSE(app, argc, argv);

  std::vector<Sample> samples = readManifest(manifestPath);
  if (samples.empty()) {
    fmt::print(stderr, "no PTX files could be read from {}\n", manifestPath);
    return 2;
  }

  // Parse+lint: per-file median time, normalized per KB of source.
  std::vector<double> usPerKb, parseOnlyUsPerKb;
  size_t totalBytes = 0;
  for (const Sample &sample : samples) {
    std::vector<double> lintTimes, parseTimes;
    for (int rep = 0; rep < lintReps; ++rep) {
      Clock::time_point start = Clock::now();
      ptxforge::ptx::ParseResult parsed = ptxforge::ptx::parse(sample.text);
      parseTimes.push_back(millisecondsSince(start));
      std::vector<ptxforge::ptx::Diagnostic> diagnostics = ptxforge::ptx::lint(parsed.module);
      lintTimes.push_back(millisecondsSince(start));
      if (diagnostics.size() > 1000000) std::cerr << ""; // keep the result alive
    }
    double kb = static_cast<double>(sample.text.size()) / 1024.0;
    usPerKb.push_back(spreadOf(lintTimes).median * 1000.0 / kb);
    parseOnlyUsPerKb.push_back(spreadOf(parseTimes).median * 1000.0 / kb);
    totalBytes += sample.text.size();
  }
  Spread lintSpread = spreadOf(usPerKb), parseSpread = spreadOf(parseOnlyUsPerKb);

  // Compile: the same files through both backends, interleaved per repetition
  // so drift affects both alike. The first nvJitLink call of the process pays
  // library initialization; one warm-up compile runs before timing.
  std::vector<Sample> extras;
  for (const std::string &path : extraFiles) {
    std::ifstream input(path);
    if (!input) {
      fmt::print(stderr, "cannot read {}\n", path);
      return 2;
    }
    std::ostringstream text;
    text << input.rdbuf();
    std::string name = path.substr(path.find_last_of('/') + 1);
    extras.push_back({name, "sm_90", text.str()});
  }
  std::vector<const Sample *> compileSet;
  for (const Sample &extra : extras) compileSet.push_back(&extra);
  size_t step = std::max<size_t>(1, samples.size() / static_cast<size_t>(compileFiles));
  for (size_t i = 0; i < samples.size() && compileSet.size() < extras.size() + static_cast<size_t>(compileFiles); i += step)
    compileSet.push_back(&samples[i]);
  ptxforge::toolchain::CompileOptions warmOptions;
  warmOptions.arch = compileSet.front()->arch.rfind("sm_", 0) == 0 ? compileSet.front()->arch : "sm_90";
  (void)ptxforge::toolchain::compilePtx(compileSet.front()->text, warmOptions);

  nlohmann::json compileRows = nlohmann::json::array();
  std::vector<double> ratios;
  std::vector<std::string> tableRows;
  for (const Sample *sample : compileSet) {
    std::vector<double> inProcess, subprocess;
    ptxforge::toolchain::CompileOptions options;
    options.arch = sample->arch.rfind("sm_", 0) == 0 ? sample->arch : "sm_90";
    bool ok = true;
    for (int rep = 0; rep < compileReps && ok; ++rep) {
      for (auto backend : {ptxforge::toolchain::CompileOptions::Backend::NvJitLink,
                           ptxforge::toolchain::CompileOptions::Backend::Ptxas}) {
        options.backend = backend;
        Clock::time_point start = Clock::now();
        auto result = ptxforge::toolchain::compilePtx(sample->text, options);
        double ms = millisecondsSince(start);
        if (!result || !result->ok) {
          ok = false;
          break;
        }
        (backend == ptxforge::toolchain::CompileOptions::Backend::NvJitLink ? inProcess : subprocess).push_back(ms);
      }
    }
    if (!ok) {
      fmt::print(stderr, "skipping {}: it does not compile for {}\n", sample->name, options.arch);
      continue;
    }
    Spread a = spreadOf(inProcess), b = spreadOf(subprocess);
    ratios.push_back(b.median / a.median);
    compileRows.push_back({{"file", sample->name}, {"arch", options.arch}, {"bytes", sample->text.size()},
                           {"nvjitlink_ms", toJson(a)}, {"ptxas_ms", toJson(b)}});
    tableRows.push_back(fmt::format("| {} | {} | {:.1f} | {:.2f} [{:.2f}, {:.2f}] | {:.2f} [{:.2f}, {:.2f}] | {:.2f}x |",
                                    sample->name, options.arch, static_cast<double>(sample->text.size()) / 1024.0,
                                    a.median, a.p10, a.p90, b.median, b.p10, b.p90, b.median / a.median));
  }

  fmt::print("## Parse + lint ({} files, {:.0f} KB, {} repetitions each)\n\n", samples.size(),
             static_cast<double>(totalBytes) / 1024.0, lintReps);
  fmt::print("| stage | median µs/KB | p10 | p90 | min | max |\n|---|---|---|---|---|---|\n");
  fmt::print("| parse | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |\n", parseSpread.median, parseSpread.p10,
             parseSpread.p90, parseSpread.min, parseSpread.max);
  fmt::print("| parse + lint | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |\n\n", lintSpread.median, lintSpread.p10,
             lintSpread.p90, lintSpread.min, lintSpread.max);
  fmt::print("## Compile ({} repetitions per backend, interleaved; ms, median [p10, p90])\n\n", compileReps);
  fmt::print("| file | arch | KB | nvJitLink in-process | ptxas subprocess | ptxas / nvJitLink |\n|---|---|---|---|---|---|\n");
  for (const std::string &row : tableRows) fmt::print("{}\n", row);
  Spread ratioSpread = spreadOf(ratios);
  fmt::print("\nptxas/nvJitLink time ratio over files: median {:.2f}x [p10 {:.2f}, p90 {:.2f}]\n", ratioSpread.median,
             ratioSpread.p10, ratioSpread.p90);

  if (!jsonPath.empty()) {
    nlohmann::json out = {{"files", samples.size()},
                          {"total_bytes", totalBytes},
                          {"lint_reps", lintReps},
                          {"compile_reps", compileReps},
                          {"parse_us_per_kb", toJson(parseSpread)},
                          {"parse_lint_us_per_kb", toJson(lintSpread)},
                          {"compile", compileRows},
                          {"ptxas_over_nvjitlink", toJson(ratioSpread)}};
    std::ofstream(jsonPath) << out.dump(2) << '\n';
  }
  return 0;
}
