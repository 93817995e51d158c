// Inputs: deterministic input buffers and scalar arguments for a task, and
// the f16/bf16 conversions they (and Compare) need.
//
// Reproducibility: every buffer has its own stream seed, mixed through
// splitmix64 from (seed, FNV-1a 64 of the parameter name, trial); element i
// takes its k-th random draw from SplitMix64's output function at counter
// i * 64 + k (counterDraw), so any element can be made without the ones before
// it: large buffers are generated on all cores, and a device kernel can make
// the same bytes. Values come from integer arithmetic and IEEE double
// operations only (no std::*_distribution, whose output differs between
// standard libraries).
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
/// float -> OCP FP8 e4m3 bits, round to nearest even; finite values beyond the
/// largest (448) and infinities saturate to +-448 (PTX's cvt .satfinite), NaN
/// becomes 0x7f with the sign.
uint8_t floatToE4M3Bits(float value);
/// e4m3 bits -> float (exact; 0x7f and 0xff are NaN).
float e4m3BitsToFloat(uint8_t bits);

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

/// Draws an element may take (redraws of a uniform value that rounds out of range).
constexpr uint32_t kDrawsPerElement = 64;
/// The k-th 64-bit random draw (k < kDrawsPerElement) of element `index` of
/// the buffer with stream seed `streamSeed`.
uint64_t counterDraw(uint64_t streamSeed, uint64_t index, uint32_t k);

/// A double that holds an integer, as two's-complement bits; saturates outside [-2^63, 2^64).
uint64_t integerBits(double value);

/// `init` as trial `trial` draws from it: min, max, mean and stddev times the
/// trial's entry of `trialScales` (unchanged when it has none).
InitSpec initForTrial(const InitSpec &init, int trial);

/// `count` elements of `param.type` (little-endian, as the GPU reads them)
/// drawn from `param.init`. Values from uniform/int ranges lie in [min, max)
/// after conversion to the element type. iota and index-mod wrap modulo 2^bits
/// for integer types and round for floating types.
/// `threads`: how many threads may share a large buffer (0: one per core);
/// the bytes are the same for any number.
std::vector<std::byte> generateInput(const ParamSpec &param, int64_t count, uint64_t seed, int trial,
                                     unsigned threads = 0);

/// The bytes of a scalar argument for `shape` (integer expression or floating literal,
/// converted to the parameter's type). An error when the expression fails or does not fit.
Result<std::vector<std::byte>> scalarArgument(const ParamSpec &param, const Shape &shape);

} // namespace ptxforge::tasks
