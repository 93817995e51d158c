// Block reductions in shared memory: a tree with a barrier per level, then
// one atomic per block. The block size is a template parameter.
template <int BLOCK> __device__ void blockSum(float *shared, float value) {
  const int t = threadIdx.x;
  shared[t] = value;
  __syncthreads();
#pragma unroll
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) shared[t] += shared[t + stride];
    __syncthreads();
  }
}

template <int BLOCK> __global__ void reduce_sum_tree(const float *in, float *total, int n) {
  __shared__ float partial[BLOCK];
  float sum = 0.0f;
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) sum += in[i];
  blockSum<BLOCK>(partial, sum);
  if (threadIdx.x == 0) atomicAdd(total, partial[0]);
}

template __global__ void reduce_sum_tree<128>(const float *, float *, int);
template __global__ void reduce_sum_tree<256>(const float *, float *, int);

extern "C" __global__ void reduce_max_dynamic(const float *in, float *blockMax, int n) {
  extern __shared__ float scratch[];
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  scratch[t] = i < n ? in[i] : __int_as_float(0xff800000);
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) scratch[t] = fmaxf(scratch[t], scratch[t + stride]);
    __syncthreads();
  }
  if (t == 0) blockMax[blockIdx.x] = scratch[0];
}
