// Compiler: nvJitLink (in-process) and ptxas (subprocess) backends of compilePtx.
#include "toolchain/Compiler.h"

#include "toolchain/LogParser.h"
#include "toolchain/Subprocess.h"

#include <nvJitLink.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <regex>

#ifndef PTXFORGE_CUDA_ROOT
#define PTXFORGE_CUDA_ROOT "/usr/local/cuda"
#endif

namespace ptxforge::toolchain {

const char *backendName(CompileOptions::Backend backend) {
  switch (backend) {
  case CompileOptions::Backend::NvJitLink:
    return "nvjitlink";
  case CompileOptions::Backend::Ptxas:
    return "ptxas";
  }
  return "unknown";
}

namespace {

const char *nvJitLinkResultName(nvJitLinkResult result) {
  switch (result) {
  case NVJITLINK_SUCCESS: return "NVJITLINK_SUCCESS";
  case NVJITLINK_ERROR_UNRECOGNIZED_OPTION: return "NVJITLINK_ERROR_UNRECOGNIZED_OPTION";
  case NVJITLINK_ERROR_MISSING_ARCH: return "NVJITLINK_ERROR_MISSING_ARCH";
  case NVJITLINK_ERROR_INVALID_INPUT: return "NVJITLINK_ERROR_INVALID_INPUT";
  case NVJITLINK_ERROR_PTX_COMPILE: return "NVJITLINK_ERROR_PTX_COMPILE";
  case NVJITLINK_ERROR_NVVM_COMPILE: return "NVJITLINK_ERROR_NVVM_COMPILE";
  case NVJITLINK_ERROR_INTERNAL: return "NVJITLINK_ERROR_INTERNAL";
  case NVJITLINK_ERROR_THREADPOOL: return "NVJITLINK_ERROR_THREADPOOL";
  case NVJITLINK_ERROR_UNRECOGNIZED_INPUT: return "NVJITLINK_ERROR_UNRECOGNIZED_INPUT";
  case NVJITLINK_ERROR_FINALIZE: return "NVJITLINK_ERROR_FINALIZE";
  case NVJITLINK_ERROR_NULL_INPUT: return "NVJITLINK_ERROR_NULL_INPUT";
  case NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS: return "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS";
  case NVJITLINK_ERROR_INCORRECT_INPUT_TYPE: return "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE";
  case NVJITLINK_ERROR_ARCH_MISMATCH: return "NVJITLINK_ERROR_ARCH_MISMATCH";
  case NVJITLINK_ERROR_OUTDATED_LIBRARY: return "NVJITLINK_ERROR_OUTDATED_LIBRARY";
  case NVJITLINK_ERROR_MISSING_FATBIN: return "NVJITLINK_ERROR_MISSING_FATBIN";
  case NVJITLINK_ERROR_UNRECOGNIZED_ARCH: return "NVJITLINK_ERROR_UNRECOGNIZED_ARCH";
  case NVJITLINK_ERROR_UNSUPPORTED_ARCH: return "NVJITLINK_ERROR_UNSUPPORTED_ARCH";
  case NVJITLINK_ERROR_LTO_NOT_ENABLED: return "NVJITLINK_ERROR_LTO_NOT_ENABLED";
  }
  return "NVJITLINK_ERROR_<unknown>";
}

std::string describeCall(const char *call, nvJitLinkResult result) {
  return std::string(call) + " failed with " + nvJitLinkResultName(result) + " (" +
         std::to_string(static_cast<int>(result)) + ")";
}

/// Owns an nvJitLinkHandle; destroys it exactly once.
class JitLinkHandle {
public:
  JitLinkHandle() = default;
  JitLinkHandle(const JitLinkHandle &) = delete;
  JitLinkHandle &operator=(const JitLinkHandle &) = delete;
  ~JitLinkHandle() {
    if (handle_)
      nvJitLinkDestroy(&handle_); // nothing useful to do with a failure while unwinding
  }
  nvJitLinkHandle *out() { return &handle_; }
  nvJitLinkHandle get() const { return handle_; }

private:
  nvJitLinkHandle handle_ = nullptr;
};

using LogSizeFn = nvJitLinkResult (*)(nvJitLinkHandle, size_t *);
using LogFn = nvJitLinkResult (*)(nvJitLinkHandle, char *);

/// Reads one of the handle's logs. A failure to read a log is itself reported
/// in the returned text rather than hiding the original failure.
std::string fetchLog(nvJitLinkHandle handle, LogSizeFn sizeFn, const char *sizeName, LogFn logFn, const char *logName) {
  size_t size = 0;
  if (nvJitLinkResult rc = sizeFn(handle, &size); rc != NVJITLINK_SUCCESS)
    return "<" + describeCall(sizeName, rc) + ">";
  if (size == 0)
    return {};
  std::string log(size, '\0');
  if (nvJitLinkResult rc = logFn(handle, log.data()); rc != NVJITLINK_SUCCESS)
    return "<" + describeCall(logName, rc) + ">";
  while (!log.empty() && log.back() == '\0')
    log.pop_back();
  return log;
}

/// Failures that mean the library or its options are broken, not the PTX.
bool isToolFailure(nvJitLinkResult result) {
  switch (result) {
  case NVJITLINK_ERROR_UNRECOGNIZED_OPTION:
  case NVJITLINK_ERROR_MISSING_ARCH:
  case NVJITLINK_ERROR_INTERNAL:
  case NVJITLINK_ERROR_THREADPOOL:
  case NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS:
  case NVJITLINK_ERROR_OUTDATED_LIBRARY:
  case NVJITLINK_ERROR_UNRECOGNIZED_ARCH:
  case NVJITLINK_ERROR_UNSUPPORTED_ARCH:
    return true;
  default:
    return false;
  }
}

Result<void> validateOptions(const CompileOptions &options) {
  // Real (SASS) targets only: compute_NN would produce PTX, not a cubin.
  static const std::regex archPattern(R"(^sm_[0-9]{2,3}[af]?$)");
  if (!std::regex_match(options.arch, archPattern))
    return makeError(ErrorKind::InvalidInput,
                     "invalid arch '" + options.arch + "': expected sm_NN, sm_NNa or sm_NNf (e.g. sm_90, sm_90a)");
  if (options.optLevel < 0 || options.optLevel > 3)
    return makeError(ErrorKind::InvalidInput,
                     "invalid optimisation level " + std::to_string(options.optLevel) + ": expected 0..3");
  if (options.maxRegisters < 0 || options.maxRegisters > 255)
    return makeError(ErrorKind::InvalidInput,
                     "invalid maxRegisters " + std::to_string(options.maxRegisters) + ": expected 0 (no cap) to 255");
  return {};
}

/// Fills diagnostics, resources and advisories of `result` from its logs.
void interpretLogs(std::string_view ptx, const CompileOptions &options, CompileResult &result) {
  const std::string combined = result.errorLog + "\n" + result.infoLog;
  result.diagnostics = parseCompilerLog(combined);
  // Both logs may repeat a line (nvJitLink echoes ptxas warnings); keep one.
  auto sameFinding = [](const ptx::Diagnostic &a, const ptx::Diagnostic &b) {
    return a.line == b.line && a.message == b.message;
  };
  std::vector<ptx::Diagnostic> unique;
  for (ptx::Diagnostic &diagnostic : result.diagnostics)
    if (std::none_of(unique.begin(), unique.end(), [&](const ptx::Diagnostic &seen) { return sameFinding(seen, diagnostic); }))
      unique.push_back(std::move(diagnostic));
  result.diagnostics = std::move(unique);
  result.advisories = parseAdvisories(combined);

  ResourceReport report = parseResourceUsage(combined);
  result.functions = std::move(report.functions);
  result.module = std::move(report.module);
  result.kernelName = options.entryName;
  if (result.kernelName.empty()) {
    std::vector<std::string> entries = entryNames(ptx);
    if (!entries.empty())
      result.kernelName = entries.front();
  }
  auto chosen = std::find_if(result.functions.begin(), result.functions.end(),
                             [&](const ResourceUsage &usage) { return usage.function == result.kernelName; });
  if (chosen == result.functions.end() && result.kernelName.empty())
    chosen = std::find_if(result.functions.begin(), result.functions.end(),
                          [](const ResourceUsage &usage) { return usage.isEntry; });
  if (chosen != result.functions.end()) {
    result.resources = *chosen;
    if (result.kernelName.empty())
      result.kernelName = chosen->function;
  } else {
    result.resources.function = result.kernelName;
  }
}

/// A rejected compile whose log had nothing parseable still needs one
/// diagnostic saying what failed.
void ensureFailureDiagnostic(CompileResult &result, const std::string &what) {
  if (ptx::hasErrors(result.diagnostics))
    return;
  ptx::Diagnostic diagnostic;
  diagnostic.code = kCodeCompileOther;
  diagnostic.message = what;
  result.diagnostics.push_back(std::move(diagnostic));
}

Result<CompileResult> compileWithNvJitLink(std::string_view ptx, const CompileOptions &options) {
  CompileResult result;
  result.backend = backendName(options.backend);
  result.arch = options.arch;
  unsigned major = 0, minor = 0;
  if (nvJitLinkResult rc = nvJitLinkVersion(&major, &minor); rc != NVJITLINK_SUCCESS)
    return makeError(ErrorKind::Internal, describeCall("nvJitLinkVersion", rc));
  result.toolVersion = "nvJitLink " + std::to_string(major) + "." + std::to_string(minor);

  std::vector<std::string> optionStrings = {"-arch=" + options.arch, "-verbose"};
  // nvJitLink accepts only -O0 and -O3 itself; other levels go to ptxas directly.
  if (options.optLevel == 0 || options.optLevel == 3)
    optionStrings.push_back("-O" + std::to_string(options.optLevel));
  else
    optionStrings.push_back("-Xptxas=-O" + std::to_string(options.optLevel));
  if (options.maxRegisters > 0)
    optionStrings.push_back("-maxrregcount=" + std::to_string(options.maxRegisters));
  if (options.generateLineInfo)
    optionStrings.push_back("-lineinfo");
  std::vector<const char *> optionPointers;
  for (const std::string &option : optionStrings)
    optionPointers.push_back(option.c_str());

  const auto start = std::chrono::steady_clock::now();
  auto stopClock = [&] {
    result.compileMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };

  JitLinkHandle handle;
  if (nvJitLinkResult rc = nvJitLinkCreate(handle.out(), static_cast<uint32_t>(optionPointers.size()),
                                           optionPointers.data());
      rc != NVJITLINK_SUCCESS) {
    // No handle, so no log: the options are what to report.
    std::string joined;
    for (const std::string &option : optionStrings)
      joined += " " + option;
    return makeError(rc == NVJITLINK_ERROR_UNRECOGNIZED_OPTION || rc == NVJITLINK_ERROR_UNRECOGNIZED_ARCH ||
                             rc == NVJITLINK_ERROR_UNSUPPORTED_ARCH || rc == NVJITLINK_ERROR_MISSING_ARCH
                         ? ErrorKind::InvalidInput
                         : ErrorKind::Internal,
                     describeCall("nvJitLinkCreate", rc) + "; options:" + joined);
  }

  auto readLogs = [&] {
    result.errorLog =
        fetchLog(handle.get(), nvJitLinkGetErrorLogSize, "nvJitLinkGetErrorLogSize", nvJitLinkGetErrorLog, "nvJitLinkGetErrorLog");
    result.infoLog =
        fetchLog(handle.get(), nvJitLinkGetInfoLogSize, "nvJitLinkGetInfoLogSize", nvJitLinkGetInfoLog, "nvJitLinkGetInfoLog");
  };
  // The PTX is parsed and assembled at AddData (syntax and most semantic
  // errors), resource limits are checked at Complete: both can reject it.
  auto failed = [&](const char *call, nvJitLinkResult rc) -> Result<CompileResult> {
    stopClock();
    readLogs();
    result.ok = false;
    interpretLogs(ptx, options, result);
    // The result code alone does not say whose fault it is: nvJitLink 13.0
    // reports "uses too much shared data" as NVJITLINK_ERROR_INTERNAL. A log
    // that names an error in the PTX makes it a rejected candidate.
    if (isToolFailure(rc) && !ptx::hasErrors(result.diagnostics))
      return makeError(ErrorKind::Internal, describeCall(call, rc) + "\nerror log:\n" + result.errorLog +
                                                "\ninfo log:\n" + result.infoLog);
    ensureFailureDiagnostic(result, describeCall(call, rc));
    return result;
  };

  if (nvJitLinkResult rc =
          nvJitLinkAddData(handle.get(), NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(), "candidate.ptx");
      rc != NVJITLINK_SUCCESS)
    return failed("nvJitLinkAddData", rc);
  if (nvJitLinkResult rc = nvJitLinkComplete(handle.get()); rc != NVJITLINK_SUCCESS)
    return failed("nvJitLinkComplete", rc);
  stopClock();
  readLogs();

  size_t cubinSize = 0;
  if (nvJitLinkResult rc = nvJitLinkGetLinkedCubinSize(handle.get(), &cubinSize); rc != NVJITLINK_SUCCESS)
    return makeError(ErrorKind::Internal, describeCall("nvJitLinkGetLinkedCubinSize", rc) + "\n" + result.errorLog);
  result.cubin.resize(cubinSize);
  if (nvJitLinkResult rc = nvJitLinkGetLinkedCubin(handle.get(), result.cubin.data()); rc != NVJITLINK_SUCCESS)
    return makeError(ErrorKind::Internal, describeCall("nvJitLinkGetLinkedCubin", rc) + "\n" + result.errorLog);
  if (result.cubin.empty())
    return makeError(ErrorKind::Internal, "nvJitLinkGetLinkedCubinSize returned 0 bytes after a successful link");
  result.ok = true;
  interpretLogs(ptx, options, result);
  return result;
}

Result<CompileResult> compileWithPtxas(std::string_view ptx, const CompileOptions &options) {
  std::optional<std::string> ptxas = findPtxas();
  if (!ptxas)
    return makeError(ErrorKind::ToolMissing, "ptxas not found: set PTXFORGE_PTXAS to its path, put it on PATH, or "
                                             "install the CUDA toolkit under " PTXFORGE_CUDA_ROOT);
  CompileResult result;
  result.backend = backendName(options.backend);
  result.arch = options.arch;
  result.toolVersion = *ptxas;

  Result<TempFile> input = TempFile::create(".ptx");
  if (!input)
    return input.error();
  Result<TempFile> output = TempFile::create(".cubin");
  if (!output)
    return output.error();
  if (Result<void> written = input->write(ptx); !written)
    return written.error();

  std::vector<std::string> argv = {*ptxas, "-arch=" + options.arch, "-O" + std::to_string(options.optLevel), "-v"};
  if (options.maxRegisters > 0)
    argv.insert(argv.end(), {"-maxrregcount", std::to_string(options.maxRegisters)});
  if (options.generateLineInfo)
    argv.push_back("-lineinfo");
  argv.insert(argv.end(), {input->path(), "-o", output->path()});

  const auto start = std::chrono::steady_clock::now();
  Result<ProcessOutput> run = runProcess(argv);
  result.compileMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!run)
    return run.error();
  // ptxas writes everything (info and errors) to stderr.
  std::string log = run->standardError;
  if (!run->standardOutput.empty())
    log = run->standardOutput + "\n" + log;
  // ptxas names the temp file in each message; point at the candidate instead.
  for (size_t at = log.find(input->path()); at != std::string::npos; at = log.find(input->path(), at))
    log.replace(at, input->path().size(), "candidate.ptx");

