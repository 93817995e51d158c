// Task audit: is a task's specification able to tell right kernels from wrong
// ones? Runs the trusted reference on the task's small shapes and flags
// outputs a lazy or wrong kernel could match by accident (near zero, near
// constant, the same for any inputs, blind to an input or a parameter), then
// runs the task's hand-made mutants (tasks/<level>/<name>/mutants/*.ptx)
// through the gate, each of which must be judged not correct.
#pragma once

#include "exec/Executor.h"
#include "support/Result.h"
#include "tasks/TaskSpec.h"
#include "verify/Check.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ptxforge::verify {

/// What an audit finding says of the task.
enum class AuditFindingKind {
  NearZero,          ///< most elements of an output lie within atol of zero: writing zeros passes
  NearConstant,      ///< an output's spread is within its tolerance: writing one value passes
  SeedInsensitive,   ///< an output is the same (within tolerance) for two input seeds
  InputInsensitive,  ///< re-drawing one input leaves every output unchanged
  ScalarInsensitive, ///< a floating scalar changed by 10% leaves every output unchanged
  MutantPasses,      ///< a mutant is judged correct: the tolerance or the inputs do not discriminate
  MutantUnjudged,    ///< a mutant did not reach the comparison (no compile, not runnable): it proves nothing
};

/// "near-zero", "near-constant", "seed-insensitive", "input-insensitive",
/// "scalar-insensitive", "mutant-passes", "mutant-unjudged".
const char *auditFindingKindName(AuditFindingKind kind);

/// One thing wrong with a task. A degeneracy that holds on every audited
/// (shape, trial) is a finding; one that holds on some of them only (an edge
/// shape such as n = 1 or one column) is a note, which does not fail the audit.
struct AuditFinding {
  AuditFindingKind kind = AuditFindingKind::NearZero;
  bool note = false;
  std::string task;
  std::string subject; ///< the output, input, scalar or mutant file it is about
  std::string shape;   ///< "n=33" (all the shapes it held on); empty for mutants
  std::string detail;  ///< the numbers: fractions, spreads, errors, the verdict
};

/// One mutant run through the gate.
struct MutantReport {
  std::string file;    ///< file name inside mutants/
  std::string what;    ///< its `// mutant: ...` line
  Verdict verdict = Verdict::NotVerified;
  std::string summary; ///< the gate's summary
  bool caught = false; ///< reached the comparison (or a sanitizer) and was judged not correct
};

struct AuditOptions {
  std::string arch;                 ///< empty: the executor's architecture
  std::vector<size_t> shapeIndices; ///< empty: the task's small shapes
  uint64_t seed = 1;                ///< the first input seed; the second is derived from it
  bool mutants = true;              ///< run the task's mutants/ folder through the gate
  uint32_t launchTimeoutMs = CheckOptions{}.launchTimeoutMs;
};

struct AuditReport {
  std::string task;
  std::string device;
  std::vector<std::string> shapes; ///< the audited shapes, "n=33"
  int trials = 1;                  ///< per shape: one per entry of the longest trial_scales
  std::vector<AuditFinding> findings; ///< notes included
  std::vector<MutantReport> mutants;

  /// No finding other than notes.
  bool passed() const;
  size_t findingCount() const; ///< notes excluded
  size_t noteCount() const;
};

/// Audits `task` on `executor`. The reference runs on the audited shapes for
/// each trial (trial_scales) with seed A, seed B, each input re-drawn with
/// seed B alone, and each floating scalar scaled by 1.1; then every
/// mutants/*.ptx goes through check() with a fixed seed and no benchmark.
/// Errors: the reference does not compile or fails, an executor failure.
Result<AuditReport> auditTask(const tasks::TaskSpec &task, exec::Executor &executor, const AuditOptions &options);

nlohmann::json toJson(const AuditReport &report);

/// The report as text: one line per finding, note and mutant.
std::string formatText(const AuditReport &report);

} // namespace ptxforge::verify
