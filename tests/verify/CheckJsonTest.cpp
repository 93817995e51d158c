// checkResultFromJson, the inverse of toJson(CheckResult): hand-built results
// of every verdict survive the trip through JSON (and through its text, as the
// run store keeps it) with the same document and the same prompt text, and a
// damaged document is an InvalidInput that names the JSON path, never a throw.
#include "prompt/PromptBuilder.h"
#include "verify/Check.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

using namespace ptxforge;
using Json = nlohmann::json;

namespace {

const char *const kCandidatePtx = ".version 8.0\n"
                                  ".target sm_90\n"
                                  ".address_size 64\n"
                                  ".visible .entry saxpy(.param .u64 x, .param .u64 y, .param .f32 a, .param .u32 n)\n"
                                  "{\n"
                                  "  add.f32 %f9, %f1, %f2;\n"
                                  "  st.global.f32 [%rd1], %f9;\n"
                                  "  ret;\n"
                                  "}\n";

verify::CheckResult withProvenance(verify::Verdict verdict, std::string stage, std::string summary) {
  verify::CheckResult result;
  result.verdict = verdict;
  result.stage = verify::parseStage(stage).value();
  result.summary = std::move(summary);
  result.task = "L1/saxpy";
  result.arch = "sm_90";
  result.device = "NVIDIA H200";
  result.seed = 0xFFFF'FFFF'FFFF'FFF0ull; // beyond int64: the seed is a uint64
  result.shapeIndices = {0, 2};
  result.referenceCompiler = "NVRTC 13.0";
  return result;
}

toolchain::CompileResult compiledOk() {
  toolchain::CompileResult compile;
  compile.ok = true;
  compile.toolVersion = "nvJitLink 13.0";
  compile.compileMs = 12.375;
  compile.resources.known = true;
  compile.resources.registers = 40;
  compile.resources.spillStoreBytes = 8;
  compile.resources.spillLoadBytes = 12;
  compile.resources.stackFrameBytes = 16;
  compile.resources.sharedBytes = 4096;
  compile.resources.localBytes = 4;
  compile.resources.barriers = 1;
  compile.advisories = {"Potential Performance Loss: wmma.mma instructions are serialized"};
  return compile;
}

exec::KernelInfo kernelInfo() {
  exec::KernelInfo kernel;
  kernel.registerCount = 40;
  kernel.staticSharedBytes = 4096;
  kernel.localBytes = 4;
  kernel.maxThreadsPerBlock = 768;
  return kernel;
}

verify::CheckResult lintError() {
  verify::CheckResult result = withProvenance(verify::Verdict::LintError, "lint", "lint-error: 2 errors");
  result.diagnostics = {
      {"undeclared-register", ptx::Severity::Error, 6, 11, "register `%f9` is not declared",
       "declare it: .reg .f32 %f<10>;"},
      {"undeclared-register", ptx::Severity::Error, 7, 18, "register `%rd1` is not declared", ""},
      {"unused-param", ptx::Severity::Warning, 4, 60, "parameter `n` is never read", "guard the store with n"},
      {"missing-kernel", ptx::Severity::Note, 0, 0, "whole-module note", ""},
  };
  result.device.clear(); // lint runs without a device
  return result;
}

verify::CheckResult compileError() {
  verify::CheckResult result =
      withProvenance(verify::Verdict::CompileError, "compile", "compile-error: the compiler rejected the PTX");
  toolchain::CompileResult compile;
  compile.ok = false;
  compile.toolVersion = "nvJitLink 13.0";
  compile.compileMs = 3.5;
  compile.diagnostics = {
      {"ptxas", ptx::Severity::Error, 6, 0, "Arguments mismatch for instruction 'add'", ""},
      {"ptxas", ptx::Severity::Warning, 7, 0, "unused value", ""},
  };
  compile.errorLog = "ptxas application ptx input, line 6; error   : Arguments mismatch for instruction 'add'\n";
  // check() copies the compiler's diagnostics into the result's; one here is
  // only in the compile result, which formatFeedback merges in.
  result.diagnostics = {compile.diagnostics[0]};
  result.compile = compile;
  return result;
}

/// A compile error whose log the parser could not locate: the prompt quotes the log.
verify::CheckResult compileErrorLogOnly() {
  verify::CheckResult result = compileError();
  result.diagnostics.clear();
  result.compile->diagnostics.clear();
  result.compile->errorLog = "nvJitLink error: ERROR 4: something unparsed\n";
  return result;
}

verify::OutputReport passingOutput(std::string param) {
  verify::OutputReport output;
  output.param = std::move(param);
  output.compare.count = 1024;
  output.compare.maxAbsError = 1.1920928955078125e-07;
  output.compare.maxRelError = 3.5e-07;
  return output;
}

verify::CheckResult wrong() {
  verify::CheckResult result = withProvenance(
      verify::Verdict::Wrong, "execute",
      "wrong on {n=1000} (trial 1): 'y' differs: 3 of 1000 elements outside tolerance, first at index 997");
  result.compile = compiledOk();
  result.kernel = kernelInfo();
  verify::TrialReport first;
  first.shapeIndex = 0;
  first.shape = {{"n", 1000}};
  first.trial = 0;
  first.passed = true;
  first.launch.block = {256, 1, 1};
  first.launch.grid = {4, 1, 1};
  first.outputs.push_back(passingOutput("y"));
  result.trials.push_back(first);

  verify::TrialReport second = first;
  second.trial = 1;
  second.afterTiming = true;
  second.passed = false;
  second.launch.smem = 2048;
  second.outputs.clear();
  verify::OutputReport input; // an input written out of bounds: guard bytes, no comparison
  input.param = "x";
  input.guardBytesBefore = 2;
  input.guardDetail = "byte 1 before the start of 'x' changed from 0xcd to 0x00";
  second.outputs.push_back(input);
  verify::OutputReport output;
  output.param = "y";
  output.compare.passed = false;
  output.compare.count = 1000;
  output.compare.mismatches = 3;
  output.compare.nanInGot = 3;
  output.compare.maxAbsError = 0.25;
  output.compare.maxRelError = 0.125;
  output.compare.firstMismatch = 997;
  output.compare.firstGotText = "nan";
  output.compare.firstWantText = "1.5";
  output.guardBytesAfter = 4;
  output.guardDetail = "byte 0 after the end of 'y' changed from 0xcd to 0x00";
  second.outputs.push_back(output);
  result.trials.push_back(second);
  result.diagnostics.push_back(
      {"memcheck", ptx::Severity::Error, 7, 0, "out-of-bounds global write by thread 1000", "compare the index"});
  return result;
}

verify::CheckResult crashed() {
  verify::CheckResult result = withProvenance(verify::Verdict::Crashed, "execute",
                                              "crashed on {n=1000} (trial 0): illegal memory access");
  result.compile = compiledOk();
  result.kernel = kernelInfo();
  verify::TrialReport trial;
  trial.shape = {{"n", 1000}};
  trial.launch.block = {128, 2, 1};
  trial.launch.grid = {8, 1, 3};
  result.trials.push_back(trial);
  result.executorError = "crashed: cuCtxSynchronize: an illegal memory access was encountered (CUDA_ERROR_ILLEGAL_ADDRESS)";
  return result;
}

verify::CheckResult timeout() {
  verify::CheckResult result = crashed();
  result.verdict = verify::Verdict::Timeout;
  result.summary = "timeout on {n=1000} (trial 0): the kernel ran past 10000 ms";
  result.executorError = "timeout: the launch did not finish within 10000 ms";
  return result;
}

verify::CheckResult launchError() {
  verify::CheckResult result = crashed();
  result.verdict = verify::Verdict::LaunchError;
  result.summary = "launch-error on {n=1000} (trial 0): too many resources requested";
  result.executorError = "launch-error: cuLaunchKernel: too many resources requested for launch";
  return result;
}

verify::CheckResult rejected() {
  verify::CheckResult result = withProvenance(verify::Verdict::Rejected, "lint",
                                              "rejected: the candidate reads a timer register");
  result.diagnostics = {{"timer-read", ptx::Severity::Error, 6, 9, "candidates may not read `%clock64`",
                         "remove the timer read: timing is measured by the gate"}};
  return result;
}

verify::CheckResult correct() {
  verify::CheckResult result = withProvenance(verify::Verdict::Correct, "done", "correct on 2 shape(s) x 3 trial(s)");
  result.compile = compiledOk();
  result.kernel = kernelInfo();
  for (size_t shapeIndex : {size_t{0}, size_t{2}}) {
    verify::TrialReport trial;
    trial.shapeIndex = shapeIndex;
    trial.shape = {{"M", 512 * static_cast<int64_t>(shapeIndex + 1)}, {"N", 256}, {"K", 128}};
    trial.passed = true;
    trial.launch.block = {16, 16, 1};
    trial.launch.grid = {32, 16, 1};
    trial.launch.smem = 8192;
    trial.outputs.push_back(passingOutput("C"));
    result.trials.push_back(trial);
  }
  verify::BenchmarkReport large;
  large.shapeIndex = 2;
  large.shape = {{"M", 4096}, {"N", 4096}, {"K", 4096}};
  large.candidate = {1.9871, 1.95, 2.1034, 1.9, 2.5, 50};
  large.baseline = {1.5123, 1.5, 1.53, 1.49, 1.6, 50};
  large.speedup = large.baseline.median / large.candidate.median;
  large.speedupLow = large.baseline.p10 / large.candidate.p90;
  large.speedupHigh = large.baseline.p90 / large.candidate.p10;
  large.gflops = 68719.476736 / 1.9871;
  large.baselineGflops = 68719.476736 / 1.5123;
  large.gbps = 201.326592 / 1.9871;
  large.baselineGbps = 201.326592 / 1.5123;
  large.bandwidthFraction = 0.021;
  large.copyCeilingFraction = 0.024;
  large.fp32CeilingFraction = 0.6543;
  verify::BenchmarkReport small = large; // a device without cached ceilings
  small.shapeIndex = 0;
  small.shape = {{"M", 512}, {"N", 256}, {"K", 128}};
  small.candidate.median = 0.0123;
  small.speedup = 1.0 / 3.0;
  small.copyCeilingFraction.reset();
  small.fp32CeilingFraction.reset();
  small.bandwidthFraction.reset();
  small.baselineGbps.reset();
  result.benchmarks = {small, large};
  return result;
}

struct Case {
  const char *name;
  verify::CheckResult result;
};

std::vector<Case> everyVerdict() {
  return {{"lint-error", lintError()},     {"compile-error", compileError()},
          {"compile-error-log", compileErrorLogOnly()}, {"wrong", wrong()},
          {"crashed", crashed()},          {"timeout", timeout()},
          {"launch-error", launchError()}, {"rejected", rejected()},
          {"correct", correct()}};
}

/// Reads `document` back, failing the test (and returning a default) on an Error.
verify::CheckResult readBack(const Json &document) {
  Result<verify::CheckResult> back = verify::checkResultFromJson(document);
  EXPECT_TRUE(back.ok()) << (back.ok() ? "" : back.error().message);
  return back.ok() ? *back : verify::CheckResult{};
}

/// The Error of reading `document`, asserting that it is one and did not throw.
Error readError(const Json &document) {
  std::optional<Result<verify::CheckResult>> back;
  EXPECT_NO_THROW(back.emplace(verify::checkResultFromJson(document)));
  if (!back || back->ok()) {
    ADD_FAILURE() << "expected an Error for " << document.dump().substr(0, 200);
    return {};
  }
  EXPECT_EQ(back->error().kind, ErrorKind::InvalidInput) << back->error().message;
  return back->error();
}

#define EXPECT_CONTAINS(haystack, needle)                                                                              \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "missing '" << (needle) << "' in:\n" << (haystack)

} // namespace

