// Reference: a task's reference.cu compiled through NVRTC to PTX (what
// prompts show and the oracle runs) and through the toolchain to a cubin,
// cached on disk by content hash.
#pragma once

#include "support/Result.h"
#include "tasks/TaskSpec.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::tasks {

/// A compiled reference kernel.
struct CompiledReference {
  std::string ptx;
  std::vector<uint8_t> cubin;
  std::string log;        ///< NVRTC's program log (warnings), then the PTX compiler's info log
  bool fromCache = false;
  std::string cacheKey;   ///< 16 hex digits (FNV-1a 64 of source, arch, options and tool versions)
  std::string nvrtcVersion; ///< "NVRTC 13.0"
  std::string backend;      ///< what made the cubin: "nvjitlink" or "ptxas" (whole program)
};

/// Where compileReference keeps its cache.
struct ReferenceOptions {
  /// Empty: cacheRoot() (support/InputReader.h). The cache lives in <dir>/reference/.
  std::filesystem::path cacheDir;
  bool useCache = true;
  /// What compiles the PTX to the cubin the gate times: "nvjitlink" (the
  /// gate's compiler, as for candidates: relocatable code, as `ptxas -c`) or
  /// "ptxas" (a whole-program compile, what `nvcc -O3` builds; registers may
  /// differ, docs/register-counts.md). Empty: $PTXFORGE_REFERENCE_BACKEND,
  /// else the gate's compiler (toolchain::gateCompilerBackend()).
  std::string backend;
};

/// The NVRTC options used for `arch` (sm_NN[a|f]): PTX for compute_NN[a|f],
/// C++17, nvcc's default optimisation, the toolkit headers on the include path.
std::vector<std::string> nvrtcOptions(std::string_view arch);

/// NVRTC's output for one translation unit.
struct NvrtcOutput {
  std::string ptx;
  std::string log; ///< NVRTC's program log (warnings)
};

/// Compiles any CUDA `source` (called `fileName` in NVRTC's messages) to PTX
/// for `arch` with nvrtcOptions(arch) followed by `extraOptions` (e.g. "-G",
/// "--use_fast_math", "--include-path=DIR"). NVRTC rejecting the source is
/// ErrorKind::Compile with its log; an option NVRTC does not know is an Error
/// whose message carries NVRTC's log (which names the option).
Result<NvrtcOutput> compileCudaSource(std::string_view source, const std::string &fileName, std::string_view arch,
                                      const std::vector<std::string> &extraOptions = {});

/// "NVRTC 13.0"; an Error when nvrtcVersion fails.
Result<std::string> nvrtcVersionString();

/// Compiles `source` (which must define extern "C" `kernelName`) for `arch`.
/// NVRTC rejecting the source is ErrorKind::Compile with NVRTC's log; the PTX
/// lacking `.entry kernelName` (e.g. a C++-mangled name) too. A cache that
/// cannot be written is not an error (the result is simply not cached); a
/// corrupt cache entry is ignored and rebuilt.
Result<CompiledReference> compileReferenceSource(std::string_view source, std::string_view kernelName,
                                                 std::string arch = "sm_90", const ReferenceOptions &options = {});

/// compileReferenceSource on the task's reference.cu and kernel name.
Result<CompiledReference> compileReference(const TaskSpec &task, std::string arch = "sm_90",
                                           const ReferenceOptions &options = {});

} // namespace ptxforge::tasks
