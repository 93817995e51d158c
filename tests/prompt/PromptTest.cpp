// Each strategy's prompt for the saxpy and sgemm tasks contains what it must.
#include "prompt/PromptBuilder.h"
#include "prompt/SassFeedback.h"
#include "tasks/Reference.h"
#include "verify/Profile.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace ptxforge;
using namespace ptxforge::prompt;

namespace {

tasks::TaskSpec loadBuiltin(const std::string &relative) {
  auto task = tasks::loadTask(tasks::builtinTasksDir() / relative);
  EXPECT_TRUE(task.ok()) << task.error().message;
  return task.ok() ? task.value() : tasks::TaskSpec{};
}

const TemplateSet &templates() {
  static TemplateSet set = [] {
    auto loaded = loadTemplates(defaultPromptsDir());
    EXPECT_TRUE(loaded.ok()) << loaded.error().message;
    return loaded.ok() ? loaded.value() : TemplateSet{};
  }();
  return set;
}

std::string userText(const Result<llm::Request> &request) {
  EXPECT_TRUE(request.ok()) << (request.ok() ? "" : request.error().message);
  if (!request.ok()) return "";
  EXPECT_EQ(request->messages.size(), 2u);
  EXPECT_EQ(request->messages[0].role, llm::Role::System);
  EXPECT_EQ(request->messages[1].role, llm::Role::User);
  EXPECT_TRUE(llm::validateRequest(*request).ok());
  return request->messages[1].content;
}

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << "missing: " << (needle) << "\nin:\n" << (haystack)

const char *kSaxpyPtx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry saxpy(.param .u64 saxpy_param_0, .param .u64 saxpy_param_1, .param .f32 saxpy_param_2, .param .u32 saxpy_param_3)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<5>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [saxpy_param_0];
  ld.param.u32 %r2, [saxpy_param_3];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r5;
  setp.ge.s32 %p1, %r1, %r2;
  @%p1 bra $L__BB0_2;
  cvta.to.global.u64 %rd3, %rd1;
  mul.wide.s32 %rd4, %r1, 4;
  add.s64 %rd5, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  fma.rn.f32 %f3, %f2, %f1, %f3;
  st.global.f32 [%rd5], %f3;
$L__BB0_2:
  ret;
}
)";

} // namespace

TEST(Prompt, ParseStrategies) {
  auto list = parseStrategies("zero-shot, spec,few-shot");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 3u);
  auto hinted = parseStrategies("zero-shot,hints");
  ASSERT_TRUE(hinted.ok());
  EXPECT_EQ(*hinted, (std::vector<Strategy>{Strategy::ZeroShot, Strategy::Hints}));
  auto bad = parseStrategies("zero-shot,fewshot");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'fewshot'"), std::string::npos);
}

TEST(Prompt, ZeroShotSaxpy) {
  tasks::TaskSpec task = loadBuiltin("L1/saxpy");
  std::string user = userText(buildPrompt(PromptInput{task, "sm_90"}, {Strategy::ZeroShot}, templates()));
  EXPECT_CONTAINS(user, ".visible .entry saxpy(");
  EXPECT_CONTAINS(user, ".param .u64 saxpy_param_0,  // x: f32* input");
  EXPECT_CONTAINS(user, ".param .f32 saxpy_param_2,  // a: f32 scalar");
  EXPECT_CONTAINS(user, ".param .u32 saxpy_param_3   // n: i32 scalar");
  EXPECT_CONTAINS(user, "value 2.5");
  EXPECT_CONTAINS(user, task.description);
  EXPECT_CONTAINS(user, "{n=33}");
  EXPECT_CONTAINS(user, "// @ptxforge block=(256,1,1) grid=(ceildiv(n, 256),1,1) smem=0");
  EXPECT_CONTAINS(user, "`// @ptxforge block=(X,Y,Z) grid=(X,Y,Z) smem=BYTES`");
  EXPECT_CONTAINS(user, "sm_90");
  EXPECT_CONTAINS(user, "exactly one ```ptx fenced block");
  EXPECT_EQ(user.find("{{"), std::string::npos);
}