TEST(CheckJson, EveryVerdictRoundTripsToTheSameDocument) {
  for (const Case &c : everyVerdict()) {
    SCOPED_TRACE(c.name);
    Json document = verify::toJson(c.result);
    EXPECT_EQ(verify::toJson(readBack(document)), document);
    // As the run store keeps it: text, parsed again.
    Json stored = Json::parse(document.dump());
    EXPECT_EQ(verify::toJson(readBack(stored)), document);
  }
}

TEST(CheckJson, EveryVerdictGivesTheSamePromptText) {
  for (const Case &c : everyVerdict()) {
    SCOPED_TRACE(c.name);
    verify::CheckResult back = readBack(Json::parse(verify::toJson(c.result).dump()));
    EXPECT_EQ(prompt::formatFeedback(back, kCandidatePtx), prompt::formatFeedback(c.result, kCandidatePtx));
    EXPECT_EQ(prompt::formatResources(back), prompt::formatResources(c.result));
    EXPECT_EQ(prompt::formatTimings(back), prompt::formatTimings(c.result));
  }
}

TEST(CheckJson, PromptTextReadBackIsNotVacuous) {
  auto feedback = [](const verify::CheckResult &r) {
    return prompt::formatFeedback(readBack(verify::toJson(r)), kCandidatePtx);
  };
  std::string lint = feedback(lintError());
  EXPECT_CONTAINS(lint, "candidate.ptx:6:11: error[undeclared-register]: register `%f9` is not declared");
  EXPECT_CONTAINS(lint, "declare it: .reg .f32 %f<10>;");
  EXPECT_CONTAINS(lint, "warning[unused-param]");
  EXPECT_CONTAINS(feedback(compileError()), "warning[ptxas]: unused value"); // only in the compile result
  EXPECT_CONTAINS(feedback(compileErrorLogOnly()), "Compiler log:\nnvJitLink error: ERROR 4");
  std::string mismatch = feedback(wrong());
  EXPECT_CONTAINS(mismatch, "First mismatch: output `x`, shape {n=1000}, trial 1 (re-check after timing)");
  EXPECT_CONTAINS(mismatch, "2 bytes before and 0 bytes after");
  EXPECT_CONTAINS(feedback(crashed()), "Executor: crashed: cuCtxSynchronize");

  verify::CheckResult back = readBack(verify::toJson(correct()));
  EXPECT_CONTAINS(prompt::formatResources(back), "registers per thread: 40");
  EXPECT_CONTAINS(prompt::formatResources(back), "max threads per block at this register count: 768");
  EXPECT_CONTAINS(prompt::formatResources(back), "ptxas advisory: Potential Performance Loss");
  std::string timings = prompt::formatTimings(back);
  EXPECT_CONTAINS(timings, "GFLOP/s");
  EXPECT_CONTAINS(timings, "65% of the measured FP32 ceiling");
  ASSERT_EQ(back.benchmarks.size(), 2u);
  EXPECT_EQ(back.benchmarks[1].speedup, correct().benchmarks[1].speedup); // the optimize section's speedup
  EXPECT_FALSE(back.benchmarks[0].fp32CeilingFraction.has_value());
  EXPECT_FALSE(back.benchmarks[0].baselineGbps.has_value());
  ASSERT_TRUE(back.compile.has_value());
  EXPECT_TRUE(back.compile->ok);
  EXPECT_EQ(back.compile->toolVersion, "nvJitLink 13.0");
}

