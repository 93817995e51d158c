// `ptxforge corpus build` and `corpus stats`: flags, the progress line, the
// gate as the scorer (the corpus library sits below verify), and the output.
#include "CorpusCommand.h"

#include "Commands.h"
#include "GateOptions.h"
#include "Output.h"
#include "corpus/Builder.h"
#include "corpus/CorpusStats.h"
#include "ptx/Ast.h"
#include "serve/Gate.h"
#include "support/InputReader.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <unistd.h>

namespace ptxforge::cli {

namespace {

struct CorpusBuildCli {
  std::vector<std::string> sources;
  std::string out;
  std::string config;
  std::string cache;
  unsigned jobs = 0;
  bool score = false;
  bool quiet = false;
  GateFlags gate;
};

struct CorpusStatsCli {
  std::string dir;
  std::string format = "text";
};

std::string formatDuration(double seconds) {
  if (seconds < 60) return fmt::format("{:.0f}s", seconds);
  if (seconds < 3600) return fmt::format("{}m{:02}s", static_cast<int>(seconds) / 60, static_cast<int>(seconds) % 60);
  return fmt::format("{}h{:02}m", static_cast<int>(seconds) / 3600, (static_cast<int>(seconds) / 60) % 60);
}

/// The progress line on stderr: redrawn in place on a terminal, else a line
/// every few seconds (and the last), so that CI logs stay short.
class ProgressLine {
public:
  explicit ProgressLine(bool quiet) : quiet_(quiet), terminal_(::isatty(STDERR_FILENO) == 1) {}

