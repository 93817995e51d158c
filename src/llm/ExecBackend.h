// The `exec` backend: a local program is the model. `exec:COMMAND [ARG…]`
// runs COMMAND (posix_spawn, no shell; arguments split on spaces, with '…'
// and "…" quoting and \ escapes) once per request, in its own process group,
// with the caller's environment.
//
// Protocol (version 1):
//   stdin   one JSON object, then EOF: canonicalRequestJson(request) (see
//           RequestHash.h: "v": 1, "model" when set, "messages" or "prompt",
//           "temperature", "top_p", "max_tokens", "seed", "stop" when set) plus
//           "request_hash" (requestHash(request)) and "stream" (informational).
//   stdout  the answer, either
//             - plain text: the whole of stdout is the completion text, or
//             - one JSON object (stdout, trimmed, starts with '{'):
//               {"text": "...",                      required
//                "finish_reason": "stop",            optional, OpenAI/Anthropic words
//                "model": "my-model-v2",             optional
//                "usage": {"prompt_tokens": 10, "completion_tokens": 20}}  optional
//               or {"error": "message"} to report a failure.
//   exit    0. Anything else is an error carrying the tail of stderr.
//   time    BackendOptions::requestTimeout; then the whole process group is
//           killed (SIGKILL) and the call fails. CallContext::stop does the same.
//
// A program that exits without reading stdin is fine (the write's EPIPE is
// ignored). Thread-safe: each call runs its own process.
#pragma once

#include "llm/BackendSpec.h"

#include <string>
#include <vector>

namespace ptxforge::llm {

/// Splits an exec command line (see above). InvalidInput on an unterminated quote.
Result<std::vector<std::string>> splitCommandLine(std::string_view commandLine);

/// The JSON written to the program's stdin.
nlohmann::json execRequestJson(const Request &request, const std::string &hash);

/// Interprets the program's stdout (plain text or the JSON object above).
/// Errors say what is wrong without the "exec: " prefix.
Result<Completion> parseExecOutput(std::string_view standardOutput);

class ExecBackend final : public Backend {
public:
  /// Fails when the command is empty, not found on PATH, or not executable.
  static Result<std::unique_ptr<Backend>> create(const std::string &commandLine, const BackendOptions &options);

  std::string kind() const override { return "exec"; }
  std::string describe() const override { return "exec:" + commandLine_; }

protected:
  Result<Completion> completeValid(const Request &request, const std::string &hash,
                                   const CallContext &context) override;

private:
  ExecBackend(std::string commandLine, std::vector<std::string> argv, std::chrono::milliseconds timeout)
      : commandLine_(std::move(commandLine)), argv_(std::move(argv)), timeout_(timeout) {}

  std::string commandLine_;
  std::vector<std::string> argv_;
  std::chrono::milliseconds timeout_;
};

} // namespace ptxforge::llm
