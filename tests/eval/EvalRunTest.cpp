// runEval through its library API when the model's infrastructure fails: a
// dead server, a server that answers some requests with HTTP 500 (then a
// resume that asks only those again), a recording that misses requests, an
// interruption from inside a request, and a batch eval waiting for results.
// Each gives the status and figures docs/eval.md describes. The gate is the
// in-process emulator on vector_add (and relu); the model is an in-process
// script or an OpenAI-compatible server on loopback (tests/llm/TestServer.h).
#include "eval/Eval.h"
#include "eval/Merge.h"

#include "../llm/TestServer.h"
#include "emu/EmuExecutor.h"
#include "llm/BackendSpec.h"
#include "llm/ReplayBackend.h"
#include "report/EvalReport.h"
#include "tasks/Reference.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <stop_token>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace ptxforge;
using namespace ptxforge::eval;
using nlohmann::json;

namespace {

#define ASSERT_OK(result) ASSERT_TRUE((result).ok()) << (result).error().message

const tasks::Suite &suite() {
  static const tasks::Suite loaded = [] {
    Result<tasks::Suite> suite = tasks::loadSuite(tasks::taskSearchRoots({}));
    EXPECT_TRUE(suite.ok()) << (suite.ok() ? "" : suite.error().message);
    return suite.ok() ? std::move(suite).value() : tasks::Suite{};
  }();
  return loaded;
}

const tasks::TaskSpec &findTask(const std::string &name) {
  for (const tasks::TaskSpec &task : suite().tasks)
    if (task.name == name) return task;
  ADD_FAILURE() << "no built-in task " << name;
  static const tasks::TaskSpec none;
  return none;
}

const prompt::TemplateSet &templates() {
  static const prompt::TemplateSet set = [] {
    Result<prompt::TemplateSet> loaded = prompt::loadTemplates(prompt::defaultPromptsDir());
    EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
    return loaded.ok() ? std::move(loaded).value() : prompt::TemplateSet{};
  }();
  return set;
}

/// nvcc's PTX of a task: the correct kernel the scripted model answers with.
std::string referencePtx(const std::string &task) {
  Result<tasks::CompiledReference> reference = tasks::compileReference(findTask(task), "sm_90");
  EXPECT_TRUE(reference.ok()) << (reference.ok() ? "" : reference.error().message);
  return reference.ok() ? reference->ptx : std::string();
}

/// A correct answer for the task a request is about (the prompt names it).
std::string correctAnswer(const llm::Request &request) {
  static const std::string vectorAdd = referencePtx("vector_add"), relu = referencePtx("relu");
  std::string user;
  for (const llm::Message &message : request.messages)
    if (message.role == llm::Role::User) user += message.content;
  const std::string &ptx = user.find("relu") != std::string::npos ? relu : vectorAdd;
  return "Here it is.\n\n```ptx\n" + ptx + "\n```\n";
}

llm::Completion completion(std::string text) {
  llm::Completion out;
  out.text = std::move(text);
  out.finishReason = llm::FinishReason::Stop;
  out.rawFinishReason = "stop";
  out.model = "scripted-1";
  return out;
}

/// A model that a test scripts; thread-safe.
class ScriptedBackend : public llm::Backend {
public:
  using Script = std::function<Result<llm::Completion>(const llm::Request &, int call)>;
  explicit ScriptedBackend(Script script) : script_(std::move(script)) {}
  std::string kind() const override { return "scripted"; }
  std::string describe() const override { return "scripted test model"; }
  int calls() const { return calls_.load(); }

protected:
  Result<llm::Completion> completeValid(const llm::Request &request, const std::string &,
                                        const llm::CallContext &) override {
    return script_(request, calls_++);
  }

private:
  Script script_;
  std::atomic<int> calls_{0};
};

/// A port on 127.0.0.1 that nothing listens on: bound, then closed.
int closedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0)
    port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

/// An OpenAI chat completion body.
std::string chatBody(const std::string &text) {
  return json{{"id", "chatcmpl-1"},
              {"object", "chat.completion"},
              {"model", "test-model"},
              {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", text}}}, {"finish_reason", "stop"}}}},
              {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 50}, {"total_tokens", 150}}}}
      .dump();
}

