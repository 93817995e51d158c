// Nsight Compute under `check --profile` on a GPU: see NcuProfile.h.
#include "verify/NcuProfile.h"

#include "support/Process.h"
#include "tasks/Expression.h"
#include "tasks/Inputs.h"
#include "tasks/Reference.h"
#include "verify/Check.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <system_error>
#include <unistd.h>

namespace ptxforge::verify {
namespace {

// ---------------------------------------------------------------------------
// CSV records

Error csvError(size_t line, std::string message) {
  return makeError(ErrorKind::InvalidInput, "ncu-csv", "ncu CSV: " + std::move(message), static_cast<uint32_t>(line));
}

/// Splits one line into CSV fields (RFC 4180 quoting within the line: ncu
/// never puts a line break inside a field).
Result<std::vector<std::string>> splitRecord(std::string_view line, size_t lineNumber, const NcuCsvLimits &limits) {
  std::vector<std::string> fields;
  size_t i = 0;
  while (true) {
    std::string field;
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          closed = true;
          ++i;
          break;
        }
        field += line[i++];
      }
      if (!closed) return csvError(lineNumber, "a quoted field is not closed");
      if (i < line.size() && line[i] != ',')
        return csvError(lineNumber, fmt::format("'{}' after a closing quote (column {})", line[i], i + 1));
    } else {
      size_t end = line.find(',', i);
      if (end == std::string_view::npos) end = line.size();
      field.assign(line.substr(i, end - i));
      if (field.find('"') != std::string::npos) return csvError(lineNumber, "a quote inside an unquoted field");
      i = end;
    }
    if (field.size() > limits.maxFieldBytes)
      return csvError(lineNumber, fmt::format("a field of {} bytes (at most {})", field.size(), limits.maxFieldBytes));
    fields.push_back(std::move(field));
    if (fields.size() > limits.maxColumns)
      return csvError(lineNumber, fmt::format("more than {} columns", limits.maxColumns));
    if (i >= line.size()) break;
    ++i; // the comma
    if (i == line.size()) { // a trailing comma: one more, empty field
      fields.emplace_back();
      break;
    }
  }
  return fields;
}

NcuValue parseValue(const std::string &text, const std::string &unit) {
  NcuValue value;
  value.text = text;
  value.unit = unit;
  std::string digits;
  for (char c : text)
    if (c != ',' && c != ' ') digits += c; // ncu groups thousands with commas: "1,048,576"
  if (digits.empty() || digits == "n/a") return value;
  errno = 0;
  char *end = nullptr;
  const double number = std::strtod(digits.c_str(), &end);
  if (errno == 0 && end == digits.c_str() + digits.size() && std::isfinite(number)) value.number = number;
  return value;
}

/// The identification columns of a launch (everything else is a metric).
const std::set<std::string> &identificationColumns() {
  static const std::set<std::string> columns = {
      "ID",     "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
      "Block Size", "Grid Size", "Device",    "CC",          "Section Name", "Function Name", "Demangled Name",
      "Metric Name", "Metric Unit", "Metric Value", "Estimated Speedup", "Estimated Speedup Type",
      "Rule Name", "Rule Type", "Rule Description"};
  return columns;
}

void setIdentification(NcuKernelRow &row, const std::vector<std::string> &header, const std::vector<std::string> &fields) {
  for (size_t c = 0; c < header.size(); ++c) {
    const std::string &name = header[c];
    if (name == "ID") row.id = fields[c];
    else if (name == "Kernel Name") row.kernelName = fields[c];
    else if (name == "Block Size") row.blockSize = fields[c];
    else if (name == "Grid Size") row.gridSize = fields[c];
    else if (name == "Device") row.device = fields[c];
    else if (name == "CC") row.computeCapability = fields[c];
  }
}

// ---------------------------------------------------------------------------
// Small helpers

std::string joinCommand(const std::vector<std::string> &argv) {
  std::string out;
  for (const std::string &arg : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !arg.empty() && arg.find_first_of(" \t'\"$\\()|&;<>*?") == std::string::npos;
    out += plain ? arg : "'" + arg + "'";
  }
  return out;
}

/// The lines of `text` that ncu marks as errors, and the launcher's, at most a few.
std::string errorLines(const std::string &text) {
  std::string out;
  size_t start = 0;
  int kept = 0;
  while (start < text.size() && kept < 4) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    if (line.find("==ERROR==") != std::string_view::npos || line.find("ptxforge_ncu_launch:") != std::string_view::npos) {
      out += (out.empty() ? "" : "; ") + std::string(line.substr(0, 400));
      ++kept;
    }
    start = end + 1;
  }
  return out;
}

