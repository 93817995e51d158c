// Prompt strategies: turns a task (and, for feedback rounds, a previous
// attempt with its check result) into a chat request, through the template
// files of Template.h. See docs/prompts.md.
#pragma once

#include "llm/Request.h"
#include "prompt/Template.h"
#include "support/Result.h"
#include "tasks/TaskSpec.h"
#include "verify/Check.h"

#include <optional>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::prompt {

/// What a prompt contains. Combinable; zero-shot (the task itself) is always
/// part of the prompt, the others add sections in this enum's order.
///
/// Zero-shot carries the task's contract (its description, signature, sizes,
/// tolerance and default launch), never how the reference computes it. Hints
/// adds the task's `hints` (the reference's recipe); few-shot adds them too,
/// beside the reference's source and PTX. Spec and skeleton add no hints
/// (docs/prompts.md, "What each prompt carries").
///
/// Skeleton is two requests: first the model writes only the kernel's
/// skeleton (entry, parameters, register and shared declarations, the
/// control-flow labels with `bra`s, no arithmetic), which is linted; then it
/// fills in the body of its own skeleton, shown with the lint's findings. It
/// applies to a first attempt, not to repair or optimize.
enum class Strategy { ZeroShot, Hints, Spec, FewShot, Skeleton, Repair, Optimize };

/// "zero-shot", "hints", "spec", "few-shot", "skeleton", "repair", "optimize".
const char *strategyName(Strategy strategy);
std::optional<Strategy> parseStrategy(std::string_view name);
/// "zero-shot,spec" → {ZeroShot, Spec}; InvalidInput names an unknown word and lists the valid ones.
Result<std::vector<Strategy>> parseStrategies(std::string_view commaSeparated);

/// A previous candidate and what the gate said of it.
struct Attempt {
  std::string ptx;
  verify::CheckResult result;
};

/// A skeleton the model wrote (Strategy::Skeleton's first request) and what
/// skeletonFeedback() found in it.
struct SkeletonDraft {
  std::string ptx;
  std::string feedback;
};

/// Everything a prompt can draw on.
struct PromptInput {
  PromptInput(const tasks::TaskSpec &task, std::string arch = "sm_90", std::string referencePtx = {})
      : task(task), arch(std::move(arch)), referencePtx(std::move(referencePtx)) {}

  const tasks::TaskSpec &task;
  std::string arch;
  /// nvcc's PTX of the task's reference (tasks::compileReference). Needed by
  /// few-shot; spec derives its instruction list from it (a base list without it).
  std::string referencePtx;
  /// The attempt repair or optimize works on.
  std::optional<Attempt> previous;
  /// What optimize aims for ("fewer registers", "more bandwidth", ...); empty: a default.
  std::string objective;
  /// A stated tendency for this candidate ("low register pressure", ...); empty: none.
  std::string tendency;
  /// Strategy::Skeleton: absent, the request asks for the skeleton; present,
  /// it asks for the whole kernel built on this skeleton.
  std::optional<SkeletonDraft> skeleton;
  /// PTX ISA version to ask for ("8.0"); empty: the reference's `.version`, else the arch's minimum.
  std::string ptxVersion;
  /// optimize: the previous kernel's SASS hot loop against nvcc's
  /// (prompt/SassFeedback.h, hotLoopComparison); empty: not shown.
  std::string sassHotLoop;
};

/// What a prompt built from `strategies` tells the model about the task, in
/// section order (docs/prompts.md, "What each prompt carries"):
///   "description"             always: the task's description and its contract
///                             (signature, parameters, shapes, tolerance, default launch)
///   "hints"                   hints or few-shot, when the task has hints
///   "ptx-rules"               spec: the PTX rules models break most
///   "reference-instructions"  spec with the reference's PTX: the instructions nvcc used
///   "base-instructions"       spec without it: a list of commonly needed instructions
///   "reference-source", "reference-ptx"   few-shot
///   "own-skeleton"            skeleton: the model's own skeleton and its lint findings
///   "previous-attempt", "gate-feedback"   repair
///   "previous-attempt", "timings"         optimize
/// Solve and eval record the first attempt's parts (their `prompt_parts` parameter).
std::vector<std::string> promptParts(const std::vector<Strategy> &strategies, bool taskHasHints = true,
                                     bool hasReferencePtx = true);
/// The parts of the prompt buildPrompt(input, strategies, ...) makes.
std::vector<std::string> promptParts(const PromptInput &input, const std::vector<Strategy> &strategies);

/// The task's kernel as a PTX `.entry` header: one `.param` per task
/// parameter in order (pointers `.u64`), each with a comment naming it.
std::string ptxSignature(const tasks::TaskSpec &task);

/// One instruction of the spec cheat sheet.
struct CheatSheetEntry {
  std::string name;               ///< table name: "ld", "fma", "cp.async"
  std::string summary;            ///< what it does and its operand order
  std::vector<std::string> forms; ///< spellings seen in the reference: "ld.global.nc.f32"
  std::vector<std::string> types; ///< the type modifiers the instruction table accepts
  std::string gate;               ///< "sm_80, PTX 7.0" when gated; empty otherwise
};

/// The instructions of `referencePtx` (or a base list when it is empty),
/// described from the ptx instruction table, in first-use order.
std::vector<CheatSheetEntry> cheatSheet(std::string_view referencePtx);
std::string formatCheatSheet(const std::vector<CheatSheetEntry> &entries);

/// The feedback of a check, as the repair prompt shows it: the summary, every
/// diagnostic with its code, line, source line and hint, the compiler's
/// errors, the first mismatching element, the executor's error.
std::string formatFeedback(const verify::CheckResult &result, std::string_view ptx);
/// Resources and timings of a correct check, as the optimize prompt shows them.
std::string formatResources(const verify::CheckResult &result);
std::string formatTimings(const verify::CheckResult &result);
/// Where a correct kernel stands, as the optimize prompt shows it: its
/// position against the device's ceilings, occupancy and its limiter, the
/// emulator's profile (bank conflicts and coalescing, the worst lines) beside
/// the reference's, and the estimated ratio; when nothing was timed it says
/// the figures are the emulator's estimate and what that rests on.
std::string formatPosition(const verify::CheckResult &result);
/// The optimize prompt's "current speedup": measured, else the profile's
/// estimate (labelled one), else "unknown".
std::string formatSpeedup(const verify::CheckResult &result);

/// What the lint and the gate's static checks say of a skeleton, as the fill
/// request shows it: "no problems found" or the diagnostics with lines. Missing
/// instructions are expected in a skeleton and not reported.
std::string skeletonFeedback(const tasks::TaskSpec &task, std::string_view skeletonPtx);

/// Builds the chat request: a system message (template "system") and one user
/// message made of zero-shot, then each requested strategy's section, then
/// "output" (for a skeleton request: "skeleton" replaces "output"). InvalidInput
/// when a strategy lacks its input (few-shot without referencePtx,
/// repair/optimize without `previous`, optimize on an attempt that is not
/// correct, repair together with optimize, skeleton together with either) or a
/// template names an unknown placeholder.
Result<llm::Request> buildPrompt(const PromptInput &input, const std::vector<Strategy> &strategies,
                                 const TemplateSet &templates);

} // namespace ptxforge::prompt