TEST(Prompt, ZeroShotSgemmHasEveryParameterAndSymbol) {
  tasks::TaskSpec task = loadBuiltin("L3/sgemm");
  PromptInput input{task, "sm_90"};
  input.tendency = "low register pressure";
  std::string user = userText(buildPrompt(input, {Strategy::ZeroShot}, templates()));
  for (const char *needle : {"sgemm_param_0,  // A: f32* input", "sgemm_param_2,  // C: f32* output",
                             "sgemm_param_5   // K: i32 scalar", "Size symbols: M, N, K", "Aim for: low register pressure."})
    EXPECT_CONTAINS(user, needle);
}

// Zero-shot states what to compute, never how the reference computes it:
// sgemm's recipe (tiles, BK, register tiles, prefetch) reaches the model only
// through the hints and few-shot strategies (docs/prompts.md).
TEST(Prompt, OnlyHintsAndFewShotCarryTheReferencesRecipe) {
  tasks::TaskSpec task = loadBuiltin("L3/sgemm");
  ASSERT_FALSE(task.hints.empty());
  const std::string recipe = task.hints;
  auto carries = [&](const std::vector<Strategy> &strategies, const std::string &referencePtx = kSaxpyPtx) {
    PromptInput input{task, "sm_90", referencePtx};
    return userText(buildPrompt(input, strategies, templates())).find(recipe) != std::string::npos;
  };
  EXPECT_FALSE(carries({Strategy::ZeroShot}));
  EXPECT_FALSE(carries({Strategy::ZeroShot, Strategy::Spec}));
  EXPECT_FALSE(carries({Strategy::ZeroShot, Strategy::Skeleton}));
  EXPECT_TRUE(carries({Strategy::ZeroShot, Strategy::Hints}));
  EXPECT_TRUE(carries({Strategy::ZeroShot, Strategy::FewShot}));
  std::string zeroShot = userText(buildPrompt(PromptInput{task, "sm_90"}, {Strategy::ZeroShot}, templates()));
  EXPECT_CONTAINS(zeroShot, task.description);
  for (const char *detail : {"BK", "register tile", "prefetch", "float4", "quadrant"})
    EXPECT_EQ(zeroShot.find(detail), std::string::npos) << detail << " in the zero-shot prompt";

  // A task without hints gets no empty section.
  tasks::TaskSpec bare = task;
  bare.hints.clear();
  std::string without = userText(buildPrompt(PromptInput{bare, "sm_90"}, {Strategy::ZeroShot, Strategy::Hints}, templates()));
  EXPECT_EQ(without, zeroShot);
}

TEST(Prompt, PartsSayWhatThePromptCarried) {
  using Parts = std::vector<std::string>;
  EXPECT_EQ(promptParts({Strategy::ZeroShot}), (Parts{"description"}));
  EXPECT_EQ(promptParts({Strategy::ZeroShot, Strategy::Hints}), (Parts{"description", "hints"}));
  EXPECT_EQ(promptParts({Strategy::ZeroShot, Strategy::Spec}),
            (Parts{"description", "ptx-rules", "reference-instructions"}));
  EXPECT_EQ(promptParts({Strategy::ZeroShot, Strategy::Spec}, true, false),
            (Parts{"description", "ptx-rules", "base-instructions"}));
  EXPECT_EQ(promptParts({Strategy::ZeroShot, Strategy::Spec, Strategy::FewShot}),
            (Parts{"description", "hints", "ptx-rules", "reference-instructions", "reference-source", "reference-ptx"}));
  EXPECT_EQ(promptParts({Strategy::ZeroShot, Strategy::FewShot}, false),
            (Parts{"description", "reference-source", "reference-ptx"}));
  EXPECT_EQ(promptParts({Strategy::ZeroShot, Strategy::Skeleton}), (Parts{"description", "own-skeleton"}));
  EXPECT_EQ(promptParts({Strategy::ZeroShot, Strategy::Repair}), (Parts{"description", "previous-attempt", "gate-feedback"}));
  EXPECT_EQ(promptParts({Strategy::ZeroShot, Strategy::Optimize}), (Parts{"description", "previous-attempt", "timings"}));

  // From an input: what this task and this request have.
  tasks::TaskSpec task = loadBuiltin("L1/saxpy");
  PromptInput input{task, "sm_90"};
  EXPECT_EQ(promptParts(input, {Strategy::ZeroShot, Strategy::Skeleton, Strategy::Spec}),
            (Parts{"description", "ptx-rules", "base-instructions"})); // the skeleton request: none written yet
  input.skeleton = SkeletonDraft{".version 8.0", "The lint found no problems in it.\n"};
  EXPECT_EQ(promptParts(input, {Strategy::ZeroShot, Strategy::Skeleton}), (Parts{"description", "own-skeleton"}));
  task.hints.clear();
  EXPECT_EQ(promptParts(PromptInput{task, "sm_90"}, {Strategy::ZeroShot, Strategy::Hints}), (Parts{"description"}));
}

