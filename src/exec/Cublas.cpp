// Cublas: dlopen of libcublas and symbol resolution.
#include "exec/Cublas.h"

#include "exec/Executor.h"
#include "exec/VendorLibrary.h"

#include <dlfcn.h>

#ifndef PTXFORGE_CUDA_ROOT
#define PTXFORGE_CUDA_ROOT "/usr/local/cuda"
#endif

namespace ptxforge::exec {

Cublas::~Cublas() {
  if (libraryHandle)
    dlclose(libraryHandle); // RTLD_NODELETE keeps it mapped (VendorLibrary.h)
}

Result<std::shared_ptr<const Cublas>> Cublas::load() {
  // The sonames of the CUDA 13 and 12 libraries (the symbols used here have
  // the same signatures in both), the unversioned development link, and last
  // the toolkit ptxforge was built against, for machines that do not
  // register it with the dynamic loader.
  Result<OpenedLibrary> opened = openVendorLibrary(
      "PTXFORGE_LIBCUBLAS",
      {"libcublas.so.13", "libcublas.so.12", "libcublas.so", PTXFORGE_CUDA_ROOT "/lib64/libcublas.so"}, "cuBLAS");
  if (!opened) return opened.error();
  auto library = std::make_shared<Cublas>();
  library->libraryHandle = opened->handle;
  library->libraryName = opened->name;
  SymbolResolver resolve(library->libraryHandle);
  resolve(library->create, "cublasCreate_v2");
  resolve(library->destroy, "cublasDestroy_v2");
  resolve(library->getVersion, "cublasGetVersion_v2");
  resolve(library->setStream, "cublasSetStream_v2");
  resolve(library->setPointerMode, "cublasSetPointerMode_v2");
  resolve(library->setMathMode, "cublasSetMathMode");
  resolve(library->getStatusName, "cublasGetStatusName");
  resolve(library->getStatusString, "cublasGetStatusString");
  resolve(library->sgemm, "cublasSgemm_v2");
  resolve(library->sgemv, "cublasSgemv_v2");
  resolve(library->sgemmStridedBatched, "cublasSgemmStridedBatched");
  resolve(library->gemmEx, "cublasGemmEx");
  if (!resolve.missing().empty())
    return makeExecError(ExecErrorKind::Unavailable, "cuBLAS not usable: " + library->libraryName + " lacks " +
                                                         resolve.missing() + " (cuBLAS 11 or older?)");
  return std::shared_ptr<const Cublas>(std::move(library));
}

std::string Cublas::describe(cublasStatus_t status) const {
  return describeStatus(getStatusName ? getStatusName(status) : nullptr,
                        getStatusString ? getStatusString(status) : nullptr,
                        "cuBLAS status " + std::to_string(static_cast<int>(status)));
}

} // namespace ptxforge::exec
