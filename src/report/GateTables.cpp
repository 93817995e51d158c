// See GateTables.h.
#include "report/GateTables.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace ptxforge::report {

std::string crossCheckHeader(const exec::DeviceProperties &device, uint64_t seed, int trials) {
  return fmt::format("{} ({}) against the ptxforge emulator, task references, seed {}, {} trial(s)\n\n"
                     "| task | shape | output | type | elements | bit-identical | max abs error | "
                     "max rel error | within tolerance |\n|---|---|---|---|---|---|---|---|---|\n",
                     device.name, device.arch(), seed, trials);
}

std::string crossCheckRows(const tasks::TaskSpec &task, const verify::CrossCheckResult &result) {
  using Key = std::pair<size_t, std::string>;
  std::map<Key, const verify::CrossCheckRow *> worst;
  std::map<Key, size_t> identical, elements;
  for (const verify::CrossCheckRow &row : result.rows) {
    Key key{row.shapeIndex, row.param};
    identical[key] += row.identical;
    elements[key] += row.count;
    const verify::CrossCheckRow *&w = worst[key];
    if (!w || (w->compare.passed && !row.compare.passed) || row.compare.maxAbsError > w->compare.maxAbsError) w = &row;
  }
  std::string out;
  for (const auto &[key, row] : worst)
    out += fmt::format("| {} | {} | {} | {} | {} | {:.2f}% | {:.3g} | {:.3g} | {} |\n", task.name,
                       tasks::shapeToString(row->shape), row->param, tasks::elementTypeName(row->type), elements[key],
                       100.0 * static_cast<double>(identical[key]) /
                           static_cast<double>(std::max<size_t>(1, elements[key])),
                       row->compare.maxAbsError, row->compare.maxRelError, row->compare.passed ? "yes" : "NO");
  return out;
}

std::string baselineHeader(const exec::DeviceProperties &device, uint64_t seed) {
  return fmt::format("Baselines on {} ({}), NVRTC references, seed {}\n\n", device.name, device.arch(), seed) +
         "| task | level | timed shape | median ms [p10, p90] | self speedup | GB/s | GFLOP/s | DRAM peak | "
         "registers | spill B (st/ld) | verdict | vendor ms [p10, p90] | vendor GFLOP/s | nvcc/vendor speed |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
}

std::string baselineRow(const tasks::TaskSpec &task, const verify::CheckResult &result,
                        const exec::DeviceProperties &device, const VendorCells &vendor) {
  std::string timing = "-", speedup = "-", gbps = "-", gflops = "-", peak = "-", shape = "-";
  if (!result.benchmarks.empty()) {
    const verify::BenchmarkReport &b = result.benchmarks.front();
    shape = tasks::shapeToString(b.shape);
    timing = fmt::format("{:.4f} [{:.4f}, {:.4f}]", b.baseline.median, b.baseline.p10, b.baseline.p90);
    speedup = fmt::format("{:.3f} [{:.3f}, {:.3f}]", b.speedup, b.speedupLow, b.speedupHigh);
    if (b.baselineGbps) gbps = fmt::format("{:.0f}", *b.baselineGbps);
    if (b.baselineGflops) gflops = fmt::format("{:.0f}", *b.baselineGflops);
    if (b.baselineGbps && device.peakMemoryBandwidthGBs() > 0)
      peak = fmt::format("{:.0f}%", 100.0 * *b.baselineGbps / device.peakMemoryBandwidthGBs());
  }
  std::string registers = "-", spills = "-";
  if (result.compile) {
    registers = std::to_string(result.compile->resources.registers);
    spills = fmt::format("{}/{}", result.compile->resources.spillStoreBytes, result.compile->resources.spillLoadBytes);
  }
  return fmt::format("| {} | L{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", task.name,
                     task.level, shape, timing, speedup, gbps, gflops, peak, registers, spills,
                     verify::verdictName(result.verdict), vendor.timing, vendor.gflops, vendor.ratio);
}

std::string baselineFooter() {
  return "\nvendor: the task's [vendor] operation (cuBLAS) on the timed shape, checked against the reference first, "
         "then timed with the same protocol (not interleaved); nvcc/vendor speed = vendor median / reference median, "
         "below 1 where the nvcc reference is slower. \u2014: the task has no [vendor].\n";
}

} // namespace ptxforge::report
