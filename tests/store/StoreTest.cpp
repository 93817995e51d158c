// The run store: opening and schema checks, round trips of every record,
// untrusted text kept verbatim, idempotent adds and upserts, duplicate lookup,
// whole-run loads, and concurrent writers.
#include "store/Store.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

namespace ptxforge::store {
namespace {

/// A fresh directory under the system temp dir, removed with the fixture.
class StoreTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::random_device device;
    dir_ = std::filesystem::temp_directory_path() /
           ("ptxforge-store-test-" + std::to_string(device()) + "-" + std::to_string(device()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::string dbPath() const { return (dir_ / "runs.db").string(); }

  std::unique_ptr<Store> openStore() {
    auto store = Store::open(dbPath());
    EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message);
    return store.ok() ? std::move(store).value() : nullptr;
  }

  /// Runs SQL on the database behind the store's back.
  void rawExec(const std::string &sql) {
    sqlite3 *db = nullptr;
    ASSERT_EQ(sqlite3_open(dbPath().c_str(), &db), SQLITE_OK);
    char *message = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
    std::string text = message ? message : "";
    sqlite3_free(message);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << text;
  }

  std::filesystem::path dir_;
};

std::string readBytes(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

RunRecord sampleRun(const std::string &task = "saxpy") {
  RunRecord run;
  run.task = task;
  run.model = "openai:gpt-4o";
  run.strategies = "zero-shot,spec";
  run.status = "running";
  run.parameters = {{"rounds", 3}, {"candidates", 4}, {"temperatures", {0.2, 0.8}}};
  run.provenance = {{"ptxforge", "0.1.0"}, {"arch", "sm_90"}};
  run.summary = nlohmann::json::object();
  return run;
}

PromptRecord samplePrompt(int64_t runId, int round, int slot, const std::string &kind = "initial") {
  PromptRecord prompt;
  prompt.runId = runId;
  prompt.round = round;
  prompt.slot = slot;
  prompt.kind = kind;
  prompt.strategies = "zero-shot";
  prompt.tendency = "balanced";
  prompt.requestHash = "req-" + std::to_string(round) + "-" + std::to_string(slot) + "-" + kind;
  prompt.request = {{"messages", {{{"role", "user"}, {"content", "write saxpy"}}}}};
  return prompt;
}

CandidateRecord sampleCandidate(int64_t runId, const PromptRecord &prompt, int64_t promptId, const std::string &ptxHash,
                                const std::string &sassHash = "") {
  CandidateRecord candidate;
  candidate.runId = runId;
  candidate.promptId = promptId;
  candidate.round = prompt.round;
  candidate.slot = prompt.slot;
  candidate.ptx = ".version 8.0\n.target sm_90\n// " + ptxHash;
  candidate.ptxHash = ptxHash;
  candidate.sassHash = sassHash;
  return candidate;
}

ResultRecord sampleResult(int64_t candidateId, const std::string &verdict = "correct") {
  ResultRecord result;
  result.candidateId = candidateId;
  result.verdict = verdict;
  result.stage = "done";
  result.summary = "ok";
  return result;
}

bool isIsoUtc(const std::string &text) {
  // "2026-11-29T20:41:07Z"
  if (text.size() != 20)
    return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char expected = i == 4 || i == 7 ? '-' : i == 10 ? 'T' : i == 13 || i == 16 ? ':' : i == 19 ? 'Z' : '0';
    if (expected == '0' ? !std::isdigit(static_cast<unsigned char>(text[i])) : text[i] != expected)
      return false;
  }
  return true;
}

// --- Opening -----------------------------------------------------------------

TEST_F(StoreTest, OpenCreatesTheDatabaseAndReopeningKeepsItsData) {
  int64_t runId = 0;
  {
    auto store = openStore();
    ASSERT_TRUE(store);
    EXPECT_EQ(store->path(), dbPath());
    auto id = store->createRun(sampleRun());
    ASSERT_TRUE(id.ok()) << id.error().message;
    runId = *id;
  }
  EXPECT_TRUE(std::filesystem::exists(dbPath()));
  auto store = openStore();
  ASSERT_TRUE(store);
  auto run = store->run(runId);
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->task, "saxpy");
}

TEST_F(StoreTest, OpenSetsWalModeAndSchemaVersion) {
  ASSERT_TRUE(openStore());
  sqlite3 *db = nullptr;
  ASSERT_EQ(sqlite3_open(dbPath().c_str(), &db), SQLITE_OK);
  auto single = [&](const char *sql) {
    sqlite3_stmt *statement = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &statement, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(statement), SQLITE_ROW);
    std::string value = reinterpret_cast<const char *>(sqlite3_column_text(statement, 0));
    sqlite3_finalize(statement);
    return value;
  };
  EXPECT_EQ(single("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(single("PRAGMA user_version"), "2");
  sqlite3_close(db);
}

TEST_F(StoreTest, AVersionOneDatabaseGainsTheEvalTablesAndKeepsItsRuns) {
  {
    auto store = openStore();
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->createRun(sampleRun()));
  }
  // What a version-1 database looked like: no eval tables.
  rawExec("DROP TABLE eval_runs; DROP TABLE evals; PRAGMA user_version = 1;");
  auto store = Store::open(dbPath());
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto runs = (*store)->runs();
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 1u);
  EvalRecord record;
  record.model = "exec:model";
  record.suite = "L1";
  record.suiteVersion = "L1@abc";
  auto id = (*store)->createEval(record);
  ASSERT_TRUE(id.ok()) << id.error().message;
}

