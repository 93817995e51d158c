// Module-scope data: __constant__ arrays with initializers, __device__
// globals with initializers (scalars, arrays, structs, pointers to other
// globals), volatile accesses and string literals.
#include <cstdint>

__constant__ float filterTaps[9] = {0.0625f, 0.125f, 0.0625f, 0.125f, 0.25f, 0.125f, 0.0625f, 0.125f, 0.0625f};
__constant__ double polyCoefficients[4] = {1.0, -0.5, 0.041666666666666664, -0.001388888888888889};
__constant__ int8_t smallTable[6] = {-1, 2, -3, 4, -5, 6};
__constant__ uint16_t shortTable[3] = {65535, 1, 256};
__constant__ char greeting[] = "hello, ptx";
__constant__ int uninitializedConstant[32];

struct Config {
  int width;
  float scale;
  unsigned long long seed;
  short offsets[3];
};

__device__ Config deviceConfig = {640, 1.5f, 0x9e3779b97f4a7c15ull, {-1, 0, 1}};
__device__ int deviceCounter = 7;
__device__ float deviceScratch[128];
__device__ int deviceA[4] = {1, 2, 3, 4};
__device__ int deviceB = 42;
__device__ int *devicePointers[3] = {deviceA, &deviceB, deviceA + 2};
__device__ const char *deviceMessage = "a message in global memory";
__device__ volatile int volatileFlag;

extern "C" __global__ void convolve3x3(int width, int height, const float *in, float *out) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x <= 0 || y <= 0 || x >= width - 1 || y >= height - 1) return;
  float acc = 0.0f;
#pragma unroll
  for (int dy = -1; dy <= 1; ++dy)
#pragma unroll
    for (int dx = -1; dx <= 1; ++dx) acc += filterTaps[(dy + 1) * 3 + dx + 1] * in[(y + dy) * width + x + dx];
  out[y * width + x] = acc * deviceConfig.scale;
}

extern "C" __global__ void usesGlobals(int n, const double *x, double *out, int *counts) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = x[i], p = polyCoefficients[3];
  for (int k = 2; k >= 0; --k) p = p * v * v + polyCoefficients[k];
  out[i] = p + smallTable[i % 6] + shortTable[i % 3] + greeting[i % 10] + uninitializedConstant[i & 31];
  deviceScratch[i & 127] = (float)p;
  counts[i] = *devicePointers[i % 3] + deviceConfig.offsets[i % 3] + deviceMessage[i % 8] + atomicAdd(&deviceCounter, 1);
  if (i == 0) {
    volatileFlag = 1;
    while (volatileFlag == 0) {
    }
  }
}
