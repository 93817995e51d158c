// Module-scope variable initializers (`.const .s32 tab[] = {-1, 0x10, 1 << 4}`)
// evaluated into the bytes the variable starts with: integer, float and
// packed element types, nested braces for vectors and arrays, and the
// constant expressions the PTX ISA allows in them.
#pragma once

#include "emu/Types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ptxforge::emu {

/// Evaluates `text` (an initializer as the parser keeps it, `{1, 2, 3}` or
/// `5`) as elements of `type`, appending each element's little-endian bytes
/// to `out` (nested braces are flattened in order). Integers: decimal, hex
/// (0x), octal (leading 0) and binary (0b) literals with an optional U suffix,
/// in 64-bit two's complement. Floats: 0fXXXXXXXX (f32 bits), 0dXXXXXXXXXXXXXXXX
/// (f64 bits) and decimal (1.5, 2e-3). Expressions: ( ), unary + - ! ~,
/// * / %, + -, << >>, < > <= >=, == !=, &, ^, |, &&, ||, ?: with C precedence;
/// * / + - and comparisons also on floats. An integer element of a float type
/// is converted to its value, except for f16/bf16 (and their x2 forms), whose
/// integer elements are bit patterns as in `mov.b16`. A float element of an
/// integer type must be a 0f/0d literal of the type's width (its bits). On
/// failure returns false with a sentence in `error`.
bool evaluateInitializer(const std::string &text, DType type, std::vector<uint8_t> &out, std::string &error);

} // namespace ptxforge::emu
