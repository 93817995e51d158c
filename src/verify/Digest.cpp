#include "verify/Digest.h"

#include "support/Parallel.h"
#include "toolchain/Compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace ptxforge::verify {

namespace {

constexpr const char *kEntry = "ptxforge_gate_digest";

uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// One thread per 32-bit word (grid-stride); the thread that ends on index
// `words` folds in the zero-padded tail. Each thread adds its sum to *out.
constexpr const char *kPtx = R"(.version 7.8
.target sm_52
.address_size 64

.visible .entry ptxforge_gate_digest(
  .param .u64 data,
  .param .u64 bytes,
  .param .u64 key,
  .param .u64 out
)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<20>;

  ld.param.u64 %rd1, [data];
  ld.param.u64 %rd2, [bytes];
  ld.param.u64 %rd3, [key];
  ld.param.u64 %rd4, [out];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd4, %rd4;
  shr.u64 %rd5, %rd2, 2;
  and.b64 %rd6, %rd2, 3;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd7, %r1, %r2;
  cvt.u64.u32 %rd8, %r3;
  add.u64 %rd7, %rd7, %rd8;
  mul.wide.u32 %rd9, %r4, %r2;
  mov.u64 %rd10, 0;
$L_words:
  setp.ge.u64 %p1, %rd7, %rd5;
  @%p1 bra $L_tail;
  shl.b64 %rd11, %rd7, 2;
  add.u64 %rd11, %rd1, %rd11;
  ld.global.nc.u32 %r5, [%rd11];
  cvt.u64.u32 %rd12, %r5;
  shl.b64 %rd13, %rd7, 32;
  or.b64 %rd13, %rd13, %rd12;
  xor.b64 %rd13, %rd13, %rd3;
  shr.u64 %rd14, %rd13, 30;
  xor.b64 %rd13, %rd13, %rd14;
  mul.lo.u64 %rd13, %rd13, 0xbf58476d1ce4e5b9;
  shr.u64 %rd14, %rd13, 27;
  xor.b64 %rd13, %rd13, %rd14;
  mul.lo.u64 %rd13, %rd13, 0x94d049bb133111eb;
  shr.u64 %rd14, %rd13, 31;
  xor.b64 %rd13, %rd13, %rd14;
  add.u64 %rd10, %rd10, %rd13;
  add.u64 %rd7, %rd7, %rd9;
  bra.uni $L_words;
$L_tail:
  setp.ne.u64 %p2, %rd7, %rd5;
  setp.eq.u64 %p3, %rd6, 0;
  or.pred %p2, %p2, %p3;
  @%p2 bra $L_done;
  shl.b64 %rd11, %rd5, 2;
  add.u64 %rd11, %rd1, %rd11;
  mov.u64 %rd12, 0;
  mov.u64 %rd15, 0;
$L_bytes:
  setp.ge.u64 %p1, %rd15, %rd6;
  @%p1 bra $L_fold;
  add.u64 %rd16, %rd11, %rd15;
  ld.global.nc.u8 %r6, [%rd16];
  cvt.u64.u32 %rd17, %r6;
  and.b64 %rd17, %rd17, 255;
  cvt.u32.u64 %r7, %rd15;
  shl.b32 %r7, %r7, 3;
  shl.b64 %rd17, %rd17, %r7;
  or.b64 %rd12, %rd12, %rd17;
  add.u64 %rd15, %rd15, 1;
  bra.uni $L_bytes;
$L_fold:
  shl.b64 %rd13, %rd5, 32;
  or.b64 %rd13, %rd13, %rd12;
  xor.b64 %rd13, %rd13, %rd3;
  shr.u64 %rd14, %rd13, 30;
  xor.b64 %rd13, %rd13, %rd14;
  mul.lo.u64 %rd13, %rd13, 0xbf58476d1ce4e5b9;
  shr.u64 %rd14, %rd13, 27;
  xor.b64 %rd13, %rd13, %rd14;
  mul.lo.u64 %rd13, %rd13, 0x94d049bb133111eb;
  shr.u64 %rd14, %rd13, 31;
  xor.b64 %rd13, %rd13, %rd14;
  add.u64 %rd10, %rd10, %rd13;
$L_done:
  red.global.add.u64 [%rd4], %rd10;
  ret;
}
)";