TEST_F(StoreTest, RowsWrittenByAnOlderBuildReadBackAsText) {
  {
    auto store = openStore();
    ASSERT_TRUE(store);
  }
  // Rows as an older build wrote them, with raw SQL: a version-1 database, a
  // not-verified verdict whose JSON still says rejected, a no-ptx result at
  // the extract stage.
  rawExec("DROP TABLE eval_runs; DROP TABLE evals; PRAGMA user_version = 1;"
          "INSERT INTO runs (id, created_at, updated_at, task, model, strategies, status, parameters, provenance, "
          "summary) VALUES (1, '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z', 'relu', 'exec:m', 'zero-shot', "
          "'budget', '{}', '{}', '{}');"
          "INSERT INTO prompts (id, run_id, round, slot, kind, strategies, tendency, temperature, "
          "parent_candidate_id, request_hash, request) VALUES (1, 1, 1, 0, 'initial', '', '', NULL, NULL, 'h', '{}'),"
          "(2, 1, 1, 1, 'initial', '', '', NULL, NULL, 'h2', '{}');"
          "INSERT INTO completions (id, prompt_id, status, text, error, meta, created_at) VALUES "
          "(1, 1, 'complete', 'x', '', '{}', '2025-01-01T00:00:00Z'), (2, 2, 'error', '', 'HTTP 500', '{}', '');"
          "INSERT INTO candidates (id, run_id, prompt_id, round, slot, ptx, ptx_hash, sass_hash, duplicate_of, "
          "extract_error, created_at) VALUES (1, 1, 1, 1, 0, '.version 8.0', 'p', '', NULL, '', '');"
          "INSERT INTO results (candidate_id, verdict, stage, summary, speedup, registers, result, created_at) "
          "VALUES (1, 'not-verified', 'execute', 's', NULL, NULL, '{\"verdict\": \"rejected\"}', '');");
  auto store = Store::open(dbPath());
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto data = (*store)->load(1);
  ASSERT_TRUE(data.ok()) << data.error().message;
  EXPECT_EQ(data->run.runStatus(), RunStatus::Budget);
  ASSERT_EQ(data->attempts.size(), 2u);
  ASSERT_TRUE(data->attempts[0].result.has_value());
  EXPECT_EQ(data->attempts[0].result->verdict, "not-verified");
  EXPECT_EQ(data->attempts[0].result->stage, "execute");
  EXPECT_EQ(data->attempts[0].result->result["verdict"], "rejected");
  EXPECT_EQ(data->attempts[0].completion->completionStatus(), CompletionStatus::Complete);
  EXPECT_EQ(data->attempts[1].completion->completionStatus(), CompletionStatus::Error);
}

TEST(StatusNames, RoundTripAndRejectOtherText) {
  for (RunStatus status : {RunStatus::Running, RunStatus::Done, RunStatus::Pending, RunStatus::Interrupted,
                           RunStatus::Budget, RunStatus::Failed})
    EXPECT_EQ(parseRunStatus(runStatusName(status)), status);
  for (CompletionStatus status : {CompletionStatus::Complete, CompletionStatus::Pending, CompletionStatus::Error})
    EXPECT_EQ(parseCompletionStatus(completionStatusName(status)), status);
  EXPECT_EQ(parseRunStatus("Done"), std::nullopt);
  EXPECT_EQ(parseCompletionStatus(""), std::nullopt);
  EXPECT_EQ(RunRecord{}.runStatus(), RunStatus::Running);
  for (EvalStatus status : {EvalStatus::Running, EvalStatus::Complete, EvalStatus::Incomplete,
                            EvalStatus::Interrupted, EvalStatus::InfraError, EvalStatus::Pending})
    EXPECT_EQ(parseEvalStatus(evalStatusName(status)), status);
  EXPECT_STREQ(evalStatusName(EvalStatus::InfraError), "infra-error");
  // Evals recorded before the eval statuses said "done": not an eval status (eval reads it as finished).
  EXPECT_EQ(parseEvalStatus("done"), std::nullopt);
  EXPECT_EQ(EvalRecord{}.evalStatus(), EvalStatus::Running);
}

TEST_F(StoreTest, EvalsRoundTripWithTheirRuns) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runA = store->createRun(sampleRun());
  auto runB = store->createRun(sampleRun());
  ASSERT_TRUE(runA && runB);
  EvalRecord record;
  record.model = "replay:rec.jsonl";
  record.suite = "vector_add,relu";
  record.suiteVersion = "custom@0123456789ab";
  record.parameters = {{"samples", 5}, {"ks", {1, 2}}};
  record.provenance = {{"executor", "isolated-emu"}};
  auto id = store->createEval(record);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(store->linkEvalRun(*id, 1, "relu", *runB));
  ASSERT_TRUE(store->linkEvalRun(*id, 0, "vector_add", *runA));
  // Re-linking a task (a resumed eval) replaces its run.
  ASSERT_TRUE(store->linkEvalRun(*id, 0, "vector_add", *runA));
  nlohmann::json metrics = {{"ks", {1, 2}}, {"timed", false}};
  ASSERT_TRUE(store->updateEval(*id, EvalStatus::Incomplete, metrics));
  auto read = store->evalRecord(*id);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->model, record.model);
  EXPECT_EQ(read->suiteVersion, record.suiteVersion);
  EXPECT_EQ(read->status, "incomplete");
  EXPECT_EQ(read->evalStatus(), EvalStatus::Incomplete);
  EXPECT_EQ(read->parameters, record.parameters);
  EXPECT_EQ(read->metrics, metrics);
  auto runs = store->evalRuns(*id);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].task, "vector_add");
  EXPECT_EQ((*runs)[0].runId, *runA);
  EXPECT_EQ((*runs)[1].task, "relu");
  auto all = store->evals();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);
  auto missing = store->evalRecord(*id + 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no eval"), std::string::npos);
  EXPECT_FALSE(store->updateEval(*id + 1, EvalStatus::Complete, metrics).ok());
  // A run that does not exist cannot be linked.
  EXPECT_FALSE(store->linkEvalRun(*id, 2, "gelu", 9999).ok());
}

TEST_F(StoreTest, RefusesANewerSchemaVersionNamingThePath) {
  ASSERT_TRUE(openStore());
  rawExec("PRAGMA user_version = 99");
  auto store = Store::open(dbPath());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().kind, ErrorKind::Io);
  EXPECT_NE(store.error().message.find(dbPath()), std::string::npos) << store.error().message;
  EXPECT_NE(store.error().message.find("99"), std::string::npos) << store.error().message;
}

TEST_F(StoreTest, RefusesAFileThatIsNotADatabaseAndLeavesItUntouched) {
  std::string bytes;
  for (int i = 0; i < 300; ++i)
    bytes += "this is a PTX listing, not a database \x01\x7f\xfe line " + std::to_string(i) + "\n";
  std::ofstream(dbPath(), std::ios::binary) << bytes;
  auto store = Store::open(dbPath());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().kind, ErrorKind::Io);
  EXPECT_NE(store.error().message.find(dbPath()), std::string::npos) << store.error().message;
  EXPECT_EQ(readBytes(dbPath()), bytes);
  EXPECT_FALSE(std::filesystem::exists(dbPath() + "-wal"));
}

TEST_F(StoreTest, OpenFailsNamingThePathWhenItCannotBeCreated) {
  std::string path = (dir_ / "no" / "such" / "dir" / "runs.db").string();
  auto store = Store::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().kind, ErrorKind::Io);
  EXPECT_NE(store.error().message.find(path), std::string::npos) << store.error().message;
}

TEST_F(StoreTest, UtcNowIsIso8601WithSeconds) { EXPECT_TRUE(isIsoUtc(utcNow())) << utcNow(); }

// --- Runs --------------------------------------------------------------------

