// Tensor cores through nvcuda::wmma: one warp computes a 16x16 tile of
// C = A * B (half inputs, float accumulation), A row-major, B column-major.
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void wmma_gemm_f16_f32(const half *a, const half *b, float *c, int m, int n, int k) {
  const int warpM = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int warpN = blockIdx.y * blockDim.y + threadIdx.y;
  if (warpM * 16 >= m || warpN * 16 >= n) return;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int kk = 0; kk < k; kk += 16) {
    wmma::load_matrix_sync(fa, a + warpM * 16 * k + kk, k);
    wmma::load_matrix_sync(fb, b + warpN * 16 * k + kk, k);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + warpM * 16 * n + warpN * 16, acc, n, wmma::mem_row_major);
}
