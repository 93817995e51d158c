// MinHash, LSH banding and the near-duplicate index: estimates against exact
// Jaccard similarity, and the keep-the-first decisions the corpus relies on.
#include "corpus/MinHash.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace ptxforge::corpus {
namespace {

std::vector<std::string> tokens(std::initializer_list<const char *> list) { return {list.begin(), list.end()}; }

/// A kernel-like token stream: `count` instructions drawn from a small opcode set.
std::vector<std::string> randomStream(std::mt19937 &random, size_t count) {
  static const char *const opcodes[] = {"ld.global.f32", "st.global.f32", "fma.rn.f32", "add.s32", "mul.wide.s32",
                                        "setp.ge.s32",   "bra.uni",       "mov.u32",    "shl.b32", "cvta.to.global.u64",
                                        "bar.sync",      "atom.global.add.f32"};
  std::uniform_int_distribution<size_t> pick(0, std::size(opcodes) - 1);
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) out.push_back(opcodes[pick(random)]);
  return out;
}

TEST(Shingles, AreDistinctSortedRunsOfN) {
  std::vector<uint64_t> s = shingles(tokens({"a", "b", "c", "a", "b", "c"}), 3);
  // abc, bca, cab, abc: three distinct shingles.
  EXPECT_EQ(s.size(), 3u);
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
}

TEST(Shingles, OrderInsideAShingleMatters) {
  EXPECT_NE(shingles(tokens({"a", "b"}), 2), shingles(tokens({"b", "a"}), 2));
}

TEST(Shingles, ShortSequenceIsOneShingleAndEmptyHasNone) {
  EXPECT_EQ(shingles(tokens({"a", "b"}), 5).size(), 1u);
  EXPECT_TRUE(shingles({}, 5).empty());
}

TEST(Jaccard, ExactOnSmallSets) {
  EXPECT_DOUBLE_EQ(jaccard({1, 2, 3, 4}, {3, 4, 5, 6}), 2.0 / 6.0);
  EXPECT_DOUBLE_EQ(jaccard({1, 2}, {1, 2}), 1.0);
  EXPECT_DOUBLE_EQ(jaccard({1}, {2}), 0.0);
  EXPECT_DOUBLE_EQ(jaccard({}, {}), 1.0);
}

TEST(MinHasher, SameSeedSameSignatureOtherSeedOther) {
  std::vector<uint64_t> set = shingles(tokens({"ld", "fma", "st", "bra", "ret"}), 2);
  EXPECT_EQ(MinHasher(64, 7).signature(set), MinHasher(64, 7).signature(set));
  EXPECT_NE(MinHasher(64, 7).signature(set), MinHasher(64, 8).signature(set));
  EXPECT_EQ(MinHasher(64, 7).permutations(), 64);
}

TEST(MinHasher, EstimateTracksExactJaccard) {
  // Pairs of streams sharing a growing prefix: the estimate must stay within
  // a few standard errors (sqrt(J(1-J)/k) <= 0.032 for k = 256) of the truth.
  std::mt19937 random(1234);
  MinHasher hasher(256, 99);
  for (size_t shared : {0u, 100u, 200u, 300u, 380u}) {
    std::vector<std::string> a = randomStream(random, 400), b = a;
    std::vector<std::string> tail = randomStream(random, 400 - shared);
    std::copy(tail.begin(), tail.end(), b.begin() + static_cast<std::ptrdiff_t>(shared));
    std::vector<uint64_t> sa = shingles(a, 4), sb = shingles(b, 4);
    const double exact = jaccard(sa, sb);
    const double estimate = estimatedSimilarity(hasher.signature(sa), hasher.signature(sb));
    EXPECT_NEAR(estimate, exact, 0.12) << "shared prefix " << shared;
  }
}

TEST(MinHasher, EmptySetsMatchOnlyEachOther) {
  MinHasher hasher(32, 1);
  EXPECT_DOUBLE_EQ(estimatedSimilarity(hasher.signature({}), hasher.signature({})), 1.0);
  EXPECT_LT(estimatedSimilarity(hasher.signature({}), hasher.signature({42})), 0.01);
}

TEST(ChooseBands, CoversTheSignatureAndSitsBelowTheThreshold) {
  for (int permutations : {16, 64, 128, 256})
    for (double threshold : {0.5, 0.8, 0.9}) {
      LshBands bands = chooseBands(permutations, threshold);
      EXPECT_EQ(bands.bands * bands.rows, permutations);
      EXPECT_LE(std::pow(1.0 / bands.bands, 1.0 / bands.rows), threshold);
    }
  // 128 at 0.85: 8 bands of 16 rows have their midpoint at 0.878 (too high); 16 x 8 at 0.707.
  EXPECT_EQ(chooseBands(128, 0.85).rows, 8);
}

TEST(NearDuplicateIndex, KeepsTheFirstAndFindsTheNearCopy) {
  std::mt19937 random(42);
  MinHasher hasher(128, 5);
  NearDuplicateIndex index(128, 0.8);
  std::vector<std::string> original = randomStream(random, 300);
  std::vector<std::string> nearCopy = original;
  nearCopy[150] = "trap"; // one instruction of 300 differs: ~97% of the 5-grams are shared
  std::vector<std::string> unrelated = randomStream(random, 300);

  EXPECT_EQ(index.findOrAdd(hasher.signature(shingles(original, 5))), -1);
  EXPECT_EQ(index.findOrAdd(hasher.signature(shingles(unrelated, 5))), -1);
  EXPECT_EQ(index.findOrAdd(hasher.signature(shingles(nearCopy, 5))), 0);
  EXPECT_EQ(index.size(), 2u); // the duplicate was not added
  // Exactly the same stream is a duplicate too.
  EXPECT_EQ(index.findOrAdd(hasher.signature(shingles(unrelated, 5))), 1);
}

TEST(NearDuplicateIndex, ThresholdOneAcceptsOnlyIdenticalSets) {
  MinHasher hasher(64, 3);
  NearDuplicateIndex index(64, 1.0);
  std::vector<std::string> a = tokens({"ld", "add", "st", "ret", "bra", "mov", "fma", "setp"});
  std::vector<std::string> b = a;
  b[3] = "exit";
  EXPECT_EQ(index.findOrAdd(hasher.signature(shingles(a, 2))), -1);
  EXPECT_EQ(index.findOrAdd(hasher.signature(shingles(b, 2))), -1);
  EXPECT_EQ(index.findOrAdd(hasher.signature(shingles(a, 2))), 0);
}

} // namespace
} // namespace ptxforge::corpus
