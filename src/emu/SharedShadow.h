// racecheck's shadow of one CTA's shared memory: per 4-byte word, the last
// write and the reads of the current barrier interval, by warp. A word that
// sub-word accesses leave with bytes in different states is split into four
// byte entries until its bytes agree again, so the common accesses (whole,
// aligned words) check one entry per word and the answer is the same as a
// shadow of every byte would give.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ptxforge::emu {

/// The accesses to one shared byte, or to all four bytes of a word, that
/// racecheck remembers. An epoch is a barrier interval: every barrier gives
/// the CTA a new one, never used before by this host thread's shadows, so a
/// state whose epoch is not the current one says nothing (no clearing).
struct SharedAccessState {
  uint32_t writeEpoch = 0, readEpoch = 0;
  uint16_t writerWarp = 0, readerWarp = 0; ///< readerWarp kSeveralWarps: several warps read
  uint8_t writerLane = 0, readerLane = 0;
  bool split = false; ///< word entries: the bytes differ, each byte's entry holds its state
  uint32_t writeLine = 0, readLine = 0;
};

class SharedRaceShadow {
public:
  static constexpr uint16_t kSeveralWarps = 0xffff;

  /// One thread's access, in barrier interval `epoch`.
  struct Access {
    uint32_t epoch = 0;
    uint16_t warp = 0;
    uint8_t lane = 0;
    bool write = false;
    uint32_t line = 0;
  };
  /// A hazard: the first byte where the access meets another warp's access
  /// of the same interval, and that byte's state before the access.
  struct Conflict {
    uint64_t address = 0;
    SharedAccessState state;
  };

  /// Covers `bytes` bytes of shared memory (grows only; old states stay,
  /// their epochs make them stale).
  void resize(size_t bytes);

  /// Checks an access of [address, address + bytes) and records it; false,
  /// with `conflict` set, at the first byte in address order whose state
  /// shows another warp's write (or, for a write, another warp's read) in
  /// this interval; the bytes before it are recorded, as a per-byte shadow
  /// would have them.
  bool access(uint64_t address, uint32_t bytes, const Access &a, Conflict &conflict) {
    if (((address | bytes) & 3) == 0) [[likely]]
      return accessWords(address >> 2, bytes >> 2, a, conflict);
    return partialAccess(address, bytes, a, conflict);
  }
  /// access() of `count` whole words from word `first`.
  [[gnu::always_inline]] bool accessWords(uint64_t first, uint32_t count, const Access &a, Conflict &conflict) {
    for (uint64_t word = first; word < first + count; ++word) {
      SharedAccessState &s = words_[word];
      if (s.split) [[unlikely]] {
        if (!wordBytes(word, 0, 4, a, conflict)) return false;
      } else if (!step(s, a)) [[unlikely]] {
        conflict = {word * 4, s};
        return false;
      }
    }
    return true;
  }

  /// [address, address + bytes) was written by the asynchronous proxy: no
  /// generic access of this interval is remembered there.
  void forget(uint64_t address, uint32_t bytes);

  /// Bytes it holds (about).
  size_t footprint() const { return (words_.capacity() + bytes_.capacity()) * sizeof(SharedAccessState); }

  /// The state of byte `address` (tests).
  SharedAccessState byteState(uint64_t address) const;

  /// Whether the access may go on; records it when it does.
  [[gnu::always_inline]] static bool step(SharedAccessState &s, const Access &a) {
    bool hazard = (s.writeEpoch == a.epoch && s.writerWarp != a.warp) ||
                  (a.write && s.readEpoch == a.epoch && s.readerWarp != a.warp);
    if (hazard) return false;
    if (a.write) {
      s.writeEpoch = a.epoch, s.writerWarp = a.warp, s.writerLane = a.lane, s.writeLine = a.line;
    } else if (s.readEpoch != a.epoch) {
      s.readEpoch = a.epoch, s.readerWarp = a.warp, s.readerLane = a.lane, s.readLine = a.line;
    } else if (s.readerWarp != a.warp) {
      s.readerWarp = kSeveralWarps;
    }
    return true;
  }

private:
  /// Bytes [first, end) of word `word` (0 <= first < end <= 4) through the
  /// byte entries (splitting the word first), then merged back when its four
  /// bytes agree.
  bool wordBytes(uint64_t word, unsigned first, unsigned end, const Access &a, Conflict &conflict);
  /// An access that is not whole aligned words.
  bool partialAccess(uint64_t address, uint32_t bytes, const Access &a, Conflict &conflict);
  void split(uint64_t word);
  void mergeIfEqual(uint64_t word, uint32_t epoch);

  std::vector<SharedAccessState> words_;
  std::vector<SharedAccessState> bytes_; ///< 4 per word, made at the first split
};

} // namespace ptxforge::emu
