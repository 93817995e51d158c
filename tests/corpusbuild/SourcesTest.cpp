// Source discovery: counting __global__ outside comments, literals,
// preprocessor lines and explicit instantiations; local includes; folders.
#include "corpus/Sources.h"

#include <gtest/gtest.h>

#include <fstream>

namespace ptxforge::corpus {
namespace {

TEST(CountGlobalFunctions, SkipsCommentsStringsMacrosAndInstantiations) {
  const char *source = R"(
// __global__ in a line comment
/* and __global__ in a block
   comment */
#define KERNEL __global__
const char *text = "__global__ in a string";
char c = '_';
extern "C" __global__ void a(float *p) {}
template <int N> __global__ void b(float *p) {}
template __global__ void b<1>(float *);
__global__ void c(), my__global__thing();
)";
  EXPECT_EQ(countGlobalFunctions(source), 3);
  EXPECT_EQ(countGlobalFunctions(""), 0);
}

TEST(LocalIncludes, QuotedOnlyAndNotInComments) {
  const char *source = "#include <cuda_fp16.h>\n#include \"common.cuh\"\n  #  include \"sub/dir.h\"\n"
                       "// #include \"commented.h\"\n/* #include \"block.h\" */\n";
  EXPECT_EQ(localIncludes(source), (std::vector<std::string>{"common.cuh", "sub/dir.h"}));
}

class SourceFolder : public ::testing::Test {
protected:
  void SetUp() override {
    root = std::filesystem::temp_directory_path() /
           ("ptxforge-sources-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root / "sub");
  }
  void TearDown() override { std::filesystem::remove_all(root); }
  void write(const std::filesystem::path &relative, const std::string &text) {
    std::ofstream(root / relative) << text;
  }
  std::filesystem::path root;
};

TEST_F(SourceFolder, FindsCuFilesSortedAndKeysOnHeaders) {
  write("b.cu", "#include \"common.cuh\"\n__global__ void k() {}\n");
  write("sub/a.cu", "__global__ void k() {}\n");
  write("common.cuh", "#define N 1\n");
  write("notes.txt", "__global__\n");
  Result<std::vector<SourceFile>> found = discoverSources({root.string()});
  ASSERT_TRUE(found) << render(found.error());
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ(found->at(0).path, (root / "b.cu").generic_string());
  EXPECT_EQ(found->at(1).path, (root / "sub/a.cu").generic_string());
  EXPECT_EQ(found->at(0).globalFunctions, 1);
  const std::string before = found->at(0).contentKey;
  EXPECT_NE(before, found->at(0).sha256); // the header is part of the key

  // Editing the header changes the including file's key, not the other's.
  const std::string otherBefore = found->at(1).contentKey;
  write("common.cuh", "#define N 2\n");
  Result<std::vector<SourceFile>> again = discoverSources({root.string()});
  ASSERT_TRUE(again);
  EXPECT_NE(again->at(0).contentKey, before);
  EXPECT_EQ(again->at(0).sha256, found->at(0).sha256);
  EXPECT_EQ(again->at(1).contentKey, otherBefore);
}

TEST_F(SourceFolder, AFileNamedTwiceIsOneSource) {
  write("a.cu", "__global__ void k() {}\n");
  Result<std::vector<SourceFile>> found = discoverSources({(root / "a.cu").string(), root.string()});
  ASSERT_TRUE(found) << render(found.error());
  EXPECT_EQ(found->size(), 1u);
}

TEST_F(SourceFolder, MissingPathsAndEmptyFoldersAreErrors) {
  Result<std::vector<SourceFile>> missing = discoverSources({(root / "nope.cu").string()});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "file-not-found");
  Result<std::vector<SourceFile>> empty = discoverSources({(root / "sub").string()});
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, "no-sources");
}

} // namespace
} // namespace ptxforge::corpus
