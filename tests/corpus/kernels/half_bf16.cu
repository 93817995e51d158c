// Half and bfloat16 arithmetic: scalar and paired (half2 / __nv_bfloat162)
// intrinsics, conversions and comparisons.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void half2Axpby(int n2, __half2 alpha, __half2 beta, const __half2 *x, __half2 *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2) {
    __half2 v = __hfma2(alpha, x[i], __hmul2(beta, y[i]));
    v = __hmax2(v, __float2half2_rn(0.0f));
    y[i] = __hadd2(v, __habs2(__hneg2(x[i])));
  }
}

extern "C" __global__ void halfToFloatSum(int n, const __half *in, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    __half h = in[i];
    float f = __half2float(h);
    __half c = __hgt(h, __float2half(1.5f)) ? hsqrt(h) : hexp(h);
    out[i] = f + __half2float(c) + (__hisnan(h) ? 1.0f : 0.0f);
  }
}

// bf16 paired arithmetic needs sm_80; older targets keep the other kernels.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
extern "C" __global__ void bf16Kernels(int n2, const __nv_bfloat162 *a, const __nv_bfloat162 *b, __nv_bfloat162 *c,
                                       float *sums) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2) {
    __nv_bfloat162 p = __hmul2(a[i], b[i]);
    __nv_bfloat162 q = __hfma2(a[i], b[i], p);
    c[i] = __hmax2(p, q);
    float2 f = __bfloat1622float2(q);
    sums[i] = f.x + f.y + __bfloat162float(__float2bfloat16_rn(f.x * 0.5f));
  }
}
#endif

extern "C" __global__ void mixedPrecisionDot(int n2, const __half2 *a, const __half2 *b, float *out) {
  float acc = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n2; i += gridDim.x * blockDim.x) {
    float2 p = __half22float2(__hmul2(a[i], b[i]));
    acc += p.x + p.y;
  }
  atomicAdd(out, acc);
}

extern "C" __global__ void halfAtomic(int n, const __half *in, __half *acc, __half2 *acc2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicAdd(acc, in[i]);
    atomicAdd(acc2, __halves2half2(in[i], __hneg(in[i])));
  }
}