  void update(const corpus::BuildProgress &progress) {
    if (quiet_) return;
    const auto now = std::chrono::steady_clock::now();
    const bool last = progress.unitsDone == progress.unitsTotal;
    const double interval = terminal_ ? 0.2 : 5.0;
    if (!last && shown_ && std::chrono::duration<double>(now - lastShown_).count() < interval) return;
    shown_ = true;
    lastShown_ = now;
    const double rate = progress.elapsedSeconds > 0 ? progress.unitsDone / progress.elapsedSeconds : 0;
    const double eta = rate > 0 ? (progress.unitsTotal - progress.unitsDone) / rate : 0;
    std::string line = fmt::format("corpus: {}/{} compiles (compiled {}, cached {}), {:.1f}/s, {} {}",
                                   progress.unitsDone, progress.unitsTotal, progress.compiled, progress.cached, rate,
                                   last ? "took" : "ETA", formatDuration(last ? progress.elapsedSeconds : eta));
    if (terminal_) std::fprintf(stderr, "\r%-100s%s", line.c_str(), last ? "\n" : "");
    else std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  }

private:
  bool quiet_;
  bool terminal_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point lastShown_;
};

/// Whether a kernel compiled for `target` runs on a device of `deviceArch`:
/// the same or a newer SM, and an arch-specific (`a`) target only on its own SM.
bool runsOn(const std::string &target, const std::string &deviceArch) {
  const uint32_t targetSm = ptx::targetSmNumber(target), deviceSm = ptx::targetSmNumber(deviceArch);
  if (!targetSm || !deviceSm) return false;
  if (target.back() == 'a' || target.back() == 'f') return targetSm == deviceSm;
  return targetSm <= deviceSm;
}

int runCorpusBuild(const CorpusBuildCli &cli) {
  const std::string &format = cli.gate.format;
  corpus::BuildOptions options;
  options.inputs = cli.sources;
  options.outDir = cli.out;
  options.cacheDir = cli.cache;
  options.threads = cli.jobs;
  if (!cli.config.empty()) {
    Result<Input> text = readInput(cli.config);
    if (!text) return fail(format, text.error());
    Result<corpus::CorpusConfig> config = corpus::parseConfig(text->text, text->name);
    if (!config) return fail(format, config.error());
    options.config = std::move(*config);
    options.configName = cli.config;
  }

  // Kernels that share a task's kernel name and parameter count are that
  // task's candidates (the tasks' own references among them).
  Result<tasks::Suite> suite = loadSuite(cli.gate.tasksDirs);
  if (!suite) return fail(format, suite.error());
  options.matchTask = [&](const std::string &entry, int parameterCount) -> std::string {
    for (const tasks::TaskSpec &task : suite->tasks)
      if (task.kernel == entry && static_cast<int>(task.params.size()) == parameterCount) return task.name;
    return {};
  };

  std::unique_ptr<serve::Gate> gate;
  if (cli.score) {
    gate = std::make_unique<serve::Gate>(
        serve::Gate::Options{.executor = cli.gate.executor, .deviceOrdinal = 0, .sanitizer = false});
    if (!gate->hasExecutor()) return fail(format, "--score needs an executor: " + gate->device());
    if (!cli.quiet) fmt::print(stderr, "corpus: scoring kernels that match a task on {}\n", gate->device());
    options.scorer = [&](const corpus::Row &row) -> nlohmann::ordered_json {
      const std::string target = row["target"].get<std::string>();
      if (!runsOn(target, gate->arch())) return nullptr;
      Result<const tasks::TaskSpec *> task = findTask(*suite, row["task"].get<std::string>());
      if (!task) return nullptr;
      serve::CheckRequest request;
      request.task = (*task)->name;
      request.text = row["ptx"].get<std::string>();
      request.trials = cli.gate.trials;
      request.timingRounds = cli.gate.timingRounds;
      request.launchTimeoutMs = cli.gate.launchTimeoutMs;
      request.sanitizer = false;
      // An arch-specific target (sm_90a) compiles only as itself; the device (sm_90) runs it.
      if (target.back() == 'a' || target.back() == 'f') request.arch = target;
      Result<serve::AnswerCheck> checked = gate->check(**task, request);
      corpus::Row score = corpus::unscoredScore();
      score["scored"] = true;
      score["task"] = (*task)->name;
      score["executor"] = gate->device();
      if (!checked) {
        score["verdict"] = "error";
        score["summary"] = render(checked.error());
        return score;
      }
      const verify::CheckResult &result = checked->result;
      score["verdict"] = verify::verdictName(result.verdict);
      score["stage"] = verify::stageName(result.stage);
      // Zero when nothing was timed (the emulator, or a verdict before the timing stage).
      if (const verify::BenchmarkReport *headline = verify::headlineBenchmark(result)) {
        score["speedup"] = headline->speedup;
        score["median_ms"] = headline->candidate.median;
        score["baseline_ms"] = headline->baseline.median;
      }
      score["summary"] = result.summary;
      if (!cli.quiet) fmt::print(stderr, "corpus: score {} [{}] {}: {}\n", row["entry"].get<std::string>(),
                                 row["flags"].get<std::string>(), target, result.summary);
      return score;
    };
  }

  ProgressLine line(cli.quiet || format == "json");
  options.progress = [&](const corpus::BuildProgress &progress) { line.update(progress); };
  Result<corpus::BuildSummary> summary = corpus::buildCorpus(options);
  if (!summary) return fail(format, summary.error());

  if (format == "json") {
    nlohmann::ordered_json out = summary->toJson();
    out["out"] = cli.out;
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  fmt::print("corpus: {} source files ({} __global__), {} compiles (compiled {}, cached {}) in {:.1f}s\n",
             summary->sources, summary->globalFunctions, summary->units, summary->compiled, summary->cached,
             summary->seconds);
  fmt::print("{:<14} {:>8} {:>8} {:>8}\n", "stage", "in", "dropped", "kept");
  for (const corpus::StageCount &stage : summary->stages)
    fmt::print("{:<14} {:>8} {:>8} {:>8}{}{}\n", stage.stage, stage.in, stage.dropped, stage.kept(),
               stage.counts == "units" ? "  (compiles)" : "", stage.enabled ? "" : "  (off)");
  if (!summary->sassNote.empty()) fmt::print("SASS statistics skipped: {}\n", summary->sassNote);
  if (cli.score) fmt::print("scored {} rows through the gate\n", summary->scored);
  fmt::print("{} rows in {} shard{} under {}/data; card {}/README.md; dropped rows in {}/rejected.jsonl\n",
             summary->rows, summary->shards, summary->shards == 1 ? "" : "s", cli.out, cli.out, cli.out);
  return kExitOk;
}

int runCorpusStats(const CorpusStatsCli &cli) {
  Result<corpus::CorpusStats> stats = corpus::corpusStats(cli.dir);
  if (!stats) return fail(cli.format, stats.error());
  if (cli.format == "json") std::cout << stats->toJson().dump(2) << "\n";
  else std::cout << stats->toText();
  return kExitOk;
}

} // namespace

void registerCorpusCommand(CLI::App &app, int &exitCode) {
  CLI::App *corpusCommand = app.add_subcommand("corpus", "CUDA -> PTX training corpora: build one, describe one");
  corpusCommand->require_subcommand(1);

  auto buildCli = std::make_shared<CorpusBuildCli>();
  CLI::App *build = corpusCommand->add_subcommand(
      "build", "Compile every __global__ kernel of CUDA files/folders under a flag matrix into sharded JSONL");
  build->add_option("sources", buildCli->sources, "CUDA files, or folders searched for .cu files")->required();
  build->add_option("--out", buildCli->out, "The corpus folder (data/, README.md, build.json, rejected.jsonl, cache/)")
      ->required();
  build->add_option("--config", buildCli->config, "TOML: [matrix] flags/targets, [filters], [dedupe], [output] "
                                                  "(docs/corpus.md); default: the built-in matrix");
  build->add_option("--cache", buildCli->cache, "The compile cache (default: OUT/cache)");
  build->add_option("-j,--jobs", buildCli->jobs, "Compiles in parallel (default: one per core)")
      ->check(CLI::Range(1u, 1024u));
  build->add_flag("--score", buildCli->score,
                  "Measure kernels that match a task through the gate (the emulator at small shapes without a GPU)");
  build->add_flag("-q,--quiet", buildCli->quiet, "No progress line");
  addGateFlags(build, buildCli->gate, kTrialsFlag | kTimingRoundsFlag | kTimeoutFlag | kExecutorFlag | kTasksDirFlag |
                                          kFormatFlag);
  build->callback([buildCli, &exitCode] { exitCode = runCorpusBuild(*buildCli); });

  auto statsCli = std::make_shared<CorpusStatsCli>();
  CLI::App *stats = corpusCommand->add_subcommand(
      "stats", "Counts, PTX-size and register distributions, opcode coverage of a built corpus");
  stats->add_option("dir", statsCli->dir, "The corpus folder (the --out of corpus build)")->required();
  addFormatFlag(stats, statsCli->format);
  stats->callback([statsCli, &exitCode] { exitCode = runCorpusStats(*statsCli); });
}

} // namespace ptxforge::cli