TEST(Prompt, SpecListsTheReferenceOpcodes) {
  tasks::TaskSpec task = loadBuiltin("L1/saxpy");
  PromptInput input{task, "sm_90", kSaxpyPtx};
  std::string user = userText(buildPrompt(input, {Strategy::Spec}, templates()));
  EXPECT_CONTAINS(user, "cvta.to.global.u64");
  EXPECT_CONTAINS(user, ".reg .pred %p<4>;");
  EXPECT_CONTAINS(user, "- `fma`: ");
  EXPECT_CONTAINS(user, "as nvcc writes it: fma.rn.f32");
  EXPECT_CONTAINS(user, "- `setp`: ");
  EXPECT_CONTAINS(user, "- `mul`: ");
  EXPECT_CONTAINS(user, "types: ");
  EXPECT_EQ(user.find("- `shfl`"), std::string::npos); // not in the reference

  std::vector<CheatSheetEntry> sheet = cheatSheet(kSaxpyPtx);
  ASSERT_FALSE(sheet.empty());
  EXPECT_EQ(sheet.front().name, "ld");
  // Without a reference: a base list still teaches the essentials.
  std::string base = formatCheatSheet(cheatSheet(""));
  EXPECT_CONTAINS(base, "cvta.to.global.u64");
}

TEST(Prompt, FewShotNeedsReferenceAndShowsIt) {
  tasks::TaskSpec task = loadBuiltin("L1/saxpy");
  auto missing = buildPrompt(PromptInput{task, "sm_90"}, {Strategy::FewShot}, templates());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("few-shot"), std::string::npos);
  std::string user = userText(buildPrompt(PromptInput{task, "sm_90", kSaxpyPtx}, {Strategy::FewShot}, templates()));
  EXPECT_CONTAINS(user, "fma.rn.f32 %f3, %f2, %f1, %f3;");
  EXPECT_CONTAINS(user, "__global__");
  EXPECT_CONTAINS(user, ".version 8.0");
}

TEST(Prompt, RepairShowsDiagnosticsMismatchAndFindings) {
  tasks::TaskSpec task = loadBuiltin("L1/saxpy");
  Attempt attempt;
  attempt.ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry saxpy()\n{\n  add.f32 %f9, %f1, %f2;\n  ret;\n}\n";
  verify::CheckResult &result = attempt.result;
  result.verdict = verify::Verdict::Wrong;
  result.stage = verify::Stage::Execute;
  result.summary = "wrong: 3 of 33 elements of y differ";
  result.diagnostics.push_back({"undeclared-register", ptx::Severity::Error, 6, 11, "register `%f9` is not declared",
                                "declare it: .reg .f32 %f<10>;"});
  result.diagnostics.push_back({"memcheck", ptx::Severity::Error, 6, 0, "out-of-bounds global write by thread 32 of block 0",
                                ""});
  verify::TrialReport trial;
  trial.shape = {{"n", 33}};
  trial.launch.block = {256, 1, 1};
  verify::OutputReport output;
  output.param = "y";
  output.compare.passed = false;
  output.compare.count = 33;
  output.compare.mismatches = 3;
  output.compare.firstMismatch = 30;
  output.compare.firstGotText = "nan";
  output.compare.firstWantText = "1.5";
  output.compare.nanInGot = 3;
  output.guardBytesAfter = 4;
  trial.outputs.push_back(output);
  result.trials.push_back(trial);
  result.executorError = "";

  PromptInput input{task, "sm_90"};
  input.previous = attempt;
  std::string user = userText(buildPrompt(input, {Strategy::ZeroShot, Strategy::Repair}, templates()));
  EXPECT_CONTAINS(user, "Verdict: `wrong` at stage `execute`");
  EXPECT_CONTAINS(user, "candidate.ptx:6:11: error[undeclared-register]: register `%f9` is not declared");
  EXPECT_CONTAINS(user, "declare it: .reg .f32 %f<10>;");
  EXPECT_CONTAINS(user, "error[memcheck]");
  EXPECT_CONTAINS(user, "   6    add.f32 %f9, %f1, %f2;");
  EXPECT_CONTAINS(user, "output `y`, shape {n=33}, trial 0");
  EXPECT_CONTAINS(user, "never written");
  EXPECT_CONTAINS(user, "4 bytes after the buffer changed");
  EXPECT_CONTAINS(user, ".visible .entry saxpy("); // the task is still there

  input.previous->result.verdict = verify::Verdict::CompileError;
  input.previous->result.trials.clear();
  input.previous->result.executorError = "ptxas fatal";
  std::string compile = userText(buildPrompt(input, {Strategy::Repair}, templates()));
  EXPECT_CONTAINS(compile, "Executor: ptxas fatal");
}

