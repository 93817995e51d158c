// Vendor-library calls without a GPU: the row-major -> column-major mapping
// handed to cuBLAS computes the row-major product (checked with a host BLAS of
// the reference semantics), executors without a library say "unavailable",
// a missing cuBLAS is a clear error, and the worker answers a library call on
// a machine without a GPU with "no GPU". GpuLibraryCall* (label gpu) runs the
// four ops through cuBLAS on a GPU and compares them with the host.
#include "exec/ColumnMajorCall.h"
#include "exec/GpuExecutor.h"
#include "exec/IsolatedExecutor.h"
#if PTXFORGE_HAVE_CUBLAS
#include "exec/Cublas.h"
#include "exec/CublasLt.h"
#endif

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

using namespace ptxforge;
using namespace ptxforge::exec;

namespace {

// --- A host BLAS with the column-major semantics of cuBLAS -----------------

/// C (m x n, ldc) = op(A) * B, column-major; op(A) is A (m x k, lda) or A^T.
void hostSgemmNN(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                 int64_t ldc) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      float sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += a[i + p * lda] * b[p + j * ldb];
      c[i + j * ldc] = sum;
    }
}

/// C (m x n, ldc) = A^T * B, column-major, A k x m (lda).
void hostSgemmTN(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                 int64_t ldc) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      float sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += a[p + i * lda] * b[p + j * ldb];
      c[i + j * ldc] = sum;
    }
}

/// y = op(A) x for a column-major m x n A (lda).
void hostSgemv(bool transpose, int64_t m, int64_t n, const float *a, int64_t lda, const float *x, float *y) {
  const int64_t outputs = transpose ? n : m, inner = transpose ? m : n;
  for (int64_t i = 0; i < outputs; ++i) {
    float sum = 0;
    for (int64_t p = 0; p < inner; ++p) sum += (transpose ? a[p + i * lda] : a[i + p * lda]) * x[p];
    y[i] = sum;
  }
}

/// Runs `call` on host arrays the way GpuExecutor hands it to cuBLAS.
void runThroughColumnMajor(const LibraryCall &call, const float *a, const float *b, float *c) {
  const ColumnMajorCall blas = columnMajorCall(call);
  const float *blasA = blas.swapOperands ? b : a;
  const float *blasB = blas.swapOperands ? a : b;
  if (blas.isGemv) {
    hostSgemv(blas.transposeA, blas.m, blas.n, blasA, blas.lda, blasB, c);
    return;
  }
  if (blas.transposeA) {
    hostSgemmTN(blas.m, blas.n, blas.k, blasA, blas.lda, blasB, blas.ldb, c, blas.ldc);
    return;
  }
  for (int64_t entry = 0; entry < blas.batch; ++entry)
    hostSgemmNN(blas.m, blas.n, blas.k, blasA + entry * blas.strideA, blas.lda, blasB + entry * blas.strideB,
                blas.ldb, c + entry * blas.strideC, blas.ldc);
}

/// The row-major definition: c = a * b per batch entry (gemv: y = A x).
std::vector<float> rowMajorProduct(const LibraryCall &call, const std::vector<float> &a, const std::vector<float> &b) {
  if (call.op == LibraryOp::Gemv) {
    std::vector<float> y(call.m);
    for (int64_t i = 0; i < call.m; ++i) {
      float sum = 0;
      for (int64_t p = 0; p < call.k; ++p) sum += a[i * call.k + p] * b[p];
      y[i] = sum;
    }
    return y;
  }
  const int64_t batch = call.op == LibraryOp::GemmBatched ? call.batch : 1;
  std::vector<float> c(batch * call.m * call.n);
  for (int64_t e = 0; e < batch; ++e)
    for (int64_t i = 0; i < call.m; ++i)
      for (int64_t j = 0; j < call.n; ++j) {
        float sum = 0;
        for (int64_t p = 0; p < call.k; ++p)
          sum += a[e * call.m * call.k + i * call.k + p] *
                 (call.op == LibraryOp::GemmBf16F32 ? b[j * call.k + p] // b is n x k
                                                    : b[e * call.k * call.n + p * call.n + j]);
        c[e * call.m * call.n + i * call.n + j] = sum;
      }
  return c;
}

