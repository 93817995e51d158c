// NVRTC passes inline PTX through unchecked: the opcode here does not exist,
// so the kernel's PTX fails `ptxforge lint` (unknown-instruction) and the
// `lint` stage drops it.
extern "C" __global__ void bogus_inline_asm(unsigned *out) {
  unsigned value;
  asm volatile("bogus.move.b32 %0, 7;" : "=r"(value));
  out[threadIdx.x] = value;
}
