// Compare: element-wise comparison of a candidate's output buffer with the
// reference's, with the per-dtype tolerance rule of docs/tasks.md.
#pragma once

#include "tasks/TaskSpec.h"

#include <cstddef>
#include <optional>
#include <string>

namespace ptxforge::tasks {

/// Outcome of comparing one buffer.
struct CompareResult {
  bool passed = true;
  size_t count = 0;           ///< elements compared
  size_t mismatches = 0;      ///< elements outside tolerance (NaN/inf disagreements included)
  size_t nanInGot = 0;        ///< NaNs in the candidate's output where the reference has a number
  double maxAbsError = 0;     ///< over elements where both values are finite
  double maxRelError = 0;     ///< |got - want| / |want| over finite elements with want != 0
  size_t maxAbsErrorIndex = 0;
  std::optional<size_t> firstMismatch; ///< index of the first element outside tolerance
  double firstGot = 0, firstWant = 0;  ///< its values (decoded to double)
  std::string firstGotText, firstWantText; ///< shortest round-trip text in the element type ("0.1", "nan", "-inf", "42")
};

/// Compares `count` elements of `type`. A float element passes when
/// |got - want| <= atol + rtol * |want|; NaN in `got` never passes, NaN in
/// `want` matches only NaN, infinities match only the same infinity. Integers
/// are compared exactly unless tolerance.atolGiven. f16/bf16 are decoded to float.
/// `threads`: how many threads may share a large buffer (0: one per core); the
/// result is the same for any number.
CompareResult compareBuffers(ElementType type, const void *got, const void *want, size_t count, Tolerance tolerance,
                             unsigned threads = 0);

/// One element as text, the way compareBuffers prints it.
std::string formatElement(ElementType type, const void *data, size_t index);

/// Element `index` of a buffer of `type` as a double (f16, bf16 and e4m3 widened exactly).
double decodeElement(ElementType type, const void *data, size_t index);

/// A one-line summary: "ok: 1000 elements, max abs 1.2e-07, max rel 3.4e-07" or
/// "3 of 1000 elements differ; first at [17]: got 0.5, want 0.25 (max abs ..., max rel ...)".
std::string describe(const CompareResult &result);

} // namespace ptxforge::tasks