  if (run->exitCode != 0) {
    // Option errors mean we called ptxas wrongly; they are not about the PTX.
    if (log.find("is not defined for option") != std::string::npos ||
        log.find("Unknown option") != std::string::npos)
      return makeError(ErrorKind::InvalidInput, "ptxas rejected its options: " + log);
    result.errorLog = std::move(log);
    result.ok = false;
    interpretLogs(ptx, options, result);
    ensureFailureDiagnostic(result, "ptxas exited with status " + std::to_string(run->exitCode));
    return result;
  }
  result.infoLog = std::move(log);
  Result<std::vector<uint8_t>> cubin = output->read();
  if (!cubin)
    return cubin.error();
  if (cubin->empty())
    return makeError(ErrorKind::Internal, "ptxas succeeded but wrote an empty cubin; log:\n" + result.infoLog);
  result.cubin = std::move(*cubin);
  result.ok = true;
  interpretLogs(ptx, options, result);
  return result;
}

} // namespace

std::optional<std::string> findPtxas() {
  if (const char *fromEnv = std::getenv("PTXFORGE_PTXAS"); fromEnv && *fromEnv)
    return isExecutableFile(fromEnv) ? std::optional<std::string>(fromEnv) : std::nullopt;
  if (std::optional<std::string> onPath = findOnPath("ptxas"))
    return onPath;
  const std::string bundled = std::string(PTXFORGE_CUDA_ROOT) + "/bin/ptxas";
  if (isExecutableFile(bundled))
    return bundled;
  return std::nullopt;
}

