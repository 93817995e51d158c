// Task audit (Audit.h): the reference run on the task's own inputs and on
// perturbed ones, its outputs tested for the degeneracies that let a wrong
// kernel pass, and the task's mutants run through the gate.
#include "verify/Audit.h"
#include "verify/TensorMapArgument.h"

#include "tasks/Compare.h"
#include "tasks/Expression.h"
#include "tasks/Inputs.h"
#include "tasks/LaunchDirective.h"
#include "tasks/Reference.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace ptxforge::verify {

namespace {

/// "Most elements" for near-zero: a kernel that writes zeros matches at least
/// this fraction of the output.
constexpr double kMostFraction = 0.9;
/// A floating scalar is scaled by this much to see whether it matters.
constexpr double kScalarScale = 1.1;

/// An input whose generated values depend on the seed (const, iota and
/// index-mod do not: re-drawing them changes nothing, so they are not audited).
bool isSeededInput(const tasks::ParamSpec &param) {
  if (!param.isPointer || param.role == tasks::ParamRole::Output) return false;
  switch (param.init.distribution) {
  case tasks::InitDistribution::Uniform:
  case tasks::InitDistribution::Normal: return true;
  case tasks::InitDistribution::Int: return param.init.max > param.init.min;
  default: return false;
  }
}

/// The tolerance an output is compared with; exact integers get 0 and 0.
tasks::Tolerance outputTolerance(const tasks::TaskSpec &task, const tasks::ParamSpec &param) {
  tasks::Tolerance tolerance = tasks::toleranceFor(task, param.type);
  if (!tasks::isFloatingType(param.type) && !tolerance.atolGiven) tolerance.atol = tolerance.rtol = 0;
  return tolerance;
}

/// How one run perturbs the task's inputs: a seed per parameter and a scale
/// per floating scalar.
struct Perturbation {
  std::vector<uint64_t> seeds;
  std::vector<double> scalarScales;
};

/// Outputs of one reference run, indexed like task.params (empty for non-outputs).
using Outputs = std::vector<std::vector<uint8_t>>;

/// Runs the loaded reference on one shape with the inputs a Perturbation says.
class ReferenceRunner {
public:
  ReferenceRunner(const tasks::TaskSpec &task, exec::Executor &executor, exec::KernelHandle kernel,
                  uint32_t timeoutMs)
      : task_(task), executor_(executor), kernel_(kernel), timeoutMs_(timeoutMs) {}

