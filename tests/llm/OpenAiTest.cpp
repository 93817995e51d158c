// The openai backend against a local server that streams, stalls, drops
// connections, rate-limits and breaks its JSON — every path a real
// OpenAI-compatible server (vLLM, llama.cpp, a commercial API) can take.
#include "llm/BackendSpec.h"
#include "llm/RequestHash.h"

#include "TestServer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace ptxforge::llm {
namespace {

using testing::dataEvent;
using testing::StreamEnd;
using testing::TestServer;
using namespace std::chrono_literals;

const std::string kSecret = "sk-test-7d1f0c2e9a4b4c5d8e6f";

/// Short timeouts and back-offs so that the whole file runs in seconds.
BackendOptions fastOptions(const TestServer &server) {
  BackendOptions options;
  options.baseUrl = server.url() + "/v1";
  options.connectTimeout = 2s;
  options.requestTimeout = 10s;
  options.stallTimeout = 10s;
  options.maxRetries = 2;
  options.initialBackoff = 10ms;
  options.maxBackoff = 20ms;
  options.environment = [](const std::string &name) -> std::optional<std::string> {
    if (name == "OPENAI_API_KEY")
      return kSecret;
    return std::nullopt;
  };
  return options;
}

std::unique_ptr<Backend> openAi(const BackendOptions &options, const std::string &model = "test-model") {
  auto backend = openBackend("openai:" + model, options);
  EXPECT_TRUE(backend) << backend.error().message;
  return backend ? std::move(*backend) : nullptr;
}

Request chat(std::string user = "write saxpy in PTX") {
  Request request;
  request.messages = {{Role::System, "You write PTX."}, {Role::User, std::move(user)}};
  request.temperature = 0.2;
  request.seed = 7;
  request.maxTokens = 512;
  request.stop = {"</ptx>"};
  return request;
}

std::string chatBody(const std::string &text, const std::string &finish = "stop") {
  return nlohmann::json{{"id", "chatcmpl-1"},
                        {"object", "chat.completion"},
                        {"model", "test-model-2024"},
                        {"choices", {{{"index", 0},
                                      {"message", {{"role", "assistant"}, {"content", text}}},
                                      {"finish_reason", finish}}}},
                        {"usage", {{"prompt_tokens", 21}, {"completion_tokens", 9}, {"total_tokens", 30}}}}
      .dump();
}

std::string deltaChunk(const std::string &text) {
  return dataEvent(nlohmann::json{{"model", "test-model-2024"},
                                  {"choices", {{{"index", 0}, {"delta", {{"content", text}}}, {"finish_reason", nullptr}}}}}
                       .dump());
}

std::vector<std::string> fullStream() {
  return {deltaChunk("ld.global"),
          deltaChunk(".f32 %f1"),
          dataEvent(R"({"model":"test-model-2024","choices":[{"index":0,"delta":{},"finish_reason":"length"}]})"),
          dataEvent(R"({"model":"test-model-2024","choices":[],"usage":{"prompt_tokens":40,"completion_tokens":2}})"),
          dataEvent("[DONE]")};
}

TEST(OpenAi, SendsTheChatRequestAndReadsTheAnswer) {
  TestServer server;
  server.post("/v1/chat/completions", [](const httplib::Request &, httplib::Response &response, int) {
    response.set_content(chatBody(".visible .entry saxpy()"), "application/json");
  });
  server.start();
  auto backend = openAi(fastOptions(server));
  std::string seen;
  CallContext context;
  context.onText = [&](std::string_view text) { seen += text; };
  Result<Completion> completion = backend->complete(chat(), context);
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(completion->text, ".visible .entry saxpy()");
  EXPECT_EQ(seen, completion->text);
  EXPECT_EQ(completion->finishReason, FinishReason::Stop);
  EXPECT_EQ(completion->rawFinishReason, "stop");
  EXPECT_EQ(completion->usage.promptTokens, 21);
  EXPECT_EQ(completion->usage.completionTokens, 9);
  EXPECT_TRUE(completion->usage.reported);
  EXPECT_EQ(completion->model, "test-model-2024");
  EXPECT_EQ(completion->backend, "openai");
  EXPECT_EQ(completion->attempts, 1);
  EXPECT_EQ(completion->requestHash, requestHash(chat()));
  EXPECT_GT(completion->latencyMs, 0);

  ASSERT_EQ(server.count(), 1u);
  testing::Received received = server.received()[0];
  EXPECT_EQ(received.header("Authorization"), "Bearer " + kSecret);
  EXPECT_EQ(received.header("Content-Type"), "application/json");
  nlohmann::json body = nlohmann::json::parse(received.body);
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["messages"], nlohmann::json::parse(R"([{"role":"system","content":"You write PTX."},
                                                        {"role":"user","content":"write saxpy in PTX"}])"));
  EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.2);
  EXPECT_EQ(body["seed"], 7);
  EXPECT_EQ(body["max_tokens"], 512);
  EXPECT_EQ(body["stop"], nlohmann::json::array({"</ptx>"}));
  EXPECT_FALSE(body.contains("stream"));
  EXPECT_FALSE(body.contains("top_p"));
}

