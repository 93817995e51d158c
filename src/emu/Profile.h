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

/// What a shared-memory access does, for how the L1 splits it.
enum class SharedAccess { Load, Store, Atomic };

/// How an L1 splits one warp's shared-memory access into wavefronts (32 banks
/// of 4 bytes). `addresses[l]` is lane l's byte address for the lanes in
/// `lanes`; each touches `width` bytes (1..32). The warp goes in phases of
/// 128 bytes of lane data: the whole warp for up to 4 bytes a lane, half-warps
/// for 8, quarter-warps for 16. A phase needs as many wavefronts as the most
/// distinct 4-byte words one bank holds among its lanes' words (lanes of a
/// phase reading one word share it). A load takes two neighbouring phases
/// (the halves of an 8-byte access, the quarters of one half of a 16-byte
/// access) in one wavefront when each needs one, they share no word and no
/// bank, or both read one and the same address. The ideal is one wavefront
/// per phase (per 32 distinct words for a whole-warp phase), merged phases
/// counted once. These are the counts Nsight Compute gave for 71 patterns on
/// sm_90 (docs/results/emu-profile-vs-ncu-2026-12-01.md, ...-2026-12-05.md):
/// 32-, 64- and 128-bit loads and stores and ldmatrix. Atomics count every
/// lane's word over the whole warp (atomics to one address serialize; not
/// compared with Nsight).
struct Wavefronts {
  uint64_t wavefronts = 0, ideal = 0;
};
Wavefronts sharedWavefronts(const uint64_t *addresses, LaneMask lanes, unsigned width,
                            SharedAccess access = SharedAccess::Load);

/// ldmatrix/stmatrix: `matrices` 8x8 matrices, each of 8 rows of 16 bytes
/// whose addresses lanes 8i..8i+7 give: one 16-byte access per row, a load
/// or (`store`, stmatrix) a store.
Wavefronts matrixWavefronts(const uint64_t *addresses, unsigned matrices, bool store = false);

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
  std::vector<bool> stores_;        ///< by pc: stmatrix
  std::vector<uint32_t> slot_;      ///< by pc: index into Shard::counters
  uint32_t slots_ = 0;
  uint64_t serial_ = 0;             ///< tells this profiler's shards from an earlier one's
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

} // namespace ptxforge::emu
