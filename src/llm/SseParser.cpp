// SseParser: line splitting and field handling per the WHATWG event-stream rules.
#include "llm/SseParser.h"

namespace ptxforge::llm {

bool SseParser::feed(std::string_view bytes) {
  if (stopped_)
    return false;
  if (!sawBom_ && !bytes.empty()) {
    sawBom_ = true;
    if (bytes.starts_with("\xEF\xBB\xBF"))
      bytes.remove_prefix(3);
  }
  for (char c : bytes) {
    if (skipLineFeed_) {
      skipLineFeed_ = false;
      if (c == '\n')
        continue;
    }
    if (c == '\r' || c == '\n') {
      skipLineFeed_ = c == '\r';
      std::string line;
      line.swap(line_);
      if (!processLine(line)) {
        stopped_ = true;
        return false;
      }
      continue;
    }
    if (line_.size() >= maxLineBytes_) {
      lineTooLong_ = stopped_ = true;
      return false;
    }
    line_.push_back(c);
  }
  return true;
}

bool SseParser::finish() {
  if (stopped_)
    return false;
  if (!line_.empty()) {
    std::string line;
    line.swap(line_);
    if (!processLine(line)) {
      stopped_ = true;
      return false;
    }
  }
  return dispatch();
}

bool SseParser::processLine(std::string_view line) {
  if (line.empty())
    return dispatch();
  if (line.front() == ':')
    return true; // comment (servers send ": keep-alive")
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (value.starts_with(' '))
      value.remove_prefix(1);
  }
  if (field == "data") {
    // Many short data lines make one event: its data is capped like a line.
    if (pending_.data.size() + value.size() + 1 > maxLineBytes_) {
      lineTooLong_ = true;
      return false;
    }
    if (hasData_)
      pending_.data.push_back('\n');
    pending_.data.append(value);
    hasData_ = true;
  } else if (field == "event") {
    pending_.event = std::string(value);
  } else if (field == "id") {
    pending_.id = std::string(value);
  }
  // "retry" and unknown fields are ignored.
  return true;
}

bool SseParser::dispatch() {
  if (!hasData_ && pending_.event.empty()) {
    pending_ = SseEvent();
    return true;
  }
  SseEvent event = std::move(pending_);
  pending_ = SseEvent();
  hasData_ = false;
  return handler_(event);
}

} // namespace ptxforge::llm
