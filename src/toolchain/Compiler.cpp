// Compiler: compilePtx — options and input limits checked here, the compile
// run in ptxforge_compile_worker (or in this process for trusted PTX), and the
// logs, crashes and limits turned into a CompileResult.
#include "toolchain/Compiler.h"

#include "ptx/Parser.h"

#include "toolchain/CompileBackend.h"
#include "toolchain/CompileWorker.h"
#include "toolchain/LogParser.h"
#include "toolchain/Subprocess.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <regex>

#ifndef PTXFORGE_CUDA_ROOT
#define PTXFORGE_CUDA_ROOT "/usr/local/cuda"
#endif

namespace ptxforge::toolchain {

CompileOptions::Backend gateCompilerBackend() {
  const char *env = std::getenv("PTXFORGE_GATE_COMPILER");
  return env && std::string_view(env) == "nvjitlink" ? CompileOptions::Backend::NvJitLink : CompileOptions::Backend::Ptxas;
}

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
  // ptxas names no line for a .target it cannot compile for: point at it.
  for (ptx::Diagnostic &diagnostic : result.diagnostics) {
    const size_t at = ptx.find(".target");
    if (diagnostic.line != 0 || diagnostic.message.find(".target") == std::string::npos || at == std::string_view::npos)
      continue;
    const size_t lineStart = at == 0 ? 0 : ptx.rfind('\n', at - 1) + 1; // npos + 1 == 0: the first line
    diagnostic.line = static_cast<uint32_t>(std::count(ptx.begin(), ptx.begin() + static_cast<std::ptrdiff_t>(at), '\n')) + 1;
    diagnostic.column = static_cast<uint32_t>(at - lineStart) + 1;
  }
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

/// Reads a positive integer limit: the option field when set, else the
/// environment variable when set, else the default.
Result<uint64_t> resolveLimit(uint64_t field, const char *variable, uint64_t fallback) {
  if (field != 0)
    return field;
  const char *text = std::getenv(variable);
  if (!text || !*text)
    return fallback;
  char *end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || value == 0 || !std::isdigit(static_cast<unsigned char>(text[0])))
    return makeError(ErrorKind::InvalidInput,
                     std::string(variable) + "='" + text + "' is not a positive integer");
  return static_cast<uint64_t>(value);
}

/// How a trusted caller raises a limit, for the hints.
std::string raiseHint(const char *field, const char *variable) {
  return std::string("a trusted caller can raise the limit with CompileOptions::") + field + " or " + variable;
}

ptx::Diagnostic limitDiagnostic(const char *code, std::string message, std::string hint) {
  ptx::Diagnostic diagnostic;
  diagnostic.code = code;
  diagnostic.message = std::move(message);
  diagnostic.hint = std::move(hint);
  return diagnostic;
}

/// The toolName as users know it, for messages.
const char *toolName(BackendKind backend) { return backend == BackendKind::Ptxas ? "ptxas" : "nvJitLink"; }

ptx::Diagnostic memoryLimitDiagnostic(BackendKind backend, const CompileLimits &limits) {
  return limitDiagnostic(kCodeCompileMemoryLimit,
                         std::string(toolName(backend)) + " ran out of memory compiling this module: the compile is limited to " +
                             std::to_string(limits.memoryLimitMb) + " MiB of address space (RLIMIT_AS)",
                         "shrink large .global/.const arrays and their initializers, or the amount of unrolled code; " +
                             raiseHint("memoryLimitMb", "PTXFORGE_COMPILE_MEMORY_MB"));
}

ptx::Diagnostic crashDiagnostic(BackendKind backend, const std::string &how, const std::string &printed) {
  std::string message = std::string(toolName(backend)) + " crashed compiling this module (" + how + ")";
  std::string tail = printed;
  while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.back())))
    tail.pop_back();
  if (!tail.empty()) {
    if (tail.size() > 400)
      tail = "…" + tail.substr(tail.size() - 400);
    message += "; it printed: " + tail;
  }
  return limitDiagnostic(kCodeCompilerCrashed, std::move(message),
                         "the module triggers a compiler bug, so it cannot be compiled as written; look for unusual "
                         "constructs (e.g. a st.param through the address of a kernel parameter, giant names or "
                         "initializers) and write them the ordinary way");
}

