// Single-precision math library: accurate functions (long PTX sequences with
// range reduction and slow paths) and the fast intrinsics. Built also with
// --use_fast_math, which rewrites the accurate calls.
extern "C" __global__ void transcendentals(int n, const float *x, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float r = sinf(v) + cosf(v) * expf(-v * v);
  r += logf(fabsf(v) + 1.0f) + powf(fabsf(v), 1.7f);
  r += erff(v) + tanhf(v) + atanf(v) + sqrtf(fabsf(v)) / (1.0f + v * v);
  r += exp2f(v) + log2f(fabsf(v) + 2.0f) + log10f(fabsf(v) + 3.0f) + sinhf(v * 0.1f) + acosf(v * 0.01f);
  float s, c;
  sincosf(v, &s, &c);
  out[i] = r + s * c + fmodf(v, 2.5f) + remainderf(v, 1.5f) + hypotf(v, 2.0f) + tgammaf(fabsf(v) + 1.0f);
}

extern "C" __global__ void fastIntrinsics(int n, const float *x, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float r = __sinf(v) + __cosf(v) + __expf(v) + __logf(fabsf(v) + 1.0f) + __powf(fabsf(v), 0.5f);
  r += __fdividef(v, 3.0f) + rsqrtf(fabsf(v) + 1.0f) + __frcp_rn(v + 4.0f) + __fsqrt_rn(fabsf(v));
  r += __fadd_rz(v, 1.0f) + __fmul_ru(v, 3.0f) + __fmaf_rd(v, v, 1.0f) + __tanf(v * 0.1f);
  out[i] = r + exp10f(v * 0.01f) + __saturatef(v) + fminf(v, 0.0f) + fdimf(v, 1.0f) + ldexpf(v, 3);
}

extern "C" __global__ void softmaxRow(int rows, int cols, const float *in, float *out) {
  int row = blockIdx.x;
  if (row >= rows) return;
  const float *src = in + (long long)row * cols;
  float maximum = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) maximum = fmaxf(maximum, src[c]);
  for (int o = 16; o > 0; o >>= 1) maximum = fmaxf(maximum, __shfl_xor_sync(0xffffffffu, maximum, o));
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(src[c] - maximum);
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[(long long)row * cols + c] = expf(src[c] - maximum) / sum;
}

extern "C" __global__ void geluAndFriends(int n, const float *x, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float gelu = 0.5f * v * (1.0f + erff(v * 0.70710678f));
  float silu = v / (1.0f + expf(-v));
  float softplus = log1pf(expf(v));
  out[i] = gelu + silu + softplus + (isnan(v) ? 1.0f : 0.0f) + (isinf(v) ? 2.0f : 0.0f) + signbit(v);
}
