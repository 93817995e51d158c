// See Service.h.
#include "serve/Service.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>

namespace ptxforge::serve {

// --- Metrics ----------------------------------------------------------------------

const std::vector<double> &Metrics::bucketBounds() {
  static const std::vector<double> bounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                             0.25,  0.5,    1,     2.5,  5,     10,   30};
  return bounds;
}

void Metrics::countRequest(const std::string &route, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{route, status}];
}

void Metrics::countVerdict(const std::string &verdict) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++verdicts_[verdict];
}

void Metrics::countCancelled(const std::string &when) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++cancelled_[when];
}

void Metrics::observe(const std::string &stage, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  Histogram &histogram = stages_[stage];
  const std::vector<double> &bounds = bucketBounds();
  if (histogram.buckets.empty()) histogram.buckets.assign(bounds.size(), 0);
  for (size_t i = 0; i < bounds.size(); ++i)
    if (seconds <= bounds[i]) {
      ++histogram.buckets[i];
      break;
    }
  ++histogram.count;
  histogram.sum += seconds;
}

namespace {

/// A Prometheus label value: backslash, quote and newline escaped.
std::string labelValue(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

} // namespace

std::string Metrics::render(size_t queueDepth, size_t running, size_t workers, size_t queueClients) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  out += "# HELP ptxforge_requests_total HTTP requests by route and status.\n"
         "# TYPE ptxforge_requests_total counter\n";
  for (const auto &[key, count] : requests_)
    out += fmt::format("ptxforge_requests_total{{route=\"{}\",status=\"{}\"}} {}\n", labelValue(key.first), key.second,
                       count);
  out += "# HELP ptxforge_verdicts_total Verdicts of finished checks.\n"
         "# TYPE ptxforge_verdicts_total counter\n";
  for (const auto &[verdict, count] : verdicts_)
    out += fmt::format("ptxforge_verdicts_total{{verdict=\"{}\"}} {}\n", labelValue(verdict), count);
  out += "# HELP ptxforge_cancelled_total Checks whose client went away: dropped while queued, or while running.\n"
         "# TYPE ptxforge_cancelled_total counter\n";
  for (const char *when : {"queued", "running"}) {
    auto it = cancelled_.find(when);
    out += fmt::format("ptxforge_cancelled_total{{when=\"{}\"}} {}\n", when, it == cancelled_.end() ? 0 : it->second);
  }
  out += "# HELP ptxforge_queue_depth Checks waiting for a worker.\n# TYPE ptxforge_queue_depth gauge\n";
  out += fmt::format("ptxforge_queue_depth {}\n", queueDepth);
  out += "# HELP ptxforge_queue_clients Clients with checks waiting (served in turn).\n"
         "# TYPE ptxforge_queue_clients gauge\n";
  out += fmt::format("ptxforge_queue_clients {}\n", queueClients);
  out += "# HELP ptxforge_running Checks running now.\n# TYPE ptxforge_running gauge\n";
  out += fmt::format("ptxforge_running {}\n", running);
  out += "# HELP ptxforge_workers Worker threads (one per GPU, or emulator workers).\n# TYPE ptxforge_workers gauge\n";
  out += fmt::format("ptxforge_workers {}\n", workers);
  out += "# HELP ptxforge_stage_seconds Wall time per stage of a check (queue: waiting for a worker; request: the "
         "whole job).\n# TYPE ptxforge_stage_seconds histogram\n";
  const std::vector<double> &bounds = bucketBounds();
  for (const auto &[stage, histogram] : stages_) {
    uint64_t cumulative = 0;
    for (size_t i = 0; i < bounds.size(); ++i) {
      cumulative += histogram.buckets[i];
      out += fmt::format("ptxforge_stage_seconds_bucket{{stage=\"{}\",le=\"{}\"}} {}\n", labelValue(stage), bounds[i],
                         cumulative);
    }
    out += fmt::format("ptxforge_stage_seconds_bucket{{stage=\"{}\",le=\"+Inf\"}} {}\n", labelValue(stage),
                       histogram.count);
    out += fmt::format("ptxforge_stage_seconds_sum{{stage=\"{}\"}} {}\n", labelValue(stage), histogram.sum);
    out += fmt::format("ptxforge_stage_seconds_count{{stage=\"{}\"}} {}\n", labelValue(stage), histogram.count);
  }
  return out;
}

