// A fully unrolled 1024-step loop: far more PTX lines than the test config's
// filters.max_ptx_lines, so the `size` stage drops it.
extern "C" __global__ void unrolled_chain(const float *in, float *out) {
  float x = in[threadIdx.x];
#pragma unroll
  for (int i = 0; i < 1024; ++i) x = x * in[(threadIdx.x + i) & 255] + 0.5f;
  out[threadIdx.x] = x;
}
