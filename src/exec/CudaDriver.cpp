// CudaDriver: dlopen of libcuda.so.1 and symbol resolution.
#include "exec/CudaDriver.h"

#include "exec/Executor.h"

#include <dlfcn.h>

#include <cstdlib>

namespace ptxforge::exec {

CudaDriver::~CudaDriver() {
  if (libraryHandle)
    dlclose(libraryHandle);
}

Result<std::shared_ptr<const CudaDriver>> CudaDriver::load() {
  const char *override = std::getenv("PTXFORGE_LIBCUDA");
  const std::string libraryName = override && *override ? override : "libcuda.so.1";
  auto driver = std::make_shared<CudaDriver>();
  driver->libraryHandle = dlopen(libraryName.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!driver->libraryHandle) {
    const char *reason = dlerror();
    return makeExecError(ExecErrorKind::NoDevice,
                         "cannot load the CUDA driver (" + libraryName + "): " + (reason ? reason : "dlopen failed"));
  }
  std::string missing;
  auto resolve = [&](auto &field, const char *symbol) {
    void *address = dlsym(driver->libraryHandle, symbol);
    if (!address)
      missing += missing.empty() ? symbol : std::string(", ") + symbol;
    field = reinterpret_cast<std::remove_reference_t<decltype(field)>>(address);
  };
  // The versioned names are the ones cuda.h's #defines select for CUDA >= 3.2/4.0.
  resolve(driver->init, "cuInit");
  resolve(driver->driverGetVersion, "cuDriverGetVersion");
  resolve(driver->getErrorName, "cuGetErrorName");
  resolve(driver->getErrorString, "cuGetErrorString");
  resolve(driver->deviceGetCount, "cuDeviceGetCount");
  resolve(driver->deviceGet, "cuDeviceGet");
  resolve(driver->deviceGetName, "cuDeviceGetName");
  resolve(driver->deviceGetAttribute, "cuDeviceGetAttribute");
  resolve(driver->deviceTotalMem, "cuDeviceTotalMem_v2");
  resolve(driver->primaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(driver->primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  resolve(driver->ctxSetCurrent, "cuCtxSetCurrent");
  resolve(driver->ctxSynchronize, "cuCtxSynchronize");
  resolve(driver->memAlloc, "cuMemAlloc_v2");
  resolve(driver->memFree, "cuMemFree_v2");
  resolve(driver->memcpyHtoD, "cuMemcpyHtoD_v2");
  resolve(driver->memcpyDtoH, "cuMemcpyDtoH_v2");
  resolve(driver->memsetD8, "cuMemsetD8_v2");
  resolve(driver->memcpyDtoD, "cuMemcpyDtoD_v2");
  resolve(driver->moduleGetGlobal, "cuModuleGetGlobal_v2");
  resolve(driver->moduleLoadData, "cuModuleLoadData");
  resolve(driver->moduleUnload, "cuModuleUnload");
  resolve(driver->moduleGetFunction, "cuModuleGetFunction");
  resolve(driver->funcGetAttribute, "cuFuncGetAttribute");
  resolve(driver->funcSetAttribute, "cuFuncSetAttribute");
  resolve(driver->launchKernel, "cuLaunchKernel");
  resolve(driver->eventCreate, "cuEventCreate");
  resolve(driver->eventDestroy, "cuEventDestroy_v2");
  resolve(driver->eventRecord, "cuEventRecord");
  resolve(driver->eventSynchronize, "cuEventSynchronize");
  resolve(driver->eventElapsedTime, "cuEventElapsedTime_v2");
  // Optional entry points: their absence costs speed, not function.
  driver->memHostRegister =
      reinterpret_cast<decltype(driver->memHostRegister)>(dlsym(driver->libraryHandle, "cuMemHostRegister_v2"));
  driver->memHostUnregister =
      reinterpret_cast<decltype(driver->memHostUnregister)>(dlsym(driver->libraryHandle, "cuMemHostUnregister"));
  driver->tensorMapEncodeTiled =
      reinterpret_cast<decltype(driver->tensorMapEncodeTiled)>(dlsym(driver->libraryHandle, "cuTensorMapEncodeTiled"));
  if (!missing.empty())
    return makeExecError(ExecErrorKind::NoDevice, libraryName + " lacks " + missing + " (driver too old?)");
  return std::shared_ptr<const CudaDriver>(std::move(driver));
}

std::string CudaDriver::errorName(CUresult result) const {
  const char *name = nullptr;
  if (getErrorName(result, &name) != CUDA_SUCCESS || !name)
    return "CUDA error " + std::to_string(static_cast<int>(result));
  return name;
}

std::string CudaDriver::describe(CUresult result) const {
  const char *text = nullptr;
  std::string out = errorName(result);
  if (getErrorString(result, &text) == CUDA_SUCCESS && text)
    out += std::string(" (") + text + ")";
  return out;
}

} // namespace ptxforge::exec
