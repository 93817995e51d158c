// Retry loop and back-off arithmetic.
#include "llm/Retry.h"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <random>
#include <string>
#include <thread>

namespace ptxforge::llm {

using std::chrono::milliseconds;

milliseconds backoffDelay(const RetryPolicy &policy, int retryIndex, double unitRandom) {
  double cap = static_cast<double>(policy.initialBackoff.count()) * std::ldexp(1.0, std::min(retryIndex, 30));
  cap = std::min(cap, static_cast<double>(policy.maxBackoff.count()));
  unitRandom = std::clamp(unitRandom, 0.0, 1.0);
  return milliseconds(static_cast<int64_t>(cap * (1.0 + unitRandom) / 2.0));
}

std::optional<milliseconds> parseRetryAfter(std::string_view value, std::chrono::system_clock::time_point now) {
  while (!value.empty() && value.front() == ' ')
    value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ')
    value.remove_suffix(1);
  if (value.empty())
    return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(value.front()))) {
    // delay-seconds; some servers send a fraction, which we accept.
    double seconds = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (error != std::errc() || end != value.data() + value.size() || !std::isfinite(seconds) || seconds < 0)
      return std::nullopt;
    return milliseconds(static_cast<int64_t>(std::min(seconds, 1e9) * 1000));
  }
  // HTTP-date; curl_getdate parses the RFC 7231 forms and is thread-safe.
  std::string text(value);
  time_t when = curl_getdate(text.c_str(), nullptr);
  if (when < 0)
    return std::nullopt;
  auto delay = std::chrono::system_clock::from_time_t(when) - now;
  return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(delay));
}

namespace {

double unitRandom() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

/// Sleeps for `delay` unless `stop` is requested first; false when stopped.
bool sleepUnlessStopped(milliseconds delay, const std::stop_token &stop) {
  auto deadline = std::chrono::steady_clock::now() + delay;
  while (std::chrono::steady_clock::now() < deadline) {
    if (stop.stop_requested())
      return false;
    auto left = deadline - std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, milliseconds(20)));
  }
  return !stop.stop_requested();
}

std::string seconds(milliseconds delay) {
  if (delay.count() % 1000 == 0)
    return std::to_string(delay.count() / 1000) + " s";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f s", static_cast<double>(delay.count()) / 1000.0);
  return buffer;
}

} // namespace

Result<Completion> runWithRetries(const RetryPolicy &policy, const CallContext &context, std::string_view who,
                                  const std::function<AttemptResult(int attempt)> &attempt) {
  for (int number = 1;; ++number) {
    AttemptResult outcome = attempt(number);
    if (outcome.result) {
      outcome.result->attempts = number;
      return std::move(outcome.result);
    }
    Error error = outcome.result.error();
    auto giveUp = [&](std::string why) {
      if (!why.empty())
        error.message += " (" + why + ")";
      return Result<Completion>(error);
    };
    if (!outcome.retryable)
      return giveUp(number > 1 ? "attempt " + std::to_string(number) : "");
    if (number > policy.maxRetries)
      return giveUp(number > 1 ? "gave up after " + std::to_string(number) + " attempts" : "");
    milliseconds delay = backoffDelay(policy, number - 1, unitRandom());
    if (outcome.retryAfter) {
      if (*outcome.retryAfter > policy.maxRetryAfter)
        return giveUp("server asked to retry after " + seconds(*outcome.retryAfter) + ", more than the " +
                      seconds(policy.maxRetryAfter) + " limit");
      delay = std::max(delay, *outcome.retryAfter);
    }
    if (context.onRetry)
      context.onRetry(RetryNotice{number, delay, error.message});
    if (!sleepUnlessStopped(delay, context.stop))
      return makeError(ErrorKind::Io, std::string(who) + ": cancelled while waiting to retry after: " + error.message);
  }
}

} // namespace ptxforge::llm
