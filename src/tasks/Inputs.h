// Inputs: deterministic input buffers and scalar arguments for a task, and
// the f16/bf16 conversions they (and Compare) need.
//
// Reproducibility: every buffer comes from its own xoshiro256** stream, seeded
// through splitmix64 from (seed, FNV-1a 64 of the parameter name, trial), and
// turned into values with integer arithmetic and IEEE double operations only
// (no std::*_distribution, whose output differs between standard libraries).
// uniform/int/const/iota/index-mod are bit-identical on every machine; normal
// uses Box-Muller (log, cos) and so depends on libm being correctly rounded.
#pragma once

#include "support/Result.h"
#include "tasks/TaskSpec.h"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ptxforge::tasks {

/// float -> IEEE binary16 bits, round to nearest even; overflow gives +-inf,
/// NaN stays NaN (quiet), tiny values become subnormals or signed zero.
uint16_t floatToHalfBits(float value);
/// binary16 bits -> float (exact).
float halfBitsToFloat(uint16_t bits);
/// float -> bfloat16 bits, round to nearest even; NaN stays NaN (quiet).
uint16_t floatToBf16Bits(float value);
/// bfloat16 bits -> float (exact).
float bf16BitsToFloat(uint16_t bits);

/// splitmix64 step (Steele, Lea, Flood 2014): advances `state`, returns the next output.
uint64_t splitmix64(uint64_t &state);
/// FNV-1a 64-bit hash.
uint64_t fnv1a64(std::string_view bytes, uint64_t hash = 0xcbf29ce484222325ull);

/// xoshiro256** 1.0 (Blackman, Vigna), seeded by four splitmix64 outputs.
class Xoshiro256 {
public:
  explicit Xoshiro256(uint64_t seed);
  uint64_t next();
  /// Uniform in [0, 1) with 53 random bits.
  double nextDouble();
  /// Uniform in [0, bound) without modulo bias; bound > 0.
  uint64_t nextBelow(uint64_t bound);

private:
  uint64_t state_[4];
};

/// The stream seed of one buffer: distinct per (seed, param name, trial).
uint64_t bufferSeed(uint64_t seed, std::string_view paramName, int trial);

/// `count` elements of `param.type` (little-endian, as the GPU reads them)
/// drawn from `param.init`. Values from uniform/int ranges lie in [min, max)
/// after conversion to the element type. iota and index-mod wrap modulo 2^bits
/// for integer types and round for floating types.
std::vector<std::byte> generateInput(const ParamSpec &param, int64_t count, uint64_t seed, int trial);

/// The bytes of a scalar argument for `shape` (integer expression or floating literal,
/// converted to the parameter's type). An error when the expression fails or does not fit.
Result<std::vector<std::byte>> scalarArgument(const ParamSpec &param, const Shape &shape);

} // namespace ptxforge::tasks
