// transpose_2d: out (N x M) = transpose of in (M x N), both row-major f32.
// Classic shared-memory tiled transpose: a 32x8 block reads a 32x32 tile row-wise
// (coalesced), and writes it back column-wise from shared memory (coalesced); the +1
// padding makes the column reads of the tile conflict-free.
#define TILE 32
#define ROWS 8

extern "C" __global__ void transpose_2d(const float* __restrict__ in, float* __restrict__ out,
                                        int M, int N) {
    __shared__ float tile[TILE][TILE + 1];
    int bx = blockIdx.x * TILE;  // column (j) origin in `in`
    int by = blockIdx.y * TILE;  // row (i) origin in `in`
    int tx = threadIdx.x, ty = threadIdx.y;

    int j = bx + tx;
#pragma unroll
    for (int r = 0; r < TILE; r += ROWS) {
        int i = by + ty + r;
        if (i < M && j < N) tile[ty + r][tx] = in[(size_t)i * N + j];
    }
    __syncthreads();

    int i = by + tx;  // now the fastest-varying index of `out`
#pragma unroll
    for (int r = 0; r < TILE; r += ROWS) {
        int jj = bx + ty + r;
        if (jj < N && i < M) out[(size_t)jj * M + i] = tile[tx][ty + r];
    }
}
