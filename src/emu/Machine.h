// The emulator's run-time state: device memory with its checks (memcheck,
// racecheck), a launch, CTAs of warps, and the register file each data
// instruction's ExecFn reads and writes. Interpreter.cpp schedules warps and
// handles control flow; the Exec*.cpp files implement instruction families.
#pragma once

#include "emu/Program.h"
#include "emu/SharedShadow.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace ptxforge::emu {

struct Dim3u {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t(x) * y * z; }
};

/// What a sanitizer found. Fatal findings stop the launch (the gate's verdict
/// `crashed`, or `timeout` for the step budget); the others are reported.
struct Finding {
  std::string check;   ///< memcheck, racecheck, initcheck, synccheck, unsupported, timeout, trap
  bool fatal = true;
  std::string message; ///< full sentence with coordinates and address
  uint32_t line = 0;   ///< PTX line, 0 when not tied to one
  uint32_t column = 0; ///< PTX column of the operand at fault, 0 when not known
  /// A finding of many threads (initcheck): how many, and the first few
  /// ("(x,y,z) of block (x,y,z)"); repeats at the same place add up here.
  static constexpr size_t kLocationsKept = 3;
  uint64_t threads = 0;
  std::vector<std::string> locations;
  /// The message, with the threads when there are some.
  std::string text() const;
};

struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};

/// One device allocation of the emulator.
struct Allocation {
  uint64_t base = 0;
  std::vector<uint8_t> bytes;
  /// The part of the buffer a kernel may touch: the rest (the gate's guard
  /// zones) counts as out of bounds for memcheck. Defaults to all of it.
  uint64_t accessibleBegin = 0, accessibleEnd = 0;
  /// Cross-CTA racecheck shadow (CrossCtaState), one entry per 4-byte word:
  /// made (zeroed, untouched pages cost nothing) by the first launch that
  /// checks and kept, since every entry carries its launch's tag.
  std::unique_ptr<uint64_t[], FreeDeleter> raceWords;
  std::unique_ptr<uint32_t[], FreeDeleter> raceLines;
};

/// Sanitizer switches of a launch.
struct CheckOptions {
  bool memcheck = true;  ///< always on in practice: unchecked accesses would touch host memory
  bool racecheck = true;
  bool initcheck = true;
  bool synccheck = true;
  uint64_t stepBudget = 1ull << 34; ///< warp-instructions per launch before `timeout`
  uint32_t timeoutMs = 0;           ///< wall-clock deadline (0: none)
  unsigned hostThreads = 0;         ///< CTAs in parallel; 0 = hardware concurrency
  size_t maxFindings = 20;          ///< non-fatal findings kept per launch
  /// Mixed with the process's launch counter into the garbage that fills
  /// uninitialized .shared and .local memory (and %smid's CTA-to-SM map):
  /// every launch gets other garbage; a different seed gives other garbage
  /// for the same sequence of launches.
  uint64_t memorySeed = 0;
};

/// The GPU the emulator stands in for, as special registers show it (an H200).
constexpr uint32_t kSmCount = 132;     ///< %nsmid
constexpr uint32_t kWarpsPerSm = 64;   ///< %nwarpid

/// Cross-CTA racecheck state of a launch. For every 4-byte word of every
/// allocation (Allocation::raceWords): the launch's tag, the CTA that last
/// wrote the word plainly in this launch and that CTA's count of gpu-scope
/// fences at the write. For each CTA, its publishes (a gpu-scope fence
/// followed by an atomic or strong store, or a release), stamped with a
/// launch-wide clock that a CTA's acquire (an atomic or strong load) reads.
/// A plain read of a word another CTA wrote is a hazard unless the writer
/// published after the write and the reader acquired after that publish.
struct CrossCtaState {
  /// A shadow entry: tag << 48 | (writer CTA + 1) << 24 | fences (saturated).
  static constexpr uint64_t kMaxCtas = (uint64_t(1) << 24) - 2;
  static constexpr uint32_t kMaxFences = (1u << 24) - 1;
  uint64_t tag = 0; ///< this launch's tag, in place, << 48
  struct Shadow {
    uint64_t *words = nullptr;
    uint32_t *lines = nullptr;  ///< PTX line of the write (for the report)
    size_t count = 0;
  };
  std::vector<Shadow> shadows; ///< parallel to Launch::allocations
  struct Publish {
    uint32_t fences = 0; ///< writes made before this many fences are published
    uint64_t clock = 0;
  };
  std::atomic<uint64_t> clock{1};
  std::mutex mutex; ///< guards publishes
  std::unordered_map<uint64_t, std::vector<Publish>> publishes; ///< by CTA linear index
};

