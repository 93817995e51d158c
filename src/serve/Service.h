// Service: the gate as a long-lived service. Worker threads each own an
// Engine (a Gate whose executors stay warm: a GPU, or the emulator) and take
// checks from a bounded queue kept per client, one client's turn after
// another (round-robin), so that one client's batch of hundreds cannot starve
// another's single check. A full queue, or a client's full share of it,
// refuses work at once (the HTTP layer answers 429 with Retry-After) instead
// of letting latency grow without bound. A job whose client has gone is
// dropped unrun, or abandoned at its check's next stage boundary. Each GPU has one worker by default; with workersPerGpu > 1 its
// workers share it through an exec::DeviceShare, so that their host work
// (inputs, comparisons) overlaps while a timing still never shares the GPU
// with anything. Emulator workers are as many as asked (CPU cores).
//
// A check that crashes or hangs costs its executor's worker process (the Gate
// starts a new one), never this process; an exception out of a check answers
// that one request with a 500 and replaces the worker's Engine.
#pragma once

#include "serve/Api.h"

#include <algorithm>
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
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace ptxforge::serve {

struct ServiceOptions {
  std::string executor = "auto";  ///< "gpu", "emu" or "auto"
  std::vector<int> devices;       ///< GPU ordinals; empty: every GPU found
  int emulatorWorkers = 0;        ///< emulator workers; 0: the machine's cores
  int workersPerGpu = 1;          ///< checks at once per GPU (timings still one at a time)
  size_t queueCapacity = 64;      ///< checks waiting (not running), all clients together, before 429
  size_t clientQueueCapacity = 0; ///< checks one client may have waiting before 429; 0: queueCapacity
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
  /// A job whose client went away: `when` is "queued" (dropped unrun) or
  /// "running" (abandoned at a stage boundary, or its answer dropped).
  void countCancelled(const std::string &when);
  void observe(const std::string &stage, double seconds);
  /// The Prometheus text exposition, with the gauges given.
  std::string render(size_t queueDepth, size_t running, size_t workers, size_t queueClients = 0) const;

private:
  struct Histogram {
    std::vector<uint64_t> buckets; ///< cumulative at render time; per bucket here
    uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> verdicts_;
  std::map<std::string, uint64_t> cancelled_;
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

  /// Whose job it is and when it is no longer wanted.
  struct JobOptions {
    /// Who asked (an API key's fingerprint, a peer address or a declared
    /// name; the HTTP layer decides). Jobs are queued per client and
    /// workers take them one client at a time, in turn.
    std::string client;
    /// A job still queued at its deadline is answered 504 ("deadline-exceeded").
    std::optional<std::chrono::steady_clock::time_point> deadline;
    /// Requested when the client has gone: a queued job is dropped unrun
    /// (dropCancelled(), or when a worker reaches it), a running one is
    /// abandoned at its check's next stage boundary; either is answered 499
    /// ("client-gone") and counted in /metrics.
    std::stop_token stop;
  };

  /// Queues one check or reward. The error (code "queue-full",
  /// "client-queue-full" or "shutting-down") says why it was refused.
  Result<std::future<Reply>> submit(Op op, nlohmann::json body, const JobOptions &job = {});
  /// Queues all of `bodies` or none.
  Result<std::vector<std::future<Reply>>> submitAll(Op op, std::vector<nlohmann::json> bodies,
                                                    const JobOptions &job = {});

  /// Answers and removes every queued job whose stop was requested (a
  /// client that hung up), so that they free their room at once. Returns
  /// how many it dropped.
  size_t dropCancelled();

  /// Seconds a client should wait before retrying a refused job (at least
  /// 1): the queue's expected drain time from the mean job time so far, or,
  /// when `client` was refused for its own share, the time its own waiting
  /// jobs take at one turn in every round of the clients waiting.
  int retryAfterSeconds(const std::string &client = {}) const;

  /// Stops taking work, answers queued jobs 503 ("shutting-down"), waits for
  /// running ones and joins the workers. Idempotent.
  void shutdown();

  const tasks::Suite &suite() const { return suite_; }
  Metrics &metrics() { return metrics_; }
  size_t queueDepth() const;
  /// Queued jobs of one client.
  size_t queueDepth(const std::string &client) const;
  /// Clients with jobs waiting.
  size_t queueClients() const;
  size_t queueCapacity() const { return options_.queueCapacity; }
  size_t clientQueueCapacity() const {
    return options_.clientQueueCapacity > 0 ? std::min(options_.clientQueueCapacity, options_.queueCapacity)
                                            : options_.queueCapacity;
  }
  size_t running() const { return running_.load(); }
  size_t workerCount() const { return workers_.size(); }
  /// {"status", "executor", "workers": [{"device", "arch", "emulated", "sm_count", "busy"}], "queue_depth",
  /// "queue_capacity", "client_queue_capacity", "queue_clients", "running", "tasks"}.
  nlohmann::json health() const;

private:
  struct Job {
    Op op;
    nlohmann::json body;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    std::stop_token stop;
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
  /// The next job in round-robin order; the caller holds mutex_ and the queue is not empty.
  Job takeNextLocked();

  ServiceOptions options_;
  tasks::Suite suite_;
  Metrics metrics_;
  std::vector<std::unique_ptr<Worker>> workers_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  /// Waiting jobs per client, each in arrival order, and the clients with
  /// waiting jobs in the order of their turns (each client once).
  std::map<std::string, std::deque<Job>> waiting_;
  std::deque<std::string> turns_;
  size_t waitingCount_ = 0;
  bool stopping_ = false;
  std::atomic<size_t> running_{0};
  std::atomic<uint64_t> jobsDone_{0};
  std::atomic<uint64_t> jobMicros_{0};
};

} // namespace ptxforge::serve
