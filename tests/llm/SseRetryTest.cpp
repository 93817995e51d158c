// The SSE parser (chunk boundaries anywhere) and the retry arithmetic.
#include "llm/Retry.h"
#include "llm/SseParser.h"

#include <gtest/gtest.h>

#include <ctime>

namespace ptxforge::llm {
namespace {

std::vector<SseEvent> parseInChunks(std::string_view text, size_t chunk) {
  std::vector<SseEvent> events;
  SseParser parser([&](const SseEvent &event) {
    events.push_back(event);
    return true;
  });
  for (size_t at = 0; at < text.size(); at += chunk)
    EXPECT_TRUE(parser.feed(text.substr(at, chunk)));
  EXPECT_TRUE(parser.finish());
  return events;
}

TEST(SseParser, SplitsEventsAtAnyChunkBoundary) {
  std::string stream = ": keep-alive\r\n"
                       "data: {\"a\":1}\r\n\r\n"
                       "event: content_block_delta\n"
                       "data: line one\n"
                       "data:line two\n"
                       "id: 7\n\n"
                       "data: [DONE]\r\r";
  for (size_t chunk : {1, 2, 3, 5, 7, 1000}) {
    std::vector<SseEvent> events = parseInChunks(stream, chunk);
    ASSERT_EQ(events.size(), 3u) << "chunk " << chunk;
    EXPECT_EQ(events[0].data, "{\"a\":1}");
    EXPECT_EQ(events[0].event, "");
    EXPECT_EQ(events[1].event, "content_block_delta");
    EXPECT_EQ(events[1].data, "line one\nline two");
    EXPECT_EQ(events[1].id, "7");
    EXPECT_EQ(events[2].data, "[DONE]");
  }
}

TEST(SseParser, FinishDispatchesAnUnterminatedEvent) {
  std::vector<SseEvent> events = parseInChunks("data: [DONE]\n", 4);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "[DONE]");
}

TEST(SseParser, HandlerCanStopParsing) {
  int seen = 0;
  SseParser parser([&](const SseEvent &) { return ++seen < 2; });
  EXPECT_FALSE(parser.feed("data: 1\n\ndata: 2\n\ndata: 3\n\n"));
  EXPECT_EQ(seen, 2);
  EXPECT_FALSE(parser.feed("data: 4\n\n"));
}

TEST(Backoff, DoublesUpToTheCapWithJitter) {
  RetryPolicy policy{5, std::chrono::milliseconds(1000), std::chrono::milliseconds(8000), std::chrono::seconds(60)};
  EXPECT_EQ(backoffDelay(policy, 0, 1.0).count(), 1000);
  EXPECT_EQ(backoffDelay(policy, 0, 0.0).count(), 500);
  EXPECT_EQ(backoffDelay(policy, 1, 1.0).count(), 2000);
  EXPECT_EQ(backoffDelay(policy, 2, 1.0).count(), 4000);
  EXPECT_EQ(backoffDelay(policy, 3, 1.0).count(), 8000);
  EXPECT_EQ(backoffDelay(policy, 10, 1.0).count(), 8000);
  EXPECT_EQ(backoffDelay(policy, 10, 0.0).count(), 4000);
  EXPECT_EQ(backoffDelay(policy, 1000, 0.5).count(), 6000);
}

TEST(RetryAfter, ParsesSecondsAndHttpDates) {
  auto now = std::chrono::system_clock::from_time_t(1700000000); // Tue, 14 Nov 2023 22:13:20 GMT
  EXPECT_EQ(parseRetryAfter("2", now)->count(), 2000);
  EXPECT_EQ(parseRetryAfter(" 1.5 ", now)->count(), 1500);
  EXPECT_EQ(parseRetryAfter("Tue, 14 Nov 2023 22:13:30 GMT", now)->count(), 10000);
  EXPECT_EQ(parseRetryAfter("Tue, 14 Nov 2023 22:00:00 GMT", now)->count(), 0);
  EXPECT_FALSE(parseRetryAfter("soon", now));
  EXPECT_FALSE(parseRetryAfter("-3", now));
  EXPECT_FALSE(parseRetryAfter("", now));
}

TEST(RunWithRetries, StopsOnNonRetryableAndCountsAttempts) {
  RetryPolicy policy{3, std::chrono::milliseconds(1), std::chrono::milliseconds(2), std::chrono::seconds(1)};
  int calls = 0;
  auto result = runWithRetries(policy, {}, "test", [&](int) {
    ++calls;
    return AttemptResult{makeError(ErrorKind::Io, "test: HTTP 400"), false, std::nullopt};
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(result.error().message, "test: HTTP 400");

  calls = 0;
  std::vector<int> notices;
  CallContext context;
  context.onRetry = [&](const RetryNotice &notice) { notices.push_back(notice.attempt); };
  result = runWithRetries(policy, context, "test", [&](int attempt) {
    ++calls;
    if (attempt < 3)
      return AttemptResult{makeError(ErrorKind::Io, "test: HTTP 503"), true, std::nullopt};
    Completion completion;
    completion.text = "ok";
    return AttemptResult{completion, false, std::nullopt};
  });
  ASSERT_TRUE(result);
  EXPECT_EQ(result->attempts, 3);
  EXPECT_EQ(notices, (std::vector<int>{1, 2}));

  calls = 0;
  result = runWithRetries(policy, {}, "test", [&](int) {
    ++calls;
    return AttemptResult{makeError(ErrorKind::Io, "test: HTTP 503"), true, std::nullopt};
  });
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(result.error().message, "test: HTTP 503 (gave up after 4 attempts)");
}

TEST(RunWithRetries, RefusesARetryAfterBeyondTheLimit) {
  RetryPolicy policy{3, std::chrono::milliseconds(1), std::chrono::milliseconds(2), std::chrono::seconds(5)};
  int calls = 0;
  auto result = runWithRetries(policy, {}, "test", [&](int) {
    ++calls;
    return AttemptResult{makeError(ErrorKind::Io, "test: HTTP 429"), true, std::chrono::milliseconds(3600'000)};
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(result.error().message, "test: HTTP 429 (server asked to retry after 3600 s, more than the 5 s limit)");
}

TEST(RunWithRetries, CancelEndsTheWait) {
  RetryPolicy policy{3, std::chrono::seconds(20), std::chrono::seconds(20), std::chrono::seconds(60)};
  std::stop_source source;
  CallContext context;
  context.stop = source.get_token();
  context.onRetry = [&](const RetryNotice &) { source.request_stop(); };
  auto start = std::chrono::steady_clock::now();
  auto result = runWithRetries(policy, context, "test", [&](int) {
    return AttemptResult{makeError(ErrorKind::Io, "test: HTTP 503"), true, std::nullopt};
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(result.error().message.find("cancelled"), std::string::npos);
}

} // namespace
} // namespace ptxforge::llm