TEST_F(StoreTest, RunRoundTripFillsIdAndTimestamps) {
  auto store = openStore();
  ASSERT_TRUE(store);
  RunRecord written = sampleRun();
  written.summary = {{"best", nullptr}};
  auto id = store->createRun(written);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_GT(*id, 0);
  auto run = store->run(*id);
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->id, *id);
  EXPECT_TRUE(isIsoUtc(run->createdAt)) << run->createdAt;
  EXPECT_EQ(run->updatedAt, run->createdAt);
  EXPECT_EQ(run->task, written.task);
  EXPECT_EQ(run->model, written.model);
  EXPECT_EQ(run->strategies, written.strategies);
  EXPECT_EQ(run->status, "running");
  EXPECT_EQ(run->parameters, written.parameters);
  EXPECT_EQ(run->provenance, written.provenance);
  EXPECT_EQ(run->summary, written.summary);
}

TEST_F(StoreTest, UpdateRunSetsStatusAndSummary) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto id = store->createRun(sampleRun());
  ASSERT_TRUE(id.ok());
  nlohmann::json summary = {{"best_candidate", 7}, {"speedup", 1.25}};
  auto updated = store->updateRun(*id, "done", summary);
  ASSERT_TRUE(updated.ok()) << updated.error().message;
  auto run = store->run(*id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->status, "done");
  EXPECT_EQ(run->summary, summary);
  EXPECT_TRUE(isIsoUtc(run->updatedAt));
  EXPECT_GE(run->updatedAt, run->createdAt);
  EXPECT_EQ(run->parameters, sampleRun().parameters); // untouched
}

TEST_F(StoreTest, UpdateRunOfAMissingRunIsAnError) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto updated = store->updateRun(42, "done", nlohmann::json::object());
  ASSERT_FALSE(updated.ok());
  EXPECT_EQ(updated.error().kind, ErrorKind::InvalidInput);
  EXPECT_EQ(updated.error().message, "no run 42 in " + dbPath());
}

TEST_F(StoreTest, RunOfAMissingIdNamesTheIdAndThePath) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto run = store->run(17);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().kind, ErrorKind::InvalidInput);
  EXPECT_EQ(run.error().message, "no run 17 in " + dbPath());
}

TEST_F(StoreTest, RunsAreNewestFirstAndLimited) {
  auto store = openStore();
  ASSERT_TRUE(store);
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i) {
    auto id = store->createRun(sampleRun("task" + std::to_string(i)));
    ASSERT_TRUE(id.ok());
    ids.push_back(*id);
  }
  auto all = store->runs();
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ((*all)[i].id, ids[4 - i]);
    EXPECT_EQ((*all)[i].task, "task" + std::to_string(4 - i));
  }
  auto two = store->runs(2);
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].id, ids[4]);
  EXPECT_EQ((*two)[1].id, ids[3]);
  auto many = store->runs(100);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->size(), 5u);
}

TEST_F(StoreTest, RunsOfAnEmptyStoreIsEmpty) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runs = store->runs();
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
}

// --- Prompts -----------------------------------------------------------------

TEST_F(StoreTest, PromptRoundTripWithOptionalFieldsUnset) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  ASSERT_TRUE(runId.ok());
  PromptRecord written = samplePrompt(*runId, 1, 2);
  auto id = store->addPrompt(written);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto found = store->findPrompt(*runId, 1, 2, "initial");
  ASSERT_TRUE(found.ok()) << found.error().message;
  ASSERT_TRUE(found->has_value());
  const PromptRecord &prompt = **found;
  EXPECT_EQ(prompt.id, *id);
  EXPECT_EQ(prompt.runId, *runId);
  EXPECT_EQ(prompt.round, 1);
  EXPECT_EQ(prompt.slot, 2);
  EXPECT_EQ(prompt.kind, "initial");
  EXPECT_EQ(prompt.strategies, written.strategies);
  EXPECT_EQ(prompt.tendency, written.tendency);
  EXPECT_FALSE(prompt.temperature.has_value());
  EXPECT_FALSE(prompt.parentCandidateId.has_value());
  EXPECT_EQ(prompt.requestHash, written.requestHash);
  EXPECT_EQ(prompt.request, written.request);
}

TEST_F(StoreTest, PromptRoundTripWithOptionalFieldsSet) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  ASSERT_TRUE(runId.ok());
  PromptRecord first = samplePrompt(*runId, 1, 0);
  auto firstId = store->addPrompt(first);
  ASSERT_TRUE(firstId.ok());
  auto parent = store->addCandidate(sampleCandidate(*runId, first, *firstId, "h1"));
  ASSERT_TRUE(parent.ok()) << parent.error().message;

  PromptRecord written = samplePrompt(*runId, 2, 0, "repair");
  written.temperature = 0.7;
  written.parentCandidateId = *parent;
  auto id = store->addPrompt(written);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto found = store->findPrompt(*runId, 2, 0, "repair");
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->id, *id);
  EXPECT_EQ((*found)->temperature, std::optional<double>(0.7));
  EXPECT_EQ((*found)->parentCandidateId, std::optional<int64_t>(*parent));
}

TEST_F(StoreTest, TemperatureZeroIsNotConfusedWithNone) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  ASSERT_TRUE(runId.ok());
  PromptRecord written = samplePrompt(*runId, 1, 0);
  written.temperature = 0.0;
  ASSERT_TRUE(store->addPrompt(written).ok());
  auto found = store->findPrompt(*runId, 1, 0, "initial");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->temperature, std::optional<double>(0.0));
}

TEST_F(StoreTest, FindPromptOfAnAbsentKeyIsNone) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  ASSERT_TRUE(runId.ok());
  ASSERT_TRUE(store->addPrompt(samplePrompt(*runId, 1, 0)).ok());
  for (auto found : {store->findPrompt(*runId, 1, 0, "repair"), store->findPrompt(*runId, 1, 1, "initial"),
                     store->findPrompt(*runId, 2, 0, "initial"), store->findPrompt(*runId + 1, 1, 0, "initial")}) {
    ASSERT_TRUE(found.ok());
    EXPECT_FALSE(found->has_value());
  }
}

TEST_F(StoreTest, AddPromptReturnsTheExistingIdForTheSameKey) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  ASSERT_TRUE(runId.ok());
  auto first = store->addPrompt(samplePrompt(*runId, 1, 0));
  ASSERT_TRUE(first.ok());
  // A replay of the same prompt, even with other details, keeps the first row.
  PromptRecord replay = samplePrompt(*runId, 1, 0);
  replay.requestHash = "something else";
  auto again = store->addPrompt(replay);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*again, *first);
  auto found = store->findPrompt(*runId, 1, 0, "initial");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->requestHash, samplePrompt(*runId, 1, 0).requestHash);

  // Any part of the key that differs makes a new prompt.
  auto otherKind = store->addPrompt(samplePrompt(*runId, 1, 0, "skeleton"));
  auto otherSlot = store->addPrompt(samplePrompt(*runId, 1, 1));
  auto otherRound = store->addPrompt(samplePrompt(*runId, 2, 0));
  ASSERT_TRUE(otherKind.ok() && otherSlot.ok() && otherRound.ok());
  std::set<int64_t> ids = {*first, *otherKind, *otherSlot, *otherRound};
  EXPECT_EQ(ids.size(), 4u);
}

