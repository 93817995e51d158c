// The verification gate. The protocol follows DESIGN.md: outputs pre-filled
// with NaN (or a per-trial byte pattern for integers), guard zones around every
// buffer, the candidate never sees the reference's buffers, several trials of
// fresh inputs per shape, and a re-check after timing; timing interleaves
// candidate and baseline with the L2 flushed before every repetition.
#include "verify/Check.h"

#include "verify/Ceilings.h"

#include "ptx/Lint.h"
#include "ptx/Parser.h"
#include "tasks/Inputs.h"
#include "tasks/Reference.h"
#include "toolchain/Json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

namespace ptxforge::verify {

namespace {

/// Bytes of guard zone on each side of every buffer. A multiple of 256 keeps
/// the data 256-byte aligned, as cuMemAlloc's own pointers are, so vectorized
/// candidates are not punished for assuming the usual alignment.
constexpr uint64_t kGuardBytes = 256;
constexpr uint8_t kGuardByte = 0xCD;

bool isOutput(const tasks::ParamSpec &param) {
  return param.isPointer && (param.role == tasks::ParamRole::Output || param.role == tasks::ParamRole::InOut);
}

/// The byte outputs are pre-filled with: all-ones is NaN for every float
/// type; integers alternate patterns per trial, so an element the kernel never
/// writes cannot match the reference in every trial.
uint8_t fillByte(tasks::ElementType type, int trial) {
  return tasks::isFloatingType(type) ? 0xFF : (trial % 2 == 0 ? 0xA5 : 0x5A);
}


std::optional<Verdict> verdictForExecError(const Error &error) {
  switch (exec::execErrorKindOf(error)) {
  case exec::ExecErrorKind::Crashed: return Verdict::Crashed;
  case exec::ExecErrorKind::Timeout: return Verdict::Timeout;
  case exec::ExecErrorKind::LaunchError:
  case exec::ExecErrorKind::OutOfResources: return Verdict::LaunchError;
  case exec::ExecErrorKind::ModuleLoad: return Verdict::CompileError;
  default: return std::nullopt;
  }
}

/// A PTX parameter's byte size for a .param type name ("u64" → 8); 0 if unknown.
size_t ptxTypeBytes(const std::string &type) {
  if (type == "pred") return 0;
  size_t digits = type.find_first_of("0123456789");
  if (digits == std::string::npos) return 0;
  size_t bits = static_cast<size_t>(std::atoi(type.c_str() + digits));
  if (type.find('x') != std::string::npos) bits *= static_cast<size_t>(std::atoi(type.c_str() + type.find('x') + 1));
  return bits / 8;
}

/// Buffers of one side (candidate or reference) for one launch.
struct SideBuffers {
  std::vector<exec::DeviceBuffer> buffers; ///< per param; empty for scalars
  std::vector<uint64_t> dataBytes;          ///< per param
};

class Gate {
public:
  Gate(const tasks::TaskSpec &task, exec::Executor &executor, const CheckOptions &options, CheckResult &result)
      : task_(task), executor_(executor), options_(options), result_(result) {}

  /// Allocates guarded buffers for every pointer param and fills them.
  Result<SideBuffers> prepare(const tasks::Shape &shape, int trial) {
    SideBuffers side;
    for (const tasks::ParamSpec &param : task_.params) {
      side.buffers.emplace_back();
      side.dataBytes.push_back(0);
      if (!param.isPointer) continue;
      Result<int64_t> count = tasks::evaluate(param.count, shape);
      if (!count) return count.error();
      uint64_t bytes = static_cast<uint64_t>(*count) * tasks::elementSize(param.type);
      Result<exec::DeviceBuffer> buffer = executor_.allocateBuffer(bytes + 2 * kGuardBytes);
      if (!buffer) return buffer.error();
      // The guard zones are out of bounds for executors that check accesses.
      if (Result<void> ranged = executor_.setAccessibleRange(buffer->handle(), kGuardBytes, bytes); !ranged)
        return ranged.error();
      std::vector<uint8_t> image(bytes + 2 * kGuardBytes, kGuardByte);
      if (param.role == tasks::ParamRole::Output) {
        std::memset(image.data() + kGuardBytes, fillByte(param.type, trial), bytes);
      } else {
        std::vector<std::byte> input = tasks::generateInput(param, *count, options_.seed, trial);
        std::memcpy(image.data() + kGuardBytes, input.data(), std::min<uint64_t>(input.size(), bytes));
      }
      if (Result<void> copied = executor_.copyToDevice(buffer->handle(), 0, image.data(), image.size()); !copied)
        return copied.error();
      side.dataBytes.back() = bytes;
      side.buffers.back() = std::move(*buffer);
    }
    return side;
  }

  Result<exec::PackedArgs> arguments(const SideBuffers &side, const tasks::Shape &shape) {
    exec::KernelArgs args;
    for (size_t i = 0; i < task_.params.size(); ++i) {
      const tasks::ParamSpec &param = task_.params[i];
      if (param.isPointer) {
        args.buffer(side.buffers[i].handle(), kGuardBytes);
        continue;
      }
      Result<std::vector<std::byte>> bytes = tasks::scalarArgument(param, shape);
      if (!bytes) return bytes.error();
      args.raw(bytes->data(), bytes->size(), bytes->size());
    }
    return args.pack();
  }

  /// Downloads every output of `side` (data only) and checks its guard zones.
  Result<std::vector<std::vector<uint8_t>>> collect(const SideBuffers &side, std::vector<OutputReport> *guards) {
    std::vector<std::vector<uint8_t>> outputs(task_.params.size());
    for (size_t i = 0; i < task_.params.size(); ++i) {
      const tasks::ParamSpec &param = task_.params[i];
      if (!param.isPointer) continue;
      uint64_t bytes = side.dataBytes[i];
      std::vector<uint8_t> image(bytes + 2 * kGuardBytes);
      if (Result<void> copied = executor_.copyToHost(image.data(), side.buffers[i].handle(), 0, image.size()); !copied)
        return copied.error();
      if (guards) {
        // Every buffer's guards are checked, inputs included: a write through
        // an input pointer out of bounds is as wrong as one through an output.
        OutputReport report;
        report.param = param.name;
        for (uint64_t b = 0; b < kGuardBytes; ++b) {
          if (image[b] != kGuardByte) {
            if (report.guardBytesBefore++ == 0 && report.guardDetail.empty())
              report.guardDetail = fmt::format("byte {} before the start of '{}' changed from 0x{:02x} to 0x{:02x}",
                                               kGuardBytes - b, param.name, kGuardByte, image[b]);
          }
          uint8_t after = image[kGuardBytes + bytes + b];
          if (after != kGuardByte) {
            if (report.guardBytesAfter++ == 0 && report.guardDetail.empty())
              report.guardDetail = fmt::format("byte {} after the end of '{}' changed from 0x{:02x} to 0x{:02x}", b,
                                               param.name, kGuardByte, after);
          }
        }
        if (report.guardBytesBefore || report.guardBytesAfter || isOutput(param)) guards->push_back(std::move(report));
      }
      if (isOutput(param)) outputs[i].assign(image.begin() + kGuardBytes, image.begin() + kGuardBytes + bytes);
    }
    return outputs;
  }

