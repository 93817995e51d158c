// SseParser: incremental parser for Server-Sent Events (the WHATWG
// "text/event-stream" format) as the OpenAI and Anthropic APIs stream them.
// Internal to the llm library.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace ptxforge::llm {

/// One dispatched event. `data` joins the event's data lines with '\n'.
struct SseEvent {
  std::string event; ///< the "event:" field; empty means "message"
  std::string data;
  std::string id;
};

/// Feed bytes as they arrive, in chunks of any size (a line or a CRLF may be
/// split across chunks). Lines end with LF, CRLF or CR; ':' starts a comment;
/// a blank line dispatches the event; a field without ':' has an empty value;
/// one space after the colon is dropped. Events with no data line are not
/// dispatched (the spec's rule), except that `event:` alone is kept for APIs
/// that send "event: ping" with empty data.
class SseParser {
public:
  /// Return false from the handler to stop parsing; feed() then returns false.
  using Handler = std::function<bool(const SseEvent &)>;

  /// The default cap on one line and on one event's data: 8 MiB, far above
  /// any chunk a server sends (a whole long answer in one event is under 1 MiB).
  static constexpr size_t kDefaultMaxLineBytes = size_t{8} << 20;

  explicit SseParser(Handler handler, size_t maxLineBytes = kDefaultMaxLineBytes)
      : handler_(std::move(handler)), maxLineBytes_(maxLineBytes) {}

  /// false when the handler stopped parsing or a line (or an event's data)
  /// grew past the cap (then lineTooLong()).
  bool feed(std::string_view bytes);
  bool lineTooLong() const { return lineTooLong_; }
  size_t maxLineBytes() const { return maxLineBytes_; }
  /// End of stream: dispatches an event that was not followed by a blank line
  /// (lenient: some servers end with "data: [DONE]\n"). Returns the handler's verdict.
  bool finish();

private:
  bool processLine(std::string_view line);
  bool dispatch();

  Handler handler_;
  size_t maxLineBytes_;
  bool lineTooLong_ = false;
  std::string line_;
  SseEvent pending_;
  bool hasData_ = false;
  bool skipLineFeed_ = false; // the previous chunk ended with CR
  bool stopped_ = false;
  bool sawBom_ = false;
};

} // namespace ptxforge::llm
