// softmax_rows: one 256-thread block per row. Pass 1 is an online softmax: each thread keeps a
// running (max m, sum s of exp(x - m)) over its strided elements; the pairs are merged across
// the block. Pass 2 writes exp(x - m) / s. Two reads of the row (the second mostly hits cache),
// one write.
#define NEG_INF (-__int_as_float(0x7f800000))
#define THREADS 256

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    float mn = fmaxf(m, m2);
    // Guard the empty (-inf, 0) pairs so that -inf - -inf never produces NaN.
    float a = (m == NEG_INF) ? 0.0f : s * __expf(m - mn);
    float b = (m2 == NEG_INF) ? 0.0f : s2 * __expf(m2 - mn);
    m = mn;
    s = a + b;
}

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    __shared__ float sm_m[THREADS / 32], sm_s[THREADS / 32];
    const int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;

    float m = NEG_INF, s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = xr[c];
        if (v > m) {
            s = s * __expf(m - v) + 1.0f;  // exp(-inf) = 0 on the first element
            m = v;
        } else {
            s += __expf(v - m);
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        merge(m, s, m2, s2);
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) { sm_m[warp] = m; sm_s[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        const int nw = blockDim.x >> 5;
        m = lane < nw ? sm_m[lane] : NEG_INF;
        s = lane < nw ? sm_s[lane] : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            float m2 = __shfl_xor_sync(0xffffffffu, m, o);
            float s2 = __shfl_xor_sync(0xffffffffu, s, o);
            merge(m, s, m2, s2);
        }
        if (lane == 0) { sm_m[0] = m; sm_s[0] = s; }
    }
    __syncthreads();
    m = sm_m[0];
    const float inv = 1.0f / sm_s[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = __expf(xr[c] - m) * inv;
}