  /// Runs the reference then the candidate on (shape, trial) and compares.
  /// Returns false when a verdict other than correct was reached.
  Result<bool> runTrial(size_t shapeIndex, int trial, bool afterTiming, exec::KernelHandle reference,
                        exec::KernelHandle candidate, const tasks::ResolvedLaunch &referenceLaunch,
                        const tasks::ResolvedLaunch &candidateLaunch) {
    const tasks::Shape &shape = task_.shapes[shapeIndex];
    TrialReport report;
    report.shapeIndex = shapeIndex;
    report.shape = shape;
    report.trial = trial;
    report.afterTiming = afterTiming;
    report.launch = candidateLaunch;

    // The reference runs on its own buffers; the candidate never sees them.
    std::vector<std::vector<uint8_t>> want;
    {
      Result<SideBuffers> side = prepare(shape, trial);
      if (!side) return side.error();
      Result<exec::PackedArgs> args = arguments(*side, shape);
      if (!args) return args.error();
      Result<void> ran = executor_.launch(reference, toConfig(referenceLaunch), *args);
      (void)executor_.takeFindings(); // the reference's own sanitizer warnings are not the candidate's
      if (!ran)
        return makeError(ErrorKind::Internal, "the reference kernel failed on " + tasks::shapeToString(shape) + ": " +
                                                  ran.error().message);
      Result<std::vector<std::vector<uint8_t>>> outputs = collect(*side, nullptr);
      if (!outputs) return outputs.error();
      want = std::move(*outputs);
    }

    Result<SideBuffers> side = prepare(shape, trial);
    if (!side) return side.error();
    Result<exec::PackedArgs> args = arguments(*side, shape);
    if (!args) return args.error();
    Result<void> ran = executor_.launch(candidate, toConfig(candidateLaunch), *args);
    recordFindings();
    if (!ran) {
      if (!recordExecutorFailure(ran.error(), fmt::format("on {} (trial {})", tasks::shapeToString(shape), trial)))
        return ran.error();
      result_.trials.push_back(std::move(report));
      return false;
    }
    Result<std::vector<std::vector<uint8_t>>> got = collect(*side, &report.outputs);
    if (!got) return got.error();

    report.passed = true;
    std::string firstProblem;
    for (OutputReport &output : report.outputs) {
      size_t index = static_cast<size_t>(
          std::find_if(task_.params.begin(), task_.params.end(), [&](const auto &p) { return p.name == output.param; }) -
          task_.params.begin());
      const tasks::ParamSpec &param = task_.params[index];
      if (output.guardBytesBefore || output.guardBytesAfter) {
        report.passed = false;
        if (firstProblem.empty())
          firstProblem = fmt::format("out-of-bounds write: {} ({} bytes before, {} after)", output.guardDetail,
                                     output.guardBytesBefore, output.guardBytesAfter);
      }
      if (!isOutput(param)) continue;
      size_t count = side->dataBytes[index] / tasks::elementSize(param.type);
      output.compare = tasks::compareBuffers(param.type, (*got)[index].data(), want[index].data(), count,
                                             tasks::toleranceFor(task_, param.type));
      if (!output.compare.passed) {
        report.passed = false;
        if (firstProblem.empty())
          firstProblem = fmt::format("'{}' differs: {} of {} elements outside tolerance, first at index {}: got {}, "
                                     "expected {} (max abs error {:.3g}, max rel error {:.3g})",
                                     param.name, output.compare.mismatches, output.compare.count,
                                     output.compare.firstMismatch.value_or(0), output.compare.firstGotText,
                                     output.compare.firstWantText, output.compare.maxAbsError,
                                     output.compare.maxRelError);
      }
    }
    result_.trials.push_back(std::move(report));
    if (!result_.trials.back().passed) {
      result_.verdict = Verdict::Wrong;
      result_.summary = fmt::format("wrong on {} (trial {}{}): {}", tasks::shapeToString(shape), trial,
                                    afterTiming ? ", re-checked after timing" : "", firstProblem);
      return false;
    }
    return true;
  }

  Result<std::optional<BenchmarkReport>> benchmark(size_t shapeIndex, exec::KernelHandle reference,
                                                   exec::KernelHandle candidate,
                                                   const tasks::ResolvedLaunch &referenceLaunch,
                                                   const tasks::ResolvedLaunch &candidateLaunch) {
    const tasks::Shape &shape = task_.shapes[shapeIndex];
    // Separate buffers for each side, as in the correctness runs.
    Result<SideBuffers> candidateSide = prepare(shape, 0);
    if (!candidateSide) return candidateSide.error();
    Result<SideBuffers> referenceSide = prepare(shape, 0);
    if (!referenceSide) return referenceSide.error();
    Result<exec::PackedArgs> candidateArgs = arguments(*candidateSide, shape);
    Result<exec::PackedArgs> referenceArgs = arguments(*referenceSide, shape);
    if (!candidateArgs) return candidateArgs.error();
    if (!referenceArgs) return referenceArgs.error();

    exec::TimingOptions timing;
    timing.warmupLaunches = 1;
    timing.repetitions = static_cast<uint32_t>(std::max(1, options_.repetitionsPerRound));
    timing.flushL2 = true;
    timing.timeoutMs = options_.launchTimeoutMs * (timing.repetitions + 1);
    std::vector<double> candidateTimes, baselineTimes;
    for (int round = 0; round < std::max(1, options_.timingRounds); ++round) {
      // Alternate which side goes first so drift (clocks, temperature) hits both.
      for (int side = 0; side < 2; ++side) {
        bool candidateTurn = (side == 0) == (round % 2 == 0);
        Result<std::vector<float>> times =
            candidateTurn ? executor_.timeLaunch(candidate, toConfig(candidateLaunch), *candidateArgs, timing)
                          : executor_.timeLaunch(reference, toConfig(referenceLaunch), *referenceArgs, timing);
        if (!times) {
          if (candidateTurn &&
              recordExecutorFailure(times.error(), "while timing on " + tasks::shapeToString(shape)))
            return std::optional<BenchmarkReport>();
          return times.error();
        }
        for (float ms : *times) (candidateTurn ? candidateTimes : baselineTimes).push_back(ms);
      }
    }
    BenchmarkReport report;
    report.shapeIndex = shapeIndex;
    report.shape = shape;
    report.candidate = spreadOf(candidateTimes);
    report.baseline = spreadOf(baselineTimes);
    report.speedup = report.baseline.median / report.candidate.median;
    report.speedupLow = report.baseline.p10 / report.candidate.p90;
    report.speedupHigh = report.baseline.p90 / report.candidate.p10;
    if (task_.cost.flops) {
      if (Result<int64_t> flops = tasks::evaluate(*task_.cost.flops, shape)) {
        report.gflops = static_cast<double>(*flops) / (report.candidate.median * 1e6);
        report.baselineGflops = static_cast<double>(*flops) / (report.baseline.median * 1e6);
      }
    }
    if (task_.cost.bytes) {
      if (Result<int64_t> bytes = tasks::evaluate(*task_.cost.bytes, shape)) {
        report.gbps = static_cast<double>(*bytes) / (report.candidate.median * 1e6);
        report.baselineGbps = static_cast<double>(*bytes) / (report.baseline.median * 1e6);
        double peak = executor_.properties().peakMemoryBandwidthGBs();
        if (peak > 0) report.bandwidthFraction = *report.gbps / peak;
      }
    }
    // Measured ceilings, when `ptxforge device` has cached them for this device.
    if (std::optional<DeviceCeilings> ceilings = loadCachedCeilings(executor_.properties().name)) {
      if (report.gbps && ceilings->copyGBs > 0) report.copyCeilingFraction = *report.gbps / ceilings->copyGBs;
      if (report.gflops && ceilings->fp32Gflops > 0) report.fp32CeilingFraction = *report.gflops / ceilings->fp32Gflops;
    }
    return std::optional<BenchmarkReport>(std::move(report));
  }

