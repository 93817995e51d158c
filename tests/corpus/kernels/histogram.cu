// Histograms: shared-memory atomics in a static table, and a variable-size
// histogram in dynamic shared memory (extern __shared__).
extern "C" __global__ void histogram256(int n, const unsigned char *data, unsigned *bins) {
  __shared__ unsigned local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (local[b]) atomicAdd(&bins[b], local[b]);
}

extern "C" __global__ void histogramDynamic(int n, int binCount, float lo, float hi, const float *data,
                                            unsigned long long *bins) {
  extern __shared__ unsigned long long sharedBins[];
  for (int b = threadIdx.x; b < binCount; b += blockDim.x) sharedBins[b] = 0;
  __syncthreads();
  float scale = binCount / (hi - lo);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int b = (int)((data[i] - lo) * scale);
    b = min(max(b, 0), binCount - 1);
    atomicAdd(&sharedBins[b], 1ull);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < binCount; b += blockDim.x) atomicAdd(&bins[b], sharedBins[b]);
}

// Two dynamic shared arrays carved out of one allocation.
extern "C" __global__ void transposeDynamicShared(int rows, int cols, const float *in, float *out) {
  extern __shared__ float buffer[];
  float *tile = buffer;
  int *rowIndex = reinterpret_cast<int *>(buffer + blockDim.x * (blockDim.y + 1));
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < cols && y < rows) tile[threadIdx.y * (blockDim.x + 1) + threadIdx.x] = in[y * cols + x];
  if (threadIdx.x == 0) rowIndex[threadIdx.y] = y;
  __syncthreads();
  int ox = blockIdx.y * blockDim.y + threadIdx.x, oy = blockIdx.x * blockDim.x + threadIdx.y;
  if (ox < rows && oy < cols && threadIdx.x < blockDim.y && threadIdx.y < blockDim.x)
    out[oy * rows + ox] = tile[threadIdx.x * (blockDim.x + 1) + threadIdx.y] + 0.0f * rowIndex[threadIdx.x];
}
