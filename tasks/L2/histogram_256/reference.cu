// histogram_256: privatized per-block shared-memory histogram, 4-byte vectorized reads,
// one global atomicAdd per non-zero bin per block.
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS)
histogram_256(const unsigned char* __restrict__ data, unsigned* __restrict__ bins, int n) {
    __shared__ unsigned h[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) h[b] = 0u;
    __syncthreads();

    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    const int nw = n >> 2;
    const unsigned* words = reinterpret_cast<const unsigned*>(data);
    for (int i = tid; i < nw; i += stride) {
        unsigned w = words[i];
        atomicAdd(&h[w & 0xffu], 1u);
        atomicAdd(&h[(w >> 8) & 0xffu], 1u);
        atomicAdd(&h[(w >> 16) & 0xffu], 1u);
        atomicAdd(&h[w >> 24], 1u);
    }
    for (int i = (nw << 2) + tid; i < n; i += stride) atomicAdd(&h[data[i]], 1u);
    __syncthreads();

    for (int b = threadIdx.x; b < 256; b += blockDim.x) {
        unsigned c = h[b];
        if (c) atomicAdd(&bins[b], c);
    }
}
