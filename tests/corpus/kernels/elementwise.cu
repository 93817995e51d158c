// Elementwise f32 kernels: scalar saxpy, float4 vector loads/stores,
// grid-stride loops and read-only (__ldg) loads.
#include <cstdint>

extern "C" __global__ void saxpy(int n, float a, const float *__restrict__ x, float *__restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void saxpyGridStride(int64_t n, float a, const float *__restrict__ x, float *__restrict__ y) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = fmaf(a, __ldg(&x[i]), y[i]);
}

extern "C" __global__ void addFloat4(int n4, const float4 *__restrict__ a, const float4 *__restrict__ b,
                                     float4 *__restrict__ out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  float4 va = a[i];
  float4 vb = __ldg(&b[i]);
  out[i] = make_float4(va.x + vb.x, va.y * vb.y, va.z - vb.z, fmaxf(va.w, vb.w));
}

extern "C" __global__ void reluScaleClamp(int n, float scale, const float *in, float *out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float v = in[i] * scale;
    v = v > 0.0f ? v : 0.01f * v;
    out[i] = __saturatef(v) + copysignf(fabsf(v), -v);
  }
}

extern "C" __global__ void castAndRound(int n, const float *in, int *asInt, unsigned *asUint, double *asDouble) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = in[i];
    asInt[i] = __float2int_rn(v) + (int)truncf(v) + (int)floorf(v) + (int)ceilf(v);
    asUint[i] = __float2uint_rz(v) ^ __float_as_uint(v);
    asDouble[i] = (double)v + rintf(v);
  }
}
