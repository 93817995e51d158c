// The bounded input reader (src/support/InputReader.h): a size limit named in
// its error, directories and unreadable paths as errors, never empty input.
#include "support/InputReader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace ptxforge;

namespace {

std::filesystem::path scratchFile(const std::string &name, const std::string &contents) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("ptxforge-reader-" + name);
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

} // namespace

TEST(InputReader, ReadsAFileUpToTheLimit) {
  std::filesystem::path path = scratchFile("exact", std::string(100, 'x'));
  Result<std::string> text = readFileBounded(path.string(), 100);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(text->size(), 100u);
  std::filesystem::remove(path);
}

TEST(InputReader, AFileOverTheLimitNamesTheLimitAndTheVariable) {
  std::filesystem::path path = scratchFile("over", std::string(2049, 'x'));
  Result<std::string> text = readFileBounded(path.string(), 2048);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().kind, ErrorKind::InvalidInput);
  EXPECT_NE(text.error().message.find("2 KiB"), std::string::npos) << text.error().message;
  EXPECT_NE(text.error().message.find("PTXFORGE_MAX_INPUT_BYTES"), std::string::npos) << text.error().message;
  std::filesystem::remove(path);
}

TEST(InputReader, AnEndlessDeviceStopsAtTheLimit) {
  // `lint /dev/zero` used to read until memory ran out.
  Result<std::string> text = readFileBounded("/dev/zero", 1 << 20);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("'/dev/zero' is larger than the input limit of 1 MiB"), std::string::npos)
      << text.error().message;
}

TEST(InputReader, AStreamStopsAtTheLimit) {
  std::FILE *zero = std::fopen("/dev/zero", "rb");
  ASSERT_TRUE(zero);
  Result<std::string> text = readStreamBounded(zero, "<stdin>", 4096);
  std::fclose(zero);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("'<stdin>'"), std::string::npos);
}

TEST(InputReader, ADirectoryIsAnErrorNotEmptyInput) {
  Result<std::string> text = readFileBounded(std::filesystem::temp_directory_path().string(), 1 << 20);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("is a directory"), std::string::npos) << text.error().message;
  EXPECT_NE(text.error().message.find(std::filesystem::temp_directory_path().string()), std::string::npos);
}

TEST(InputReader, AMissingFileNamesThePathAndTheReason) {
  Result<std::string> text = readFileBounded("/nonexistent/kernel.ptx", 1 << 20);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().kind, ErrorKind::Io);
  EXPECT_NE(text.error().message.find("'/nonexistent/kernel.ptx'"), std::string::npos);
  EXPECT_NE(text.error().message.find("No such file"), std::string::npos) << text.error().message;
}

TEST(InputReader, SizesAndTheEnvironmentVariable) {
  EXPECT_EQ(parseByteSize("4096").value(), 4096u);
  EXPECT_EQ(parseByteSize("64K").value(), 65536u);
  EXPECT_EQ(parseByteSize("256M").value(), size_t{256} << 20);
  EXPECT_EQ(parseByteSize("2G").value(), size_t{2} << 30);
  EXPECT_FALSE(parseByteSize(""));
  EXPECT_FALSE(parseByteSize("0"));
  EXPECT_FALSE(parseByteSize("-5"));
  EXPECT_FALSE(parseByteSize("12Q"));
  EXPECT_FALSE(parseByteSize("99999999999999999999G"));
  EXPECT_EQ(describeByteSize(kDefaultMaxInputBytes), "64 MiB");
  EXPECT_EQ(describeByteSize(1536), "1.5 KiB");

  ::unsetenv(kMaxInputBytesEnv);
  EXPECT_EQ(maxInputBytesFromEnvironment().value(), kDefaultMaxInputBytes);
  ::setenv(kMaxInputBytesEnv, "1M", 1);
  EXPECT_EQ(maxInputBytesFromEnvironment().value(), size_t{1} << 20);
  ::setenv(kMaxInputBytesEnv, "lots", 1);
  ASSERT_FALSE(maxInputBytesFromEnvironment());
  EXPECT_NE(maxInputBytesFromEnvironment().error().message.find(kMaxInputBytesEnv), std::string::npos);
  ::unsetenv(kMaxInputBytesEnv);
}
