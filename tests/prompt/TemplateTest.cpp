// The strict {{name}} renderer and the template folder.
#include "prompt/Template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace ptxforge;
using namespace ptxforge::prompt;

TEST(Template, RendersPlaceholdersVerbatim) {
  Template tmpl{"t", "t.md", "Kernel {{kernel}} for {{ arch }}.\nBody: {{body}}\n"};
  auto got = renderTemplate(tmpl, {{"kernel", "saxpy"}, {"arch", "sm_90"}, {"body", "{{not_a_placeholder}} { %f1 }"}});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(*got, "Kernel saxpy for sm_90.\nBody: {{not_a_placeholder}} { %f1 }\n");
}

TEST(Template, UnknownPlaceholderNamesFileAndLine) {
  Template tmpl{"zero-shot", "prompts/zero-shot.md", "line one\nline two {{kernal}}\n"};
  auto got = renderTemplate(tmpl, {{"kernel", "saxpy"}, {"arch", "sm_90"}});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().kind, ErrorKind::InvalidInput);
  EXPECT_EQ(got.error().message.rfind("prompts/zero-shot.md:2: unknown placeholder `{{kernal}}`", 0), 0u) << got.error().message;
  EXPECT_NE(got.error().message.find("known here: arch, kernel"), std::string::npos);
}

TEST(Template, SyntaxErrors) {
  auto unclosed = renderTemplate({"t", "t.md", "a\nb {{kernel\n}}"}, {{"kernel", "k"}});
  ASSERT_FALSE(unclosed.ok());
  EXPECT_NE(unclosed.error().message.find("t.md:2: unclosed"), std::string::npos) << unclosed.error().message;
  auto logic = renderTemplate({"t", "t.md", "{{#if repair}}"}, {});
  ASSERT_FALSE(logic.ok());
  EXPECT_NE(logic.error().message.find("malformed placeholder"), std::string::npos);
  auto empty = renderTemplate({"t", "t.md", "{{}}"}, {});
  EXPECT_FALSE(empty.ok());
}

TEST(Template, LoadsTheRepositoryTemplates) {
  auto set = loadTemplates(defaultPromptsDir());
  ASSERT_TRUE(set.ok()) << set.error().message;
  for (const std::string &name : templateNames()) {
    const Template *tmpl = set->find(name);
    ASSERT_NE(tmpl, nullptr) << name;
    EXPECT_FALSE(tmpl->text.empty()) << name;
  }
}

TEST(Template, MissingFolderOrFileIsAnIoError) {
  auto missing = loadTemplates("/nonexistent/prompts");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::Io);

  std::filesystem::path dir = std::filesystem::temp_directory_path() / "ptxforge-prompt-test-partial";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "system.md") << "hello";
  auto partial = loadTemplates(dir);
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.error().message.find("zero-shot.md"), std::string::npos) << partial.error().message;
  std::filesystem::remove_all(dir);
}
