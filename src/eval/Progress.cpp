// The eval's progress line (Progress.h).
#include "eval/Progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ptxforge::eval {

std::string durationText(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    seconds = 0;
  auto whole = static_cast<int64_t>(std::llround(seconds));
  if (whole < 60)
    return fmt::format("{}s", whole);
  if (whole < 3600)
    return fmt::format("{}m{:02}s", whole / 60, whole % 60);
  return fmt::format("{}h{:02}m", whole / 3600, (whole % 3600) / 60);
}

ProgressMeter::ProgressMeter(int samples, int rounds,
                             std::optional<TokenPrice> price,
                             Clock::time_point start)
    : samples_(std::max(0, samples)), rounds_(std::max(1, rounds)),
      price_(price), start_(start) {}

void ProgressMeter::alreadyDone(int samples) {
  std::lock_guard lock(mutex_);
  samplesDone_ += samples;
  attemptsDone_ += samples * rounds_;
}

void ProgressMeter::attemptDone(int task, int slot, int round, bool asked,
                                Clock::time_point) {
  std::lock_guard lock(mutex_);
  ++attemptsDone_;
  if (asked)
    ++attemptsAsked_;
  int &rounds = roundsDone_[{task, slot}];
  if (rounds < 0)
    return; // the sample is already done
  ++rounds;
  // Its last round ends a sample (a resume replays the rounds before it).
  if (round >= rounds_ || rounds >= rounds_) {
    ++samplesDone_;
    rounds = -1;
  }
  samplesDone_ = std::min(samplesDone_, samples_);
  attemptsDone_ = std::min(attemptsDone_, samples_ * rounds_);
}

void ProgressMeter::addTokens(int64_t promptTokens, int64_t completionTokens) {
  std::lock_guard lock(mutex_);
  promptTokens_ += std::max<int64_t>(0, promptTokens);
  completionTokens_ += std::max<int64_t>(0, completionTokens);
}

int ProgressMeter::samplesDone() const {
  std::lock_guard lock(mutex_);
  return samplesDone_;
}

int64_t ProgressMeter::promptTokens() const {
  std::lock_guard lock(mutex_);
  return promptTokens_;
}

int64_t ProgressMeter::completionTokens() const {
  std::lock_guard lock(mutex_);
  return completionTokens_;
}

std::optional<double> ProgressMeter::cost() const {
  std::lock_guard lock(mutex_);
  if (!price_)
    return std::nullopt;
  return (static_cast<double>(promptTokens_) * price_->promptPerMillion +
          static_cast<double>(completionTokens_) *
              price_->completionPerMillion) /
         1e6;
}

std::string ProgressMeter::line(Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  return lineLocked(now);
}

std::string ProgressMeter::lineLocked(Clock::time_point now) const {
  double elapsed = std::chrono::duration<double>(now - start_).count();
  int percent = samples_ > 0 ? samplesDone_ * 100 / samples_ : 100;
  std::string out = fmt::format("[eval] {}/{} samples ({}%)", samplesDone_,
                                samples_, percent);
  if (rounds_ > 1)
    out += fmt::format(", {}/{} attempts", attemptsDone_, samples_ * rounds_);
  out += "  elapsed " + durationText(elapsed);
  int left = samples_ * rounds_ - attemptsDone_;
  if (left <= 0)
    out += "  done";
  else if (attemptsAsked_ > 0)
    out += "  ETA " + durationText(elapsed / attemptsAsked_ * left);
  else
    out += "  ETA n/a";
  out += fmt::format("  tokens {} (in {}, out {})",
                     promptTokens_ + completionTokens_, promptTokens_,
                     completionTokens_);
  if (price_)
    out +=
        fmt::format("  cost ${:.2f}", (static_cast<double>(promptTokens_) *
                                           price_->promptPerMillion +
                                       static_cast<double>(completionTokens_) *
                                           price_->completionPerMillion) /
                                          1e6);
  return out;
}

std::optional<std::string>
ProgressMeter::lineIfDue(std::chrono::milliseconds interval,
                         Clock::time_point now) {
  std::lock_guard lock(mutex_);
  bool last = samplesDone_ >= samples_;
  if (last && finalShown_)
    return std::nullopt;
  if (!last && lastShown_ && now - *lastShown_ < interval)
    return std::nullopt;
  lastShown_ = now;
  finalShown_ = last;
  return lineLocked(now);
}

std::optional<std::string> ProgressMeter::finalLine(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (finalShown_)
    return std::nullopt;
  finalShown_ = true;
  lastShown_ = now;
  return lineLocked(now);
}

} // namespace ptxforge::eval
