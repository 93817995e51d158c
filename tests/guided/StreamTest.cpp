// Streaming checks with backtracking (solve/GuidedStream.h): where the cutter
// finds PTX in a growing answer and where it cuts; the continuation requests;
// the loop that stops a stream, continues and joins the answer, against an
// in-process streaming model and against an SSE server on loopback (the
// openai and anthropic backends end a stream they are told to end); and the
// store's segments, including a store written before they existed.
#include "llm/AnthropicBackend.h"
#include "llm/BackendSpec.h"
#include "llm/OpenAiBackend.h"
#include "solve/GuidedStream.h"
#include "solve/Solve.h"
#include "store/Store.h"

#include "TestServer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <filesystem>
#include <unistd.h>

namespace ptxforge::solve {
namespace {

using namespace std::chrono_literals;

// A small kernel, the line numbers of its PTX block as comments.
const std::string kGood = ".version 8.0\n"                                  // 1
                          ".target sm_90\n"                                 // 2
                          ".address_size 64\n"                              // 3
                          ".visible .entry k(.param .u64 p, .param .u32 n)\n" // 4
                          "{\n"                                             // 5
                          "\t.reg .b32 %r<4>;\n"                            // 6
                          "\t.reg .b64 %rd<3>;\n"                           // 7
                          "\tld.param.u64 %rd1, [p];\n"                     // 8
                          "\tmov.u32 %r1, %tid.x;\n"                        // 9
                          "\tadd.s32 %r2, %r1, 1;\n"                        // 10
                          "\tcvta.to.global.u64 %rd2, %rd1;\n"              // 11
                          "\tst.global.u32 [%rd2], %r2;\n"                  // 12
                          "\tret;\n"                                        // 13
                          "}\n";

std::string replaceOnce(std::string text, const std::string &from, const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// The kernel with a hallucinated opcode on line 10.
const std::string kSlip = replaceOnce(kGood, "\tadd.s32 %r2", "\tplus.s32 %r2");

std::string fenced(const std::string &ptx) { return "Here is the kernel.\n\n```ptx\n" + ptx + "```\n\nDone.\n"; }

/// Feeds `text` in pieces of `step` bytes; the first cut.
std::optional<StreamCut> feedInPieces(StreamCutter &cutter, std::string_view text, size_t step) {
  std::optional<StreamCut> cut;
  for (size_t at = 0; at < text.size(); at += step)
    if (std::optional<StreamCut> found = cutter.feed(text.substr(at, step)); found && !cut) cut = found;
  return cut;
}

TEST(StreamCutter, CutsAHallucinatedOpcodeAtTheStartOfItsLine) {
  std::string answer = fenced(kSlip);
  StreamCutter cutter;
  std::optional<StreamCut> cut = feedInPieces(cutter, answer, 3);
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->diagnostic.code, "unknown-instruction");
  EXPECT_EQ(cut->diagnostic.line, 10u); // in the PTX block
  EXPECT_EQ(cut->keepBytes, answer.find("\tplus.s32"));
  EXPECT_EQ(cut->statement, "plus.s32 %r2, %r1, 1;");
  EXPECT_TRUE(cutter.sawPtx());
}

TEST(StreamCutter, StreamedAndWholeAnswersAreCutAtTheSamePlace) {
  std::string answer = fenced(kSlip);
  for (size_t step : {1u, 2u, 7u, 64u, 100000u}) {
    StreamCutter cutter;
    std::optional<StreamCut> cut = feedInPieces(cutter, answer, step);
    ASSERT_TRUE(cut.has_value()) << step;
    EXPECT_EQ(cut->keepBytes, answer.find("\tplus.s32")) << step;
  }
}

TEST(StreamCutter, OnlyTheFirstCutIsReportedAndTheRestIsNotChecked) {
  std::string twoSlips = replaceOnce(kSlip, "\tret;", "\tretx;");
  StreamCutter cutter;
  std::optional<StreamCut> first = cutter.feed(fenced(twoSlips).substr(0, fenced(twoSlips).find("\tretx")));
  ASSERT_TRUE(first.has_value());
  int checks = cutter.checks();
  EXPECT_FALSE(cutter.feed(fenced(twoSlips).substr(fenced(twoSlips).find("\tretx"))).has_value());
  EXPECT_EQ(cutter.checks(), checks);
}

TEST(StreamCutter, ErrorsALaterLineMayFixAreNotCut) {
  // %r9 is declared nowhere yet: a later .reg may declare it.
  std::string answer = fenced(replaceOnce(kGood, "%r2, %r1, 1;", "%r2, %r9, 1;"));
  StreamCutter cutter;
  EXPECT_FALSE(feedInPieces(cutter, answer, 5).has_value());
  EXPECT_GT(cutter.checks(), 5);
}

TEST(StreamCutter, ACorrectModuleIsNeverCut) {
  StreamCutter cutter;
  EXPECT_FALSE(feedInPieces(cutter, fenced(kGood), 1).has_value());
}

TEST(StreamCutter, ProseThinkingAndOtherCodeAreNotChecked) {
  std::string answer = "First the idea: plus.s32 is not a thing; neither is `retx;`.\n"
                       "<think>\n.version 8.0\n\tplus.s32 %r1, %r2, 3;\n</think>\n"
                       "```cuda\nint plus(int a) { return a + 1; }\n```\n"
                       "```\nfoo bar;\n```\n";
  StreamCutter cutter;
  EXPECT_FALSE(feedInPieces(cutter, answer, 4).has_value());
  EXPECT_FALSE(cutter.sawPtx());
  EXPECT_EQ(cutter.checks(), 0);
}

TEST(StreamCutter, AnUntaggedFenceThatOpensWithPtxIsChecked) {
  std::string answer = "```\n" + kSlip + "```\n";
  StreamCutter cutter;
  std::optional<StreamCut> cut = feedInPieces(cutter, answer, 9);
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->keepBytes, answer.find("\tplus.s32"));
}

TEST(StreamCutter, BarePtxIsCheckedFromItsVersionLine) {
  std::string answer = "Sure.\n" + kSlip;
  StreamCutter cutter;
  std::optional<StreamCut> cut = feedInPieces(cutter, answer, 11);
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->diagnostic.line, 10u);
  EXPECT_EQ(cut->keepBytes, answer.find("\tplus.s32"));
}

