// Separate compilation (built with -rdc=true): calls into functions and reads
// variables defined in another translation unit (.extern declarations).
extern __device__ float rdcScaleFactor;
extern __device__ int rdcCallCount;
__device__ float rdcTransform(float x, int mode);
__device__ double rdcAccumulate(const double *values, int count, double seed);

__device__ __noinline__ static float localHelper(float x) { return x * 0.5f + rdcScaleFactor; }

extern "C" __global__ void rdcCallerKernel(int n, float *data, const double *values, double *result) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = rdcTransform(localHelper(data[i]), i & 1);
  if (i == 0) *result = rdcAccumulate(values, n < 8 ? n : 8, (double)rdcCallCount);
}