/// Everything a launch shares across its CTAs (read-only during the launch
/// except through the synchronized fault/finding calls and global memory).
struct Launch {
  const Program *program = nullptr;
  const KernelDesc *kernel = nullptr;
  std::vector<Allocation *> allocations; ///< sorted by base
  const uint8_t *params = nullptr;
  uint32_t paramBytes = 0;
  Dim3u grid, block;
  uint32_t dynamicSharedBytes = 0;
  CheckOptions checks;
  std::chrono::steady_clock::time_point deadline;
  bool hasDeadline = false;
  uint64_t launchIndex = 0; ///< this process's launch counter (1-based), set by runLaunch
  uint64_t salt = 0;        ///< mixBits of the launch index and CheckOptions::memorySeed
  CrossCtaState *crossCta = nullptr; ///< set by runLaunch when the cross-CTA racecheck runs
  class LaunchProfiler *profile = nullptr; ///< a profiled launch's counters (Profile.h); program is its copy

  std::atomic<bool> aborted{false};
  std::atomic<uint64_t> steps{0};              ///< warp-instructions executed
  std::atomic<uint64_t> threadInstructions{0}; ///< the same, counted per active thread
  std::mutex findingsMutex;
  std::vector<Finding> findings; ///< the first fatal one stops everything

  /// Records a finding; a fatal one also aborts the launch. Thread-safe.
  void report(Finding finding);
};

struct Cta;
struct AsyncState;

/// One warp's registers and scheduling state.
struct Warp {
  Cta *cta = nullptr;
  Launch *launch = nullptr;
  const Program *program = nullptr;
  uint32_t index = 0;   ///< warp index in the CTA
  LaneMask valid = 0;   ///< lanes that exist (the last warp may be partial)
  uint64_t *regs = nullptr;    ///< slotCount * 32
  uint32_t *written = nullptr; ///< initcheck: lanes that wrote each slot
  /// initcheck: lanes whose value of each slot was computed from a
  /// never-written register (not written, but not to be read as zero).
  uint32_t *derived = nullptr;
  uint8_t *local = nullptr;    ///< 32 * program->localBytes

  // Scheduling (Interpreter.cpp).
  uint32_t pc[kWarpSize] = {};
  LaneMask live = 0;     ///< not exited
  LaneMask blocked = 0;  ///< waiting at a CTA barrier
  LaneMask parked = 0;   ///< waiting for the rest of a warp collective's membermask
  uint32_t barrierId[kWarpSize] = {};
  uint32_t barrierPc[kWarpSize] = {};
  std::vector<uint32_t> callStack[kWarpSize];
  uint64_t steps = 0;
  bool yield = false;    ///< a wait failed: let the CTA's other warps run (Op::MbarrierWait)
  /// barrier.cluster: lanes that arrived in the current phase, and lanes whose
  /// arrival's phase completed before they waited (their wait does not block).
  LaneMask clusterArrived = 0, clusterPassed = 0;

  uint64_t *row(uint32_t slot) { return regs + size_t(slot) * kWarpSize; }
  const uint64_t *row(uint32_t slot) const { return regs + size_t(slot) * kWarpSize; }
  uint64_t get(const Operand &op, unsigned lane) const {
    uint64_t v = regs[size_t(op.slot) * kWarpSize + lane];
    return op.negate ? (v ^ 1) : v;
  }
  void set(const Operand &op, unsigned lane, uint64_t v) { regs[size_t(op.slot) * kWarpSize + lane] = v; }