TEST(OpenAi, RequestModelOverridesTheSpecModel) {
  TestServer server;
  server.post("/v1/chat/completions", [](const httplib::Request &, httplib::Response &response, int) {
    response.set_content(R"({"choices":[{"message":{"content":"x"},"finish_reason":"stop"}]})", "application/json");
  });
  server.start();
  BackendOptions options = fastOptions(server);
  options.environment = [](const std::string &) { return std::nullopt; }; // no key: local servers need none
  auto backend = openAi(options);
  Request request = chat();
  request.model = "other-model";
  Result<Completion> completion = backend->complete(request);
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(completion->model, "other-model"); // the server reported none
  EXPECT_FALSE(completion->usage.reported);
  EXPECT_EQ(nlohmann::json::parse(server.received()[0].body)["model"], "other-model");
  EXPECT_EQ(server.received()[0].header("Authorization"), "");
}

TEST(OpenAi, StreamsWithUsageInTheFinalChunk) {
  TestServer server;
  server.post("/v1/chat/completions", [&](const httplib::Request &, httplib::Response &response, int) {
    server.streamEvents(response, fullStream());
  });
  server.start();
  auto backend = openAi(fastOptions(server));
  Request request = chat();
  request.stream = true;
  std::vector<std::string> deltas;
  CallContext context;
  context.onText = [&](std::string_view text) { deltas.emplace_back(text); };
  Result<Completion> completion = backend->complete(request, context);
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(completion->text, "ld.global.f32 %f1");
  EXPECT_EQ(deltas, (std::vector<std::string>{"ld.global", ".f32 %f1"}));
  EXPECT_EQ(completion->finishReason, FinishReason::Length);
  EXPECT_EQ(completion->usage.promptTokens, 40);
  EXPECT_EQ(completion->usage.completionTokens, 2);
  EXPECT_EQ(completion->model, "test-model-2024");
  ASSERT_TRUE(completion->firstTokenMs);
  EXPECT_LE(*completion->firstTokenMs, completion->latencyMs);

  nlohmann::json body = nlohmann::json::parse(server.received()[0].body);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(server.received()[0].header("Accept"), "text/event-stream");
}

TEST(OpenAi, AcceptsAJsonAnswerToAStreamRequest) {
  TestServer server; // some servers ignore "stream"
  server.post("/v1/chat/completions", [](const httplib::Request &, httplib::Response &response, int) {
    response.set_content(chatBody("not streamed"), "application/json");
  });
  server.start();
  Request request = chat();
  request.stream = true;
  Result<Completion> completion = openAi(fastOptions(server))->complete(request);
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(completion->text, "not streamed");
}

TEST(OpenAi, RawPromptsUseTheCompletionsEndpoint) {
  TestServer server;
  server.post("/v1/completions", [&](const httplib::Request &request, httplib::Response &response, int) {
    if (nlohmann::json::parse(request.body).contains("stream")) {
      server.streamEvents(response, {dataEvent(R"({"choices":[{"index":0,"text":"\tret;","finish_reason":null}]})"),
                                     dataEvent(R"({"choices":[{"index":0,"text":"\n}","finish_reason":"stop"}]})"),
                                     dataEvent("[DONE]")});
      return;
    }
    response.set_content(R"({"model":"base-model","choices":[{"text":"\tret;\n}","finish_reason":"stop"}],
                             "usage":{"prompt_tokens":5,"completion_tokens":4}})",
                         "application/json");
  });
  server.start();
  auto backend = openAi(fastOptions(server));
  Request request;
  request.prompt = ".visible .entry k()\n{\n";
  request.maxTokens = 64;
  for (bool stream : {false, true}) {
    request.stream = stream;
    Result<Completion> completion = backend->complete(request);
    ASSERT_TRUE(completion) << completion.error().message;
    EXPECT_EQ(completion->text, "\tret;\n}") << "stream " << stream;
    EXPECT_EQ(completion->finishReason, FinishReason::Stop);
  }
  nlohmann::json body = nlohmann::json::parse(server.received()[0].body);
  EXPECT_EQ(body["prompt"], ".visible .entry k()\n{\n");
  EXPECT_FALSE(body.contains("messages"));
  EXPECT_EQ(server.received()[0].path, "/v1/completions");
}

