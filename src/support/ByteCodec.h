// The flat codec of the workers' messages (the exec worker's, the compile
// worker's): a fixed-size value is its bytes as the host lays them out (both
// ends are the same build on the same machine), a string or a blob is a u64
// length and then its bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace ptxforge {

class ByteWriter {
public:
  template <typename T> void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto *raw = reinterpret_cast<const uint8_t *>(&value);
    out_.insert(out_.end(), raw, raw + sizeof(T));
  }
  void putBool(bool value) { put<uint8_t>(value ? 1 : 0); }
  void putBytes(const void *data, uint64_t size) {
    put<uint64_t>(size);
    const auto *raw = static_cast<const uint8_t *>(data);
    out_.insert(out_.end(), raw, raw + size);
  }
  void putBytes(const std::vector<uint8_t> &bytes) { putBytes(bytes.data(), bytes.size()); }
  void putString(const std::string &text) { putBytes(text.data(), text.size()); }
  std::vector<uint8_t> take() { return std::move(out_); }

private:
  std::vector<uint8_t> out_;
};

/// Reads fields back in order; the first overrun marks the reader failed and
/// yields zeros from then on, so a decoder reads every field unconditionally
/// and asks failed() and atEnd() once at the end.
class ByteReader {
public:
  explicit ByteReader(const std::vector<uint8_t> &in) : in_(in) {}
  template <typename T> T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value{};
    if (take(sizeof(T))) std::memcpy(&value, in_.data() + position_ - sizeof(T), sizeof(T));
    return value;
  }
  bool getBool() { return get<uint8_t>() != 0; }
  std::vector<uint8_t> getBytes() {
    const uint64_t size = get<uint64_t>();
    if (!take(size)) return {};
    return std::vector<uint8_t>(in_.begin() + static_cast<std::ptrdiff_t>(position_ - size),
                                in_.begin() + static_cast<std::ptrdiff_t>(position_));
  }
  std::string getString() {
    std::vector<uint8_t> raw = getBytes();
    return std::string(raw.begin(), raw.end());
  }
  /// A u32 element count, refused (failed, 0) when that many elements of
  /// `elementBytes` could not fit in what is left.
  uint32_t getCount(size_t elementBytes) {
    const uint32_t count = get<uint32_t>();
    if (uint64_t(count) * elementBytes > in_.size() - position_) return fail(), 0;
    return count;
  }
  void fail() { failed_ = true; }
  bool failed() const { return failed_; }
  bool atEnd() const { return position_ == in_.size(); }
  size_t size() const { return in_.size(); }

private:
  bool take(uint64_t size) {
    if (failed_ || size > in_.size() - position_) {
      failed_ = true;
      return false;
    }
    position_ += size;
    return true;
  }
  const std::vector<uint8_t> &in_;
  size_t position_ = 0;
  bool failed_ = false;
};

} // namespace ptxforge
