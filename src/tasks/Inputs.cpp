// Inputs: PRNG, distributions and half-precision conversions.
#include "tasks/Inputs.h"

#include "support/Parallel.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace ptxforge::tasks {

uint16_t floatToHalfBits(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) // inf or NaN; NaN keeps its top payload bits and is made quiet
    return sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x0200u | ((magnitude >> 13) & 0x03ffu) : 0u);
  // 65520 is the midpoint between 65504 (max finite, odd mantissa) and 2^16: ties go to even, i.e. inf.
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;
  uint32_t exponent = magnitude >> 23;
  if (exponent >= 113) { // normal half: float exponent 113..142 -> half exponent 1..30
    uint32_t mantissa = magnitude & 0x7fffffu;
    uint32_t half = ((exponent - 112) << 10) | (mantissa >> 13);
    uint32_t rest = mantissa & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half; // a carry into the exponent is correct
    return static_cast<uint16_t>(sign | half);
  }
  // Subnormal half (units of 2^-24). Values at or below 2^-25 (half a unit) round to zero (the tie goes to even 0).
  if (magnitude <= 0x33000000u) return sign;
  uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u; // with the implicit bit
  uint32_t shift = 126 - exponent;                         // 14..24 for exponents 102..112
  uint32_t half = mantissa >> shift;
  uint32_t rest = mantissa & ((1u << shift) - 1);
  uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1u))) ++half; // may carry into the smallest normal, correctly
  return static_cast<uint16_t>(sign | half);
}

float halfBitsToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24); // exact: at most 10 significant bits
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t floatToBf16Bits(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u); // quiet NaN
  // Adding 0x7fff (+1 when the kept part is odd) rounds to nearest even; an
  // overflow past the largest finite value carries into the exponent: inf.
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bf16BitsToFloat(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

// verify/DeviceGate.cpp's fill kernel has the same steps in CUDA: keep them alike.
uint8_t floatToE4M3Bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7fu;
  const uint32_t exponent = magnitude >> 23;
  if (exponent >= 121) { // normal e4m3 (2^-6 and up): exponent field exponent - 120
    if (exponent > 135) return sign | 0x7eu; // 2^9 and up (infinity included) saturates
    const uint32_t mantissa = magnitude & 0x7fffffu;
    uint32_t result = ((exponent - 120) << 3) | (mantissa >> 20);
    const uint32_t rest = mantissa & 0xfffffu;
    if (rest > 0x80000u || (rest == 0x80000u && (result & 1u))) ++result; // may carry into the exponent
    return static_cast<uint8_t>(sign | std::min<uint32_t>(result, 0x7eu)); // 0x7f would be NaN: 448 is the top
  }
  // Subnormal (units of 2^-9); 2^-10 and below round to zero (the tie goes to even 0).
  if (magnitude <= 0x3a800000u) return sign;
  const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 141 - exponent; // 21..24 for exponents 117..120
  uint32_t result = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1), halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (result & 1u))) ++result; // 8 is the smallest normal, correctly
  return static_cast<uint8_t>(sign | result);
}

float e4m3BitsToFloat(uint8_t bits) {
  const uint32_t exponent = (bits >> 3) & 0xfu, mantissa = bits & 0x7u;
  float magnitude;
  if ((bits & 0x7fu) == 0x7fu) magnitude = std::numeric_limits<float>::quiet_NaN();
  else if (exponent == 0) magnitude = static_cast<float>(mantissa) * 0x1p-9f;
  else magnitude = std::bit_cast<float>(((exponent + 120) << 23) | (mantissa << 20));
  return (bits & 0x80u) ? -magnitude : magnitude;
}

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(std::string_view bytes, uint64_t hash) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

Xoshiro256::Xoshiro256(uint64_t seed) {
  uint64_t state = seed;
  for (uint64_t &word : state_) word = splitmix64(state);
}

uint64_t Xoshiro256::next() {
  const uint64_t result = std::rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = std::rotl(state_[3], 45);
  return result;
}

double Xoshiro256::nextDouble() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t Xoshiro256::nextBelow(uint64_t bound) {
  // Rejection of the top partial range: threshold = 2^64 mod bound.
  uint64_t threshold = (0 - bound) % bound;
  while (true) {
    uint64_t r = next();
    if (r >= threshold) return r % bound;
  }
}

uint64_t bufferSeed(uint64_t seed, std::string_view paramName, int trial) {
  uint64_t a = seed, b = fnv1a64(paramName), c = static_cast<uint64_t>(static_cast<int64_t>(trial)) ^ 0x5452494131ull;
  // Each component goes through splitmix64 before mixing so that nearby seeds/trials give unrelated streams.
  uint64_t mixed = splitmix64(a);
  mixed ^= std::rotl(splitmix64(b), 21);
  mixed ^= std::rotl(splitmix64(c), 42);
  return mixed;
}

