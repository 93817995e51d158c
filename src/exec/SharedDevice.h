// SharedDevice: several executors on one GPU, none of whose work ever runs
// while one of them times a kernel. Each executor is wrapped with the same
// DeviceShare; every call takes the share's lock shared, and the timing calls
// (timeLaunch, timeLibraryCall, flushL2) take it exclusively. Since every call
// of an executor finishes its device work before it returns (launches and
// copies are synchronous), a timing holds the GPU alone from its first warm-up
// to its last event, while the other checks on that GPU go on with their host
// work (input generation, comparison) in the meantime.
#pragma once

#include "exec/Executor.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>

namespace ptxforge::exec {

/// The lock of one GPU, and how often each side had to wait for it.
class DeviceShare {
public:
  std::shared_mutex &mutex() { return mutex_; }
  /// Taken by a timing before it waits for the lock, and in passing by every
  /// other call: a timing waits for the calls already running, not for ones
  /// that start after it asked (no starvation by a stream of short calls).
  std::mutex &turnstile() { return turnstile_; }
  /// Timing calls made (exclusive holds).
  uint64_t timings() const { return timings_.load(); }
  void countTiming() { timings_.fetch_add(1); }

private:
  std::shared_mutex mutex_;
  std::mutex turnstile_;
  std::atomic<uint64_t> timings_{0};
};

/// `inner`, with every call under `share` (shared; exclusive for timing).
std::unique_ptr<Executor> shareDevice(std::unique_ptr<Executor> inner, std::shared_ptr<DeviceShare> share);

} // namespace ptxforge::exec
