// Whitespace trimming and edit distance (see Text.h).
#include "support/Text.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace ptxforge {

namespace {
bool isSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
} // namespace

std::string_view trimLeft(std::string_view text) {
  while (!text.empty() && isSpace(text.front())) text.remove_prefix(1);
  return text;
}

std::string_view trim(std::string_view text) {
  text = trimLeft(text);
  while (!text.empty() && isSpace(text.back())) text.remove_suffix(1);
  return text;
}

bool hasWord(std::string_view list, std::string_view word) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = list.find(' ', pos);
    if (end == std::string_view::npos) end = list.size();
    if (list.substr(pos, end - pos) == word) return true;
    pos = end + 1;
  }
  return false;
}

size_t editDistance(std::string_view a, std::string_view b, EditDistanceOptions options) {
  auto same = [&](char x, char y) {
    if (options.ignoreCase)
      return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
    return x == y;
  };
  // Three rows: the transposition rule looks two rows back.
  std::vector<size_t> twoBack(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (same(a[i - 1], b[j - 1]) ? 0 : 1)});
      if (options.transpositions && i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]))
        current[j] = std::min(current[j], twoBack[j - 2] + 1);
    }
    std::swap(twoBack, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

} // namespace ptxforge
