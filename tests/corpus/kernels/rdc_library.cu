// Separate compilation (built with -rdc=true): externally visible device
// functions and variables that rdc_caller.cu declares extern.
__device__ float rdcScaleFactor = 2.5f;
__device__ int rdcCallCount;

__device__ float rdcTransform(float x, int mode) {
  atomicAdd(&rdcCallCount, 1);
  return mode ? x * rdcScaleFactor : x + rdcScaleFactor;
}

__device__ double rdcAccumulate(const double *values, int count, double seed) {
  double acc = seed;
  for (int i = 0; i < count; ++i) acc = fma(acc, 0.5, values[i]);
  return acc;
}

template <typename T> __device__ T rdcSquare(T v) { return v * v; }

extern "C" __global__ void rdcLibraryKernel(int n, float *data) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = rdcTransform(data[i], i & 1) + rdcSquare(data[i]) + rdcSquare((double)i);
}
