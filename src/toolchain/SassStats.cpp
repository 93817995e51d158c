// SassStats: runs `nvdisasm -json` on a cubin and counts what matters for
// performance feedback (spills, vector widths, FMA fusion, tensor cores).
//
// nvdisasm 13.x prints `[ {header: ELF, SM, SchemaVersion, Producer, ...},
// [ {"function-name", "start", "length", "sass-instructions": [ {"predicate"?,
// "opcode": "LDG.E.128", "operands"?, "other-attributes"?}, ...]}, ...] ]`,
// so no text scraping is needed.
#include "toolchain/SassStats.h"

#include "toolchain/SassCache.h"
#include "toolchain/Subprocess.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <mutex>

#ifndef PTXFORGE_CUDA_ROOT
#define PTXFORGE_CUDA_ROOT "/usr/local/cuda"
#endif

namespace ptxforge::toolchain {

namespace {

/// Where `pip install nvidia-cuda-nvdisasm` put nvdisasm, asked of python3
/// once per process (the answer does not change while we run).
std::optional<std::string> nvdisasmFromPipPackage() {
  static std::once_flag once;
  static std::optional<std::string> found;
  std::call_once(once, [] {
    std::optional<std::string> python = findOnPath("python3");
    if (!python)
      return;
    Result<ProcessResult> run =
        runProcess({*python, "-c", "import nvidia\nfor p in nvidia.__path__: print(p)"});
    if (!run || run->exitCode != 0)
      return;
    std::string_view rest = run->standardOutput;
    while (!rest.empty() && !found) {
      size_t newline = rest.find('\n');
      std::string dir(rest.substr(0, newline));
      rest = newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
      // cu13 / cu12 wheels use nvidia/cuNN/bin; older ones nvidia/cuda_nvdisasm/bin.
      for (const char *sub : {"/cu13/bin/nvdisasm", "/cu12/bin/nvdisasm", "/cuda_nvdisasm/bin/nvdisasm"}) {
        if (isExecutableFile(dir + sub)) {
          found = dir + sub;
          break;
        }
      }
    }
  });
  return found;
}

} // namespace

int accessWidthBits(const std::string &opcode) {
  int width = 32;
  size_t start = opcode.find('.');
  while (start != std::string::npos) {
    size_t end = opcode.find('.', start + 1);
    std::string modifier = opcode.substr(start + 1, end == std::string::npos ? std::string::npos : end - start - 1);
    if (modifier == "64")
      width = 64;
    else if (modifier == "128")
      width = 128;
    else if (modifier == "U8" || modifier == "S8")
      width = 8;
    else if (modifier == "U16" || modifier == "S16")
      width = 16;
    start = end;
  }
  return width;
}

namespace {

bool isTensorCoreOpcode(const std::string &base) {
  // HMMA, HGMMA, IMMA, IGMMA, DMMA, BMMA, QGMMA, UTCHMMA, ...: all end in MMA.
  // (HFMA2.MMA is an FMA issued on the MMA pipe; its base opcode is HFMA2.)
  return base.size() >= 4 && base.compare(base.size() - 3, 3, "MMA") == 0;
}

void count(const std::string &opcode, SassCounts &counts) {
  const std::string base = baseOpcode(opcode);
  ++counts.instructions;
  ++counts.opcodes[base];
  if (base == "LDL")
    ++counts.spillLoads;
  else if (base == "STL")
    ++counts.spillStores;
  else if (base == "LDG")
    ++counts.globalLoadWidths[accessWidthBits(opcode)];
  else if (base == "STG")
    ++counts.globalStoreWidths[accessWidthBits(opcode)];
  else if (base == "FFMA")
    ++counts.ffma;
  else if (base == "FMUL")
    ++counts.fmul;
  else if (base == "FADD")
    ++counts.fadd;
  else if (base == "BAR")
    ++counts.barriers;
  if (isTensorCoreOpcode(base))
    ++counts.tensorCoreOps;
}

void accumulate(const SassCounts &from, SassCounts &into) {
  into.instructions += from.instructions;
  for (const auto &[opcode, n] : from.opcodes)
    into.opcodes[opcode] += n;
  into.spillLoads += from.spillLoads;
  into.spillStores += from.spillStores;
  for (const auto &[width, n] : from.globalLoadWidths)
    into.globalLoadWidths[width] += n;
  for (const auto &[width, n] : from.globalStoreWidths)
    into.globalStoreWidths[width] += n;
  into.ffma += from.ffma;
  into.fmul += from.fmul;
  into.fadd += from.fadd;
  into.tensorCoreOps += from.tensorCoreOps;
  into.barriers += from.barriers;
}

} // namespace

std::string baseOpcode(const std::string &opcode) { return opcode.substr(0, opcode.find('.')); }

std::optional<std::string> findNvdisasm() {
  if (const char *fromEnv = std::getenv("PTXFORGE_NVDISASM"); fromEnv && *fromEnv)
    return isExecutableFile(fromEnv) ? std::optional<std::string>(fromEnv) : std::nullopt;
  if (std::optional<std::string> onPath = findOnPath("nvdisasm"))
    return onPath;
  const std::string bundled = std::string(PTXFORGE_CUDA_ROOT) + "/bin/nvdisasm";
  if (isExecutableFile(bundled))
    return bundled;
  return nvdisasmFromPipPackage();
}

Result<SassStats> sassStatsFromJson(const std::string &nvdisasmJson) {
  nlohmann::json document = nlohmann::json::parse(nvdisasmJson, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_array())
    return makeError(ErrorKind::Internal, "nvdisasm -json printed something that is not a JSON array");
  SassStats stats;
  bool sawFunctions = false;
  for (const nlohmann::json &element : document) {
    if (element.is_object()) {
      if (element.contains("SM") && element["SM"].contains("version")) {
        const nlohmann::json &version = element["SM"]["version"];
        stats.arch = "sm_" + std::to_string(version.value("major", 0)) + std::to_string(version.value("minor", 0));
      }
      stats.producer = element.value("Producer", "");
      continue;
    }
    if (!element.is_array())
      continue;
    for (const nlohmann::json &function : element) {
      if (!function.is_object() || !function.contains("sass-instructions"))
        continue;
      sawFunctions = true;
      const std::string name = function.value("function-name", "<unnamed>");
      const nlohmann::json &instructions = function["sass-instructions"];
      if (!instructions.is_array())
        continue;
      // Functions are padded with NOPs to an alignment boundary after the
      // final self-branch; those are not code the kernel executes.
      size_t end = instructions.size();
      while (end > 0 && instructions[end - 1].value("opcode", "") == "NOP")
        --end;
      SassCounts counts;
      stats.code += "function " + name + ":\n";
      for (size_t i = 0; i < end; ++i) {
        const nlohmann::json &instruction = instructions[i];
        std::string opcode = instruction.value("opcode", "");
        if (!opcode.empty())
          count(opcode, counts);
        std::string predicate = instruction.value("predicate", "");
        stats.code += predicate.empty() ? opcode : predicate + " " + opcode;
        stats.code += " " + instruction.value("operands", "") + "\n";
      }
      accumulate(counts, stats.total);
      accumulate(counts, stats.functions[name]);
    }
  }
  if (!sawFunctions && !document.empty())
    return makeError(ErrorKind::Internal,
                     "nvdisasm -json output has no function list (schema changed?); producer: " + stats.producer);
  return stats;
}

/// Runs `nvdisasm -json` on the cubin (no cache).
static Result<SassStats> disassemble(const std::string &nvdisasmPath, const std::vector<uint8_t> &cubin) {
  Result<TempFile> file = TempFile::create(".cubin");
  if (!file)
    return file.error();
  if (Result<void> written =
          file->write(std::string_view(reinterpret_cast<const char *>(cubin.data()), cubin.size()));
      !written)
    return written.error();
  Result<ProcessResult> run = runProcess({nvdisasmPath, "-json", file->path()});
  if (!run)
    return run.error();
  if (run->exitCode != 0)
    return makeError(ErrorKind::Io, nvdisasmPath + " -json exited with status " + std::to_string(run->exitCode) +
                                        ": " + run->standardError);
  return sassStatsFromJson(run->standardOutput);
}

Result<SassStats> sassStats(const std::vector<uint8_t> &cubin) {
  std::optional<std::string> nvdisasm = findNvdisasm();
  if (!nvdisasm)
    return makeError(ErrorKind::ToolMissing,
                     "nvdisasm not found: set PTXFORGE_NVDISASM to its path, put the CUDA toolkit's bin/ on PATH, "
                     "or `pip install nvidia-cuda-nvdisasm` (a version that supports -json, e.g. 13.x)");
  if (cubin.empty())
    return makeError(ErrorKind::InvalidInput, "sassStats: empty cubin");
  // nvdisasm is most of an emulator eval's time, and the same cubin comes back
  // often (duplicate candidates, the reference in every run, repeated evals).
  const SassCacheLimits limits = SassCacheLimits::fromEnvironment();
  const std::string key = sassCacheKey(cubin);
  const std::string tool = toolIdentity(*nvdisasm);
  if (std::optional<SassStats> cached = lookupSassStats(key, tool, limits))
    return std::move(*cached);
  Result<SassStats> stats = disassemble(*nvdisasm, cubin);
  // Failures are not remembered: nvdisasm may have been killed or out of memory.
  if (stats) rememberSassStats(key, tool, *stats, limits);
  return stats;
}

} // namespace ptxforge::toolchain
