// The records of `ptxforge export` (tools/ptxforge/ExportRecords.h): the
// preference rule, the best-correct choice, and each format's records built
// from a run held in memory, with rewards equal to serve's /v1/reward.
#include "ExportRecords.h"

#include "prompt/Extract.h"
#include "toolchain/Json.h"
#include "verify/Check.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ptxforge::cli {
namespace {

using nlohmann::json;

AttemptScore wrong(std::string_view text = "w") { return {false, std::nullopt, std::nullopt, text}; }
AttemptScore untimed(std::string_view text = "u") { return {true, std::nullopt, std::nullopt, text}; }
AttemptScore timed(double low, double high, std::string_view text = "t") { return {true, low, high, text}; }

TEST(PreferenceRule, CorrectBeatsEveryFailureAndFailuresTie) {
  EXPECT_EQ(comparePreference(untimed(), wrong()), 1);
  EXPECT_EQ(comparePreference(wrong(), untimed()), -1);
  EXPECT_EQ(comparePreference(wrong("a"), wrong("b")), 0);
}

TEST(PreferenceRule, TwoCorrectOnesNeedBandsThatDoNotOverlap) {
  EXPECT_EQ(comparePreference(timed(2.0, 2.4), timed(1.5, 1.9)), 1);
  EXPECT_EQ(comparePreference(timed(1.5, 1.9), timed(2.0, 2.4)), -1);
  // Overlapping bands: noise cannot tell them apart.
  EXPECT_EQ(comparePreference(timed(2.0, 2.4), timed(1.5, 2.1)), 0);
  // Untimed (the emulator): no speed to compare.
  EXPECT_EQ(comparePreference(timed(2.0, 2.4), untimed()), 0);
  EXPECT_EQ(comparePreference(untimed("a"), untimed("b")), 0);
}

TEST(BestCorrect, NoneWithoutACorrectAttempt) {
  std::vector<AttemptScore> scores = {wrong(), wrong()};
  EXPECT_FALSE(bestCorrect(scores));
  EXPECT_FALSE(bestCorrect({}));
}

TEST(BestCorrect, FirstCorrectWhenNothingWasTimed) {
  std::vector<AttemptScore> scores = {wrong(), untimed(), untimed()};
  EXPECT_EQ(bestCorrect(scores), 1u);
}

TEST(BestCorrect, HighestLowBoundWinsAndATimedOneBeatsAnUntimedOne) {
  // The median would pick index 3 (wide band); the low bound picks index 2.
  std::vector<AttemptScore> scores = {untimed(), timed(1.2, 1.3), timed(1.8, 1.9), timed(1.5, 3.0), wrong()};
  EXPECT_EQ(bestCorrect(scores), 2u);
}

TEST(BestCorrect, TheEarliestOnATie) {
  std::vector<AttemptScore> scores = {timed(1.5, 1.6), timed(1.5, 1.7)};
  EXPECT_EQ(bestCorrect(scores), 0u);
}

TEST(PreferencePairs, EveryBetterWorsePairOfDistinctTextsOnce) {
  std::vector<AttemptScore> scores = {wrong("w1"), untimed("c1"), wrong("w2"), untimed("c2"),
                                      // the same texts again (two slots that wrote the same): no new pair
                                      wrong("w1"), untimed("c1")};
  std::vector<std::pair<size_t, size_t>> expected = {{1, 0}, {1, 2}, {3, 0}, {3, 2}};
  EXPECT_EQ(preferencePairs(scores), expected);
}

TEST(PreferencePairs, NoPairWithoutADifferenceOrWithTheSameText) {
  std::vector<AttemptScore> ties = {wrong("a"), wrong("b"), wrong("c")};
  EXPECT_TRUE(preferencePairs(ties).empty());
  // A nondeterministic gate could judge one text twice differently: never paired with itself.
  std::vector<AttemptScore> same = {untimed("x"), wrong("x")};
  EXPECT_TRUE(preferencePairs(same).empty());
}

TEST(PreferencePairs, FasterBeyondTheNoiseIsPreferred) {
  std::vector<AttemptScore> scores = {timed(1.1, 1.2, "slow"), timed(2.0, 2.2, "fast"), timed(1.15, 2.1, "noisy")};
  std::vector<std::pair<size_t, size_t>> expected = {{1, 0}};
  EXPECT_EQ(preferencePairs(scores), expected);
}

TEST(DatasetFormat, NamesRoundTrip) {
  for (DatasetFormat format : {DatasetFormat::Sft, DatasetFormat::Rl, DatasetFormat::Pairs})
    EXPECT_EQ(parseDatasetFormat(datasetFormatName(format)), format);
  EXPECT_FALSE(parseDatasetFormat("dpo"));
}

// --- Records of a run built in memory ------------------------------------------------

const std::string kPtx = ".version 8.5\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n";

verify::CheckResult checkResult(verify::Verdict verdict, verify::Stage stage, std::optional<double> speedupLow = {}) {
  verify::CheckResult result;
  result.verdict = verdict;
  result.stage = stage;
  result.task = "vector_add";
  result.summary = verify::verdictName(verdict);
  if (stage >= verify::Stage::Execute) {
    result.compile.emplace();
    result.compile->ok = true;
  }
  if (verdict == verify::Verdict::LintError)
    result.diagnostics.push_back({"undeclared-register", ptx::Severity::Error, 7, 2, "`%r999` is not declared", "declare it"});
  if (speedupLow) {
    verify::BenchmarkReport bench;
    bench.baseline.median = 1.0;
    bench.candidate.median = 1.0 / (*speedupLow * 1.1);
    bench.speedup = *speedupLow * 1.1;
    bench.speedupLow = *speedupLow;
    bench.speedupHigh = *speedupLow * 1.2;
    result.benchmarks.push_back(bench);
  }
  return result;
}

json messages(const std::string &user) {
  return json::array({{{"role", "system"}, {"content", "You write PTX."}}, {{"role", "user"}, {"content", user}}});
}

/// An attempt: prompt `id` in (round, slot, kind) asked `user`, answered
/// `answer`, judged `result` (none: no candidate).
store::AttemptRow attempt(int64_t id, int round, int slot, std::string kind, const std::string &user,
                          const std::string &answer, std::optional<verify::CheckResult> result,
                          const std::string &ptx = kPtx) {
  store::AttemptRow row;
  row.prompt.id = id;
  row.prompt.runId = 7;
  row.prompt.round = round;
  row.prompt.slot = slot;
  row.prompt.kind = std::move(kind);
  row.prompt.temperature = 0.7;
  row.prompt.request = {{"v", 1}, {"messages", messages(user)}, {"seed", id}};
  store::CompletionRecord completion;
  completion.promptId = id;
  completion.status = "complete";
  completion.text = answer;
  row.completion = completion;
  if (result) {
    store::CandidateRecord candidate;
    candidate.id = 100 + id;
    candidate.promptId = id;
    candidate.ptx = result->verdict == verify::Verdict::NoPtx ? "" : ptx;
    if (candidate.ptx.empty()) candidate.extractError = "no PTX module in the answer";
    row.candidate = candidate;
    store::ResultRecord stored;
    stored.candidateId = candidate.id;
    stored.verdict = verify::verdictName(result->verdict);
    stored.stage = verify::stageName(result->stage);
    stored.summary = result->summary;
    if (!result->benchmarks.empty()) stored.speedup = result->benchmarks.front().speedup;
    stored.result = verify::toJson(*result);
    row.result = stored;
  }
  return row;
}

/// Run 7: slot 0 fails then is repaired (untimed), slot 1 is correct and 2x
/// faster at once; a skeleton request, a pending one and one whose stored
/// request has no messages are left out.
store::RunData sampleRun() {
  store::RunData data;
  data.run.id = 7;
  data.run.task = "vector_add";
  data.run.model = "exec:model.py";
  data.run.provenance = {{"task_level", 1}, {"arch", "sm_90"}};
  const std::string task = "Write vector_add.";
  data.attempts.push_back(attempt(1, 1, 0, "initial", task, "no code, sorry",
                                  checkResult(verify::Verdict::NoPtx, verify::Stage::Extract)));
  data.attempts.push_back(attempt(2, 1, 1, "initial", task, "```ptx\nfast\n```",
                                  checkResult(verify::Verdict::Correct, verify::Stage::Done, 2.0)));
  data.attempts.push_back(attempt(3, 1, 2, "initial", task, "```ptx\nbroken\n```",
                                  checkResult(verify::Verdict::LintError, verify::Stage::Lint)));
  data.attempts.push_back(attempt(4, 1, 3, "skeleton", task, "a skeleton", std::nullopt));
  data.attempts.push_back(attempt(5, 2, 0, "repair", "Repair it.", "```ptx\nfixed\n```",
                                  checkResult(verify::Verdict::Correct, verify::Stage::Execute)));
  store::AttemptRow pending = attempt(6, 2, 1, "optimize", "Faster.", "", std::nullopt);
  pending.completion->status = "pending";
  data.attempts.push_back(pending);
  store::AttemptRow bare = attempt(7, 2, 2, "repair", "x", "```ptx\nagain\n```",
                                   checkResult(verify::Verdict::Wrong, verify::Stage::Execute));
  bare.prompt.request.erase("messages");
  data.attempts.push_back(bare);
  return data;
}

double serveReward(const verify::CheckResult &result) {
  return serve::rewardJson(serve::AnswerCheck{result, std::nullopt}, serve::RewardWeights{})["reward"].get<double>();
}

TEST(DatasetRecords, RlHasOneRecordPerVerifiedAttemptWithServesReward) {
  store::RunData data = sampleRun();
  DatasetCounts counts;
  std::vector<json> records = datasetRecords(data, 3, DatasetOptions{DatasetFormat::Rl, {}}, counts);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(counts.records, 4u);
  EXPECT_EQ(counts.attempts, 7u);
  EXPECT_EQ(counts.skipped["skeleton request (no kernel asked)"], 1u);
  EXPECT_EQ(counts.skipped["no completion (pending, failed or never asked)"], 1u);
  EXPECT_EQ(counts.skipped["no prompt messages stored"], 1u);

  const json &noPtx = records[0];
  EXPECT_EQ(noPtx["schema_version"], kDatasetSchemaVersion);
  EXPECT_EQ(noPtx["run_id"], 7);
  EXPECT_EQ(noPtx["eval_id"], 3);
  EXPECT_EQ(noPtx["attempt_id"], 1);
  EXPECT_EQ(noPtx["candidate_id"], 101);
  EXPECT_EQ(noPtx["task"], "vector_add");
  EXPECT_EQ(noPtx["level"], 1);
  EXPECT_EQ(noPtx["arch"], "sm_90");
  EXPECT_EQ(noPtx["prompt"], messages("Write vector_add."));
  EXPECT_EQ(noPtx["completion"], json::array({{{"role", "assistant"}, {"content", "no code, sorry"}}}));
  EXPECT_EQ(noPtx["ptx"], "");
  EXPECT_EQ(noPtx["duplicate_of"], 0);
  EXPECT_EQ(noPtx["temperature"], 0.7);
  EXPECT_EQ(noPtx["extract_error"], "no PTX module in the answer");
  EXPECT_EQ(noPtx["verdict"], "no-ptx");
  EXPECT_EQ(noPtx["stage"], "extract");
  EXPECT_EQ(noPtx["reward"], 0.0);

  const json &fast = records[1];
  EXPECT_EQ(fast["ptx"], kPtx);
  EXPECT_EQ(fast["correct"], true);
  EXPECT_EQ(fast["timed"], true);
  EXPECT_EQ(fast["extract_error"], "");
  EXPECT_DOUBLE_EQ(fast["speedup_low"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(fast["speedup_high"].get<double>(), 2.4);
  // Every stage and half of `speed` (log2(2) / log2(4)).
  EXPECT_NEAR(fast["reward"].get<double>(), 0.9, 1e-12);
  EXPECT_DOUBLE_EQ(fast["reward"].get<double>(), serveReward(checkResult(verify::Verdict::Correct, verify::Stage::Done, 2.0)));
  EXPECT_DOUBLE_EQ(fast["reward_stages"]["speed"].get<double>(), 0.1);

  const json &lint = records[2];
  EXPECT_EQ(lint["verdict"], "lint-error");
  EXPECT_EQ(lint["diagnostics"],
            toolchain::toJson(checkResult(verify::Verdict::LintError, verify::Stage::Lint).diagnostics));
  EXPECT_EQ(lint["diagnostics"][0]["code"], "undeclared-register");
  EXPECT_DOUBLE_EQ(lint["reward"].get<double>(), 0.05);

  const json &repaired = records[3];
  EXPECT_EQ(repaired["kind"], "repair");
  // Not timed: no field is null (datasets types a column by its first block); zeros and `timed`.
  EXPECT_EQ(repaired["timed"], false);
  EXPECT_EQ(repaired["speedup"], 0.0);
  EXPECT_EQ(repaired["speedup_low"], 0.0);
  EXPECT_NEAR(repaired["reward"].get<double>(), 0.8, 1e-12);
}

TEST(DatasetRecords, RlRewardsTakeTheGivenWeights) {
  Result<serve::RewardWeights> weights = serve::RewardWeights::fromJson({{"correct", 1.0}, {"speed", 0.0}});
  ASSERT_TRUE(weights);
  DatasetCounts counts;
  std::vector<json> records = datasetRecords(sampleRun(), std::nullopt, DatasetOptions{DatasetFormat::Rl, *weights}, counts);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_NEAR(records[1]["reward"].get<double>(), 1.2, 1e-12);
  EXPECT_EQ(records[1]["reward_weights"]["correct"], 1.0);
  EXPECT_EQ(records[0]["eval_id"], 0);
}

TEST(DatasetRecords, SftTakesTheFastestCorrectKernelWithItsSlotsTaskPrompt) {
  DatasetCounts counts;
  std::vector<json> records = datasetRecords(sampleRun(), std::nullopt, DatasetOptions{DatasetFormat::Sft, {}}, counts);
  ASSERT_EQ(records.size(), 1u);
  const json &record = records[0];
  EXPECT_EQ(record["attempt_id"], 2); // timed at 2x: it beats slot 0's untimed repair
  EXPECT_EQ(record["prompt_attempt_id"], 2);
  EXPECT_EQ(record["prompt"], messages("Write vector_add."));
  EXPECT_EQ(record["ptx"], kPtx);
  EXPECT_EQ(record["verdict"], "correct");
  // The completion is the module in a ```ptx fence, as the prompts ask; the extractor reads it back.
  const std::string content = record["completion"][0]["content"];
  EXPECT_EQ(record["completion"][0]["role"], "assistant");
  Result<prompt::ExtractedPtx> extracted = prompt::extractPtx(content);
  ASSERT_TRUE(extracted);
  EXPECT_EQ(extracted->ptx, kPtx);
}

TEST(DatasetRecords, SftPairsARepairedKernelWithTheSlotsFirstPrompt) {
  store::RunData data = sampleRun();
  data.attempts.erase(data.attempts.begin() + 1); // no fast kernel: slot 0's repair is the best
  DatasetCounts counts;
  std::vector<json> records = datasetRecords(data, std::nullopt, DatasetOptions{DatasetFormat::Sft, {}}, counts);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["attempt_id"], 5);
  EXPECT_EQ(records[0]["kind"], "repair");
  EXPECT_EQ(records[0]["prompt_attempt_id"], 1);
  EXPECT_EQ(records[0]["prompt"], messages("Write vector_add."));
}

TEST(DatasetRecords, SftLeavesOutARunWithoutACorrectKernel) {
  store::RunData data = sampleRun();
  data.attempts.erase(data.attempts.begin() + 4);
  data.attempts.erase(data.attempts.begin() + 1);
  DatasetCounts counts;
  EXPECT_TRUE(datasetRecords(data, std::nullopt, DatasetOptions{DatasetFormat::Sft, {}}, counts).empty());
  EXPECT_EQ(counts.skipped["no correct kernel"], 1u);
}

TEST(DatasetRecords, PairsComeFromOnePrompt) {
  DatasetCounts counts;
  std::vector<json> records = datasetRecords(sampleRun(), std::nullopt, DatasetOptions{DatasetFormat::Pairs, {}}, counts);
  // "Write vector_add." got no-ptx, correct (2x) and lint-error; "Repair it." one answer only.
  ASSERT_EQ(records.size(), 2u);
  for (const json &record : records) {
    EXPECT_EQ(record["prompt"], messages("Write vector_add."));
    EXPECT_EQ(record["chosen_attempt_id"], 2);
    EXPECT_EQ(record["chosen_verdict"], "correct");
    EXPECT_EQ(record["chosen"][0]["content"], "```ptx\nfast\n```");
    EXPECT_NEAR(record["chosen_reward"].get<double>(), 0.9, 1e-12);
  }
  EXPECT_EQ(records[0]["rejected_attempt_id"], 1);
  EXPECT_EQ(records[0]["rejected_verdict"], "no-ptx");
  EXPECT_EQ(records[1]["rejected_attempt_id"], 3);
  EXPECT_EQ(records[1]["rejected"][0]["content"], "```ptx\nbroken\n```");
}

/// Whether `value` holds a null anywhere.
bool holdsNull(const json &value) {
  if (value.is_null()) return true;
  if (value.is_structured())
    for (const json &member : value)
      if (holdsNull(member)) return true;
  return false;
}

TEST(DatasetRecords, NoFieldIsEverNull) {
  store::RunData data = sampleRun();
  data.run.provenance = json::object(); // no level, no arch
  data.attempts[1].prompt.temperature.reset();
  data.attempts[1].result->registers.reset();
  for (DatasetFormat format : {DatasetFormat::Sft, DatasetFormat::Rl, DatasetFormat::Pairs}) {
    DatasetCounts counts;
    std::vector<json> records = datasetRecords(data, std::nullopt, DatasetOptions{format, {}}, counts);
    ASSERT_FALSE(records.empty());
    for (const json &record : records) EXPECT_FALSE(holdsNull(record)) << record.dump();
    EXPECT_EQ(records[0]["level"], 0);
    EXPECT_EQ(records[0]["arch"], "");
  }
}

TEST(DatasetRecords, OddStoredContentIsLeftOutNotThrownOn) {
  store::RunData data = sampleRun();
  data.attempts[0].result->result = json("not a result");
  data.attempts[2].prompt.request["messages"] = json::array({{{"role", 1}, {"content", "x"}}});
  data.attempts[1].completion->text = std::string("bad \xff utf-8");
  DatasetCounts counts;
  std::vector<json> records = datasetRecords(data, std::nullopt, DatasetOptions{DatasetFormat::Rl, {}}, counts);
  EXPECT_EQ(records.size(), 2u);
  EXPECT_EQ(counts.skipped["result does not decode"], 1u);
  EXPECT_EQ(counts.skipped["no prompt messages stored"], 2u);
  std::string line = datasetLine(records[0]);
  EXPECT_EQ(line.back(), '\n');
  EXPECT_NE(line.find("bad \xEF\xBF\xBD utf-8"), std::string::npos); // U+FFFD
}

} // namespace
} // namespace ptxforge::cli