TEST_F(StoreTest, AddPromptForAMissingRunIsAnIoError) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto id = store->addPrompt(samplePrompt(999, 1, 0));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().kind, ErrorKind::Io);
  EXPECT_NE(id.error().message.find(dbPath()), std::string::npos);
  EXPECT_NE(id.error().message.find("FOREIGN KEY"), std::string::npos) << id.error().message;
}

// --- Completions -------------------------------------------------------------

TEST_F(StoreTest, CompletionRoundTrip) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  ASSERT_TRUE(runId.ok());
  auto promptId = store->addPrompt(samplePrompt(*runId, 1, 0));
  ASSERT_TRUE(promptId.ok());
  auto none = store->findCompletion(*promptId);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  CompletionRecord written;
  written.promptId = *promptId;
  written.status = "complete";
  written.text = "```ptx\n.version 8.0\n```";
  written.meta = {{"usage", {{"prompt_tokens", 10}, {"completion_tokens", 20}}}, {"latency_ms", 12.5}};
  auto id = store->putCompletion(written);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto found = store->findCompletion(*promptId);
  ASSERT_TRUE(found.ok()) << found.error().message;
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->id, *id);
  EXPECT_EQ((*found)->promptId, *promptId);
  EXPECT_EQ((*found)->status, "complete");
  EXPECT_EQ((*found)->text, written.text);
  EXPECT_EQ((*found)->error, "");
  EXPECT_EQ((*found)->meta, written.meta);
  EXPECT_TRUE(isIsoUtc((*found)->createdAt));
}

TEST_F(StoreTest, PutCompletionReplacesAPendingOneKeepingItsId) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  ASSERT_TRUE(runId.ok());
  auto promptId = store->addPrompt(samplePrompt(*runId, 1, 0));
  ASSERT_TRUE(promptId.ok());

  CompletionRecord pending;
  pending.promptId = *promptId;
  pending.status = "pending";
  pending.meta = {{"batch", "batch_123"}};
  auto pendingId = store->putCompletion(pending);
  ASSERT_TRUE(pendingId.ok());

  CompletionRecord complete;
  complete.promptId = *promptId;
  complete.status = "complete";
  complete.text = "the answer";
  complete.meta = {{"finish_reason", "stop"}};
  auto completeId = store->putCompletion(complete);
  ASSERT_TRUE(completeId.ok()) << completeId.error().message;
  EXPECT_EQ(*completeId, *pendingId);

  auto found = store->findCompletion(*promptId);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->id, *pendingId);
  EXPECT_EQ((*found)->status, "complete");
  EXPECT_EQ((*found)->text, "the answer");
  EXPECT_EQ((*found)->meta, complete.meta); // replaced, not merged

  CompletionRecord failed;
  failed.promptId = *promptId;
  failed.status = "error";
  failed.error = "HTTP 429: rate limited";
  ASSERT_TRUE(store->putCompletion(failed).ok());
  found = store->findCompletion(*promptId);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->status, "error");
  EXPECT_EQ((*found)->text, "");
  EXPECT_EQ((*found)->error, "HTTP 429: rate limited");
}

// --- Candidates and results --------------------------------------------------

TEST_F(StoreTest, CandidateRoundTripWithOptionalFieldsUnsetAndSet) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  ASSERT_TRUE(runId.ok());
  PromptRecord firstPrompt = samplePrompt(*runId, 1, 0);
  auto firstPromptId = store->addPrompt(firstPrompt);
  PromptRecord secondPrompt = samplePrompt(*runId, 1, 1);
  auto secondPromptId = store->addPrompt(secondPrompt);
  ASSERT_TRUE(firstPromptId.ok() && secondPromptId.ok());

  CandidateRecord original = sampleCandidate(*runId, firstPrompt, *firstPromptId, "ptxhash", "sasshash");
  auto originalId = store->addCandidate(original);
  ASSERT_TRUE(originalId.ok()) << originalId.error().message;
  auto found = store->candidate(*originalId);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->id, *originalId);
  EXPECT_EQ((*found)->runId, *runId);
  EXPECT_EQ((*found)->promptId, *firstPromptId);
  EXPECT_EQ((*found)->round, 1);
  EXPECT_EQ((*found)->slot, 0);
  EXPECT_EQ((*found)->ptx, original.ptx);
  EXPECT_EQ((*found)->ptxHash, "ptxhash");
  EXPECT_EQ((*found)->sassHash, "sasshash");
  EXPECT_FALSE((*found)->duplicateOf.has_value());
  EXPECT_EQ((*found)->extractError, "");
  EXPECT_TRUE(isIsoUtc((*found)->createdAt));

  CandidateRecord duplicate = sampleCandidate(*runId, secondPrompt, *secondPromptId, "ptxhash");
  duplicate.duplicateOf = *originalId;
  auto duplicateId = store->addCandidate(duplicate);
  ASSERT_TRUE(duplicateId.ok());
  auto byPrompt = store->findCandidate(*secondPromptId);
  ASSERT_TRUE(byPrompt.ok() && byPrompt->has_value());
  EXPECT_EQ((*byPrompt)->id, *duplicateId);
  EXPECT_EQ((*byPrompt)->slot, 1);
  EXPECT_EQ((*byPrompt)->duplicateOf, std::optional<int64_t>(*originalId));

  auto absent = store->candidate(*duplicateId + 100);
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->has_value());
}

TEST_F(StoreTest, CandidateWithoutPtxKeepsItsExtractError) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  PromptRecord prompt = samplePrompt(*runId, 1, 0);
  auto promptId = store->addPrompt(prompt);
  ASSERT_TRUE(runId.ok() && promptId.ok());
  CandidateRecord written = sampleCandidate(*runId, prompt, *promptId, "");
  written.ptx = "";
  written.extractError = "no ```ptx block in the answer";
  ASSERT_TRUE(store->addCandidate(written).ok());
  auto found = store->findCandidate(*promptId);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->ptx, "");
  EXPECT_EQ((*found)->ptxHash, "");
  EXPECT_EQ((*found)->extractError, written.extractError);
}