std::vector<std::string> entryNames(std::string_view ptx) {
  std::vector<std::string> names;
  auto isIdentifierChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%';
  };
  size_t i = 0;
  while (i < ptx.size()) {
    if (ptx.compare(i, 2, "//") == 0) {
      i = ptx.find('\n', i);
      if (i == std::string_view::npos)
        break;
      continue;
    }
    if (ptx.compare(i, 2, "/*") == 0) {
      i = ptx.find("*/", i + 2);
      if (i == std::string_view::npos)
        break;
      i += 2;
      continue;
    }
    if (ptx[i] == '"') { // string literals (e.g. in .pragma) cannot hide a directive
      size_t close = ptx.find('"', i + 1);
      i = close == std::string_view::npos ? ptx.size() : close + 1;
      continue;
    }
    const bool atToken = i == 0 || !isIdentifierChar(ptx[i - 1]);
    if (atToken && ptx.compare(i, 6, ".entry") == 0 && i + 6 < ptx.size() && !isIdentifierChar(ptx[i + 6])) {
      size_t j = i + 6;
      while (j < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[j])))
        ++j;
      size_t begin = j;
      while (j < ptx.size() && isIdentifierChar(ptx[j]))
        ++j;
      if (j > begin)
        names.emplace_back(ptx.substr(begin, j - begin));
      i = j;
      continue;
    }
    ++i;
  }
  return names;
}

