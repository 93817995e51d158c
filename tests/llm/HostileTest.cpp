// What a hostile or broken model endpoint cannot do (issue 13): exhaust
// memory with an endless stream or an endless line, open a token budget with
// negative or absurd usage numbers, make replay read for ever, or get a key
// from the environment into an answer, an error or a recording.
#include "llm/Backend.h"
#include "llm/BackendSpec.h"
#include "llm/SseParser.h"

#include "TestServer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

namespace ptxforge::llm {
namespace {

using testing::dataEvent;
using testing::TestServer;
using namespace std::chrono_literals;

#define EXPECT_CONTAINS(haystack, needle)                                                                             \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "missing: " << (needle) << "\nin:\n" << (haystack)
#define EXPECT_NOT_CONTAINS(haystack, needle)                                                                         \
  EXPECT_EQ(std::string(haystack).find(needle), std::string::npos) << "unexpected: " << (needle) << "\nin:\n" << (haystack)

BackendOptions fastOptions(const TestServer &server) {
  BackendOptions options;
  options.baseUrl = server.url() + "/v1";
  options.connectTimeout = 2s;
  options.requestTimeout = 20s;
  options.stallTimeout = 10s;
  options.maxRetries = 0;
  options.environment = [](const std::string &) -> std::optional<std::string> { return std::nullopt; };
  return options;
}

Request chat(bool stream) {
  Request request;
  request.messages = {{Role::User, "write saxpy in PTX"}};
  request.maxTokens = 512;
  request.stream = stream;
  return request;
}

std::string deltaChunk(const std::string &text) {
  return dataEvent(nlohmann::json{{"choices", {{{"index", 0}, {"delta", {{"content", text}}}, {"finish_reason", nullptr}}}}}
                       .dump());
}

/// Sets an environment variable for the scope.
class ScopedVariable {
public:
  ScopedVariable(const char *name, const std::string &value) : name_(name) {
    if (const char *old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedVariable() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

// --- sizes ----------------------------------------------------------------------

TEST(Hostile, AnEndlessStreamStopsAtTheResponseLimit) {
  TestServer server;
  server.post("/v1/chat/completions", [](const httplib::Request &, httplib::Response &response, int) {
    // Deltas for ever, never [DONE]: before the limit it was read until memory ran out.
    response.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink &sink) {
      std::string chunk = deltaChunk(std::string(4000, 'x'));
      return sink.write(chunk.data(), chunk.size());
    });
  });
  server.start();
  BackendOptions options = fastOptions(server);
  options.maxResponseBytes = 256 << 10;
  auto backend = openBackend("openai:m", options);
  ASSERT_TRUE(backend) << backend.error().message;
  Result<Completion> completion = (*backend)->complete(chat(true));
  ASSERT_FALSE(completion);
  EXPECT_CONTAINS(completion.error().message, "streamed response body larger than the limit of 256 KiB");
  EXPECT_CONTAINS(completion.error().message, "PTXFORGE_MAX_RESPONSE_BYTES");
}

TEST(Hostile, AnEndlessLineStopsAtTheLineLimit) {
  TestServer server;
  server.post("/v1/chat/completions", [](const httplib::Request &, httplib::Response &response, int) {
    auto started = std::make_shared<bool>(false);
    response.set_chunked_content_provider("text/event-stream", [started](size_t, httplib::DataSink &sink) {
      std::string chunk = *started ? std::string(8192, 'a') : std::string("data: {\"choices\":\"");
      *started = true;
      return sink.write(chunk.data(), chunk.size());
    });
  });
  server.start();
  BackendOptions options = fastOptions(server);
  options.maxSseLineBytes = 64 << 10;
  auto backend = openBackend("openai:m", options);
  ASSERT_TRUE(backend) << backend.error().message;
  Result<Completion> completion = (*backend)->complete(chat(true));
  ASSERT_FALSE(completion);
  EXPECT_CONTAINS(completion.error().message, "longer than the limit of 64 KiB");
  EXPECT_CONTAINS(completion.error().message, "PTXFORGE_MAX_SSE_LINE_BYTES");
}

TEST(Hostile, ManyDataLinesMakeOneEventUnderTheSameLimit) {
  std::string stream;
  for (int i = 0; i < 100; ++i) stream += "data: " + std::string(1000, 'b') + "\n";
  int events = 0;
  SseParser parser([&](const SseEvent &) { return ++events > 0; }, 16 << 10);
  EXPECT_FALSE(parser.feed(stream));
  EXPECT_TRUE(parser.lineTooLong());
  EXPECT_EQ(events, 0);
}

TEST(Hostile, SizeLimitsHaveEnvironmentTwins) {
  auto lookup = [](std::map<std::string, std::string> values) {
    return [values](const std::string &name) -> std::optional<std::string> {
      auto it = values.find(name);
      return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
  };
  Result<BackendOptions> options =
      optionsFromEnvironment(lookup({{"PTXFORGE_MAX_RESPONSE_BYTES", "1G"}, {"PTXFORGE_MAX_SSE_LINE_BYTES", "32M"}}));
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_EQ(options->maxResponseBytes, size_t{1} << 30);
  EXPECT_EQ(options->maxSseLineBytes, size_t{32} << 20);
  Result<BackendOptions> bad = optionsFromEnvironment(lookup({{"PTXFORGE_MAX_RESPONSE_BYTES", "lots"}}));
  ASSERT_FALSE(bad);
  EXPECT_CONTAINS(bad.error().message, "PTXFORGE_MAX_RESPONSE_BYTES=lots");
}

TEST(Hostile, ReplayOfAnEndlessFileStopsAtTheInputLimit) {
  ScopedVariable limit("PTXFORGE_MAX_INPUT_BYTES", "1M");
  Result<std::unique_ptr<Backend>> backend = openBackend("replay:/dev/zero", BackendOptions());
  ASSERT_FALSE(backend);
  EXPECT_CONTAINS(backend.error().message, "replay: '/dev/zero' is larger than the input limit of 1 MiB");
  EXPECT_CONTAINS(backend.error().message, "PTXFORGE_MAX_INPUT_BYTES");
}

// --- usage ------------------------------------------------------------------------

TEST(Hostile, NegativeOrAbsurdUsageCannotOpenABudget) {
  TestServer server;
  server.post("/v1/chat/completions", [](const httplib::Request &, httplib::Response &response, int call) {
    nlohmann::json usage = call == 0   ? nlohmann::json{{"prompt_tokens", -1000000}, {"completion_tokens", -5}}
                           : call == 1 ? nlohmann::json{{"prompt_tokens", INT64_MAX}, {"completion_tokens", INT64_MAX}}
                                       : nlohmann::json{{"prompt_tokens", UINT64_MAX}, {"completion_tokens", 3}};
    response.set_content(nlohmann::json{{"choices", {{{"index", 0},
                                                      {"message", {{"role", "assistant"}, {"content", "ok"}}},
                                                      {"finish_reason", "stop"}}}},
                                        {"usage", usage}}
                             .dump(),
                         "application/json");
  });
  server.start();
  auto backend = openBackend("openai:m", fastOptions(server));
  ASSERT_TRUE(backend) << backend.error().message;

  Result<Completion> negative = (*backend)->complete(chat(false));
  ASSERT_TRUE(negative) << negative.error().message;
  // Negative is not a count: the prompt's bytes and the request's max_tokens are.
  EXPECT_EQ(negative->usage.promptTokens, static_cast<int64_t>(std::string("write saxpy in PTX").size()));
  EXPECT_EQ(negative->usage.completionTokens, 512);
  EXPECT_CONTAINS(negative->usage.note, "completion_tokens -5 is negative, counted as 512");

  Result<Completion> huge = (*backend)->complete(chat(false));
  ASSERT_TRUE(huge) << huge.error().message;
  EXPECT_EQ(huge->usage.promptTokens, kMaxPlausibleTokens);
  EXPECT_EQ(huge->usage.completionTokens, kMaxPlausibleTokens);
  EXPECT_EQ(addTokenCounts(huge->usage.promptTokens, huge->usage.completionTokens), 2 * kMaxPlausibleTokens);

  Result<Completion> unsignedHuge = (*backend)->complete(chat(false));
  ASSERT_TRUE(unsignedHuge) << unsignedHuge.error().message;
  EXPECT_EQ(unsignedHuge->usage.promptTokens, kMaxPlausibleTokens); // not wrapped to -1
  EXPECT_EQ(unsignedHuge->usage.completionTokens, 3);

  // The note survives a recording.
  Result<Completion> reread = completionFromJson(completionToJson(*negative));
  ASSERT_TRUE(reread) << reread.error().message;
  EXPECT_EQ(reread->usage.note, negative->usage.note);
  EXPECT_EQ(addTokenCounts(INT64_MAX, INT64_MAX), INT64_MAX);
}

// --- keys ---------------------------------------------------------------------------

class ExecKeys : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("ptxforge-llm-keys-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  /// An executable shell script with `body`.
  std::string script(const std::string &name, const std::string &body) {
    std::filesystem::path path = dir_ / name;
    std::ofstream(path) << "#!/bin/sh\ncat >/dev/null\n" << body << "\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path.string();
  }
  std::filesystem::path dir_;
};

const std::string kModelKey = "mk-4f1c2b7e9d0a5c3b8e6f1a2d7c9b0e4f";

TEST_F(ExecKeys, AKeyPrintedToStderrIsScrubbedFromTheError) {
  ScopedVariable key("MY_SERVICE_API_KEY", kModelKey);
  std::string program = script("leak.sh", "echo \"debug: using key $MY_SERVICE_API_KEY\" >&2\nexit 3");
  auto backend = openBackend("exec:" + program, BackendOptions());
  ASSERT_TRUE(backend) << backend.error().message;
  Result<Completion> failed = (*backend)->complete(chat(false));
  ASSERT_FALSE(failed);
  EXPECT_NOT_CONTAINS(failed.error().message, kModelKey);
  EXPECT_CONTAINS(failed.error().message, "debug: using key [redacted]");
}

TEST_F(ExecKeys, AKeyCutByTheStderrTailIsScrubbedToo) {
  // The key, then exactly enough bytes that the kept tail (2000 bytes) starts 8 bytes into it.
  ScopedVariable key("OPENAI_API_KEY", kModelKey);
  std::string filler(2000 - (kModelKey.size() - 8), 'z');
  std::string program = script("cut.sh", "printf '%s' \"$OPENAI_API_KEY\" >&2\nprintf '" + filler + "' >&2\nexit 1");
  auto backend = openBackend("exec:" + program, BackendOptions());
  ASSERT_TRUE(backend) << backend.error().message;
  Result<Completion> failed = (*backend)->complete(chat(false));
  ASSERT_FALSE(failed);
  EXPECT_NOT_CONTAINS(failed.error().message, kModelKey.substr(8));
  EXPECT_CONTAINS(failed.error().message, "[redacted]zzz");
}

TEST_F(ExecKeys, AKeyInTheAnswerIsScrubbedBeforeAnyoneStoresIt) {
  ScopedVariable key("GITHUB_TOKEN", kModelKey);
  ScopedVariable shortValue("SHORT_TOKEN", "abc"); // too short to scrub: "abc" stays
  std::string program = script("answer.sh", "echo \"abc: the key is $GITHUB_TOKEN\"");
  auto backend = openBackend("exec:" + program, BackendOptions());
  ASSERT_TRUE(backend) << backend.error().message;
  Result<Completion> answer = (*backend)->complete(chat(false));
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->text, "abc: the key is [redacted]\n");
}

TEST(Secrets, NamesThatHoldKeys) {
  ScopedVariable a("ANTHROPIC_API_KEY", "ant-0123456789");
  ScopedVariable b("HF_TOKEN", "hf_0123456789");
  ScopedVariable c("PLAIN_VARIABLE", "not-a-secret-value");
  std::vector<std::string> secrets = environmentSecrets();
  EXPECT_NE(std::find(secrets.begin(), secrets.end(), "ant-0123456789"), secrets.end());
  EXPECT_NE(std::find(secrets.begin(), secrets.end(), "hf_0123456789"), secrets.end());
  EXPECT_EQ(std::find(secrets.begin(), secrets.end(), "not-a-secret-value"), secrets.end());
  EXPECT_EQ(scrubSecrets("x ant-0123456789 y", secrets), "x [redacted] y");
}

} // namespace
} // namespace ptxforge::llm
