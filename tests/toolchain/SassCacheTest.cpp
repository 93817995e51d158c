// sass cache tests: nvdisasm runs once per distinct cubin. A fake nvdisasm
// (a shell script that counts its calls and prints a fixed -json document)
// stands in through $PTXFORGE_NVDISASM, so these run on any machine.
#include "toolchain/SassCache.h"
#include "toolchain/SassStats.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace ptxforge::toolchain;

namespace {

class SassCache : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ptxforge-sass-cache-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    calls_ = dir_ / "calls";
    tool_ = dir_ / "nvdisasm";
    std::ofstream script(tool_);
    script << "#!/bin/sh\n"
           << "echo x >> '" << calls_.string() << "'\n"
           << R"(echo '[{"SM":{"version":{"major":9,"minor":0}},"Producer":"fake"},)"
           << R"([{"function-name":"k","sass-instructions":[{"opcode":"FFMA","operands":"R0,R1,R2,R3"},)"
           << R"({"opcode":"EXIT"}]}]]')" << "\n";
    script.close();
    std::filesystem::permissions(tool_, std::filesystem::perms::owner_all);
    saveEnv("PTXFORGE_NVDISASM", tool_.string());
    saveEnv("PTXFORGE_CACHE_DIR", (dir_ / "cache").string());
    saveEnv("PTXFORGE_SASS_CACHE", "");
    clearSassMemoryCache();
  }
  void TearDown() override {
    for (const auto &[name, value] : saved_)
      value ? ::setenv(name.c_str(), value->c_str(), 1) : ::unsetenv(name.c_str());
    clearSassMemoryCache();
    std::filesystem::remove_all(dir_);
  }
  void saveEnv(const std::string &name, const std::string &value) {
    const char *old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  /// How many times the fake nvdisasm ran.
  int calls() const {
    std::ifstream in(calls_);
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }

  std::filesystem::path dir_, calls_, tool_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

const std::vector<uint8_t> kCubinA = {0x7f, 'E', 'L', 'F', 1, 2, 3};
const std::vector<uint8_t> kCubinB = {0x7f, 'E', 'L', 'F', 4, 5, 6};

TEST_F(SassCache, SecondCallWithTheSameCubinDoesNotRunNvdisasm) {
  auto first = sassStats(kCubinA);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(calls(), 1);
  auto second = sassStats(kCubinA);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(calls(), 1);
  EXPECT_EQ(second->total.ffma, 1);
  EXPECT_EQ(second->code, first->code);
  EXPECT_EQ(second->arch, "sm_90");
}

TEST_F(SassCache, AnotherCubinRunsNvdisasm) {
  ASSERT_TRUE(sassStats(kCubinA));
  ASSERT_TRUE(sassStats(kCubinB));
  EXPECT_EQ(calls(), 2);
}

TEST_F(SassCache, AnotherProcessFindsTheEntryOnDisk) {
  auto first = sassStats(kCubinA);
  ASSERT_TRUE(first);
  EXPECT_TRUE(std::filesystem::exists(dir_ / "cache" / "sass" / (sassCacheKey(kCubinA) + ".json")));
  clearSassMemoryCache(); // what a new process starts with
  auto second = sassStats(kCubinA);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(calls(), 1);
  EXPECT_EQ(second->functions.at("k").instructions, 2);
  EXPECT_EQ(second->total.opcodes, first->total.opcodes);
  EXPECT_EQ(second->producer, "fake");
}

TEST_F(SassCache, ACorruptEntryIsAMiss) {
  ASSERT_TRUE(sassStats(kCubinA));
  clearSassMemoryCache();
  std::ofstream(dir_ / "cache" / "sass" / (sassCacheKey(kCubinA) + ".json")) << "{not json";
  ASSERT_TRUE(sassStats(kCubinA));
  EXPECT_EQ(calls(), 2);
}

TEST_F(SassCache, OffRunsNvdisasmEveryTime) {
  ::setenv("PTXFORGE_SASS_CACHE", "0", 1);
  ASSERT_TRUE(sassStats(kCubinA));
  ASSERT_TRUE(sassStats(kCubinA));
  EXPECT_EQ(calls(), 2);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "cache" / "sass"));
}

TEST_F(SassCache, DiskStaysWithinItsLimit) {
  SassCacheLimits limits;
  limits.diskBytes = 2048;
  SassStats stats;
  stats.code = std::string(200, 'x'); // an entry of about 400 bytes
  for (int i = 0; i < 40; ++i) rememberSassStats("key" + std::to_string(i), "t", stats, limits);
  uint64_t total = 0;
  for (const auto &entry : std::filesystem::directory_iterator(dir_ / "cache" / "sass")) total += entry.file_size();
  // The limit, plus what may be written between two trims (an eighth of it and one entry).
  EXPECT_LE(total, 2048u + 256u + 500u);
  EXPECT_TRUE(lookupSassStats("key39", "t", limits)); // the newest stay
}

TEST_F(SassCache, MemoryHoldsAtMostItsEntries) {
  SassCacheLimits limits;
  limits.memoryEntries = 2;
  limits.diskBytes = 0;
  SassStats stats;
  rememberSassStats("one", "t", stats, limits);
  rememberSassStats("two", "t", stats, limits);
  rememberSassStats("three", "t", stats, limits);
  EXPECT_FALSE(lookupSassStats("one", "t", limits));
  EXPECT_TRUE(lookupSassStats("three", "t", limits));
  EXPECT_FALSE(lookupSassStats("three", "another nvdisasm", limits));
}

} // namespace
