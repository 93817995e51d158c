// Row-wise normalisations, one block per row: a numerically stable softmax
// (max, then sum of exponentials) and a layer norm with Welford's update.
__device__ float blockReduceMax(float v, float *shared) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = v;
  __syncthreads();
  v = threadIdx.x < (blockDim.x >> 5) ? shared[threadIdx.x] : __int_as_float(0xff800000);
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  return v;
}

__device__ float blockReduceSum(float v, float *shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = v;
  __syncthreads();
  v = threadIdx.x < (blockDim.x >> 5) ? shared[threadIdx.x] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  return v;
}

extern "C" __global__ void softmax_block_row(const float *in, float *out, int cols) {
  __shared__ float shared[32];
  const float *x = in + blockIdx.x * cols;
  float *y = out + blockIdx.x * cols;
  float m = __int_as_float(0xff800000);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, x[c]);
  m = blockReduceMax(m, shared);
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(x[c] - m);
  s = blockReduceSum(s, shared);
  const float inv = 1.0f / s;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[c] = __expf(x[c] - m) * inv;
}

extern "C" __global__ void layernorm_welford(const float *in, const float *gamma, const float *beta, float *out,
                                             int cols, float epsilon) {
  __shared__ float meanShared, rstdShared;
  const float *x = in + blockIdx.x * cols;
  if (threadIdx.x == 0) {
    // One thread, Welford's running mean and M2: exact in one pass.
    float mean = 0.0f, m2 = 0.0f;
    for (int c = 0; c < cols; ++c) {
      float delta = x[c] - mean;
      mean += delta / (c + 1);
      m2 += delta * (x[c] - mean);
    }
    meanShared = mean;
    rstdShared = rsqrtf(m2 / cols + epsilon);
  }
  __syncthreads();
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    out[blockIdx.x * cols + c] = (x[c] - meanShared) * rstdShared * gamma[c] + beta[c];
}