/// Small integers: every product and sum is exact, so any layout mistake shows
/// as a difference, never as rounding.
std::vector<float> smallIntegers(uint64_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int> value(-4, 4);
  std::vector<float> out(count);
  for (float &element : out) element = static_cast<float>(value(generator));
  return out;
}

LibraryCall callOf(LibraryOp op, int64_t m, int64_t n, int64_t k, int64_t batch = 1) {
  LibraryCall call;
  call.op = op;
  call.m = m;
  call.n = n;
  call.k = k;
  call.batch = batch;
  return call;
}

/// The calls of the tests: ragged, non-square, m != n != k so that a swap shows.
std::vector<LibraryCall> raggedCalls() {
  return {callOf(LibraryOp::Gemm, 37, 29, 23),       callOf(LibraryOp::Gemm, 1, 7, 5),
          callOf(LibraryOp::GemmF16F32, 33, 17, 9),  callOf(LibraryOp::GemmBatched, 13, 11, 7, 3),
          callOf(LibraryOp::Gemv, 7, 0, 33),         callOf(LibraryOp::Gemv, 64, 0, 100),
          callOf(LibraryOp::GemmBf16F32, 19, 13, 24)};
}

/// An executor that implements nothing but what the default library calls need.
class NoLibraryExecutor final : public Executor {
public:
  NoLibraryExecutor() { properties_.backend = "test"; }
  const DeviceProperties &properties() const override { return properties_; }
  Result<BufferHandle> allocate(uint64_t) override { return unused(); }
  Result<void> free(BufferHandle) override { return unused(); }
  Result<void> copyToDevice(BufferHandle, uint64_t, const void *, uint64_t) override { return unused(); }
  Result<void> copyToHost(void *, BufferHandle, uint64_t, uint64_t) override { return unused(); }
  Result<void> memset(BufferHandle, uint64_t, uint8_t, uint64_t) override { return unused(); }
  Result<ModuleHandle> loadModule(const std::vector<uint8_t> &, ModuleFormat) override { return unused(); }
  Result<void> unloadModule(ModuleHandle) override { return unused(); }
  Result<KernelInfo> getKernel(ModuleHandle, const std::string &) override { return unused(); }
  Result<void> launch(KernelHandle, const LaunchConfig &, const PackedArgs &) override { return unused(); }
  Result<void> synchronize() override { return unused(); }
  Result<std::vector<float>> timeLaunch(KernelHandle, const LaunchConfig &, const PackedArgs &,
                                        const TimingOptions &) override {
    return unused();
  }
  Result<void> flushL2() override { return unused(); }

private:
  static Error unused() { return makeExecError(ExecErrorKind::Internal, "not used by these tests"); }
  DeviceProperties properties_;
};

/// Restores an environment variable when the scope ends.
class ScopedEnvironment {
public:
  ScopedEnvironment(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name)) old_ = old, hadOld_ = true;
    ::setenv(name, value, 1);
  }
  ~ScopedEnvironment() {
    if (hadOld_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }

private:
  const char *name_;
  std::string old_;
  bool hadOld_ = false;
};

} // namespace

TEST(ColumnMajorCall, ComputesTheRowMajorProductForEveryOp) {
  uint32_t seed = 1;
  for (const LibraryCall &call : raggedCalls()) {
    const LibraryOperandCounts counts = libraryOperandCounts(call);
    const std::vector<float> a = smallIntegers(counts.a, seed++), b = smallIntegers(counts.b, seed++);
    std::vector<float> c(counts.c, NAN);
    runThroughColumnMajor(call, a.data(), b.data(), c.data());
    EXPECT_EQ(c, rowMajorProduct(call, a, b))
        << libraryOpName(call.op) << " m=" << call.m << " n=" << call.n << " k=" << call.k << " batch=" << call.batch;
  }
}

