// The eval's progress line (eval/Progress.h) at chosen instants: samples done
// when their last round ends, the ETA at the pace of attempts asked (not of
// those read back from the store), tokens, the cost with a price, and when a
// line is due.
#include "eval/Progress.h"

#include <gtest/gtest.h>

#include <chrono>

using namespace ptxforge::eval;
using Clock = ProgressMeter::Clock;
using std::chrono::seconds;

TEST(ProgressMeter, CountsSamplesAtTheirLastRoundAndEstimatesFromAskedAttempts) {
  Clock::time_point start{};
  ProgressMeter meter(4, 2, std::nullopt, start);
  meter.alreadyDone(1); // a resume's finished task: 1 sample, 2 attempts
  EXPECT_EQ(meter.line(start), "[eval] 1/4 samples (25%), 2/8 attempts  elapsed 0s  ETA n/a  tokens 0 (in 0, out 0)");
  // Replayed from the store: done, but no pace yet.
  meter.attemptDone(0, 0, 1, false);
  meter.attemptDone(0, 0, 2, false);
  EXPECT_EQ(meter.samplesDone(), 2);
  // Two attempts asked in 10 s: 5 s each, two attempts left.
  meter.attemptDone(1, 0, 1, true);
  meter.attemptDone(1, 1, 1, true);
  meter.addTokens(3000, 1000);
  EXPECT_EQ(meter.line(start + seconds(10)),
            "[eval] 2/4 samples (50%), 6/8 attempts  elapsed 10s  ETA 10s  tokens 4000 (in 3000, out 1000)");
  meter.attemptDone(1, 0, 2, true);
  meter.attemptDone(1, 1, 2, true);
  EXPECT_EQ(meter.samplesDone(), 4);
  EXPECT_EQ(meter.line(start + seconds(75)),
            "[eval] 4/4 samples (100%), 8/8 attempts  elapsed 1m15s  done  tokens 4000 (in 3000, out 1000)");
  EXPECT_FALSE(meter.cost().has_value());
}

TEST(ProgressMeter, CostFromThePricePerMillionTokens) {
  ProgressMeter meter(2, 1, TokenPrice{3.0, 15.0});
  meter.addTokens(1'000'000, 200'000);
  ASSERT_TRUE(meter.cost().has_value());
  EXPECT_DOUBLE_EQ(*meter.cost(), 3.0 + 3.0);
  EXPECT_NE(meter.line().find("cost $6.00"), std::string::npos) << meter.line();
}

TEST(ProgressMeter, ALineIsDueFirstThenEveryIntervalAndAtTheLastSampleOnce) {
  Clock::time_point start{};
  ProgressMeter meter(3, 1, std::nullopt, start);
  meter.attemptDone(0, 0, 1, true);
  EXPECT_TRUE(meter.lineIfDue(seconds(2), start + seconds(1)).has_value());
  meter.attemptDone(0, 1, 1, true);
  EXPECT_FALSE(meter.lineIfDue(seconds(2), start + seconds(2)).has_value());
  EXPECT_TRUE(meter.lineIfDue(seconds(2), start + seconds(3)).has_value());
  meter.attemptDone(0, 2, 1, true);
  std::optional<std::string> last = meter.lineIfDue(seconds(2), start + seconds(3));
  ASSERT_TRUE(last.has_value()) << "the last sample is always shown";
  EXPECT_NE(last->find("3/3 samples"), std::string::npos);
  EXPECT_FALSE(meter.finalLine(start + seconds(4)).has_value()) << "not twice";
  EXPECT_EQ(durationText(7322), "2h02m");
}