namespace {

template <typename T> void store(std::vector<std::byte> &out, size_t index, T value) {
  std::memcpy(out.data() + index * sizeof(T), &value, sizeof(T));
}

/// Writes the low bits of an integer as an integer `type` (wrapping modulo 2^bits).
void storeInteger(std::vector<std::byte> &out, size_t index, ElementType type, uint64_t bits) {
  switch (type) {
  case ElementType::I8: store(out, index, static_cast<int8_t>(static_cast<uint8_t>(bits))); break;
  case ElementType::U8: store(out, index, static_cast<uint8_t>(bits)); break;
  case ElementType::I32: store(out, index, static_cast<int32_t>(static_cast<uint32_t>(bits))); break;
  case ElementType::U32: store(out, index, static_cast<uint32_t>(bits)); break;
  case ElementType::I64: store(out, index, static_cast<int64_t>(bits)); break;
  case ElementType::U64: store(out, index, bits); break;
  default: assert(false && "storeInteger on a floating type"); break;
  }
}

/// Writes a double as `type`: floats rounded to nearest even, integers
/// (which hold exact integer values here) wrapping modulo 2^bits.
void storeAs(std::vector<std::byte> &out, size_t index, ElementType type, double value) {
  switch (type) {
  case ElementType::F32: store(out, index, static_cast<float>(value)); break;
  case ElementType::F64: store(out, index, value); break;
  // double -> float -> half can round twice; inputs only need to be
  // deterministic, and float is what the documented conversion takes.
  case ElementType::F16: store(out, index, floatToHalfBits(static_cast<float>(value))); break;
  case ElementType::BF16: store(out, index, floatToBf16Bits(static_cast<float>(value))); break;
  case ElementType::E4M3: store(out, index, floatToE4M3Bits(static_cast<float>(value))); break;
  default: storeInteger(out, index, type, integerBits(value)); break;
  }
}

/// `value` as the element type would hold it, for the [min, max) check after rounding.
double roundTrip(ElementType type, double value) {
  switch (type) {
  case ElementType::F32: return static_cast<float>(value);
  case ElementType::F16: return halfBitsToFloat(floatToHalfBits(static_cast<float>(value)));
  case ElementType::BF16: return bf16BitsToFloat(floatToBf16Bits(static_cast<float>(value)));
  case ElementType::E4M3: return e4m3BitsToFloat(floatToE4M3Bits(static_cast<float>(value)));
  default: return value;
  }
}

} // namespace

uint64_t counterDraw(uint64_t streamSeed, uint64_t index, uint32_t k) {
  uint64_t state = streamSeed + (index * kDrawsPerElement + k) * 0x9e3779b97f4a7c15ull;
  return splitmix64(state);
}

