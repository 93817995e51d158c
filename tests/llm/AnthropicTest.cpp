// The anthropic backend against a local Messages API server: request shape
// (system prompt apart, headers), content blocks, the event stream, errors.
#include "llm/BackendSpec.h"

#include "TestServer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ptxforge::llm {
namespace {

using testing::namedEvent;
using testing::StreamEnd;
using testing::TestServer;
using namespace std::chrono_literals;

const std::string kSecret = "sk-ant-test-0a9b8c7d6e5f";

BackendOptions fastOptions(const TestServer &server) {
  BackendOptions options;
  options.baseUrl = server.url();
  options.connectTimeout = 2s;
  options.requestTimeout = 10s;
  options.stallTimeout = 10s;
  options.maxRetries = 2;
  options.initialBackoff = 10ms;
  options.maxBackoff = 20ms;
  options.environment = [](const std::string &name) -> std::optional<std::string> {
    if (name == "ANTHROPIC_API_KEY")
      return kSecret;
    return std::nullopt;
  };
  return options;
}

std::unique_ptr<Backend> anthropic(const BackendOptions &options) {
  auto backend = openBackend("anthropic:claude-test", options);
  EXPECT_TRUE(backend) << backend.error().message;
  return backend ? std::move(*backend) : nullptr;
}

Request chat() {
  Request request;
  request.messages = {{Role::System, "You write PTX."},
                      {Role::System, "Target sm_90."},
                      {Role::User, "write saxpy"},
                      {Role::Assistant, "```ptx"},
                      {Role::User, "continue"}};
  request.temperature = 0.5;
  request.seed = 3; // hashed, not sent
  request.stop = {"```\n"};
  return request;
}

const char *kMessageBody = R"json({
  "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test-20250101",
  "content": [{"type": "thinking", "thinking": "hmm"},
              {"type": "text", "text": ".visible .entry "},
              {"type": "text", "text": "saxpy()"}],
  "stop_reason": "end_turn",
  "usage": {"input_tokens": 30, "cache_read_input_tokens": 100, "output_tokens": 12}})json";

std::vector<std::string> messageStream(bool withStop = true) {
  std::vector<std::string> events = {
      namedEvent("message_start", R"({"type":"message_start","message":{"id":"msg_01","type":"message",
        "role":"assistant","model":"claude-test-20250101","content":[],"usage":{"input_tokens":25,"output_tokens":1}}})"),
      namedEvent("content_block_start",
                 R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"),
      "event: ping\ndata: {\"type\": \"ping\"}\n\n",
      namedEvent("content_block_delta",
                 R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"add.f32"}})"),
      namedEvent("content_block_delta",
                 R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" %f3, %f1, %f2;"}})"),
      namedEvent("content_block_stop", R"({"type":"content_block_stop","index":0})"),
      namedEvent("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"max_tokens",
        "stop_sequence":null},"usage":{"output_tokens":15}})"),
  };
  if (withStop)
    events.push_back(namedEvent("message_stop", R"({"type":"message_stop"})"));
  return events;
}

TEST(Anthropic, SendsAMessagesRequestAndJoinsTextBlocks) {
  TestServer server;
  server.post("/v1/messages", [](const httplib::Request &, httplib::Response &response, int) {
    response.set_content(kMessageBody, "application/json");
  });
  server.start();
  Result<Completion> completion = anthropic(fastOptions(server))->complete(chat());
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(completion->text, ".visible .entry saxpy()");
  EXPECT_EQ(completion->finishReason, FinishReason::Stop);
  EXPECT_EQ(completion->rawFinishReason, "end_turn");
  EXPECT_EQ(completion->usage.promptTokens, 130);
  EXPECT_EQ(completion->usage.completionTokens, 12);
  EXPECT_EQ(completion->model, "claude-test-20250101");
  EXPECT_EQ(completion->backend, "anthropic");

  testing::Received received = server.received()[0];
  EXPECT_EQ(received.header("x-api-key"), kSecret);
  EXPECT_EQ(received.header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(received.header("Authorization"), "");
  nlohmann::json body = nlohmann::json::parse(received.body);
  EXPECT_EQ(body["model"], "claude-test");
  EXPECT_EQ(body["max_tokens"], 4096);
  EXPECT_EQ(body["system"], "You write PTX.\n\nTarget sm_90.");
  EXPECT_EQ(body["messages"], nlohmann::json::parse(R"([{"role":"user","content":"write saxpy"},
      {"role":"assistant","content":"```ptx"},{"role":"user","content":"continue"}])"));
  EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.5);
  EXPECT_EQ(body["stop_sequences"], nlohmann::json::array({"```\n"}));
  EXPECT_FALSE(body.contains("seed"));
  EXPECT_FALSE(body.contains("stream"));
}