bool targetsDebug(std::string_view ptx) {
  size_t at = 0;
  while ((at = ptx.find(".target", at)) != std::string_view::npos) {
    size_t end = ptx.find('\n', at);
    std::string_view line = ptx.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    line = line.substr(0, line.find("//"));
    for (size_t word = line.find("debug"); word != std::string_view::npos; word = line.find("debug", word + 1)) {
      bool startOk = word > 0 && (line[word - 1] == ' ' || line[word - 1] == ',' || line[word - 1] == '\t');
      bool endOk = word + 5 == line.size() || !std::isalnum(static_cast<unsigned char>(line[word + 5]));
      if (startOk && endOk) return true;
    }
    at += 7;
  }
  return false;
}

Result<CompileResult> compilePtx(std::string_view ptx, const CompileOptions &requested) {
  if (Result<void> valid = validateOptions(requested); !valid)
    return valid.error();
  // `.target …, debug` (nvcc -G) carries debug information that ptxas only
  // compiles unoptimized ("Optimized debugging not supported" otherwise).
  CompileOptions options = requested;
  bool debugTarget = targetsDebug(ptx);
  if (debugTarget)
    options.optLevel = 0;
  Result<CompileResult> result = makeError(ErrorKind::Internal, "unknown compile backend");
  switch (options.backend) {
  case CompileOptions::Backend::NvJitLink:
    result = compileWithNvJitLink(ptx, options);
    break;
  case CompileOptions::Backend::Ptxas:
    result = compileWithPtxas(ptx, options);
    break;
  }
  if (result && debugTarget && requested.optLevel != 0)
    result->advisories.push_back("the module targets `debug` (nvcc -G): compiled at -O0, as ptxas requires for "
                                 "debug information; remove `debug` from .target to compile optimized");
  return result;
}

} // namespace ptxforge::toolchain
