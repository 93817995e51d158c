// Subprocess: RAII temporary files for the external CUDA tools (ptxas,
// nvdisasm), which run through support/Process.h. Internal to the toolchain
// library.
#pragma once

#include "support/Process.h"
#include "support/Result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::toolchain {

/// A uniquely named file under $TMPDIR (or /tmp), removed on destruction.
class TempFile {
public:
  /// Creates an empty file whose name ends with `suffix` (e.g. ".ptx").
  static Result<TempFile> create(std::string_view suffix);

  TempFile(TempFile &&other) noexcept;
  TempFile &operator=(TempFile &&other) noexcept;
  TempFile(const TempFile &) = delete;
  TempFile &operator=(const TempFile &) = delete;
  ~TempFile();

  const std::string &path() const { return path_; }
  /// Replaces the file's content.
  Result<void> write(std::string_view bytes) const;
  /// Reads the whole file.
  Result<std::vector<uint8_t>> read() const;

private:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

} // namespace ptxforge::toolchain