TEST(ColumnMajorCall, GemmSwapsOperandsAndLeadingDimensionsAreRowLengths) {
  const ColumnMajorCall gemm = columnMajorCall(callOf(LibraryOp::Gemm, 100, 30, 7));
  EXPECT_TRUE(gemm.swapOperands);
  EXPECT_FALSE(gemm.transposeA);
  EXPECT_EQ(gemm.m, 30);
  EXPECT_EQ(gemm.n, 100);
  EXPECT_EQ(gemm.k, 7);
  EXPECT_EQ(gemm.lda, 30); // row-major B is 7 x 30
  EXPECT_EQ(gemm.ldb, 7);  // row-major A is 100 x 7
  EXPECT_EQ(gemm.ldc, 30);
  const ColumnMajorCall batched = columnMajorCall(callOf(LibraryOp::GemmBatched, 100, 30, 7, 4));
  EXPECT_EQ(batched.batch, 4);
  EXPECT_EQ(batched.strideA, 7 * 30);
  EXPECT_EQ(batched.strideB, 100 * 7);
  EXPECT_EQ(batched.strideC, 100 * 30);
  const ColumnMajorCall gemv = columnMajorCall(callOf(LibraryOp::Gemv, 100, 0, 7));
  EXPECT_TRUE(gemv.isGemv);
  EXPECT_TRUE(gemv.transposeA);
  EXPECT_FALSE(gemv.swapOperands);
  EXPECT_EQ(gemv.m, 7);
  EXPECT_EQ(gemv.n, 100);
  EXPECT_EQ(gemv.lda, 7);
  // b is n x k row-major: BLAS's A is its column-major k x n view, transposed.
  const ColumnMajorCall kMajor = columnMajorCall(callOf(LibraryOp::GemmBf16F32, 100, 30, 8));
  EXPECT_TRUE(kMajor.swapOperands);
  EXPECT_TRUE(kMajor.transposeA);
  EXPECT_EQ(kMajor.m, 30);
  EXPECT_EQ(kMajor.n, 100);
  EXPECT_EQ(kMajor.lda, 8);
  EXPECT_EQ(kMajor.ldb, 8);
  EXPECT_EQ(kMajor.ldc, 30);
}

TEST(LibraryCall, OperandCountsAndElementSizes) {
  LibraryOperandCounts gemm = libraryOperandCounts(callOf(LibraryOp::Gemm, 3, 5, 7));
  EXPECT_EQ(gemm.a, 21u);
  EXPECT_EQ(gemm.b, 35u);
  EXPECT_EQ(gemm.c, 15u);
  LibraryOperandCounts batched = libraryOperandCounts(callOf(LibraryOp::GemmBatched, 3, 5, 7, 2));
  EXPECT_EQ(batched.a, 42u);
  EXPECT_EQ(batched.c, 30u);
  LibraryOperandCounts gemv = libraryOperandCounts(callOf(LibraryOp::Gemv, 3, 0, 7));
  EXPECT_EQ(gemv.a, 21u);
  EXPECT_EQ(gemv.b, 7u);
  EXPECT_EQ(gemv.c, 3u);
  EXPECT_EQ(libraryElementBytes(LibraryOp::GemmF16F32).a, 2u);
  EXPECT_EQ(libraryElementBytes(LibraryOp::GemmF16F32).c, 4u);
  EXPECT_STREQ(libraryOpName(LibraryOp::GemmF16F32), "gemm_f16_f32");
  EXPECT_EQ(libraryElementBytes(LibraryOp::GemmBf16F32).b, 2u);
  EXPECT_STREQ(libraryOpName(LibraryOp::GemmBf16F32), "gemm_bf16_f32");
  const LibraryOperandCounts fp8 = libraryElementBytes(LibraryOp::GemmE4M3F32);
  EXPECT_EQ(fp8.a, 1u);
  EXPECT_EQ(fp8.b, 1u);
  EXPECT_EQ(fp8.c, 4u);
  EXPECT_STREQ(libraryOpName(LibraryOp::GemmE4M3F32), "gemm_e4m3_f32");
}

TEST(LibraryCall, ExecutorsWithoutALibrarySayUnavailable) {
  NoLibraryExecutor executor;
  Result<void> ran = executor.runLibraryCall(callOf(LibraryOp::Gemm, 2, 2, 2));
  ASSERT_FALSE(ran);
  EXPECT_EQ(execErrorKindOf(ran.error()), ExecErrorKind::Unavailable);
  EXPECT_EQ(ran.error().kind, ErrorKind::ToolMissing);
  EXPECT_EQ(render(ran.error()), "unavailable: vendor-library calls (gemm) are not available on this executor (test)");
  Result<std::vector<float>> timed = executor.timeLibraryCall(callOf(LibraryOp::Gemv, 2, 0, 2), TimingOptions{});
  ASSERT_FALSE(timed);
  EXPECT_EQ(execErrorKindOf(timed.error()), ExecErrorKind::Unavailable);
  EXPECT_NE(timed.error().message.find("(gemv) are not available on this executor"), std::string::npos);
}

