// Gate: the gate as a reusable engine, one level above verify::check. It takes
// what a user or a model hands over (bare PTX or a whole answer, a task name,
// options as JSON or flags), owns the executors that stay warm between checks
// (the GPU or the emulator, each in a worker process, and the emulator as the
// GPU's sanitizer), and answers with the JSON of `ptxforge check --format
// json`. `ptxforge check`, `ptxforge serve` and the Python package all check
// through it, so their answers cannot drift apart.
#pragma once

#include "exec/Executor.h"
#include "exec/SharedDevice.h"
#include "prompt/Extract.h"
#include "support/Result.h"
#include "tasks/TaskSpec.h"
#include "verify/Check.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::serve {

// --- Set-up shared by every command and the service -------------------------

/// The suite: `tasksDirs`, then $PTXFORGE_TASKS_DIR, then the built-in suite.
Result<tasks::Suite> loadSuite(const std::vector<std::string> &tasksDirs);

/// The task called `name`; otherwise an error (code "unknown-task") that names
/// the nearest task ("did you mean") or, when none is near, lists them.
Result<const tasks::TaskSpec *> findTask(const tasks::Suite &suite, std::string_view name);

/// "all" (empty: every shape), "small", or a comma-separated list of shape indices.
Result<std::vector<size_t>> selectShapes(const tasks::TaskSpec &task, const std::string &spec);

/// Parses "M=256,N=256,K=64" for `task`: every symbol once, positive.
Result<tasks::Shape> parseShapeOption(const tasks::TaskSpec &task, const std::string &text);

/// "gpu", "emu" or "auto" (the GPU when there is one, else the emulator), in a
/// worker process, on GPU `deviceOrdinal`. Null when the choice is "gpu" and
/// there is none; then `unavailable` says why.
std::unique_ptr<exec::Executor> createExecutor(const std::string &choice, std::string &unavailable,
                                               int deviceOrdinal = 0);

// --- One check of an answer ---------------------------------------------------

/// Bare PTX starts (after blank and comment lines) with a directive; anything
/// else is a model's answer, whose module prompt::extractPtx takes out.
bool looksLikeBarePtx(std::string_view text);

/// The PTX of bare PTX or of a model's answer (then `extracted` says where it was).
struct AnswerPtx {
  std::string ptx;
  std::optional<prompt::ExtractedPtx> extracted;
};
/// An answer without PTX is an InvalidInput error meant for the model.
Result<AnswerPtx> ptxOfAnswer(std::string_view text);

/// What one check is asked to do: the fields of a `POST /v1/check` body, of
/// `check`'s flags and of the Python `check()`. Unset fields take
/// verify::CheckOptions' defaults.
struct CheckRequest {
  std::string task;
  std::string text;                     ///< bare PTX or a model's whole answer
  std::string shapes;                   ///< "all", "small" or "0,2"; empty: all on a GPU, small on the emulator
  std::vector<std::string> extraShapes; ///< "M=256,N=64", each checked too
  std::optional<uint64_t> seed;         ///< unset: a fresh random seed (recorded in the result)
  std::optional<int> trials, drawnShapes, timingRounds;
  std::optional<uint32_t> launchTimeoutMs;
  std::string arch;                     ///< empty: the executor's
  bool benchmark = true;
  bool lint = true;
  bool sanitizer = true;                ///< on a GPU: also run the emulator's sanitizers
  bool profile = false;                 ///< the emulator's profile and estimate (verify::CheckOptions::profile)

  /// Reads the JSON form: {"task", "ptx" or "answer", "shapes", "extra_shapes",
  /// "seed", "trials", "drawn_shapes", "timing_rounds", "timeout_ms", "arch",
  /// "bench", "lint", "sanitizer", "profile"}. Unknown keys and wrong types are errors
  /// (code "bad-request") that name the key, so that a typo is never ignored.
  /// `allowedExtraKeys` are accepted and left to the caller.
  static Result<CheckRequest> fromJson(const nlohmann::json &body,
                                       const std::vector<std::string> &allowedExtraKeys = {});
  /// The same limits the CLI enforces (trials 1..100, ...).
  Result<void> validate() const;
};

/// A check of an answer: the gate's result and, for an answer, where its PTX was.
struct AnswerCheck {
  verify::CheckResult result;
  std::optional<prompt::ExtractedPtx> extracted;
};

