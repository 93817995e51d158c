// sm_90a, in the style of the public Hopper GEMMs: a producer warp group fills
// shared-memory stages through cp.async.bulk and mbarrier transaction counts,
// consumer warp groups wait on the stages' barriers and fence wgmma. The wait
// is an inline-asm loop with its own labels (`WAIT`, `DONE`) inside `{ }`;
// nvcc inlines it once per call site, so one function holds the same labels
// in several sibling blocks (ptxas allows it: labels are block-scoped).
#include <cstdint>

namespace {

constexpr int kStages = 4;
constexpr int kStageFloats = 1024;

__device__ __forceinline__ uint32_t smemAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void barrierInit(uint64_t *bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smemAddress(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void expectBytes(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smemAddress(bar)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void arrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smemAddress(bar)) : "memory");
}

// The wait loop as the public GEMMs write it: labels inside the asm block.
__device__ __forceinline__ void wait(uint64_t *bar, int phase) {
  asm volatile("{\n"
               ".reg .pred P1;\n"
               "WAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
               "@P1 bra DONE;\n"
               "bra WAIT;\n"
               "DONE:\n"
               "}\n" ::"r"(smemAddress(bar)),
               "r"(phase)
               : "memory");
}

__device__ __forceinline__ void bulkLoad(float *dst, const float *src, uint32_t bytes, uint64_t *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smemAddress(dst)),
               "l"(src), "r"(bytes), "r"(smemAddress(bar))
               : "memory");
}

} // namespace

extern "C" __global__ void __launch_bounds__(384, 1)
    pipelinedSum(const float *__restrict__ in, float *__restrict__ out, int tiles) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ alignas(128) float stage[kStages][kStageFloats];
  __shared__ alignas(8) uint64_t full[kStages], empty[kStages];
  int group = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      barrierInit(&full[s], 1);
      barrierInit(&empty[s], 256);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (group == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (threadIdx.x == 0) {
      for (int t = 0; t < tiles; ++t) {
        int s = t % kStages;
        if (t >= kStages) wait(&empty[s], ((t / kStages) - 1) & 1);
        expectBytes(&full[s], kStageFloats * sizeof(float));
        bulkLoad(stage[s], in + static_cast<size_t>(t) * kStageFloats, kStageFloats * sizeof(float), &full[s]);
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    float acc = 0.0f;
    int lane = threadIdx.x - 128;
    for (int t = 0; t < tiles; ++t) {
      int s = t % kStages;
      wait(&full[s], (t / kStages) & 1);
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
      for (int i = lane; i < kStageFloats; i += 256) acc += stage[s][i];
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
      arrive(&empty[s]);
    }
    out[blockIdx.x * 256 + lane] = acc;
  }
#endif
}
