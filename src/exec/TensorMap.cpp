// TensorMap: names, the driver's documented rules, and the spec's wire image.
#include "exec/TensorMap.h"

#include <cstdio>
#include <cstring>

namespace ptxforge::exec {

namespace {

struct DataTypeInfo {
  TensorMapDataType type;
  const char *name;
  uint32_t bytes;
  bool floating;
};

constexpr DataTypeInfo kDataTypes[] = {
    {TensorMapDataType::U8, "u8", 1, false},          {TensorMapDataType::U16, "u16", 2, false},
    {TensorMapDataType::U32, "u32", 4, false},        {TensorMapDataType::I32, "i32", 4, false},
    {TensorMapDataType::U64, "u64", 8, false},        {TensorMapDataType::I64, "i64", 8, false},
    {TensorMapDataType::F16, "f16", 2, true},         {TensorMapDataType::F32, "f32", 4, true},
    {TensorMapDataType::F64, "f64", 8, true},         {TensorMapDataType::BF16, "bf16", 2, true},
    {TensorMapDataType::F32Ftz, "f32_ftz", 4, true},  {TensorMapDataType::TF32, "tf32", 4, true},
    {TensorMapDataType::TF32Ftz, "tf32_ftz", 4, true},
};

const DataTypeInfo &info(TensorMapDataType type) {
  for (const DataTypeInfo &i : kDataTypes)
    if (i.type == type) return i;
  return kDataTypes[0];
}

std::string list(const uint64_t *values, uint32_t count) {
  std::string out = "[";
  for (uint32_t i = 0; i < count; ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

} // namespace

uint32_t tensorMapElementBytes(TensorMapDataType type) { return info(type).bytes; }
const char *tensorMapDataTypeName(TensorMapDataType type) { return info(type).name; }


uint32_t tensorMapSwizzleBytes(TensorMapSwizzle swizzle) {
  switch (swizzle) {
  case TensorMapSwizzle::B32: return 32;
  case TensorMapSwizzle::B64: return 64;
  case TensorMapSwizzle::B128: return 128;
  default: return 0;
  }
}

uint32_t tensorMapBoxCount(const TensorMapSpec &spec, uint32_t dimension) {
  uint32_t stride = dimension == 0 && spec.interleave == TensorMapInterleave::None ? 1 : spec.elementStrides[dimension];
  if (stride == 0) stride = 1;
  return (spec.boxDim[dimension] + stride - 1) / stride;
}

uint64_t tensorMapBoxBytes(const TensorMapSpec &spec) {
  uint64_t bytes = tensorMapElementBytes(spec.dataType);
  for (uint32_t i = 0; i < spec.rank && i < 5; ++i) bytes *= tensorMapBoxCount(spec, i);
  return bytes;
}

uint64_t tensorMapFootprintBytes(const TensorMapSpec &spec) {
  if (spec.rank < 1 || spec.rank > 5) return 0;
  unsigned __int128 last = (spec.globalDim[0] ? spec.globalDim[0] - 1 : 0) * tensorMapElementBytes(spec.dataType);
  for (uint32_t i = 1; i < spec.rank; ++i)
    last += static_cast<unsigned __int128>(spec.globalDim[i] ? spec.globalDim[i] - 1 : 0) * spec.globalStrides[i - 1];
  last += tensorMapElementBytes(spec.dataType);
  return last > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(last);
}

std::vector<std::string> tensorMapProblems(const TensorMapSpec &spec, uint64_t globalAddress) {
  std::vector<std::string> problems;
  auto add = [&](std::string text) { problems.push_back(std::move(text)); };
  if (static_cast<uint8_t>(spec.dataType) > static_cast<uint8_t>(TensorMapDataType::TF32Ftz))
    add("the data type is not one of u8 u16 u32 i32 u64 i64 f16 f32 f64 bf16 f32_ftz tf32 tf32_ftz");
  if (spec.rank < 1 || spec.rank > 5) {
    add("the rank is " + std::to_string(spec.rank) + "; it must be 1 to 5");
    return problems;
  }
  if (spec.interleave != TensorMapInterleave::None)
    add("interleaved layouts are not supported (interleave must be none)");
  if (static_cast<uint8_t>(spec.swizzle) > static_cast<uint8_t>(TensorMapSwizzle::B128))
    add("the swizzle must be none, 32b, 64b or 128b");
  if (static_cast<uint8_t>(spec.l2Promotion) > static_cast<uint8_t>(TensorMapL2Promotion::B256))
    add("the L2 promotion must be none, 64b, 128b or 256b");
  if (static_cast<uint8_t>(spec.oobFill) > static_cast<uint8_t>(TensorMapOobFill::NanRequestZeroFma))
    add("the out-of-bounds fill must be zero or nan");
  const uint32_t elementBytes = tensorMapElementBytes(spec.dataType);
  if (globalAddress % 16 != 0)
    add("the global address 0x" + [&] {
      char hex[32];
      std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(globalAddress));
      return std::string(hex);
    }() + " is not 16-byte aligned");
  for (uint32_t i = 0; i < spec.rank; ++i) {
    const std::string d = "dimension " + std::to_string(i);
    if (spec.globalDim[i] == 0 || spec.globalDim[i] > (uint64_t(1) << 32))
      add(d + " has " + std::to_string(spec.globalDim[i]) + " elements; it must have 1 to 2^32");
    if (spec.boxDim[i] == 0 || spec.boxDim[i] > 256)
      add("the box has " + std::to_string(spec.boxDim[i]) + " elements along " + d + "; it must have 1 to 256");
    if (spec.elementStrides[i] == 0 || spec.elementStrides[i] > 8)
      add("the element stride of " + d + " is " + std::to_string(spec.elementStrides[i]) + "; it must be 1 to 8");
  }
  for (uint32_t i = 0; i + 1 < spec.rank; ++i) {
    const uint64_t stride = spec.globalStrides[i];
    const std::string d = "dimension " + std::to_string(i + 1);
    if (stride % 16 != 0 || stride >= (uint64_t(1) << 40))
      add("the stride of " + d + " is " + std::to_string(stride) +
          " bytes; it must be a multiple of 16 below 2^40 (rows of a row-major matrix need a length in bytes that is "
          "a multiple of 16)");
  }
  const uint64_t innerBytes = uint64_t(spec.boxDim[0]) * elementBytes;
  if (spec.boxDim[0] != 0 && innerBytes % 16 != 0)
    add("the box's inner dimension is " + std::to_string(innerBytes) + " bytes (" + std::to_string(spec.boxDim[0]) +
        " x " + std::to_string(elementBytes) + "); it must be a multiple of 16");
  if (uint32_t span = tensorMapSwizzleBytes(spec.swizzle); span && innerBytes > span)
    add("the box's inner dimension is " + std::to_string(innerBytes) + " bytes, more than the " + std::to_string(span) +
        "-byte swizzle span");
  if (spec.oobFill == TensorMapOobFill::NanRequestZeroFma && !info(spec.dataType).floating)
    add("the NaN out-of-bounds fill needs a floating-point data type, not " +
        std::string(tensorMapDataTypeName(spec.dataType)));
  return problems;
}

std::string describeTensorMap(const TensorMapSpec &spec) {
  uint32_t rank = spec.rank >= 1 && spec.rank <= 5 ? spec.rank : 1;
  uint64_t box[5];
  for (uint32_t i = 0; i < 5; ++i) box[i] = spec.boxDim[i];
  std::string out = std::string(tensorMapDataTypeName(spec.dataType)) + " rank " + std::to_string(spec.rank) +
                    " dims " + list(spec.globalDim.data(), rank) + " strides " +
                    list(spec.globalStrides.data(), rank - 1) + " box " + list(box, rank);
  if (uint32_t span = tensorMapSwizzleBytes(spec.swizzle)) out += " swizzle " + std::to_string(span) + "b";
  if (spec.oobFill == TensorMapOobFill::NanRequestZeroFma) out += " oob-fill nan";
  return out;
}

std::vector<uint8_t> serializeTensorMapSpec(const TensorMapSpec &spec) {
  std::vector<uint8_t> out;
  auto put = [&](const void *data, size_t bytes) {
    const auto *p = static_cast<const uint8_t *>(data);
    out.insert(out.end(), p, p + bytes);
  };
  const uint8_t enums[6] = {static_cast<uint8_t>(spec.dataType),   static_cast<uint8_t>(spec.rank),
                            static_cast<uint8_t>(spec.interleave), static_cast<uint8_t>(spec.swizzle),
                            static_cast<uint8_t>(spec.l2Promotion), static_cast<uint8_t>(spec.oobFill)};
  put(enums, sizeof enums);
  put(spec.globalDim.data(), sizeof spec.globalDim);
  put(spec.globalStrides.data(), sizeof spec.globalStrides);
  put(spec.boxDim.data(), sizeof spec.boxDim);
  put(spec.elementStrides.data(), sizeof spec.elementStrides);
  return out;
}

std::optional<TensorMapSpec> deserializeTensorMapSpec(const std::vector<uint8_t> &bytes) {
  TensorMapSpec spec;
  constexpr size_t kSize = 6 + sizeof spec.globalDim + sizeof spec.globalStrides + sizeof spec.boxDim +
                           sizeof spec.elementStrides;
  if (bytes.size() != kSize) return std::nullopt;
  const uint8_t *p = bytes.data();
  if (p[0] > uint8_t(TensorMapDataType::TF32Ftz) || p[2] > uint8_t(TensorMapInterleave::B32) ||
      p[3] > uint8_t(TensorMapSwizzle::B128) || p[4] > uint8_t(TensorMapL2Promotion::B256) ||
      p[5] > uint8_t(TensorMapOobFill::NanRequestZeroFma))
    return std::nullopt;
  spec.dataType = static_cast<TensorMapDataType>(p[0]);
  spec.rank = p[1];
  spec.interleave = static_cast<TensorMapInterleave>(p[2]);
  spec.swizzle = static_cast<TensorMapSwizzle>(p[3]);
  spec.l2Promotion = static_cast<TensorMapL2Promotion>(p[4]);
  spec.oobFill = static_cast<TensorMapOobFill>(p[5]);
  p += 6;
  auto take = [&](void *data, size_t n) {
    std::memcpy(data, p, n);
    p += n;
  };
  take(spec.globalDim.data(), sizeof spec.globalDim);
  take(spec.globalStrides.data(), sizeof spec.globalStrides);
  take(spec.boxDim.data(), sizeof spec.boxDim);
  take(spec.elementStrides.data(), sizeof spec.elementStrides);
  return spec;
}

} // namespace ptxforge::exec
