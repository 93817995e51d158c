// ReplayBackend and RecordingBackend: JSONL records keyed by request hash.
#include "llm/ReplayBackend.h"

#include "llm/RequestHash.h"
#include "support/InputReader.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace ptxforge::llm {

Result<std::vector<std::pair<size_t, nlohmann::json>>> readJsonLines(const std::string &path, std::string_view what) {
  // Bounded: `replay:/dev/zero` (or a FIFO nobody closes, or a huge file)
  // must end with an error naming the limit, not read for ever.
  Result<size_t> limit = maxInputBytesFromEnvironment();
  if (!limit)
    return makeError(limit.error().kind, std::string(what) + ": " + limit.error().message);
  Result<std::string> read = readFileBounded(path, *limit);
  if (!read)
    return makeError(read.error().kind, std::string(what) + ": " + read.error().message);
  std::string text = std::move(*read);

  std::vector<std::pair<size_t, nlohmann::json>> lines;
  size_t lineNumber = 0;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    bool terminated = end != std::string::npos;
    if (!terminated)
      end = text.size();
    ++lineNumber;
    std::string_view line(text.data() + begin, end - begin);
    begin = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos)
      continue;
    nlohmann::json json = nlohmann::json::parse(line, nullptr, false);
    if (!json.is_object()) {
      if (!terminated)
        break; // interrupted mid-write: everything before it is intact
      return makeError(ErrorKind::InvalidInput, std::string(what) + ": " + path + ":" + std::to_string(lineNumber) +
                                                    ": not a JSON object");
    }
    lines.emplace_back(lineNumber, std::move(json));
  }
  return lines;
}

Result<void> appendLine(int fd, const std::string &path, std::string line, std::string_view what) {
  line.push_back('\n');
  size_t written = 0;
  while (written < line.size()) {
    ssize_t n = ::write(fd, line.data() + written, line.size() - written);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return makeError(ErrorKind::Io, std::string(what) + ": cannot append to " + path + ": " + std::strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
  return {};
}

namespace {

/// Where a request stood in its run and everything of it but its text: the
/// position, then the canonical request without the messages' contents (the
/// roles stay) or the raw prompt. Two requests with this key in common differ
/// in their text only.
std::string placeKey(const std::string &position, nlohmann::json canonical) {
  nlohmann::json roles = nlohmann::json::array();
  if (auto messages = canonical.find("messages"); messages != canonical.end() && messages->is_array())
    for (const nlohmann::json &message : *messages) {
      auto role = message.is_object() ? message.find("role") : message.end();
      roles.push_back(message.is_object() && role != message.end() && role->is_string() ? role->get<std::string>()
                                                                                         : std::string("?"));
    }
  canonical["roles"] = canonical.contains("prompt") ? nlohmann::json("raw prompt") : roles;
  canonical.erase("messages");
  canonical.erase("prompt");
  return position + "\n" + dumpJson(canonical);
}

} // namespace

Result<std::unique_ptr<Backend>> ReplayBackend::create(const std::string &path) {
  auto lines = readJsonLines(path, "replay");
  if (!lines)
    return lines.error();
  std::unique_ptr<ReplayBackend> backend(new ReplayBackend(path));
  for (auto &[lineNumber, json] : *lines) {
    auto where = [&, lineNumber = lineNumber] { return "replay: " + path + ":" + std::to_string(lineNumber) + ": "; };
    auto hash = json.find("request_hash");
    if (hash == json.end() || !hash->is_string() || hash->get<std::string>().empty())
      return makeError(ErrorKind::InvalidInput, where() + "missing string \"request_hash\"");
    auto completionJson = json.find("completion");
    if (completionJson == json.end())
      return makeError(ErrorKind::InvalidInput, where() + "missing \"completion\"");
    Result<Completion> completion = completionFromJson(*completionJson);
    if (!completion)
      return makeError(ErrorKind::InvalidInput, where() + completion.error().message);
    completion->requestHash = hash->get<std::string>();
    auto position = json.find("position");
    auto request = json.find("request");
    const size_t index = backend->completions_.size();
    if (position != json.end() && position->is_string() && !position->get<std::string>().empty() &&
        request != json.end() && request->is_object())
      backend->positions_[placeKey(position->get<std::string>(), *request)].completions.push_back(index);
    backend->records_[completion->requestHash].completions.push_back(index);
    backend->completions_.push_back(std::move(*completion));
  }
  if (const char *by = std::getenv("PTXFORGE_REPLAY_BY_POSITION"); by && std::string_view(by) == "0")
    backend->byPosition_ = false;
  return std::unique_ptr<Backend>(std::move(backend));
}

size_t ReplayBackend::answeredByPosition() const {
  std::lock_guard lock(mutex_);
  return answeredByPosition_;
}

std::string ReplayBackend::describe() const {
  return "replay:" + path_ + " (" + std::to_string(completions_.size()) + " recorded completions)";
}

Result<Completion> ReplayBackend::completeValid(const Request &request, const std::string &hash,
                                                const CallContext &context) {
  Completion completion;
  {
    std::lock_guard lock(mutex_);
    Recorded *found = nullptr;
    bool byPosition = false;
    if (auto byHash = records_.find(hash); byHash != records_.end()) {
      found = &byHash->second;
    } else if (byPosition_ && !context.position.empty()) {
      if (auto at = positions_.find(placeKey(context.position, canonicalRequestJson(request))); at != positions_.end()) {
        found = &at->second;
        byPosition = true;
      }
    }
    if (!found)
      return makeError(ErrorKind::InvalidInput,
                       "replay: no recorded completion for request " + hash + " in " + path_ + " (" +
                           std::to_string(records_.size()) +
                           " requests recorded; the request hash covers model, messages/prompt, temperature, "
                           "top_p, max_tokens, seed and stop" +
                           (context.position.empty() || !byPosition_ ? std::string()
                                                     : "; nor a request like it at " + context.position) +
                           ")");
    Recorded &recorded = *found;
    completion = completions_[recorded.completions[std::min(recorded.next, recorded.completions.size() - 1)]];
    if (recorded.next < recorded.completions.size())
      ++recorded.next;
    if (byPosition) {
      completion.replayedBy = "position";
      ++answeredByPosition_;
    }
  }
  completion.backend = "replay";
  if (context.onText && !completion.text.empty())
    context.onText(completion.text);
  return completion;
}

Result<std::unique_ptr<Backend>> RecordingBackend::create(std::unique_ptr<Backend> inner, const std::string &path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return makeError(ErrorKind::Io, "record: cannot open " + path + " for appending: " + std::strerror(errno));
  return std::unique_ptr<Backend>(new RecordingBackend(std::move(inner), path, fd));
}

RecordingBackend::~RecordingBackend() { ::close(fd_); }

Result<Completion> RecordingBackend::completeValid(const Request &request, const std::string &hash,
                                                   const CallContext &context) {
  Result<Completion> completion = inner_->complete(request, context);
  if (!completion || completion->pending())
    return completion;
  nlohmann::json line = {{"request_hash", hash}, {"request", canonicalRequestJson(request)}};
  if (!context.position.empty())
    line["position"] = context.position;
  line["completion"] = completionToJson(*completion);
  std::string text = dumpJson(line);
  std::lock_guard lock(mutex_);
  if (auto appended = appendLine(fd_, path_, std::move(text), "record"); !appended)
    return appended.error();
  return completion;
}

} // namespace ptxforge::llm
