// What `check --profile` found: the emulator's per-line profile of the
// candidate and of the reference on one shape (bank conflicts, sectors per
// request), their occupancy, and a roofline-style estimate of how their
// run times compare — an estimate, from counts, for machines with no GPU to
// time on. Plain data (CheckResult holds one); verify/Profile.h makes it.
#pragma once

#include "exec/LaunchProfile.h"
#include "tasks/LaunchDirective.h"
#include "tasks/TaskSpec.h"
#include "toolchain/Occupancy.h"

#include <optional>
#include <string>

namespace ptxforge::verify {

/// The throughputs the estimate divides by.
struct ProfileCeilings {
  std::string source;        ///< "nominal H200 (sm_90)", or where measured figures came from
  int smCount = 132;
  double smClockGHz = 1.98;
  double dramGBs = 4800;     ///< bytes moved to and from device memory
  double fp32Gflops = 66900; ///< FFMA: 2 FLOP per lane per cycle
  double tensorGflops = 989000; ///< dense f16 tensor cores, for kernels that use mma/wgmma
  double sharedWavefrontsPerCycle = 1; ///< per SM: one 128-byte shared-memory wavefront a cycle
  double issuePerCycle = 4;  ///< per SM: four schedulers, one warp-instruction a cycle each
  double smMemoryGBs = 126.7; ///< what one SM can move: 64 bytes a cycle
  /// Bytes of requests in flight per SM (16 warps of 128-byte requests) that
  /// hide the memory latency; fewer slow an SM's memory traffic in proportion.
  int requestBytesToHideLatency = 2048;
};

/// One kernel (candidate or reference) under the profile.
struct KernelProfileReport {
  tasks::ResolvedLaunch launch;
  exec::LaunchProfile profile; ///< per line (the launch's figures and every line that touched memory)
  // Totals over the lines.
  uint64_t globalRequests = 0, globalSectors = 0, globalIdealSectors = 0, globalBytes = 0;
  uint64_t sharedRequests = 0, sharedWavefronts = 0, sharedIdealWavefronts = 0;
  uint64_t localRequests = 0, localBytes = 0;
  int registers = -1;          ///< per thread; -1 when unknown
  std::string registersFrom;   ///< "driver", "compiler"
  int staticSharedBytes = 0;
  bool tensorCores = false;    ///< uses mma/wgmma: compute at the tensor ceiling
  std::optional<toolchain::Occupancy> occupancy;
  // The estimate (seconds; 0 when it could not be made).
  double memorySeconds = 0, sharedSeconds = 0, issueSeconds = 0, computeSeconds = 0; ///< work / device-wide rate
  double estimatedSeconds = 0; ///< over waves of resident blocks (see docs/emulator.md)
  std::string bound;           ///< "memory", "shared memory", "issue", "compute"
};

struct ProfileReport {
  std::string executor;  ///< the emulator's device name
  std::string arch;      ///< whose occupancy rules apply ("sm_90")
  size_t shapeIndex = 0;
  tasks::Shape shape;
  std::optional<double> flops, taskBytes; ///< the task's [cost] on the shape
  ProfileCeilings ceilings;
  KernelProfileReport candidate, reference;
  /// Estimated reference time / candidate time (> 1: the candidate is
  /// estimated faster); 0 when either estimate is missing.
  double estimatedSpeedup = 0;
  std::string basis;     ///< what the estimate rests on ("the emulator's exact counts on ...")
};

} // namespace ptxforge::verify
