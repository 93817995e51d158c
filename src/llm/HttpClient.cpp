// HttpClient over libcurl. Every curl handle lives in an RAII wrapper; every
// curl call is checked and its failure carries curl's own message.
#include "llm/HttpClient.h"

#include "support/InputReader.h"
#include "support/Text.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <mutex>

namespace ptxforge::llm {

namespace {

using Clock = std::chrono::steady_clock;

struct EasyDeleter {
  void operator()(CURL *handle) const { curl_easy_cleanup(handle); }
};
using EasyHandle = std::unique_ptr<CURL, EasyDeleter>;

struct HeaderListDeleter {
  void operator()(curl_slist *list) const { curl_slist_free_all(list); }
};
using HeaderList = std::unique_ptr<curl_slist, HeaderListDeleter>;

/// curl_global_init is not thread-safe; do it once before any handle exists.
Result<void> initializeCurlOnce() {
  static std::once_flag once;
  static CURLcode code = CURLE_OK;
  std::call_once(once, [] { code = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (code != CURLE_OK)
    return makeError(ErrorKind::Internal, std::string("curl_global_init failed: ") + curl_easy_strerror(code));
  return {};
}

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

/// State shared with curl's callbacks during one transfer (all on this thread).
struct Transfer {
  CURL *handle = nullptr;
  StreamSink *sink = nullptr;
  const std::stop_token *stop = nullptr;
  HttpOutcome *outcome = nullptr;
  Clock::time_point start;
  Clock::time_point lastActivity;
  std::chrono::milliseconds stall{0};
  bool decided = false; // whether the body goes to the sink is decided
  bool toSink = false;
  bool stalled = false;
  bool cancelled = false;
  bool sinkRejected = false;
  bool tooLarge = false;
  size_t maxBodyBytes = 0;
  size_t bodyBytes = 0; // streamed or collected so far
};

size_t onHeader(char *data, size_t size, size_t count, void *userData) {
  auto *transfer = static_cast<Transfer *>(userData);
  size_t bytes = size * count;
  transfer->lastActivity = Clock::now();
  std::string_view line(data, bytes);
  if (line.starts_with("HTTP/")) {
    // A new response (after 100 Continue, say): forget the previous headers.
    transfer->outcome->retryAfter.reset();
    transfer->outcome->contentType.clear();
    return bytes;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos)
    return bytes;
  std::string_view name = trim(line.substr(0, colon));
  std::string_view value = trim(line.substr(colon + 1));
  if (equalsIgnoringCase(name, "retry-after"))
    transfer->outcome->retryAfter = std::string(value);
  else if (equalsIgnoringCase(name, "content-type"))
    transfer->outcome->contentType = std::string(value);
  return bytes;
}

size_t onBody(char *data, size_t size, size_t count, void *userData) {
  auto *transfer = static_cast<Transfer *>(userData);
  size_t bytes = size * count;
  auto now = Clock::now();
  transfer->lastActivity = now;
  HttpOutcome &outcome = *transfer->outcome;
  if (!transfer->decided) {
    // Headers are complete once body bytes arrive: decide where they go.
    transfer->decided = true;
    long status = 0;
    curl_easy_getinfo(transfer->handle, CURLINFO_RESPONSE_CODE, &status);
    std::string_view type = outcome.contentType;
    bool eventStream = type.size() >= 17 && equalsIgnoringCase(type.substr(0, 17), "text/event-stream");
    transfer->toSink = transfer->sink && status >= 200 && status < 300 && eventStream;
    outcome.streamed = transfer->toSink;
    outcome.firstByteMs = std::chrono::duration<double, std::milli>(now - transfer->start).count();
  }
  // Streamed bodies count too: an endless stream must end somewhere.
  if (transfer->bodyBytes + bytes > transfer->maxBodyBytes) {
    transfer->tooLarge = true;
    return 0;
  }
  transfer->bodyBytes += bytes;
  if (transfer->toSink) {
    if (!transfer->sink->onBytes(std::string_view(data, bytes))) {
      transfer->sinkRejected = true;
      return 0; // CURLE_WRITE_ERROR
    }
    return bytes;
  }
  outcome.body.append(data, bytes);
  return bytes;
}

int onProgress(void *userData, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto *transfer = static_cast<Transfer *>(userData);
  if (transfer->stop && transfer->stop->stop_requested()) {
    transfer->cancelled = true;
    return 1;
  }
  if (transfer->stall.count() > 0 && Clock::now() - transfer->lastActivity > transfer->stall) {
    transfer->stalled = true;
    return 1;
  }
  return 0;
}

TransportFailure classify(CURLcode code, const Transfer &transfer, CURL *handle) {
  switch (code) {
  case CURLE_OK: return TransportFailure::None;
  case CURLE_ABORTED_BY_CALLBACK:
    return transfer.cancelled ? TransportFailure::Cancelled : TransportFailure::Stalled;
  case CURLE_WRITE_ERROR:
    if (transfer.sinkRejected)
      return TransportFailure::SinkRejected;
    return TransportFailure::Other;
  case CURLE_COULDNT_CONNECT:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY:
    return TransportFailure::ConnectFailed;
  case CURLE_OPERATION_TIMEDOUT: {
    // One curl code for both timeouts; a connection that never completed
    // means the connect timeout.
    double connectSeconds = 0;
    curl_easy_getinfo(handle, CURLINFO_CONNECT_TIME, &connectSeconds);
    return connectSeconds <= 0 ? TransportFailure::ConnectTimeout : TransportFailure::Timeout;
  }
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
  case CURLE_SSL_CONNECT_ERROR:
    return TransportFailure::Broken;
  default: return TransportFailure::Other;
  }
}

} // namespace

const char *transportFailureName(TransportFailure failure) {
  switch (failure) {
  case TransportFailure::None: return "ok";
  case TransportFailure::ConnectFailed: return "could not connect";
  case TransportFailure::ConnectTimeout: return "connect timed out";
  case TransportFailure::Timeout: return "request timed out";
  case TransportFailure::Stalled: return "stream stalled";
  case TransportFailure::Broken: return "connection broken";
  case TransportFailure::Cancelled: return "cancelled";
  case TransportFailure::SinkRejected: return "malformed stream";
  case TransportFailure::Other: return "transfer failed";
  }
  return "transfer failed";
}

bool isRetryableTransportFailure(TransportFailure failure) {
  switch (failure) {
  case TransportFailure::ConnectFailed:
  case TransportFailure::ConnectTimeout:
  case TransportFailure::Stalled:
  case TransportFailure::Broken:
    return true;
  default: return false;
  }
}

/// Idle easy handles. Reusing a handle reuses its live connections
/// (curl_easy_reset keeps them), which matters for many small requests.
struct HttpClient::Pool {
  std::mutex mutex;
  std::vector<EasyHandle> idle;
};

HttpClient::HttpClient() : pool_(std::make_unique<Pool>()) {}
HttpClient::~HttpClient() = default;

Result<HttpOutcome> HttpClient::post(const HttpRequest &request, const HttpTimeouts &timeouts, StreamSink *sink,
                                     const std::stop_token &stop, const HttpLimits &limits) {
  if (auto init = initializeCurlOnce(); !init)
    return init.error();

  EasyHandle handle;
  {
    std::lock_guard lock(pool_->mutex);
    if (!pool_->idle.empty()) {
      handle = std::move(pool_->idle.back());
      pool_->idle.pop_back();
    }
  }
  if (handle)
    curl_easy_reset(handle.get());
  else
    handle.reset(curl_easy_init());
  if (!handle)
    return makeError(ErrorKind::Internal, "curl_easy_init failed");

  HeaderList headers;
  auto addHeader = [&](const std::string &line) -> bool {
    curl_slist *extended = curl_slist_append(headers.get(), line.c_str());
    if (!extended)
      return false; // the old list is untouched and still owned
    (void)headers.release(); // same list, possibly a new head
    headers.reset(extended);
    return true;
  };
  for (const HttpHeader &header : request.headers)
    if (!addHeader(header.name + ": " + header.value))
      return makeError(ErrorKind::Internal, "curl_slist_append failed");
  // Without this, curl sends "Expect: 100-continue" for bodies over 1 KiB and
  // waits up to a second for servers that do not answer it.
  if (!addHeader("Expect:"))
    return makeError(ErrorKind::Internal, "curl_slist_append failed");

  HttpOutcome outcome;
  Transfer transfer;
  transfer.handle = handle.get();
  transfer.sink = sink;
  transfer.stop = &stop;
  transfer.outcome = &outcome;
  transfer.stall = timeouts.stall;
  transfer.maxBodyBytes = limits.maxBodyBytes;
  transfer.start = transfer.lastActivity = Clock::now();
  char errorBuffer[CURL_ERROR_SIZE] = {};

  CURL *easy = handle.get();
  CURLcode setup = CURLE_OK;
  auto set = [&](CURLoption option, auto value) {
    if (setup == CURLE_OK)
      setup = curl_easy_setopt(easy, option, value);
  };
  set(CURLOPT_URL, request.url.c_str());
  set(CURLOPT_POST, 1L);
  set(CURLOPT_POSTFIELDS, request.body.data());
  set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  set(CURLOPT_HTTPHEADER, headers.get());
  set(CURLOPT_NOSIGNAL, 1L); // required for timeouts in a multi-threaded program
  set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeouts.connect.count()));
  set(CURLOPT_TIMEOUT_MS, static_cast<long>(timeouts.total.count()));
  set(CURLOPT_HEADERFUNCTION, &onHeader);
  set(CURLOPT_HEADERDATA, &transfer);
  set(CURLOPT_WRITEFUNCTION, &onBody);
  set(CURLOPT_WRITEDATA, &transfer);
  set(CURLOPT_NOPROGRESS, 0L);
  set(CURLOPT_XFERINFOFUNCTION, &onProgress);
  set(CURLOPT_XFERINFODATA, &transfer);
  set(CURLOPT_ERRORBUFFER, errorBuffer);
  set(CURLOPT_ACCEPT_ENCODING, "");
  set(CURLOPT_TCP_KEEPALIVE, 1L);
  // A POST that is redirected is not followed: the key would go along.
  set(CURLOPT_FOLLOWLOCATION, 0L);
  set(CURLOPT_PROTOCOLS_STR, "http,https");
  if (setup != CURLE_OK)
    return makeError(ErrorKind::Internal, std::string("curl_easy_setopt failed: ") + curl_easy_strerror(setup));

