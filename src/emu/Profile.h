// The emulator's profile: during a launch that asks for it
// (exec::LaunchConfig::profile), every shared- and global-memory access of a
// warp is counted per PTX line as a GPU's L1 would process it — shared-memory
// wavefronts against the conflict-free ideal (bank conflicts), 32-byte
// sectors per global request (coalescing). A profiled launch runs an
// instrumented copy of the program whose memory instructions' ExecFn first
// counts, then calls the original; the interpreter's loop and every
// unprofiled launch are untouched.
#pragma once

#include "emu/Machine.h"
#include "exec/LaunchProfile.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace ptxforge::emu {

/// How an L1 splits one warp's shared-memory access into wavefronts (32 banks
/// of 4 bytes). `addresses[l]` is lane l's byte address for the lanes in
/// `lanes`; each touches `width` bytes (1..32). The access needs as many
/// wavefronts as the most distinct 4-byte words any one bank holds among all
/// its lanes' words (lanes reading the same word share it: a broadcast), and
/// at least one per 256 bytes the lanes receive (2 for a warp's 128-bit
/// load, even a broadcast). The ideal is the larger of that minimum and one
/// wavefront per 128 distinct bytes. These are the counts Nsight Compute
/// gave on an H200 for 32-, 64- and 128-bit loads and ldmatrix
/// (docs/results/emu-profile-vs-ncu.md). `atomic` counts every lane's word
/// (atomics to one address are serialized; not compared with Nsight).
struct Wavefronts {
  uint64_t wavefronts = 0, ideal = 0;
};
Wavefronts sharedWavefronts(const uint64_t *addresses, LaneMask lanes, unsigned width, bool atomic = false);

/// ldmatrix/stmatrix: `matrices` 8x8 matrices, each of 8 rows of 16 bytes
/// whose addresses lanes 8i..8i+7 give: one access of 16 bytes per row.
Wavefronts matrixWavefronts(const uint64_t *addresses, unsigned matrices);

/// The 32-byte sectors one warp's global access touches, and the fewest its
/// distinct bytes could have fit in.
struct Sectors {
  uint64_t sectors = 0, ideal = 0;
};
Sectors globalSectors(const uint64_t *addresses, LaneMask lanes, unsigned width);

/// The counters of one profiled launch (Launch::profile). Thread-safe: each
/// host thread counts into a shard of its own; finish() adds them up.
class LaunchProfiler {
public:
  explicit LaunchProfiler(const Program &program);
  ~LaunchProfiler();
  LaunchProfiler(const LaunchProfiler &) = delete;
  LaunchProfiler &operator=(const LaunchProfiler &) = delete;

  /// The program to launch: `program` with its memory instructions instrumented.
  const Program &program() const { return *instrumented_; }
  /// The profile of the launch, per PTX line.
  exec::LaunchProfile finish(const Launch &launch) const;

  /// Counts one execution of the instruction at `pc` for `active` (called by
  /// the instrumented ExecFn before the original runs).
  void record(const Warp &warp, const Inst &inst, uint32_t pc, LaneMask active);
  ExecFn original(uint32_t pc) const { return originals_[pc]; }

  enum class Kind : uint8_t { None, Load, Store, Atomic, CpAsync, Matrix };

private:
  struct Counters {
    uint64_t executions = 0;
    uint64_t globalRequests = 0, globalSectors = 0, globalIdealSectors = 0, globalBytes = 0;
    uint64_t sharedRequests = 0, sharedWavefronts = 0, sharedIdealWavefronts = 0;
    uint64_t localRequests = 0, localBytes = 0;
  };
  struct Shard {
    std::vector<Counters> counters; ///< by slot_[pc]
  };
  Shard &shard();

  const Program &source_;
  std::unique_ptr<Program> instrumented_;
  std::vector<ExecFn> originals_;   ///< by pc
  std::vector<Kind> kinds_;         ///< by pc
  std::vector<uint8_t> matrices_;   ///< by pc: ldmatrix/stmatrix .x1/.x2/.x4
  std::vector<uint32_t> slot_;      ///< by pc: index into Shard::counters
  uint32_t slots_ = 0;
  uint64_t serial_ = 0;             ///< tells this profiler's shards from an earlier one's
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

} // namespace ptxforge::emu
