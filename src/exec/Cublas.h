// Cublas: cuBLAS opened with dlopen at run time, as CudaDriver opens libcuda,
// so that ptxforge never links it and works (without the vendor baseline)
// where it is missing. Internal to the exec library; cublas_v2.h is used for
// types only.
#pragma once

#include "support/Result.h"

#include <cublas_v2.h>

#include <memory>
#include <string>

namespace ptxforge::exec {

/// The cuBLAS entry points ptxforge uses. Each field has the type of the
/// cublas_api.h declaration; the symbol looked up is the name cublas_v2.h maps
/// to (cublasSgemm -> cublasSgemm_v2 ...).
struct Cublas {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasGetVersion_v2) getVersion = nullptr;
  decltype(&::cublasSetStream_v2) setStream = nullptr;
  decltype(&::cublasSetPointerMode_v2) setPointerMode = nullptr;
  decltype(&::cublasSetMathMode) setMathMode = nullptr;
  decltype(&::cublasGetStatusName) getStatusName = nullptr;
  decltype(&::cublasGetStatusString) getStatusString = nullptr;
  decltype(&::cublasSgemm_v2) sgemm = nullptr;
  decltype(&::cublasSgemv_v2) sgemv = nullptr;
  decltype(&::cublasSgemmStridedBatched) sgemmStridedBatched = nullptr;
  /// cublasGemmEx is overloaded in C++ (an inline wrapper takes a cudaDataType
  /// compute type), so its pointer type is spelled out: the exported function.
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                    const void *, const void *, cudaDataType, int, const void *, cudaDataType, int,
                                    const void *, void *, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmEx gemmEx = nullptr;

  /// Opens $PTXFORGE_LIBCUBLAS when it is set (and nothing else), otherwise
  /// the first of libcublas.so.13, libcublas.so.12, libcublas.so and the
  /// toolkit's lib64/libcublas.so that loads, and resolves every entry point.
  /// Without one: an Error of kind Unavailable whose message starts "cuBLAS not
  /// found: " and says what each attempt answered.
  static Result<std::shared_ptr<const Cublas>> load();

  /// "CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not supported)".
  std::string describe(cublasStatus_t status) const;

  ~Cublas();
  void *libraryHandle = nullptr;
  std::string libraryName; ///< what was opened, for messages
};

/// Owns one cuBLAS handle: cublasDestroy when it goes. Must be destroyed while
/// the CUDA context it was created in is still alive.
class CublasHandle {
public:
  CublasHandle(std::shared_ptr<const Cublas> library, cublasHandle_t handle)
      : library_(std::move(library)), handle_(handle) {}
  CublasHandle(const CublasHandle &) = delete;
  CublasHandle &operator=(const CublasHandle &) = delete;
  ~CublasHandle() {
    if (handle_) library_->destroy(handle_);
  }

  const Cublas &library() const { return *library_; }
  cublasHandle_t get() const { return handle_; }

private:
  std::shared_ptr<const Cublas> library_;
  cublasHandle_t handle_ = nullptr;
};

} // namespace ptxforge::exec
