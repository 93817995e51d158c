// Recording any backend to JSONL and replaying it by request hash.
#include "llm/BackendSpec.h"
#include "llm/ReplayBackend.h"
#include "llm/RequestHash.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace ptxforge::llm {
namespace {

/// An in-process model: numbered answers, with usage, so replays can be told apart.
class CountingBackend final : public Backend {
public:
  std::string kind() const override { return "counting"; }
  std::string describe() const override { return "counting"; }
  std::atomic<int> calls{0};

protected:
  Result<Completion> completeValid(const Request &request, const std::string &, const CallContext &) override {
    if (request.messages.back().content == "fail")
      return makeError(ErrorKind::Io, "counting: failed on purpose");
    Completion completion;
    completion.text = "answer " + std::to_string(++calls) + " to " + request.messages.back().content;
    completion.rawFinishReason = "stop";
    completion.finishReason = FinishReason::Stop;
    completion.usage = {10, 20, true, {}};
    completion.model = "counting-v1";
    completion.latencyMs = 12.5;
    return completion;
  }
};

class ReplayFile : public ::testing::Test {
protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/llm-replay-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl";
    std::remove(path_.c_str());
  }
  void TearDown() override { std::remove(path_.c_str()); }

  std::string read() const {
    std::ifstream file(path_);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }
  void write(const std::string &text) const { std::ofstream(path_) << text; }

  std::string path_;
};

Request ask(const std::string &user, int64_t seed = 1) {
  Request request;
  request.messages = {{Role::User, user}};
  request.temperature = 0.8;
  request.seed = seed;
  return request;
}

TEST_F(ReplayFile, RecordThenReplayGivesTheSameAnswers) {
  auto counting = std::make_unique<CountingBackend>();
  auto recorder = RecordingBackend::create(std::move(counting), path_);
  ASSERT_TRUE(recorder) << recorder.error().message;
  std::vector<Request> requests = {ask("saxpy", 1), ask("saxpy", 2), ask("sgemm", 1)};
  std::vector<Completion> live;
  for (const Request &request : requests) {
    Result<Completion> completion = (*recorder)->complete(request);
    ASSERT_TRUE(completion) << completion.error().message;
    live.push_back(*completion);
  }
  EXPECT_FALSE((*recorder)->complete(ask("fail"))); // errors are not recorded
  EXPECT_EQ((*recorder)->kind(), "counting");

  // One self-contained line per completion.
  std::istringstream lines(read());
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    nlohmann::json json = nlohmann::json::parse(line);
    EXPECT_EQ(json["request_hash"], requestHash(requests[count]));
    EXPECT_EQ(json["request"], canonicalRequestJson(requests[count]));
    EXPECT_EQ(json["completion"]["text"], live[count].text);
    ++count;
  }
  EXPECT_EQ(count, 3);

  auto replay = openBackend("replay:" + path_, BackendOptions());
  ASSERT_TRUE(replay) << replay.error().message;
  for (size_t i = 0; i < requests.size(); ++i) {
    Result<Completion> again = (*replay)->complete(requests[requests.size() - 1 - i]); // any order
    ASSERT_TRUE(again) << again.error().message;
    const Completion &original = live[requests.size() - 1 - i];
    EXPECT_EQ(again->text, original.text);
    EXPECT_EQ(again->usage.completionTokens, 20);
    EXPECT_EQ(again->model, "counting-v1");
    EXPECT_EQ(again->finishReason, FinishReason::Stop);
    EXPECT_EQ(again->backend, "replay");
    EXPECT_EQ(again->requestHash, original.requestHash);
  }
  // Streaming does not change the hash.
  Request streamed = requests[0];
  streamed.stream = true;
  EXPECT_EQ((*replay)->complete(streamed)->text, live[0].text);
}

TEST_F(ReplayFile, AMissingRequestNamesItsHash) {
  write(R"({"request_hash":"abc","completion":{"text":"x"}})" "\n");
  auto replay = openBackend("replay:" + path_, BackendOptions());
  ASSERT_TRUE(replay) << replay.error().message;
  Request request = ask("never recorded");
  Result<Completion> missing = (*replay)->complete(request);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::InvalidInput);
  EXPECT_NE(missing.error().message.find("replay: no recorded completion for request " + requestHash(request) +
                                         " in " + path_),
            std::string::npos)
      << missing.error().message;
}

TEST_F(ReplayFile, RepeatedRequestsReplayInOrder) {
  std::string hash = requestHash(ask("same"));
  write(R"({"request_hash":")" + hash + R"(","completion":{"text":"first"}})" "\n" +
        R"({"request_hash":")" + hash + R"(","completion":{"text":"second"}})" "\n");
  auto replay = openBackend("replay:" + path_, BackendOptions());
  ASSERT_TRUE(replay);
  EXPECT_EQ((*replay)->complete(ask("same"))->text, "first");
  EXPECT_EQ((*replay)->complete(ask("same"))->text, "second");
  EXPECT_EQ((*replay)->complete(ask("same"))->text, "second");
}