#if PTXFORGE_HAVE_CUBLAS
TEST(Cublas, AMissingLibraryIsAClearError) {
  ScopedEnvironment missing("PTXFORGE_LIBCUBLAS", "/nonexistent/libcublas.so.13");
  Result<std::shared_ptr<const Cublas>> loaded = Cublas::load();
  ASSERT_FALSE(loaded);
  EXPECT_EQ(execErrorKindOf(loaded.error()), ExecErrorKind::Unavailable);
  EXPECT_EQ(render(loaded.error()).rfind("unavailable: cuBLAS not found: /nonexistent/libcublas.so.13", 0), 0u)
      << loaded.error().message;
  EXPECT_NE(loaded.error().message.find("set PTXFORGE_LIBCUBLAS"), std::string::npos);
}

TEST(Cublas, LoadsAndResolvesWhereTheToolkitHasIt) {
  Result<std::shared_ptr<const Cublas>> loaded = Cublas::load();
  if (!loaded) GTEST_SKIP() << loaded.error().message;
  const Cublas &library = **loaded;
  EXPECT_FALSE(library.libraryName.empty());
  EXPECT_NE(library.create, nullptr);
  EXPECT_NE(library.setStream, nullptr);
  EXPECT_NE(library.sgemm, nullptr);
  EXPECT_NE(library.sgemv, nullptr);
  EXPECT_NE(library.sgemmStridedBatched, nullptr);
  EXPECT_NE(library.gemmEx, nullptr);
  EXPECT_EQ(library.describe(CUBLAS_STATUS_NOT_SUPPORTED).rfind("CUBLAS_STATUS_NOT_SUPPORTED", 0), 0u);
}

TEST(CublasLt, AMissingLibraryIsAClearError) {
  ScopedEnvironment missing("PTXFORGE_LIBCUBLASLT", "/nonexistent/libcublasLt.so.13");
  Result<std::shared_ptr<const CublasLt>> loaded = CublasLt::load();
  ASSERT_FALSE(loaded);
  EXPECT_EQ(execErrorKindOf(loaded.error()), ExecErrorKind::Unavailable);
  EXPECT_EQ(render(loaded.error()).rfind("unavailable: cuBLASLt not found: /nonexistent/libcublasLt.so.13", 0), 0u)
      << loaded.error().message;
  EXPECT_NE(loaded.error().message.find("set PTXFORGE_LIBCUBLASLT"), std::string::npos);
}

TEST(CublasLt, LoadsAndResolvesWhereTheToolkitHasIt) {
  Result<std::shared_ptr<const CublasLt>> loaded = CublasLt::load();
  if (!loaded) GTEST_SKIP() << loaded.error().message;
  const CublasLt &library = **loaded;
  EXPECT_FALSE(library.libraryName.empty());
  EXPECT_NE(library.create, nullptr);
  EXPECT_NE(library.algoGetHeuristic, nullptr);
  EXPECT_NE(library.matmul, nullptr);
  EXPECT_EQ(library.describe(CUBLAS_STATUS_NOT_SUPPORTED).rfind("CUBLAS_STATUS_NOT_SUPPORTED", 0), 0u);
}
#endif

TEST(NoDriver, WorkerAnswersALibraryCallWithNoGpu) {
  IsolatedOptions options;
  options.workerPath = PTXFORGE_EXEC_TEST_WORKER;
  if (createGpuExecutor())
    GTEST_SKIP() << "a GPU is present; the no-driver path is not taken";
  WorkerProcess worker(options);
  protocol::Request request;
  request.op = protocol::Op::RunLibraryCall;
  request.library = callOf(LibraryOp::Gemm, 4, 4, 4);
  Result<protocol::Response> answer = worker.call(request, 60'000);
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->status, ExecErrorKind::NoDevice);
  EXPECT_FALSE(answer->message.empty()); // the driver's reason, without the code (the status byte)
  EXPECT_TRUE(worker.running()); // an ordinary error answer keeps the worker
}

// --- On a GPU (label gpu) ---------------------------------------------------

namespace {

/// f32 -> f16 bits, round to nearest even (inputs here are small integers: exact).
uint16_t toHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  if (value == 0) return static_cast<uint16_t>(sign);
  const int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  const uint32_t mantissa = bits & 0x7fffffu;
  return static_cast<uint16_t>(sign | (uint32_t(exponent) << 10) | (mantissa >> 13));
}