std::string lastLines(const std::string &text, size_t bytes) {
  std::string trimmed = text;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ')) trimmed.pop_back();
  if (trimmed.size() > bytes) trimmed = "..." + trimmed.substr(trimmed.size() - bytes);
  for (char &c : trimmed)
    if (c == '\n') c = ' ';
  return trimmed;
}

/// A temporary folder, removed with everything in it when this goes.
struct TempFolder {
  std::filesystem::path path;
  TempFolder() {
    std::error_code error;
    std::filesystem::path base = std::filesystem::temp_directory_path(error);
    if (error) base = "/tmp";
    std::string pattern = (base / "ptxforge-ncu-XXXXXX").string();
    if (::mkdtemp(pattern.data())) path = pattern;
  }
  ~TempFolder() {
    std::error_code error;
    if (!path.empty()) std::filesystem::remove_all(path, error);
  }
};

bool writeFile(const std::filesystem::path &path, const void *data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char *>(data), static_cast<std::streamsize>(bytes));
  return static_cast<bool>(out);
}

std::string hexOf(const std::vector<std::byte> &bytes) {
  std::string out;
  for (std::byte b : bytes) out += fmt::format("{:02x}", static_cast<unsigned>(b));
  return out;
}

/// Bytes of the pointer parameters of `task` on `shape` (0 when an expression fails).
uint64_t bufferBytes(const tasks::TaskSpec &task, const tasks::Shape &shape) {
  uint64_t total = 0;
  for (const tasks::ParamSpec &param : task.params)
    if (param.isPointer)
      if (Result<int64_t> count = tasks::evaluate(param.count, shape); count && *count > 0)
        total += static_cast<uint64_t>(*count) * tasks::elementSize(param.type);
  return total;
}

std::optional<double> valueOf(const NcuKernelRow *row, const char *metric) {
  if (!row || !metric) return std::nullopt;
  auto it = row->metrics.find(metric);
  if (it == row->metrics.end() || !it->second.number) return std::nullopt;
  double value = *it->second.number;
  // Times in nanoseconds whatever unit ncu chose (--print-units base asks for ns).
  const std::string &unit = it->second.unit;
  if (unit == "usecond") value *= 1e3;
  else if (unit == "msecond") value *= 1e6;
  else if (unit == "second") value *= 1e9;
  return value;
}

std::optional<double> metricValue(const NcuKernelRow *row, const NcuMetricSpec &spec) {
  std::optional<double> numerator = valueOf(row, spec.metric);
  if (!spec.divisor) return numerator;
  std::optional<double> denominator = valueOf(row, spec.divisor);
  if (!numerator || !denominator || *denominator <= 0) return std::nullopt;
  return *numerator / *denominator;
}

std::string formatValue(std::optional<double> value, const std::string &unit) {
  if (!value) return "-";
  const double v = *value;
  if (unit == "ns") {
    if (v >= 1e6) return fmt::format("{:.3f} ms", v / 1e6);
    if (v >= 1e3) return fmt::format("{:.2f} us", v / 1e3);
    return fmt::format("{:.0f} ns", v);
  }
  if (unit == "%") return fmt::format("{:.1f}%", v);
  if (unit == "sectors/request" || unit == "warps/instruction") return fmt::format("{:.2f}", v);
  if (v == static_cast<double>(static_cast<int64_t>(v))) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{:.2f}", v);
}

nlohmann::json optionalNumber(std::optional<double> value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

Result<std::optional<double>> readOptionalNumber(const nlohmann::json &object, const char *key, const std::string &where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<double>{};
  if (!it->is_number()) return makeError(ErrorKind::InvalidInput, fmt::format("{}/{}: not a number", where, key));
  return std::optional<double>{it->get<double>()};
}

} // namespace

// ---------------------------------------------------------------------------
// The CSV