  /// Translates an address of `space` for `lane` into host memory after the
  /// bounds and alignment checks; nullptr after reporting a fatal memcheck
  /// finding (the caller stops the instruction). `write` selects the
  /// racecheck hazard kind for shared memory; `atomic` exempts it.
  uint8_t *access(const Inst &inst, unsigned lane, Space space, uint64_t address, uint32_t bytes, bool write,
                  bool atomic = false);
  /// The fast path of access() for all the active lanes of one instruction
  /// at once (`address` holds each lane's address): when every access is
  /// aligned and inside one global buffer, or the CTA's own shared memory,
  /// the thread's local memory, the .const bank or the parameters, the space
  /// and bounds are resolved once for the warp, the per-lane checks that keep
  /// state (cross-CTA and shared racecheck, shared initcheck, the async
  /// proxy) run lane by lane as access() would run them, `out[lane]` gets the
  /// host address, and the answer is kDone. kSlowPath: nothing was done, run
  /// access() lane by lane (it finds and reports the faulting lane).
  /// kFaulted: a per-lane check reported a fatal finding.
  enum AccessResult { kDone, kSlowPath, kFaulted };
  AccessResult accessLanes(const Inst &inst, LaneMask active, Space space, const uint64_t *address, uint32_t bytes,
                           bool write, uint8_t **out);
  /// accessLanes' shared-memory checks when every lane's access is whole
  /// aligned words (`address` minus `window` is each lane's shared offset):
  /// the same findings and shadow states as sharedLaneChecks lane by lane,
  /// at a cost per word. kSlowPath (nothing done): a read of a word not known
  /// written in this CTA, which sharedLanesInOrder reports byte by byte.
  AccessResult sharedWordLanes(const Inst &inst, LaneMask active, const uint64_t *address, uint64_t window,
                               uint32_t bytes, bool write);
  /// sharedLaneChecks for the active lanes in lane order (a run of lanes at
  /// one address checked once); false after a fatal finding.
  bool sharedLanesInOrder(const Inst &inst, LaneMask active, const uint64_t *address, uint64_t window,
                          uint32_t bytes, bool write);
  /// crossCtaAccess for the active lanes of a plain or strong access inside
  /// allocation number `allocation` (accessLanes' fast path); false after a
  /// fatal finding.
  bool crossCtaLanes(const Inst &inst, LaneMask active, size_t allocation, const uint64_t *address, uint32_t bytes,
                     bool write);
  /// access()'s shared-memory checks for one lane (initcheck, racecheck, the
  /// async proxy); false after a fatal finding.
  bool sharedLaneChecks(const Inst &inst, unsigned lane, uint64_t address, uint32_t bytes, bool write, bool atomic);
  /// Whether `lane`'s store to shared offset `address` writes the bytes that
  /// are there already: no order of it and another warp's access changes what
  /// anyone reads (several threads storing the same reduction result).
  bool silentSharedStore(const Inst &inst, unsigned lane, uint64_t address) const;
  /// Cross-CTA racecheck of a global access that passed memcheck (offset
  /// into allocation number `allocation`); false after a fatal finding.
  bool crossCtaAccess(const Inst &inst, unsigned lane, size_t allocation, uint64_t offset, uint32_t bytes, bool write,
                      bool atomic);
  /// A shared address with a cluster rank in it (Warp::access's cold path):
  /// that CTA's shared memory, or nullptr after a fatal finding.
  uint8_t *clusterShared(const Inst &inst, unsigned lane, uint64_t address, uint32_t bytes, bool write);
  /// Cross-CTA racecheck after a strong load or an atomic: this CTA has
  /// acquired every publish made so far.
  void acquire();
  /// Reports a fatal finding at `inst` for `lane` ("<check>: <what> at line N
  /// (<text>) by thread (x,y,z) of block (x,y,z)").
  void fault(const Inst &inst, unsigned lane, const char *check, const std::string &what);
  bool aborted() const { return launch->aborted.load(std::memory_order_relaxed); }
  std::string where(const Inst &inst, unsigned lane) const;
  /// "thread (x,y,z) of block (x,y,z)" of `lane`.
  std::string thread(unsigned lane) const;
};

/// What register `slot` of `lane` holds when no instruction wrote it: the
/// garbage a GPU's register would hold, fixed per launch, CTA, warp, register
/// and lane and finite as f16, bf16, f32 and f64 (Interpreter.cpp).
uint64_t neverWrittenValue(const Warp &w, uint32_t slot, unsigned lane);

