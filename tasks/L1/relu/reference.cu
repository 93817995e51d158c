// relu: y = max(x, 0) (f32). One coalesced element per thread (memory-bound).
extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
