// The sm_90 asynchronous machinery of one CTA: mbarrier objects, the bulk
// copies still in flight as far as the sanitizers are concerned, bulk async
// groups, and the proxy fences. Only a program that uses them gets this state
// (Program::usesAsync); the interpreter's paths for other programs do not
// change. ExecAsync.cpp implements the instructions and the checks.
//
// The emulator performs a bulk copy when it is issued (as it does cp.async),
// so results never depend on timing; what the hardware leaves undefined is
// found by the checks instead:
//   - a generic access to shared memory that a bulk copy writes, by a warp that
//     has not yet observed (mbarrier.try_wait/test_wait, or a CTA barrier after
//     a thread that did) the completion of the mbarrier phase the copy
//     completes: the data may not have arrived;
//   - a bulk copy out of shared memory (to global) that reads bytes a thread
//     wrote through the generic proxy with no fence.proxy.async after the
//     write: the copy engine may not see them;
//   - a generic write to shared memory that a bulk copy out of it may still be
//     reading (no cp.async.bulk.wait_group.read since);
//   - a write (generic, or a bulk copy's) into the shared-memory operands of a
//     wgmma.mma_async that the writer is not ordered after the retirement of
//     (a wgmma.wait_group of its warpgroup, then an mbarrier arrival the
//     writer observed or a CTA barrier): the stage was released too early;
//   - a bulk copy completing a transaction on an mbarrier whose initializing
//     warp ran no fence.proxy.async (or fence.mbarrier_init) after the init:
//     the copy engine may not see the initialized object (a warning: such
//     kernels often work);
//   - mbarrier misuse: an operation on an object mbarrier.init did not
//     initialize, more arrivals than the phase awaits, a tx-count out of range,
//     a generic write over a live object; and waits that can never succeed.
#pragma once

#include "emu/Program.h"
#include "exec/TensorMap.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ptxforge::emu {

struct Warp;
struct Cta;

/// One mbarrier object (8 bytes of shared memory at `offset`).
struct Mbarrier {
  uint32_t offset = 0;
  uint32_t expected = 0; ///< arrivals per phase (mbarrier.init's count, less arrive_drop)
  uint32_t pending = 0;  ///< arrivals the current phase still awaits
  int64_t tx = 0;        ///< the current phase's tx-count
  uint64_t phase = 0;    ///< phases completed so far (the current phase's index)
  uint32_t initLine = 0;
  /// The warp that ran mbarrier.init, its AsyncState::initFences then, and
  /// whether the missing fence after it was reported.
  uint32_t initWarp = 0, initFence = 0;
  bool initFenceReported = false;
  /// Per warp of the CTA: the phases this warp has seen complete (a wait that
  /// succeeded, or a CTA barrier after a warp that had).
  std::vector<uint64_t> observed;
  /// Per warp: the most of that warp's wgmma retirements (AsyncState::wgmmaRetires)
  /// any arrival on this object was ordered after; a warp that sees a phase
  /// complete is ordered after them too. Empty until a wgmma program arrives.
  std::vector<uint32_t> wgmmaReleased;
};

/// Shared memory a bulk copy wrote, not yet known to every warp to be there.
struct AsyncWrite {
  uint32_t begin = 0, end = 0; ///< shared offsets [begin, end)
  uint32_t barrier = 0;        ///< the mbarrier's offset
  uint64_t phase = 0;          ///< the copy completes phase `phase` of it
  uint32_t line = 0;
  uint32_t thread = 0;         ///< issuing thread (linear in the CTA)
};

/// Shared memory a bulk copy to global reads until its bulk async-group is
/// waited for with cp.async.bulk.wait_group(.read).
struct AsyncRead {
  uint32_t begin = 0, end = 0;
  uint32_t group = 0; ///< the issuing thread's bulk-group index the copy belongs to
  uint32_t line = 0;
  uint32_t thread = 0;
};

