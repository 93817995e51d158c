// Warp scheduling and control flow.
//
// Divergence: every lane has its own program counter; a warp executes the
// group of runnable lanes with the smallest pc, and lanes that meet at a pc
// run together again. For the layouts nvcc and models produce (branches
// forward to a join, loops closed by a backward branch) this reconverges at
// the immediate post-dominator, as the SIMT stack of the hardware does, with
// no control-flow analysis. A warp collective (.sync with a membermask) waits
// until every live lane of its mask has arrived, so lanes that took a longer
// path (a call, a cold block placed at the end) are waited for; a CTA barrier
// blocks lanes until all live threads of the CTA have arrived.
#include "emu/Machine.h"

#include "emu/Async.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

namespace ptxforge::emu {

namespace {

/// One CTA's buffers, which a host thread reuses across the CTAs it runs.
struct CtaBuffers {
  std::vector<uint64_t> regs;
  std::vector<uint32_t> written;
  std::vector<uint32_t> derived;
  std::vector<uint8_t> local;
  std::vector<uint8_t> shared;
  SharedRaceShadow shadow;
  std::vector<uint32_t> sharedWritten;
  std::vector<uint32_t> sharedWordsWritten;
  std::vector<Warp> warps;
  AsyncState async; ///< for programs that use mbarriers or bulk copies
  Cta cta;
};

/// What one host thread reuses across the CTAs (or clusters of CTAs) it runs.
struct HostThread {
  std::vector<std::unique_ptr<CtaBuffers>> ctas; ///< one per CTA of a cluster (stable addresses)
  std::vector<Cta *> cluster;                     ///< their Cta by rank, for a cluster
  uint32_t epoch = 0;
  CtaBuffers &buffers(size_t rank) {
    while (ctas.size() <= rank) ctas.push_back(std::make_unique<CtaBuffers>());
    return *ctas[rank];
  }
  /// Bytes its buffers hold (about).
  size_t footprint() const {
    size_t bytes = 0;
    for (const std::unique_ptr<CtaBuffers> &b : ctas)
      bytes += b->regs.capacity() * 8 + (b->written.capacity() + b->derived.capacity()) * 4 + b->local.capacity() +
               b->shared.capacity() + b->shadow.footprint() +
               (b->sharedWritten.capacity() + b->sharedWordsWritten.capacity()) * 4;
    return bytes;
  }
};

/// HostThreads outlive their launch: the next launch takes one back with its
/// buffers (registers, shared memory and its shadows) allocated and touched,
/// instead of faulting in and clearing megabytes per launch. Nothing they
/// hold from before counts as state: CTA setup refills shared and local
/// memory and the initcheck masks, a register reads as zero until written,
/// and the shadows' epochs go on from the HostThread's counter, so that no
/// entry of an earlier launch is current.
class HostThreadPool {
public:
  std::unique_ptr<HostThread> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (idle_.empty()) return std::make_unique<HostThread>();
    Idle last = std::move(idle_.back());
    idle_.pop_back();
    bytes_ -= last.bytes;
    return std::move(last.host);
  }
  void give(std::unique_ptr<HostThread> host) {
    // Kept while its epochs are far from wrapping around, and while the pool
    // holds little memory (the rest is freed, as before there was a pool).
    size_t bytes = host->footprint();
    if (host->epoch > kMaxEpoch) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes_ + bytes > kMaxBytes) return;
    bytes_ += bytes;
    idle_.push_back({std::move(host), bytes});
  }

private:
  static constexpr uint32_t kMaxEpoch = 1u << 30;
  static constexpr size_t kMaxBytes = size_t(256) << 20;
  struct Idle {
    std::unique_ptr<HostThread> host;
    size_t bytes = 0;
  };
  std::mutex mutex_;
  std::vector<Idle> idle_;
  size_t bytes_ = 0;
};

HostThreadPool &hostThreadPool() {
  static HostThreadPool *pool = new HostThreadPool; // never destroyed: launches may run at exit
  return *pool;
}

/// Where a CTA sits in its cluster (a cluster of one without a cluster launch).
struct ClusterPlace {
  uint32_t ctaid[3] = {0, 0, 0};     ///< %cluster_ctaid
  uint32_t dim[3] = {1, 1, 1};       ///< %cluster_nctaid
  uint32_t id[3] = {0, 0, 0};        ///< %clusterid
  uint32_t count[3] = {1, 1, 1};     ///< %nclusterid
  uint32_t rank = 0, size = 1;
};

/// The barrier id of lanes blocked at barrier.cluster.wait (CTA barriers are 0..15).
constexpr uint32_t kClusterBarrierId = 0x8000;
/// The barrier id of lanes waiting at wgmma.mma_async for their warpgroup.
constexpr uint32_t kWarpgroupBarrierId = 0x8001;

/// Fills `bytes` with garbage derived from `seed` (8 bytes per hash).
void fillGarbage(uint8_t *out, size_t bytes, uint64_t seed) {
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t v = mixBits(seed + i);
    std::memcpy(out + i, &v, 8);
  }
  if (i < bytes) {
    uint64_t v = mixBits(seed + i);
    std::memcpy(out + i, &v, bytes - i);
  }
}

} // namespace

uint64_t neverWrittenValue(const Warp &w, uint32_t slot, unsigned lane) {
  // A GPU register that no instruction wrote holds what the last warp on
  // those registers left there. Reading it as zero made a kernel that never
  // initializes its accumulator correct here and wrong on a GPU; the garbage
  // is fixed per launch, CTA, warp, register and lane (every read of it gives
  // the same value) and differs between launches. One exponent bit of each
  // reading is clear (bf16 halves: 7, 23; f16 halves: 10, 26; f32: 23; f64:
  // 52), so that the garbage is finite, of any magnitude: a kernel that
  // computes with it and throws the result away (x - x, x * 0) stays correct.
  constexpr uint64_t kFinite =
      ~((uint64_t{1} << 7) | (uint64_t{1} << 10) | (uint64_t{1} << 23) | (uint64_t{1} << 26) | (uint64_t{1} << 52));
  const uint64_t base = w.launch->salt ^ mixBits((w.cta->linear << 24) ^ (uint64_t(w.index) << 16) ^ slot);
  return mixBits(base + lane) & kFinite;
}

namespace {

class WarpRunner {
public:
  explicit WarpRunner(Warp &warp) : w_(warp), p_(*warp.program), code_(p_.code.data()) {}
  ~WarpRunner() { flushCounters(); }

