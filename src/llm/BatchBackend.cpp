// The batch backend: Batch-API request lines out, output lines in.
#include "llm/BatchBackend.h"

#include "llm/HttpBackend.h"
#include "llm/OpenAiBackend.h"
#include "llm/ReplayBackend.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace ptxforge::llm {

namespace {

/// True when a Batch-API output line carries a 2xx response.
bool isSuccess(const nlohmann::json &line) {
  auto error = line.find("error");
  if (error != line.end() && !error->is_null())
    return false;
  auto response = line.find("response");
  if (response == line.end() || !response->is_object())
    return false;
  auto status = response->find("status_code");
  return status != response->end() && status->is_number_integer() && status->get<int>() >= 200 &&
         status->get<int>() < 300;
}

/// The batch's own words for a failed line.
std::string failureMessage(const nlohmann::json &line) {
  auto error = line.find("error");
  if (error != line.end() && !error->is_null()) {
    std::string code = stringField(*error, "code");
    std::string message = stringField(*error, "message", dumpJson(*error));
    return code.empty() ? message : code + ": " + message;
  }
  auto response = line.find("response");
  if (response == line.end() || !response->is_object())
    return "no response";
  std::string status = "HTTP ?";
  if (auto code = response->find("status_code"); code != response->end() && code->is_number_integer())
    status = "HTTP " + std::to_string(code->get<int>());
  auto body = response->find("body");
  return status + ": " + (body != response->end() ? serverErrorMessage(dumpJson(*body)) : "(no body)");
}

} // namespace

Result<std::unique_ptr<Backend>> BatchBackend::create(const std::string &model, const BackendOptions &options) {
  if (options.batchFile.empty())
    return makeError(ErrorKind::InvalidInput, "batch: no batch file to write requests to (PTXFORGE_BATCH_FILE)");
  for (const std::string &results : options.batchResults)
    if (results == options.batchFile)
      return makeError(ErrorKind::InvalidInput, "batch: the batch file " + options.batchFile +
                                                    " is also given as a results file; they must differ");

  std::map<std::string, Answer> answers;
  for (const std::string &results : options.batchResults) {
    auto lines = readJsonLines(results, "batch");
    if (!lines)
      return lines.error();
    for (auto &[lineNumber, line] : *lines) {
      std::string id = stringField(line, "custom_id");
      if (id.empty())
        return makeError(ErrorKind::InvalidInput, "batch: " + results + ":" + std::to_string(lineNumber) +
                                                      ": missing string \"custom_id\"; is this a Batch-API output file?");
      // A later success replaces anything; a failure never replaces a success.
      auto existing = answers.find(id);
      if (existing == answers.end() || isSuccess(line) || !isSuccess(existing->second.line))
        answers[id] = Answer{std::move(line), results};
    }
  }

  int fd = ::open(options.batchFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return makeError(ErrorKind::Io, "batch: cannot create " + options.batchFile + ": " + std::strerror(errno));
  std::unique_ptr<BatchBackend> backend(new BatchBackend(model, options.batchFile, fd));
  backend->resultFiles_ = options.batchResults;
  backend->answers_ = std::move(answers);
  return std::unique_ptr<Backend>(std::move(backend));
}

BatchBackend::~BatchBackend() { ::close(fd_); }

std::string BatchBackend::describe() const {
  std::string text = "batch:" + model_ + " (writing pending requests to " + batchFile_;
  if (!resultFiles_.empty()) {
    text += "; " + std::to_string(answers_.size()) + " results from";
    for (const std::string &file : resultFiles_)
      text += " " + file;
  }
  return text + ")";
}

size_t BatchBackend::pendingWritten() const {
  std::lock_guard lock(mutex_);
  return written_.size();
}

Result<Completion> BatchBackend::completeValid(const Request &request, const std::string &hash,
                                               const CallContext &context) {
  const std::string &model = request.model.empty() ? model_ : request.model;
  Completion completion;
  completion.backend = "batch";
  completion.model = model;
  completion.attempts = 0;

  if (auto found = answers_.find(hash); found != answers_.end()) {
    const Answer &answer = found->second;
    if (!isSuccess(answer.line))
      return makeError(ErrorKind::Io, "batch: request " + hash + " failed in the batch (" + answer.file +
                                          "): " + failureMessage(answer.line));
    const nlohmann::json &body = answer.line["response"]["body"];
    if (auto failure = decodeOpenAiResponse(request, body, completion))
      return makeError(ErrorKind::Io, "batch: " + failure->message + " in the result for request " + hash + " (" +
                                          answer.file + ")");
    completion.attempts = 1;
    if (context.onText && !completion.text.empty())
      context.onText(completion.text);
    return completion;
  }

  completion.status = CompletionStatus::Pending;
  std::lock_guard lock(mutex_);
  if (written_.count(hash))
    return completion;
  nlohmann::json line = {{"custom_id", hash},
                         {"method", "POST"},
                         {"url", std::string("/v1") + openAiEndpoint(request)},
                         {"body", openAiRequestBody(request, model, false, false)}};
  if (auto appended = appendLine(fd_, batchFile_, dumpJson(line), "batch"); !appended)
    return appended.error();
  written_.insert(hash);
  return completion;
}

} // namespace ptxforge::llm
