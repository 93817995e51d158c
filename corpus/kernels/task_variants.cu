// Other ways to write kernels of the task suite, with the names and
// parameters of the tasks' references (tasks/L1/vector_add, tasks/L1/relu):
// `ptxforge corpus build --score` checks and times them through the gate.
extern "C" __global__ void vector_add(const float *__restrict__ a, const float *__restrict__ b,
                                      float *__restrict__ c, int n) {
  // Grid-stride: correct for any grid, including the task's one thread per element.
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = __ldg(a + i) + __ldg(b + i);
}

extern "C" __global__ void relu(const float *__restrict__ x, float *__restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    y[i] = v > 0.0f ? v : 0.0f; // a select instead of fmaxf
  }
}
