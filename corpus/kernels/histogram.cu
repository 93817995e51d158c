// Histograms with atomics: privatized bins in shared memory merged into the
// global histogram, and a direct global-atomic version for comparison.
extern "C" __global__ void histogram_shared_atomic(const unsigned char *data, unsigned int *bins, int n) {
  __shared__ unsigned int local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (local[b]) atomicAdd(&bins[b], local[b]);
}

extern "C" __global__ void histogram_global_atomic(const int *keys, int *bins, int numBins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int key = keys[i];
    int bin = ((key % numBins) + numBins) % numBins;
    atomicAdd(&bins[bin], 1);
  }
}

extern "C" __global__ void min_max_atomic(const int *values, int *minimum, int *maximum, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicMin(minimum, values[i]);
    atomicMax(maximum, values[i]);
  }
}
