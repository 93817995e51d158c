// CublasLt: dlopen of libcublasLt, symbol resolution, and the fp8 gemm.
#include "exec/CublasLt.h"

#include "exec/Executor.h"
#include "exec/VendorLibrary.h"

#include <dlfcn.h>

#ifndef PTXFORGE_CUDA_ROOT
#define PTXFORGE_CUDA_ROOT "/usr/local/cuda"
#endif

namespace ptxforge::exec {

CublasLt::~CublasLt() {
  if (libraryHandle)
    dlclose(libraryHandle); // RTLD_NODELETE keeps it mapped, as for cuBLAS
}

Result<std::shared_ptr<const CublasLt>> CublasLt::load() {
  Result<OpenedLibrary> opened = openVendorLibrary(
      "PTXFORGE_LIBCUBLASLT",
      {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so", PTXFORGE_CUDA_ROOT "/lib64/libcublasLt.so"},
      "cuBLASLt");
  if (!opened) return opened.error();
  auto library = std::make_shared<CublasLt>();
  library->libraryHandle = opened->handle;
  library->libraryName = opened->name;
  SymbolResolver resolve(library->libraryHandle);
  resolve(library->create, "cublasLtCreate");
  resolve(library->destroy, "cublasLtDestroy");
  resolve(library->getVersion, "cublasLtGetVersion");
  resolve(library->getStatusName, "cublasLtGetStatusName");
  resolve(library->getStatusString, "cublasLtGetStatusString");
  resolve(library->matmulDescCreate, "cublasLtMatmulDescCreate");
  resolve(library->matmulDescDestroy, "cublasLtMatmulDescDestroy");
  resolve(library->matmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
  resolve(library->matrixLayoutCreate, "cublasLtMatrixLayoutCreate");
  resolve(library->matrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
  resolve(library->preferenceCreate, "cublasLtMatmulPreferenceCreate");
  resolve(library->preferenceDestroy, "cublasLtMatmulPreferenceDestroy");
  resolve(library->preferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
  resolve(library->algoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
  resolve(library->matmul, "cublasLtMatmul");
  if (!resolve.missing().empty())
    return makeExecError(ExecErrorKind::Unavailable,
                         "cuBLASLt not usable: " + library->libraryName + " lacks " + resolve.missing());
  return std::shared_ptr<const CublasLt>(std::move(library));
}

std::string CublasLt::describe(cublasStatus_t status) const {
  return describeStatus(getStatusName ? getStatusName(status) : nullptr,
                        getStatusString ? getStatusString(status) : nullptr,
                        "cuBLAS status " + std::to_string(static_cast<int>(status)));
}

/// The descriptors and the algorithm of one shape, destroyed however the
/// set-up ends. Kept between calls of the same shape so that a timed call
/// enqueues the kernel only (the heuristic query costs host time the GPU
/// would spend idle between the timing events).
struct CublasLtHandle::Plan {
  const CublasLt &library;
  int64_t m = 0, n = 0, k = 0;
  size_t workspaceBytes = 0;
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic{};
  explicit Plan(const CublasLt &lt) : library(lt) {}
  ~Plan() {
    if (preference) library.preferenceDestroy(preference);
    for (cublasLtMatrixLayout_t layout : {a, b, c})
      if (layout) library.matrixLayoutDestroy(layout);
    if (operation) library.matmulDescDestroy(operation);
  }
};

CublasLtHandle::CublasLtHandle(std::shared_ptr<const CublasLt> library, cublasLtHandle_t handle)
    : library_(std::move(library)), handle_(handle) {}

CublasLtHandle::~CublasLtHandle() {
  plan_.reset();
  if (handle_) library_->destroy(handle_);
}

Result<void> CublasLtHandle::fp8Gemm(const CublasLtFp8Gemm &gemm) {
  const CublasLt &lt = *library_;
  const std::string what = "cuBLASLt e4m3 gemm (m=" + std::to_string(gemm.m) + ", n=" + std::to_string(gemm.n) +
                           ", k=" + std::to_string(gemm.k) + ")";
  auto failed = [&](const char *call, cublasStatus_t status) {
    return makeExecError(status == CUBLAS_STATUS_ALLOC_FAILED ? ExecErrorKind::OutOfMemory : ExecErrorKind::Internal,
                         std::string(call) + " for the " + what + ": " + lt.describe(status));
  };
  if (!plan_ || plan_->m != gemm.m || plan_->n != gemm.n || plan_->k != gemm.k ||
      plan_->workspaceBytes != gemm.workspaceBytes) {
    plan_.reset();
    auto d = std::make_unique<Plan>(lt);
    d->m = gemm.m, d->n = gemm.n, d->k = gemm.k, d->workspaceBytes = gemm.workspaceBytes;
    // Column-major view of the row-major product: D^T (n x m) = B (k x n as
    // stored, transposed) * A^T (k x m as stored). TN is what the fp8 kernels take.
    if (cublasStatus_t s = lt.matmulDescCreate(&d->operation, CUBLAS_COMPUTE_32F, CUDA_R_32F); s != CUBLAS_STATUS_SUCCESS)
      return failed("cublasLtMatmulDescCreate", s);
    const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
    const int8_t fastAccumulation = 0; // f32 accumulation throughout, as the task asks
    if (cublasStatus_t s =
            lt.matmulDescSetAttribute(d->operation, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose);
        s != CUBLAS_STATUS_SUCCESS)
      return failed("cublasLtMatmulDescSetAttribute(TRANSA)", s);
    if (cublasStatus_t s = lt.matmulDescSetAttribute(d->operation, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none);
        s != CUBLAS_STATUS_SUCCESS)
      return failed("cublasLtMatmulDescSetAttribute(TRANSB)", s);
    if (cublasStatus_t s = lt.matmulDescSetAttribute(d->operation, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fastAccumulation,
                                                     sizeof fastAccumulation);
        s != CUBLAS_STATUS_SUCCESS)
      return failed("cublasLtMatmulDescSetAttribute(FAST_ACCUM)", s);
    const uint64_t m = uint64_t(gemm.m), n = uint64_t(gemm.n), k = uint64_t(gemm.k);
    if (cublasStatus_t s = lt.matrixLayoutCreate(&d->a, CUDA_R_8F_E4M3, k, n, int64_t(k)); s != CUBLAS_STATUS_SUCCESS)
      return failed("cublasLtMatrixLayoutCreate(B as A)", s);
    if (cublasStatus_t s = lt.matrixLayoutCreate(&d->b, CUDA_R_8F_E4M3, k, m, int64_t(k)); s != CUBLAS_STATUS_SUCCESS)
      return failed("cublasLtMatrixLayoutCreate(A as B)", s);
    if (cublasStatus_t s = lt.matrixLayoutCreate(&d->c, CUDA_R_32F, n, m, int64_t(n)); s != CUBLAS_STATUS_SUCCESS)
      return failed("cublasLtMatrixLayoutCreate(C)", s);
    if (cublasStatus_t s = lt.preferenceCreate(&d->preference); s != CUBLAS_STATUS_SUCCESS)
      return failed("cublasLtMatmulPreferenceCreate", s);
    const uint64_t workspaceBytes = gemm.workspaceBytes;
    if (cublasStatus_t s = lt.preferenceSetAttribute(d->preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                     &workspaceBytes, sizeof workspaceBytes);
        s != CUBLAS_STATUS_SUCCESS)
      return failed("cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)", s);
    int found = 0;
    if (cublasStatus_t s = lt.algoGetHeuristic(handle_, d->operation, d->a, d->b, d->c, d->c, d->preference, 1,
                                               &d->heuristic, &found);
        s != CUBLAS_STATUS_SUCCESS)
      return failed("cublasLtMatmulAlgoGetHeuristic", s);
    if (found == 0)
      return makeExecError(ExecErrorKind::Unavailable,
                           "cublasLtMatmulAlgoGetHeuristic found no algorithm for the " + what +
                               " (cuBLASLt's fp8 path needs sm_89 or later, 16-byte aligned operands and leading "
                               "dimensions that are multiples of 16)");
    plan_ = std::move(d);
  }
  const float one = 1.0f, zero = 0.0f;
  // B's bytes are cuBLASLt's A and A's its B (see above); C is both C and D (beta 0).
  if (cublasStatus_t s = lt.matmul(handle_, plan_->operation, &one, gemm.b, plan_->a, gemm.a, plan_->b, &zero, gemm.c,
                                   plan_->c, gemm.c, plan_->c, &plan_->heuristic.algo, gemm.workspace,
                                   gemm.workspaceBytes, nullptr);
      s != CUBLAS_STATUS_SUCCESS)
    return failed("cublasLtMatmul", s);
  return {};
}

} // namespace ptxforge::exec
