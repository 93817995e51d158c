// The sm_90 asynchronous family: mbarrier (init, inval, arrive, arrive_drop,
// expect_tx, complete_tx, test_wait/try_wait with a state or a parity,
// pending_count), cp.async.mbarrier.arrive, the non-tensor bulk copies
// (cp.async.bulk global→shared with mbarrier::complete_tx::bytes, shared→global
// with bulk_group, shared::cta→shared::cluster), bulk async-groups,
// fence.proxy.async, setmaxnreg (a no-op with its range check), and the
// .m16n8 .b8 shape of stmatrix (sm_100a's; .m8n8 is in ExecMemory.cpp). See
// Async.h for the model: copies happen when issued; the checks find what the
// hardware would leave undefined.
#include "emu/Async.h"
#include "emu/Decoder.h"
#include "emu/Machine.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>

namespace ptxforge::emu {

// ---------------------------------------------------------------------------
// State

void AsyncState::reset(uint32_t warps, size_t sharedBytes, bool stamps, uint32_t *epochCounter) {
  barriers.clear();
  writes.clear();
  reads.clear();
  trackedBegin = UINT32_MAX;
  trackedEnd = 0;
  proxyFences.assign(warps, 0);
  initFences.assign(warps, 0);
  committedGroups.assign(size_t(warps) * kWarpSize, 0);
  if (stamps) {
    genericStamp.assign(sharedBytes, 0);
    genericLine.assign(sharedBytes, 0);
  } else {
    genericStamp.clear();
    genericLine.clear();
  }
  waits.assign(warps, Wait{});
  wgmmaPending.clear();
  wgmmaCommitted.assign(warps, 0);
  wgmmaReads.clear();
  wgmmaInstances = 0;
  wgmmaRetires.assign(warps, 0);
  wgmmaKnown.assign(size_t(warps) * warps, 0);
  changes = 0;
  epochSource = epochCounter;
}

Mbarrier *AsyncState::find(uint32_t offset) {
  for (Mbarrier &b : barriers)
    if (b.offset == offset) return &b;
  return nullptr;
}

namespace {

/// AsyncOp in Inst::sub.
enum AsyncOp : uint8_t {
  MbarInit,
  MbarInval,
  MbarArrive,
  MbarExpectTx,
  MbarCompleteTx,
  MbarWait,
  CpAsyncArrive,
  BulkGlobalToShared,
  BulkSharedToShared,
  BulkSharedToGlobal,
  BulkCommit,
  BulkWait,
  TensorLoad,  ///< cp.async.bulk.tensor global -> shared (aux: the dimensions)
  TensorStore, ///< cp.async.bulk.tensor shared::cta -> global
};

/// Bits of Inst::sub2.
enum AsyncFlag : uint8_t {
  kNoComplete = 1 << 0,
  kExpectTx = 1 << 1,
  kDrop = 1 << 2,
  kParity = 1 << 3,
  kNoInc = 1 << 4,
  kHasCount = 1 << 5,
};

constexpr int64_t kMaxTxCount = (int64_t(1) << 20) - 1;
constexpr uint32_t kMaxArrivalCount = (1u << 20) - 1;
constexpr size_t kMaxTrackedCopies = 4096;

std::string threadName(const Launch &launch, uint32_t thread) {
  uint32_t bx = launch.block.x, by = launch.block.y;
  return fmt::format("({},{},{})", thread % bx, (thread / bx) % by, thread / (bx * by));
}

std::string describeBarrier(const Mbarrier &b) {
  return fmt::format("the mbarrier at shared address 0x{:x} (initialized at line {})", b.offset, b.initLine);
}

std::string phaseState(const Mbarrier &b) {
  return fmt::format("its phase {} awaits {} more arrival{} and has tx-count {}", b.phase, b.pending,
                     b.pending == 1 ? "" : "s", b.tx);
}

uint64_t addressOf(const Warp &w, const Inst &in, unsigned lane) {
  return (in.addrSlot != kNoSlot ? w.row(in.addrSlot)[lane] : 0) + static_cast<uint64_t>(in.offset);
}

uint64_t address2Of(const Warp &w, const Inst &in, unsigned lane) {
  return (in.addrSlot2 != kNoSlot ? w.row(in.addrSlot2)[lane] : 0) + static_cast<uint64_t>(in.offset2);
}

/// A shared-memory operand as a CTA of the cluster (this one for a plain
/// offset, the one its rank names for a .shared::cluster address) and an offset
/// into its shared memory, with the bounds and alignment checked; nullptr
/// after a fatal memcheck finding.
Cta *sharedTarget(Warp &w, const Inst &in, unsigned lane, Space space, uint64_t address, uint64_t bytes,
                  uint32_t alignment, const char *what, uint32_t &offset) {
  uint64_t original = address;
  if (space == Space::Generic) {
    if (address - kSharedWindow >= kWindowSize) {
      w.fault(in, lane, "memcheck",
              fmt::format("{} at generic address 0x{:x}, which is not in shared memory", what, original));
      return nullptr;
    }
    address -= kSharedWindow;
  }
  Cta *target = w.cta;
  if (uint64_t rank = address >> kClusterRankShift) {
    if (rank - 1 >= w.cta->clusterSize) {
      w.fault(in, lane, "memcheck",
              fmt::format("{} at shared::cluster address 0x{:x}, which names CTA rank {} of a cluster of {}", what,
                          address, rank - 1, w.cta->clusterSize));
      return nullptr;
    }
    target = w.cta->clusterCta(static_cast<uint32_t>(rank - 1));
    if (target->exited) {
      w.fault(in, lane, "memcheck",
              fmt::format("{} in CTA rank {} of the cluster, which has exited", what, rank - 1));
      return nullptr;
    }
    address &= kClusterOffsetMask;
  }
  size_t size = target->shared->size();
  if (address > size || bytes > size - address) {
    w.fault(in, lane, "memcheck",
            fmt::format("{} of {} bytes at shared address 0x{:x} is out of bounds (the CTA has {} bytes of shared "
                        "memory)",
                        what, bytes, address, size));
    return nullptr;
  }
  if (address % alignment != 0) {
    w.fault(in, lane, "memcheck",
            fmt::format("{} at shared address 0x{:x} is misaligned (must be {}-byte aligned)", what, address,
                        alignment));
    return nullptr;
  }
  offset = static_cast<uint32_t>(address);
  return target;
}

/// sharedTarget for operands in the executing CTA's own shared memory.
bool sharedOffset(Warp &w, const Inst &in, unsigned lane, Space space, uint64_t address, uint64_t bytes,
                  uint32_t alignment, const char *what, uint32_t &offset) {
  Cta *target = sharedTarget(w, in, lane, space, address, bytes, alignment, what, offset);
  if (target && target != w.cta) {
    w.fault(in, lane, "memcheck", fmt::format("{} must be in this CTA's shared memory (.shared::cta)", what));
    return false;
  }
  return target != nullptr;
}

/// The mbarrier at `offset` of `cta`, or a fatal synccheck finding.
Mbarrier *barrierAt(Warp &w, const Inst &in, unsigned lane, uint32_t offset, const char *what, Cta *cta = nullptr) {
  Mbarrier *b = (cta ? cta : w.cta)->async->find(offset);
  if (!b)
    w.fault(in, lane, "synccheck",
            fmt::format("{} on shared address 0x{:x}, which holds no initialized mbarrier (mbarrier.init it first; "
                        "an mbarrier.inval ends it)",
                        what, offset));
  return b;
}

/// The 8 bytes of an mbarrier object are written by mbarrier.init: as far as
/// initcheck and the proxy-fence check go, they hold a value, not a generic write.
void markObject(Warp &w, uint32_t offset) {
  Cta &cta = *w.cta;
  if (w.launch->checks.initcheck)
    for (uint32_t i = 0; i < 8; ++i) (*cta.sharedWritten)[offset + i] = cta.firstEpoch;
  AsyncState &state = *cta.async;
  if (!state.genericStamp.empty()) std::fill_n(state.genericStamp.begin() + offset, 8, 0u);
}

/// Completes the current phase when it awaits no arrival and no byte.
void tryComplete(Mbarrier &b) {
  if (b.pending != 0 || b.tx != 0) return;
  ++b.phase;
  b.pending = b.expected;
}

bool changeTx(Warp &w, const Inst &in, unsigned lane, Mbarrier &b, int64_t delta) {
  int64_t tx = b.tx + delta;
  if (tx > kMaxTxCount || tx < -kMaxTxCount) {
    w.fault(in, lane, "synccheck",
            fmt::format("the tx-count of {} would become {}, outside the range [-(2^20-1), 2^20-1] the ISA allows",
                        describeBarrier(b), tx));
    return false;
  }
  b.tx = tx;
  return true;
}

/// `count` arrivals on `b`; false after a fatal finding.
bool arrive(Warp &w, const Inst &in, unsigned lane, Mbarrier &b, uint32_t count, bool drop, bool noComplete) {
  if (count == 0 || count > b.pending) {
    w.fault(in, lane, "synccheck",
            fmt::format("{} arrival{} on {}, whose current phase awaits {} more (more threads arrive than "
                        "mbarrier.init counted)",
                        count, count == 1 ? "" : "s", describeBarrier(b), b.pending));
    return false;
  }
  b.pending -= count;
  if (drop) b.expected -= count;
  wgmmaRelease(*w.cta->async, b, w.index);
  if (noComplete && b.pending == 0 && b.tx == 0) {
    w.fault(in, lane, "synccheck",
            fmt::format("mbarrier.arrive.noComplete completes phase {} of {} (.noComplete must not complete a "
                        "phase)",
                        b.phase, describeBarrier(b)));
    return false;
  }
  tryComplete(b);
  return true;
}

void removeWritesOf(AsyncState &state, uint32_t barrier) {
  std::erase_if(state.writes, [&](const AsyncWrite &write) { return write.barrier == barrier; });
}

// ---------------------------------------------------------------------------
// mbarrier

/// The mbarrier address of an instruction whose mbarrier is its last two
/// sources (base and offset: bulk copies, whose own address fields hold the
/// copy's two buffers).
uint64_t mbarrierOperand(const Warp &w, const Inst &in, unsigned lane) {
  return w.get(in.src(in.nsrc - 2), lane) + w.get(in.src(in.nsrc - 1), lane);
}

void execMbarrier(Warp &w, const Inst &in, LaneMask active) {
  while (active) {
    unsigned l = static_cast<unsigned>(std::countr_zero(active));
    active &= active - 1;
    uint32_t offset = 0;
    // An mbarrier of another CTA of the cluster (a .shared::cluster address
    // from mapa) takes remote arrivals and transactions.
    Cta *owner = sharedTarget(w, in, l, in.space, addressOf(w, in, l), 8, 8, "mbarrier object", offset);
    if (!owner) return;
    if (owner != w.cta && (in.sub == MbarInit || in.sub == MbarInval)) {
      w.fault(in, l, "synccheck", "mbarrier.init and mbarrier.inval work on this CTA's own mbarriers");
      return;
    }
    AsyncState &state = *owner->async;
    ++state.changes;
    switch (in.sub) {
    case MbarInit: {
      uint64_t count = w.get(in.src(0), l) & 0xffffffffu;
      if (count == 0 || count > kMaxArrivalCount) {
        w.fault(in, l, "synccheck",
                fmt::format("mbarrier.init with an arrival count of {}; it must be in [1, 2^20-1]", count));
        return;
      }
      Mbarrier *b = state.find(offset);
      if (!b) {
        state.barriers.push_back(Mbarrier{});
        b = &state.barriers.back();
      } else {
        removeWritesOf(state, offset);
      }
      *b = Mbarrier{};
      b->offset = offset;
      b->expected = b->pending = static_cast<uint32_t>(count);
      b->initLine = in.line;
      b->initWarp = w.index;
      b->initFence = state.initFences[w.index];
      b->observed.assign(state.proxyFences.size(), 0);
      state.track(offset, offset + 8);
      markObject(w, offset);
      break;
    }
    case MbarInval: {
      if (!barrierAt(w, in, l, offset, "mbarrier.inval")) return;
      removeWritesOf(state, offset);
      std::erase_if(state.barriers, [&](const Mbarrier &b) { return b.offset == offset; });
      break;
    }
    case MbarArrive: {
      Mbarrier *b = barrierAt(w, in, l, offset, "mbarrier.arrive", owner);
      if (!b) return;
      uint32_t count = 1;
      if (in.sub2 & kExpectTx) {
        if (!changeTx(w, in, l, *b, static_cast<int64_t>(w.get(in.src(0), l) & 0xffffffffu))) return;
      } else if (in.sub2 & kHasCount) {
        count = static_cast<uint32_t>(w.get(in.src(0), l));
      }
      // The opaque state: the phase arrived on (low word) and the arrivals
      // it still awaits after this one (mbarrier.pending_count reads them).
      uint64_t phase = b->phase;
      if (!arrive(w, in, l, *b, count, in.sub2 & kDrop, in.sub2 & kNoComplete)) return;
      uint32_t pendingAfter = b->phase == phase ? b->pending : 0;
      w.set(in.dst(0), l, (phase & 0xffffffffu) | (uint64_t(pendingAfter) << 32));
      break;
    }
    case MbarExpectTx:
    case MbarCompleteTx: {
      Mbarrier *b = barrierAt(w, in, l, offset, in.sub == MbarExpectTx ? "mbarrier.expect_tx" : "mbarrier.complete_tx",
                              owner);
      if (!b) return;
      int64_t bytes = static_cast<int64_t>(w.get(in.src(0), l) & 0xffffffffu);
      if (!changeTx(w, in, l, *b, in.sub == MbarExpectTx ? bytes : -bytes)) return;
      tryComplete(*b);
      break;
    }
    case CpAsyncArrive: {
      // cp.async copies complete when issued, so the arrive they trigger
      // happens now; without .noinc it also raised the pending count first.
      Mbarrier *b = barrierAt(w, in, l, offset, "cp.async.mbarrier.arrive", owner);
      if (!b) return;
      if ((in.sub2 & kNoInc) && !arrive(w, in, l, *b, 1, false, false)) return;
      break;
    }
    default: break;
    }
  }
}

void execMbarrierWait(Warp &w, const Inst &in, LaneMask active) {
  AsyncState &state = *w.cta->async;
  bool observedNew = false;
  while (active) {
    unsigned l = static_cast<unsigned>(std::countr_zero(active));
    active &= active - 1;
    uint32_t offset = 0;
    if (!sharedOffset(w, in, l, in.space, addressOf(w, in, l), 8, 8, "mbarrier object", offset)) return;
    Mbarrier *b = barrierAt(w, in, l, offset, "mbarrier wait");
    if (!b) return;
    uint64_t operand = w.get(in.src(0), l);
    // With a parity, the phase of that parity before the current one has
    // completed when the current phase's parity differs; with a state from
    // mbarrier.arrive, the phase it arrived on is no longer the current one.
    bool complete = (in.sub2 & kParity) ? (b->phase & 1) != (operand & 1)
                                        : (b->phase & 0xffffffffu) != (operand & 0xffffffffu);
    w.set(in.dst(0), l, complete ? 1 : 0);
    if (complete) {
      uint64_t &seen = b->observed[w.index];
      if (seen < b->phase) seen = b->phase, observedNew = true;
      wgmmaAcquire(state, *b, w.index);
    } else {
      w.yield = true;
      state.waits[w.index] = AsyncState::Wait{static_cast<uint32_t>(&in - w.program->code.data()), offset, l};
    }
  }
  // What the producers wrote before their arrivals is ordered before what
  // this warp does next: a new racecheck epoch, as after a CTA barrier.
  if (observedNew && state.epochSource) w.cta->epoch = ++*state.epochSource;
}

void execPendingCount(Warp &w, const Inst &in, LaneMask active) {
  forEachLane(active, [&](unsigned l) { w.set(in.dst(0), l, (w.get(in.src(0), l) >> 32) & 0xfffff); });
}

// ---------------------------------------------------------------------------
// Bulk copies

/// Checks that the async proxy may read shared bytes [begin, end): every
/// generic write to them was followed by a fence.proxy.async of its warp, and
/// no bulk copy into them is unobserved by this warp.
bool asyncProxyRead(Warp &w, const Inst &in, unsigned lane, uint32_t begin, uint32_t end) {
  AsyncState &state = *w.cta->async;
  if (!state.genericStamp.empty()) {
    for (uint32_t i = begin; i < end; ++i) {
      uint32_t stamp = state.genericStamp[i];
      if (!(stamp & AsyncState::kStampValid)) continue;
      uint32_t warp = (stamp >> 25) & 0x3f, writerLane = (stamp >> 20) & 0x1f;
      if (warp >= state.proxyFences.size() || (state.proxyFences[warp] & 0xfffff) != (stamp & 0xfffff)) continue;
      w.fault(in, lane, "racecheck",
              fmt::format("missing fence.proxy.async: the bulk copy reads shared memory at 0x{:x} that thread {} "
                          "wrote at line {} through the generic proxy, and that thread executed no "
                          "fence.proxy.async between the write and the copy (the copy engine may read stale "
                          "data; write, fence.proxy.async, barrier, then copy),",
                          i, threadName(*w.launch, warp * kWarpSize + writerLane), state.genericLine[i]));
      return false;
    }
  }
  return asyncSharedAccess(w, in, lane, begin, end - begin, false);
}

/// A global range of a bulk copy through memcheck (and the cross-CTA
/// racecheck), in 16-byte pieces; the host pointer of its start, or nullptr
/// after a fatal finding.
uint8_t *globalRange(Warp &w, const Inst &in, unsigned lane, uint64_t address, uint32_t bytes, bool write) {
  uint8_t *start = nullptr;
  for (uint32_t done = 0; done < bytes; done += 16) {
    uint8_t *p = w.access(in, lane, Space::Global, address + done, 16, write);
    if (!p) return nullptr;
    if (!start) start = p;
  }
  return start;
}

/// Writes `bytes` into shared memory as the async proxy: no generic write for
/// racecheck, initialized for initcheck, no longer a generic write for the
/// proxy-fence check.
void asyncSharedWrite(Warp &w, Cta &cta, uint32_t offset, const uint8_t *data, uint32_t bytes) {
  std::memmove(cta.shared->data() + offset, data, bytes);
  if (w.launch->checks.racecheck) cta.shadow->forget(offset, bytes);
  if (w.launch->checks.initcheck) std::fill_n(cta.sharedWritten->begin() + offset, bytes, cta.firstEpoch);
  AsyncState &state = *cta.async;
  if (!state.genericStamp.empty()) std::fill_n(state.genericStamp.begin() + offset, bytes, 0u);
}

/// A bulk copy may not overwrite a live mbarrier or shared memory a bulk copy
/// to global may still be reading.
bool asyncProxyWrite(Warp &w, const Inst &in, unsigned lane, Cta &cta, uint32_t begin, uint32_t end) {
  AsyncState &state = *cta.async;
  for (const Mbarrier &b : state.barriers)
    if (b.offset < end && b.offset + 8 > begin) {
      w.fault(in, lane, "synccheck",
              fmt::format("the bulk copy writes shared memory [0x{:x}, 0x{:x}) over {}", begin, end,
                          describeBarrier(b)));
      return false;
    }
  if (const AsyncState::WgmmaRead *read = wgmmaReadUnordered(state, w.index, begin, end)) {
    w.fault(in, lane, "racecheck",
            fmt::format("the bulk copy overwrites shared memory [0x{:x}, 0x{:x}) that {} (release a stage only after "
                        "the wgmma.wait_group that covers the wgmmas reading it),",
                        begin, end, wgmmaReadHazard(*read)));
    return false;
  }
  for (const AsyncRead &r : state.reads)
    if (r.begin < end && r.end > begin) {
      w.fault(in, lane, "racecheck",
              fmt::format("the bulk copy overwrites shared memory at 0x{:x} that the bulk copy to global at line {} "
                          "(thread {}) may still be reading (commit it and wait with "
                          "cp.async.bulk.wait_group.read first),",
                          std::max(begin, r.begin), r.line, threadName(*w.launch, r.thread)));
      return false;
    }
  return true;
}

void checkInitFence(Warp &w, const Inst &in, Cta &owner, Mbarrier &b);

void recordWrite(AsyncState &state, const AsyncWrite &write) {
  // A copy into the same bytes in a later phase supersedes an older one.
  std::erase_if(state.writes,
                [&](const AsyncWrite &old) { return old.begin >= write.begin && old.end <= write.end; });
  if (state.writes.size() >= kMaxTrackedCopies) state.writes.erase(state.writes.begin());
  state.writes.push_back(write);
  state.track(write.begin, write.end);
}

void execBulkCopy(Warp &w, const Inst &in, LaneMask active) {
  AsyncState &state = *w.cta->async;
  std::vector<uint8_t> buffer;
  while (active) {
    unsigned l = static_cast<unsigned>(std::countr_zero(active));
    active &= active - 1;
    uint64_t size = w.get(in.src(0), l) & 0xffffffffu;
    uint64_t dst = addressOf(w, in, l), src = address2Of(w, in, l);
    if (size % 16 != 0 || dst % 16 != 0 || src % 16 != 0) {
      w.fault(in, l, "memcheck",
              fmt::format("cp.async.bulk with size {} between addresses that are {} and {} modulo 16: the size must "
                          "be a multiple of 16 and both addresses 16-byte aligned",
                          size, dst % 16, src % 16));
      return;
    }
    uint32_t bytes = static_cast<uint32_t>(size);
    uint32_t thread = w.index * kWarpSize + l;
    buffer.resize(bytes);
    // Read the source.
    if (in.sub == BulkGlobalToShared) {
      const uint8_t *p = globalRange(w, in, l, src, bytes, false);
      if (!p && bytes) return;
      if (bytes) std::memcpy(buffer.data(), p, bytes);
    } else {
      uint32_t from = 0;
      if (!sharedOffset(w, in, l, Space::Shared, src, bytes, 16, "cp.async.bulk source", from)) return;
      if (!asyncProxyRead(w, in, l, from, from + bytes)) return;
      std::memcpy(buffer.data(), w.cta->shared->data() + from, bytes);
      if (in.sub == BulkSharedToGlobal) {
        if (state.reads.size() >= kMaxTrackedCopies) state.reads.erase(state.reads.begin());
        state.reads.push_back(AsyncRead{from, from + bytes, state.committedGroups[thread], in.line, thread});
        state.track(from, from + bytes);
      }
    }
    // Write the destination.
    if (in.sub == BulkSharedToGlobal) {
      uint8_t *p = globalRange(w, in, l, dst, bytes, true);
      if (!p && bytes) return;
      if (bytes) std::memcpy(p, buffer.data(), bytes);
      continue;
    }
    // The destination may be another CTA of the cluster; its mbarrier is in
    // the same CTA as the destination.
    uint32_t to = 0, barrierOffset = 0;
    Cta *target = sharedTarget(w, in, l, Space::Shared, dst, bytes, 16, "cp.async.bulk destination", to);
    if (!target) return;
    Cta *barrierOwner =
        sharedTarget(w, in, l, Space::Shared, mbarrierOperand(w, in, l), 8, 8, "mbarrier object", barrierOffset);
    if (!barrierOwner) return;
    if (barrierOwner != target) {
      w.fault(in, l, "memcheck", "cp.async.bulk's mbarrier is not in the CTA of its destination");
      return;
    }
    Mbarrier *b = barrierAt(w, in, l, barrierOffset, "cp.async.bulk's complete_tx", target);
    if (!b || !asyncProxyWrite(w, in, l, *target, to, to + bytes)) return;
    checkInitFence(w, in, *target, *b);
    asyncSharedWrite(w, *target, to, buffer.data(), bytes);
    AsyncState &targetState = *target->async;
    recordWrite(targetState, AsyncWrite{to, to + bytes, barrierOffset, b->phase, in.line, thread});
    ++targetState.changes;
    if (!changeTx(w, in, l, *b, -static_cast<int64_t>(bytes))) return;
    tryComplete(*b);
  }
}

void execBulkGroup(Warp &w, const Inst &in, LaneMask active) {
  AsyncState &state = *w.cta->async;
  forEachLane(active, [&](unsigned l) {
    uint32_t thread = w.index * kWarpSize + l;
    uint32_t &committed = state.committedGroups[thread];
    if (in.sub == BulkCommit) {
      ++committed;
      return;
    }
    // wait_group N: every group but the newest N is complete (the copies are,
    // and so are their reads of shared memory).
    if (committed <= in.aux) return;
    uint32_t doneBelow = committed - in.aux;
    std::erase_if(state.reads, [&](const AsyncRead &r) { return r.thread == thread && r.group < doneBelow; });
  });
}

void execProxyFence(Warp &w, const Inst &, LaneMask) {
  ++w.cta->async->proxyFences[w.index];
  ++w.cta->async->initFences[w.index];
}

void execMbarrierInitFence(Warp &w, const Inst &, LaneMask) { ++w.cta->async->initFences[w.index]; }

/// A bulk copy completes a transaction on `b` (in `owner`): the warp that
/// initialized it must have fenced the init for the async proxy since (the
/// CUDA programming guide's TMA example: init, fence.proxy.async, barrier).
/// A warning, once per object: such kernels often work, and nothing is wrong
/// with the data.
void checkInitFence(Warp &w, const Inst &in, Cta &owner, Mbarrier &b) {
  const AsyncState &state = *owner.async;
  if (b.initFenceReported || b.initWarp >= state.initFences.size() || state.initFences[b.initWarp] != b.initFence)
    return;
  b.initFenceReported = true;
  Finding finding;
  finding.check = "racecheck";
  finding.fatal = false;
  finding.line = b.initLine;
  finding.message = fmt::format(
      "racecheck: the mbarrier initialized here is completed by the bulk copy at line {} with no fence.proxy.async "
      "(or fence.mbarrier_init) after the mbarrier.init in its warp: the copy engine may not see the initialized "
      "object (put fence.proxy.async.shared::cta after the inits, before the barrier that publishes them)",
      in.line);
  w.launch->report(std::move(finding));
}

// ---------------------------------------------------------------------------
// cp.async.bulk.tensor in tile mode, through a map encodeEmuTensorMap made.
//
// A box of ceil(boxDim[i] / elementStrides[i]) elements per dimension (the
// stride of dimension 0 ignored, as the driver documents) starting at the
// coordinates, in shared memory with dimension 0 fastest, its rows packed (or
// one swizzle span apart when narrower than it); its 16-byte chunks are then
// placed by the swizzle (tensorMapSwizzle) of their shared address. A load fills out-of-bounds elements (zero or the NaN), counts the
// whole box on the mbarrier; a store writes only the in-bounds elements.

/// The map at generic address `address`, read through memcheck (a kernel
/// parameter, .const or global memory); nullopt after a fatal finding.
std::optional<EmuTensorMap> readTensorMap(Warp &w, const Inst &in, unsigned lane, uint64_t address) {
  if (address % exec::kTensorMapAlignment != 0) {
    w.fault(in, lane, "memcheck",
            fmt::format("the tensor-map operand at 0x{:x} is not 64-byte aligned (a tensor map is a `.param .align 64 "
                        ".b8 map[128]` kernel parameter, or 64-byte aligned .const/.global memory)",
                        address));
    return std::nullopt;
  }
  exec::TensorMapBytes bytes;
  for (uint32_t done = 0; done < bytes.size(); done += 8) {
    const uint8_t *p = w.access(in, lane, Space::Generic, address + done, 8, false);
    if (!p) return std::nullopt;
    std::memcpy(bytes.data() + done, p, 8);
  }
  std::optional<EmuTensorMap> map = decodeEmuTensorMap(bytes);
  if (!map)
    w.fault(in, lane, "memcheck",
            fmt::format("the tensor-map operand at 0x{:x} holds no tensor map the executor encoded (pass the task's "
                        "map parameter's address: mov.b64 of the .param, then cvta.param; maps changed in memory, e.g. "
                        "by tensormap.replace, are not emulated)",
                        address));
  return map;
}

/// Visits every element of a box in shared-memory order: f(index, inBounds, global address).
template <typename F> void forEachBoxElement(const EmuTensorMap &map, const int64_t *start, F &&f) {
  const exec::TensorMapSpec &s = map.spec;
  uint32_t count[5] = {1, 1, 1, 1, 1};
  int64_t stride[5] = {1, 1, 1, 1, 1};
  for (uint32_t i = 0; i < s.rank; ++i) {
    count[i] = exec::tensorMapBoxCount(s, i);
    stride[i] = i == 0 ? 1 : s.elementStrides[i];
  }
  const uint64_t elementBytes = exec::tensorMapElementBytes(s.dataType);
  uint64_t index = 0;
  for (uint32_t j4 = 0; j4 < count[4]; ++j4)
    for (uint32_t j3 = 0; j3 < count[3]; ++j3)
      for (uint32_t j2 = 0; j2 < count[2]; ++j2)
        for (uint32_t j1 = 0; j1 < count[1]; ++j1)
          for (uint32_t j0 = 0; j0 < count[0]; ++j0, ++index) {
            const uint32_t j[5] = {j0, j1, j2, j3, j4};
            bool inside = true;
            uint64_t address = map.address;
            for (uint32_t i = 0; i < s.rank; ++i) {
              int64_t x = start[i] + int64_t(j[i]) * stride[i];
              if (x < 0 || static_cast<uint64_t>(x) >= s.globalDim[i]) {
                inside = false;
                break;
              }
              address += i == 0 ? uint64_t(x) * elementBytes : uint64_t(x) * s.globalStrides[i - 1];
            }
            if (!f(index, inside, address)) return;
          }
}

/// The out-of-bounds fill of one element: zero, or the NaN the H200 writes
/// for NAN_REQUEST_ZERO_FMA: 0x7ff77ff7 for f32 (measured); the same 16-bit
/// pattern repeated for the other floating types (a NaN in each: assumed).
void fillElement(uint8_t *p, const exec::TensorMapSpec &s) {
  const uint32_t bytes = exec::tensorMapElementBytes(s.dataType);
  std::memset(p, 0, bytes);
  if (s.oobFill != exec::TensorMapOobFill::NanRequestZeroFma) return;
  const uint64_t nan = 0x7ff77ff77ff77ff7ull;
  std::memcpy(p, &nan, bytes);
}

void execTensorCopy(Warp &w, const Inst &in, LaneMask active) {
  AsyncState &state = *w.cta->async;
  const bool load = in.sub == TensorLoad;
  std::vector<uint8_t> box;
  while (active) {
    unsigned l = static_cast<unsigned>(std::countr_zero(active));
    active &= active - 1;
    std::optional<EmuTensorMap> map = readTensorMap(w, in, l, address2Of(w, in, l));
    if (!map) return;
    const exec::TensorMapSpec &s = map->spec;
    if (s.rank != in.aux) {
      w.fault(in, l, "memcheck",
              fmt::format("cp.async.bulk.tensor.{}d with a tensor map of rank {} ({})", in.aux, s.rank,
                          exec::describeTensorMap(s)));
      return;
    }
    int64_t start[5] = {0, 0, 0, 0, 0};
    for (uint32_t i = 0; i < s.rank; ++i) start[i] = static_cast<int32_t>(w.get(in.src(i), l));
    const uint32_t elementBytes = exec::tensorMapElementBytes(s.dataType);
    // The H200 raises an illegal instruction for an innermost coordinate
    // whose byte offset is not a multiple of 16 (measured: a 2D f32 load at
    // x = 30); the emulator refuses it likewise.
    if ((start[0] * elementBytes) % 16 != 0) {
      w.fault(in, l, "memcheck",
              fmt::format("cp.async.bulk.tensor's innermost coordinate {} is {} bytes into a row, not a multiple of "
                          "16 (a GPU raises an illegal instruction: CUDA_ERROR_ILLEGAL_INSTRUCTION)",
                          start[0], start[0] * elementBytes));
      return;
    }
    const uint64_t total = exec::tensorMapBoxBytes(s);
    const uint32_t thread = w.index * kWarpSize + l;
    box.assign(total, 0);
    // A row of the box (dimension 0) narrower than the swizzle span takes the
    // whole span in shared memory (measured on the H200: a 64-byte row with
    // the 128-byte swizzle); otherwise rows are packed.
    const uint32_t rowBytes = exec::tensorMapBoxCount(s, 0) * elementBytes;
    const uint32_t span = exec::tensorMapSwizzleBytes(s.swizzle);
    const uint32_t pitch = span && rowBytes < span ? span : rowBytes;
    const uint64_t footprint = total / rowBytes * pitch;
    const char *what = load ? "cp.async.bulk.tensor destination" : "cp.async.bulk.tensor source";
    uint32_t base = 0;
    Cta *target = load ? sharedTarget(w, in, l, Space::Shared, addressOf(w, in, l), footprint, 128, what, base)
                       : (sharedOffset(w, in, l, Space::Shared, addressOf(w, in, l), footprint, 128, what, base)
                              ? w.cta
                              : nullptr);
    if (!target) return;
    // Where each 16-byte chunk of the box lies in shared memory.
    const exec::TensorMapSwizzle swizzle = s.swizzle;
    auto place = [&](uint64_t chunk) {
      return tensorMapSwizzle(base + static_cast<uint32_t>(chunk / rowBytes * pitch + chunk % rowBytes), swizzle);
    };
    uint32_t low = UINT32_MAX, high = 0;
    const size_t sharedBytes = target->shared->size();
    for (uint64_t chunk = 0; chunk < total; chunk += 16) {
      uint32_t at = place(chunk);
      if (at + 16 > sharedBytes) {
        w.fault(in, l, "memcheck",
                fmt::format("{}: the swizzled box reaches shared address 0x{:x}, past the CTA's {} bytes", what, at,
                            sharedBytes));
        return;
      }
      low = std::min(low, at), high = std::max(high, at + 16);
    }
    if (load) {
      bool ok = true;
      forEachBoxElement(*map, start, [&](uint64_t index, bool inside, uint64_t address) {
        uint8_t *to = box.data() + index * elementBytes;
        if (!inside) {
          fillElement(to, s);
          return true;
        }
        const uint8_t *from = w.access(in, l, Space::Global, address, elementBytes, false);
        if (!from) return ok = false;
        std::memcpy(to, from, elementBytes);
        return true;
      });
      if (!ok) return;
      uint32_t barrierOffset = 0;
      Cta *barrierOwner =
          sharedTarget(w, in, l, Space::Shared, mbarrierOperand(w, in, l), 8, 8, "mbarrier object", barrierOffset);
      if (!barrierOwner) return;
      if (barrierOwner != target) {
        w.fault(in, l, "memcheck", "cp.async.bulk.tensor's mbarrier is not in the CTA of its destination");
        return;
      }
      Mbarrier *b = barrierAt(w, in, l, barrierOffset, "cp.async.bulk.tensor's complete_tx", target);
      if (!b || !asyncProxyWrite(w, in, l, *target, low, high)) return;
      checkInitFence(w, in, *target, *b);
      for (uint64_t chunk = 0; chunk < total; chunk += 16) asyncSharedWrite(w, *target, place(chunk), box.data() + chunk, 16);
      AsyncState &targetState = *target->async;
      recordWrite(targetState, AsyncWrite{low, high, barrierOffset, b->phase, in.line, thread});
      ++targetState.changes;
      if (!changeTx(w, in, l, *b, -static_cast<int64_t>(total))) return;
      tryComplete(*b);
      continue;
    }
    if (!asyncProxyRead(w, in, l, low, high)) return;
    for (uint64_t chunk = 0; chunk < total; chunk += 16)
      std::memcpy(box.data() + chunk, w.cta->shared->data() + place(chunk), 16);
    if (state.reads.size() >= kMaxTrackedCopies) state.reads.erase(state.reads.begin());
    state.reads.push_back(AsyncRead{low, high, state.committedGroups[thread], in.line, thread});
    state.track(low, high);
    bool ok = true;
    forEachBoxElement(*map, start, [&](uint64_t index, bool inside, uint64_t address) {
      if (!inside) return true; // a store leaves what lies outside the tensor alone
      uint8_t *to = w.access(in, l, Space::Global, address, elementBytes, true);
      if (!to) return ok = false;
      std::memcpy(to, box.data() + index * elementBytes, elementBytes);
      return true;
    });
    if (!ok) return;
  }
}

// ---------------------------------------------------------------------------
// Cluster addresses: mapa and getctarank (sub2 1: generic addresses)

void execMapa(Warp &w, const Inst &in, LaneMask active) {
  bool generic = in.sub2 == 1;
  while (active) {
    unsigned l = static_cast<unsigned>(std::countr_zero(active));
    active &= active - 1;
    uint64_t address = w.get(in.src(0), l);
    uint64_t rank = w.get(in.src(1), l) & 0xffffffffu;
    if (generic && address - kSharedWindow >= kWindowSize) {
      w.fault(in, l, "memcheck", fmt::format("mapa of generic address 0x{:x}, which is not in shared memory", address));
      return;
    }
    if (rank >= w.cta->clusterSize) {
      w.fault(in, l, "memcheck",
              fmt::format("mapa to CTA rank {} of a cluster of {} CTAs", rank, w.cta->clusterSize));
      return;
    }
    uint64_t offset = (generic ? address - kSharedWindow : address) & kClusterOffsetMask;
    uint64_t mapped = ((rank + 1) << kClusterRankShift) | offset;
    w.set(in.dst(0), l, lowBits(generic ? mapped + kSharedWindow : mapped, in.accessBytes * 8));
  }
}

void execGetctarank(Warp &w, const Inst &in, LaneMask active) {
  bool generic = in.sub2 == 1;
  while (active) {
    unsigned l = static_cast<unsigned>(std::countr_zero(active));
    active &= active - 1;
    uint64_t address = w.get(in.src(0), l);
    if (generic) {
      if (address - kSharedWindow >= kWindowSize) {
        w.fault(in, l, "memcheck",
                fmt::format("getctarank of generic address 0x{:x}, which is not in shared memory", address));
        return;
      }
      address -= kSharedWindow;
    }
    uint64_t rank = address >> kClusterRankShift;
    w.set(in.dst(0), l, rank ? rank - 1 : w.cta->clusterRank);
  }
}

// ---------------------------------------------------------------------------
// stmatrix.sync.aligned.m16n8.x{1,2,4}.trans.b8
//
// Matrix i (register i of every lane) is 16x8 bytes; lane L holds the bytes
// e0..e3 (LSB first) at rows L/4 (e0, e1) and L/4 + 8 (e2, e3), columns
// 2*(L%4) (e0, e2) and 2*(L%4) + 1 (e1, e3), as the accumulator of an
// m16n8 mma. .trans stores it column-major: column n is the 16-byte row at
// the address lane 8*i + n gives (the PTX ISA's stmatrix; the thread/value
// layout CUTLASS gives SM100_U8x4_STSM_T says the same).
void execStmatrixM16n8(Warp &w, const Inst &in, LaneMask active) {
  unsigned num = in.nsrc;
  if (active != (w.live & w.valid) || w.valid != ~0u) {
    w.fault(in, static_cast<unsigned>(std::countr_zero(active)), "synccheck",
            "stmatrix.sync.aligned must be executed by every lane of the warp together");
    return;
  }
  for (unsigned i = 0; i < num; ++i) {
    uint8_t columns[8][16];
    for (unsigned lane = 0; lane < kWarpSize; ++lane) {
      uint32_t bits = static_cast<uint32_t>(w.get(in.src(i), lane));
      for (unsigned k = 0; k < 4; ++k) {
        unsigned row = lane / 4 + 8 * (k >> 1), column = 2 * (lane % 4) + (k & 1);
        columns[column][row] = static_cast<uint8_t>(bits >> (8 * k));
      }
    }
    for (unsigned n = 0; n < 8; ++n) {
      unsigned lane = 8 * i + n;
      uint8_t *p = w.access(in, lane, in.space, addressOf(w, in, lane), 16, true);
      if (!p) return;
      std::memcpy(p, columns[n], 16);
    }
  }
}

// ---------------------------------------------------------------------------
// Decoding

std::optional<Space> mbarrierSpace(DecodeContext &ctx) {
  for (const std::string &m : ctx.in.modifiers) {
    // A cluster of one CTA: its shared::cluster window is its own shared memory.
    if (m == "shared" || m == "shared::cta" || m == "shared::cluster") return Space::Shared;
    if (m == "global" || m == "local" || m == "const" || m == "param") return std::nullopt;
  }
  return Space::Generic;
}

bool onlyModifiers(DecodeContext &ctx, std::initializer_list<std::string_view> allowed, size_t skip) {
  for (size_t i = skip; i < ctx.in.modifiers.size(); ++i) {
    const std::string &m = ctx.in.modifiers[i];
    if (std::find(allowed.begin(), allowed.end(), m) != allowed.end() || m.starts_with("L2::")) continue;
    ctx.unsupported(fmt::format("modifier .{} is not emulated", m));
    return false;
  }
  return true;
}

/// Adds an address operand `[base+offset]` as two sources (base register or
/// symbol, and the offset), for an instruction whose address fields are taken.
bool addAddressSources(DecodeContext &ctx, const ptx::Operand &address) {
  if (address.kind != ptx::Operand::Kind::Address || !address.elements.empty())
    return ctx.invalid("expects an mbarrier address [...]"), false;
  ptx::Operand base;
  base.loc = address.loc;
  if (address.name.empty()) {
    base.kind = ptx::Operand::Kind::Integer;
    base.text = "0";
  } else {
    base.kind = ptx::Operand::Kind::Name;
    base.name = address.name;
  }
  ptx::Operand offset;
  offset.kind = ptx::Operand::Kind::Integer;
  offset.intValue = address.intValue;
  offset.text = std::to_string(address.intValue);
  return ctx.addSrc(base, DType::U64) && ctx.addSrc(offset, DType::U64);
}

bool decodeMbarrier(DecodeContext &ctx) {
  const ptx::Instruction &in = ctx.in;
  Inst &out = ctx.out;
  if (in.modifiers.empty()) return ctx.invalid("needs an operation");
  const std::string &what = in.modifiers[0];
  if (!onlyModifiers(ctx, {"shared", "shared::cta", "shared::cluster", "b64", "release", "acquire", "relaxed", "cta",
                           "cluster", "noComplete", "expect_tx", "parity"},
                     1))
    return true;
  std::optional<Space> space = mbarrierSpace(ctx);
  if (!space) return ctx.invalid("an mbarrier lives in shared memory");
  const auto &ops = in.operands;
  if (what == "pending_count") {
    if (ops.size() != 2) return ctx.invalid("takes a count and a state");
    if (!ctx.addDst(ops[0]) || !ctx.addSrc(ops[1], DType::B64)) return true;
    out.exec = execPendingCount;
    return true;
  }
  out.exec = execMbarrier;
  if (what == "init" || what == "expect_tx" || what == "complete_tx") {
    if (ops.size() != 2) return ctx.invalid("takes an mbarrier address and a count");
    if (!ctx.setAddress(ops[0], *space) || !ctx.addSrc(ops[1], DType::U32)) return true;
    out.sub = what == "init" ? MbarInit : what == "expect_tx" ? MbarExpectTx : MbarCompleteTx;
    return true;
  }
  if (what == "inval") {
    if (ops.size() != 1) return ctx.invalid("takes an mbarrier address");
    ctx.setAddress(ops[0], *space);
    out.sub = MbarInval;
    return true;
  }
  if (what == "arrive" || what == "arrive_drop") {
    if (ops.size() != 2 && ops.size() != 3) return ctx.invalid("takes a state, an mbarrier address and a count");
    if (!ctx.addDst(ops[0]) || !ctx.setAddress(ops[1], *space)) return true;
    out.sub = MbarArrive;
    if (what == "arrive_drop") out.sub2 |= kDrop;
    if (ctx.has("noComplete")) out.sub2 |= kNoComplete;
    if (ctx.has("expect_tx")) {
      if (ops.size() != 3) return ctx.invalid(".expect_tx takes a tx-count");
      out.sub2 |= kExpectTx;
    }
    if (ops.size() == 3) {
      if (!(out.sub2 & kExpectTx)) out.sub2 |= kHasCount;
      if (!ctx.addSrc(ops[2], DType::U32)) return true;
    }
    return true;
  }
  if (what == "test_wait" || what == "try_wait") {
    // The optional suspend-time hint of try_wait only bounds how long the
    // hardware may wait before returning false.
    if (ops.size() != 3 && !(what == "try_wait" && ops.size() == 4))
      return ctx.invalid("takes a predicate, an mbarrier address and a state or parity");
    if (!ctx.addDst(ops[0]) || !ctx.setAddress(ops[1], *space) ||
        !ctx.addSrc(ops[2], ctx.has("parity") ? DType::U32 : DType::B64))
      return true;
    out.sub = MbarWait;
    if (ctx.has("parity")) out.sub2 |= kParity;
    out.op = Op::MbarrierWait;
    out.exec = execMbarrierWait;
    return true;
  }
  return ctx.unsupported("this mbarrier operation is not emulated");
}

/// cp.async.bulk.tensor.{1..5}d in tile mode: a load into shared memory
/// completing on an mbarrier, or a store from .shared::cta in a bulk group.
/// The tensor-map address is the second address (addrSlot2), the coordinates
/// the first sources, a load's mbarrier the last two.
bool decodeTensorCopy(DecodeContext &ctx) {
  const ptx::Instruction &in = ctx.in;
  Inst &out = ctx.out;
  const auto &ops = in.operands;
  if (!onlyModifiers(ctx, {"async", "bulk", "tensor", "1d", "2d", "3d", "4d", "5d", "shared::cluster", "shared::cta",
                           "global", "tile", "mbarrier::complete_tx::bytes", "bulk_group"},
                     0))
    return true;
  unsigned dims = 0;
  for (unsigned d = 1; d <= 5; ++d)
    if (ctx.has(std::to_string(d) + "d")) dims = d;
  if (!dims) return ctx.invalid("needs the tensor's dimensions (.1d to .5d)");
  std::vector<std::string> spaces;
  for (const std::string &m : in.modifiers)
    if (m == "global" || m == "shared::cta" || m == "shared::cluster") spaces.push_back(m);
  if (spaces.size() != 2) return ctx.invalid("names a destination and a source state space");
  const bool load = spaces[0] != "global";
  if (load && (spaces[1] != "global" || !ctx.has("mbarrier::complete_tx::bytes")))
    return ctx.invalid("a load reads .global into shared memory and completes on an mbarrier "
                       "(.mbarrier::complete_tx::bytes)");
  if (!load && (spaces[1] != "shared::cta" || !ctx.has("bulk_group")))
    return ctx.invalid("a store reads .shared::cta and completes in a bulk group (.bulk_group)");
  const size_t expected = (load ? 3 : 2) + (ctx.has("L2::cache_hint") ? 1 : 0);
  if (ops.size() != expected)
    return ctx.invalid(fmt::format("takes {} operands{}", expected, ctx.has("L2::cache_hint") ? " with the cache policy" : ""));
  const ptx::Operand &tensor = ops[load ? 1 : 0];
  if (tensor.kind != ptx::Operand::Kind::Address || tensor.elements.size() != 1 ||
      tensor.elements[0].kind != ptx::Operand::Kind::Vector || tensor.elements[0].elements.size() != dims)
    return ctx.invalid(fmt::format("expects a tensor operand [tensorMap, {{c0, ...}}] with {} coordinate{}", dims,
                                   dims == 1 ? "" : "s"));
  ptx::Operand mapAddress = tensor;
  mapAddress.elements.clear();
  if (!ctx.setAddress(mapAddress, Space::Generic)) return true;
  out.addrSlot2 = out.addrSlot, out.offset2 = out.offset;
  if (!ctx.setAddress(ops[load ? 0 : 1], Space::Shared)) return true;
  if (!ctx.addSrc(tensor.elements[0], DType::S32)) return true;
  if (load && !addAddressSources(ctx, ops[2])) return true;
  out.sub = load ? TensorLoad : TensorStore;
  out.aux = dims;
  out.exec = execTensorCopy;
  return true;
}

bool decodeBulk(DecodeContext &ctx) {
  const ptx::Instruction &in = ctx.in;
  Inst &out = ctx.out;
  const auto &ops = in.operands;
  if (ctx.has("mbarrier") && !ctx.has("bulk")) { // cp.async.mbarrier.arrive{.noinc}
    if (!onlyModifiers(ctx, {"async", "mbarrier", "arrive", "noinc", "shared", "shared::cta", "b64"}, 0)) return true;
    if (ops.size() != 1) return ctx.invalid("takes an mbarrier address");
    std::optional<Space> space = mbarrierSpace(ctx);
    if (!space || !ctx.setAddress(ops[0], *space)) return true;
    out.sub = CpAsyncArrive;
    if (ctx.has("noinc")) out.sub2 |= kNoInc;
    out.exec = execMbarrier;
    return true;
  }
  if (ctx.has("prefetch")) {
    out.op = Op::Nop; // a hint to L2: nothing to do without caches
    return true;
  }
  if (ctx.has("tensor")) return decodeTensorCopy(ctx);
  if (ctx.has("commit_group") || ctx.has("wait_group")) {
    out.sub = ctx.has("commit_group") ? BulkCommit : BulkWait;
    if (out.sub == BulkWait) {
      if (ops.size() != 1 || ops[0].kind != ptx::Operand::Kind::Integer || ops[0].intValue < 0 ||
          ops[0].intValue > 63)
        return ctx.invalid("takes the number of groups that may stay pending, an integer constant");
      out.aux = static_cast<uint32_t>(ops[0].intValue);
    }
    out.exec = execBulkGroup;
    return true;
  }
  if (!onlyModifiers(ctx, {"async", "bulk", "shared::cluster", "shared::cta", "global", "mbarrier::complete_tx::bytes",
                           "bulk_group"},
                     0))
    return true;
  // The first state space is the destination, the second the source.
  std::vector<std::string> spaces;
  for (const std::string &m : in.modifiers)
    if (m == "global" || m == "shared::cta" || m == "shared::cluster") spaces.push_back(m);
  if (spaces.size() != 2) return ctx.invalid("names a destination and a source state space");
  bool toShared = spaces[0] != "global";
  if (toShared && !ctx.has("mbarrier::complete_tx::bytes"))
    return ctx.invalid("a copy into shared memory completes on an mbarrier (.mbarrier::complete_tx::bytes)");
  if (!toShared && (spaces[1] != "shared::cta" || !ctx.has("bulk_group")))
    return ctx.invalid("a copy to global memory reads .shared::cta and completes in a bulk group (.bulk_group)");
  if (spaces[0] == "shared::cta" && spaces[1] != "global") return ctx.invalid("copies into .shared::cta come from .global");
  size_t expected = toShared ? 4 : 3;
  bool cacheHint = ctx.has("L2::cache_hint");
  if (ops.size() != expected + (cacheHint ? 1 : 0))
    return ctx.invalid(fmt::format("takes {} operands{}", expected, cacheHint ? " and a cache policy" : ""));
  Space srcSpace = spaces[1] == "global" ? Space::Global : Space::Shared;
  Space dstSpace = toShared ? Space::Shared : Space::Global;
  if (!ctx.setAddress(ops[1], srcSpace)) return true;
  out.addrSlot2 = out.addrSlot, out.offset2 = out.offset;
  if (!ctx.setAddress(ops[0], dstSpace)) return true;
  if (!ctx.addSrc(ops[2], DType::U32)) return true;
  if (toShared && !addAddressSources(ctx, ops[3])) return true;
  out.sub = !toShared ? BulkSharedToGlobal : srcSpace == Space::Global ? BulkGlobalToShared : BulkSharedToShared;
  out.exec = execBulkCopy;
  return true;
}

} // namespace

// ---------------------------------------------------------------------------
// Checks called from the interpreter and Warp::access

bool asyncSharedAccess(Warp &w, const Inst &in, unsigned lane, uint32_t offset, uint32_t bytes, bool write) {
  AsyncState &state = *w.cta->async;
  if (write && !state.genericStamp.empty()) {
    uint32_t stamp = AsyncState::kStampValid | (w.index << 25) | (lane << 20) | (state.proxyFences[w.index] & 0xfffff);
    std::fill_n(state.genericStamp.begin() + offset, bytes, stamp);
    std::fill_n(state.genericLine.begin() + offset, bytes, in.line);
  }
  uint32_t end = offset + bytes;
  if (end <= state.trackedBegin || offset >= state.trackedEnd) return true;
  if (write)
    for (const Mbarrier &b : state.barriers)
      if (b.offset < end && b.offset + 8 > offset) {
        w.fault(in, lane, "synccheck",
                fmt::format("a generic write over {} (mbarrier.inval it before reusing its memory)",
                            describeBarrier(b)));
        return false;
      }
  // The newest bulk copy into these bytes decides.
  for (auto it = state.writes.rbegin(); it != state.writes.rend(); ++it) {
    const AsyncWrite &copy = *it;
    if (copy.begin >= end || copy.end <= offset) continue;
    const Mbarrier *b = state.find(copy.barrier);
    if (!b || b->observed[w.index] > copy.phase) break;
    std::string when = b->phase > copy.phase
                           ? fmt::format("this warp has not waited for phase {} of {} since it completed", copy.phase,
                                         describeBarrier(*b))
                           : fmt::format("phase {} of {} has not completed ({})", copy.phase, describeBarrier(*b),
                                         phaseState(*b));
    w.fault(in, lane, "racecheck",
            fmt::format("shared-memory {} at 0x{:x} of bytes that the bulk copy at line {} (thread {}) writes, before "
                        "its mbarrier phase completes for this warp: {}; the data may not have arrived (wait with "
                        "mbarrier.try_wait until it returns true first),",
                        write ? "write" : "read", std::max(offset, copy.begin), copy.line,
                        threadName(*w.launch, copy.thread), when));
    return false;
  }
  if (write)
    if (const AsyncState::WgmmaRead *read = wgmmaReadUnordered(state, w.index, offset, end)) {
      w.fault(in, lane, "racecheck",
              fmt::format("shared-memory write at 0x{:x} of bytes that {} (wgmma.wait_group before overwriting its "
                          "operands),",
                          offset, wgmmaReadHazard(*read)));
      return false;
    }
  if (write)
    for (const AsyncRead &r : state.reads)
      if (r.begin < end && r.end > offset) {
        w.fault(in, lane, "racecheck",
                fmt::format("shared-memory write at 0x{:x} of bytes that the bulk copy to global at line {} (thread {}) "
                            "may still be reading (commit it and wait with cp.async.bulk.wait_group.read before "
                            "overwriting its source),",
                            std::max(offset, r.begin), r.line, threadName(*w.launch, r.thread)));
        return false;
      }
  return true;
}

void asyncBarrierRelease(AsyncState &state) {
  wgmmaBarrier(state);
  for (Mbarrier &b : state.barriers) {
    uint64_t seen = 0;
    for (uint64_t o : b.observed) seen = std::max(seen, o);
    std::fill(b.observed.begin(), b.observed.end(), seen);
  }
}

void asyncDeadlock(Cta &cta, std::vector<Warp> &warps) {
  AsyncState &state = *cta.async;
  for (Warp &w : warps) {
    if (!(w.live & ~w.blocked)) continue;
    const AsyncState::Wait &wait = state.waits[w.index];
    if (wait.pc == kNoPc) continue;
    const Mbarrier *b = state.find(wait.barrier);
    std::string why = !b ? "the mbarrier is gone"
                      : b->pending == 0
                          ? fmt::format("{}: every arrival is in but the bytes announced with expect_tx never "
                                        "arrived (a bulk copy missing, or smaller than announced)",
                                        phaseState(*b))
                          : fmt::format("{}, and the threads that could arrive wait too, are blocked at a CTA "
                                        "barrier, or exited",
                                        phaseState(*b));
    w.fault(w.program->code[wait.pc], wait.lane, "synccheck",
            fmt::format("mbarrier wait that can never succeed on {}: {} (deadlock on a GPU)",
                        b ? describeBarrier(*b) : fmt::format("shared address 0x{:x}", wait.barrier), why));
    return;
  }
}

bool usesAsyncState(const Inst &inst) {
  return inst.exec == execMbarrier || inst.exec == execMbarrierWait || inst.exec == execBulkCopy ||
         inst.exec == execBulkGroup || inst.exec == execProxyFence || inst.exec == execTensorCopy ||
         inst.exec == execMbarrierInitFence;
}

bool readsSharedInBulk(const Inst &inst) {
  return (inst.exec == execBulkCopy && (inst.sub == BulkSharedToGlobal || inst.sub == BulkSharedToShared)) ||
         (inst.exec == execTensorCopy && inst.sub == TensorStore);
}

// ---------------------------------------------------------------------------
// The emulator's tensor maps: 128 bytes of its own (the GPU's are opaque).
//   [0, 8) magic "PXFTMAP1"; 8 data type, 9 rank, 10 interleave, 11 swizzle,
//   12 L2 promotion, 13 out-of-bounds fill; [16, 24) global address;
//   [24, 64) dims; [64, 96) strides; [96, 106) box (u16 each);
//   [106, 116) element strides (u16 each); [116, 120) a checksum of [0, 116).

namespace {
constexpr uint64_t kTensorMapMagic = 0x3150414d54465850ull; // "PXFTMAP1"

uint32_t tensorMapChecksum(const uint8_t *bytes) {
  uint32_t hash = 2166136261u; // FNV-1a
  for (size_t i = 0; i < 116; ++i) hash = (hash ^ bytes[i]) * 16777619u;
  return hash;
}
} // namespace

exec::TensorMapBytes encodeEmuTensorMap(uint64_t globalAddress, const exec::TensorMapSpec &spec) {
  exec::TensorMapBytes out{};
  uint8_t *p = out.data();
  std::memcpy(p, &kTensorMapMagic, 8);
  p[8] = static_cast<uint8_t>(spec.dataType);
  p[9] = static_cast<uint8_t>(spec.rank);
  p[10] = static_cast<uint8_t>(spec.interleave);
  p[11] = static_cast<uint8_t>(spec.swizzle);
  p[12] = static_cast<uint8_t>(spec.l2Promotion);
  p[13] = static_cast<uint8_t>(spec.oobFill);
  std::memcpy(p + 16, &globalAddress, 8);
  std::memcpy(p + 24, spec.globalDim.data(), 40);
  std::memcpy(p + 64, spec.globalStrides.data(), 32);
  for (int i = 0; i < 5; ++i) {
    uint16_t box = static_cast<uint16_t>(spec.boxDim[i]), stride = static_cast<uint16_t>(spec.elementStrides[i]);
    std::memcpy(p + 96 + 2 * i, &box, 2);
    std::memcpy(p + 106 + 2 * i, &stride, 2);
  }
  uint32_t checksum = tensorMapChecksum(p);
  std::memcpy(p + 116, &checksum, 4);
  return out;
}

std::optional<EmuTensorMap> decodeEmuTensorMap(const exec::TensorMapBytes &bytes) {
  const uint8_t *p = bytes.data();
  uint64_t magic = 0;
  uint32_t checksum = 0;
  std::memcpy(&magic, p, 8);
  std::memcpy(&checksum, p + 116, 4);
  if (magic != kTensorMapMagic || checksum != tensorMapChecksum(p)) return std::nullopt;
  if (p[8] > uint8_t(exec::TensorMapDataType::TF32Ftz) || p[10] > uint8_t(exec::TensorMapInterleave::B32) ||
      p[11] > uint8_t(exec::TensorMapSwizzle::B128) || p[12] > uint8_t(exec::TensorMapL2Promotion::B256) ||
      p[13] > uint8_t(exec::TensorMapOobFill::NanRequestZeroFma))
    return std::nullopt;
  EmuTensorMap map;
  exec::TensorMapSpec &spec = map.spec;
  spec.dataType = static_cast<exec::TensorMapDataType>(p[8]);
  spec.rank = p[9];
  spec.interleave = static_cast<exec::TensorMapInterleave>(p[10]);
  spec.swizzle = static_cast<exec::TensorMapSwizzle>(p[11]);
  spec.l2Promotion = static_cast<exec::TensorMapL2Promotion>(p[12]);
  spec.oobFill = static_cast<exec::TensorMapOobFill>(p[13]);
  std::memcpy(&map.address, p + 16, 8);
  std::memcpy(spec.globalDim.data(), p + 24, 40);
  std::memcpy(spec.globalStrides.data(), p + 64, 32);
  for (int i = 0; i < 5; ++i) {
    uint16_t box = 0, stride = 0;
    std::memcpy(&box, p + 96 + 2 * i, 2);
    std::memcpy(&stride, p + 106 + 2 * i, 2);
    spec.boxDim[i] = box, spec.elementStrides[i] = stride;
  }
  // Valid when encoded; checked again so that no use of it can go wrong.
  if (!exec::tensorMapProblems(spec, map.address).empty()) return std::nullopt;
  return map;
}

uint32_t tensorMapSwizzle(uint32_t address, exec::TensorMapSwizzle swizzle) {
  const uint32_t span = exec::tensorMapSwizzleBytes(swizzle);
  if (!span) return address;
  // The 16-byte chunk index within a 128-byte row (address bits 4-6, as many
  // of them as the span has chunks) XOR the row's index modulo the pattern
  // (bits 7-9): the pattern repeats every 256, 512 or 1024 bytes.
  const uint32_t mask = span / 16 - 1;
  return address ^ (((address >> 7) & mask) << 4);
}

bool decodeAsync(DecodeContext &ctx) {
  const ptx::Instruction &in = ctx.in;
  Inst &out = ctx.out;
  const std::string &op = in.opcode;
  if (op == "mbarrier") return decodeMbarrier(ctx);
  if (op == "cp" && !in.modifiers.empty() && in.modifiers[0] == "async" && (ctx.has("bulk") || ctx.has("mbarrier")))
    return decodeBulk(ctx);
  if (op == "fence" && ctx.has("proxy") && (ctx.has("async") || ctx.has("async::generic"))) {
    out.exec = execProxyFence;
    return true;
  }
  if (op == "fence" && ctx.has("mbarrier_init")) {
    out.exec = execMbarrierInitFence;
    return true;
  }
  if (op == "barrier" && ctx.has("cluster")) {
    if (!onlyModifiers(ctx, {"cluster", "arrive", "wait", "release", "relaxed", "acquire", "aligned"}, 0)) return true;
    if (ctx.has("arrive") == ctx.has("wait")) return ctx.invalid("is barrier.cluster.arrive or barrier.cluster.wait");
    if (!in.operands.empty()) return ctx.invalid("takes no operands");
    out.op = Op::ClusterBarrier;
    out.sub = ctx.has("wait") ? 1 : 0;
    return true;
  }
  if (op == "mapa" || op == "getctarank") {
    if (!onlyModifiers(ctx, {"shared::cluster", "u32", "u64"}, 0)) return true;
    bool wide = ctx.has("u64");
    if (wide == ctx.has("u32")) return ctx.invalid("needs .u32 or .u64");
    out.sub2 = ctx.has("shared::cluster") ? 0 : 1;
    out.accessBytes = wide ? 8 : 4;
    size_t operands = op == "mapa" ? 3 : 2;
    if (in.operands.size() != operands) return ctx.invalid(fmt::format("takes {} operands", operands));
    if (!ctx.addDst(in.operands[0]) || !ctx.addSrc(in.operands[1], wide ? DType::U64 : DType::U32)) return true;
    if (op == "mapa" && !ctx.addSrc(in.operands[2], DType::U32)) return true;
    out.exec = op == "mapa" ? execMapa : execGetctarank;
    return true;
  }
  if (op == "stmatrix" && ctx.has("m16n8")) {
    if (!ctx.has("trans") || !ctx.has("b8")) return ctx.invalid(".m16n8 stores .b8 elements and needs .trans");
    unsigned num = ctx.has("x4") ? 4 : ctx.has("x2") ? 2 : ctx.has("x1") ? 1 : 0;
    if (!num) return ctx.invalid("needs .x1, .x2 or .x4");
    if (!onlyModifiers(ctx, {"sync", "aligned", "m16n8", "x1", "x2", "x4", "trans", "shared", "shared::cta", "b8"}, 0))
      return true;
    if (in.operands.size() != 2) return ctx.invalid("takes an address and a register vector");
    Space space = ctx.has("shared") || ctx.has("shared::cta") ? Space::Shared : Space::Generic;
    if (!ctx.setAddress(in.operands[0], space) || !ctx.addSrc(in.operands[1], DType::B32)) return true;
    if (out.nsrc != num) return ctx.invalid(fmt::format("x{} needs {} registers", num, num));
    out.exec = execStmatrixM16n8;
    return true;
  }
  if (op == "setmaxnreg") {
    // Only a register-allocation hint to the emulator; ptxas checks the count too.
    if (in.operands.size() != 1 || in.operands[0].kind != ptx::Operand::Kind::Integer)
      return ctx.invalid("takes a register count, an integer constant");
    int64_t count = in.operands[0].intValue;
    if (count < 24 || count > 256 || count % 8 != 0)
      return ctx.invalid(fmt::format("register count {} is not a multiple of 8 in [24, 256]", count));
    out.op = Op::Nop;
    return true;
  }
  return false;
}

} // namespace ptxforge::emu
