// CompileBackend: the raw step of a compile — one nvJitLink link or one ptxas
// run, logs and cubin untouched — shared by the in-process path of compilePtx
// and by ptxforge_compile_worker. Internal to the toolchain library: no log
// parsing here, so the worker links nothing but nvJitLink and `support`.
#pragma once

#include "support/Result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::toolchain {

/// Which program turns PTX into SASS (mirrors CompileOptions::Backend).
enum class BackendKind : uint8_t { NvJitLink = 0, Ptxas = 1 };

/// Everything the raw step needs; plain data so that it crosses the worker pipe.
struct BackendRequest {
  BackendKind backend = BackendKind::NvJitLink;
  std::string arch = "sm_90";
  int optLevel = 3;
  int maxRegisters = 0;
  bool generateLineInfo = false;
  bool relocatable = false; ///< ptxas -c (compile only, relocatable code), as nvJitLink compiles PTX; ptxas only
  std::string ptxasPath; ///< resolved by the caller (its environment, not the worker's)
  friend bool operator==(const BackendRequest &, const BackendRequest &) = default;
};

/// What one compiler run left behind, before its logs are interpreted.
struct RawCompile {
  bool ok = false;
  std::vector<uint8_t> cubin;
  std::string infoLog;
  std::string errorLog;
  double compileMs = 0;
  std::string toolVersion;
  /// On failure: the call that failed, e.g. "nvJitLinkComplete failed with
  /// NVJITLINK_ERROR_PTX_COMPILE (4)" or "ptxas exited with status 255".
  std::string failure;
  /// The failing result code blames the library or its options rather than the
  /// PTX; the caller decides after parsing the logs (nvJitLink 13.0 reports
  /// some PTX errors as NVJITLINK_ERROR_INTERNAL).
  bool toolFailure = false;
  int toolSignal = 0; ///< the signal that killed ptxas; 0 when it exited
  friend bool operator==(const RawCompile &, const RawCompile &) = default;
};

/// Runs the backend once in this process. An Error only when the tool cannot
/// run or was called wrongly (bad options, unreadable temp files).
Result<RawCompile> runBackend(std::string_view ptx, const BackendRequest &request);

} // namespace ptxforge::toolchain
