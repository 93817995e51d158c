// SharedDevice: executors sharing one GPU never run anything while one of
// them times. A fake executor records when each call runs; three threads mix
// launches, copies and timings through one DeviceShare, and no call of one
// thread may overlap a timing of another.
#include "exec/SharedDevice.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace ptxforge::exec {
namespace {

using Clock = std::chrono::steady_clock;

struct Interval {
  int owner;
  bool timing;
  Clock::time_point begin, end;
};

/// Records every call's interval; each call takes a little time.
class RecordingExecutor final : public Executor {
public:
  RecordingExecutor(int owner, std::vector<Interval> &log, std::mutex &mutex) : owner_(owner), log_(log), mutex_(mutex) {
    properties_.name = "fake GPU";
  }
  const DeviceProperties &properties() const override { return properties_; }
  Result<BufferHandle> allocate(uint64_t) override { return record(false), BufferHandle{1}; }
  Result<void> free(BufferHandle) override { return record(false), Result<void>(); }
  Result<void> copyToDevice(BufferHandle, uint64_t, const void *, uint64_t) override { return record(false), Result<void>(); }
  Result<void> copyToHost(void *, BufferHandle, uint64_t, uint64_t) override { return record(false), Result<void>(); }
  Result<void> memset(BufferHandle, uint64_t, uint8_t, uint64_t) override { return record(false), Result<void>(); }
  Result<ModuleHandle> loadModule(const std::vector<uint8_t> &, ModuleFormat) override {
    return record(false), ModuleHandle{1};
  }
  Result<void> unloadModule(ModuleHandle) override { return record(false), Result<void>(); }
  Result<KernelInfo> getKernel(ModuleHandle, const std::string &) override { return record(false), KernelInfo{}; }
  Result<void> launch(KernelHandle, const LaunchConfig &, const PackedArgs &) override { return record(false), Result<void>(); }
  Result<void> synchronize() override { return record(false), Result<void>(); }
  Result<std::vector<float>> timeLaunch(KernelHandle, const LaunchConfig &, const PackedArgs &,
                                        const TimingOptions &) override {
    return record(true), std::vector<float>{1.0f};
  }
  Result<void> flushL2() override { return record(true), Result<void>(); }

private:
  int record(bool timing) {
    Interval interval{owner_, timing, Clock::now(), {}};
    std::this_thread::sleep_for(std::chrono::microseconds(timing ? 800 : 200));
    interval.end = Clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    log_.push_back(interval);
    return 0;
  }
  int owner_;
  std::vector<Interval> &log_;
  std::mutex &mutex_;
  DeviceProperties properties_;
};

TEST(SharedDevice, NothingOverlapsATiming) {
  std::vector<Interval> log;
  std::mutex mutex;
  auto share = std::make_shared<DeviceShare>();
  std::vector<std::unique_ptr<Executor>> executors;
  for (int owner = 0; owner < 3; ++owner)
    executors.push_back(shareDevice(std::make_unique<RecordingExecutor>(owner, log, mutex), share));
  std::vector<std::thread> threads;
  for (int owner = 0; owner < 3; ++owner)
    threads.emplace_back([&, owner] {
      Executor &executor = *executors[static_cast<size_t>(owner)];
      for (int step = 0; step < 30; ++step) {
        ASSERT_TRUE(executor.launch(KernelHandle{1}, LaunchConfig{}, PackedArgs{}));
        ASSERT_TRUE(executor.copyToHost(nullptr, BufferHandle{1}, 0, 0));
        if ((step + owner) % 5 == 0) ASSERT_TRUE(executor.timeLaunch(KernelHandle{1}, LaunchConfig{}, PackedArgs{}, {}));
      }
    });
  for (std::thread &thread : threads) thread.join();

  size_t timings = 0, concurrentPlain = 0;
  for (const Interval &a : log) {
    timings += a.timing;
    for (const Interval &b : log) {
      if (&a == &b || a.owner == b.owner) continue;
      const bool overlap = a.begin < b.end && b.begin < a.end;
      if (a.timing) EXPECT_FALSE(overlap) << "a timing of executor " << a.owner << " overlapped a call of " << b.owner;
      concurrentPlain += overlap && !a.timing && !b.timing;
    }
  }
  EXPECT_EQ(timings, 18u);
  EXPECT_EQ(share->timings(), 18u);
  // Calls other than timings do run side by side (the share is not a plain mutex).
  EXPECT_GT(concurrentPlain, 0u);
}

TEST(SharedDevice, ForwardsWhatItWraps) {
  std::vector<Interval> log;
  std::mutex mutex;
  auto executor = shareDevice(std::make_unique<RecordingExecutor>(0, log, mutex), std::make_shared<DeviceShare>());
  EXPECT_EQ(executor->properties().name, "fake GPU");
  Result<std::vector<float>> times = executor->timeLaunch(KernelHandle{1}, LaunchConfig{}, PackedArgs{}, {});
  ASSERT_TRUE(times);
  EXPECT_EQ(times->size(), 1u);
  EXPECT_EQ(log.size(), 1u);
}

} // namespace
} // namespace ptxforge::exec
