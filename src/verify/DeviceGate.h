// DeviceGate: the gate's own kernels for the work that used to pass every
// byte through the host: generating a task's inputs and comparing outputs
// with the reference's. On a GPU a check then moves counts and a few
// elements to the host, not buffers.
//
// Both kernels reproduce the host's definitions bit for bit, so that the
// emulator (which keeps the host path) and the GPU judge the same bytes the
// same way:
// - fill: tasks::generateInput for the counter-based distributions (uniform,
//   int, const, iota, index-mod); every floating operation is an explicitly
//   rounded intrinsic, so nothing is contracted into an FMA. `normal` (libm's
//   log and cos) stays on the host.
// - compare: tasks::compareBuffers' per-element rule, reduced per block into
//   counts, the largest errors (the first index that reaches them) and the
//   first mismatch; the host folds the blocks in order. The same pass sums
//   the keyed digest (verify/Digest.h) of the reference's output, so that a
//   candidate that wrote into the gate's copy of it is caught.
// The kernels are CUDA compiled once through NVRTC (tasks/Reference's disk
// cache), loaded as a cubin on the GPU backends and as PTX on the emulator
// (where the tests run them against the host's results).
#pragma once

#include "exec/Executor.h"
#include "support/Result.h"
#include "tasks/Compare.h"
#include "tasks/TaskSpec.h"

#include <cstdint>
#include <memory>
#include <string>

namespace ptxforge::verify {

/// The CUDA source of the gate's kernels.
const std::string &deviceGateSource();

/// What the compare kernel found for one buffer.
struct DeviceComparison {
  /// Counts, max errors and their index, the first mismatch's index; the
  /// first mismatch's values and texts are left empty (the caller fetches
  /// them when it needs them).
  tasks::CompareResult compare;
  uint64_t wantDigest = 0; ///< the keyed digest of the `want` bytes
};

class DeviceGate {
public:
  /// Compiles (once per process and architecture, cached on disk) and loads the kernels.
  static Result<std::unique_ptr<DeviceGate>> load(exec::Executor &executor, const std::string &arch);
  ~DeviceGate();
  DeviceGate(const DeviceGate &) = delete;
  DeviceGate &operator=(const DeviceGate &) = delete;

  /// True when `param`'s distribution can be made on the device.
  static bool canGenerate(const tasks::ParamSpec &param);

  /// Writes the `count` elements tasks::generateInput(param, count, seed,
  /// trial) gives into `buffer` at `offset`.
  Result<void> generate(exec::BufferHandle buffer, uint64_t offset, const tasks::ParamSpec &param, int64_t count,
                        uint64_t seed, int trial);

  /// Compares `count` elements of `type` at got+gotOffset with want+wantOffset.
  Result<DeviceComparison> compare(tasks::ElementType type, exec::BufferHandle got, uint64_t gotOffset,
                                   exec::BufferHandle want, uint64_t wantOffset, uint64_t count,
                                   const tasks::Tolerance &tolerance, uint64_t digestKey);

private:
  explicit DeviceGate(exec::Executor &executor) : executor_(executor) {}
  exec::Executor &executor_;
  exec::ModuleHandle module_{};
  exec::KernelHandle fill_{}, compare_{};
  exec::DeviceBuffer partials_;
};

} // namespace ptxforge::verify
