// sgemm: C = A * B, row-major f32, A is M x K, B is K x N, C is M x N.
// 128x128 block tile, BK = 8, 256 threads, 8x8 register tile per thread (outer products from
// shared memory), A stored transposed in shared memory, register prefetch of the next K tile.
// Global loads use float4 when the row length allows it (16-byte aligned) and fall back to
// bounds-checked scalar loads (zero fill) on ragged edges; stores are bounds-checked.
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
      int M, int N, int K) {
    __shared__ __align__(16) float As[BK][BM];
    __shared__ __align__(16) float Bs[BK][BN];

    const int tid = threadIdx.x;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    // A tile (BM x BK): thread loads row a_r, columns a_c..a_c+3.
    const int a_r = tid >> 1, a_c = (tid & 1) * 4;
    // B tile (BK x BN): thread loads row b_r, columns b_c..b_c+3.
    const int b_r = tid >> 5, b_c = (tid & 31) * 4;
    const bool a_vec = (K & 3) == 0, b_vec = (N & 3) == 0;

    float ra[4], rb[4];
    auto load = [&](int k0) {
        const int gr = bm + a_r, gk = k0 + a_c;
        if (a_vec && gr < M && gk + 3 < K) {
            float4 v = *reinterpret_cast<const float4*>(A + (size_t)gr * K + gk);
            ra[0] = v.x; ra[1] = v.y; ra[2] = v.z; ra[3] = v.w;
        } else {
#pragma unroll
            for (int q = 0; q < 4; ++q)
                ra[q] = (gr < M && gk + q < K) ? A[(size_t)gr * K + gk + q] : 0.0f;
        }
        const int bk = k0 + b_r, gc = bn + b_c;
        if (b_vec && bk < K && gc + 3 < N) {
            float4 v = *reinterpret_cast<const float4*>(B + (size_t)bk * N + gc);
            rb[0] = v.x; rb[1] = v.y; rb[2] = v.z; rb[3] = v.w;
        } else {
#pragma unroll
            for (int q = 0; q < 4; ++q)
                rb[q] = (bk < K && gc + q < N) ? B[(size_t)bk * N + gc + q] : 0.0f;
        }
    };

    const int tr = tid >> 4, tc = tid & 15;  // 16 x 16 threads, each TM x TN outputs
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    load(0);
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int q = 0; q < 4; ++q) As[a_c + q][a_r] = ra[q];
        *reinterpret_cast<float4*>(&Bs[b_r][b_c]) = make_float4(rb[0], rb[1], rb[2], rb[3]);
        __syncthreads();
        if (k0 + BK < K) load(k0 + BK);
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
            // Rows tr*4..tr*4+3 and 64+tr*4..: two float4 reads each, conflict-free.
            float4 a0 = *reinterpret_cast<const float4*>(&As[k][tr * 4]);
            float4 a1 = *reinterpret_cast<const float4*>(&As[k][64 + tr * 4]);
            float4 b0 = *reinterpret_cast<const float4*>(&Bs[k][tc * 4]);
            float4 b1 = *reinterpret_cast<const float4*>(&Bs[k][64 + tc * 4]);
            a[0] = a0.x; a[1] = a0.y; a[2] = a0.z; a[3] = a0.w;
            a[4] = a1.x; a[5] = a1.y; a[6] = a1.z; a[7] = a1.w;
            b[0] = b0.x; b[1] = b0.y; b[2] = b0.z; b[3] = b0.w;
            b[4] = b1.x; b[5] = b1.y; b[6] = b1.z; b[7] = b1.w;
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = bm + (i < 4 ? tr * 4 + i : 64 + tr * 4 + (i - 4));
        if (r >= M) continue;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int c = bn + (j < 4 ? tc * 4 + j : 64 + tc * 4 + (j - 4));
            if (c < N) C[(size_t)r * N + c] = acc[i][j];
        }
    }
}
