// Tensor cores through nvcuda::wmma: 16x16x16 half → float (sm_75+), and
// bf16 / tf32 / int8 fragments where the target has them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

extern "C" __global__ void wmmaHalfGemm(int m, int n, int k, const half *a, const half *b, float *c) {
  int warpM = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int warpN = blockIdx.y * blockDim.y + threadIdx.y;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int t = 0; t < k; t += 16) {
    int row = warpM * 16, col = warpN * 16;
    if (row < m && col < n) {
      wmma::load_matrix_sync(fa, a + row * k + t, k);
      wmma::load_matrix_sync(fb, b + col * k + t, k);
      wmma::mma_sync(acc, fa, fb, acc);
    }
  }
  for (int e = 0; e < acc.num_elements; ++e) acc.x[e] *= 2.0f;
  if (warpM * 16 < m && warpN * 16 < n)
    wmma::store_matrix_sync(c + warpM * 16 * n + warpN * 16, acc, n, wmma::mem_row_major);
}

extern "C" __global__ void wmmaHalfAccumulate(const half *a, const half *b, half *c) {
  wmma::fragment<wmma::matrix_a, 32, 8, 16, half, wmma::col_major> fa;
  wmma::fragment<wmma::matrix_b, 32, 8, 16, half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 32, 8, 16, half> acc;
  wmma::load_matrix_sync(fa, a, 32);
  wmma::load_matrix_sync(fb, b, 8);
  wmma::load_matrix_sync(acc, c, 8, wmma::mem_col_major);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(c, acc, 8, wmma::mem_col_major);
}

extern "C" __global__ void wmmaInt8(const signed char *a, const signed char *b, int *c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> acc;
  wmma::fill_fragment(acc, 0);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(acc, fa, fb, acc, true);
  wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
extern "C" __global__ void wmmaBf16Tf32(const __nv_bfloat16 *a, const __nv_bfloat16 *b, const float *x,
                                        const float *y, float *c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);

  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc8;
  wmma::load_matrix_sync(acc8, c, 16, wmma::mem_row_major);
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> ta;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> tb;
  wmma::load_matrix_sync(ta, x, 8);
  wmma::load_matrix_sync(tb, y, 8);
  for (int e = 0; e < ta.num_elements; ++e) ta.x[e] = wmma::__float_to_tf32(ta.x[e]);
  wmma::mma_sync(acc8, ta, tb, acc8);
  wmma::store_matrix_sync(c + 256, acc8, 16, wmma::mem_row_major);
}
#endif