TEST(StreamCutter, TextAfterTheClosingFenceIsNotChecked) {
  std::string answer = fenced(kGood) + "\tplus.s32 %r2, %r1, 1;\n";
  StreamCutter cutter;
  EXPECT_FALSE(feedInPieces(cutter, answer, 3).has_value());
}

TEST(StreamCutter, KeptTextIsScannedButNeverCut) {
  // The kept part ends before the error line; the continuation corrects it.
  std::string answer = fenced(kSlip);
  std::string kept = answer.substr(0, answer.find("\tplus.s32") - 1); // without the newline
  StreamCutter cutter(kept);
  EXPECT_EQ(cutter.checks(), 0);
  EXPECT_FALSE(cutter.feed("\n\tadd.s32 %r2, %r1, 1;\n").has_value());
  EXPECT_EQ(cutter.checks(), 2); // the kept last line, completed by the newline, and the new one
  // A second slip in the continuation is cut, after the kept text.
  std::optional<StreamCut> cut = cutter.feed("\tretx;\n");
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->keepBytes, cutter.text().find("\tretx;"));
}

TEST(StreamCutter, AnErrorInsideTheKeptTextIsLeftToTheGate) {
  std::string answer = fenced(kSlip);
  std::string kept = answer.substr(0, answer.find("\tcvta"));
  StreamCutter cutter(kept);
  EXPECT_FALSE(cutter.feed("\tcvta.to.global.u64 %rd2, %rd1;\n").has_value());
  EXPECT_FALSE(cutter.feed("\tretx;\n").has_value()); // no more checks once the kept part fails
}

