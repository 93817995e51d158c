// Compiler: the compile gate. PTX text -> cubin via nvJitLink (or the ptxas
// executable), run in ptxforge_compile_worker under time, memory and output
// limits by default, with the logs, crashes and limits turned into data.
#pragma once

#include "ptx/Diagnostic.h"
#include "support/Result.h"
#include "toolchain/ResourceUsage.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::toolchain {

/// Diagnostic codes of compiles stopped by a limit or a compiler crash
/// (stable, kebab-case; the compile-* codes of logs are in LogParser.h).
inline constexpr const char *kCodeCompilerCrashed = "compiler-crashed";
inline constexpr const char *kCodeCompileTimeout = "compile-timeout";
inline constexpr const char *kCodeCompileMemoryLimit = "compile-memory-limit";
inline constexpr const char *kCodeCompileOutputLimit = "compile-output-limit";
inline constexpr const char *kCodeCompileInputTooLarge = "compile-input-too-large";
inline constexpr const char *kCodeCompileIdentifierTooLong = "compile-identifier-too-long";

/// How to compile a PTX module.
struct CompileOptions {
  /// Which program turns PTX into SASS.
  enum class Backend {
    NvJitLink, ///< libnvJitLink (default: no ptxas process, no temp files)
    Ptxas,     ///< the ptxas executable (PTXFORGE_PTXAS, PATH, then the CUDA root)
  };
  /// Where the compiler runs. nvJitLink and ptxas crash, hang or exhaust
  /// memory on some PTX (docs/limits.md, "Compile"); untrusted PTX must not
  /// take the caller down with them.
  enum class Isolation {
    Worker,    ///< ptxforge_compile_worker, a warm child process under the limits below (default)
    InProcess, ///< nvJitLink in this process, no time/memory limits: trusted PTX only (nvcc/NVRTC output)
  };
  std::string arch = "sm_90"; ///< real architecture: sm_NN, sm_NNa or sm_NNf
  int optLevel = 3;           ///< ptxas optimisation level, 0..3
  int maxRegisters = 0;       ///< per-thread register cap; 0 = unlimited
  Backend backend = Backend::NvJitLink;
  bool generateLineInfo = false; ///< -lineinfo (SASS-to-PTX line mapping)
  /// ptxas backend only: compile as relocatable code (`ptxas -c`), the way
  /// nvJitLink compiles PTX, instead of as a whole program.
  bool relocatable = false;
  /// The kernel whose resources fill CompileResult::resources; empty = the
  /// first .entry of the module.
  std::string entryName;

  Isolation isolation = Isolation::Worker;
  // Limits. 0 means: the environment variable named, else the default.
  // A compile stopped by one is a rejected module (CompileResult::ok false,
  // one diagnostic with the code above that names the limit and this knob).
  uint32_t timeoutMs = 0;     ///< wall clock per compile; PTXFORGE_COMPILE_TIMEOUT_MS, 30000. Worker only
  uint32_t memoryLimitMb = 0; ///< address space (RLIMIT_AS) of the compiler; PTXFORGE_COMPILE_MEMORY_MB, 4096. Worker only
  uint32_t maxOutputMb = 0;   ///< cubin size; PTXFORGE_COMPILE_MAX_OUTPUT_MB, 256. Worker only
  uint64_t maxPtxBytes = 0;   ///< PTX size, checked before compiling; PTXFORGE_COMPILE_MAX_PTX_BYTES, 16 MiB
  uint32_t maxIdentifierLength = 0; ///< longest name/token, checked before compiling; PTXFORGE_COMPILE_MAX_IDENTIFIER, 16384
  /// The worker executable; empty = $PTXFORGE_COMPILE_WORKER, then
  /// ptxforge_compile_worker next to the running executable, then the build tree's.
  std::string workerPath;
};

/// CompileOptions' limits with the environment and defaults applied.
struct CompileLimits {
  uint32_t timeoutMs = 30000;
  uint64_t memoryLimitMb = 4096;
  uint64_t maxOutputMb = 256;
  uint64_t maxPtxBytes = 16u << 20;
  uint32_t maxIdentifierLength = 16384;
};

/// Resolves the limits of `options` (field, else environment, else default).
/// An Error when an environment variable is set but not a positive integer.
Result<CompileLimits> resolveCompileLimits(const CompileOptions &options);

/// The cheap checks made before any compile: the PTX size and the longest
/// identifier (or other token) against `limits`. nullopt when both pass, else
/// one error diagnostic (located at the token for an identifier).
std::optional<ptx::Diagnostic> checkInputLimits(std::string_view ptx, const CompileLimits &limits);

