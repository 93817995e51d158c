// `--guided` on the openai backend: against a fake OpenAI-compatible server on
// loopback (tests/llm/TestServer.h), each server flavour's request carries the
// PTX grammar in that server's field, chat and raw-prompt requests alike, and
// a request without --guided carries none.
#include "llm/BackendSpec.h"
#include "llm/OpenAiBackend.h"
#include "ptx/Grammar.h"

#include "TestServer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ptxforge::llm {
namespace {

using testing::TestServer;
using namespace std::chrono_literals;

std::string chatAnswer() {
  return nlohmann::json{{"model", "m"},
                        {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", "ret;"}}},
                                      {"finish_reason", "stop"}}}}}
      .dump();
}

std::string completionAnswer() {
  return nlohmann::json{{"model", "m"}, {"choices", {{{"index", 0}, {"text", "ret;"}, {"finish_reason", "stop"}}}}}
      .dump();
}

BackendOptions options(const TestServer &server, std::string flavour, std::string grammar) {
  BackendOptions o;
  o.baseUrl = server.url() + "/v1";
  o.connectTimeout = 2s;
  o.requestTimeout = 10s;
  o.maxRetries = 0;
  o.environment = [](const std::string &) -> std::optional<std::string> { return std::nullopt; };
  o.serverFlavour = std::move(flavour);
  o.guidedGrammar = std::move(grammar);
  return o;
}

/// The JSON bodies the server received for one chat and one raw-prompt request.
std::vector<nlohmann::json> sentBodies(const std::string &flavour, const std::string &grammar) {
  TestServer server;
  server.post("/v1/chat/completions", [](const httplib::Request &, httplib::Response &response, int) {
    response.set_content(chatAnswer(), "application/json");
  });
  server.post("/v1/completions", [](const httplib::Request &, httplib::Response &response, int) {
    response.set_content(completionAnswer(), "application/json");
  });
  server.start();
  Result<std::unique_ptr<Backend>> backend = openBackend("openai:m", options(server, flavour, grammar));
  EXPECT_TRUE(backend) << backend.error().message;
  if (!backend) return {};
  Request chat;
  chat.messages = {{Role::User, "write PTX"}};
  Request raw;
  raw.prompt = ".version 8.0\n";
  EXPECT_TRUE((*backend)->complete(chat, {}));
  EXPECT_TRUE((*backend)->complete(raw, {}));
  std::vector<nlohmann::json> bodies;
  for (const testing::Received &received : server.received()) bodies.push_back(nlohmann::json::parse(received.body));
  return bodies;
}

std::string ptxGrammar(ptx::GrammarFormat format) {
  ptx::GrammarOptions o;
  o.format = format;
  Result<std::string> text = ptx::generateGrammar(o);
  EXPECT_TRUE(text);
  return text ? text.value() : std::string();
}

struct Flavour {
  const char *name;
  std::vector<std::string> path; ///< where the grammar goes in the body
};

class GuidedFlavour : public ::testing::TestWithParam<Flavour> {};

TEST_P(GuidedFlavour, SendsTheGrammarInTheServersField) {
  const Flavour &flavour = GetParam();
  std::string grammar = ptxGrammar(std::string(flavour.name) == "llamacpp" ? ptx::GrammarFormat::Gbnf
                                                                            : ptx::GrammarFormat::Ebnf);
  ASSERT_FALSE(grammar.empty());
  std::vector<nlohmann::json> bodies = sentBodies(flavour.name, grammar);
  ASSERT_EQ(bodies.size(), 2u);
  for (const nlohmann::json &body : bodies) {
    const nlohmann::json *at = &body;
    for (const std::string &key : flavour.path) {
      ASSERT_TRUE(at->contains(key)) << flavour.name << ": no " << key << " in " << body.dump().substr(0, 200);
      at = &(*at)[key];
    }
    EXPECT_EQ(at->get<std::string>(), grammar);
    // Only that field: no other flavour's.
    size_t fields = body.contains("structured_outputs") + body.contains("guided_grammar") + body.contains("ebnf") +
                    body.contains("grammar");
    EXPECT_EQ(fields, 1u) << body.dump().substr(0, 200);
  }
}

INSTANTIATE_TEST_SUITE_P(Flavours, GuidedFlavour,
                         ::testing::Values(Flavour{"vllm", {"structured_outputs", "grammar"}},
                                           Flavour{"vllm-legacy", {"guided_grammar"}}, Flavour{"sglang", {"ebnf"}},
                                           Flavour{"llamacpp", {"grammar"}}),
                         [](const auto &info) {
                           std::string name = info.param.name;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(Guided, NoGrammarWithoutGuided) {
  for (const nlohmann::json &body : sentBodies("llamacpp", "")) {
    EXPECT_FALSE(body.contains("grammar"));
    EXPECT_FALSE(body.contains("structured_outputs"));
  }
}

TEST(Guided, UnknownFlavourAndOtherBackendsAreRefused) {
  BackendOptions o;
  o.serverFlavour = "tgi";
  o.guidedGrammar = "root ::= \"x\"";
  o.environment = [](const std::string &) -> std::optional<std::string> { return std::nullopt; };
  Result<std::unique_ptr<Backend>> unknown = openBackend("openai:m", o);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("tgi"), std::string::npos);
  o.serverFlavour = "vllm";
  Result<std::unique_ptr<Backend>> exec = openBackend("replay:/nonexistent.jsonl", o);
  ASSERT_FALSE(exec);
  EXPECT_NE(exec.error().message.find("openai backend"), std::string::npos);
  EXPECT_STREQ(defaultGrammarFormat("llamacpp"), "gbnf");
  EXPECT_STREQ(defaultGrammarFormat("sglang"), "ebnf");
}

} // namespace
} // namespace ptxforge::llm
