// ColumnMajorCall: the row-major to column-major mapping of library calls.
#include "exec/ColumnMajorCall.h"

namespace ptxforge::exec {

ColumnMajorCall columnMajorCall(const LibraryCall &call) {
  ColumnMajorCall blas;
  if (call.op == LibraryOp::Gemv) {
    blas.isGemv = true;
    blas.transposeA = true;
    blas.m = call.k; // rows of the column-major view of A: its row length
    blas.n = call.m;
    blas.lda = call.k;
    return blas;
  }
  blas.swapOperands = true;
  blas.m = call.n;
  blas.n = call.m;
  blas.k = call.k;
  blas.lda = call.n; // BLAS's A is the row-major B (k x n)
  blas.ldb = call.k; // BLAS's B is the row-major A (m x k)
  blas.ldc = call.n;
  if (call.op == LibraryOp::GemmBf16F32) {
    // b is n x k row-major: column-major, the k x n matrix b^T with leading
    // dimension k, so BLAS's A (m x k = n x k) is its transpose.
    blas.transposeA = true;
    blas.lda = call.k;
  }
  if (call.op == LibraryOp::GemmBatched) {
    blas.batch = call.batch;
    blas.strideA = call.k * call.n;
    blas.strideB = call.m * call.k;
    blas.strideC = call.m * call.n;
  }
  return blas;
}

} // namespace ptxforge::exec
