// TensorMap: the parameters of a TMA tensor map (cuTensorMapEncodeTiled's, in
// tile mode), the rules the driver documents for them, and the 128-byte map
// an executor encodes for a kernel parameter (`const __grid_constant__
// CUtensorMap`, a `.param .align 64 .b8 name[128]` in PTX).
#pragma once

#include "support/Result.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::exec {

/// CUtensorMapDataType's values for the types a task can have (same numbers).
enum class TensorMapDataType : uint8_t {
  U8 = 0, U16, U32, I32, U64, I64, F16, F32, F64, BF16, F32Ftz, TF32, TF32Ftz,
};
/// CUtensorMapSwizzle's first four values: 16-byte chunks permuted within
/// 32-, 64- or 128-byte spans (the sm_100 atom variants are not offered).
enum class TensorMapSwizzle : uint8_t { None = 0, B32, B64, B128 };
/// CUtensorMapInterleave: only None is supported end to end (the emulator's copies).
enum class TensorMapInterleave : uint8_t { None = 0, B16, B32 };
/// CUtensorMapL2promotion.
enum class TensorMapL2Promotion : uint8_t { None = 0, B64, B128, B256 };
/// CUtensorMapFloatOOBfill: out-of-bounds elements of a load read as zero,
/// or (floating types only) as a NaN that asks FMA consumers for zero.
enum class TensorMapOobFill : uint8_t { Zero = 0, NanRequestZeroFma };

/// Bytes of one element of `type`.
uint32_t tensorMapElementBytes(TensorMapDataType type);
/// "u8", "f32", "bf16", "tf32_ftz", ...
const char *tensorMapDataTypeName(TensorMapDataType type);
/// Span in bytes of a swizzle mode: 0, 32, 64, 128.
uint32_t tensorMapSwizzleBytes(TensorMapSwizzle swizzle);

/// A tiled tensor map, as cuTensorMapEncodeTiled takes it (dimension 0 is the
/// innermost, contiguous one). The global address is not part of it: the
/// executor supplies it from a buffer.
struct TensorMapSpec {
  TensorMapDataType dataType = TensorMapDataType::F32;
  uint32_t rank = 1;                        ///< 1..5
  std::array<uint64_t, 5> globalDim{};      ///< elements per dimension, in [1, 2^32]
  std::array<uint64_t, 4> globalStrides{};  ///< bytes between consecutive indices of dimensions 1..rank-1
  std::array<uint32_t, 5> boxDim{};         ///< elements traversed per dimension, in [1, 256]
  std::array<uint32_t, 5> elementStrides{1, 1, 1, 1, 1}; ///< traversal step, in [1, 8]
  TensorMapInterleave interleave = TensorMapInterleave::None;
  TensorMapSwizzle swizzle = TensorMapSwizzle::None;
  TensorMapL2Promotion l2Promotion = TensorMapL2Promotion::None;
  TensorMapOobFill oobFill = TensorMapOobFill::Zero;
  friend bool operator==(const TensorMapSpec &, const TensorMapSpec &) = default;
};

/// The encoded map a kernel receives (opaque; 64-byte aligned as a parameter).
using TensorMapBytes = std::array<uint8_t, 128>;
inline constexpr size_t kTensorMapAlignment = 64;

/// Elements one box holds along dimension i: ceil(boxDim[i] / elementStrides[i])
/// (dimension 0's stride is ignored without interleave, as the driver says).
uint32_t tensorMapBoxCount(const TensorMapSpec &spec, uint32_t dimension);
/// Bytes one box occupies in shared memory (what a load's complete_tx counts).
uint64_t tensorMapBoxBytes(const TensorMapSpec &spec);

/// Bytes from the global address to the end of the tensor's last element:
/// what the buffer must hold past it (saturates at UINT64_MAX).
uint64_t tensorMapFootprintBytes(const TensorMapSpec &spec);

/// The requirements cuTensorMapEncodeTiled documents (rank, 16-byte aligned
/// `globalAddress`, dimensions, strides multiple of 16 and below 2^40, box
/// sizes, element strides, the swizzle span against the box's inner bytes,
/// the NaN fill only for floating types), plus what ptxforge supports (no
/// interleave). Each problem is one sentence; empty when the spec is valid.
std::vector<std::string> tensorMapProblems(const TensorMapSpec &spec, uint64_t globalAddress);

/// "f32 rank 2 dims [47, 33] strides [192] box [32, 32] swizzle 128b" for messages.
std::string describeTensorMap(const TensorMapSpec &spec);

/// Fixed-size little-endian image of a spec (the isolated worker's request),
/// and back; nullopt for a truncated image or an enum value out of range.
std::vector<uint8_t> serializeTensorMapSpec(const TensorMapSpec &spec);
std::optional<TensorMapSpec> deserializeTensorMapSpec(const std::vector<uint8_t> &bytes);

} // namespace ptxforge::exec
