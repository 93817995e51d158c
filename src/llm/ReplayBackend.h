// Recording and replaying runs.
//
// A record file is JSONL, one line per answered request:
//   {"request_hash": "<requestHash(request)>",
//    "request":      <canonicalRequestJson(request)>,
//    "position":     "<CallContext::position>",          when the caller gave one
//    "completion":   <completionToJson(completion)>}
//
// RecordingBackend wraps any backend and appends a line for every completion
// it returns (not for errors or pending batch requests). Lines are written with
// one write(2) each on a file opened O_APPEND, so an interrupted run loses at
// most the line being written, and concurrent calls never interleave lines.
//
// `replay:FILE` answers from such a file by request hash. When a hash was
// recorded several times (the same request sent more than once), the calls get
// the recorded completions in file order, and the last one again after that.
//
// A request whose hash is not recorded is answered by position when the call
// gives one (CallContext::position: task, round, slot, kind and strategies in a
// solve run) and the recording holds a request there that differs from it in
// its text only (model, sampling parameters, seed, stop and message roles the
// same): that completion, in file order like hashes, marked
// Completion::replayedBy = "position". An optimize prompt quotes the times
// measured in its own run, so an eval recorded on a GPU would otherwise have no
// answer for it in the replay. PTXFORGE_REPLAY_BY_POSITION=0 turns this off.
//
// Any other request whose hash is not recorded is an InvalidInput error naming
// the hash. A malformed line is an error naming FILE:LINE, except a final line
// without a newline (a recording interrupted mid-write), which is skipped.
#pragma once

#include "llm/BackendSpec.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ptxforge::llm {

class ReplayBackend final : public Backend {
public:
  static Result<std::unique_ptr<Backend>> create(const std::string &path);

  std::string kind() const override { return "replay"; }
  std::string describe() const override;
  /// Distinct request hashes recorded.
  size_t recordedRequests() const { return records_.size(); }
  /// Requests answered by position so far (see above).
  size_t answeredByPosition() const;

protected:
  Result<Completion> completeValid(const Request &request, const std::string &hash,
                                   const CallContext &context) override;

private:
  /// The completions recorded under one key, as indices into completions_
  /// (a completion with a position is under two keys, stored once).
  struct Recorded {
    std::vector<size_t> completions;
    size_t next = 0;
  };
  explicit ReplayBackend(std::string path) : path_(std::move(path)) {}

  std::string path_;
  mutable std::mutex mutex_;
  std::vector<Completion> completions_;
  std::map<std::string, Recorded> records_;
  std::map<std::string, Recorded> positions_;
  bool byPosition_ = true;
  size_t answeredByPosition_ = 0;
};

class RecordingBackend final : public Backend {
public:
  /// Opens (creates) `path` for appending; Io error when it cannot.
  static Result<std::unique_ptr<Backend>> create(std::unique_ptr<Backend> inner, const std::string &path);
  ~RecordingBackend() override;

  std::string kind() const override { return inner_->kind(); }
  std::string describe() const override { return inner_->describe() + ", recording to " + path_; }

protected:
  Result<Completion> completeValid(const Request &request, const std::string &hash,
                                   const CallContext &context) override;

private:
  RecordingBackend(std::unique_ptr<Backend> inner, std::string path, int fd)
      : inner_(std::move(inner)), path_(std::move(path)), fd_(fd) {}

  std::unique_ptr<Backend> inner_;
  std::string path_;
  int fd_;
  std::mutex mutex_;
};

/// Reads a JSONL file into its parsed lines; `what` prefixes error messages.
/// A malformed final line without a trailing newline is skipped (see above).
Result<std::vector<std::pair<size_t, nlohmann::json>>> readJsonLines(const std::string &path, std::string_view what);

/// Appends `line` + '\n' with a single write(2) call (looping only on a short
/// write). Io error with the path on failure.
Result<void> appendLine(int fd, const std::string &path, std::string line, std::string_view what);

} // namespace ptxforge::llm
