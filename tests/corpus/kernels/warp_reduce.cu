// Warp and block reductions: shuffles (xor, down, up, idx), votes
// (ballot/any/all/activemask) and __syncthreads_count/or.
__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

extern "C" __global__ void blockSum(int n, const float *in, float *out) {
  __shared__ float partial[32];
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += in[i];
  v = warpSum(v);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x + 31) / 32 ? partial[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) atomicAdd(out, v);
  }
}

extern "C" __global__ void warpMaxDouble(int n, const double *in, double *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double v = i < n ? in[i] : -1.0e300;
  for (int offset = 16; offset > 0; offset >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if ((threadIdx.x & 31) == 0) out[i / 32] = v;
}

extern "C" __global__ void prefixScanWarp(int n, const int *in, int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  int lane = threadIdx.x & 31;
  for (int d = 1; d < 32; d <<= 1) {
    int t = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += t;
  }
  int total = __shfl_sync(0xffffffffu, v, 31);
  if (i < n) out[i] = v - total / 2;
}

extern "C" __global__ void voteStats(int n, const float *in, unsigned *ballots, int *flags) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  bool positive = i < n && in[i] > 0.0f;
  unsigned mask = __ballot_sync(0xffffffffu, positive);
  int any = __any_sync(0xffffffffu, positive);
  int all = __all_sync(0xffffffffu, positive);
  int count = __syncthreads_count(positive);
  int orAll = __syncthreads_or(positive);
  if (positive) {
    unsigned active = __activemask();
    int leader = __ffs(active) - 1;
    if ((int)(threadIdx.x & 31) == leader) ballots[i / 32] = mask ^ active;
    __syncwarp(active);
  }
  if (threadIdx.x == 0) flags[blockIdx.x] = any + 2 * all + 4 * count + 8 * orAll + __popc(mask);
}
