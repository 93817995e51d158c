// The emulator's profile (Profile.h): an instrumented copy of the program,
// the bank and sector arithmetic, and per-thread counters added up per line.
#include "emu/Profile.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <map>
#include <string_view>

namespace ptxforge::emu {

namespace {

constexpr unsigned kBanks = 32;
constexpr unsigned kBankBytes = 4;
constexpr unsigned kSectorBytes = 32;
constexpr unsigned kPhaseBytes = 128; ///< lane data one phase of a warp's access carries

/// The instrumented ExecFn: count, then run the original.
void profiledExec(Warp &warp, const Inst &inst, LaneMask active) {
  LaunchProfiler &profiler = *warp.launch->profile;
  uint32_t pc = static_cast<uint32_t>(&inst - warp.program->code.data());
  profiler.record(warp, inst, pc, active);
  profiler.original(pc)(warp, inst, active);
}

/// The opcode and modifiers of an instruction's text ("@%p1 ld.global.v4.f32 ..."
/// gives "ld", {"global", "v4", "f32"}).
std::vector<std::string_view> opcodeParts(std::string_view text) {
  if (!text.empty() && text[0] == '@') {
    size_t space = text.find(' ');
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
  }
  text = text.substr(0, text.find(' '));
  std::vector<std::string_view> parts;
  while (!text.empty()) {
    size_t dot = text.find('.');
    parts.push_back(text.substr(0, dot));
    if (dot == std::string_view::npos) break;
    text = text.substr(dot + 1);
  }
  return parts;
}

bool hasPart(const std::vector<std::string_view> &parts, std::string_view part) {
  return std::find(parts.begin() + (parts.empty() ? 0 : 1), parts.end(), part) != parts.end();
}

/// The most of `words` that fall in one bank.
uint64_t busiestBank(const uint64_t *words, size_t count) {
  std::array<uint32_t, kBanks> perBank{};
  uint32_t most = 0;
  for (size_t i = 0; i < count; ++i) most = std::max(most, ++perBank[words[i] % kBanks]);
  return most;
}

/// Appends the 4-byte words that the lanes in `mask` touch (`width` bytes
/// each from their address) to `out`; the new count.
size_t appendWords(const uint64_t *addresses, LaneMask mask, unsigned width, uint64_t *out, size_t count) {
  forEachLane(mask, [&](unsigned l) {
    for (uint64_t word = addresses[l] / kBankBytes; word <= (addresses[l] + width - 1) / kBankBytes; ++word)
      out[count++] = word;
  });
  return count;
}

/// Sorts `count` values and keeps each once; how many are left.
size_t keepDistinct(uint64_t *values, size_t count) {
  std::sort(values, values + count);
  return static_cast<size_t>(std::unique(values, values + count) - values);
}

uint64_t addressOf(const Warp &w, uint32_t slot, int64_t offset, unsigned lane) {
  return (slot != kNoSlot ? w.row(slot)[lane] : 0) + static_cast<uint64_t>(offset);
}

} // namespace

Wavefronts sharedWavefronts(const uint64_t *addresses, LaneMask lanes, unsigned width, SharedAccess access) {
  Wavefronts out;
  if (!lanes) return out;
  width = std::clamp(width, 1u, 32u);
  if (access == SharedAccess::Atomic) {
    // Every lane's word counts: atomics to one address serialize.
    std::array<uint64_t, kWarpSize * 9> words;
    const size_t count = appendWords(addresses, lanes, width, words.data(), 0);
    out.wavefronts = busiestBank(words.data(), count);
    const size_t distinct = keepDistinct(words.data(), count);
    out.ideal = std::max<uint64_t>(1, (distinct + kBanks - 1) / kBanks);
    out.wavefronts = std::max(out.wavefronts, out.ideal);
    return out;
  }
  // The warp is processed in phases of 128 bytes of lane data: the whole warp
  // for accesses up to 4 bytes a lane, halves for 8, quarters for 16.
  const unsigned phaseLanes = width <= kBankBytes ? kWarpSize : std::max(1u, kPhaseBytes / width);
  const unsigned phases = kWarpSize / phaseLanes;
  struct Phase {
    std::array<uint64_t, 2 * kWarpSize + 8> words; // distinct, sorted; 32 lanes of 4 unaligned bytes at most
    size_t count = 0;
    uint64_t most = 0;    // the most distinct words in one bank
    uint32_t banks = 0;   // the banks its words are in
    size_t addresses = 0; // distinct lane addresses
    bool active = false;
  };
  std::array<Phase, kWarpSize / (kPhaseBytes / 32)> phase; // 8: lanes of 32 bytes, 4 a phase
  for (unsigned p = 0; p < phases; ++p) {
    Phase &ph = phase[p];
    const LaneMask mask = phaseLanes == kWarpSize ? lanes : lanes & (((LaneMask(1) << phaseLanes) - 1) << (p * phaseLanes));
    if (!mask) continue;
    ph.active = true;
    ph.count = keepDistinct(ph.words.data(), appendWords(addresses, mask, width, ph.words.data(), 0));
    ph.most = busiestBank(ph.words.data(), ph.count);
    for (size_t i = 0; i < ph.count; ++i) ph.banks |= 1u << (ph.words[i] % kBanks);
    std::array<uint64_t, kWarpSize> starts;
    size_t starting = 0;
    forEachLane(mask, [&](unsigned l) { starts[starting++] = addresses[l]; });
    ph.addresses = keepDistinct(starts.data(), starting);
    out.wavefronts += ph.most;
    out.ideal += std::max<uint64_t>(1, (ph.count + kBanks - 1) / kBanks);
  }
  // Loads (not stores) take two neighbouring phases in one wavefront when
  // each needs one and their words are in different banks (so they share no
  // word), or both read one and the same address (a broadcast).
  if (access == SharedAccess::Load)
    for (unsigned p = 0; p + 1 < phases; p += 2) {
      const Phase &a = phase[p], &b = phase[p + 1];
      if (!a.active || !b.active || a.most != 1 || b.most != 1) continue;
      const bool broadcast = a.addresses == 1 && b.addresses == 1 && a.count == b.count &&
                             std::equal(a.words.begin(), a.words.begin() + a.count, b.words.begin());
      if (!broadcast && (a.banks & b.banks)) continue;
      out.wavefronts -= 1;
      out.ideal -= 1;
    }
  return out;
}

Wavefronts matrixWavefronts(const uint64_t *addresses, unsigned matrices, bool store) {
  // The rows are the access: 8 per matrix, 16 bytes each (as many bytes as
  // the matrices give the lanes' registers).
  matrices = std::min(matrices, 4u);
  return sharedWavefronts(addresses, matrices == 4 ? ~LaneMask(0) : (LaneMask(1) << (8 * matrices)) - 1, 16,
                          store ? SharedAccess::Store : SharedAccess::Load);
}

Sectors globalSectors(const uint64_t *addresses, LaneMask lanes, unsigned width) {
  Sectors out;
  if (!lanes || !width) return out;
  std::array<uint64_t, kWarpSize * 2> sectors;
  std::array<std::pair<uint64_t, uint64_t>, kWarpSize> ranges;
  size_t count = 0, rangeCount = 0;
  forEachLane(lanes, [&](unsigned l) {
    uint64_t begin = addresses[l], end = begin + width;
    ranges[rangeCount++] = {begin, end};
    for (uint64_t s = begin / kSectorBytes; s <= (end - 1) / kSectorBytes && count < sectors.size(); ++s)
      sectors[count++] = s;
  });
  std::sort(sectors.begin(), sectors.begin() + count);
  out.sectors = static_cast<uint64_t>(std::unique(sectors.begin(), sectors.begin() + count) - sectors.begin());
  // The fewest sectors the distinct bytes fit in: their union, packed.
  std::sort(ranges.begin(), ranges.begin() + rangeCount);
  uint64_t bytes = 0, coveredEnd = 0;
  for (size_t i = 0; i < rangeCount; ++i) {
    auto [begin, end] = ranges[i];
    if (i > 0 && begin < coveredEnd) begin = coveredEnd;
    if (end > begin) bytes += end - begin;
    coveredEnd = std::max(coveredEnd, ranges[i].second);
  }
  out.ideal = (bytes + kSectorBytes - 1) / kSectorBytes;
  return out;
}

LaunchProfiler::LaunchProfiler(const Program &program) : source_(program) {
  static std::atomic<uint64_t> serials{0};
  serial_ = serials.fetch_add(1, std::memory_order_relaxed) + 1;
  instrumented_ = std::make_unique<Program>(program);
  instrumented_->globalImage.clear(); // only loadModule reads it (the module's buffer holds the data)
  const size_t count = program.code.size();
  originals_.assign(count, nullptr);
  kinds_.assign(count, Kind::None);
  matrices_.assign(count, 0);
  stores_.assign(count, false);
  slot_.assign(count, 0);
  for (size_t pc = 0; pc < count; ++pc) {
    Inst &inst = instrumented_->code[pc];
    if (inst.op != Op::Exec || !inst.exec || pc >= program.text.size()) continue;
    std::vector<std::string_view> parts = opcodeParts(program.text[pc]);
    if (parts.empty()) continue;
    std::string_view opcode = parts[0];
    Kind kind = Kind::None;
    if ((opcode == "ld" || opcode == "ldu") && inst.accessBytes && inst.ndst) kind = Kind::Load;
    else if (opcode == "st" && inst.accessBytes && inst.nsrc) kind = Kind::Store;
    else if ((opcode == "atom" || opcode == "red") && inst.accessBytes) kind = Kind::Atomic;
    else if (opcode == "cp" && hasPart(parts, "async") && !hasPart(parts, "bulk") && inst.accessBytes)
      kind = Kind::CpAsync;
    else if (opcode == "ldmatrix" || opcode == "stmatrix") {
      unsigned matrices = hasPart(parts, "x4") ? 4 : hasPart(parts, "x2") ? 2 : hasPart(parts, "x1") ? 1 : 0;
      if (matrices) {
        kind = Kind::Matrix;
        matrices_[pc] = static_cast<uint8_t>(matrices);
        stores_[pc] = opcode == "stmatrix";
      }
    }
    // Parameter and constant memory are not what the profile is about.
    if (kind == Kind::None || inst.space == Space::Param || inst.space == Space::Const) continue;
    kinds_[pc] = kind;
    originals_[pc] = inst.exec;
    slot_[pc] = slots_++;
    inst.exec = profiledExec;
  }
}

LaunchProfiler::~LaunchProfiler() = default;

LaunchProfiler::Shard &LaunchProfiler::shard() {
  // One shard per host thread and profiler: no atomics on the counters.
  thread_local uint64_t cachedSerial = 0;
  thread_local Shard *cached = nullptr;
  if (cachedSerial == serial_ && cached) return *cached;
  std::lock_guard<std::mutex> lock(mutex_);
  shards_.push_back(std::make_unique<Shard>());
  shards_.back()->counters.resize(slots_);
  cachedSerial = serial_;
  cached = shards_.back().get();
  return *cached;
}

void LaunchProfiler::record(const Warp &w, const Inst &in, uint32_t pc, LaneMask active) {
  if (!active) return;
  Counters &c = shard().counters[slot_[pc]];
  c.executions += 1;
  const Kind kind = kinds_[pc];
  std::array<uint64_t, kWarpSize> addresses{};

  if (kind == Kind::Matrix) {
    // Every lane of the warp executes it; lanes 0..8n-1 give the row addresses.
    unsigned matrices = matrices_[pc];
    LaneMask rows = matrices == 4 ? ~LaneMask(0) : ((LaneMask(1) << (8 * matrices)) - 1);
    forEachLane(rows, [&](unsigned l) {
      uint64_t a = addressOf(w, in.addrSlot, in.offset, l);
      addresses[l] = in.space == Space::Generic && a - kSharedWindow < kWindowSize ? a - kSharedWindow : a;
    });
    Wavefronts wf = matrixWavefronts(addresses.data(), matrices, stores_[pc]);
    c.sharedRequests += 1;
    c.sharedWavefronts += wf.wavefronts;
    c.sharedIdealWavefronts += wf.ideal;
    return;
  }

  unsigned width = in.accessBytes;
  if (kind == Kind::Load) width *= in.ndst;
  else if (kind == Kind::Store) width *= in.nsrc;

  // The global side of cp.async: its source.
  if (kind == Kind::CpAsync) {
    forEachLane(active, [&](unsigned l) { addresses[l] = addressOf(w, in.addrSlot2, in.offset2, l); });
    Sectors s = globalSectors(addresses.data(), active, width);
    c.globalRequests += 1;
    c.globalSectors += s.sectors;
    c.globalIdealSectors += s.ideal;
    c.globalBytes += uint64_t(width) * static_cast<unsigned>(std::popcount(active));
  }

  // Which lanes address which space (a generic address's window decides).
  LaneMask global = 0, shared = 0, local = 0;
  const Space space = kind == Kind::CpAsync ? Space::Shared : in.space;
  forEachLane(active, [&](unsigned l) {
    uint64_t a = addressOf(w, in.addrSlot, in.offset, l);
    switch (space) {
    case Space::Global: global |= 1u << l; break;
    case Space::Shared: shared |= 1u << l; break;
    case Space::Local: local |= 1u << l; break;
    case Space::Generic:
      if (a >= kGlobalBase) global |= 1u << l;
      else if (a - kSharedWindow < kWindowSize) a -= kSharedWindow, shared |= 1u << l;
      else if (a - kLocalWindow < kWindowSize) local |= 1u << l;
      break;
    default: break; // const and parameter memory: not counted
    }
    addresses[l] = a;
  });
  if (global) {
    Sectors s = globalSectors(addresses.data(), global, width);
    c.globalRequests += 1;
    c.globalSectors += s.sectors;
    c.globalIdealSectors += s.ideal;
    c.globalBytes += uint64_t(width) * static_cast<unsigned>(std::popcount(global));
  }
  if (shared) {
    const SharedAccess access = kind == Kind::Atomic ? SharedAccess::Atomic
                                : kind == Kind::Load  ? SharedAccess::Load
                                                      : SharedAccess::Store; // st, and cp.async's shared side
    Wavefronts wf = sharedWavefronts(addresses.data(), shared, width, access);
    c.sharedRequests += 1;
    c.sharedWavefronts += wf.wavefronts;
    c.sharedIdealWavefronts += wf.ideal;
  }
  if (local) {
    c.localRequests += 1;
    c.localBytes += uint64_t(width) * static_cast<unsigned>(std::popcount(local));
  }
}

exec::LaunchProfile LaunchProfiler::finish(const Launch &launch) const {
  exec::LaunchProfile profile;
  profile.kernel = launch.kernel ? launch.kernel->name : "";
  profile.grid[0] = launch.grid.x, profile.grid[1] = launch.grid.y, profile.grid[2] = launch.grid.z;
  profile.block[0] = launch.block.x, profile.block[1] = launch.block.y, profile.block[2] = launch.block.z;
  profile.warpInstructions = launch.steps.load(std::memory_order_relaxed);
  profile.threadInstructions = launch.threadInstructions.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<uint32_t, exec::LineProfile> byLine;
  for (size_t pc = 0; pc < kinds_.size(); ++pc) {
    if (kinds_[pc] == Kind::None) continue;
    Counters sum;
    for (const std::unique_ptr<Shard> &shard : shards_) {
      const Counters &c = shard->counters[slot_[pc]];
      sum.executions += c.executions;
      sum.globalRequests += c.globalRequests, sum.globalSectors += c.globalSectors;
      sum.globalIdealSectors += c.globalIdealSectors, sum.globalBytes += c.globalBytes;
      sum.sharedRequests += c.sharedRequests, sum.sharedWavefronts += c.sharedWavefronts;
      sum.sharedIdealWavefronts += c.sharedIdealWavefronts;
      sum.localRequests += c.localRequests, sum.localBytes += c.localBytes;
    }
    if (sum.globalRequests + sum.sharedRequests + sum.localRequests == 0) continue;
    const Inst &inst = source_.code[pc];
    exec::LineProfile &line = byLine[inst.line];
    if (line.line == 0) {
      line.line = inst.line;
      line.instruction = pc < source_.text.size() ? source_.text[pc] : "";
    } else if (pc < source_.text.size()) {
      line.instruction += "; " + source_.text[pc];
    }
    line.executions += sum.executions;
    line.globalRequests += sum.globalRequests, line.globalSectors += sum.globalSectors;
    line.globalIdealSectors += sum.globalIdealSectors, line.globalBytes += sum.globalBytes;
    line.sharedRequests += sum.sharedRequests, line.sharedWavefronts += sum.sharedWavefronts;
    line.sharedIdealWavefronts += sum.sharedIdealWavefronts;
    line.localRequests += sum.localRequests, line.localBytes += sum.localBytes;
    const Kind kind = kinds_[pc];
    line.atomic = line.atomic || kind == Kind::Atomic;
    bool store = kind == Kind::Store || kind == Kind::CpAsync ||
                 (kind == Kind::Matrix && std::string_view(source_.text[pc]).find("stmatrix") != std::string_view::npos);
    line.store = line.store || store;
  }
  for (auto &[number, line] : byLine) profile.lines.push_back(std::move(line));
  return profile;
}

} // namespace ptxforge::emu
