// A local HTTP server for the llm backend tests: cpp-httplib on 127.0.0.1 and
// an ephemeral port. Handlers script each call (stream, stall, drop, error),
// and every request received is kept for the test to inspect.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ptxforge::llm::testing {

/// One request as the server received it.
struct Received {
  std::string path;
  std::string body;
  httplib::Headers headers;

  std::string header(const std::string &name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

/// How an SSE reply ends.
enum class StreamEnd {
  Clean, ///< all events, then the end of the chunked body
  Drop,  ///< after `cutAfter` events the connection is closed mid-body
  Stall, ///< after `cutAfter` events the server goes silent (until the client gives up or the test ends)
};

class TestServer {
public:
  /// Scripts one call; `call` counts from 0 over all calls to this path.
  using Handler = std::function<void(const httplib::Request &, httplib::Response &, int call)>;

  TestServer() {
    // Enough workers that idle keep-alive connections never starve a test.
    server_.new_task_queue = [] { return new httplib::ThreadPool(32); };
    server_.set_keep_alive_timeout(1);
    // Without it, Nagle's algorithm and delayed ACKs add 40 ms to most replies.
    server_.set_tcp_nodelay(true);
  }

  ~TestServer() { stop(); }

  /// Registers a POST handler; call before start().
  void post(const std::string &path, Handler handler) {
    auto counter = std::make_shared<std::atomic<int>>(0);
    server_.Post(path, [this, handler = std::move(handler), counter](const httplib::Request &request,
                                                                     httplib::Response &response) {
      {
        std::lock_guard lock(mutex_);
        received_.push_back({request.path, request.body, request.headers});
      }
      handler(request, response, counter->fetch_add(1));
    });
  }

  /// Binds 127.0.0.1 on an ephemeral port and serves on a thread.
  void start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }

  void stop() {
    stopping_ = true;
    server_.stop();
    if (thread_.joinable())
      thread_.join();
  }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::vector<Received> received() const {
    std::lock_guard lock(mutex_);
    return received_;
  }
  size_t count() const {
    std::lock_guard lock(mutex_);
    return received_.size();
  }

  /// Sleeps up to `duration`, returning early when the server stops.
  void pause(std::chrono::milliseconds duration) const {
    auto end = std::chrono::steady_clock::now() + duration;
    while (!stopping_ && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  /// Replies with a text/event-stream body, one `event` string per chunk (each
  /// already formatted, e.g. "data: {...}\n\n"), ending as `end` says.
  void streamEvents(httplib::Response &response, std::vector<std::string> events, StreamEnd end = StreamEnd::Clean,
                    size_t cutAfter = 0) {
    auto state = std::make_shared<size_t>(0);
    response.set_chunked_content_provider(
        "text/event-stream", [this, events = std::move(events), end, cutAfter, state](size_t, httplib::DataSink &sink) {
          size_t &next = *state;
          if (end != StreamEnd::Clean && next == cutAfter) {
            if (end == StreamEnd::Stall)
              pause(std::chrono::seconds(10));
            return false; // closes the connection without the last chunk
          }
          if (next == events.size()) {
            sink.done();
            return true;
          }
          const std::string &event = events[next++];
          return sink.write(event.data(), event.size());
        });
  }

private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::vector<Received> received_;
};

/// "data: " + json + "\n\n"
inline std::string dataEvent(const std::string &json) { return "data: " + json + "\n\n"; }

/// "event: name\ndata: json\n\n", with `json` folded onto one line (tests
/// write it over several; a line break would end the data field).
inline std::string namedEvent(const std::string &name, const std::string &json) {
  std::string oneLine;
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] != '\n') {
      oneLine.push_back(json[i]);
      continue;
    }
    while (i + 1 < json.size() && json[i + 1] == ' ')
      ++i;
    oneLine.push_back(' ');
  }
  return "event: " + name + "\ndata: " + oneLine + "\n\n";
}

} // namespace ptxforge::llm::testing
