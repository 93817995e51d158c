// Remote: a running `ptxforge serve` as the gate of this process. `solve` and
// `eval` with `--gate URL` check their candidates here instead of on an
// executor of their own, and get back the CheckResult the service's JSON
// document decodes to (verify::checkResultFromJson), so that the run store,
// reports and repair prompts cannot tell the difference.
#pragma once

#include "exec/Executor.h"
#include "support/Result.h"
#include "verify/Check.h"

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <memory>
#include <stop_token>
#include <string>

namespace ptxforge::serve {

struct RemoteGateOptions {
  std::string url;    ///< "http://host:8177" (no path)
  std::string apiKey; ///< sent as `Authorization: Bearer KEY` when set ($PTXFORGE_SERVE_API_KEY)
  /// A busy service (429, 503) is asked again after its Retry-After, this
  /// many times; a connection that fails is retried the same way.
  int maxRetries = 20;
  std::chrono::milliseconds maxRetryWait{60'000}; ///< cap on one wait
  std::chrono::milliseconds timeout{900'000};     ///< one request, queueing included
};

/// The JSON body of POST /v1/check for `options` (seed, trials, shapes, ...).
nlohmann::json checkRequestJson(const tasks::TaskSpec &task, const std::string &ptx,
                                const verify::CheckOptions &options);

/// An Executor that only describes the device a remote gate checks on (from
/// its /healthz: the first worker's device, architecture, SM count and
/// whether it emulates), for the code that reads an executor's properties
/// (provenance, "is this timed") while the checks go elsewhere. Every
/// operation on it is an error that says so.
std::unique_ptr<exec::Executor> describeRemoteDevice(const nlohmann::json &health, const std::string &url);

class RemoteGate {
public:
  explicit RemoteGate(RemoteGateOptions options);
  ~RemoteGate();
  RemoteGate(const RemoteGate &) = delete;
  RemoteGate &operator=(const RemoteGate &) = delete;

  /// GET-equivalent of /healthz (a POST is not needed: the service answers
  /// GET); the service's device, or why it cannot be reached.
  Result<nlohmann::json> health();
  /// Checks `ptx` for `task` there. A verdict of any kind is an ok Result; an
  /// Error means the service could not answer (unreachable after the
  /// retries, an error status: the message is the service's).
  Result<verify::CheckResult> check(const tasks::TaskSpec &task, const std::string &ptx,
                                    const verify::CheckOptions &options, const std::stop_token &stop = {});

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace ptxforge::serve
