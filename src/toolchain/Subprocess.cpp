// Subprocess: RAII temporary files.
#include "toolchain/Subprocess.h"

#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace ptxforge::toolchain {

namespace {

Error systemError(std::string_view call, int errorNumber) {
  return makeError(ErrorKind::Io, std::string(call) + " failed: " + std::strerror(errorNumber));
}

} // namespace

Result<TempFile> TempFile::create(std::string_view suffix) {
  const char *dir = std::getenv("TMPDIR");
  std::string pattern = std::string(dir && *dir ? dir : "/tmp") + "/ptxforge-XXXXXX" + std::string(suffix);
  int fd = ::mkstemps(pattern.data(), static_cast<int>(suffix.size()));
  if (fd < 0)
    return systemError("mkstemps(" + pattern + ")", errno);
  ::close(fd);
  return TempFile(std::move(pattern));
}

TempFile::TempFile(TempFile &&other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }

TempFile &TempFile::operator=(TempFile &&other) noexcept {
  if (this != &other) {
    if (!path_.empty())
      ::unlink(path_.c_str());
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

TempFile::~TempFile() {
  if (!path_.empty())
    ::unlink(path_.c_str());
}

Result<void> TempFile::write(std::string_view bytes) const {
  std::ofstream stream(path_, std::ios::binary | std::ios::trunc);
  stream.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!stream)
    return makeError(ErrorKind::Io, "cannot write temporary file " + path_);
  return {};
}

Result<std::vector<uint8_t>> TempFile::read() const {
  std::ifstream stream(path_, std::ios::binary);
  if (!stream)
    return makeError(ErrorKind::Io, "cannot read temporary file " + path_);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  return bytes;
}

} // namespace ptxforge::toolchain
