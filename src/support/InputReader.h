// Bounded reading of untrusted input files and standard input. Every tool that
// reads PTX (or other text a model wrote) goes through here, so that
// `lint /dev/zero` stops at a documented limit instead of exhausting memory,
// and a directory or a read error is an error naming the path, never an empty
// input. See docs/limits.md.
#pragma once

#include "support/Result.h"

#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace ptxforge {

/// Default cap on one input: 64 MiB, far above any real PTX module (nvcc's
/// largest kernels are a few MiB) and small enough to keep several in memory.
inline constexpr size_t kDefaultMaxInputBytes = size_t{64} << 20;

/// The environment variable that raises (or lowers) the input cap. Its value
/// is a byte count with an optional K, M or G suffix (binary units): `256M`.
inline constexpr const char *kMaxInputBytesEnv = "PTXFORGE_MAX_INPUT_BYTES";

/// Parses a size such as `4096`, `64K`, `256M` or `2G`; nullopt-like error on
/// anything else (including 0 and overflow).
[[nodiscard]] Result<size_t> parseByteSize(const std::string &text);

/// The input cap: `PTXFORGE_MAX_INPUT_BYTES` when set, else kDefaultMaxInputBytes.
/// A malformed value is an InvalidInput error naming the variable.
[[nodiscard]] Result<size_t> maxInputBytesFromEnvironment();

/// Reads the whole file at `path`, failing (kind InvalidInput) when it is a
/// directory or holds more than `maxBytes` bytes, and (kind Io) when it cannot
/// be opened or read (code "file-not-found" when it does not exist). Works on pipes and character devices (`/dev/stdin`,
/// `/dev/zero`) as well as regular files: the cap is enforced while reading,
/// not from the reported size.
[[nodiscard]] Result<std::string> readFileBounded(const std::string &path, size_t maxBytes);

/// Reads `stream` to its end under the same cap; `name` (e.g. "<stdin>") is
/// used in messages.
[[nodiscard]] Result<std::string> readStreamBounded(std::FILE *stream, const std::string &name, size_t maxBytes);

/// "64 MiB", "1.5 KiB", "17 bytes": sizes in messages.
std::string describeByteSize(size_t bytes);

/// Writes `data` to a unique temporary file beside `path`, then renames it
/// over `path`: readers see the old file or the new one, never half of one.
/// False (and no temporary left behind) when either step fails.
bool writeFileAtomically(const std::filesystem::path &path, std::string_view data);

/// Where ptxforge caches (references, SASS statistics, device ceilings):
/// $PTXFORGE_CACHE_DIR, else $XDG_CACHE_HOME/ptxforge, else ~/.cache/ptxforge
/// (else a ptxforge-cache folder in the system temp directory when HOME is unset).
std::filesystem::path cacheRoot();

} // namespace ptxforge
