// Decoding of PTX type and rounding-modifier names into the emulator's enums.
#include "emu/Types.h"

#include <array>

namespace ptxforge::emu {

namespace {

struct DTypeInfo {
  DType type;
  const char *name;
  unsigned bits;
};

// Indexed by DType; the static_assert below keeps the order in step with the enum.
constexpr std::array<DTypeInfo, 24> kDTypes = {{
    {DType::None, "none", 0},     {DType::Pred, "pred", 1},     {DType::B8, "b8", 8},
    {DType::B16, "b16", 16},      {DType::B32, "b32", 32},      {DType::B64, "b64", 64},
    {DType::B128, "b128", 128},   {DType::U8, "u8", 8},         {DType::U16, "u16", 16},
    {DType::U32, "u32", 32},      {DType::U64, "u64", 64},      {DType::S8, "s8", 8},
    {DType::S16, "s16", 16},      {DType::S32, "s32", 32},      {DType::S64, "s64", 64},
    {DType::F16, "f16", 16},      {DType::F16x2, "f16x2", 32},  {DType::BF16, "bf16", 16},
    {DType::BF16x2, "bf16x2", 32}, {DType::TF32, "tf32", 32},   {DType::F32, "f32", 32},
    {DType::F64, "f64", 64},      {DType::E4M3x2, "e4m3x2", 16}, {DType::E5M2x2, "e5m2x2", 16},
}};

constexpr bool tableMatchesEnum() {
  for (size_t i = 0; i < kDTypes.size(); ++i)
    if (static_cast<size_t>(kDTypes[i].type) != i) return false;
  return kDTypes.back().type == DType::E5M2x2;
}
static_assert(tableMatchesEnum(), "kDTypes must list every DType in enum order");

const DTypeInfo &info(DType type) {
  size_t index = static_cast<size_t>(type);
  return index < kDTypes.size() ? kDTypes[index] : kDTypes[0];
}

struct RoundingName {
  Rounding rounding;
  const char *name;
};

constexpr std::array<RoundingName, 9> kRoundings = {{
    {Rounding::Rn, "rn"},
    {Rounding::Rz, "rz"},
    {Rounding::Rm, "rm"},
    {Rounding::Rp, "rp"},
    {Rounding::Rna, "rna"},
    {Rounding::Rni, "rni"},
    {Rounding::Rzi, "rzi"},
    {Rounding::Rmi, "rmi"},
    {Rounding::Rpi, "rpi"},
}};

} // namespace

DType parseDType(std::string_view name) {
  for (const DTypeInfo &entry : kDTypes)
    if (entry.type != DType::None && name == entry.name) return entry.type;
  return DType::None;
}

Rounding parseRounding(std::string_view name) {
  for (const RoundingName &entry : kRoundings)
    if (name == entry.name) return entry.rounding;
  return Rounding::None;
}

const char *dtypeName(DType type) { return info(type).name; }

unsigned dtypeBits(DType type) { return info(type).bits; }

} // namespace ptxforge::emu
