// The exec backend with tests/llm/fake_model.sh as the model: the stdin
// protocol, both answer forms, failures with stderr, time limits, and a
// program that never reads its input.
#include "llm/BackendSpec.h"
#include "llm/ExecBackend.h"
#include "llm/RequestHash.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace ptxforge::llm {
namespace {

using namespace std::chrono_literals;

const std::string kScript = std::string(PTXFORGE_LLM_TEST_DIR) + "/fake_model.sh";

/// Runs the script through /bin/sh, so the test does not depend on its mode bits.
std::unique_ptr<Backend> fakeModel(const std::string &mode, std::chrono::milliseconds timeout = 10s) {
  BackendOptions options;
  options.requestTimeout = timeout;
  auto backend = openBackend("exec:/bin/sh " + kScript + " " + mode, options);
  EXPECT_TRUE(backend) << backend.error().message;
  return backend ? std::move(*backend) : nullptr;
}

Request chat(const std::string &user = "write saxpy") {
  Request request;
  request.messages = {{Role::System, "You write PTX."}, {Role::User, user}};
  request.temperature = 0.3;
  request.seed = 11;
  return request;
}

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/llm-exec-" + std::to_string(::getpid()) + "-" + name;
}

TEST(Exec, PlainTextIsTheAnswer) {
  Request request = chat();
  Result<Completion> completion = fakeModel("echo")->complete(request);
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(completion->text, "ANSWER " + requestHash(request) + "\n");
  EXPECT_EQ(completion->backend, "exec");
  EXPECT_EQ(completion->model, "/bin/sh " + kScript + " echo");
  EXPECT_FALSE(completion->usage.reported);
  EXPECT_GT(completion->latencyMs, 0);
}

TEST(Exec, JsonAnswerCarriesUsageAndModel) {
  Result<Completion> completion = fakeModel("json")->complete(chat());
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(completion->text, "json answer");
  EXPECT_EQ(completion->finishReason, FinishReason::Stop);
  EXPECT_EQ(completion->model, "fake-1");
  EXPECT_EQ(completion->usage.promptTokens, 7);
  EXPECT_EQ(completion->usage.completionTokens, 3);
}

TEST(Exec, WritesTheRequestJsonToStdin) {
  std::string saved = tempPath("request.json");
  Request request = chat();
  request.stop = {"END"};
  ASSERT_TRUE(fakeModel("save " + saved)->complete(request));
  std::ifstream file(saved);
  std::stringstream text;
  text << file.rdbuf();
  std::remove(saved.c_str());
  nlohmann::json json = nlohmann::json::parse(text.str());
  EXPECT_EQ(json["request_hash"], requestHash(request));
  EXPECT_EQ(json["v"], 1);
  EXPECT_EQ(json["messages"][1]["content"], "write saxpy");
  EXPECT_EQ(json["messages"][1]["role"], "user");
  EXPECT_DOUBLE_EQ(json["temperature"].get<double>(), 0.3);
  EXPECT_EQ(json["seed"], 11);
  EXPECT_EQ(json["stop"], nlohmann::json::array({"END"}));
  EXPECT_EQ(json["stream"], false);
}

TEST(Exec, NonZeroExitCarriesTheStderrTail) {
  Result<Completion> failed = fakeModel("fail")->complete(chat());
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "exec: `/bin/sh " + kScript + " fail` exited with status 3; stderr ends with:\n"
                                    "fake model: loading weights\nfake model: out of memory");
}

TEST(Exec, ErrorAndMalformedJsonAnswers) {
  EXPECT_NE(fakeModel("error-json")->complete(chat()).error().message.find("the model reported an error: quota exhausted"),
            std::string::npos);
  EXPECT_NE(fakeModel("bad-json")->complete(chat()).error().message.find("missing string \"text\""), std::string::npos);
}

TEST(Exec, TimeoutKillsTheProgramAndWhatItStarted) {
  auto start = std::chrono::steady_clock::now();
  Result<Completion> failed = fakeModel("sleep", 300ms)->complete(chat());
  ASSERT_FALSE(failed);
  // The background `sleep 30` holds stdout open: only killing the group ends this quickly.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_NE(failed.error().message.find("timed out after 300 ms and was killed"), std::string::npos)
      << failed.error().message;
}

TEST(Exec, CancelKillsTheProgram) {
  std::stop_source source;
  CallContext context;
  context.stop = source.get_token();
  std::thread canceller([&] {
    std::this_thread::sleep_for(100ms);
    source.request_stop();
  });
  auto start = std::chrono::steady_clock::now();
  Result<Completion> failed = fakeModel("sleep")->complete(chat(), context);
  canceller.join();
  ASSERT_FALSE(failed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_NE(failed.error().message.find("cancelled"), std::string::npos);
}

TEST(Exec, AProgramThatIgnoresItsInputStillAnswers) {
  // 4 MiB do not fit in a pipe: the write fails with EPIPE once the program
  // exits, which must neither kill this process (SIGPIPE) nor fail the call.
  Result<Completion> completion = fakeModel("no-read")->complete(chat(std::string(4 << 20, 'x')));
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(completion->text, "answered without reading");
}

TEST(Exec, RunsTheScriptDirectlyWhenExecutable) {
  if (::access(kScript.c_str(), X_OK) != 0)
    GTEST_SKIP() << kScript << " has lost its executable bit";
  auto backend = openBackend("exec:" + kScript + " json", BackendOptions());
  ASSERT_TRUE(backend) << backend.error().message;
  Result<Completion> completion = (*backend)->complete(chat());
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_EQ(completion->text, "json answer");
}

TEST(Exec, ServesConcurrentCallers) {
  auto backend = fakeModel("echo");
  constexpr int kThreads = 6, kCalls = 4;
  std::vector<int> good(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        Request request = chat("thread " + std::to_string(t) + " call " + std::to_string(i));
        Result<Completion> completion = backend->complete(request);
        if (completion && completion->text == "ANSWER " + requestHash(request) + "\n")
          ++good[t];
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(good[t], kCalls) << "thread " << t;
}

TEST(Exec, RejectsCommandsThatCannotRun) {
  EXPECT_NE(openBackend("exec:./no/such/model.sh", BackendOptions()).error().message.find("is not an executable file"),
            std::string::npos);
  EXPECT_NE(openBackend("exec:no-such-model-program-xyz", BackendOptions()).error().message.find("not found on PATH"),
            std::string::npos);
  EXPECT_NE(openBackend("exec:/bin/sh 'unterminated", BackendOptions()).error().message.find("unterminated"),
            std::string::npos);
}

TEST(SplitCommandLine, HonoursQuotesAndEscapes) {
  auto words = splitCommandLine(R"(  python3 'my model.py' --name "a \"b\"" c\ d  )");
  ASSERT_TRUE(words);
  EXPECT_EQ(*words, (std::vector<std::string>{"python3", "my model.py", "--name", "a \"b\"", "c d"}));
  EXPECT_TRUE(splitCommandLine("   ")->empty());
  EXPECT_EQ(*splitCommandLine("a '' b"), (std::vector<std::string>{"a", "", "b"}));
}

TEST(ParseExecOutput, PlainTextKeepsWhitespace) {
  Result<Completion> completion = parseExecOutput("  \tret;\n");
  ASSERT_TRUE(completion);
  EXPECT_EQ(completion->text, "  \tret;\n");
  EXPECT_FALSE(parseExecOutput("{not json"));
}

} // namespace
} // namespace ptxforge::llm