TEST(Prompt, OptimizeShowsResourcesAndTimings) {
  tasks::TaskSpec task = loadBuiltin("L3/sgemm");
  Attempt attempt;
  attempt.ptx = ".version 8.0\n.target sm_90\n";
  attempt.result.verdict = verify::Verdict::Correct;
  attempt.result.stage = verify::Stage::Done;
  toolchain::CompileResult compile;
  compile.ok = true;
  compile.resources.known = true;
  compile.resources.registers = 128;
  compile.resources.spillStoreBytes = 16;
  compile.resources.sharedBytes = 8192;
  attempt.result.compile = compile;
  verify::BenchmarkReport bench;
  bench.shape = {{"M", 4096}, {"N", 4096}, {"K", 4096}};
  bench.candidate.median = 2.0;
  bench.baseline.median = 1.5;
  bench.speedup = 0.75;
  bench.gflops = 68719.5;
  bench.gbps = 100.0;
  attempt.result.benchmarks.push_back(bench);

  PromptInput input{task, "sm_90"};
  input.previous = attempt;
  input.objective = "fewer registers";
  std::string user = userText(buildPrompt(input, {Strategy::Optimize}, templates()));
  EXPECT_CONTAINS(user, "registers per thread: 128");
  EXPECT_CONTAINS(user, "spills: 16 bytes stored");
  EXPECT_CONTAINS(user, "static shared memory: 8192 bytes");
  EXPECT_CONTAINS(user, "yours 2.0000 ms");
  EXPECT_CONTAINS(user, "nvcc baseline 1.5000 ms, speedup 0.75x");
  EXPECT_CONTAINS(user, "68719.5 GFLOP/s");
  EXPECT_CONTAINS(user, "100.0 GB/s");
  EXPECT_CONTAINS(user, "Objective: fewer registers.");
  EXPECT_CONTAINS(user, "Current speedup on the largest shape: 0.75x");

  input.previous->result.verdict = verify::Verdict::Wrong;
  auto refused = buildPrompt(input, {Strategy::Optimize}, templates());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("use repair"), std::string::npos);
  EXPECT_FALSE(buildPrompt(PromptInput{task, "sm_90"}, {Strategy::Repair}, templates()).ok());
  EXPECT_FALSE(buildPrompt(input, {Strategy::Repair, Strategy::Optimize}, templates()).ok());
}

TEST(Prompt, OptimizeShowsTheHotLoopAgainstNvccs) {
  // Two SASS listings (instruction i at byte 16*i): a scalar loop against a
  // float4 one unrolled with more adds.
  toolchain::SassStats mine, nvccs;
  mine.arch = nvccs.arch = "sm_90";
  mine.code = "function k:\nMOV R0,RZ \nLDG.E R2,desc[UR4][R2.64] \nFADD R0,R0,R2 \n@P0 BRA 0x10 \nEXIT \n";
  nvccs.code = "function k:\nMOV R0,RZ \nLDG.E.128 R4,desc[UR4][R2.64] \nFADD R0,R4,R5 \nFADD R1,R6,R7 \n"
               "FADD R0,R0,R1 \n@P0 BRA 0x10 \nEXIT \n";
  const std::string lines = hotLoopComparison(mine, nvccs, "k");
  EXPECT_CONTAINS(lines, "- yours: 1 loop, the hot one (depth 1) 3 instructions: 0 tensor-core (MMA), 0 FFMA, 0 IMAD, "
                         "1 LDG (1x32b)\n");
  EXPECT_CONTAINS(lines, "- nvcc's: 1 loop, the hot one (depth 1) 5 instructions: 0 tensor-core (MMA), 0 FFMA, 0 IMAD, "
                         "1 LDG (1x128b)\n");
  EXPECT_CONTAINS(lines, "- opcode counts that differ (yours/nvcc's): FADD 1/3\n");
  // Straight-line code on both sides: nothing to compare, nothing shown.
  toolchain::SassStats flat = mine;
  flat.code = "function k:\nMOV R0,RZ \nEXIT \n";
  EXPECT_EQ(hotLoopComparison(flat, flat, "k"), "");

  tasks::TaskSpec task = loadBuiltin("L1/saxpy");
  Attempt attempt;
  attempt.ptx = kSaxpyPtx;
  attempt.result.verdict = verify::Verdict::Correct;
  PromptInput input{task, "sm_90"};
  input.previous = attempt;
  const std::string without = userText(buildPrompt(input, {Strategy::Optimize}, templates()));
  EXPECT_EQ(without.find("Hot loop in SASS"), std::string::npos);
  input.sassHotLoop = lines;
  const std::string with = userText(buildPrompt(input, {Strategy::Optimize}, templates()));
  EXPECT_CONTAINS(with, "Hot loop in SASS (the innermost loop, where the time goes), yours against nvcc's build of the "
                        "reference:\n" + lines + "\nObjective:");
}

