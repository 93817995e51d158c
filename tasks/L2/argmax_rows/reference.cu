// argmax_rows: one 256-thread block per row; ties resolve to the smallest column index.
#define NEG_INF (-__int_as_float(0x7f800000))
#define THREADS 256

__device__ __forceinline__ void better(float& v, int& i, float v2, int i2) {
    if (v2 > v || (v2 == v && i2 < i)) { v = v2; i = i2; }
}

extern "C" __global__ void __launch_bounds__(THREADS)
argmax_rows(const float* __restrict__ x, int* __restrict__ idx, int rows, int cols) {
    __shared__ float sv[THREADS / 32];
    __shared__ int si[THREADS / 32];
    const int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;

    float v = NEG_INF;
    int i = 0x7fffffff;  // "no element": loses every comparison
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float t = xr[c];
        if (t > v) { v = t; i = c; }  // strict: keep the first maximum of this thread
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float v2 = __shfl_xor_sync(0xffffffffu, v, o);
        int i2 = __shfl_xor_sync(0xffffffffu, i, o);
        better(v, i, v2, i2);
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) { sv[warp] = v; si[warp] = i; }
    __syncthreads();
    if (warp == 0) {
        const int nw = blockDim.x >> 5;
        v = lane < nw ? sv[lane] : NEG_INF;
        i = lane < nw ? si[lane] : 0x7fffffff;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            float v2 = __shfl_xor_sync(0xffffffffu, v, o);
            int i2 = __shfl_xor_sync(0xffffffffu, i, o);
            better(v, i, v2, i2);
        }
        if (lane == 0) idx[row] = i;
    }
}
