// Bounded file and stream reading (see InputReader.h).
#include "support/InputReader.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace ptxforge {

namespace {

std::string tooLargeMessage(const std::string &name, size_t maxBytes) {
  return "'" + name + "' is larger than the input limit of " + describeByteSize(maxBytes) +
         "; raise it with the environment variable " + kMaxInputBytesEnv + " (e.g. " + kMaxInputBytesEnv +
         "=256M)";
}

/// Reads to end of stream, one chunk at a time, stopping one byte past the cap
/// so that "exactly at the limit" and "over it" can be told apart.
Result<std::string> readChunks(std::FILE *stream, const std::string &name, size_t maxBytes) {
  std::string text;
  char chunk[1 << 16];
  while (true) {
    size_t left = maxBytes - text.size(); // text.size() <= maxBytes here
    size_t want = left < sizeof chunk ? left + 1 : sizeof chunk;
    size_t got = std::fread(chunk, 1, want, stream);
    text.append(chunk, got);
    if (text.size() > maxBytes) return makeError(ErrorKind::InvalidInput, tooLargeMessage(name, maxBytes));
    if (got < want) {
      if (std::ferror(stream)) {
        int saved = errno;
        // EISDIR: fopen succeeds on a directory on Linux; the first read fails.
        if (saved == EISDIR) return makeError(ErrorKind::InvalidInput, "'" + name + "' is a directory, not a file");
        return makeError(ErrorKind::Io, "cannot read '" + name + "': " + std::strerror(saved ? saved : EIO));
      }
      return text; // end of stream
    }
  }
}

} // namespace

Result<size_t> parseByteSize(const std::string &text) {
  auto bad = [&] {
    return makeError(ErrorKind::InvalidInput,
                     "'" + text + "' is not a size; write a byte count with an optional K, M or G suffix (e.g. 256M)");
  };
  if (text.empty()) return bad();
  size_t digitsEnd = 0;
  while (digitsEnd < text.size() && text[digitsEnd] >= '0' && text[digitsEnd] <= '9') ++digitsEnd;
  if (digitsEnd == 0 || digitsEnd > 19) return bad();
  unsigned long long value = std::strtoull(text.substr(0, digitsEnd).c_str(), nullptr, 10);
  std::string suffix = text.substr(digitsEnd);
  unsigned shift = 0;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") shift = 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") shift = 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") shift = 30;
  else if (!suffix.empty()) return bad();
  if (value == 0 || value > (std::numeric_limits<size_t>::max() >> shift) - 1) return bad();
  return static_cast<size_t>(value) << shift;
}

Result<size_t> maxInputBytesFromEnvironment() {
  const char *value = std::getenv(kMaxInputBytesEnv);
  if (!value || !*value) return kDefaultMaxInputBytes;
  Result<size_t> parsed = parseByteSize(value);
  if (!parsed) return makeError(ErrorKind::InvalidInput, std::string(kMaxInputBytesEnv) + ": " + parsed.error().message);
  return parsed;
}

Result<std::string> readFileBounded(const std::string &path, size_t maxBytes) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int saved = errno;
    return makeError(ErrorKind::Io, saved == ENOENT ? "file-not-found" : "", "cannot open '" + path + "': " + std::strerror(saved));
  }
  if (S_ISDIR(info.st_mode)) return makeError(ErrorKind::InvalidInput, "'" + path + "' is a directory, not a file");
  // A regular file's size is known up front: refuse before reading a byte.
  if (S_ISREG(info.st_mode) && static_cast<unsigned long long>(info.st_size) > maxBytes)
    return makeError(ErrorKind::InvalidInput, tooLargeMessage(path, maxBytes));
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file) return makeError(ErrorKind::Io, "cannot open '" + path + "': " + std::strerror(errno));
  Result<std::string> text = readChunks(file, path, maxBytes);
  std::fclose(file);
  return text;
}

Result<std::string> readStreamBounded(std::FILE *stream, const std::string &name, size_t maxBytes) {
  return readChunks(stream, name, maxBytes);
}

std::string describeByteSize(size_t bytes) {
  static const char *const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  value /= 1024;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  if (value == static_cast<double>(static_cast<unsigned long long>(value)))
    std::snprintf(buffer, sizeof buffer, "%llu %s", static_cast<unsigned long long>(value), kUnits[unit]);
  else
    std::snprintf(buffer, sizeof buffer, "%.1f %s", value, kUnits[unit]);
  return buffer;
}

bool writeFileAtomically(const std::filesystem::path &path, std::string_view data) {
  static std::atomic<uint64_t> counter{0};
  std::filesystem::path temporary = path;
  temporary += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream stream(temporary, std::ios::binary | std::ios::trunc);
    if (!stream) return false;
    stream.write(data.data(), static_cast<std::streamsize>(data.size()));
    stream.flush();
    if (!stream) {
      std::error_code ec;
      std::filesystem::remove(temporary, ec);
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    return false;
  }
  return true;
}

std::filesystem::path cacheRoot() {
  if (const char *dir = std::getenv("PTXFORGE_CACHE_DIR"); dir && *dir) return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "ptxforge";
  if (const char *home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "ptxforge";
  std::error_code ec;
  return std::filesystem::temp_directory_path(ec) / "ptxforge-cache";
}

} // namespace ptxforge
