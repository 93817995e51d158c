#include "verify/DeviceGate.h"

#include "tasks/Inputs.h"
#include "tasks/Reference.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <vector>

namespace ptxforge::verify {

namespace {

constexpr const char *kFill = "ptxforge_gate_fill";
constexpr const char *kCompare = "ptxforge_gate_compare";
constexpr uint32_t kThreads = 256;
constexpr uint32_t kMaxBlocks = 1024;
constexpr uint32_t kPartialWords = 8; ///< u64 words per block in the compare kernel's output

// Element type and distribution codes: the order of tasks::ElementType and the
// switch in fillDistribution() below.
constexpr const char *kSource = R"(// ptxforge's gate kernels: input generation and output comparison.
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef unsigned short u16;

enum { F32, F64, F16, BF16, I8, U8, I32, U32, I64, U64, E4M3 };
enum { UNIFORM, INT, CONST, IOTA, INDEX_MOD };

__device__ __forceinline__ u64 mix(u64 z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// tasks::counterDraw: splitmix64 of the state stream + (index * 64 + k) * golden.
__device__ __forceinline__ u64 draw(u64 stream, u64 index, u32 k) {
  return mix(stream + (index * 64ull + k) * 0x9e3779b97f4a7c15ull + 0x9e3779b97f4a7c15ull);
}

__device__ __forceinline__ double unitInterval(u64 bits) { return __dmul_rn(__ull2double_rn(bits >> 11), 0x1.0p-53); }

__device__ __forceinline__ u16 floatToHalf(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float halfToFloat(u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ u16 floatToBf16(float f) {
  u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float bf16ToFloat(u16 h) { return __uint_as_float(((u32)h) << 16); }
// tasks::floatToE4M3Bits step for step (round to nearest even, saturating at
// +-448; cvt's e4m3x2 form would need sm_89).
__device__ __forceinline__ unsigned char floatToE4M3(float f) {
  const u32 bits = __float_as_uint(f), sign = (bits >> 24) & 0x80u, magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return (unsigned char)(sign | 0x7fu);
  const u32 exponent = magnitude >> 23;
  if (exponent >= 121) {
    if (exponent > 135) return (unsigned char)(sign | 0x7eu);
    const u32 mantissa = magnitude & 0x7fffffu, rest = mantissa & 0xfffffu;
    u32 result = ((exponent - 120) << 3) | (mantissa >> 20);
    if (rest > 0x80000u || (rest == 0x80000u && (result & 1u))) ++result;
    return (unsigned char)(sign | min(result, 0x7eu));
  }
  if (magnitude <= 0x3a800000u) return (unsigned char)sign;
  const u32 mantissa = (magnitude & 0x7fffffu) | 0x800000u, shift = 141 - exponent;
  u32 result = mantissa >> shift;
  const u32 rest = mantissa & ((1u << shift) - 1), halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (result & 1u))) ++result;
  return (unsigned char)(sign | result);
}
__device__ __forceinline__ float e4m3ToFloat(unsigned char b) {
  const u32 exponent = (b >> 3) & 0xfu, mantissa = b & 0x7u;
  float magnitude = (b & 0x7fu) == 0x7fu ? __int_as_float(0x7fffffff)
                  : exponent == 0        ? (float)mantissa * 0.001953125f
                                         : __uint_as_float(((exponent + 120) << 23) | (mantissa << 20));
  return (b & 0x80u) ? -magnitude : magnitude;
}

__device__ __forceinline__ u64 integerBits(double value) {
  if (value >= 18446744073709551616.0) return ~0ull;
  if (value >= 9223372036854775808.0) return __double2ull_rz(value);
  if (value < -9223372036854775808.0) return 1ull << 63;
  return (u64)__double2ll_rz(value);
}

__device__ __forceinline__ void storeInteger(unsigned char *out, u64 i, int type, u64 bits) {
  switch (type) {
  case I8: case U8: out[i] = (unsigned char)bits; break;
  case I32: case U32: ((u32 *)out)[i] = (u32)bits; break;
  default: ((u64 *)out)[i] = bits; break;
  }
}

__device__ __forceinline__ void storeAs(unsigned char *out, u64 i, int type, double value) {
  switch (type) {
  case F32: ((float *)out)[i] = __double2float_rn(value); break;
  case F64: ((double *)out)[i] = value; break;
  case F16: ((u16 *)out)[i] = floatToHalf(__double2float_rn(value)); break;
  case BF16: ((u16 *)out)[i] = floatToBf16(__double2float_rn(value)); break;
  case E4M3: out[i] = floatToE4M3(__double2float_rn(value)); break;
  default: storeInteger(out, i, type, integerBits(value)); break;
  }
}

__device__ __forceinline__ double roundTrip(int type, double value) {
  switch (type) {
  case F32: return (double)__double2float_rn(value);
  case F16: return (double)halfToFloat(floatToHalf(__double2float_rn(value)));
  case BF16: return (double)bf16ToFloat(floatToBf16(__double2float_rn(value)));
  case E4M3: return (double)e4m3ToFloat(floatToE4M3(__double2float_rn(value)));
  default: return value;
  }
}

extern "C" __global__ void ptxforge_gate_fill(unsigned char *out, u64 count, u64 stream, int dist, int type,
                                              double lo, double hi, double value, u64 low, u64 span,
                                              u64 threshold, u64 modulus) {
  const u64 stride = (u64)gridDim.x * blockDim.x;
  const bool floating = type <= BF16 || type == E4M3;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    switch (dist) {
    case UNIFORM: {
      double chosen = lo;
      for (u32 attempt = 0; attempt < 64; ++attempt) {
        double candidate = __dadd_rn(lo, __dmul_rn(unitInterval(draw(stream, i, attempt)), __dsub_rn(hi, lo)));
        double stored = roundTrip(type, candidate);
        if (stored >= lo && stored < hi) {
          chosen = candidate;
          break;
        }
      }
      storeAs(out, i, type, chosen);
      break;
    }
    case INT: {
      u64 r = draw(stream, i, 0);
      for (u32 k = 1; span != 0 && r < threshold && k < 64; ++k) r = draw(stream, i, k);
      u64 bits = low + (span == 0 ? r : r % span);
      if (floating) storeAs(out, i, type, __ll2double_rn((i64)bits));
      else storeInteger(out, i, type, bits);
      break;
    }
    case CONST: storeAs(out, i, type, value); break;
    case IOTA: storeAs(out, i, type, __ull2double_rn(i)); break;
    default: storeAs(out, i, type, __ull2double_rn(i % modulus)); break;
    }
  }
}

__device__ __forceinline__ double decode(const unsigned char *data, u64 i, int type) {
  switch (type) {
  case F32: return (double)((const float *)data)[i];
  case F64: return ((const double *)data)[i];
  case F16: return (double)halfToFloat(((const u16 *)data)[i]);
  case BF16: return (double)bf16ToFloat(((const u16 *)data)[i]);
  case E4M3: return (double)e4m3ToFloat(data[i]);
  case I8: return (double)(signed char)data[i];
  case U8: return (double)data[i];
  case I32: return (double)((const int *)data)[i];
  case U32: return (double)((const u32 *)data)[i];
  case I64: return __ll2double_rn(((const i64 *)data)[i]);
  default: return __ull2double_rn(((const u64 *)data)[i]);
  }
}

__device__ __forceinline__ bool sameBits(const unsigned char *a, const unsigned char *b, u64 i, int type) {
  switch (type) {
  case I8: case U8: return a[i] == b[i];
  case I32: case U32: return ((const u32 *)a)[i] == ((const u32 *)b)[i];
  default: return ((const u64 *)a)[i] == ((const u64 *)b)[i];
  }
}

struct Partial {
  u64 mismatches, nans, maxAbsIndex, first, digest;
  double maxAbs, maxRel;
};

__device__ __forceinline__ void noteAbs(Partial &p, double absError, u64 i) {
  if (absError > p.maxAbs) p.maxAbs = absError, p.maxAbsIndex = i;
}

// Folds b into a: sums, the larger errors (the smaller index among equal
// nonzero largest), the first mismatch.
__device__ __forceinline__ void fold(Partial &a, const Partial &b) {
  a.mismatches += b.mismatches;
  a.nans += b.nans;
  a.digest += b.digest;
  if (b.maxAbs > a.maxAbs || (b.maxAbs == a.maxAbs && b.maxAbs > 0 && b.maxAbsIndex < a.maxAbsIndex))
    a.maxAbs = b.maxAbs, a.maxAbsIndex = b.maxAbsIndex;
  a.maxRel = fmax(a.maxRel, b.maxRel);
  if (b.first < a.first) a.first = b.first;
}

extern "C" __global__ void __launch_bounds__(256) ptxforge_gate_compare(
    const unsigned char *got, const unsigned char *want, u64 count, int type, int exactIntegers, double atol,
    double rtol, u64 key, u64 *partials) {
  __shared__ Partial shared[256];
  const u64 stride = (u64)gridDim.x * blockDim.x;
  const u64 start = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  const bool floating = type <= BF16 || type == E4M3;
  Partial p = {0, 0, 0, ~0ull, 0, 0.0, 0.0};
  for (u64 i = start; i < count; i += stride) {
    double g = decode(got, i, type), w = decode(want, i, type);
    bool ok;
    if (!floating && sameBits(got, want, i, type)) {
      ok = true;
    } else if (exactIntegers) {
      ok = false;
    } else if (isnan(w)) {
      ok = isnan(g);
    } else if (isnan(g)) {
      ok = false;
      ++p.nans;
    } else if (isinf(w) || isinf(g)) {
      ok = g == w;
    } else {
      double absError = fabs(__dsub_rn(g, w));
      ok = absError <= __dadd_rn(atol, __dmul_rn(rtol, fabs(w)));
      noteAbs(p, absError, i);
      if (w != 0) p.maxRel = fmax(p.maxRel, __ddiv_rn(absError, fabs(w)));
    }
    if (!floating && !isnan(g)) {
      double absError = fabs(__dsub_rn(g, w));
      noteAbs(p, absError, i);
      if (w != 0) p.maxRel = fmax(p.maxRel, __ddiv_rn(absError, fabs(w)));
    }
    if (!ok) {
      ++p.mismatches;
      if (i < p.first) p.first = i;
    }
  }
  // The keyed digest of want (verify/Digest.h): one term per 32-bit word, the
  // zero-padded tail folded in by the thread whose index is the word count.
  const u64 size = type == F64 || type == I64 || type == U64 ? 8 : type == F32 || type == I32 || type == U32 ? 4
                 : type == F16 || type == BF16 ? 2 : 1;
  const u64 bytes = count * size, words = bytes / 4, tail = bytes % 4;
  for (u64 i = start; i < words; i += stride)
    p.digest += mix(key ^ ((i << 32) | (u64)((const u32 *)want)[i]));
  if (tail && start == words % stride) {
    u64 word = 0;
    for (u64 b = 0; b < tail; ++b) word |= (u64)want[4 * words + b] << (8 * b);
    p.digest += mix(key ^ ((words << 32) | word));
  }
  shared[threadIdx.x] = p;
  __syncthreads();
  for (u32 half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) fold(shared[threadIdx.x], shared[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    u64 *out = partials + 8ull * blockIdx.x;
    const Partial &r = shared[0];
    out[0] = r.mismatches;
    out[1] = r.nans;
    out[2] = (u64)__double_as_longlong(r.maxAbs);
    out[3] = r.maxAbsIndex;
    out[4] = (u64)__double_as_longlong(r.maxRel);
    out[5] = r.first;
    out[6] = r.digest;
    out[7] = 0;
  }
}
)";

int typeCode(tasks::ElementType type) { return static_cast<int>(type); }

/// The kernels compiled for `arch`, once per process (NVRTC's output is also
/// cached on disk by tasks::compileReferenceSource).
Result<tasks::CompiledReference> compiledFor(const std::string &arch) {
  static std::mutex mutex;
  static std::map<std::string, tasks::CompiledReference> compiled;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto found = compiled.find(arch); found != compiled.end()) return found->second;
  Result<tasks::CompiledReference> made = tasks::compileReferenceSource(kSource, kFill, arch);
  if (!made) return makeError(made.error().kind, "the gate's kernels did not compile for " + arch + ": " +
                                                     made.error().message);
  return compiled[arch] = std::move(*made);
}

/// Blocks for a grid-stride pass over `items`.
uint32_t blocksFor(uint64_t items) {
  return static_cast<uint32_t>(std::clamp<uint64_t>((items + 4 * kThreads - 1) / (4 * kThreads), 1, kMaxBlocks));
}

} // namespace

const std::string &deviceGateSource() {
  static const std::string text = kSource;
  return text;
}

bool DeviceGate::canGenerate(const tasks::ParamSpec &param) {
  return param.init.distribution != tasks::InitDistribution::Normal;
}

Result<std::unique_ptr<DeviceGate>> DeviceGate::load(exec::Executor &executor, const std::string &arch) {
  Result<tasks::CompiledReference> compiled = compiledFor(arch);
  if (!compiled) return compiled.error();
  std::unique_ptr<DeviceGate> gate(new DeviceGate(executor));
  Result<exec::ModuleHandle> module =
      executor.moduleFormat() == exec::ModuleFormat::Ptx
          ? executor.loadModule(std::vector<uint8_t>(compiled->ptx.begin(), compiled->ptx.end()), exec::ModuleFormat::Ptx)
          : executor.loadModule(compiled->cubin, exec::ModuleFormat::Cubin);
  if (!module) return module.error();
  gate->module_ = *module;
  Result<exec::KernelInfo> fill = executor.getKernel(*module, kFill);
  if (!fill) return fill.error();
  Result<exec::KernelInfo> compare = executor.getKernel(*module, kCompare);
  if (!compare) return compare.error();
  gate->fill_ = fill->handle;
  gate->compare_ = compare->handle;
  Result<exec::DeviceBuffer> partials = executor.allocateBuffer(uint64_t{kMaxBlocks} * kPartialWords * 8);
  if (!partials) return partials.error();
  gate->partials_ = std::move(*partials);
  return gate;
}

DeviceGate::~DeviceGate() {
  partials_.reset();
  if (module_.value) (void)executor_.unloadModule(module_);
}

Result<void> DeviceGate::generate(exec::BufferHandle buffer, uint64_t offset, const tasks::ParamSpec &param,
                                  int64_t count, uint64_t seed, int trial) {
  if (!canGenerate(param))
    return makeError(ErrorKind::Internal, "the gate cannot generate '" + param.name + "' on the device");
  if (count <= 0) return {};
  // As tasks::generateInput: the trial's scale, then the distribution's constants.
  const tasks::InitSpec init = tasks::initForTrial(param.init, trial);
  using tasks::integerBits;
  int dist = 0;
  uint64_t low = 0, span = 0, threshold = 0;
  switch (init.distribution) {
  case tasks::InitDistribution::Uniform: dist = 0; break;
  case tasks::InitDistribution::Int:
    dist = 1;
    low = integerBits(init.min);
    span = integerBits(init.max) - low + 1;
    threshold = span == 0 ? 0 : (0 - span) % span;
    break;
  case tasks::InitDistribution::Const: dist = 2; break;
  case tasks::InitDistribution::Iota: dist = 3; break;
  case tasks::InitDistribution::IndexMod: dist = 4; break;
  case tasks::InitDistribution::Normal: break; // refused above
  }
  const uint64_t modulus = static_cast<uint64_t>(std::max<int64_t>(init.modulus, 1));
  exec::KernelArgs args;
  args.buffer(buffer, offset);
  args.scalar<uint64_t>(static_cast<uint64_t>(count));
  args.scalar<uint64_t>(tasks::bufferSeed(seed, param.name, trial));
  args.scalar<int32_t>(dist);
  args.scalar<int32_t>(typeCode(param.type));
  args.scalar<double>(init.min);
  args.scalar<double>(init.max);
  args.scalar<double>(init.value);
  args.scalar<uint64_t>(low);
  args.scalar<uint64_t>(span);
  args.scalar<uint64_t>(threshold);
  args.scalar<uint64_t>(modulus);
  exec::LaunchConfig config;
  config.block = {kThreads, 1, 1};
  config.grid = {blocksFor(static_cast<uint64_t>(count)), 1, 1};
  Result<void> ran = executor_.launch(fill_, config, args.pack());
  (void)executor_.takeFindings(); // the gate's own kernel: nothing of the candidate's
  return ran;
}

Result<DeviceComparison> DeviceGate::compare(tasks::ElementType type, exec::BufferHandle got, uint64_t gotOffset,
                                             exec::BufferHandle want, uint64_t wantOffset, uint64_t count,
                                             const tasks::Tolerance &tolerance, uint64_t digestKey) {
  DeviceComparison out;
  out.compare.count = count;
  const uint64_t bytes = count * tasks::elementSize(type);
  const uint64_t items = std::max(count, bytes / 4 + 1);
  const uint32_t blocks = blocksFor(items);
  exec::KernelArgs args;
  args.buffer(got, gotOffset);
  args.buffer(want, wantOffset);
  args.scalar<uint64_t>(count);
  args.scalar<int32_t>(typeCode(type));
  args.scalar<int32_t>(!tasks::isFloatingType(type) && !tolerance.atolGiven ? 1 : 0);
  args.scalar<double>(tolerance.atol);
  args.scalar<double>(tolerance.rtol);
  args.scalar<uint64_t>(digestKey);
  args.buffer(partials_.handle());
  exec::LaunchConfig config;
  config.block = {kThreads, 1, 1};
  config.grid = {blocks, 1, 1};
  Result<void> ran = executor_.launch(compare_, config, args.pack());
  (void)executor_.takeFindings();
  if (!ran) return ran.error();
  std::vector<uint64_t> partials(static_cast<size_t>(blocks) * kPartialWords);
  if (Result<void> ok = executor_.copyToHost(partials.data(), partials_.handle(), 0, partials.size() * 8); !ok)
    return ok.error();
  // The blocks folded as the kernel folds threads: the result is the one a
  // single pass in index order gives (tasks::compareBuffers).
  uint64_t first = std::numeric_limits<uint64_t>::max();
  tasks::CompareResult &result = out.compare;
  for (uint32_t b = 0; b < blocks; ++b) {
    const uint64_t *p = partials.data() + static_cast<size_t>(b) * kPartialWords;
    result.mismatches += p[0];
    result.nanInGot += p[1];
    const double maxAbs = std::bit_cast<double>(p[2]);
    if (maxAbs > result.maxAbsError ||
        (maxAbs == result.maxAbsError && maxAbs > 0 && p[3] < result.maxAbsErrorIndex))
      result.maxAbsError = maxAbs, result.maxAbsErrorIndex = p[3];
    result.maxRelError = std::max(result.maxRelError, std::bit_cast<double>(p[4]));
    first = std::min(first, p[5]);
    out.wantDigest += p[6];
  }
  if (first != std::numeric_limits<uint64_t>::max()) result.firstMismatch = first;
  result.passed = result.mismatches == 0;
  return out;
}

} // namespace ptxforge::verify
