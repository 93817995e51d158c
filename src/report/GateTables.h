// The Markdown tables of `ptxforge baseline` and `ptxforge crosscheck`, built
// from the verify library's results; the commands only print them.
#pragma once

#include "exec/Executor.h"
#include "tasks/TaskSpec.h"
#include "verify/Check.h"

#include <string>

namespace ptxforge::report {

/// crosscheck: the title and the column header.
std::string crossCheckHeader(const exec::DeviceProperties &device, uint64_t seed, int trials);
/// One row per (shape, output) of a task, with the worst trial's errors.
std::string crossCheckRows(const tasks::TaskSpec &task, const verify::CrossCheckResult &result);

/// baseline's vendor columns of one row ("—": the task has no [vendor]).
struct VendorCells {
  std::string timing = "\u2014", gflops = "\u2014", ratio = "\u2014";
};

/// baseline: the title and the column header.
std::string baselineHeader(const exec::DeviceProperties &device, uint64_t seed);
/// One task's row: the reference's timing, throughput and resources, and the vendor's cells.
std::string baselineRow(const tasks::TaskSpec &task, const verify::CheckResult &result,
                        const exec::DeviceProperties &device, const VendorCells &vendor);
/// What the vendor columns mean.
std::string baselineFooter();

} // namespace ptxforge::report