namespace {

/// Uniform in [0, 1) with 53 random bits, from one draw.
double unitInterval(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

/// Elements [begin, end) of the buffer; `begin` is even (normal pairs stay together).
void generateRange(std::vector<std::byte> &out, const ParamSpec &param, const InitSpec &init, uint64_t stream,
                   size_t begin, size_t end, size_t elements) {
  switch (init.distribution) {
  case InitDistribution::Uniform: {
    for (size_t i = begin; i < end; ++i) {
      // Redraw when rounding to the element type lands on max (or below min):
      // the range is [min, max) in the stored type. Bounded so that a range
      // holding no value of the type cannot loop forever.
      double value = init.min;
      for (uint32_t attempt = 0; attempt < kDrawsPerElement; ++attempt) {
        double candidate = init.min + unitInterval(counterDraw(stream, i, attempt)) * (init.max - init.min);
        double stored = roundTrip(param.type, candidate);
        if (stored >= init.min && stored < init.max) {
          value = candidate;
          break;
        }
      }
      storeAs(out, i, param.type, value);
    }
    break;
  }
  case InitDistribution::Int: {
    // Integer arithmetic end to end so that 64-bit ranges stay exact; the span wraps correctly in uint64.
    // [min, max] inclusive; a span of 0 after the +1 means all 2^64 values.
    uint64_t low = integerBits(init.min);
    uint64_t span = integerBits(init.max) - low + 1;
    bool floating = isFloatingType(param.type);
    // Rejection of the top partial range (threshold = 2^64 mod span) keeps the
    // draw unbiased; after kDrawsPerElement rejections (probability below
    // 2^-64) the last draw is taken as it is.
    const uint64_t threshold = span == 0 ? 0 : (0 - span) % span;
    for (size_t i = begin; i < end; ++i) {
      uint64_t r = counterDraw(stream, i, 0);
      for (uint32_t k = 1; span != 0 && r < threshold && k < kDrawsPerElement; ++k) r = counterDraw(stream, i, k);
      uint64_t bits = low + (span == 0 ? r : r % span);
      if (floating) storeAs(out, i, param.type, static_cast<double>(static_cast<int64_t>(bits)));
      else storeInteger(out, i, param.type, bits);
    }
    break;
  }
  case InitDistribution::Normal: {
    for (size_t i = begin; i < end; i += 2) {
      // Box-Muller: two independent normals from two uniforms; 1 - u keeps log's argument in (0, 1].
      double u1 = 1.0 - unitInterval(counterDraw(stream, i, 0)), u2 = unitInterval(counterDraw(stream, i, 1));
      double radius = std::sqrt(-2.0 * std::log(u1));
      double angle = 2.0 * 3.14159265358979323846 * u2;
      storeAs(out, i, param.type, init.mean + init.stddev * radius * std::cos(angle));
      if (i + 1 < elements) storeAs(out, i + 1, param.type, init.mean + init.stddev * radius * std::sin(angle));
    }
    break;
  }
  case InitDistribution::Const:
    for (size_t i = begin; i < end; ++i) storeAs(out, i, param.type, init.value);
    break;
  case InitDistribution::Iota:
    for (size_t i = begin; i < end; ++i) storeAs(out, i, param.type, static_cast<double>(i));
    break;
  case InitDistribution::IndexMod:
    for (size_t i = begin; i < end; ++i)
      storeAs(out, i, param.type, static_cast<double>(i % static_cast<uint64_t>(init.modulus)));
    break;
  }
}

} // namespace

uint64_t integerBits(double value) {
  if (value >= 18446744073709551616.0) return ~uint64_t{0};
  if (value >= 9223372036854775808.0) return static_cast<uint64_t>(value);
  if (value < -9223372036854775808.0) return uint64_t{1} << 63;
  return static_cast<uint64_t>(static_cast<int64_t>(value));
}

InitSpec initForTrial(const InitSpec &init, int trial) {
  InitSpec scaled = init;
  if (!scaled.trialScales.empty()) {
    double scale = scaled.trialScales[static_cast<size_t>(std::max(trial, 0)) % scaled.trialScales.size()];
    scaled.min *= scale, scaled.max *= scale, scaled.mean *= scale, scaled.stddev *= scale;
  }
  return scaled;
}

std::vector<std::byte> generateInput(const ParamSpec &param, int64_t count, uint64_t seed, int trial, unsigned threads) {
  size_t elements = count > 0 ? static_cast<size_t>(count) : 0;
  std::vector<std::byte> out(elements * elementSize(param.type));
  const uint64_t stream = bufferSeed(seed, param.name, trial);
  const InitSpec init = initForTrial(param.init, trial);
  // Every element depends on (stream, index) alone, so that the buffer can be
  // cut into chunks generated side by side with the same bytes as one pass.
  constexpr size_t kChunk = size_t{1} << 18; // even: a normal pair never straddles two chunks
  forEachChunk((elements + kChunk - 1) / kChunk, threads, [&](size_t chunk) {
    generateRange(out, param, init, stream, chunk * kChunk, std::min(elements, (chunk + 1) * kChunk), elements);
  });
  return out;
}

Result<std::vector<std::byte>> scalarArgument(const ParamSpec &param, const Shape &shape) {
  if (param.tensorMap) // 128 bytes only an executor can make (verify/TensorMapArgument.h)
    return makeError(ErrorKind::InvalidInput, "param '" + param.name + "' is a tensor map, which the executor encodes");
  std::vector<std::byte> out(elementSize(param.type));
  if (param.floatValue) {
    storeAs(out, 0, param.type, *param.floatValue);
    return out;
  }
  Result<int64_t> value = evaluate(param.value, shape);
  if (!value) return makeError(ErrorKind::InvalidInput, "param '" + param.name + "': " + value.error().message);
  int64_t v = *value;
  bool fits = true;
  switch (param.type) {
  case ElementType::I8: fits = v >= INT8_MIN && v <= INT8_MAX; break;
  case ElementType::U8: fits = v >= 0 && v <= UINT8_MAX; break;
  case ElementType::I32: fits = v >= INT32_MIN && v <= INT32_MAX; break;
  case ElementType::U32: fits = v >= 0 && v <= static_cast<int64_t>(UINT32_MAX); break;
  case ElementType::U64: fits = v >= 0; break;
  default: break;
  }
  if (!fits)
    return makeError(ErrorKind::InvalidInput, "param '" + param.name + "': value " + std::to_string(v) + " for " +
                                                  shapeToString(shape) + " does not fit " + elementTypeName(param.type));
  if (param.type == ElementType::I64 || param.type == ElementType::U64) {
    std::memcpy(out.data(), &v, sizeof v); // exact, no trip through double
    return out;
  }
  storeAs(out, 0, param.type, static_cast<double>(v));
  return out;
}

} // namespace ptxforge::tasks
