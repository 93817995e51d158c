// NVRTC rejects this file (an undeclared identifier): the `nvrtc` stage drops
// every compile of it.
extern "C" __global__ void uses_undeclared(float *out) { out[threadIdx.x] = undeclared_value; }
