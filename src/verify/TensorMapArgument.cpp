// TensorMapArgument: task tensor maps to exec specs and encoded maps.
#include "verify/TensorMapArgument.h"

namespace ptxforge::verify {

namespace {

exec::TensorMapDataType mapDataType(tasks::ElementType type) {
  using T = tasks::ElementType;
  using D = exec::TensorMapDataType;
  switch (type) {
  case T::F32: return D::F32;
  case T::F64: return D::F64;
  case T::F16: return D::F16;
  case T::BF16: return D::BF16;
  case T::I8:
  case T::U8:
  case T::E4M3: return D::U8; // the copy engine moves bytes; signedness and fp8 only matter to the kernel
  case T::I32: return D::I32;
  case T::U32: return D::U32;
  case T::I64: return D::I64;
  case T::U64: return D::U64;
  }
  return D::U8;
}

// tasks' enums carry CUDA's numbers, as exec's do.
static_assert(static_cast<int>(tasks::MapSwizzle::B128) == static_cast<int>(exec::TensorMapSwizzle::B128));
static_assert(static_cast<int>(tasks::MapL2Promotion::B256) == static_cast<int>(exec::TensorMapL2Promotion::B256));
static_assert(static_cast<int>(tasks::MapOobFill::Nan) == static_cast<int>(exec::TensorMapOobFill::NanRequestZeroFma));

} // namespace

Result<exec::TensorMapSpec> tensorMapSpec(const tasks::TaskSpec &task, const tasks::ParamSpec &param,
                                          const tasks::Shape &shape) {
  Result<tasks::ResolvedTensorMap> resolved = tasks::resolveTensorMap(task, param, shape);
  if (!resolved)
    return resolved.error();
  exec::TensorMapSpec spec;
  spec.dataType = mapDataType(resolved->type);
  spec.rank = resolved->rank;
  spec.globalDim = resolved->dims;
  spec.globalStrides = resolved->strides;
  spec.boxDim = resolved->box;
  spec.elementStrides = resolved->elementStrides;
  spec.swizzle = static_cast<exec::TensorMapSwizzle>(resolved->swizzle);
  spec.l2Promotion = static_cast<exec::TensorMapL2Promotion>(resolved->l2Promotion);
  spec.oobFill = static_cast<exec::TensorMapOobFill>(resolved->oobFill);
  return spec;
}

Result<exec::TensorMapBytes> encodeTensorMapArgument(exec::Executor &executor, const tasks::TaskSpec &task,
                                                     const tasks::ParamSpec &param, const tasks::Shape &shape,
                                                     exec::BufferHandle buffer, uint64_t byteOffset) {
  Result<exec::TensorMapSpec> spec = tensorMapSpec(task, param, shape);
  if (!spec)
    return spec.error();
  Result<exec::TensorMapBytes> map = executor.encodeTensorMap(buffer, byteOffset, *spec);
  if (!map) {
    Error error = map.error();
    error.message = "param '" + param.name + "': " + error.message;
    return error;
  }
  return map;
}

} // namespace ptxforge::verify
