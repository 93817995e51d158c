// Ampere features (sm_80+): cp.async through the cuda_pipeline.h primitives,
// a double-buffered shared-memory pipeline, redux.sync through
// __reduce_*_sync, and cuda::memcpy_async with a block-scoped barrier.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda_pipeline.h>

namespace cg = cooperative_groups;

extern "C" __global__ void pipelinedScale(int n, float scale, const float4 *in, float4 *out) {
  __shared__ float4 stage[2][128];
  int tiles = (n + 127) / 128;
  int t = blockIdx.x;
  if (t < tiles && t * 128 + threadIdx.x < n) __pipeline_memcpy_async(&stage[0][threadIdx.x], &in[t * 128 + threadIdx.x], sizeof(float4));
  __pipeline_commit();
  for (int buf = 0; t < tiles; t += gridDim.x, buf ^= 1) {
    int next = t + gridDim.x;
    if (next < tiles && next * 128 + threadIdx.x < n)
      __pipeline_memcpy_async(&stage[buf ^ 1][threadIdx.x], &in[next * 128 + threadIdx.x], sizeof(float4));
    __pipeline_commit();
    __pipeline_wait_prior(1);
    __syncthreads();
    if (t * 128 + threadIdx.x < n) {
      float4 v = stage[buf][threadIdx.x];
      out[t * 128 + threadIdx.x] = make_float4(v.x * scale, v.y * scale, v.z * scale, v.w * scale);
    }
    __syncthreads();
  }
}

extern "C" __global__ void smallAsyncCopies(const int *in, int *out) {
  __shared__ int words[256];
  __shared__ alignas(8) long long pairs[64];
  __pipeline_memcpy_async(&words[threadIdx.x], &in[threadIdx.x], sizeof(int));
  if (threadIdx.x < 64) __pipeline_memcpy_async(&pairs[threadIdx.x], &in[512 + 2 * threadIdx.x], sizeof(long long), 4);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  out[threadIdx.x] = words[255 - threadIdx.x] + (int)pairs[threadIdx.x & 63];
}

extern "C" __global__ void warpReduxSync(int n, const unsigned *in, unsigned *sums, int *extrema, unsigned *bits) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned v = i < n ? in[i] : 0u;
  unsigned sum = __reduce_add_sync(0xffffffffu, v);
  int mx = __reduce_max_sync(0xffffffffu, (int)v);
  unsigned mn = __reduce_min_sync(0xffffffffu, v);
  unsigned anded = __reduce_and_sync(0xffffffffu, v);
  unsigned ored = __reduce_or_sync(0xffffffffu, v);
  unsigned xored = __reduce_xor_sync(0xffffffffu, v);
  if ((threadIdx.x & 31) == 0) {
    sums[i / 32] = sum;
    extrema[i / 16] = mx;
    extrema[i / 16 + 1] = (int)mn;
    bits[i / 32] = anded ^ ored ^ xored;
  }
}

extern "C" __global__ void barrierMemcpyAsync(int n, const float *in, float *out) {
  __shared__ float tile[256];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  int base = blockIdx.x * 256;
  if (base + 256 <= n) {
    cuda::memcpy_async(block, tile, in + base, sizeof(float) * 256, bar);
    bar.arrive_and_wait();
    out[base + threadIdx.x] = tile[threadIdx.x] * 2.0f;
  }
}

extern "C" __global__ void cgMemcpyAsync(int n, const double *in, double *out) {
  __shared__ double tile[128];
  auto block = cg::this_thread_block();
  int base = blockIdx.x * 128;
  if (base + 128 <= n) {
    cg::memcpy_async(block, tile, in + base, sizeof(double) * 128);
    cg::wait(block);
    out[base + threadIdx.x] = tile[127 - threadIdx.x];
  }
}
