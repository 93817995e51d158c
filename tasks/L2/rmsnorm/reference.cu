// rmsnorm: one 256-thread block per row; sum of squares -> warp shuffles -> shared memory,
// then y = x * rsqrt(mean(x^2) + eps) * gamma (the row is re-read from cache).
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS)
rmsnorm(const float* __restrict__ x, const float* __restrict__ gamma, float* __restrict__ y,
        int rows, int cols) {
    __shared__ float red[THREADS / 32];
    __shared__ float rstd_s;
    const int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;

    float q = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = xr[c];
        q = fmaf(v, v, q);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) red[warp] = q;
    __syncthreads();
    if (warp == 0) {
        q = lane < (int)(blockDim.x >> 5) ? red[lane] : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
        if (lane == 0) rstd_s = rsqrtf(q / (float)cols + 1e-5f);
    }
    __syncthreads();
    const float rstd = rstd_s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = xr[c] * rstd * gamma[c];
}