TEST(StreamCutter, HostileTextIsHandled) {
  StreamCutter cutter;
  std::string junk = "```ptx\n";
  for (int i = 0; i < 2000; ++i) junk += std::string(1, static_cast<char>(i * 37 % 256)) + (i % 50 == 0 ? "\n" : "");
  (void)feedInPieces(cutter, junk, 13);
  (void)cutter.feed("\n```\n\n\n");
  SUCCEED();
}

// --- continuation requests -----------------------------------------------

StreamCut sampleCut() {
  StreamCutter cutter;
  std::optional<StreamCut> cut = cutter.feed(fenced(kSlip));
  EXPECT_TRUE(cut.has_value());
  return cut.value_or(StreamCut{});
}

llm::Request chatRequest() {
  llm::Request request;
  request.messages = {{llm::Role::System, "You write PTX."}, {llm::Role::User, "Write k."}};
  request.temperature = 0.7;
  request.seed = 42;
  request.maxTokens = 1000;
  request.stream = true;
  return request;
}

TEST(Continuation, PrefillEndsTheChatWithTheKeptTextAndTheDiagnostic) {
  std::string answer = fenced(kSlip);
  StreamCut cut = sampleCut();
  llm::Request next = continuationRequest(chatRequest(), answer.substr(0, cut.keepBytes), cut, ContinueMode::Prefill);
  ASSERT_EQ(next.messages.size(), 3u);
  EXPECT_EQ(next.messages.back().role, llm::Role::Assistant);
  const std::string &prefill = next.messages.back().content;
  EXPECT_TRUE(prefill.starts_with(answer.substr(0, answer.find("\tplus") - 1) + "\n// ptxforge: stopped at line 10"))
      << prefill;
  EXPECT_NE(prefill.find("`plus.s32 %r2, %r1, 1;`: unknown-instruction"), std::string::npos) << prefill;
  EXPECT_EQ(prefill.find('\n', prefill.rfind("// ptxforge")), std::string::npos); // one comment line
  EXPECT_FALSE(std::isspace(static_cast<unsigned char>(prefill.back())));        // no trailing blank
  EXPECT_EQ(next.seed, 42);
  EXPECT_EQ(next.temperature, 0.7);
  EXPECT_TRUE(next.stream);
  EXPECT_FALSE(next.prompt.has_value());
}

TEST(Continuation, CompletionsModeSendsTheChatAsTextWithTheKeptTextAppended) {
  std::string answer = fenced(kSlip);
  StreamCut cut = sampleCut();
  llm::Request next =
      continuationRequest(chatRequest(), answer.substr(0, cut.keepBytes), cut, ContinueMode::Completions);
  EXPECT_TRUE(next.messages.empty());
  ASSERT_TRUE(next.prompt.has_value());
  EXPECT_TRUE(next.prompt->starts_with("System:\nYou write PTX.\n\nUser:\nWrite k.\n\nAssistant:\nHere is the kernel."))
      << *next.prompt;
  EXPECT_NE(next.prompt->find("// ptxforge: stopped at line 10"), std::string::npos);
  EXPECT_TRUE(llm::validateRequest(next));
}

TEST(Continuation, ARawPromptGetsTheKeptTextAppended) {
  llm::Request raw;
  raw.prompt = "// write k\n";
  StreamCut cut = sampleCut();
  llm::Request next = continuationRequest(raw, kSlip.substr(0, kSlip.find("\tplus")), cut, ContinueMode::Prefill);
  ASSERT_TRUE(next.prompt.has_value());
  EXPECT_TRUE(next.prompt->starts_with("// write k\n.version 8.0\n"));
}

// --- the loop, with an in-process model that streams ----------------------

/// A model that streams its answer a few bytes per delta and honours
/// stopAfter; answers a continuation (a final assistant message) with the
/// rest of the correct module. `slips` answers in a row are slipped ones.
class StreamingModel final : public llm::Backend {
public:
  int slips = 1;
  int calls = 0;
  size_t bytesSent = 0; ///< over all calls: what "the server" generated
  bool failContinuation = false;
  std::vector<llm::Request> requests;

