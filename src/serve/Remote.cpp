// See Remote.h. cpp-httplib's client: the service speaks plain HTTP on
// loopback or behind a proxy that terminates TLS.
#include "serve/Remote.h"

#include "tasks/TaskSpec.h"

#include <httplib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <thread>

namespace ptxforge::serve {

nlohmann::json checkRequestJson(const tasks::TaskSpec &task, const std::string &ptx, const verify::CheckOptions &options) {
  nlohmann::json body = {{"task", task.name},
                         {"ptx", ptx},
                         {"trials", options.trials},
                         {"drawn_shapes", options.drawnShapes},
                         {"timing_rounds", options.timingRounds},
                         {"timeout_ms", options.launchTimeoutMs},
                         {"bench", options.benchmark},
                         {"lint", options.lint}};
  if (options.seed) body["seed"] = *options.seed;
  if (!options.arch.empty()) body["arch"] = options.arch;
  if (!options.shapeIndices.empty()) {
    std::string shapes;
    for (size_t index : options.shapeIndices) shapes += (shapes.empty() ? "" : ",") + std::to_string(index);
    body["shapes"] = shapes;
  }
  if (!options.extraShapes.empty()) {
    nlohmann::json extra = nlohmann::json::array();
    for (const tasks::Shape &shape : options.extraShapes) extra.push_back(tasks::compactShape(task, shape));
    body["extra_shapes"] = std::move(extra);
  }
  return body;
}

namespace {

class RemoteDevice final : public exec::Executor {
public:
  RemoteDevice(exec::DeviceProperties properties, bool emulated, std::string url)
      : properties_(std::move(properties)), emulated_(emulated), url_(std::move(url)) {}
  const exec::DeviceProperties &properties() const override { return properties_; }
  exec::ModuleFormat moduleFormat() const override { return emulated_ ? exec::ModuleFormat::Ptx : exec::ModuleFormat::Cubin; }
  Result<exec::BufferHandle> allocate(uint64_t) override { return refused(); }
  Result<void> free(exec::BufferHandle) override { return refused(); }
  Result<void> copyToDevice(exec::BufferHandle, uint64_t, const void *, uint64_t) override { return refused(); }
  Result<void> copyToHost(void *, exec::BufferHandle, uint64_t, uint64_t) override { return refused(); }
  Result<void> memset(exec::BufferHandle, uint64_t, uint8_t, uint64_t) override { return refused(); }
  Result<void> copyOnDevice(exec::BufferHandle, uint64_t, exec::BufferHandle, uint64_t, uint64_t) override {
    return refused();
  }
  Result<exec::ModuleHandle> loadModule(const std::vector<uint8_t> &, exec::ModuleFormat) override { return refused(); }
  Result<void> unloadModule(exec::ModuleHandle) override { return refused(); }
  Result<exec::KernelInfo> getKernel(exec::ModuleHandle, const std::string &) override { return refused(); }
  Result<void> launch(exec::KernelHandle, const exec::LaunchConfig &, const exec::PackedArgs &) override {
    return refused();
  }
  Result<void> synchronize() override { return refused(); }
  Result<std::vector<float>> timeLaunch(exec::KernelHandle, const exec::LaunchConfig &, const exec::PackedArgs &,
                                        const exec::TimingOptions &) override {
    return refused();
  }
  Result<void> flushL2() override { return refused(); }

private:
  Error refused() const {
    return makeError(ErrorKind::Internal, "remote-device",
                     fmt::format("the device of the gate at {} runs checks only through that gate", url_));
  }
  exec::DeviceProperties properties_;
  bool emulated_;
  std::string url_;
};

} // namespace

std::unique_ptr<exec::Executor> describeRemoteDevice(const nlohmann::json &health, const std::string &url) {
  exec::DeviceProperties properties;
  properties.backend = "remote";
  properties.warpSize = 32;
  bool emulated = false;
  const nlohmann::json workers = health.is_object() ? health.value("workers", nlohmann::json::array()) : nlohmann::json();
  if (workers.is_array() && !workers.empty() && workers[0].is_object()) {
    const nlohmann::json &first = workers[0];
    properties.name = first.value("device", std::string("unknown device")) + " (via " + url + ")";
    emulated = first.value("emulated", false);
    const std::string arch = first.value("arch", std::string("sm_90"));
    int number = 90;
    if (arch.rfind("sm_", 0) == 0) number = std::atoi(arch.c_str() + 3);
    properties.smMajor = number / 10;
    properties.smMinor = number % 10;
    properties.multiprocessorCount = first.value("sm_count", 0);
  } else {
    properties.name = "the gate at " + url;
    properties.smMajor = 9;
  }
  return std::make_unique<RemoteDevice>(std::move(properties), emulated, url);
}

struct RemoteGate::Impl {
  RemoteGateOptions options;
  httplib::Client client;

