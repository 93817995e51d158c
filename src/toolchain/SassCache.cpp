// SassCache: see SassCache.h. One JSON file per cubin under <cache>/sass,
// written atomically (a temporary file renamed), so that concurrent processes
// (eval workers, two evals on one machine) never read half an entry.
#include "toolchain/SassCache.h"

#include "support/InputReader.h"
#include "support/Sha256.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>

namespace ptxforge::toolchain {

namespace {

/// Bumped when the entry's encoding changes: older entries are misses.
constexpr int kEntryFormat = 1;

struct MemoryCache {
  std::mutex mutex;
  std::map<std::string, std::pair<std::string, SassStats>> entries; ///< key -> (tool, stats)
  std::deque<std::string> order;                                    ///< insertion order, oldest first
};

MemoryCache &memoryCache() {
  static MemoryCache cache;
  return cache;
}

nlohmann::json encodeCounts(const SassCounts &counts) {
  auto widths = [](const std::map<int, int> &byWidth) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto &[width, n] : byWidth) out[std::to_string(width)] = n;
    return out;
  };
  return {{"instructions", counts.instructions}, {"opcodes", counts.opcodes},
          {"spill_loads", counts.spillLoads},     {"spill_stores", counts.spillStores},
          {"ldg", widths(counts.globalLoadWidths)}, {"stg", widths(counts.globalStoreWidths)},
          {"ffma", counts.ffma},                  {"fmul", counts.fmul},
          {"fadd", counts.fadd},                  {"tensor", counts.tensorCoreOps},
          {"barriers", counts.barriers}};
}

SassCounts decodeCounts(const nlohmann::json &json) {
  auto widths = [](const nlohmann::json &byWidth) {
    std::map<int, int> out;
    for (const auto &[width, n] : byWidth.items()) out[std::stoi(width)] = n.get<int>();
    return out;
  };
  SassCounts counts;
  counts.instructions = json.at("instructions").get<int>();
  counts.opcodes = json.at("opcodes").get<std::map<std::string, int>>();
  counts.spillLoads = json.at("spill_loads").get<int>();
  counts.spillStores = json.at("spill_stores").get<int>();
  counts.globalLoadWidths = widths(json.at("ldg"));
  counts.globalStoreWidths = widths(json.at("stg"));
  counts.ffma = json.at("ffma").get<int>();
  counts.fmul = json.at("fmul").get<int>();
  counts.fadd = json.at("fadd").get<int>();
  counts.tensorCoreOps = json.at("tensor").get<int>();
  counts.barriers = json.at("barriers").get<int>();
  return counts;
}

std::string encodeEntry(const std::string &tool, const SassStats &stats) {
  nlohmann::json functions = nlohmann::json::object();
  for (const auto &[name, counts] : stats.functions) functions[name] = encodeCounts(counts);
  nlohmann::json entry = {{"format", kEntryFormat},       {"tool", tool},
                          {"arch", stats.arch},           {"producer", stats.producer},
                          {"total", encodeCounts(stats.total)}, {"functions", std::move(functions)},
                          {"code", stats.code}};
  // Function names and SASS text are the cubin's bytes, not always UTF-8.
  return entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<SassStats> decodeEntry(const std::string &text, const std::string &tool) {
  nlohmann::json entry = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (entry.is_discarded() || !entry.is_object()) return std::nullopt;
  try {
    if (entry.at("format").get<int>() != kEntryFormat || entry.at("tool").get<std::string>() != tool)
      return std::nullopt;
    SassStats stats;
    stats.arch = entry.at("arch").get<std::string>();
    stats.producer = entry.at("producer").get<std::string>();
    stats.total = decodeCounts(entry.at("total"));
    for (const auto &[name, counts] : entry.at("functions").items()) stats.functions[name] = decodeCounts(counts);
    stats.code = entry.at("code").get<std::string>();
    return stats;
  } catch (const std::exception &) {
    return std::nullopt; // a corrupt entry is a miss; the next store overwrites it
  }
}

void rememberInMemory(const std::string &key, const std::string &tool, const SassStats &stats,
                      const SassCacheLimits &limits) {
  if (limits.memoryEntries == 0) return;
  MemoryCache &cache = memoryCache();
  std::lock_guard lock(cache.mutex);
  auto [it, inserted] = cache.entries.insert_or_assign(key, std::make_pair(tool, stats));
  (void)it;
  if (inserted) cache.order.push_back(key);
  while (cache.entries.size() > limits.memoryEntries && !cache.order.empty()) {
    cache.entries.erase(cache.order.front());
    cache.order.pop_front();
  }
}

/// Removes the least recently written entries until the folder holds at most
/// three quarters of the limit (so that a full cache is not trimmed on every write).
void trimDisk(const std::filesystem::path &dir, uint64_t limitBytes) {
  std::error_code error;
  std::vector<std::tuple<std::filesystem::file_time_type, uint64_t, std::filesystem::path>> files;
  uint64_t total = 0;
  for (const auto &entry : std::filesystem::directory_iterator(dir, error)) {
    std::error_code ignored;
    if (!entry.is_regular_file(ignored)) continue;
    uint64_t size = entry.file_size(ignored);
    files.emplace_back(entry.last_write_time(ignored), size, entry.path());
    total += size;
  }
  if (total <= limitBytes) return;
  std::sort(files.begin(), files.end());
  for (const auto &[when, size, path] : files) {
    if (total <= limitBytes / 4 * 3) break;
    std::error_code ignored;
    if (std::filesystem::remove(path, ignored)) total -= size;
  }
}

} // namespace