TEST_F(StoreTest, AddCandidateReturnsTheExistingIdForTheSamePrompt) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  PromptRecord prompt = samplePrompt(*runId, 1, 0);
  auto promptId = store->addPrompt(prompt);
  ASSERT_TRUE(runId.ok() && promptId.ok());
  auto first = store->addCandidate(sampleCandidate(*runId, prompt, *promptId, "a"));
  auto again = store->addCandidate(sampleCandidate(*runId, prompt, *promptId, "b"));
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(*first, *again);
  auto found = store->findCandidate(*promptId);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->ptxHash, "a");
}

TEST_F(StoreTest, ResultRoundTripWithOptionalFieldsUnsetThenSet) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  PromptRecord prompt = samplePrompt(*runId, 1, 0);
  auto promptId = store->addPrompt(prompt);
  auto candidateId = store->addCandidate(sampleCandidate(*runId, prompt, *promptId, "h"));
  ASSERT_TRUE(runId.ok() && promptId.ok() && candidateId.ok());

  auto none = store->findResult(*candidateId);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  ResultRecord failed = sampleResult(*candidateId, "compile-error");
  failed.stage = "compile";
  failed.summary = "ptxas: syntax error";
  failed.result = {{"diagnostics", {"line 3: bad"}}};
  ASSERT_TRUE(store->putResult(failed).ok());
  auto found = store->findResult(*candidateId);
  ASSERT_TRUE(found.ok()) << found.error().message;
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->candidateId, *candidateId);
  EXPECT_EQ((*found)->verdict, "compile-error");
  EXPECT_EQ((*found)->stage, "compile");
  EXPECT_EQ((*found)->summary, failed.summary);
  EXPECT_FALSE((*found)->speedup.has_value());
  EXPECT_FALSE((*found)->registers.has_value());
  EXPECT_EQ((*found)->result, failed.result);
  EXPECT_TRUE(isIsoUtc((*found)->createdAt));

  // Re-judging the candidate replaces the result.
  ResultRecord passed = sampleResult(*candidateId);
  passed.speedup = 1.37;
  passed.registers = 32;
  passed.result = {{"verdict", "correct"}};
  ASSERT_TRUE(store->putResult(passed).ok());
  found = store->findResult(*candidateId);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->verdict, "correct");
  EXPECT_EQ((*found)->stage, "done");
  EXPECT_EQ((*found)->speedup, std::optional<double>(1.37));
  EXPECT_EQ((*found)->registers, std::optional<int>(32));
  EXPECT_EQ((*found)->result, passed.result);
}

// --- Untrusted content -------------------------------------------------------

TEST_F(StoreTest, UntrustedTextIsStoredVerbatim) {
  auto store = openStore();
  ASSERT_TRUE(store);
  const std::vector<std::string> nasty = {
      "'); DROP TABLE runs; --",
      "\"double\" 'single' `back` \\backslash",
      std::string("\x01\x02\x7f\x80\xff\xfe binary-ish \t\r\n"),
      std::string("invalid UTF-8: \xc3\x28 \xa0\xa1 \xed\xa0\x80 \xf0\x28\x8c\xbc"),
      "% ? ?1 :name @name $name -- /* */ ;",
      "",
  };
  for (const std::string &text : nasty) {
    RunRecord written = sampleRun(text);
    written.model = text;
    written.strategies = text;
    written.status = text;
    auto runId = store->createRun(written);
    ASSERT_TRUE(runId.ok()) << runId.error().message;
    auto run = store->run(*runId);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->task, text);
    EXPECT_EQ(run->model, text);
    EXPECT_EQ(run->strategies, text);
    EXPECT_EQ(run->status, text);

    PromptRecord prompt = samplePrompt(*runId, 1, 0, text);
    prompt.tendency = text;
    prompt.requestHash = text;
    auto promptId = store->addPrompt(prompt);
    ASSERT_TRUE(promptId.ok()) << promptId.error().message;
    auto foundPrompt = store->findPrompt(*runId, 1, 0, text);
    ASSERT_TRUE(foundPrompt.ok() && foundPrompt->has_value());
    EXPECT_EQ((*foundPrompt)->kind, text);
    EXPECT_EQ((*foundPrompt)->tendency, text);
    EXPECT_EQ((*foundPrompt)->requestHash, text);

    CompletionRecord completion;
    completion.promptId = *promptId;
    completion.status = "complete";
    completion.text = text;
    completion.error = text;
    ASSERT_TRUE(store->putCompletion(completion).ok());
    auto foundCompletion = store->findCompletion(*promptId);
    ASSERT_TRUE(foundCompletion.ok() && foundCompletion->has_value());
    EXPECT_EQ((*foundCompletion)->text, text);
    EXPECT_EQ((*foundCompletion)->error, text);

    CandidateRecord candidate = sampleCandidate(*runId, prompt, *promptId, text, text);
    candidate.ptx = text;
    candidate.extractError = text;
    auto candidateId = store->addCandidate(candidate);
    ASSERT_TRUE(candidateId.ok());
    auto foundCandidate = store->candidate(*candidateId);
    ASSERT_TRUE(foundCandidate.ok() && foundCandidate->has_value());
    EXPECT_EQ((*foundCandidate)->ptx, text);
    EXPECT_EQ((*foundCandidate)->ptxHash, text);
    EXPECT_EQ((*foundCandidate)->sassHash, text);
    EXPECT_EQ((*foundCandidate)->extractError, text);

    ResultRecord result = sampleResult(*candidateId, text);
    result.stage = text;
    result.summary = text;
    ASSERT_TRUE(store->putResult(result).ok());
    auto foundResult = store->findResult(*candidateId);
    ASSERT_TRUE(foundResult.ok() && foundResult->has_value());
    EXPECT_EQ((*foundResult)->verdict, text);
    EXPECT_EQ((*foundResult)->summary, text);
  }
  // The injection attempt did nothing.
  auto runs = store->runs();
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  EXPECT_EQ(runs->size(), nasty.size());
}

TEST_F(StoreTest, InvalidUtf8InsideJsonIsReplacedNotThrown) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  auto promptId = store->addPrompt(samplePrompt(*runId, 1, 0));
  ASSERT_TRUE(runId.ok() && promptId.ok());
  CompletionRecord completion;
  completion.promptId = *promptId;
  completion.status = "complete";
  completion.meta = {{"model", std::string("gpt\xff\xfe")}, {"quote", "'); DROP TABLE runs; --"}};
  auto id = store->putCompletion(completion);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto found = store->findCompletion(*promptId);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->meta["model"], "gpt\xef\xbf\xbd\xef\xbf\xbd"); // two U+FFFD
  EXPECT_EQ((*found)->meta["quote"], "'); DROP TABLE runs; --");
}

