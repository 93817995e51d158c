// Measured ceilings of a device: what copy bandwidth and FP32/FP16 FMA
// throughput a simple, well-formed kernel actually reaches. Achieved figures
// are reported as fractions of these, and a result above them is implausible.
#pragma once

#include "exec/Executor.h"
#include "support/Result.h"

#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ptxforge::verify {

struct DeviceCeilings {
  std::string device;         ///< the executor's device name
  std::string arch;
  double copyGBs = 0;         ///< device-to-device copy, bytes read + written per second
  double fp32Gflops = 0;      ///< FFMA, 2 FLOP each
  double fp16Gflops = 0;      ///< HFMA2, 4 FLOP each
  std::string measuredAt;     ///< ISO date-time of the measurement
};

/// Measures the ceilings on `executor` with PTX kernels compiled for its arch
/// (a 128-bit grid-stride copy of 1 GiB, and independent FMA chains).
Result<DeviceCeilings> measureCeilings(exec::Executor &executor);

/// The PTX of the measuring kernels for `arch`, by name ("copy", "fp32", "fp16").
std::vector<std::pair<std::string, std::string>> ceilingKernels(const std::string &arch);

/// Where the ceilings of a device are cached: <cache dir>/device-<name>.json.
std::filesystem::path ceilingsCachePath(const std::string &deviceName);

/// The cached ceilings for this device, if a readable cache entry exists.
std::optional<DeviceCeilings> loadCachedCeilings(const std::string &deviceName);

/// Writes the cache entry (temp file + rename). An unwritable cache is an error
/// the caller may ignore.
Result<void> storeCeilings(const DeviceCeilings &ceilings);

nlohmann::json toJson(const DeviceCeilings &ceilings);

} // namespace ptxforge::verify