TEST(Prompt, OptimizeShowsWhereTheKernelStands) {
  tasks::TaskSpec task = loadBuiltin("L1/saxpy");
  Attempt attempt;
  attempt.ptx = kSaxpyPtx;
  attempt.result.verdict = verify::Verdict::Correct;
  attempt.result.summary = "correct on 2 shape(s)";
  PromptInput input{task, "sm_90"};
  input.previous = attempt;
  // Neither timed nor profiled: the prompt says it has no figures.
  std::string user = userText(buildPrompt(input, {Strategy::Optimize}, templates()));
  EXPECT_CONTAINS(user, "Nothing was timed and no profile ran");
  EXPECT_CONTAINS(user, "Current speedup on the largest shape: unknown.");

  // Profiled in the emulator: the estimate, labelled one, and the lines to look at.
  verify::ProfileReport profile;
  profile.shape = {{"n", 65536}};
  profile.basis = "the emulator's exact counts on {n=65536}";
  for (verify::KernelProfileReport *k : {&profile.candidate, &profile.reference}) {
    k->launch.block = {256, 1, 1};
    k->launch.grid = {256, 1, 1};
    k->registers = 16;
    k->registersFrom = "compiler";
    k->profile.warpInstructions = 40000;
    exec::LineProfile line;
    line.line = 30;
    line.instruction = "ld.global.f32 %f1, [%rd5]";
    line.executions = line.globalRequests = 2048;
    line.globalSectors = 2048 * 4;
    line.globalIdealSectors = 2048 * 4;
    line.globalBytes = 2048 * 128;
    k->profile.lines.push_back(line);
  }
  profile.candidate.profile.lines[0].globalSectors = 2048 * 32; // a stride: a sector per lane
  verify::estimateKernel(profile.candidate, profile.ceilings, std::nullopt, "sm_90");
  verify::estimateKernel(profile.reference, profile.ceilings, std::nullopt, "sm_90");
  profile.estimatedSpeedup = profile.reference.estimatedSeconds / profile.candidate.estimatedSeconds;
  input.previous->result.profile = profile;
  user = userText(buildPrompt(input, {Strategy::Optimize}, templates()));
  EXPECT_CONTAINS(user, "Nothing was timed (no GPU here): the figures below are the emulator's estimate, not a "
                        "measurement, from the emulator's exact counts on {n=65536}.");
  EXPECT_CONTAINS(user, "Current speedup on the largest shape: not measured; estimated 0.12x the reference on {n=65536}");
  EXPECT_CONTAINS(user, "- Occupancy on {n=65536}: 8 blocks/SM (limited by warps)");
  EXPECT_CONTAINS(user, "bound by memory");
  EXPECT_CONTAINS(user, "  - line 30 `ld.global.f32 %f1, [%rd5]`: 32.0 sectors per request (ideal 4.0): 12% of the "
                        "bytes fetched are used");
  EXPECT_CONTAINS(user, "- The reference's, for comparison: 2048 global requests at 4.0 sectors/request");

  // Timed on a GPU: the measured speedup and position come first, no "Nothing was timed".
  verify::BenchmarkReport bench;
  bench.shape = {{"n", 1 << 24}};
  bench.speedup = 1.25;
  bench.bandwidthFraction = 0.8;
  input.previous->result.benchmarks.push_back(bench);
  user = userText(buildPrompt(input, {Strategy::Optimize}, templates()));
  EXPECT_EQ(user.find("Nothing was timed"), std::string::npos);
  EXPECT_CONTAINS(user, "Current speedup on the largest shape: 1.25x.");
  EXPECT_CONTAINS(user, "- Measured on {n=16777216}: 80% of the DRAM bandwidth.");
}

