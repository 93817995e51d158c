// ptxforge_host_bench: the host side of a check, the part that is the same on
// every machine: input generation, output comparison, and buffers to and from
// the executor's worker process (the emulator's worker here; a GPU worker
// moves the same bytes through the same transport). Each is measured both
// ways in one run: one thread against all cores, the socket against the
// shared staging area. Prints a table and writes JSON.
//
//   ptxforge_host_bench [--elements N] [--repeats R] [--json FILE]
#include "exec/IsolatedExecutor.h"
#include "tasks/Compare.h"
#include "tasks/Inputs.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

using namespace ptxforge;

namespace {

struct Row {
  std::string what, how;
  double medianMs = 0, minMs = 0, maxMs = 0;
  double gbPerSecond = 0;
};

Row measure(const std::string &what, const std::string &how, int repeats, uint64_t bytes,
            const std::function<void()> &body) {
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    body();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  Row row{what, how, ms[ms.size() / 2], ms.front(), ms.back(), 0};
  row.gbPerSecond = static_cast<double>(bytes) / (row.medianMs * 1e6);
  return row;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"ptxforge_host_bench: input generation, comparison and worker transfers, both ways in one run"};
  int64_t elements = int64_t{1} << 24;
  int repeats = 5;
  std::string jsonPath;
  app.add_option("--elements", elements, "f32 elements per buffer")->capture_default_str();
  app.add_option("--repeats", repeats, "runs of each measurement (the median is reported)")->capture_default_str();
  app.add_option("--json", jsonPath, "write the rows here");
  CLI11_PARSE(app, argc, argv);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t bytes = static_cast<uint64_t>(elements) * 4;
  std::vector<Row> rows;

  tasks::ParamSpec param;
  param.name = "a";
  param.type = tasks::ElementType::F32;
  param.isPointer = true;
  param.init.distribution = tasks::InitDistribution::Uniform;
  param.init.min = -1;
  param.init.max = 1;
  for (unsigned threads : {1u, cores})
    rows.push_back(measure("generate f32 uniform", fmt::format("{} thread{}", threads, threads == 1 ? "" : "s"),
                           repeats, bytes, [&] { (void)tasks::generateInput(param, elements, 7, 0, threads); }));

  std::vector<std::byte> want = tasks::generateInput(param, elements, 7, 0);
  std::vector<std::byte> got = want;
  tasks::Tolerance tolerance;
  for (unsigned threads : {1u, cores})
    rows.push_back(measure("compare f32", fmt::format("{} thread{}", threads, threads == 1 ? "" : "s"), repeats, bytes,
                           [&] { (void)tasks::compareBuffers(param.type, got.data(), want.data(), elements, tolerance, threads); }));

  for (bool staged : {false, true}) {
    ::setenv("PTXFORGE_EXEC_STAGING", staged ? "1" : "0", 1);
    exec::IsolatedOptions options;
    options.backend = "emu";
    Result<std::unique_ptr<exec::Executor>> executor = exec::createIsolatedExecutor(options);
    if (!executor) {
      fmt::print(stderr, "the emulator's worker did not start: {}\n", executor.error().message);
      return 1;
    }
    Result<exec::DeviceBuffer> buffer = (*executor)->allocateBuffer(bytes);
    if (!buffer) return 1;
    const char *how = staged ? "staging area" : "socket";
    rows.push_back(measure("upload to the worker", how, repeats, bytes, [&] {
      if (!(*executor)->copyToDevice(buffer->handle(), 0, want.data(), bytes)) std::abort();
    }));
    rows.push_back(measure("download from the worker", how, repeats, bytes, [&] {
      if (!(*executor)->copyToHost(got.data(), buffer->handle(), 0, bytes)) std::abort();
    }));
  }

  fmt::print("{} f32 elements ({} MiB) per buffer, median of {} runs, {} cores\n\n", elements, bytes >> 20, repeats,
             cores);
  fmt::print("| what | how | median ms | min-max ms | GB/s |\n|---|---|---|---|---|\n");
  nlohmann::json out = {{"elements", elements}, {"repeats", repeats}, {"cores", cores}, {"rows", nlohmann::json::array()}};
  for (const Row &row : rows) {
    fmt::print("| {} | {} | {:.1f} | {:.1f}-{:.1f} | {:.2f} |\n", row.what, row.how, row.medianMs, row.minMs, row.maxMs,
               row.gbPerSecond);
    out["rows"].push_back({{"what", row.what}, {"how", row.how}, {"median_ms", row.medianMs}, {"min_ms", row.minMs},
                           {"max_ms", row.maxMs}, {"gb_per_s", row.gbPerSecond}});
  }
  if (!jsonPath.empty()) std::ofstream(jsonPath) << out.dump(2) << '\n';
  return 0;
}
