// f16 scale + bias: y = x * scale + bias, half2-vectorized (one 32-bit load and store per
// thread, one HFMA2), scalar tail for odd n.
#include <cuda_fp16.h>

extern "C" __global__ void f16_scale_bias(const __half* __restrict__ x, __half* __restrict__ y,
                                          float scale, float bias, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int i = 2 * t;
    if (i + 1 < n) {
        const __half2 s2 = __float2half2_rn(scale);
        const __half2 b2 = __float2half2_rn(bias);
        __half2 v = reinterpret_cast<const __half2*>(x)[t];
        reinterpret_cast<__half2*>(y)[t] = __hfma2(v, s2, b2);
    } else if (i < n) {
        y[i] = __hfma(x[i], __float2half_rn(scale), __float2half_rn(bias));
    }
}