  Result<Outputs> run(const tasks::Shape &shape, int trial, const Perturbation &perturbation) {
    std::vector<exec::DeviceBuffer> buffers(task_.params.size());
    std::vector<uint64_t> bytes(task_.params.size(), 0);
    exec::KernelArgs args;
    for (size_t i = 0; i < task_.params.size(); ++i) {
      const tasks::ParamSpec &param = task_.params[i];
      if (param.tensorMap) { // over an earlier parameter's buffer, made above
        Result<exec::TensorMapBytes> map = encodeTensorMapArgument(executor_, task_, param, shape,
                                                                   buffers[param.tensorMap->bufferIndex].handle(), 0);
        if (!map) return map.error();
        args.raw(map->data(), map->size(), exec::kTensorMapAlignment);
        continue;
      }
      if (!param.isPointer) {
        tasks::ParamSpec scaled = param;
        if (scaled.floatValue) *scaled.floatValue *= perturbation.scalarScales[i];
        Result<std::vector<std::byte>> value = tasks::scalarArgument(scaled, shape);
        if (!value) return value.error();
        args.raw(value->data(), value->size(), value->size());
        continue;
      }
      Result<int64_t> count = tasks::evaluate(param.count, shape);
      if (!count) return count.error();
      bytes[i] = static_cast<uint64_t>(*count) * tasks::elementSize(param.type);
      Result<exec::DeviceBuffer> buffer = executor_.allocateBuffer(std::max<uint64_t>(1, bytes[i]));
      if (!buffer) return buffer.error();
      if (param.role == tasks::ParamRole::Output) {
        if (Result<void> ok = executor_.memset(buffer->handle(), 0, 0, std::max<uint64_t>(1, bytes[i])); !ok)
          return ok.error();
      } else if (bytes[i]) {
        std::vector<std::byte> data = tasks::generateInput(param, *count, perturbation.seeds[i], trial);
        if (Result<void> ok = executor_.copyToDevice(buffer->handle(), 0, data.data(), data.size()); !ok)
          return ok.error();
      }
      args.buffer(buffer->handle());
      buffers[i] = std::move(*buffer);
    }
    Result<tasks::ResolvedLaunch> launch = tasks::resolveLaunch(tasks::LaunchConfig{}, task_, shape);
    if (!launch) return launch.error();
    exec::LaunchConfig config;
    config.block = {launch->block[0], launch->block[1], launch->block[2]};
    config.grid = {launch->grid[0], launch->grid[1], launch->grid[2]};
    config.dynamicSharedBytes = launch->smem;
    config.timeoutMs = timeoutMs_;
    if (Result<void> ran = executor_.launch(kernel_, config, args.pack()); !ran)
      return makeError(ErrorKind::Internal, fmt::format("the reference of '{}' failed on {}: {}", task_.name,
                                                        tasks::compactShape(task_, shape), render(ran.error())));
    (void)executor_.takeFindings();
    Outputs outputs(task_.params.size());
    for (size_t i = 0; i < task_.params.size(); ++i) {
      if (!task_.params[i].isOutput()) continue;
      outputs[i].resize(bytes[i]);
      if (bytes[i])
        if (Result<void> ok = executor_.copyToHost(outputs[i].data(), buffers[i].handle(), 0, bytes[i]); !ok)
          return ok.error();
    }
    return outputs;
  }

private:
  const tasks::TaskSpec &task_;
  exec::Executor &executor_;
  exec::KernelHandle kernel_;
  uint32_t timeoutMs_;
};

/// Where one degeneracy held, over the audited (shape, trial) runs.
struct Tally {
  AuditFindingKind kind;
  std::string subject;
  std::vector<std::string> shapes; ///< distinct shapes it held on, in order
  int held = 0;
  std::string firstDetail;
};

class Tallies {
public:
  /// Records whether (kind, subject) held on one run.
  void record(AuditFindingKind kind, const std::string &subject, bool held, const std::string &shape,
              const std::string &detail) {
    auto key = std::make_pair(static_cast<int>(kind), subject);
    auto [it, inserted] = index_.try_emplace(key, tallies_.size());
    if (inserted) tallies_.push_back({kind, subject, {}, 0, ""});
    Tally &tally = tallies_[it->second];
    if (!held) return;
    if (tally.held++ == 0) tally.firstDetail = detail;
    if (std::find(tally.shapes.begin(), tally.shapes.end(), shape) == tally.shapes.end()) tally.shapes.push_back(shape);
  }