  std::string kind() const override { return "openai"; }
  std::string describe() const override { return "streaming test model"; }

protected:
  Result<llm::Completion> completeValid(const llm::Request &request, const std::string &,
                                        const llm::CallContext &context) override {
    requests.push_back(request);
    ++calls;
    std::string text;
    bool continuation = !request.messages.empty() && request.messages.back().role == llm::Role::Assistant;
    if (continuation && failContinuation) return makeError(ErrorKind::Io, "openai: HTTP 500");
    std::string target = calls <= slips ? fenced(kSlip) : fenced(kGood);
    if (continuation) {
      std::string prefill = request.messages.back().content;
      std::string kept = prefill.substr(0, prefill.rfind('\n'));
      EXPECT_TRUE(fenced(kGood).starts_with(kept)) << kept;
      target = target.substr(kept.size());
    }
    llm::Completion completion;
    for (size_t at = 0; at < target.size(); at += 4) {
      std::string delta = target.substr(at, 4);
      text += delta;
      bytesSent += delta.size();
      if (context.onText) context.onText(delta);
      if (context.stopAfter && context.stopAfter(text)) {
        completion.rawFinishReason = "cut";
        break;
      }
    }
    completion.text = text;
    completion.usage = {100, static_cast<int64_t>((text.size() + 3) / 4), true, ""};
    completion.latencyMs = 1;
    return completion;
  }
};

TEST(GuidedLoop, CutsContinuesAndJoinsACorrectAnswer) {
  StreamingModel model;
  std::vector<StreamSegment> segments;
  nlohmann::json summary;
  GuidedStreamOptions options{true, 3, ContinueMode::Prefill};
  Result<llm::Completion> answer = completeWithStreamChecks(
      model, chatRequest(), options, {}, [&](const StreamSegment &s) { segments.push_back(s); }, &summary);
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->text, fenced(kGood));
  ASSERT_EQ(segments.size(), 2u);
  ASSERT_TRUE(segments[0].cut.has_value());
  EXPECT_EQ(segments[0].cut->diagnostic.code, "unknown-instruction");
  EXPECT_EQ(segments[0].cutAt, fenced(kSlip).find("\tplus"));
  // The stream stopped at the end of the line that holds the error, not at the module's end.
  EXPECT_GE(segments[0].text.size(), fenced(kSlip).find("\tcvta"));
  EXPECT_LT(segments[0].text.size(), fenced(kSlip).find("\tcvta") + 4);
  EXPECT_FALSE(segments[1].cut.has_value());
  EXPECT_EQ(summary["requests"], 2);
  EXPECT_EQ(summary["cuts"], 1);
  EXPECT_EQ(summary["cut_codes"], nlohmann::json::array({"unknown-instruction"}));
  // Usage is the two requests'; the model generated less than two whole answers.
  EXPECT_EQ(answer->usage.promptTokens, 200);
  EXPECT_EQ(answer->usage.completionTokens, static_cast<int64_t>((segments[0].text.size() + 3) / 4 +
                                                                 (segments[1].text.size() + 3) / 4));
  EXPECT_LT(model.bytesSent, fenced(kSlip).size() + 40);
  EXPECT_TRUE(model.requests[0].stream);
  EXPECT_EQ(model.requests[1].messages.back().role, llm::Role::Assistant);
}

TEST(GuidedLoop, BacktracksAreBounded) {
  StreamingModel model;
  model.slips = 100; // it never learns
  std::vector<StreamSegment> segments;
  GuidedStreamOptions options{true, 2, ContinueMode::Prefill};
  Result<llm::Completion> answer =
      completeWithStreamChecks(model, chatRequest(), options, {}, [&](const StreamSegment &s) { segments.push_back(s); });
  ASSERT_TRUE(answer) << answer.error().message;
  ASSERT_EQ(segments.size(), 3u); // two cuts, then the answer as it is
  EXPECT_TRUE(segments[0].cut && segments[1].cut);
  EXPECT_FALSE(segments[2].cut);
  EXPECT_NE(answer->text.find("plus.s32"), std::string::npos); // the gate will judge it
  EXPECT_TRUE(answer->text.ends_with("```\n\nDone.\n"));
}

