// `check --profile` (Profile.h): the profiled runs, the estimate, the text and
// the JSON of a ProfileReport.
#include "verify/Profile.h"
#include "verify/TensorMapArgument.h"

#include "tasks/Inputs.h"
#include "toolchain/LogParser.h"
#include "verify/Ceilings.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace ptxforge::verify {

namespace {

/// The PTX uses tensor-core instructions (mma, wgmma, wmma) on some line.
bool usesTensorCores(std::string_view ptx) {
  std::istringstream lines{std::string(ptx)};
  std::string line;
  while (std::getline(lines, line)) {
    size_t at = line.find_first_not_of(" \t");
    if (at == std::string::npos) continue;
    std::string_view text = std::string_view(line).substr(at);
    if (text.starts_with("//")) continue;
    if (text.starts_with("@")) {
      size_t space = text.find_first_of(" \t");
      if (space == std::string_view::npos) continue;
      text = text.substr(space);
      text = text.substr(std::min(text.size(), text.find_first_not_of(" \t")));
    }
    if (text.starts_with("mma.") || text.starts_with("wgmma.") || text.starts_with("wmma.")) return true;
  }
  return false;
}

/// Runs `ptx`'s kernel once on `shape` with the profile on: inputs drawn as
/// the gate draws them (seed 1, trial 0), outputs zeroed, 256-byte-aligned
/// buffers (the alignment the gate gives every buffer).
Result<exec::LaunchProfile> runProfiled(const tasks::TaskSpec &task, exec::Executor &executor, const std::string &ptx,
                                        const tasks::Shape &shape, const tasks::ResolvedLaunch &launch,
                                        uint32_t timeoutMs, const char *side) {
  if (executor.moduleFormat() != exec::ModuleFormat::Ptx)
    return makeError(ErrorKind::InvalidInput, "the profile runs in the emulator (--executor emu)");
  Result<exec::ModuleHandle> module = executor.loadModule(std::vector<uint8_t>(ptx.begin(), ptx.end()), exec::ModuleFormat::Ptx);
  if (!module) return module.error();
  struct Unload {
    exec::Executor &executor;
    exec::ModuleHandle module;
    ~Unload() { (void)executor.unloadModule(module); }
  } unload{executor, *module};
  Result<exec::KernelInfo> kernel = executor.getKernel(*module, task.kernel);
  if (!kernel) return kernel.error();
  std::vector<exec::DeviceBuffer> buffers;
  exec::KernelArgs args;
  std::vector<exec::BufferHandle> handles(task.params.size()); // by parameter, for tensor maps
  for (const tasks::ParamSpec &param : task.params) {
    if (param.tensorMap) { // over an earlier parameter's buffer, made above
      Result<exec::TensorMapBytes> map = encodeTensorMapArgument(executor, task, param, shape,
                                                                 handles[param.tensorMap->bufferIndex], 0);
      if (!map) return map.error();
      args.raw(map->data(), map->size(), exec::kTensorMapAlignment);
      continue;
    }
    if (!param.isPointer) {
      Result<std::vector<std::byte>> bytes = tasks::scalarArgument(param, shape);
      if (!bytes) return bytes.error();
      args.raw(bytes->data(), bytes->size(), bytes->size());
      continue;
    }
    Result<int64_t> count = tasks::evaluate(param.count, shape);
    if (!count) return count.error();
    const uint64_t bytes = static_cast<uint64_t>(std::max<int64_t>(0, *count)) * tasks::elementSize(param.type);
    Result<exec::DeviceBuffer> buffer = executor.allocateBuffer(std::max<uint64_t>(bytes, 1));
    if (!buffer) return buffer.error();
    if (param.role == tasks::ParamRole::Input || param.role == tasks::ParamRole::InOut) {
      std::vector<std::byte> data = tasks::generateInput(param, *count, 1, 0);
      if (Result<void> copied = executor.copyToDevice(buffer->handle(), 0, data.data(), data.size()); !copied)
        return copied.error();
    } else if (Result<void> zeroed = executor.memset(buffer->handle(), 0, 0, bytes); !zeroed) {
      return zeroed.error();
    }
    args.buffer(buffer->handle());
    handles[static_cast<size_t>(&param - task.params.data())] = buffer->handle();
    buffers.push_back(std::move(*buffer));
  }
  exec::LaunchConfig config;
  config.grid = {launch.grid[0], launch.grid[1], launch.grid[2]};
  config.block = {launch.block[0], launch.block[1], launch.block[2]};
  config.dynamicSharedBytes = launch.smem;
  config.timeoutMs = timeoutMs;
  config.profile = true;
  Result<void> ran = executor.launch(kernel->handle, config, args.pack());
  (void)executor.takeFindings();
  std::vector<exec::LaunchProfile> profiles = executor.takeProfiles();
  if (!ran)
    return makeError(ErrorKind::Internal,
                     fmt::format("the {}'s profiled launch failed: {}", side, render(ran.error())));
  if (profiles.empty())
    return makeError(ErrorKind::InvalidInput,
                     fmt::format("{} does not profile launches (the emulator does)", executor.properties().name));
  return std::move(profiles.back());
}

std::string bytesText(double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024) return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024 * 1024));
  if (bytes >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  if (bytes >= 1024.0) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{:.0f} B", bytes);
}

