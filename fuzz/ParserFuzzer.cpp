// libFuzzer target for the PTX front end: lexer, parser, printer and lint must
// never crash on any input, and whatever parses cleanly must round-trip.
#include "ptx/Lint.h"
#include "ptx/Parser.h"
#include "ptx/Printer.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view source(reinterpret_cast<const char *>(data), size);
  ptxforge::ptx::ParseResult first = ptxforge::ptx::parse(source);
  (void)ptxforge::ptx::lint(first.module);
  if (first.diagnostics.empty()) {
    std::string printed = ptxforge::ptx::print(first.module);
    ptxforge::ptx::ParseResult second = ptxforge::ptx::parse(printed);
    // A clean module must print to text that parses back to the same module.
    if (!second.diagnostics.empty() || !(second.module == first.module)) std::abort();
  }
  return 0;
}
