// bf16_gemm: C = A * B^T with bf16 inputs, f32 accumulation and f32 output; A is
// M x K row-major, B is N x K row-major ("K-major": row n of B is column n of the
// product's right operand), C is M x N row-major. K is a multiple of 8.
// Tensor cores through mma.sync.m16n8k16 (bf16 x bf16 -> f32): 128x128 block
// tile, BK = 32, 8 warps in a 2 x 4 grid, each warp a 64x32 tile (4 x 4 mma
// tiles). Both operands are staged K-major in padded shared memory, so both take
// plain (non-transposed) ldmatrix.x4. Tiles arrive by 16-byte cp.async in a
// two-stage pipeline; a chunk of 8 elements lies wholly inside or outside the
// matrix (K is a multiple of 8), and rows past M or N are zero-filled by
// cp.async's source size of 0. Stores are bounds-checked.
// The tensor maps (a_map, b_map) are for kernels that load with TMA; this one
// does not read them.
#include <cuda_bf16.h>

#define BM 128
#define BN 128
#define BK 32
#define PAD 8
#define STAGES 2
#define THREADS 256

// CUtensorMap's size and alignment (cuda.h is not available to NVRTC).
struct alignas(64) TensorMap {
    unsigned long long opaque[16];
};

__device__ __forceinline__ void cp_async_16(void* smem, const void* global, bool inside) {
    // Copies 16 bytes, or writes 16 zero bytes when `inside` is false (source size 0 reads nothing).
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(global), "r"(inside ? 16 : 0)
                 : "memory");
}

__device__ __forceinline__ void ldsm_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                        const void* smem) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(a));
}

__device__ __forceinline__ void mma_16816(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

extern "C" __global__ void __launch_bounds__(THREADS)
bf16_gemm(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, float* __restrict__ C,
          const __grid_constant__ TensorMap a_map, const __grid_constant__ TensorMap b_map, int M, int N, int K) {
    __shared__ __align__(16) __nv_bfloat16 As[STAGES][BM][BK + PAD];
    __shared__ __align__(16) __nv_bfloat16 Bs[STAGES][BN][BK + PAD];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp >> 2, wn = warp & 3;  // 2 x 4 warps
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const int tiles = (K + BK - 1) / BK;

    // One K tile: 128 rows x 4 chunks of 8 elements per operand, 2 chunks of each per thread.
    auto load = [&](int stage, int k0) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int c = tid + i * THREADS, row = c >> 2, col = (c & 3) * 8;
            const bool kInside = k0 + col < K;
            const int ar = bm + row < M ? bm + row : 0, br = bn + row < N ? bn + row : 0;
            const int kc = kInside ? k0 + col : 0;
            cp_async_16(&As[stage][row][col], A + (size_t)ar * K + kc, kInside && bm + row < M);
            cp_async_16(&Bs[stage][row][col], B + (size_t)br * K + kc, kInside && bn + row < N);
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };

    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

    load(0, 0);
    for (int t = 0; t < tiles; ++t) {
        const int stage = t & 1;
        // Start the next tile's copies into the other stage, then wait for this one's.
        if (t + 1 < tiles) {
            load(stage ^ 1, (t + 1) * BK);
            asm volatile("cp.async.wait_group 1;\n" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::: "memory");
        }
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned af[4][4], bf[4][2];
            // A: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15).
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)
                ldsm_x4(af[mi][0], af[mi][1], af[mi][2], af[mi][3],
                        &As[stage][wm * 64 + mi * 16 + (lane & 15)][kk + (lane >> 4) * 8]);
            // B rows are n: matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
            // are b0, b1 of one n8 tile and b0, b1 of the next.
#pragma unroll
            for (int p = 0; p < 2; ++p)
                ldsm_x4(bf[2 * p][0], bf[2 * p][1], bf[2 * p + 1][0], bf[2 * p + 1][1],
                        &Bs[stage][wn * 32 + p * 16 + (lane & 7) + (lane >> 4) * 8][kk + ((lane >> 3) & 1) * 8]);
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)
#pragma unroll
                for (int ni = 0; ni < 4; ++ni) mma_16816(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
        }
        // The stage is overwritten by the copies issued at the top of the next iteration.
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
