// Summary statistics of repeated measurements: median and spread. Speed
// claims in ptxforge are medians with their p10–p90 band, never single runs.
#pragma once

#include <cstddef>
#include <vector>

namespace ptxforge {

struct Spread {
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0;
  size_t samples = 0;
};

/// Nearest-rank median, 10th and 90th percentiles, min and max (all zero for
/// no values).
Spread spreadOf(std::vector<double> values);

} // namespace ptxforge
