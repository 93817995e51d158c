// The suite scan keeps going past broken task folders (issue 13): every
// broken one is reported with its own error and every good one is loaded,
// whatever kind of file sits where a task's files should be.
#include "tasks/TaskSpec.h"

#include "TaskTestSupport.h"

#include <gtest/gtest.h>

#include <map>
#include <sys/stat.h>

namespace ptxforge::tasks {
namespace {

using namespace fixtures;

std::string renamed(const std::string &name) {
  std::string toml = kSaxpyToml;
  toml.replace(toml.find("name = \"saxpy\""), 14, "name = \"" + name + "\"");
  return toml;
}

TEST(SuiteScan, EveryBrokenTaskIsReportedAndEveryGoodOneKept) {
  TempDir dir;
  // Folders sort as: a_good, b_fifo, c_zero, d_dir, e_toml, f_good, g_nested/h_good.
  writeTask(dir.path(), "a_good", renamed("first"));
  std::filesystem::create_directories(dir.path() / "b_fifo");
  ASSERT_EQ(::mkfifo((dir.path() / "b_fifo" / "task.toml").c_str(), 0644), 0); // would block a reader for ever
  writeFile(dir.path() / "b_fifo" / "reference.cu", kSaxpyReference);
  writeTask(dir.path(), "c_zero", renamed("zero"), "");
  std::filesystem::create_symlink("/dev/zero", dir.path() / "c_zero" / "reference.cu"); // would never end
  std::filesystem::create_directories(dir.path() / "d_dir" / "task.toml");
  writeTask(dir.path(), "e_toml", "name = [unclosed\n");
  writeTask(dir.path(), "f_good", renamed("second"));
  writeTask(dir.path() / "g_nested", "h_good", renamed("third"));

  Result<Suite> suite = loadSuite({dir.path()});
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  std::vector<std::string> names;
  for (const TaskSpec &task : suite->tasks) names.push_back(task.name);
  EXPECT_EQ(names, (std::vector<std::string>{"first", "second", "third"}));

  std::map<std::string, std::string> errors;
  for (const TaskLoadError &broken : suite->errors) errors[broken.folder.filename().string()] = broken.error.message;
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_NE(errors["b_fifo"].find("task.toml: not a regular file"), std::string::npos) << errors["b_fifo"];
  EXPECT_NE(errors["c_zero"].find("reference.cu: not a regular file"), std::string::npos) << errors["c_zero"];
  EXPECT_NE(errors["d_dir"].find("task.toml: not a regular file"), std::string::npos) << errors["d_dir"];
  EXPECT_NE(errors["e_toml"].find("e_toml/task.toml:1:"), std::string::npos) << errors["e_toml"];
}

} // namespace
} // namespace ptxforge::tasks