std::string secondsText(double seconds) {
  if (seconds >= 1e-3) return fmt::format("{:.3g} ms", seconds * 1e3);
  return fmt::format("{:.3g} us", seconds * 1e6);
}

double ratio(uint64_t a, uint64_t b) { return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0; }

} // namespace

size_t profileShapeIndex(const tasks::TaskSpec &task) {
  std::vector<size_t> pool = task.smallShapes;
  if (pool.empty()) return 0;
  size_t best = pool.front();
  double bestSize = -1;
  for (size_t index : pool) {
    if (index >= task.shapes.size()) continue;
    const tasks::Shape &shape = task.shapes[index];
    double size = static_cast<double>(tasks::elementsOf(task, shape));
    if (task.cost.bytes)
      if (Result<int64_t> bytes = tasks::evaluate(*task.cost.bytes, shape)) size = static_cast<double>(*bytes);
    if (size > bestSize) best = index, bestSize = size;
  }
  return best;
}

ProfileCeilings profileCeilings(const std::string &device) {
  ProfileCeilings ceilings;
  ceilings.source = "nominal H200 figures (132 SMs at 1.98 GHz, 4.8 TB/s HBM3e, 66.9 TFLOP/s FP32, 989 TFLOP/s "
                    "dense f16 tensor)";
  if (!device.empty())
    if (std::optional<DeviceCeilings> measured = loadCachedCeilings(device);
        measured && measured->copyGBs > 0 && measured->fp32Gflops > 0) {
      ceilings.dramGBs = measured->copyGBs;
      ceilings.fp32Gflops = measured->fp32Gflops;
      ceilings.source = fmt::format("copy bandwidth and FP32 rate measured on {} ({}), nominal H200 figures for the "
                                    "rest",
                                    measured->device, measured->measuredAt);
    }
  return ceilings;
}

