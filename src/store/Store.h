// The run store: one SQLite database (WAL) that records every solve run, the
// prompts it sent, the completions it got, the candidates it took out of them
// and what the gate said of each, with provenance. Runs resume from it after an
// interruption; `ptxforge runs`, `show` and `report` read it.
//
// Schema (version 2; `PRAGMA user_version`; version 1 lacked evals and eval_runs):
//   runs        (id, created_at, updated_at, task, model, strategies, status,
//                parameters JSON, provenance JSON, summary JSON)
//   prompts     (id, run_id, round, slot, kind, strategies, tendency,
//                temperature, parent_candidate_id, request_hash, request JSON)
//                UNIQUE(run_id, round, slot, kind)
//   completions (id, prompt_id UNIQUE, status, text, error, meta JSON, created_at)
//   candidates  (id, run_id, prompt_id UNIQUE, round, slot, ptx, ptx_hash,
//                sass_hash, duplicate_of, extract_error, created_at)
//   results     (candidate_id PRIMARY KEY, verdict, stage, summary, speedup,
//                registers, result JSON, created_at)
//   evals       (id, created_at, updated_at, model, suite, suite_version, status,
//                parameters JSON, provenance JSON, metrics JSON)
//   eval_runs   (eval_id, position, task, run_id) PRIMARY KEY(eval_id, task)
//   stream_segments (prompt_id, seq, mode, request_hash, text, cut_at,
//                diagnostic JSON, meta JSON, created_at) PRIMARY KEY(prompt_id, seq):
//                the requests of an answer written with --guided-stream, and
//                where each was cut. Added without a version change: a store
//                without the table reads as having no segments (opened for
//                reading it stays as it is; opened for writing it gains the
//                table), and builds that do not know it ignore it.
//
// Every write is its own transaction (or one transaction for a batch), so an
// interrupted run loses at most the write in flight. Timestamps are UTC ISO 8601
// ("2026-11-29T20:41:07Z"). Thread-safe: one connection guarded by a mutex, so
// the solve loop's concurrent slots can write through one Store.
//
// Untrusted content (model text, PTX) is stored verbatim through bound
// parameters; nothing is ever spliced into SQL.
#pragma once

#include "support/Result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::store {

/// Where a run (or an eval) stands; stored as its name in the status column.
/// Records keep the stored text (the solve loop still writes names) and parse
/// it through the typed accessors below, once, where a decision depends on it.
enum class RunStatus {
  Running,     ///< "running"
  Done,        ///< "done"
  Pending,     ///< "pending": batch requests written, waiting for results
  Interrupted, ///< "interrupted"
  Budget,      ///< "budget": a budget ended it
  Failed,      ///< "failed"
};
/// The stored name; the one name table.
const char *runStatusName(RunStatus status);
/// The inverse of runStatusName; nullopt for any other text.
std::optional<RunStatus> parseRunStatus(std::string_view name);

/// Where an eval stands (docs/eval.md, "Run status"); stored as its name in
/// evals.status. Evals recorded before these statuses existed say "done"
/// (parseEvalStatus: none); eval::evalDocument reads those as finished and
/// works out complete, incomplete or infra-error from their runs.
enum class EvalStatus {
  Running,     ///< "running": being worked on (or its process died)
  Complete,    ///< "complete": every sample of every task has its completions
  Incomplete,  ///< "incomplete": some samples had no completion (infrastructure); resume asks them again
  Interrupted, ///< "interrupted": stopped (Ctrl-C, a stop token) before every task ran
  InfraError,  ///< "infra-error": no sample could be scored (e.g. a dead server for every request)
  Pending,     ///< "pending": batch requests written, waiting for their results
};
const char *evalStatusName(EvalStatus status);
std::optional<EvalStatus> parseEvalStatus(std::string_view name);

/// What came back for a prompt; stored as its name in completions.status.
enum class CompletionStatus {
  Complete, ///< "complete": the model's answer is in `text`
  Pending,  ///< "pending": a batch request, not answered yet
  Error,    ///< "error": the backend failed, `error` says why
};
const char *completionStatusName(CompletionStatus status);
std::optional<CompletionStatus> parseCompletionStatus(std::string_view name);

/// One solve run.
struct RunRecord {
  int64_t id = 0;
  std::string createdAt, updatedAt;
  std::string task;
  std::string model;       ///< the backend spec as given: "openai:gpt-4o", "exec:./model.py"
  std::string strategies;  ///< "zero-shot,spec"
  std::string status = runStatusName(RunStatus::Running); ///< runStatusName
  /// The status parsed; none for text this build does not know.
  std::optional<RunStatus> runStatus() const { return parseRunStatus(status); }
  nlohmann::json parameters = nlohmann::json::object(); ///< rounds, candidates, temperatures, tendencies, budgets, seed
  nlohmann::json provenance = nlohmann::json::object(); ///< tool versions, device, executor, arch, ptxforge version
  nlohmann::json summary = nlohmann::json::object();    ///< best candidate, per-round figures, reference resources
};