void checkOnExecutor(Executor &executor, const char *label) {
  uint32_t seed = 100;
  for (LibraryCall call : raggedCalls()) {
    SCOPED_TRACE(std::string(label) + " " + libraryOpName(call.op) + " m=" + std::to_string(call.m));
    const LibraryOperandCounts counts = libraryOperandCounts(call);
    const LibraryOperandCounts sizes = libraryElementBytes(call.op);
    const std::vector<float> a = smallIntegers(counts.a, seed++), b = smallIntegers(counts.b, seed++);
    constexpr uint64_t kOffset = 256; // interior pointers, as the gate passes them
    auto upload = [&](const std::vector<float> &values, uint64_t elementBytes) -> DeviceBuffer {
      Result<DeviceBuffer> buffer = executor.allocateBuffer(kOffset + values.size() * elementBytes + kOffset);
      EXPECT_TRUE(buffer) << buffer.error().message;
      if (!buffer) return {};
      if (elementBytes == 2) {
        std::vector<uint16_t> halves(values.size());
        for (size_t i = 0; i < values.size(); ++i) {
          uint32_t bits;
          std::memcpy(&bits, &values[i], 4);
          // bf16 is the top half of an f32 (exact for small integers).
          halves[i] = call.op == LibraryOp::GemmBf16F32 ? static_cast<uint16_t>(bits >> 16) : toHalf(values[i]);
        }
        EXPECT_TRUE(executor.copyToDevice(buffer->handle(), kOffset, halves.data(), halves.size() * 2));
      } else {
        EXPECT_TRUE(executor.copyToDevice(buffer->handle(), kOffset, values.data(), values.size() * 4));
      }
      return std::move(*buffer);
    };
    DeviceBuffer bufferA = upload(a, sizes.a), bufferB = upload(b, sizes.b);
    DeviceBuffer bufferC = upload(std::vector<float>(counts.c, NAN), sizes.c);
    ASSERT_TRUE(bufferA && bufferB && bufferC);
    call.a = {bufferA.handle(), kOffset};
    call.b = {bufferB.handle(), kOffset};
    call.c = {bufferC.handle(), kOffset};
    Result<void> ran = executor.runLibraryCall(call);
    ASSERT_TRUE(ran) << ran.error().message;
    std::vector<float> c(counts.c);
    ASSERT_TRUE(executor.copyToHost(c.data(), bufferC.handle(), kOffset, c.size() * 4));
    EXPECT_EQ(c, rowMajorProduct(call, a, b));
    TimingOptions timing;
    timing.repetitions = 3;
    Result<std::vector<float>> times = executor.timeLibraryCall(call, timing);
    ASSERT_TRUE(times) << times.error().message;
    EXPECT_EQ(times->size(), 3u);
  }
  // An operand past the end of its buffer is refused before cuBLAS sees it.
  Result<DeviceBuffer> small = executor.allocateBuffer(64);
  ASSERT_TRUE(small);
  LibraryCall tooBig = callOf(LibraryOp::Gemm, 8, 8, 8);
  tooBig.a = tooBig.b = tooBig.c = {small->handle(), 0};
  Result<void> refused = executor.runLibraryCall(tooBig);
  ASSERT_FALSE(refused);
  EXPECT_EQ(execErrorKindOf(refused.error()), ExecErrorKind::InvalidArgument) << refused.error().message;
}

} // namespace

TEST(GpuLibraryCall, CublasMatchesTheHostInProcessAndIsolated) {
#if PTXFORGE_HAVE_CUBLAS
  Result<std::shared_ptr<const Cublas>> library = Cublas::load();
  if (!library) GTEST_SKIP() << library.error().message;
#else
  GTEST_SKIP() << "built without cublas_v2.h";
#endif
  Result<std::unique_ptr<Executor>> gpu = createGpuExecutor();
  if (!gpu) GTEST_SKIP() << gpu.error().message;
  checkOnExecutor(**gpu, "in-process");
  IsolatedOptions options;
  options.workerPath = PTXFORGE_EXEC_TEST_WORKER;
  Result<std::unique_ptr<Executor>> isolated = createIsolatedExecutor(options);
  ASSERT_TRUE(isolated) << isolated.error().message;
  checkOnExecutor(**isolated, "isolated");
}