void estimateKernel(KernelProfileReport &k, const ProfileCeilings &c, std::optional<double> flops,
                    const std::string &arch) {
  k.globalRequests = k.globalSectors = k.globalIdealSectors = k.globalBytes = 0;
  k.sharedRequests = k.sharedWavefronts = k.sharedIdealWavefronts = k.localRequests = k.localBytes = 0;
  for (const exec::LineProfile &line : k.profile.lines) {
    k.globalRequests += line.globalRequests, k.globalSectors += line.globalSectors;
    k.globalIdealSectors += line.globalIdealSectors, k.globalBytes += line.globalBytes;
    k.sharedRequests += line.sharedRequests, k.sharedWavefronts += line.sharedWavefronts;
    k.sharedIdealWavefronts += line.sharedIdealWavefronts;
    k.localRequests += line.localRequests, k.localBytes += line.localBytes;
  }
  const double clock = c.smClockGHz * 1e9;
  const double movedBytes = static_cast<double>(k.globalSectors) * 32;
  const double computeRate = (k.tensorCores ? c.tensorGflops : c.fp32Gflops) * 1e9;
  k.memorySeconds = movedBytes / (c.dramGBs * 1e9);
  k.sharedSeconds = static_cast<double>(k.sharedWavefronts) / (c.sharedWavefrontsPerCycle * clock * c.smCount);
  k.issueSeconds = static_cast<double>(k.profile.warpInstructions) / (c.issuePerCycle * clock * c.smCount);
  k.computeSeconds = flops ? *flops / computeRate : 0;
  k.estimatedSeconds = 0;
  k.bound.clear();

  const tasks::ResolvedLaunch &launch = k.launch;
  const long long blocks = static_cast<long long>(launch.grid[0]) * launch.grid[1] * launch.grid[2];
  const int threads = static_cast<int>(launch.block[0] * launch.block[1] * launch.block[2]);
  std::optional<toolchain::SmLimits> limits = toolchain::smLimitsFor(arch.empty() ? "sm_90" : arch);
  if (!limits || k.registers < 0 || blocks <= 0 || threads <= 0) return;
  limits->smCount = c.smCount;
  k.occupancy = toolchain::computeOccupancy(*limits, std::max(k.registers, 1), threads, k.staticSharedBytes,
                                            static_cast<int>(launch.smem), blocks);
  if (!k.occupancy->launchable || k.occupancy->blocksPerSm <= 0) return;

  // The work of one block (the blocks of a launch share it evenly), run by
  // waves of resident blocks. In a wave, the per-SM units (shared memory,
  // issue, arithmetic) work on their SM's resident blocks at an SM's rate,
  // slowed while fewer warps reside than there are schedulers; memory moves
  // the wave's bytes at the device's bandwidth, no faster than each SM can
  // move its own, slowed while too few requests are in flight to hide the
  // latency.
  const double perBlock = 1.0 / static_cast<double>(blocks);
  const int warpsPerBlock = (threads + 31) / 32;
  const double bytesPerRequest = k.globalRequests ? movedBytes / static_cast<double>(k.globalRequests) : 128.0;
  struct Term {
    const char *name;
    double seconds; // device-wide, at the full rate
  };
  const Term terms[] = {{"shared memory", k.sharedSeconds}, {"issue", k.issueSeconds}, {"compute", k.computeSeconds}};
  auto waveTime = [&](long long waveBlocks, long long residentBlocks, std::string *bound) {
    const double warps = static_cast<double>(residentBlocks * warpsPerBlock);
    const double resident = static_cast<double>(residentBlocks);
    const double inFlight = warps * bytesPerRequest;
    double memory = std::max(movedBytes * perBlock * static_cast<double>(waveBlocks) / (c.dramGBs * 1e9),
                             movedBytes * perBlock * resident / (c.smMemoryGBs * 1e9)) /
                    std::min(1.0, inFlight / c.requestBytesToHideLatency);
    double worst = memory;
    if (bound) *bound = "memory";
    for (const Term &term : terms) {
      // seconds * SMs: one SM doing all the work at its share of the rate.
      double t = term.seconds * c.smCount * perBlock * resident / std::min(1.0, warps / c.issuePerCycle);
      if (t > worst) {
        worst = t;
        if (bound) *bound = term.name;
      }
    }
    return worst;
  };
  const long long perWave = static_cast<long long>(k.occupancy->blocksPerSm) * c.smCount;
  const long long fullWaves = blocks / perWave;
  const long long rest = blocks % perWave;
  std::string bound;
  double seconds = static_cast<double>(fullWaves) * waveTime(perWave, k.occupancy->blocksPerSm, &bound);
  if (rest > 0) {
    std::string lastBound;
    seconds += waveTime(rest, (rest + c.smCount - 1) / c.smCount, fullWaves ? nullptr : &lastBound);
    if (!fullWaves) bound = lastBound;
  }
  k.estimatedSeconds = seconds;
  k.bound = bound.empty() ? "issue" : bound;
}