TEST(OpenAi, HonoursRetryAfterOn429ThenSucceeds) {
  TestServer server;
  server.post("/v1/chat/completions", [](const httplib::Request &, httplib::Response &response, int call) {
    if (call == 0) {
      response.status = 429;
      response.set_header("Retry-After", "1");
      response.set_content(R"({"error":{"message":"Rate limit reached for requests","type":"rate_limit"}})",
                           "application/json");
      return;
    }
    response.set_content(chatBody("after the wait"), "application/json");
  });
  server.start();
  std::vector<RetryNotice> notices;
  CallContext context;
  context.onRetry = [&](const RetryNotice &notice) { notices.push_back(notice); };
  auto start = std::chrono::steady_clock::now();
  Result<Completion> completion = openAi(fastOptions(server))->complete(chat(), context);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(completion->text, "after the wait");
  EXPECT_EQ(completion->attempts, 2);
  EXPECT_GE(elapsed, 950ms); // Retry-After: 1, although the back-off is 10 ms
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_GE(notices[0].delay, 1000ms);
  EXPECT_NE(notices[0].reason.find("HTTP 429"), std::string::npos);
  EXPECT_NE(notices[0].reason.find("Rate limit reached for requests"), std::string::npos);
}

TEST(OpenAi, Retries5xxAndGivesUpWithTheServersMessage) {
  TestServer server;
  server.post("/v1/chat/completions", [](const httplib::Request &, httplib::Response &response, int call) {
    if (call < 2) {
      response.status = 503;
      response.set_content(R"({"error":{"message":"model is loading"}})", "application/json");
      return;
    }
    response.set_content(chatBody("third time"), "application/json");
  });
  server.post("/always/chat/completions", [](const httplib::Request &, httplib::Response &response, int) {
    response.status = 500;
    response.set_content("Internal Server Error", "text/plain");
  });
  server.start();
  Result<Completion> completion = openAi(fastOptions(server))->complete(chat());
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(completion->attempts, 3);

  BackendOptions options = fastOptions(server);
  options.baseUrl = server.url() + "/always";
  Result<Completion> failed = openAi(options)->complete(chat());
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().kind, ErrorKind::Io);
  EXPECT_EQ(failed.error().message, "openai: HTTP 500 from " + server.url() +
                                        "/always/chat/completions: Internal Server Error (gave up after 3 attempts)");
  EXPECT_EQ(server.count(), 3u + 3u);
}

TEST(OpenAi, DoesNotRetryOtherClientErrors) {
  TestServer server;
  server.post("/v1/chat/completions", [](const httplib::Request &, httplib::Response &response, int) {
    response.status = 404;
    response.set_content(R"({"object":"error","message":"The model `test-model` does not exist."})",
                         "application/json");
  });
  server.start();
  Result<Completion> failed = openAi(fastOptions(server))->complete(chat());
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "openai: HTTP 404 from " + server.url() +
                                        "/v1/chat/completions: The model `test-model` does not exist.");
  EXPECT_EQ(server.count(), 1u);
}

TEST(OpenAi, ReportsMalformedResponsesPrecisely) {
  TestServer server;
  server.post("/v1/chat/completions", [](const httplib::Request &request, httplib::Response &response, int) {
    std::string user = nlohmann::json::parse(request.body)["messages"][1]["content"];
    if (user == "not json")
      response.set_content("{\"choices\": [", "application/json");
    else if (user == "no content")
      response.set_content(R"({"choices":[{"message":{"role":"assistant"}}]})", "application/json");
    else if (user == "no choices")
      response.set_content(R"({"id":"x"})", "application/json");
    else if (user == "bad chunk")
      response.set_content("data: {oops\n\n", "text/event-stream");
  });
  server.start();
  auto backend = openAi(fastOptions(server));
  std::string url = server.url() + "/v1/chat/completions";
  EXPECT_EQ(backend->complete(chat("not json")).error().message,
            "openai: malformed response: not JSON: {\"choices\": [ (from " + url + ")");
  EXPECT_EQ(backend->complete(chat("no content")).error().message,
            "openai: malformed response: missing choices[0].message.content (from " + url + ")");
  EXPECT_EQ(backend->complete(chat("no choices")).error().message,
            "openai: malformed response: missing choices (from " + url + ")");
  Request badChunk = chat("bad chunk");
  badChunk.stream = true;
  EXPECT_EQ(backend->complete(badChunk).error().message,
            "openai: malformed stream chunk (not a JSON object): {oops (from " + url + ")");
  EXPECT_EQ(server.count(), 4u); // none of these is retried
}