// --- Service ----------------------------------------------------------------------

Result<std::unique_ptr<Service>> Service::create(const ServiceOptions &options) {
  if (options.executor != "gpu" && options.executor != "emu" && options.executor != "auto")
    return makeError(ErrorKind::InvalidInput, "bad-option",
                     fmt::format("executor '{}': expected gpu, emu or auto", options.executor));
  if (options.queueCapacity == 0) return makeError(ErrorKind::InvalidInput, "bad-option", "the queue needs room for one check");
  if (options.workersPerGpu < 1 || options.workersPerGpu > 64)
    return makeError(ErrorKind::InvalidInput, "bad-option",
                     fmt::format("{} workers per GPU: expected 1 to 64", options.workersPerGpu));
  Result<tasks::Suite> suite = loadSuite(options.tasksDirs);
  if (!suite) return suite.error();
  std::unique_ptr<Service> service(new Service(options, std::move(*suite)));

  auto addWorker = [&](const Gate::Options &gateOptions, std::unique_ptr<Engine> engine) {
    auto worker = std::make_unique<Worker>();
    worker->gateOptions = gateOptions;
    worker->device = engine->gate().device();
    worker->arch = engine->gate().arch();
    worker->emulated = engine->gate().emulated();
    worker->smCount = engine->gate().smCount();
    worker->engine = std::move(engine);
    service->workers_.push_back(std::move(worker));
  };

  // GPUs: the ones named, or every ordinal that opens, one worker each.
  if (options.executor != "emu") {
    std::vector<int> ordinals = options.devices;
    const bool probe = ordinals.empty();
    if (probe)
      for (int i = 0; i < 16; ++i) ordinals.push_back(i);
    for (int ordinal : ordinals) {
      Gate::Options gateOptions{.executor = "gpu", .deviceOrdinal = ordinal, .sanitizer = options.sanitizer};
      if (options.workersPerGpu > 1) gateOptions.deviceShare = std::make_shared<exec::DeviceShare>();
      auto engine = std::make_unique<Engine>(service->suite_, gateOptions);
      if (!engine->gate().hasExecutor()) {
        if (probe) break; // past the last GPU
        return makeError(ErrorKind::ToolMissing, "no-gpu",
                         fmt::format("GPU {}: {}", ordinal, engine->gate().device()));
      }
      addWorker(gateOptions, std::move(engine));
      for (int more = 1; more < options.workersPerGpu; ++more)
        addWorker(gateOptions, std::make_unique<Engine>(service->suite_, gateOptions));
    }
    if (service->workers_.empty() && options.executor == "gpu")
      return makeError(ErrorKind::ToolMissing, "no-gpu", "--executor gpu: no GPU could be opened");
  }
  // The emulator: where asked, or where no GPU opened.
  if (service->workers_.empty()) {
    int count = options.emulatorWorkers > 0 ? options.emulatorWorkers
                                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (int i = 0; i < count; ++i) {
      Gate::Options gateOptions{.executor = "emu", .deviceOrdinal = 0, .sanitizer = false};
      addWorker(gateOptions, std::make_unique<Engine>(service->suite_, gateOptions));
    }
  }
  for (auto &worker : service->workers_) {
    Worker *raw = worker.get();
    raw->thread = std::thread([service = service.get(), raw] { service->run(*raw); });
  }
  return service;
}

Service::~Service() { shutdown(); }

size_t Service::queueDepth() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waitingCount_;
}

size_t Service::queueDepth(const std::string &client) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = waiting_.find(client);
  return it == waiting_.end() ? 0 : it->second.size();
}

