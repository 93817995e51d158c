// Compare: tolerance checks and mismatch reporting.
#include "tasks/Compare.h"

#include "support/Parallel.h"
#include "tasks/Inputs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace ptxforge::tasks {

namespace {

template <typename T> T load(const void *data, size_t index) {
  T value;
  std::memcpy(&value, static_cast<const unsigned char *>(data) + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T> std::string shortest(T value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, end) : std::string("?");
}

/// Exact equality of integer elements without a trip through double (i64/u64 above 2^53).
bool integersEqual(ElementType type, const void *got, const void *want, size_t index) {
  size_t size = elementSize(type);
  return std::memcmp(static_cast<const unsigned char *>(got) + index * size,
                     static_cast<const unsigned char *>(want) + index * size, size) == 0;
}

} // namespace

double decodeElement(ElementType type, const void *data, size_t index) {
  switch (type) {
  case ElementType::F32: return load<float>(data, index);
  case ElementType::F64: return load<double>(data, index);
  case ElementType::F16: return halfBitsToFloat(load<uint16_t>(data, index));
  case ElementType::BF16: return bf16BitsToFloat(load<uint16_t>(data, index));
  case ElementType::I8: return load<int8_t>(data, index);
  case ElementType::U8: return load<uint8_t>(data, index);
  case ElementType::I32: return load<int32_t>(data, index);
  case ElementType::U32: return load<uint32_t>(data, index);
  case ElementType::I64: return static_cast<double>(load<int64_t>(data, index));
  case ElementType::U64: return static_cast<double>(load<uint64_t>(data, index));
  case ElementType::E4M3: return e4m3BitsToFloat(load<uint8_t>(data, index));
  }
  return 0;
}

std::string formatElement(ElementType type, const void *data, size_t index) {
  switch (type) {
  case ElementType::F32: return shortest(load<float>(data, index));
  case ElementType::F64: return shortest(load<double>(data, index));
  case ElementType::F16:
  case ElementType::BF16:
  case ElementType::E4M3: return shortest(static_cast<float>(decodeElement(type, data, index)));
  case ElementType::I64: return std::to_string(load<int64_t>(data, index));
  case ElementType::U64: return std::to_string(load<uint64_t>(data, index));
  default: return std::to_string(static_cast<int64_t>(decodeElement(type, data, index)));
  }
}

namespace {

/// Elements [begin, end): counts, the largest errors and the first mismatch of the range.
CompareResult compareRange(ElementType type, const void *got, const void *want, size_t begin, size_t end,
                           Tolerance tolerance) {
  CompareResult result;
  bool exactIntegers = !isFloatingType(type) && !tolerance.atolGiven;
  for (size_t i = begin; i < end; ++i) {
    double g = decodeElement(type, got, i), w = decodeElement(type, want, i);
    bool ok;
    if (!isFloatingType(type) && integersEqual(type, got, want, i)) {
      ok = true;
    } else if (exactIntegers) {
      ok = false;
    } else if (std::isnan(w)) {
      ok = std::isnan(g);
    } else if (std::isnan(g)) {
      ok = false;
      ++result.nanInGot;
    } else if (std::isinf(w) || std::isinf(g)) {
      ok = g == w;
    } else {
      double absError = std::fabs(g - w);
      ok = absError <= tolerance.atol + tolerance.rtol * std::fabs(w);
      if (absError > result.maxAbsError) result.maxAbsError = absError, result.maxAbsErrorIndex = i;
      if (w != 0) result.maxRelError = std::max(result.maxRelError, absError / std::fabs(w));
    }
    if (!isFloatingType(type) && !std::isnan(g)) {
      double absError = std::fabs(g - w);
      if (absError > result.maxAbsError) result.maxAbsError = absError, result.maxAbsErrorIndex = i;
      if (w != 0) result.maxRelError = std::max(result.maxRelError, absError / std::fabs(w));
    }
    if (ok) continue;
    ++result.mismatches;
    if (!result.firstMismatch) {
      result.firstMismatch = i;
      result.firstGot = g;
      result.firstWant = w;
      result.firstGotText = formatElement(type, got, i);
      result.firstWantText = formatElement(type, want, i);
    }
  }
  return result;
}

/// Folds `later` (a range after `into`'s) into `into`, as one pass over both would.
void merge(CompareResult &into, CompareResult &&later) {
  into.mismatches += later.mismatches;
  into.nanInGot += later.nanInGot;
  if (later.maxAbsError > into.maxAbsError) into.maxAbsError = later.maxAbsError, into.maxAbsErrorIndex = later.maxAbsErrorIndex;
  into.maxRelError = std::max(into.maxRelError, later.maxRelError);
  if (!into.firstMismatch && later.firstMismatch) {
    into.firstMismatch = later.firstMismatch;
    into.firstGot = later.firstGot;
    into.firstWant = later.firstWant;
    into.firstGotText = std::move(later.firstGotText);
    into.firstWantText = std::move(later.firstWantText);
  }
}

} // namespace

CompareResult compareBuffers(ElementType type, const void *got, const void *want, size_t count, Tolerance tolerance,
                             unsigned threads) {
  // Large buffers are compared in chunks on all cores, then merged in order:
  // the result is the one a single pass gives.
  constexpr size_t kChunk = size_t{1} << 18;
  const size_t chunks = std::max<size_t>(1, (count + kChunk - 1) / kChunk);
  std::vector<CompareResult> parts(chunks);
  forEachChunk(chunks, threads, [&](size_t chunk) {
    parts[chunk] = compareRange(type, got, want, chunk * kChunk, std::min(count, (chunk + 1) * kChunk), tolerance);
  });
  CompareResult result = std::move(parts[0]);
  for (size_t chunk = 1; chunk < chunks; ++chunk) merge(result, std::move(parts[chunk]));
  result.count = count;
  result.passed = result.mismatches == 0;
  return result;
}

std::string describe(const CompareResult &result) {
  auto number = [](double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.3g", value);
    return std::string(buffer);
  };
  std::string errors = "max abs " + number(result.maxAbsError) + ", max rel " + number(result.maxRelError);
  if (result.passed) return "ok: " + std::to_string(result.count) + " elements, " + errors;
  std::string text = std::to_string(result.mismatches) + " of " + std::to_string(result.count) +
                     " elements differ; first at [" + std::to_string(*result.firstMismatch) +
                     "]: got " + result.firstGotText + ", want " + result.firstWantText + " (" + errors;
  if (result.nanInGot) text += ", " + std::to_string(result.nanInGot) + " NaN where a number was expected";
  return text + ")";
}

} // namespace ptxforge::tasks