/// The JSON of `check --format json` (without "file"), with "extracted" for an answer.
nlohmann::json toJson(const AnswerCheck &check);

/// One checking slot: a primary executor (the GPU, or the emulator where there
/// is none) that stays warm between checks, and on a GPU the emulator as its
/// sanitizer. Not thread-safe: a service keeps one Gate per worker thread.
class Gate {
public:
  struct Options {
    std::string executor = "auto"; ///< "gpu", "emu" or "auto"
    int deviceOrdinal = 0;
    bool sanitizer = true; ///< on a GPU, run the emulator's sanitizers too (unless a request says no)
    /// Set when other Gates check on the same GPU: their executors share it so
    /// that nothing runs on it while one of them times (exec/SharedDevice.h).
    std::shared_ptr<exec::DeviceShare> deviceShare;
  };

  /// Starts the executors. Never fails: with no executor (a "gpu" choice on a
  /// machine without one) every check ends `not-verified` and says why.
  explicit Gate(const Options &options);
  ~Gate();
  Gate(const Gate &) = delete;
  Gate &operator=(const Gate &) = delete;

  /// Checks `request.text` against `task`. An answer without PTX is the
  /// verdict `no-ptx` (stage extract); every failure of the candidate is a
  /// verdict. An Error means the request is malformed (a bad shape, a bad
  /// option) or the gate itself is broken (the reference fails).
  ///
  /// `stop` (the service's: the client has gone) is looked at on every stage
  /// boundary the gate has: before the answer's PTX is taken out and before
  /// verify::check starts. Once verify::check runs, the check runs to its
  /// verdict (verify::check takes no stop token yet). A stop seen ends the
  /// check with the Error code "client-gone".
  Result<AnswerCheck> check(const tasks::TaskSpec &task, const CheckRequest &request, std::stop_token stop = {});

  /// What the primary executor runs on ("NVIDIA H200", "ptxforge PTX
  /// emulator"), or "none: <why>".
  std::string device() const;
  bool emulated() const { return emulated_; }
  /// The primary executor's architecture ("sm_90"); empty with no executor.
  std::string arch() const { return executor_ ? executor_->properties().arch() : std::string(); }
  /// Its SM count on a GPU; 0 on the emulator (which has no SMs to fill) or with no executor.
  int smCount() const { return executor_ && !emulated_ ? executor_->properties().multiprocessorCount : 0; }
  bool hasExecutor() const { return executor_ != nullptr; }

private:
  Options options_;
  std::unique_ptr<exec::Executor> executor_;
  std::string unavailable_; ///< why there is no executor
  bool emulated_ = false;
  std::unique_ptr<exec::Executor> sanitizer_; ///< started on first use
  std::string sanitizerUnavailable_;
  bool sanitizerTried_ = false;
};

// --- Rewards -------------------------------------------------------------------

/// The weights of the staged reward (docs/serve.md). A stage's weight is
/// earned when the candidate gets past it; `speed` scales with the
/// lower end of the speedup's noise band, log2(low) / log2(speedCap),
/// clamped to [0, 1], so that parity with nvcc earns none of it and noise
/// cannot earn it.
struct RewardWeights {
  double extract = 0.05; ///< the answer holds a PTX module
  double lint = 0.05;    ///< no lint errors
  double compile = 0.1;  ///< it compiles for the target
  double correct = 0.6;  ///< the verdict is `correct`
  double speed = 0.2;    ///< scaled by the speedup over nvcc -O3
  double speedCap = 4.0; ///< the speedup that earns all of `speed`
  /// Added for `rejected` (the gate caught tampering: state across launches,
  /// writes into inputs, impossible timings). Negative to punish cheating.
  double rejected = 0.0;

  /// Reads {"extract", "lint", "compile", "correct", "speed", "speed_cap",
  /// "rejected"}; missing keys keep their defaults; unknown keys are errors.
  static Result<RewardWeights> fromJson(const nlohmann::json &weights);
  nlohmann::json toJson() const;
};

/// The reward of one check: {"reward", "verdict", "stages": {extract, lint,
/// compile, correct, speed: earned}, "speedup", "speedup_low", "speedup_high",
/// "weights"}.
nlohmann::json rewardJson(const AnswerCheck &check, const RewardWeights &weights);

} // namespace ptxforge::serve