size_t Service::queueClients() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waiting_.size();
}

Result<std::future<Reply>> Service::submit(Op op, nlohmann::json body, const JobOptions &job) {
  std::vector<nlohmann::json> one;
  one.push_back(std::move(body));
  Result<std::vector<std::future<Reply>>> futures = submitAll(op, std::move(one), job);
  if (!futures) return futures.error();
  return std::move(futures->front());
}

Result<std::vector<std::future<Reply>>> Service::submitAll(Op op, std::vector<nlohmann::json> bodies,
                                                           const JobOptions &options) {
  std::vector<std::future<Reply>> futures;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_)
      return makeError(ErrorKind::Io, "shutting-down", "the service is shutting down and takes no new checks");
    if (waitingCount_ + bodies.size() > options_.queueCapacity)
      return makeError(ErrorKind::Io, "queue-full",
                       fmt::format("the queue is full ({} checks waiting, room for {}; {} asked)", waitingCount_,
                                   options_.queueCapacity, bodies.size()));
    std::deque<Job> &mine = waiting_[options.client];
    if (mine.size() + bodies.size() > clientQueueCapacity()) {
      const size_t already = mine.size();
      if (mine.empty()) waiting_.erase(options.client);
      return makeError(ErrorKind::Io, "client-queue-full",
                       fmt::format("this client's share of the queue is full ({} of its checks waiting, room for "
                                   "{}; {} asked)",
                                   already, clientQueueCapacity(), bodies.size()));
    }
    // A client with nothing waiting joins the end of the round.
    if (mine.empty()) turns_.push_back(options.client);
    const auto now = std::chrono::steady_clock::now();
    for (nlohmann::json &body : bodies) {
      Job job{op, std::move(body), options.deadline, options.stop, now, {}};
      futures.push_back(job.promise.get_future());
      mine.push_back(std::move(job));
    }
    waitingCount_ += bodies.size();
  }
  wake_.notify_all();
  return futures;
}

namespace {

Reply clientGoneReply(const char *when) {
  return errorReply(499, "client-gone", fmt::format("the client went away while its check was {}", when));
}

} // namespace

size_t Service::dropCancelled() {
  std::vector<Job> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      std::deque<Job> &jobs = it->second;
      for (auto job = jobs.begin(); job != jobs.end();) {
        if (job->stop.stop_requested()) {
          dropped.push_back(std::move(*job));
          job = jobs.erase(job);
        } else {
          ++job;
        }
      }
      if (jobs.empty()) {
        turns_.erase(std::remove(turns_.begin(), turns_.end(), it->first), turns_.end());
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    waitingCount_ -= dropped.size();
  }
  for (Job &job : dropped) {
    metrics_.countCancelled("queued");
    job.promise.set_value(clientGoneReply("queued"));
  }
  return dropped.size();
}

int Service::retryAfterSeconds(const std::string &client) const {
  const uint64_t done = jobsDone_.load();
  const double meanSeconds = done == 0 ? 1.0 : static_cast<double>(jobMicros_.load()) / 1e6 / static_cast<double>(done);
  const double workers = static_cast<double>(std::max<size_t>(1, workers_.size()));
  double jobsAhead = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobsAhead = static_cast<double>(waitingCount_ + 1);
    auto it = waiting_.find(client);
    const bool ownShareFull = it != waiting_.end() && waitingCount_ < options_.queueCapacity &&
                              it->second.size() >= clientQueueCapacity();
    // Refused for its own share: its jobs leave one per round of the waiting clients.
    if (ownShareFull)
      jobsAhead = std::min(jobsAhead, static_cast<double>(it->second.size()) * static_cast<double>(waiting_.size()));
  }
  return static_cast<int>(std::clamp(std::ceil(meanSeconds * jobsAhead / workers), 1.0, 300.0));
}

