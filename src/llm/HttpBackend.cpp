// HttpBackend: one attempt from request to completion, and the retry loop
// around it. Every error message passes through redactSecrets before it
// leaves, because servers echo request headers back in their error bodies.
#include "llm/HttpBackend.h"

#include "support/InputReader.h"

#include <nlohmann/json.hpp>

#include <chrono>

namespace ptxforge::llm {

namespace {

/// Collapses whitespace and shortens text for a one-line message.
std::string oneLine(std::string_view text, size_t limit = 300) {
  std::string line;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !line.empty();
      continue;
    }
    if (space)
      line.push_back(' ');
    space = false;
    line.push_back(c);
    if (line.size() >= limit) {
      line += "...";
      break;
    }
  }
  return line;
}

/// Adapts SseParser + StreamDecoder to the HttpClient's sink.
class SseSink : public StreamSink {
public:
  explicit SseSink(SseParser &parser) : parser_(parser) {}
  bool onBytes(std::string_view bytes) override { return parser_.feed(bytes); }

private:
  SseParser &parser_;
};

bool isRetryableStatus(long status) { return status == 408 || status == 429 || status >= 500; }

} // namespace

std::string serverErrorMessage(std::string_view body) {
  nlohmann::json json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_object()) {
    auto error = json.find("error");
    if (error != json.end()) {
      if (error->is_string())
        return oneLine(error->get<std::string>());
      if (error->is_object()) {
        auto message = error->find("message");
        if (message != error->end() && message->is_string())
          return oneLine(message->get<std::string>());
      }
    }
    for (const char *key : {"message", "detail"}) {
      auto it = json.find(key);
      if (it != json.end() && it->is_string())
        return oneLine(it->get<std::string>());
    }
  }
  std::string line = oneLine(body);
  return line.empty() ? "(empty body)" : line;
}

std::string stringField(const nlohmann::json &object, const char *key, std::string fallback) {
  if (!object.is_object())
    return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::string redactSecrets(std::string text, const std::vector<std::string> &secrets) {
  for (const std::string &secret : secrets) {
    if (secret.empty())
      continue;
    for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 10))
      text.replace(at, secret.size(), "[redacted]");
  }
  return text;
}

Result<std::string> normalizeBaseUrl(std::string_view kind, std::string_view url) {
  std::string normalized(url);
  while (!normalized.empty() && normalized.back() == '/')
    normalized.pop_back();
  if (!normalized.starts_with("http://") && !normalized.starts_with("https://"))
    return makeError(ErrorKind::InvalidInput, std::string(kind) + ": base URL `" + std::string(url) +
                                                  "` must start with http:// or https://");
  return normalized;
}

std::optional<std::string> readEnvironment(const BackendOptions &options, const std::string &variable) {
  std::optional<std::string> key =
      options.environment ? options.environment(variable) : processEnvironment()(variable);
  if (key && key->empty())
    return std::nullopt;
  return key;
}

HttpBackend::HttpBackend(std::string kind, std::string model, std::string baseUrl, const BackendOptions &options,
                         std::string apiKey)
    : kind_(std::move(kind)), model_(std::move(model)), baseUrl_(std::move(baseUrl)), options_(options),
      apiKey_(std::move(apiKey)) {
  options_.environment = nullptr; // read once, at creation; nothing else is looked up later
}

std::string HttpBackend::describe() const { return kind_ + ":" + model_ + " at " + baseUrl_; }

Error HttpBackend::failure(const std::string &message) const {
  return makeError(ErrorKind::Io, redactSecrets(kind_ + ": " + message, {apiKey_}));
}

Result<Completion> HttpBackend::completeValid(const Request &request, const std::string &, const CallContext &context) {
  const std::string &model = request.model.empty() ? model_ : request.model;
  Result<HttpRequest> httpRequest = buildHttpRequest(request, model);
  if (!httpRequest) {
    Error error = httpRequest.error(); // keeps its code and location
    error.message = redactSecrets(error.message, {apiKey_});
    return error;
  }
  RetryPolicy policy{options_.maxRetries, options_.initialBackoff, options_.maxBackoff, options_.maxRetryAfter};
  return runWithRetries(policy, context, kind_, [&](int) { return attemptOnce(request, *httpRequest, model, context); });
}

