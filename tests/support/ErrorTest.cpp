// The Error model: parts in, one rendering out; and [[nodiscard]] results.
#include "support/Result.h"

#include <gtest/gtest.h>

#include <type_traits>

namespace ptxforge {
namespace {

TEST(Error, MakeErrorWithoutACodeRendersAsItsMessage) {
  Error error = makeError(ErrorKind::Io, "cannot open 'x.ptx': No such file or directory");
  EXPECT_EQ(error.kind, ErrorKind::Io);
  EXPECT_EQ(error.code, "");
  EXPECT_EQ(error.line, 0u);
  EXPECT_EQ(error.column, 0u);
  EXPECT_EQ(render(error), "cannot open 'x.ptx': No such file or directory");
}

TEST(Error, RenderPutsTheCodeFirstAndTheLocationLast) {
  EXPECT_EQ(render(makeError(ErrorKind::InvalidInput, "crashed", "CUDA_ERROR_ILLEGAL_ADDRESS in cuCtxSynchronize")),
            "crashed: CUDA_ERROR_ILLEGAL_ADDRESS in cuCtxSynchronize");
  EXPECT_EQ(render(makeError(ErrorKind::ToolMissing, "emu-unsupported", "the emulator does not implement 'tex'", 12)),
            "emu-unsupported: the emulator does not implement 'tex' (line 12)");
  EXPECT_EQ(render(makeError(ErrorKind::InvalidInput, "syntax", "expected ';'", 3, 17)),
            "syntax: expected ';' (line 3, column 17)");
  // A column without a line says nothing a reader can use: not shown.
  EXPECT_EQ(render(makeError(ErrorKind::InvalidInput, "", "bad", 0, 4)), "bad");
}

TEST(Error, TheCodeIsAFieldNotPartOfTheMessage) {
  Error error = makeError(ErrorKind::Internal, "timeout", "the launch ran past 100 ms");
  EXPECT_EQ(error.message, "the launch ran past 100 ms");
  EXPECT_EQ(error.code, "timeout");
}

TEST(Result, CarriesAValueOrAnError) {
  Result<int> value = 7;
  ASSERT_TRUE(value);
  EXPECT_EQ(*value, 7);
  Result<int> failed = makeError(ErrorKind::Io, "file-not-found", "no such file");
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, "file-not-found");
  Result<void> done;
  EXPECT_TRUE(done.ok());
  Result<void> notDone = makeError(ErrorKind::Internal, "x");
  EXPECT_FALSE(notDone.ok());
}

// [[nodiscard]] on the class makes every function returning a Result warn when
// its value is dropped (-Wunused-result); the attribute is checked here at
// compile time through a call that must be discarded explicitly.
Result<void> mayFail() { return {}; }
TEST(Result, IsNodiscard) {
  (void)mayFail(); // without the cast this line warns
  SUCCEED();
}

TEST(ErrorKind, NamesAreKebabCase) {
  EXPECT_STREQ(errorKindName(ErrorKind::InvalidInput), "invalid-input");
  EXPECT_STREQ(errorKindName(ErrorKind::ToolMissing), "tool-missing");
}

} // namespace
} // namespace ptxforge
