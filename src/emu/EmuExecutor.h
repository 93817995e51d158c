// The `emu` executor: the Executor interface over the CPU PTX emulator. It
// loads PTX (ModuleFormat::Ptx), keeps device buffers in host memory at
// addresses of its own, runs a launch's CTAs in parallel on the host's cores,
// and reports what its sanitizers find (memcheck, racecheck, initcheck,
// synccheck) as LaunchFindings located by PTX line. It cannot time kernels:
// timeLaunch is an error, and the gate skips the benchmark stage.
#pragma once

#include "emu/Machine.h"
#include "exec/Executor.h"

#include <memory>
#include <optional>

namespace ptxforge::emu {

struct EmuOptions {
  CheckOptions checks;    ///< sanitizers, step budget, host threads
  int smMajor = 9, smMinor = 0; ///< the architecture the emulator reports (sm_90)
};

/// Creates the emulator executor. Never fails for lack of hardware.
std::unique_ptr<exec::Executor> createEmuExecutor(const EmuOptions &options = {});

/// What an emulator executor has run since it was created.
struct EmuCounters {
  uint64_t launches = 0;
  uint64_t warpInstructions = 0;
  uint64_t threadInstructions = 0; ///< warp-instructions times their active lanes
  double launchSeconds = 0;        ///< wall time inside launch()
};
/// The counters of `executor` if it is an emulator executor, else nullopt.
std::optional<EmuCounters> emuCounters(const exec::Executor &executor);

} // namespace ptxforge::emu
