// Integer intrinsics and 64-bit arithmetic: popc, clz, brev, byte_perm,
// funnel shifts, mul.hi, mul24, sad, SIMD video ops, 32/64-bit division and
// modulo (which call into long inline sequences).
#include <cstdint>

extern "C" __global__ void bitTricks(int n, const unsigned *in, unsigned *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned v = in[i], w = in[(i + 1) % n];
  unsigned r = __popc(v) + __clz(v) + __brev(v) + __byte_perm(v, w, 0x5410);
  r ^= __funnelshift_l(v, w, i & 31) + __funnelshift_rc(v, w, 40);
  r += __umulhi(v, w) + __mulhi((int)v, (int)w) + __umul24(v, w) + __sad((int)v, (int)w, 3u);
  r += __ffs((int)v) + __popcll(((uint64_t)v << 32) | w) + __clzll((long long)v) + __ffsll((long long)w);
  r += __vabsdiffu4(v, w) + __vadd2(v, w) + __vcmpgeu4(v, w) + __dp4a(v, w, 7u) + __dp2a_lo(v, w, 1u);
  out[i] = r + __rhadd((int)v, (int)w) + __uhadd(v, w) + (v >> (w & 31)) + ((int)v >> 3);
}

extern "C" __global__ void divisionModulo(int n, const int *a, const int *b, const int64_t *c, const uint64_t *d,
                                          int64_t *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int64_t r = a[i] / b[i] + a[i] % b[i];
  r += c[i] / (int64_t)b[i] + c[i] % 1000003;
  r += (int64_t)(d[i] / (d[(i + 1) % n] | 1)) + (int64_t)(d[i] % 97ull);
  r += (unsigned)a[i] / 7u + (unsigned)a[i] % 13u;
  out[i] = r;
}

extern "C" __global__ void wideMath(int n, const uint64_t *x, const uint64_t *y, uint64_t *lo, uint64_t *hi) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint64_t a = x[i], b = y[i];
  lo[i] = a * b + (a << 17) - (b >> 5) + __brevll(a);
  hi[i] = __umul64hi(a, b) + (uint64_t)__mul64hi((long long)a, (long long)b) + (a ^ ~b) + (uint64_t)llabs((long long)a);
}

extern "C" __global__ void hashMix(int n, const uint32_t *keys, uint32_t *hashes) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint32_t h = keys[i];
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  hashes[i] = h + (uint32_t)(int8_t)(h & 0xff) + (uint32_t)(int16_t)(h >> 8) + min(h, 12345u) + max((int)h, -7);
}