TEST_F(ReplayFile, ARequestNotRecordedIsAnsweredByItsPlaceInTheRun) {
  // Recorded live: a first prompt and an optimize prompt that quotes the time measured then.
  auto recorder = RecordingBackend::create(std::make_unique<CountingBackend>(), path_);
  ASSERT_TRUE(recorder);
  CallContext first, optimize, elsewhere;
  first.position = "saxpy/round 1/slot 0/initial";
  optimize.position = "saxpy/round 2/slot 0/optimize";
  elsewhere.position = "saxpy/round 2/slot 1/optimize";
  Result<Completion> live1 = (*recorder)->complete(ask("write saxpy"), first);
  Result<Completion> live2 = (*recorder)->complete(ask("faster than 0.512 ms"), optimize);
  ASSERT_TRUE(live1 && live2);
  EXPECT_NE(read().find(R"("position":"saxpy/round 2/slot 0/optimize")"), std::string::npos) << read();

  auto replay = ReplayBackend::create(path_);
  ASSERT_TRUE(replay) << replay.error().message;
  auto &backend = static_cast<ReplayBackend &>(**replay);
  // The same request: by its hash, whatever the position says.
  Result<Completion> same = backend.complete(ask("write saxpy"), optimize);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->text, live1->text);
  EXPECT_EQ(same->replayedBy, "");
  // The replay measured another time: the request differs, its place does not.
  Result<Completion> moved = backend.complete(ask("faster than 0.498 ms"), optimize);
  ASSERT_TRUE(moved) << moved.error().message;
  EXPECT_EQ(moved->text, live2->text);
  EXPECT_EQ(moved->replayedBy, "position");
  EXPECT_EQ(completionToJson(*moved)["replayed_by"], "position");
  EXPECT_EQ(backend.answeredByPosition(), 1u);
  // Nothing recorded at that place, no place given, or another seed at the same place (a
  // request that differs in more than its text): the error names the hash (and the place).
  Result<Completion> nowhere = backend.complete(ask("faster than 0.498 ms"), elsewhere);
  ASSERT_FALSE(nowhere);
  EXPECT_NE(nowhere.error().message.find("nor a request like it at saxpy/round 2/slot 1/optimize"), std::string::npos)
      << nowhere.error().message;
  EXPECT_FALSE(backend.complete(ask("faster than 0.498 ms")));
  EXPECT_FALSE(backend.complete(ask("faster than 0.498 ms", 2), optimize));

  // PTXFORGE_REPLAY_BY_POSITION=0: by hash only.
  ::setenv("PTXFORGE_REPLAY_BY_POSITION", "0", 1);
  auto strict = ReplayBackend::create(path_);
  ::unsetenv("PTXFORGE_REPLAY_BY_POSITION");
  ASSERT_TRUE(strict);
  EXPECT_FALSE((*strict)->complete(ask("faster than 0.498 ms"), optimize));
  EXPECT_TRUE((*strict)->complete(ask("faster than 0.512 ms"), optimize));
}

TEST_F(ReplayFile, AnInterruptedLastLineIsSkippedButOtherDamageIsNot) {
  std::string hash = requestHash(ask("q"));
  std::string good = R"({"request_hash":")" + hash + R"(","completion":{"text":"kept"}})" "\n";
  write(good + R"({"request_hash":"def","compl)");
  auto replay = openBackend("replay:" + path_, BackendOptions());
  ASSERT_TRUE(replay) << replay.error().message;
  EXPECT_EQ((*replay)->complete(ask("q"))->text, "kept");

  write(good + "garbage\n" + good);
  auto broken = openBackend("replay:" + path_, BackendOptions());
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().message, "replay: " + path_ + ":2: not a JSON object");

  write(R"({"completion":{"text":"x"}})" "\n");
  EXPECT_EQ(openBackend("replay:" + path_, BackendOptions()).error().message,
            "replay: " + path_ + ":1: missing string \"request_hash\"");
  EXPECT_NE(openBackend("replay:/no/such/file.jsonl", BackendOptions()).error().message.find("cannot open"),
            std::string::npos);
}

TEST_F(ReplayFile, ConcurrentRecordingKeepsWholeLines) {
  auto recorder = RecordingBackend::create(std::make_unique<CountingBackend>(), path_);
  ASSERT_TRUE(recorder);
  constexpr int kThreads = 8, kCalls = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i)
        EXPECT_TRUE((*recorder)->complete(ask(std::string(1000, 'a' + t), i)));
    });
  for (std::thread &thread : threads)
    thread.join();
  auto replay = ReplayBackend::create(path_);
  ASSERT_TRUE(replay) << replay.error().message;
  EXPECT_EQ(static_cast<ReplayBackend &>(**replay).recordedRequests(), size_t(kThreads * kCalls));
}

TEST_F(ReplayFile, OptionsWrapAnyBackendInARecorder) {
  BackendOptions options;
  options.recordPath = path_;
  std::string script = std::string(PTXFORGE_LLM_TEST_DIR) + "/fake_model.sh";
  auto backend = openBackend("exec:/bin/sh " + script + " json", options);
  ASSERT_TRUE(backend) << backend.error().message;
  EXPECT_NE((*backend)->describe().find("recording to " + path_), std::string::npos);
  ASSERT_TRUE((*backend)->complete(ask("via exec")));
  auto replay = openBackend("replay:" + path_, BackendOptions());
  ASSERT_TRUE(replay);
  Result<Completion> again = (*replay)->complete(ask("via exec"));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->text, "json answer");
  EXPECT_EQ(again->model, "fake-1");
}

} // namespace
} // namespace ptxforge::llm