  /// Runs until every live lane is blocked at a CTA barrier or has exited.
  void run();

private:
  bool select();
  void storeGroupPc(uint32_t pc) {
    forEachLane(cur_, [&](unsigned l) { w_.pc[l] = pc; });
  }
  /// Lanes of `active` that never wrote `slot` go to the cold path (a
  /// finding, and the value reads as garbage); the common case is one test.
  /// `column` and `use` say where and how the value is used, for the report.
  void checkSlot(const Inst &in, uint32_t slot, LaneMask active, uint16_t column, const char *use) {
    if (active & ~w_.written[slot]) [[unlikely]]
      unwrittenSlot(in, slot, active, column, use);
  }
  [[gnu::noinline]] void unwrittenSlot(const Inst &in, uint32_t slot, LaneMask active, uint16_t column,
                                       const char *use);
  /// A use that does not matter yet: the lanes of `active` that never wrote
  /// `slot` read garbage and are returned, for the destinations to carry on.
  LaneMask passSlot(const Inst &in, uint32_t slot, LaneMask active) {
    LaneMask missing = active & ~w_.written[slot];
    if (missing) [[unlikely]]
      return passUnwritten(in, slot, missing);
    return 0;
  }
  [[gnu::noinline]] LaneMask passUnwritten(const Inst &in, uint32_t slot, LaneMask missing);
  /// Gives the `missing` lanes that never wrote `slot` (and hold no value
  /// computed from such a register) the garbage a GPU's register would hold.
  void fillUnwritten(uint32_t slot, LaneMask missing);
  /// What the instruction's use of each operand is, for the report.
  static const char *useOf(const Inst &in) {
    switch (in.op) {
    case Op::Exec:
      return in.accessBytes || in.addrSlot != kNoSlot || in.space != Space::Generic ? "a store" : "a comparison";
    case Op::Bar: return "a barrier";
    case Op::WarpSync: return "a warp collective";
    default: return "an instruction that needs it defined";
    }
  }
  /// initcheck of an instruction whose every source matters (and of every
  /// address): a never-written register is a finding.
  void initcheck(const Inst &in, LaneMask active) {
    const char *use = useOf(in);
    for (unsigned i = in.ndst; i < unsigned(in.ndst) + in.nsrc; ++i)
      checkSlot(in, in.ops[i].slot, active, in.ops[i].column, use);
    addressCheck(in, active);
  }
  void addressCheck(const Inst &in, LaneMask active) {
    if (in.addrSlot != kNoSlot) checkSlot(in, in.addrSlot, active, in.addrColumn, "an address");
    if (in.addrSlot2 != kNoSlot) checkSlot(in, in.addrSlot2, active, in.addrColumn, "an address");
  }
  /// initcheck of a data instruction: sinks as initcheck(); otherwise
  /// never-written sources pass on (the lanes returned) to the destinations.
  LaneMask dataInitcheck(const Inst &in, LaneMask active) {
    if (in.initSink) {
      initcheck(in, active);
      return 0;
    }
    LaneMask undefined = 0;
    for (unsigned i = in.ndst; i < unsigned(in.ndst) + in.nsrc; ++i) undefined |= passSlot(in, in.ops[i].slot, active);
    addressCheck(in, active);
    return undefined;
  }
  /// The destinations are written by the lanes of `active`, except that
  /// those in `undefined` computed them from never-written values.
  void markWritten(const Inst &in, LaneMask active, LaneMask undefined = 0) {
    if (!undefined) [[likely]] {
      for (unsigned i = 0; i < in.ndst; ++i) w_.written[in.ops[i].slot] |= active;
      return;
    }
    for (unsigned i = 0; i < in.ndst; ++i) {
      uint32_t slot = in.ops[i].slot;
      w_.written[slot] = (w_.written[slot] | active) & ~undefined;
      w_.derived[slot] = (w_.derived[slot] & ~active) | undefined;
    }
  }
  void budget();
  void flushCounters() {
    w_.launch->steps.fetch_add(sinceCheck_, std::memory_order_relaxed);
    w_.launch->threadInstructions.fetch_add(threadSteps_, std::memory_order_relaxed);
    w_.steps += sinceCheck_;
    sinceCheck_ = threadSteps_ = 0;
  }
  void refreshClocks();
  /// An mbarrier wait (kept out of run()'s body: only async programs have
  /// them); false when the warp stops, to let the CTA's other warps run.
  [[gnu::noinline]] bool wait(const Inst &in, LaneMask active);
  /// barrier.cluster.arrive/wait: 0 to go on with the next instruction, 1
  /// when lanes now wait (select again), 2 after a fatal finding.
  [[gnu::noinline]] int clusterBarrier(const Inst &in, LaneMask active);
  /// wgmma.mma_async: the warp waits for its warpgroup (1), or 2 after a finding.
  [[gnu::noinline]] int wgmma(const Inst &in, LaneMask active);

