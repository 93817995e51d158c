// Request validation, the request hash (its canonical form is a published
// contract: replay files and batch custom_ids depend on it) and completion JSON.
#include "llm/Request.h"
#include "llm/RequestHash.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ptxforge::llm {
namespace {

Request saxpyRequest() {
  Request request;
  request.messages = {{Role::System, "You write PTX."}, {Role::User, "saxpy"}};
  request.temperature = 0.7;
  request.seed = 42;
  request.maxTokens = 256;
  request.stop = {"```"};
  return request;
}

TEST(RequestHash, CanonicalTextIsSortedCompactJson) {
  EXPECT_EQ(canonicalRequestText(saxpyRequest()),
            R"({"max_tokens":256,"messages":[{"content":"You write PTX.","role":"system"},)"
            R"({"content":"saxpy","role":"user"}],"seed":42,"stop":["```"],"temperature":0.7,"v":1})");
}

TEST(RequestHash, IsStableAcrossVersions) {
  // If this changes, every recorded run stops replaying: bump "v" instead.
  EXPECT_EQ(requestHash(saxpyRequest()), "32172e0280709f58d076e22e67b8a50885778cb1fdd35391b08516153ad2a92e");
}

TEST(RequestHash, IgnoresStreamButNotSampling) {
  Request base = saxpyRequest();
  Request streamed = base;
  streamed.stream = true;
  EXPECT_EQ(requestHash(base), requestHash(streamed));

  std::vector<std::function<void(Request &)>> changes = {
      [](Request &r) { r.temperature = 0.8; },       [](Request &r) { r.topP = 0.9; },
      [](Request &r) { r.maxTokens = 257; },         [](Request &r) { r.seed = 43; },
      [](Request &r) { r.stop.push_back("END"); },   [](Request &r) { r.model = "gpt-4o"; },
      [](Request &r) { r.messages[1].content += " "; }, [](Request &r) { r.messages[0].role = Role::User; },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    Request changed = base;
    changes[i](changed);
    EXPECT_NE(requestHash(base), requestHash(changed)) << "change " << i;
  }
}

TEST(RequestHash, RawPromptIsHashedAsPrompt) {
  Request raw;
  raw.prompt = ".version 8.0\n";
  EXPECT_EQ(canonicalRequestText(raw), R"({"prompt":".version 8.0\n","v":1})");
}

TEST(RequestHash, InvalidUtf8DoesNotThrow) {
  Request request;
  request.messages = {{Role::User, std::string("bad \xff byte")}};
  EXPECT_EQ(requestHash(request).size(), 64u);
}

TEST(ValidateRequest, RejectsWhatNoBackendCanSend) {
  Request neither;
  EXPECT_NE(validateRequest(neither).error().message.find("neither"), std::string::npos);
  Request both = saxpyRequest();
  both.prompt = "x";
  EXPECT_NE(validateRequest(both).error().message.find("both"), std::string::npos);
  Request badTopP = saxpyRequest();
  badTopP.topP = 1.5;
  EXPECT_FALSE(validateRequest(badTopP));
  Request badTokens = saxpyRequest();
  badTokens.maxTokens = 0;
  EXPECT_FALSE(validateRequest(badTokens));
  Request emptyStop = saxpyRequest();
  emptyStop.stop = {""};
  EXPECT_FALSE(validateRequest(emptyStop));
  Request negativeTemperature = saxpyRequest();
  negativeTemperature.temperature = -1;
  EXPECT_EQ(validateRequest(negativeTemperature).error().kind, ErrorKind::InvalidInput);
  EXPECT_TRUE(validateRequest(saxpyRequest()));
}

TEST(FinishReason, NormalizesBothVocabularies) {
  EXPECT_EQ(normalizeFinishReason("stop"), FinishReason::Stop);
  EXPECT_EQ(normalizeFinishReason("end_turn"), FinishReason::Stop);
  EXPECT_EQ(normalizeFinishReason("stop_sequence"), FinishReason::Stop);
  EXPECT_EQ(normalizeFinishReason("length"), FinishReason::Length);
  EXPECT_EQ(normalizeFinishReason("max_tokens"), FinishReason::Length);
  EXPECT_EQ(normalizeFinishReason("content_filter"), FinishReason::ContentFilter);
  EXPECT_EQ(normalizeFinishReason("tool_use"), FinishReason::ToolCall);
  EXPECT_EQ(normalizeFinishReason("something_new"), FinishReason::Other);
  EXPECT_EQ(normalizeFinishReason(""), FinishReason::Unknown);
}

TEST(CompletionJson, RoundTrips) {
  Completion completion;
  completion.text = "ld.global.f32 %f1, [%rd1];";
  completion.rawFinishReason = "length";
  completion.finishReason = FinishReason::Length;
  completion.usage = {120, 34, true};
  completion.model = "gpt-4o-2024-08-06";
  completion.backend = "openai";
  completion.latencyMs = 812.5;
  completion.firstTokenMs = 95.0;
  completion.attempts = 2;
  Result<Completion> back = completionFromJson(completionToJson(completion));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->text, completion.text);
  EXPECT_EQ(back->finishReason, FinishReason::Length);
  EXPECT_EQ(back->usage.promptTokens, 120);
  EXPECT_EQ(back->usage.completionTokens, 34);
  EXPECT_TRUE(back->usage.reported);
  EXPECT_EQ(back->model, completion.model);
  EXPECT_EQ(back->backend, "openai");
  EXPECT_DOUBLE_EQ(back->latencyMs, 812.5);
  EXPECT_EQ(back->firstTokenMs, 95.0);
  EXPECT_EQ(back->attempts, 2);
}

TEST(CompletionJson, NamesTheBadField) {
  EXPECT_NE(completionFromJson(nlohmann::json{{"txt", "x"}}).error().message.find("\"text\""), std::string::npos);
  auto badUsage = completionFromJson(nlohmann::json{{"text", "x"}, {"usage", {{"prompt_tokens", "many"}}}});
  EXPECT_NE(badUsage.error().message.find("usage.prompt_tokens"), std::string::npos);
}

} // namespace
} // namespace ptxforge::llm