Result<ProfileReport> profileCandidate(const tasks::TaskSpec &task, const Candidate &candidate,
                                       const tasks::CompiledReference &reference, exec::Executor &emulator,
                                       const CheckResult &result, uint32_t launchTimeoutMs) {
  ProfileReport report;
  report.executor = emulator.properties().name;
  report.arch = result.arch.empty() ? "sm_90" : result.arch;
  report.shapeIndex = profileShapeIndex(task);
  if (report.shapeIndex >= task.shapes.size())
    return makeError(ErrorKind::InvalidInput, fmt::format("task '{}' has no shape to profile", task.name));
  report.shape = task.shapes[report.shapeIndex];
  if (task.cost.flops)
    if (Result<int64_t> flops = tasks::evaluate(*task.cost.flops, report.shape)) report.flops = static_cast<double>(*flops);
  if (task.cost.bytes)
    if (Result<int64_t> bytes = tasks::evaluate(*task.cost.bytes, report.shape))
      report.taskBytes = static_cast<double>(*bytes);
  report.ceilings = profileCeilings(result.device);

  Result<tasks::ResolvedLaunch> candidateLaunch = tasks::resolveLaunch(candidate.directives.config, task, report.shape);
  if (!candidateLaunch) return candidateLaunch.error();
  Result<tasks::ResolvedLaunch> referenceLaunch = tasks::resolveLaunch(tasks::LaunchConfig{}, task, report.shape);
  if (!referenceLaunch) return referenceLaunch.error();
  report.candidate.launch = *candidateLaunch;
  report.reference.launch = *referenceLaunch;

  Result<exec::LaunchProfile> mine =
      runProfiled(task, emulator, candidate.text, report.shape, *candidateLaunch, launchTimeoutMs, "candidate");
  if (!mine) return mine.error();
  Result<exec::LaunchProfile> theirs =
      runProfiled(task, emulator, reference.ptx, report.shape, *referenceLaunch, launchTimeoutMs, "reference");
  if (!theirs) return theirs.error();
  report.candidate.profile = std::move(*mine);
  report.reference.profile = std::move(*theirs);

  // Registers: the candidate's as the occupancy report takes them (the
  // driver's count of the cubin that runs, else the compiler's); the
  // reference's from its compile log.
  if (result.kernel && result.kernel->registerCount > 0) {
    report.candidate.registers = result.kernel->registerCount;
    report.candidate.registersFrom = "driver";
    report.candidate.staticSharedBytes = result.kernel->staticSharedBytes;
  } else if (result.compile && result.compile->resources.registers >= 0) {
    report.candidate.registers = result.compile->resources.registers;
    report.candidate.registersFrom = "compiler";
    report.candidate.staticSharedBytes = result.compile->resources.sharedBytes;
  }
  for (const toolchain::ResourceUsage &usage : toolchain::parseResourceUsage(reference.log).functions)
    if (usage.isEntry && usage.function == task.kernel && usage.registers >= 0) {
      report.reference.registers = usage.registers;
      report.reference.registersFrom = "compiler";
      report.reference.staticSharedBytes = usage.sharedBytes;
    }
  report.candidate.tensorCores = usesTensorCores(candidate.text);
  report.reference.tensorCores = usesTensorCores(reference.ptx);
  estimateKernel(report.candidate, report.ceilings, report.flops, report.arch);
  estimateKernel(report.reference, report.ceilings, report.flops, report.arch);
  if (report.candidate.estimatedSeconds > 0 && report.reference.estimatedSeconds > 0)
    report.estimatedSpeedup = report.reference.estimatedSeconds / report.candidate.estimatedSeconds;
  report.basis = fmt::format(
      "the emulator's exact counts on {} (32-byte sectors x 32 bytes at device-memory bandwidth, shared-memory "
      "wavefronts, warp-instructions issued{}) over waves of the blocks occupancy lets reside, at {}; caches, "
      "latencies and clocks are not modelled",
      tasks::shapeToString(report.shape), report.flops ? ", the task's FLOPs" : "", report.ceilings.source);
  return report;
}

