// EntrySplit: one PTX module per kernel. A translation unit's PTX holds every
// kernel of the file; a corpus row holds one: the `.entry`, the `.func`s it
// calls (transitively) and the module-scope variables they name, printed in
// the PTX printer's normalized form, so that each row's PTX is a module that
// compiles on its own.
#pragma once

#include "support/Result.h"

#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::corpus {

/// One kernel cut out of a module.
struct EntryModule {
  std::string entry;      ///< the .entry name as in the PTX (mangled for C++ kernels)
  std::string ptx;        ///< the kernel's own module, normalized (ptx::print)
  int parameterCount = 0; ///< of the .entry
  /// "opcode.modifier.modifier" per instruction of the entry and its callees,
  /// in order (operands left out: register numbering is not a difference).
  std::vector<std::string> instructionTokens;
};

/// The kernels of `ptx`, in source order. `.file`, `.loc` and `.section
/// .debug_str` (whose labels -lineinfo's `.loc` lines name) stay; other DWARF
/// sections are left out. Debug PTX (-G, `.target ..., debug`) is the
/// exception: its DWARF describes every function and the PTX compiler
/// requires it, so each of its kernels gets the whole module (the
/// instruction tokens are still the kernel's own). A module the parser cannot read
/// without syntax errors is an InvalidInput error with the first one
/// (line:column: message), since it cannot be cut safely.
Result<std::vector<EntryModule>> splitEntries(std::string_view ptx);

/// The C++ name of a mangled entry ("_Z9transposePfPKfii" -> "transpose(float*,
/// float const*, int, int)"); the name itself when it is not mangled.
std::string demangledName(const std::string &entry);

} // namespace ptxforge::corpus