  /// What to do about a sanitizer finding, for the person or model reading it.
  static std::string findingHint(const std::string &check) {
    if (check == "memcheck")
      return "compare the index with the element count before the access (the last block of a ragged shape is "
             "partly outside the buffer), and keep vector accesses aligned to their size";
    if (check == "racecheck")
      return "put a bar.sync between the shared-memory write and the other warps' accesses to the same address";
    if (check == "synccheck")
      return "every thread of the CTA (every lane of a warp collective's membermask) must reach the same barrier; "
             "move it out of the branch";
    if (check == "initcheck") return "write the register on every path before reading it";
    return "";
  }

  /// Adds what a sanitizing executor found in the candidate's launch to the
  /// diagnostics (code = the check's name, located at the PTX line), once each.
  void recordFindings() {
    for (exec::LaunchFinding &finding : executor_.takeFindings()) {
      bool seen = std::any_of(result_.diagnostics.begin(), result_.diagnostics.end(), [&](const ptx::Diagnostic &d) {
        return d.code == finding.check && d.line == finding.line;
      });
      if (seen) continue;
      std::string message = std::move(finding.message);
      if (message.rfind(finding.check + ": ", 0) == 0) message.erase(0, finding.check.size() + 2);
      result_.diagnostics.push_back({finding.check, finding.fatal ? ptx::Severity::Error : ptx::Severity::Warning,
                                     finding.line, 0, std::move(message), findingHint(finding.check)});
    }
  }

  /// When `error` is the candidate's fault (crash, hang, refused launch), makes
  /// it the verdict and returns true; otherwise the gate itself failed.
  bool recordExecutorFailure(const Error &error, const std::string &where) {
    std::optional<Verdict> verdict = verdictForExecError(error);
    if (!verdict) return false;
    result_.verdict = *verdict;
    result_.executorError = error.message;
    // The verdict already says what the executor error's kind prefix says.
    std::string detail = error.message;
    std::string prefix = std::string(exec::execErrorKindName(exec::execErrorKindOf(error))) + ": ";
    if (detail.rfind(prefix, 0) == 0) detail.erase(0, prefix.size());
    result_.summary = fmt::format("{} {}: {}", verdictName(*verdict), where, detail);
    return true;
  }