  Warp &w_;
  const Program &p_;
  const Inst *code_;
  LaneMask cur_ = 0;
  uint32_t curLanes_ = 0; ///< popcount(cur_), kept with it (counted per instruction)
  uint32_t pc_ = 0;
  uint32_t nextWait_ = kNoPc;
  bool forced_ = false;
  uint64_t sinceCheck_ = 0;
  uint64_t threadSteps_ = 0;
};

bool WarpRunner::select() {
  LaneMask runnable = w_.live & ~w_.blocked;
  if (!runnable) {
    cur_ = 0;
    curLanes_ = 0;
    return false;
  }
  LaneMask unparked = runnable & ~w_.parked;
  LaneMask pool = unparked ? unparked : runnable;
  uint32_t minPc = kNoPc;
  forEachLane(pool, [&](unsigned l) { minPc = std::min(minPc, w_.pc[l]); });
  LaneMask group = 0;
  uint32_t next = kNoPc;
  forEachLane(runnable, [&](unsigned l) {
    if (w_.pc[l] == minPc) group |= 1u << l;
    else if (w_.pc[l] > minPc) next = std::min(next, w_.pc[l]);
  });
  forced_ = unparked == 0;
  w_.parked &= ~group;
  cur_ = group;
  curLanes_ = static_cast<uint32_t>(std::popcount(group));
  pc_ = minPc;
  nextWait_ = next;
  return true;
}

LaneMask WarpRunner::passUnwritten(const Inst &in, uint32_t slot, LaneMask missing) {
  if (w_.cta->async && !w_.cta->async->wgmmaPending.empty() && wgmmaPendingRead(w_, in, slot, missing)) return 0;
  // They stay unwritten, so that a use that matters still reports.
  fillUnwritten(slot, missing);
  return missing;
}

void WarpRunner::fillUnwritten(uint32_t slot, LaneMask missing) {
  uint64_t *row = w_.row(slot);
  forEachLane(missing & ~w_.derived[slot], [&](unsigned l) { row[l] = neverWrittenValue(w_, slot, l); });
}

void WarpRunner::unwrittenSlot(const Inst &in, uint32_t slot, LaneMask active, uint16_t column, const char *use) {
    LaneMask missing = active & ~w_.written[slot];
    if (w_.cta->async && !w_.cta->async->wgmmaPending.empty() && wgmmaPendingRead(w_, in, slot, missing)) return;
    if (w_.launch->checks.initcheck) {
      const std::string &name = slot < p_.slotNames.size() ? p_.slotNames[slot] : std::string();
      Finding finding;
      finding.check = "initcheck";
      finding.fatal = false;
      finding.line = in.line;
      finding.column = column;
      size_t pc = static_cast<size_t>(&in - p_.code.data());
      finding.message = fmt::format("initcheck: {} has no value here: no instruction wrote it (or it was computed "
                                    "from such a register) before it reaches {} at line {} (`{}`); it holds "
                                    "garbage, here as on a GPU",
                                    name.empty() ? std::string("a register") : name, use, in.line,
                                    pc < p_.text.size() ? p_.text[pc] : std::string());
      forEachLane(missing, [&](unsigned l) {
        if (finding.locations.size() < Finding::kLocationsKept) finding.locations.push_back(w_.thread(l));
      });
      finding.threads = static_cast<uint64_t>(std::popcount(missing));
      w_.launch->report(std::move(finding));
    }
    fillUnwritten(slot, missing);
    w_.written[slot] |= missing;
    w_.derived[slot] &= ~missing;
}

void WarpRunner::refreshClocks() {
  uint64_t now = w_.launch->steps.load(std::memory_order_relaxed) + w_.steps;
  uint64_t ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
  for (unsigned l = 0; l < kWarpSize; ++l) {
    w_.row(p_.specialSlot(Special::Clock))[l] = now & 0xffffffffu;
    w_.row(p_.specialSlot(Special::Clock64))[l] = now;
    w_.row(p_.specialSlot(Special::GlobalTimer))[l] = ns;
  }
}

void WarpRunner::budget() {
  Launch &launch = *w_.launch;
  flushCounters();
  uint64_t total = launch.steps.load(std::memory_order_relaxed);
  const Inst &in = code_[pc_];
  if (total > launch.checks.stepBudget) {
    w_.fault(in, static_cast<unsigned>(std::countr_zero(cur_ ? cur_ : 1u)), "timeout",
             fmt::format("the launch ran past its budget of {} warp-instructions (an infinite loop?); last",
                         launch.checks.stepBudget));
  } else if (launch.hasDeadline && std::chrono::steady_clock::now() > launch.deadline) {
    w_.fault(in, static_cast<unsigned>(std::countr_zero(cur_ ? cur_ : 1u)), "timeout",
             fmt::format("the launch ran past its deadline of {} ms (an infinite loop?); last",
                         launch.checks.timeoutMs));
  }
}

bool WarpRunner::wait(const Inst &in, LaneMask active) {
  if (active) {
    initcheck(in, active);
    in.exec(w_, in, active);
    markWritten(in, active);
    if (w_.aborted()) return false;
  }
  ++pc_;
  if (!w_.yield) return true;
  // The wait failed for some lane: its result is false, and the warps that
  // would complete the phase get to run before it asks again.
  w_.yield = false;
  storeGroupPc(pc_);
  return false;
}

int WarpRunner::clusterBarrier(const Inst &in, LaneMask active) {
  if (in.sub == 0) { // arrive
    if (LaneMask again = active & (w_.clusterArrived | w_.clusterPassed)) {
      w_.fault(in, static_cast<unsigned>(std::countr_zero(again)), "synccheck",
               "barrier.cluster.arrive again before barrier.cluster.wait (each thread alternates arrive and wait)");
      return 2;
    }
    w_.clusterArrived |= active;
    return 0;
  }
  if (LaneMask never = active & ~(w_.clusterArrived | w_.clusterPassed)) {
    w_.fault(in, static_cast<unsigned>(std::countr_zero(never)), "synccheck",
             "barrier.cluster.wait with no barrier.cluster.arrive of this thread before it");
    return 2;
  }
  // Lanes whose phase completed since they arrived go on; the others wait.
  w_.clusterPassed &= ~active;
  LaneMask block = active & w_.clusterArrived;
  if (!block) return 0;
  forEachLane(block, [&](unsigned l) {
    w_.barrierId[l] = kClusterBarrierId;
    w_.barrierPc[l] = pc_;
  });
  w_.blocked |= block;
  forEachLane(cur_, [&](unsigned l) { w_.pc[l] = pc_ + 1; });
  return 1;
}

int WarpRunner::wgmma(const Inst &in, LaneMask active) {
  if (active != w_.live) {
    w_.fault(in, static_cast<unsigned>(std::countr_zero(active ? active : cur_)), "synccheck",
             fmt::format("wgmma.mma_async.sync.aligned executed by lanes 0x{:08x} of a warp whose live lanes are "
                         "0x{:08x}: every thread of the warpgroup must execute it together",
                         active, w_.live));
    return 2;
  }
  initcheck(in, active);
  forEachLane(active, [&](unsigned l) {
    w_.barrierId[l] = kWarpgroupBarrierId;
    w_.barrierPc[l] = pc_;
  });
  w_.blocked |= active;
  forEachLane(cur_, [&](unsigned l) { w_.pc[l] = pc_ + 1; });
  return 1;
}

void WarpRunner::run() {
  if (!select()) return;
  const std::vector<CallInfo> &calls = p_.calls;
  for (;;) {
    threadSteps_ += curLanes_;
    if (++sinceCheck_ >= 4096) {
      budget();
      if (w_.aborted()) return;
    }
    const Inst &in = code_[pc_];
    LaneMask active = cur_;
    if (in.guard != kNoSlot) {
      checkSlot(in, in.guard, cur_, in.guardColumn, "a guard predicate");
      // Every lane's predicate bit, then the group's: a counted loop over the
      // whole warp costs less than visiting the group's lanes one by one.
      const uint64_t *g = w_.row(in.guard);
      LaneMask bits = 0;
      for (unsigned l = 0; l < kWarpSize; ++l) bits |= static_cast<LaneMask>(g[l] & 1) << l;
      active = (in.guardNegated ? ~bits : bits) & cur_;
    }
    switch (in.op) {
    case Op::Exec:
      if (active) {
        if (in.flags & kReadsClock) refreshClocks();
        LaneMask undefined = dataInitcheck(in, active);
        in.exec(w_, in, active);
        markWritten(in, active, undefined);
        if (w_.aborted()) return;
      }
      ++pc_;
      break;
    case Op::Nop: ++pc_; break;
    case Op::MbarrierWait:
      if (!wait(in, active)) return;
      break;
    case Op::Wgmma:
    case Op::ClusterBarrier: {
      int next = in.op == Op::Wgmma ? wgmma(in, active) : clusterBarrier(in, active);
      if (next == 2) return;
      if (next == 1) {
        if (!select()) return;
        continue;
      }
      ++pc_;
      break;
    }
    case Op::Bra:
      if (active == cur_) {
        storeGroupPc(in.target);
      } else if (active == 0) {
        ++pc_;
        break;
      } else {
        forEachLane(active, [&](unsigned l) { w_.pc[l] = in.target; });
        forEachLane(cur_ & ~active, [&](unsigned l) { w_.pc[l] = pc_ + 1; });
      }
      if (!select()) return;
      continue;
    case Op::Exit:
      w_.live &= ~active;
      if (active == cur_) {
        if (!select()) return;
        continue;
      }
      cur_ &= ~active;
      curLanes_ = static_cast<uint32_t>(std::popcount(cur_));
      ++pc_;
      break;
    case Op::Call: {
      const CallInfo &call = calls[in.aux];
      size_t frame = p_.localBytes;
      forEachLane(active, [&](unsigned l) {
        uint8_t *local = w_.local + l * frame;
        for (const CallInfo::Copy &copy : call.arguments) std::memmove(local + copy.to, local + copy.from, copy.bytes);
        w_.callStack[l].push_back(pc_);
        w_.pc[l] = in.target;
      });
      forEachLane(cur_ & ~active, [&](unsigned l) { w_.pc[l] = pc_ + 1; });
      if (!select()) return;
      continue;
    }
    case Op::Ret: {
      size_t frame = p_.localBytes;
      bool bad = false;
      forEachLane(active, [&](unsigned l) {
        if (w_.callStack[l].empty()) {
          bad = true;
          return;
        }
        uint32_t callPc = w_.callStack[l].back();
        w_.callStack[l].pop_back();
        uint8_t *local = w_.local + l * frame;
        for (const CallInfo::Copy &copy : calls[code_[callPc].aux].results)
          std::memmove(local + copy.to, local + copy.from, copy.bytes);
        w_.pc[l] = callPc + 1;
      });
      if (bad) {
        w_.fault(in, static_cast<unsigned>(std::countr_zero(active)), "invalid", "ret with no caller");
        return;
      }
      forEachLane(cur_ & ~active, [&](unsigned l) { w_.pc[l] = pc_ + 1; });
      if (!select()) return;
      continue;
    }
    case Op::Bar: {
      if (active) {
        initcheck(in, active);
        const uint64_t *id = w_.row(in.src(0).slot);
        const Operand *predicate = in.sub ? &in.src(in.nsrc - 1) : nullptr;
        bool arriveOnly = in.flags & kBarArrive;
        forEachLane(active, [&](unsigned l) {
          uint32_t pred = predicate ? static_cast<uint32_t>(w_.get(*predicate, l) & 1) : 0;
          w_.barrierId[l] = static_cast<uint32_t>(id[l] & 0xffff) | (pred << 16) | (arriveOnly ? 1u << 17 : 0);
          w_.barrierPc[l] = pc_;
        });
        if (arriveOnly) {
          w_.cta->arrivals.push_back({static_cast<uint32_t>(id[std::countr_zero(active)] & 0xffff),
                                      static_cast<uint32_t>(std::popcount(active))});
        } else {
          w_.blocked |= active;
        }
      }
      forEachLane(cur_, [&](unsigned l) { w_.pc[l] = pc_ + 1; });
      if (in.flags & kBarArrive || active == 0) {
        ++pc_;
        break;
      }
      if (!select()) return;
      continue;
    }
    case Op::WarpSync: {
      // The membermask is the last source operand.
      unsigned first = static_cast<unsigned>(std::countr_zero(cur_));
      initcheck(in, cur_);
      LaneMask member = static_cast<LaneMask>(w_.get(in.src(in.nsrc - 1), first));
      LaneMask required = member & w_.live;
      if (required & ~cur_) {
        if (!forced_) {
          w_.parked |= cur_;
          storeGroupPc(pc_);
          if (!select()) return;
          continue;
        }
        LaneMask missing = required & ~cur_;
        w_.fault(in, first, "synccheck",
                 fmt::format("warp collective with membermask 0x{:08x} waits for lanes 0x{:08x}, which are blocked "
                             "at a CTA barrier or took another path (deadlock on a GPU)",
                             member, missing));
        return;
      }
      if (active & ~member) {
        w_.fault(in, static_cast<unsigned>(std::countr_zero(active & ~member)), "synccheck",
                 fmt::format("lane executes a warp collective whose membermask 0x{:08x} does not include it",
                             member));
        return;
      }
      if (active) {
        in.exec(w_, in, active);
        markWritten(in, active);
        if (w_.aborted()) return;
      }
      ++pc_;
      break;
    }
    case Op::Trap:
      if (active) {
        w_.fault(in, static_cast<unsigned>(std::countr_zero(active)), "trap", "the kernel executed trap");
        return;
      }
      ++pc_;
      break;
    }
    if (pc_ >= nextWait_) {
      storeGroupPc(pc_);
      if (!select()) return;
    }
  }
}

/// Releases the barriers every waiting thread has reached; false on a
/// deadlock (reported) or a synccheck failure.
bool resolveBarriers(Cta &cta, HostThread &host, std::vector<Warp> &warps, uint32_t liveThreads,
                     bool reportDeadlock = true, bool *releasedOut = nullptr) {
  Launch &launch = *cta.launch;
  const Program &program = *launch.program;
  // Count the waiting threads per barrier id.
  uint32_t waiting[16] = {};
  uint32_t expected[16] = {};
  for (Warp &w : warps)
    forEachLane(w.blocked, [&](unsigned l) {
      uint32_t id = w.barrierId[l] & 0xffff;
      if (id >= 16) return;
      ++waiting[id];
      const Inst &in = program.code[w.barrierPc[l]];
      if (in.sub2 == 2) expected[id] = static_cast<uint32_t>(w.get(in.src(1), l));
    });
  for (const Cta::Arrival &a : cta.arrivals)
    if (a.id < 16) waiting[a.id] += a.count;
  bool released = false;
  for (uint32_t id = 0; id < 16; ++id) {
    if (!waiting[id]) continue;
    uint32_t need = expected[id] ? expected[id] : liveThreads;
    if (waiting[id] < need) continue;
    // synccheck: the live lanes of a warp must wait at the same barrier instruction.
    uint32_t popcount = 0;
    for (Warp &w : warps) {
      LaneMask here = 0;
      forEachLane(w.blocked, [&](unsigned l) {
        if ((w.barrierId[l] & 0xffff) == id) here |= 1u << l;
      });
      if (!here) continue;
      uint32_t pc = w.barrierPc[std::countr_zero(here)];
      LaneMask samePc = 0;
      forEachLane(here, [&](unsigned l) {
        if (w.barrierPc[l] == pc) samePc |= 1u << l;
      });
      if (launch.checks.synccheck && !expected[id] && (samePc != here || (w.live & ~here) != 0)) {
        LaneMask other = (w.live & ~samePc);
        unsigned lane = static_cast<unsigned>(std::countr_zero(samePc));
        w.fault(program.code[pc], lane, "synccheck",
                fmt::format("divergent barrier: lanes 0x{:08x} of warp {} wait here while lanes 0x{:08x} of the same "
                            "warp are elsewhere (a barrier inside a branch not every thread takes?)",
                            samePc, w.index, other));
        return false;
      }
      forEachLane(here, [&](unsigned l) { popcount += (w.barrierId[l] >> 16) & 1; });
    }
    for (Warp &w : warps) {
      LaneMask here = 0;
      forEachLane(w.blocked, [&](unsigned l) {
        if ((w.barrierId[l] & 0xffff) == id) here |= 1u << l;
      });
      forEachLane(here, [&](unsigned l) {
        const Inst &in = program.code[w.barrierPc[l]];
        if (in.sub) { // bar.red
          uint64_t value = in.sub == 1 ? popcount : in.sub == 2 ? (popcount == waiting[id] ? 1 : 0) : (popcount ? 1 : 0);
          w.set(in.dst(0), l, value);
          w.written[in.dst(0).slot] |= 1u << l;
        }
      });
      w.blocked &= ~here;
    }
    cta.arrivals.erase(std::remove_if(cta.arrivals.begin(), cta.arrivals.end(),
                                      [&](const Cta::Arrival &a) { return a.id == id; }),
                       cta.arrivals.end());
    released = true;
  }
  if (released) {
    cta.epoch = ++host.epoch;
    if (cta.async) asyncBarrierRelease(*cta.async);
    if (releasedOut) *releasedOut = true;
    return true;
  }
  // Warps that still run (waiting on an mbarrier) may yet arrive.
  if (!reportDeadlock) return true;
  // Nothing can be released: a deadlock.
  for (Warp &w : warps) {
    if (!w.blocked) continue;
    unsigned lane = static_cast<unsigned>(std::countr_zero(w.blocked));
    uint32_t id = w.barrierId[lane] & 0xffff;
    w.fault(program.code[w.barrierPc[lane]], lane, "synccheck",
            fmt::format("barrier deadlock: {} threads wait at barrier {} but it needs {} (threads that exited or wait "
                        "at another barrier never arrive)",
                        waiting[id < 16 ? id : 0], id, expected[id < 16 ? id : 0] ? expected[id] : liveThreads));
    return false;
  }
  return false;
}

/// Prepares CTA `linearCta` in `host`'s buffers: shared memory garbage,
/// checks' state, warps with their special registers.
void setupCta(Launch &launch, uint64_t linearCta, CtaBuffers &host, uint32_t &epochCounter,
              const ClusterPlace &place) {
  const Program &program = *launch.program;
  const KernelDesc &kernel = *launch.kernel;
  Cta &cta = host.cta;
  cta = Cta{};
  cta.launch = &launch;
  cta.ctaid[0] = static_cast<uint32_t>(linearCta % launch.grid.x);
  cta.ctaid[1] = static_cast<uint32_t>((linearCta / launch.grid.x) % launch.grid.y);
  cta.ctaid[2] = static_cast<uint32_t>(linearCta / (uint64_t(launch.grid.x) * launch.grid.y));
  cta.linear = linearCta;
  size_t sharedBytes = static_cast<size_t>(program.sharedBytesOf(kernel, launch.dynamicSharedBytes));
  // The GPU does not clear shared memory: it holds what ran before. Garbage
  // that differs per launch and per CTA makes a kernel that assumes zeros fail.
  host.shared.resize(sharedBytes);
  fillGarbage(host.shared.data(), sharedBytes, launch.salt ^ (linearCta << 20));
  if (launch.checks.racecheck) host.shadow.resize(sharedBytes);
  if (launch.checks.initcheck && host.sharedWritten.size() < sharedBytes) {
    host.sharedWritten.resize(sharedBytes);
    host.sharedWordsWritten.resize((sharedBytes + 3) / 4);
  }
  cta.shared = &host.shared;
  cta.shadow = &host.shadow;
  cta.sharedWritten = &host.sharedWritten;
  cta.sharedWordsWritten = &host.sharedWordsWritten;
  cta.epoch = ++epochCounter;
  cta.firstEpoch = cta.epoch;
  cta.clusterRank = place.rank;
  cta.clusterSize = place.size;
  if (program.usesAsync) {
    host.async.reset((static_cast<uint32_t>(launch.block.count()) + kWarpSize - 1) / kWarpSize, sharedBytes,
                     program.bulkReadsShared, &epochCounter);
    cta.async = &host.async;
  }

  uint32_t threads = static_cast<uint32_t>(launch.block.count());
  uint32_t warpCount = (threads + kWarpSize - 1) / kWarpSize;
  size_t slots = program.slotCount;
  host.regs.resize(std::max(host.regs.size(), size_t(warpCount) * slots * kWarpSize));
  host.written.resize(std::max(host.written.size(), size_t(warpCount) * slots));
  host.derived.resize(std::max(host.derived.size(), size_t(warpCount) * slots));
  host.local.resize(std::max(host.local.size(), size_t(warpCount) * kWarpSize * program.localBytes));
  // Warps are reused from the host thread's previous CTA when the count
  // matches (their call stacks keep their memory); what setup does not set
  // below is reset here.
  if (host.warps.size() != warpCount) {
    host.warps.clear();
    host.warps.resize(warpCount);
  } else {
    for (Warp &w : host.warps) {
      std::fill(std::begin(w.barrierId), std::end(w.barrierId), 0u);
      std::fill(std::begin(w.barrierPc), std::end(w.barrierPc), 0u);
      w.yield = false;
    }
  }

  uint32_t bx = launch.block.x, by = launch.block.y;
  uint32_t specialBase = program.constSlots;
  // What a GPU's special registers would show: CTAs spread over an H200's 132
  // SMs (a stride coprime to 132, so the first 132 CTAs get distinct SMs,
  // shifted per launch), and the CTA's warps in the SM's warp slots after
  // those of the CTAs placed on that SM before it.
  uint32_t smid = static_cast<uint32_t>((linearCta * 67 + launch.salt) % kSmCount);
  uint32_t warpBase = static_cast<uint32_t>((linearCta / kSmCount) * warpCount % kWarpsPerSm);
  for (uint32_t wi = 0; wi < warpCount; ++wi) {
    Warp &w = host.warps[wi];
    w.cta = &cta;
    w.launch = &launch;
    w.program = &program;
    w.index = wi;
    w.regs = host.regs.data() + size_t(wi) * slots * kWarpSize;
    w.written = host.written.data() + size_t(wi) * slots;
    w.derived = host.derived.data() + size_t(wi) * slots;
    w.local = host.local.data() + size_t(wi) * kWarpSize * program.localBytes;
    fillGarbage(w.local, size_t(kWarpSize) * program.localBytes, ~launch.salt ^ (linearCta << 20) ^ (uint64_t(wi) << 8));
    uint32_t lanes = std::min(kWarpSize, threads - wi * kWarpSize);
    w.valid = lanes == 32 ? ~0u : ((1u << lanes) - 1);
    w.live = w.valid;
    for (unsigned l = 0; l < kWarpSize; ++l) {
      w.pc[l] = kernel.entryPc;
      w.callStack[l].clear();
    }
    for (uint32_t s = 0; s < program.constSlots; ++s) {
      uint64_t v = program.constValues[s];
      uint64_t *row = w.row(s);
      for (unsigned l = 0; l < kWarpSize; ++l) row[l] = v;
    }
    std::fill(w.written, w.written + slots, 0u);
    std::fill(w.derived, w.derived + slots, 0u);
    std::fill(w.written, w.written + specialBase + static_cast<uint32_t>(Special::Count), ~0u);
    auto special = [&](Special s) { return w.row(specialBase + static_cast<uint32_t>(s)); };
    // %tid of the warp's first thread, then counted up (no division per lane).
    uint32_t first = wi * kWarpSize;
    uint32_t tx = first % bx, ty = (first / bx) % by, tz = first / (bx * by);
    for (unsigned l = 0; l < kWarpSize; ++l) {
      special(Special::TidX)[l] = tx;
      special(Special::TidY)[l] = ty;
      special(Special::TidZ)[l] = tz;
      if (++tx == bx) {
        tx = 0;
        if (++ty == by) ty = 0, ++tz;
      }
      special(Special::NtidX)[l] = launch.block.x;
      special(Special::NtidY)[l] = launch.block.y;
      special(Special::NtidZ)[l] = launch.block.z;
      special(Special::CtaidX)[l] = cta.ctaid[0];
      special(Special::CtaidY)[l] = cta.ctaid[1];
      special(Special::CtaidZ)[l] = cta.ctaid[2];
      special(Special::NctaidX)[l] = launch.grid.x;
      special(Special::NctaidY)[l] = launch.grid.y;
      special(Special::NctaidZ)[l] = launch.grid.z;
      special(Special::LaneId)[l] = l;
      special(Special::WarpId)[l] = (warpBase + wi) % kWarpsPerSm;
      special(Special::NWarpId)[l] = kWarpsPerSm;
      special(Special::SmId)[l] = smid;
      special(Special::NSmId)[l] = kSmCount;
      special(Special::GridId)[l] = launch.launchIndex;
      special(Special::LaneMaskEq)[l] = 1u << l;
      special(Special::LaneMaskLt)[l] = (1u << l) - 1;
      special(Special::LaneMaskLe)[l] = l == 31 ? ~0u : (2u << l) - 1;
      special(Special::LaneMaskGt)[l] = l == 31 ? 0u : ~((2u << l) - 1);
      special(Special::LaneMaskGe)[l] = ~((1u << l) - 1);
      special(Special::DynamicSmemSize)[l] = launch.dynamicSharedBytes;
      special(Special::TotalSmemSize)[l] = static_cast<uint32_t>(sharedBytes);
      special(Special::Clock)[l] = 0;
      special(Special::Clock64)[l] = 0;
      special(Special::GlobalTimer)[l] = 0;
    }
    if (program.usesClusterSpecials)
      for (unsigned l = 0; l < kWarpSize; ++l) {
        for (unsigned d = 0; d < 3; ++d) {
          special(static_cast<Special>(static_cast<unsigned>(Special::ClusterCtaidX) + d))[l] = place.ctaid[d];
          special(static_cast<Special>(static_cast<unsigned>(Special::ClusterNctaidX) + d))[l] = place.dim[d];
          special(static_cast<Special>(static_cast<unsigned>(Special::ClusterIdX) + d))[l] = place.id[d];
          special(static_cast<Special>(static_cast<unsigned>(Special::NclusterIdX) + d))[l] = place.count[d];
        }
        special(Special::ClusterCtarank)[l] = place.rank;
        special(Special::ClusterNctarank)[l] = place.size;
        special(Special::IsExplicitCluster)[l] = kernel.explicitCluster ? 1 : 0;
      }
    w.blocked = w.parked = 0;
    w.clusterArrived = w.clusterPassed = 0;
    w.steps = 0;
  }
}

/// Completes the cluster barrier's phase when every live thread of the
/// cluster has arrived: its waiting lanes go on. True when it completed.
bool resolveClusterBarrier(HostThread &host, size_t count) {
  bool arrived = false;
  for (size_t c = 0; c < count; ++c)
    for (const Warp &w : host.ctas[c]->warps) {
      if (w.live & ~w.clusterArrived) return false;
      arrived = arrived || w.clusterArrived != 0;
    }
  if (!arrived) return false;
  for (size_t c = 0; c < count; ++c) {
    CtaBuffers &b = *host.ctas[c];
    for (Warp &w : b.warps) {
      LaneMask waiting = 0;
      forEachLane(w.blocked, [&](unsigned l) {
        if (w.barrierId[l] == kClusterBarrierId) waiting |= 1u << l;
      });
      w.blocked &= ~waiting;
      w.clusterPassed |= w.clusterArrived & ~waiting;
      w.clusterArrived = 0;
    }
    // What the cluster did before the barrier is ordered before what follows.
    b.cta.epoch = ++host.epoch;
    if (b.cta.async) asyncBarrierRelease(*b.cta.async);
  }
  return true;
}

/// Runs the wgmma.mma_async of every warpgroup whose four warps all wait at
/// it; a warpgroup that can never meet (a warp missing or with exited
/// threads) is a synccheck finding. True when one ran.
bool resolveWarpgroups(CtaBuffers &b) {
  bool ran = false;
  size_t warps = b.warps.size();
  for (size_t g = 0; g * 4 < warps; ++g) {
    Warp *group[4] = {};
    bool ready = true, broken = false;
    Warp *waiting = nullptr;
    uint32_t pc = kNoPc;
    for (unsigned i = 0; i < 4; ++i) {
      if (g * 4 + i >= warps) {
        broken = true;
        break;
      }
      Warp &w = b.warps[g * 4 + i];
      group[i] = &w;
      LaneMask here = 0;
      forEachLane(w.blocked, [&](unsigned l) {
        if (w.barrierId[l] == kWarpgroupBarrierId) here |= 1u << l;
      });
      if (here && !waiting) waiting = &w;
      if (w.live != w.valid || w.valid != ~0u) broken = true;
      if (!here || here != w.live) {
        ready = false;
        continue;
      }
      uint32_t at = w.barrierPc[std::countr_zero(here)];
      if (pc == kNoPc) pc = at;
      else if (at != pc) ready = false;
    }
    if (!waiting) continue;
    if (broken) {
      unsigned lane = static_cast<unsigned>(std::countr_zero(waiting->blocked));
      waiting->fault(waiting->program->code[waiting->barrierPc[lane]], lane, "synccheck",
                     fmt::format("wgmma.mma_async needs all 128 threads of its warpgroup (warps {} to {}), and some "
                                 "of them do not exist or have exited",
                                 g * 4, g * 4 + 3));
      return false;
    }
    if (!ready) continue;
    executeWgmma(group, group[0]->program->code[pc]);
    for (Warp *w : group) {
      LaneMask here = 0;
      forEachLane(w->blocked, [&](unsigned l) {
        if (w->barrierId[l] == kWarpgroupBarrierId) here |= 1u << l;
      });
      w->blocked &= ~here;
    }
    ran = true;
  }
  return ran;
}

/// A deadlock of CTAs whose live threads all wait: at a CTA barrier (the
/// usual report) or at the cluster barrier (threads of the cluster never arrive).
void reportDeadlock(HostThread &host, size_t count) {
  for (size_t c = 0; c < count; ++c) {
    CtaBuffers &b = *host.ctas[c];
    for (Warp &w : b.warps) {
      if (!w.blocked) continue;
      unsigned lane = static_cast<unsigned>(std::countr_zero(w.blocked));
      if (w.barrierId[lane] == kWarpgroupBarrierId) {
        w.fault(w.program->code[w.barrierPc[lane]], lane, "synccheck",
                fmt::format("wgmma.mma_async waits for the other warps of its warpgroup (warps {} to {}), which "
                            "wait elsewhere and never reach it",
                            w.index / 4 * 4, w.index / 4 * 4 + 3));
        return;
      }
      if (w.barrierId[lane] != kClusterBarrierId) {
        uint32_t live = 0;
        for (Warp &o : b.warps) live += static_cast<uint32_t>(std::popcount(o.live));
        resolveBarriers(b.cta, host, b.warps, live, true);
        return;
      }
      uint32_t missing = 0;
      for (size_t d = 0; d < count; ++d)
        for (const Warp &o : host.ctas[d]->warps) missing += static_cast<uint32_t>(std::popcount(o.live & ~o.clusterArrived));
      w.fault(w.program->code[w.barrierPc[lane]], lane, "synccheck",
              fmt::format("barrier.cluster deadlock: {} thread(s) of the cluster never arrive (they wait at a CTA "
                          "barrier or on an mbarrier)",
                          missing));
      return;
    }
  }
}

/// Runs CTAs host.ctas[0, count) (one, or a cluster) to their end: their warps
/// in turn, CTA barriers, the cluster barrier, mbarrier waits.
void runGroup(Launch &launch, HostThread &host, size_t count) {
  // Rounds in which every warp that ran stopped at a failed mbarrier wait and
  // no mbarrier changed: past this many, the waits can never succeed.
  constexpr uint32_t kIdleRoundsForDeadlock = 1u << 12;
  uint32_t idleRounds = 0;
  for (;;) {
    bool yielded = false;
    uint64_t changes = 0;
    uint64_t epochBefore = host.epoch;
    for (size_t c = 0; c < count; ++c) {
      CtaBuffers &b = *host.ctas[c];
      if (b.cta.async) changes += b.cta.async->changes;
      for (Warp &w : b.warps) {
        if (w.live & ~w.blocked) {
          WarpRunner runner(w);
          runner.run();
          // A warp only comes back with runnable lanes when a wait failed.
          yielded = yielded || (w.live & ~w.blocked) != 0;
        }
        if (launch.aborted.load(std::memory_order_relaxed)) return;
      }
      // Its shared memory is gone for the cluster once every thread exited.
      if (count > 1) {
        bool any = false;
        for (const Warp &w : b.warps) any = any || w.live != 0;
        b.cta.exited = !any;
      }
    }
    bool live = false, released = false;
    for (size_t c = 0; c < count; ++c) {
      CtaBuffers &b = *host.ctas[c];
      uint32_t liveThreads = 0;
      for (Warp &w : b.warps) liveThreads += static_cast<uint32_t>(std::popcount(w.live));
      if (liveThreads == 0) {
        b.cta.exited = true;
        continue;
      }
      live = true;
      if (!resolveBarriers(b.cta, host, b.warps, liveThreads, false, &released)) return;
    }
    if (!live) return;
    if (launch.program->usesWgmma)
      for (size_t c = 0; c < count; ++c) {
        released = resolveWarpgroups(*host.ctas[c]) || released;
        if (launch.aborted.load(std::memory_order_relaxed)) return;
      }
    released = resolveClusterBarrier(host, count) || released;
    if (!yielded) {
      if (released) continue;
      reportDeadlock(host, count);
      return;
    }
    uint64_t changesAfter = 0;
    for (size_t c = 0; c < count; ++c)
      if (host.ctas[c]->cta.async) changesAfter += host.ctas[c]->cta.async->changes;
    idleRounds = changesAfter == changes && host.epoch == epochBefore ? idleRounds + 1 : 0;
    if (idleRounds >= kIdleRoundsForDeadlock) {
      for (size_t c = 0; c < count && !launch.aborted.load(std::memory_order_relaxed); ++c)
        if (host.ctas[c]->cta.async) asyncDeadlock(host.ctas[c]->cta, host.ctas[c]->warps);
      return;
    }
  }
}

/// Runs CTA `linearCta` alone (a cluster of one).
void runCta(Launch &launch, uint64_t linearCta, HostThread &host) {
  ClusterPlace place;
  place.id[0] = static_cast<uint32_t>(linearCta % launch.grid.x);
  place.id[1] = static_cast<uint32_t>((linearCta / launch.grid.x) % launch.grid.y);
  place.id[2] = static_cast<uint32_t>(linearCta / (uint64_t(launch.grid.x) * launch.grid.y));
  place.count[0] = launch.grid.x, place.count[1] = launch.grid.y, place.count[2] = launch.grid.z;
  setupCta(launch, linearCta, host.buffers(0), host.epoch, place);
  runGroup(launch, host, 1);
}

/// Runs cluster `index` of a cluster launch: its CTAs together on this host
/// thread, so that they can share memory and barriers.
void runCluster(Launch &launch, uint64_t index, HostThread &host) {
  const uint32_t *dim = launch.kernel->clusterDim;
  ClusterPlace place;
  place.count[0] = launch.grid.x / dim[0], place.count[1] = launch.grid.y / dim[1];
  place.count[2] = launch.grid.z / dim[2];
  place.id[0] = static_cast<uint32_t>(index % place.count[0]);
  place.id[1] = static_cast<uint32_t>((index / place.count[0]) % place.count[1]);
  place.id[2] = static_cast<uint32_t>(index / (uint64_t(place.count[0]) * place.count[1]));
  place.dim[0] = dim[0], place.dim[1] = dim[1], place.dim[2] = dim[2];
  place.size = dim[0] * dim[1] * dim[2];
  host.cluster.assign(place.size, nullptr);
  for (uint32_t rank = 0; rank < place.size; ++rank) {
    place.rank = rank;
    place.ctaid[0] = rank % dim[0], place.ctaid[1] = (rank / dim[0]) % dim[1], place.ctaid[2] = rank / (dim[0] * dim[1]);
    uint64_t x = uint64_t(place.id[0]) * dim[0] + place.ctaid[0], y = uint64_t(place.id[1]) * dim[1] + place.ctaid[1],
             z = uint64_t(place.id[2]) * dim[2] + place.ctaid[2];
    CtaBuffers &b = host.buffers(rank);
    setupCta(launch, x + launch.grid.x * (y + uint64_t(launch.grid.y) * z), b, host.epoch, place);
    host.cluster[rank] = &b.cta;
  }
  for (uint32_t rank = 0; rank < place.size; ++rank) host.ctas[rank]->cta.cluster = host.cluster.data();
  runGroup(launch, host, place.size);
}

} // namespace

