// sum_reduction: out[0] += sum(x). One kernel, no scratch memory: grid-stride float4 loads,
// per-thread accumulation, warp shuffles, shared memory across warps, one atomicAdd per block.
#define THREADS 256

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS)
sum_reduction(const float* __restrict__ x, float* __restrict__ out, int n) {
    __shared__ float warp_part[THREADS / 32];
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;

    float s = 0.0f;
    const int n4 = n >> 2;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (int i = tid; i < n4; i += stride) {
        float4 v = x4[i];
        s += (v.x + v.y) + (v.z + v.w);
    }
    for (int i = (n4 << 2) + tid; i < n; i += stride) s += x[i];

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
