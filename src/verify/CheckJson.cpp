// checkResultFromJson: a CheckResult read back from its toJson document (the
// run store's copy), so a stored attempt can feed the repair and optimize
// prompts. The document is untrusted (the store may be edited by hand): every
// field is checked for presence and type, and the first problem comes back as
// an InvalidInput naming its JSON Pointer; no nlohmann exception escapes.
#include "verify/Check.h"
#include "verify/Profile.h"

#include <nlohmann/json.hpp>

#include <array>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ptxforge::verify {

namespace {

using Json = nlohmann::json;

/// A value of the document and its JSON Pointer (RFC 6901). `value` is null
/// when the value is missing or its parent was unusable; the problem has then
/// already been recorded, so readers of a null Node return defaults silently.
struct Node {
  const Json *value = nullptr;
  std::string path;
};

std::string escapePointerToken(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

/// Reads typed values out of Nodes, remembering the first problem only: the
/// fields after it are read as defaults and the result is discarded anyway.
class Reader {
public:
  bool failed() const { return problem_.has_value(); }
  Error error() const { return makeError(ErrorKind::InvalidInput, "check result JSON: " + *problem_); }

  void fail(const Node &node, const std::string &what) {
    if (!problem_) problem_ = (node.path.empty() ? std::string("/") : node.path) + ": " + what;
  }

  bool isObject(const Node &node) {
    if (!node.value) return false;
    if (node.value->is_object()) return true;
    fail(node, std::string("expected an object, got ") + node.value->type_name());
    return false;
  }

  /// The elements of an array, each with its path; empty (and a problem) otherwise.
  std::vector<Node> elements(const Node &node) {
    std::vector<Node> out;
    if (!node.value) return out;
    if (!node.value->is_array()) {
      fail(node, std::string("expected an array, got ") + node.value->type_name());
      return out;
    }
    for (size_t i = 0; i < node.value->size(); ++i)
      out.push_back({&(*node.value)[i], node.path + "/" + std::to_string(i)});
    return out;
  }

  /// The member `key` of an object; a missing member is a problem unless `optional`.
  Node field(const Node &object, std::string_view key, bool optional = false) {
    Node out{nullptr, object.path + "/" + escapePointerToken(key)};
    if (!isObject(object)) return out;
    auto it = object.value->find(key);
    if (it == object.value->end()) {
      if (!optional) fail(out, "missing");
      return out;
    }
    out.value = &*it;
    return out;
  }

  std::string text(const Node &node) {
    if (!node.value) return {};
    if (node.value->is_string()) return node.value->get<std::string>();
    fail(node, std::string("expected a string, got ") + node.value->type_name());
    return {};
  }

  bool flag(const Node &node) {
    if (!node.value) return false;
    if (node.value->is_boolean()) return node.value->get<bool>();
    fail(node, std::string("expected true or false, got ") + node.value->type_name());
    return false;
  }

  /// A number. null reads as NaN: JSON has no NaN or infinity, and nlohmann
  /// writes both as null, so a stored speedup of inf comes back as null.
  double number(const Node &node) {
    if (!node.value) return 0;
    if (node.value->is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (node.value->is_number()) return node.value->get<double>();
    fail(node, std::string("expected a number, got ") + node.value->type_name());
    return 0;
  }

  /// A number where toJson writes null for "not measured".
  std::optional<double> optionalNumber(const Node &node) {
    if (!node.value || node.value->is_null()) return std::nullopt;
    return number(node);
  }

  /// An integer that fits `Int` (no fraction, no sign for unsigned fields).
  template <typename Int> Int integer(const Node &node) {
    if (!node.value) return 0;
    const Json &value = *node.value;
    if (!value.is_number_integer()) {
      fail(node, std::string("expected an integer, got ") + value.type_name() +
                     (value.is_number_float() ? " with a fraction" : ""));
      return 0;
    }
    bool fits = value.is_number_unsigned() ? std::in_range<Int>(value.get<uint64_t>())
                                           : std::in_range<Int>(value.get<int64_t>());
    if (!fits) {
      fail(node, "integer out of range");
      return 0;
    }
    return value.is_number_unsigned() ? static_cast<Int>(value.get<uint64_t>())
                                      : static_cast<Int>(value.get<int64_t>());
  }

  // Shorthands for a member of an object.
  std::string text(const Node &object, std::string_view key) { return text(field(object, key)); }
  bool flag(const Node &object, std::string_view key) { return flag(field(object, key)); }
  double number(const Node &object, std::string_view key) { return number(field(object, key)); }
  std::optional<double> optionalNumber(const Node &object, std::string_view key) {
    return optionalNumber(field(object, key));
  }
  template <typename Int> Int integer(const Node &object, std::string_view key) {
    return integer<Int>(field(object, key));
  }

private:
  std::optional<std::string> problem_;
};

std::optional<ptx::Severity> parseSeverity(std::string_view name) {
  for (ptx::Severity severity : {ptx::Severity::Error, ptx::Severity::Warning, ptx::Severity::Note})
    if (name == ptx::severityName(severity)) return severity;
  return std::nullopt;
}

std::vector<ptx::Diagnostic> readDiagnostics(Reader &reader, const Node &array) {
  std::vector<ptx::Diagnostic> diagnostics;
  for (const Node &node : reader.elements(array)) {
    ptx::Diagnostic diagnostic;
    diagnostic.code = reader.text(node, "code");
    Node severity = reader.field(node, "severity");
    std::string severityText = reader.text(severity);
    if (std::optional<ptx::Severity> parsed = parseSeverity(severityText)) diagnostic.severity = *parsed;
    else if (severity.value && severity.value->is_string())
      reader.fail(severity, "unknown severity '" + severityText + "' (valid: error, warning, note)");
    diagnostic.line = reader.integer<uint32_t>(node, "line");
    diagnostic.column = reader.integer<uint32_t>(node, "column");
    diagnostic.message = reader.text(node, "message");
    diagnostic.hint = reader.text(node, "hint");
    diagnostics.push_back(std::move(diagnostic));
  }
  return diagnostics;
}

tasks::Shape readShape(Reader &reader, const Node &node) {
  tasks::Shape shape;
  if (!reader.isObject(node)) return shape;
  for (const auto &[name, value] : node.value->items())
    shape[name] = reader.integer<int64_t>(Node{&value, node.path + "/" + escapePointerToken(name)});
  return shape;
}

/// toJson's "occupancy": what the optimize prompt shows of it comes back the same.
OccupancyReport readOccupancy(Reader &reader, const Node &node) {
  OccupancyReport report;
  report.shape = readShape(reader, reader.field(node, "shape"));
  auto dims = [&](std::string_view key, std::array<uint32_t, 3> &out) {
    std::vector<Node> values = reader.elements(reader.field(node, key));
    if (values.size() != 3 && !reader.failed()) reader.fail(reader.field(node, key), "expected 3 dimensions");
    for (size_t i = 0; i < values.size() && i < 3; ++i) out[i] = reader.integer<uint32_t>(values[i]);
  };
  dims("block", report.launch.block);
  dims("grid", report.launch.grid);
  report.launch.smem = reader.integer<uint32_t>(node, "dynamic_shared_bytes");
  report.staticSharedBytes = reader.integer<int>(node, "static_shared_bytes");
  report.registers = reader.integer<int>(node, "registers");
  report.registersFrom = reader.text(node, "registers_from");
  toolchain::Occupancy &o = report.occupancy;
  o.sharedBytesPerBlock = reader.integer<int>(node, "shared_bytes_per_block");
  o.launchable = reader.flag(node, "launchable");
  o.blocksPerSm = reader.integer<int>(node, "blocks_per_sm");
  o.warpsPerSm = reader.integer<int>(node, "warps_per_sm");
  o.occupancy = reader.number(node, "occupancy");
  o.limiter = reader.text(node, "limiter");
  Node by = reader.field(node, "blocks_by");
  o.blocksByRegisters = reader.integer<int>(by, "registers");
  o.blocksBySharedMemory = reader.integer<int>(by, "shared_memory");
  o.blocksByWarps = reader.integer<int>(by, "warps");
  o.blocksBySlots = reader.integer<int>(by, "slots");
  o.waves = reader.number(node, "waves");
  o.smCount = reader.integer<int>(node, "sm_count");
  return report;
}

std::array<uint32_t, 3> readDims(Reader &reader, const Node &node) {
  std::array<uint32_t, 3> dims{1, 1, 1};
  std::vector<Node> elements = reader.elements(node);
  if (!reader.failed() && elements.size() != 3) {
    reader.fail(node, "expected 3 dimensions, got " + std::to_string(elements.size()));
    return dims;
  }
  for (size_t i = 0; i < elements.size() && i < 3; ++i) dims[i] = reader.integer<uint32_t>(elements[i]);
  return dims;
}

std::vector<std::string> readStrings(Reader &reader, const Node &node) {
  std::vector<std::string> out;
  for (const Node &element : reader.elements(node)) out.push_back(reader.text(element));
  return out;
}

std::optional<toolchain::CompileResult> readCompile(Reader &reader, const Node &root, Verdict verdict,
                                                    Stage stage) {
  Node resources = reader.field(root, "resources");
  if (!resources.value || resources.value->is_null()) return std::nullopt;
  toolchain::CompileResult compile;
  toolchain::ResourceUsage &r = compile.resources;
  r.registers = reader.integer<int>(resources, "registers");
  r.spillStoreBytes = reader.integer<int>(resources, "spill_store_bytes");
  r.spillLoadBytes = reader.integer<int>(resources, "spill_load_bytes");
  r.stackFrameBytes = reader.integer<int>(resources, "stack_bytes");
  r.sharedBytes = reader.integer<int>(resources, "shared_bytes");
  r.localBytes = reader.integer<int>(resources, "local_bytes");
  r.barriers = reader.integer<int>(resources, "barriers");
  compile.compileMs = reader.number(resources, "compile_ms");
  // "known" and the "compile" object came later than the rest; documents
  // stored before them read as a compile that reported its resources
  // (registers -1 is the "not reported" marker) and passed unless the gate
  // stopped on it.
  Node known = reader.field(resources, "known", /*optional=*/true);
  r.known = known.value ? reader.flag(known) : r.registers >= 0;
  compile.ok = !(verdict == Verdict::CompileError && stage == Stage::Compile);
  Node details = reader.field(root, "compile", /*optional=*/true);
  if (details.value && !details.value->is_null()) {
    compile.ok = reader.flag(details, "ok");
    compile.diagnostics = readDiagnostics(reader, reader.field(details, "diagnostics"));
    compile.advisories = readStrings(reader, reader.field(details, "advisories"));
    compile.errorLog = reader.text(details, "error_log");
  }
  return compile;
}

tasks::CompareResult readCompare(Reader &reader, const Node &output) {
  tasks::CompareResult compare;
  compare.maxAbsError = reader.number(output, "max_abs_error");
  compare.maxRelError = reader.number(output, "max_rel_error");
  compare.mismatches = reader.integer<size_t>(output, "mismatches");
  compare.count = reader.integer<size_t>(output, "compared");
  Node first = reader.field(output, "first_mismatch", /*optional=*/true);
  if (first.value) {
    compare.firstMismatch = reader.integer<size_t>(first, "index");
    compare.firstGotText = reader.text(first, "got");
    compare.firstWantText = reader.text(first, "expected");
  }
  // Older documents lack these two: compareBuffers passes exactly when nothing mismatched.
  Node within = reader.field(output, "within_tolerance", /*optional=*/true);
  compare.passed = within.value ? reader.flag(within) : compare.mismatches == 0;
  Node nanInGot = reader.field(output, "nan_in_got", /*optional=*/true);
  compare.nanInGot = nanInGot.value ? reader.integer<size_t>(nanInGot) : 0;
  // describe() quotes the first mismatch of a failed comparison.
  if (!compare.passed && !compare.firstMismatch && !reader.failed())
    reader.fail(first, "missing (the comparison failed, so there is a first mismatch)");
  return compare;
}

std::vector<TrialReport> readTrials(Reader &reader, const Node &array) {
  std::vector<TrialReport> trials;
  for (const Node &node : reader.elements(array)) {
    TrialReport trial;
    trial.shapeIndex = reader.integer<size_t>(node, "shape_index");
    trial.shape = readShape(reader, reader.field(node, "shape"));
    trial.trial = reader.integer<int>(node, "trial");
    trial.afterTiming = reader.flag(node, "after_timing");
    // Fields newer than the first stored results: optional.
    if (Node drawn = reader.field(node, "drawn", /*optional=*/true); drawn.value) trial.drawn = reader.flag(drawn);
    if (Node timed = reader.field(node, "timed", /*optional=*/true); timed.value) trial.timed = reader.flag(timed);
    if (Node executor = reader.field(node, "executor", /*optional=*/true); executor.value)
      trial.executor = reader.text(executor);
    if (Node probe = reader.field(node, "probe", /*optional=*/true); probe.value) trial.probe = reader.text(probe);
    trial.passed = reader.flag(node, "passed");
    trial.launch.grid = readDims(reader, reader.field(node, "grid"));
    trial.launch.block = readDims(reader, reader.field(node, "block"));
    trial.launch.smem = reader.integer<uint32_t>(node, "smem");
    for (const Node &outputNode : reader.elements(reader.field(node, "outputs"))) {
      OutputReport output;
      output.param = reader.text(outputNode, "param");
      output.guardBytesBefore = reader.integer<size_t>(outputNode, "guard_bytes_before");
      output.guardBytesAfter = reader.integer<size_t>(outputNode, "guard_bytes_after");
      if (Node input = reader.field(outputNode, "is_input", /*optional=*/true); input.value)
        output.isInput = reader.flag(input);
      if (Node changed = reader.field(outputNode, "input_bytes_changed", /*optional=*/true); changed.value)
        output.inputBytesChanged = reader.integer<size_t>(changed);
      output.compare = readCompare(reader, outputNode);
      Node detail = reader.field(outputNode, "guard_detail", /*optional=*/true);
      if (detail.value) output.guardDetail = reader.text(detail);
      trial.outputs.push_back(std::move(output));
    }
    trials.push_back(std::move(trial));
  }
  return trials;
}

TimingStats readStats(Reader &reader, const Node &node) {
  TimingStats stats;
  stats.median = reader.number(node, "median_ms");
  stats.p10 = reader.number(node, "p10_ms");
  stats.p90 = reader.number(node, "p90_ms");
  stats.min = reader.number(node, "min_ms");
  stats.max = reader.number(node, "max_ms");
  stats.samples = reader.integer<size_t>(node, "samples");
  return stats;
}

std::vector<BenchmarkReport> readBenchmarks(Reader &reader, const Node &array) {
  std::vector<BenchmarkReport> benchmarks;
  for (const Node &node : reader.elements(array)) {
    BenchmarkReport b;
    b.shapeIndex = reader.integer<size_t>(node, "shape_index");
    b.shape = readShape(reader, reader.field(node, "shape"));
    b.candidate = readStats(reader, reader.field(node, "candidate"));
    b.baseline = readStats(reader, reader.field(node, "baseline"));
    b.speedup = reader.number(node, "speedup");
    Node band = reader.field(node, "speedup_band");
    std::vector<Node> bounds = reader.elements(band);
    if (!reader.failed() && bounds.size() != 2)
      reader.fail(band, "expected [low, high], got " + std::to_string(bounds.size()) + " numbers");
    if (bounds.size() == 2) {
      b.speedupLow = reader.number(bounds[0]);
      b.speedupHigh = reader.number(bounds[1]);
    }
    b.gflops = reader.optionalNumber(node, "gflops");
    b.gbps = reader.optionalNumber(node, "gbps");
    b.baselineGflops = reader.optionalNumber(node, "baseline_gflops");
    b.baselineGbps = reader.optionalNumber(node, "baseline_gbps");
    b.bandwidthFraction = reader.optionalNumber(node, "dram_bandwidth_fraction");
    b.copyCeilingFraction = reader.optionalNumber(node, "copy_ceiling_fraction");
    b.fp32CeilingFraction = reader.optionalNumber(node, "fp32_ceiling_fraction");
    benchmarks.push_back(std::move(b));
  }
  return benchmarks;
}

CheckResult readCheckResult(Reader &reader, const Node &root) {
  CheckResult result;
  if (!reader.isObject(root)) return result;
  Node verdict = reader.field(root, "verdict");
  std::string verdictText = reader.text(verdict);
  if (std::optional<Verdict> parsed = parseVerdict(verdictText)) result.verdict = *parsed;
  else if (verdict.value && verdict.value->is_string())
    reader.fail(verdict, "unknown verdict '" + verdictText +
                             "' (valid: correct, wrong, compile-error, lint-error, crashed, timeout, launch-error, "
                             "rejected, no-ptx, not-verified)");
  Node stage = reader.field(root, "stage");
  std::string stageText = reader.text(stage);
  if (std::optional<Stage> parsed = parseStage(stageText)) result.stage = *parsed;
  else if (stage.value && stage.value->is_string())
    reader.fail(stage, "unknown stage '" + stageText + "' (valid: extract, lint, compile, execute, benchmark, done)");
  result.summary = reader.text(root, "summary");
  result.diagnostics = readDiagnostics(reader, reader.field(root, "diagnostics"));
  result.compile = readCompile(reader, root, result.verdict, result.stage);

  Node kernel = reader.field(root, "kernel");
  if (kernel.value && !kernel.value->is_null()) {
    exec::KernelInfo info;
    info.registerCount = reader.integer<int>(kernel, "registers");
    info.staticSharedBytes = reader.integer<int>(kernel, "static_shared_bytes");
    info.localBytes = reader.integer<int>(kernel, "local_bytes");
    info.maxThreadsPerBlock = reader.integer<int>(kernel, "max_threads_per_block");
    result.kernel = info;
  }

  // Absent from documents written before occupancy was reported.
  Node occupancy = reader.field(root, "occupancy", true);
  if (occupancy.value && !occupancy.value->is_null()) result.occupancy = readOccupancy(reader, occupancy);

  result.trials = readTrials(reader, reader.field(root, "correctness"));
  result.benchmarks = readBenchmarks(reader, reader.field(root, "timing"));
  result.executorError = reader.text(root, "executor_error");
  // Results stored before 2026-12-05 have none.
  if (Node driver = reader.field(root, "driver_error", /*optional=*/true); driver.value)
    result.driverError = reader.text(driver);

  Node provenance = reader.field(root, "provenance");
  result.task = reader.text(provenance, "task");
  result.arch = reader.text(provenance, "arch");
  result.device = reader.text(provenance, "device");
  result.seed = reader.integer<uint64_t>(provenance, "seed");
  for (const Node &index : reader.elements(reader.field(provenance, "shapes")))
    result.shapeIndices.push_back(reader.integer<size_t>(index));
  result.referenceCompiler = reader.text(provenance, "reference_compiler");
  std::string compiler = reader.text(provenance, "compiler");
  if (result.compile) result.compile->toolVersion = std::move(compiler);
  return result;
}

} // namespace

Result<CheckResult> checkResultFromJson(const nlohmann::json &json) {
  // The reader checks every type before reading it; the catch is a backstop
  // so that no overlooked corner of nlohmann's API throws into the caller.
  try {
    Reader reader;
    CheckResult result = readCheckResult(reader, Node{&json, ""});
    if (reader.failed()) return reader.error();
    // /profile holds the emulator's profile, Nsight Compute's (/profile/ncu),
    // or both: on a GPU without the emulator only the second.
    const bool ncuAlone = json.contains("profile") && json["profile"].is_object() && json["profile"].size() == 1 &&
                          json["profile"].contains("ncu");
    if (auto profile = json.find("profile"); profile != json.end() && !ncuAlone) {
      Result<ProfileReport> report = profileReportFromJson(*profile);
      if (!report) return makeError(ErrorKind::InvalidInput, "check result JSON: /profile: " + report.error().message);
      result.profile = std::move(*report);
    }
    if (auto profile = json.find("profile"); profile != json.end() && profile->is_object())
      if (auto ncu = profile->find("ncu"); ncu != profile->end()) {
        Result<NcuProfileReport> report = ncuProfileFromJson(*ncu);
        if (!report) return makeError(ErrorKind::InvalidInput, "check result JSON: " + report.error().message);
        result.ncuProfile = std::move(*report);
      }
    return result;
  } catch (const nlohmann::json::exception &e) {
    return makeError(ErrorKind::InvalidInput, std::string("check result JSON: ") + e.what());
  }
}

} // namespace ptxforge::verify
