// The solve loop through its library API: a scripted in-process backend
// answers each prompt (told apart by its section headers and its seed), the
// in-process emulator runs the gate, and a fresh store file records each run.
// What the end-to-end scenarios (solve_e2e.sh) already check through the CLI
// is not repeated; these tests look at what only the API shows: the prompts'
// contents and parents, dedupe without a second gate run, budgets counted
// from reported usage, backend errors, pending answers and resumes that send
// nothing twice, interruption from inside a request, and progress events.
//
// nvdisasm is hidden from the loop (PTXFORGE_NVDISASM points nowhere) except
// in the one test of SASS dedupe, which is skipped where nvdisasm is absent.
#include "solve/Solve.h"
#include "solve/RunLease.h"

#include "emu/EmuExecutor.h"
#include "llm/Backend.h"
#include "llm/RequestHash.h"
#include "prompt/Extract.h"
#include "prompt/PromptBuilder.h"
#include "store/Store.h"
#include "tasks/Reference.h"
#include "tasks/TaskSpec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <stop_token>
#include <string>
#include <vector>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

using namespace ptxforge;
using namespace ptxforge::solve;

namespace {

#define EXPECT_CONTAINS(haystack, needle)                                                                             \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "missing: " << (needle) << "\nin:\n" << (haystack)
#define EXPECT_NOT_CONTAINS(haystack, needle)                                                                         \
  EXPECT_EQ(std::string(haystack).find(needle), std::string::npos) << "unexpected: " << (needle) << "\nin:\n" << (haystack)
#define ASSERT_OK(result) ASSERT_TRUE((result).ok()) << (result).error().message

// --- the task, the templates and nvcc's PTX, loaded once --------------------

const tasks::TaskSpec &findTask(const std::string &name) {
  static const tasks::Suite suite = [] {
    Result<tasks::Suite> loaded = tasks::loadSuite(tasks::taskSearchRoots({}));
    EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
    return loaded.ok() ? std::move(loaded).value() : tasks::Suite{};
  }();
  for (const tasks::TaskSpec &task : suite.tasks)
    if (task.name == name) return task;
  ADD_FAILURE() << "no built-in task " << name;
  static const tasks::TaskSpec none;
  return none;
}

const tasks::TaskSpec &vectorAdd() { return findTask("vector_add"); }

const prompt::TemplateSet &templates() {
  static const prompt::TemplateSet set = [] {
    Result<prompt::TemplateSet> loaded = prompt::loadTemplates(prompt::defaultPromptsDir());
    EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
    return loaded.ok() ? std::move(loaded).value() : prompt::TemplateSet{};
  }();
  return set;
}

/// nvcc's PTX of vector_add: the correct kernel the scripted model answers with.
const std::string &referencePtx() {
  static const std::string ptx = [] {
    Result<tasks::CompiledReference> reference = tasks::compileReference(vectorAdd(), "sm_90");
    EXPECT_TRUE(reference.ok()) << (reference.ok() ? "" : reference.error().message);
    return reference.ok() ? reference->ptx : std::string();
  }();
  return ptx;
}

// --- what the scripted model writes -------------------------------------------

std::vector<std::string> splitLines(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string trimmed(const std::string &line) {
  size_t start = line.find_first_not_of(" \t\r");
  if (start == std::string::npos) return "";
  size_t end = line.find_last_not_of(" \t\r");
  return line.substr(start, end - start + 1);
}

std::string fenced(const std::string &ptx, const std::string &chatter = "Here is the kernel.") {
  std::string body = ptx;
  while (!body.empty() && body.back() == '\n') body.pop_back();
  return chatter + "\n\n```ptx\n" + body + "\n```\n";
}

/// The reference with a lint error before `ret`: a register that is never declared.
std::string withUndeclaredRegister(const std::string &ptx) {
  std::string out;
  bool inserted = false;
  for (const std::string &line : splitLines(ptx)) {
    if (!inserted && trimmed(line) == "ret;") {
      out += "\tadd.s32 \t%r999, %r999, 1;\n";
      inserted = true;
    }
    out += line + "\n";
  }
  EXPECT_TRUE(inserted) << "no ret in the reference";
  return out;
}

/// The reference without its output stores: runs, but never writes c.
std::string withoutStores(const std::string &ptx) {
  std::string out;
  for (const std::string &line : splitLines(ptx))
    if (!trimmed(line).starts_with("st.global")) out += line + "\n";
  EXPECT_NE(out.size(), ptx.size()) << "no st.global in the reference";
  return out;
}

/// The reference re-indented, with comments of both kinds: the same kernel after normalization.
std::string relaid(const std::string &ptx) {
  std::string out = "// a variant that changes nothing\n/* two\n   lines */\n";
  for (const std::string &line : splitLines(ptx)) out += "    " + trimmed(line) + "   \n\n";
  return out;
}

/// Only declarations and control flow, as a skeleton answer would have.
std::string skeletonOf(const std::string &ptx) {
  std::string out;
  for (const std::string &line : splitLines(ptx)) {
    std::string s = trimmed(line);
    if (s.empty() || s.starts_with(".") || s.starts_with("//") || s == "{" || s == "}" || s == ")" ||
        s.ends_with(":") || s.find("bra") != std::string::npos || s.starts_with("ret") || s.starts_with("setp"))
      out += line + "\n";
  }
  return out;
}

const char *kNoPtx = "To add two vectors, launch one thread per element and have each thread add its pair.";

/// Which prompt a request is, by the section headers of prompts/*.md.
enum class PromptKind { Initial, Repair, Optimize, Skeleton, Fill };

std::string userMessage(const llm::Request &request) {
  for (const llm::Message &message : request.messages)
    if (message.role == llm::Role::User) return message.content;
  ADD_FAILURE() << "a request without a user message";
  return "";
}

PromptKind promptKind(const llm::Request &request) {
  std::string user = userMessage(request);
  if (user.find("# First, only the skeleton") != std::string::npos) return PromptKind::Skeleton;
  if (user.find("# Now fill in your skeleton") != std::string::npos) return PromptKind::Fill;
  if (user.find("# Your previous attempt failed") != std::string::npos) return PromptKind::Repair;
  if (user.find("# Make your correct kernel faster") != std::string::npos) return PromptKind::Optimize;
  return PromptKind::Initial;
}

llm::Completion answer(std::string text, int64_t promptTokens = 0, int64_t completionTokens = 0) {
  llm::Completion completion;
  completion.text = std::move(text);
  completion.finishReason = llm::FinishReason::Stop;
  completion.rawFinishReason = "stop";
  completion.model = "scripted-1";
  if (promptTokens || completionTokens) {
    completion.usage.reported = true;
    completion.usage.promptTokens = promptTokens;
    completion.usage.completionTokens = completionTokens;
  }
  return completion;
}

/// A model whose answers a test scripts. Safe to call from several threads.
class ScriptedBackend : public llm::Backend {
public:
  using Script = std::function<Result<llm::Completion>(const llm::Request &)>;
  explicit ScriptedBackend(Script script) : script_(std::move(script)) {}

  std::string kind() const override { return "scripted"; }
  std::string describe() const override { return "scripted test model"; }

  int calls() const { return calls_.load(); }
  std::vector<llm::Request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  /// The requests sent for prompts of `kind`, in the order they were sent.
  std::vector<llm::Request> requests(PromptKind kind) const {
    std::vector<llm::Request> out;
    for (const llm::Request &request : requests())
      if (promptKind(request) == kind) out.push_back(request);
    return out;
  }

protected:
  Result<llm::Completion> completeValid(const llm::Request &request, const std::string &,
                                        const llm::CallContext &) override {
    ++calls_;
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request);
    }
    return script_(request);
  }

private:
  Script script_;
  std::atomic<int> calls_{0};
  mutable std::mutex mutex_;
  std::vector<llm::Request> requests_;
};

/// The slot a request was made for: seeds are seed + (round - 1) * candidates + slot.
int slotOf(const llm::Request &request, int candidates, uint64_t seed = 1) {
  EXPECT_TRUE(request.seed.has_value());
  return static_cast<int>((request.seed.value_or(0) - static_cast<int64_t>(seed)) % candidates);
}

/// Always the reference.
Result<llm::Completion> alwaysCorrect(const llm::Request &) { return answer(fenced(referencePtx())); }

/// First attempts fail by slot (0 no PTX, 1 lint error, 2 wrong); repairs and
/// optimizations are the reference (optimizations re-laid: duplicates).
/// Depends only on the request, so a replayed or resumed run gets the same answers.
Result<llm::Completion> mistakesThenCorrect(const llm::Request &request, int candidates) {
  PromptKind kind = promptKind(request);
  if (kind == PromptKind::Initial) {
    int mistake = slotOf(request, candidates) % 3;
    if (mistake == 0) return answer(kNoPtx);
    if (mistake == 1) return answer(fenced(withUndeclaredRegister(referencePtx())));
    return answer(fenced(withoutStores(referencePtx())));
  }
  if (kind == PromptKind::Optimize) return answer(fenced(relaid(referencePtx()), "A faster version:"));
  if (kind == PromptKind::Skeleton) return answer(fenced(skeletonOf(referencePtx()), "The skeleton:"));
  return answer(fenced(referencePtx(), "Fixed."));
}

// --- the fixture ----------------------------------------------------------------

/// $PTXFORGE_NVDISASM as the test started; the tests set their own.
const std::optional<std::string> &nvdisasmFromEnvironment() {
  static const std::optional<std::string> value = [] {
    const char *set = std::getenv("PTXFORGE_NVDISASM");
    return set ? std::optional<std::string>(set) : std::nullopt;
  }();
  return value;
}

/// Where toolchain::findNvdisasm() finds nothing, so that dedupe is by PTX
/// only (the same on every machine) and no nvdisasm process runs per
/// candidate (about half a second each, most of this suite's time otherwise).
void hideNvdisasm() {
  nvdisasmFromEnvironment(); // remember the caller's value before the first override
  ::setenv("PTXFORGE_NVDISASM", "/nonexistent/nvdisasm", 1);
}

/// nvdisasm found as it would be without the tests' override.
void restoreNvdisasm() {
  if (nvdisasmFromEnvironment()) ::setenv("PTXFORGE_NVDISASM", nvdisasmFromEnvironment()->c_str(), 1);
  else ::unsetenv("PTXFORGE_NVDISASM");
}