/// `bytes` = the output's size when known, 0 when the writer was stopped at the limit.
ptx::Diagnostic outputLimitDiagnostic(uint64_t bytes, const CompileLimits &limits) {
  const std::string size = bytes != 0 ? "(" + std::to_string(bytes) + " bytes)" : "(stopped by SIGXFSZ while writing)";
  return limitDiagnostic(kCodeCompileOutputLimit,
                         "the compiled output " + size + " exceeds the " + std::to_string(limits.maxOutputMb) +
                             " MiB output limit",
                         "shrink large initialized .global/.const arrays; " +
                             raiseHint("maxOutputMb", "PTXFORGE_COMPILE_MAX_OUTPUT_MB"));
}

bool mentionsAllocationFailure(std::string_view text) {
  return text.find("Memory allocation failure") != std::string_view::npos ||
         text.find("out of memory") != std::string_view::npos;
}

BackendRequest toBackendRequest(const CompileOptions &options) {
  BackendRequest request;
  request.backend = options.backend == CompileOptions::Backend::Ptxas ? BackendKind::Ptxas : BackendKind::NvJitLink;
  request.arch = options.arch;
  request.optLevel = options.optLevel;
  request.maxRegisters = options.maxRegisters;
  request.generateLineInfo = options.generateLineInfo;
  request.relocatable = options.relocatable && request.backend == BackendKind::Ptxas;
  return request;
}

/// A CompileResult with ok == false and one diagnostic, the compiler never having answered.
CompileResult rejected(const CompileOptions &options, ptx::Diagnostic diagnostic) {
  CompileResult result;
  result.backend = backendName(options.backend);
  result.arch = options.arch;
  result.kernelName = options.entryName;
  result.resources.function = options.entryName;
  result.errorLog = diagnostic.message;
  result.diagnostics.push_back(std::move(diagnostic));
  return result;
}

/// Turns a raw compile into the CompileResult: logs parsed, failures
/// explained. `memoryLimited` says the compiler ran into the memory limit.
Result<CompileResult> interpretRaw(std::string_view ptx, const CompileOptions &options, const BackendRequest &request,
                                   RawCompile raw, bool memoryLimited, const CompileLimits &limits) {
  CompileResult result;
  result.backend = backendName(options.backend);
  result.arch = options.arch;
  result.ok = raw.ok;
  result.cubin = std::move(raw.cubin);
  result.infoLog = std::move(raw.infoLog);
  result.errorLog = std::move(raw.errorLog);
  result.compileMs = raw.compileMs;
  result.toolVersion = std::move(raw.toolVersion);
  interpretLogs(ptx, options, result);
  if (result.ok)
    return result;
  if (memoryLimited) {
    result.diagnostics.insert(result.diagnostics.begin(), memoryLimitDiagnostic(request.backend, limits));
    return result;
  }
  if (raw.toolSignal == SIGXFSZ) {
    result.diagnostics.insert(result.diagnostics.begin(), outputLimitDiagnostic(0, limits));
    return result;
  }
  if (raw.toolSignal != 0) {
    result.diagnostics.insert(result.diagnostics.begin(),
                              crashDiagnostic(request.backend,
                                              "ptxas was killed by signal " + std::to_string(raw.toolSignal) + " (" +
                                                  strsignal(raw.toolSignal) + ")",
                                              result.errorLog));
    return result;
  }
  // The result code alone does not say whose fault it is: nvJitLink 13.0
  // reports "uses too much shared data" as NVJITLINK_ERROR_INTERNAL. A log
  // that names an error in the PTX makes it a rejected candidate.
  if (raw.toolFailure && !ptx::hasErrors(result.diagnostics))
    return makeError(ErrorKind::Internal,
                     raw.failure + "\nerror log:\n" + result.errorLog + "\ninfo log:\n" + result.infoLog);
  ensureFailureDiagnostic(result, raw.failure);
  return result;
}

