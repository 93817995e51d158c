// hgemm: C = A * B with f16 inputs, f32 accumulation and f32 output; row-major A (M x K),
// B (K x N), C (M x N). Tensor cores through mma.sync.m16n8k16 (f16 x f16 -> f32).
// 128x128 block tile, BK = 32, 8 warps in a 2 x 4 grid, each warp a 64x32 tile
// (4 x 4 mma tiles). Tiles are staged in padded shared memory (conflict-free ldmatrix; A with
// ldmatrix.x4, B with ldmatrix.x4.trans) with a register prefetch of the next K tile.
// Global loads are 16-byte vectors when a row length is a multiple of 8 halves and the 8-half
// chunk lies inside the matrix, and element-wise zero-filled loads otherwise, so every
// M, N, K (ragged included) is exact; stores are bounds-checked.
#include <cuda_fp16.h>

#define BM 128
#define BN 128
#define BK 32
#define APAD 8
#define BPAD 8
#define THREADS 256

__device__ __forceinline__ uint4 load_chunk(const __half* __restrict__ p, int row, int col, int rows,
                                            int cols, bool vec) {
    // Eight consecutive halves p[row][col .. col+7] of a rows x cols row-major matrix, zero
    // outside it.
    if (row < rows && vec && col + 7 < cols)
        return *reinterpret_cast<const uint4*>(p + (size_t)row * cols + col);
    union { uint4 u; __half h[8]; } r;
#pragma unroll
    for (int q = 0; q < 8; ++q)
        r.h[q] = (row < rows && col + q < cols) ? p[(size_t)row * cols + col + q] : __float2half(0.0f);
    return r.u;
}

__device__ __forceinline__ void ldsm_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                        const void* smem) {
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
}

__device__ __forceinline__ void ldsm_x4_trans(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                              const void* smem) {
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
}

__device__ __forceinline__ void mma_16816(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C,
      int M, int N, int K) {
    __shared__ __align__(16) __half As[BM][BK + APAD];
    __shared__ __align__(16) __half Bs[BK][BN + BPAD];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp >> 2, wn = warp & 3;  // 2 x 4 warps
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool a_vec = (K & 7) == 0, b_vec = (N & 7) == 0;

    // Each thread moves 2 chunks of 8 halves of A (128 x 32) and 2 of B (32 x 128) per tile.
    uint4 ra[2], rb[2];
    auto load = [&](int k0) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int c = tid + i * THREADS;
            ra[i] = load_chunk(A, bm + (c >> 2), k0 + (c & 3) * 8, M, K, a_vec);
            rb[i] = load_chunk(B, k0 + (c >> 4), bn + (c & 15) * 8, K, N, b_vec);
        }
    };

    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

    load(0);
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int c = tid + i * THREADS;
            *reinterpret_cast<uint4*>(&As[c >> 2][(c & 3) * 8]) = ra[i];
            *reinterpret_cast<uint4*>(&Bs[c >> 4][(c & 15) * 8]) = rb[i];
        }
        __syncthreads();
        if (k0 + BK < K) load(k0 + BK);

#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned af[4][4], bf[4][2];
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)
                ldsm_x4(af[mi][0], af[mi][1], af[mi][2], af[mi][3],
                        &As[wm * 64 + mi * 16 + (lane & 15)][kk + (lane >> 4) * 8]);
#pragma unroll
            for (int p = 0; p < 2; ++p)
                ldsm_x4_trans(bf[2 * p][0], bf[2 * p][1], bf[2 * p + 1][0], bf[2 * p + 1][1],
                              &Bs[kk + (lane & 7) + ((lane >> 3) & 1) * 8][wn * 32 + p * 16 + (lane >> 4) * 8]);
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)
#pragma unroll
                for (int ni = 0; ni < 4; ++ni) mma_16816(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
        }
        __syncthreads();
    }

    // Accumulator layout of m16n8: c0,c1 at (lane/4, 2*(lane%4) + {0,1}); c2,c3 eight rows down.
#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
            const int r = bm + wm * 64 + mi * 16 + (lane >> 2);
            const int c = bn + wn * 32 + ni * 8 + (lane & 3) * 2;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int rr = r + h * 8;
                if (rr < M) {
                    if (c < N) C[(size_t)rr * N + c] = acc[mi][ni][2 * h];
                    if (c + 1 < N) C[(size_t)rr * N + c + 1] = acc[mi][ni][2 * h + 1];
                }
            }
        }
}
