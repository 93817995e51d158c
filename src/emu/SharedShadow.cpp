// racecheck's per-word shadow of shared memory: the sub-word (split) paths.
#include "emu/SharedShadow.h"

#include <algorithm>

namespace ptxforge::emu {

namespace {

/// Whether two states answer every later access alike: their write parts
/// (and their read parts) are both stale in interval `epoch`, or both current
/// with the same warp, lane and line.
bool sameState(const SharedAccessState &a, const SharedAccessState &b, uint32_t epoch) {
  bool aw = a.writeEpoch == epoch, bw = b.writeEpoch == epoch;
  if (aw != bw || (aw && (a.writerWarp != b.writerWarp || a.writerLane != b.writerLane || a.writeLine != b.writeLine)))
    return false;
  bool ar = a.readEpoch == epoch, br = b.readEpoch == epoch;
  return ar == br && (!ar || (a.readerWarp == b.readerWarp && a.readerLane == b.readerLane && a.readLine == b.readLine));
}

} // namespace

void SharedRaceShadow::resize(size_t bytes) {
  size_t words = (bytes + 3) / 4;
  if (words_.size() < words) words_.resize(words);
  if (!bytes_.empty() && bytes_.size() < words_.size() * 4) bytes_.resize(words_.size() * 4);
}

void SharedRaceShadow::split(uint64_t word) {
  if (bytes_.size() < words_.size() * 4) bytes_.resize(words_.size() * 4);
  SharedAccessState &w = words_[word];
  w.split = false;
  std::fill_n(bytes_.begin() + static_cast<std::ptrdiff_t>(word * 4), 4, w);
  w.split = true;
}

void SharedRaceShadow::mergeIfEqual(uint64_t word, uint32_t epoch) {
  const SharedAccessState *b = bytes_.data() + word * 4;
  for (unsigned i = 1; i < 4; ++i)
    if (!sameState(b[0], b[i], epoch)) return;
  words_[word] = b[0]; // (split is false in byte entries)
}

bool SharedRaceShadow::wordBytes(uint64_t word, unsigned first, unsigned end, const Access &a, Conflict &conflict) {
  if (!words_[word].split) split(word);
  SharedAccessState *b = bytes_.data() + word * 4;
  for (unsigned i = first; i < end; ++i)
    if (!step(b[i], a)) {
      conflict = {word * 4 + i, b[i]};
      return false;
    }
  mergeIfEqual(word, a.epoch);
  return true;
}

bool SharedRaceShadow::partialAccess(uint64_t address, uint32_t bytes, const Access &a, Conflict &conflict) {
  if (bytes == 0) return true;
  const uint64_t end = address + bytes;
  for (uint64_t word = address >> 2, last = (end - 1) >> 2; word <= last; ++word) {
    const uint64_t begin = word * 4;
    const unsigned from = static_cast<unsigned>(std::max(address, begin) - begin);
    const unsigned to = static_cast<unsigned>(std::min(end, begin + 4) - begin);
    SharedAccessState &s = words_[word];
    if (from == 0 && to == 4 && !s.split) {
      if (!step(s, a)) {
        conflict = {begin, s};
        return false;
      }
      continue;
    }
    if (!wordBytes(word, from, to, a, conflict)) return false;
  }
  return true;
}

void SharedRaceShadow::forget(uint64_t address, uint32_t bytes) {
  if (bytes == 0) return;
  const uint64_t end = address + bytes;
  for (uint64_t word = address >> 2, last = (end - 1) >> 2; word <= last; ++word) {
    const uint64_t begin = word * 4;
    const unsigned from = static_cast<unsigned>(std::max(address, begin) - begin);
    const unsigned to = static_cast<unsigned>(std::min(end, begin + 4) - begin);
    SharedAccessState &s = words_[word];
    if (from == 0 && to == 4) {
      s.writeEpoch = 0, s.readEpoch = 0, s.split = false;
      continue;
    }
    if (!s.split) split(word);
    SharedAccessState *b = bytes_.data() + word * 4;
    for (unsigned i = from; i < to; ++i) b[i].writeEpoch = 0, b[i].readEpoch = 0;
    // (The word merges back at its next whole-word access, which knows the interval.)
  }
}

SharedAccessState SharedRaceShadow::byteState(uint64_t address) const {
  const SharedAccessState &w = words_[address >> 2];
  SharedAccessState s = w.split ? bytes_[address] : w;
  s.split = false;
  return s;
}

} // namespace ptxforge::emu
