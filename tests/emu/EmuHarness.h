// Test harness of the emulator's end-to-end tests: a kernel template with a
// standard prologue and a fixture that runs it through the Executor interface.
#pragma once

#include "emu/EmuExecutor.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

namespace ptxforge::emu {

using exec::ExecErrorKind;

/// A module with one kernel `k(.param .u64 out, .param .u64 in, .param .u32 n)`
/// whose body is `body`. The standard prologue computes, in every thread:
///   %r1 = global thread index, %rd1 = &out[%r1], %rd2 = &in[%r1] (4-byte
///   elements), %r2 = n, %r3 = %tid.x, %r4 = %ntid.x.
inline std::string kernel(const std::string &body, const std::string &extra = "") {
  return fmt::format(R"(.version 8.5
.target sm_90
.address_size 64
{}
.visible .entry k(.param .u64 out, .param .u64 in, .param .u32 n)
{{
  .reg .pred %p<8>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<20>;
  .reg .f32 %f<10>;
  ld.param.u64 %rd10, [out];
  ld.param.u64 %rd11, [in];
  ld.param.u32 %r2, [n];
  cvta.to.global.u64 %rd10, %rd10;
  cvta.to.global.u64 %rd11, %rd11;
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %ctaid.x;
  mad.lo.s32 %r1, %r5, %r4, %r3;
  mul.wide.s32 %rd3, %r1, 4;
  add.s64 %rd1, %rd10, %rd3;
  add.s64 %rd2, %rd11, %rd3;
{}
}}
)",
                     extra, body);
}

/// Line (1-based) of the first line of `text` containing `needle`.
inline uint32_t lineOf(const std::string &text, const std::string &needle) {
  size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  return static_cast<uint32_t>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n') + 1);
}

class EmuTest : public ::testing::Test {
protected:
  void SetUp() override {
    EmuOptions options;
    options.checks.hostThreads = 2;
    executor_ = createEmuExecutor(options);
  }

  struct Outcome {
    Result<void> status;
    std::vector<uint32_t> out;
    std::vector<exec::LaunchFinding> findings;
  };

  /// Loads `ptx`, runs k(out, in, n) with in = 0..count-1 (or `input`) on
  /// grid x block threads, and returns out (count words, pre-filled with
  /// 0xdeadbeef).
  Outcome run(const std::string &ptx, uint32_t grid, uint32_t block, uint32_t count,
              std::vector<uint32_t> input = {}, uint32_t n = 0) {
    Outcome outcome;
    Result<exec::ModuleHandle> module =
        executor_->loadModule(std::vector<uint8_t>(ptx.begin(), ptx.end()), exec::ModuleFormat::Ptx);
    if (!module) {
      outcome.status = module.error();
      return outcome;
    }
    Result<exec::KernelInfo> info = executor_->getKernel(*module, "k");
    EXPECT_TRUE(info) << (info ? "" : info.error().message);
    if (input.empty()) {
      input.resize(count);
      std::iota(input.begin(), input.end(), 0u);
    }
    Result<exec::DeviceBuffer> out = executor_->allocateBuffer(count * 4ull);
    Result<exec::DeviceBuffer> in = executor_->allocateBuffer(input.size() * 4ull);
    EXPECT_TRUE(out && in);
    std::vector<uint32_t> fill(count, 0xdeadbeefu);
    EXPECT_TRUE(executor_->upload(out->handle(), fill));
    EXPECT_TRUE(executor_->upload(in->handle(), input));
    exec::LaunchConfig config;
    config.grid = {grid, 1, 1};
    config.block = {block, 1, 1};
    outcome.status = executor_->launch(info->handle, config,
                                       exec::KernelArgs().buffer(out->handle()).buffer(in->handle()).scalar<uint32_t>(
                                           n ? n : count).pack());
    outcome.findings = executor_->takeFindings();
    Result<std::vector<uint32_t>> got = executor_->download<uint32_t>(out->handle(), count);
    EXPECT_TRUE(got);
    if (got) outcome.out = *got;
    return outcome;
  }

  static const exec::LaunchFinding *find(const Outcome &outcome, const std::string &check) {
    for (const exec::LaunchFinding &f : outcome.findings)
      if (f.check == check) return &f;
    return nullptr;
  }

  std::unique_ptr<exec::Executor> executor_;
};

} // namespace ptxforge::emu