  /// Findings (held on every run) and notes (on some).
  void report(const std::string &task, int runs, std::vector<AuditFinding> &out) const {
    for (const Tally &tally : tallies_) {
      if (tally.held == 0) continue;
      AuditFinding finding;
      finding.kind = tally.kind;
      finding.note = tally.held < runs;
      finding.task = task;
      finding.subject = tally.subject;
      for (const std::string &shape : tally.shapes) finding.shape += (finding.shape.empty() ? "" : "; ") + shape;
      finding.detail = fmt::format("{} (on {} of {} runs)", tally.firstDetail, tally.held, runs);
      out.push_back(std::move(finding));
    }
  }

private:
  std::map<std::pair<int, std::string>, size_t> index_;
  std::vector<Tally> tallies_;
};

/// Whether every output of `a` matches `b` within its tolerance, and the
/// largest difference seen (for the finding's text).
bool outputsMatch(const tasks::TaskSpec &task, const Outputs &a, const Outputs &b, std::string &largest) {
  bool all = true;
  largest.clear();
  for (size_t i = 0; i < task.params.size(); ++i) {
    const tasks::ParamSpec &param = task.params[i];
    if (!param.isOutput()) continue;
    size_t count = a[i].size() / tasks::elementSize(param.type);
    tasks::CompareResult compare =
        tasks::compareBuffers(param.type, a[i].data(), b[i].data(), count, tasks::toleranceFor(task, param.type));
    all = all && compare.passed;
    largest += fmt::format("{}'{}' max abs diff {:.3g}", largest.empty() ? "" : ", ", param.name, compare.maxAbsError);
  }
  return all;
}

void auditOutputs(const tasks::TaskSpec &task, const std::string &shape, const Outputs &base, const Outputs &other,
                  Tallies &tallies) {
  for (size_t i = 0; i < task.params.size(); ++i) {
    const tasks::ParamSpec &param = task.params[i];
    if (!param.isOutput()) continue;
    tasks::Tolerance tolerance = outputTolerance(task, param);
    size_t count = base[i].size() / tasks::elementSize(param.type);
    size_t nearZero = 0;
    double low = INFINITY, high = -INFINITY;
    for (size_t e = 0; e < count; ++e) {
      double value = tasks::decodeElement(param.type, base[i].data(), e);
      if (std::fabs(value) <= tolerance.atol) ++nearZero;
      if (std::isfinite(value)) low = std::min(low, value), high = std::max(high, value);
    }
    std::string subject = "output '" + param.name + "'";
    bool zero = count > 0 && nearZero >= kMostFraction * static_cast<double>(count);
    tallies.record(AuditFindingKind::NearZero, subject, zero, shape,
                   fmt::format("{} of {} elements within atol {:g} of zero", nearZero, count, tolerance.atol));
    if (count >= 2 && low <= high) {
      double spread = high - low;
      double allowed = tolerance.atol + tolerance.rtol * std::max(std::fabs(low), std::fabs(high));
      tallies.record(AuditFindingKind::NearConstant, subject, spread <= allowed, shape,
                     fmt::format("{} elements in [{:.6g}, {:.6g}]: spread {:.3g} <= tolerance {:.3g}", count, low,
                                 high, spread, allowed));
    }
    tasks::CompareResult compare = tasks::compareBuffers(param.type, other[i].data(), base[i].data(), count,
                                                         tasks::toleranceFor(task, param.type));
    tallies.record(AuditFindingKind::SeedInsensitive, subject, count > 0 && compare.passed, shape,
                   fmt::format("two input seeds give outputs within tolerance (max abs diff {:.3g})",
                               compare.maxAbsError));
  }
}

std::string readFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The text after `// mutant:` on the file's first line.
std::string mutantDescription(const std::string &text) {
  std::string first = text.substr(0, text.find('\n'));
  const std::string marker = "// mutant:";
  size_t at = first.find(marker);
  if (at == std::string::npos) return "";
  std::string what = first.substr(at + marker.size());
  while (!what.empty() && (what.front() == ' ')) what.erase(0, 1);
  while (!what.empty() && (what.back() == ' ' || what.back() == '\r')) what.pop_back();
  return what;
}

Result<void> auditMutants(const tasks::TaskSpec &task, exec::Executor &executor, const AuditOptions &options,
                          AuditReport &report) {
  std::filesystem::path folder = task.folder / "mutants";
  std::error_code error;
  if (!std::filesystem::is_directory(folder, error)) return {};
  std::vector<std::filesystem::path> files;
  for (const auto &entry : std::filesystem::directory_iterator(folder, error))
    if (entry.is_regular_file() && entry.path().extension() == ".ptx") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  bool emulated = executor.moduleFormat() == exec::ModuleFormat::Ptx;
  for (const std::filesystem::path &file : files) {
    std::string text = readFile(file);
    CheckOptions checkOptions;
    checkOptions.arch = options.arch;
    // The emulator checks the small shapes, as `ptxforge check --executor emu` does.
    checkOptions.shapeIndices = emulated ? task.smallShapes : std::vector<size_t>{};
    checkOptions.seed = options.seed; // a fixed seed: the same verdict in every CI run
    checkOptions.benchmark = false;
    checkOptions.launchTimeoutMs = options.launchTimeoutMs;
    Result<CheckResult> checked = check(task, std::string_view(text), &executor, checkOptions);
    if (!checked) return checked.error();
    MutantReport mutant;
    mutant.file = file.filename().string();
    mutant.what = mutantDescription(text);
    mutant.verdict = checked->verdict;
    mutant.summary = checked->summary;
    // Only a verdict reached by running the mutant says anything about the
    // task's tolerance and inputs; a mutant that does not compile proves nothing.
    mutant.caught = mutant.verdict == Verdict::Wrong || mutant.verdict == Verdict::Crashed ||
                    mutant.verdict == Verdict::Timeout;
    if (!mutant.caught) {
      AuditFinding finding;
      finding.kind = mutant.verdict == Verdict::Correct ? AuditFindingKind::MutantPasses
                                                        : AuditFindingKind::MutantUnjudged;
      finding.task = task.name;
      finding.subject = "mutants/" + mutant.file;
      finding.detail = fmt::format("{}: {}{}", verdictName(mutant.verdict), mutant.summary,
                                   mutant.what.empty() ? "" : " [" + mutant.what + "]");
      report.findings.push_back(std::move(finding));
    }
    report.mutants.push_back(std::move(mutant));
  }
  return {};
}

} // namespace

