// Warp votes: stream compaction with __ballot_sync and __popc (each warp
// reserves its slots with one atomic), and an all/any predicate count.
extern "C" __global__ void compact_positive(const float *in, float *out, int *count, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const bool keep = i < n && in[i] > 0.0f;
  const unsigned mask = __ballot_sync(0xffffffffu, keep);
  int base = 0;
  if (lane == 0 && mask) base = atomicAdd(count, __popc(mask));
  base = __shfl_sync(0xffffffffu, base, 0);
  if (keep) out[base + __popc(mask & ((1u << lane) - 1))] = in[i];
}

extern "C" __global__ void warp_vote_flags(const int *values, int *allPositive, int *anyZero, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = i < n ? values[i] : 1;
  const int all = __all_sync(0xffffffffu, v > 0);
  const int any = __any_sync(0xffffffffu, v == 0);
  if ((threadIdx.x & 31) == 0) {
    atomicAnd(allPositive, all);
    atomicOr(anyZero, any);
  }
}
