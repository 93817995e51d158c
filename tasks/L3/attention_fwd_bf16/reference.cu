// attention_fwd_bf16: causal multi-head attention forward, head dimension D = 64, bf16 inputs,
// f32 softmax and accumulation, f32 output:
//   O[h] = softmax(Q[h] K[h]^T / 8 + causal mask) V[h] for each of bh heads, where query i sees
//   keys j <= i. Q, K, V: bh x seq x 64 bf16, O: bh x seq x 64 f32, all row-major.
// Flash-attention 2 style with mma.sync.m16n8k16 bf16 -> f32: a 128-thread block owns 64 query
// rows of one head (blockIdx.y), each warp 16 of them; K/V tiles of 64 keys go through padded
// shared memory. S = Q K^T per warp (Q fragments loaded once with ldmatrix, K fragments with
// ldmatrix, no transpose), then scale (1/8 * log2 e), mask, online softmax in the log2 domain
// (running max and sum per row, two xor-shuffles per row reduction), and P, rounded to bf16 in
// registers (the accumulator layout of S is the A-fragment layout of the PV mma), times V
// (ldmatrix.trans). Key tiles stop at the block's diagonal; rows and keys past seq are zero.
#define D 64
#define BQ 64
#define BKV 64
#define PAD 8
#define THREADS 128
#define NEG_INF (-__int_as_float(0x7f800000))

typedef unsigned short bf16raw;

__device__ __forceinline__ void ldsm_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, const void* smem) {
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

__device__ __forceinline__ void mma_bf16(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two f32 -> bf16x2 (round to nearest even): lo in the low half, as the lower column.
__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// Rows [row0, row0 + 64) of a seq x 64 bf16 matrix into a padded shared tile, zero past seq.
__device__ __forceinline__ void load_tile(bf16raw (*dst)[D + PAD], const bf16raw* __restrict__ src, int row0,
                                          int seq, int tid) {
#pragma unroll
    for (int i = 0; i < (BKV * D / 8) / THREADS; ++i) {
        const int c = tid + i * THREADS, r = c >> 3, col = (c & 7) * 8;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (row0 + r < seq) v = *reinterpret_cast<const uint4*>(src + (size_t)(row0 + r) * D + col);
        *reinterpret_cast<uint4*>(&dst[r][col]) = v;
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
attention_fwd_bf16(const bf16raw* __restrict__ Q, const bf16raw* __restrict__ K, const bf16raw* __restrict__ V,
                   float* __restrict__ O, int bh, int seq) {
    __shared__ __align__(16) bf16raw Qs[BQ][D + PAD];
    __shared__ __align__(16) bf16raw Ks[BKV][D + PAD];
    __shared__ __align__(16) bf16raw Vs[BKV][D + PAD];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int q0 = blockIdx.x * BQ;
    const size_t head = (size_t)blockIdx.y * seq * D;
    const float qscale = 0.125f * 1.4426950408889634f;  // 1/sqrt(64) * log2(e)

    load_tile(Qs, Q + head, q0, seq, tid);
    __syncthreads();
    unsigned qf[4][4];  // A fragments of the warp's 16 rows, one per 16-wide slice of D
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
        ldsm_x4(qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], &Qs[warp * 16 + (lane & 15)][kk * 16 + (lane >> 4) * 8]);

    // This thread's rows: warp*16 + g and + 8 (accumulator halves 0,1 and 2,3).
    const int row[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0.0f, 0.0f};
    float o[8][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int q = 0; q < 4; ++q) o[nt][q] = 0.0f;

    const int kend = min(seq, q0 + BQ);  // causal: no key past the block's last row
    for (int k0 = 0; k0 < kend; k0 += BKV) {
        __syncthreads();  // the previous tile's readers are done
        load_tile(Ks, K + head, k0, seq, tid);
        load_tile(Vs, V + head, k0, seq, tid);
        __syncthreads();

        float s[8][4];
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
            for (int q = 0; q < 4; ++q) s[nt][q] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
#pragma unroll
            for (int p = 0; p < 4; ++p) {
                unsigned b0, b1, b2, b3;  // keys p*16 .. +7 (b0, b1) and +8 .. +15 (b2, b3)
                ldsm_x4(b0, b1, b2, b3, &Ks[p * 16 + (lane & 7) + (lane >> 4) * 8][kk * 16 + ((lane >> 3) & 1) * 8]);
                mma_bf16(s[2 * p], qf[kk], b0, b1);
                mma_bf16(s[2 * p + 1], qf[kk], b2, b3);
            }

        // Scale, mask, and the online softmax of each of the two rows.
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = NEG_INF;
#pragma unroll
            for (int nt = 0; nt < 8; ++nt)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int key = k0 + nt * 8 + 2 * t + e;
                    float v = s[nt][2 * h + e] * qscale;
                    if (key > row[h] || key >= seq) v = NEG_INF;
                    s[nt][2 * h + e] = v;
                    mx = fmaxf(mx, v);
                }
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float mn = fmaxf(m[h], mx);  // finite: key k0 <= every row of the block
            const float alpha = exp2f(m[h] - mn);
            float rs = 0.0f;
#pragma unroll
            for (int nt = 0; nt < 8; ++nt)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const float p = exp2f(s[nt][2 * h + e] - mn);
                    s[nt][2 * h + e] = p;
                    rs += p;
                }
            rs += __shfl_xor_sync(0xffffffffu, rs, 1);
            rs += __shfl_xor_sync(0xffffffffu, rs, 2);
            l[h] = l[h] * alpha + rs;
            m[h] = mn;
#pragma unroll
            for (int nt = 0; nt < 8; ++nt) o[nt][2 * h] *= alpha, o[nt][2 * h + 1] *= alpha;
        }

        // O += P V: keys kk*16 .. +15 are S tiles 2kk and 2kk+1, already in A-fragment order.
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            unsigned pa[4] = {pack_bf16(s[2 * kk][0], s[2 * kk][1]), pack_bf16(s[2 * kk][2], s[2 * kk][3]),
                              pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
            for (int p = 0; p < 4; ++p) {
                unsigned b0, b1, b2, b3;  // d columns p*16 .. +7 (b0, b1) and +8 .. +15 (b2, b3)
                ldsm_x4_trans(b0, b1, b2, b3, &Vs[kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8][p * 16 + (lane >> 4) * 8]);
                mma_bf16(o[2 * p], pa, b0, b1);
                mma_bf16(o[2 * p + 1], pa, b2, b3);
            }
        }
    }

#pragma unroll
    for (int h = 0; h < 2; ++h) {
        if (row[h] >= seq) continue;
        const float inv = 1.0f / l[h];
        float* out = O + head + (size_t)row[h] * D;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
            *reinterpret_cast<float2*>(out + nt * 8 + 2 * t) = make_float2(o[nt][2 * h] * inv, o[nt][2 * h + 1] * inv);
    }
}
