// Half and bfloat16: packed __half2 arithmetic, conversions to and from
// float, and a bf16 GELU computed in float.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void hadd2_scale(const __half2 *a, const __half2 *b, __half2 *out, __half scale, int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2) out[i] = __hmul2(__hadd2(a[i], b[i]), __half2half2(scale));
}

extern "C" __global__ void half_to_float_sum(const __half *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __half2float(in[i]) + 1.0f;
}

extern "C" __global__ void gelu_bf16(const __nv_bfloat16 *in, __nv_bfloat16 *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float x = __bfloat162float(in[i]);
    float y = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    out[i] = __float2bfloat16(y);
  }
}

extern "C" __global__ void bf16x2_fma(const __nv_bfloat162 *a, const __nv_bfloat162 *b, __nv_bfloat162 *c, int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2) c[i] = __hfma2(a[i], b[i], c[i]);
}