TEST(Prompt, EditedTemplateWithUnknownPlaceholderFails) {
  tasks::TaskSpec task = loadBuiltin("L1/saxpy");
  TemplateSet set = templates();
  set.templates["zero-shot"].text += "\n{{no_such_value}}\n";
  auto got = buildPrompt(PromptInput{task, "sm_90"}, {Strategy::ZeroShot}, set);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("zero-shot.md:"), std::string::npos) << got.error().message;
  EXPECT_NE(got.error().message.find("{{no_such_value}}"), std::string::npos);
}

// With nvcc's real PTX (NVRTC; label jit).
TEST(PromptReference, SgemmSpecAndFewShotFromCompiledReference) {
  tasks::TaskSpec task = loadBuiltin("L3/sgemm");
  tasks::ReferenceOptions options;
  options.cacheDir = std::filesystem::temp_directory_path() / "ptxforge-prompt-test-cache";
  auto reference = tasks::compileReference(task, "sm_90", options);
  ASSERT_TRUE(reference.ok()) << reference.error().message;
  PromptInput input{task, "sm_90", reference->ptx};
  std::string user = userText(buildPrompt(input, {Strategy::Spec, Strategy::FewShot}, templates()));
  EXPECT_CONTAINS(user, reference->ptx.substr(reference->ptx.find(".visible .entry sgemm"), 40));
  for (const char *needle : {"- `ld`: ", "- `fma`: ", "- `bar`: ", "- `cvta`: ", "- `setp`: "}) EXPECT_CONTAINS(user, needle);
  EXPECT_CONTAINS(user, ".version " + std::string(reference->ptx.substr(reference->ptx.find(".version") + 9, 3)));
}

// --- the skeleton strategy ---------------------------------------------------

namespace {

/// Declarations and control flow of saxpy, no arithmetic: what a skeleton answer holds.
const char *kSaxpySkeleton = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry saxpy(.param .u64 saxpy_param_0, .param .u64 saxpy_param_1, .param .f32 saxpy_param_2, .param .u32 saxpy_param_3)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<5>;
  .reg .b64 %rd<8>;
  // i = ctaid.x * ntid.x + tid.x; leave when i >= n
  setp.ge.s32 %p1, %r1, %r2;
  @%p1 bra $L__BB0_2;
  // y[i] = a * x[i] + y[i]
$L__BB0_2:
  ret;
}
)";

} // namespace

TEST(Prompt, ParseStrategiesAcceptsSkeleton) {
  auto list = parseStrategies("zero-shot,skeleton");
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_EQ(*list, (std::vector<Strategy>{Strategy::ZeroShot, Strategy::Skeleton}));
  EXPECT_EQ(parseStrategy("skeleton"), std::optional<Strategy>(Strategy::Skeleton));
  EXPECT_STREQ(strategyName(Strategy::Skeleton), "skeleton");
  auto bad = parseStrategies("skeletons");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("skeleton"), std::string::npos); // listed among the valid ones
}

TEST(Prompt, SkeletonRequestAsksForTheSkeletonOnly) {
  tasks::TaskSpec task = loadBuiltin("L1/saxpy");
  std::string user = userText(buildPrompt(PromptInput{task, "sm_90"}, {Strategy::ZeroShot, Strategy::Skeleton}, templates()));
  EXPECT_CONTAINS(user, "# First, only the skeleton");
  EXPECT_CONTAINS(user, "`.visible .entry saxpy`");
  EXPECT_CONTAINS(user, "`.target sm_90`");
  EXPECT_CONTAINS(user, ".param .u64 saxpy_param_0,  // x: f32* input"); // the task is still there
  EXPECT_EQ(user.find("# Answer format"), std::string::npos) << user;  // the skeleton section replaces it
  EXPECT_EQ(user.find("# Now fill in your skeleton"), std::string::npos);
  EXPECT_EQ(user.find("{{"), std::string::npos);
}