  CURLcode code = curl_easy_perform(easy);
  outcome.elapsedMs = std::chrono::duration<double, std::milli>(Clock::now() - transfer.start).count();
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &outcome.status);
  outcome.failure = classify(code, transfer, easy);
  if (transfer.tooLarge) {
    outcome.failure = TransportFailure::Other;
    outcome.failureMessage = std::string(outcome.streamed ? "streamed " : "") + "response body larger than the limit of " +
                             describeByteSize(limits.maxBodyBytes) +
                             "; raise it with the environment variable PTXFORGE_MAX_RESPONSE_BYTES (e.g. "
                             "PTXFORGE_MAX_RESPONSE_BYTES=256M)";
  } else if (outcome.failure == TransportFailure::Stalled) {
    outcome.failureMessage = "no data for " + std::to_string(timeouts.stall.count()) + " ms";
  } else if (code != CURLE_OK) {
    outcome.failureMessage = errorBuffer[0] ? errorBuffer : curl_easy_strerror(code);
    while (!outcome.failureMessage.empty() && outcome.failureMessage.back() == '\n')
      outcome.failureMessage.pop_back();
  }

  // Detach this call's pointers before the handle goes back to the pool.
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, nullptr);
  {
    std::lock_guard lock(pool_->mutex);
    pool_->idle.push_back(std::move(handle));
  }
  return outcome;
}

} // namespace ptxforge::llm