/// Why a prompt was sent.
///   "initial"  round 1 (or a slot whose earlier requests all failed)
///   "skeleton" the first half of the skeleton strategy
///   "repair"   the slot's last candidate failed
///   "optimize" the slot's best candidate is correct
struct PromptRecord {
  int64_t id = 0;
  int64_t runId = 0;
  int round = 0; ///< 1-based
  int slot = 0;  ///< 0-based candidate index within the round
  std::string kind;
  std::string strategies;
  std::string tendency;
  std::optional<double> temperature;
  std::optional<int64_t> parentCandidateId; ///< the attempt repair/optimize worked on
  std::string requestHash;
  nlohmann::json request; ///< llm::canonicalRequestJson of the request sent
};

struct CompletionRecord {
  int64_t id = 0;
  int64_t promptId = 0;
  std::string status; ///< completionStatusName
  std::optional<CompletionStatus> completionStatus() const { return parseCompletionStatus(status); }
  std::string text;    ///< the model's answer ("" unless complete)
  std::string error;   ///< the backend's message when status is "error"
  nlohmann::json meta = nlohmann::json::object(); ///< usage, latency_ms, finish_reason, model, backend, attempts
  std::string createdAt;
};

struct CandidateRecord {
  int64_t id = 0;
  int64_t runId = 0;
  int64_t promptId = 0;
  int round = 0;
  int slot = 0;
  std::string ptx;          ///< the extracted module; "" when extraction failed
  std::string ptxHash;      ///< hash of the normalized PTX ("" when extraction failed)
  std::string sassHash;     ///< hash of the SASS without addresses; "" without nvdisasm or cubin
  std::optional<int64_t> duplicateOf; ///< an earlier candidate of this run with the same ptx or SASS hash
  std::string extractError; ///< why no PTX could be taken out of the completion
  std::string createdAt;
};

struct ResultRecord {
  int64_t candidateId = 0;
  // Text, as verify::verdictName and verify::stageName write it: the store sits
  // below verify (it depends on SQLite only), so report and eval parse these
  // once, with verify::parseVerdict / parseStage (report::decodeResult).
  std::string verdict;      ///< "correct", "lint-error", "no-ptx", "not-verified", ...
  std::string stage;        ///< "extract", "lint", "compile", "execute", "benchmark", "done"
  std::string summary;
  std::optional<double> speedup; ///< median speedup over nvcc on the timed shape; none when not timed
  std::optional<int> registers;
  nlohmann::json result = nlohmann::json::object(); ///< verify::toJson(CheckResult)
  std::string createdAt;
};

/// One request of an answer written with streaming checks (--guided-stream,
/// docs/guided.md): the first (seq 0) and each continuation after a cut.
struct StreamSegmentRecord {
  int64_t promptId = 0;
  int seq = 0;             ///< 0: the first request; 1, 2, ...: continuations
  std::string mode;        ///< "stream" (seq 0), "prefill" or "completions"
  std::string requestHash; ///< llm::requestHash of the request this segment sent
  std::string text;        ///< the segment's text as it arrived (a cut one ends past the cut)
  /// Bytes of the answer (its segments joined) kept when this segment was
  /// cut: the answer continues from there. None: not cut.
  std::optional<int64_t> cutAt;
  nlohmann::json diagnostic = nullptr;              ///< the error that cut it ({code, line, column, message, hint})
  nlohmann::json meta = nlohmann::json::object();  ///< usage, finish_reason, latency_ms, error
  std::string createdAt;
};

/// One attempt of a run: a prompt and what followed from it, as far as it got.
struct AttemptRow {
  PromptRecord prompt;
  std::optional<CompletionRecord> completion;
  std::optional<CandidateRecord> candidate;
  std::optional<ResultRecord> result;
  std::vector<StreamSegmentRecord> segments; ///< --guided-stream requests, by seq; empty otherwise
};

/// One `ptxforge eval`: a solve run per task of a suite (schema version 2).
struct EvalRecord {
  int64_t id = 0;
  std::string createdAt, updatedAt;
  std::string model;        ///< the backend spec as given
  std::string suite;        ///< "core", "L1", "vector_add,relu", ...
  std::string suiteVersion; ///< "core@1a2b3c4d5e6f": the suite's name and a hash of its task files
  std::string status = evalStatusName(EvalStatus::Running); ///< evalStatusName (or "done": recorded before them)
  std::optional<EvalStatus> evalStatus() const { return parseEvalStatus(status); }
  nlohmann::json parameters = nlohmann::json::object();
  nlohmann::json provenance = nlohmann::json::object();
  nlohmann::json metrics = nlohmann::json::object(); ///< eval::toJson(EvalMetrics) once scored
};

/// A task's run within an eval.
struct EvalRun {
  int position = 0; ///< the task's place in the suite
  std::string task;
  int64_t runId = 0;
};

/// A whole run, for `show` and `report`: attempts ordered by (round, slot, prompt id).
struct RunData {
  RunRecord run;
  std::vector<AttemptRow> attempts;
};