TEST(Prompt, SkeletonFillShowsTheDraftAndItsFeedback) {
  tasks::TaskSpec task = loadBuiltin("L1/saxpy");
  PromptInput input{task, "sm_90", kSaxpyPtx};
  input.skeleton = SkeletonDraft{kSaxpySkeleton, "The lint found (scripted): error[undeclared-register] on line 12\n"};
  std::string user =
      userText(buildPrompt(input, {Strategy::ZeroShot, Strategy::FewShot, Strategy::Skeleton}, templates()));
  EXPECT_CONTAINS(user, "# Now fill in your skeleton");
  EXPECT_CONTAINS(user, "```ptx\n" + std::string(kSaxpySkeleton));
  EXPECT_CONTAINS(user, "The lint found (scripted): error[undeclared-register] on line 12\n");
  EXPECT_CONTAINS(user, "# Answer format");
  EXPECT_CONTAINS(user, "fma.rn.f32 %f3, %f2, %f1, %f3;"); // few-shot still applies
  EXPECT_EQ(user.find("# First, only the skeleton"), std::string::npos);
  // Sections in the enum's order, the answer format last.
  EXPECT_LT(user.find("__global__"), user.find("# Now fill in your skeleton"));
  EXPECT_LT(user.find("# Now fill in your skeleton"), user.find("# Answer format"));

  // Without the Skeleton strategy a draft is ignored.
  std::string plain = userText(buildPrompt(input, {Strategy::ZeroShot}, templates()));
  EXPECT_EQ(plain.find("# Now fill in your skeleton"), std::string::npos);
  EXPECT_EQ(plain.find("$L__BB0_2:\n  ret;"), std::string::npos);
}

TEST(Prompt, SkeletonDoesNotCombineWithRepairOrOptimize) {
  tasks::TaskSpec task = loadBuiltin("L1/saxpy");
  PromptInput input{task, "sm_90"};
  input.previous = Attempt{kSaxpyPtx, {}};
  for (verify::Verdict verdict : {verify::Verdict::Wrong, verify::Verdict::Correct}) {
    input.previous->result.verdict = verdict;
    Strategy other = verdict == verify::Verdict::Correct ? Strategy::Optimize : Strategy::Repair;
    for (bool withDraft : {false, true}) {
      if (withDraft) input.skeleton = SkeletonDraft{kSaxpySkeleton, "The lint found no problems in it.\n"};
      else input.skeleton.reset();
      auto got = buildPrompt(input, {Strategy::ZeroShot, Strategy::Skeleton, other}, templates());
      ASSERT_FALSE(got.ok()) << strategyName(other) << (withDraft ? " with a draft" : "");
      EXPECT_EQ(got.error().kind, ErrorKind::InvalidInput);
      EXPECT_NE(got.error().message.find("skeleton"), std::string::npos) << got.error().message;
    }
    // The same input without Skeleton is fine.
    EXPECT_TRUE(buildPrompt(input, {Strategy::ZeroShot, other}, templates()).ok()) << strategyName(other);
  }
}

TEST(Prompt, SkeletonFeedbackReportsOnlyRealProblems) {
  tasks::TaskSpec task = loadBuiltin("L1/saxpy");
  // Declared registers the body will use, and no arithmetic: nothing to report.
  EXPECT_EQ(skeletonFeedback(task, kSaxpySkeleton), "The lint found no problems in it.\n");

  // Line 11 sets a predicate register that is never declared.
  std::string broken = kSaxpySkeleton;
  size_t at = broken.find("setp.ge.s32 %p1");
  ASSERT_NE(at, std::string::npos);
  broken.replace(at, std::string("setp.ge.s32 %p1").size(), "setp.ge.s32 %q1");
  std::string feedback = skeletonFeedback(task, broken);
  EXPECT_CONTAINS(feedback, "The lint found");
  EXPECT_CONTAINS(feedback, "undeclared-register");
  EXPECT_CONTAINS(feedback, "skeleton.ptx:11:");
  EXPECT_CONTAINS(feedback, "%q1");
  EXPECT_EQ(feedback.find("no problems"), std::string::npos);

  // The gate's own checks count too: a skeleton for another kernel name.
  std::string renamed = kSaxpySkeleton;
  renamed.replace(renamed.find(".entry saxpy("), std::string(".entry saxpy(").size(), ".entry saxpy2(");
  std::string gate = skeletonFeedback(task, renamed);
  EXPECT_CONTAINS(gate, "missing-kernel");
}
