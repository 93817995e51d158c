// inclusive_scan_i32: single-block, single-pass inclusive prefix sum over any n.
// Per tile of T*ITEMS elements: coalesced loads (prefetched into registers one tile ahead)
// -> shared memory (padded: conflict-free serial reads) -> each thread scans ITEMS consecutive
// values -> warp inclusive scan (shuffles) -> scan of the warp totals -> add the carry of the
// previous tiles -> coalesced stores. Arithmetic is unsigned (wrap-around, no UB).
#define T 512
#define ITEMS 8
#define TILE (T * ITEMS)
#define PAD(i) ((i) + ((i) >> 5))

extern "C" __global__ void __launch_bounds__(T)
inclusive_scan_i32(const int* __restrict__ x, int* __restrict__ y, int n) {
    __shared__ unsigned sm[TILE + TILE / 32];
    __shared__ unsigned wsum[T / 32];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

    unsigned r[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        int g = k * T + tid;
        r[k] = g < n ? (unsigned)x[g] : 0u;
    }

    unsigned carry = 0;
    for (int base = 0; base < n; base += TILE) {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) sm[PAD(k * T + tid)] = r[k];
        __syncthreads();

        // Prefetch the next tile while this one is scanned.
        const int next = base + TILE;
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            int g = next + k * T + tid;
            r[k] = g < n ? (unsigned)x[g] : 0u;
        }

        unsigned v[ITEMS];
        unsigned acc = 0;
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            acc += sm[PAD(tid * ITEMS + k)];
            v[k] = acc;
        }
        unsigned s = acc;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            unsigned t = __shfl_up_sync(0xffffffffu, s, o);
            if (lane >= o) s += t;
        }
        if (lane == 31) wsum[warp] = s;
        __syncthreads();
        if (warp == 0) {
            unsigned w = lane < T / 32 ? wsum[lane] : 0u;
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                unsigned t = __shfl_up_sync(0xffffffffu, w, o);
                if (lane >= o) w += t;
            }
            if (lane < T / 32) wsum[lane] = w;
        }
        __syncthreads();
        const unsigned excl = carry + (warp > 0 ? wsum[warp - 1] : 0u) + (s - acc);
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) sm[PAD(tid * ITEMS + k)] = v[k] + excl;
        carry += wsum[T / 32 - 1];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            int g = base + k * T + tid;
            if (g < n) y[g] = (int)sm[PAD(k * T + tid)];
        }
        __syncthreads();  // sm and wsum are overwritten by the next tile
    }
}
