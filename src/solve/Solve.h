// The solve loop: a model writes PTX for a task, the gate checks it, and the
// gate's findings go back to the model until a correct kernel faster than
// nvcc's is found or a budget ends the run.
//
// One run is R rounds of N slots. A slot is a line of attempts:
//   round 1       a fresh attempt ("initial"; with the skeleton strategy a
//                 skeleton request comes first) with the slot's tendency and
//                 temperature;
//   later rounds  "repair" of the slot's last candidate when it failed, or
//                 "optimize" of the slot's best correct candidate.
// Model requests of a round run concurrently; verification is serialized on
// the one executor. A candidate whose normalized PTX (or SASS, when nvdisasm
// is present) equals an earlier one's is not verified again: it gets that
// candidate's result. Everything is written to the store as it happens, so
// an interrupted run resumes where it stopped (the requests it replays are
// answered from the store; the gate's results too).
//
// See docs/solve.md.
#pragma once

#include "exec/Executor.h"
#include "llm/Backend.h"
#include "solve/GuidedStream.h"
#include "solve/RequestLimit.h"
#include "prompt/PromptBuilder.h"
#include "store/Store.h"
#include "support/Result.h"
#include "tasks/TaskSpec.h"
#include "verify/Check.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace ptxforge::solve {

/// The tendencies slots cycle through when none are given.
const std::vector<std::string> &defaultTendencies();
/// The temperatures slots cycle through when none are given: 0.2, 0.7, 1.0.
const std::vector<double> &defaultTemperatures();

struct SolveOptions {
  int rounds = 3;
  int candidates = 4; ///< slots per round
  std::vector<prompt::Strategy> strategies = {prompt::Strategy::ZeroShot, prompt::Strategy::Spec};
  std::vector<std::string> tendencies;  ///< slot i gets tendencies[i % size]; empty: defaultTendencies()
  std::vector<double> temperatures;     ///< slot i gets temperatures[i % size]; empty: defaultTemperatures()
  std::optional<double> topP;
  std::optional<int> maxTokens = 8192;  ///< per request
  /// Request seed of (round r, slot s) = seed + (r - 1) * candidates + s, so
  /// that every request of a run differs (and so hashes differently).
  uint64_t seed = 1;
  bool stream = false;
  int concurrency = 4;                  ///< model requests in flight at once
  // Budgets; 0 means none. A budget stops new requests; answers already
  // asked for are still verified.
  int64_t maxTokensTotal = 0;           ///< prompt + completion tokens over the run
  double maxWallSeconds = 0;
  int maxCandidatesTotal = 0;           ///< candidates over the run (rounds * candidates when 0)
  std::string objective;                ///< what optimize aims for; empty: the template's default
  std::string arch = "sm_90";           ///< the target the prompts name and the gate compiles for
  verify::CheckOptions check;           ///< how each candidate is checked (shapes, trials, timing)
  /// Skip nvdisasm: no SASS statistics in results and the reference summary,
  /// and duplicates are found by PTX hash only (--no-sass).
  bool noSass = false;
  /// The slots this run works on, ascending; empty: all `candidates` of them.
  /// An eval shard (`eval --shard I/N`) gives each task's run its share of the
  /// samples; the others are another shard's. Seeds stay those of the whole
  /// run (they depend on `candidates` and the slot), so a slot asks exactly
  /// what it would have asked in the unsharded run.
  std::vector<int> slots;
  /// --guided-stream: each answer's PTX is checked as it streams in, cut at
  /// the first unfixable error and continued from there (GuidedStream.h).
  GuidedStreamOptions guidedStream;
};

/// The solve options a run records (its `parameters`), and back, for resume.
nlohmann::json optionsToJson(const SolveOptions &options);
Result<SolveOptions> optionsFromJson(const nlohmann::json &json);

/// What happened, for live progress.
struct ProgressEvent {
  int round = 0;
  int slot = -1;        ///< -1: a run-level event
  std::string kind;     ///< initial, skeleton, repair, optimize; or "round" / "run"
  std::string what;     ///< one line: "requesting", "lint-error: ...", "round 2 done", ...
  std::optional<std::string> verdict;
  std::optional<double> speedup;
  std::optional<double> bestSpeedup; ///< over the run so far
  /// Nothing timed: the best's speedup as the emulator profile estimates it.
  std::optional<double> bestEstimate;
  bool haveCorrect = false;          ///< some candidate of the run is correct
  std::map<std::string, int> counts; ///< verdicts of the run so far
};