TEST(Anthropic, StreamsMessageEvents) {
  TestServer server;
  server.post("/v1/messages", [&](const httplib::Request &, httplib::Response &response, int) {
    server.streamEvents(response, messageStream());
  });
  server.start();
  Request request = chat();
  request.stream = true;
  request.maxTokens = 15;
  std::string seen;
  CallContext context;
  context.onText = [&](std::string_view text) { seen += text; };
  Result<Completion> completion = anthropic(fastOptions(server))->complete(request, context);
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(completion->text, "add.f32 %f3, %f1, %f2;");
  EXPECT_EQ(seen, completion->text);
  EXPECT_EQ(completion->finishReason, FinishReason::Length);
  EXPECT_EQ(completion->usage.promptTokens, 25);
  EXPECT_EQ(completion->usage.completionTokens, 15);
  EXPECT_EQ(completion->model, "claude-test-20250101");
  nlohmann::json body = nlohmann::json::parse(server.received()[0].body);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["max_tokens"], 15);
}

TEST(Anthropic, RetriesOverloadInTheStreamAndAs529) {
  TestServer server;
  server.post("/v1/messages", [&](const httplib::Request &, httplib::Response &response, int call) {
    if (call == 0) {
      server.streamEvents(response, {messageStream()[0],
                                     namedEvent("error", R"({"type":"error","error":{"type":"overloaded_error",
                                                            "message":"Overloaded"}})")});
    } else if (call == 1) {
      response.status = 529;
      response.set_content(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
                           "application/json");
    } else {
      server.streamEvents(response, messageStream());
    }
  });
  server.start();
  Request request = chat();
  request.stream = true;
  std::vector<std::string> reasons;
  CallContext context;
  context.onRetry = [&](const RetryNotice &notice) { reasons.push_back(notice.reason); };
  Result<Completion> completion = anthropic(fastOptions(server))->complete(request, context);
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(completion->attempts, 3);
  ASSERT_EQ(reasons.size(), 2u);
  std::string url = server.url() + "/v1/messages";
  EXPECT_EQ(reasons[0], "anthropic: error event in stream: Overloaded (overloaded_error) (from " + url + ")");
  EXPECT_EQ(reasons[1], "anthropic: HTTP 529 from " + url + ": Overloaded");
}

TEST(Anthropic, AStreamWithoutMessageStopIsTruncated) {
  TestServer server;
  server.post("/v1/messages", [&](const httplib::Request &, httplib::Response &response, int) {
    server.streamEvents(response, messageStream(false));
  });
  server.start();
  BackendOptions options = fastOptions(server);
  options.maxRetries = 0;
  Request request = chat();
  request.stream = true;
  Result<Completion> failed = anthropic(options)->complete(request);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "anthropic: truncated stream: ended without message_stop (from " + server.url() +
                                        "/v1/messages)");
}

TEST(Anthropic, ReportsMalformedBodies) {
  TestServer server;
  server.post("/v1/messages", [](const httplib::Request &, httplib::Response &response, int) {
    response.set_content(R"({"type":"message","content":[{"type":"text"}]})", "application/json");
  });
  server.start();
  EXPECT_EQ(anthropic(fastOptions(server))->complete(chat()).error().message,
            "anthropic: malformed response: missing content[0].text (from " + server.url() + "/v1/messages)");
}

TEST(Anthropic, NeedsAKeyAndChatMessages) {
  BackendOptions options;
  options.environment = [](const std::string &) { return std::nullopt; };
  auto missing = openBackend("anthropic:claude-test", options);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("set ANTHROPIC_API_KEY"), std::string::npos);

  TestServer server;
  server.start();
  Request raw;
  raw.prompt = "complete this";
  Result<Completion> refused = anthropic(fastOptions(server))->complete(raw);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::InvalidInput);
  EXPECT_NE(refused.error().message.find("raw prompts are not supported"), std::string::npos) << refused.error().message;
  EXPECT_EQ(server.count(), 0u);
}

TEST(Anthropic, AServerOtherThanAnthropicsMayBeKeyless) {
  TestServer server;
  server.post("/v1/messages", [](const httplib::Request &, httplib::Response &response, int) {
    response.set_content(kMessageBody, "application/json");
  });
  server.start();
  BackendOptions options = fastOptions(server);
  options.environment = [](const std::string &) { return std::nullopt; };
  Result<Completion> completion = anthropic(options)->complete(chat());
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(server.received()[0].header("x-api-key"), "");
  // Anthropic's own API still needs one.
  options.baseUrl = "https://api.anthropic.com";
  auto missing = openBackend("anthropic:claude-test", options);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("set ANTHROPIC_API_KEY"), std::string::npos);
}

TEST(Anthropic, TheKeyNeverAppearsInErrors) {
  TestServer server;
  server.post("/v1/messages", [](const httplib::Request &request, httplib::Response &response, int) {
    response.status = 401;
    response.set_content(nlohmann::json{{"type", "error"},
                                        {"error", {{"type", "authentication_error"},
                                                   {"message", "invalid x-api-key " +
                                                                   request.get_header_value("x-api-key")}}}}
                             .dump(),
                         "application/json");
  });
  server.start();
  auto backend = anthropic(fastOptions(server));
  Result<Completion> failed = backend->complete(chat());
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message,
            "anthropic: HTTP 401 from " + server.url() + "/v1/messages: invalid x-api-key [redacted]");
  EXPECT_EQ(backend->describe().find(kSecret), std::string::npos);
  EXPECT_EQ(server.count(), 1u); // 401 is not retried
}

} // namespace
} // namespace ptxforge::llm