const char *auditFindingKindName(AuditFindingKind kind) {
  switch (kind) {
  case AuditFindingKind::NearZero: return "near-zero";
  case AuditFindingKind::NearConstant: return "near-constant";
  case AuditFindingKind::SeedInsensitive: return "seed-insensitive";
  case AuditFindingKind::InputInsensitive: return "input-insensitive";
  case AuditFindingKind::ScalarInsensitive: return "scalar-insensitive";
  case AuditFindingKind::MutantPasses: return "mutant-passes";
  case AuditFindingKind::MutantUnjudged: return "mutant-unjudged";
  }
  return "?";
}

size_t AuditReport::findingCount() const {
  return static_cast<size_t>(std::count_if(findings.begin(), findings.end(), [](const AuditFinding &f) { return !f.note; }));
}

size_t AuditReport::noteCount() const { return findings.size() - findingCount(); }

bool AuditReport::passed() const { return findingCount() == 0; }

Result<AuditReport> auditTask(const tasks::TaskSpec &task, exec::Executor &executor, const AuditOptions &options) {
  AuditReport report;
  report.task = task.name;
  report.device = executor.properties().name;
  std::string arch = !options.arch.empty() ? options.arch
                     : executor.properties().smMajor > 0 ? executor.properties().arch()
                                                         : "sm_90";
  Result<tasks::CompiledReference> reference = tasks::compileReference(task, arch);
  if (!reference) return reference.error();
  bool ptx = executor.moduleFormat() == exec::ModuleFormat::Ptx;
  Result<exec::ModuleHandle> module =
      ptx ? executor.loadModule(std::vector<uint8_t>(reference->ptx.begin(), reference->ptx.end()),
                                exec::ModuleFormat::Ptx)
          : executor.loadModule(reference->cubin, exec::ModuleFormat::Cubin);
  if (!module) return module.error();
  struct Unload {
    exec::Executor &executor;
    exec::ModuleHandle module;
    ~Unload() { (void)executor.unloadModule(module); }
  } unload{executor, *module};
  Result<exec::KernelInfo> kernel = executor.getKernel(*module, task.kernel);
  if (!kernel) return kernel.error();
  ReferenceRunner runner(task, executor, kernel->handle, options.launchTimeoutMs);

  std::vector<size_t> shapes = options.shapeIndices.empty() ? task.smallShapes : options.shapeIndices;
  // Every entry of a trial_scales list is a different input regime (rmsnorm's
  // tiny rows): each gets its own runs.
  for (const tasks::ParamSpec &param : task.params)
    report.trials = std::max(report.trials, static_cast<int>(param.init.trialScales.size()));

  uint64_t seedState = options.seed;
  const uint64_t seedA = options.seed;
  const uint64_t seedB = tasks::splitmix64(seedState);
  Perturbation base{std::vector<uint64_t>(task.params.size(), seedA), std::vector<double>(task.params.size(), 1.0)};

  Tallies tallies;
  int runs = 0;
  for (size_t shapeIndex : shapes) {
    if (shapeIndex >= task.shapes.size())
      return makeError(ErrorKind::InvalidInput, fmt::format("task '{}' has no shape {}", task.name, shapeIndex));
    const tasks::Shape &shape = task.shapes[shapeIndex];
    std::string shapeName = tasks::compactShape(task, shape);
    report.shapes.push_back(shapeName);
    for (int trial = 0; trial < report.trials; ++trial) {
      ++runs;
      Result<Outputs> first = runner.run(shape, trial, base);
      if (!first) return first.error();
      Perturbation reseeded = base;
      std::fill(reseeded.seeds.begin(), reseeded.seeds.end(), seedB);
      Result<Outputs> second = runner.run(shape, trial, reseeded);
      if (!second) return second.error();
      auditOutputs(task, shapeName, *first, *second, tallies);

      for (size_t i = 0; i < task.params.size(); ++i) {
        const tasks::ParamSpec &param = task.params[i];
        Perturbation changed = base;
        std::string subject;
        std::string how;
        if (isSeededInput(param)) {
          changed.seeds[i] = seedB;
          subject = "input '" + param.name + "'";
          how = "re-drawn with another seed";
        } else if (!param.isPointer && param.floatValue && *param.floatValue != 0) {
          changed.scalarScales[i] = kScalarScale;
          subject = "scalar '" + param.name + "'";
          how = fmt::format("changed from {:g} to {:g}", *param.floatValue, *param.floatValue * kScalarScale);
        } else {
          continue;
        }
        Result<Outputs> perturbed = runner.run(shape, trial, changed);
        if (!perturbed) return perturbed.error();
        std::string largest;
        bool same = outputsMatch(task, *first, *perturbed, largest);
        tallies.record(param.isPointer ? AuditFindingKind::InputInsensitive : AuditFindingKind::ScalarInsensitive,
                       subject, same, shapeName, fmt::format("{}: every output within tolerance ({})", how, largest));
      }
    }
  }
  tallies.report(task.name, runs, report.findings);
  if (options.mutants)
    if (Result<void> ok = auditMutants(task, executor, options, report); !ok) return ok.error();
  return report;
}

