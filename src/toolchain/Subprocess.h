// Subprocess: running an external CUDA tool (ptxas, nvdisasm) without a shell,
// plus RAII temporary files. Internal to the toolchain library.
#pragma once

#include "support/Result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::toolchain {

/// What a finished child process left behind.
struct ProcessOutput {
  int exitCode = -1; ///< exit status, or 128+signal when killed by a signal
  std::string standardOutput;
  std::string standardError;
};

/// Runs `argv[0]` (a path) with `argv` via posix_spawn, no shell involved,
/// capturing stdout and stderr. An Error only when the process cannot start.
Result<ProcessOutput> runProcess(const std::vector<std::string> &argv);

/// Searches PATH for an executable named `name`.
std::optional<std::string> findOnPath(std::string_view name);

/// True when `path` names an executable regular file.
bool isExecutableFile(const std::string &path);

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
