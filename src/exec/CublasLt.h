// CublasLt: cuBLASLt opened with dlopen at run time, as Cublas opens cuBLAS,
// for the one product plain cuBLAS cannot do: fp8 (e4m3) matrices, which only
// cublasLtMatmul takes. Internal to the exec library; cublasLt.h is used for
// types only.
#pragma once

#include "support/Result.h"

#include <cublasLt.h>

#include <memory>
#include <string>

namespace ptxforge::exec {

/// The cuBLASLt entry points ptxforge uses, each with its cublasLt.h type.
struct CublasLt {
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtDestroy) destroy = nullptr;
  decltype(&::cublasLtGetVersion) getVersion = nullptr;
  decltype(&::cublasLtGetStatusName) getStatusName = nullptr;
  decltype(&::cublasLtGetStatusString) getStatusString = nullptr;
  decltype(&::cublasLtMatmulDescCreate) matmulDescCreate = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) matmulDescDestroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) matmulDescSetAttribute = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) matrixLayoutCreate = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) matrixLayoutDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) preferenceCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) preferenceDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) preferenceSetAttribute = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) algoGetHeuristic = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;

  /// Opens $PTXFORGE_LIBCUBLASLT when it is set (and nothing else), otherwise
  /// the first of libcublasLt.so.13, .so.12, .so and the toolkit's
  /// lib64/libcublasLt.so that loads. Without one: an Error of kind
  /// Unavailable whose message starts "cuBLASLt not found: ".
  static Result<std::shared_ptr<const CublasLt>> load();

  /// "CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not supported)".
  std::string describe(cublasStatus_t status) const;

  ~CublasLt();
  void *libraryHandle = nullptr;
  std::string libraryName;
};

/// One row-major fp8 product, C (m x n, f32) = A (m x k, e4m3) * B^T with B
/// n x k ("K-major"), alpha 1, beta 0, f32 accumulation (no fast-accumulation
/// mode), no scales (cuBLASLt takes absent scale pointers as 1). `workspace`
/// is device memory of `workspaceBytes` for the algorithm.
struct CublasLtFp8Gemm {
  int64_t m = 0, n = 0, k = 0;
  const void *a = nullptr, *b = nullptr;
  void *c = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
};

/// Owns one cuBLASLt handle (cublasLtDestroy when it goes) and runs fp8 gemms
/// on the default stream. Must be destroyed while its CUDA context lives.
class CublasLtHandle {
public:
  CublasLtHandle(std::shared_ptr<const CublasLt> library, cublasLtHandle_t handle);
  CublasLtHandle(const CublasLtHandle &) = delete;
  CublasLtHandle &operator=(const CublasLtHandle &) = delete;
  ~CublasLtHandle();

  const CublasLt &library() const { return *library_; }

  /// Enqueues the product: cuBLASLt's column-major D (n x m, ld n) = op(B)
  /// (B's bytes as a k x n column-major matrix, transposed) * A's bytes as a
  /// k x m column-major matrix: the "TN" layout its fp8 path requires. The
  /// error names the call that failed and cuBLASLt's status. The
  /// descriptors and the algorithm are kept for the next call of the same shape.
  Result<void> fp8Gemm(const CublasLtFp8Gemm &gemm);

private:
  struct Plan;
  std::shared_ptr<const CublasLt> library_;
  cublasLtHandle_t handle_ = nullptr;
  std::unique_ptr<Plan> plan_;
};

} // namespace ptxforge::exec
