// libFuzzer target for the PTX front end: lexer, parser, printer and lint must
// never crash on any input, every diagnostic must be located and printable,
// and whatever parses cleanly must round-trip.
//
// Structure-aware input: besides plain PTX, an input may be a nesting recipe
//
//   PREFIX \0 OPEN \0 MIDDLE \0 CLOSE \0 SUFFIX \0 N0 N1 N2
//
// which expands to PREFIX + OPEN×n + MIDDLE + CLOSE×n + SUFFIX with
// n = (N0 + 256·N1) << (N2 mod 16): one mutated byte moves n across orders
// of magnitude, two give any exact count (the limit and one past it).
// Byte-level mutation alone almost never builds the thousands of balanced
// `{`/`(` that overflow a recursive parser; mutating the two count bytes of a
// recipe does it in seconds (fuzz/corpus/*.recipe are such seeds, and
// fuzz/README.md shows how this was checked against a parser without the
// nesting limit).
//
// Run with the PTX token dictionary:
//   ./build-fuzz/fuzz/ptx_parser_fuzzer -dict=fuzz/ptx.dict fuzz/corpus -max_total_time=60
#include "ptx/Lint.h"
#include "ptx/Parser.h"
#include "ptx/Printer.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace ptxforge::ptx;

/// Expanded inputs stay under this size (the -max_len CI passes) so that each
/// run takes milliseconds under ASan (4 MiB took seconds and tripped -timeout);
/// it is still room for 16,000 levels of `{\n … }\n`.
constexpr size_t kMaxExpandedBytes = size_t{64} << 10;

/// The recipe's expansion, or the input itself when it is not a recipe.
std::string expandRecipe(std::string_view input) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (int i = 0; i < 5; ++i) {
    size_t nul = input.find('\0', start);
    if (nul == std::string_view::npos) return std::string(input);
    parts.push_back(input.substr(start, nul - start));
    start = nul + 1;
  }
  std::string_view count = input.substr(start);
  auto countByte = [&](size_t i) -> size_t { return i < count.size() ? static_cast<uint8_t>(count[i]) : 0; };
  size_t n = (countByte(0) + 256 * countByte(1)) << (countByte(2) % 16);
  size_t unit = parts[1].size() + parts[3].size();
  n = unit ? std::min(n, kMaxExpandedBytes / unit) : 0;
  std::string out(parts[0]);
  out.reserve(parts[0].size() + n * unit + parts[2].size() + parts[4].size());
  for (size_t i = 0; i < n; ++i) out += parts[1];
  out += parts[2];
  for (size_t i = 0; i < n; ++i) out += parts[3];
  out += parts[4];
  return out;
}

void check(bool condition) {
  if (!condition) std::abort();
}

/// Rendered diagnostics: no raw control bytes (an escape sequence from the
/// input must never reach a terminal) and no unbounded lines.
void checkRendering(const std::vector<Diagnostic> &diagnostics, std::string_view source) {
  std::string text = formatDiagnosticsText(diagnostics, "fuzz.ptx", source, DiagnosticLimits{}.excerptColumns);
  size_t lineLength = 0;
  for (char c : text) {
    unsigned char byte = static_cast<unsigned char>(c);
    check(byte >= 0x20 || c == '\n' || c == '\t');
    check(byte != 0x7F);
    lineLength = c == '\n' ? 0 : lineLength + 1;
    check(lineLength <= 4096);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string source = expandRecipe(std::string_view(reinterpret_cast<const char *>(data), size));
  const DiagnosticLimits limits{};
  ParseResult first = parse(source, limits);
  LintOptions options;
  options.limits = limits;
  std::vector<Diagnostic> diagnostics = lintSource(source, options);
  (void)lint(first.module, options);
  check(diagnostics.size() <= limits.maxPerModule + 1);
  for (const Diagnostic &d : diagnostics) check(d.line > 0 && d.column > 0);
  checkRendering(diagnostics, source);
  if (first.diagnostics.empty()) {
    std::string printed = print(first.module);
    ParseResult second = parse(printed, limits);
    // A clean module must print to text that parses back to the same module.
    check(second.diagnostics.empty() && second.module == first.module);
  }
  return 0;
}