TEST(GuidedLoop, NoBacktracksMeansNoCut) {
  StreamingModel model;
  GuidedStreamOptions options{true, 0, ContinueMode::Prefill};
  Result<llm::Completion> answer = completeWithStreamChecks(model, chatRequest(), options, {}, nullptr);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->text, fenced(kSlip));
  EXPECT_EQ(model.calls, 1);
}

TEST(GuidedLoop, AFailedContinuationIsAnErrorAndItsSegmentIsReported) {
  StreamingModel model;
  model.failContinuation = true;
  std::vector<StreamSegment> segments;
  Result<llm::Completion> answer = completeWithStreamChecks(
      model, chatRequest(), GuidedStreamOptions{true, 3, ContinueMode::Prefill}, {},
      [&](const StreamSegment &s) { segments.push_back(s); });
  ASSERT_FALSE(answer);
  EXPECT_NE(answer.error().message.find("HTTP 500"), std::string::npos);
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_NE(segments[1].error.find("HTTP 500"), std::string::npos);
}

/// A model that answers in one piece (like exec or replay): cut after the fact.
class WholeAnswerModel final : public llm::Backend {
public:
  int calls = 0;
  std::string kind() const override { return "exec"; }
  std::string describe() const override { return "whole-answer test model"; }

protected:
  Result<llm::Completion> completeValid(const llm::Request &request, const std::string &,
                                        const llm::CallContext &) override {
    ++calls;
    llm::Completion completion;
    if (request.messages.back().role == llm::Role::Assistant) {
      std::string prefill = request.messages.back().content;
      completion.text = fenced(kGood).substr(prefill.rfind('\n'));
    } else {
      completion.text = fenced(kSlip);
    }
    return completion; // onText never called
  }
};

TEST(GuidedLoop, AnAnswerThatArrivesWholeIsCutAfterTheFact) {
  WholeAnswerModel model;
  std::vector<StreamSegment> segments;
  Result<llm::Completion> answer = completeWithStreamChecks(
      model, chatRequest(), GuidedStreamOptions{true, 3, ContinueMode::Prefill}, {},
      [&](const StreamSegment &s) { segments.push_back(s); });
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->text, fenced(kGood));
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0].text, fenced(kSlip)); // it was paid for whole
}

// --- the openai and anthropic backends end a stream they are told to ------

std::vector<std::string> openAiChunks(const std::string &text) {
  std::vector<std::string> events;
  for (size_t at = 0; at < text.size(); at += 4)
    events.push_back(llm::testing::dataEvent(
        nlohmann::json{{"model", "m"}, {"choices", {{{"index", 0}, {"delta", {{"content", text.substr(at, 4)}}}}}}}
            .dump()));
  events.push_back(llm::testing::dataEvent(
      nlohmann::json{{"model", "m"}, {"choices", {{{"index", 0}, {"delta", nlohmann::json::object()}, {"finish_reason", "stop"}}}}}
          .dump()));
  events.push_back(llm::testing::dataEvent(
      nlohmann::json{{"model", "m"}, {"choices", nlohmann::json::array()}, {"usage", {{"prompt_tokens", 50}, {"completion_tokens", 99}}}}
          .dump()));
  events.push_back("data: [DONE]\n\n");
  return events;
}

llm::BackendOptions serverOptions(const llm::testing::TestServer &server, std::string flavour = "vllm") {
  llm::BackendOptions o;
  o.baseUrl = server.url() + "/v1";
  o.connectTimeout = 2s;
  o.requestTimeout = 10s;
  o.maxRetries = 0;
  o.environment = [](const std::string &) -> std::optional<std::string> { return std::nullopt; };
  o.serverFlavour = std::move(flavour);
  return o;
}

