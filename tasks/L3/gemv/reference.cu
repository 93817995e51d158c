// gemv: y = A * x, A row-major M x K (f32). One warp per row, 8 rows per 256-thread block.
// Lanes stride over the row with float4 loads when K is a multiple of 4 (rows 16-byte
// aligned), scalar coalesced loads otherwise; x is re-read from cache by every warp.
// The warp's partial sums are combined with shuffles.
#define THREADS 256
#define ROWS_PER_BLOCK (THREADS / 32)

extern "C" __global__ void __launch_bounds__(THREADS)
gemv(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, int M, int K) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= M) return;
    const float* a = A + (size_t)row * K;

    float s = 0.0f;
    if ((K & 3) == 0) {
        const float4* a4 = reinterpret_cast<const float4*>(a);
        const float4* x4 = reinterpret_cast<const float4*>(x);
        const int k4 = K >> 2;
        for (int k = lane; k < k4; k += 32) {
            float4 av = a4[k], xv = x4[k];
            s = fmaf(av.x, xv.x, s);
            s = fmaf(av.y, xv.y, s);
            s = fmaf(av.z, xv.z, s);
            s = fmaf(av.w, xv.w, s);
        }
    } else {
        for (int k = lane; k < K; k += 32) s = fmaf(a[k], x[k], s);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) y[row] = s;
}
