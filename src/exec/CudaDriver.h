// CudaDriver: the CUDA driver API opened with dlopen at run time, so that
// ptxforge never links libcuda and runs (without GPU execution) where there is
// no driver. Internal to the exec library. cuda.h is used for types only.
#pragma once

#include "support/Result.h"

#include <cuda.h>

#include <memory>
#include <string>

namespace ptxforge::exec {

/// The entry points ptxforge uses. Each field has the type of the cuda.h
/// declaration; the symbol looked up is the versioned name cuda.h maps to
/// (cuMemAlloc -> cuMemAlloc_v2 ...).
struct CudaDriver {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDriverGetVersion) driverGetVersion = nullptr;
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  decltype(&::cuDeviceGetCount) deviceGetCount = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetName) deviceGetName = nullptr;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&::cuDeviceTotalMem) deviceTotalMem = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primaryCtxRelease = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuCtxSynchronize) ctxSynchronize = nullptr;
  decltype(&::cuMemAlloc) memAlloc = nullptr;
  decltype(&::cuMemFree) memFree = nullptr;
  decltype(&::cuMemcpyHtoD) memcpyHtoD = nullptr;
  decltype(&::cuMemcpyDtoH) memcpyDtoH = nullptr;
  decltype(&::cuMemsetD8) memsetD8 = nullptr;
  decltype(&::cuMemcpyDtoD) memcpyDtoD = nullptr;
  decltype(&::cuModuleGetGlobal) moduleGetGlobal = nullptr;
  decltype(&::cuModuleLoadData) moduleLoadData = nullptr;
  decltype(&::cuModuleUnload) moduleUnload = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuFuncGetAttribute) funcGetAttribute = nullptr;
  decltype(&::cuFuncSetAttribute) funcSetAttribute = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuEventCreate) eventCreate = nullptr;
  decltype(&::cuEventDestroy) eventDestroy = nullptr;
  decltype(&::cuEventRecord) eventRecord = nullptr;
  decltype(&::cuEventSynchronize) eventSynchronize = nullptr;
  decltype(&::cuEventElapsedTime) eventElapsedTime = nullptr;
  /// Optional (null when the driver lacks it): page-locks host memory.
  decltype(&::cuMemHostRegister) memHostRegister = nullptr;
  decltype(&::cuMemHostUnregister) memHostUnregister = nullptr;
  /// Optional (CUDA 12.0+ drivers): encodes a TMA tensor map.
  decltype(&::cuTensorMapEncodeTiled) tensorMapEncodeTiled = nullptr;

  /// Opens libcuda.so.1 (or $PTXFORGE_LIBCUDA) and resolves every entry point.
  /// An Error "no GPU: ..." when the library or a symbol is missing.
  static Result<std::shared_ptr<const CudaDriver>> load();

  /// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)".
  std::string describe(CUresult result) const;
  /// The driver's name for `result` ("CUDA_ERROR_ILLEGAL_ADDRESS").
  std::string errorName(CUresult result) const;

  ~CudaDriver();
  void *libraryHandle = nullptr;
};

} // namespace ptxforge::exec
