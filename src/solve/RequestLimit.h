// A bound on model requests in flight shared by several solve runs: an eval
// runs many tasks at once and `-j N` bounds the requests of all of them
// together, not of each task. Waiters are served in order of their priority
// (lowest first; an eval gives a task's place in the suite), so that under a
// full pool earlier tasks finish first and their results come in suite order
// as far as the pool allows. A stop token wakes every waiter.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <stop_token>
#include <utility>

namespace ptxforge::solve {

class RequestLimit {
public:
  /// At most `limit` (>= 1) requests hold a permit at once.
  explicit RequestLimit(int limit);
  RequestLimit(const RequestLimit &) = delete;
  RequestLimit &operator=(const RequestLimit &) = delete;

  /// Waits for a permit; false (and no permit) when `stop` was requested first.
  /// Among waiters the lowest `priority` goes first, ties in arrival order.
  bool acquire(std::stop_token stop, int64_t priority = 0);
  void release();

  int limit() const { return limit_; }
  /// Permits held now.
  int inFlight() const;
  /// The most permits held at once so far.
  int peak() const;

  /// A permit held for a scope.
  class Permit {
  public:
    Permit() = default;
    Permit(RequestLimit *owner) : owner_(owner) {}
    Permit(Permit &&other) noexcept
        : owner_(std::exchange(other.owner_, nullptr)) {}
    Permit &operator=(Permit &&other) noexcept {
      if (this != &other) {
        reset();
        owner_ = std::exchange(other.owner_, nullptr);
      }
      return *this;
    }
    ~Permit() { reset(); }
    explicit operator bool() const { return owner_ != nullptr; }
    void reset() {
      if (owner_)
        owner_->release();
      owner_ = nullptr;
    }

  private:
    RequestLimit *owner_ = nullptr;
  };
  /// acquire() as a Permit; an empty Permit when stopped.
  Permit permit(std::stop_token stop, int64_t priority = 0) {
    return acquire(std::move(stop), priority) ? Permit(this) : Permit();
  }

private:
  const int limit_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  int held_ = 0;
  int peak_ = 0;
  uint64_t arrivals_ = 0;
  std::set<std::pair<int64_t, uint64_t>> waiting_; ///< (priority, arrival)
};

} // namespace ptxforge::solve
