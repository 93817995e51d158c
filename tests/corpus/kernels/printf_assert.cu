// Device printf (vprintf with a packed argument buffer and global string
// constants), assert (__assertfail) and __trap.
#include <cassert>
#include <cstdio>

extern "C" __global__ void printValues(int n, const float *values, const double *weights) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    printf("thread %d block %u: value=%f weight=%.3e hex=%08x\n", i, blockIdx.x, values[i], weights[i],
           __float_as_uint(values[i]));
    if (values[i] < 0.0f) printf("negative at %lld (\"%s\")\t%c\n", (long long)i, "tab\\quote", 'q');
  }
}

extern "C" __global__ void checkedDivide(int n, const int *num, const int *den, int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  assert(den[i] != 0 && "denominator must be non-zero");
  if (num[i] == -2147483647 - 1) __trap();
  out[i] = num[i] / den[i];
}