TEST_F(StoreTest, CorruptJsonColumnIsAnIoErrorNotAnException) {
  int64_t runId = 0;
  {
    auto store = openStore();
    ASSERT_TRUE(store);
    auto id = store->createRun(sampleRun());
    ASSERT_TRUE(id.ok());
    runId = *id;
  }
  rawExec("UPDATE runs SET parameters = '{\"rounds\": 3' WHERE id = " + std::to_string(runId));
  auto store = openStore();
  ASSERT_TRUE(store);
  auto run = store->run(runId);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().kind, ErrorKind::Io);
  EXPECT_NE(run.error().message.find("runs.parameters"), std::string::npos) << run.error().message;
  EXPECT_NE(run.error().message.find(dbPath()), std::string::npos) << run.error().message;
  auto runs = store->runs();
  EXPECT_FALSE(runs.ok());
  auto loaded = store->load(runId);
  EXPECT_FALSE(loaded.ok());
}

// --- Duplicates --------------------------------------------------------------

/// A run with prompts in round 1, slots 0.., to hang candidates on.
class DuplicateTest : public StoreTest {
protected:
  void SetUp() override {
    StoreTest::SetUp();
    store_ = openStore();
    ASSERT_TRUE(store_);
    auto runId = store_->createRun(sampleRun());
    ASSERT_TRUE(runId.ok());
    runId_ = *runId;
  }

  /// A candidate in the next slot, with a result when `judged`.
  int64_t addCandidate(const std::string &ptxHash, const std::string &sassHash, bool judged,
                       std::optional<int64_t> duplicateOf = std::nullopt, int64_t runId = 0) {
    runId = runId ? runId : runId_;
    PromptRecord prompt = samplePrompt(runId, 1, nextSlot_++);
    auto promptId = store_->addPrompt(prompt);
    EXPECT_TRUE(promptId.ok());
    CandidateRecord candidate = sampleCandidate(runId, prompt, *promptId, ptxHash, sassHash);
    candidate.duplicateOf = duplicateOf;
    auto candidateId = store_->addCandidate(candidate);
    EXPECT_TRUE(candidateId.ok()) << candidateId.error().message;
    if (judged) {
      EXPECT_TRUE(store_->putResult(sampleResult(*candidateId)).ok());
    }
    return *candidateId;
  }

  std::optional<int64_t> duplicateId(const std::string &ptxHash, const std::string &sassHash, int64_t runId = 0) {
    auto found = store_->findDuplicate(runId ? runId : runId_, ptxHash, sassHash);
    EXPECT_TRUE(found.ok()) << found.error().message;
    if (!found.ok() || !found->has_value())
      return std::nullopt;
    return (*found)->id;
  }

  std::unique_ptr<Store> store_;
  int64_t runId_ = 0;
  int nextSlot_ = 0;
};

TEST_F(DuplicateTest, NeedsAResult) {
  addCandidate("p", "s", /*judged=*/false);
  EXPECT_EQ(duplicateId("p", "s"), std::nullopt);
  int64_t judged = addCandidate("p", "s", true);
  EXPECT_EQ(duplicateId("p", "s"), judged);
}

TEST_F(DuplicateTest, FindsTheEarliestOriginal) {
  int64_t first = addCandidate("p", "", true);
  int64_t second = addCandidate("p", "", true);
  EXPECT_LT(first, second);
  EXPECT_EQ(duplicateId("p", ""), first);
}

TEST_F(DuplicateTest, SkipsCandidatesThatAreThemselvesDuplicates) {
  int64_t other = addCandidate("q", "s", true);
  addCandidate("p", "s", true, /*duplicateOf=*/other); // earlier with ptx "p", but a duplicate
  int64_t original = addCandidate("p", "t", true);
  EXPECT_EQ(duplicateId("p", ""), original);
}

TEST_F(DuplicateTest, IgnoresEmptyHashes) {
  addCandidate("", "", true); // extraction failed, no SASS
  EXPECT_EQ(duplicateId("", ""), std::nullopt);
  int64_t withSass = addCandidate("p", "", true);
  // An empty SASS hash matches nothing, even a candidate whose SASS hash is empty too.
  EXPECT_EQ(duplicateId("other", ""), std::nullopt);
  EXPECT_EQ(duplicateId("p", ""), withSass);
}

TEST_F(DuplicateTest, MatchesOnTheSassHashAlone) {
  int64_t original = addCandidate("p", "s", true);
  EXPECT_EQ(duplicateId("different ptx", "s"), original);
  EXPECT_EQ(duplicateId("different ptx", "other sass"), std::nullopt);
}

TEST_F(DuplicateTest, StaysWithinTheRun) {
  auto otherRun = store_->createRun(sampleRun("other"));
  ASSERT_TRUE(otherRun.ok());
  addCandidate("p", "s", true, std::nullopt, *otherRun);
  EXPECT_EQ(duplicateId("p", "s"), std::nullopt);
  EXPECT_TRUE(duplicateId("p", "s", *otherRun).has_value());
}

// --- Whole runs --------------------------------------------------------------