/// The digest kernel's cubin per architecture, compiled once per process.
Result<std::vector<uint8_t>> cubinFor(const std::string &arch) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<uint8_t>> cubins;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto found = cubins.find(arch); found != cubins.end()) return found->second;
  toolchain::CompileOptions options;
  options.arch = arch;
  options.entryName = kEntry;
  Result<toolchain::CompileResult> compiled = toolchain::compilePtx(kPtx, options);
  if (!compiled) return compiled.error();
  if (!compiled->ok)
    return makeError(ErrorKind::Internal, "the gate's digest kernel did not compile for " + arch);
  return cubins[arch] = compiled->cubin;
}

} // namespace

uint64_t hostDigest(const void *data, uint64_t bytes, uint64_t key) {
  const auto *base = static_cast<const uint8_t *>(data);
  const uint64_t words = bytes / 4;
  constexpr uint64_t kChunkWords = uint64_t{1} << 18;
  std::atomic<uint64_t> sum{0};
  forEachChunk(static_cast<size_t>((words + kChunkWords - 1) / kChunkWords), 0, [&](size_t chunk) {
    const uint64_t first = chunk * kChunkWords, last = std::min(words, first + kChunkWords);
    uint64_t local = 0;
    for (uint64_t i = first; i < last; ++i) {
      uint32_t word;
      std::memcpy(&word, base + 4 * i, 4);
      local += mix(key ^ ((i << 32) | word));
    }
    sum.fetch_add(local, std::memory_order_relaxed);
  });
  uint64_t total = sum.load();
  if (const uint64_t tail = bytes % 4) {
    uint64_t word = 0;
    for (uint64_t b = 0; b < tail; ++b) word |= uint64_t{base[4 * words + b]} << (8 * b);
    total += mix(key ^ ((words << 32) | word));
  }
  return total;
}

const std::string &digestKernelPtx() {
  static const std::string text = kPtx;
  return text;
}

Result<std::unique_ptr<DeviceDigest>> DeviceDigest::load(exec::Executor &executor, const std::string &arch) {
  std::unique_ptr<DeviceDigest> digest(new DeviceDigest(executor));
  Result<exec::ModuleHandle> module = exec::makeExecError(exec::ExecErrorKind::Internal, "not loaded");
  if (executor.moduleFormat() == exec::ModuleFormat::Ptx) {
    module = executor.loadModule(std::vector<uint8_t>(kPtx, kPtx + std::strlen(kPtx)), exec::ModuleFormat::Ptx);
  } else {
    Result<std::vector<uint8_t>> cubin = cubinFor(arch);
    if (!cubin) return cubin.error();
    module = executor.loadModule(*cubin, exec::ModuleFormat::Cubin);
  }
  if (!module) return module.error();
  digest->module_ = *module;
  Result<exec::KernelInfo> kernel = executor.getKernel(*module, kEntry);
  if (!kernel) return kernel.error();
  digest->kernel_ = kernel->handle;
  Result<exec::DeviceBuffer> result = executor.allocateBuffer(sizeof(uint64_t));
  if (!result) return result.error();
  digest->result_ = std::move(*result);
  return digest;
}

DeviceDigest::~DeviceDigest() {
  result_.reset();
  if (module_.value) (void)executor_.unloadModule(module_);
}

Result<uint64_t> DeviceDigest::of(exec::BufferHandle buffer, uint64_t offset, uint64_t bytes, uint64_t key) {
  if (Result<void> ok = executor_.memset(result_.handle(), 0, 0, sizeof(uint64_t)); !ok) return ok.error();
  exec::KernelArgs args;
  args.buffer(buffer, offset);
  args.scalar<uint64_t>(bytes);
  args.scalar<uint64_t>(key);
  args.buffer(result_.handle());
  const uint64_t words = bytes / 4 + 1;
  exec::LaunchConfig config;
  config.block = {256, 1, 1};
  config.grid = {static_cast<uint32_t>(std::clamp<uint64_t>((words + 255) / 256, 1, 1024)), 1, 1};
  if (Result<void> ran = executor_.launch(kernel_, config, args.pack()); !ran) return ran.error();
  uint64_t sum = 0;
  if (Result<void> ok = executor_.copyToHost(&sum, result_.handle(), 0, sizeof sum); !ok) return ok.error();
  return sum;
}

} // namespace ptxforge::verify
