// MinHash: shingling, signatures, LSH banding (Broder 1997; Leskovec,
// Rajaraman & Ullman, "Mining of Massive Datasets", ch. 3).
#include "corpus/MinHash.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace ptxforge::corpus {

namespace {

/// SplitMix64's finalizer: a bijective 64-bit mix with full avalanche, so
/// that mix(x ^ key) for different keys behave as independent hash functions.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

uint64_t fnv1a(std::string_view text, uint64_t hash = 0xcbf29ce484222325ULL) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

} // namespace

std::vector<uint64_t> shingles(const std::vector<std::string> &tokens, int n) {
  assert(n >= 1 && "an n-gram needs at least one token");
  std::vector<uint64_t> out;
  if (tokens.empty()) return out;
  std::vector<uint64_t> tokenHashes;
  tokenHashes.reserve(tokens.size());
  for (const std::string &token : tokens) tokenHashes.push_back(fnv1a(token));
  const size_t width = std::min<size_t>(static_cast<size_t>(n), tokens.size());
  for (size_t start = 0; start + width <= tokens.size(); ++start) {
    // Order matters inside a shingle: combine position by position.
    uint64_t hash = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < width; ++i) hash = mix64(hash ^ tokenHashes[start + i]) + i;
    out.push_back(hash);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

double jaccard(const std::vector<uint64_t> &a, const std::vector<uint64_t> &b) {
  if (a.empty() && b.empty()) return 1.0;
  size_t common = 0, i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) ++common, ++i, ++j;
    else if (a[i] < b[j]) ++i;
    else ++j;
  }
  return static_cast<double>(common) / static_cast<double>(a.size() + b.size() - common);
}

MinHasher::MinHasher(int permutations, uint64_t seed) {
  assert(permutations >= 1 && "a signature needs at least one hash function");
  uint64_t state = seed;
  keys_.reserve(static_cast<size_t>(permutations));
  for (int i = 0; i < permutations; ++i) {
    state += 0x9e3779b97f4a7c15ULL;
    keys_.push_back(mix64(state));
  }
}

Signature MinHasher::signature(const std::vector<uint64_t> &shingleSet) const {
  Signature out(keys_.size(), std::numeric_limits<uint64_t>::max());
  for (uint64_t shingle : shingleSet)
    for (size_t k = 0; k < keys_.size(); ++k) out[k] = std::min(out[k], mix64(shingle ^ keys_[k]));
  return out;
}

double estimatedSimilarity(const Signature &a, const Signature &b) {
  assert(a.size() == b.size() && "signatures of different lengths");
  if (a.empty()) return 1.0;
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  return static_cast<double>(same) / static_cast<double>(a.size());
}

LshBands chooseBands(int permutations, double threshold) {
  LshBands best{permutations, 1};
  double bestGap = std::numeric_limits<double>::infinity();
  for (int rows = 1; rows <= permutations; ++rows) {
    if (permutations % rows) continue;
    const int bands = permutations / rows;
    const double midpoint = std::pow(1.0 / bands, 1.0 / rows);
    // Below the threshold (more candidates, none lost) by as little as possible.
    if (midpoint > threshold) continue;
    const double gap = threshold - midpoint;
    if (gap < bestGap) {
      bestGap = gap;
      best = {bands, rows};
    }
  }
  return best;
}

NearDuplicateIndex::NearDuplicateIndex(int permutations, double threshold)
    : threshold_(threshold), bands_(chooseBands(permutations, threshold)), buckets_(static_cast<size_t>(bands_.bands)) {}

uint64_t NearDuplicateIndex::bandKey(const Signature &signature, int band) const {
  uint64_t key = 0x2545f4914f6cdd1dULL ^ static_cast<uint64_t>(band);
  for (int r = 0; r < bands_.rows; ++r) key = mix64(key ^ signature[static_cast<size_t>(band * bands_.rows + r)]);
  return key;
}

int64_t NearDuplicateIndex::findOrAdd(const Signature &signature) {
  assert(signature.size() == static_cast<size_t>(bands_.bands * bands_.rows) && "signature length differs from the index's");
  std::vector<uint32_t> candidates;
  std::vector<uint64_t> keys(static_cast<size_t>(bands_.bands));
  for (int band = 0; band < bands_.bands; ++band) {
    keys[static_cast<size_t>(band)] = bandKey(signature, band);
    auto found = buckets_[static_cast<size_t>(band)].find(keys[static_cast<size_t>(band)]);
    if (found != buckets_[static_cast<size_t>(band)].end())
      candidates.insert(candidates.end(), found->second.begin(), found->second.end());
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  int64_t bestIndex = -1;
  double bestSimilarity = -1.0;
  for (uint32_t candidate : candidates) {
    const double similarity = estimatedSimilarity(signature, signatures_[candidate]);
    if (similarity >= threshold_ && similarity > bestSimilarity) {
      bestSimilarity = similarity;
      bestIndex = candidate;
    }
  }
  if (bestIndex >= 0) return bestIndex;
  const uint32_t index = static_cast<uint32_t>(signatures_.size());
  signatures_.push_back(signature);
  for (int band = 0; band < bands_.bands; ++band)
    buckets_[static_cast<size_t>(band)][keys[static_cast<size_t>(band)]].push_back(index);
  return -1;
}

} // namespace ptxforge::corpus
