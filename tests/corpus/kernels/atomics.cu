// Global atomics: float/int/double adds, CAS loops, min/max, exchange,
// increment, plus fences, nanosleep and clocks.
__device__ float atomicMaxFloat(float *address, float value) {
  int *asInt = reinterpret_cast<int *>(address);
  int old = *asInt, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= value) break;
    old = atomicCAS(asInt, assumed, __float_as_int(value));
  } while (assumed != old);
  return __int_as_float(old);
}

__device__ double atomicMulDouble(double *address, double factor) {
  auto *asBits = reinterpret_cast<unsigned long long *>(address);
  unsigned long long old = *asBits, assumed;
  do {
    assumed = old;
    old = atomicCAS(asBits, assumed, __double_as_longlong(__longlong_as_double(assumed) * factor));
  } while (assumed != old);
  return __longlong_as_double(old);
}

extern "C" __global__ void atomicsMix(int n, const float *in, float *sumF, int *sumI, double *sumD, int *maxI,
                                      unsigned *minU, float *maxF, double *product, unsigned *ticket,
                                      unsigned long long *bits) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = in[i];
  atomicAdd(sumF, v);
  atomicAdd(sumI, (int)v);
  atomicAdd(sumD, (double)v);
  atomicMax(maxI, (int)(v * 100.0f));
  atomicMin(minU, (unsigned)i);
  atomicMaxFloat(maxF, v);
  atomicMulDouble(product, 1.0 + v * 1e-6);
  unsigned t = atomicInc(ticket, 1000u);
  atomicOr(bits, 1ull << (t & 63));
  atomicAnd(bits + 1, ~(1ull << (i & 63)));
  atomicXor(bits + 2, (unsigned long long)i);
  atomicExch(bits + 3, (unsigned long long)t);
  atomicSub(sumI + 1, 1);
  atomicDec(ticket + 1, 17u);
}

extern "C" __global__ void spinLockCounter(int *lock, int *counter, long long *elapsed) {
  long long start = clock64();
  if (threadIdx.x == 0) {
    while (atomicCAS(lock, 0, 1) != 0) __nanosleep(100);
    __threadfence();
    *counter += 1;
    __threadfence_system();
    atomicExch(lock, 0);
  }
  __threadfence_block();
  __syncthreads();
  if (threadIdx.x == 0) elapsed[blockIdx.x] = clock64() - start + clock();
}

extern "C" __global__ void systemAndBlockScope(int *counter, float *sum) {
  atomicAdd_block(counter, 1);
  atomicAdd_system(counter + 1, 2);
  atomicAdd_block(sum, 1.5f);
  atomicCAS_system(counter + 2, 0, (int)threadIdx.x);
}
