// The gate's device kernels (verify/DeviceGate.h), run by the emulator: input
// generation gives the bytes tasks::generateInput gives for every element
// type and distribution the device makes; the comparison gives
// tasks::compareBuffers' counts, largest errors and first mismatch on planted
// differences (NaN, infinities, ties of the largest error, integers with and
// without a tolerance), and the digest of the reference side.
// The same tests run on a GPU with PTXFORGE_GATE_TEST_GPU=1 (scripts/gpu-check.sh).
#include "emu/EmuExecutor.h"
#include "exec/GpuExecutor.h"
#include "tasks/Compare.h"
#include "tasks/Inputs.h"
#include "verify/DeviceGate.h"
#include "verify/Digest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

namespace ptxforge::verify {
namespace {

using tasks::ElementType;
using tasks::InitDistribution;

struct Fixture {
  std::unique_ptr<exec::Executor> executor;
  std::unique_ptr<DeviceGate> gate;
  std::string skip;
};

Fixture &fixture() {
  static Fixture f = [] {
    Fixture made;
    const char *gpu = std::getenv("PTXFORGE_GATE_TEST_GPU");
    std::string arch = "sm_90";
    if (gpu && std::string(gpu) == "1") {
      Result<std::unique_ptr<exec::Executor>> opened = exec::createGpuExecutor(0);
      if (!opened) {
        made.skip = "PTXFORGE_GATE_TEST_GPU=1 but no GPU: " + render(opened.error());
        return made;
      }
      made.executor = std::move(*opened);
      arch = made.executor->properties().arch();
    } else {
      made.executor = emu::createEmuExecutor();
    }
    Result<std::unique_ptr<DeviceGate>> loaded = DeviceGate::load(*made.executor, arch);
    if (!loaded) made.skip = "the gate's kernels did not load: " + render(loaded.error());
    else made.gate = std::move(*loaded);
    return made;
  }();
  return f;
}

constexpr uint64_t kGuard = 512;

/// A buffer of `bytes` between two guard zones of 0xa5.
exec::DeviceBuffer guarded(exec::Executor &executor, uint64_t bytes) {
  Result<exec::DeviceBuffer> buffer = executor.allocateBuffer(bytes + 2 * kGuard);
  EXPECT_TRUE(buffer);
  EXPECT_TRUE(executor.memset(buffer->handle(), 0, 0xa5, bytes + 2 * kGuard));
  return std::move(*buffer);
}

tasks::ParamSpec param(const char *name, ElementType type, tasks::InitSpec init) {
  tasks::ParamSpec p;
  p.name = name;
  p.type = type;
  p.isPointer = true;
  p.role = tasks::ParamRole::Input;
  p.init = std::move(init);
  return p;
}

tasks::InitSpec uniform(double min, double max, std::vector<double> scales = {}) {
  tasks::InitSpec init;
  init.distribution = InitDistribution::Uniform;
  init.min = min, init.max = max, init.trialScales = std::move(scales);
  return init;
}
tasks::InitSpec integers(double min, double max) {
  tasks::InitSpec init;
  init.distribution = InitDistribution::Int;
  init.min = min, init.max = max;
  return init;
}
tasks::InitSpec simple(InitDistribution distribution, double value = 0, int64_t modulus = 1) {
  tasks::InitSpec init;
  init.distribution = distribution;
  init.value = value, init.modulus = modulus;
  return init;
}

void expectGenerated(const tasks::ParamSpec &p, int64_t count, uint64_t seed, int trial) {
  Fixture &f = fixture();
  std::vector<std::byte> want = tasks::generateInput(p, count, seed, trial);
  exec::DeviceBuffer buffer = guarded(*f.executor, want.size());
  Result<void> made = f.gate->generate(buffer.handle(), kGuard, p, count, seed, trial);
  ASSERT_TRUE(made) << render(made.error());
  std::vector<std::byte> got(want.size() + 2 * kGuard);
  ASSERT_TRUE(f.executor->copyToHost(got.data(), buffer.handle(), 0, got.size()));
  size_t differing = 0, first = 0;
  for (size_t b = 0; b < want.size(); ++b)
    if (got[kGuard + b] != want[b] && differing++ == 0) first = b;
  EXPECT_EQ(differing, 0u) << p.name << " (" << tasks::elementTypeName(p.type) << ", "
                           << tasks::initDistributionName(p.init.distribution) << "), " << count
                           << " elements: first differing byte " << first;
  for (uint64_t b = 0; b < kGuard; ++b) {
    ASSERT_EQ(got[b], std::byte{0xa5}) << "wrote before the buffer";
    ASSERT_EQ(got[kGuard + want.size() + b], std::byte{0xa5}) << "wrote past the buffer";
  }
}

#define SKIP_WITHOUT_GATE()                                                                                            \
  if (!fixture().skip.empty()) GTEST_SKIP() << fixture().skip

TEST(DeviceGate, GeneratesTheHostsBytesForEveryTypeAndDistribution) {
  SKIP_WITHOUT_GATE();
  const ElementType all[] = {ElementType::F32, ElementType::F64, ElementType::F16, ElementType::BF16,
                             ElementType::I8,  ElementType::U8,  ElementType::I32, ElementType::U32,
                             ElementType::I64, ElementType::U64, ElementType::E4M3};
  for (ElementType type : all) {
    expectGenerated(param("u", type, uniform(-1.0, 1.0)), 3001, 7, 0);
    // A range narrower than the type's spacing near it: redraws.
    expectGenerated(param("narrow", type, uniform(1000.0, 1000.5)), 257, 11, 2);
    expectGenerated(param("scaled", type, uniform(-4.0, 4.0, {1.0, 1e4})), 999, 5, 1);
    expectGenerated(param("i", type, integers(-1000, 1000)), 2049, 3, 0);
    expectGenerated(param("c", type, simple(InitDistribution::Const, 1.5)), 33, 1, 0);
    expectGenerated(param("iota", type, simple(InitDistribution::Iota)), 70001, 1, 0);
    expectGenerated(param("mod", type, simple(InitDistribution::IndexMod, 0, 7)), 4097, 1, 0);
  }
  // Every 64-bit integer (a span of 0), and the full u8 range with its rejection threshold.
  expectGenerated(param("all64", ElementType::U64, integers(-9223372036854775808.0, 9223372036854775807.0)), 500,
                  9, 0);
  expectGenerated(param("bytes", ElementType::U8, integers(0, 255)), 10000, 13, 0);
  // Wide uniform ranges where f16 overflows and bf16 rounds coarsely.
  expectGenerated(param("wide16", ElementType::F16, uniform(-1e5, 1e5)), 2000, 17, 0);
  expectGenerated(param("widebf", ElementType::BF16, uniform(-1e30, 1e30)), 2000, 19, 0);
  expectGenerated(param("tiny16", ElementType::F16, uniform(-1e-6, 1e-6)), 2000, 23, 0);
  // e4m3: saturation past 448 and the subnormals.
  expectGenerated(param("wide8", ElementType::E4M3, uniform(-1000.0, 1000.0)), 2000, 29, 0);
  expectGenerated(param("tiny8", ElementType::E4M3, uniform(-0.02, 0.02)), 2000, 31, 0);
}

TEST(DeviceGate, NormalStaysOnTheHost) {
  tasks::InitSpec normal;
  normal.distribution = InitDistribution::Normal;
  EXPECT_FALSE(DeviceGate::canGenerate(param("n", ElementType::F32, normal)));
  EXPECT_TRUE(DeviceGate::canGenerate(param("u", ElementType::F32, uniform(0, 1))));
}

template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T> &values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

/// Compares on the device and on the host; every field the device reports must agree.
void expectSameComparison(ElementType type, const std::vector<uint8_t> &got, const std::vector<uint8_t> &want,
                          tasks::Tolerance tolerance, const char *what) {
  Fixture &f = fixture();
  const size_t count = want.size() / tasks::elementSize(type);
  exec::DeviceBuffer g = guarded(*f.executor, got.size()), w = guarded(*f.executor, want.size());
  ASSERT_TRUE(f.executor->copyToDevice(g.handle(), kGuard, got.data(), got.size()));
  ASSERT_TRUE(f.executor->copyToDevice(w.handle(), kGuard, want.data(), want.size()));
  const uint64_t key = 0x0123'4567'89ab'cdefull;
  Result<DeviceComparison> device = f.gate->compare(type, g.handle(), kGuard, w.handle(), kGuard, count, tolerance, key);
  ASSERT_TRUE(device) << render(device.error());
  tasks::CompareResult host = tasks::compareBuffers(type, got.data(), want.data(), count, tolerance);
  const tasks::CompareResult &d = device->compare;
  EXPECT_EQ(d.passed, host.passed) << what;
  EXPECT_EQ(d.count, host.count) << what;
  EXPECT_EQ(d.mismatches, host.mismatches) << what;
  EXPECT_EQ(d.nanInGot, host.nanInGot) << what;
  EXPECT_EQ(d.maxAbsError, host.maxAbsError) << what;
  EXPECT_EQ(d.maxAbsErrorIndex, host.maxAbsErrorIndex) << what;
  EXPECT_EQ(d.maxRelError, host.maxRelError) << what;
  EXPECT_EQ(d.firstMismatch, host.firstMismatch) << what;
  EXPECT_EQ(device->wantDigest, hostDigest(want.data(), want.size(), key)) << what;
}

TEST(DeviceGate, ComparesAsTheHostDoes) {
  SKIP_WITHOUT_GATE();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  tasks::Tolerance f32;
  f32.atol = 1e-5, f32.rtol = 1e-5;
  // Equal, within tolerance, far apart, in several blocks' grid-stride ranges.
  for (size_t count : {1, 3, 256, 1025, 300001}) {
    std::vector<float> want(count), got(count);
    for (size_t i = 0; i < count; ++i) want[i] = static_cast<float>(std::sin(0.001 * static_cast<double>(i)) * 3);
    got = want;
    expectSameComparison(ElementType::F32, bytesOf(got), bytesOf(want), f32, "equal");
    for (size_t i = 0; i < count; i += 7) got[i] = std::nextafter(want[i], 10.0f);
    expectSameComparison(ElementType::F32, bytesOf(got), bytesOf(want), f32, "one ulp");
    got[count - 1] += 1.0f;
    got[count / 2] = nan;
    expectSameComparison(ElementType::F32, bytesOf(got), bytesOf(want), f32, "a NaN and a far element");
  }
  // The largest error reached at two indices in different blocks: the first wins.
  {
    std::vector<float> want(5000, 1.0f), got(5000, 1.0f);
    got[4000] = 3.0f, got[1200] = 3.0f, got[2] = -1.0f;
    expectSameComparison(ElementType::F32, bytesOf(got), bytesOf(want), f32, "tied largest errors");
  }
  // NaN expected (matches only NaN), infinities, zeros (no relative error).
  {
    std::vector<float> want = {nan, nan, inf, -inf, inf, 0.0f, 0.0f, -0.0f, 1.0f};
    std::vector<float> got = {nan, 1.0f, inf, inf, 1e38f, 1e-6f, 0.0f, 0.0f, nan};
    expectSameComparison(ElementType::F32, bytesOf(got), bytesOf(want), f32, "special values");
  }
  // f16 and bf16 decode, odd byte counts (the digest's tail).
  {
    std::vector<uint16_t> want, got;
    for (int i = 0; i < 1001; ++i) {
      want.push_back(tasks::floatToHalfBits(static_cast<float>(i) * 0.01f));
      got.push_back(tasks::floatToHalfBits(static_cast<float>(i) * 0.01f + (i % 97 == 0 ? 0.5f : 0.0f)));
    }
    tasks::Tolerance half;
    half.atol = 1e-3, half.rtol = 1e-3;
    expectSameComparison(ElementType::F16, bytesOf(got), bytesOf(want), half, "f16");
    expectSameComparison(ElementType::BF16, bytesOf(got), bytesOf(want), half, "bf16 bits");
    std::vector<uint8_t> got8, want8;
    for (int i = 0; i < 1001; ++i) {
      want8.push_back(tasks::floatToE4M3Bits(static_cast<float>(i % 200 - 100) * 0.05f));
      got8.push_back(i % 89 == 0 ? 0x7f : tasks::floatToE4M3Bits(static_cast<float>(i % 200 - 100) * 0.05f + (i % 37 == 0 ? 1.0f : 0.0f)));
    }
    expectSameComparison(ElementType::E4M3, got8, want8, half, "e4m3");
  }
  // Integers: exact without atol, within atol when given; 64-bit values past 2^53.
  {
    std::vector<int32_t> want(777), got(777);
    for (int i = 0; i < 777; ++i) want[i] = i * 31 - 5000, got[i] = want[i] + (i % 50 == 0 ? 2 : 0);
    tasks::Tolerance exact;
    expectSameComparison(ElementType::I32, bytesOf(got), bytesOf(want), exact, "i32 exact");
    tasks::Tolerance loose;
    loose.atol = 1, loose.rtol = 0, loose.atolGiven = true;
    expectSameComparison(ElementType::I32, bytesOf(got), bytesOf(want), loose, "i32 atol 1");
    std::vector<uint64_t> w64 = {(uint64_t{1} << 60) + 1, 5, 7}, g64 = {(uint64_t{1} << 60), 5, 8};
    expectSameComparison(ElementType::U64, bytesOf(g64), bytesOf(w64), exact, "u64 past 2^53");
    std::vector<uint8_t> w8(4099), g8(4099);
    for (size_t i = 0; i < w8.size(); ++i) w8[i] = static_cast<uint8_t>(i * 7), g8[i] = static_cast<uint8_t>(i * 7 + (i == 4098));
    expectSameComparison(ElementType::U8, g8, w8, exact, "u8 with a tail");
  }
  // f64 within rtol only.
  {
    std::vector<double> want(333), got(333);
    for (int i = 0; i < 333; ++i) want[i] = 1e6 * (i + 1), got[i] = want[i] * (1 + (i % 3) * 1e-11);
    tasks::Tolerance f64;
    f64.atol = 1e-10, f64.rtol = 1e-10;
    expectSameComparison(ElementType::F64, bytesOf(got), bytesOf(want), f64, "f64");
  }
}

TEST(DeviceGate, SourceIsTheGatesOwn) {
  EXPECT_NE(deviceGateSource().find("ptxforge_gate_fill"), std::string::npos);
  EXPECT_NE(deviceGateSource().find("ptxforge_gate_compare"), std::string::npos);
}

} // namespace
} // namespace ptxforge::verify
