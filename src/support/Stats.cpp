#include "support/Stats.h"

#include <algorithm>

namespace ptxforge {

Spread spreadOf(std::vector<double> values) {
  Spread s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  auto at = [&](double q) { return values[static_cast<size_t>(q * static_cast<double>(values.size() - 1) + 0.5)]; };
  s.median = at(0.5);
  s.p10 = at(0.1);
  s.p90 = at(0.9);
  s.min = values.front();
  s.max = values.back();
  s.samples = values.size();
  return s;
}

} // namespace ptxforge