Result<CompileResult> compileIsolated(std::string_view ptx, const CompileOptions &options, const BackendRequest &backend,
                                      const CompileLimits &limits) {
  protocol::Request request;
  request.backend = backend;
  request.memoryLimitBytes = limits.memoryLimitMb << 20;
  request.maxOutputBytes = limits.maxOutputMb << 20;
  request.timeoutMs = limits.timeoutMs;
  request.ptx = std::string(ptx);
  // The reply carries the cubin and two logs of at most kMaxLogBytes each.
  const uint64_t maxReplyBytes = request.maxOutputBytes + 2 * protocol::kMaxLogBytes + (1u << 16);
  const auto start = std::chrono::steady_clock::now();
  Result<WorkerOutcome> outcome = compileInWorker(request, options.workerPath, maxReplyBytes);
  const double elapsedMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!outcome)
    return outcome.error();

  auto failedWith = [&](ptx::Diagnostic diagnostic) {
    CompileResult result = rejected(options, std::move(diagnostic));
    result.compileMs = elapsedMs;
    if (!outcome->stderrTail.empty())
      result.errorLog += "\n" + outcome->stderrTail;
    return result;
  };
  switch (outcome->kind) {
  case WorkerOutcome::Kind::TimedOut:
    return failedWith(limitDiagnostic(
        kCodeCompileTimeout,
        std::string(toolName(backend.backend)) + " did not finish compiling this module within the " +
            std::to_string(limits.timeoutMs) + " ms limit and was stopped (" + outcome->how + ")",
        "make the module cheaper to compile (fewer unrolled instructions, smaller initializers); " +
            raiseHint("timeoutMs", "PTXFORGE_COMPILE_TIMEOUT_MS")));
  case WorkerOutcome::Kind::OutputLimit:
    return failedWith(outputLimitDiagnostic(outcome->replyBytes, limits));
  case WorkerOutcome::Kind::Crashed:
    if (outcome->allocationFailed || mentionsAllocationFailure(outcome->stderrTail))
      return failedWith(memoryLimitDiagnostic(backend.backend, limits));
    return failedWith(crashDiagnostic(backend.backend, outcome->how, outcome->stderrTail));
  case WorkerOutcome::Kind::Answered:
    break;
  }
  protocol::Response &response = outcome->response;
  if (response.isError)
    return makeError(response.errorKind, response.errorMessage);
  const bool memoryLimited =
      !response.raw.ok && (outcome->allocationFailed || mentionsAllocationFailure(outcome->stderrTail) ||
                           mentionsAllocationFailure(response.raw.errorLog));
  Result<CompileResult> result = interpretRaw(ptx, options, backend, std::move(response.raw), memoryLimited, limits);
  if (result && response.cubinBytesDropped != 0) {
    result->ok = false;
    result->cubin.clear();
    result->diagnostics.insert(result->diagnostics.begin(), outputLimitDiagnostic(response.cubinBytesDropped, limits));
  }
  return result;
}
} // namespace