class Store {
public:
  /// Opens (creating when absent) the database at `path`, sets WAL mode, a busy
  /// timeout of 10 s and foreign keys, and creates or checks the schema. An
  /// Io error names the path when it cannot be opened, is not a SQLite
  /// database, or has a newer schema version than this build knows.
  static Result<std::unique_ptr<Store>> open(const std::string &path);
  /// Opens an existing database for reading only, for commands that only
  /// read (runs, show, report, eval show/compare/leaderboard): nothing is
  /// created or written. InvalidInput "no run store at PATH" when the file
  /// does not exist; an Io error as open()'s otherwise.
  static Result<std::unique_ptr<Store>> openReadOnly(const std::string &path);
  ~Store();
  Store(const Store &) = delete;
  Store &operator=(const Store &) = delete;

  /// Inserts a run (id, timestamps filled in) and returns its id.
  Result<int64_t> createRun(const RunRecord &run);
  /// Sets status, summary and updated_at.
  Result<void> updateRun(int64_t runId, const std::string &status, const nlohmann::json &summary);
  /// Sets status, summary and updated_at.
  Result<void> updateRun(int64_t runId, RunStatus status, const nlohmann::json &summary) {
    return updateRun(runId, std::string(runStatusName(status)), summary);
  }
  /// NotFound-style Error (ErrorKind::InvalidInput) "no run N in PATH" when absent.
  Result<RunRecord> run(int64_t runId);
  /// Newest first; `limit` 0 means all.
  Result<std::vector<RunRecord>> runs(size_t limit = 0);

  /// Inserts a prompt, or returns the id of the existing one with the same
  /// (run, round, slot, kind) — resuming re-adds the prompts it replays.
  Result<int64_t> addPrompt(const PromptRecord &prompt);
  /// The prompt recorded for (run, round, slot, kind), if any.
  Result<std::optional<PromptRecord>> findPrompt(int64_t runId, int round, int slot, const std::string &kind);

  /// Inserts or replaces the completion of a prompt (a pending or failed one is
  /// replaced when the answer arrives on a later run).
  Result<int64_t> putCompletion(const CompletionRecord &completion);
  Result<std::optional<CompletionRecord>> findCompletion(int64_t promptId);

  /// Inserts or replaces segment (prompt, seq) of a streamed answer; seq 0
  /// starts the answer over and drops the prompt's other segments.
  Result<void> putStreamSegment(const StreamSegmentRecord &segment);
  /// The segments of a prompt's answer, by seq (none in a store without the table).
  Result<std::vector<StreamSegmentRecord>> streamSegments(int64_t promptId);

  /// Inserts the candidate of a prompt, or returns the existing one's id.
  Result<int64_t> addCandidate(const CandidateRecord &candidate);
  Result<std::optional<CandidateRecord>> findCandidate(int64_t promptId);
  Result<std::optional<CandidateRecord>> candidate(int64_t candidateId);
  /// The earliest candidate of the run whose ptx_hash (or, when non-empty,
  /// sass_hash) equals the given one and that has a result; none otherwise.
  Result<std::optional<CandidateRecord>> findDuplicate(int64_t runId, const std::string &ptxHash,
                                                       const std::string &sassHash);

  /// Inserts or replaces the result of a candidate.
  Result<void> putResult(const ResultRecord &result);
  Result<std::optional<ResultRecord>> findResult(int64_t candidateId);

  /// The run and all its attempts.
  Result<RunData> load(int64_t runId);

  /// Copies attempts that another run recorded (in this store or another;
  /// `load` gives them) into run `runId`, in one transaction: prompts,
  /// completions, candidates and results keep their content and timestamps,
  /// get new ids, and their parent and duplicate links follow the new ids (a
  /// link to a candidate that is not among `attempts` is dropped). Several
  /// runs' attempts can go into one run (eval merge), one call each, as long
  /// as no two have the same (round, slot, kind): InvalidInput names it, and
  /// nothing of that call is written. Returns the candidate ids, old to new.
  Result<std::map<int64_t, int64_t>> copyAttempts(int64_t runId, const std::vector<AttemptRow> &attempts);

  // Evals.
  Result<int64_t> createEval(const EvalRecord &record);
  /// Sets status, metrics and updated_at; InvalidInput "no eval N in PATH" when absent.
  Result<void> updateEval(int64_t evalId, EvalStatus status, const nlohmann::json &metrics);
  Result<EvalRecord> evalRecord(int64_t evalId);
  /// Newest first; `limit` 0 means all.
  Result<std::vector<EvalRecord>> evals(size_t limit = 0);
  /// Records (or replaces) the run of `task` in an eval.
  Result<void> linkEvalRun(int64_t evalId, int position, const std::string &task, int64_t runId);
  /// The eval's runs by position.
  Result<std::vector<EvalRun>> evalRuns(int64_t evalId);

  const std::string &path() const { return path_; }

private:
  struct Impl;
  Store(std::string path, std::unique_ptr<Impl> impl);
  std::string path_;
  std::unique_ptr<Impl> impl_;
};

/// UTC now as ISO 8601 with seconds ("2026-11-29T20:41:07Z").
std::string utcNow();

} // namespace ptxforge::store