struct AsyncState {
  std::vector<Mbarrier> barriers;
  std::vector<AsyncWrite> writes;
  std::vector<AsyncRead> reads;
  /// Bytes [trackedBegin, trackedEnd) hold every barrier, write and read:
  /// a shared access outside them needs no look at the lists.
  uint32_t trackedBegin = UINT32_MAX, trackedEnd = 0;

  /// Per warp: fence.proxy.async executed so far (any lane).
  std::vector<uint32_t> proxyFences;
  /// Per warp: fences that make an mbarrier.init visible to the async proxy
  /// (fence.proxy.async, fence.mbarrier_init) executed so far.
  std::vector<uint32_t> initFences;
  /// Per thread: bulk async-groups committed so far.
  std::vector<uint32_t> committedGroups;
  /// Per shared byte, only when the program copies shared memory out in bulk:
  /// the last generic write (kStampValid | warp << 25 | lane << 20 | the
  /// warp's proxy fences at the write, 20 bits), 0 when none or when an
  /// asynchronous write replaced it; and that write's line.
  std::vector<uint32_t> genericStamp;
  std::vector<uint32_t> genericLine;
  static constexpr uint32_t kStampValid = 1u << 31;

  /// wgmma accumulators no wgmma.wait_group has covered yet: the warp, its
  /// bulk of them (Program::operandLists[list]), the lanes, and the warp's
  /// commit group (kOpenGroup until wgmma.commit_group).
  struct WgmmaPending {
    uint32_t warp = 0, group = 0, list = 0;
    LaneMask lanes = 0;
    uint32_t line = 0;
    uint32_t instance = 0; ///< the wgmma (one per warpgroup meeting), for wgmmaReads
  };
  static constexpr uint32_t kOpenGroup = UINT32_MAX;
  std::vector<WgmmaPending> wgmmaPending;
  std::vector<uint32_t> wgmmaCommitted; ///< per warp: wgmma.commit_group executed
  /// Shared memory a wgmma.mma_async reads through its descriptors, until a
  /// wgmma.wait_group of one of its warps retires it: the hardware reads the
  /// operands while the wgmma is in flight, so a write there before (a bulk
  /// copy refilling the stage, a generic store) changes what it multiplies.
  struct WgmmaRead {
    std::vector<std::pair<uint32_t, uint32_t>> ranges; ///< [begin, end), sorted, disjoint
    uint32_t instance = 0, line = 0;
    std::array<uint32_t, 4> warps{}; ///< the warpgroup's warps
    /// Per warp of the warpgroup: its wgmmaRetires count once its
    /// wgmma.wait_group retired this wgmma; 0 while it has not.
    std::array<uint32_t, 4> retiredAt{};
  };
  std::vector<WgmmaRead> wgmmaReads;
  uint32_t wgmmaInstances = 0;
  /// Happens-before for those retirements: per warp, the wgmma.wait_groups
  /// that retired a wgmma so far; per (warp a, warp b), how many of b's a is
  /// ordered after (b's arrivals on an mbarrier whose phase a saw complete,
  /// CTA barriers). A write into a retired wgmma's operands is safe for a
  /// warp ordered after one of the retirements.
  std::vector<uint32_t> wgmmaRetires;
  std::vector<uint32_t> wgmmaKnown; ///< warps x warps, row = the warp that knows
  uint32_t &known(uint32_t warp, uint32_t of) { return wgmmaKnown[size_t(warp) * wgmmaRetires.size() + of]; }

  /// Per warp: where its last failed wait was (for a deadlock report).
  struct Wait {
    uint32_t pc = kNoPc;
    uint32_t barrier = 0;
    unsigned lane = 0;
  };
  std::vector<Wait> waits;

  /// Bumped by every change of an mbarrier (init, arrive, tx, inval): rounds
  /// of failed waits without a change are a deadlock.
  uint64_t changes = 0;
  /// The host thread's epoch counter (racecheck): a wait that observes a new
  /// phase starts a new epoch, as a CTA barrier does.
  uint32_t *epochSource = nullptr;