Result<std::vector<NcuKernelRow>> parseNcuCsv(std::string_view text, const NcuCsvLimits &limits) {
  if (text.size() > limits.maxBytes)
    return csvError(0, fmt::format("{} bytes of output (at most {})", text.size(), limits.maxBytes));
  std::vector<std::string> header;
  std::vector<std::string> units;
  bool details = false;
  size_t nameColumn = 0, unitColumn = 0, valueColumn = 0, idColumn = 0;
  std::vector<NcuKernelRow> rows;
  std::map<std::string, size_t> rowById; // details layout: a launch's rows gather by ID
  size_t records = 0;
  size_t lineNumber = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++lineNumber;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // Records begin with a quote; ncu's ==PROF== lines and the program's own
    // output do not.
    if (line.empty() || line.front() != '"') continue;
    Result<std::vector<std::string>> fields = splitRecord(line, lineNumber, limits);
    if (!fields) return fields.error();
    if (++records > limits.maxRows) return csvError(lineNumber, fmt::format("more than {} records", limits.maxRows));
    if (header.empty()) {
      header = std::move(*fields);
      auto column = [&](const char *name) -> std::optional<size_t> {
        auto it = std::find(header.begin(), header.end(), name);
        if (it == header.end()) return std::nullopt;
        return static_cast<size_t>(it - header.begin());
      };
      if (!column("ID") || !column("Kernel Name"))
        return csvError(lineNumber, "the first record is not ncu's header (no \"ID\" and \"Kernel Name\" columns)");
      idColumn = *column("ID");
      if (column("Metric Name") && column("Metric Value")) {
        details = true;
        nameColumn = *column("Metric Name");
        valueColumn = *column("Metric Value");
        unitColumn = column("Metric Unit").value_or(header.size());
      }
      continue;
    }
    if (fields->size() != header.size())
      return csvError(lineNumber,
                      fmt::format("{} fields where the header has {}", fields->size(), header.size()));
    if (details) {
      const std::string &id = (*fields)[idColumn];
      auto [it, inserted] = rowById.try_emplace(id, rows.size());
      if (inserted) {
        rows.emplace_back();
        setIdentification(rows.back(), header, *fields);
      }
      const std::string unit = unitColumn < header.size() ? (*fields)[unitColumn] : "";
      rows[it->second].metrics[(*fields)[nameColumn]] = parseValue((*fields)[valueColumn], unit);
      continue;
    }
    // The raw page: the record under the header with an empty ID holds the units.
    if (units.empty() && rows.empty() && (*fields)[idColumn].empty()) {
      units = std::move(*fields);
      continue;
    }
    NcuKernelRow row;
    setIdentification(row, header, *fields);
    for (size_t c = 0; c < header.size(); ++c)
      if (!identificationColumns().count(header[c]))
        row.metrics[header[c]] = parseValue((*fields)[c], c < units.size() ? units[c] : "");
    rows.push_back(std::move(row));
  }
  if (header.empty()) return csvError(0, "no CSV header in ncu's output (no record starting with \"ID\")");
  return rows;
}

// ---------------------------------------------------------------------------
// The metric set

const std::vector<NcuMetricSpec> &ncuMetricSet() {
  static const std::vector<NcuMetricSpec> metrics = {
      {"time", "duration", "gpu__time_duration.sum", nullptr, "ns",
       "wall time of the one launch on the GPU (clocks not locked: --clock-control none)"},
      {"sm_throughput", "SM throughput", "sm__throughput.avg.pct_of_peak_sustained_elapsed", nullptr, "%",
       "the busiest SM unit (issue, pipes, shared memory) as a share of its peak over the launch"},
      {"dram_throughput", "DRAM throughput", "dram__throughput.avg.pct_of_peak_sustained_elapsed", nullptr, "%",
       "device-memory traffic as a share of its peak over the launch"},
      {"achieved_occupancy", "achieved occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active", nullptr, "%",
       "warps resident per active cycle as a share of the SM's maximum"},
      {"l1_hit_rate", "L1 hit rate", "l1tex__t_sector_hit_rate.pct", nullptr, "%",
       "sectors requested from L1/TEX that hit there"},
      {"l2_hit_rate", "L2 hit rate", "lts__t_sector_hit_rate.pct", nullptr, "%", "sectors requested from L2 that hit there"},
      {"registers", "registers/thread", "launch__registers_per_thread", nullptr, "registers",
       "registers per thread of the cubin that ran"},
      {"shared_load_wavefronts", "shared-load wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
       nullptr, "wavefronts", "shared-memory wavefronts of loads (one per 128 bytes a bank cycle delivers)"},
      {"shared_load_bank_conflicts", "shared-load bank conflicts",
       "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", nullptr, "conflicts",
       "extra wavefronts shared-memory loads took for bank conflicts"},
      {"shared_store_wavefronts", "shared-store wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
       nullptr, "wavefronts", "shared-memory wavefronts of stores"},
      {"shared_store_bank_conflicts", "shared-store bank conflicts",
       "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", nullptr, "conflicts",
       "extra wavefronts shared-memory stores took for bank conflicts"},
      {"global_load_sectors_per_request", "global-load sectors/request",
       "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
       "sectors/request", "32-byte sectors per warp-wide global load (4 for coalesced 4-byte loads)"},
      {"global_store_sectors_per_request", "global-store sectors/request",
       "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
       "sectors/request", "32-byte sectors per warp-wide global store"},
  };
  return metrics;
}

