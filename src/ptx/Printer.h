// The PTX printer: Module → normalized PTX text that ptxas accepts and that
// parses back to an equal Module.
#pragma once

#include "ptx/Ast.h"

#include <string>

namespace ptxforge::ptx {

/// Prints a module in nvcc's layout (tab-indented body, one statement a line).
std::string print(const Module &module);

/// Prints one operand / instruction (no trailing `;`), as used in messages.
std::string printOperand(const Operand &operand);
std::string printInstruction(const Instruction &instruction);
std::string printVariable(const VariableDecl &variable);

} // namespace ptxforge::ptx
