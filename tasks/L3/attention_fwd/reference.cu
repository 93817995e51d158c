// attention_fwd: single-head attention forward, f32, head dimension D = 64:
//   O = softmax(Q K^T / sqrt(D)) V, Q: seq_q x D, K and V: seq_k x D, O: seq_q x D, row-major.
// Flash-attention style: a 128-thread block owns 32 query rows and streams K/V in tiles of 32
// keys through shared memory, keeping an online softmax (running max m and sum l per row, in
// the log2 domain) and the O accumulator in registers; P never leaves shared memory.
// Threads are a 8 x 16 grid: thread (ty, tx) owns rows ty*4..ty*4+3, score columns
// tx + 16j (j < 2) and output columns tx + 16c (c < 4); a row's 16 threads are one half-warp,
// so row reductions are 4 xor-shuffles. Keys past seq_k score -inf; rows past seq_q are
// computed on zeros and not stored.
#define NEG_INF (-__int_as_float(0x7f800000))
#define D 64
#define BQ 32
#define BKV 32
#define THREADS 128

extern "C" __global__ void __launch_bounds__(THREADS)
attention_fwd(const float* __restrict__ Q, const float* __restrict__ K, const float* __restrict__ V,
              float* __restrict__ O, int seq_q, int seq_k) {
    __shared__ float Qs[BQ][D + 1];
    __shared__ float Ks[BKV][D + 1];
    __shared__ float Vs[BKV][D];
    __shared__ float Ps[BQ][BKV + 1];

    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int q0 = blockIdx.x * BQ;
    const float qscale = 0.125f * 1.4426950408889634f;  // 1/sqrt(64) * log2(e)

    for (int e = tid; e < BQ * D; e += THREADS) {
        const int r = e / D, c = e % D;
        Qs[r][c] = (q0 + r < seq_q) ? Q[(size_t)(q0 + r) * D + c] * qscale : 0.0f;
    }

    float m[4], l[4], o[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        m[i] = NEG_INF;
        l[i] = 0.0f;
#pragma unroll
        for (int c = 0; c < 4; ++c) o[i][c] = 0.0f;
    }

    for (int k0 = 0; k0 < seq_k; k0 += BKV) {
        for (int e = tid; e < BKV * D; e += THREADS) {
            const int r = e / D, c = e % D;
            const bool ok = k0 + r < seq_k;
            Ks[r][c] = ok ? K[(size_t)(k0 + r) * D + c] : 0.0f;
            Vs[r][c] = ok ? V[(size_t)(k0 + r) * D + c] : 0.0f;
        }
        __syncthreads();

        float s[4][2];
#pragma unroll
        for (int i = 0; i < 4; ++i) s[i][0] = s[i][1] = 0.0f;
#pragma unroll 8
        for (int d = 0; d < D; ++d) {
            const float k0v = Ks[tx][d], k1v = Ks[tx + 16][d];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const float qv = Qs[ty * 4 + i][d];
                s[i][0] = fmaf(qv, k0v, s[i][0]);
                s[i][1] = fmaf(qv, k1v, s[i][1]);
            }
        }
        const bool v0 = k0 + tx < seq_k, v1 = k0 + tx + 16 < seq_k;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            if (!v0) s[i][0] = NEG_INF;
            if (!v1) s[i][1] = NEG_INF;
            float mx = fmaxf(s[i][0], s[i][1]);
#pragma unroll
            for (int off = 8; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            const float mn = fmaxf(m[i], mx);  // finite: key k0 is always valid
            const float alpha = exp2f(m[i] - mn);
            const float p0 = exp2f(s[i][0] - mn), p1 = exp2f(s[i][1] - mn);
            float rs = p0 + p1;
#pragma unroll
            for (int off = 8; off > 0; off >>= 1) rs += __shfl_xor_sync(0xffffffffu, rs, off);
            l[i] = l[i] * alpha + rs;
            m[i] = mn;
#pragma unroll
            for (int c = 0; c < 4; ++c) o[i][c] *= alpha;
            Ps[ty * 4 + i][tx] = p0;
            Ps[ty * 4 + i][tx + 16] = p1;
        }
        __syncthreads();

#pragma unroll 4
        for (int k = 0; k < BKV; ++k) {
            float vv[4];
#pragma unroll
            for (int c = 0; c < 4; ++c) vv[c] = Vs[k][tx + 16 * c];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const float p = Ps[ty * 4 + i][k];
#pragma unroll
                for (int c = 0; c < 4; ++c) o[i][c] = fmaf(p, vv[c], o[i][c]);
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = q0 + ty * 4 + i;
        if (r < seq_q) {
            const float inv = 1.0f / l[i];
#pragma unroll
            for (int c = 0; c < 4; ++c) O[(size_t)r * D + tx + 16 * c] = o[i][c] * inv;
        }
    }
}
