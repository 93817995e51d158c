// Service: the gate as a long-lived service. Worker threads each own an
// Engine (a Gate whose executors stay warm: a GPU, or the emulator) and take
// checks from one bounded queue; a full queue refuses work at once (the HTTP
// layer answers 429 with Retry-After) instead of letting latency grow without
// bound. Each GPU has one worker by default; with workersPerGpu > 1 its
// workers share it through an exec::DeviceShare, so that their host work
// (inputs, comparisons) overlaps while a timing still never shares the GPU
// with anything. Emulator workers are as many as asked (CPU cores).
//
// A check that crashes or hangs costs its executor's worker process (the Gate
// starts a new one), never this process; an exception out of a check answers
// that one request with a 500 and replaces the worker's Engine.
#pragma once

#include "serve/Api.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ptxforge::serve {

struct ServiceOptions {
  std::string executor = "auto";  ///< "gpu", "emu" or "auto"
  std::vector<int> devices;       ///< GPU ordinals; empty: every GPU found
  int emulatorWorkers = 0;        ///< emulator workers; 0: the machine's cores
  int workersPerGpu = 1;          ///< checks at once per GPU (timings still one at a time)
  size_t queueCapacity = 64;      ///< checks waiting (not running) before 429
  bool sanitizer = true;          ///< on GPUs: also the emulator's sanitizers
  std::vector<std::string> tasksDirs;
};

/// Prometheus-style metrics of the service (GET /metrics).
class Metrics {
public:
  /// Upper bounds of the latency buckets, in seconds.
  static const std::vector<double> &bucketBounds();

  void countRequest(const std::string &route, int status);
  void countVerdict(const std::string &verdict);
  void observe(const std::string &stage, double seconds);
  /// The Prometheus text exposition, with the gauges given.
  std::string render(size_t queueDepth, size_t running, size_t workers) const;

private:
  struct Histogram {
    std::vector<uint64_t> buckets; ///< cumulative at render time; per bucket here
    uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> verdicts_;
  std::map<std::string, Histogram> stages_;
};

class Service {
public:
  /// Loads the suite and starts the workers (their executors start at once,
  /// so that the first request does not pay for driver start-up).
  static Result<std::unique_ptr<Service>> create(const ServiceOptions &options);
  ~Service();
  Service(const Service &) = delete;
  Service &operator=(const Service &) = delete;

  enum class Op { Check, Reward };

  /// Queues one check or reward. nullopt when the queue is full. A job still
  /// queued at `deadline` is answered 504 (code "deadline-exceeded").
  std::optional<std::future<Reply>> submit(Op op, nlohmann::json body,
                                           std::optional<std::chrono::steady_clock::time_point> deadline = {});
  /// Queues all of `bodies` or none (nullopt: not enough room).
  std::optional<std::vector<std::future<Reply>>>
  submitAll(Op op, std::vector<nlohmann::json> bodies, std::optional<std::chrono::steady_clock::time_point> deadline = {});

  /// Seconds a client should wait before retrying a refused job: the queue's
  /// expected drain time from the mean job time so far (at least 1).
  int retryAfterSeconds() const;

  /// Stops taking work, answers queued jobs 503 ("shutting-down"), waits for
  /// running ones and joins the workers. Idempotent.
  void shutdown();

  const tasks::Suite &suite() const { return suite_; }
  Metrics &metrics() { return metrics_; }
  size_t queueDepth() const;
  size_t running() const { return running_.load(); }
  size_t workerCount() const { return workers_.size(); }
  /// {"status", "executor", "workers": [{"device", "arch", "emulated", "sm_count", "busy"}], "queue_depth",
  /// "queue_capacity", "running", "tasks"}.
  nlohmann::json health() const;

private:
  struct Job {
    Op op;
    nlohmann::json body;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    std::chrono::steady_clock::time_point queuedAt;
    std::promise<Reply> promise;
  };
  struct Worker {
    Gate::Options gateOptions;
    std::unique_ptr<Engine> engine;
    std::string device; ///< what its Gate runs on
    std::string arch;   ///< its architecture ("sm_90")
    bool emulated = false;
    int smCount = 0;
    std::atomic<bool> busy{false};
    std::thread thread;
  };

  explicit Service(ServiceOptions options, tasks::Suite suite)
      : options_(std::move(options)), suite_(std::move(suite)) {}
  void run(Worker &worker);
  Reply perform(Worker &worker, Job &job);

  ServiceOptions options_;
  tasks::Suite suite_;
  Metrics metrics_;
  std::vector<std::unique_ptr<Worker>> workers_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  std::atomic<size_t> running_{0};
  std::atomic<uint64_t> jobsDone_{0};
  std::atomic<uint64_t> jobMicros_{0};
};

} // namespace ptxforge::serve