namespace {
/// "ptxas 13.0" from `ptxas --version` ("... release 13.0, V13.0.88"), as
/// nvJitLink's results say "nvJitLink 13.0"; the path when the answer says no
/// release. One run per path and process.
std::string ptxasVersion(const std::string &path) {
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  std::lock_guard lock(mutex);
  if (auto it = known.find(path); it != known.end()) return it->second;
  std::string version = path;
  ProcessOptions options;
  options.timeout = std::chrono::seconds(10);
  options.maxStdoutBytes = 1 << 16;
  options.stderrTailBytes = 1 << 12;
  if (Result<ProcessResult> run = runProcess({path, "--version"}, options); run && run->exitCode == 0) {
    static const std::regex release("release ([0-9]+\\.[0-9]+)");
    std::smatch match;
    if (std::regex_search(run->standardOutput, match, release)) version = "ptxas " + match[1].str();
  }
  return known.emplace(path, version).first->second;
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
  // The PTX front end's tree, not a scanner of its own: comments, strings and
  // nesting are handled where they are for every other reader.
  std::vector<std::string> names;
  for (const ptx::TopLevel &item : ptx::parse(ptx).module.items)
    if (item.kind == ptx::TopLevel::Kind::Function && item.function.isEntry)
      names.push_back(item.function.name);
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

Result<CompileLimits> resolveCompileLimits(const CompileOptions &options) {
  CompileLimits limits;
  Result<uint64_t> timeoutMs = resolveLimit(options.timeoutMs, "PTXFORGE_COMPILE_TIMEOUT_MS", limits.timeoutMs);
  if (!timeoutMs)
    return timeoutMs.error();
  Result<uint64_t> memoryLimitMb = resolveLimit(options.memoryLimitMb, "PTXFORGE_COMPILE_MEMORY_MB", limits.memoryLimitMb);
  if (!memoryLimitMb)
    return memoryLimitMb.error();
  Result<uint64_t> maxOutputMb = resolveLimit(options.maxOutputMb, "PTXFORGE_COMPILE_MAX_OUTPUT_MB", limits.maxOutputMb);
  if (!maxOutputMb)
    return maxOutputMb.error();
  Result<uint64_t> maxPtxBytes = resolveLimit(options.maxPtxBytes, "PTXFORGE_COMPILE_MAX_PTX_BYTES", limits.maxPtxBytes);
  if (!maxPtxBytes)
    return maxPtxBytes.error();
  Result<uint64_t> maxIdentifierLength =
      resolveLimit(options.maxIdentifierLength, "PTXFORGE_COMPILE_MAX_IDENTIFIER", limits.maxIdentifierLength);
  if (!maxIdentifierLength)
    return maxIdentifierLength.error();
  // Clamp to what the types and the shifts to bytes can carry.
  limits.timeoutMs = static_cast<uint32_t>(std::min<uint64_t>(*timeoutMs, 24u * 3600 * 1000));
  limits.memoryLimitMb = std::min<uint64_t>(*memoryLimitMb, uint64_t{1} << 30);
  limits.maxOutputMb = std::min<uint64_t>(*maxOutputMb, uint64_t{1} << 20);
  limits.maxPtxBytes = *maxPtxBytes;
  limits.maxIdentifierLength = static_cast<uint32_t>(std::min<uint64_t>(*maxIdentifierLength, UINT32_MAX));
  return limits;
}

std::optional<ptx::Diagnostic> checkInputLimits(std::string_view ptx, const CompileLimits &limits) {
  if (ptx.size() > limits.maxPtxBytes)
    return limitDiagnostic(kCodeCompileInputTooLarge,
                           "the module is " + std::to_string(ptx.size()) + " bytes; the compile limit is " +
                               std::to_string(limits.maxPtxBytes) + " bytes",
                           "a kernel's PTX is normally a few to a few hundred KiB: generate less code (fewer "
                           "unrolled copies, no huge initializers); " +
                               raiseHint("maxPtxBytes", "PTXFORGE_COMPILE_MAX_PTX_BYTES"));
  // The longest run of identifier characters outside comments and strings.
  // nvJitLink 13.0 corrupts its heap on a 100,000-character function name and
  // grinds for 43 s before crashing on a 10 MB one; no real name comes close.
  auto isIdentifierChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%';
  };
  uint32_t line = 1;
  size_t lineStart = 0;
  size_t i = 0;
  while (i < ptx.size()) {
    const char c = ptx[i];
    if (c == '\n') {
      ++line;
      lineStart = ++i;
      continue;
    }
    if (ptx.compare(i, 2, "//") == 0) {
      i = std::min(ptx.find('\n', i), ptx.size());
      continue;
    }
    if (ptx.compare(i, 2, "/*") == 0 || c == '"') {
      const std::string_view close = c == '"' ? "\"" : "*/";
      const size_t end = ptx.find(close, i + (c == '"' ? 1 : 2));
      const size_t stop = end == std::string_view::npos ? ptx.size() : end + close.size();
      for (size_t j = i; j < stop; ++j)
        if (ptx[j] == '\n') {
          ++line;
          lineStart = j + 1;
        }
      i = stop;
      continue;
    }
    if (!isIdentifierChar(c)) {
      ++i;
      continue;
    }
    const size_t begin = i;
    while (i < ptx.size() && isIdentifierChar(ptx[i]))
      ++i;
    const size_t length = i - begin;
    if (length > limits.maxIdentifierLength) {
      ptx::Diagnostic diagnostic = limitDiagnostic(
          kCodeCompileIdentifierTooLong,
          "identifier of " + std::to_string(length) + " characters (`" + std::string(ptx.substr(begin, 24)) +
              "…`) exceeds the " + std::to_string(limits.maxIdentifierLength) + "-character limit",
          "use a short name; nvJitLink corrupts its heap on names of ~64K characters and more; " +
              raiseHint("maxIdentifierLength", "PTXFORGE_COMPILE_MAX_IDENTIFIER"));
      diagnostic.line = line;
      diagnostic.column = static_cast<uint32_t>(begin - lineStart + 1);
      return diagnostic;
    }
  }
  return std::nullopt;
}

Result<CompileResult> compilePtx(std::string_view ptx, const CompileOptions &requested) {
  if (Result<void> valid = validateOptions(requested); !valid)
    return valid.error();
  Result<CompileLimits> limits = resolveCompileLimits(requested);
  if (!limits)
    return limits.error();
  // `.target …, debug` (nvcc -G) carries debug information that ptxas only
  // compiles unoptimized ("Optimized debugging not supported" otherwise).
  CompileOptions options = requested;
  bool debugTarget = targetsDebug(ptx);
  if (debugTarget)
    options.optLevel = 0;
  // Checked in both isolations: the size and name limits guard nvJitLink
  // bugs that would corrupt this very process.
  if (std::optional<ptx::Diagnostic> tooBig = checkInputLimits(ptx, *limits)) {
    CompileResult result = rejected(options, std::move(*tooBig));
    // Located at the module's first token, found in a prefix: the module is too big to read whole.
    locateCompilerDiagnostics(result.diagnostics, ptx.substr(0, std::min<size_t>(ptx.size(), 1u << 20)));
    return result;
  }

  BackendRequest backend = toBackendRequest(options);
  if (backend.backend == BackendKind::Ptxas) {
    // Resolved here, in the caller's environment, not the worker's.
    std::optional<std::string> ptxas = findPtxas();
    if (!ptxas)
      return makeError(ErrorKind::ToolMissing, "ptxas not found: set PTXFORGE_PTXAS to its path, put it on PATH, or "
                                               "install the CUDA toolkit under " PTXFORGE_CUDA_ROOT);
    backend.ptxasPath = *ptxas;
  }
  Result<CompileResult> result = makeError(ErrorKind::Internal, "unreachable");
  if (options.isolation == CompileOptions::Isolation::InProcess) {
    Result<RawCompile> raw = runBackend(ptx, backend);
    if (!raw)
      return raw.error();
    result = interpretRaw(ptx, options, backend, std::move(*raw), false, *limits);
  } else {
    result = compileIsolated(ptx, options, backend, *limits);
  }
  if (result) locateCompilerDiagnostics(result->diagnostics, ptx);
  if (result && backend.backend == BackendKind::Ptxas) result->toolVersion = ptxasVersion(backend.ptxasPath);
  if (result && debugTarget && requested.optLevel != 0)
    result->advisories.push_back("the module targets `debug` (nvcc -G): compiled at -O0, as ptxas requires for "
                                 "debug information; remove `debug` from .target to compile optimized");
  return result;
}

namespace {
/// Which of the two builds the gate loads, for the sentences below.
std::string gateBuild() {
  return gateCompilerBackend() == CompileOptions::Backend::Ptxas ? "the whole-program build (ptxas)"
                                                                 : "nvJitLink's relocatable build";
}
} // namespace

Result<OtherBackendRegisters> compareWithOtherBackend(std::string_view ptx, const CompileOptions &options,
                                                      const CompileResult &result) {
  assert(result.ok && "compareWithOtherBackend needs a successful compile");
  const bool primaryIsNvJitLink = options.backend == CompileOptions::Backend::NvJitLink;
  auto kernelRegisters = [&](const CompileResult &compiled) {
    for (const ResourceUsage &usage : compiled.functions)
      if (usage.function == result.kernelName) return usage.registers;
    return -1;
  };
  auto compileWith = [&](CompileOptions::Backend backend, bool relocatable) -> Result<CompileResult> {
    CompileOptions other = options;
    other.backend = backend;
    other.relocatable = relocatable;
    other.entryName = result.kernelName;
    Result<CompileResult> compiled = compilePtx(ptx, other);
    if (!compiled) return compiled.error();
    if (!compiled->ok) {
      std::string first = compiled->diagnostics.empty() ? compiled->errorLog : compiled->diagnostics.front().message;
      return makeError(ErrorKind::Internal, std::string(backendName(backend)) + " refused a module " +
                                                backendName(options.backend) + " compiled: " + first);
    }
    return compiled;
  };
  Result<CompileResult> other =
      compileWith(primaryIsNvJitLink ? CompileOptions::Backend::Ptxas : CompileOptions::Backend::NvJitLink, false);
  if (!other) return other.error();
  OtherBackendRegisters out;
  out.backend = other->backend;
  out.registers = kernelRegisters(*other);
  out.primaryRegisters = kernelRegisters(result);
  out.differs = out.registers != out.primaryRegisters;
  if (!out.differs) return out;
  const int nvJitLinkCount = primaryIsNvJitLink ? out.primaryRegisters : out.registers;
  const int wholeProgramCount = primaryIsNvJitLink ? out.registers : out.primaryRegisters;
  // nvJitLink hands the PTX to ptxas as a separately compiled, relocatable
  // unit (its own log says "compile only(-c)" for old PTX); ptxas run on its
  // own compiles a whole program. The same -O level, arch and register cap
  // reach both (toBackendRequest), so that mode is the first suspect.
  Result<CompileResult> relocatable = compileWith(CompileOptions::Backend::Ptxas, true);
  const int relocatableCount = relocatable ? kernelRegisters(*relocatable) : -1;
  if (relocatable && relocatableCount == nvJitLinkCount) {
    out.reasonConfirmed = true;
    out.reason = "nvJitLink compiles PTX as relocatable code, like `ptxas -c` (which gives " +
                 std::to_string(relocatableCount) + " registers too); `ptxas` alone compiles it as a whole program (" +
                 std::to_string(wholeProgramCount) + " registers). The gate runs " + gateBuild();
  } else {
    out.reason = "not found: the same -O" + std::to_string(options.optLevel) + ", arch and register cap reach both, and " +
                 (relocatable ? "`ptxas -c` (relocatable, as nvJitLink compiles) gives " +
                                    std::to_string(relocatableCount) + " registers, not nvJitLink's " +
                                    std::to_string(nvJitLinkCount)
                              : "`ptxas -c` failed: " + relocatable.error().message) +
                 ". The gate runs " + gateBuild();
  }
  return out;
}

} // namespace ptxforge::toolchain
