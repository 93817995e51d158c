// Access patterns whose Nsight Compute counts the emulator's profile rules
// (src/emu/Profile.h) are compared with: one warp, one block, one load of
// the pattern per kernel. Build and profile on a GPU machine:
//   nvcc -arch=sm_90 -o mb ncu_microbench.cu
//   ncu --clock-control none --csv --metrics \
//     l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__sass_inst_executed_op_shared_ld.sum,\
//     l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum ./mb
#include <cstdio>
#include <cuda_runtime.h>

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
    __shared__ __align__(16) float s[2048];                                                                       \
    for (int i = threadIdx.x; i < 2048; i += 32) s[i] = i;                                                        \
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

// ldmatrix.x4: lane l gives row l's address, ROW_BYTES apart.
#define LDMATRIX_KERNEL(name, ROW_BYTES)                                                                          \
  extern "C" __global__ void name(float *out) {                                                                              \
    __shared__ __align__(16) float s[2048];                                                                       \
    for (int i = threadIdx.x; i < 2048; i += 32) s[i] = i;                                                        \
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
  RUN_GLOBAL(ldg32_stride1) RUN_GLOBAL(ldg32_offset4) RUN_GLOBAL(ldg32_stride2) RUN_GLOBAL(ldg32_stride32)
  RUN_GLOBAL(ldg32_broadcast) RUN_GLOBAL(ldg64_stride1) RUN_GLOBAL(ldg128_stride1) RUN_GLOBAL(ldg128_stride2)
  cudaError_t error = cudaDeviceSynchronize();
  std::printf("%s\n", cudaGetErrorString(error));
  return error == cudaSuccess ? 0 : 1;
}
