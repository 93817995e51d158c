// ColumnMajorCall: a row-major LibraryCall restated as the column-major BLAS
// call (cuBLAS's convention) that computes the same bytes. Kept apart from the
// cuBLAS code so that the layout arithmetic is tested without a GPU.
#pragma once

#include "exec/Executor.h"

#include <cstdint>

namespace ptxforge::exec {

/// BLAS arguments in BLAS's own terms. For gemm: C (m x n, ldc) = op(A) (m x k,
/// lda) * B (k x n, ldb), column-major, repeated `batch` times with the given
/// strides (elements). For gemv: y = op(A) x with A m x n (lda), x and y dense.
struct ColumnMajorCall {
  bool isGemv = false;
  bool transposeA = false; ///< op(A) = A^T (gemv, and gemm_bf16_f32 whose b is n x k)
  /// BLAS's A is the LibraryCall's b operand (and BLAS's B its a): the
  /// operands swap when a row-major product becomes a column-major one.
  bool swapOperands = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t strideA = 0, strideB = 0, strideC = 0;
  int64_t batch = 1;
};

/// The column-major call equal to `call`. A row-major R x C matrix is, byte for
/// byte, the column-major C x R matrix of its transpose with leading dimension
/// C; so row-major C = A B is column-major C^T = B^T A^T (operands swapped, m
/// and n swapped, every leading dimension a row length), and row-major y = A x
/// is column-major y = (A^T)^T x with A^T k x m, lda k.
ColumnMajorCall columnMajorCall(const LibraryCall &call);

} // namespace ptxforge::exec
