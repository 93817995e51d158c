// Memory translation with memcheck and racecheck, and fault reporting.
#include "emu/Machine.h"

#include <fmt/format.h>

#include <algorithm>

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
  for (const Finding &f : findings) {
    if (!f.fatal) ++nonFatal;
    if (!f.fatal && f.check == finding.check && f.line == finding.line) return; // one per line and check
  }
  if (nonFatal < checks.maxFindings) findings.push_back(std::move(finding));
}

bool Warp::aborted() const { return launch->aborted.load(std::memory_order_relaxed); }

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
      if (offset >= a->accessibleBegin && offset + bytes <= a->accessibleEnd) return a->bytes.data() + offset;
    }
    fault(inst, lane, "memcheck",
          fmt::format("out-of-bounds global {} of {} bytes, {}", verb, bytes, describeGlobal(*launch, address, bytes)));
    return nullptr;
  }
  case Space::Shared: {
    std::vector<uint8_t> &shared = *cta->shared;
    if (address + bytes > shared.size() || address + bytes < address) {
      fault(inst, lane, "memcheck",
            fmt::format("out-of-bounds shared {} of {} bytes at shared address 0x{:x} (the CTA has {} bytes of "
                        "shared memory)",
                        verb, bytes, address, shared.size()));
      return nullptr;
    }
    if (launch->checks.racecheck && !atomic) {
      SharedShadow *shadow = cta->shadow->data() + address;
      uint16_t me = static_cast<uint16_t>(index);
      uint32_t epoch = cta->epoch;
      for (uint32_t i = 0; i < bytes; ++i) {
        SharedShadow &s = shadow[i];
        const char *hazard = nullptr;
        uint16_t otherWarp = 0, otherLane = 0;
        uint32_t otherLine = 0;
        if (s.writeEpoch == epoch && s.writerWarp != me) {
          hazard = write ? "write-after-write" : "read-after-write";
          otherWarp = s.writerWarp, otherLane = s.writerLane, otherLine = s.writeLine;
        } else if (write && s.readEpoch == epoch && s.readerWarp != me) {
          hazard = "write-after-read";
          otherWarp = s.readerWarp == 0xffff ? s.writerWarp : s.readerWarp;
          otherLane = s.readerLane, otherLine = s.readLine;
        }
        if (hazard) {
          std::string other = s.readerWarp == 0xffff && std::string_view(hazard) == "write-after-read"
                                  ? fmt::format("threads of several other warps (line {})", otherLine)
                                  : fmt::format("thread {} (line {})",
                                                threadCoordinates(*launch, otherWarp * kWarpSize + otherLane),
                                                otherLine);
          fault(inst, lane, "racecheck",
                fmt::format("shared-memory {} hazard at shared address 0x{:x}: this {} races with an access by {} "
                            "with no barrier between them,",
                            hazard, address + i, verb, other));
          return nullptr;
        }
        if (write) {
          s.writeEpoch = epoch, s.writerWarp = me, s.writerLane = static_cast<uint16_t>(lane), s.writeLine = inst.line;
        } else if (s.readEpoch != epoch) {
          s.readEpoch = epoch, s.readerWarp = me, s.readerLane = static_cast<uint16_t>(lane), s.readLine = inst.line;
        } else if (s.readerWarp != me) {
          s.readerWarp = 0xffff;
        }
      }
    }
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

} // namespace ptxforge::emu
