// Nsight Compute under `check --profile` (verify/NcuProfile.h) without a GPU:
// the CSV parser on ncu's output recorded on an H200, on the raw page's
// layout and on broken input; the runner against stand-in `ncu` scripts
// (no permission, a hang, too much output, a good CSV); the report's pairing,
// text and JSON.
#include "verify/Check.h"
#include "verify/NcuProfile.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>

namespace ptxforge::verify {
namespace {

std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const NcuKernelRow *rowNamed(const std::vector<NcuKernelRow> &rows, const std::string &prefix) {
  for (const NcuKernelRow &row : rows)
    if (row.kernelName.rfind(prefix + "(", 0) == 0) return &row;
  return nullptr;
}

double number(const NcuKernelRow &row, const std::string &metric) {
  auto it = row.metrics.find(metric);
  if (it == row.metrics.end() || !it->second.number) return -1;
  return *it->second.number;
}

// The details page (a record per metric) that `ncu --csv --metrics ...` printed
// on the H200 for tests/emu/ProfileKernels/ncu_microbench.cu (2026-12-01).
TEST(NcuCsv, ReadsTheDetailsPageRecordedOnAnH200) {
  Result<std::vector<NcuKernelRow>> rows =
      parseNcuCsv(readText(PTXFORGE_SOURCE_DIR "/tests/verify/ncu/microbench_details_h200.csv"));
  ASSERT_TRUE(rows) << render(rows.error());
  ASSERT_EQ(rows->size(), 29u);
  const NcuKernelRow *stride32 = rowNamed(*rows, "lds32_stride32");
  ASSERT_NE(stride32, nullptr);
  EXPECT_EQ(stride32->blockSize, "(32, 1, 1)");
  EXPECT_EQ(stride32->computeCapability, "9.0");
  EXPECT_EQ(number(*stride32, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"), 31);
  EXPECT_EQ(number(*stride32, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"), 32);
  const NcuKernelRow *offset4 = rowNamed(*rows, "ldg32_offset4");
  ASSERT_NE(offset4, nullptr);
  EXPECT_EQ(number(*offset4, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), 5);
  EXPECT_EQ(number(*offset4, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"), 1);
  EXPECT_EQ(offset4->metrics.at("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum").unit, "sector");

  // Paired as check would pair a candidate with a reference: 5 sectors per request against 4.
  const NcuKernelRow *stride1 = rowNamed(*rows, "ldg32_stride1");
  ASSERT_NE(stride1, nullptr);
  NcuProfileReport report = pairNcuRows(offset4, stride1);
  auto metric = [&](const std::string &key) {
    for (const NcuMetricPair &pair : report.metrics)
      if (pair.key == key) return pair;
    return NcuMetricPair{};
  };
  EXPECT_EQ(metric("global_load_sectors_per_request").candidate, 5.0);
  EXPECT_EQ(metric("global_load_sectors_per_request").reference, 4.0);
  EXPECT_EQ(metric("shared_load_bank_conflicts").candidate, 0.0);
  EXPECT_FALSE(metric("time").candidate); // not in that run's metric list
}

// The raw page that `check --profile` got from ncu 2025.3.1.0 on the H200
// (2026-12-02) for a tiled transpose without the padding column
// (tests/emu/ProfileKernels/transpose_2d_unpadded.ptx) on 4096 x 4096: every
// metric of the set is there, the column reads conflict 32 ways.
TEST(NcuCsv, ReadsTheRawPageRecordedOnAnH200) {
  Result<std::vector<NcuKernelRow>> rows =
      parseNcuCsv(readText(PTXFORGE_SOURCE_DIR "/tests/verify/ncu/transpose_2d_unpadded_raw_h200.csv"));
  ASSERT_TRUE(rows) << render(rows.error());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->front().kernelName, "transpose_2d");
  EXPECT_EQ(rows->front().gridSize, "(128, 128, 1)");
  NcuProfileReport report = pairNcuRows(&rows->front(), nullptr);
  std::map<std::string, double> values;
  for (const NcuMetricPair &metric : report.metrics) {
    EXPECT_TRUE(metric.candidate) << metric.key << " (" << metric.ncuMetric << ") missing";
    if (metric.candidate) values[metric.key] = *metric.candidate;
  }
  EXPECT_EQ(values["time"], 78688); // nanoseconds, as --print-units base prints them
  EXPECT_EQ(values["registers"], 22);
  EXPECT_EQ(values["shared_load_wavefronts"], 17007867);
  EXPECT_EQ(values["shared_load_bank_conflicts"], 16483579);
  EXPECT_EQ(values["global_load_sectors_per_request"], 4);
  EXPECT_EQ(values["global_store_sectors_per_request"], 4);
  EXPECT_DOUBLE_EQ(values["achieved_occupancy"], 92.69);
  ASSERT_GE(report.stalls.size(), 3u);
  EXPECT_EQ(report.stalls[0].reason, "short_scoreboard");
  EXPECT_DOUBLE_EQ(*report.stalls[0].candidate, 19.97);
  EXPECT_EQ(report.stalls[1].reason, "long_scoreboard");
  EXPECT_EQ(report.stalls[2].reason, "mio_throttle");
}

// The raw page, as `check --profile` asks for it: one record per launch, a
// column per metric, the units under the header; ncu's own lines in between.
constexpr const char *kRawPage =
    "==PROF== Connected to process 4242 (/build/ptxforge_ncu_launch)\n"
    "==PROF== Profiling \"sgemm\" - 0: 0%....50%....100% - 38 passes\n"
    "==PROF== Disconnected from process 4242\n"
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
    "\"Grid Size\",\"Device\",\"CC\",\"gpu__time_duration.sum\",\"dram__throughput.avg.pct_of_peak_sustained_elapsed\","
    "\"launch__registers_per_thread\",\"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum\","
    "\"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum\","
    "\"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio\","
    "\"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio\","
    "\"smsp__average_warps_issue_stalled_selected_per_issue_active.ratio\","
    "\"smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio\"\n"
    "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"usecond\",\"%\",\"register/thread\",\"sector\",\"\","
    "\"ratio\",\"ratio\",\"ratio\",\"ratio\"\n"
    "\"0\",\"4242\",\"ptxforge_ncu_launch\",\"127.0.0.1\",\"sgemm\",\"1\",\"7\",\"(256, 1, 1)\",\"(8, 8, 1)\",\"0\","
    "\"9.0\",\"1,234.5\",\"12.25\",\"128\",\"1,048,576\",\"262,144\",\"3.5\",\"0.75\",\"1\",\"n/a\"\n";

TEST(NcuCsv, ReadsTheRawPageWithUnitsAndThousandsSeparators) {
  Result<std::vector<NcuKernelRow>> rows = parseNcuCsv(kRawPage);
  ASSERT_TRUE(rows) << render(rows.error());
  ASSERT_EQ(rows->size(), 1u);
  const NcuKernelRow &row = rows->front();
  EXPECT_EQ(row.kernelName, "sgemm");
  EXPECT_EQ(row.gridSize, "(8, 8, 1)");
  EXPECT_EQ(number(row, "gpu__time_duration.sum"), 1234.5);
  EXPECT_EQ(row.metrics.at("gpu__time_duration.sum").unit, "usecond");
  EXPECT_EQ(number(row, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), 1048576);
  EXPECT_EQ(row.metrics.count("Kernel Name"), 0u); // identification, not a metric
  const NcuValue &na = row.metrics.at("smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio");
  EXPECT_FALSE(na.number);
  EXPECT_EQ(na.text, "n/a");

  NcuProfileReport report = pairNcuRows(&row, nullptr);
  ASSERT_FALSE(report.metrics.empty());
  EXPECT_EQ(report.metrics.front().key, "time");
  EXPECT_EQ(report.metrics.front().candidate, 1234.5e3); // microseconds to nanoseconds
  EXPECT_FALSE(report.metrics.front().reference);
  // Stalls: largest first; "selected" (the warp that issued) is not a stall.
  ASSERT_EQ(report.stalls.size(), 2u);
  EXPECT_EQ(report.stalls[0].reason, "long_scoreboard");
  EXPECT_EQ(report.stalls[0].candidate, 3.5);
  EXPECT_EQ(report.stalls[1].reason, "barrier");

  const std::string prompt = describeNcuForPrompt(report);
  EXPECT_NE(prompt.find("- Nsight Compute, one launch each on {} (yours vs the reference's): duration 1.234 ms vs -"),
            std::string::npos)
      << prompt;
  EXPECT_NE(prompt.find("global-load sectors/request 4.00 vs -"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("- Top warp stalls (warps stalled per issued instruction): long_scoreboard 3.50 vs -, barrier"),
            std::string::npos)
      << prompt;
  EXPECT_EQ(describeNcuForPrompt(pairNcuRows(nullptr, nullptr)), "");

  const std::string text = formatNcuText(report);
  EXPECT_NE(text.find("duration"), std::string::npos) << text;
  EXPECT_NE(text.find("1.234 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("global-load sectors/request"), std::string::npos) << text;
  EXPECT_NE(text.find("4.00"), std::string::npos) << text;
  EXPECT_NE(text.find("long_scoreboard 3.50 vs -"), std::string::npos) << text;
}

TEST(NcuCsv, BrokenInputIsALocatedErrorNotACrash) {
  auto fails = [](std::string_view text, const char *why, uint32_t line) {
    Result<std::vector<NcuKernelRow>> rows = parseNcuCsv(text);
    ASSERT_FALSE(rows) << why;
    EXPECT_EQ(rows.error().code, "ncu-csv") << why;
    EXPECT_EQ(rows.error().line, line) << why << ": " << render(rows.error());
  };
  fails("", "empty", 0);
  fails("==PROF== nothing profiled\n", "no records", 0);
  fails("\"a\",\"b\"\n\"1\",\"2\"\n", "not ncu's header", 1);
  fails("\"ID\",\"Kernel Name\",\"x\"\n\"0\",\"k\"\n", "a short record", 2);
  fails("\"ID\",\"Kernel Name\",\"x\"\n\"0\",\"k\",\"1\",\"2\"\n", "a long record", 2);
  fails("\"ID\",\"Kernel Name\",\"x\"\n\"0\",\"k\",\"1\n", "an open quote", 2);
  fails("\"ID\",\"Kernel Name\",\"x\"\n\"0\",\"k\"x,\"1\"\n", "text after a quote", 2);

  NcuCsvLimits small;
  small.maxBytes = 100;
  Result<std::vector<NcuKernelRow>> huge = parseNcuCsv(std::string(101, '"'), small);
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("101 bytes"), std::string::npos);
  small = {};
  small.maxColumns = 3;
  EXPECT_FALSE(parseNcuCsv("\"ID\",\"Kernel Name\",\"a\",\"b\"\n", small));
  small = {};
  small.maxRows = 2;
  EXPECT_FALSE(parseNcuCsv("\"ID\",\"Kernel Name\"\n\"0\",\"k\"\n\"1\",\"k\"\n", small));

  // A header alone: no launch profiled, not an error of the CSV.
  Result<std::vector<NcuKernelRow>> none = parseNcuCsv("\"ID\",\"Kernel Name\",\"x\"\n");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

// Mutations of the recorded CSV (bytes flipped, dropped, cut): every one
// parses or fails with an Error; none crashes (the sanitizer pass runs this).
TEST(NcuCsv, MutatedRecordingsNeverCrash) {
  const std::string base = readText(PTXFORGE_SOURCE_DIR "/tests/verify/ncu/microbench_details_h200.csv");
  ASSERT_FALSE(base.empty());
  std::mt19937_64 random(16);
  const char alphabet[] = {'"', ',', '\n', '\r', '0', 'x', '\0', ' ', '\xff'};
  for (int round = 0; round < 300; ++round) {
    std::string text = base.substr(0, random() % (base.size() + 1));
    for (int edits = 1 + static_cast<int>(random() % 4); edits > 0 && !text.empty(); --edits) {
      const size_t at = random() % text.size();
      switch (random() % 3) {
      case 0: text[at] = alphabet[random() % sizeof alphabet]; break;
      case 1: text.erase(at, 1 + random() % 8); break;
      default: text.insert(at, 1, alphabet[random() % sizeof alphabet]); break;
      }
    }
    Result<std::vector<NcuKernelRow>> rows = parseNcuCsv(text);
    if (!rows) {
      EXPECT_EQ(rows.error().code, "ncu-csv");
    }
  }
}

// ---------------------------------------------------------------------------
// The runner, against stand-in ncu programs

class NcuRunner : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "ncu-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    folder_ = pattern;
  }
  void TearDown() override {
    std::error_code error;
    std::filesystem::remove_all(folder_, error);
  }
  /// A shell script standing in for ncu.
  std::string script(const std::string &name, const std::string &body) {
    const std::filesystem::path path = folder_ / name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path.string();
  }
  static NcuLaunch launch() {
    NcuLaunch launch;
    launch.cubin = {0x7f, 'E', 'L', 'F'};
    launch.kernel = "sgemm";
    launch.launch.grid = {8, 8, 1};
    launch.launch.block = {256, 1, 1};
    NcuLaunch::Param input;
    input.isBuffer = true;
    input.bufferBytes = 16;
    input.bytes.assign(16, std::byte{1});
    NcuLaunch::Param output;
    output.isBuffer = true;
    output.bufferBytes = 16;
    NcuLaunch::Param scalar;
    scalar.bytes = {std::byte{64}, std::byte{0}, std::byte{0}, std::byte{0}};
    launch.params = {input, output, scalar};
    return launch;
  }
  NcuRunOptions options(const std::string &ncu) {
    NcuRunOptions options;
    options.ncuPath = ncu;
    options.launcherPath = "/bin/true";
    options.timeout = std::chrono::milliseconds(5'000);
    return options;
  }
  std::filesystem::path folder_;
};

TEST_F(NcuRunner, ParsesTheRowOfAGoodRun) {
  // The launch folder is the next-to-last argument: the stand-in checks what
  // the launcher would read, then prints the raw page.
  std::ofstream(folder_ / "page.csv") << kRawPage;
  const std::string ncu = script("ncu", "for last; do :; done\n"
                                        "eval dir=\\${$(($# - 1))}\n"
                                        "test -f \"$dir/launch.json\" && test -f \"$dir/module.cubin\" && "
                                        "test -f \"$dir/param0.bin\" && test ! -f \"$dir/param1.bin\" || exit 3\n"
                                        "grep -q '\"scalar\": *\"40000000\"' \"$dir/launch.json\" || exit 4\n"
                                        "cat '" + (folder_ / "page.csv").string() + "'\n");
  NcuRun run = runUnderNcu(launch(), options(ncu));
  ASSERT_TRUE(run.error.empty()) << run.error;
  ASSERT_TRUE(run.row);
  EXPECT_EQ(run.row->kernelName, "sgemm");
  EXPECT_NE(run.command.find("--kernel-name sgemm"), std::string::npos) << run.command;
  EXPECT_NE(run.command.find("--clock-control none"), std::string::npos) << run.command;
  EXPECT_NE(run.command.find("gpu__time_duration.sum"), std::string::npos) << run.command;
}

TEST_F(NcuRunner, NoPermissionIsNamed) {
  const std::string ncu = script(
      "ncu", "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
             "Counters on the target device 0.'\nexit 1\n");
  NcuRun run = runUnderNcu(launch(), options(ncu));
  EXPECT_FALSE(run.row);
  EXPECT_NE(run.error.find("ERR_NVGPUCTRPERM"), std::string::npos) << run.error;
}

TEST_F(NcuRunner, AHangIsKilledAtTheTimeout) {
  const std::string ncu = script("ncu", "exec sleep 30\n");
  NcuRunOptions opts = options(ncu);
  opts.timeout = std::chrono::milliseconds(300);
  NcuRun run = runUnderNcu(launch(), opts);
  EXPECT_FALSE(run.row);
  EXPECT_NE(run.error.find("did not finish"), std::string::npos) << run.error;
}

TEST_F(NcuRunner, TooMuchOutputIsCut) {
  const std::string ncu = script("ncu", "exec yes '\"ID\",\"Kernel Name\"'\n");
  NcuRunOptions opts = options(ncu);
  opts.maxOutputBytes = 1 << 16;
  NcuRun run = runUnderNcu(launch(), opts);
  EXPECT_FALSE(run.row);
  EXPECT_NE(run.error.find("more than 65536 bytes"), std::string::npos) << run.error;
}

TEST_F(NcuRunner, AFailureCarriesNcusErrorLines) {
  const std::string ncu =
      script("ncu", "echo '==PROF== Connected'\necho 'ptxforge_ncu_launch: launch: launch-error: too many resources' >&2\n"
                    "echo '==ERROR== The application returned an error code (1).' >&2\nexit 1\n");
  NcuRun run = runUnderNcu(launch(), options(ncu));
  EXPECT_FALSE(run.row);
  EXPECT_NE(run.error.find("status 1"), std::string::npos) << run.error;
  EXPECT_NE(run.error.find("too many resources"), std::string::npos) << run.error;
}

TEST_F(NcuRunner, NothingProfiledAndABadCsvAreErrors) {
  NcuRun nothing = runUnderNcu(launch(), options(script("ncu", "echo '==WARNING== No kernels were profiled.'\n")));
  EXPECT_FALSE(nothing.row);
  EXPECT_NE(nothing.error.find("ncu-csv"), std::string::npos) << nothing.error;
  NcuRun empty =
      runUnderNcu(launch(), options(script("ncu2", "echo '\"ID\",\"Kernel Name\"'\necho '==WARNING== none'\n")));
  EXPECT_NE(empty.error.find("profiled no launch of 'sgemm'"), std::string::npos) << empty.error;
}

TEST_F(NcuRunner, MissingToolsAreErrors) {
  NcuRunOptions opts = options((folder_ / "no-such-ncu").string());
  NcuRun run = runUnderNcu(launch(), opts);
  EXPECT_FALSE(run.row);
  EXPECT_FALSE(run.error.empty());
  ::setenv("PTXFORGE_NCU", (folder_ / "no-such-ncu").c_str(), 1);
  EXPECT_EQ(findNcu(), "");
  ::unsetenv("PTXFORGE_NCU");
}

TEST_F(NcuRunner, ReadsTheVersion) {
  const std::string ncu = script("ncu", "echo 'NVIDIA (R) Nsight Compute Command Line Profiler'\n"
                                        "echo 'Copyright (c) 2018-2025 NVIDIA Corporation'\n"
                                        "echo 'Version 2025.3.0.0 (build 36273991) (public-release)'\n");
  EXPECT_EQ(ncuVersion(ncu), "2025.3.0.0");
  EXPECT_EQ(ncuVersion(script("bad", "exit 2\n")), "");
}

// ---------------------------------------------------------------------------
// JSON

TEST(NcuReport, JsonRoundTripsAloneAndInACheckResult) {
  Result<std::vector<NcuKernelRow>> rows = parseNcuCsv(kRawPage);
  ASSERT_TRUE(rows);
  NcuProfileReport report = pairNcuRows(&rows->front(), &rows->front());
  report.ncuVersion = "2025.3.0.0";
  report.shape = {{"M", 128}, {"N", 256}, {"K", 64}};
  report.shapeIndex = 6;
  report.error = "reference: something";
  Result<NcuProfileReport> back = ncuProfileFromJson(toJson(report));
  ASSERT_TRUE(back) << render(back.error());
  EXPECT_EQ(toJson(*back), toJson(report));

  CheckResult result;
  result.verdict = Verdict::Correct;
  result.stage = Stage::Done;
  result.task = "sgemm";
  result.ncuProfile = report;
  nlohmann::json json = toJson(result);
  ASSERT_TRUE(json.contains("profile"));
  EXPECT_EQ(json["profile"]["ncu"]["version"], "2025.3.0.0");
  EXPECT_EQ(json["profile"]["ncu"]["error"], "reference: something");
  Result<CheckResult> read = checkResultFromJson(json);
  ASSERT_TRUE(read) << render(read.error());
  EXPECT_FALSE(read->profile); // Nsight Compute's alone
  ASSERT_TRUE(read->ncuProfile);
  EXPECT_EQ(toJson(*read->ncuProfile), toJson(report));
  EXPECT_NE(formatText(*read).find("Nsight Compute 2025.3.0.0"), std::string::npos);

  json["profile"]["ncu"]["metrics"][0]["candidate"] = "fast";
  Result<CheckResult> bad = checkResultFromJson(json);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("/profile/ncu/metrics/0/candidate"), std::string::npos) << bad.error().message;
}

TEST(NcuReport, TheMetricSetIsDocumented) {
  const std::string docs = readText(PTXFORGE_SOURCE_DIR "/docs/profile.md");
  ASSERT_FALSE(docs.empty());
  for (const NcuMetricSpec &spec : ncuMetricSet()) {
    EXPECT_NE(docs.find(std::string("`") + spec.key + "`"), std::string::npos) << spec.key;
    EXPECT_NE(docs.find(spec.metric), std::string::npos) << spec.metric;
    if (spec.divisor) {
      EXPECT_NE(docs.find(spec.divisor), std::string::npos) << spec.divisor;
    }
  }
}

} // namespace
} // namespace ptxforge::verify
