// TensorMapArgument: the 128 bytes a task's tensor-map parameter passes to a
// kernel, encoded by the executor over the mapped buffer for one shape.
#pragma once

#include "exec/Executor.h"
#include "support/Result.h"
#include "tasks/TaskSpec.h"

namespace ptxforge::verify {

/// The exec spec of `param` (a tensor map of `task`) on `shape`.
Result<exec::TensorMapSpec> tensorMapSpec(const tasks::TaskSpec &task, const tasks::ParamSpec &param,
                                          const tasks::Shape &shape);

/// Encodes `param`'s map over `buffer` (the data starting `byteOffset` bytes
/// in, past a guard zone) with `executor`. Errors name the parameter.
Result<exec::TensorMapBytes> encodeTensorMapArgument(exec::Executor &executor, const tasks::TaskSpec &task,
                                                     const tasks::ParamSpec &param, const tasks::Shape &shape,
                                                     exec::BufferHandle buffer, uint64_t byteOffset);

} // namespace ptxforge::verify
