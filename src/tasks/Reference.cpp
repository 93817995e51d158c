// Reference: NVRTC compile (RAII, every call checked), PTX -> cubin through
// the toolchain, and the on-disk cache.
#include "tasks/Reference.h"

#include "support/InputReader.h"
#include "tasks/Inputs.h"
#include "toolchain/Compiler.h"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <unistd.h>

#ifndef PTXFORGE_CUDA_ROOT
#define PTXFORGE_CUDA_ROOT "/usr/local/cuda"
#endif

namespace ptxforge::tasks {

namespace {

std::string describeCall(const char *call, nvrtcResult result) {
  return std::string(call) + " failed with " + nvrtcGetErrorString(result) + " (" +
         std::to_string(static_cast<int>(result)) + ")";
}

struct ProgramDeleter {
  void operator()(_nvrtcProgram *program) const {
    nvrtcDestroyProgram(&program); // nothing useful to do with a failure while releasing
  }
};
/// Owns an nvrtcProgram; destroyed exactly once.
using ProgramHandle = std::unique_ptr<_nvrtcProgram, ProgramDeleter>;

Result<std::string> programLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcResult rc = nvrtcGetProgramLogSize(program, &size); rc != NVRTC_SUCCESS)
    return makeError(ErrorKind::Internal, describeCall("nvrtcGetProgramLogSize", rc));
  std::string log(size, '\0');
  if (size) {
    if (nvrtcResult rc = nvrtcGetProgramLog(program, log.data()); rc != NVRTC_SUCCESS)
      return makeError(ErrorKind::Internal, describeCall("nvrtcGetProgramLog", rc));
  }
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

/// "sm_90a" -> "compute_90a": NVRTC emits PTX for the virtual architecture.
Result<std::string> virtualArch(std::string_view arch) {
  if (arch.substr(0, 3) != "sm_" || arch.size() < 5 || !std::isdigit(static_cast<unsigned char>(arch[3])))
    return makeError(ErrorKind::InvalidInput, "arch '" + std::string(arch) + "' is not a real architecture like sm_90");
  return "compute_" + std::string(arch.substr(3));
}

Result<NvrtcOutput> runNvrtc(std::string_view source, std::string_view arch, const std::string &fileName = "reference.cu",
                             const std::vector<std::string> &extraOptions = {}) {
  Result<std::string> compute = virtualArch(arch);
  if (!compute) return compute.error();
  std::string sourceText(source); // nvrtcCreateProgram wants a NUL-terminated string
  nvrtcProgram raw = nullptr;
  if (nvrtcResult rc = nvrtcCreateProgram(&raw, sourceText.c_str(), fileName.c_str(), 0, nullptr, nullptr);
      rc != NVRTC_SUCCESS)
    return makeError(ErrorKind::Internal, describeCall("nvrtcCreateProgram", rc));
  ProgramHandle program(raw);
  std::vector<std::string> options = nvrtcOptions(arch);
  options.insert(options.end(), extraOptions.begin(), extraOptions.end());
  std::vector<const char *> optionPointers;
  for (const std::string &option : options) optionPointers.push_back(option.c_str());
  nvrtcResult compiled =
      nvrtcCompileProgram(program.get(), static_cast<int>(optionPointers.size()), optionPointers.data());
  Result<std::string> log = programLog(program.get());
  if (!log) return log.error();
  if (compiled == NVRTC_ERROR_COMPILATION)
    return makeError(ErrorKind::Compile, "NVRTC rejected " + fileName + ":\n" + *log);
  if (compiled != NVRTC_SUCCESS)
    return makeError(ErrorKind::Internal, describeCall("nvrtcCompileProgram", compiled) + (log->empty() ? "" : ":\n" + *log));
  size_t ptxSize = 0;
  if (nvrtcResult rc = nvrtcGetPTXSize(program.get(), &ptxSize); rc != NVRTC_SUCCESS)
    return makeError(ErrorKind::Internal, describeCall("nvrtcGetPTXSize", rc));
  std::string ptx(ptxSize, '\0');
  if (nvrtcResult rc = nvrtcGetPTX(program.get(), ptx.data()); rc != NVRTC_SUCCESS)
    return makeError(ErrorKind::Internal, describeCall("nvrtcGetPTX", rc));
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return NvrtcOutput{std::move(ptx), std::move(*log)};
}

// Cache entry layout (little-endian): magic "PTXFREF1", u64 ptx size, u64
// cubin size, u64 log size, the three blobs, then FNV-1a 64 of everything
// before it. Anything that does not match exactly is treated as absent.
constexpr char kMagic[8] = {'P', 'T', 'X', 'F', 'R', 'E', 'F', '1'};

void appendU64(std::string &out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
uint64_t readU64(std::string_view in, size_t at) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return value;
}

std::string encodeEntry(const CompiledReference &reference) {
  std::string out(kMagic, sizeof kMagic);
  appendU64(out, reference.ptx.size());
  appendU64(out, reference.cubin.size());
  appendU64(out, reference.log.size());
  out += reference.ptx;
  out.append(reinterpret_cast<const char *>(reference.cubin.data()), reference.cubin.size());
  out += reference.log;
  appendU64(out, fnv1a64(out));
  return out;
}

bool decodeEntry(std::string_view data, CompiledReference &reference) {
  constexpr size_t header = sizeof kMagic + 24;
  if (data.size() < header + 8 || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) return false;
  uint64_t ptxSize = readU64(data, 8), cubinSize = readU64(data, 16), logSize = readU64(data, 24);
  if (ptxSize > data.size() || cubinSize > data.size() || logSize > data.size() ||
      header + ptxSize + cubinSize + logSize + 8 != data.size())
    return false;
  size_t bodyEnd = data.size() - 8;
  if (fnv1a64(data.substr(0, bodyEnd)) != readU64(data, bodyEnd)) return false;
  reference.ptx = std::string(data.substr(header, ptxSize));
  std::string_view cubin = data.substr(header + ptxSize, cubinSize);
  reference.cubin.assign(cubin.begin(), cubin.end());
  reference.log = std::string(data.substr(header + ptxSize + cubinSize, logSize));
  return !reference.ptx.empty() && !reference.cubin.empty();
}


bool ptxHasEntry(const std::string &ptx, std::string_view kernelName) {
  std::vector<std::string> entries = toolchain::entryNames(ptx);
  return std::find(entries.begin(), entries.end(), kernelName) != entries.end();
}

} // namespace