void addProfile(const tasks::TaskSpec &task, const Candidate &candidate, const tasks::CompiledReference &reference,
                exec::Executor *emulator, const CheckOptions &options, CheckResult &result) {
  if (!emulator || emulator->moduleFormat() != exec::ModuleFormat::Ptx) {
    result.diagnostics.push_back({"profile-skipped", ptx::Severity::Warning, 1, 1,
                                  "no profile: it runs in the emulator, and none is at hand (--executor emu, or "
                                  "--sanitize on a GPU machine)",
                                  ""});
    return;
  }
  Result<ProfileReport> report = profileCandidate(task, candidate, reference, *emulator, result, options.launchTimeoutMs);
  if (!report) {
    result.diagnostics.push_back(
        {"profile-skipped", ptx::Severity::Warning, 1, 1, "no profile: " + render(report.error()), ""});
    return;
  }
  result.profile = std::move(*report);
}

std::vector<std::string> profileOffenders(const KernelProfileReport &kernel, size_t count) {
  struct Offender {
    double weight; // excess work, in wavefronts or sectors
    int order;
    std::string text;
  };
  std::vector<Offender> offenders;
  for (const exec::LineProfile &line : kernel.profile.lines) {
    const std::string where = fmt::format("line {} `{}`", line.line, line.instruction);
    if (line.sharedWavefronts > line.sharedIdealWavefronts) {
      double perRequest = ratio(line.sharedWavefronts, line.sharedRequests);
      double ideal = ratio(line.sharedIdealWavefronts, line.sharedRequests);
      offenders.push_back({static_cast<double>(line.sharedWavefronts - line.sharedIdealWavefronts), 0,
                           fmt::format("{}: {:.1f} shared-memory wavefronts per request (ideal {:.1f}): {:.1f}-way "
                                       "bank conflicts over {} requests",
                                       where, perRequest, ideal, ideal > 0 ? perRequest / ideal : 0,
                                       line.sharedRequests)});
    }
    if (line.globalSectors > line.globalIdealSectors) {
      offenders.push_back({static_cast<double>(line.globalSectors - line.globalIdealSectors), 1,
                           fmt::format("{}: {:.1f} sectors per request (ideal {:.1f}): {:.0f}% of the bytes fetched "
                                       "are used, over {} requests",
                                       where, ratio(line.globalSectors, line.globalRequests),
                                       ratio(line.globalIdealSectors, line.globalRequests),
                                       100.0 * ratio(line.globalBytes, line.globalSectors * 32),
                                       line.globalRequests)});
    }
    if (line.localRequests > 0) {
      offenders.push_back({static_cast<double>(line.localBytes) / 32, 2,
                           fmt::format("{}: local memory (spills or a stack array), {} requests, {}", where,
                                       line.localRequests, bytesText(static_cast<double>(line.localBytes)))});
    }
  }
  std::stable_sort(offenders.begin(), offenders.end(), [](const Offender &a, const Offender &b) {
    return a.weight != b.weight ? a.weight > b.weight : a.order < b.order;
  });
  std::vector<std::string> out;
  for (size_t i = 0; i < offenders.size() && i < count; ++i) out.push_back(offenders[i].text);
  return out;
}

std::string describeTotals(const KernelProfileReport &k) {
  std::string out =
      k.globalRequests ? fmt::format("{} global requests at {:.1f} sectors/request (ideal {:.1f}), {} moved",
                                     k.globalRequests, ratio(k.globalSectors, k.globalRequests),
                                     ratio(k.globalIdealSectors, k.globalRequests),
                                     bytesText(static_cast<double>(k.globalSectors) * 32))
                       : std::string("no global memory accesses");
  if (k.sharedRequests)
    out += fmt::format("; {} shared requests at {:.1f} wavefronts/request (ideal {:.1f}, {} bank-conflict wavefronts)",
                       k.sharedRequests, ratio(k.sharedWavefronts, k.sharedRequests),
                       ratio(k.sharedIdealWavefronts, k.sharedRequests), k.sharedWavefronts - k.sharedIdealWavefronts);
  else
    out += "; no shared memory";
  if (k.localRequests) out += fmt::format("; {} local requests ({})", k.localRequests, bytesText(static_cast<double>(k.localBytes)));
  out += fmt::format("; {} warp-instructions", k.profile.warpInstructions);
  return out;
}

