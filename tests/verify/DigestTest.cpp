// The gate's device digest of inputs (verify/Digest.h): the digest kernel, run
// by the emulator, agrees with the host's digest for every tail length; one
// changed byte, or the same bytes under another key, changes it.
#include "emu/EmuExecutor.h"
#include "verify/Digest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace ptxforge::verify {
namespace {

std::vector<uint8_t> randomBytes(size_t count, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<uint8_t> bytes(count);
  for (uint8_t &b : bytes) b = static_cast<uint8_t>(random());
  return bytes;
}

TEST(Digest, DeviceAgreesWithHostForEveryTail) {
  std::unique_ptr<exec::Executor> executor = emu::createEmuExecutor();
  Result<std::unique_ptr<DeviceDigest>> digest = DeviceDigest::load(*executor, "sm_90");
  ASSERT_TRUE(digest) << render(digest.error());
  // Sizes around the tail cases and past one block's and one grid-stride's words.
  for (size_t bytes : {1, 2, 3, 4, 5, 7, 8, 1023, 1024, 1025, 4099, 300001}) {
    std::vector<uint8_t> data = randomBytes(bytes, static_cast<uint32_t>(bytes));
    const uint64_t guard = 256;
    Result<exec::DeviceBuffer> buffer = executor->allocateBuffer(bytes + 2 * guard);
    ASSERT_TRUE(buffer);
    ASSERT_TRUE(executor->memset(buffer->handle(), 0, 0xa5, bytes + 2 * guard));
    ASSERT_TRUE(executor->copyToDevice(buffer->handle(), guard, data.data(), bytes));
    const uint64_t key = 0x1234'5678'9abc'def0ull ^ bytes;
    Result<uint64_t> device = (*digest)->of(buffer->handle(), guard, bytes, key);
    ASSERT_TRUE(device) << render(device.error());
    EXPECT_EQ(*device, hostDigest(data.data(), bytes, key)) << bytes << " bytes";
    EXPECT_NE(hostDigest(data.data(), bytes, key), hostDigest(data.data(), bytes, key + 1));
    // The last byte (in the tail when there is one) and the first.
    for (size_t at : {bytes - 1, size_t{0}}) {
      std::vector<uint8_t> changed = data;
      changed[at] ^= 0x01;
      EXPECT_NE(hostDigest(changed.data(), bytes, key), *device) << "byte " << at << " of " << bytes;
    }
  }
}

TEST(Digest, SwappedWordsChangeIt) {
  // A sum of per-word terms keyed by position: moving data around is a change.
  std::vector<uint8_t> data = randomBytes(64, 7), swapped = data;
  std::swap_ranges(swapped.begin(), swapped.begin() + 4, swapped.begin() + 4);
  EXPECT_NE(hostDigest(data.data(), data.size(), 99), hostDigest(swapped.data(), swapped.size(), 99));
}

TEST(Digest, KernelIsTheGatesOwn) {
  EXPECT_NE(digestKernelPtx().find(".entry ptxforge_gate_digest"), std::string::npos);
}

} // namespace
} // namespace ptxforge::verify
