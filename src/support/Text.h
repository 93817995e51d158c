// Small text utilities shared by every library: whitespace trimming, word
// lists, and the edit distance behind "did you mean" suggestions.
#pragma once

#include <cstddef>
#include <string_view>

namespace ptxforge {

/// `text` without leading and trailing whitespace (std::isspace).
std::string_view trim(std::string_view text);
/// `text` without leading whitespace.
std::string_view trimLeft(std::string_view text);

/// Whether `word` is one of the space-separated words of `list`
/// (hasWord("rn rz rm rp", "rz")): the modifier and type lists of the PTX
/// tables.
bool hasWord(std::string_view list, std::string_view word);

/// How editDistance compares.
struct EditDistanceOptions {
  bool ignoreCase = false;     ///< 'A' and 'a' are the same letter
  bool transpositions = false; ///< swapping two adjacent letters costs one edit (optimal string alignment)
};

/// Levenshtein distance between `a` and `b` (insertions, deletions and
/// substitutions cost one), with the options above. For "did you mean".
size_t editDistance(std::string_view a, std::string_view b, EditDistanceOptions options = {});

} // namespace ptxforge