  explicit Impl(RemoteGateOptions o) : options(std::move(o)), client(options.url) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(options.timeout).count();
    client.set_connection_timeout(10, 0);
    client.set_read_timeout(seconds, 0);
    client.set_write_timeout(60, 0);
    if (!options.apiKey.empty()) client.set_bearer_token_auth(options.apiKey.c_str());
  }

  /// The service's own error text of a non-200 answer.
  static std::string errorText(const httplib::Response &response) {
    nlohmann::json body = nlohmann::json::parse(response.body, nullptr, false);
    if (body.is_object() && body.contains("error") && body["error"].is_object()) {
      const nlohmann::json &error = body["error"];
      std::string code = error.value("code", "");
      std::string message = error.value("message", "");
      return code.empty() ? message : code + ": " + message;
    }
    return response.body.substr(0, 300);
  }
};

RemoteGate::RemoteGate(RemoteGateOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
RemoteGate::~RemoteGate() = default;

Result<nlohmann::json> RemoteGate::health() {
  httplib::Result result = impl_->client.Get("/healthz");
  if (!result)
    return makeError(ErrorKind::Io, "gate-unreachable",
                     fmt::format("the gate at {} does not answer: {}", impl_->options.url, httplib::to_string(result.error())));
  if (result->status != 200)
    return makeError(ErrorKind::Io, "gate-error",
                     fmt::format("the gate at {} answered {}: {}", impl_->options.url, result->status, Impl::errorText(*result)));
  nlohmann::json body = nlohmann::json::parse(result->body, nullptr, false);
  if (body.is_discarded())
    return makeError(ErrorKind::Io, "gate-error", fmt::format("the gate at {} sent no JSON from /healthz", impl_->options.url));
  return body;
}

Result<verify::CheckResult> RemoteGate::check(const tasks::TaskSpec &task, const std::string &ptx,
                                              const verify::CheckOptions &options, const std::stop_token &stop) {
  const std::string body = checkRequestJson(task, ptx, options).dump();
  std::string lastProblem;
  for (int attempt = 0; attempt <= impl_->options.maxRetries; ++attempt) {
    if (stop.stop_requested())
      return makeError(ErrorKind::Io, "cancelled", "the check was cancelled before the gate answered");
    httplib::Result result = impl_->client.Post("/v1/check", body, "application/json");
    std::chrono::milliseconds wait{std::min<int64_t>(1000LL << std::min(attempt, 6), impl_->options.maxRetryWait.count())};
    if (!result) {
      lastProblem = fmt::format("no answer ({})", httplib::to_string(result.error()));
    } else if (result->status == 200) {
      nlohmann::json document = nlohmann::json::parse(result->body, nullptr, false);
      if (document.is_discarded())
        return makeError(ErrorKind::Io, "gate-error", fmt::format("the gate at {} answered 200 without JSON", impl_->options.url));
      Result<verify::CheckResult> decoded = verify::checkResultFromJson(document);
      if (!decoded)
        return makeError(ErrorKind::Io, "gate-error",
                         fmt::format("the gate at {} answered a document this build cannot read: {}", impl_->options.url,
                                     decoded.error().message));
      return decoded;
    } else if (result->status == 429 || result->status == 503) {
      lastProblem = fmt::format("busy ({}: {})", result->status, Impl::errorText(*result));
      if (result->has_header("Retry-After")) {
        const long seconds = std::strtol(result->get_header_value("Retry-After").c_str(), nullptr, 10);
        if (seconds > 0) wait = std::min<std::chrono::milliseconds>(std::chrono::seconds(seconds), impl_->options.maxRetryWait);
      }
    } else {
      // A request the service refuses (400, 404, 413, 500) will be refused again.
      return makeError(result->status >= 500 ? ErrorKind::Io : ErrorKind::InvalidInput, "gate-error",
                       fmt::format("the gate at {} answered {}: {}", impl_->options.url, result->status,
                                   Impl::errorText(*result)));
    }
    if (attempt == impl_->options.maxRetries) break;
    // Sleep in slices so that a stop request is seen.
    for (auto slept = std::chrono::milliseconds(0); slept < wait && !stop.stop_requested();
         slept += std::chrono::milliseconds(100))
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return makeError(ErrorKind::Io, "gate-unreachable",
                   fmt::format("the gate at {} did not take the check after {} attempts: {}", impl_->options.url,
                               impl_->options.maxRetries + 1, lastProblem));
}

} // namespace ptxforge::serve
