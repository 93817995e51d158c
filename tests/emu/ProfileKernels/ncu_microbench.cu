// Access patterns whose Nsight Compute counts the emulator's profile rules
// (src/emu/Profile.h) are compared with: one warp, one block, one load of
// the pattern per kernel. Build and profile on a GPU machine:
//   nvcc -arch=sm_90 -o mb ncu_microbench.cu
//   ncu --clock-control none --csv --metrics \
//     l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,\
//     l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,\
//     l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum ./mb
// (scripts/gpu-ncu-microbench.sh)
#include <cstdio>
#include <cuda_runtime.h>

// The tile every shared-memory kernel uses: one module-scope array, so that
// the emulator, which lays out a module's static shared memory for all its
// kernels together, fits all 54 (the widest pattern, ldmatrix rows 144 bytes
// apart, reaches 4480 bytes). The kernels measured on the GPU declared their
// own 8 KiB tile each, at offset 0 as this one: the same banks.
constexpr int kTile = 1152;
__shared__ __align__(16) float s[kTile];

// One load instruction of N floats per lane (ld.volatile: exactly this
// instruction, as the emulator sees it).
template <int N> __device__ float loadShared(unsigned address) {
  float a = 0, b = 0, c = 0, d = 0;
  if constexpr (N == 1) asm volatile("ld.volatile.shared.f32 %0, [%1];" : "=f"(a) : "r"(address));
  if constexpr (N == 2) asm volatile("ld.volatile.shared.v2.f32 {%0, %1}, [%2];" : "=f"(a), "=f"(b) : "r"(address));
  if constexpr (N == 4)
    asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(a), "=f"(b), "=f"(c), "=f"(d) : "r"(address));
  return a + b + c + d;
}
// One store instruction of N floats per lane.
template <int N> __device__ void storeShared(unsigned address, float v) {
  if constexpr (N == 1) asm volatile("st.volatile.shared.f32 [%0], %1;" ::"r"(address), "f"(v));
  if constexpr (N == 2) asm volatile("st.volatile.shared.v2.f32 [%0], {%1, %2};" ::"r"(address), "f"(v), "f"(v));
  if constexpr (N == 4)
    asm volatile("st.volatile.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(address), "f"(v), "f"(v), "f"(v), "f"(v));
}
template <int N> __device__ float loadGlobal(const char *address) {
  float a = 0, b = 0, c = 0, d = 0;
  if constexpr (N == 1) asm volatile("ld.volatile.global.f32 %0, [%1];" : "=f"(a) : "l"(address));
  if constexpr (N == 2) asm volatile("ld.volatile.global.v2.f32 {%0, %1}, [%2];" : "=f"(a), "=f"(b) : "l"(address));
  if constexpr (N == 4)
    asm volatile("ld.volatile.global.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(a), "=f"(b), "=f"(c), "=f"(d) : "l"(address));
  return a + b + c + d;
}

// Shared memory filled by every lane (stores are another metric), then one
// load of N floats per lane at byte offset OFFSET(lane).
#define SHARED_KERNEL(name, N, OFFSET)                                                                            \
  extern "C" __global__ void name(float *out) {                                                                              \
    for (int i = threadIdx.x; i < kTile; i += 32) s[i] = i;                                                         \
    __syncthreads();                                                                                              \
    unsigned lane = threadIdx.x;                                                                                  \
    out[lane] = loadShared<N>(static_cast<unsigned>(__cvta_generic_to_shared(s)) + (OFFSET));                     \
  }

SHARED_KERNEL(lds32_stride1, 1, lane * 4)
SHARED_KERNEL(lds32_stride2, 1, lane * 8)
SHARED_KERNEL(lds32_stride32, 1, lane * 128)
SHARED_KERNEL(lds32_stride33, 1, lane * 132)
SHARED_KERNEL(lds32_broadcast, 1, 64)
SHARED_KERNEL(lds32_pairs, 1, (lane / 2) * 4)
SHARED_KERNEL(lds64_stride1, 2, lane * 8)
SHARED_KERNEL(lds64_stride2, 2, lane * 16)
SHARED_KERNEL(lds64_stride16, 2, lane * 128)
SHARED_KERNEL(lds64_broadcast, 2, 64)
SHARED_KERNEL(lds64_pairs, 2, (lane / 2) * 8)
SHARED_KERNEL(lds64_halves_swapped, 2, ((lane + 16) % 32) * 8)
SHARED_KERNEL(lds128_stride1, 4, lane * 16)
SHARED_KERNEL(lds128_stride2, 4, lane * 32)
SHARED_KERNEL(lds128_stride8, 4, lane * 128)
SHARED_KERNEL(lds128_broadcast, 4, 64)
SHARED_KERNEL(lds128_pairs, 4, (lane / 2) * 16)
SHARED_KERNEL(lds128_quads, 4, (lane / 4) * 16)
// Added 2026-12-05: lanes that share addresses across halves and quarters of
// the warp (sgemm's float4 fragment loads), and rows with a padded pitch.
SHARED_KERNEL(lds128_halfshare, 4, (lane % 16) * 16)
SHARED_KERNEL(lds128_halves, 4, (lane / 16) * 16)
SHARED_KERNEL(lds128_eighths, 4, (lane % 8) * 16)
SHARED_KERNEL(lds128_quarter_bcast, 4, (lane / 8) * 16)
SHARED_KERNEL(lds128_rows80, 4, (lane >> 2) * 80 + (lane & 3) * 16)
SHARED_KERNEL(lds128_rows272, 4, (lane >> 4) * 272 + (lane & 15) * 16)
SHARED_KERNEL(lds128_xor8, 4, (lane ^ 8) * 16)
SHARED_KERNEL(lds64_halfshare, 2, (lane % 16) * 8)
SHARED_KERNEL(lds64_eighths, 2, (lane % 8) * 8)
SHARED_KERNEL(lds64_rows80, 2, (lane >> 3) * 80 + (lane & 7) * 8)
SHARED_KERNEL(lds64_rows144, 2, (lane >> 4) * 144 + (lane & 15) * 8)

// One store of N floats per lane at byte offset OFFSET(lane), then a load
// (another metric) so that the store is observed.
#define STORE_KERNEL(name, N, OFFSET)                                                                             \
  extern "C" __global__ void name(float *out) {                                                                   \
    unsigned lane = threadIdx.x;                                                                                  \
    storeShared<N>(static_cast<unsigned>(__cvta_generic_to_shared(s)) + (OFFSET), lane);                          \
    __syncthreads();                                                                                              \
    out[lane] = s[lane];                                                                                          \
  }
STORE_KERNEL(sts32_stride1, 1, lane * 4)
STORE_KERNEL(sts32_stride2, 1, lane * 8)
STORE_KERNEL(sts32_stride32, 1, lane * 128)
STORE_KERNEL(sts32_broadcast, 1, 64)
STORE_KERNEL(sts32_rows144, 1, (lane >> 3) * 144 + (lane & 7) * 4)
STORE_KERNEL(sts64_stride1, 2, lane * 8)
STORE_KERNEL(sts64_stride2, 2, lane * 16)
STORE_KERNEL(sts64_broadcast, 2, 64)
STORE_KERNEL(sts64_pairs, 2, (lane / 2) * 8)
STORE_KERNEL(sts64_halfshare, 2, (lane % 16) * 8)
STORE_KERNEL(sts64_rows80, 2, (lane >> 3) * 80 + (lane & 7) * 8)
STORE_KERNEL(sts64_rows144, 2, (lane >> 4) * 144 + (lane & 15) * 8)
STORE_KERNEL(sts128_stride1, 4, lane * 16)
STORE_KERNEL(sts128_stride2, 4, lane * 32)
STORE_KERNEL(sts128_broadcast, 4, 64)
STORE_KERNEL(sts128_pairs, 4, (lane / 2) * 16)
STORE_KERNEL(sts128_quads, 4, (lane / 4) * 16)
STORE_KERNEL(sts128_halfshare, 4, (lane % 16) * 16)
STORE_KERNEL(sts128_halves, 4, (lane / 16) * 16)
STORE_KERNEL(sts128_rows80, 4, (lane >> 2) * 80 + (lane & 3) * 16)
STORE_KERNEL(sts128_rows272, 4, (lane >> 4) * 272 + (lane & 15) * 16)
STORE_KERNEL(sts128_xor8, 4, (lane ^ 8) * 16)

// ldmatrix.x4: lane l gives row l's address, ROW_BYTES apart.
#define LDMATRIX_KERNEL(name, ROW_BYTES)                                                                          \
  extern "C" __global__ void name(float *out) {                                                                              \
    for (int i = threadIdx.x; i < kTile; i += 32) s[i] = i;                                                         \
    __syncthreads();                                                                                              \
    unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(s)) + threadIdx.x * (ROW_BYTES);            \
    unsigned a, b, c, d;                                                                                          \
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"                               \
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(address));                                          \
    out[threadIdx.x] = a + b + c + d;                                                                             \
  }
LDMATRIX_KERNEL(ldsm_x4_rows16, 16)
LDMATRIX_KERNEL(ldsm_x4_rows128, 128)
LDMATRIX_KERNEL(ldsm_x4_rows144, 144)

// One global load of N floats per lane at byte offset OFFSET(lane).
#define GLOBAL_KERNEL(name, N, OFFSET)                                                                            \
  extern "C" __global__ void name(const float *in, float *out) {                                                             \
    unsigned lane = threadIdx.x;                                                                                  \
    out[lane] = loadGlobal<N>(reinterpret_cast<const char *>(in) + (OFFSET));                                     \
  }
GLOBAL_KERNEL(ldg32_stride1, 1, lane * 4)
GLOBAL_KERNEL(ldg32_offset4, 1, 4 + lane * 4)
GLOBAL_KERNEL(ldg32_stride2, 1, lane * 8)
GLOBAL_KERNEL(ldg32_stride32, 1, lane * 128)
GLOBAL_KERNEL(ldg32_broadcast, 1, 0)
GLOBAL_KERNEL(ldg64_stride1, 2, lane * 8)
GLOBAL_KERNEL(ldg128_stride1, 4, lane * 16)
GLOBAL_KERNEL(ldg128_stride2, 4, lane * 32)

int main() {
  float *in = nullptr, *out = nullptr;
  cudaMalloc(&in, 1 << 20);
  cudaMalloc(&out, 4096);
  cudaMemset(in, 0, 1 << 20);
#define RUN_SHARED(k) k<<<1, 32>>>(out);
#define RUN_GLOBAL(k) k<<<1, 32>>>(in, out);
  RUN_SHARED(lds32_stride1) RUN_SHARED(lds32_stride2) RUN_SHARED(lds32_stride32) RUN_SHARED(lds32_stride33)
  RUN_SHARED(lds32_broadcast) RUN_SHARED(lds32_pairs) RUN_SHARED(lds64_stride1) RUN_SHARED(lds64_stride2)
  RUN_SHARED(lds64_stride16) RUN_SHARED(lds64_broadcast) RUN_SHARED(lds64_pairs) RUN_SHARED(lds64_halves_swapped)
  RUN_SHARED(lds128_stride1) RUN_SHARED(lds128_stride2) RUN_SHARED(lds128_stride8) RUN_SHARED(lds128_broadcast)
  RUN_SHARED(lds128_pairs) RUN_SHARED(lds128_quads) RUN_SHARED(ldsm_x4_rows16) RUN_SHARED(ldsm_x4_rows128)
  RUN_SHARED(ldsm_x4_rows144)
  RUN_SHARED(lds128_halfshare) RUN_SHARED(lds128_halves) RUN_SHARED(lds128_eighths) RUN_SHARED(lds128_quarter_bcast)
  RUN_SHARED(lds128_rows80) RUN_SHARED(lds128_rows272) RUN_SHARED(lds128_xor8) RUN_SHARED(lds64_halfshare)
  RUN_SHARED(lds64_eighths) RUN_SHARED(lds64_rows80) RUN_SHARED(lds64_rows144)
  RUN_SHARED(sts32_stride1) RUN_SHARED(sts32_stride2) RUN_SHARED(sts32_stride32) RUN_SHARED(sts32_broadcast)
  RUN_SHARED(sts32_rows144) RUN_SHARED(sts64_stride1) RUN_SHARED(sts64_stride2) RUN_SHARED(sts64_broadcast)
  RUN_SHARED(sts64_pairs) RUN_SHARED(sts64_halfshare) RUN_SHARED(sts64_rows80) RUN_SHARED(sts64_rows144)
  RUN_SHARED(sts128_stride1) RUN_SHARED(sts128_stride2) RUN_SHARED(sts128_broadcast) RUN_SHARED(sts128_pairs)
  RUN_SHARED(sts128_quads) RUN_SHARED(sts128_halfshare) RUN_SHARED(sts128_halves) RUN_SHARED(sts128_rows80)
  RUN_SHARED(sts128_rows272) RUN_SHARED(sts128_xor8)
  RUN_GLOBAL(ldg32_stride1) RUN_GLOBAL(ldg32_offset4) RUN_GLOBAL(ldg32_stride2) RUN_GLOBAL(ldg32_stride32)
  RUN_GLOBAL(ldg32_broadcast) RUN_GLOBAL(ldg64_stride1) RUN_GLOBAL(ldg128_stride1) RUN_GLOBAL(ldg128_stride2)
  cudaError_t error = cudaDeviceSynchronize();
  std::printf("%s\n", cudaGetErrorString(error));
  return error == cudaSuccess ? 0 : 1;
}
