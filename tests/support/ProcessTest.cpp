// The process runner: exit status, stdin, output caps, deadline, cancellation,
// process groups. Children are /bin/sh scripts.
#include "support/Process.h"

#include <gtest/gtest.h>

#include <csignal>
#include <thread>

namespace ptxforge {
namespace {

using namespace std::chrono_literals;

Result<ProcessResult> shell(const std::string &script, ProcessOptions options = {}) {
  return runProcess({"/bin/sh", "-c", script}, options);
}

TEST(Process, ReportsExitStatusAndBothStreams) {
  Result<ProcessResult> ran = shell("echo out; echo err >&2; exit 3");
  ASSERT_TRUE(ran) << render(ran.error());
  EXPECT_EQ(ran->exitCode, 3);
  EXPECT_EQ(ran->standardOutput, "out\n");
  EXPECT_EQ(ran->standardError, "err\n");
  EXPECT_FALSE(ran->timedOut);
  EXPECT_FALSE(ran->outputTooLarge);
}

TEST(Process, ASignalIs128PlusItsNumber) {
  Result<ProcessResult> ran = shell("kill -TERM $$");
  ASSERT_TRUE(ran) << render(ran.error());
  EXPECT_EQ(ran->exitCode, 128 + SIGTERM);
}

TEST(Process, FeedsStdinAndClosesIt) {
  ProcessOptions options;
  options.standardInput = std::string(200000, 'x') + "\nend\n"; // more than a pipe holds
  Result<ProcessResult> ran = shell("wc -c", options);
  ASSERT_TRUE(ran) << render(ran.error());
  EXPECT_EQ(ran->exitCode, 0);
  EXPECT_EQ(std::stoul(ran->standardOutput), 200005u);
  // No input: stdin is at EOF at once, so `cat` ends.
  Result<ProcessResult> empty = shell("cat; echo done");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->standardOutput, "done\n");
}

TEST(Process, ADeadlineKillsTheChildAndWhatItStarted) {
  ProcessOptions options;
  options.timeout = 300ms;
  auto start = std::chrono::steady_clock::now();
  // The grandchild holds stdout open; the group kill takes it down too.
  Result<ProcessResult> ran = shell("sleep 30 & sleep 30", options);
  ASSERT_TRUE(ran) << render(ran.error());
  EXPECT_TRUE(ran->timedOut);
  EXPECT_EQ(ran->exitCode, 128 + SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(Process, StdoutOverTheCapStopsTheRun) {
  ProcessOptions options;
  options.maxStdoutBytes = 1000;
  Result<ProcessResult> ran = shell("yes", options);
  ASSERT_TRUE(ran) << render(ran.error());
  EXPECT_TRUE(ran->outputTooLarge);
  EXPECT_LE(ran->standardOutput.size(), 1000u);
}

TEST(Process, StderrKeepsItsTail) {
  ProcessOptions options;
  options.stderrTailBytes = 4;
  Result<ProcessResult> ran = shell("echo 0123456789 >&2", options);
  ASSERT_TRUE(ran);
  EXPECT_EQ(ran->standardError, "789\n");
}

TEST(Process, StopRequestCancels) {
  std::stop_source source;
  ProcessOptions options;
  options.stop = source.get_token();
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    source.request_stop();
  });
  Result<ProcessResult> ran = shell("sleep 30", options);
  stopper.join();
  ASSERT_TRUE(ran);
  EXPECT_TRUE(ran->cancelled);
}

TEST(Process, AMissingProgramIsASpawnError) {
  Result<ProcessResult> ran = runProcess({"/nonexistent/program"});
  ASSERT_FALSE(ran);
  EXPECT_EQ(ran.error().code, "spawn-failed");
  EXPECT_NE(ran.error().message.find("/nonexistent/program"), std::string::npos);
  ProcessOptions onPath;
  onPath.searchPath = true;
  Result<ProcessResult> viaPath = runProcess({"sh", "-c", "exit 0"}, onPath);
  ASSERT_TRUE(viaPath) << render(viaPath.error());
  EXPECT_EQ(viaPath->exitCode, 0);
}

TEST(Process, FindOnPath) {
  EXPECT_TRUE(findOnPath("sh").has_value());
  EXPECT_FALSE(findOnPath("ptxforge-no-such-program").has_value());
  EXPECT_TRUE(isExecutableFile("/bin/sh"));
  EXPECT_FALSE(isExecutableFile("/"));
}

} // namespace
} // namespace ptxforge
