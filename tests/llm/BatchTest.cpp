// The batch backend: a round writes Batch-API lines and answers "pending";
// the next run answers from the batch's output file by custom_id.
#include "llm/BackendSpec.h"
#include "llm/BatchBackend.h"
#include "llm/RequestHash.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace ptxforge::llm {
namespace {

class BatchFiles : public ::testing::Test {
protected:
  void SetUp() override {
    std::string stem = ::testing::TempDir() + "/llm-batch-" + std::to_string(::getpid()) + "-";
    requests_ = stem + "requests.jsonl";
    output_ = stem + "output.jsonl";
  }
  void TearDown() override {
    std::remove(requests_.c_str());
    std::remove(output_.c_str());
  }

  std::vector<nlohmann::json> readLines(const std::string &path) const {
    std::ifstream file(path);
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(file, line);)
      lines.push_back(nlohmann::json::parse(line));
    return lines;
  }

  BackendOptions options(std::vector<std::string> results = {}) const {
    BackendOptions options;
    options.batchFile = requests_;
    options.batchResults = std::move(results);
    return options;
  }

  std::string requests_;
  std::string output_;
};

Request chat(const std::string &user, int64_t seed) {
  Request request;
  request.messages = {{Role::System, "You write PTX."}, {Role::User, user}};
  request.temperature = 0.7;
  request.seed = seed;
  return request;
}

TEST_F(BatchFiles, ARoundWritesRequestsAndAnswersPending) {
  auto backend = openBackend("batch:gpt-4o-mini", options());
  ASSERT_TRUE(backend) << backend.error().message;
  Request first = chat("saxpy", 1), second = chat("saxpy", 2);
  Request raw;
  raw.prompt = ".visible .entry k(";
  raw.maxTokens = 100;
  for (const Request &request : {first, second, first, raw}) {
    Result<Completion> completion = (*backend)->complete(request);
    ASSERT_TRUE(completion) << completion.error().message;
    EXPECT_TRUE(completion->pending());
    EXPECT_EQ(completion->status, CompletionStatus::Pending);
    EXPECT_TRUE(completion->text.empty());
    EXPECT_EQ(completion->requestHash, requestHash(request));
    EXPECT_EQ(completion->backend, "batch");
  }
  EXPECT_EQ(static_cast<BatchBackend &>(**backend).pendingWritten(), 3u);

  std::vector<nlohmann::json> lines = readLines(requests_);
  ASSERT_EQ(lines.size(), 3u); // the repeated request is written once
  EXPECT_EQ(lines[0]["custom_id"], requestHash(first));
  EXPECT_EQ(lines[0]["method"], "POST");
  EXPECT_EQ(lines[0]["url"], "/v1/chat/completions");
  EXPECT_EQ(lines[0]["body"]["model"], "gpt-4o-mini");
  EXPECT_EQ(lines[0]["body"]["messages"][1]["content"], "saxpy");
  EXPECT_EQ(lines[0]["body"]["seed"], 1);
  EXPECT_FALSE(lines[0]["body"].contains("stream"));
  EXPECT_EQ(lines[1]["custom_id"], requestHash(second));
  EXPECT_EQ(lines[2]["url"], "/v1/completions");
  EXPECT_EQ(lines[2]["body"]["prompt"], ".visible .entry k(");
}

TEST_F(BatchFiles, TheNextRunResumesFromTheOutputFile) {
  Request answered = chat("saxpy", 1), refused = chat("saxpy", 2), later = chat("sgemm", 1);
  {
    auto round = openBackend("batch:gpt-4o-mini", options());
    ASSERT_TRUE(round);
    ASSERT_TRUE((*round)->complete(answered)->pending());
    ASSERT_TRUE((*round)->complete(refused)->pending());
  }
  // What the Batch API hands back: one success, one failure, in any order.
  std::ofstream(output_)
      << nlohmann::json{{"id", "batch_req_2"},
                        {"custom_id", requestHash(refused)},
                        {"response", {{"status_code", 400},
                                      {"body", {{"error", {{"message", "max_tokens is too large"}}}}}}},
                        {"error", nullptr}}
             .dump()
      << "\n"
      << nlohmann::json{{"id", "batch_req_1"},
                        {"custom_id", requestHash(answered)},
                        {"response",
                         {{"status_code", 200},
                          {"body",
                           {{"model", "gpt-4o-mini-2024-07-18"},
                            {"choices", {{{"index", 0},
                                          {"message", {{"role", "assistant"}, {"content", "```ptx\nret;\n```"}}},
                                          {"finish_reason", "stop"}}}},
                            {"usage", {{"prompt_tokens", 50}, {"completion_tokens", 8}}}}}}},
                        {"error", nullptr}}
             .dump()
      << "\n";

  auto resumed = openBackend("batch:gpt-4o-mini", options({output_}));
  ASSERT_TRUE(resumed) << resumed.error().message;
  Result<Completion> completion = (*resumed)->complete(answered);
  ASSERT_TRUE(completion) << completion.error().message;
  EXPECT_FALSE(completion->pending());
  EXPECT_EQ(completion->text, "```ptx\nret;\n```");
  EXPECT_EQ(completion->model, "gpt-4o-mini-2024-07-18");
  EXPECT_EQ(completion->usage.completionTokens, 8);
  EXPECT_EQ(completion->finishReason, FinishReason::Stop);

  Result<Completion> failed = (*resumed)->complete(refused);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "batch: request " + requestHash(refused) + " failed in the batch (" + output_ +
                                        "): HTTP 400: max_tokens is too large");

  // A new request of the resumed run is pending again, in a fresh batch file.
  EXPECT_TRUE((*resumed)->complete(later)->pending());
  std::vector<nlohmann::json> lines = readLines(requests_);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["custom_id"], requestHash(later));
}

TEST_F(BatchFiles, RefusesConfusedFiles) {
  auto same = openBackend("batch:m", options({requests_}));
  ASSERT_FALSE(same);
  EXPECT_NE(same.error().message.find("also given as a results file"), std::string::npos);

  std::ofstream(output_) << R"({"id":"x","response":{}})" << "\n";
  auto notOutput = openBackend("batch:m", options({output_}));
  ASSERT_FALSE(notOutput);
  EXPECT_EQ(notOutput.error().message, "batch: " + output_ +
                                           ":1: missing string \"custom_id\"; is this a Batch-API output file?");
}

} // namespace
} // namespace ptxforge::llm
