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
  EXPECT_EQ(render(executor.error()).rfind("no-gpu: ", 0), 0u) << render(executor.error());
  EXPECT_EQ(execErrorKindOf(executor.error()), ExecErrorKind::NoDevice);
  EXPECT_EQ(executor.error().kind, ErrorKind::ToolMissing);
}

TEST(NoDriver, MissingDriverLibraryIsNoGpu) {
  ::setenv("PTXFORGE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  Result<std::unique_ptr<Executor>> executor = createGpuExecutor();
  ::unsetenv("PTXFORGE_LIBCUDA");
  ASSERT_FALSE(executor);
  EXPECT_EQ(execErrorKindOf(executor.error()), ExecErrorKind::NoDevice);
  EXPECT_EQ(executor.error().message.rfind("cannot load the CUDA driver (/nonexistent/libcuda.so.1)", 0), 0u)
      << executor.error().message;
}

TEST(NoDriver, IsolatedExecutorPassesTheWorkersNoGpuError) {
  Result<std::unique_ptr<Executor>> executor = createIsolatedExecutor(testWorkerOptions());
  if (executor)
    GTEST_SKIP() << "a GPU is present; the no-driver path is not taken";
  EXPECT_EQ(render(executor.error()).rfind("no-gpu: ", 0), 0u) << render(executor.error());
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

// The emulator behind the worker: the same protocol, PTX modules, guard
// ranges and sanitizer findings crossing the socket, and a worker that dies
// costs the call, not the caller.
TEST(IsolatedEmulator, RunsPtxAndReportsFindingsAcrossTheSocket) {
  IsolatedOptions options = testWorkerOptions();
  options.backend = "emu";
  Result<std::unique_ptr<Executor>> created = createIsolatedExecutor(options);
  ASSERT_TRUE(created) << created.error().message;
  Executor &executor = **created;
  EXPECT_EQ(executor.moduleFormat(), ModuleFormat::Ptx);
  EXPECT_EQ(executor.properties().backend, "isolated-emu");
  const std::string ptx = R"(.version 8.5
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
  ret;
}
)";
  Result<ModuleHandle> module = executor.loadModule(std::vector<uint8_t>(ptx.begin(), ptx.end()), ModuleFormat::Ptx);
  ASSERT_TRUE(module) << module.error().message;
  Result<KernelInfo> kernel = executor.getKernel(*module, "k");
  ASSERT_TRUE(kernel) << kernel.error().message;
  Result<DeviceBuffer> buffer = executor.allocateBuffer(64 * 4 + 512);
  ASSERT_TRUE(buffer);
  ASSERT_TRUE(executor.setAccessibleRange(buffer->handle(), 256, 32 * 4));
  LaunchConfig config;
  config.block = {32, 1, 1};
  ASSERT_TRUE(executor.launch(kernel->handle, config, KernelArgs().buffer(buffer->handle(), 256).pack()));
  Result<std::vector<uint32_t>> values = executor.download<uint32_t>(buffer->handle(), 64 + 128);
  ASSERT_TRUE(values);
  for (uint32_t i = 0; i < 32; ++i) EXPECT_EQ((*values)[64 + i], i);

  // 33 threads write one element past the accessible range: memcheck, located.
  config.block = {33, 1, 1};
  Result<void> ran = executor.launch(kernel->handle, config, KernelArgs().buffer(buffer->handle(), 256).pack());
  ASSERT_FALSE(ran);
  EXPECT_EQ(execErrorKindOf(ran.error()), ExecErrorKind::Crashed);
  std::vector<LaunchFinding> findings = executor.takeFindings();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].check, "memcheck");
  EXPECT_EQ(findings[0].line, 12u); // the st.global
  // The emulator's errors are not sticky: the module is still loaded.
  config.block = {32, 1, 1};
  EXPECT_TRUE(executor.launch(kernel->handle, config, KernelArgs().buffer(buffer->handle(), 256).pack()));
}

TEST(IsolatedEmulator, AnEndlessKernelIsATimeoutAndTheWorkerSurvivesIt) {
  IsolatedOptions options = testWorkerOptions();
  options.backend = "emu";
  Result<std::unique_ptr<Executor>> created = createIsolatedExecutor(options);
  ASSERT_TRUE(created) << created.error().message;
  Executor &executor = **created;
  const std::string ptx = R"(.version 8.5
.target sm_90
.address_size 64
.visible .entry spin()
{
  .reg .b32 %r<2>;
$L:
  add.u32 %r1, %r1, 1;
  bra.uni $L;
}
)";
  Result<ModuleHandle> module = executor.loadModule(std::vector<uint8_t>(ptx.begin(), ptx.end()), ModuleFormat::Ptx);
  ASSERT_TRUE(module) << module.error().message;
  Result<KernelInfo> kernel = executor.getKernel(*module, "spin");
  ASSERT_TRUE(kernel);
  LaunchConfig config;
  config.block = {32, 1, 1};
  config.timeoutMs = 300;
  Result<void> ran = executor.launch(kernel->handle, config, KernelArgs().pack());
  ASSERT_FALSE(ran);
  EXPECT_EQ(execErrorKindOf(ran.error()), ExecErrorKind::Timeout) << ran.error().message;
  EXPECT_TRUE(executor.allocate(64)) << "the executor is usable after a timeout";
}

// Copies of kStagedCopyMinBytes or more go through the shared staging area,
// those larger than it in pieces; small ones through the socket. Every byte
// arrives where it was sent, at any offset, both ways.
TEST(IsolatedEmulator, LargeCopiesGoThroughTheStagingAreaInPieces) {
  IsolatedOptions options = testWorkerOptions();
  options.backend = "emu";
  Result<std::unique_ptr<Executor>> created = createIsolatedExecutor(options);
  ASSERT_TRUE(created) << created.error().message;
  Executor &executor = **created;
  const uint64_t bytes = protocol::kStagingBytes + (3u << 20) + 7; // two pieces
  std::vector<uint8_t> sent(bytes);
  uint64_t state = 12345;
  for (uint8_t &byte : sent) state = state * 6364136223846793005ull + 1442695040888963407ull, byte = state >> 56;
  Result<DeviceBuffer> buffer = executor.allocateBuffer(bytes + 64);
  ASSERT_TRUE(buffer);
  ASSERT_TRUE(executor.copyToDevice(buffer->handle(), 64, sent.data(), bytes));
  std::vector<uint8_t> back(bytes);
  ASSERT_TRUE(executor.copyToHost(back.data(), buffer->handle(), 64, bytes));
  EXPECT_TRUE(back == sent);
  // A small copy (the socket) into the middle, read back through the staging area.
  const std::vector<uint8_t> small = {1, 2, 3, 4, 5};
  ASSERT_TRUE(executor.copyToDevice(buffer->handle(), 64 + 1000, small.data(), small.size()));
  std::vector<uint8_t> middle(protocol::kStagedCopyMinBytes);
  ASSERT_TRUE(executor.copyToHost(middle.data(), buffer->handle(), 64 + 1000 - 3, middle.size()));
  EXPECT_EQ(middle[2], sent[1000 - 3 + 2]);
  EXPECT_EQ(middle[3], 1);
  EXPECT_EQ(middle[7], 5);
  EXPECT_EQ(middle[8], sent[1000 + 5]);
  // Past the buffer's end: an error from the worker, not a wild copy.
  EXPECT_FALSE(executor.copyToHost(back.data(), buffer->handle(), 128, bytes));
}