  exec::LaunchConfig toConfig(const tasks::ResolvedLaunch &launch) const {
    exec::LaunchConfig config;
    config.grid = {launch.grid[0], launch.grid[1], launch.grid[2]};
    config.block = {launch.block[0], launch.block[1], launch.block[2]};
    config.dynamicSharedBytes = launch.smem;
    config.timeoutMs = options_.launchTimeoutMs; // the watchdog's deadline for a hang
    return config;
  }

private:
  const tasks::TaskSpec &task_;
  exec::Executor &executor_;
  const CheckOptions &options_;
  CheckResult &result_;
};

} // namespace

const char *verdictName(Verdict verdict) {
  switch (verdict) {
  case Verdict::Correct: return "correct";
  case Verdict::Wrong: return "wrong";
  case Verdict::CompileError: return "compile-error";
  case Verdict::LintError: return "lint-error";
  case Verdict::Crashed: return "crashed";
  case Verdict::Timeout: return "timeout";
  case Verdict::LaunchError: return "launch-error";
  case Verdict::Rejected: return "rejected";
  }
  return "rejected";
}

std::vector<ptx::Diagnostic> gateChecks(const tasks::TaskSpec &task, std::string_view candidatePtx) {
  std::vector<ptx::Diagnostic> diagnostics;
  ptx::ParseResult parsed = ptx::parse(candidatePtx);
  const ptx::Function *kernel = nullptr;
  std::vector<std::string> entries;
  for (const ptx::TopLevel &item : parsed.module.items) {
    if (item.kind != ptx::TopLevel::Kind::Function || !item.function.isEntry) continue;
    entries.push_back(item.function.name);
    if (item.function.name == task.kernel && item.function.hasBody) kernel = &item.function;
  }
  if (!kernel) {
    std::string found;
    for (const std::string &name : entries) found += (found.empty() ? "" : ", ") + ("`" + name + "`");
    diagnostics.push_back({"missing-kernel", ptx::Severity::Error, 0, 0,
                           fmt::format("the module has no `.entry {}` with a body (task '{}'){}", task.kernel, task.name,
                                       found.empty() ? "" : "; entries found: " + found),
                           fmt::format("name the kernel `.visible .entry {}(...)`", task.kernel)});
    return diagnostics;
  }
  if (kernel->params.size() != task.params.size()) {
    diagnostics.push_back({"signature-mismatch", ptx::Severity::Error, kernel->nameLoc.line, kernel->nameLoc.column,
                           fmt::format("`{}` takes {} parameters; task '{}' passes {}", task.kernel,
                                       kernel->params.size(), task.name, task.params.size()),
                           "declare one .param per task parameter, in order (see `ptxforge task show " + task.name +
                               "`)"});
  } else {
    for (size_t i = 0; i < task.params.size(); ++i) {
      const tasks::ParamSpec &want = task.params[i];
      const ptx::VariableDecl &got = kernel->params[i];
      size_t wantBytes = want.isPointer ? 8 : tasks::elementSize(want.type);
      size_t gotBytes = ptxTypeBytes(got.type) * (got.arrayDims.empty() ? 1 : got.arrayDims.front());
      if (got.vectorWidth) gotBytes *= got.vectorWidth;
      if (gotBytes != wantBytes)
        diagnostics.push_back(
            {"signature-mismatch", ptx::Severity::Error, got.loc.line, got.loc.column,
             fmt::format("parameter {} `{}` is {} bytes (.{}); task parameter '{}' is {}{} ({} bytes)", i + 1, got.name,
                         gotBytes, got.type, want.name, tasks::elementTypeName(want.type), want.isPointer ? "*" : "",
                         wantBytes),
             want.isPointer ? "pass pointers as `.param .u64`" : fmt::format("declare it `.param .{}`",
                                                                             tasks::elementTypeName(want.type))});
    }
  }
  // Timers let a kernel measure, and so game, its own timing.
  std::function<void(const std::vector<ptx::Statement> &)> scan = [&](const std::vector<ptx::Statement> &body) {
    for (const ptx::Statement &statement : body) {
      if (statement.kind == ptx::Statement::Kind::Block) scan(statement.block.statements);
      if (statement.kind != ptx::Statement::Kind::Instruction) continue;
      for (const ptx::Operand &operand : statement.instruction.operands) {
        std::string base = operand.name.substr(0, operand.name.find('.'));
        if (base == "%clock" || base == "%clock64" || base == "%clock_hi" || base == "%globaltimer" ||
            base == "%globaltimer_lo" || base == "%globaltimer_hi")
          diagnostics.push_back({"timer-read", ptx::Severity::Error, operand.loc.line, operand.loc.column,
                                 fmt::format("candidates may not read `{}`", operand.name),
                                 "remove the timer read: timing is measured by the gate"});
      }
    }
  };
  for (const ptx::TopLevel &item : parsed.module.items)
    if (item.kind == ptx::TopLevel::Kind::Function) scan(item.function.body);
  return diagnostics;
}

Result<CheckResult> check(const tasks::TaskSpec &task, std::string_view candidatePtx, exec::Executor *executor,
                          const CheckOptions &options, CheckResult *partial) {
  CheckResult result;
  result.task = task.name;
  result.seed = options.seed;
  result.arch = !options.arch.empty() ? options.arch : executor ? executor->properties().arch() : "sm_90";
  result.device = executor ? executor->properties().name : "";
  result.shapeIndices = options.shapeIndices;
  if (result.shapeIndices.empty())
    for (size_t i = 0; i < task.shapes.size(); ++i) result.shapeIndices.push_back(i);
  for (size_t index : result.shapeIndices)
    if (index >= task.shapes.size())
      return makeError(ErrorKind::InvalidInput, fmt::format("task '{}' has {} shapes; there is no shape {}", task.name,
                                                            task.shapes.size(), index));
  auto finish = [&](Verdict verdict, std::string stage, std::string summary) {
    result.verdict = verdict;
    result.stage = std::move(stage);
    if (!summary.empty()) result.summary = std::move(summary);
    ptx::sortByLocation(result.diagnostics);
    if (partial) *partial = result;
    return result;
  };

  // 1. Lint: the PTX itself, the launch directives, the gate's own checks.
  result.stage = "lint";
  result.diagnostics = ptx::lintSource(candidatePtx);
  tasks::LaunchDirectiveScan directives = tasks::parseLaunchDirectives(candidatePtx, task.symbols);
  for (ptx::Diagnostic &d : directives.diagnostics) result.diagnostics.push_back(std::move(d));
  for (ptx::Diagnostic &d : gateChecks(task, candidatePtx)) result.diagnostics.push_back(std::move(d));
  bool timerRead = std::any_of(result.diagnostics.begin(), result.diagnostics.end(),
                               [](const ptx::Diagnostic &d) { return d.code == "timer-read"; });
  if (timerRead) return finish(Verdict::Rejected, "lint", "rejected: the candidate reads a timer register");
  if (options.lint && ptx::hasErrors(result.diagnostics)) {
    size_t errors = static_cast<size_t>(std::count_if(result.diagnostics.begin(), result.diagnostics.end(),
                                                      [](const auto &d) { return d.severity == ptx::Severity::Error; }));
    return finish(Verdict::LintError, "lint", fmt::format("lint-error: {} error{}", errors, errors == 1 ? "" : "s"));
  }

  // 2. Compile.
  result.stage = "compile";
  toolchain::CompileOptions compileOptions;
  compileOptions.arch = result.arch;
  compileOptions.entryName = task.kernel;
  Result<toolchain::CompileResult> compiled = toolchain::compilePtx(candidatePtx, compileOptions);
  if (!compiled) return compiled.error();
  for (const ptx::Diagnostic &d : compiled->diagnostics) result.diagnostics.push_back(d);
  result.compile = std::move(*compiled);
  if (!result.compile->ok) return finish(Verdict::CompileError, "compile", "compile-error: the compiler rejected the PTX");

  if (!executor) {
    finish(Verdict::Rejected, "compile", "");
    return makeError(ErrorKind::ToolMissing, "not executed: no executor (no GPU here; --executor emu runs the CPU emulator)");
  }

  // 3. Execute and compare.
  result.stage = "execute";
  Result<tasks::CompiledReference> reference = tasks::compileReference(task, result.arch);
  if (!reference) return reference.error();
  result.referenceCompiler = reference->nvrtcVersion;
  // The GPU runs the cubins; the emulator runs the PTX itself.
  bool emulated = executor->moduleFormat() == exec::ModuleFormat::Ptx;
  auto bytesOf = [](std::string_view text) { return std::vector<uint8_t>(text.begin(), text.end()); };
  Result<exec::ModuleHandle> referenceModule =
      emulated ? executor->loadModule(bytesOf(reference->ptx), exec::ModuleFormat::Ptx)
               : executor->loadModule(reference->cubin, exec::ModuleFormat::Cubin);
  if (!referenceModule)
    return makeError(referenceModule.error().kind, "the reference does not load: " + referenceModule.error().message);
  Result<exec::KernelInfo> referenceKernel = executor->getKernel(*referenceModule, task.kernel);
  if (!referenceKernel) return referenceKernel.error();
  Result<exec::ModuleHandle> candidateModule =
      emulated ? executor->loadModule(bytesOf(candidatePtx), exec::ModuleFormat::Ptx)
               : executor->loadModule(result.compile->cubin, exec::ModuleFormat::Cubin);
  if (!candidateModule && emulated && candidateModule.error().message.find("unsupported: ") != std::string::npos) {
    // Not the candidate's fault: the emulator cannot run it. Located, and no verdict.
    const std::string &message = candidateModule.error().message;
    uint32_t line = 0;
    if (size_t at = message.rfind("(line "); at != std::string::npos)
      line = static_cast<uint32_t>(std::strtoul(message.c_str() + at + 6, nullptr, 10));
    result.diagnostics.push_back({"emu-unsupported", ptx::Severity::Error, line, 0, message, ""});
    finish(Verdict::Rejected, "execute", "");
    return makeError(ErrorKind::ToolMissing, "not executed: the emulator cannot run this candidate: " + message);
  }
  if (!candidateModule) {
    if (std::optional<Verdict> verdict = verdictForExecError(candidateModule.error())) {
      result.executorError = candidateModule.error().message;
      return finish(*verdict, "execute", std::string(verdictName(*verdict)) + ": " + candidateModule.error().message);
    }
    return candidateModule.error();
  }
  Result<exec::KernelInfo> candidateKernel = executor->getKernel(*candidateModule, task.kernel);
  if (!candidateKernel) {
    result.executorError = candidateKernel.error().message;
    return finish(Verdict::CompileError, "execute", "compile-error: " + candidateKernel.error().message);
  }
  result.kernel = *candidateKernel;

  // Unload both modules however the gate ends (a no-op after a crash).
  struct ModuleUnloader {
    exec::Executor &executor;
    std::vector<exec::ModuleHandle> modules;
    ~ModuleUnloader() {
      for (exec::ModuleHandle module : modules) (void)executor.unloadModule(module);
    }
  } unloader{*executor, {*referenceModule, *candidateModule}};

  Gate gate(task, *executor, options, result);
  std::map<size_t, std::pair<tasks::ResolvedLaunch, tasks::ResolvedLaunch>> launches; // shape → (reference, candidate)
  for (size_t shapeIndex : result.shapeIndices) {
    const tasks::Shape &shape = task.shapes[shapeIndex];
    Result<tasks::ResolvedLaunch> referenceLaunch = tasks::resolveLaunch(tasks::LaunchConfig{}, task, shape);
    if (!referenceLaunch) return referenceLaunch.error();
    Result<tasks::ResolvedLaunch> candidateLaunch = tasks::resolveLaunch(directives.config, task, shape);
    if (!candidateLaunch) {
      result.diagnostics.push_back({"launch-directive", ptx::Severity::Error, 0, 0,
                                    "on " + tasks::shapeToString(shape) + ": " + candidateLaunch.error().message, ""});
      return finish(Verdict::LintError, "execute", "lint-error: the launch directive does not work for " +
                                                       tasks::shapeToString(shape));
    }
    launches[shapeIndex] = {*referenceLaunch, *candidateLaunch};
    for (int trial = 0; trial < std::max(1, options.trials); ++trial) {
      Result<bool> passed = gate.runTrial(shapeIndex, trial, false, referenceKernel->handle, candidateKernel->handle,
                                          *referenceLaunch, *candidateLaunch);
      if (!passed) return passed.error();
      if (!*passed) return finish(result.verdict, "execute", "");
    }
  }

  if (emulated)
    return finish(Verdict::Correct, "execute",
                  fmt::format("correct on {} shape(s) x {} trial(s) in the emulator; not timed (timing needs a GPU)",
                              result.shapeIndices.size(), std::max(1, options.trials)));
  if (!options.benchmark)
    return finish(Verdict::Correct, "execute",
                  fmt::format("correct on {} shape(s) x {} trial(s); not timed", result.shapeIndices.size(),
                              std::max(1, options.trials)));

  // 4. Benchmark: the largest checked shape (by its buffers), then a re-check.
  result.stage = "benchmark";
  size_t timed = result.shapeIndices.front();
  int64_t largest = -1;
  for (size_t shapeIndex : result.shapeIndices) {
    int64_t bytes = 0;
    for (const tasks::ParamSpec &param : task.params)
      if (param.isPointer)
        if (Result<int64_t> count = tasks::evaluate(param.count, task.shapes[shapeIndex]))
          bytes += *count * static_cast<int64_t>(tasks::elementSize(param.type));
    if (bytes > largest) {
      largest = bytes;
      timed = shapeIndex;
    }
  }
  Result<std::optional<BenchmarkReport>> bench = gate.benchmark(timed, referenceKernel->handle, candidateKernel->handle,
                                                                launches[timed].first, launches[timed].second);
  if (!bench) return bench.error();
  if (!*bench) return finish(result.verdict, "benchmark", "");
  result.benchmarks.push_back(std::move(**bench));
  const BenchmarkReport &report = result.benchmarks.back();

  // A figure above the machine's ceiling is a measurement bug or a cheat. The
  // measured copy ceiling gets 10% headroom (a candidate may stream better than
  // the simple copy that measured it); the theoretical peak gets 5%.
  if (report.copyCeilingFraction && *report.copyCeilingFraction > 1.10)
    return finish(Verdict::Rejected, "benchmark",
                  fmt::format("rejected: {:.0f} GB/s is {:.0f}% of the measured copy ceiling; implausible",
                              report.gbps.value_or(0), 100 * *report.copyCeilingFraction));
  if (report.bandwidthFraction && *report.bandwidthFraction > 1.05)
    return finish(Verdict::Rejected, "benchmark",
                  fmt::format("rejected: {:.0f} GB/s is above the device's {:.0f} GB/s DRAM peak; implausible",
                              report.gbps.value_or(0), executor->properties().peakMemoryBandwidthGBs()));

  Result<bool> recheck = gate.runTrial(timed, std::max(1, options.trials), true, referenceKernel->handle,
                                       candidateKernel->handle, launches[timed].first, launches[timed].second);
  if (!recheck) return recheck.error();
  if (!*recheck) return finish(result.verdict, "benchmark", "");

  return finish(Verdict::Correct, "done",
                fmt::format("correct on {} shape(s) x {} trial(s); {:.2f}x the nvcc baseline on {} [{:.2f}, {:.2f}]",
                            result.shapeIndices.size(), std::max(1, options.trials), report.speedup,
                            tasks::shapeToString(report.shape), report.speedupLow, report.speedupHigh));
}

Result<CrossCheckResult> crossCheck(const tasks::TaskSpec &task, exec::Executor &a, exec::Executor &b,
                                    const CheckOptions &options) {
  CrossCheckResult result;
  result.task = task.name;
  result.deviceA = a.properties().name;
  result.deviceB = b.properties().name;
  std::string arch = options.arch.empty() ? "sm_90" : options.arch;
  Result<tasks::CompiledReference> reference = tasks::compileReference(task, arch);
  if (!reference) return reference.error();
  std::vector<size_t> shapes = options.shapeIndices.empty() ? task.smallShapes : options.shapeIndices;

  struct Side {
    exec::Executor &executor;
    exec::ModuleHandle module;
    exec::KernelHandle kernel;
    CheckResult scratch;
    std::optional<Gate> gate;
  };
  Side sides[2] = {{a, {}, {}, {}, {}}, {b, {}, {}, {}, {}}};
  for (Side &side : sides) {
    bool ptx = side.executor.moduleFormat() == exec::ModuleFormat::Ptx;
    Result<exec::ModuleHandle> module =
        ptx ? side.executor.loadModule(std::vector<uint8_t>(reference->ptx.begin(), reference->ptx.end()),
                                       exec::ModuleFormat::Ptx)
            : side.executor.loadModule(reference->cubin, exec::ModuleFormat::Cubin);
    if (!module) return module.error();
    Result<exec::KernelInfo> kernel = side.executor.getKernel(*module, task.kernel);
    if (!kernel) return kernel.error();
    side.module = *module;
    side.kernel = kernel->handle;
    side.gate.emplace(task, side.executor, options, side.scratch);
  }
  for (size_t shapeIndex : shapes) {
    if (shapeIndex >= task.shapes.size())
      return makeError(ErrorKind::InvalidInput, fmt::format("task '{}' has no shape {}", task.name, shapeIndex));
    const tasks::Shape &shape = task.shapes[shapeIndex];
    Result<tasks::ResolvedLaunch> launch = tasks::resolveLaunch(tasks::LaunchConfig{}, task, shape);
    if (!launch) return launch.error();
    for (int trial = 0; trial < std::max(1, options.trials); ++trial) {
      std::vector<std::vector<uint8_t>> outputs[2];
      for (int i = 0; i < 2; ++i) {
        Gate &gate = *sides[i].gate;
        Result<SideBuffers> buffers = gate.prepare(shape, trial);
        if (!buffers) return buffers.error();
        Result<exec::PackedArgs> args = gate.arguments(*buffers, shape);
        if (!args) return args.error();
        if (Result<void> ran = sides[i].executor.launch(sides[i].kernel, gate.toConfig(*launch), *args); !ran)
          return makeError(ErrorKind::Internal, fmt::format("the reference failed on {} ({}): {}",
                                                            sides[i].executor.properties().name,
                                                            tasks::shapeToString(shape), ran.error().message));
        (void)sides[i].executor.takeFindings();
        Result<std::vector<std::vector<uint8_t>>> got = gate.collect(*buffers, nullptr);
        if (!got) return got.error();
        outputs[i] = std::move(*got);
      }
      for (size_t p = 0; p < task.params.size(); ++p) {
        const tasks::ParamSpec &param = task.params[p];
        if (!isOutput(param)) continue;
        CrossCheckRow row;
        row.shapeIndex = shapeIndex;
        row.shape = shape;
        row.trial = trial;
        row.param = param.name;
        row.type = param.type;
        size_t size = tasks::elementSize(param.type);
        row.count = outputs[0][p].size() / size;
        for (size_t e = 0; e < row.count; ++e)
          row.identical += std::memcmp(outputs[0][p].data() + e * size, outputs[1][p].data() + e * size, size) == 0;
        row.compare = tasks::compareBuffers(param.type, outputs[1][p].data(), outputs[0][p].data(), row.count,
                                            tasks::toleranceFor(task, param.type));
        bool ok = tasks::isFloatingType(param.type) ? row.compare.passed : row.identical == row.count;
        result.passed = result.passed && ok;
        result.rows.push_back(std::move(row));
      }
    }
  }
  for (Side &side : sides) (void)side.executor.unloadModule(side.module);
  return result;
}

namespace {

nlohmann::json statsJson(const TimingStats &s) {
  return {{"median_ms", s.median}, {"p10_ms", s.p10}, {"p90_ms", s.p90}, {"min_ms", s.min}, {"max_ms", s.max},
          {"samples", s.samples}};
}

template <typename T> nlohmann::json optionalJson(const std::optional<T> &value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

} // namespace

const BenchmarkReport *headlineBenchmark(const CheckResult &result) {
  const BenchmarkReport *headline = nullptr;
  for (const BenchmarkReport &report : result.benchmarks)
    if (!headline || report.baseline.median > headline->baseline.median) headline = &report;
  return headline;
}

nlohmann::json toJson(const CrossCheckResult &result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const CrossCheckRow &row : result.rows)
    rows.push_back({{"shape", tasks::shapeToString(row.shape)},
                    {"shape_index", row.shapeIndex},
                    {"trial", row.trial},
                    {"param", row.param},
                    {"type", tasks::elementTypeName(row.type)},
                    {"elements", row.count},
                    {"bit_identical", row.identical},
                    {"within_tolerance", row.compare.passed},
                    {"mismatches", row.compare.mismatches},
                    {"max_abs_error", row.compare.maxAbsError},
                    {"max_rel_error", row.compare.maxRelError}});
  return {{"task", result.task}, {"a", result.deviceA}, {"b", result.deviceB}, {"passed", result.passed},
          {"rows", rows}};
}

nlohmann::json toJson(const CheckResult &result) {
  nlohmann::json resources = nullptr;
  if (result.compile) {
    const toolchain::ResourceUsage &r = result.compile->resources;
    resources = {{"registers", r.registers}, {"spill_store_bytes", r.spillStoreBytes},
                 {"spill_load_bytes", r.spillLoadBytes}, {"stack_bytes", r.stackFrameBytes},
                 {"shared_bytes", r.sharedBytes}, {"local_bytes", r.localBytes}, {"barriers", r.barriers},
                 {"compile_ms", result.compile->compileMs}, {"known", r.known}};
  }
  // What the repair and optimize prompts show of the compile besides its
  // resources, so that a result read back from the store (checkResultFromJson)
  // gives the same prompt text.
  nlohmann::json compile = nullptr;
  if (result.compile)
    compile = {{"ok", result.compile->ok},
               {"diagnostics", toolchain::toJson(result.compile->diagnostics)},
               {"advisories", result.compile->advisories},
               {"error_log", result.compile->errorLog}};
  nlohmann::json trials = nlohmann::json::array();
  for (const TrialReport &t : result.trials) {
    nlohmann::json outputs = nlohmann::json::array();
    for (const OutputReport &o : t.outputs) {
      nlohmann::json output = {{"param", o.param},
                               {"guard_bytes_before", o.guardBytesBefore},
                               {"guard_bytes_after", o.guardBytesAfter},
                               {"max_abs_error", o.compare.maxAbsError},
                               {"max_rel_error", o.compare.maxRelError},
                               {"mismatches", o.compare.mismatches},
                               {"compared", o.compare.count},
                               {"within_tolerance", o.compare.passed},
                               {"nan_in_got", o.compare.nanInGot}};
      if (o.compare.firstMismatch)
        output["first_mismatch"] = {{"index", *o.compare.firstMismatch}, {"got", o.compare.firstGotText},
                                    {"expected", o.compare.firstWantText}};
      if (!o.guardDetail.empty()) output["guard_detail"] = o.guardDetail;
      outputs.push_back(std::move(output));
    }
    trials.push_back({{"shape_index", t.shapeIndex}, {"shape", t.shape}, {"trial", t.trial},
                      {"after_timing", t.afterTiming}, {"passed", t.passed},
                      {"grid", t.launch.grid}, {"block", t.launch.block}, {"smem", t.launch.smem},
                      {"outputs", std::move(outputs)}});
  }
  nlohmann::json timings = nlohmann::json::array();
  for (const BenchmarkReport &b : result.benchmarks)
    timings.push_back({{"shape_index", b.shapeIndex}, {"shape", b.shape}, {"candidate", statsJson(b.candidate)},
                       {"baseline", statsJson(b.baseline)}, {"speedup", b.speedup},
                       {"speedup_band", {b.speedupLow, b.speedupHigh}}, {"gflops", optionalJson(b.gflops)},
                       {"gbps", optionalJson(b.gbps)}, {"baseline_gflops", optionalJson(b.baselineGflops)},
                       {"baseline_gbps", optionalJson(b.baselineGbps)},
                       {"dram_bandwidth_fraction", optionalJson(b.bandwidthFraction)},
                       {"copy_ceiling_fraction", optionalJson(b.copyCeilingFraction)},
                       {"fp32_ceiling_fraction", optionalJson(b.fp32CeilingFraction)}});
  return {{"verdict", verdictName(result.verdict)},
          {"stage", result.stage},
          {"summary", result.summary},
          {"diagnostics", toolchain::toJson(result.diagnostics)},
          {"resources", std::move(resources)},
          {"compile", std::move(compile)},
          {"kernel", result.kernel ? nlohmann::json{{"registers", result.kernel->registerCount},
                                                    {"static_shared_bytes", result.kernel->staticSharedBytes},
                                                    {"local_bytes", result.kernel->localBytes},
                                                    {"max_threads_per_block", result.kernel->maxThreadsPerBlock}}
                                   : nlohmann::json(nullptr)},
          {"correctness", std::move(trials)},
          {"timing", std::move(timings)},
          {"executor_error", result.executorError},
          {"provenance",
           {{"task", result.task},
            {"arch", result.arch},
            {"device", result.device},
            {"seed", result.seed},
            {"shapes", result.shapeIndices},
            {"reference_compiler", result.referenceCompiler},
            {"compiler", result.compile ? result.compile->toolVersion : std::string()}}}};
}

std::string formatText(const CheckResult &result) {
  std::string out = fmt::format("{}: {}\n", verdictName(result.verdict), result.summary);
  out += fmt::format("  task {} on {} ({}), seed {}, stage reached: {}\n", result.task,
                     result.device.empty() ? "no device" : result.device, result.arch, result.seed, result.stage);
  if (result.compile && result.compile->ok) {
    const toolchain::ResourceUsage &r = result.compile->resources;
    out += fmt::format("  resources: {} registers, {} B spill stores, {} B spill loads, {} B shared, {} B stack\n",
                       r.registers, r.spillStoreBytes, r.spillLoadBytes, r.sharedBytes, r.stackFrameBytes);
  }
  size_t passed = static_cast<size_t>(
      std::count_if(result.trials.begin(), result.trials.end(), [](const TrialReport &t) { return t.passed; }));
  if (!result.trials.empty()) out += fmt::format("  correctness: {}/{} trials passed\n", passed, result.trials.size());
  for (const BenchmarkReport &b : result.benchmarks) {
    out += fmt::format("  timing on {}: candidate {:.4f} ms [p10 {:.4f}, p90 {:.4f}], nvcc baseline {:.4f} ms "
                       "[{:.4f}, {:.4f}], {} samples each\n",
                       tasks::shapeToString(b.shape), b.candidate.median, b.candidate.p10, b.candidate.p90,
                       b.baseline.median, b.baseline.p10, b.baseline.p90, b.candidate.samples);
    out += fmt::format("  speedup {:.3f}x (noise band {:.3f}-{:.3f})", b.speedup, b.speedupLow, b.speedupHigh);
    if (b.gbps) out += fmt::format(", {:.0f} GB/s (baseline {:.0f})", *b.gbps, b.baselineGbps.value_or(0));
    if (b.gflops) out += fmt::format(", {:.0f} GFLOP/s (baseline {:.0f})", *b.gflops, b.baselineGflops.value_or(0));
    out += "\n";
  }
  return out;
}

// ---------------------------------------------------------------------------
// The vendor-library baseline

namespace {

exec::LibraryOp libraryOpOf(tasks::VendorOp op) {
  switch (op) {
  case tasks::VendorOp::Gemm: return exec::LibraryOp::Gemm;
  case tasks::VendorOp::GemmF16F32: return exec::LibraryOp::GemmF16F32;
  case tasks::VendorOp::GemmBatched: return exec::LibraryOp::GemmBatched;
  case tasks::VendorOp::Gemv: return exec::LibraryOp::Gemv;
  }
  return exec::LibraryOp::Gemm;
}

size_t paramIndex(const tasks::TaskSpec &task, const std::string &name) {
  for (size_t i = 0; i < task.params.size(); ++i)
    if (task.params[i].name == name) return i;
  return task.params.size();
}

} // namespace

Result<VendorReport> vendorBaseline(const tasks::TaskSpec &task, exec::Executor &executor,
                                    const CheckOptions &options, size_t shapeIndex) {
  if (!task.vendor)
    return makeError(ErrorKind::InvalidInput, fmt::format("task '{}' has no [vendor] operation", task.name));
  if (shapeIndex >= task.shapes.size())
    return makeError(ErrorKind::InvalidInput, fmt::format("task '{}' has no shape {}", task.name, shapeIndex));
  const tasks::VendorSpec &vendor = *task.vendor;
  const tasks::Shape &shape = task.shapes[shapeIndex];
  VendorReport report;
  report.task = task.name;
  report.library = vendor.library;
  report.op = tasks::vendorOpName(vendor.op);
  report.shapeIndex = shapeIndex;
  report.shape = shape;

  exec::LibraryCall call;
  call.op = libraryOpOf(vendor.op);
  call.timeoutMs = options.launchTimeoutMs;
  for (const auto &[name, expression] : vendor.sizes) {
    Result<int64_t> value = tasks::evaluate(expression, shape);
    if (!value) return value.error();
    report.sizes[name] = *value;
    if (name == "m") call.m = *value;
    else if (name == "n") call.n = *value;
    else if (name == "k") call.k = *value;
    else if (name == "batch") call.batch = *value;
  }
  const std::vector<std::string> operandNames = tasks::vendorOperandNames(vendor.op);
  std::vector<size_t> operandParams;
  for (const std::string &operand : operandNames) {
    size_t index = paramIndex(task, vendor.operands.at(operand));
    assert(index < task.params.size() && "loadTask validated the [vendor] operands");
    operandParams.push_back(index);
  }
  const size_t outputIndex = operandParams.back();
  const tasks::ParamSpec &outputParam = task.params[outputIndex];

  CheckResult scratch; // Gate's home for verdicts; nothing here produces one
  Gate gate(task, executor, options, scratch);

  // The library first, on buffers of its own holding the benchmark's inputs:
  // an executor without it (the emulator, a machine without cuBLAS) answers
  // before the reference runs at the largest shape.
  Result<SideBuffers> librarySide = gate.prepare(shape, 0);
  if (!librarySide) return librarySide.error();
  exec::LibraryOperand *operands[] = {&call.a, &call.b, &call.c};
  for (size_t i = 0; i < operandParams.size(); ++i)
    *operands[i] = {librarySide->buffers[operandParams[i]].handle(), kGuardBytes};
  if (Result<void> ran = executor.runLibraryCall(call); !ran) return ran.error();
  std::vector<OutputReport> guards;
  Result<std::vector<std::vector<uint8_t>>> got = gate.collect(*librarySide, &guards);
  if (!got) return got.error();

  // The reference on the same inputs.
  std::vector<std::vector<uint8_t>> want;
  {
    const std::string arch = options.arch.empty() ? executor.properties().arch() : options.arch;
    Result<tasks::CompiledReference> reference = tasks::compileReference(task, arch);
    if (!reference) return reference.error();
    const bool ptx = executor.moduleFormat() == exec::ModuleFormat::Ptx;
    Result<exec::ModuleHandle> module =
        ptx ? executor.loadModule(std::vector<uint8_t>(reference->ptx.begin(), reference->ptx.end()),
                                  exec::ModuleFormat::Ptx)
            : executor.loadModule(reference->cubin, exec::ModuleFormat::Cubin);
    if (!module) return makeError(module.error().kind, "the reference does not load: " + module.error().message);
    struct Unload {
      exec::Executor &executor;
      exec::ModuleHandle module;
      ~Unload() { (void)executor.unloadModule(module); }
    } unload{executor, *module};
    Result<exec::KernelInfo> kernel = executor.getKernel(*module, task.kernel);
    if (!kernel) return kernel.error();
    Result<tasks::ResolvedLaunch> launch = tasks::resolveLaunch(tasks::LaunchConfig{}, task, shape);
    if (!launch) return launch.error();
    Result<SideBuffers> side = gate.prepare(shape, 0);
    if (!side) return side.error();
    Result<exec::PackedArgs> args = gate.arguments(*side, shape);
    if (!args) return args.error();
    Result<void> ran = executor.launch(kernel->handle, gate.toConfig(*launch), *args);
    (void)executor.takeFindings();
    if (!ran)
      return makeError(ErrorKind::Internal, "the reference kernel failed on " + tasks::shapeToString(shape) + ": " +
                                                ran.error().message);
    Result<std::vector<std::vector<uint8_t>>> outputs = gate.collect(*side, nullptr);
    if (!outputs) return outputs.error();
    want = std::move(*outputs);
  }

  // Agreement first: a mis-set size or layout must not become a fast number.
  std::string problem;
  for (OutputReport &guard : guards) {
    if ((guard.guardBytesBefore || guard.guardBytesAfter) && problem.empty())
      problem = fmt::format("wrote outside its buffers: {} ({} bytes before, {} after)", guard.guardDetail,
                            guard.guardBytesBefore, guard.guardBytesAfter);
    if (guard.param == outputParam.name) report.output = guard;
  }
  const size_t count = librarySide->dataBytes[outputIndex] / tasks::elementSize(outputParam.type);
  report.output.param = outputParam.name;
  report.output.compare = tasks::compareBuffers(outputParam.type, (*got)[outputIndex].data(), want[outputIndex].data(),
                                                count, tasks::toleranceFor(task, outputParam.type));
  if (problem.empty() && !report.output.compare.passed)
    problem = fmt::format("'{}' differs from the reference: {} of {} elements outside tolerance, first at index {}: "
                          "got {}, expected {} (max abs error {:.3g}, max rel error {:.3g})",
                          outputParam.name, report.output.compare.mismatches, report.output.compare.count,
                          report.output.compare.firstMismatch.value_or(0), report.output.compare.firstGotText,
                          report.output.compare.firstWantText, report.output.compare.maxAbsError,
                          report.output.compare.maxRelError);
  if (!problem.empty()) {
    report.summary = fmt::format("{} {} on {}: {}; not timed (check the task's [vendor] sizes and operands)",
                                 report.library, report.op, tasks::shapeToString(shape), problem);
    return report;
  }
  report.passed = true;

  // Timing, with the gate's protocol for the baseline (not interleaved).
  exec::TimingOptions timing;
  timing.warmupLaunches = 1;
  timing.repetitions = static_cast<uint32_t>(std::max(1, options.repetitionsPerRound));
  timing.flushL2 = true;
  timing.timeoutMs = options.launchTimeoutMs * (timing.repetitions + 1);
  std::vector<double> milliseconds;
  for (int round = 0; round < std::max(1, options.timingRounds); ++round) {
    Result<std::vector<float>> times = executor.timeLibraryCall(call, timing);
    if (!times) return times.error();
    for (float ms : *times) milliseconds.push_back(ms);
  }
  report.timing = spreadOf(milliseconds);
  if (task.cost.flops)
    if (Result<int64_t> flops = tasks::evaluate(*task.cost.flops, shape))
      report.gflops = static_cast<double>(*flops) / (report.timing->median * 1e6);
  if (task.cost.bytes)
    if (Result<int64_t> bytes = tasks::evaluate(*task.cost.bytes, shape))
      report.gbps = static_cast<double>(*bytes) / (report.timing->median * 1e6);
  report.summary = fmt::format("{} {} on {}: agrees with the reference (max abs error {:.3g}); {:.4f} ms [{:.4f}, "
                               "{:.4f}] over {} calls",
                               report.library, report.op, tasks::shapeToString(shape),
                               report.output.compare.maxAbsError, report.timing->median, report.timing->p10,
                               report.timing->p90, report.timing->samples);
  return report;
}

nlohmann::json toJson(const VendorReport &report) {
  nlohmann::json check = {{"passed", report.passed},
                          {"param", report.output.param},
                          {"max_abs_error", report.output.compare.maxAbsError},
                          {"max_rel_error", report.output.compare.maxRelError},
                          {"mismatches", report.output.compare.mismatches},
                          {"compared", report.output.compare.count},
                          {"guard_bytes_before", report.output.guardBytesBefore},
                          {"guard_bytes_after", report.output.guardBytesAfter}};
  if (report.output.compare.firstMismatch)
    check["first_mismatch"] = {{"index", *report.output.compare.firstMismatch},
                               {"got", report.output.compare.firstGotText},
                               {"expected", report.output.compare.firstWantText}};
  return {{"task", report.task},
          {"library", report.library},
          {"op", report.op},
          {"shape_index", report.shapeIndex},
          {"shape", report.shape},
          {"sizes", report.sizes},
          {"passed", report.passed},
          {"summary", report.summary},
          {"check", std::move(check)},
          {"timing", report.timing ? statsJson(*report.timing) : nlohmann::json(nullptr)},
          {"gflops", optionalJson(report.gflops)},
          {"gbps", optionalJson(report.gbps)}};
}

} // namespace ptxforge::verify