TEST(GuidedServer, TheOpenAiStreamIsStoppedAtTheCutAndTheContinuationAsksToContinue) {
  llm::testing::TestServer server;
  server.post("/v1/chat/completions", [&](const httplib::Request &request, httplib::Response &response, int) {
    nlohmann::json body = nlohmann::json::parse(request.body);
    std::string text = fenced(kSlip);
    if (body["messages"].back()["role"] == "assistant") {
      std::string prefill = body["messages"].back()["content"];
      text = fenced(kGood).substr(prefill.rfind('\n'));
    }
    server.streamEvents(response, openAiChunks(text));
  });
  server.start();
  Result<std::unique_ptr<llm::Backend>> backend = llm::openBackend("openai:m", serverOptions(server));
  ASSERT_TRUE(backend) << backend.error().message;
  std::vector<StreamSegment> segments;
  Result<llm::Completion> answer = completeWithStreamChecks(
      **backend, chatRequest(), GuidedStreamOptions{true, 3, ContinueMode::Prefill}, {},
      [&](const StreamSegment &s) { segments.push_back(s); });
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->text, fenced(kGood));
  ASSERT_EQ(segments.size(), 2u);
  const llm::Completion &cut = *segments[0].completion;
  EXPECT_EQ(cut.rawFinishReason, "cut");
  EXPECT_LT(cut.text.size(), fenced(kSlip).find("\tst.global"));
  EXPECT_EQ(cut.usage.completionTokens, static_cast<int64_t>((cut.text.size() + 3) / 4)); // deltas received
  EXPECT_NE(cut.usage.note.find("cut"), std::string::npos);
  EXPECT_EQ(segments[1].completion->usage.promptTokens, 50); // the finished stream's own report
  std::vector<llm::testing::Received> received = server.received();
  ASSERT_EQ(received.size(), 2u);
  nlohmann::json first = nlohmann::json::parse(received[0].body), second = nlohmann::json::parse(received[1].body);
  EXPECT_TRUE(first["stream"]);
  EXPECT_FALSE(first.contains("continue_final_message"));
  EXPECT_EQ(second["continue_final_message"], true);
  EXPECT_EQ(second["add_generation_prompt"], false);
  EXPECT_EQ(second["messages"].back()["role"], "assistant");
}

TEST(GuidedServer, EachFlavourAsksToContinueInItsOwnFields) {
  for (std::string flavour : {"vllm", "vllm-legacy", "sglang", "llamacpp"}) {
    nlohmann::json body = nlohmann::json::object();
    llm::addContinueFinalMessage(body, flavour);
    if (flavour == "llamacpp") {
      EXPECT_TRUE(body.empty()) << flavour; // it continues a final assistant message by itself
    } else {
      EXPECT_EQ(body["continue_final_message"], true) << flavour;
      EXPECT_EQ(body.contains("add_generation_prompt"), flavour != "sglang") << flavour;
    }
  }
}

TEST(GuidedServer, CompletionsModeGoesToTheCompletionsEndpoint) {
  llm::testing::TestServer server;
  server.post("/v1/chat/completions", [&](const httplib::Request &, httplib::Response &response, int) {
    server.streamEvents(response, openAiChunks(fenced(kSlip)));
  });
  server.post("/v1/completions", [&](const httplib::Request &request, httplib::Response &response, int) {
    std::string prompt = nlohmann::json::parse(request.body)["prompt"];
    size_t start = prompt.rfind("\nAssistant:\n") + 12;
    std::string kept = prompt.substr(start, prompt.rfind('\n') - start);
    std::string rest = fenced(kGood).substr(kept.size());
    std::vector<std::string> events;
    for (size_t at = 0; at < rest.size(); at += 4)
      events.push_back(llm::testing::dataEvent(
          nlohmann::json{{"choices", {{{"index", 0}, {"text", rest.substr(at, 4)}}}}}.dump()));
    events.push_back("data: [DONE]\n\n");
    server.streamEvents(response, events);
  });
  server.start();
  Result<std::unique_ptr<llm::Backend>> backend = llm::openBackend("openai:m", serverOptions(server));
  ASSERT_TRUE(backend);
  Result<llm::Completion> answer = completeWithStreamChecks(
      **backend, chatRequest(), GuidedStreamOptions{true, 3, ContinueMode::Completions}, {}, nullptr);
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->text, fenced(kGood));
  std::vector<llm::testing::Received> received = server.received();
  ASSERT_EQ(received.size(), 2u);
  EXPECT_EQ(received[1].path, "/v1/completions");
}

