// Templates: kernels instantiated over types and functors (mangled names),
// a device lambda, and a templated __noinline__ helper (a .weak function
// with -rdc=true).
#include <cstdint>
#include <cuda_fp16.h>

struct Plus {
  template <typename T> __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
  template <typename T> __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};

template <typename T, typename Op, int ItemsPerThread>
__global__ void reduceItems(int n, const T *in, T *out, T identity) {
  Op op;
  T acc = identity;
  int base = (blockIdx.x * blockDim.x + threadIdx.x) * ItemsPerThread;
#pragma unroll
  for (int k = 0; k < ItemsPerThread; ++k)
    if (base + k < n) acc = op(acc, in[base + k]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

template <typename T> __device__ __noinline__ T clampTo(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }

template <typename TIn, typename TOut> __global__ void convertClamp(int n, const TIn *in, TOut *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<TOut>(clampTo<TIn>(in[i], TIn(-100), TIn(100)));
}

template <typename F> __global__ void applyLambda(int n, float *data, F f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = f(data[i], i);
}

template __global__ void reduceItems<float, Plus, 4>(int, const float *, float *, float);
template __global__ void reduceItems<int64_t, Max, 8>(int, const int64_t *, int64_t *, int64_t);
template __global__ void reduceItems<double, Plus, 2>(int, const double *, double *, double);
template __global__ void convertClamp<float, int8_t>(int, const float *, int8_t *);
template __global__ void convertClamp<double, __half>(int, const double *, __half *);
template __global__ void convertClamp<int, uint16_t>(int, const int *, uint16_t *);

struct Affine {
  float scale, shift;
  __device__ float operator()(float x, int i) const { return x * scale + shift + (i & 1); }
};
template __global__ void applyLambda<Affine>(int, float *, Affine);

namespace corpus::detail {
template <unsigned Bits> struct Mask {
  static constexpr unsigned value = (1u << Bits) - 1;
};
} // namespace corpus::detail

template <unsigned Bits> __global__ void maskBits(int n, unsigned *data) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] &= corpus::detail::Mask<Bits>::value;
}
template __global__ void maskBits<7>(int, unsigned *);
template __global__ void maskBits<13>(int, unsigned *);