std::string ncuMetricList() {
  std::vector<std::string> names;
  for (const NcuMetricSpec &spec : ncuMetricSet()) {
    names.push_back(spec.metric);
    if (spec.divisor) names.push_back(spec.divisor);
  }
  std::string out;
  for (const std::string &name : names) out += (out.empty() ? "" : ",") + name;
  return out;
}

NcuProfileReport pairNcuRows(const NcuKernelRow *candidate, const NcuKernelRow *reference) {
  NcuProfileReport report;
  if (candidate) report.candidateKernel = candidate->kernelName;
  if (reference) report.referenceKernel = reference->kernelName;
  for (const NcuMetricSpec &spec : ncuMetricSet())
    report.metrics.push_back({spec.key, spec.label, spec.divisor ? fmt::format("{} / {}", spec.metric, spec.divisor)
                                                                 : std::string(spec.metric),
                              spec.unit, metricValue(candidate, spec), metricValue(reference, spec)});
  // Stall reasons: the candidate's largest, each beside the reference's.
  auto stallsOf = [](const NcuKernelRow *row) {
    std::map<std::string, double> stalls;
    if (!row) return stalls;
    for (const auto &[name, value] : row->metrics) {
      if (!value.number || name.size() <= kNcuStallPrefix.size() + kNcuStallSuffix.size()) continue;
      if (name.compare(0, kNcuStallPrefix.size(), kNcuStallPrefix) != 0) continue;
      if (name.compare(name.size() - kNcuStallSuffix.size(), kNcuStallSuffix.size(), kNcuStallSuffix) != 0) continue;
      std::string reason =
          name.substr(kNcuStallPrefix.size(), name.size() - kNcuStallPrefix.size() - kNcuStallSuffix.size());
      // "selected" is the warp that issued, not a stall; the "_not_issued"
      // variants count the same reasons again.
      if (reason == "selected" || reason.find("not_issued") != std::string::npos) continue;
      stalls[reason] = *value.number;
    }
    return stalls;
  };
  const std::map<std::string, double> mine = stallsOf(candidate), theirs = stallsOf(reference);
  std::vector<std::pair<std::string, double>> ranked(mine.begin(), mine.end());
  if (ranked.empty()) ranked.assign(theirs.begin(), theirs.end()); // the candidate's run failed
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
  for (size_t i = 0; i < ranked.size() && report.stalls.size() < 5; ++i) {
    if (ranked[i].second <= 0) break;
    NcuStall stall{ranked[i].first, std::nullopt, std::nullopt};
    if (auto it = mine.find(stall.reason); it != mine.end()) stall.candidate = it->second;
    if (auto it = theirs.find(stall.reason); it != theirs.end()) stall.reference = it->second;
    report.stalls.push_back(std::move(stall));
  }
  return report;
}

// ---------------------------------------------------------------------------
// Running ncu

std::string findNcu() {
  if (const char *setting = std::getenv("PTXFORGE_NCU"); setting && *setting)
    return isExecutableFile(setting) ? setting : "";
  if (std::optional<std::string> onPath = findOnPath("ncu")) return *onPath;
  if (isExecutableFile("/usr/local/cuda/bin/ncu")) return "/usr/local/cuda/bin/ncu";
  return "";
}

std::string findNcuLauncher() {
#ifndef PTXFORGE_NCU_LAUNCH_BUILD_PATH
#define PTXFORGE_NCU_LAUNCH_BUILD_PATH nullptr
#endif
  return findHelperProgram("", "PTXFORGE_NCU_LAUNCH", "ptxforge_ncu_launch", PTXFORGE_NCU_LAUNCH_BUILD_PATH);
}