AttemptResult HttpBackend::attemptOnce(const Request &request, const HttpRequest &httpRequest,
                                       const std::string &model, const CallContext &context) {
  Completion completion;
  completion.backend = kind_;
  completion.model = model;
  const std::string &url = httpRequest.url;

  auto start = std::chrono::steady_clock::now();
  bool cut = false;   // the caller ended the stream (CallContext::stopAfter)
  int64_t deltas = 0; // text deltas received
  auto emitText = [&](std::string_view delta) {
    if (delta.empty())
      return;
    if (!completion.firstTokenMs)
      completion.firstTokenMs =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    completion.text.append(delta);
    ++deltas;
    if (context.onText)
      context.onText(delta);
    if (context.stopAfter && !cut && context.stopAfter(completion.text))
      cut = true;
  };

  std::unique_ptr<StreamDecoder> decoder = request.stream ? newStreamDecoder(request) : nullptr;
  std::optional<DecodeFailure> streamFailure;
  SseParser parser(
      [&](const SseEvent &event) {
        streamFailure = decoder->onEvent(event, completion, emitText);
        return !streamFailure && !cut;
      },
      options_.maxSseLineBytes);
  SseSink sink(parser);

  HttpTimeouts timeouts{options_.connectTimeout, options_.requestTimeout,
                        request.stream ? options_.stallTimeout : std::chrono::milliseconds(0)};
  Result<HttpOutcome> posted =
      client_.post(httpRequest, timeouts, decoder ? &sink : nullptr, context.stop, HttpLimits{options_.maxResponseBytes});
  // Measured here, on the same clock as firstTokenMs, so that first token <= latency.
  double latencyMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!posted)
    return {posted.error(), false, std::nullopt};
  const HttpOutcome &outcome = *posted;
  auto decodeError = [&](const DecodeFailure &decode) -> AttemptResult {
    return {failure(decode.message + " (from " + url + ")"), decode.retryable, std::nullopt};
  };

  if (cut && outcome.streamed && (outcome.failure == TransportFailure::SinkRejected ||
                                  outcome.failure == TransportFailure::None)) {
    // Ended here on purpose: what arrived is the answer. A server reports
    // usage at the end of a stream, which a cut stream never reaches.
    completion.rawFinishReason = "cut";
    completion.finishReason = FinishReason::Other;
    if (completion.usage.completionTokens <= 0) {
      completion.usage.completionTokens = deltas;
      completion.usage.note = "stream cut by the caller: completion tokens counted as the " +
                              std::to_string(deltas) + " text deltas received" +
                              (completion.usage.promptTokens > 0 ? "" : "; prompt tokens not reported");
      completion.usage.reported = true; // a count, as the note says
    }
    completion.latencyMs = latencyMs;
    if (completion.model.empty())
      completion.model = model;
    return {std::move(completion), false, std::nullopt};
  }
  switch (outcome.failure) {
  case TransportFailure::None: break;
  case TransportFailure::SinkRejected:
    if (parser.lineTooLong())
      return {failure("stream from " + url + " has a line (or event) longer than the limit of " +
                      describeByteSize(parser.maxLineBytes()) +
                      "; raise it with the environment variable PTXFORGE_MAX_SSE_LINE_BYTES (e.g. "
                      "PTXFORGE_MAX_SSE_LINE_BYTES=64M)"),
              false, std::nullopt};
    if (streamFailure)
      return decodeError(*streamFailure);
    return {failure("stream rejected by its consumer (from " + url + ")"), false, std::nullopt};
  case TransportFailure::Cancelled: return {failure("cancelled (" + url + ")"), false, std::nullopt};
  case TransportFailure::Timeout:
    return {failure("request to " + url + " timed out after " + std::to_string(options_.requestTimeout.count()) +
                    " ms: " + outcome.failureMessage),
            false, std::nullopt};
  case TransportFailure::Stalled:
    return {failure("stream from " + url + " stalled: " + outcome.failureMessage), true, std::nullopt};
  default:
    return {failure(std::string(transportFailureName(outcome.failure)) + " talking to " + url + ": " +
                    outcome.failureMessage),
            isRetryableTransportFailure(outcome.failure), std::nullopt};
  }

  if (outcome.status < 200 || outcome.status >= 300) {
    std::optional<std::chrono::milliseconds> retryAfter;
    if (outcome.retryAfter)
      retryAfter = parseRetryAfter(*outcome.retryAfter, std::chrono::system_clock::now());
    return {failure("HTTP " + std::to_string(outcome.status) + " from " + url + ": " + serverErrorMessage(outcome.body)),
            isRetryableStatus(outcome.status), retryAfter};
  }

  if (outcome.streamed) {
    if (!parser.finish() && streamFailure)
      return decodeError(*streamFailure);
    if (auto truncated = decoder->finish(completion))
      return decodeError(*truncated);
  } else {
    nlohmann::json body = nlohmann::json::parse(outcome.body, nullptr, false);
    if (body.is_discarded())
      return decodeError({"malformed response: not JSON: " + oneLine(outcome.body, 200), false});
    if (auto decode = decodeBody(request, body, completion))
      return decodeError(*decode);
    if (context.onText && !completion.text.empty())
      context.onText(completion.text);
  }
  completion.latencyMs = latencyMs;
  if (completion.model.empty())
    completion.model = model;
  return {std::move(completion), false, std::nullopt};
}

} // namespace ptxforge::llm
