// Retries with exponential back-off and jitter, honouring Retry-After.
// Internal to the llm library (the HTTP backends use it).
#pragma once

#include "llm/Backend.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string_view>

namespace ptxforge::llm {

struct RetryPolicy {
  int maxRetries = 4;
  std::chrono::milliseconds initialBackoff{1'000};
  std::chrono::milliseconds maxBackoff{30'000};
  std::chrono::milliseconds maxRetryAfter{120'000};
};

/// The back-off before retry `retryIndex` (0-based): the cap
/// min(maxBackoff, initialBackoff·2^retryIndex) scaled by (1 + unitRandom)/2,
/// i.e. between half of the cap and all of it. `unitRandom` is in [0, 1].
std::chrono::milliseconds backoffDelay(const RetryPolicy &policy, int retryIndex, double unitRandom);

/// Parses a Retry-After value: delay-seconds ("2", "1.5") or an HTTP-date
/// (relative to `now`; a past date is 0). std::nullopt when neither.
std::optional<std::chrono::milliseconds> parseRetryAfter(std::string_view value,
                                                         std::chrono::system_clock::time_point now);

/// What one attempt produced, and whether its failure may be retried.
struct AttemptResult {
  Result<Completion> result;
  bool retryable = false;
  std::optional<std::chrono::milliseconds> retryAfter;
};

/// Runs `attempt(1)`, `attempt(2)`, ... until one succeeds, fails for good, or
/// maxRetries retries are spent. Waits between attempts (cancellable through
/// context.stop), calling context.onRetry first. The final error says how many
/// attempts were made; a Retry-After above maxRetryAfter ends the retries with
/// the server's error and says so. Sets Completion::attempts.
Result<Completion> runWithRetries(const RetryPolicy &policy, const CallContext &context, std::string_view who,
                                  const std::function<AttemptResult(int attempt)> &attempt);

} // namespace ptxforge::llm