std::string ncuVersion(const std::string &ncuPath) {
  if (ncuPath.empty()) return "";
  ProcessOptions options;
  options.timeout = std::chrono::milliseconds(20'000);
  options.maxStdoutBytes = 64 << 10;
  options.stderrTailBytes = 4 << 10;
  Result<ProcessResult> ran = runProcess({ncuPath, "--version"}, options);
  if (!ran || ran->exitCode != 0) return "";
  const std::string &out = ran->standardOutput;
  size_t at = out.find("Version ");
  if (at == std::string::npos) return "";
  at += 8;
  size_t end = out.find_first_of(" \r\n", at);
  return out.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

NcuRun runUnderNcu(const NcuLaunch &launch, const NcuRunOptions &options) {
  NcuRun run;
  const std::string ncu = options.ncuPath.empty() ? findNcu() : options.ncuPath;
  if (ncu.empty()) {
    run.error = "ncu (Nsight Compute) not found: not on PATH, not /usr/local/cuda/bin/ncu; set PTXFORGE_NCU";
    return run;
  }
  const std::string launcher = options.launcherPath.empty() ? findNcuLauncher() : options.launcherPath;
  if (launcher.empty()) {
    run.error = "ptxforge_ncu_launch not found beside the executable (set PTXFORGE_NCU_LAUNCH)";
    return run;
  }
  TempFolder folder;
  if (folder.path.empty()) {
    run.error = std::string("cannot make a temporary folder: ") + std::strerror(errno);
    return run;
  }
  // The launch as the launcher reads it: launch.json, module.cubin and one
  // file per buffer with initial contents.
  nlohmann::json params = nlohmann::json::array();
  for (size_t i = 0; i < launch.params.size(); ++i) {
    const NcuLaunch::Param &param = launch.params[i];
    if (!param.isBuffer) {
      params.push_back({{"scalar", hexOf(param.bytes)}});
      continue;
    }
    nlohmann::json buffer = {{"bytes", param.bufferBytes}};
    if (!param.bytes.empty()) {
      const std::string name = fmt::format("param{}.bin", i);
      if (!writeFile(folder.path / name, param.bytes.data(), param.bytes.size())) {
        run.error = "cannot write " + (folder.path / name).string();
        return run;
      }
      buffer["file"] = name;
    }
    params.push_back(std::move(buffer));
  }
  const nlohmann::json spec = {{"kernel", launch.kernel},
                               {"module", "module.cubin"},
                               {"grid", launch.launch.grid},
                               {"block", launch.launch.block},
                               {"smem", launch.launch.smem},
                               {"params", std::move(params)}};
  const std::string specText = spec.dump(1);
  if (!writeFile(folder.path / "module.cubin", launch.cubin.data(), launch.cubin.size()) ||
      !writeFile(folder.path / "launch.json", specText.data(), specText.size())) {
    run.error = "cannot write the launch into " + folder.path.string();
    return run;
  }
  const std::vector<std::string> argv = {ncu,
                                         "--csv",
                                         "--page",
                                         "raw",
                                         "--print-units",
                                         "base",
                                         "--clock-control",
                                         "none",
                                         "--kernel-name",
                                         launch.kernel,
                                         "--launch-count",
                                         "1",
                                         "--section",
                                         "WarpStateStats",
                                         "--metrics",
                                         ncuMetricList(),
                                         launcher,
                                         folder.path.string(),
                                         fmt::format("--device={}", options.deviceOrdinal)};
  run.command = joinCommand(argv);
  ProcessOptions processOptions;
  processOptions.timeout = options.timeout;
  processOptions.maxStdoutBytes = options.maxOutputBytes;
  processOptions.stderrTailBytes = 16 << 10;
  Result<ProcessResult> ran = runProcess(argv, processOptions);
  if (!ran) {
    run.error = "cannot run ncu: " + render(ran.error());
    return run;
  }
  run.elapsedMs = ran->elapsedMs;
  const std::string both = ran->standardOutput + "\n" + ran->standardError;
  if (both.find("ERR_NVGPUCTRPERM") != std::string::npos) {
    run.error = "no permission to read the GPU's performance counters (ERR_NVGPUCTRPERM): run as root, or load the "
                "driver with NVreg_RestrictProfilingToAdminUsers=0";
    return run;
  }
  if (ran->timedOut) {
    run.error = fmt::format("ncu did not finish within {} s (killed)", options.timeout.count() / 1000.0);
    return run;
  }
  if (ran->outputTooLarge) {
    run.error = fmt::format("ncu printed more than {} bytes (killed)", options.maxOutputBytes);
    return run;
  }
  if (ran->exitCode != 0) {
    std::string why = errorLines(both);
    run.error = fmt::format("ncu exited with status {}: {}", ran->exitCode,
                            why.empty() ? lastLines(both, 400) : why);
    return run;
  }
  Result<std::vector<NcuKernelRow>> rows = parseNcuCsv(ran->standardOutput);
  if (!rows) {
    run.error = render(rows.error());
    return run;
  }
  if (rows->empty()) {
    run.error = fmt::format("ncu profiled no launch of '{}': {}", launch.kernel, lastLines(both, 400));
    return run;
  }
  run.row = std::move(rows->front());
  return run;
}

Result<NcuLaunch> makeNcuLaunch(const tasks::TaskSpec &task, const tasks::Shape &shape,
                                const tasks::ResolvedLaunch &launch, std::vector<uint8_t> cubin, uint64_t seed) {
  NcuLaunch out;
  out.cubin = std::move(cubin);
  out.kernel = task.kernel;
  out.launch = launch;
  for (const tasks::ParamSpec &param : task.params) {
    NcuLaunch::Param arg;
    if (param.tensorMap)
      return makeError(ErrorKind::InvalidInput,
                       fmt::format("parameter '{}' is a tensor map, which the ncu launcher does not make", param.name));
    if (!param.isPointer) {
      Result<std::vector<std::byte>> bytes = tasks::scalarArgument(param, shape);
      if (!bytes) return bytes.error();
      arg.bytes = std::move(*bytes);
      out.params.push_back(std::move(arg));
      continue;
    }
    Result<int64_t> count = tasks::evaluate(param.count, shape);
    if (!count) return count.error();
    arg.isBuffer = true;
    arg.bufferBytes = std::max<uint64_t>(1, static_cast<uint64_t>(std::max<int64_t>(0, *count)) *
                                                tasks::elementSize(param.type));
    if (param.role == tasks::ParamRole::Input || param.role == tasks::ParamRole::InOut)
      arg.bytes = tasks::generateInput(param, *count, seed, 0);
    out.params.push_back(std::move(arg));
  }
  return out;
}

void addNcuProfile(const tasks::TaskSpec &task, const Candidate &candidate, const tasks::CompiledReference &reference,
                   CheckResult &result, const NcuRunOptions &options) {
  NcuProfileReport report;
  // The shape: the timed one (the headline benchmark), else the checked task
  // shape with the most data.
  if (const BenchmarkReport *headline = headlineBenchmark(result)) {
    report.shapeIndex = headline->shapeIndex;
    report.shape = headline->shape;
  } else {
    uint64_t most = 0;
    bool found = false;
    for (const TrialReport &trial : result.trials) {
      if (trial.drawn || !trial.executor.empty()) continue;
      const uint64_t bytes = bufferBytes(task, trial.shape);
      if (!found || bytes > most) {
        found = true;
        most = bytes;
        report.shapeIndex = trial.shapeIndex;
        report.shape = trial.shape;
      }
    }
    if (!found && !task.shapes.empty()) report.shape = task.shapes[report.shapeIndex = 0];
  }
  auto finish = [&](std::string error) {
    report.error = std::move(error);
    result.ncuProfile = std::move(report);
  };
  const std::string ncu = options.ncuPath.empty() ? findNcu() : options.ncuPath;
  if (ncu.empty())
    return finish("ncu (Nsight Compute) not found: not on PATH, not /usr/local/cuda/bin/ncu; set PTXFORGE_NCU");
  if (!result.compile || result.compile->cubin.empty()) return finish("no cubin of the candidate to profile");
  if (reference.cubin.empty()) return finish("no cubin of the reference to profile");
  Result<tasks::ResolvedLaunch> candidateLaunch = tasks::resolveLaunch(candidate.directives.config, task, report.shape);
  if (!candidateLaunch) return finish("the candidate's launch: " + render(candidateLaunch.error()));
  Result<tasks::ResolvedLaunch> referenceLaunch = tasks::resolveLaunch(tasks::LaunchConfig{}, task, report.shape);
  if (!referenceLaunch) return finish("the reference's launch: " + render(referenceLaunch.error()));
  Result<NcuLaunch> mine = makeNcuLaunch(task, report.shape, *candidateLaunch, result.compile->cubin, result.seed);
  if (!mine) return finish(render(mine.error()));
  Result<NcuLaunch> theirs = makeNcuLaunch(task, report.shape, *referenceLaunch, reference.cubin, result.seed);
  if (!theirs) return finish(render(theirs.error()));

  NcuRunOptions runOptions = options;
  runOptions.ncuPath = ncu;
  const NcuRun candidateRun = runUnderNcu(*mine, runOptions);
  // The same failure twice says nothing new (no permission, no launcher).
  NcuRun referenceRun;
  if (candidateRun.row || candidateRun.error.find("ERR_NVGPUCTRPERM") == std::string::npos)
    referenceRun = runUnderNcu(*theirs, runOptions);

  NcuProfileReport paired = pairNcuRows(candidateRun.row ? &*candidateRun.row : nullptr,
                                        referenceRun.row ? &*referenceRun.row : nullptr);
  paired.shapeIndex = report.shapeIndex;
  paired.shape = std::move(report.shape);
  report = std::move(paired);
  report.ncuPath = ncu;
  report.ncuVersion = ncuVersion(ncu);
  report.command = candidateRun.command;
  report.elapsedMs = candidateRun.elapsedMs + referenceRun.elapsedMs;
  std::string error;
  if (!candidateRun.error.empty()) error = "candidate: " + candidateRun.error;
  if (!referenceRun.error.empty()) error += (error.empty() ? "" : "; ") + std::string("reference: ") + referenceRun.error;
  finish(std::move(error));
}

// ---------------------------------------------------------------------------
// Output

std::string formatNcuText(const NcuProfileReport &report) {
  std::string out = fmt::format("Nsight Compute{}: one launch each on {}, candidate vs reference\n",
                                report.ncuVersion.empty() ? "" : " " + report.ncuVersion,
                                tasks::shapeToString(report.shape));
  const bool any = std::any_of(report.metrics.begin(), report.metrics.end(),
                               [](const NcuMetricPair &m) { return m.candidate || m.reference; });
  if (any) {
    for (const NcuMetricPair &metric : report.metrics) {
      if (!metric.candidate && !metric.reference) continue;
      std::string line = fmt::format("  {:<29} {:>10} vs {:>10}", metric.label, formatValue(metric.candidate, metric.unit),
                                     formatValue(metric.reference, metric.unit));
      if (metric.key == "time" && metric.candidate && metric.reference && *metric.candidate > 0)
        line += fmt::format("  ({:.2f}x)", *metric.reference / *metric.candidate);
      out += line + "\n";
    }
    if (!report.stalls.empty()) {
      out += "  top stalls (warps stalled per issued instruction):";
      for (size_t i = 0; i < report.stalls.size() && i < 3; ++i) {
        const NcuStall &stall = report.stalls[i];
        out += fmt::format("{} {} {} vs {}", i ? "," : "", stall.reason, formatValue(stall.candidate, "warps/instruction"),
                           formatValue(stall.reference, "warps/instruction"));
      }
      out += "\n";
    }
  }
  if (!report.error.empty()) out += "  ncu: " + report.error + "\n";
  return out;
}

std::string describeNcuForPrompt(const NcuProfileReport &report) {
  std::map<std::string, const NcuMetricPair *> byKey;
  for (const NcuMetricPair &metric : report.metrics)
    if (metric.candidate) byKey[metric.key] = &metric;
  if (byKey.empty()) return "";
  auto pair = [&](const char *key, const char *label) -> std::string {
    auto it = byKey.find(key);
    if (it == byKey.end()) return "";
    return fmt::format("{} {} vs {}", label, formatValue(it->second->candidate, it->second->unit),
                       formatValue(it->second->reference, it->second->unit));
  };
  auto join = [](std::initializer_list<std::string> parts) {
    std::string out;
    for (const std::string &part : parts)
      if (!part.empty()) out += (out.empty() ? "" : ", ") + part;
    return out;
  };
  std::string out = fmt::format(
      "- Nsight Compute, one launch each on {} (yours vs the reference's): {}.\n", tasks::shapeToString(report.shape),
      join({pair("time", "duration"), pair("sm_throughput", "SM throughput"), pair("dram_throughput", "DRAM throughput"),
            pair("achieved_occupancy", "achieved occupancy"), pair("registers", "registers/thread")}));
  const std::string memory =
      join({pair("shared_load_bank_conflicts", "shared-load bank conflicts"),
            pair("shared_store_bank_conflicts", "shared-store bank conflicts"),
            pair("global_load_sectors_per_request", "global-load sectors/request"),
            pair("global_store_sectors_per_request", "global-store sectors/request")});
  if (!memory.empty()) out += "- Memory, by Nsight Compute: " + memory + ".\n";
  if (!report.stalls.empty()) {
    std::string stalls;
    for (size_t i = 0; i < report.stalls.size() && i < 3; ++i)
      stalls += fmt::format("{}{} {} vs {}", i ? ", " : "", report.stalls[i].reason,
                            formatValue(report.stalls[i].candidate, "warps/instruction"),
                            formatValue(report.stalls[i].reference, "warps/instruction"));
    out += "- Top warp stalls (warps stalled per issued instruction): " + stalls + ".\n";
  }
  return out;
}

nlohmann::json toJson(const NcuProfileReport &report) {
  nlohmann::json metrics = nlohmann::json::array();
  for (const NcuMetricPair &metric : report.metrics)
    metrics.push_back({{"name", metric.key},
                       {"label", metric.label},
                       {"ncu_metric", metric.ncuMetric},
                       {"unit", metric.unit},
                       {"candidate", optionalNumber(metric.candidate)},
                       {"reference", optionalNumber(metric.reference)}});
  nlohmann::json stalls = nlohmann::json::array();
  for (const NcuStall &stall : report.stalls)
    stalls.push_back({{"reason", stall.reason},
                      {"candidate", optionalNumber(stall.candidate)},
                      {"reference", optionalNumber(stall.reference)}});
  nlohmann::json json = {{"version", report.ncuVersion},
                         {"path", report.ncuPath},
                         {"shape_index", report.shapeIndex},
                         {"shape", report.shape},
                         {"candidate_kernel", report.candidateKernel},
                         {"reference_kernel", report.referenceKernel},
                         {"metrics", std::move(metrics)},
                         {"stalls", std::move(stalls)},
                         {"stall_unit", "warps stalled per issued instruction"},
                         {"command", report.command},
                         {"elapsed_ms", report.elapsedMs}};
  if (!report.error.empty()) json["error"] = report.error;
  return json;
}

Result<NcuProfileReport> ncuProfileFromJson(const nlohmann::json &json) {
  if (!json.is_object()) return makeError(ErrorKind::InvalidInput, "/profile/ncu: not an object");
  NcuProfileReport report;
  try {
    report.ncuVersion = json.value("version", "");
    report.ncuPath = json.value("path", "");
    report.shapeIndex = json.value("shape_index", size_t{0});
    if (auto shape = json.find("shape"); shape != json.end() && shape->is_object())
      report.shape = shape->get<tasks::Shape>();
    report.candidateKernel = json.value("candidate_kernel", "");
    report.referenceKernel = json.value("reference_kernel", "");
    report.command = json.value("command", "");
    report.elapsedMs = json.value("elapsed_ms", 0.0);
    report.error = json.value("error", "");
    if (auto metrics = json.find("metrics"); metrics != json.end()) {
      if (!metrics->is_array()) return makeError(ErrorKind::InvalidInput, "/profile/ncu/metrics: not an array");
      for (size_t i = 0; i < metrics->size(); ++i) {
        const nlohmann::json &m = (*metrics)[i];
        const std::string where = fmt::format("/profile/ncu/metrics/{}", i);
        if (!m.is_object()) return makeError(ErrorKind::InvalidInput, where + ": not an object");
        NcuMetricPair pair{m.value("name", ""), m.value("label", ""), m.value("ncu_metric", ""), m.value("unit", ""),
                           std::nullopt, std::nullopt};
        Result<std::optional<double>> candidate = readOptionalNumber(m, "candidate", where);
        if (!candidate) return candidate.error();
        Result<std::optional<double>> reference = readOptionalNumber(m, "reference", where);
        if (!reference) return reference.error();
        pair.candidate = *candidate;
        pair.reference = *reference;
        report.metrics.push_back(std::move(pair));
      }
    }
    if (auto stalls = json.find("stalls"); stalls != json.end()) {
      if (!stalls->is_array()) return makeError(ErrorKind::InvalidInput, "/profile/ncu/stalls: not an array");
      for (size_t i = 0; i < stalls->size(); ++i) {
        const nlohmann::json &s = (*stalls)[i];
        const std::string where = fmt::format("/profile/ncu/stalls/{}", i);
        if (!s.is_object()) return makeError(ErrorKind::InvalidInput, where + ": not an object");
        NcuStall stall{s.value("reason", ""), std::nullopt, std::nullopt};
        Result<std::optional<double>> candidate = readOptionalNumber(s, "candidate", where);
        if (!candidate) return candidate.error();
        Result<std::optional<double>> reference = readOptionalNumber(s, "reference", where);
        if (!reference) return reference.error();
        stall.candidate = *candidate;
        stall.reference = *reference;
        report.stalls.push_back(std::move(stall));
      }
    }
  } catch (const nlohmann::json::exception &error) {
    return makeError(ErrorKind::InvalidInput, std::string("/profile/ncu: ") + error.what());
  }
  return report;
}

} // namespace ptxforge::verify
