// copy_f32x4: vectorized copy. Thread t moves elements [4t, 4t+4) as one float4
// (ld.global.v4.f32 / st.global.v4.f32); the thread whose float4 straddles n copies the
// 1-3 remaining elements with scalar accesses.
extern "C" __global__ void copy_f32x4(const float* __restrict__ src, float* __restrict__ dst, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int i = 4 * t;
    if (i + 3 < n) {
        reinterpret_cast<float4*>(dst)[t] = reinterpret_cast<const float4*>(src)[t];
    } else {
        for (; i < n; ++i) dst[i] = src[i];
    }
}
