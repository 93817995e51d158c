// Parallel: runs a function over chunk indices on several threads, each
// thread taking the next chunk until none are left. For work whose chunks are
// independent (input generation, output comparison), so that the result is
// the same for any thread count.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace ptxforge {

/// Calls `work(chunk)` for every chunk in [0, chunks), on at most `threads`
/// threads (0: one per core; the calling thread is one of them).
template <typename Work> void forEachChunk(size_t chunks, unsigned threads, Work &&work) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const unsigned workers = static_cast<unsigned>(std::min<size_t>(threads, chunks));
  if (workers <= 1) {
    for (size_t chunk = 0; chunk < chunks; ++chunk) work(chunk);
    return;
  }
  std::atomic<size_t> next{0};
  auto run = [&] {
    for (size_t chunk = next++; chunk < chunks; chunk = next++) work(chunk);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < workers; ++t) pool.emplace_back(run);
  run();
  for (std::thread &thread : pool) thread.join();
}

} // namespace ptxforge
