// sm_90a only: warpgroup MMA fences and commit/wait through inline PTX,
// setmaxnreg, mbarrier init/arrive/try_wait through inline PTX, and an
// elected-one sync (elect.sync).
#include <cstdint>

__device__ __forceinline__ uint32_t sharedAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void __launch_bounds__(384, 1) hopperFencesAndBarriers(const float *in, float *out, int phases) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ alignas(8) uint64_t barrier;
  __shared__ float staging[384];
  uint32_t barrierAddress = sharedAddress(&barrier);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(barrierAddress), "r"(blockDim.x) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  int warpGroup = threadIdx.x / 128;
  if (warpGroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  }
  for (int phase = 0; phase < phases; ++phase) {
    staging[threadIdx.x] = in[phase * blockDim.x + threadIdx.x];
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(0) : "memory");
    uint64_t state;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(barrierAddress) : "memory");
    uint32_t done = 0;
    while (!done) {
      asm volatile("{\n\t.reg .pred p;\n\t"
                   "mbarrier.try_wait.shared.b64 p, [%1], %2;\n\t"
                   "selp.u32 %0, 1, 0, p;\n\t}"
                   : "=r"(done)
                   : "r"(barrierAddress), "l"(state)
                   : "memory");
    }
    out[phase * blockDim.x + threadIdx.x] = staging[(threadIdx.x + 1) % blockDim.x];
  }
  uint32_t elected;
  asm volatile("{\n\t.reg .pred e;\n\telect.sync _|e, 0xffffffff;\n\tselp.u32 %0, 1, 0, e;\n\t}" : "=r"(elected));
  if (elected) out[blockDim.x * phases + threadIdx.x / 32] = 1.0f;
#endif
}

extern "C" __global__ void hopperParityWait(uint32_t *out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ alignas(8) uint64_t barrier;
  uint32_t address = sharedAddress(&barrier);
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(address), "r"(1) : "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(address), "r"(0) : "memory");
  }
  uint32_t ready = 0;
  while (!ready) {
    asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.b32 %0, 1, 0, p;\n\t}"
                 : "=r"(ready)
                 : "r"(address), "r"(0u)
                 : "memory");
  }
  out[threadIdx.x] = ready;
#endif
}
