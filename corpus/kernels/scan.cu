// Prefix sums: a work-efficient (Blelloch) exclusive scan of one block in
// shared memory, and an inclusive warp scan with __shfl_up_sync.
extern "C" __global__ void scan_blelloch_block(const int *in, int *out, int *blockTotals, int n) {
  extern __shared__ int temp[]; // 2 * blockDim.x ints
  const int t = threadIdx.x;
  const int base = blockIdx.x * 2 * blockDim.x;
  const int m = 2 * blockDim.x;
  temp[2 * t] = base + 2 * t < n ? in[base + 2 * t] : 0;
  temp[2 * t + 1] = base + 2 * t + 1 < n ? in[base + 2 * t + 1] : 0;
  int offset = 1;
  for (int d = m >> 1; d > 0; d >>= 1) { // up-sweep
    __syncthreads();
    if (t < d) {
      int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
      temp[bi] += temp[ai];
    }
    offset <<= 1;
  }
  if (t == 0) {
    if (blockTotals) blockTotals[blockIdx.x] = temp[m - 1];
    temp[m - 1] = 0;
  }
  for (int d = 1; d < m; d <<= 1) { // down-sweep
    offset >>= 1;
    __syncthreads();
    if (t < d) {
      int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
      int swap = temp[ai];
      temp[ai] = temp[bi];
      temp[bi] += swap;
    }
  }
  __syncthreads();
  if (base + 2 * t < n) out[base + 2 * t] = temp[2 * t];
  if (base + 2 * t + 1 < n) out[base + 2 * t + 1] = temp[2 * t + 1];
}

extern "C" __global__ void scan_warp_inclusive(const float *in, float *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x & 31;
  float value = i < n ? in[i] : 0.0f;
  for (int offset = 1; offset < 32; offset <<= 1) {
    float up = __shfl_up_sync(0xffffffffu, value, offset);
    if (lane >= offset) value += up;
  }
  if (i < n) out[i] = value;
}
