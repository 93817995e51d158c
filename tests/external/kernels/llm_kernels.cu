// Kernels in the style of the public LLM-training CUDA code (llm.c and its
// kin), written here: 128-bit packed loads and stores with cache hints
// (`__ldcs`/`__stcs`, so `ld.global.cs.v4`), bf16 storage with f32 math,
// cooperative-groups warp reductions, an online softmax with shuffles,
// a tanh-approximated GELU, AdamW with `lerp`, and float atomics.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_bf16.h>

namespace cg = cooperative_groups;

using floatX = __nv_bfloat16;

// A 128-bit bundle of elements, loaded and stored in one instruction.
template <class ElementType> struct alignas(16) Packed128 {
  static constexpr int size = sizeof(int4) / sizeof(ElementType);
  ElementType payload[size];
  Packed128() = default;
  __device__ explicit Packed128(int4 bits) { memcpy(&payload, &bits, sizeof(bits)); }
  __device__ ElementType &operator[](int index) { return payload[index]; }
  __device__ const ElementType &operator[](int index) const { return payload[index]; }
  __device__ int4 bits() const {
    int4 bits;
    memcpy(&bits, &payload, sizeof(bits));
    return bits;
  }
};

using x128 = Packed128<floatX>;
using f128 = Packed128<float>;

template <class ElementType> __device__ Packed128<ElementType> load128cs(const ElementType *address) {
  return Packed128<ElementType>{__ldcs(reinterpret_cast<const int4 *>(address))};
}
template <class ElementType> __device__ void store128cs(ElementType *target, Packed128<ElementType> value) {
  __stcs(reinterpret_cast<int4 *>(target), value.bits());
}

__device__ float geluTanh(float x) {
  const float scale = 0.7978845608f; // sqrt(2 / pi)
  float cube = 0.044715f * x * x * x;
  return 0.5f * x * (1.0f + tanhf(scale * (x + cube)));
}

extern "C" __global__ void geluForward(floatX *out, const floatX *in, int n) {
  int index = (blockIdx.x * blockDim.x + threadIdx.x) * x128::size;
  if (index >= n) return;
  x128 packedIn = load128cs(in + index);
  x128 packedOut;
  for (int k = 0; k < x128::size; ++k) packedOut[k] = __float2bfloat16(geluTanh(__bfloat162float(packedIn[k])));
  store128cs(out + index, packedOut);
}

extern "C" __global__ void residualForward(floatX *out, const floatX *a, const floatX *b, int n) {
  int index = (blockIdx.x * blockDim.x + threadIdx.x) * x128::size;
  if (index >= n) return;
  x128 packedA = load128cs(a + index), packedB = load128cs(b + index), packedOut;
  for (int k = 0; k < x128::size; ++k)
    packedOut[k] = __float2bfloat16(__bfloat162float(packedA[k]) + __bfloat162float(packedB[k]));
  store128cs(out + index, packedOut);
}

// One warp per row: mean and reciprocal standard deviation by warp reductions.
extern "C" __global__ void layernormForward(floatX *out, float *mean, float *rstd, const floatX *in,
                                            const floatX *weight, const floatX *bias, int rows, int channels) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  int row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
  if (row >= rows) return;
  const floatX *x = in + static_cast<size_t>(row) * channels;
  float sum = 0.0f;
  for (int i = warp.thread_rank(); i < channels; i += warp.size()) sum += __bfloat162float(x[i]);
  float m = cg::reduce(warp, sum, cg::plus<float>{}) / channels;
  float squares = 0.0f;
  for (int i = warp.thread_rank(); i < channels; i += warp.size()) {
    float d = __bfloat162float(x[i]) - m;
    squares += d * d;
  }
  float s = rsqrtf(cg::reduce(warp, squares, cg::plus<float>{}) / channels + 1e-5f);
  floatX *o = out + static_cast<size_t>(row) * channels;
  for (int i = warp.thread_rank(); i < channels; i += warp.size()) {
    float normalized = (__bfloat162float(__ldcs(x + i)) - m) * s;
    __stcs(o + i, __float2bfloat16(normalized * __bfloat162float(weight[i]) + __bfloat162float(bias[i])));
  }
  if (warp.thread_rank() == 0) {
    __stcs(mean + row, m);
    __stcs(rstd + row, s);
  }
}

// Online softmax: running maximum and sum in one pass, merged across the warp.
extern "C" __global__ void softmaxForward(float *out, const float *in, int rows, int columns, float scale) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float *x = in + static_cast<size_t>(row) * columns;
  float maximum = -INFINITY, sum = 0.0f;
  for (int i = lane; i < columns; i += 32) {
    float v = x[i] * scale;
    float next = fmaxf(maximum, v);
    sum = sum * __expf(maximum - next) + __expf(v - next);
    maximum = next;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    float otherMax = __shfl_xor_sync(0xffffffffu, maximum, offset);
    float otherSum = __shfl_xor_sync(0xffffffffu, sum, offset);
    float next = fmaxf(maximum, otherMax);
    sum = sum * __expf(maximum - next) + otherSum * __expf(otherMax - next);
    maximum = next;
  }
  float inverse = 1.0f / sum;
  for (int i = lane; i < columns; i += 32) out[static_cast<size_t>(row) * columns + i] = __expf(x[i] * scale - maximum) * inverse;
}

__device__ float lerp(float start, float end, float weight) { return fmaf(weight, end, fmaf(-weight, start, start)); }

extern "C" __global__ void adamwUpdate(floatX *params, float *master, const floatX *grads, float *m, float *v,
                                       size_t n, float learningRate, float beta1, float beta2, float correction1,
                                       float correction2, float eps, float decay, unsigned int seed) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float grad = __bfloat162float(grads[i]);
  float mi = lerp(grad, m[i], beta1), vi = lerp(grad * grad, v[i], beta2);
  m[i] = mi;
  v[i] = vi;
  float param = master[i];
  param -= learningRate * (mi / correction1 / (sqrtf(vi / correction2) + eps) + decay * param);
  master[i] = param;
  // Stochastic rounding to bf16 with a cheap hash of the index and the seed.
  unsigned int noise = (static_cast<unsigned int>(i) ^ seed) * 2654435761u;
  unsigned int bits = __float_as_uint(param) + (noise & 0xffffu);
  params[i] = __float2bfloat16_rz(__uint_as_float(bits));
}

extern "C" __global__ void encoderBackward(float *wteGrad, const float *outGrad, const int *tokens, int count,
                                           int channels) {
  int index = blockIdx.x * blockDim.x + threadIdx.x;
  if (index >= count * channels) return;
  int token = tokens[index / channels];
  atomicAdd(wteGrad + static_cast<size_t>(token) * channels + index % channels, outGrad[index]);
}
