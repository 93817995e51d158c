// Prompt goldens: each tests/prompt/golden/*.prompt file names a built-in task,
// the strategies and (optionally) a reference PTX file in its header, and holds
// below it the exact parts list and messages buildPrompt makes from the
// repository's prompts/ templates. Regenerate with
// `PTXFORGE_UPDATE_GOLDEN=1 ctest -R '^prompt\.golden'` and review the diff.
#include "prompt/PromptBuilder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace ptxforge;
using namespace ptxforge::prompt;

namespace {

const std::filesystem::path kGoldenDir = PTXFORGE_PROMPT_GOLDEN_DIR;
constexpr std::string_view kOutputMarker = "=== parts\n";

std::string readFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> goldenNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(kGoldenDir, ec))
    if (entry.path().extension() == ".prompt") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// The header's `# key: value` lines.
std::map<std::string, std::string> headerOf(std::string_view header) {
  std::map<std::string, std::string> keys;
  std::istringstream lines{std::string(header)};
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# ", 0) != 0) continue;
    size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    keys[line.substr(2, colon - 2)] = line.substr(colon + 2);
  }
  return keys;
}

class PromptGolden : public testing::TestWithParam<std::string> {};

TEST_P(PromptGolden, MatchesTheFile) {
  std::filesystem::path path = kGoldenDir / (GetParam() + ".prompt");
  std::string text = readFile(path);
  size_t split = text.find(kOutputMarker);
  std::string header = text.substr(0, split == std::string::npos ? text.size() : split);
  std::map<std::string, std::string> keys = headerOf(header);
  ASSERT_TRUE(keys.count("task") && keys.count("strategies"))
      << path << ": the header needs `# task: NAME` and `# strategies: LIST`";

  auto task = tasks::loadTask(tasks::builtinTasksDir() / keys["task"]);
  ASSERT_TRUE(task.ok()) << task.error().message;
  auto strategies = parseStrategies(keys["strategies"]);
  ASSERT_TRUE(strategies.ok()) << strategies.error().message;
  std::string referencePtx;
  if (keys.count("reference-ptx")) referencePtx = readFile(kGoldenDir / keys["reference-ptx"]);
  auto templates = loadTemplates(std::filesystem::path(PTXFORGE_SOURCE_DIR) / "prompts");
  ASSERT_TRUE(templates.ok()) << templates.error().message;

  PromptInput input(*task, "sm_90", referencePtx);
  auto request = buildPrompt(input, *strategies, *templates);
  ASSERT_TRUE(request.ok()) << request.error().message;
  std::string output(kOutputMarker);
  for (const std::string &part : promptParts(input, *strategies)) output += part + "\n";
  for (const llm::Message &message : request->messages)
    output += std::string("=== ") + (message.role == llm::Role::System ? "system" : "user") + "\n" + message.content +
              (message.content.ends_with('\n') ? "" : "\n");

  if (const char *update = std::getenv("PTXFORGE_UPDATE_GOLDEN"); update && std::string_view(update) == "1") {
    std::ofstream(path, std::ios::binary) << header << output;
    GTEST_SKIP() << "wrote " << path;
  }
  EXPECT_EQ(text.substr(header.size()), output) << "regenerate with PTXFORGE_UPDATE_GOLDEN=1 and review the diff";
}

INSTANTIATE_TEST_SUITE_P(Files, PromptGolden, testing::ValuesIn(goldenNames()),
                         [](const testing::TestParamInfo<std::string> &info) {
                           std::string name = info.param;
                           for (char &c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

} // namespace
