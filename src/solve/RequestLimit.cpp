// The shared bound on requests in flight (RequestLimit.h).
#include "solve/RequestLimit.h"

#include <algorithm>
#include <cassert>

namespace ptxforge::solve {

RequestLimit::RequestLimit(int limit) : limit_(std::max(1, limit)) {}

bool RequestLimit::acquire(std::stop_token stop, int64_t priority) {
  std::unique_lock lock(mutex_);
  const std::pair<int64_t, uint64_t> ticket{priority, arrivals_++};
  waiting_.insert(ticket);
  // Served when a permit is free and no waiter ranks before this one.
  bool served = wake_.wait(lock, stop, [&] {
    return held_ < limit_ && *waiting_.begin() == ticket;
  });
  waiting_.erase(ticket);
  if (!served) {
    // The head of the queue may have changed: let the next waiter look.
    wake_.notify_all();
    return false;
  }
  ++held_;
  peak_ = std::max(peak_, held_);
  // Another permit may still be free for the next in line.
  wake_.notify_all();
  return true;
}

void RequestLimit::release() {
  {
    std::lock_guard lock(mutex_);
    assert(held_ > 0 && "RequestLimit::release without a permit");
    if (held_ > 0)
      --held_;
  }
  wake_.notify_all();
}

int RequestLimit::inFlight() const {
  std::lock_guard lock(mutex_);
  return held_;
}

int RequestLimit::peak() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

} // namespace ptxforge::solve