/// llm::Request's messages from an OpenAI request body, enough for correctAnswer.
llm::Request requestOf(const std::string &body) {
  llm::Request request;
  json parsed = json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.contains("messages"))
    for (const json &message : parsed["messages"])
      request.messages.push_back({message.value("role", "") == "user" ? llm::Role::User : llm::Role::System,
                                  message.value("content", "")});
  return request;
}

class EvalRunTest : public ::testing::Test {
protected:
  void SetUp() override {
    // No nvdisasm: dedupe by PTX, and no disassembler process per candidate.
    ::setenv("PTXFORGE_NVDISASM", "/nonexistent/nvdisasm", 1);
    ASSERT_FALSE(findTask("vector_add").name.empty());
    const ::testing::TestInfo *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("ptxforge-eval-test-" + std::to_string(::getpid()) + "-" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Result<std::unique_ptr<store::Store>> opened = store::Store::open((dir_ / "runs.db").string());
    ASSERT_OK(opened);
    store_ = std::move(opened).value();
    executor_ = emu::createEmuExecutor();
  }
  void TearDown() override {
    store_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  /// Small and fast: vector_add, three samples, one trial, one round, zero-shot.
  static EvalOptions smallOptions(const std::string &suite = "vector_add", int samples = 3) {
    EvalOptions options;
    options.suite = suite;
    options.samples = samples;
    options.ks = {1};
    options.rounds = 1;
    options.strategies = {prompt::Strategy::ZeroShot};
    options.concurrency = 1;
    options.trials = 1;
    options.noSass = true;
    return options;
  }

  Result<EvalOutcome> run(llm::Backend &backend, const EvalOptions &options,
                          std::optional<int64_t> resume = std::nullopt, std::stop_token stop = {}) {
    return runIn(*store_, backend, options, resume, stop);
  }

  Result<EvalOutcome> runIn(store::Store &store, llm::Backend &backend, const EvalOptions &options,
                            std::optional<int64_t> resume = std::nullopt, std::stop_token stop = {},
                            const std::string &modelSpec = "test:model",
                            std::function<void(const std::string &)> onProgress = {}) {
    EvalContext context{suite(), backend, modelSpec, *executor_, store, templates(), {}, std::move(onProgress), stop};
    return runEval(context, options, resume);
  }

  /// A store file of its own in the test's folder.
  std::unique_ptr<store::Store> openStore(const std::string &name) {
    Result<std::unique_ptr<store::Store>> opened = store::Store::open((dir_ / name).string());
    EXPECT_TRUE(opened.ok()) << (opened.ok() ? "" : opened.error().message);
    return opened.ok() ? std::move(opened).value() : nullptr;
  }

  /// An OpenAI backend on `url` that gives up at once (no retries).
  static std::unique_ptr<llm::Backend> openai(const std::string &url) {
    llm::BackendOptions options;
    options.baseUrl = url + "/v1";
    options.maxRetries = 0;
    options.connectTimeout = std::chrono::milliseconds(2000);
    options.requestTimeout = std::chrono::milliseconds(30'000);
    options.environment = [](const std::string &name) -> std::optional<std::string> {
      if (name == "OPENAI_API_KEY") return "sk-test-key-not-secret";
      return std::nullopt;
    };
    Result<std::unique_ptr<llm::Backend>> backend = llm::openBackend("openai:test-model", options);
    EXPECT_TRUE(backend.ok()) << (backend.ok() ? "" : backend.error().message);
    return backend.ok() ? std::move(backend).value() : nullptr;
  }

  static const json &overall(const EvalOutcome &outcome) { return outcome.document["metrics"]["overall"]; }

  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<exec::Executor> executor_;
};

// Nothing answers: every request fails, no sample can be scored. Not "done"
// with 0%: infra-error, every figure null, and the reports say why.
TEST_F(EvalRunTest, DeadServerIsInfraErrorWithNoFigures) {
  std::unique_ptr<llm::Backend> backend = openai("http://127.0.0.1:" + std::to_string(closedPort()));
  ASSERT_TRUE(backend);
  Result<EvalOutcome> outcome = run(*backend, smallOptions());
  ASSERT_OK(outcome);
  EXPECT_EQ(outcome->status, store::EvalStatus::InfraError);
  EXPECT_EQ(outcome->document["status"], "infra-error");
  EXPECT_EQ(overall(*outcome)["samples"], 0);
  EXPECT_EQ(overall(*outcome)["no_completion"], 3);
  EXPECT_EQ(overall(*outcome)["no_completion_reasons"], json({{"error", 3}}));
  EXPECT_TRUE(overall(*outcome)["correct_at_k"]["1"].is_null());
  EXPECT_TRUE(overall(*outcome)["fast_p"]["0"].is_null());
  std::string markdown = report::evalMarkdown(outcome->document);
  EXPECT_NE(markdown.find("Status infra-error"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("3 of 3 samples had no completion (error 3)"), std::string::npos) << markdown;
  EXPECT_EQ(markdown.find("0.0%"), std::string::npos) << markdown;
  // Read back from the store: the same status.
  Result<json> document = evalDocument(*store_, outcome->evalId);
  ASSERT_OK(document);
  EXPECT_EQ((*document)["status"], "infra-error");
}

// A server that fails one sample's request with HTTP 500: that sample is left
// out (2 of 3 scored), the eval is incomplete. A resume asks that request and
// nothing else again, and the eval is complete.
TEST_F(EvalRunTest, ServerErrorsMakeItIncompleteAndResumeAsksOnlyTheMissingRequests) {
  std::atomic<bool> failing{true};
  llm::testing::TestServer server;
  server.post("/v1/chat/completions", [&](const httplib::Request &request, httplib::Response &response, int) {
    json body = json::parse(request.body, nullptr, false);
    // Slot 1 is the request with seed 2 (seed 1 + slot).
    if (failing && body.is_object() && body.value("seed", 0) == 2) {
      response.status = 500;
      response.set_content(R"({"error": {"message": "the server had an error"}})", "application/json");
      return;
    }
    response.set_content(chatBody(correctAnswer(requestOf(request.body))), "application/json");
  });
  server.start();
  std::unique_ptr<llm::Backend> backend = openai(server.url());
  ASSERT_TRUE(backend);

  Result<EvalOutcome> first = run(*backend, smallOptions());
  ASSERT_OK(first);
  EXPECT_EQ(first->status, store::EvalStatus::Incomplete);
  EXPECT_EQ(overall(*first)["samples"], 2);
  EXPECT_EQ(overall(*first)["no_completion"], 1);
  // The two answered samples are correct: 100% of the scored, not 2 of 3.
  EXPECT_EQ(overall(*first)["correct_at_k"]["1"], 1.0);
  EXPECT_EQ(first->document["metrics"]["tasks"][0]["sample_outcomes"][1]["no_completion"], "error");
  EXPECT_NE(report::noCompletionSentence(first->document).find("1 of 3 samples had no completion (error 1)"),
            std::string::npos);
  size_t asked = server.count();
  EXPECT_EQ(asked, 3u);

  // An eval recorded as "done" before the eval statuses existed reads as what its runs say.
  {
    Result<store::EvalRecord> record = store_->evalRecord(first->evalId);
    ASSERT_OK(record);
    store::EvalRecord legacy = *record;
    legacy.status = "done";
    Result<int64_t> legacyId = store_->createEval(legacy);
    ASSERT_OK(legacyId);
    Result<std::vector<store::EvalRun>> runs = store_->evalRuns(first->evalId);
    ASSERT_OK(runs);
    for (const store::EvalRun &linked : *runs) ASSERT_OK(store_->linkEvalRun(*legacyId, linked.position, linked.task, linked.runId));
    Result<json> document = evalDocument(*store_, *legacyId);
    ASSERT_OK(document);
    EXPECT_EQ((*document)["status"], "incomplete");
  }

  failing = false;
  Result<EvalOutcome> resumed = run(*backend, smallOptions(), first->evalId);
  ASSERT_OK(resumed);
  EXPECT_EQ(resumed->evalId, first->evalId);
  EXPECT_EQ(resumed->status, store::EvalStatus::Complete);
  EXPECT_EQ(server.count(), asked + 1) << "only the failed request is asked again";
  EXPECT_EQ(json::parse(server.received().back().body)["seed"], 2);
  EXPECT_EQ(overall(*resumed)["samples"], 3);
  EXPECT_EQ(overall(*resumed)["no_completion"], 0);
  EXPECT_EQ(overall(*resumed)["correct_at_k"]["1"], 1.0);
  EXPECT_EQ(report::noCompletionSentence(resumed->document), "");

  // A complete eval resumed again asks nothing.
  Result<EvalOutcome> again = run(*backend, smallOptions(), first->evalId);
  ASSERT_OK(again);
  EXPECT_EQ(again->status, store::EvalStatus::Complete);
  EXPECT_EQ(server.count(), asked + 1);
}

// A recording that lacks some requests (here: made with 2 samples, replayed
// with 3): the misses are no-completion, not wrong answers.
TEST_F(EvalRunTest, ReplayMissIsIncomplete) {
  std::string recording = (dir_ / "recording.jsonl").string();
  {
    Result<std::unique_ptr<llm::Backend>> recorder = llm::RecordingBackend::create(
        std::make_unique<ScriptedBackend>([](const llm::Request &request, int) { return completion(correctAnswer(request)); }),
        recording);
    ASSERT_OK(recorder);
    Result<EvalOutcome> recorded = run(**recorder, smallOptions("vector_add", 2));
    ASSERT_OK(recorded);
    EXPECT_EQ(recorded->status, store::EvalStatus::Complete);
  }
  llm::BackendOptions options;
  Result<std::unique_ptr<llm::Backend>> replay = llm::openBackend("replay:" + recording, options);
  ASSERT_OK(replay);
  Result<EvalOutcome> replayed = run(**replay, smallOptions("vector_add", 3));
  ASSERT_OK(replayed);
  EXPECT_EQ(replayed->status, store::EvalStatus::Incomplete);
  EXPECT_EQ(overall(*replayed)["samples"], 2);
  EXPECT_EQ(overall(*replayed)["no_completion"], 1);
  EXPECT_EQ(overall(*replayed)["correct_at_k"]["1"], 1.0);
  EXPECT_EQ(replayed->document["metrics"]["tasks"][0]["sample_outcomes"][2]["no_completion"], "error");
}

// A stop from inside a request (what Ctrl-C does): the eval is interrupted;
// the task that never started counts all its samples as missing; a resume
// finishes both tasks and asks nothing twice.
TEST_F(EvalRunTest, InterruptedEvalCountsWhatDidNotRunAndResumes) {
  std::stop_source stop;
  ScriptedBackend backend([&](const llm::Request &request, int call) -> Result<llm::Completion> {
    if (call == 1) {
      stop.request_stop();
      return makeError(ErrorKind::Io, "scripted: cancelled");
    }
    return completion(correctAnswer(request));
  });
  EvalOptions options = smallOptions("vector_add,relu", 2);
  Result<EvalOutcome> first = run(backend, options, std::nullopt, stop.get_token());
  ASSERT_OK(first);
  EXPECT_EQ(first->status, store::EvalStatus::Interrupted);
  EXPECT_EQ(first->document["status"], "interrupted");
  const json &tasks = first->document["metrics"]["tasks"];
  ASSERT_EQ(tasks.size(), 2u);
  // relu comes first in suite order; it was the task interrupted.
  EXPECT_EQ(tasks[0]["task"], "relu");
  EXPECT_EQ(tasks[0]["samples"], 1);
  EXPECT_EQ(tasks[0]["no_completion"], 1);
  EXPECT_EQ(tasks[1]["task"], "vector_add");
  EXPECT_TRUE(tasks[1]["run"].is_null());
  EXPECT_EQ(tasks[1]["no_completion"], 2);
  EXPECT_EQ(tasks[1]["no_completion_reasons"], json({{"unasked", 2}}));
  EXPECT_EQ(overall(*first)["no_completion"], 3);
  EXPECT_EQ(backend.calls(), 2);

  Result<EvalOutcome> resumed = run(backend, options, first->evalId);
  ASSERT_OK(resumed);
  EXPECT_EQ(resumed->status, store::EvalStatus::Complete);
  EXPECT_EQ(overall(*resumed)["samples"], 4);
  EXPECT_EQ(overall(*resumed)["correct_at_k"]["1"], 1.0);
  EXPECT_EQ(backend.calls(), 2 + 3) << "relu's cancelled request and vector_add's two";
}

// A batch eval writes its requests and waits: pending, and its figures are
// n/a (null) until the answers are in, never 0%.
TEST_F(EvalRunTest, PendingBatchEvalShowsNotAvailable) {
  llm::BackendOptions options;
  options.batchFile = (dir_ / "batch.jsonl").string();
  options.environment = [](const std::string &) -> std::optional<std::string> { return std::nullopt; };
  Result<std::unique_ptr<llm::Backend>> batch = llm::openBackend("batch:test-model", options);
  ASSERT_OK(batch);
  Result<EvalOutcome> outcome = run(**batch, smallOptions());
  ASSERT_OK(outcome);
  EXPECT_EQ(outcome->status, store::EvalStatus::Pending);
  EXPECT_EQ(outcome->document["status"], "pending");
  EXPECT_EQ(overall(*outcome)["samples"], 0);
  EXPECT_EQ(overall(*outcome)["no_completion_reasons"], json({{"pending", 3}}));
  EXPECT_TRUE(overall(*outcome)["correct_at_k"]["1"].is_null());
  std::string markdown = report::evalMarkdown(outcome->document);
  EXPECT_NE(markdown.find("Status pending"), std::string::npos) << markdown;
  EXPECT_EQ(markdown.find("0.0%"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| overall | 1 | 0 | 3 | n/a | n/a | n/a |"), std::string::npos) << markdown;
}

// --- shards, merge and the request pool ---------------------------------------

/// What a model that errs by seed writes (a pure function of the request, so
/// that a shard's slot gets what the whole eval's slot got): first attempts
/// with seed % 3 == 0 have no PTX, == 2 drop their stores (wrong), == 1 are
/// correct; repairs and optimizations are correct (duplicates of each other).
Result<llm::Completion> errsBySeed(const llm::Request &request) {
  std::string user;
  for (const llm::Message &message : request.messages)
    if (message.role == llm::Role::User) user += message.content;
  llm::Completion answer = completion(correctAnswer(request));
  answer.usage = llm::Usage{100, 20, true, ""};
  bool later = user.find("# Your previous attempt failed") != std::string::npos ||
               user.find("# Make your correct kernel faster") != std::string::npos;
  if (later) return answer;
  int64_t seed = request.seed.value_or(0);
  if (seed % 3 == 0) {
    answer.text = "I would launch one thread per element.";
  } else if (seed % 3 == 2) {
    std::string kept;
    std::stringstream lines(answer.text);
    for (std::string line; std::getline(lines, line);)
      if (line.find("st.global") == std::string::npos) kept += line + "\n";
    answer.text = kept;
  }
  return answer;
}

/// The figures of a document without the run ids (which differ between stores).
json figures(const json &document) {
  json metrics = document["metrics"];
  for (json &task : metrics["tasks"]) task.erase("run");
  metrics.erase("errors");
  metrics.erase("not_run");
  return metrics;
}

TEST(Shards, EveryPairBelongsToOneShardAndTheSharesAreEven) {
  for (int count = 1; count <= 5; ++count) {
    std::vector<int> sizes;
    std::map<std::pair<int, int>, int> owner;
    for (int index = 1; index <= count; ++index) {
      int size = 0;
      for (int task = 0; task < 3; ++task)
        for (int slot : shardSlots(Shard{index, count}, task, 4)) {
          EXPECT_TRUE(owner.emplace(std::pair(task, slot), index).second) << task << "/" << slot << " twice";
          ++size;
        }
      sizes.push_back(size);
    }
    EXPECT_EQ(owner.size(), 12u) << count << " shards";
    EXPECT_LE(*std::max_element(sizes.begin(), sizes.end()) - *std::min_element(sizes.begin(), sizes.end()), 1);
  }
  // Dealt out in turn: task 0's slots 0, 2 and task 1's 0, 2 (pairs 4, 6) are shard 1 of 2.
  EXPECT_EQ(shardSlots(Shard{1, 2}, 0, 4), (std::vector<int>{0, 2}));
  EXPECT_EQ(shardSlots(Shard{2, 3}, 1, 4), (std::vector<int>{0, 3}));
  EXPECT_EQ(shardSlots(Shard{5, 5}, 0, 3), (std::vector<int>{}));

  ASSERT_OK(parseShard("2/4"));
  EXPECT_EQ(*parseShard("2/4"), (Shard{2, 4}));
  EXPECT_EQ(shardName(Shard{2, 4}), "2/4");
  for (const char *bad : {"0/4", "5/4", "2", "a/b", "1/0", "-1/2", "1/2/3", "1/200000"})
    EXPECT_FALSE(parseShard(bad).ok()) << bad;
}

// The brief of `eval --shard`: the same model and seeds, sharded 1/2 + 2/2
// (in two stores, at different -j) and merged, give the unsharded eval's
// figures, sample for sample; so do three shards in one store merged into it.
TEST_F(EvalRunTest, ShardsMergeIntoTheFiguresOfTheWholeEval) {
  ScriptedBackend backend([](const llm::Request &request, int) { return errsBySeed(request); });
  EvalOptions options = smallOptions("vector_add,relu", 3);
  options.rounds = 2;
  options.ks = {1, 2};
  Result<EvalOutcome> whole = run(backend, options);
  ASSERT_OK(whole);
  ASSERT_EQ(whole->status, store::EvalStatus::Complete);
  // The model's mix shows in the figures: neither all nor nothing.
  double correct = overall(*whole)["correct_at_k"]["1"].get<double>();
  EXPECT_GT(correct, 0.0);
  EXPECT_LT(correct, 1.0);

  std::unique_ptr<store::Store> first = openStore("shard-1.db"), second = openStore("shard-2.db");
  ASSERT_TRUE(first && second);
  EvalOptions shard = options;
  shard.shard = Shard{1, 2};
  Result<EvalOutcome> one = runIn(*first, backend, shard);
  shard.shard = Shard{2, 2};
  shard.concurrency = 3;
  Result<EvalOutcome> two = runIn(*second, backend, shard);
  ASSERT_OK(one);
  ASSERT_OK(two);
  EXPECT_EQ(one->document["parameters"]["shard"], json({{"index", 1}, {"count", 2}}));
  // Six pairs dealt out in turn: each shard scores three samples of the two tasks.
  EXPECT_EQ(overall(*one)["samples"], 3);
  EXPECT_EQ(overall(*two)["samples"], 3);
  EXPECT_EQ(one->status, store::EvalStatus::Complete);

  std::unique_ptr<store::Store> target = openStore("merged.db");
  ASSERT_TRUE(target);
  Result<MergeOutcome> merged = mergeShards({{second.get(), two->evalId}, {first.get(), one->evalId}}, *target);
  ASSERT_OK(merged);
  EXPECT_EQ(merged->status, store::EvalStatus::Complete);
  EXPECT_EQ(figures(merged->document), figures(whole->document));
  EXPECT_FALSE(merged->document["parameters"].contains("shard"));
  EXPECT_EQ(merged->document["suite_version"], whole->document["suite_version"]);
  EXPECT_EQ(merged->document["provenance"]["merged_from"].size(), 2u);
  EXPECT_EQ(merged->document["provenance"]["merged_from"][0]["shard"], "1/2");
  // Read back from the store: the same figures, and each task is one run with all its samples.
  Result<json> reread = evalDocument(*target, merged->evalId);
  ASSERT_OK(reread);
  EXPECT_EQ(figures(*reread), figures(whole->document));
  Result<std::vector<store::EvalRun>> runs = target->evalRuns(merged->evalId);
  ASSERT_OK(runs);
  ASSERT_EQ(runs->size(), 2u);
  Result<store::RunData> relu = target->load((*runs)[0].runId);
  ASSERT_OK(relu);
  EXPECT_EQ(relu->run.task, "relu");
  EXPECT_EQ(relu->attempts.size(), 6u) << "3 samples x 2 rounds";
  EXPECT_FALSE(relu->run.parameters.contains("slots"));
  EXPECT_EQ(relu->run.summary["merged_from"].size(), 2u);

  // Three shards in the store of the whole eval, merged into it.
  std::vector<ShardSource> three;
  for (int index = 1; index <= 3; ++index) {
    EvalOptions third = options;
    third.shard = Shard{index, 3};
    Result<EvalOutcome> part = run(backend, third);
    ASSERT_OK(part);
    three.push_back({store_.get(), part->evalId});
  }
  Result<MergeOutcome> mergedHere = mergeShards(three, *store_);
  ASSERT_OK(mergedHere);
  EXPECT_EQ(figures(mergedHere->document), figures(whole->document));

  // One leaderboard entry per eval: the whole one and the merge; the shards are left out.
  Result<std::vector<store::EvalRecord>> records = store_->evals();
  ASSERT_OK(records);
  std::vector<json> documents;
  for (const store::EvalRecord &record : *records) documents.push_back(*evalDocument(*store_, record.id));
  std::string board = report::leaderboardMarkdown(documents, whole->document["suite_version"]);
  EXPECT_NE(board.find("| 1 | #"), std::string::npos) << board;
  EXPECT_NE(board.find("| 2 | #"), std::string::npos) << board;
  EXPECT_EQ(board.find("| 3 | #"), std::string::npos) << board;
  EXPECT_NE(board.find("3 shards of evals left out"), std::string::npos) << board;
  std::string all = report::leaderboardMarkdown(documents, whole->document["suite_version"], true);
  EXPECT_NE(all.find("complete (shard 2/3)"), std::string::npos) << all;
  EXPECT_NE(report::evalMarkdown(three.empty() ? json() : *evalDocument(*store_, three[0].evalId))
                .find("Shard 1/3 of an eval"),
            std::string::npos);
}

// What is not the shards of one eval is refused, naming what is wrong.
TEST_F(EvalRunTest, MergeRefusesWhatIsNotOneEval) {
  ScriptedBackend backend([](const llm::Request &request, int) { return errsBySeed(request); });
  EvalOptions options = smallOptions("vector_add", 2);
  auto shardOf = [&](int index, int count, EvalOptions base, const std::string &model = "test:model") {
    base.shard = Shard{index, count};
    Result<EvalOutcome> outcome = runIn(*store_, backend, base, std::nullopt, {}, model);
    EXPECT_TRUE(outcome.ok()) << (outcome.ok() ? "" : outcome.error().message);
    return ShardSource{store_.get(), outcome.ok() ? outcome->evalId : 0};
  };
  auto refused = [&](const std::vector<ShardSource> &shards, const std::string &expected) {
    Result<MergeOutcome> merged = mergeShards(shards, *store_);
    ASSERT_FALSE(merged.ok()) << "merged, expected: " << expected;
    EXPECT_EQ(merged.error().kind, ErrorKind::InvalidInput);
    EXPECT_NE(merged.error().message.find(expected), std::string::npos) << merged.error().message;
  };
  ShardSource a = shardOf(1, 2, options), b = shardOf(2, 2, options);
  refused({a}, "shard 2/2 missing (given: 1/2)");
  refused({a, b, shardOf(1, 2, options)}, "shard 1/2 is given twice");
  EvalOptions hotter = options;
  hotter.temperature = 1.0;
  refused({a, shardOf(2, 2, hotter)}, "option temperature 1.0 vs 0.7");
  refused({a, shardOf(2, 2, options, "openai:another")}, "model openai:another vs test:model");
  refused({a, shardOf(2, 3, options)}, "shard count 3 vs 2");
  EvalOptions otherSuite = options;
  otherSuite.suite = "relu";
  refused({a, shardOf(2, 2, otherSuite)}, "suite relu vs vector_add");
  Result<EvalOutcome> whole = run(backend, options);
  ASSERT_OK(whole);
  refused({a, {store_.get(), whole->evalId}}, "is not a shard");
  // A shard interrupted before it ran anything: resume it first.
  std::stop_source stop;
  stop.request_stop();
  EvalOptions interrupted = options;
  interrupted.shard = Shard{2, 2};
  Result<EvalOutcome> stopped = runIn(*store_, backend, interrupted, std::nullopt, stop.get_token());
  ASSERT_OK(stopped);
  EXPECT_EQ(stopped->status, store::EvalStatus::Interrupted);
  refused({a, {store_.get(), stopped->evalId}}, "is interrupted: finish it first (`ptxforge eval --resume");
  // Merged once, not twice.
  ASSERT_OK(mergeShards({a, b}, *store_));
  refused({b, a}, "these shards were merged before: eval");
  // A resume cannot turn a shard into another.
  EvalOptions other = options;
  other.shard = Shard{1, 2};
  Result<EvalOutcome> resumed = run(backend, other, stopped->evalId);
  ASSERT_FALSE(resumed.ok());
  EXPECT_NE(resumed.error().message.find("is shard 2/2; --shard 1/2 cannot change that"), std::string::npos)
      << resumed.error().message;
}

/// A model that takes its time and counts how many requests it has at once.
class SlowBackend : public llm::Backend {
public:
  std::string kind() const override { return "scripted"; }
  std::string describe() const override { return "slow scripted test model"; }
  int peak() const { return peak_.load(); }
  std::set<std::string> tasksAtPeak() const {
    std::lock_guard lock(mutex_);
    return tasksAtPeak_;
  }

protected:
  Result<llm::Completion> completeValid(const llm::Request &request, const std::string &,
                                        const llm::CallContext &) override {
    std::string task = correctAnswer(request).find("relu") != std::string::npos ? "relu" : "vector_add";
    {
      std::lock_guard lock(mutex_);
      inFlight_.push_back(task);
      if (static_cast<int>(inFlight_.size()) > peak_) {
        peak_ = static_cast<int>(inFlight_.size());
        tasksAtPeak_ = {inFlight_.begin(), inFlight_.end()};
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    {
      std::lock_guard lock(mutex_);
      inFlight_.erase(std::find(inFlight_.begin(), inFlight_.end(), task));
    }
    llm::Completion answer = completion(correctAnswer(request));
    answer.usage = llm::Usage{1000, 500, true, ""};
    return answer;
  }

private:
  mutable std::mutex mutex_;
  std::vector<std::string> inFlight_;
  std::atomic<int> peak_{0};
  std::set<std::string> tasksAtPeak_;
};

// -j bounds the requests in flight across the suite, not within a task: with
// two samples per task and -j 4, both tasks have requests out at once, and
// never more than four. The progress line counts samples, tokens and cost.
TEST_F(EvalRunTest, RequestsInFlightSpanTasksAndTheProgressLineCountsThem) {
  SlowBackend backend;
  EvalOptions options = smallOptions("vector_add,relu", 2);
  options.concurrency = 4;
  std::vector<std::string> lines;
  EvalContext context{suite(), backend, "test:model", *executor_, *store_, templates(), {},
                      [&](const std::string &line) { lines.push_back(line); }, {}};
  context.price = TokenPrice{3.0, 15.0};
  Result<EvalOutcome> outcome = runEval(context, options);
  ASSERT_OK(outcome);
  EXPECT_EQ(outcome->status, store::EvalStatus::Complete);
  EXPECT_EQ(outcome->tasksAtOnce, 2);
  EXPECT_LE(outcome->peakRequestsInFlight, 4);
  EXPECT_LE(backend.peak(), 4);
  EXPECT_GE(backend.peak(), 3) << "requests of both tasks in flight at once";
  EXPECT_EQ(backend.tasksAtPeak(), (std::set<std::string>{"relu", "vector_add"}));
  std::vector<std::string> progress;
  std::copy_if(lines.begin(), lines.end(), std::back_inserter(progress),
               [](const std::string &line) { return line.starts_with("[eval] "); });
  ASSERT_FALSE(progress.empty());
  // 4 answers of 1000 + 500 tokens at $3 and $15 per million: $0.012 + $0.03.
  EXPECT_NE(progress.back().find("[eval] 4/4 samples (100%)"), std::string::npos) << progress.back();
  EXPECT_NE(progress.back().find("tokens 6000 (in 4000, out 2000)"), std::string::npos) << progress.back();
  EXPECT_NE(progress.back().find("cost $0.04"), std::string::npos) << progress.back();
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [](const std::string &line) { return line.find("4/4 samples") != std::string::npos; }),
            1) << "the last line once";

  // -j 2 over three samples of each task: never more than two.
  SlowBackend bounded;
  EvalOptions two = smallOptions("vector_add,relu", 3);
  two.concurrency = 2;
  Result<EvalOutcome> boundedOutcome = run(bounded, two);
  ASSERT_OK(boundedOutcome);
  EXPECT_LE(bounded.peak(), 2);
  EXPECT_EQ(boundedOutcome->peakRequestsInFlight, bounded.peak());
}

} // namespace
