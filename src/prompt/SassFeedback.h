// SassFeedback: the optimize prompt's SASS figures — the previous kernel's
// hot loop (the innermost loop of its SASS, where the time goes) against the
// hot loop of nvcc's build of the task's reference.
#pragma once

#include "toolchain/SassLoops.h"

#include <string>

namespace ptxforge::prompt {

/// A few lines: loops and hot-loop mix of both kernels and the opcode counts
/// that differ. `kernel` names the entry in both. Empty when either side has
/// no SASS (nvdisasm missing, a compile error) or no loops to compare.
std::string hotLoopComparison(const toolchain::SassStats &candidate, const toolchain::SassStats &reference,
                              const std::string &kernel);

/// Compiles both PTX modules for `arch` (the gate's backend) and disassembles
/// them (nvdisasm's results are cached by cubin), then hotLoopComparison.
/// Empty when anything on the way is unavailable: the prompt then leaves the
/// section out.
std::string hotLoopComparison(const std::string &candidatePtx, const std::string &referencePtx,
                              const std::string &arch, const std::string &kernel);

} // namespace ptxforge::prompt