  /// Resets for a CTA of `warps` warps with `sharedBytes` bytes of shared memory.
  void reset(uint32_t warps, size_t sharedBytes, bool stamps, uint32_t *epochCounter);
  Mbarrier *find(uint32_t offset);
  void track(uint32_t begin, uint32_t end) {
    if (begin < trackedBegin) trackedBegin = begin;
    if (end > trackedEnd) trackedEnd = end;
  }
};

/// The async checks of a generic shared access (Warp::access); false after a
/// fatal finding. Called only when the CTA has AsyncState.
bool asyncSharedAccess(Warp &warp, const Inst &inst, unsigned lane, uint32_t offset, uint32_t bytes, bool write);

/// At a CTA barrier's release: what one warp had observed, every warp has.
void asyncBarrierRelease(AsyncState &state);

/// A report for a CTA whose remaining warps only fail mbarrier waits, with no
/// change to any mbarrier for many rounds: reports a fatal synccheck finding.
void asyncDeadlock(Cta &cta, std::vector<Warp> &warps);

/// Whether an instruction uses the asynchronous machinery (so the program
/// needs AsyncState), and whether it copies shared memory out in bulk (so the
/// generic writes need stamps).
bool usesAsyncState(const Inst &inst);
bool readsSharedInBulk(const Inst &inst);

/// A tensor map as the emulator encodes it (EmuExecutor::encodeTensorMap) and
/// its cp.async.bulk.tensor reads it back: the spec and the global address.
struct EmuTensorMap {
  exec::TensorMapSpec spec;
  uint64_t address = 0;
};
/// The 128 bytes the emulator hands a kernel for a map (its own layout,
/// self-contained and checksummed: a map copied to .global works, one
/// changed in memory does not decode).
exec::TensorMapBytes encodeEmuTensorMap(uint64_t globalAddress, const exec::TensorMapSpec &spec);
/// The map `bytes` hold; nullopt when they are not one encodeEmuTensorMap made
/// (or its spec breaks tensorMapProblems).
std::optional<EmuTensorMap> decodeEmuTensorMap(const exec::TensorMapBytes &bytes);
/// Where a tensor copy puts the 16-byte chunk whose unswizzled shared address
/// is `address` (16-byte aligned): none keeps it; 32b, 64b, 128b XOR the
/// chunk's index in its 128-byte row (1, 2 or 3 bits) with as many bits of the
/// row's index, as the PTX ISA's swizzling modes draw it.
uint32_t tensorMapSwizzle(uint32_t address, exec::TensorMapSwizzle swizzle);

/// ExecWgmma.cpp: runs the wgmma.mma_async `inst` that the four warps of a
/// warpgroup (warps[0..3]) have all reached; findings go to warps[0].
void executeWgmma(Warp *const *warps, const Inst &inst);
/// A read of a register that initcheck found unwritten: true (after a fatal
/// finding) when it is an accumulator of a wgmma no wgmma.wait_group covered.
bool wgmmaPendingRead(Warp &warp, const Inst &inst, uint32_t slot, LaneMask missing);
/// Whether an instruction is one of wgmma's that need AsyncState.
bool usesWgmmaState(const Inst &inst);
/// A wgmma whose shared-memory operands overlap [begin, end) and which warp
/// `writer` is not ordered after the completion of (no wgmma.wait_group
/// retired it, or none that `writer` synchronized with since): the first
/// such read, or null.
const AsyncState::WgmmaRead *wgmmaReadUnordered(AsyncState &state, uint32_t writer, uint32_t begin, uint32_t end);
/// The finding's words for a write into `read`'s operands.
std::string wgmmaReadHazard(const AsyncState::WgmmaRead &read);
/// mbarrier arrivals and waits, CTA barriers: the wgmma retirements they order.
void wgmmaRelease(AsyncState &state, Mbarrier &barrier, uint32_t warp);
void wgmmaAcquire(AsyncState &state, const Mbarrier &barrier, uint32_t warp);
void wgmmaBarrier(AsyncState &state);

} // namespace ptxforge::emu