/// One (round, slot) attempt finished, whatever became of it (verified, a
/// model error, pending, skipped by a stop): for progress across runs.
struct AttemptDone {
  int round = 0;
  int slot = 0;
  bool asked = false; ///< a request went to the backend (not answered from the store)
};

/// What solve needs from outside.
struct SolveContext {
  const tasks::TaskSpec &task;
  llm::Backend &backend;
  std::string modelSpec;   ///< as given ("exec:./model.py"), recorded with the run
  exec::Executor &executor;
  store::Store &store;
  const prompt::TemplateSet &templates;
  /// Provenance the caller knows (tool versions, host); merged into the run's.
  nlohmann::json provenance = nlohmann::json::object();
  std::function<void(const ProgressEvent &)> onProgress;
  /// Stops the run: requests in flight are cancelled, the run is "interrupted".
  std::stop_token stop;
  /// Called once a new run exists in the store, before its first request (an
  /// eval links the run to itself here, so that a process killed mid-task
  /// leaves a run that the eval's resume finds). An Error ends the run as failed.
  std::function<Result<void>(int64_t runId)> onRunCreated;
  /// Shared by several runs (an eval's tasks): each request to the backend
  /// holds a permit while it is in flight, so that the bound spans the runs.
  /// None: only SolveOptions::concurrency bounds this run's requests.
  RequestLimit *requests = nullptr;
  /// This run's place among the waiters for `requests` (lower goes first).
  int64_t requestPriority = 0;
  /// Shared by the runs that use one executor: one gate (reference
  /// preparation, compile, check) at a time on it. None: the run's own lock.
  std::mutex *gate = nullptr;
  /// Called (from the slot's thread) when each (round, slot) attempt ends.
  std::function<void(const AttemptDone &)> onAttemptDone = nullptr;
  /// Called with the tokens of each answer the backend gave in this process
  /// (not those read back from the store), as the server reported them.
  std::function<void(int64_t promptTokens, int64_t completionTokens)> onTokens = nullptr;
  /// When set, candidates are checked by it (a running `ptxforge serve`,
  /// `--gate URL`) instead of verify::check on `executor`, which then only
  /// describes the device the checks run on.
  std::function<Result<verify::CheckResult>(const verify::Candidate &, const verify::CheckOptions &)> check = nullptr;
};

struct SolveOutcome {
  int64_t runId = 0;
  /// Done, Pending (batch: requests written, answers awaited), Budget,
  /// Interrupted.
  store::RunStatus status = store::RunStatus::Done;
  std::string stoppedBecause;          ///< one line
  std::optional<int64_t> bestCandidateId;
  std::string bestPtx;                 ///< the best correct candidate's PTX; empty when none
  std::optional<double> bestSpeedup;
  /// When nothing was timed: the emulator profile's estimated speedup of the
  /// best, which is then the best by that estimate (an estimate, not a measurement).
  std::optional<double> bestEstimatedSpeedup;
  nlohmann::json summary;              ///< what the run's summary column holds (Report.h lists the keys)
};

/// What a resume may change: the budgets (and the round count) given on its
/// command line. Unset ones keep the recorded values. The wall-time budget
/// counts from the resume.
struct ResumeOverrides {
  std::optional<int> rounds;
  std::optional<int64_t> maxTokensTotal;
  std::optional<double> maxWallSeconds;
  std::optional<int> maxCandidatesTotal;
};

/// Starts a new run (resumeRunId empty) or resumes one. Either way the run is
/// this process's while it works on it (RunLease.h): a resume of a run that
/// another live process works on fails at once naming that process, and runs
/// whose process died while `running` are first marked `interrupted`. A
/// candidate is recorded before the gate checks it, so a candidate whose
/// check killed the process is recorded as `crashed` on resume, not checked
/// again. A resumed run uses
/// its recorded options, not `options`, except for `overrides` (recorded in
/// the summary's "resumes"). A resume replays the run from the store: a
/// completion or a result already recorded is reused, a request whose answer
/// is missing, pending or failed is asked again. An Error when the run cannot
/// start: the reference does not compile, the store fails, an unknown run id.
/// Failures of single requests or candidates are recorded and the run goes on.
Result<SolveOutcome> solve(SolveContext &context, const SolveOptions &options,
                           std::optional<int64_t> resumeRunId = std::nullopt, const ResumeOverrides &overrides = {});

/// The normalized text of a candidate whose hash names duplicates: comments
/// other than `// @ptxforge` directives removed, whitespace runs collapsed,
/// blank lines dropped.
std::string normalizePtx(std::string_view ptx);

} // namespace ptxforge::solve