/// One CTA being executed.
struct Cta {
  Launch *launch = nullptr;
  uint32_t ctaid[3] = {0, 0, 0};
  uint64_t linear = 0;                          ///< linear index in the grid
  uint32_t firstEpoch = 0;                      ///< epoch when the CTA started (initcheck of shared memory)
  // Cross-CTA racecheck (CrossCtaState): gpu-scope fences so far, the fence
  // count the last publish covered, and the launch clock at the last acquire.
  uint32_t fences = 0;
  uint32_t publishedFences = 0;
  uint64_t acquiredClock = 0;
  std::vector<uint8_t> *shared = nullptr;       ///< static + dynamic shared bytes
  SharedRaceShadow *shadow = nullptr;           ///< racecheck (SharedShadow.h)
  /// initcheck, one per shared byte: the firstEpoch of the last CTA (of this
  /// host thread) that wrote it; written in this CTA when equal to firstEpoch.
  std::vector<uint32_t> *sharedWritten = nullptr;
  /// initcheck, one per 4-byte word: firstEpoch when all four bytes of the
  /// word are known written in this CTA (a cache of sharedWritten, which only
  /// gains bytes during a CTA, so whole-word accesses test one entry).
  std::vector<uint32_t> *sharedWordsWritten = nullptr;
  uint32_t epoch = 0;                           ///< racecheck barrier interval (unique across CTAs of a thread)
  struct Arrival {
    uint32_t id = 0, count = 0; ///< bar.arrive: threads that arrived without waiting
  };
  std::vector<Arrival> arrivals;
  AsyncState *async = nullptr; ///< mbarriers and bulk copies (Async.h), when the program uses them
  /// The CTAs of this CTA's cluster by rank (nullptr: a cluster of one, this CTA).
  Cta *const *cluster = nullptr;
  uint32_t clusterRank = 0, clusterSize = 1;
  bool exited = false; ///< every thread exited (its shared memory is gone for the cluster)
  /// The CTA of the cluster with `rank` (this one when there is no cluster).
  Cta *clusterCta(uint32_t rank) { return cluster ? cluster[rank] : this; }
};

/// Distributed shared memory: a .shared::cluster address is (rank + 1) << 24
/// | offset for the CTA of that rank (mapa makes them), or a plain offset,
/// which is the executing CTA's.
constexpr unsigned kClusterRankShift = 24;
constexpr uint64_t kClusterOffsetMask = (uint64_t(1) << kClusterRankShift) - 1;

/// Runs every CTA of `launch` (in parallel on the host's cores). Faults and
/// findings end up in launch.findings; launch.aborted says whether it stopped.
void runLaunch(Launch &launch);

template <typename F> inline void forEachLane(LaneMask mask, F &&f) {
  while (mask) {
    unsigned lane = static_cast<unsigned>(__builtin_ctz(mask));
    mask &= mask - 1;
    f(lane);
  }
}

/// Runs f(lane) for the active lanes; a full warp (the common case) takes a
/// plain counted loop, which the compiler unrolls or vectorizes.
template <typename F> inline void forLanes(LaneMask active, F &&f) {
  if (active == ~LaneMask(0)) {
    for (unsigned l = 0; l < kWarpSize; ++l) f(l);
  } else {
    forEachLane(active, f);
  }
}

inline uint64_t lowBits(uint64_t v, unsigned bits) { return bits >= 64 ? v : (v & ((uint64_t(1) << bits) - 1)); }

template <typename T> inline T bitsAs(uint64_t v) {
  T out;
  if constexpr (sizeof(T) == 8) {
    std::memcpy(&out, &v, 8);
  } else if constexpr (sizeof(T) == 4) {
    uint32_t w = static_cast<uint32_t>(v);
    std::memcpy(&out, &w, 4);
  } else if constexpr (sizeof(T) == 2) {
    uint16_t w = static_cast<uint16_t>(v);
    std::memcpy(&out, &w, 2);
  } else {
    uint8_t w = static_cast<uint8_t>(v);
    std::memcpy(&out, &w, 1);
  }
  return out;
}

template <typename T> inline uint64_t asBits(T value) {
  if constexpr (sizeof(T) == 8) {
    uint64_t v;
    std::memcpy(&v, &value, 8);
    return v;
  } else if constexpr (sizeof(T) == 4) {
    uint32_t v;
    std::memcpy(&v, &value, 4);
    return v;
  } else if constexpr (sizeof(T) == 2) {
    uint16_t v;
    std::memcpy(&v, &value, 2);
    return v;
  } else {
    uint8_t v;
    std::memcpy(&v, &value, 1);
    return v;
  }
}

} // namespace ptxforge::emu
