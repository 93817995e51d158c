// Asynchronous global->shared copies (cp.async on sm_80+) through the
// pipeline primitives, double-buffered, feeding a running sum per block.
#include <cuda_pipeline.h>

extern "C" __global__ void pipelined_block_sum(const float4 *in, float *out, int chunks) {
  __shared__ float4 stage[2][128];
  float sum = 0.0f;
  const int t = threadIdx.x; // 128 threads
  const float4 *base = in + blockIdx.x * chunks * 128;
  __pipeline_memcpy_async(&stage[0][t], &base[t], sizeof(float4));
  __pipeline_commit();
  for (int c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) __pipeline_memcpy_async(&stage[(c + 1) & 1][t], &base[(c + 1) * 128 + t], sizeof(float4));
    __pipeline_commit();
    __pipeline_wait_prior(1);
    float4 v = stage[c & 1][t];
    sum += v.x + v.y + v.z + v.w;
    __syncthreads();
  }
  atomicAdd(&out[blockIdx.x], sum);
}