nlohmann::json toJson(const AuditReport &report) {
  nlohmann::json findings = nlohmann::json::array();
  for (const AuditFinding &finding : report.findings)
    findings.push_back({{"kind", auditFindingKindName(finding.kind)},
                        {"note", finding.note},
                        {"task", finding.task},
                        {"subject", finding.subject},
                        {"shape", finding.shape},
                        {"detail", finding.detail}});
  nlohmann::json mutants = nlohmann::json::array();
  for (const MutantReport &mutant : report.mutants)
    mutants.push_back({{"file", mutant.file},
                       {"what", mutant.what},
                       {"verdict", verdictName(mutant.verdict)},
                       {"caught", mutant.caught},
                       {"summary", mutant.summary}});
  return {{"task", report.task},
          {"device", report.device},
          {"shapes", report.shapes},
          {"trials", report.trials},
          {"passed", report.passed()},
          {"findings", std::move(findings)},
          {"mutants", std::move(mutants)}};
}

std::string formatText(const AuditReport &report) {
  std::string out;
  for (const AuditFinding &finding : report.findings)
    out += fmt::format("{}: {} {}: {}{}: {}\n", finding.task, finding.note ? "note" : "finding",
                       auditFindingKindName(finding.kind), finding.subject,
                       finding.shape.empty() ? "" : " on " + finding.shape, finding.detail);
  for (const MutantReport &mutant : report.mutants)
    out += fmt::format("{}: mutant {} {}: {}{}\n", report.task, mutant.file,
                       mutant.caught ? "caught" : "NOT CAUGHT", verdictName(mutant.verdict),
                       mutant.what.empty() ? "" : " (" + mutant.what + ")");
  return out;
}

} // namespace ptxforge::verify