std::string describeEstimate(const ProfileReport &r) {
  if (r.estimatedSpeedup <= 0)
    return "no estimate (the registers or the occupancy of a kernel are unknown)";
  auto side = [](const KernelProfileReport &k) {
    std::string occupancy = k.occupancy ? fmt::format(", {} blocks/SM ({})", k.occupancy->blocksPerSm, k.occupancy->limiter.empty() ? "no limiter" : "limited by " + k.occupancy->limiter) : "";
    return fmt::format("{}, bound by {}{}", secondsText(k.estimatedSeconds), k.bound, occupancy);
  };
  return fmt::format("estimated {:.2f}x the reference (candidate {}; reference {})", r.estimatedSpeedup,
                     side(r.candidate), side(r.reference));
}

std::string formatProfileText(const ProfileReport &r, size_t topLines) {
  std::string out = fmt::format("  profile on {} ({}):\n", tasks::shapeToString(r.shape), r.executor);
  out += "    candidate: " + describeTotals(r.candidate) + "\n";
  for (const std::string &line : profileOffenders(r.candidate, topLines)) out += "      " + line + "\n";
  out += "    reference: " + describeTotals(r.reference) + "\n";
  for (const std::string &line : profileOffenders(r.reference, topLines)) out += "      " + line + "\n";
  out += "    " + describeEstimate(r) + "\n";
  out += "    (an estimate, not a measurement, from " + r.basis + ")\n";
  return out;
}

// ---------------------------------------------------------------------------
// JSON

