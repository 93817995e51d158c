// Stencils: a 1-D seven-point stencil with a shared-memory halo, and a 2-D
// five-point Jacobi step reading neighbours straight from global memory.
#define RADIUS 3

__constant__ float kWeights[2 * RADIUS + 1] = {0.05f, 0.1f, 0.2f, 0.3f, 0.2f, 0.1f, 0.05f};

extern "C" __global__ void stencil_1d_halo(const float *in, float *out, int n) {
  extern __shared__ float window[]; // blockDim.x + 2 * RADIUS
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  const int l = threadIdx.x + RADIUS;
  window[l] = g < n ? in[g] : 0.0f;
  if (threadIdx.x < RADIUS) {
    int left = g - RADIUS, right = g + blockDim.x;
    window[l - RADIUS] = left >= 0 ? in[left] : 0.0f;
    window[l + blockDim.x] = right < n ? in[right] : 0.0f;
  }
  __syncthreads();
  if (g >= n) return;
  float sum = 0.0f;
#pragma unroll
  for (int k = -RADIUS; k <= RADIUS; ++k) sum += kWeights[k + RADIUS] * window[l + k];
  out[g] = sum;
}

extern "C" __global__ void jacobi_2d_5pt(const float *__restrict__ in, float *__restrict__ out, int width, int height) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x <= 0 || y <= 0 || x >= width - 1 || y >= height - 1) return;
  const int i = y * width + x;
  out[i] = 0.25f * (__ldg(&in[i - 1]) + __ldg(&in[i + 1]) + __ldg(&in[i - width]) + __ldg(&in[i + width]));
}