SassCacheLimits SassCacheLimits::fromEnvironment() {
  SassCacheLimits limits;
  if (const char *on = std::getenv("PTXFORGE_SASS_CACHE"); on && std::string(on) == "0") limits.enabled = false;
  if (const char *bytes = std::getenv("PTXFORGE_SASS_CACHE_BYTES"); bytes && *bytes)
    if (Result<size_t> parsed = parseByteSize(bytes)) limits.diskBytes = *parsed;
  return limits;
}

std::filesystem::path sassCacheDir() { return cacheRoot() / "sass"; }

std::string sassCacheKey(const std::vector<uint8_t> &cubin) {
  return sha256Hex(std::string_view(reinterpret_cast<const char *>(cubin.data()), cubin.size()));
}

std::string toolIdentity(const std::string &path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return path;
  return path + " " + std::to_string(info.st_size) + " " + std::to_string(info.st_mtim.tv_sec) + "." +
         std::to_string(info.st_mtim.tv_nsec);
}

std::optional<SassStats> lookupSassStats(const std::string &key, const std::string &tool,
                                         const SassCacheLimits &limits) {
  if (!limits.enabled) return std::nullopt;
  {
    MemoryCache &cache = memoryCache();
    std::lock_guard lock(cache.mutex);
    if (auto found = cache.entries.find(key); found != cache.entries.end() && found->second.first == tool)
      return found->second.second;
  }
  if (limits.diskBytes == 0) return std::nullopt;
  Result<std::string> text = readFileBounded((sassCacheDir() / (key + ".json")).string(), limits.diskBytes);
  if (!text) return std::nullopt;
  std::optional<SassStats> stats = decodeEntry(*text, tool);
  if (stats) rememberInMemory(key, tool, *stats, limits);
  return stats;
}

void rememberSassStats(const std::string &key, const std::string &tool, const SassStats &stats,
                       const SassCacheLimits &limits) {
  if (!limits.enabled) return;
  rememberInMemory(key, tool, stats, limits);
  if (limits.diskBytes == 0) return;
  std::string text = encodeEntry(tool, stats);
  if (text.size() > limits.diskBytes) return;
  const std::filesystem::path dir = sassCacheDir();
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !writeFileAtomically(dir / (key + ".json"), text)) return;
  // A directory scan per write would cost more than the cache saves on a
  // large folder: trim on a process's first write, then whenever it has
  // written an eighth of the limit since the last trim (the folder stays
  // under 9/8 of the limit per writing process).
  static std::atomic<bool> trimmedOnce{false};
  static std::atomic<uint64_t> writtenSinceTrim{0};
  if (!trimmedOnce.exchange(true) || (writtenSinceTrim += text.size()) > limits.diskBytes / 8) {
    writtenSinceTrim = 0;
    trimDisk(dir, limits.diskBytes);
  }
}

void clearSassMemoryCache() {
  MemoryCache &cache = memoryCache();
  std::lock_guard lock(cache.mutex);
  cache.entries.clear();
  cache.order.clear();
}

} // namespace ptxforge::toolchain
