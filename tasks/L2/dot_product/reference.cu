// dot_product: out[0] += x . y. One kernel: grid-stride float4 loads, fma per thread,
// warp shuffles, shared memory across warps, one atomicAdd per block.
#define THREADS 256

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS)
dot_product(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, int n) {
    __shared__ float warp_part[THREADS / 32];
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;

    float s = 0.0f;
    const int n4 = n >> 2;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* y4 = reinterpret_cast<const float4*>(y);
    for (int i = tid; i < n4; i += stride) {
        float4 a = x4[i], b = y4[i];
        s = fmaf(a.x, b.x, s);
        s = fmaf(a.y, b.y, s);
        s = fmaf(a.z, b.z, s);
        s = fmaf(a.w, b.w, s);
    }
    for (int i = (n4 << 2) + tid; i < n; i += stride) s = fmaf(x[i], y[i], s);

    s = warp_sum(s);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_part[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < (int)(blockDim.x >> 5) ? warp_part[lane] : 0.0f;
        s = warp_sum(s);
        if (lane == 0) atomicAdd(out, s);
    }
}
