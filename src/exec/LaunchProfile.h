// What a profiling executor (the CPU emulator) counted during one launch, per
// PTX line: shared-memory wavefronts against the conflict-free ideal (bank
// conflicts) and global-memory 32-byte sectors per request (coalescing), the
// quantities Nsight Compute reports on a GPU. Plain data: the emulator fills
// it (emu/Profile.cpp), the isolated worker's protocol carries it, the gate
// (verify/Profile.cpp) turns it into a report and an estimate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptxforge::exec {

/// The memory behaviour of one PTX line over a launch (every warp of every CTA).
struct LineProfile {
  uint32_t line = 0;       ///< 1-based PTX line
  std::string instruction; ///< the instruction as written
  /// Warp-level executions of the line with at least one active lane.
  uint64_t executions = 0;
  /// Global memory: requests (a warp's access, one per execution that touched
  /// global memory), 32-byte sectors those requests touched, the fewest
  /// sectors their bytes could have fit in, and the bytes the lanes asked for.
  uint64_t globalRequests = 0, globalSectors = 0, globalIdealSectors = 0, globalBytes = 0;
  /// Shared memory: requests, wavefronts (bank-conflict-free passes the
  /// hardware needs), and the wavefronts without conflicts (one per phase of
  /// the access width: 1 for 32-bit, 2 for 64-bit, 4 for 128-bit accesses).
  uint64_t sharedRequests = 0, sharedWavefronts = 0, sharedIdealWavefronts = 0;
  /// Local memory (spills, stack frames): requests and bytes.
  uint64_t localRequests = 0, localBytes = 0;
  bool store = false;  ///< the line writes (st, red, stmatrix, the shared side of cp.async)
  bool atomic = false; ///< atom/red
  friend bool operator==(const LineProfile &, const LineProfile &) = default;

  uint64_t bankConflicts() const { return sharedWavefronts - sharedIdealWavefronts; }
};

/// One profiled launch.
struct LaunchProfile {
  std::string kernel;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  uint64_t warpInstructions = 0;   ///< warp-level instructions executed
  uint64_t threadInstructions = 0; ///< the same, counted per active thread
  std::vector<LineProfile> lines;  ///< lines that accessed memory, by line
  friend bool operator==(const LaunchProfile &, const LaunchProfile &) = default;
};

} // namespace ptxforge::exec