TEST(GuidedServer, TheAnthropicStreamIsStoppedAndContinuedByPrefill) {
  llm::testing::TestServer server;
  server.post("/v1/messages", [&](const httplib::Request &request, httplib::Response &response, int) {
    nlohmann::json body = nlohmann::json::parse(request.body);
    std::string text = fenced(kSlip);
    if (body["messages"].back()["role"] == "assistant") {
      std::string prefill = body["messages"].back()["content"];
      text = fenced(kGood).substr(prefill.rfind('\n'));
    }
    std::vector<std::string> events = {llm::testing::namedEvent(
        "message_start", R"({"type": "message_start", "message": {"model": "claude-x", "usage": {"input_tokens": 70}}})")};
    for (size_t at = 0; at < text.size(); at += 4)
      events.push_back(llm::testing::namedEvent(
          "content_block_delta",
          nlohmann::json{{"type", "content_block_delta"}, {"delta", {{"type", "text_delta"}, {"text", text.substr(at, 4)}}}}
              .dump()));
    events.push_back(llm::testing::namedEvent(
        "message_delta", R"({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 77}})"));
    events.push_back(llm::testing::namedEvent("message_stop", R"({"type": "message_stop"})"));
    server.streamEvents(response, events);
  });
  server.start();
  llm::BackendOptions options = serverOptions(server);
  options.baseUrl = server.url();
  options.environment = [](const std::string &name) -> std::optional<std::string> {
    if (name == "ANTHROPIC_API_KEY") return "test-key-123456";
    return std::nullopt;
  };
  Result<std::unique_ptr<llm::Backend>> backend = llm::openBackend("anthropic:claude-x", options);
  ASSERT_TRUE(backend) << backend.error().message;
  std::vector<StreamSegment> segments;
  Result<llm::Completion> answer = completeWithStreamChecks(
      **backend, chatRequest(), GuidedStreamOptions{true, 3, ContinueMode::Prefill}, {},
      [&](const StreamSegment &s) { segments.push_back(s); });
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->text, fenced(kGood));
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0].completion->rawFinishReason, "cut");
  EXPECT_EQ(segments[0].completion->usage.promptTokens, 70); // message_start reports it before the cut
  nlohmann::json second = nlohmann::json::parse(server.received()[1].body);
  EXPECT_EQ(second["messages"].back()["role"], "assistant");
  std::string prefill = second["messages"].back()["content"];
  EXPECT_FALSE(std::isspace(static_cast<unsigned char>(prefill.back()))); // the API refuses trailing blanks
}

TEST(GuidedOptions, ARunRecordsItsStreamingChecksAndAResumeReadsThemBack) {
  SolveOptions plain;
  EXPECT_FALSE(optionsToJson(plain).contains("guided_stream")); // runs without them record as before
  SolveOptions guided;
  guided.guidedStream = {true, 5, ContinueMode::Completions};
  nlohmann::json recorded = optionsToJson(guided);
  EXPECT_EQ(recorded["guided_stream"], nlohmann::json({{"max_backtracks", 5}, {"continue", "completions"}}));
  Result<SolveOptions> back = optionsFromJson(recorded);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(back->guidedStream.enabled);
  EXPECT_EQ(back->guidedStream.maxBacktracks, 5);
  EXPECT_EQ(back->guidedStream.continueMode, ContinueMode::Completions);
  recorded["guided_stream"]["continue"] = "telepathy";
  EXPECT_FALSE(optionsFromJson(recorded));
  EXPECT_EQ(parseContinueMode("prefill"), ContinueMode::Prefill);
  EXPECT_FALSE(parseContinueMode("Prefill"));
}

