// Text utilities (trim, edit distance) and SHA-256.
#include "support/Sha256.h"
#include "support/Text.h"

#include <gtest/gtest.h>

#include <string>

namespace ptxforge {
namespace {

TEST(Trim, StripsWhitespaceAtBothEnds) {
  EXPECT_EQ(trim("  ld.global \t\n"), "ld.global");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \n\t "), "");
  EXPECT_EQ(trimLeft("  a b  "), "a b  ");
}

TEST(EditDistance, IsLevenshteinByDefault) {
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(editDistance("", "abc"), 3u);
  EXPECT_EQ(editDistance("abc", "abc"), 0u);
  EXPECT_EQ(editDistance("f23", "f32"), 2u);  // a swap is two edits here
  EXPECT_EQ(editDistance("Saxpy", "saxpy"), 1u); // case counts
}

TEST(EditDistance, OptionsIgnoreCaseAndCountTranspositionsAsOne) {
  EditDistanceOptions ptxNames{.ignoreCase = true, .transpositions = true};
  EXPECT_EQ(editDistance("f23", "f32", ptxNames), 1u);
  EXPECT_EQ(editDistance("LD.GLOBAL", "ld.global", ptxNames), 0u);
  EXPECT_EQ(editDistance("ab", "ba", {.transpositions = true}), 1u);
  EXPECT_EQ(editDistance("kitten", "sitting", ptxNames), 3u);
}

TEST(Sha256, MatchesFips180Vectors) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256Hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Padding boundaries: 55 bytes fit one block with the length, 56 and 64 need two.
  EXPECT_EQ(sha256Hex(std::string(55, 'x')), "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072");
  EXPECT_EQ(sha256Hex(std::string(56, 'x')), "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e");
  EXPECT_EQ(sha256Hex(std::string(64, 'x')), "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c");
}

} // namespace
} // namespace ptxforge
