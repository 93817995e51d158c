// The progress line of an eval: done/total samples, the time left at the rate
// of this process, and the tokens (and, with a price, the cost) of the
// answers this process received. Thread-safe: the slots of every task report
// to one meter.
//
//   [eval] 37/105 samples (35%), 74/210 attempts  elapsed 1m02s  ETA 1m45s
//   tokens 123456 (in 100000, out 23456)  cost $0.41
//
// A sample is done when its last round's attempt ends; "attempts" (one per
// round per sample) appear when there are several rounds. The ETA counts the
// attempts still to do at the pace of those this process asked the model for
// (attempts answered from the store on a resume cost nothing and are left out
// of the pace); none until one such attempt ended.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace ptxforge::eval {

/// USD per million tokens, as providers list their prices.
struct TokenPrice {
  double promptPerMillion = 0;
  double completionPerMillion = 0;
};

class ProgressMeter {
public:
  using Clock = std::chrono::steady_clock;

  /// `samples` of `rounds` attempts each are to be done; `price` makes a cost.
  ProgressMeter(int samples, int rounds, std::optional<TokenPrice> price,
                Clock::time_point start = Clock::now());

  /// Samples done before this process started (a resume's finished tasks).
  void alreadyDone(int samples);
  /// One (round, slot) attempt of a task ended; `asked`: the model was asked
  /// (it was not read back from the store).
  void attemptDone(int task, int slot, int round, bool asked,
                   Clock::time_point now = Clock::now());
  void addTokens(int64_t promptTokens, int64_t completionTokens);

  int samplesDone() const;
  int64_t promptTokens() const;
  int64_t completionTokens() const;
  /// The cost so far in USD; none without a price.
  std::optional<double> cost() const;

  /// The line as shown above, at `now`.
  std::string line(Clock::time_point now = Clock::now()) const;
  /// The line when it is time to show one: the first attempt, then at most
  /// one every `interval`, and always the last sample; nullopt otherwise.
  std::optional<std::string>
  lineIfDue(std::chrono::milliseconds interval = std::chrono::seconds(2),
            Clock::time_point now = Clock::now());
  /// The line at the end, unless lineIfDue already showed the last sample's.
  std::optional<std::string> finalLine(Clock::time_point now = Clock::now());

private:
  std::string lineLocked(Clock::time_point now) const;

  const int samples_;
  const int rounds_;
  const std::optional<TokenPrice> price_;
  const Clock::time_point start_;
  mutable std::mutex mutex_;
  int samplesDone_ = 0;
  int attemptsDone_ = 0;
  int attemptsAsked_ = 0;
  std::map<std::pair<int, int>, int>
      roundsDone_; ///< (task, slot) → attempts ended
  int64_t promptTokens_ = 0, completionTokens_ = 0;
  std::optional<Clock::time_point> lastShown_;
  bool finalShown_ = false;
};

/// "1m02s", "45s", "2h03m".
std::string durationText(double seconds);

} // namespace ptxforge::eval
