// Valid CUDA and lint-clean PTX that the PTX compiler refuses: 80 KB of
// static shared memory is over the 48 KB a kernel may declare statically.
extern "C" __global__ void too_much_static_shared(const float *in, float *out) {
  __shared__ float big[20480];
  for (int i = threadIdx.x; i < 20480; i += blockDim.x) big[i] = in[i];
  __syncthreads();
  out[threadIdx.x] = big[20479 - threadIdx.x];
}
