// batched_gemm: C[b] = A[b] * B[b] for b < batch; each matrix row-major and stored
// contiguously (A: batch x M x K, B: batch x K x N, C: batch x M x N), f32.
// blockIdx.z selects the batch entry. 64x64 block tile, BK = 8, 256 threads with a 4x4
// register tile each, A transposed in shared memory, register prefetch of the next K tile,
// bounds-checked zero-filled loads and bounds-checked stores (any M, N, K).
#define BM 64
#define BN 64
#define BK 8
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS)
batched_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
             int batch, int M, int N, int K) {
    __shared__ __align__(16) float As[BK][BM];
    __shared__ __align__(16) float Bs[BK][BN];
    const int b = blockIdx.z;
    if (b >= batch) return;
    A += (size_t)b * M * K;
    B += (size_t)b * K * N;
    C += (size_t)b * M * N;

    const int tid = threadIdx.x;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const int a_r = tid >> 2, a_c = (tid & 3) * 2;    // A tile: 64 rows x 8 cols, 2 per thread
    const int b_r = tid >> 5, b_c = (tid & 31) * 2;   // B tile: 8 rows x 64 cols, 2 per thread

    float ra[2], rb[2];
    auto load = [&](int k0) {
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            const int gr = bm + a_r, gk = k0 + a_c + q;
            ra[q] = (gr < M && gk < K) ? A[(size_t)gr * K + gk] : 0.0f;
            const int bk = k0 + b_r, gc = bn + b_c + q;
            rb[q] = (bk < K && gc < N) ? B[(size_t)bk * N + gc] : 0.0f;
        }
    };

    const int tr = tid >> 4, tc = tid & 15;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

    load(0);
    for (int k0 = 0; k0 < K; k0 += BK) {
        As[a_c][a_r] = ra[0];
        As[a_c + 1][a_r] = ra[1];
        Bs[b_r][b_c] = rb[0];
        Bs[b_r][b_c + 1] = rb[1];
        __syncthreads();
        if (k0 + BK < K) load(k0 + BK);
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float4 a = *reinterpret_cast<const float4*>(&As[k][tr * 4]);
            float4 bv = *reinterpret_cast<const float4*>(&Bs[k][tc * 4]);
            const float av[4] = {a.x, a.y, a.z, a.w};
            const float bw[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bw[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = bm + tr * 4 + i;
        if (r >= M) continue;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int c = bn + tc * 4 + j;
            if (c < N) C[(size_t)r * N + c] = acc[i][j];
        }
    }
}
