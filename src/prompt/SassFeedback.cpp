// SassFeedback: kept to a few lines; `ptxforge compile --task` shows the whole
// comparison with the aligned listing.
#include "prompt/SassFeedback.h"

#include "toolchain/Compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace ptxforge::prompt {

namespace {

std::string side(const char *who, const toolchain::FunctionLoops &f) {
  if (!f.hot) return fmt::format("- {}: no loop ({} instructions of straight-line code)\n", who, f.instructions);
  const toolchain::SassLoop &hot = f.loops[static_cast<size_t>(*f.hot)];
  return fmt::format("- {}: {} loop{}, the hot one (depth {}) {}\n", who, f.loops.size(), f.loops.size() == 1 ? "" : "s",
                     hot.depth, toolchain::describeMix(hot.mix));
}

} // namespace

std::string hotLoopComparison(const toolchain::SassStats &candidate, const toolchain::SassStats &reference,
                              const std::string &kernel) {
  Result<std::vector<toolchain::FunctionLoops>> mine = toolchain::sassLoops(candidate);
  Result<std::vector<toolchain::FunctionLoops>> theirs = toolchain::sassLoops(reference);
  if (!mine || !theirs) return "";
  const toolchain::FunctionLoops *a = toolchain::pickFunction(*mine, kernel);
  const toolchain::FunctionLoops *b = toolchain::pickFunction(*theirs, kernel);
  if (!a || !b || (!a->hot && !b->hot)) return "";
  std::string out = side("yours", *a) + side("nvcc's", *b);
  if (a->hot && b->hot) {
    toolchain::HotLoopDiff diff = toolchain::diffHotLoops(a->loops[static_cast<size_t>(*a->hot)],
                                                          b->loops[static_cast<size_t>(*b->hot)]);
    if (diff.opcodes.empty()) {
      out += "- the two hot loops have the same opcode counts\n";
    } else {
      // The largest differences first, at most 10.
      std::vector<std::pair<int, std::string>> order;
      for (const auto &[op, counts] : diff.opcodes)
        order.emplace_back(-std::abs(counts.first - counts.second), op);
      std::sort(order.begin(), order.end());
      out += "- opcode counts that differ (yours/nvcc's):";
      for (size_t i = 0; i < order.size() && i < 10; ++i) {
        const auto &counts = diff.opcodes.at(order[i].second);
        out += fmt::format(" {} {}/{}", order[i].second, counts.first, counts.second);
      }
      out += "\n";
    }
  }
  return out;
}

std::string hotLoopComparison(const std::string &candidatePtx, const std::string &referencePtx,
                              const std::string &arch, const std::string &kernel) {
  if (candidatePtx.empty() || referencePtx.empty() || !toolchain::findNvdisasm()) return "";
  auto sassOf = [&](const std::string &ptx) -> std::optional<toolchain::SassStats> {
    toolchain::CompileOptions options;
    options.arch = arch;
    options.entryName = kernel;
    options.backend = toolchain::gateCompilerBackend(); // the cubin the gate runs
    Result<toolchain::CompileResult> compiled = toolchain::compilePtx(ptx, options);
    if (!compiled || !compiled->ok) return std::nullopt;
    Result<toolchain::SassStats> stats = toolchain::sassStats(compiled->cubin);
    if (!stats) return std::nullopt;
    return std::move(*stats);
  };
  std::optional<toolchain::SassStats> mine = sassOf(candidatePtx);
  if (!mine) return "";
  std::optional<toolchain::SassStats> theirs = sassOf(referencePtx);
  if (!theirs) return "";
  return hotLoopComparison(*mine, *theirs, kernel);
}

} // namespace ptxforge::prompt