/// A store file of its own per test, the emulator as executor, no nvdisasm.
class SolveTest : public ::testing::Test {
protected:
  void SetUp() override {
    hideNvdisasm();
    ASSERT_FALSE(referencePtx().empty());
    ASSERT_FALSE(vectorAdd().name.empty());
    const ::testing::TestInfo *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("ptxforge-solve-test-" + std::to_string(::getpid()) + "-" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Result<std::unique_ptr<store::Store>> opened = store::Store::open((dir_ / "runs.db").string());
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    store_ = std::move(opened).value();
    executor_ = emu::createEmuExecutor();
  }
  void TearDown() override {
    hideNvdisasm();
    store_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  /// The smallest of the task's small shapes (n = 33, not a multiple of the
  /// block): the loop does not care about sizes, and the emulator under ASan
  /// spends most of this suite's time on the larger one.
  static size_t smallestShape() {
    const tasks::TaskSpec &task = vectorAdd();
    size_t best = task.smallShapes.empty() ? 0 : task.smallShapes.front();
    for (size_t index : task.smallShapes)
      if (task.shapes[index].at("n") < task.shapes[best].at("n")) best = index;
    return best;
  }

  /// Small and fast: one small shape and one trial on the emulator, no timing.
  static SolveOptions smallOptions(int rounds, int candidates) {
    SolveOptions options;
    options.rounds = rounds;
    options.candidates = candidates;
    options.strategies = {prompt::Strategy::ZeroShot};
    options.concurrency = 1; // the script's order and the store's ids are deterministic
    options.check.trials = 1;
    options.check.shapeIndices = {smallestShape()};
    options.check.benchmark = false;
    return options;
  }

  Result<SolveOutcome> run(llm::Backend &backend, const SolveOptions &options,
                           std::optional<int64_t> resumeRunId = std::nullopt, std::stop_token stop = {},
                           std::function<void(const ProgressEvent &)> onProgress = {},
                           const tasks::TaskSpec *task = nullptr, const ResumeOverrides &overrides = {}) {
    SolveContext context{.task = task ? *task : vectorAdd(),
                         .backend = backend,
                         .modelSpec = "scripted",
                         .executor = *executor_,
                         .store = *store_,
                         .templates = templates(),
                         .provenance = nlohmann::json::object(),
                         .onProgress = std::move(onProgress),
                         .stop = std::move(stop)};
    return solve::solve(context, options, resumeRunId, overrides);
  }

  store::RunData load(int64_t runId) {
    Result<store::RunData> data = store_->load(runId);
    EXPECT_TRUE(data.ok()) << (data.ok() ? "" : data.error().message);
    return data.ok() ? std::move(data).value() : store::RunData{};
  }

  /// "round slot kind verdict" per attempt, as the store has them.
  std::vector<std::string> verdicts(int64_t runId) {
    std::vector<std::string> out;
    for (const store::AttemptRow &row : load(runId).attempts)
      out.push_back(std::to_string(row.prompt.round) + " " + std::to_string(row.prompt.slot) + " " + row.prompt.kind +
                    " " + (row.result ? row.result->verdict : "-"));
    return out;
  }

  const store::AttemptRow *attempt(const store::RunData &data, int round, int slot, const std::string &kind) {
    for (const store::AttemptRow &row : data.attempts)
      if (row.prompt.round == round && row.prompt.slot == slot && row.prompt.kind == kind) return &row;
    ADD_FAILURE() << "no attempt " << round << "/" << slot << "/" << kind;
    return nullptr;
  }

  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<exec::Executor> executor_;
};

} // namespace

// --- normalizePtx -----------------------------------------------------------------

TEST(NormalizePtx, CommentsAndWhitespaceCollapse) {
  std::string plain = ".visible .entry k()\n{\n.reg .b32 %r<3>;\nadd.s32 %r1, %r2, 1;\nret;\n}\n";
  std::string noisy = "// generated by hand\n"
                      "  .visible   .entry\tk()\r\n"
                      "{\n"
                      "\n"
                      "\t.reg .b32 %r<3>;   // three registers\n"
                      "   /* the sum */ add.s32  %r1,   %r2, 1;\n"
                      "\n\n"
                      "\tret;\t\n"
                      "}";
  EXPECT_EQ(normalizePtx(plain), plain);
  EXPECT_EQ(normalizePtx(noisy), plain);
  EXPECT_EQ(normalizePtx(""), "");
  EXPECT_EQ(normalizePtx("// only a comment\n\n   \n"), "");
}

TEST(NormalizePtx, LaunchDirectivesAreKept) {
  std::string kernel = ".visible .entry k()\n{\nret;\n}\n";
  std::string wide = "// @ptxforge block=(256,1,1) grid=(4,1,1) smem=0\n" + kernel;
  std::string narrow = "// @ptxforge block=(128,1,1) grid=(8,1,1) smem=0\n" + kernel;
  EXPECT_NE(normalizePtx(wide), normalizePtx(narrow));
  EXPECT_NE(normalizePtx(wide), normalizePtx(kernel));
  EXPECT_EQ(normalizePtx(wide), wide);
  // The directive's own spacing collapses like any line's.
  EXPECT_EQ(normalizePtx("  //   @ptxforge   block=(256,1,1) grid=(4,1,1) smem=0  \n" + kernel),
            "// @ptxforge block=(256,1,1) grid=(4,1,1) smem=0\n" + kernel);
  // A directive after code on the same line stays too; an ordinary comment there goes.
  EXPECT_EQ(normalizePtx("ret; // @ptxforge block=(32,1,1)\n"), "ret; // @ptxforge block=(32,1,1)\n");
  EXPECT_EQ(normalizePtx("ret; // ptxforge is not a directive without the @\n"), "ret;\n");
}

TEST(NormalizePtx, BlockCommentsAcrossLines) {
  std::string plain = "ld.global.f32 %f1, [%rd1];\nret;\n";
  EXPECT_EQ(normalizePtx("ld.global.f32 %f1, [%rd1]; /* a comment\n   over\n   three lines */\nret;\n"), plain);
  EXPECT_EQ(normalizePtx("/* leading\n*/ld.global.f32 %f1, [%rd1];\n/**/ret;"), plain);
  // A directive inside a block comment is only a comment.
  EXPECT_EQ(normalizePtx("/* // @ptxforge block=(1,1,1) */ret;\n"), "ret;\n");
  // "/*/" opens a comment without closing it.
  EXPECT_EQ(normalizePtx("ret; /*/ still a comment */\n"), "ret;\n");
}

TEST(NormalizePtx, UnterminatedCommentsEndTheText) {
  EXPECT_EQ(normalizePtx("ret;\n/* never closed\nmore text\n}"), "ret;\n");
  EXPECT_EQ(normalizePtx("ret;\n/*"), "ret;\n");
  EXPECT_EQ(normalizePtx("ret; /"), "ret; /\n");
  EXPECT_EQ(normalizePtx("ret; //"), "ret;\n");
  EXPECT_EQ(normalizePtx("ret; // @ptxforge"), "ret; // @ptxforge\n");
}

// PTX, like C, reads a comment as whitespace, so a block comment between two
// tokens separates them.
TEST(NormalizePtx, BlockCommentBetweenTokensSeparatesThem) {
  EXPECT_EQ(normalizePtx("ld.global.f32/* x[i] */%f1, [%rd1];\n"), normalizePtx("ld.global.f32 %f1, [%rd1];\n"));
}

// --- options as the run records them ---------------------------------------------

TEST(SolveOptionsJson, RoundTripsEveryField) {
  SolveOptions options;
  options.rounds = 7;
  options.candidates = 5;
  options.strategies = {prompt::Strategy::ZeroShot, prompt::Strategy::FewShot, prompt::Strategy::Skeleton};
  options.tendencies = {"few registers", "wide loads"};
  options.temperatures = {0.1, 0.9};
  options.topP = 0.95;
  options.maxTokens = 1234;
  options.seed = 42;
  options.stream = true;
  options.concurrency = 3;
  options.maxTokensTotal = 100000;
  options.maxWallSeconds = 12.5;
  options.maxCandidatesTotal = 11;
  options.objective = "fewer registers";
  options.arch = "sm_80";
  options.check.shapeIndices = {0, 2};
  options.check.seed = 9;
  options.check.trials = 2;
  options.check.benchmark = false;
  options.check.timingRounds = 4;
  options.check.repetitionsPerRound = 6;
  options.check.launchTimeoutMs = 777;
  options.check.lint = false;
  options.slots = {1, 4};

  nlohmann::json json = optionsToJson(options);
  Result<SolveOptions> back = optionsFromJson(json);
  ASSERT_OK(back);
  EXPECT_EQ(back->slots, options.slots);
  EXPECT_FALSE(optionsToJson(SolveOptions{}).contains("slots")) << "a whole run's parameters have no slots";
  EXPECT_EQ(back->rounds, 7);
  EXPECT_EQ(back->candidates, 5);
  EXPECT_EQ(back->strategies, options.strategies);
  EXPECT_EQ(back->tendencies, options.tendencies);
  EXPECT_EQ(back->temperatures, options.temperatures);
  EXPECT_EQ(back->topP, std::optional<double>(0.95));
  EXPECT_EQ(back->maxTokens, std::optional<int>(1234));
  EXPECT_EQ(back->seed, 42u);
  EXPECT_TRUE(back->stream);
  EXPECT_EQ(back->concurrency, 3);
  EXPECT_EQ(back->maxTokensTotal, 100000);
  EXPECT_EQ(back->maxWallSeconds, 12.5);
  EXPECT_EQ(back->maxCandidatesTotal, 11);
  EXPECT_EQ(back->objective, "fewer registers");
  EXPECT_EQ(back->arch, "sm_80");
  EXPECT_EQ(back->check.shapeIndices, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(back->check.seed, 9u);
  EXPECT_EQ(back->check.trials, 2);
  EXPECT_FALSE(back->check.benchmark);
  EXPECT_EQ(back->check.timingRounds, 4);
  EXPECT_EQ(back->check.repetitionsPerRound, 6);
  EXPECT_EQ(back->check.launchTimeoutMs, 777u);
  EXPECT_FALSE(back->check.lint);
  EXPECT_EQ(back->check.arch, "sm_80"); // the gate compiles for the run's arch
  // And again: what a resumed run records is what it read.
  EXPECT_EQ(optionsToJson(*back), json);
}

TEST(SolveOptionsJson, UnsetOptionalsStayUnsetAndEmptyListsBecomeDefaults) {
  SolveOptions options;
  options.topP.reset();
  options.maxTokens.reset();
  nlohmann::json json = optionsToJson(options);
  EXPECT_TRUE(json.at("top_p").is_null());
  EXPECT_TRUE(json.at("max_tokens").is_null());
  Result<SolveOptions> back = optionsFromJson(json);
  ASSERT_OK(back);
  EXPECT_FALSE(back->topP.has_value());
  EXPECT_FALSE(back->maxTokens.has_value()); // not the struct's default of 8192
  EXPECT_EQ(back->tendencies, defaultTendencies());
  EXPECT_EQ(back->temperatures, defaultTemperatures());
  EXPECT_EQ(back->strategies, options.strategies);
  EXPECT_EQ(back->check.shapeIndices, std::vector<size_t>{});
  EXPECT_TRUE(back->check.benchmark);
}

TEST(SolveOptionsJson, MalformedParametersAreInvalidInputNotExceptions) {
  const nlohmann::json good = optionsToJson(SolveOptions{});
  auto expectInvalid = [](const nlohmann::json &json, const std::string &what) {
    Result<SolveOptions> got = SolveOptions{};
    EXPECT_NO_THROW(got = optionsFromJson(json)) << what;
    ASSERT_FALSE(got.ok()) << what;
    EXPECT_EQ(got.error().kind, ErrorKind::InvalidInput) << what;
    EXPECT_CONTAINS(got.error().message, "run parameters");
  };
  for (const char *key : {"rounds", "strategies", "tendencies", "top_p", "max_tokens", "seed", "arch", "check"}) {
    nlohmann::json missing = good;
    missing.erase(key);
    expectInvalid(missing, std::string("missing ") + key);
  }
  for (const char *key : {"shapes", "trials", "launch_timeout_ms", "lint"}) {
    nlohmann::json missing = good;
    missing["check"].erase(key);
    expectInvalid(missing, std::string("missing check.") + key);
  }
  std::vector<std::pair<std::string, nlohmann::json>> wrongTypes = {
      {"rounds", "three"},   {"strategies", nlohmann::json::array({"zero-shot", 3})},
      {"top_p", "high"},     {"temperatures", nlohmann::json::array({"hot"})},
      {"stream", "yes"},     {"max_wall_seconds", nlohmann::json::object()},
      {"check", "all"},      {"objective", 5},
  };
  for (const auto &[key, value] : wrongTypes) {
    nlohmann::json wrong = good;
    wrong[key] = value;
    expectInvalid(wrong, key + " = " + value.dump());
  }
  nlohmann::json unknownStrategy = good;
  unknownStrategy["strategies"] = {"zero-shot", "telepathy"};
  expectInvalid(unknownStrategy, "unknown strategy");
  expectInvalid(nlohmann::json(nullptr), "null");
  expectInvalid(nlohmann::json::array(), "an array");
}

// --- a whole run ------------------------------------------------------------------

// Untimed (the emulator), each optimize round builds on the newest correct
// kernel of its slot: round 4 shows round 3's kernel, not round 2's.
TEST_F(SolveTest, UntimedOptimizeRoundsBuildOnTheNewestCorrectKernel) {
  SolveOptions options = smallOptions(4, 1);
  ScriptedBackend backend([](const llm::Request &request) { return mistakesThenCorrect(request, 1); });
  Result<SolveOutcome> outcome = run(backend, options);
  ASSERT_OK(outcome);
  store::RunData data = load(outcome->runId);
  const store::AttemptRow *repaired = attempt(data, 2, 0, "repair");
  const store::AttemptRow *third = attempt(data, 3, 0, "optimize");
  const store::AttemptRow *fourth = attempt(data, 4, 0, "optimize");
  ASSERT_TRUE(repaired && third && fourth && repaired->candidate && third->candidate);
  EXPECT_EQ(third->prompt.parentCandidateId, std::optional<int64_t>(repaired->candidate->id));
  EXPECT_EQ(fourth->prompt.parentCandidateId, std::optional<int64_t>(third->candidate->id));
}

// With the emulator's profile (what `solve` turns on when nothing is timed),
// every optimize prompt carries the estimate and the previous round's kernel:
// round 3 shows round 2's kernel and its own figures, not round 1's again.
TEST_F(SolveTest, UntimedOptimizePromptsCarryTheEstimateOfThePreviousRoundsKernel) {
  SolveOptions options = smallOptions(3, 1);
  options.check.profile = true;
  const std::string narrower = "// @ptxforge block=(64,1,1) grid=(ceildiv(n,64),1,1)\n";
  ScriptedBackend backend([&](const llm::Request &request) {
    PromptKind kind = promptKind(request);
    if (kind == PromptKind::Initial) return answer(fenced(referencePtx()));
    // Round 2 narrows the blocks; round 3 (whose prompt shows round 2's kernel) widens them back.
    if (userMessage(request).find(narrower) == std::string::npos) return answer(fenced(narrower + referencePtx()));
    return answer(fenced("// @ptxforge block=(512,1,1) grid=(ceildiv(n,512),1,1)\n" + referencePtx()));
  });
  Result<SolveOutcome> outcome = run(backend, options);
  ASSERT_OK(outcome);
  EXPECT_EQ(verdicts(outcome->runId),
            (std::vector<std::string>{"1 0 initial correct", "2 0 optimize correct", "3 0 optimize correct"}));
  std::vector<llm::Request> prompts = backend.requests(PromptKind::Optimize);
  ASSERT_EQ(prompts.size(), 2u);
  const std::string second = userMessage(prompts[0]), third = userMessage(prompts[1]);
  EXPECT_NE(second, third);
  for (const std::string &prompt : {second, third}) {
    EXPECT_NE(prompt.find("Nothing was timed (no GPU here): the figures below are the emulator's estimate"),
              std::string::npos)
        << prompt;
    EXPECT_NE(prompt.find("Current speedup on the largest shape: not measured; estimated "), std::string::npos);
    EXPECT_NE(prompt.find("x the reference (candidate "), std::string::npos);
    EXPECT_NE(prompt.find("- Occupancy on {n=65536}: "), std::string::npos);
    EXPECT_NE(prompt.find("global requests at 4.0 sectors/request"), std::string::npos);
  }
  EXPECT_EQ(second.find(narrower), std::string::npos) << "round 2 builds on round 1's kernel";
  EXPECT_NE(third.find(narrower), std::string::npos) << "round 3 builds on round 2's kernel";
  // Each prompt's estimate is of the kernel it shows: round 1's kernel is the
  // reference itself, round 2's launches 64-thread blocks.
  EXPECT_NE(second.find("estimated 1.00x the reference"), std::string::npos) << second;
  EXPECT_NE(third.find("block 64x1x1"), std::string::npos) << third;
  store::RunData data = load(outcome->runId);
  const store::AttemptRow *round2 = attempt(data, 2, 0, "optimize");
  const store::AttemptRow *round3 = attempt(data, 3, 0, "optimize");
  ASSERT_TRUE(round2 && round3 && round2->candidate);
  EXPECT_EQ(round3->prompt.parentCandidateId, std::optional<int64_t>(round2->candidate->id));
  // The stored result keeps the profile: a resumed run's prompt is the same.
  ASSERT_TRUE(round2->result);
  Result<verify::CheckResult> stored = verify::checkResultFromJson(round2->result->result);
  ASSERT_OK(stored);
  ASSERT_TRUE(stored->profile);
  EXPECT_NE(third.find(prompt::formatPosition(*stored)), std::string::npos);
}

// Nothing timed: candidates are ranked by the emulator profile's estimate.
// Round 1 loads one input twice (more global traffic, a worse estimate),
// round 2 is nvcc's kernel, round 3 loads the other input twice: round 4
// builds on round 2's kernel, not on the newest (round 3), and round 2's is
// the run's best, labelled an estimate, not the earliest correct one.
TEST_F(SolveTest, UntimedCandidatesAreRankedByTheEmulatorsEstimate) {
  SolveOptions options = smallOptions(4, 1);
  options.check.profile = true;
  auto loadingTwice = [](const std::string &ptx, const std::string &load) {
    std::string out = ptx;
    const size_t at = out.find(load);
    EXPECT_NE(at, std::string::npos) << load;
    if (at == std::string::npos) return out;
    const size_t end = out.find('\n', at) + 1;
    out.insert(end, out.substr(out.rfind('\n', at) + 1, end - out.rfind('\n', at) - 1));
    return out;
  };
  const std::string reference = referencePtx();
  const std::string firstTwice = loadingTwice(reference, "%f1, [");
  const std::string secondTwice = loadingTwice(reference, "%f2, [");
  ASSERT_NE(firstTwice, reference);
  ASSERT_NE(secondTwice, firstTwice);
  std::atomic<int> optimizeRequests{0};
  ScriptedBackend backend([&](const llm::Request &request) {
    if (promptKind(request) == PromptKind::Initial) return answer(fenced(firstTwice));
    return answer(fenced(++optimizeRequests == 1 ? reference : secondTwice));
  });
  Result<SolveOutcome> outcome = run(backend, options);
  ASSERT_OK(outcome);
  EXPECT_EQ(verdicts(outcome->runId),
            (std::vector<std::string>{"1 0 initial correct", "2 0 optimize correct", "3 0 optimize correct",
                                      "4 0 optimize correct"}));
  store::RunData data = load(outcome->runId);
  const store::AttemptRow *rounds[] = {attempt(data, 1, 0, "initial"), attempt(data, 2, 0, "optimize"),
                                       attempt(data, 3, 0, "optimize"), attempt(data, 4, 0, "optimize")};
  double estimates[3] = {};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(rounds[i] && rounds[i]->candidate && rounds[i]->result) << "round " << i + 1;
    Result<verify::CheckResult> stored = verify::checkResultFromJson(rounds[i]->result->result);
    ASSERT_OK(stored);
    ASSERT_TRUE(stored->profile) << "round " << i + 1;
    estimates[i] = stored->profile->estimatedSpeedup;
  }
  // The premise: the emulator estimates nvcc's kernel faster than either double load.
  ASSERT_GT(estimates[1], estimates[0]);
  ASSERT_GT(estimates[1], estimates[2]);
  ASSERT_TRUE(rounds[3]);
  EXPECT_EQ(rounds[1]->prompt.parentCandidateId, std::optional<int64_t>(rounds[0]->candidate->id));
  EXPECT_EQ(rounds[2]->prompt.parentCandidateId, std::optional<int64_t>(rounds[1]->candidate->id));
  EXPECT_EQ(rounds[3]->prompt.parentCandidateId, std::optional<int64_t>(rounds[1]->candidate->id))
      << "round 4 builds on the better-estimated round 2, not the newest";
  // The run's best: round 2's kernel, by the estimate, said to be one.
  EXPECT_EQ(outcome->bestCandidateId, std::optional<int64_t>(rounds[1]->candidate->id));
  EXPECT_FALSE(outcome->bestSpeedup);
  ASSERT_TRUE(outcome->bestEstimatedSpeedup);
  EXPECT_DOUBLE_EQ(*outcome->bestEstimatedSpeedup, estimates[1]);
  EXPECT_EQ(outcome->bestPtx, rounds[1]->candidate->ptx);
  const nlohmann::json &best = outcome->summary["best"];
  EXPECT_EQ(best["candidate_id"], rounds[1]->candidate->id);
  EXPECT_EQ(best["ranked_by"], "estimate");
  EXPECT_TRUE(best["speedup"].is_null());
  EXPECT_DOUBLE_EQ(best["estimated_speedup"].get<double>(), estimates[1]);
  ASSERT_EQ(outcome->summary["rounds"].size(), 4u);
  EXPECT_DOUBLE_EQ(outcome->summary["rounds"][0]["best_estimated_speedup"].get<double>(), estimates[0]);
  EXPECT_DOUBLE_EQ(outcome->summary["rounds"][3]["best_estimated_speedup"].get<double>(), estimates[1]);
}

// Without the profile (no estimates), the best is still the earliest correct
// candidate, ranked by order.
TEST_F(SolveTest, UntimedWithoutTheProfileTheBestIsTheEarliestCorrect) {
  SolveOptions options = smallOptions(2, 1);
  ScriptedBackend backend([](const llm::Request &) { return answer(fenced(referencePtx())); });
  Result<SolveOutcome> outcome = run(backend, options);
  ASSERT_OK(outcome);
  store::RunData data = load(outcome->runId);
  const store::AttemptRow *first = attempt(data, 1, 0, "initial");
  ASSERT_TRUE(first && first->candidate);
  EXPECT_EQ(outcome->bestCandidateId, std::optional<int64_t>(first->candidate->id));
  EXPECT_FALSE(outcome->bestEstimatedSpeedup);
  EXPECT_EQ(outcome->summary["best"]["ranked_by"], "order");
  EXPECT_TRUE(outcome->summary["best"]["estimated_speedup"].is_null());
}

TEST_F(SolveTest, FailuresAreRepairedThenOptimized) {
  SolveOptions options = smallOptions(3, 3);
  ScriptedBackend backend([](const llm::Request &request) { return mistakesThenCorrect(request, 3); });
  Result<SolveOutcome> outcome = run(backend, options);
  ASSERT_OK(outcome);
  EXPECT_EQ(outcome->status, store::RunStatus::Done);
  EXPECT_EQ(outcome->stoppedBecause, "all rounds ran");
  EXPECT_EQ(backend.calls(), 9);

  EXPECT_EQ(verdicts(outcome->runId), (std::vector<std::string>{
                                          "1 0 initial no-ptx",
                                          "1 1 initial lint-error",
                                          "1 2 initial wrong",
                                          "2 0 repair correct",
                                          "2 1 repair correct",
                                          "2 2 repair correct",
                                          "3 0 optimize correct",
                                          "3 1 optimize correct",
                                          "3 2 optimize correct",
                                      }));

  store::RunData data = load(outcome->runId);
  EXPECT_EQ(data.run.status, "done");
  EXPECT_EQ(data.run.model, "scripted");
  EXPECT_EQ(data.run.parameters, optionsToJson(options));

  // The best is the first correct candidate, and its PTX is the module the model sent.
  const store::AttemptRow *firstCorrect = attempt(data, 2, 0, "repair");
  ASSERT_NE(firstCorrect, nullptr);
  ASSERT_TRUE(firstCorrect->candidate.has_value());
  ASSERT_TRUE(outcome->bestCandidateId.has_value());
  EXPECT_EQ(*outcome->bestCandidateId, firstCorrect->candidate->id);
  Result<prompt::ExtractedPtx> expected = prompt::extractPtx(fenced(referencePtx()));
  ASSERT_OK(expected);
  EXPECT_EQ(outcome->bestPtx, expected->ptx);
  EXPECT_FALSE(outcome->bestSpeedup.has_value()); // the emulator does not time
  EXPECT_EQ(outcome->summary["best"]["candidate_id"], *outcome->bestCandidateId);
  EXPECT_EQ(outcome->summary["counts"],
            (nlohmann::json{{"no-ptx", 1}, {"lint-error", 1}, {"wrong", 1}, {"correct", 6}}));
  EXPECT_EQ(outcome->summary["candidates"], 9);
  ASSERT_EQ(outcome->summary["rounds"].size(), 3u);
  EXPECT_FALSE(outcome->summary["rounds"][0]["has_correct"].get<bool>());
  EXPECT_TRUE(outcome->summary["rounds"][1]["has_correct"].get<bool>());

  // The no-PTX answer is a candidate without PTX, with the extractor's reason.
  const store::AttemptRow *noPtx = attempt(data, 1, 0, "initial");
  ASSERT_NE(noPtx, nullptr);
  ASSERT_TRUE(noPtx->candidate.has_value());
  EXPECT_EQ(noPtx->candidate->ptx, "");
  EXPECT_FALSE(noPtx->candidate->extractError.empty());

  // Each repair works on its slot's failed candidate and shows what the gate found.
  std::vector<llm::Request> repairs = backend.requests(PromptKind::Repair);
  ASSERT_EQ(repairs.size(), 3u);
  for (int slot = 0; slot < 3; ++slot) {
    const store::AttemptRow *failed = attempt(data, 1, slot, "initial");
    const store::AttemptRow *repair = attempt(data, 2, slot, "repair");
    ASSERT_TRUE(failed && repair && failed->candidate);
    EXPECT_EQ(repair->prompt.parentCandidateId, std::optional<int64_t>(failed->candidate->id)) << "slot " << slot;
    EXPECT_EQ(repair->prompt.strategies, "zero-shot,repair");
    EXPECT_EQ(slotOf(repairs[static_cast<size_t>(slot)], 3), slot);
  }
  EXPECT_CONTAINS(userMessage(repairs[0]), "no PTX module in the answer");
  EXPECT_CONTAINS(userMessage(repairs[1]), "undeclared-register");
  EXPECT_CONTAINS(userMessage(repairs[1]), "%r999");
  EXPECT_CONTAINS(userMessage(repairs[1]), "Verdict: `lint-error`");
  EXPECT_CONTAINS(userMessage(repairs[2]), "Verdict: `wrong`");
  EXPECT_CONTAINS(userMessage(repairs[2]), "output `c`");

  // Each optimization works on its slot's correct candidate, whose PTX it shows.
  std::vector<llm::Request> optimizations = backend.requests(PromptKind::Optimize);
  ASSERT_EQ(optimizations.size(), 3u);
  for (int slot = 0; slot < 3; ++slot) {
    const store::AttemptRow *correct = attempt(data, 2, slot, "repair");
    const store::AttemptRow *optimize = attempt(data, 3, slot, "optimize");
    ASSERT_TRUE(correct && optimize && correct->candidate);
    EXPECT_EQ(optimize->prompt.parentCandidateId, std::optional<int64_t>(correct->candidate->id)) << "slot " << slot;
    std::string user = userMessage(optimizations[static_cast<size_t>(slot)]);
    EXPECT_CONTAINS(user, correct->candidate->ptx.substr(0, correct->candidate->ptx.size() - 1));
    EXPECT_NOT_CONTAINS(user, "# Your previous attempt failed");
  }
  // The stored requests are the ones sent (with concurrency 1, in the store's order).
  std::vector<llm::Request> sent = backend.requests();
  ASSERT_EQ(data.attempts.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    const store::AttemptRow &row = data.attempts[i];
    EXPECT_EQ(row.prompt.request, llm::canonicalRequestJson(sent[i])) << "attempt " << i;
    EXPECT_EQ(row.prompt.requestHash, llm::requestHash(sent[i])) << "attempt " << i;
    ASSERT_TRUE(row.completion.has_value());
    EXPECT_EQ(row.completion->status, "complete");
  }
}

// An eval shard's run: only its slots, each asking what it would ask in the
// whole run (the same seeds), every attempt reported as it ends, and its
// requests bounded by a limit shared with other runs.
TEST_F(SolveTest, SlotsRunTheirShareWithTheWholeRunsSeedsUnderASharedLimit) {
  SolveOptions options = smallOptions(2, 4);
  options.slots = {3, 1};
  options.concurrency = 2;
  ScriptedBackend backend([](const llm::Request &request) {
    Result<llm::Completion> completion = mistakesThenCorrect(request, 4);
    if (completion) completion->usage = llm::Usage{10, 5, true, ""};
    return completion;
  });
  RequestLimit limit(1);
  std::mutex gate;
  std::mutex seen;
  std::vector<std::tuple<int, int, bool>> done;
  int64_t promptTokens = 0, completionTokens = 0;
  SolveContext context{.task = vectorAdd(),
                       .backend = backend,
                       .modelSpec = "scripted",
                       .executor = *executor_,
                       .store = *store_,
                       .templates = templates()};
  context.requests = &limit;
  context.gate = &gate;
  context.onAttemptDone = [&](const AttemptDone &attempt) {
    std::lock_guard lock(seen);
    done.emplace_back(attempt.round, attempt.slot, attempt.asked);
  };
  context.onTokens = [&](int64_t in, int64_t out) {
    std::lock_guard lock(seen);
    promptTokens += in;
    completionTokens += out;
  };
  Result<SolveOutcome> outcome = solve::solve(context, options);
  ASSERT_OK(outcome);
  EXPECT_EQ(outcome->status, store::RunStatus::Done);

  std::multiset<int64_t> seeds;
  for (const llm::Request &request : backend.requests()) seeds.insert(request.seed.value_or(-1));
  // seed + (round - 1) * 4 + slot for slots 1 and 3 of rounds 1 and 2.
  EXPECT_EQ(seeds, (std::multiset<int64_t>{2, 4, 6, 8}));
  EXPECT_EQ(verdicts(outcome->runId), (std::vector<std::string>{"1 1 initial lint-error", "1 3 initial no-ptx",
                                                                "2 1 repair correct", "2 3 repair correct"}));
  EXPECT_EQ(load(outcome->runId).run.parameters["slots"], nlohmann::json({1, 3}));
  std::sort(done.begin(), done.end());
  EXPECT_EQ(done, (std::vector<std::tuple<int, int, bool>>{{1, 1, true}, {1, 3, true}, {2, 1, true}, {2, 3, true}}));
  EXPECT_EQ(promptTokens, 40);
  EXPECT_EQ(completionTokens, 20);
  EXPECT_EQ(limit.peak(), 1) << "two slot threads, one permit";
  EXPECT_EQ(limit.inFlight(), 0);

  // A resume answers from the store: attempts end without asking, no tokens counted.
  done.clear();
  promptTokens = 0;
  ASSERT_OK(store_->updateRun(outcome->runId, "interrupted", load(outcome->runId).run.summary));
  Result<SolveOutcome> resumed = solve::solve(context, options, outcome->runId);
  ASSERT_OK(resumed);
  EXPECT_EQ(backend.calls(), 4);
  EXPECT_EQ(done.size(), 4u);
  for (const auto &[round, slot, asked] : done) EXPECT_FALSE(asked) << round << " " << slot;
  EXPECT_EQ(promptTokens, 0);
}

TEST(RequestLimit, ServesTheLowestPriorityFirstAndWakesOnStop) {
  RequestLimit limit(1);
  ASSERT_TRUE(limit.acquire({}, 5));
  std::mutex mutex;
  std::vector<int> order;
  std::vector<std::jthread> waiters;
  std::atomic<int> started{0};
  for (int priority : {3, 1, 2}) {
    waiters.emplace_back([&, priority] {
      ++started;
      RequestLimit::Permit permit = limit.permit({}, priority);
      std::lock_guard lock(mutex);
      order.push_back(priority);
    });
    // One at a time into the queue, so that arrival order differs from priority order.
    while (started.load() < static_cast<int>(waiters.size())) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  limit.release();
  waiters.clear(); // joins
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(limit.peak(), 1);

  // A waiter whose stop is requested leaves without a permit.
  ASSERT_TRUE(limit.acquire({}, 0));
  std::stop_source stop;
  std::atomic<bool> got{true};
  std::jthread waiter([&] { got = limit.acquire(stop.get_token(), 0); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop.request_stop();
  waiter.join();
  EXPECT_FALSE(got.load());
  EXPECT_EQ(limit.inFlight(), 1);
  limit.release();
  EXPECT_EQ(limit.inFlight(), 0);
}

TEST_F(SolveTest, SameKernelIsVerifiedOnce) {
  // One slot writes the reference: the gate's launches for one verification.
  SolveOptions one = smallOptions(1, 1);
  ScriptedBackend single(alwaysCorrect);
  Result<SolveOutcome> first = run(single, one);
  ASSERT_OK(first);
  std::optional<emu::EmuCounters> afterOne = emu::emuCounters(*executor_);
  ASSERT_TRUE(afterOne.has_value());
  ASSERT_GT(afterOne->launches, 0u);

  // Two slots of a new run write it too, laid out differently: one more verification, not two.
  executor_ = emu::createEmuExecutor();
  SolveOptions two = smallOptions(1, 2);
  ScriptedBackend pair([](const llm::Request &request) {
    return slotOf(request, 2) == 0 ? answer(fenced(referencePtx())) : answer(fenced(relaid(referencePtx())));
  });
  Result<SolveOutcome> second = run(pair, two);
  ASSERT_OK(second);
  EXPECT_EQ(emu::emuCounters(*executor_)->launches, afterOne->launches);

  store::RunData data = load(second->runId);
  const store::AttemptRow *original = attempt(data, 1, 0, "initial");
  const store::AttemptRow *copy = attempt(data, 1, 1, "initial");
  ASSERT_TRUE(original && copy && original->candidate && copy->candidate && copy->result && original->result);
  EXPECT_FALSE(original->candidate->duplicateOf.has_value());
  EXPECT_EQ(copy->candidate->duplicateOf, std::optional<int64_t>(original->candidate->id));
  EXPECT_EQ(copy->candidate->ptxHash, original->candidate->ptxHash);
  EXPECT_NE(copy->candidate->ptx, original->candidate->ptx); // as the model wrote it
  EXPECT_EQ(copy->result->verdict, "correct");
  EXPECT_EQ(copy->result->summary,
            "same PTX as candidate " + std::to_string(original->candidate->id) + ": " + original->result->summary);
  EXPECT_EQ(copy->result->result["duplicate_of"], original->candidate->id);
  // A duplicate never displaces its original as the best.
  EXPECT_EQ(second->bestCandidateId, std::optional<int64_t>(original->candidate->id));
  // Candidates of another run are not duplicates: dedupe is per run.
  EXPECT_FALSE(attempt(load(first->runId), 1, 0, "initial")->candidate->duplicateOf.has_value());

  // Slots answering at once: verification is serialized, so still one gate run and one original.
  executor_ = emu::createEmuExecutor();
  SolveOptions concurrent = smallOptions(1, 4);
  concurrent.concurrency = 4;
  ScriptedBackend many([](const llm::Request &request) {
    return slotOf(request, 4) % 2 ? answer(fenced(relaid(referencePtx()))) : answer(fenced(referencePtx()));
  });
  Result<SolveOutcome> third = run(many, concurrent);
  ASSERT_OK(third);
  EXPECT_EQ(many.calls(), 4);
  EXPECT_EQ(emu::emuCounters(*executor_)->launches, afterOne->launches);
  int originals = 0;
  for (const store::AttemptRow &row : load(third->runId).attempts) {
    ASSERT_TRUE(row.candidate && row.result);
    EXPECT_EQ(row.result->verdict, "correct");
    if (!row.candidate->duplicateOf) {
      ++originals;
      EXPECT_EQ(third->bestCandidateId, std::optional<int64_t>(row.candidate->id));
    } else {
      EXPECT_TRUE(row.result->summary.starts_with("same PTX as candidate")) << row.result->summary;
    }
  }
  EXPECT_EQ(originals, 1);
}

TEST_F(SolveTest, SameSassIsADuplicateWhenNvdisasmIsThere) {
  restoreNvdisasm();
  // An unused register declaration changes the PTX, not the machine code.
  std::string spare;
  for (const std::string &line : splitLines(referencePtx())) {
    spare += line + "\n";
    if (trimmed(line) == "{") spare += "\t.reg .b32 \t%spare<4>;\n";
  }
  ASSERT_NE(spare, referencePtx());
  SolveOptions options = smallOptions(1, 2);
  ScriptedBackend backend([&](const llm::Request &request) {
    return answer(fenced(slotOf(request, 2) == 0 ? referencePtx() : spare));
  });
  Result<SolveOutcome> outcome = run(backend, options);
  ASSERT_OK(outcome);
  if (outcome->summary["reference"]["sass"].is_null()) GTEST_SKIP() << "nvdisasm not found";
  store::RunData data = load(outcome->runId);
  const store::AttemptRow *original = attempt(data, 1, 0, "initial");
  const store::AttemptRow *copy = attempt(data, 1, 1, "initial");
  ASSERT_TRUE(original && copy && original->candidate && copy->candidate && copy->result);
  EXPECT_FALSE(original->candidate->sassHash.empty());
  EXPECT_NE(copy->candidate->ptxHash, original->candidate->ptxHash);
  EXPECT_EQ(copy->candidate->sassHash, original->candidate->sassHash);
  EXPECT_EQ(copy->candidate->duplicateOf, std::optional<int64_t>(original->candidate->id));
  EXPECT_TRUE(copy->result->summary.starts_with("same SASS as candidate " + std::to_string(original->candidate->id)))
      << copy->result->summary;
}

// --- budgets ------------------------------------------------------------------------

TEST_F(SolveTest, CandidateBudgetStopsTheRun) {
  SolveOptions options = smallOptions(2, 3);
  options.maxCandidatesTotal = 2;
  ScriptedBackend backend(alwaysCorrect);
  Result<SolveOutcome> outcome = run(backend, options);
  ASSERT_OK(outcome);
  EXPECT_EQ(outcome->status, store::RunStatus::Budget);
  EXPECT_CONTAINS(outcome->stoppedBecause, "candidate budget of 2");
  EXPECT_EQ(outcome->summary["candidates"], 2);
  EXPECT_EQ(backend.calls(), 2);
  int candidates = 0;
  for (const store::AttemptRow &row : load(outcome->runId).attempts) {
    EXPECT_EQ(row.prompt.round, 1);
    candidates += row.candidate.has_value();
  }
  EXPECT_EQ(candidates, 2);
  EXPECT_EQ(load(outcome->runId).run.status, "budget");
}

TEST_F(SolveTest, TokenBudgetCountsReportedUsage) {
  SolveOptions options = smallOptions(3, 2);
  options.maxTokensTotal = 1000;
  ScriptedBackend backend([](const llm::Request &) { return answer(fenced(referencePtx()), 400, 100); });
  Result<SolveOutcome> outcome = run(backend, options);
  ASSERT_OK(outcome);
  // 500 tokens per answer: the second answer spends the budget, so no third request.
  EXPECT_EQ(backend.calls(), 2);
  EXPECT_EQ(outcome->status, store::RunStatus::Budget);
  EXPECT_CONTAINS(outcome->stoppedBecause, "token budget of 1000");
  EXPECT_EQ(outcome->summary["tokens"], (nlohmann::json{{"prompt", 800}, {"completion", 200}}));
  // The usage is kept with each completion.
  for (const store::AttemptRow &row : load(outcome->runId).attempts) {
    ASSERT_TRUE(row.completion.has_value());
    EXPECT_EQ(row.completion->meta["usage"]["prompt_tokens"], 400);
  }
}

TEST_F(SolveTest, UnreportedUsageSpendsNoTokenBudget) {
  SolveOptions options = smallOptions(2, 2);
  options.maxTokensTotal = 1;
  ScriptedBackend backend(alwaysCorrect);
  Result<SolveOutcome> outcome = run(backend, options);
  ASSERT_OK(outcome);
  EXPECT_EQ(outcome->status, store::RunStatus::Done);
  EXPECT_EQ(backend.calls(), 4);
  EXPECT_EQ(outcome->summary["tokens"], (nlohmann::json{{"prompt", 0}, {"completion", 0}}));
}

TEST_F(SolveTest, WallTimeBudgetStopsBeforeTheFirstRequest) {
  SolveOptions options = smallOptions(2, 2);
  options.maxWallSeconds = 1e-9; // spent before round 1 starts
  ScriptedBackend backend(alwaysCorrect);
  Result<SolveOutcome> outcome = run(backend, options);
  ASSERT_OK(outcome);
  EXPECT_EQ(outcome->status, store::RunStatus::Budget);
  EXPECT_CONTAINS(outcome->stoppedBecause, "wall-time budget");
  EXPECT_EQ(backend.calls(), 0);
  EXPECT_FALSE(outcome->bestCandidateId.has_value());
  EXPECT_EQ(outcome->bestPtx, "");
  EXPECT_TRUE(outcome->summary["best"].is_null());

  // A resume that lifts the budget (0: none) finishes the run.
  ResumeOverrides lifted;
  lifted.maxWallSeconds = 0;
  Result<SolveOutcome> resumed = run(backend, options, outcome->runId, {}, {}, nullptr, lifted);
  ASSERT_OK(resumed);
  EXPECT_EQ(resumed->status, store::RunStatus::Done);
  EXPECT_EQ(backend.calls(), 4);
  EXPECT_EQ(resumed->summary["resumes"][0]["overrides"], (nlohmann::json{{"max_wall_seconds", 0.0}}));
}

// --- failures of single requests --------------------------------------------------

TEST_F(SolveTest, BackendErrorIsRecordedAndTheSlotAsksAgain) {
  SolveOptions options = smallOptions(2, 2);
  ScriptedBackend backend([](const llm::Request &request) -> Result<llm::Completion> {
    // Slot 1's first request fails (seed 2 = round 1, slot 1).
    if (request.seed == 2) return makeError(ErrorKind::Io, "scripted: connection reset by peer");
    return answer(fenced(referencePtx()));
  });
  Result<SolveOutcome> outcome = run(backend, options);
  ASSERT_OK(outcome);
  EXPECT_EQ(outcome->status, store::RunStatus::Done);
  EXPECT_EQ(backend.calls(), 4);
  EXPECT_EQ(verdicts(outcome->runId), (std::vector<std::string>{
                                          "1 0 initial correct",
                                          "1 1 initial -",
                                          "2 0 optimize correct",
                                          "2 1 initial correct",
                                      }));
  store::RunData data = load(outcome->runId);
  const store::AttemptRow *failed = attempt(data, 1, 1, "initial");
  ASSERT_TRUE(failed && failed->completion);
  EXPECT_EQ(failed->completion->status, "error");
  EXPECT_EQ(failed->completion->error, "scripted: connection reset by peer");
  EXPECT_EQ(failed->completion->text, "");
  EXPECT_FALSE(failed->candidate.has_value());
  // Asked again as a first attempt, with a new seed.
  const store::AttemptRow *again = attempt(data, 2, 1, "initial");
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->prompt.parentCandidateId.has_value());
  EXPECT_EQ(again->prompt.request["seed"], 4);
}

TEST_F(SolveTest, PromptsSurviveHostileAnswers) {
  // Text a model may send: invalid UTF-8, NULs, SQL, a fence cut off.
  SolveOptions options = smallOptions(2, 2);
  ScriptedBackend backend([](const llm::Request &request) {
    if (promptKind(request) == PromptKind::Initial && slotOf(request, 2) == 0)
      return answer(std::string("'); DROP TABLE runs; --\xff\xfe") + std::string(1, '\0') + "\n```ptx\n.version 8.0\n");
    return answer(fenced(referencePtx()));
  });
  Result<SolveOutcome> outcome = run(backend, options);
  ASSERT_OK(outcome);
  EXPECT_EQ(outcome->status, store::RunStatus::Done);
  EXPECT_EQ(verdicts(outcome->runId), (std::vector<std::string>{
                                          "1 0 initial no-ptx",
                                          "1 1 initial correct",
                                          "2 0 repair correct",
                                          "2 1 optimize correct",
                                      }));
}

// --- pending answers and resume ----------------------------------------------------

TEST_F(SolveTest, PendingEndsTheRoundAndResumeSendsOnlyWhatIsMissing) {
  SolveOptions options = smallOptions(2, 2);
  ScriptedBackend batch([](const llm::Request &request) {
    if (slotOf(request, 2) == 1) {
      llm::Completion pending;
      pending.status = llm::CompletionStatus::Pending;
      return pending;
    }
    return answer(fenced(referencePtx()), 10, 5);
  });
  Result<SolveOutcome> first = run(batch, options);
  ASSERT_OK(first);
  EXPECT_EQ(first->status, store::RunStatus::Pending);
  EXPECT_CONTAINS(first->stoppedBecause, "round 1");
  EXPECT_EQ(batch.calls(), 2);
  store::RunData data = load(first->runId);
  EXPECT_EQ(data.run.status, "pending");
  for (const store::AttemptRow &row : data.attempts) EXPECT_EQ(row.prompt.round, 1) << "no round 2 prompts";
  const store::AttemptRow *waiting = attempt(data, 1, 1, "initial");
  ASSERT_TRUE(waiting && waiting->completion);
  EXPECT_EQ(waiting->completion->status, "pending");

  // The answers arrive: the resumed run asks only for what the store lacks.
  ScriptedBackend answering([](const llm::Request &) { return answer(fenced(referencePtx()), 10, 5); });
  SolveOptions ignored = smallOptions(9, 9); // a resume runs with the recorded options
  Result<SolveOutcome> second = run(answering, ignored, first->runId);
  ASSERT_OK(second);
  EXPECT_EQ(second->status, store::RunStatus::Done);
  EXPECT_EQ(second->runId, first->runId);
  ASSERT_EQ(answering.calls(), 3);
  std::vector<int64_t> seeds;
  for (const llm::Request &request : answering.requests()) seeds.push_back(request.seed.value_or(-1));
  EXPECT_EQ(seeds, (std::vector<int64_t>{2, 3, 4})); // not 1: round 1 slot 0 was answered
  EXPECT_EQ(verdicts(first->runId), (std::vector<std::string>{
                                        "1 0 initial correct",
                                        "1 1 initial correct",
                                        "2 0 optimize correct",
                                        "2 1 optimize correct",
                                    }));
  EXPECT_EQ(attempt(load(first->runId), 1, 1, "initial")->completion->status, "complete");
  // Tokens of answers from the store count as well as new ones.
  EXPECT_EQ(second->summary["tokens"], (nlohmann::json{{"prompt", 40}, {"completion", 20}}));
  ASSERT_TRUE(second->summary.contains("resumes"));
  EXPECT_EQ(second->summary["resumes"][0]["status_before"], "pending");
}

// --- interruption -------------------------------------------------------------------

TEST_F(SolveTest, StopBeforeTheRunSendsNothingAndResumeFinishes) {
  SolveOptions options = smallOptions(2, 3);
  auto script = [](const llm::Request &request) { return mistakesThenCorrect(request, 3); };

  ScriptedBackend straight(script);
  Result<SolveOutcome> reference = run(straight, options);
  ASSERT_OK(reference);
  ASSERT_EQ(reference->status, store::RunStatus::Done);

  std::stop_source stop;
  stop.request_stop();
  ScriptedBackend stopped(script);
  Result<SolveOutcome> first = run(stopped, options, std::nullopt, stop.get_token());
  ASSERT_OK(first);
  EXPECT_EQ(first->status, store::RunStatus::Interrupted);
  EXPECT_EQ(stopped.calls(), 0);
  EXPECT_EQ(load(first->runId).run.status, "interrupted");

  ScriptedBackend resumed(script);
  Result<SolveOutcome> second = run(resumed, options, first->runId);
  ASSERT_OK(second);
  EXPECT_EQ(second->status, store::RunStatus::Done);
  EXPECT_EQ(resumed.calls(), 6);
  EXPECT_EQ(verdicts(first->runId), verdicts(reference->runId));
  EXPECT_EQ(second->summary["counts"], reference->summary["counts"]);
}

TEST_F(SolveTest, StopDuringARequestThenResumeGivesTheSameVerdicts) {
  SolveOptions options = smallOptions(2, 3);
  auto script = [](const llm::Request &request) { return mistakesThenCorrect(request, 3); };

  ScriptedBackend straight(script);
  Result<SolveOutcome> reference = run(straight, options);
  ASSERT_OK(reference);

  // The second request is cancelled, as a real backend cancels a call in flight.
  std::stop_source stop;
  std::atomic<int> calls{0};
  ScriptedBackend interrupted([&](const llm::Request &request) -> Result<llm::Completion> {
    if (++calls == 2) {
      stop.request_stop();
      return makeError(ErrorKind::Io, "scripted: cancelled");
    }
    return script(request);
  });
  Result<SolveOutcome> first = run(interrupted, options, std::nullopt, stop.get_token());
  ASSERT_OK(first);
  EXPECT_EQ(first->status, store::RunStatus::Interrupted);
  EXPECT_EQ(interrupted.calls(), 2);
  EXPECT_EQ(verdicts(first->runId), (std::vector<std::string>{
                                        "1 0 initial no-ptx",
                                        "1 1 initial -",
                                        "1 2 initial -",
                                    }));

  ScriptedBackend resumed(script);
  Result<SolveOutcome> second = run(resumed, options, first->runId);
  ASSERT_OK(second);
  EXPECT_EQ(second->status, store::RunStatus::Done);
  // Round 1 slot 0 came from the store; the other five were asked.
  EXPECT_EQ(resumed.calls(), 5);
  for (const llm::Request &request : resumed.requests()) EXPECT_NE(request.seed, std::optional<int64_t>(1));
  EXPECT_EQ(verdicts(first->runId), verdicts(reference->runId));
  EXPECT_EQ(second->summary["counts"], reference->summary["counts"]);
  EXPECT_EQ(second->summary["candidates"], reference->summary["candidates"]);
  EXPECT_EQ(second->summary["resumes"][0]["status_before"], "interrupted");

  // A second resume of the finished run replays everything from the store,
  // the gate's results included.
  ScriptedBackend again(script);
  std::vector<ProgressEvent> replayed;
  Result<SolveOutcome> third =
      run(again, options, first->runId, {}, [&](const ProgressEvent &event) { replayed.push_back(event); });
  ASSERT_OK(third);
  EXPECT_EQ(third->status, store::RunStatus::Done);
  EXPECT_EQ(again.calls(), 0);
  int verdictEvents = 0;
  for (const ProgressEvent &event : replayed) {
    if (!event.verdict) continue;
    ++verdictEvents;
    EXPECT_TRUE(event.what.starts_with("(recorded) ")) << event.what;
  }
  EXPECT_EQ(verdictEvents, 6);
  EXPECT_EQ(third->summary["counts"], reference->summary["counts"]);
  EXPECT_EQ(third->summary["resumes"].size(), 2u);
}

// An interrupted run says why it stopped, not "all rounds ran".
TEST_F(SolveTest, InterruptedRunDoesNotClaimAllRoundsRan) {
  std::stop_source stop;
  stop.request_stop();
  ScriptedBackend backend(alwaysCorrect);
  Result<SolveOutcome> outcome = run(backend, smallOptions(2, 1), std::nullopt, stop.get_token());
  ASSERT_OK(outcome);
  EXPECT_EQ(outcome->status, store::RunStatus::Interrupted);
  EXPECT_NE(outcome->stoppedBecause, "all rounds ran");
}

TEST_F(SolveTest, ResumeOfAnUnknownRunOrAnotherTaskFails) {
  ScriptedBackend backend(alwaysCorrect);
  Result<SolveOutcome> unknown = run(backend, smallOptions(1, 1), 42);
  ASSERT_FALSE(unknown.ok());
  EXPECT_CONTAINS(unknown.error().message, "42");

  Result<SolveOutcome> done = run(backend, smallOptions(1, 1));
  ASSERT_OK(done);
  int callsBefore = backend.calls();
  const tasks::TaskSpec &saxpy = findTask("saxpy");
  ASSERT_FALSE(saxpy.name.empty());
  Result<SolveOutcome> other = run(backend, smallOptions(1, 1), done->runId, {}, {}, &saxpy);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().kind, ErrorKind::InvalidInput);
  EXPECT_CONTAINS(other.error().message, "vector_add");
  EXPECT_EQ(backend.calls(), callsBefore);
  EXPECT_EQ(load(done->runId).run.status, "done"); // untouched
}

TEST_F(SolveTest, ResumeWithMoreRoundsContinuesTheRun) {
  ScriptedBackend backend(alwaysCorrect);
  Result<SolveOutcome> first = run(backend, smallOptions(1, 2));
  ASSERT_OK(first);
  ASSERT_EQ(backend.calls(), 2);
  ResumeOverrides more;
  more.rounds = 2;
  Result<SolveOutcome> second = run(backend, smallOptions(1, 2), first->runId, {}, {}, nullptr, more);
  ASSERT_OK(second);
  EXPECT_EQ(second->status, store::RunStatus::Done);
  EXPECT_EQ(backend.calls(), 4); // round 1 from the store, round 2 asked
  EXPECT_EQ(verdicts(first->runId), (std::vector<std::string>{
                                        "1 0 initial correct",
                                        "1 1 initial correct",
                                        "2 0 optimize correct",
                                        "2 1 optimize correct",
                                    }));
  EXPECT_EQ(second->summary["rounds"].size(), 2u);
  EXPECT_EQ(second->summary["resumes"][0]["overrides"], (nlohmann::json{{"rounds", 2}}));
  EXPECT_EQ(second->summary["resumes"][0]["status_before"], "done");
}

// A resume that added rounds and was interrupted in them, resumed again,
// finishes those rounds: earlier resumes' overrides still hold.
TEST_F(SolveTest, ResumeKeepsTheRoundsAnEarlierResumeAdded) {
  ScriptedBackend backend(alwaysCorrect);
  Result<SolveOutcome> first = run(backend, smallOptions(1, 1));
  ASSERT_OK(first);

  std::stop_source stop;
  ScriptedBackend cancelled([&](const llm::Request &) -> Result<llm::Completion> {
    stop.request_stop();
    return makeError(ErrorKind::Io, "scripted: cancelled");
  });
  ResumeOverrides more;
  more.rounds = 2;
  Result<SolveOutcome> second = run(cancelled, smallOptions(1, 1), first->runId, stop.get_token(), {}, nullptr, more);
  ASSERT_OK(second);
  ASSERT_EQ(second->status, store::RunStatus::Interrupted);

  Result<SolveOutcome> third = run(backend, smallOptions(1, 1), first->runId);
  ASSERT_OK(third);
  EXPECT_EQ(third->status, store::RunStatus::Done);
  EXPECT_EQ(verdicts(first->runId), (std::vector<std::string>{"1 0 initial correct", "2 0 optimize correct"}));
  EXPECT_EQ(third->summary["rounds"].size(), 2u);
}

// --- progress -----------------------------------------------------------------------

TEST_F(SolveTest, ProgressReportsEachRoundWithTheStoresCounts) {
  SolveOptions options = smallOptions(2, 3);
  std::vector<ProgressEvent> events;
  ScriptedBackend backend([](const llm::Request &request) { return mistakesThenCorrect(request, 3); });
  Result<SolveOutcome> outcome =
      run(backend, options, std::nullopt, {}, [&](const ProgressEvent &event) { events.push_back(event); });
  ASSERT_OK(outcome);
  ASSERT_FALSE(events.empty());

  std::vector<int> roundEvents;
  for (const ProgressEvent &event : events)
    if (event.kind == "round") {
      roundEvents.push_back(event.round);
      EXPECT_EQ(event.slot, -1);
      EXPECT_CONTAINS(event.what, "round " + std::to_string(event.round) + " done");
    }
  EXPECT_EQ(roundEvents, (std::vector<int>{1, 2}));

  const ProgressEvent &last = events.back();
  EXPECT_EQ(last.kind, "round");
  EXPECT_EQ(last.round, 2);
  EXPECT_TRUE(last.haveCorrect);
  std::map<std::string, int> stored;
  for (const store::AttemptRow &row : load(outcome->runId).attempts)
    if (row.result) ++stored[row.result->verdict];
  EXPECT_EQ(last.counts, stored);
  EXPECT_EQ(last.counts, (std::map<std::string, int>{{"no-ptx", 1}, {"lint-error", 1}, {"wrong", 1}, {"correct", 3}}));

  // Each verified candidate is reported with its verdict, in slot order within a round.
  std::vector<std::string> verdictEvents;
  for (const ProgressEvent &event : events)
    if (event.verdict)
      verdictEvents.push_back(std::to_string(event.round) + " " + std::to_string(event.slot) + " " + event.kind + " " +
                              *event.verdict);
  EXPECT_EQ(verdictEvents, verdicts(outcome->runId));
  // Nothing was correct before round 2.
  for (const ProgressEvent &event : events) {
    if (event.round == 1) {
      EXPECT_FALSE(event.haveCorrect) << event.what;
    }
  }
}

// --- the skeleton strategy ------------------------------------------------------------

TEST_F(SolveTest, SkeletonComesBeforeTheFirstKernelOnly) {
  SolveOptions options = smallOptions(2, 2);
  options.strategies = {prompt::Strategy::ZeroShot, prompt::Strategy::Skeleton};
  ScriptedBackend backend([](const llm::Request &request) { return mistakesThenCorrect(request, 2); });
  Result<SolveOutcome> outcome = run(backend, options);
  ASSERT_OK(outcome);
  EXPECT_EQ(outcome->status, store::RunStatus::Done);
  EXPECT_EQ(backend.calls(), 6);
  EXPECT_EQ(verdicts(outcome->runId), (std::vector<std::string>{
                                          "1 0 skeleton -",
                                          "1 0 initial correct",
                                          "1 1 skeleton -",
                                          "1 1 initial correct",
                                          "2 0 optimize correct",
                                          "2 1 optimize correct",
                                      }));

  // Per slot: the skeleton request, then the fill request built on its answer.
  std::vector<llm::Request> sent = backend.requests();
  ASSERT_EQ(sent.size(), 6u);
  Result<prompt::ExtractedPtx> skeleton = prompt::extractPtx(fenced(skeletonOf(referencePtx())));
  ASSERT_OK(skeleton);
  std::string feedback = prompt::skeletonFeedback(vectorAdd(), skeleton->ptx);
  for (int slot = 0; slot < 2; ++slot) {
    const llm::Request &ask = sent[static_cast<size_t>(2 * slot)];
    const llm::Request &fill = sent[static_cast<size_t>(2 * slot + 1)];
    EXPECT_EQ(promptKind(ask), PromptKind::Skeleton);
    EXPECT_NOT_CONTAINS(userMessage(ask), "# Answer format");
    EXPECT_EQ(promptKind(fill), PromptKind::Fill);
    EXPECT_CONTAINS(userMessage(fill), skeleton->ptx);
    EXPECT_CONTAINS(userMessage(fill), feedback);
    EXPECT_CONTAINS(userMessage(fill), "# Answer format");
    EXPECT_EQ(slotOf(ask, 2), slot);
    EXPECT_EQ(slotOf(fill, 2), slot);
  }

  store::RunData data = load(outcome->runId);
  for (int slot = 0; slot < 2; ++slot) {
    const store::AttemptRow *ask = attempt(data, 1, slot, "skeleton");
    ASSERT_TRUE(ask && ask->completion);
    EXPECT_EQ(ask->completion->status, "complete");
    EXPECT_FALSE(ask->candidate.has_value()); // a skeleton is not a candidate
    EXPECT_EQ(ask->prompt.strategies, "zero-shot,skeleton");
    EXPECT_EQ(attempt(data, 1, slot, "initial")->prompt.strategies, "zero-shot,skeleton");
    EXPECT_EQ(attempt(data, 2, slot, "optimize")->prompt.strategies, "zero-shot,optimize");
  }
  EXPECT_EQ(outcome->summary["candidates"], 4);

  // Later rounds are plain optimize (or repair) prompts.
  for (size_t i = 4; i < sent.size(); ++i) {
    std::string user = userMessage(sent[i]);
    EXPECT_EQ(promptKind(sent[i]), PromptKind::Optimize);
    EXPECT_NOT_CONTAINS(user, "# First, only the skeleton");
    EXPECT_NOT_CONTAINS(user, "# Now fill in your skeleton");
  }
}

TEST_F(SolveTest, UnreadableSkeletonStillGetsAFillRequest) {
  SolveOptions options = smallOptions(1, 1);
  options.strategies = {prompt::Strategy::ZeroShot, prompt::Strategy::Skeleton};
  ScriptedBackend backend([](const llm::Request &request) {
    if (promptKind(request) == PromptKind::Skeleton) return answer(kNoPtx);
    return answer(fenced(referencePtx()));
  });
  Result<SolveOutcome> outcome = run(backend, options);
  ASSERT_OK(outcome);
  EXPECT_EQ(outcome->status, store::RunStatus::Done);
  std::vector<llm::Request> fills = backend.requests(PromptKind::Fill);
  ASSERT_EQ(fills.size(), 1u);
  EXPECT_CONTAINS(userMessage(fills[0]), "No skeleton could be read from your answer");
  EXPECT_EQ(verdicts(outcome->runId), (std::vector<std::string>{"1 0 skeleton -", "1 0 initial correct"}));
}

// --- a process that dies (issue 13) ---------------------------------------------------
//
// The run is started in a forked child that is killed with SIGKILL at a chosen
// point (mid-round, mid-check); the parent then opens the same store as the
// next process would.

namespace {

/// Runs `body` in a child process on its own connection to the store at
/// `storePath`; the body ends the child (SIGKILL) itself. Returns the child's pid.
pid_t runInChild(const std::string &storePath, const std::function<void(store::Store &)> &body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    Result<std::unique_ptr<store::Store>> opened = store::Store::open(storePath);
    if (!opened) ::_exit(90);
    body(**opened);
    ::_exit(91); // the body was meant to die before this
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
  return pid;
}

} // namespace

TEST_F(SolveTest, AKilledRunIsInterruptedAndItsResumeAsksNothingTwice) {
  SolveOptions options = smallOptions(2, 2);
  std::string storePath = (dir_ / "runs.db").string();
  pid_t child = runInChild(storePath, [&](store::Store &store) {
    std::atomic<int> calls{0};
    ScriptedBackend dying([&](const llm::Request &request) -> Result<llm::Completion> {
      if (++calls == 3) ::raise(SIGKILL); // the first request of round 2
      return mistakesThenCorrect(request, 2);
    });
    SolveContext context{.task = vectorAdd(), .backend = dying, .modelSpec = "scripted", .executor = *executor_,
                         .store = store, .templates = templates()};
    (void)solve::solve(context, options);
  });

  Result<std::vector<store::RunRecord>> runs = store_->runs();
  ASSERT_OK(runs);
  ASSERT_EQ(runs->size(), 1u);
  int64_t runId = runs->front().id;
  EXPECT_EQ(runs->front().status, "running"); // as kill -9 left it

  // The next process to open the store for a run sees that the owner is gone.
  Result<std::vector<int64_t>> reaped = reapDeadRuns(*store_);
  ASSERT_OK(reaped);
  EXPECT_EQ(*reaped, std::vector<int64_t>{runId});
  store::RunRecord after = load(runId).run;
  EXPECT_EQ(after.status, "interrupted");
  EXPECT_CONTAINS(after.summary["stopped_because"].get<std::string>(), "pid " + std::to_string(child));
  EXPECT_FALSE(after.summary.contains("owner"));

  // The resume asks only round 2: round 1's two answers are in the store.
  ScriptedBackend resumed([](const llm::Request &request) { return mistakesThenCorrect(request, 2); });
  Result<SolveOutcome> finished = run(resumed, options, runId);
  ASSERT_OK(finished);
  EXPECT_EQ(finished->status, store::RunStatus::Done);
  EXPECT_EQ(resumed.calls(), 2);
  for (const llm::Request &request : resumed.requests()) EXPECT_GE(request.seed.value_or(0), 3);
  EXPECT_EQ(finished->summary["resumes"][0]["status_before"], "interrupted");
  EXPECT_EQ(load(runId).run.status, "done");
}

TEST_F(SolveTest, ACandidateThatKilledTheCheckIsRecordedCrashedNotCheckedAgain) {
  SolveOptions options = smallOptions(1, 2);
  std::string storePath = (dir_ / "runs.db").string();
  runInChild(storePath, [&](store::Store &store) {
    ScriptedBackend backend(alwaysCorrect);
    SolveContext context{.task = vectorAdd(), .backend = backend, .modelSpec = "scripted", .executor = *executor_,
                         .store = store, .templates = templates()};
    // As if the gate took the process down while checking slot 0's kernel.
    context.onProgress = [](const ProgressEvent &event) {
      if (event.slot == 0 && event.what == "verifying") ::raise(SIGKILL);
    };
    (void)solve::solve(context, options);
  });
  Result<std::vector<store::RunRecord>> runs = store_->runs();
  ASSERT_OK(runs);
  ASSERT_EQ(runs->size(), 1u);
  int64_t runId = runs->front().id;
  store::RunData before = load(runId);
  const store::AttemptRow *killed = attempt(before, 1, 0, "initial");
  ASSERT_TRUE(killed && killed->candidate) << "the candidate is recorded before its check";
  EXPECT_FALSE(killed->result);

  // Slot 1 writes another kernel (a duplicate would share slot 0's verdict).
  ScriptedBackend backend([](const llm::Request &request) {
    return answer(fenced(slotOf(request, 2) == 0 ? referencePtx() : withoutStores(referencePtx())));
  });
  std::vector<std::string> checked;
  Result<SolveOutcome> resumed = run(backend, options, runId, {}, [&](const ProgressEvent &event) {
    if (event.what == "verifying") checked.push_back(std::to_string(event.slot));
  });
  ASSERT_OK(resumed);
  EXPECT_EQ(backend.calls(), 1); // slot 1 only: slot 0's answer is stored
  EXPECT_EQ(checked, std::vector<std::string>{"1"});
  EXPECT_EQ(verdicts(runId), (std::vector<std::string>{"1 0 initial crashed", "1 1 initial wrong"}));
  store::RunData after = load(runId);
  const store::AttemptRow *crashed = attempt(after, 1, 0, "initial");
  ASSERT_TRUE(crashed && crashed->result);
  EXPECT_CONTAINS(crashed->result->summary, "not checked again");
  EXPECT_EQ(resumed->status, store::RunStatus::Done);
  EXPECT_EQ(resumed->summary["counts"], (nlohmann::json{{"crashed", 1}, {"wrong", 1}}));
}

TEST_F(SolveTest, ARunAnotherProcessWorksOnCannotBeResumed) {
  std::stop_source stop;
  stop.request_stop();
  ScriptedBackend first(alwaysCorrect);
  Result<SolveOutcome> stopped = run(first, smallOptions(1, 1), std::nullopt, stop.get_token());
  ASSERT_OK(stopped);

  // Another owner (in another process, as far as the lock can tell) holds the run.
  Result<std::unique_ptr<RunOwner>> other = RunOwner::create(store_->path());
  ASSERT_OK(other);
  ASSERT_OK((*other)->lockRun(stopped->runId, false));
  ScriptedBackend second(alwaysCorrect);
  Result<SolveOutcome> refused = run(second, smallOptions(1, 1), stopped->runId);
  ASSERT_FALSE(refused.ok());
  EXPECT_CONTAINS(refused.error().message, "is being worked on by pid " + std::to_string(::getpid()));
  EXPECT_EQ(second.calls(), 0);
  EXPECT_EQ(load(stopped->runId).run.status, "interrupted"); // untouched

  // Once it lets go, the resume runs.
  (*other)->unlockRun(stopped->runId);
  Result<SolveOutcome> resumed = run(second, smallOptions(1, 1), stopped->runId);
  ASSERT_OK(resumed);
  EXPECT_EQ(resumed->status, store::RunStatus::Done);
  EXPECT_EQ(second.calls(), 1);
}

TEST_F(SolveTest, ALiveRunIsNotReaped) {
  // While a run works, another process's reaper must leave it alone.
  ScriptedBackend backend([&](const llm::Request &) {
    Result<std::unique_ptr<store::Store>> other = store::Store::open(store_->path());
    EXPECT_TRUE(other.ok());
    if (other.ok()) {
      Result<std::vector<int64_t>> reaped = reapDeadRuns(**other);
      EXPECT_TRUE(reaped.ok() && reaped->empty());
    }
    return answer(fenced(referencePtx()));
  });
  Result<SolveOutcome> outcome = run(backend, smallOptions(1, 1));
  ASSERT_OK(outcome);
  EXPECT_EQ(outcome->status, store::RunStatus::Done);
}

TEST_F(SolveTest, ANewRunIsAnnouncedBeforeItsFirstRequest) {
  std::optional<int64_t> announced;
  ScriptedBackend backend([&](const llm::Request &) {
    EXPECT_TRUE(announced.has_value()) << "asked before the run was announced";
    return answer(fenced(referencePtx()));
  });
  SolveContext context{.task = vectorAdd(), .backend = backend, .modelSpec = "scripted", .executor = *executor_,
                       .store = *store_, .templates = templates()};
  context.onRunCreated = [&](int64_t runId) -> Result<void> {
    announced = runId;
    return {};
  };
  Result<SolveOutcome> outcome = solve::solve(context, smallOptions(1, 1));
  ASSERT_OK(outcome);
  EXPECT_EQ(announced, std::optional<int64_t>(outcome->runId));
}

TEST_F(SolveTest, NegativeOrAbsurdUsageStillEndsATokenBudget) {
  SolveOptions options = smallOptions(3, 2);
  options.maxTokensTotal = 50'000;
  // 2^63-1 twice overflowed the sum to a negative number: the budget never ended the run.
  ScriptedBackend huge([](const llm::Request &) { return answer(fenced(referencePtx()), INT64_MAX, INT64_MAX); });
  Result<SolveOutcome> first = run(huge, options);
  ASSERT_OK(first);
  EXPECT_EQ(first->status, store::RunStatus::Budget);
  EXPECT_EQ(huge.calls(), 1);

  // Negative counts subtracted from the spend; now each request costs its max_tokens at least.
  ScriptedBackend negative([](const llm::Request &) { return answer(fenced(referencePtx()), -1'000'000, -1'000'000); });
  options.maxTokens = 20'000;
  Result<SolveOutcome> second = run(negative, options);
  ASSERT_OK(second);
  EXPECT_EQ(second->status, store::RunStatus::Budget);
  EXPECT_LE(negative.calls(), 3);
  EXPECT_GE(second->summary["tokens"]["completion"].get<int64_t>(), 20'000);
}

TEST_F(SolveTest, ALongLineInAnAnswerKeepsTheRepairPromptSmall) {
  // One 8 KB line of 400 different undeclared registers before `ret`.
  std::string line = "\t";
  for (int i = 0; i < 400; ++i) line += "add.s32 %q" + std::to_string(i) + ", 1, 2; ";
  std::string broken;
  for (const std::string &text : splitLines(referencePtx())) {
    if (trimmed(text) == "ret;") broken += line + "\n";
    broken += text + "\n";
  }
  ScriptedBackend backend([&](const llm::Request &request) {
    return answer(fenced(promptKind(request) == PromptKind::Initial ? broken : referencePtx()));
  });
  Result<SolveOutcome> outcome = run(backend, smallOptions(2, 1));
  ASSERT_OK(outcome);
  std::vector<llm::Request> repairs = backend.requests(PromptKind::Repair);
  ASSERT_EQ(repairs.size(), 1u);
  std::string user = userMessage(repairs[0]);
  EXPECT_LT(user.size(), 64u << 10) << "a repair prompt of " << user.size() << " bytes";
  EXPECT_CONTAINS(user, "more characters on this line]");
  EXPECT_CONTAINS(user, "diagnostics-suppressed");
}

TEST_F(SolveTest, ReadingAStoreThatDoesNotExistCreatesNothing) {
  std::filesystem::path missing = dir_ / "nowhere" / "runs.db";
  Result<std::unique_ptr<store::Store>> opened = store::Store::openReadOnly(missing.string());
  ASSERT_FALSE(opened.ok());
  EXPECT_CONTAINS(opened.error().message, "no run store at " + missing.string());
  EXPECT_FALSE(std::filesystem::exists(missing));
  EXPECT_FALSE(std::filesystem::exists(missing.parent_path()));

  // An existing store reads, and reading writes nothing.
  ScriptedBackend backend(alwaysCorrect);
  Result<SolveOutcome> outcome = run(backend, smallOptions(1, 1));
  ASSERT_OK(outcome);
  Result<std::unique_ptr<store::Store>> reader = store::Store::openReadOnly(store_->path());
  ASSERT_OK(reader);
  Result<store::RunData> data = (*reader)->load(outcome->runId);
  ASSERT_OK(data);
  EXPECT_EQ(data->run.status, "done");
  EXPECT_FALSE((*reader)->updateRun(outcome->runId, "failed", nlohmann::json::object()).ok());
}