void runLaunch(Launch &launch) {
  uint64_t ctas = launch.grid.count();
  static std::atomic<uint64_t> launchCounter{0};
  launch.launchIndex = launchCounter.fetch_add(1, std::memory_order_relaxed) + 1;
  launch.salt = mixBits(launch.launchIndex ^ mixBits(launch.checks.memorySeed));
  // The cross-CTA racecheck needs two CTAs (and fits their indices in 24 bits).
  std::unique_ptr<CrossCtaState> crossCta;
  if (launch.checks.racecheck && ctas > 1 && ctas <= CrossCtaState::kMaxCtas) {
    crossCta = std::make_unique<CrossCtaState>();
    uint64_t tag = launch.launchIndex & 0xffff;
    crossCta->tag = (tag ? tag : 1) << 48;
    for (Allocation *a : launch.allocations) {
      CrossCtaState::Shadow shadow;
      size_t words = (a->bytes.size() + 3) / 4;
      if (!a->raceWords) {
        // calloc: the pages stay untouched (and cost nothing) until written.
        a->raceWords.reset(static_cast<uint64_t *>(std::calloc(std::max<size_t>(1, words), sizeof(uint64_t))));
        a->raceLines.reset(static_cast<uint32_t *>(std::calloc(std::max<size_t>(1, words), sizeof(uint32_t))));
      }
      if (a->raceWords && a->raceLines) shadow = {a->raceWords.get(), a->raceLines.get(), words};
      crossCta->shadows.push_back(shadow); // no memory: the check skips this buffer
    }
    launch.crossCta = crossCta.get();
  }
  struct Detach {
    Launch &launch;
    ~Detach() { launch.crossCta = nullptr; }
  } detach{launch};
  unsigned threads = launch.checks.hostThreads ? launch.checks.hostThreads : std::thread::hardware_concurrency();
  // A cluster launch hands out whole clusters (their CTAs run together).
  uint64_t clusterSize = launch.kernel->clusterDim[0] ? launch.kernel->clusterSize() : 0;
  uint64_t items = clusterSize ? ctas / clusterSize : ctas;
  threads = static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(threads ? threads : 1, items)));
  std::atomic<uint64_t> next{0};
  auto worker = [&]() {
    struct Lease {
      std::unique_ptr<HostThread> host = hostThreadPool().take();
      ~Lease() { hostThreadPool().give(std::move(host)); }
    } lease;
    HostThread &host = *lease.host;
    for (;;) {
      uint64_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= items || launch.aborted.load(std::memory_order_relaxed)) return;
      // Starting a CTA costs a step per warp, so that a huge grid of empty CTAs
      // also meets the budget and the deadline.
      uint64_t steps =
          launch.steps.fetch_add((launch.block.count() + kWarpSize - 1) / kWarpSize * std::max<uint64_t>(clusterSize, 1)) + 1;
      bool late = launch.hasDeadline && (i % 64) == 0 && std::chrono::steady_clock::now() > launch.deadline;
      if (steps > launch.checks.stepBudget || late) {
        Finding finding;
        finding.check = "timeout";
        finding.message = fmt::format("timeout: the launch ran past its {} after {} of {} CTAs (an infinite loop or "
                                      "a huge grid?)",
                                      late ? fmt::format("deadline of {} ms", launch.checks.timeoutMs)
                                           : fmt::format("budget of {} warp-instructions", launch.checks.stepBudget),
                                      i * std::max<uint64_t>(clusterSize, 1), ctas);
        launch.report(std::move(finding));
        return;
      }
      if (clusterSize) runCluster(launch, i, host);
      else runCta(launch, i, host);
    }
  };
  if (threads == 1) {
    worker();
    return;
  }
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread &t : pool) t.join();
}

} // namespace ptxforge::emu