namespace {

using Json = nlohmann::json;

Json occupancyJson(const std::optional<toolchain::Occupancy> &o) {
  if (!o) return nullptr;
  return {{"launchable", o->launchable},     {"blocks_per_sm", o->blocksPerSm}, {"warps_per_sm", o->warpsPerSm},
          {"occupancy", o->occupancy},       {"limiter", o->limiter},           {"waves", o->waves},
          {"shared_bytes_per_block", o->sharedBytesPerBlock}};
}

Json kernelJson(const KernelProfileReport &k) {
  Json lines = Json::array();
  for (const exec::LineProfile &l : k.profile.lines)
    lines.push_back({{"line", l.line},
                     {"instruction", l.instruction},
                     {"executions", l.executions},
                     {"global_requests", l.globalRequests},
                     {"global_sectors", l.globalSectors},
                     {"global_ideal_sectors", l.globalIdealSectors},
                     {"global_bytes", l.globalBytes},
                     {"shared_requests", l.sharedRequests},
                     {"shared_wavefronts", l.sharedWavefronts},
                     {"shared_ideal_wavefronts", l.sharedIdealWavefronts},
                     {"bank_conflicts", l.bankConflicts()},
                     {"local_requests", l.localRequests},
                     {"local_bytes", l.localBytes},
                     {"store", l.store},
                     {"atomic", l.atomic}});
  return {{"kernel", k.profile.kernel},
          {"block", k.launch.block},
          {"grid", k.launch.grid},
          {"smem", k.launch.smem},
          {"warp_instructions", k.profile.warpInstructions},
          {"thread_instructions", k.profile.threadInstructions},
          {"registers", k.registers},
          {"registers_from", k.registersFrom},
          {"static_shared_bytes", k.staticSharedBytes},
          {"tensor_cores", k.tensorCores},
          {"totals",
           {{"global_requests", k.globalRequests},
            {"global_sectors", k.globalSectors},
            {"global_ideal_sectors", k.globalIdealSectors},
            {"global_bytes", k.globalBytes},
            {"sectors_per_request", ratio(k.globalSectors, k.globalRequests)},
            {"bytes_moved", k.globalSectors * 32},
            {"shared_requests", k.sharedRequests},
            {"shared_wavefronts", k.sharedWavefronts},
            {"shared_ideal_wavefronts", k.sharedIdealWavefronts},
            {"bank_conflicts", k.sharedWavefronts - k.sharedIdealWavefronts},
            {"wavefronts_per_request", ratio(k.sharedWavefronts, k.sharedRequests)},
            {"local_requests", k.localRequests},
            {"local_bytes", k.localBytes}}},
          {"occupancy", occupancyJson(k.occupancy)},
          {"estimate",
           {{"seconds", k.estimatedSeconds},
            {"bound", k.bound},
            {"memory_seconds", k.memorySeconds},
            {"shared_seconds", k.sharedSeconds},
            {"issue_seconds", k.issueSeconds},
            {"compute_seconds", k.computeSeconds}}},
          {"lines", lines}};
}

/// Reads a document back, naming the JSON Pointer of the first bad field.
struct BadField {
  std::string path, what;
};

const Json &member(const Json &object, const std::string &key, const std::string &path) {
  if (!object.is_object()) throw BadField{path, "expected an object"};
  auto it = object.find(key);
  if (it == object.end()) throw BadField{path + "/" + key, "missing"};
  return *it;
}

template <typename T> T read(const Json &object, const std::string &key, const std::string &path) {
  const Json &value = member(object, key, path);
  try {
    return value.get<T>();
  } catch (const nlohmann::json::exception &) {
    throw BadField{path + "/" + key, std::string("wrong type ") + value.type_name()};
  }
}

KernelProfileReport kernelFromJson(const Json &j, const std::string &path) {
  KernelProfileReport k;
  k.profile.kernel = read<std::string>(j, "kernel", path);
  k.launch.block = read<std::array<uint32_t, 3>>(j, "block", path);
  k.launch.grid = read<std::array<uint32_t, 3>>(j, "grid", path);
  k.launch.smem = read<uint32_t>(j, "smem", path);
  for (int i = 0; i < 3; ++i) k.profile.block[i] = k.launch.block[i], k.profile.grid[i] = k.launch.grid[i];
  k.profile.warpInstructions = read<uint64_t>(j, "warp_instructions", path);
  k.profile.threadInstructions = read<uint64_t>(j, "thread_instructions", path);
  k.registers = read<int>(j, "registers", path);
  k.registersFrom = read<std::string>(j, "registers_from", path);
  k.staticSharedBytes = read<int>(j, "static_shared_bytes", path);
  k.tensorCores = read<bool>(j, "tensor_cores", path);
  const Json &lines = member(j, "lines", path);
  if (!lines.is_array()) throw BadField{path + "/lines", "expected an array"};
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string at = path + "/lines/" + std::to_string(i);
    const Json &l = lines[i];
    exec::LineProfile line;
    line.line = read<uint32_t>(l, "line", at);
    line.instruction = read<std::string>(l, "instruction", at);
    line.executions = read<uint64_t>(l, "executions", at);
    line.globalRequests = read<uint64_t>(l, "global_requests", at);
    line.globalSectors = read<uint64_t>(l, "global_sectors", at);
    line.globalIdealSectors = read<uint64_t>(l, "global_ideal_sectors", at);
    line.globalBytes = read<uint64_t>(l, "global_bytes", at);
    line.sharedRequests = read<uint64_t>(l, "shared_requests", at);
    line.sharedWavefronts = read<uint64_t>(l, "shared_wavefronts", at);
    line.sharedIdealWavefronts = read<uint64_t>(l, "shared_ideal_wavefronts", at);
    line.localRequests = read<uint64_t>(l, "local_requests", at);
    line.localBytes = read<uint64_t>(l, "local_bytes", at);
    line.store = read<bool>(l, "store", at);
    line.atomic = read<bool>(l, "atomic", at);
    if (line.sharedIdealWavefronts > line.sharedWavefronts || line.globalIdealSectors > line.globalSectors)
      throw BadField{at, "an ideal count above the count"};
    k.profile.lines.push_back(std::move(line));
  }
  return k;
}

} // namespace

