// Compiler: the compile gate. PTX text -> cubin via nvJitLink in-process (or
// the ptxas executable as a fallback), with the logs turned into data.
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

/// How to compile a PTX module.
struct CompileOptions {
  /// Which program turns PTX into SASS.
  enum class Backend {
    NvJitLink, ///< in-process libnvJitLink (default: no process spawn, no temp files)
    Ptxas,     ///< the ptxas executable (PTXFORGE_PTXAS, PATH, then the CUDA root)
  };
  std::string arch = "sm_90"; ///< real architecture: sm_NN, sm_NNa or sm_NNf
  int optLevel = 3;           ///< ptxas optimisation level, 0..3
  int maxRegisters = 0;       ///< per-thread register cap; 0 = unlimited
  Backend backend = Backend::NvJitLink;
  bool generateLineInfo = false; ///< -lineinfo (SASS-to-PTX line mapping)
  /// The kernel whose resources fill CompileResult::resources; empty = the
  /// first .entry of the module.
  std::string entryName;
};

/// Name of a backend as reported in results ("nvjitlink", "ptxas").
const char *backendName(CompileOptions::Backend backend);

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
};

/// Compiles PTX text for `options.arch`. The Result is an Error only when the
/// tool itself cannot run or is misused (missing ptxas, an invalid option such
/// as arch "sm_xx", an internal library failure); PTX that fails to compile
/// gives an ok Result whose CompileResult has ok == false and located
/// diagnostics.
Result<CompileResult> compilePtx(std::string_view ptx, const CompileOptions &options);

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