TEST_F(StoreTest, LoadOrdersAttemptsAndJoinsWhatFollowedEachPrompt) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  auto otherRun = store->createRun(sampleRun("other"));
  ASSERT_TRUE(runId.ok() && otherRun.ok());
  ASSERT_TRUE(store->addPrompt(samplePrompt(*otherRun, 1, 0)).ok()); // not part of the load

  // Added out of order: (2,0,repair) (1,1) (1,0,skeleton) (1,0,initial).
  PromptRecord repair = samplePrompt(*runId, 2, 0, "repair");
  PromptRecord slot1 = samplePrompt(*runId, 1, 1);
  PromptRecord skeleton = samplePrompt(*runId, 1, 0, "skeleton");
  PromptRecord initial = samplePrompt(*runId, 1, 0, "initial");
  auto repairId = store->addPrompt(repair);
  auto slot1Id = store->addPrompt(slot1);
  auto skeletonId = store->addPrompt(skeleton);
  auto initialId = store->addPrompt(initial);
  ASSERT_TRUE(repairId.ok() && slot1Id.ok() && skeletonId.ok() && initialId.ok());

  // skeleton: completion only. initial: completion, candidate and result.
  // slot1: completion and candidate, not judged yet. repair: nothing yet.
  CompletionRecord completion;
  completion.status = "complete";
  completion.promptId = *skeletonId;
  completion.text = "skeleton answer";
  auto skeletonCompletion = store->putCompletion(completion);
  completion.promptId = *initialId;
  completion.text = "initial answer";
  auto initialCompletion = store->putCompletion(completion);
  completion.promptId = *slot1Id;
  completion.text = "slot 1 answer";
  ASSERT_TRUE(skeletonCompletion.ok() && initialCompletion.ok() && store->putCompletion(completion).ok());
  auto initialCandidate = store->addCandidate(sampleCandidate(*runId, initial, *initialId, "a"));
  auto slot1Candidate = store->addCandidate(sampleCandidate(*runId, slot1, *slot1Id, "b"));
  ASSERT_TRUE(initialCandidate.ok() && slot1Candidate.ok());
  ResultRecord result = sampleResult(*initialCandidate);
  result.speedup = 2.0;
  ASSERT_TRUE(store->putResult(result).ok());

  auto data = store->load(*runId);
  ASSERT_TRUE(data.ok()) << data.error().message;
  EXPECT_EQ(data->run.id, *runId);
  EXPECT_EQ(data->run.task, "saxpy");
  ASSERT_EQ(data->attempts.size(), 4u);
  // (round, slot, prompt id): skeleton was added before initial.
  EXPECT_EQ(data->attempts[0].prompt.id, *skeletonId);
  EXPECT_EQ(data->attempts[1].prompt.id, *initialId);
  EXPECT_EQ(data->attempts[2].prompt.id, *slot1Id);
  EXPECT_EQ(data->attempts[3].prompt.id, *repairId);

  const AttemptRow &skeletonRow = data->attempts[0];
  ASSERT_TRUE(skeletonRow.completion.has_value());
  EXPECT_EQ(skeletonRow.completion->id, *skeletonCompletion);
  EXPECT_EQ(skeletonRow.completion->text, "skeleton answer");
  EXPECT_FALSE(skeletonRow.candidate.has_value());
  EXPECT_FALSE(skeletonRow.result.has_value());

  const AttemptRow &initialRow = data->attempts[1];
  EXPECT_EQ(initialRow.prompt.kind, "initial");
  EXPECT_EQ(initialRow.prompt.request, initial.request);
  ASSERT_TRUE(initialRow.completion.has_value());
  EXPECT_EQ(initialRow.completion->id, *initialCompletion);
  EXPECT_EQ(initialRow.completion->text, "initial answer");
  ASSERT_TRUE(initialRow.candidate.has_value());
  EXPECT_EQ(initialRow.candidate->id, *initialCandidate);
  EXPECT_EQ(initialRow.candidate->ptxHash, "a");
  ASSERT_TRUE(initialRow.result.has_value());
  EXPECT_EQ(initialRow.result->candidateId, *initialCandidate);
  EXPECT_EQ(initialRow.result->speedup, std::optional<double>(2.0));
  EXPECT_FALSE(initialRow.result->registers.has_value());

  const AttemptRow &slot1Row = data->attempts[2];
  ASSERT_TRUE(slot1Row.completion.has_value());
  EXPECT_EQ(slot1Row.completion->text, "slot 1 answer");
  ASSERT_TRUE(slot1Row.candidate.has_value());
  EXPECT_EQ(slot1Row.candidate->id, *slot1Candidate);
  EXPECT_FALSE(slot1Row.result.has_value());

  const AttemptRow &repairRow = data->attempts[3];
  EXPECT_EQ(repairRow.prompt.round, 2);
  EXPECT_FALSE(repairRow.completion.has_value());
  EXPECT_FALSE(repairRow.candidate.has_value());
  EXPECT_FALSE(repairRow.result.has_value());
}

// eval merge copies each shard's run into one run of another store: ids are
// new, links follow them, content and timestamps stay, and two runs with
// disjoint slots go into one; a (round, slot, kind) taken twice is refused.
TEST_F(StoreTest, CopyAttemptsRenumbersLinksAndRefusesATakenSlot) {
  auto source = openStore();
  ASSERT_TRUE(source);
  auto runId = source->createRun(sampleRun());
  ASSERT_TRUE(runId.ok());
  // Slot 0: round 1 fails, round 2 repairs it (parent: round 1's candidate).
  // Slot 1: round 1 is a duplicate of slot 0's round 2 (a later candidate).
  PromptRecord first = samplePrompt(*runId, 1, 0);
  PromptRecord repair = samplePrompt(*runId, 2, 0, "repair");
  PromptRecord copy = samplePrompt(*runId, 1, 1);
  auto firstId = source->addPrompt(first);
  ASSERT_TRUE(firstId.ok());
  CompletionRecord completion;
  completion.status = "complete";
  completion.text = "answer";
  completion.meta = {{"usage", {{"prompt_tokens", 7}}}};
  completion.promptId = *firstId;
  ASSERT_TRUE(source->putCompletion(completion).ok());
  auto firstCandidate = source->addCandidate(sampleCandidate(*runId, first, *firstId, "a"));
  ASSERT_TRUE(firstCandidate.ok());
  ASSERT_TRUE(source->putResult(sampleResult(*firstCandidate, "wrong")).ok());
  repair.parentCandidateId = *firstCandidate;
  auto repairId = source->addPrompt(repair);
  auto copyId = source->addPrompt(copy);
  ASSERT_TRUE(repairId.ok() && copyId.ok());
  completion.promptId = *repairId;
  ASSERT_TRUE(source->putCompletion(completion).ok());
  completion.promptId = *copyId;
  ASSERT_TRUE(source->putCompletion(completion).ok());
  auto repairCandidate = source->addCandidate(sampleCandidate(*runId, repair, *repairId, "b"));
  ASSERT_TRUE(repairCandidate.ok());
  ResultRecord repaired = sampleResult(*repairCandidate);
  repaired.speedup = 1.5;
  repaired.registers = 12;
  ASSERT_TRUE(source->putResult(repaired).ok());
  CandidateRecord duplicate = sampleCandidate(*runId, copy, *copyId, "b");
  duplicate.duplicateOf = *repairCandidate;
  auto copyCandidate = source->addCandidate(duplicate);
  ASSERT_TRUE(copyCandidate.ok());
  ASSERT_TRUE(source->putResult(sampleResult(*copyCandidate)).ok());
  auto original = source->load(*runId);
  ASSERT_TRUE(original.ok());

  // Into another store, whose ids are already taken by a run of its own.
  auto targetStore = Store::open((dir_ / "target.db").string());
  ASSERT_TRUE(targetStore.ok()) << targetStore.error().message;
  Store &target = **targetStore;
  auto other = target.createRun(sampleRun("other"));
  ASSERT_TRUE(other.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(target.addPrompt(samplePrompt(*other, 1, i)).ok());
  auto merged = target.createRun(sampleRun());
  ASSERT_TRUE(merged.ok());
  auto ids = target.copyAttempts(*merged, original->attempts);
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  ASSERT_EQ(ids->size(), 3u);
  auto copied = target.load(*merged);
  ASSERT_TRUE(copied.ok());
  ASSERT_EQ(copied->attempts.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const AttemptRow &from = original->attempts[i], &to = copied->attempts[i];
    EXPECT_EQ(to.prompt.runId, *merged);
    EXPECT_EQ(std::tie(to.prompt.round, to.prompt.slot, to.prompt.kind),
              std::tie(from.prompt.round, from.prompt.slot, from.prompt.kind));
    EXPECT_EQ(to.prompt.requestHash, from.prompt.requestHash);
    EXPECT_NE(to.prompt.id, from.prompt.id);
    ASSERT_TRUE(to.completion && to.candidate && to.result);
    EXPECT_EQ(to.completion->meta, from.completion->meta);
    EXPECT_EQ(to.completion->createdAt, from.completion->createdAt);
    EXPECT_EQ(to.candidate->id, ids->at(from.candidate->id));
    EXPECT_EQ(to.candidate->ptx, from.candidate->ptx);
    EXPECT_EQ(to.candidate->createdAt, from.candidate->createdAt);
    EXPECT_EQ(to.result->verdict, from.result->verdict);
    EXPECT_EQ(to.result->speedup, from.result->speedup);
    EXPECT_EQ(to.result->registers, from.result->registers);
  }
  // Attempts load in (round, slot) order: (1,0) (1,1) (2,0).
  EXPECT_EQ(copied->attempts[2].prompt.parentCandidateId, std::optional<int64_t>(ids->at(*firstCandidate)));
  EXPECT_EQ(copied->attempts[1].candidate->duplicateOf, std::optional<int64_t>(ids->at(*repairCandidate)));

  // A second run's attempts of other slots join the same run; a taken slot is refused whole.
  auto secondRun = source->createRun(sampleRun());
  ASSERT_TRUE(secondRun.ok());
  ASSERT_TRUE(source->addPrompt(samplePrompt(*secondRun, 1, 2)).ok());
  auto second = source->load(*secondRun);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(target.copyAttempts(*merged, second->attempts).ok());
  auto again = target.copyAttempts(*merged, original->attempts);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, ErrorKind::InvalidInput);
  EXPECT_NE(again.error().message.find("already has round 1 slot 0 (initial)"), std::string::npos)
      << again.error().message;
  EXPECT_EQ(target.load(*merged)->attempts.size(), 4u);
  EXPECT_FALSE(target.copyAttempts(9999, original->attempts).ok()) << "no such run";
}

