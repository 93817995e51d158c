// GpuExecutor: the Executor on the CUDA driver API, in this process. A faulting
// kernel kills this process's context for good, so untrusted candidates go
// through IsolatedExecutor, which runs a GpuExecutor inside a worker process.
#pragma once

#include "exec/Executor.h"

#include <memory>

namespace ptxforge::exec {

/// Opens the driver (dlopen), initialises device `ordinal` and retains its
/// primary context. Without a driver or a device: an Error of kind NoDevice
/// whose message starts "no GPU: " and carries the driver's reason.
Result<std::unique_ptr<Executor>> createGpuExecutor(int ordinal = 0);

} // namespace ptxforge::exec