void Service::shutdown() {
  std::vector<Job> abandoned;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    while (waitingCount_ > 0) abandoned.push_back(takeNextLocked());
  }
  wake_.notify_all();
  for (Job &job : abandoned)
    job.promise.set_value(errorReply(503, "shutting-down", "the service is shutting down; this check did not run"));
  for (auto &worker : workers_)
    if (worker->thread.joinable()) worker->thread.join();
}

Service::Job Service::takeNextLocked() {
  // One job of the client whose turn it is; the client goes to the end of
  // the round if it has more.
  const std::string client = std::move(turns_.front());
  turns_.pop_front();
  auto it = waiting_.find(client);
  Job job = std::move(it->second.front());
  it->second.pop_front();
  --waitingCount_;
  if (it->second.empty())
    waiting_.erase(it);
  else
    turns_.push_back(client);
  return job;
}

nlohmann::json Service::health() const {
  nlohmann::json workers = nlohmann::json::array();
  for (const auto &worker : workers_)
    workers.push_back({{"device", worker->device},
                       {"arch", worker->arch},
                       {"emulated", worker->emulated},
                       {"sm_count", worker->smCount},
                       {"busy", worker->busy.load()}});
  std::lock_guard<std::mutex> lock(mutex_);
  return {{"status", stopping_ ? "stopping" : "ok"},
          {"executor", options_.executor},
          {"workers", std::move(workers)},
          {"queue_depth", waitingCount_},
          {"queue_capacity", options_.queueCapacity},
          {"client_queue_capacity", clientQueueCapacity()},
          {"queue_clients", waiting_.size()},
          {"running", running_.load()},
          {"tasks", suite_.tasks.size()}};
}

void Service::run(Worker &worker) {
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || waitingCount_ > 0; });
      if (waitingCount_ == 0) return; // stopping, nothing left
      job = takeNextLocked();
      if (job.stop.stop_requested()) {
        // Its client left before dropCancelled() came by: never run it.
        lock.unlock();
        metrics_.countCancelled("queued");
        job.promise.set_value(clientGoneReply("queued"));
        continue;
      }
      ++running_;
    }
    worker.busy = true;
    const auto started = std::chrono::steady_clock::now();
    metrics_.observe("queue", std::chrono::duration<double>(started - job.queuedAt).count());
    Reply reply;
    if (job.deadline && started > *job.deadline) {
      reply = errorReply(504, "deadline-exceeded",
                         fmt::format("the check waited {:.0f} ms in the queue, past its deadline_ms",
                                     std::chrono::duration<double, std::milli>(started - job.queuedAt).count()));
    } else {
      reply = perform(worker, job);
      if (job.stop.stop_requested()) {
        metrics_.countCancelled("running");
        reply = clientGoneReply("running");
      }
    }
    const auto finished = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(finished - started).count();
    metrics_.observe("request", seconds);
    jobsDone_ += 1;
    jobMicros_ += static_cast<uint64_t>(seconds * 1e6);
    worker.busy = false;
    --running_;
    job.promise.set_value(std::move(reply));
  }
}

Reply Service::perform(Worker &worker, Job &job) {
  Reply reply;
  try {
    reply = job.op == Op::Check ? worker.engine->check(job.body, job.stop) : worker.engine->reward(job.body, job.stop);
  } catch (const std::exception &e) {
    // The engine may be in any state: start a fresh one for the next job.
    reply = errorReply(500, "internal", fmt::format("the check failed inside the service: {}", e.what()));
    worker.engine = std::make_unique<Engine>(suite_, worker.gateOptions);
    return reply;
  }
  if (reply.ok()) {
    const nlohmann::json &check = job.op == Op::Check ? reply.body : reply.body["check"];
    if (auto verdict = check.find("verdict"); verdict != check.end() && verdict->is_string())
      metrics_.countVerdict(verdict->get<std::string>());
    if (auto times = check.find("timings_ms"); times != check.end() && times->is_object())
      for (const auto &[stage, ms] : times->items())
        if (ms.is_number() && stage != "total") metrics_.observe(stage, ms.get<double>() / 1000.0);
  }
  return reply;
}

} // namespace ptxforge::serve
