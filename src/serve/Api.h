// Api: the gate's operations as JSON in, JSON out — the one definition behind
// the HTTP routes of `ptxforge serve` and the functions of the Python package
// (python/), so that both answer with the same documents (docs/serve.md).
//
// Every call returns a Reply: an HTTP status and a JSON body. A failure is
// {"error": {"kind", "code", "message"}} with status 400 (malformed request),
// 404 (unknown task) or 500 (the gate itself is broken); a verdict, whatever
// it is, is a 200.
#pragma once

#include "serve/Gate.h"

#include <nlohmann/json.hpp>

#include <stop_token>
#include <string>

namespace ptxforge::serve {

struct Reply {
  int status = 200;
  nlohmann::json body;

  bool ok() const { return status == 200; }
};

/// The reply of an Error: 404 for an unknown task, 500 for ErrorKind::Internal
/// and Io, 400 otherwise.
Reply errorReply(const Error &error);
/// A reply with an error of our own.
Reply errorReply(int status, std::string code, std::string message);

/// {"ptx"} -> `ptxforge lint --format json`'s document (ok, diagnostics).
Reply lintJson(const nlohmann::json &body);
/// {"ptx", "arch"} -> `ptxforge compile --format json`'s document (no SASS).
Reply compileJson(const nlohmann::json &body);
/// {"answer"} -> {"ptx", "source", "first_line", "last_line", "notes"}, or the
/// error (code "no-ptx") that tells the model why there is none.
Reply extractJson(const nlohmann::json &body);

/// {"tasks": [{name, level, description, kernel, tags}]}.
nlohmann::json tasksJson(const tasks::Suite &suite);
/// One task as `ptxforge task show --format json` shows it (keys in task.toml's order).
nlohmann::ordered_json taskJson(const tasks::TaskSpec &task);
/// "f32*" / "i32": the task.toml spelling of a parameter's type.
std::string paramTypeText(const tasks::ParamSpec &param);
/// A scalar's value as text: the floating literal, or the expression.
std::string scalarValueText(const tasks::ParamSpec &param);
/// The tolerance that applies to the task's outputs: task.toml's values, the
/// rest the default of the first output's type.
tasks::Tolerance effectiveTolerance(const tasks::TaskSpec &task);

/// A suite and one Gate: checks and rewards, one at a time. The service keeps
/// one Engine per worker thread; the Python package one per `Engine` object.
class Engine {
public:
  Engine(const tasks::Suite &suite, const Gate::Options &options) : suite_(suite), gate_(options) {}

  /// A check body (CheckRequest::fromJson; "deadline_ms" and "client" are
  /// the service's and accepted) -> check's JSON document. A stop requested
  /// before the check's next stage boundary answers 499 "client-gone".
  Reply check(const nlohmann::json &body, std::stop_token stop = {});
  /// A check body plus "weights" (RewardWeights::fromJson) -> rewardJson's
  /// document, with the check's document under "check".
  Reply reward(const nlohmann::json &body, std::stop_token stop = {});
  /// GET /v1/tasks/{name}.
  Reply task(const std::string &name) const;

  const Gate &gate() const { return gate_; }
  const tasks::Suite &suite() const { return suite_; }

private:
  const tasks::Suite &suite_;
  Gate gate_;
};

} // namespace ptxforge::serve
