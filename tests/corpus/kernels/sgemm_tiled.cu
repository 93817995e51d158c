// Shared-memory tiled SGEMM (C = alpha*A*B + beta*C), templated on the tile,
// with __syncthreads between loading and consuming each tile.
template <int Tile>
__global__ void sgemmTiled(int m, int n, int k, float alpha, const float *a, const float *b, float beta, float *c) {
  __shared__ float tileA[Tile][Tile];
  __shared__ float tileB[Tile][Tile + 1];
  int row = blockIdx.y * Tile + threadIdx.y;
  int col = blockIdx.x * Tile + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < k; t += Tile) {
    tileA[threadIdx.y][threadIdx.x] = (row < m && t + threadIdx.x < k) ? a[row * k + t + threadIdx.x] : 0.0f;
    tileB[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < k) ? b[(t + threadIdx.y) * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < Tile; ++i) acc += tileA[threadIdx.y][i] * tileB[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = alpha * acc + beta * c[row * n + col];
}

template __global__ void sgemmTiled<16>(int, int, int, float, const float *, const float *, float, float *);
template __global__ void sgemmTiled<32>(int, int, int, float, const float *, const float *, float, float *);

// Register-blocked variant: each thread computes a 4x4 micro tile.
extern "C" __global__ void __launch_bounds__(256) sgemm4x4(int m, int n, int k, const float *a, const float *b,
                                                           float *c) {
  __shared__ float as[64][8];
  __shared__ float bs[8][64];
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc[4][4] = {};
  for (int t = 0; t < k; t += 8) {
    for (int e = threadIdx.x; e < 64 * 8; e += 256) {
      int r = e / 8, cc = e % 8;
      int gr = blockIdx.y * 64 + r;
      as[r][cc] = (gr < m && t + cc < k) ? a[gr * k + t + cc] : 0.0f;
      int br = e / 64, bc = e % 64;
      int gc = blockIdx.x * 64 + bc;
      bs[br][bc] = (t + br < k && gc < n) ? b[(t + br) * n + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 8; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += as[ty * 4 + i][kk] * bs[kk][tx * 4 + j];
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      int r = blockIdx.y * 64 + ty * 4 + i, cc = blockIdx.x * 64 + tx * 4 + j;
      if (r < m && cc < n) c[r * n + cc] = acc[i][j];
    }
}