TEST(OpenAi, RetriesAStreamThatStalls) {
  TestServer server;
  server.post("/v1/chat/completions", [&](const httplib::Request &, httplib::Response &response, int call) {
    if (call == 0)
      server.streamEvents(response, fullStream(), StreamEnd::Stall, 1);
    else
      server.streamEvents(response, fullStream());
  });
  server.start();
  BackendOptions options = fastOptions(server);
  options.stallTimeout = 300ms;
  Request request = chat();
  request.stream = true;
  std::string seen;
  int restarts = 0;
  CallContext context;
  context.onText = [&](std::string_view text) { seen += text; };
  context.onRetry = [&](const RetryNotice &notice) {
    ++restarts;
    EXPECT_NE(notice.reason.find("stalled"), std::string::npos) << notice.reason;
    seen.clear(); // the text starts over
  };
  auto start = std::chrono::steady_clock::now();
  Result<Completion> completion = openAi(options)->complete(request, context);
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(completion->attempts, 2);
  EXPECT_EQ(restarts, 1);
  EXPECT_EQ(completion->text, "ld.global.f32 %f1");
  EXPECT_EQ(seen, completion->text);
}

TEST(OpenAi, AStallThatNeverEndsIsAnError) {
  TestServer server;
  server.post("/v1/chat/completions", [&](const httplib::Request &, httplib::Response &response, int) {
    server.streamEvents(response, fullStream(), StreamEnd::Stall, 2);
  });
  server.start();
  BackendOptions options = fastOptions(server);
  options.stallTimeout = 300ms;
  options.maxRetries = 0;
  Request request = chat();
  request.stream = true;
  Result<Completion> failed = openAi(options)->complete(request);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message,
            "openai: stream from " + server.url() + "/v1/chat/completions stalled: no data for 300 ms");
}

TEST(OpenAi, RetriesADroppedConnection) {
  TestServer server;
  server.post("/v1/chat/completions", [&](const httplib::Request &, httplib::Response &response, int call) {
    if (call == 0)
      server.streamEvents(response, fullStream(), StreamEnd::Drop, 1);
    else
      server.streamEvents(response, fullStream());
  });
  server.start();
  Request request = chat();
  request.stream = true;
  Result<Completion> completion = openAi(fastOptions(server))->complete(request);
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(completion->attempts, 2);
  EXPECT_EQ(completion->text, "ld.global.f32 %f1");
}

TEST(OpenAi, AStreamWithoutDoneIsTruncated) {
  TestServer server;
  server.post("/v1/chat/completions", [&](const httplib::Request &, httplib::Response &response, int) {
    std::vector<std::string> events = fullStream();
    events.pop_back(); // no [DONE]: the body ends cleanly, but early
    server.streamEvents(response, events);
  });
  server.start();
  Request request = chat();
  request.stream = true;
  Result<Completion> failed = openAi(fastOptions(server))->complete(request);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "openai: truncated stream: ended without `data: [DONE]` (from " + server.url() +
                                        "/v1/chat/completions) (gave up after 3 attempts)");
}

TEST(OpenAi, ConnectionRefusedIsRetriedThenReported) {
  int port = 0;
  {
    TestServer closed;
    closed.start();
    port = closed.port();
  } // nothing listens there now
  BackendOptions options;
  options.baseUrl = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  options.maxRetries = 1;
  options.initialBackoff = 10ms;
  options.environment = [](const std::string &) { return std::nullopt; };
  Result<Completion> failed = openAi(options)->complete(chat());
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message.rfind("openai: could not connect talking to http://127.0.0.1:", 0), 0u)
      << failed.error().message;
  EXPECT_NE(failed.error().message.find("(gave up after 2 attempts)"), std::string::npos);
}

TEST(OpenAi, TotalTimeoutIsNotRetried) {
  TestServer server;
  server.post("/v1/chat/completions", [&](const httplib::Request &, httplib::Response &response, int) {
    server.pause(3s);
    response.set_content(chatBody("too late"), "application/json");
  });
  server.start();
  BackendOptions options = fastOptions(server);
  options.requestTimeout = 300ms;
  Result<Completion> failed = openAi(options)->complete(chat());
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("timed out after 300 ms"), std::string::npos) << failed.error().message;
  EXPECT_EQ(server.count(), 1u);
}

