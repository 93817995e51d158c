// Conversions through the CUDA math intrinsics, so that nvcc writes cvt in
// many of its forms: float ↔ integer in every rounding mode, f16 and bf16
// (scalar and pairs), tf32, f64 → f32 with directed rounding, saturation, and
// (sm_89 and later) fp8 pairs, (sm_90 and later) bf16 ↔ integer and f16.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
#include <cuda_fp8.h>
#endif
#include <mma.h>

extern "C" __global__ void floatToInteger(int *i32, long long *i64, unsigned int *u32, const float *in) {
  int t = threadIdx.x;
  float x = in[t];
  i32[4 * t + 0] = __float2int_rn(x);
  i32[4 * t + 1] = __float2int_rz(x);
  i32[4 * t + 2] = __float2int_ru(x);
  i32[4 * t + 3] = __float2int_rd(x);
  i64[t] = __float2ll_rz(x);
  u32[t] = __float2uint_rn(x);
}

extern "C" __global__ void integerToFloat(float *f, double *d, const int *i32, const unsigned long long *u64) {
  int t = threadIdx.x;
  f[4 * t + 0] = __int2float_rn(i32[t]);
  f[4 * t + 1] = __int2float_rz(i32[t]);
  f[4 * t + 2] = __ull2float_ru(u64[t]);
  f[4 * t + 3] = __ull2float_rd(u64[t]);
  d[t] = __ll2double_rn(static_cast<long long>(u64[t]));
}

extern "C" __global__ void doubleToFloat(float *f, const double *d) {
  int t = threadIdx.x;
  f[3 * t + 0] = __double2float_rn(d[t]);
  f[3 * t + 1] = __double2float_ru(d[t]);
  f[3 * t + 2] = __saturatef(__double2float_rz(d[t]));
}

extern "C" __global__ void halfConversions(__half *h, __half2 *h2, float *f, short *s, const float *in) {
  int t = threadIdx.x;
  float x = in[t];
  h[2 * t + 0] = __float2half_rn(x);
  h[2 * t + 1] = __float2half_rz(x);
  h2[t] = __floats2half2_rn(x, -x);
  f[t] = __half2float(h[2 * t]) + __low2float(h2[t]);
  s[t] = __half2short_rn(h[2 * t + 1]);
}

extern "C" __global__ void bf16Conversions(__nv_bfloat16 *b, __nv_bfloat162 *b2, float *f, int *i,
                                           const float *in) {
  int t = threadIdx.x;
  float x = in[t];
  b[2 * t + 0] = __float2bfloat16_rn(x);
  b[2 * t + 1] = __float2bfloat16_rz(x);
  b2[t] = __floats2bfloat162_rn(x, 2.0f * x);
  f[t] = __bfloat162float(b[2 * t]) + __high2float(b2[t]);
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  i[t] = __bfloat162int_rn(b[2 * t + 1]);
  b[2 * t + 1] = __int2bfloat16_rn(i[t] + 1);
  b[2 * t] = __float2bfloat16(__half2float(__float2half_rn(x)));
#else
  i[t] = static_cast<int>(__bfloat162float(b[2 * t + 1]));
#endif
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
extern "C" __global__ void tf32Round(float *out, const float *in) {
  int t = threadIdx.x;
  out[t] = nvcuda::wmma::__float_to_tf32(in[t]);
}
#endif

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
extern "C" __global__ void fp8Pairs(__nv_fp8x2_storage_t *e4m3, __half2 *back, const float2 *in) {
  int t = threadIdx.x;
  e4m3[t] = __nv_cvt_float2_to_fp8x2(in[t], __NV_SATFINITE, __NV_E4M3);
  __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(e4m3[t], __NV_E4M3);
  back[t] = __half2(raw);
}
#endif
