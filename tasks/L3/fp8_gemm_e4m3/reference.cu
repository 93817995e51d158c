// fp8_gemm_e4m3: C = A * B^T with e4m3 inputs, f32 accumulation and an f32 output; A is
// M x K and B is N x K, both row-major ("K-major": the layout of cuBLASLt's fp8 path and
// of wgmma's fp8 operands), C is M x N row-major.
// Every e4m3 value is exact in f16, so tiles are widened to f16 on their way into shared
// memory (cvt.rn.f16x2.e4m3x2, sm_89+) and multiplied with mma.sync.m16n8k16 f16 -> f32:
// the products are exact and only the f32 accumulation rounds. 128x128 block tile, BK = 64,
// 8 warps in a 2 x 4 grid, each warp a 64x32 tile (4 x 4 mma tiles); A and B tiles are both
// [row][k] in padded shared memory and read with ldmatrix.x4 (no transpose: B is already
// K-major). Global loads are 16-byte vectors when K is a multiple of 16 and the chunk lies
// inside the matrix, byte-wise zero-filled loads otherwise, with a register prefetch of the
// next K tile; stores are bounds-checked, so every M, N, K (ragged included) is exact.
#define BM 128
#define BN 128
#define BK 64
#define PAD 8
#define THREADS 256

typedef unsigned char fp8;

__device__ __forceinline__ uint4 load_chunk(const fp8* __restrict__ p, int row, int col, int rows, int cols,
                                            bool vec) {
    // Sixteen consecutive bytes p[row][col .. col+15] of a rows x cols row-major matrix, zero
    // (e4m3 +0) outside it.
    if (row < rows && vec && col + 15 < cols)
        return *reinterpret_cast<const uint4*>(p + (size_t)row * cols + col);
    union { uint4 u; fp8 b[16]; } r;
#pragma unroll
    for (int q = 0; q < 16; ++q) r.b[q] = (row < rows && col + q < cols) ? p[(size_t)row * cols + col + q] : 0;
    return r.u;
}

// Four e4m3 bytes -> four f16 in two f16x2 words, in memory order (the low byte first).
__device__ __forceinline__ void widen4(unsigned w, unsigned& lo, unsigned& hi) {
    asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\t"
        "cvt.rn.f16x2.e4m3x2 %0, l;\n\tcvt.rn.f16x2.e4m3x2 %1, h;\n\t}"
        : "=r"(lo), "=r"(hi) : "r"(w));
}

// Stores 16 e4m3 values as 16 f16 (32 bytes, 16-byte aligned) at dst.
__device__ __forceinline__ void store_widened(unsigned* dst, uint4 v) {
    uint4 a, b;
    widen4(v.x, a.x, a.y);
    widen4(v.y, a.z, a.w);
    widen4(v.z, b.x, b.y);
    widen4(v.w, b.z, b.w);
    reinterpret_cast<uint4*>(dst)[0] = a;
    reinterpret_cast<uint4*>(dst)[1] = b;
}

__device__ __forceinline__ void ldsm_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, const void* smem) {
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
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
fp8_gemm_e4m3(const fp8* __restrict__ A, const fp8* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
    // f16 halves as 16-bit words: [row][k], rows padded by 8 halves (16 bytes) so that the
    // eight row addresses of an ldmatrix fall in distinct bank groups.
    __shared__ __align__(16) unsigned short As[BM][BK + PAD];
    __shared__ __align__(16) unsigned short Bs[BN][BK + PAD];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp >> 2, wn = warp & 3;  // 2 x 4 warps
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool vec = (K & 15) == 0;

    // Each thread moves 2 chunks of 16 bytes of A (128 x 64) and 2 of B (128 x 64) per tile.
    uint4 ra[2], rb[2];
    auto load = [&](int k0) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int c = tid + i * THREADS;
            ra[i] = load_chunk(A, bm + (c >> 2), k0 + (c & 3) * 16, M, K, vec);
            rb[i] = load_chunk(B, bn + (c >> 2), k0 + (c & 3) * 16, N, K, vec);
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
            store_widened(reinterpret_cast<unsigned*>(&As[c >> 2][(c & 3) * 16]), ra[i]);
            store_widened(reinterpret_cast<unsigned*>(&Bs[c >> 2][(c & 3) * 16]), rb[i]);
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
            // B fragments of two n8 tiles per ldmatrix.x4: matrices (n 0-7, k 0-7), (n 0-7, k 8-15),
            // (n 8-15, k 0-7), (n 8-15, k 8-15).
#pragma unroll
            for (int p = 0; p < 2; ++p)
                ldsm_x4(bf[2 * p][0], bf[2 * p][1], bf[2 * p + 1][0], bf[2 * p + 1][1],
                        &Bs[wn * 32 + p * 16 + (lane & 7) + (lane >> 4) * 8][kk + ((lane >> 3) & 1) * 8]);
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
