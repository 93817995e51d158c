// Kernels in the style of NVIDIA's public CUDA samples, written here: a
// templated tree reduction finished by warp shuffles, a tiled matrix product,
// a padded shared-memory transpose, a 64-bin shared-memory histogram, a
// Hillis-Steele block scan, a bitonic sort step, clock64 timing and printf.
#include <cstdio>

template <unsigned int BlockSize, bool PowerOfTwo>
__device__ void reduceBlock(const float *in, float *out, unsigned int n) {
  extern __shared__ float partial[];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * BlockSize * 2 + threadIdx.x;
  unsigned int gridSize = BlockSize * 2 * gridDim.x;
  float sum = 0.0f;
  while (i < n) {
    sum += in[i];
    if (PowerOfTwo || i + BlockSize < n) sum += in[i + BlockSize];
    i += gridSize;
  }
  partial[tid] = sum;
  __syncthreads();
#pragma unroll
  for (unsigned int stride = BlockSize / 2; stride >= 32; stride /= 2) {
    if (tid < stride) partial[tid] = sum = sum + partial[tid + stride];
    __syncthreads();
  }
  if (tid < 32) {
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (tid == 0) out[blockIdx.x] = sum;
  }
}

extern "C" __global__ void reduce256(const float *in, float *out, unsigned int n) { reduceBlock<256, true>(in, out, n); }
extern "C" __global__ void reduce128Ragged(const float *in, float *out, unsigned int n) {
  reduceBlock<128, false>(in, out, n);
}

constexpr int kTile = 16;

extern "C" __global__ void matrixMul(float *c, const float *a, const float *b, int wa, int wb) {
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile];
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  float sum = 0.0f;
  for (int aBegin = wa * kTile * by, bBegin = kTile * bx; aBegin < wa * kTile * by + wa;
       aBegin += kTile, bBegin += kTile * wb) {
    as[ty][tx] = a[aBegin + wa * ty + tx];
    bs[ty][tx] = b[bBegin + wb * ty + tx];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) sum += as[ty][k] * bs[k][tx];
    __syncthreads();
  }
  c[wb * kTile * by + kTile * bx + wb * ty + tx] = sum;
}

extern "C" __global__ void transposePadded(float *out, const float *in, int width, int height) {
  __shared__ float tile[32][33]; // the extra column keeps the column reads conflict-free
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (x < height && y + j < width) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

extern "C" __global__ void histogram64(unsigned int *bins, const unsigned char *data, int n) {
  __shared__ unsigned int local[64];
  if (threadIdx.x < 64) local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[data[i] >> 2], 1u);
  __syncthreads();
  if (threadIdx.x < 64) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

extern "C" __global__ void scanBlock(int *out, const int *in, int n) {
  extern __shared__ int buffer[];
  int tid = threadIdx.x;
  int ping = 0;
  buffer[tid] = tid < n ? in[tid] : 0;
  __syncthreads();
  for (int offset = 1; offset < blockDim.x; offset *= 2) {
    int pong = 1 - ping;
    int value = buffer[ping * blockDim.x + tid];
    if (tid >= offset) value += buffer[ping * blockDim.x + tid - offset];
    buffer[pong * blockDim.x + tid] = value;
    ping = pong;
    __syncthreads();
  }
  if (tid < n) out[tid] = buffer[ping * blockDim.x + tid];
}

extern "C" __global__ void bitonicStep(unsigned int *keys, int j, int k) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int partner = i ^ j;
  if (partner > i) {
    bool ascending = (i & k) == 0;
    unsigned int a = keys[i], b = keys[partner];
    if ((a > b) == ascending) {
      keys[i] = b;
      keys[partner] = a;
    }
  }
}

extern "C" __global__ void timedKernel(long long *cycles, float *out, int iterations) {
  long long start = clock64();
  float x = threadIdx.x;
  for (int i = 0; i < iterations; ++i) x = x * 0.999f + 1.0f;
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) {
    cycles[blockIdx.x] = clock64() - start;
    if (blockIdx.x == 0) printf("block %d took %lld cycles, warp mask %08x\n", blockIdx.x, cycles[0], __activemask());
  }
}
