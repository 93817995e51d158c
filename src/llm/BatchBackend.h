// The `batch` backend: large evaluations through the OpenAI Batch API, offline
// and at batch prices. `batch:MODEL`, with BackendOptions::batchFile and
// ::batchResults.
//
// A round goes like this:
//  1. Every request that no results file answers is appended to batchFile, one
//     Batch-API line each, and answered with a Pending completion
//     (Completion::pending(); no text). The caller ends the round cleanly and
//     tells the user to submit batchFile. Lines look like
//       {"custom_id": "<requestHash(request)>", "method": "POST",
//        "url": "/v1/chat/completions" | "/v1/completions",
//        "body": {<openAiRequestBody(request, MODEL), not streamed>}}
//     A request already written in this run is not written twice.
//  2. The user runs the batch and downloads its output file (and error file).
//  3. The same run again with batchResults = those files: each request is
//     looked up by custom_id and answered from its line
//       {"custom_id": ..., "response": {"status_code": 200, "body": {chat completion}}, "error": null}
//     A line with an error, or a status other than 2xx, answers with an Io
//     error carrying the batch's message. Requests not found are pending again
//     and go to a fresh batchFile (step 1).
//
// batchFile is truncated when the backend is created: it always holds exactly
// the requests this run could not answer. Thread-safe.
#pragma once

#include "llm/BackendSpec.h"

#include <nlohmann/json.hpp>

#include <map>
#include <mutex>
#include <set>
#include <string>

namespace ptxforge::llm {

class BatchBackend final : public Backend {
public:
  static Result<std::unique_ptr<Backend>> create(const std::string &model, const BackendOptions &options);
  ~BatchBackend() override;

  std::string kind() const override { return "batch"; }
  std::string describe() const override;

  /// Requests written to the batch file so far.
  size_t pendingWritten() const;
  const std::string &batchFile() const { return batchFile_; }

protected:
  Result<Completion> completeValid(const Request &request, const std::string &hash,
                                   const CallContext &context) override;

private:
  struct Answer {
    nlohmann::json line;
    std::string file;
  };
  BatchBackend(std::string model, std::string batchFile, int fd) : model_(std::move(model)), batchFile_(std::move(batchFile)), fd_(fd) {}

  std::string model_;
  std::string batchFile_;
  int fd_;
  std::vector<std::string> resultFiles_;
  std::map<std::string, Answer> answers_; ///< by custom_id; read-only after create
  mutable std::mutex mutex_;
  std::set<std::string> written_;
};

} // namespace ptxforge::llm
