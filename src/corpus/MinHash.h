// MinHash: near-duplicate detection over instruction n-grams. A kernel is a
// sequence of instruction tokens ("ld.global.f32"); its shingles are the sets
// of n consecutive tokens; MinHash signatures estimate the Jaccard similarity
// of two shingle sets, and an LSH band index finds the candidate pairs
// without comparing every pair.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace ptxforge::corpus {

/// The distinct shingles of `tokens`: 64-bit hashes of every run of `n`
/// consecutive tokens (a sequence shorter than `n` is one shingle of all of
/// it; an empty one has none). Sorted, without repeats.
std::vector<uint64_t> shingles(const std::vector<std::string> &tokens, int n);

/// Exact Jaccard similarity |A ∩ B| / |A ∪ B| of two sorted sets (1 when both are empty).
double jaccard(const std::vector<uint64_t> &a, const std::vector<uint64_t> &b);

/// A MinHash signature: for each of k hash functions, the least hash of any shingle.
using Signature = std::vector<uint64_t>;

/// k hash functions derived from one seed (each: a 64-bit mix of the shingle
/// with its own key), so that the same seed gives the same signatures.
class MinHasher {
public:
  MinHasher(int permutations, uint64_t seed);
  /// The signature of a shingle set. An empty set gets all-ones (equal only
  /// to other empty sets).
  Signature signature(const std::vector<uint64_t> &shingleSet) const;
  int permutations() const { return static_cast<int>(keys_.size()); }

private:
  std::vector<uint64_t> keys_;
};

/// The fraction of positions where two signatures agree: an unbiased
/// estimate of the Jaccard similarity of their sets.
double estimatedSimilarity(const Signature &a, const Signature &b);

/// Banding parameters: `bands` × `rows` = the signature length. A pair whose
/// similarity is s becomes a candidate with probability 1 − (1 − s^rows)^bands.
struct LshBands {
  int bands = 1;
  int rows = 1;
};

/// The bands × rows split of `permutations` whose S-curve midpoint
/// (1/bands)^(1/rows) lies closest below `threshold` (recall first: every
/// candidate is then confirmed with the estimated similarity).
LshBands chooseBands(int permutations, double threshold);

/// Finds, for each signature added, an earlier one at or above a similarity
/// threshold. Keeps the first of each near-duplicate group: the caller adds
/// rows in a fixed order, so the decisions do not depend on thread timing.
class NearDuplicateIndex {
public:
  NearDuplicateIndex(int permutations, double threshold);

  /// The index of the most similar earlier signature at or above the
  /// threshold (ties: the earliest), or -1; in the latter case `signature`
  /// is added and gets the next index.
  int64_t findOrAdd(const Signature &signature);
  size_t size() const { return signatures_.size(); }
  const LshBands &bands() const { return bands_; }

private:
  uint64_t bandKey(const Signature &signature, int band) const;

  double threshold_;
  LshBands bands_;
  std::vector<Signature> signatures_;
  std::vector<std::unordered_map<uint64_t, std::vector<uint32_t>>> buckets_; ///< per band: key -> signature indices
};

} // namespace ptxforge::corpus
