// The forms of the arithmetic and comparison instructions. The instruction
// table accepts the union of an opcode's modifiers; which of them one type
// takes is narrower: `.ftz` is for f32 and f16 (not integers, bf16 or f64),
// rounding modes for floats, `.lo`/`.hi`/`.wide` for integers, `.sat` for s32
// and a few float forms; some forms need a modifier (`mul.u32` needs
// `.lo`/`.hi`/`.wide`, `div.f32` a rounding mode or `.approx`/`.full`,
// `ex2.f32` `.approx`); `setp`'s comparison must suit the type (`.lo` is
// unsigned, `.ltu` float, and `.b32` has no order). The rules are ptxas
// 13.0's, found by assembling every combination; `lint_vs_ptxas --alu-forms`
// (tests/external) holds the lint to them.
#pragma once

#include "ptx/ConversionRules.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ptxforge::ptx {

/// Checks the modifiers of arithmetic instruction `op` (add, sub, mul, mad,
/// fma, min, max, div, abs, neg, sqrt, rcp, rsqrt, sin, cos, lg2, ex2, tanh,
/// setp, set, redux.sync) against its type. `targetSm` is the module's SM and
/// `ptxVersion` its `.version` as major * 10 + minor (0: none): `mad.f32`
/// needs a rounding mode from sm_20 on, and the float forms that need a
/// modifier need it from PTX ISA 1.4 on.
/// nullopt when the form is valid, for other opcodes, and when the modifiers
/// name no type (the table reports those).
std::optional<FormProblem> checkArithmetic(const std::string &op, const std::vector<std::string> &modifiers,
                                           uint32_t targetSm, uint32_t ptxVersion);

} // namespace ptxforge::ptx