// --- the store --------------------------------------------------------------

class StreamStore : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("ptxforge-stream-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path() const { return (dir_ / "runs.db").string(); }
  void raw(const char *sql) {
    sqlite3 *db = nullptr;
    ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  /// A run with one prompt; its id.
  int64_t addPrompt(store::Store &store) {
    store::RunRecord run;
    run.task = "k";
    run.model = "exec:m";
    int64_t runId = store.createRun(run).value();
    store::PromptRecord prompt;
    prompt.runId = runId;
    prompt.round = 1;
    prompt.kind = "initial";
    prompt.requestHash = "h";
    return store.addPrompt(prompt).value();
  }
  std::filesystem::path dir_;
};

TEST_F(StreamStore, SegmentsRoundTripAndLoadWithTheirAttempt) {
  auto opened = store::Store::open(path());
  ASSERT_TRUE(opened) << opened.error().message;
  store::Store &store = **opened;
  int64_t promptId = addPrompt(store);
  StreamCut cut = sampleCut();
  store::StreamSegmentRecord first{promptId, 0, "stream", "h0", "text0", 57, cutToJson(cut), {{"usage", 1}}, ""};
  store::StreamSegmentRecord second{promptId, 1, "prefill", "h1", "text1", std::nullopt, nullptr, {}, ""};
  ASSERT_TRUE(store.putStreamSegment(first));
  ASSERT_TRUE(store.putStreamSegment(second));
  auto segments = store.streamSegments(promptId);
  ASSERT_TRUE(segments);
  ASSERT_EQ(segments->size(), 2u);
  EXPECT_EQ((*segments)[0].cutAt, 57);
  EXPECT_EQ((*segments)[0].diagnostic["code"], "unknown-instruction");
  EXPECT_EQ((*segments)[1].mode, "prefill");
  EXPECT_FALSE((*segments)[1].cutAt.has_value());
  auto data = store.load(1);
  ASSERT_TRUE(data) << data.error().message;
  ASSERT_EQ(data->attempts.size(), 1u);
  EXPECT_EQ(data->attempts[0].segments.size(), 2u);
  // A first segment again (a resumed run asks anew) drops the old continuation.
  ASSERT_TRUE(store.putStreamSegment(first));
  EXPECT_EQ(store.streamSegments(promptId)->size(), 1u);
  // eval merge copies them with the attempt.
  store::RunRecord other;
  other.task = "k";
  other.model = "exec:m";
  int64_t otherRun = store.createRun(other).value();
  ASSERT_TRUE(store.copyAttempts(otherRun, data->attempts));
  auto copied = store.load(otherRun);
  ASSERT_TRUE(copied);
  ASSERT_EQ(copied->attempts.size(), 1u);
  EXPECT_EQ(copied->attempts[0].segments.size(), 2u);
}

TEST_F(StreamStore, AStoreWrittenBeforeSegmentsReadsAndGainsTheTable) {
  {
    auto opened = store::Store::open(path());
    ASSERT_TRUE(opened);
    addPrompt(**opened);
  }
  raw("DROP TABLE stream_segments;"); // as an older build left it (same schema version)
  {
    auto reading = store::Store::openReadOnly(path());
    ASSERT_TRUE(reading) << reading.error().message;
    auto data = (*reading)->load(1);
    ASSERT_TRUE(data) << data.error().message;
    EXPECT_TRUE(data->attempts[0].segments.empty());
    auto none = (*reading)->streamSegments(1);
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
  }
  auto writing = store::Store::open(path());
  ASSERT_TRUE(writing) << writing.error().message;
  EXPECT_TRUE((*writing)->putStreamSegment({1, 0, "stream", "h", "t", std::nullopt, nullptr, {}, ""}));
  EXPECT_EQ((*writing)->streamSegments(1)->size(), 1u);
}

} // namespace
} // namespace ptxforge::solve