Json toJson(const ProfileReport &r) {
  const ProfileCeilings &c = r.ceilings;
  return {{"executor", r.executor},
          {"arch", r.arch},
          {"shape_index", r.shapeIndex},
          {"shape", r.shape},
          {"flops", r.flops ? Json(*r.flops) : Json(nullptr)},
          {"task_bytes", r.taskBytes ? Json(*r.taskBytes) : Json(nullptr)},
          {"ceilings",
           {{"source", c.source},
            {"sm_count", c.smCount},
            {"sm_clock_ghz", c.smClockGHz},
            {"dram_gbs", c.dramGBs},
            {"fp32_gflops", c.fp32Gflops},
            {"tensor_gflops", c.tensorGflops},
            {"shared_wavefronts_per_cycle", c.sharedWavefrontsPerCycle},
            {"issue_per_cycle", c.issuePerCycle},
            {"sm_memory_gbs", c.smMemoryGBs},
            {"request_bytes_to_hide_latency", c.requestBytesToHideLatency}}},
          {"candidate", kernelJson(r.candidate)},
          {"reference", kernelJson(r.reference)},
          {"estimate",
           {{"speedup", r.estimatedSpeedup}, {"is_estimate", true}, {"basis", r.basis}, {"text", describeEstimate(r)}}}};
}

Result<ProfileReport> profileReportFromJson(const nlohmann::json &json) {
  try {
    ProfileReport r;
    const std::string path;
    r.executor = read<std::string>(json, "executor", path);
    r.arch = read<std::string>(json, "arch", path);
    r.shapeIndex = read<size_t>(json, "shape_index", path);
    r.shape = read<tasks::Shape>(json, "shape", path);
    if (const Json &flops = member(json, "flops", path); !flops.is_null()) r.flops = read<double>(json, "flops", path);
    if (const Json &bytes = member(json, "task_bytes", path); !bytes.is_null())
      r.taskBytes = read<double>(json, "task_bytes", path);
    const Json &c = member(json, "ceilings", path);
    r.ceilings.source = read<std::string>(c, "source", "/ceilings");
    r.ceilings.smCount = read<int>(c, "sm_count", "/ceilings");
    r.ceilings.smClockGHz = read<double>(c, "sm_clock_ghz", "/ceilings");
    r.ceilings.dramGBs = read<double>(c, "dram_gbs", "/ceilings");
    r.ceilings.fp32Gflops = read<double>(c, "fp32_gflops", "/ceilings");
    r.ceilings.tensorGflops = read<double>(c, "tensor_gflops", "/ceilings");
    r.ceilings.sharedWavefrontsPerCycle = read<double>(c, "shared_wavefronts_per_cycle", "/ceilings");
    r.ceilings.issuePerCycle = read<double>(c, "issue_per_cycle", "/ceilings");
    r.ceilings.smMemoryGBs = read<double>(c, "sm_memory_gbs", "/ceilings");
    r.ceilings.requestBytesToHideLatency = read<int>(c, "request_bytes_to_hide_latency", "/ceilings");
    if (r.ceilings.smCount <= 0 || r.ceilings.smClockGHz <= 0 || r.ceilings.dramGBs <= 0 || r.ceilings.fp32Gflops <= 0 ||
        r.ceilings.tensorGflops <= 0 || r.ceilings.sharedWavefrontsPerCycle <= 0 || r.ceilings.issuePerCycle <= 0 ||
        r.ceilings.smMemoryGBs <= 0 || r.ceilings.requestBytesToHideLatency <= 0)
      throw BadField{"/ceilings", "a ceiling that is not positive"};
    r.candidate = kernelFromJson(member(json, "candidate", path), "/candidate");
    r.reference = kernelFromJson(member(json, "reference", path), "/reference");
    const Json &estimate = member(json, "estimate", path);
    r.basis = read<std::string>(estimate, "basis", "/estimate");
    // The totals, occupancy and estimate follow from the counts: computed
    // again rather than trusted, so that a hand-edited store cannot disagree.
    estimateKernel(r.candidate, r.ceilings, r.flops, r.arch);
    estimateKernel(r.reference, r.ceilings, r.flops, r.arch);
    if (r.candidate.estimatedSeconds > 0 && r.reference.estimatedSeconds > 0)
      r.estimatedSpeedup = r.reference.estimatedSeconds / r.candidate.estimatedSeconds;
    return r;
  } catch (const BadField &bad) {
    return makeError(ErrorKind::InvalidInput, "profile JSON: " + (bad.path.empty() ? "/" : bad.path) + ": " + bad.what);
  }
}

} // namespace ptxforge::verify
