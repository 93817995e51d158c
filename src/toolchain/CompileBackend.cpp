// CompileBackend: nvJitLink (a library call) and ptxas (a subprocess) run once,
// their logs and cubin returned as they are.
#include "toolchain/CompileBackend.h"

#include "toolchain/Subprocess.h"

#include <nvJitLink.h>

#include <chrono>

namespace ptxforge::toolchain {

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

Result<RawCompile> runNvJitLink(std::string_view ptx, const BackendRequest &request) {
  RawCompile result;
  unsigned major = 0, minor = 0;
  if (nvJitLinkResult rc = nvJitLinkVersion(&major, &minor); rc != NVJITLINK_SUCCESS)
    return makeError(ErrorKind::Internal, describeCall("nvJitLinkVersion", rc));
  result.toolVersion = "nvJitLink " + std::to_string(major) + "." + std::to_string(minor);

  std::vector<std::string> optionStrings = {"-arch=" + request.arch, "-verbose"};
  // nvJitLink accepts only -O0 and -O3 itself; other levels go to ptxas directly.
  if (request.optLevel == 0 || request.optLevel == 3)
    optionStrings.push_back("-O" + std::to_string(request.optLevel));
  else
    optionStrings.push_back("-Xptxas=-O" + std::to_string(request.optLevel));
  if (request.maxRegisters > 0)
    optionStrings.push_back("-maxrregcount=" + std::to_string(request.maxRegisters));
  if (request.generateLineInfo)
    optionStrings.push_back("-lineinfo");
  std::vector<const char *> optionPointers;
  for (const std::string &option : optionStrings)
    optionPointers.push_back(option.c_str());

  // nvJitLinkAddData reads one byte past `size` (valgrind: "invalid read of
  // size 1 ... 0 bytes after a block"): it wants a NUL-terminated buffer,
  // which a string_view does not promise. A copy costs microseconds.
  const std::string text(ptx);

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
  auto failed = [&](const char *call, nvJitLinkResult rc) -> Result<RawCompile> {
    stopClock();
    readLogs();
    result.ok = false;
    result.failure = describeCall(call, rc);
    result.toolFailure = isToolFailure(rc);
    return result;
  };

  if (nvJitLinkResult rc = nvJitLinkAddData(handle.get(), NVJITLINK_INPUT_PTX, text.c_str(), text.size(), "candidate.ptx");
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
  return result;
}

Result<RawCompile> runPtxas(std::string_view ptx, const BackendRequest &request) {
  if (request.ptxasPath.empty())
    return makeError(ErrorKind::ToolMissing, "ptxas backend requested without a ptxas path");
  RawCompile result;
  result.toolVersion = request.ptxasPath;

  Result<TempFile> input = TempFile::create(".ptx");
  if (!input)
    return input.error();
  Result<TempFile> output = TempFile::create(".cubin");
  if (!output)
    return output.error();
  if (Result<void> written = input->write(ptx); !written)
    return written.error();

  std::vector<std::string> argv = {request.ptxasPath, "-arch=" + request.arch, "-O" + std::to_string(request.optLevel),
                                   "-v"};
  if (request.maxRegisters > 0)
    argv.insert(argv.end(), {"-maxrregcount", std::to_string(request.maxRegisters)});
  if (request.generateLineInfo)
    argv.push_back("-lineinfo");
  if (request.relocatable)
    argv.push_back("-c");
  argv.insert(argv.end(), {input->path(), "-o", output->path()});

  const auto start = std::chrono::steady_clock::now();
  // ptxas stays in the caller's process group: the compile worker's deadline
  // kills that group, and a ptxas of its own group would outlive it.
  ProcessOptions processOptions;
  processOptions.ownProcessGroup = false;
  Result<ProcessResult> run = runProcess(argv, processOptions);
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
  // "ptxas info    : Compile time = 2.928 ms" says nothing about the PTX and
  // differs run to run: a log stays the same for the same module without it.
  for (size_t at = log.find("info    : Compile time = "); at != std::string::npos;
       at = log.find("info    : Compile time = ", at)) {
    const size_t start = log.rfind('\n', at);
    const size_t from = start == std::string::npos ? 0 : start + 1;
    const size_t end = log.find('\n', at);
    log.erase(from, end == std::string::npos ? std::string::npos : end - from + 1);
    at = from;
  }

  if (run->exitCode != 0) {
    // Option errors mean we called ptxas wrongly; they are not about the PTX.
    if (log.find("is not defined for option") != std::string::npos ||
        log.find("Unknown option") != std::string::npos)
      return makeError(ErrorKind::InvalidInput, "ptxas rejected its options: " + log);
    result.errorLog = std::move(log);
    result.ok = false;
    if (run->exitCode > 128 && run->exitCode < 128 + 65)
      result.toolSignal = run->exitCode - 128; // runProcess reports a signal as 128+N
    result.failure = "ptxas exited with status " + std::to_string(run->exitCode);
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
  return result;
}

} // namespace

Result<RawCompile> runBackend(std::string_view ptx, const BackendRequest &request) {
  switch (request.backend) {
  case BackendKind::NvJitLink:
    return runNvJitLink(ptx, request);
  case BackendKind::Ptxas:
    return runPtxas(ptx, request);
  }
  return makeError(ErrorKind::Internal, "unknown compile backend");
}

} // namespace ptxforge::toolchain
