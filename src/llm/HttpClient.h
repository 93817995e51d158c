// HttpClient: one HTTP POST attempt through libcurl, with connect/total/stall
// timeouts, cancellation and streaming of the response body. Internal to the
// llm library; retries live in Retry.h, protocols in the backends.
#pragma once

#include "support/Result.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::llm {

struct HttpHeader {
  std::string name;
  std::string value;
};

struct HttpRequest {
  std::string url;
  std::vector<HttpHeader> headers; ///< may hold secrets: never logged or echoed
  std::string body;
};

struct HttpTimeouts {
  std::chrono::milliseconds connect{10'000};
  std::chrono::milliseconds total{600'000};
  /// No response bytes for this long aborts the attempt; 0 disables (used for
  /// non-streamed requests, whose server may be silent until the answer is done).
  std::chrono::milliseconds stall{0};
};

/// Size caps on one response, so that a misbehaving server (an endless
/// stream, one endless line) cannot exhaust memory.
struct HttpLimits {
  /// Bytes of one response body, streamed or not. Hitting it fails the
  /// attempt (not retried) with a message naming the limit and
  /// PTXFORGE_MAX_RESPONSE_BYTES.
  size_t maxBodyBytes = size_t{64} << 20;
};

/// How an attempt failed below HTTP. Decides whether it is retried.
enum class TransportFailure {
  None,           ///< a complete HTTP response arrived (any status)
  ConnectFailed,  ///< refused, unreachable, DNS (retried)
  ConnectTimeout, ///< no connection within the connect timeout (retried)
  Timeout,        ///< the total timeout passed (not retried: it would again)
  Stalled,        ///< a stream went silent for the stall timeout (retried)
  Broken,         ///< the connection dropped mid-transfer (retried)
  Cancelled,      ///< CallContext::stop was requested
  SinkRejected,   ///< the stream consumer rejected the data (malformed stream)
  Other,          ///< TLS, bad URL, ... (not retried)
};

/// Receives a 2xx text/event-stream body as it arrives.
class StreamSink {
public:
  virtual ~StreamSink() = default;
  /// Returns false to abort the transfer (TransportFailure::SinkRejected).
  virtual bool onBytes(std::string_view bytes) = 0;
};

/// What one attempt produced.
struct HttpOutcome {
  TransportFailure failure = TransportFailure::None;
  std::string failureMessage; ///< curl's own words for the failure
  long status = 0;            ///< HTTP status, 0 when none arrived
  std::string contentType;
  std::optional<std::string> retryAfter; ///< the Retry-After header, verbatim
  std::string body;                      ///< the body when it was not streamed to the sink
  bool streamed = false;                 ///< the body went to the sink
  double elapsedMs = 0;                  ///< request start to end of transfer
  std::optional<double> firstByteMs;     ///< request start to first body byte
};

/// Thread-safe: a pool of curl easy handles (each keeps its connections alive
/// between requests); each post() takes one handle for its duration.
class HttpClient {
public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient &) = delete;
  HttpClient &operator=(const HttpClient &) = delete;

  /// One POST. When `sink` is given and the response is 2xx with content type
  /// text/event-stream, the body goes to the sink; otherwise it is collected in
  /// HttpOutcome::body. An Error only when curl itself cannot be set up.
  Result<HttpOutcome> post(const HttpRequest &request, const HttpTimeouts &timeouts, StreamSink *sink,
                           const std::stop_token &stop, const HttpLimits &limits = {});

private:
  struct Pool;
  std::unique_ptr<Pool> pool_;
};

/// Words for a transport failure ("connection refused", "stalled", ...).
const char *transportFailureName(TransportFailure failure);
bool isRetryableTransportFailure(TransportFailure failure);

} // namespace ptxforge::llm
