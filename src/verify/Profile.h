// `check --profile`: the candidate and the task's reference run once more in
// the emulator with the profile on (exec::LaunchConfig::profile), on one
// shape — the largest of the task's small shapes — and their counts become a
// ProfileReport: per-line bank conflicts and sectors per request, totals,
// occupancy, and a roofline-style estimate of their run times from bytes
// moved (sectors x 32), shared-memory wavefronts, warp-instructions issued,
// the task's FLOPs and the device's ceilings, spread over the waves of
// resident blocks that occupancy allows. The estimate is labelled one
// everywhere it is shown.
#pragma once

#include "tasks/Reference.h"
#include "verify/Check.h"
#include "verify/ProfileReport.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace ptxforge::verify {

/// The shape a profile runs on: the small shape with the most data (the
/// task's [cost] bytes, else its buffers' elements); shape 0 without small shapes.
size_t profileShapeIndex(const tasks::TaskSpec &task);

/// Nominal H200 figures, or the ceilings measured on `device` when they are
/// cached (`ptxforge device`), for the bandwidth and FP32 rate.
ProfileCeilings profileCeilings(const std::string &device);

/// Runs the candidate (its launch directives) and the reference (the task's
/// launch) on `emulator` with the profile on, on profileShapeIndex(task), and
/// estimates both. `result` supplies the arch, the candidate's registers
/// (the driver's count of the loaded kernel, else its compile) and the device
/// whose ceilings apply.
/// An Error when the executor does not profile or a launch fails.
Result<ProfileReport> profileCandidate(const tasks::TaskSpec &task, const Candidate &candidate,
                                       const tasks::CompiledReference &reference, exec::Executor &emulator,
                                       const CheckResult &result, uint32_t launchTimeoutMs = 10'000);

/// check()'s profile step: result.profile, or a warning diagnostic
/// `profile-skipped` saying why there is none (never fails the check).
void addProfile(const tasks::TaskSpec &task, const Candidate &candidate, const tasks::CompiledReference &reference,
                exec::Executor *emulator, const CheckOptions &options, CheckResult &result);

/// Totals, occupancy and the estimate of one kernel from its profile and
/// launch (registers and static shared memory set by the caller).
void estimateKernel(KernelProfileReport &kernel, const ProfileCeilings &ceilings, std::optional<double> flops,
                    const std::string &arch);

/// The lines most worth a look, worst first: bank conflicts (excess
/// wavefronts), then uncoalesced global accesses (excess sectors), then
/// local-memory traffic; one sentence each ("line 37 `ld.shared.f32 ...`:
/// 32.0 wavefronts per request (ideal 1.0): 31-way bank conflicts").
std::vector<std::string> profileOffenders(const KernelProfileReport &kernel, size_t count);

/// "1,024 global requests at 4.0 sectors/request (ideal 4.0), 128 KiB moved; ..."
std::string describeTotals(const KernelProfileReport &kernel);

/// The estimate in one line: "estimated 1.31x the reference (candidate 2.1 us,
/// memory-bound; reference 2.8 us, memory-bound) — an estimate from ...".
std::string describeEstimate(const ProfileReport &report);

/// The text block `check` prints (and the optimize prompt quotes).
std::string formatProfileText(const ProfileReport &report, size_t topLines = 3);

nlohmann::json toJson(const ProfileReport &report);
/// The inverse of toJson(ProfileReport); InvalidInput names a missing or mistyped field.
Result<ProfileReport> profileReportFromJson(const nlohmann::json &json);

} // namespace ptxforge::verify