TEST(CheckJson, NullResourcesAndKernelAreAbsent) {
  verify::CheckResult back = readBack(verify::toJson(lintError()));
  EXPECT_FALSE(back.compile.has_value());
  EXPECT_FALSE(back.kernel.has_value());
  EXPECT_EQ(back.seed, 0xFFFF'FFFF'FFFF'FFF0ull);
}

TEST(CheckJson, DocumentsFromBeforeTheCompileKeysStillRead) {
  // Stored before toJson wrote "compile", "known", "within_tolerance" and "nan_in_got".
  Json document = verify::toJson(wrong());
  document.erase("compile");
  document["resources"].erase("known");
  for (Json &trial : document["correctness"])
    for (Json &output : trial["outputs"]) {
      output.erase("within_tolerance");
      output.erase("nan_in_got");
    }
  verify::CheckResult back = readBack(document);
  ASSERT_TRUE(back.compile.has_value());
  EXPECT_TRUE(back.compile->ok);
  EXPECT_TRUE(back.compile->resources.known);
  ASSERT_EQ(back.trials.size(), 2u);
  EXPECT_TRUE(back.trials[1].outputs[0].compare.passed); // x: nothing compared
  EXPECT_FALSE(back.trials[1].outputs[1].compare.passed);

  Json failedCompile = verify::toJson(compileError());
  failedCompile.erase("compile");
  failedCompile["resources"].erase("known");
  verify::CheckResult compile = readBack(failedCompile);
  ASSERT_TRUE(compile.compile.has_value());
  EXPECT_FALSE(compile.compile->ok);              // the gate stopped at compile
  EXPECT_FALSE(compile.compile->resources.known); // registers -1: not reported
}

TEST(CheckJson, NullNumbersReadAsNaN) {
  // nlohmann writes NaN and infinity as null.
  verify::CheckResult result = correct();
  result.benchmarks[0].speedup = std::numeric_limits<double>::infinity();
  verify::CheckResult back = readBack(Json::parse(verify::toJson(result).dump()));
  ASSERT_EQ(back.benchmarks.size(), 2u);
  EXPECT_TRUE(std::isnan(back.benchmarks[0].speedup));
}

TEST(CheckJson, NotAnObject) {
  EXPECT_CONTAINS(readError(Json::array()).message, "check result JSON: /: expected an object, got array");
  EXPECT_CONTAINS(readError(Json("correct")).message, "expected an object, got string");
  EXPECT_CONTAINS(readError(Json()).message, "expected an object, got null");
}

TEST(CheckJson, UnknownVerdict) {
  Json document = verify::toJson(correct());
  document["verdict"] = "bogus";
  std::string message = readError(document).message;
  EXPECT_CONTAINS(message, "check result JSON: /verdict: unknown verdict 'bogus'");
  EXPECT_CONTAINS(message, "launch-error");
}

TEST(CheckJson, MissingVerdict) {
  Json document = verify::toJson(correct());
  document.erase("verdict");
  EXPECT_EQ(readError(document).message, "check result JSON: /verdict: missing");
}

TEST(CheckJson, StringWhereANumberBelongsDeepInside) {
  Json document = verify::toJson(wrong());
  document["correctness"][1]["outputs"][1]["max_abs_error"] = "0.25";
  EXPECT_EQ(readError(document).message,
            "check result JSON: /correctness/1/outputs/1/max_abs_error: expected a number, got string");
}

TEST(CheckJson, MistypedIntegersAndShapes) {
  Json document = verify::toJson(wrong());
  document["correctness"][0]["outputs"][0]["guard_bytes_before"] = -1;
  EXPECT_EQ(readError(document).message,
            "check result JSON: /correctness/0/outputs/0/guard_bytes_before: integer out of range");

  document = verify::toJson(wrong());
  document["correctness"][0]["trial"] = 1.5;
  EXPECT_CONTAINS(readError(document).message, "/correctness/0/trial: expected an integer, got number with a fraction");

  document = verify::toJson(wrong());
  document["correctness"][1]["grid"] = Json::array({4, 1});
  EXPECT_CONTAINS(readError(document).message, "/correctness/1/grid: expected 3 dimensions, got 2");

  document = verify::toJson(correct());
  document["timing"][1]["shape"]["K"] = "4096";
  EXPECT_CONTAINS(readError(document).message, "/timing/1/shape/K: expected an integer, got string");

  document = verify::toJson(correct());
  document["timing"][0]["speedup_band"] = Json::array({1.0});
  EXPECT_CONTAINS(readError(document).message, "/timing/0/speedup_band: expected [low, high]");

  document = verify::toJson(lintError());
  document["diagnostics"][2]["severity"] = "fatal";
  EXPECT_CONTAINS(readError(document).message, "/diagnostics/2/severity: unknown severity 'fatal'");

  document = verify::toJson(correct());
  document["provenance"] = nullptr;
  EXPECT_CONTAINS(readError(document).message, "/provenance: expected an object, got null");

  document = verify::toJson(wrong());
  document["correctness"][1]["outputs"][1].erase("first_mismatch");
  EXPECT_CONTAINS(readError(document).message, "/correctness/1/outputs/1/first_mismatch: missing");
}

TEST(CheckJson, EveryLeafDamagedNamesItsPath) {
  // Each leaf in turn becomes a string, an object, or disappears: the reader
  // either accepts the document or names exactly that leaf.
  for (const Case &c : {Case{"wrong", wrong()}, Case{"correct", correct()}, Case{"compile-error", compileError()},
                        Case{"lint-error", lintError()}}) {
    SCOPED_TRACE(c.name);
    const Json document = verify::toJson(c.result);
    const Json leaves = document.flatten();
    for (const auto &[pointerText, value] : leaves.items()) {
      const Json::json_pointer pointer(pointerText);
      for (int damage = 0; damage < 3; ++damage) {
        Json damaged = document;
        if (damage == 0) damaged[pointer] = "x";
        else if (damage == 1) damaged[pointer] = Json::object({{"x", 1}});
        else if (damaged.at(pointer.parent_pointer()).is_object())
          damaged.at(pointer.parent_pointer()).erase(pointer.back());
        else continue;
        std::optional<Result<verify::CheckResult>> back;
        EXPECT_NO_THROW(back.emplace(verify::checkResultFromJson(damaged))) << pointerText;
        if (!back || back->ok()) continue;
        EXPECT_EQ(back->error().kind, ErrorKind::InvalidInput);
        // An object where null was (resources, kernel) is read as one: then a member of it is missing.
        const std::string &message = back->error().message;
        const std::string prefix = "check result JSON: " + pointerText;
        EXPECT_TRUE(message.rfind(prefix + ": ", 0) == 0 || (value.is_null() && message.rfind(prefix + "/", 0) == 0))
            << message << " (damage " << damage << ")";
      }
    }
  }
}
