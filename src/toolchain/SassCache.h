// SassCache: SASS statistics remembered by cubin, so that nvdisasm runs once
// per distinct cubin instead of once per candidate (duplicates, repeated
// evals, the reference compiled again for every run). In memory for the
// process and on disk under the user cache folder, both bounded.
#pragma once

#include "toolchain/SassStats.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ptxforge::toolchain {

/// Bounds of the cache. Entries hold the counts and the SASS text (a few KiB
/// to a few hundred KiB per cubin).
struct SassCacheLimits {
  size_t memoryEntries = 512;           ///< per process; the oldest entry goes first
  uint64_t diskBytes = 64ull << 20;     ///< the folder's size; the least recently written go first
  /// $PTXFORGE_SASS_CACHE=0 turns the cache off (every call runs nvdisasm);
  /// $PTXFORGE_SASS_CACHE_BYTES=N[K|M|G] sets diskBytes (0: no disk cache).
  static SassCacheLimits fromEnvironment();
  bool enabled = true;
};

/// The cache folder: $PTXFORGE_CACHE_DIR, $XDG_CACHE_HOME/ptxforge,
/// ~/.cache/ptxforge, else <tmp>/ptxforge-cache (the folder the reference and
/// device-ceiling caches use), plus "sass".
std::filesystem::path sassCacheDir();

/// The key of a cubin: the SHA-256 of its bytes (lowercase hex).
std::string sassCacheKey(const std::vector<uint8_t> &cubin);

/// The statistics stored for `key` by the nvdisasm `tool` identifies (its
/// path, size and modification time: another nvdisasm is a miss); memory
/// first, then disk (a disk hit is kept in memory too). A missing, corrupt or
/// foreign entry is a miss.
std::optional<SassStats> lookupSassStats(const std::string &key, const std::string &tool,
                                         const SassCacheLimits &limits);
/// Remembers `stats` for `key` in memory and, best effort, on disk (an
/// unwritable cache only costs time), then trims both to `limits`.
void rememberSassStats(const std::string &key, const std::string &tool, const SassStats &stats,
                       const SassCacheLimits &limits);

/// Forgets the in-memory entries (tests: the next lookup goes to disk).
void clearSassMemoryCache();

/// "PATH SIZE MTIME" of an executable: what a cached entry was made by.
std::string toolIdentity(const std::string &path);

} // namespace ptxforge::toolchain
