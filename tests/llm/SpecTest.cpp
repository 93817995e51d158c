// Choosing a backend: spec strings, environment twins, the option table and
// the factory's early checks.
#include "llm/BackendSpec.h"

#include <gtest/gtest.h>

#include <map>

namespace ptxforge::llm {
namespace {

EnvironmentLookup fakeEnvironment(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const std::string &name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  };
}

TEST(BackendSpec, SplitsAtTheFirstColon) {
  auto spec = parseBackendSpec("openai:llama3.1:8b");
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->backend, "openai");
  EXPECT_EQ(spec->name, "llama3.1:8b");
  EXPECT_EQ(parseBackendSpec("exec:./model.sh --fast")->name, "./model.sh --fast");
  EXPECT_EQ(parseBackendSpec("replay:runs/a.jsonl")->backend, "replay");
}

TEST(BackendSpec, ExplainsBadSpecs) {
  EXPECT_EQ(parseBackendSpec("gpt-4o").error().message,
            "model spec `gpt-4o` is not BACKEND:NAME (e.g. openai:gpt-4o); backends: openai, anthropic, exec, "
            "replay, batch");
  EXPECT_EQ(parseBackendSpec("gemini:pro").error().message,
            "unknown model backend `gemini` in `gemini:pro`; backends: openai, anthropic, exec, replay, batch");
  EXPECT_EQ(parseBackendSpec("exec:").error().message, "model spec `exec:` needs a command, e.g. exec:./my-model.sh");
  EXPECT_EQ(parseBackendSpec("openai: ").error().kind, ErrorKind::InvalidInput);
}

TEST(BackendOptions, EnvironmentTwinsOverrideDefaults) {
  auto options = optionsFromEnvironment(fakeEnvironment({{"PTXFORGE_BASE_URL", "http://gpu-box:8000/v1"},
                                                         {"PTXFORGE_REQUEST_TIMEOUT", "2.5"},
                                                         {"PTXFORGE_STALL_TIMEOUT", "30"},
                                                         {"PTXFORGE_RETRIES", "0"},
                                                         {"PTXFORGE_RECORD", "run.jsonl"},
                                                         {"PTXFORGE_BATCH_RESULTS", "out1.jsonl:out2.jsonl"},
                                                         {"PTXFORGE_API_KEY_ENV", "TOGETHER_API_KEY"}}));
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_EQ(options->baseUrl, "http://gpu-box:8000/v1");
  EXPECT_EQ(options->requestTimeout.count(), 2500);
  EXPECT_EQ(options->stallTimeout.count(), 30000);
  EXPECT_EQ(options->connectTimeout.count(), 10000); // default kept
  EXPECT_EQ(options->maxRetries, 0);
  EXPECT_EQ(options->recordPath, "run.jsonl");
  EXPECT_EQ(options->batchResults, (std::vector<std::string>{"out1.jsonl", "out2.jsonl"}));
  EXPECT_EQ(options->apiKeyVariable, "TOGETHER_API_KEY");
}

TEST(BackendOptions, BadValuesNameTheVariable) {
  EXPECT_EQ(optionsFromEnvironment(fakeEnvironment({{"PTXFORGE_RETRIES", "many"}})).error().message,
            "PTXFORGE_RETRIES=many: expected an integer 0..100");
  EXPECT_EQ(optionsFromEnvironment(fakeEnvironment({{"PTXFORGE_CONNECT_TIMEOUT", "10s"}})).error().message,
            "PTXFORGE_CONNECT_TIMEOUT=10s: expected a number of seconds, e.g. 30 or 0.5");
}

TEST(BackendOptions, ModelSpecFromEnvironment) {
  EXPECT_EQ(modelSpecFromEnvironment(fakeEnvironment({{"PTXFORGE_MODEL", "openai:gpt-4o"}})), "openai:gpt-4o");
  EXPECT_FALSE(modelSpecFromEnvironment(fakeEnvironment({{"PTXFORGE_MODEL", ""}})));
  EXPECT_FALSE(modelSpecFromEnvironment(fakeEnvironment({})));
}

TEST(CreateBackend, ChecksWhatItCanUpFront) {
  BackendOptions options;
  options.environment = fakeEnvironment({});
  options.baseUrl = "ftp://example/v1";
  EXPECT_EQ(openBackend("openai:m", options).error().message,
            "openai: base URL `ftp://example/v1` must start with http:// or https://");

  options.baseUrl.clear();
  auto openai = openBackend("openai:gpt-4o", options);
  ASSERT_TRUE(openai);
  EXPECT_EQ((*openai)->describe(), "openai:gpt-4o at https://api.openai.com/v1");

  options.environment = fakeEnvironment({{"OPENAI_BASE_URL", "http://localhost:11434/v1/"}});
  EXPECT_EQ((*openBackend("openai:llama3", options))->describe(), "openai:llama3 at http://localhost:11434/v1");

  options.environment = fakeEnvironment({{"MY_KEY", "k"}});
  options.apiKeyVariable = "MY_KEY";
  auto anthropic = openBackend("anthropic:claude", options);
  ASSERT_TRUE(anthropic) << anthropic.error().message;
  EXPECT_EQ((*anthropic)->describe(), "anthropic:claude at https://api.anthropic.com");
}

} // namespace
} // namespace ptxforge::llm
