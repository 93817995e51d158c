// tma_transpose_2d: out (N x M) = transpose of in (M x N), both row-major f32,
// moved by the copy engine (TMA) through two tensor maps the harness encodes.
// A 32x8 block per 32x32 tile: thread 0 loads the tile of `in` with
// cp.async.bulk.tensor onto an mbarrier; the block transposes it between two
// shared buffers, reading through the 128-byte swizzle of in_map; thread 0
// stores the result with cp.async.bulk.tensor. The maps clip the edges: a
// load reads zeros outside `in`, a store skips what lies outside `out`.

// CUtensorMap's size and alignment (cuda.h is not available to NVRTC).
struct alignas(64) TensorMap {
    unsigned long long opaque[16];
};

#define TILE 32
#define ROWS 8

extern "C" __global__ void __launch_bounds__(TILE * ROWS)
tma_transpose_2d(const float* __restrict__ in, float* __restrict__ out, const __grid_constant__ TensorMap in_map,
                 const __grid_constant__ TensorMap out_map, int M, int N) {
    // The 128-byte swizzle's pattern repeats every 1024 bytes: the tile starts on one.
    __shared__ alignas(1024) float tile[TILE * TILE];
    __shared__ alignas(128) float transposed[TILE * TILE];
    __shared__ alignas(8) unsigned long long barrier;
    const unsigned barrierAddress = (unsigned)__cvta_generic_to_shared(&barrier);
    const int column0 = blockIdx.x * TILE, row0 = blockIdx.y * TILE;
    const bool leader = threadIdx.x == 0 && threadIdx.y == 0;
    if (leader) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(barrierAddress) : "memory");
        // The mbarrier's initialization must be visible to the copy engine.
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (leader) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barrierAddress),
                     "r"(TILE * TILE * 4)
                     : "memory");
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
            "[%4];" ::"r"((unsigned)__cvta_generic_to_shared(tile)),
            "l"(&in_map), "r"(column0), "r"(row0), "r"(barrierAddress)
            : "memory");
    }
    asm volatile(
        "{\n"
        "  .reg .pred done;\n"
        "WAIT_%=:\n"
        "  mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
        "  @!done bra WAIT_%=;\n"
        "}" ::"r"(barrierAddress)
        : "memory");
    // transposed[r][c] = tile[c][r]; tile row c holds its 16-byte chunk k at k ^ (c % 8).
    const int c = threadIdx.x;
#pragma unroll
    for (int r = threadIdx.y; r < TILE; r += ROWS)
        transposed[r * TILE + c] = tile[c * TILE + ((((r >> 2) ^ (c & 7)) << 2) | (r & 3))];
    // Generic writes before the copy engine reads them: a proxy fence, then the barrier.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (leader) {
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(&out_map),
                     "r"(row0), "r"(column0), "r"((unsigned)__cvta_generic_to_shared(transposed))
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}
