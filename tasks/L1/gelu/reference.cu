// gelu (tanh approximation of GELU), f32, one element per thread (memory-bound).
// Uses the accurate tanhf; see task.toml for the tolerance this implies.
extern "C" __global__ void gelu(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float k0 = 0.7978845608028654f;  // sqrt(2/pi)
        const float k1 = 0.044715f;
        float v = x[i];
        float u = k0 * fmaf(k1 * v, v * v, v);
        y[i] = 0.5f * v * (1.0f + tanhf(u));
    }
}