TEST(OpenAi, CancelStopsARunningStream) {
  TestServer server;
  server.post("/v1/chat/completions", [&](const httplib::Request &, httplib::Response &response, int) {
    server.streamEvents(response, fullStream(), StreamEnd::Stall, 1);
  });
  server.start();
  std::stop_source source;
  CallContext context;
  context.stop = source.get_token();
  context.onText = [&](std::string_view) { source.request_stop(); }; // cancel at the first token
  Request request = chat();
  request.stream = true;
  auto start = std::chrono::steady_clock::now();
  Result<Completion> failed = openAi(fastOptions(server))->complete(request, context);
  ASSERT_FALSE(failed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_NE(failed.error().message.find("cancelled"), std::string::npos) << failed.error().message;
  EXPECT_EQ(server.count(), 1u);
}

TEST(OpenAi, TheKeyNeverAppearsInErrorsOrDescriptions) {
  TestServer server;
  // A hostile (or merely careless) server that echoes the credentials back.
  server.post("/v1/chat/completions", [](const httplib::Request &request, httplib::Response &response, int call) {
    response.status = call == 0 ? 503 : 401;
    response.set_content(nlohmann::json{{"error", {{"message", "Incorrect API key provided: " +
                                                                   request.get_header_value("Authorization")}}}}
                             .dump(),
                         "application/json");
  });
  server.start();
  auto backend = openAi(fastOptions(server));
  std::vector<std::string> reasons;
  CallContext context;
  context.onRetry = [&](const RetryNotice &notice) { reasons.push_back(notice.reason); };
  Result<Completion> failed = backend->complete(chat(), context);
  ASSERT_FALSE(failed);
  EXPECT_EQ(server.received()[0].header("Authorization"), "Bearer " + kSecret); // it was sent
  EXPECT_EQ(failed.error().message.find(kSecret), std::string::npos) << failed.error().message;
  EXPECT_NE(failed.error().message.find("Incorrect API key provided: Bearer [redacted]"), std::string::npos)
      << failed.error().message;
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0].find(kSecret), std::string::npos);
  EXPECT_EQ(backend->describe().find(kSecret), std::string::npos);
  EXPECT_EQ(backend->describe(), "openai:test-model at " + server.url() + "/v1");
}

TEST(OpenAi, RecordingsHoldNoKey) {
  TestServer server;
  server.post("/v1/chat/completions", [](const httplib::Request &, httplib::Response &response, int) {
    response.set_content(chatBody("recorded"), "application/json");
  });
  server.start();
  BackendOptions options = fastOptions(server);
  options.recordPath = ::testing::TempDir() + "/llm-openai-record-" + std::to_string(server.port()) + ".jsonl";
  auto backend = openAi(options);
  ASSERT_TRUE(backend->complete(chat()));
  std::ifstream file(options.recordPath);
  std::stringstream text;
  text << file.rdbuf();
  std::remove(options.recordPath.c_str());
  EXPECT_NE(text.str().find("\"text\":\"recorded\""), std::string::npos);
  EXPECT_EQ(text.str().find(kSecret), std::string::npos);
  EXPECT_EQ(backend->describe().find(kSecret), std::string::npos);
}

TEST(OpenAi, ServesConcurrentCallers) {
  TestServer server;
  // Echoes the user's message, streamed or not, after a short think.
  server.post("/v1/chat/completions", [&](const httplib::Request &request, httplib::Response &response, int) {
    nlohmann::json body = nlohmann::json::parse(request.body);
    std::string user = body["messages"][1]["content"];
    server.pause(5ms);
    if (body.contains("stream"))
      server.streamEvents(response, {deltaChunk("echo: "), deltaChunk(user), dataEvent("[DONE]")});
    else
      response.set_content(chatBody("echo: " + user), "application/json");
  });
  server.start();
  auto backend = openAi(fastOptions(server));
  constexpr int kThreads = 8, kCalls = 6;
  std::vector<std::thread> threads;
  std::vector<int> good(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        Request request = chat("thread " + std::to_string(t) + " call " + std::to_string(i));
        request.stream = (t + i) % 2 == 0;
        Result<Completion> completion = backend->complete(request);
        if (completion && completion->text == "echo: thread " + std::to_string(t) + " call " + std::to_string(i))
          ++good[t];
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(good[t], kCalls) << "thread " << t;
  EXPECT_EQ(server.count(), size_t(kThreads * kCalls));
}

} // namespace
} // namespace ptxforge::llm