/// Name of a backend as reported in results ("nvjitlink", "ptxas").
const char *backendName(CompileOptions::Backend backend);

/// The backend the verification gate compiles candidates and references with:
/// $PTXFORGE_GATE_COMPILER ("ptxas", the default, or "nvjitlink"). ptxas
/// builds a whole program, what `nvcc -O3` and the driver's JIT produce;
/// nvJitLink compiles PTX as relocatable code (as `ptxas -c`), and on some
/// tasks that code is up to 1.66x slower (docs/register-counts.md), so a
/// baseline built that way is not nvcc's. An unknown value is ptxas.
CompileOptions::Backend gateCompilerBackend();

/// The kernel's register count from the backend a compile did not use, and
/// why it differs (docs/register-counts.md). nvJitLink builds the cubin the
/// gate loads and runs; `ptxas` on its own may allocate differently.
struct OtherBackendRegisters {
  std::string backend;         ///< "ptxas" or "nvjitlink": the one the compile did not use
  int registers = -1;          ///< its count for the compile's kernel (-1: not reported)
  int primaryRegisters = -1;   ///< the compile's own count, for the comparison
  bool differs = false;
  /// When they differ: the explanation found, or what was tried.
  std::string reason;
  /// True when `reason` was confirmed by a compile (ptxas -c matching nvJitLink).
  bool reasonConfirmed = false;
};

/// Outcome of compiling one module. `ok == false` means the PTX was rejected;
/// the reasons are in `diagnostics` (and the raw logs).
struct CompileResult {
  bool ok = false;
  std::vector<uint8_t> cubin; ///< the ELF for `arch`; empty when !ok
  std::vector<ptx::Diagnostic> diagnostics; ///< errors and warnings from the compiler log
  std::string kernelName;       ///< the entry `resources` describes (options.entryName or first .entry)
  ResourceUsage resources;      ///< that kernel's resources (known == false when the log had none)
  std::vector<ResourceUsage> functions; ///< every function the log described (entries and .funcs)
  ModuleResources module;       ///< module-wide gmem / constant banks
  std::vector<std::string> advisories; ///< ptxas performance advisories
  std::string infoLog;          ///< raw info log (nvJitLink) / tool output on success (ptxas)
  std::string errorLog;         ///< raw error log (nvJitLink) / tool output on failure (ptxas)
  double compileMs = 0;         ///< wall time of the compile call(s), steady_clock
  std::string backend;          ///< "nvjitlink" or "ptxas"
  std::string arch;             ///< the target actually compiled for
  std::string toolVersion;      ///< e.g. "nvJitLink 13.0" or the ptxas path
  /// Set by compareWithOtherBackend: the other backend's count for the kernel.
  std::optional<OtherBackendRegisters> otherBackend;
};

/// Compiles PTX text for `options.arch`. The Result is an Error only when the
/// tool itself cannot run or is misused (missing ptxas or compile worker, an
/// invalid option such as arch "sm_xx", an internal library failure); PTX that
/// fails to compile — including PTX that crashes the compiler or exceeds a
/// limit — gives an ok Result whose CompileResult has ok == false and
/// diagnostics. Thread-safe: concurrent callers get a worker each.
Result<CompileResult> compilePtx(std::string_view ptx, const CompileOptions &options);

/// Compiles `ptx` again with the backend `options` did not choose (same arch,
/// -O level, register cap) and compares its register count for
/// `result.kernelName` with `result`'s. When they differ, a third compile
/// with `ptxas -c` (relocatable, as nvJitLink compiles PTX) tells whether that
/// is the cause. An Error when the other backend cannot run (no ptxas) or
/// fails on a module the first one compiled; `result` must be ok.
Result<OtherBackendRegisters> compareWithOtherBackend(std::string_view ptx, const CompileOptions &options,
                                                      const CompileResult &result);

/// True when the module's `.target` lists `debug` (nvcc -G output). Such a
/// module is compiled at -O0 whatever `optLevel` says, with an advisory.
bool targetsDebug(std::string_view ptx);

/// Where the ptxas backend would find ptxas: $PTXFORGE_PTXAS, PATH, then
/// <CUDA root>/bin/ptxas. nullopt when none is executable.
std::optional<std::string> findPtxas();

/// The names of the .entry functions of a PTX module, in source order
/// (a light scan that skips comments; not a full parse).
std::vector<std::string> entryNames(std::string_view ptx);

} // namespace ptxforge::toolchain
