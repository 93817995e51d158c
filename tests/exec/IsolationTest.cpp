// Behaviour without a GPU: createGpuExecutor fails cleanly with "no GPU: ...",
// and the worker's watchdog kills a worker that does not answer in time (the
// worker's test-only sleep/exit requests stand in for a hung or dying kernel).
#include "exec/GpuExecutor.h"
#include "exec/IsolatedExecutor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

using namespace ptxforge;
using namespace ptxforge::exec;
using protocol::Op;
using protocol::Request;

namespace {

IsolatedOptions testWorkerOptions() {
  IsolatedOptions options;
  options.workerPath = PTXFORGE_EXEC_TEST_WORKER;
  return options;
}

/// Turns the worker's test requests on for the scope of a test (inherited by
/// the children it spawns).
struct TestRequestsEnabled {
  TestRequestsEnabled() { ::setenv("PTXFORGE_EXEC_WORKER_TEST", "1", 1); }
  ~TestRequestsEnabled() { ::unsetenv("PTXFORGE_EXEC_WORKER_TEST"); }
};

Request sleepRequest(uint32_t milliseconds) {
  Request request;
  request.op = Op::TestSleep;
  request.value = milliseconds;
  return request;
}

} // namespace

TEST(NoDriver, CreateGpuExecutorReturnsNoGpuError) {
  Result<std::unique_ptr<Executor>> executor = createGpuExecutor();
  if (executor)
    GTEST_SKIP() << "a GPU is present (" << (*executor)->properties().name << "); the no-driver path is not taken";
  EXPECT_EQ(executor.error().message.rfind("no GPU: ", 0), 0u) << executor.error().message;
  EXPECT_EQ(execErrorKindOf(executor.error()), ExecErrorKind::NoDevice);
  EXPECT_EQ(executor.error().kind, ErrorKind::ToolMissing);
}

TEST(NoDriver, MissingDriverLibraryIsNoGpu) {
  ::setenv("PTXFORGE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  Result<std::unique_ptr<Executor>> executor = createGpuExecutor();
  ::unsetenv("PTXFORGE_LIBCUDA");
  ASSERT_FALSE(executor);
  EXPECT_EQ(executor.error().message.rfind("no GPU: cannot load the CUDA driver (/nonexistent/libcuda.so.1)", 0), 0u)
      << executor.error().message;
}

TEST(NoDriver, IsolatedExecutorPassesTheWorkersNoGpuError) {
  Result<std::unique_ptr<Executor>> executor = createIsolatedExecutor(testWorkerOptions());
  if (executor)
    GTEST_SKIP() << "a GPU is present; the no-driver path is not taken";
  EXPECT_EQ(executor.error().message.rfind("no GPU: ", 0), 0u) << executor.error().message;
  EXPECT_EQ(execErrorKindOf(executor.error()), ExecErrorKind::NoDevice);
}

TEST(NoDriver, MissingWorkerIsAnError) {
  IsolatedOptions options;
  options.workerPath = "/nonexistent/ptxforge_exec_worker";
  Result<std::unique_ptr<Executor>> executor = createIsolatedExecutor(options);
  ASSERT_FALSE(executor);
  EXPECT_NE(executor.error().message.find("ptxforge_exec_worker not found"), std::string::npos);
}

TEST(Watchdog, KillsAWorkerThatMissesItsDeadline) {
  TestRequestsEnabled enabled;
  WorkerProcess worker(testWorkerOptions());
  Result<protocol::Response> quick = worker.call(sleepRequest(0), 10'000);
  ASSERT_TRUE(quick) << quick.error().message;
  EXPECT_EQ(quick->status, ExecErrorKind::None);
  const pid_t first = worker.pid();

  const auto start = std::chrono::steady_clock::now();
  Result<protocol::Response> hung = worker.call(sleepRequest(60'000), 300);
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(hung);
  EXPECT_EQ(execErrorKindOf(hung.error()), ExecErrorKind::Timeout) << hung.error().message;
  EXPECT_NE(hung.error().message.find("did not finish within 300 ms"), std::string::npos) << hung.error().message;
  EXPECT_NE(hung.error().message.find("buffers, modules and kernels are lost"), std::string::npos);
  EXPECT_LT(waited, std::chrono::seconds(10)); // killed, not waited out
  EXPECT_FALSE(worker.running());

  // The next request starts a fresh worker and is served normally.
  Result<protocol::Response> after = worker.call(sleepRequest(0), 10'000);
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(worker.starts(), 2u);
  EXPECT_NE(worker.pid(), first);
}

TEST(Watchdog, AWorkerThatDiesIsCrashedAndReplaced) {
  TestRequestsEnabled enabled;
  WorkerProcess worker(testWorkerOptions());
  Request exitRequest;
  exitRequest.op = Op::TestExit;
  exitRequest.value = 7;
  Result<protocol::Response> died = worker.call(exitRequest, 10'000);
  ASSERT_FALSE(died);
  EXPECT_EQ(execErrorKindOf(died.error()), ExecErrorKind::Crashed) << died.error().message;
  EXPECT_NE(died.error().message.find("exited with status 7"), std::string::npos) << died.error().message;
  EXPECT_FALSE(worker.running());

  Result<protocol::Response> after = worker.call(sleepRequest(1), 10'000);
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(worker.starts(), 2u);
}

TEST(Watchdog, TestRequestsAreRefusedUnlessEnabled) {
  ::unsetenv("PTXFORGE_EXEC_WORKER_TEST");
  WorkerProcess worker(testWorkerOptions());
  Result<protocol::Response> answer = worker.call(sleepRequest(0), 10'000);
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->status, ExecErrorKind::InvalidArgument);
  EXPECT_TRUE(worker.running()); // an ordinary error answer keeps the worker
}
