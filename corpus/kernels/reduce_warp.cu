// Warp-level reductions with shuffles: no shared memory inside a warp, one
// shared slot per warp across the block, and a dot product built on them.
__device__ __forceinline__ float warpSum(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_down_sync(0xffffffffu, value, offset);
  return value;
}

__device__ __forceinline__ int warpMaxIndex(float value, int index) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    float otherValue = __shfl_xor_sync(0xffffffffu, value, offset);
    int otherIndex = __shfl_xor_sync(0xffffffffu, index, offset);
    if (otherValue > value || (otherValue == value && otherIndex < index)) {
      value = otherValue;
      index = otherIndex;
    }
  }
  return index;
}

extern "C" __global__ void dot_warp_shuffle(const float *a, const float *b, float *result, int n) {
  __shared__ float warpSums[32];
  float sum = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) sum += a[i] * b[i];
  sum = warpSum(sum);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warpSums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < (blockDim.x + 31) / 32 ? warpSums[lane] : 0.0f;
    sum = warpSum(sum);
    if (lane == 0) atomicAdd(result, sum);
  }
}

extern "C" __global__ void argmax_warp_per_row(const float *matrix, int *argmax, int rows, int cols) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  float best = __int_as_float(0xff800000);
  int bestIndex = 0;
  for (int c = lane; c < cols; c += 32) {
    float v = matrix[row * cols + c];
    if (v > best) best = v, bestIndex = c;
  }
  bestIndex = warpMaxIndex(best, bestIndex);
  if (lane == 0) argmax[row] = bestIndex;
}