TEST_F(StoreTest, LoadOfARunWithoutPromptsHasNoAttempts) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  ASSERT_TRUE(runId.ok());
  auto data = store->load(*runId);
  ASSERT_TRUE(data.ok()) << data.error().message;
  EXPECT_EQ(data->run.id, *runId);
  EXPECT_TRUE(data->attempts.empty());
}

TEST_F(StoreTest, LoadOfAMissingRunIsAnError) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto data = store->load(5);
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.error().kind, ErrorKind::InvalidInput);
  EXPECT_EQ(data.error().message, "no run 5 in " + dbPath());
  // The failed load left no transaction open.
  EXPECT_TRUE(store->createRun(sampleRun()).ok());
}

// --- Concurrency -------------------------------------------------------------

TEST_F(StoreTest, ConcurrentWritesFromEightThreadsAllLand) {
  auto store = openStore();
  ASSERT_TRUE(store);
  auto runId = store->createRun(sampleRun());
  ASSERT_TRUE(runId.ok());
  constexpr int kThreads = 8;
  constexpr int kPromptsPerThread = 25;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int slot = 0; slot < kThreads; ++slot) {
    threads.emplace_back([&, slot] {
      for (int round = 1; round <= kPromptsPerThread; ++round) {
        auto promptId = store->addPrompt(samplePrompt(*runId, round, slot));
        if (!promptId.ok()) {
          ++failures[slot];
          continue;
        }
        CompletionRecord completion;
        completion.promptId = *promptId;
        completion.status = "complete";
        completion.text = "answer " + std::to_string(round) + "/" + std::to_string(slot);
        if (!store->putCompletion(completion).ok())
          ++failures[slot];
      }
    });
  }
  for (std::thread &thread : threads)
    thread.join();
  for (int slot = 0; slot < kThreads; ++slot)
    EXPECT_EQ(failures[slot], 0) << "slot " << slot;

  auto data = store->load(*runId);
  ASSERT_TRUE(data.ok()) << data.error().message;
  ASSERT_EQ(data->attempts.size(), static_cast<size_t>(kThreads * kPromptsPerThread));
  for (const AttemptRow &attempt : data->attempts) {
    ASSERT_TRUE(attempt.completion.has_value());
    EXPECT_EQ(attempt.completion->text,
              "answer " + std::to_string(attempt.prompt.round) + "/" + std::to_string(attempt.prompt.slot));
  }
}

TEST_F(StoreTest, ASecondStoreOnTheSameFileSeesTheFirstsWrites) {
  auto first = openStore();
  auto second = openStore();
  ASSERT_TRUE(first && second);
  auto runId = first->createRun(sampleRun());
  ASSERT_TRUE(runId.ok());
  auto seen = second->run(*runId);
  ASSERT_TRUE(seen.ok()) << seen.error().message;
  EXPECT_EQ(seen->task, "saxpy");

  auto promptId = second->addPrompt(samplePrompt(*runId, 1, 0));
  ASSERT_TRUE(promptId.ok());
  auto found = first->findPrompt(*runId, 1, 0, "initial");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->id, *promptId);
  // The same key through the other connection finds the same row.
  auto again = first->addPrompt(samplePrompt(*runId, 1, 0));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *promptId);
}

TEST_F(StoreTest, TwoStoresWritingAtOnceWaitForEachOther) {
  auto first = openStore();
  auto second = openStore();
  ASSERT_TRUE(first && second);
  auto runId = first->createRun(sampleRun());
  ASSERT_TRUE(runId.ok());
  constexpr int kPerThread = 20;
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int slot = 0; slot < 4; ++slot) {
    Store *store = slot % 2 == 0 ? first.get() : second.get();
    threads.emplace_back([&, store, slot] {
      for (int round = 1; round <= kPerThread; ++round) {
        auto promptId = store->addPrompt(samplePrompt(*runId, round, slot));
        if (!promptId.ok()) {
          ++failures[slot];
          ADD_FAILURE() << promptId.error().message;
        }
      }
    });
  }
  for (std::thread &thread : threads)
    thread.join();
  for (int slot = 0; slot < 4; ++slot)
    EXPECT_EQ(failures[slot], 0);
  auto data = second->load(*runId);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->attempts.size(), static_cast<size_t>(4 * kPerThread));
}

} // namespace
} // namespace ptxforge::store