std::vector<std::string> nvrtcOptions(std::string_view arch) {
  Result<std::string> compute = virtualArch(arch);
  // NVRTC's defaults match nvcc's device defaults (-O3-equivalent, fmad on).
  // NVRTC 13 has no built-in cuda_fp16.h/cuda_bf16.h: they come from the toolkit.
  return {"--gpu-architecture=" + (compute ? *compute : std::string(arch)), "--std=c++17",
          "--include-path=" PTXFORGE_CUDA_ROOT "/include"};
}

Result<std::string> nvrtcVersionString() {
  int major = 0, minor = 0;
  if (nvrtcResult rc = nvrtcVersion(&major, &minor); rc != NVRTC_SUCCESS)
    return makeError(ErrorKind::Internal, describeCall("nvrtcVersion", rc));
  return "NVRTC " + std::to_string(major) + "." + std::to_string(minor);
}

Result<NvrtcOutput> compileCudaSource(std::string_view source, const std::string &fileName, std::string_view arch,
                                      const std::vector<std::string> &extraOptions) {
  return runNvrtc(source, arch, fileName, extraOptions);
}

Result<CompiledReference> compileReferenceSource(std::string_view source, std::string_view kernelName,
                                                 std::string arch, const ReferenceOptions &options) {
  Result<std::string> compute = virtualArch(arch);
  if (!compute) return compute.error();
  Result<std::string> version = nvrtcVersionString();
  if (!version) return version.error();

  // The key covers everything that changes the output. nvJitLink ships with
  // the same toolkit as NVRTC, so NVRTC's version stands for both.
  uint64_t hash = fnv1a64(source);
  auto mix = [&](std::string_view part) {
    hash = fnv1a64(std::string_view("\0", 1), hash);
    hash = fnv1a64(part, hash);
  };
  mix(kernelName);
  mix(arch);
  for (const std::string &option : nvrtcOptions(arch)) mix(option);
  mix(*version);
  mix("cache-format-1");
  std::string backend = options.backend;
  if (backend.empty())
    if (const char *env = std::getenv("PTXFORGE_REFERENCE_BACKEND")) backend = env;
  if (backend.empty()) backend = toolchain::backendName(toolchain::gateCompilerBackend());
  if (backend != "nvjitlink" && backend != "ptxas")
    return makeError(ErrorKind::InvalidInput, "reference backend '" + backend + "': nvjitlink or ptxas");
  if (backend != "nvjitlink") mix("backend=" + backend); // the nvJitLink entries keep their keys
  char keyText[17];
  std::snprintf(keyText, sizeof keyText, "%016llx", static_cast<unsigned long long>(hash));

  CompiledReference reference;
  reference.cacheKey = keyText;
  reference.nvrtcVersion = *version;
  reference.backend = backend;

  std::filesystem::path cacheDir = options.cacheDir.empty() ? cacheRoot() : options.cacheDir;
  std::filesystem::path entryPath = cacheDir / "reference" / (reference.cacheKey + ".bin");
  if (options.useCache) {
    // A missing or unreadable entry is a cache miss.
    if (Result<std::string> data = readFileBounded(entryPath.string(), kDefaultMaxInputBytes)) {
      CompiledReference cached = reference;
      if (decodeEntry(*data, cached) && ptxHasEntry(cached.ptx, kernelName)) {
        cached.fromCache = true;
        return cached;
      }
      // A corrupt or truncated entry: fall through, rebuild, overwrite.
    }
  }

  Result<NvrtcOutput> nvrtc = runNvrtc(source, arch);
  if (!nvrtc) return nvrtc.error();
  if (!ptxHasEntry(nvrtc->ptx, kernelName))
    return makeError(ErrorKind::Compile, "reference.cu compiled, but its PTX has no .entry '" + std::string(kernelName) +
                                             "' (declare the kernel extern \"C\" __global__ so that its name is not mangled)");
  toolchain::CompileOptions compileOptions;
  compileOptions.arch = arch;
  compileOptions.entryName = std::string(kernelName);
  if (backend == "ptxas") compileOptions.backend = toolchain::CompileOptions::Backend::Ptxas;
  Result<toolchain::CompileResult> compiled = toolchain::compilePtx(nvrtc->ptx, compileOptions);
  if (!compiled) return compiled.error();
  if (!compiled->ok)
    return makeError(ErrorKind::Compile, "the PTX compiler rejected the reference's PTX (" + compiled->backend + "):\n" +
                                             compiled->errorLog);
  reference.ptx = std::move(nvrtc->ptx);
  reference.cubin = std::move(compiled->cubin);
  reference.log = nvrtc->log;
  if (!compiled->infoLog.empty()) reference.log += (reference.log.empty() ? "" : "\n") + compiled->infoLog;

  if (options.useCache) {
    std::error_code ec;
    std::filesystem::create_directories(entryPath.parent_path(), ec);
    if (!ec) writeFileAtomically(entryPath, encodeEntry(reference)); // best effort: an unwritable cache only costs time
  }
  return reference;
}

Result<CompiledReference> compileReference(const TaskSpec &task, std::string arch, const ReferenceOptions &options) {
  Result<CompiledReference> compiled = compileReferenceSource(task.referenceSource, task.kernel, arch, options);
  if (!compiled) {
    Error error = compiled.error();
    error.message = (task.folder / "reference.cu").string() + ": " + error.message;
    return error;
  }
  return compiled;
}

} // namespace ptxforge::tasks
