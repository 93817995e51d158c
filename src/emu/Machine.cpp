// Memory translation with memcheck and racecheck, and fault reporting.
#include "emu/Machine.h"

#include "emu/Async.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>

namespace ptxforge::emu {

void Launch::report(Finding finding) {
  std::lock_guard<std::mutex> lock(findingsMutex);
  if (finding.fatal) {
    // Only the first fatal finding counts: the others are consequences.
    if (aborted.load(std::memory_order_relaxed)) return;
    aborted.store(true, std::memory_order_relaxed);
    findings.push_back(std::move(finding));
    return;
  }
  size_t nonFatal = 0;
  for (Finding &f : findings) {
    if (!f.fatal) ++nonFatal;
    if (!f.fatal && f.check == finding.check && f.line == finding.line) { // one per line and check
      // The same place again (other threads, or another warp): counted.
      if (f.column == finding.column && f.threads) {
        f.threads += finding.threads;
        for (std::string &where : finding.locations)
          if (f.locations.size() < Finding::kLocationsKept) f.locations.push_back(std::move(where));
      }
      return;
    }
  }
  if (nonFatal < checks.maxFindings) findings.push_back(std::move(finding));
}

std::string Finding::text() const {
  if (!threads) return message;
  std::string list;
  for (const std::string &where : locations) list += (list.empty() ? "" : ", ") + where;
  if (threads > locations.size()) list += ", ...";
  return fmt::format("{}; {} thread{}: {}", message, threads, threads == 1 ? "" : "s", list);
}

static std::string threadCoordinates(const Launch &launch, uint32_t linear) {
  uint32_t bx = launch.block.x, by = launch.block.y;
  return fmt::format("({},{},{})", linear % bx, (linear / bx) % by, linear / (bx * by));
}

std::string Warp::where(const Inst &inst, unsigned lane) const {
  size_t pc = static_cast<size_t>(&inst - program->code.data());
  std::string text = pc < program->text.size() ? program->text[pc] : std::string();
  return fmt::format("at line {} (`{}`) in thread {} of block ({},{},{})", inst.line, text,
                     threadCoordinates(*launch, index * kWarpSize + lane), cta->ctaid[0], cta->ctaid[1],
                     cta->ctaid[2]);
}

std::string Warp::thread(unsigned lane) const {
  return fmt::format("thread {} of block ({},{},{})", threadCoordinates(*launch, index * kWarpSize + lane),
                     cta->ctaid[0], cta->ctaid[1], cta->ctaid[2]);
}

void Warp::fault(const Inst &inst, unsigned lane, const char *check, const std::string &what) {
  Finding finding;
  finding.check = check;
  finding.fatal = true;
  finding.line = inst.line;
  finding.message = fmt::format("{}: {} {}", check, what, where(inst, lane));
  launch->report(std::move(finding));
}

namespace {

/// Describes `address` relative to the nearest allocation, for a memcheck report.
std::string describeGlobal(const Launch &launch, uint64_t address, uint32_t bytes) {
  const Allocation *nearest = nullptr;
  uint64_t bestDistance = ~uint64_t(0);
  for (const Allocation *a : launch.allocations) {
    uint64_t begin = a->base + a->accessibleBegin, end = a->base + a->accessibleEnd;
    uint64_t distance = address < begin ? begin - address : address + bytes > end ? address + bytes - end : 0;
    if (distance < bestDistance) bestDistance = distance, nearest = a;
  }
  if (!nearest || bestDistance > (uint64_t(1) << 20)) return "which is not inside any buffer";
  uint64_t begin = nearest->base + nearest->accessibleBegin, end = nearest->base + nearest->accessibleEnd;
  // Relative positions only: absolute addresses differ from run to run, and
  // the feedback a model gets should not.
  if (address < begin) return fmt::format("{} bytes before the start of a {}-byte buffer", begin - address, end - begin);
  if (address + bytes > end)
    return fmt::format("{} bytes past the end of a {}-byte buffer", address + bytes - end, end - begin);
  return fmt::format("at byte offset {} of a {}-byte buffer", address - begin, end - begin);
}

} // namespace

uint8_t *Warp::clusterShared(const Inst &inst, unsigned lane, uint64_t address, uint32_t bytes, bool write) {
  uint64_t rank = (address >> kClusterRankShift) - 1;
  uint64_t offset = address & kClusterOffsetMask;
  const char *verb = write ? "write" : "read";
  if (rank >= cta->clusterSize) {
    fault(inst, lane, "memcheck",
          fmt::format("distributed shared {} of {} bytes at shared::cluster address 0x{:x}, which names CTA rank {} of "
                      "a cluster of {}",
                      verb, bytes, address, rank, cta->clusterSize));
    return nullptr;
  }
  Cta *target = cta->clusterCta(static_cast<uint32_t>(rank));
  if (target->exited) {
    fault(inst, lane, "memcheck",
          fmt::format("distributed shared {} of {} bytes in CTA rank {} of the cluster, which has exited (a "
                      "barrier.cluster before it exits keeps its shared memory alive)",
                      verb, bytes, rank));
    return nullptr;
  }
  if (offset + bytes > target->shared->size()) {
    fault(inst, lane, "memcheck",
          fmt::format("out-of-bounds distributed shared {} of {} bytes at offset 0x{:x} of CTA rank {} (it has {} "
                      "bytes of shared memory)",
                      verb, bytes, offset, rank, target->shared->size()));
    return nullptr;
  }
  // Another CTA's shared memory: racecheck looks at each CTA's accesses to
  // its own (a barrier.cluster orders these); what is written here is written
  // for the owner's initcheck.
  if (write && launch->checks.initcheck)
    std::fill_n(target->sharedWritten->begin() + static_cast<ptrdiff_t>(offset), bytes, target->firstEpoch);
  return target->shared->data() + offset;
}

void Warp::acquire() {
  // After the atomic or strong load itself: if it observed another CTA's
  // atomic or flag, that CTA's publish (stamped before its operation) is seen.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  cta->acquiredClock = launch->crossCta->clock.load(std::memory_order_seq_cst);
}

namespace {
std::string ctaCoordinates(const Launch &launch, uint64_t linear) {
  return fmt::format("({},{},{})", linear % launch.grid.x, (linear / launch.grid.x) % launch.grid.y,
                     linear / (uint64_t(launch.grid.x) * launch.grid.y));
}
} // namespace

bool Warp::crossCtaAccess(const Inst &inst, unsigned lane, size_t allocation, uint64_t offset, uint32_t bytes,
                          bool write, bool atomic) {
  CrossCtaState &state = *launch->crossCta;
  CrossCtaState::Shadow &shadow = state.shadows[allocation];
  size_t first = offset / 4, last = (offset + bytes - 1) / 4;
  if (last >= shadow.count) return true;
  if (atomic || (inst.memorySync & kSyncStrong)) {
    // A synchronizing access: a release (or a strong store or atomic after a
    // gpu-scope fence) publishes this CTA's earlier writes. Acquires are
    // recorded after the operation (Warp::acquire).
    if (inst.memorySync & kSyncRelease) ++cta->fences;
    if ((write || atomic) && cta->fences > cta->publishedFences) {
      std::lock_guard<std::mutex> lock(state.mutex);
      uint64_t stamp = state.clock.fetch_add(1, std::memory_order_seq_cst);
      state.publishes[cta->linear].push_back({cta->fences, stamp});
      cta->publishedFences = cta->fences;
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    return true;
  }
  uint64_t mine = state.tag | ((cta->linear + 1) << 24);
  if (write) {
    uint64_t stamp = mine | std::min(cta->fences, CrossCtaState::kMaxFences);
    for (size_t word = first; word <= last; ++word) {
      std::atomic_ref<uint64_t>(shadow.words[word]).store(stamp, std::memory_order_relaxed);
      std::atomic_ref<uint32_t>(shadow.lines[word]).store(inst.line, std::memory_order_relaxed);
    }
    return true;
  }
  for (size_t word = first; word <= last; ++word) {
    uint64_t stamp = std::atomic_ref<uint64_t>(shadow.words[word]).load(std::memory_order_relaxed);
    if ((stamp >> 48) != (state.tag >> 48) || (stamp >> 24) == (mine >> 24)) continue; // older launch, or mine
    uint64_t writer = ((stamp >> 24) & 0xffffff) - 1;
    uint32_t fencesAtWrite = static_cast<uint32_t>(stamp & 0xffffff);
    // The first publish of the writer that covers the write (made after a
    // fence that followed it), and whether this CTA acquired after it.
    const char *missing = nullptr;
    {
      std::lock_guard<std::mutex> lock(state.mutex);
      auto it = state.publishes.find(writer);
      const CrossCtaState::Publish *cover = nullptr;
      if (it != state.publishes.end())
        for (const CrossCtaState::Publish &p : it->second)
          if (p.fences > fencesAtWrite) {
            cover = &p;
            break;
          }
      if (!cover)
        missing = "that block has not published it (a gpu-scope fence such as membar.gl or fence.acq_rel.gpu after "
                  "the write, then an atomic or a strong store such as st.release.gpu)";
      else if (cta->acquiredClock <= cover->clock)
        missing = "this block has not acquired it since that block published it (an atomic, or ld.acquire.gpu or "
                  "ld.volatile of the flag that block set, before this read)";
    }
    if (!missing) continue;
    uint32_t line = std::atomic_ref<uint32_t>(shadow.lines[word]).load(std::memory_order_relaxed);
    fault(inst, lane, "racecheck",
          fmt::format("cross-CTA read-after-write hazard on global memory: this read of {} bytes, {}, reads a word "
                      "that block {} wrote at line {} during this launch, and {}; blocks run in no fixed order on "
                      "a GPU,",
                      bytes, describeGlobal(*launch, launch->allocations[allocation]->base + offset, bytes),
                      ctaCoordinates(*launch, writer), line, missing));
    return false;
  }
  return true;
}

namespace {

/// initcheck's finding for a read (or atomic) of shared byte `address` that
/// no thread of the CTA wrote.
[[gnu::noinline, gnu::cold]] void reportUnwrittenShared(Warp &w, const Inst &inst, unsigned lane, uint64_t address,
                                                        bool atomic) {
  Finding finding;
  finding.check = "initcheck";
  finding.fatal = false;
  finding.line = inst.line;
  finding.message = fmt::format("initcheck: {} of shared memory that no thread of this CTA has written, at "
                                "shared address 0x{:x} (on a GPU it holds garbage) {}",
                                atomic ? "an atomic" : "a read", address, w.where(inst, lane));
  w.launch->report(std::move(finding));
}

/// racecheck's fatal finding for shared byte `address`, whose shadow `s`
/// shows another warp's access in this barrier interval.
[[gnu::noinline, gnu::cold]] void reportSharedRace(Warp &w, const Inst &inst, unsigned lane, uint64_t address,
                                                   bool write, const SharedAccessState &s) {
  const char *hazard;
  uint16_t otherWarp, otherLane;
  uint32_t otherLine;
  if (s.writeEpoch == w.cta->epoch && s.writerWarp != static_cast<uint16_t>(w.index)) {
    hazard = write ? "write-after-write" : "read-after-write";
    otherWarp = s.writerWarp, otherLane = s.writerLane, otherLine = s.writeLine;
  } else {
    hazard = "write-after-read";
    otherWarp = s.readerWarp == SharedRaceShadow::kSeveralWarps ? s.writerWarp : s.readerWarp;
    otherLane = s.readerLane, otherLine = s.readLine;
  }
  std::string other = s.readerWarp == SharedRaceShadow::kSeveralWarps && std::string_view(hazard) == "write-after-read"
                          ? fmt::format("threads of several other warps (line {})", otherLine)
                          : fmt::format("thread {} (line {})",
                                        threadCoordinates(*w.launch, otherWarp * kWarpSize + otherLane), otherLine);
  w.fault(inst, lane, "racecheck",
          fmt::format("shared-memory {} hazard at shared address 0x{:x}: this {} races with an access by {} "
                      "with no barrier between them,",
                      hazard, address, write ? "write" : "read", other));
}

/// initcheck of shared bytes [address, address + bytes) one by one: a read
/// (an atomic too: it reads first) of a byte no thread of this CTA wrote is
/// reported; every byte is written in this CTA afterwards.
void initcheckSharedBytes(Warp &w, const Inst &inst, unsigned lane, uint64_t address, uint32_t bytes, bool write,
                          bool atomic) {
  uint32_t *written = w.cta->sharedWritten->data() + address;
  const uint32_t mine = w.cta->firstEpoch;
  for (uint32_t i = 0; i < bytes; ++i) {
    if (written[i] == mine) continue;
    // On a GPU such a byte holds whatever the SM ran before.
    if (!write || atomic) reportUnwrittenShared(w, inst, lane, address + i, atomic);
    written[i] = mine; // reported once per byte
  }
}

} // namespace

bool Warp::silentSharedStore(const Inst &inst, unsigned lane, uint64_t address) const {
  if (!inst.storesSources) return false;
  const uint8_t *p = cta->shared->data() + address;
  for (unsigned i = 0; i < inst.nsrc; ++i) {
    uint64_t v = get(inst.src(i), lane); // (little-endian, as memory is)
    if (std::memcmp(p + i * inst.accessBytes, &v, inst.accessBytes) != 0) return false;
  }
  return true;
}

bool Warp::sharedLaneChecks(const Inst &inst, unsigned lane, uint64_t address, uint32_t bytes, bool write,
                            bool atomic) {
  if (launch->checks.initcheck) {
    const uint32_t mine = cta->firstEpoch;
    if (((address | bytes) & 3) == 0) [[likely]] {
      // Whole words: a word known written needs nothing; the others take the
      // bytes' path once, which leaves all four written.
      uint32_t *words = cta->sharedWordsWritten->data();
      for (uint64_t word = address >> 2, end = (address + bytes) >> 2; word < end; ++word)
        if (words[word] != mine) [[unlikely]] {
          initcheckSharedBytes(*this, inst, lane, word * 4, 4, write, atomic);
          words[word] = mine;
        }
    } else {
      initcheckSharedBytes(*this, inst, lane, address, bytes, write, atomic);
    }
  }
  if (launch->checks.racecheck && !atomic) {
    SharedRaceShadow::Access a;
    a.epoch = cta->epoch;
    a.warp = static_cast<uint16_t>(index);
    a.lane = static_cast<uint8_t>(lane);
    a.write = write;
    a.line = inst.line;
    SharedRaceShadow::Conflict conflict;
    if (!cta->shadow->access(address, bytes, a, conflict) && !(write && silentSharedStore(inst, lane, address)))
        [[unlikely]] {
      reportSharedRace(*this, inst, lane, conflict.address, write, conflict.state);
      return false;
    }
  }
  if (cta->async && !atomic &&
      !asyncSharedAccess(*this, inst, lane, static_cast<uint32_t>(address), bytes, write))
    return false;
  return true;
}

uint8_t *Warp::access(const Inst &inst, unsigned lane, Space space, uint64_t address, uint32_t bytes, bool write,
                      bool atomic) {
  const char *verb = write ? "write" : "read";
  uint64_t original = address;
  if (space == Space::Generic) {
    if (address >= kGlobalBase) space = Space::Global;
    else if (address - kSharedWindow < kWindowSize) space = Space::Shared, address -= kSharedWindow;
    else if (address - kLocalWindow < kWindowSize) space = Space::Local, address -= kLocalWindow;
    else if (address - kConstWindow < kWindowSize) space = Space::Const, address -= kConstWindow;
    else if (address - kParamWindow < kWindowSize) space = Space::Param, address -= kParamWindow;
    else {
      fault(inst, lane, "memcheck",
            fmt::format("invalid generic {} of {} bytes at 0x{:x}, which is in no state space (a null or "
                        "uninitialized pointer?)",
                        verb, bytes, original));
      return nullptr;
    }
  }
  if (bytes > 1 && (address & (bytes - 1)) != 0) {
    std::string where = space == Space::Global ? describeGlobal(*launch, address, bytes)
                                               : fmt::format("at 0x{:x}", original);
    fault(inst, lane, "memcheck",
          fmt::format("misaligned {} {} of {} bytes {} (must be {}-byte aligned)", spaceName(space), verb, bytes,
                      where, bytes));
    return nullptr;
  }
  switch (space) {
  case Space::Global: {
    const std::vector<Allocation *> &allocations = launch->allocations;
    auto it = std::upper_bound(allocations.begin(), allocations.end(), address,
                               [](uint64_t a, const Allocation *alloc) { return a < alloc->base; });
    if (it != allocations.begin()) {
      Allocation *a = *(it - 1);
      uint64_t offset = address - a->base;
      if (offset >= a->accessibleBegin && offset + bytes <= a->accessibleEnd) {
        if (launch->crossCta && !crossCtaAccess(inst, lane, size_t(it - 1 - allocations.begin()), offset, bytes, write,
                                                atomic))
          return nullptr;
        return a->bytes.data() + offset;
      }
    }
    fault(inst, lane, "memcheck",
          fmt::format("out-of-bounds global {} of {} bytes, {}", verb, bytes, describeGlobal(*launch, address, bytes)));
    return nullptr;
  }
  case Space::Shared: {
    std::vector<uint8_t> &shared = *cta->shared;
    if (address + bytes > shared.size() || address + bytes < address) {
      if ((address >> kClusterRankShift) != 0 && (address >> 32) == 0)
        return clusterShared(inst, lane, address, bytes, write);
      fault(inst, lane, "memcheck",
            fmt::format("out-of-bounds shared {} of {} bytes at shared address 0x{:x} (the CTA has {} bytes of "
                        "shared memory)",
                        verb, bytes, address, shared.size()));
      return nullptr;
    }
    if (!sharedLaneChecks(inst, lane, address, bytes, write, atomic)) return nullptr;
    return shared.data() + address;
  }
  case Space::Local:
    if (address + bytes > program->localBytes || address + bytes < address) {
      fault(inst, lane, "memcheck",
            fmt::format("out-of-bounds local {} of {} bytes at local address 0x{:x} (the thread has {} bytes of "
                        "local memory)",
                        verb, bytes, address, program->localBytes));
      return nullptr;
    }
    return local + size_t(lane) * program->localBytes + address;
  case Space::Const:
    if (write) {
      fault(inst, lane, "memcheck", fmt::format("write to the read-only .const space at 0x{:x}", address));
      return nullptr;
    }
    if (address + bytes > program->constBank.size() || address + bytes < address) {
      fault(inst, lane, "memcheck",
            fmt::format("out-of-bounds const read of {} bytes at const address 0x{:x} (the module has {} bytes of "
                        ".const data)",
                        bytes, address, program->constBank.size()));
      return nullptr;
    }
    return const_cast<uint8_t *>(program->constBank.data()) + address;
  case Space::Param:
    if (write) {
      fault(inst, lane, "memcheck", fmt::format("write to the kernel's read-only parameters at offset {}", address));
      return nullptr;
    }
    if (address + bytes > launch->paramBytes || address + bytes < address) {
      fault(inst, lane, "memcheck",
            fmt::format("out-of-bounds parameter read of {} bytes at offset {} (the kernel has {} bytes of "
                        "parameters)",
                        bytes, address, launch->paramBytes));
      return nullptr;
    }
    return const_cast<uint8_t *>(launch->params) + address;
  case Space::Generic: break;
  }
  return nullptr;
}

bool Warp::crossCtaLanes(const Inst &inst, LaneMask active, size_t allocation, const uint64_t *address,
                         uint32_t bytes, bool write) {
  CrossCtaState &state = *launch->crossCta;
  const CrossCtaState::Shadow &shadow = state.shadows[allocation];
  const uint64_t base = launch->allocations[allocation]->base;
  bool faulted = false;
  auto slow = [&](unsigned l) {
    if (!faulted && !crossCtaAccess(inst, l, allocation, address[l] - base, bytes, write, false)) faulted = true;
  };
  // Strong accesses publish or acquire, which crossCtaAccess handles; so
  // does every lane when the shadow does not cover the buffer.
  uint64_t hi = 0;
  forEachLane(active, [&](unsigned l) { hi = std::max(hi, address[l]); });
  if ((inst.memorySync & kSyncStrong) || (hi - base + bytes - 1) / 4 >= shadow.count) {
    forEachLane(active, slow);
    return !faulted;
  }
  const uint64_t mine = state.tag | ((cta->linear + 1) << 24);
  if (write) {
    // A plain write stamps its words with this CTA and its fence count.
    const uint64_t stamp = mine | std::min(cta->fences, CrossCtaState::kMaxFences);
    forEachLane(active, [&](unsigned l) {
      uint64_t offset = address[l] - base;
      for (size_t word = offset / 4, last = (offset + bytes - 1) / 4; word <= last; ++word) {
        std::atomic_ref<uint64_t>(shadow.words[word]).store(stamp, std::memory_order_relaxed);
        std::atomic_ref<uint32_t>(shadow.lines[word]).store(inst.line, std::memory_order_relaxed);
      }
    });
    return true;
  }
  // A plain read: only a word another CTA wrote in this launch needs the
  // publish/acquire test (crossCtaAccess, for that lane).
  forEachLane(active, [&](unsigned l) {
    if (faulted) return;
    uint64_t offset = address[l] - base;
    for (size_t word = offset / 4, last = (offset + bytes - 1) / 4; word <= last; ++word) {
      uint64_t stamp = std::atomic_ref<uint64_t>(shadow.words[word]).load(std::memory_order_relaxed);
      if ((stamp >> 48) != (state.tag >> 48) || (stamp >> 24) == (mine >> 24)) continue;
      slow(l);
      return;
    }
  });
  return !faulted;
}

bool Warp::sharedLanesInOrder(const Inst &inst, LaneMask active, const uint64_t *address, uint64_t window,
                              uint32_t bytes, bool write) {
  // Lanes in order, as access() takes them, except that a lane at the
  // same address as the lane before it (a broadcast) finds the bytes
  // written and their shadows this warp's: it would change nothing but
  // the writer lane of a write, which the last lane of the run sets.
  bool faulted = false, inRun = false;
  uint64_t previous = 0;
  int pendingLast = -1; // a write's last lane of the current run, not yet checked
  forEachLane(active, [&](unsigned l) {
    if (faulted) return;
    uint64_t at = address[l] - window;
    if (inRun && at == previous) {
      if (write) pendingLast = static_cast<int>(l);
      return;
    }
    if (pendingLast >= 0 && !sharedLaneChecks(inst, unsigned(pendingLast), previous, bytes, write, false)) {
      faulted = true;
      return;
    }
    pendingLast = -1;
    if (!sharedLaneChecks(inst, l, at, bytes, write, false)) faulted = true;
    inRun = true, previous = at;
  });
  if (!faulted && pendingLast >= 0 && !sharedLaneChecks(inst, unsigned(pendingLast), previous, bytes, write, false))
    faulted = true;
  return !faulted;
}

Warp::AccessResult Warp::sharedWordLanes(const Inst &inst, LaneMask active, const uint64_t *address, uint64_t window,
                                         uint32_t bytes, bool write) {
  const uint32_t words = bytes >> 2;
  if (launch->checks.initcheck) {
    uint32_t *wordsWritten = cta->sharedWordsWritten->data();
    const uint32_t mine = cta->firstEpoch;
    if (write) {
      // A write reports nothing: it marks its words (and their bytes) written.
      uint32_t *bytesWritten = cta->sharedWritten->data();
      forLanes(active, [&](unsigned l) {
        const uint64_t first = (address[l] - window) >> 2;
        for (uint64_t word = first; word < first + words; ++word)
          if (wordsWritten[word] != mine) {
            std::fill_n(bytesWritten + word * 4, 4, mine);
            wordsWritten[word] = mine;
          }
      });
    } else {
      // A read of words all known written reports nothing; any other goes
      // lane by lane (the findings, in the per-lane order).
      uint32_t unwritten = 0;
      forLanes(active, [&](unsigned l) {
        const uint64_t first = (address[l] - window) >> 2;
        for (uint64_t word = first; word < first + words; ++word) unwritten |= wordsWritten[word] ^ mine;
      });
      if (unwritten) return kSlowPath;
    }
  }
  if (launch->checks.racecheck) {
    SharedRaceShadow &shadow = *cta->shadow;
    SharedRaceShadow::Access a;
    a.epoch = cta->epoch;
    a.warp = static_cast<uint16_t>(index);
    a.write = write;
    a.line = inst.line;
    SharedRaceShadow::Conflict conflict;
    // Lanes in order. A read at the address of the lane before it (a
    // broadcast) finds its words read by this warp in this interval already:
    // it would change nothing. (A write would change the writer lane.)
    uint64_t previous = ~uint64_t(0);
    for (LaneMask rest = active; rest; rest &= rest - 1) {
      const unsigned l = static_cast<unsigned>(std::countr_zero(rest));
      if (!write && address[l] == previous) continue;
      previous = address[l];
      a.lane = static_cast<uint8_t>(l);
      if (!shadow.accessWords((address[l] - window) >> 2, words, a, conflict) &&
          !(write && silentSharedStore(inst, l, address[l] - window))) [[unlikely]] {
        reportSharedRace(*this, inst, l, conflict.address, write, conflict.state);
        return kFaulted;
      }
    }
  }
  return kDone;
}

Warp::AccessResult Warp::accessLanes(const Inst &inst, LaneMask active, Space space, const uint64_t *address,
                                     uint32_t bytes, bool write, uint8_t **out) {
  if (!active) return kDone;
  // The span and alignment of the warp's addresses.
  uint64_t lo = ~uint64_t(0), hi = 0, bits = 0;
  if (active == ~LaneMask(0)) {
    for (unsigned l = 0; l < kWarpSize; ++l) {
      uint64_t a = address[l];
      lo = a < lo ? a : lo;
      hi = a > hi ? a : hi;
      bits |= a;
    }
  } else {
    forEachLane(active, [&](unsigned l) {
      uint64_t a = address[l];
      lo = a < lo ? a : lo;
      hi = a > hi ? a : hi;
      bits |= a;
    });
  }
  if (bytes > 1 && (bits & (bytes - 1)) != 0) return kSlowPath;
  uint64_t window = 0; // subtracted from a generic address
  if (space == Space::Generic) {
    if (lo >= kGlobalBase) space = Space::Global;
    else if (lo - kSharedWindow < kWindowSize && hi - kSharedWindow < kWindowSize) space = Space::Shared, window = kSharedWindow;
    else if (lo - kLocalWindow < kWindowSize && hi - kLocalWindow < kWindowSize) space = Space::Local, window = kLocalWindow;
    else if (lo - kConstWindow < kWindowSize && hi - kConstWindow < kWindowSize) space = Space::Const, window = kConstWindow;
    else if (lo - kParamWindow < kWindowSize && hi - kParamWindow < kWindowSize) space = Space::Param, window = kParamWindow;
    else return kSlowPath;
    lo -= window, hi -= window;
  }
  // In bounds when [lo, hi + bytes) fits `size` (without wrapping around).
  auto fits = [&](uint64_t size) { return hi < size && bytes <= size - hi; };
  switch (space) {
  case Space::Global: {
    const std::vector<Allocation *> &allocations = launch->allocations;
    auto it = std::upper_bound(allocations.begin(), allocations.end(), lo,
                               [](uint64_t a, const Allocation *alloc) { return a < alloc->base; });
    if (it == allocations.begin()) return kSlowPath;
    Allocation *a = *(it - 1);
    if (lo - a->base < a->accessibleBegin || hi - a->base >= a->accessibleEnd ||
        bytes > a->accessibleEnd - (hi - a->base))
      return kSlowPath;
    uint8_t *data = a->bytes.data();
    uint64_t base = a->base;
    if (launch->crossCta && !crossCtaLanes(inst, active, size_t(it - 1 - allocations.begin()), address, bytes, write))
      return kFaulted;
    forLanes(active, [&](unsigned l) { out[l] = data + (address[l] - base); });
    return kDone;
  }
  case Space::Shared: {
    std::vector<uint8_t> &shared = *cta->shared;
    if (!fits(shared.size())) return kSlowPath; // a cluster rank in it, or out of bounds
    if (cta->async) {
      bool faulted = false;
      forEachLane(active, [&](unsigned l) {
        if (!faulted && !sharedLaneChecks(inst, l, address[l] - window, bytes, write, false)) faulted = true;
      });
      if (faulted) return kFaulted;
    } else if (launch->checks.initcheck || launch->checks.racecheck) {
      // Whole words (the common case) for the warp at once.
      const AccessResult words = (bytes & 3) == 0 ? sharedWordLanes(inst, active, address, window, bytes, write)
                                                  : kSlowPath;
      if (words == kFaulted) return kFaulted;
      if (words == kSlowPath && !sharedLanesInOrder(inst, active, address, window, bytes, write)) return kFaulted;
    }
    uint8_t *data = shared.data();
    forLanes(active, [&](unsigned l) { out[l] = data + (address[l] - window); });
    return kDone;
  }
  case Space::Local: {
    size_t frame = program->localBytes;
    if (!fits(frame)) return kSlowPath;
    forLanes(active, [&](unsigned l) { out[l] = local + l * frame + (address[l] - window); });
    return kDone;
  }
  case Space::Const: {
    if (write || !fits(program->constBank.size())) return kSlowPath;
    uint8_t *data = const_cast<uint8_t *>(program->constBank.data());
    forLanes(active, [&](unsigned l) { out[l] = data + (address[l] - window); });
    return kDone;
  }
  case Space::Param: {
    if (write || !fits(launch->paramBytes)) return kSlowPath;
    uint8_t *data = const_cast<uint8_t *>(launch->params);
    forLanes(active, [&](unsigned l) { out[l] = data + (address[l] - window); });
    return kDone;
  }
  case Space::Generic: break;
  }
  return kSlowPath;
}

} // namespace ptxforge::emu
