// layernorm: one 256-thread block per row; two-pass statistics (mean, then the mean of squared
// deviations, which avoids the cancellation of E[x^2] - E[x]^2), then y = (x-mean)*rstd*g + b.
// The row is re-read from cache for the second and third passes.
#define THREADS 256

__device__ __forceinline__ float block_sum(float v, float* red) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) red[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? red[lane] : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) red[32] = v;
    }
    __syncthreads();
    float r = red[32];
    __syncthreads();  // red may be reused right after
    return r;
}

extern "C" __global__ void __launch_bounds__(THREADS)
layernorm(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
          float* __restrict__ y, int rows, int cols) {
    __shared__ float red[33];
    const int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;

    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
    const float mean = block_sum(s, red) / (float)cols;

    float q = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float d = xr[c] - mean;
        q = fmaf(d, d, q);
    }
    const float var = block_sum(q, red) / (float)cols;
    const float rstd = rsqrtf(var + 1e-5f);

    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = fmaf((xr[c] - mean) * rstd, gamma[c], beta[c]);
}
