// SGEMM: shared-memory tiles, and a register-blocked variant where each
// thread computes a 4x4 patch (register pressure: it spills under a low
// -maxrregcount).
#define TILE 16

extern "C" __global__ void sgemm_tiled(const float *a, const float *b, float *c, int m, int n, int k) {
  __shared__ float as[TILE][TILE], bs[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float sum = 0.0f;
  for (int t = 0; t < k; t += TILE) {
    as[threadIdx.y][threadIdx.x] = row < m && t + threadIdx.x < k ? a[row * k + t + threadIdx.x] : 0.0f;
    bs[threadIdx.y][threadIdx.x] = col < n && t + threadIdx.y < k ? b[(t + threadIdx.y) * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < TILE; ++i) sum += as[threadIdx.y][i] * bs[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = sum;
}

extern "C" __global__ void sgemm_register_4x4(const float *a, const float *b, float *c, int m, int n, int k) {
  __shared__ float as[64][TILE + 1], bs[TILE][64];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16; // 256 threads
  const int rowBase = blockIdx.y * 64 + ty * 4, colBase = blockIdx.x * 64 + tx * 4;
  float acc[4][4] = {};
  for (int t = 0; t < k; t += TILE) {
    for (int e = threadIdx.x; e < 64 * TILE; e += 256) {
      int r = e / TILE, q = e % TILE;
      int gr = blockIdx.y * 64 + r;
      as[r][q] = gr < m && t + q < k ? a[gr * k + t + q] : 0.0f;
      int br = e / 64, bc = e % 64, gc = blockIdx.x * 64 + bc;
      bs[br][bc] = t + br < k && gc < n ? b[(t + br) * n + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < TILE; ++q) {
      float ra[4], rb[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) ra[i] = as[ty * 4 + i][q], rb[i] = bs[q][tx * 4 + i];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += ra[i] * rb[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (rowBase + i < m && colBase + j < n) c[(rowBase + i) * n + colBase + j] = acc[i][j];
}
