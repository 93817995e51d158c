// EvalReport: renders an eval document (EvalReport.h) as Markdown, as one
// self-contained HTML page with inline SVG charts, as a comparison of two evals
// and as a leaderboard. The document may be pending, hand-edited or from
// another version: every value goes through the readers below, which treat a
// missing key, null, a non-finite number and an odd type alike, as "n/a".
// Nothing here calls nlohmann's throwing accessors on a value whose type was
// not checked first.
#include "report/EvalReport.h"

#include "report/JsonRead.h"
#include "report/Report.h"
#include "store/Store.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <set>
#include <string_view>

namespace ptxforge::report {

namespace {

using nlohmann::json;
using read::dumpCompact;
using read::isTrue;
using read::member;
using read::numberOf;
using read::stringOf;

constexpr std::string_view kNotAvailable = "n/a";

/// The thresholds fast_p is reported for (Metrics.h kFastThresholds) and their column names.
struct FastThreshold {
  double p;
  std::string_view label;
};
constexpr std::array<FastThreshold, 4> kFast = {{{0.0, "fast_0"}, {1.0, "fast_1"}, {1.5, "fast_1.5"}, {2.0, "fast_2"}}};

/// How many diagnostic codes the taxonomy lists.
constexpr size_t kTopCodes = 10;

// ---------------------------------------------------------------------------
// Reading the document

/// `node` when it is an object (nullptr otherwise), so that callers test one pointer.
const json *objectOrNull(const json *node) { return node != nullptr && node->is_object() ? node : nullptr; }

/// Any value as one line of plain text: strings as they are, lists joined by
/// commas, objects as compact JSON; "n/a" when missing or null.
std::string text(const json *value) {
  if (value == nullptr || value->is_null()) return std::string(kNotAvailable);
  if (value->is_string()) return value->get_ref<const std::string &>();
  if (value->is_boolean()) return value->get<bool>() ? "true" : "false";
  if (value->is_number_integer()) return dumpCompact(*value);
  if (value->is_number()) {
    std::optional<double> x = numberOf(value);
    return x ? fmt::format("{}", *x) : std::string(kNotAvailable);
  }
  if (value->is_array()) {
    if (value->empty()) return "none";
    std::string out;
    for (const json &element : *value) {
      if (!out.empty()) out += ", ";
      out += element.is_structured() ? dumpCompact(element) : text(&element);
    }
    return out;
  }
  return dumpCompact(*value);
}

/// The eval's id as "#12"; "n/a" when it has none.
std::string evalIdText(const json &document) {
  const json *id = member(&document, "eval");
  if (id == nullptr || id->is_null() || id->is_structured()) return std::string(kNotAvailable);
  return "#" + text(id);
}

/// The k of pass@k: metrics.ks, else the keys of overall.correct_at_k; ascending, unique.
std::vector<int> ksOf(const json *metrics) {
  std::vector<int> ks;
  auto add = [&ks](double k) {
    if (k >= 1 && k <= 1e6 && k == std::floor(k)) ks.push_back(static_cast<int>(k));
  };
  if (const json *list = member(metrics, "ks"); list != nullptr && list->is_array())
    for (const json &k : *list)
      if (std::optional<double> value = numberOf(&k)) add(*value);
  if (ks.empty())
    if (const json *rates = objectOrNull(member(member(metrics, "overall"), "correct_at_k")))
      for (const auto &[key, ignored] : rates->items()) {
        int k = 0;
        auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), k);
        if (error == std::errc() && end == key.data() + key.size()) add(k);
      }
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  return ks;
}

/// The k the charts and per-task comparisons use: 1 when reported, else the smallest.
int firstK(const std::vector<int> &ks) {
  if (ks.empty() || std::find(ks.begin(), ks.end(), 1) != ks.end()) return 1;
  return ks.front();
}

/// group[key][k] (lint_at_k, compile_at_k, correct_at_k).
std::optional<double> rateAtK(const json *group, std::string_view key, int k) {
  return numberOf(member(member(group, key), std::to_string(k)));
}

/// A FAST object's share at threshold p (fast_p, fast_p_low, fast_p_at_k[k]); the key
/// is matched as a number ("1" and "1.0" alike).
std::optional<double> shareAt(const json *shares, double p) {
  shares = objectOrNull(shares);
  if (shares == nullptr) return std::nullopt;
  for (const auto &[key, value] : shares->items()) {
    double threshold = 0;
    auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), threshold);
    if (error == std::errc() && end == key.data() + key.size() && std::fabs(threshold - p) < 1e-9)
      return numberOf(&value);
  }
  return std::nullopt;
}

/// group.fast_p at threshold p.
std::optional<double> fastP(const json *group, double p) { return shareAt(member(group, "fast_p"), p); }

/// R of the metrics: metrics.rounds, else 1.
int roundsOf(const json *metrics) {
  std::optional<double> rounds = numberOf(member(metrics, "rounds"));
  if (!rounds || *rounds < 1 || *rounds > 1e6 || *rounds != std::floor(*rounds)) return 1;
  return static_cast<int>(*rounds);
}

/// A group's or task's figures over all R rounds (null when R = 1).
const json *afterRoundsOf(const json *group) { return objectOrNull(member(group, "after_rounds")); }

/// " after R rounds" for figures taken from every round of a sample; "" when R = 1.
std::string afterRoundsSuffix(int rounds) { return rounds > 1 ? fmt::format(" after {} rounds", rounds) : ""; }

/// What a sample ended with: its after_rounds object when it has one, else the sample itself (R = 1).
const json *finalOf(const json &sample) {
  if (const json *after = afterRoundsOf(&sample)) return after;
  return &sample;
}

/// The groups of the headline: overall first, then the levels.
std::vector<const json *> groupsOf(const json *metrics) {
  std::vector<const json *> groups;
  if (const json *overall = objectOrNull(member(metrics, "overall"))) groups.push_back(overall);
  if (const json *levels = member(metrics, "levels"); levels != nullptr && levels->is_array())
    for (const json &level : *levels)
      if (level.is_object()) groups.push_back(&level);
  return groups;
}

std::vector<const json *> levelsOf(const json *metrics) {
  std::vector<const json *> levels;
  if (const json *list = member(metrics, "levels"); list != nullptr && list->is_array())
    for (const json &level : *list)
      if (level.is_object()) levels.push_back(&level);
  return levels;
}

std::vector<const json *> tasksOf(const json *metrics) {
  std::vector<const json *> tasks;
  if (const json *list = member(metrics, "tasks"); list != nullptr && list->is_array())
    for (const json &task : *list)
      if (task.is_object()) tasks.push_back(&task);
  return tasks;
}

/// A task's level as "L2" (the task JSON holds the number).
std::string levelText(const json *task) {
  const json *level = member(task, "level");
  if (level != nullptr && level->is_number_integer()) return "L" + dumpCompact(*level);
  return text(level);
}

/// Stage counts of a group: the funnel's stages in funnel order, then any other keys.
std::vector<std::pair<std::string, std::optional<double>>> stagesOf(const json *group) {
  std::vector<std::pair<std::string, std::optional<double>>> stages;
  const json *counts = objectOrNull(member(group, "stages"));
  if (counts == nullptr) return stages;
  for (size_t i = 0; i < kFunnelStageCount; ++i) {
    std::string_view stage = funnelStageName(static_cast<FunnelStage>(i));
    if (const json *count = member(counts, stage)) stages.emplace_back(std::string(stage), numberOf(count));
  }
  // nlohmann's objects iterate in key order, so unknown stages come out sorted.
  for (const auto &[key, value] : counts->items())
    if (!parseFunnelStage(key)) stages.emplace_back(key, numberOf(&value));
  return stages;
}

/// Diagnostic codes of a group, most frequent first (then by name).
std::vector<std::pair<std::string, std::optional<double>>> codesOf(const json *group) {
  std::vector<std::pair<std::string, std::optional<double>>> codes;
  if (const json *counts = objectOrNull(member(group, "diagnostic_codes")))
    for (const auto &[key, value] : counts->items()) codes.emplace_back(key, numberOf(&value));
  std::stable_sort(codes.begin(), codes.end(), [](const auto &left, const auto &right) {
    return left.second.value_or(-1) > right.second.value_or(-1);
  });
  return codes;
}

/// Speedups of every correct sample of every task (positive ones: the axis is log2).
std::vector<double> correctSpeedups(const json *metrics) {
  std::vector<double> speedups;
  for (const json *task : tasksOf(metrics)) {
    const json *samples = member(task, "sample_outcomes");
    if (samples == nullptr || !samples->is_array()) continue;
    for (const json &sample : *samples) {
      // Each sample's best over all its rounds; one without a completion has none.
      if (stringOf(member(&sample, "no_completion"))) continue;
      const json *final = finalOf(sample);
      const json *correct = member(final, "correct");
      // Only correct samples carry a speedup; an explicit false wins over a stray number.
      if (correct != nullptr && correct->is_boolean() && !correct->get<bool>()) continue;
      std::optional<double> speedup = numberOf(member(final, "speedup"));
      if (speedup && *speedup > 0) speedups.push_back(*speedup);
    }
  }
  return speedups;
}

// ---------------------------------------------------------------------------
// Formatting

std::string na() { return std::string(kNotAvailable); }

/// "60.0%". Adding 0.0 turns a negative zero into a positive one.
std::string rateText(std::optional<double> rate) {
  return rate ? fmt::format("{:.1f}%", *rate * 100 + 0.0) : na();
}
std::string speedupText(std::optional<double> speedup) { return speedup ? fmt::format("{:.2f}x", *speedup) : na(); }
std::string ratioText(std::optional<double> ratio) { return ratio ? fmt::format("{:.2f}", *ratio) : na(); }
std::string countText(std::optional<double> count) {
  if (!count) return na();
  if (std::fabs(*count) < 1e15 && *count == std::floor(*count)) return fmt::format("{:.0f}", *count + 0.0);
  return fmt::format("{}", *count);
}

enum class Kind { Count, Rate, Speedup, Ratio };

std::string figureText(Kind kind, std::optional<double> value) {
  switch (kind) {
  case Kind::Count: return countText(value);
  case Kind::Rate: return rateText(value);
  case Kind::Speedup: return speedupText(value);
  case Kind::Ratio: return ratioText(value);
  }
  return na();
}

/// The B − A cell: percentage points for rates, B/A for speedups, a signed
/// difference otherwise.
std::string differenceText(Kind kind, std::optional<double> a, std::optional<double> b) {
  if (!a || !b) return na();
  switch (kind) {
  case Kind::Count: {
    double difference = *b - *a;
    if (std::fabs(difference) < 1e15 && difference == std::floor(difference))
      return fmt::format("{:+.0f}", difference + 0.0);
    return fmt::format("{:+}", difference);
  }
  case Kind::Rate: {
    double points = (*b - *a) * 100;
    if (std::fabs(points) < 0.05) points = 0; // "+0.0 pp", never "-0.0 pp"
    return fmt::format("{:+.1f} pp", points);
  }
  case Kind::Speedup:
    if (*a <= 0 || *b < 0) return na();
    return fmt::format("x{:.2f}", *b / *a);
  case Kind::Ratio: {
    double difference = *b - *a;
    if (std::fabs(difference) < 0.005) difference = 0;
    return fmt::format("{:+.2f}", difference);
  }
  }
  return na();
}

/// "1 sample", "2 samples".
std::string plural(size_t count, std::string_view noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

// ---------------------------------------------------------------------------
// What the reports show, as plain text (escaped by the writers)

/// Which table of the report a figure belongs to.
enum class Section {
  Headline,    ///< first attempts: pass@k, fast_0
  Speed,       ///< first attempts: fast_p and fast_p_low for p > 0, geomean speedup
  Resources,   ///< register and instruction ratios of the correct samples' best attempts
  FastAtK,     ///< fast_p@k
  AfterRounds, ///< R > 1: correct@k, fast_p, fast_p_low over all rounds
};

struct Figure {
  std::string label;
  Kind kind;
  std::optional<double> value;
  Section section;
  bool timed = false; ///< needs timings: n/a throughout an untimed eval, whose tables leave it out
};

/// The thresholds above 0: fast_p_low and fast_p@k are reported for these.
constexpr std::array<FastThreshold, 3> kSpeedThresholds = {{{1.0, "fast_1"}, {1.5, "fast_1.5"}, {2.0, "fast_2"}}};

/// The figures of one group, in column order: the headline's, then fast_p@k,
/// then (R > 1) the figures after R rounds. Speed and resources come from each
/// sample's best attempt over all rounds, and say so when R > 1.
std::vector<Figure> groupFigures(const json *group, const std::vector<int> &ks, int rounds,
                                 std::string_view roundsLabel = {}) {
  std::string after = roundsLabel.empty() ? afterRoundsSuffix(rounds) : std::string(roundsLabel);
  std::vector<Figure> figures;
  figures.push_back({"tasks", Kind::Count, numberOf(member(group, "tasks")), Section::Headline});
  figures.push_back({"samples", Kind::Count, numberOf(member(group, "samples")), Section::Headline});
  figures.push_back({"no completion", Kind::Count, numberOf(member(group, "no_completion")), Section::Headline});
  for (auto [key, name] : {std::pair<std::string_view, std::string_view>{"lint_at_k", "lint"},
                           {"compile_at_k", "compile"},
                           {"correct_at_k", "correct"}})
    for (int k : ks)
      figures.push_back({fmt::format("{}@{}", name, k), Kind::Rate, rateAtK(group, key, k), Section::Headline});
  for (const FastThreshold &fast : kFast)
    figures.push_back({std::string(fast.label), Kind::Rate, fastP(group, fast.p),
                       fast.p > 0 ? Section::Speed : Section::Headline, fast.p > 0});
  for (const FastThreshold &fast : kSpeedThresholds)
    figures.push_back({fmt::format("{}_low", fast.label), Kind::Rate, shareAt(member(group, "fast_p_low"), fast.p),
                       Section::Speed, true});
  figures.push_back({"geomean speedup" + after, Kind::Speedup, numberOf(member(group, "geomean_speedup")),
                     Section::Speed, true});
  figures.push_back({"register ratio" + after, Kind::Ratio, numberOf(member(group, "register_ratio")),
                     Section::Resources});
  figures.push_back({"instruction ratio" + after, Kind::Ratio, numberOf(member(group, "instruction_ratio")),
                     Section::Resources});
  for (int k : ks)
    for (const FastThreshold &fast : kSpeedThresholds)
      figures.push_back({fmt::format("{}@{}", fast.label, k), Kind::Rate,
                         shareAt(member(member(group, "fast_p_at_k"), std::to_string(k)), fast.p), Section::FastAtK,
                         true});
  if (rounds > 1 || !roundsLabel.empty()) {
    const json *afterRounds = afterRoundsOf(group);
    for (int k : ks)
      figures.push_back({fmt::format("correct@{}{}", k, after), Kind::Rate, rateAtK(afterRounds, "correct_at_k", k),
                         Section::AfterRounds});
    for (const FastThreshold &fast : kFast)
      figures.push_back({fmt::format("{}{}", fast.label, after), Kind::Rate,
                         shareAt(member(afterRounds, "fast_p"), fast.p), Section::AfterRounds, fast.p > 0});
    for (const FastThreshold &fast : kSpeedThresholds)
      figures.push_back({fmt::format("{}_low{}", fast.label, after), Kind::Rate,
                         shareAt(member(afterRounds, "fast_p_low"), fast.p), Section::AfterRounds, true});
  }
  return figures;
}

using Fields = std::vector<std::pair<std::string, std::string>>;

Table fieldTable(const Fields &fields) {
  Table table{{"field", "value"}, {false, false}, {}};
  for (const auto &[label, value] : fields) table.rows.push_back({label, value});
  return table;
}

Fields evalFields(const json &document) {
  return {{"eval", evalIdText(document)},
          {"model", text(member(&document, "model"))},
          {"suite", text(member(&document, "suite"))},
          {"suite version", text(member(&document, "suite_version"))},
          {"status", text(member(&document, "status"))},
          {"created", text(member(&document, "created_at"))}};
}

/// Every key of an object (parameters, provenance), in key order.
Fields objectFields(const json *object) {
  Fields fields;
  if (const json *checked = objectOrNull(object))
    for (const auto &[key, value] : checked->items()) fields.emplace_back(key, text(&value));
  return fields;
}

/// One table of the groups' figures of one section; without timings, the
/// figures that need them (n/a in every row) are left out.
Table groupTable(const json *metrics, const std::vector<int> &ks, Section section) {
  int rounds = roundsOf(metrics);
  bool timed = isTrue(member(metrics, "timed"));
  auto shown = [&](const Figure &figure) { return figure.section == section && (timed || !figure.timed); };
  Table table;
  table.header.push_back("group");
  for (const Figure &figure : groupFigures(nullptr, ks, rounds))
    if (shown(figure)) table.header.push_back(figure.label);
  table.numeric.assign(table.header.size(), true);
  table.numeric[0] = false;
  for (const json *group : groupsOf(metrics)) {
    std::vector<std::string> row{text(member(group, "name"))};
    for (const Figure &figure : groupFigures(group, ks, rounds))
      if (shown(figure)) row.push_back(figureText(figure.kind, figure.value));
    table.rows.push_back(std::move(row));
  }
  return table;
}

/// Per task; without timings the speed columns (n/a throughout) are left out.
Table tasksTable(const json *metrics, const std::vector<int> &ks) {
  int rounds = roundsOf(metrics);
  bool timed = isTrue(member(metrics, "timed"));
  std::string after = afterRoundsSuffix(rounds);
  Table table;
  table.header = {"task", "level", "samples", "no completion", "lint", "compile", "correct"};
  for (int k : ks) table.header.push_back(fmt::format("correct@{}", k));
  if (timed) table.header.insert(table.header.end(), {"fast_1", "fast_1_low"});
  if (rounds > 1)
    for (int k : ks) table.header.push_back(fmt::format("correct@{}{}", k, after));
  if (timed)
    for (std::string_view column : {"best speedup", "geomean speedup"}) table.header.push_back(std::string(column) + after);
  for (std::string_view column : {"register ratio", "instruction ratio"})
    table.header.push_back(std::string(column) + after);
  table.header.emplace_back("spilling (nvcc not)");
  table.numeric.assign(table.header.size(), true);
  table.numeric[0] = false;
  for (const json *task : tasksOf(metrics)) {
    std::vector<std::string> row{text(member(task, "task")), levelText(task)};
    for (std::string_view key : {"samples", "no_completion", "lint_passed", "compile_passed", "correct"})
      row.push_back(countText(numberOf(member(task, key))));
    for (int k : ks) row.push_back(rateText(rateAtK(task, "correct_at_k", k)));
    if (timed) {
      row.push_back(rateText(fastP(task, 1.0)));
      row.push_back(rateText(shareAt(member(task, "fast_p_low"), 1.0)));
    }
    if (rounds > 1)
      for (int k : ks) row.push_back(rateText(rateAtK(afterRoundsOf(task), "correct_at_k", k)));
    if (timed) {
      row.push_back(speedupText(numberOf(member(task, "best_speedup"))));
      row.push_back(speedupText(numberOf(member(task, "geomean_speedup"))));
    }
    row.push_back(ratioText(numberOf(member(task, "register_ratio"))));
    row.push_back(ratioText(numberOf(member(task, "instruction_ratio"))));
    row.push_back(countText(numberOf(member(task, "spilling_where_nvcc_does_not"))));
    table.rows.push_back(std::move(row));
  }
  return table;
}

double positiveSum(const std::vector<std::pair<std::string, std::optional<double>>> &counts) {
  double total = 0;
  for (const auto &[name, count] : counts)
    if (count && *count > 0) total += *count;
  return total;
}

Table stagesTable(const json *group) {
  Table table{{"stage", "attempts", "share"}, {false, true, true}, {}};
  auto stages = stagesOf(group);
  double total = positiveSum(stages);
  for (const auto &[stage, count] : stages)
    table.rows.push_back({stage, countText(count),
                          count && total > 0 ? rateText(std::max(0.0, *count) / total) : na()});
  return table;
}

/// The most frequent codes; `omitted` gets how many were left out.
Table codesTable(const json *group, size_t &omitted) {
  Table table{{"code", "failed attempts"}, {false, true}, {}};
  auto codes = codesOf(group);
  omitted = codes.size() > kTopCodes ? codes.size() - kTopCodes : 0;
  if (codes.size() > kTopCodes) codes.resize(kTopCodes);
  for (const auto &[code, count] : codes) table.rows.push_back({code, countText(count)});
  return table;
}

/// A spread's median, "p10–p90" and "min–max", each value formatted by `format`.
template <typename Format>
std::array<std::string, 4> spreadCells(const json *spread, Format format) {
  if (objectOrNull(spread) == nullptr) return {na(), na(), na(), na()};
  auto value = [&](std::string_view key) { return format(numberOf(member(spread, key))); };
  return {countText(numberOf(member(spread, "samples"))), value("median"), value("p10") + "–" + value("p90"),
          value("min") + "–" + value("max")};
}

/// Spreads per task; without timings the speedup columns (n/a throughout) are left out.
Table stabilityTable(const json *metrics) {
  bool timed = isTrue(member(metrics, "timed"));
  Table table{{"task", "timed samples", "speedup median", "speedup p10–p90", "speedup min–max", "SASS samples",
               "instructions median", "instructions p10–p90", "instructions min–max"},
              {false, true, true, true, true, true, true, true, true},
              {}};
  if (!timed) {
    table.header.erase(table.header.begin() + 1, table.header.begin() + 5);
    table.numeric.erase(table.numeric.begin() + 1, table.numeric.begin() + 5);
  }
  for (const json *task : tasksOf(metrics)) {
    const json *speedups = objectOrNull(member(task, "speedup_spread"));
    const json *instructions = objectOrNull(member(task, "instruction_spread"));
    if (speedups == nullptr && instructions == nullptr) continue;
    std::vector<std::string> row{text(member(task, "task"))};
    if (timed)
      for (const std::string &cell : spreadCells(speedups, speedupText)) row.push_back(cell);
    for (const std::string &cell : spreadCells(instructions, countText)) row.push_back(cell);
    table.rows.push_back(std::move(row));
  }
  return table;
}

/// Why there are no metrics to show.
std::string noMetricsNote(const json &document) {
  std::optional<std::string> status = stringOf(member(&document, "status"));
  return status ? fmt::format("No metrics (status: {}).", *status) : std::string("No metrics.");
}

std::string titleOf(const json &document) {
  std::string title = "ptxforge eval";
  std::string id = evalIdText(document);
  if (id != kNotAvailable) title += " " + id;
  if (std::optional<std::string> model = stringOf(member(&document, "model"))) title += ": " + *model;
  if (std::optional<std::string> version = stringOf(member(&document, "suite_version"))) title += " on " + *version;
  return title;
}

/// What the first table's figures are, as formulas (docs/eval.md has them too).
std::string headlineLegend(int rounds) {
  std::string after = afterRoundsSuffix(rounds);
  return "First attempts only (round 1, before any repair). lint@k, compile@k and correct@k: the unbiased pass@k "
         "1 − C(n−c, k) / C(n, k) of a task with n scored samples of which c passed the stage at their first "
         "attempt, averaged over the tasks. fast_0: over all scored samples, the share whose first attempt is "
         "correct. no completion: samples left out of every figure because one of their requests got no answer "
         "(infrastructure). n/a: not measured (no scored sample, or fewer samples than k).";
}

std::string resourcesLegend(int rounds) {
  return "Register and instruction ratios" + afterRoundsSuffix(rounds) +
         ": geometric means, over the correct samples, of candidate / nvcc for each one's fastest correct attempt" +
         (rounds > 1 ? " in any round" : "") + " (registers per thread from ptxas, SASS instructions from nvdisasm); "
         "below 1 is leaner than nvcc. n/a: no correct sample, or no reference figure.";
}

std::string speedLegend(int rounds) {
  return "speedup: nvcc's median time / the candidate's on the task's largest timed shape. fast_p (KernelBench's): "
         "over all scored samples, the share whose first attempt is correct and strictly faster than p × nvcc "
         "(speedup > p). fast_p_low: the same, counting a sample only when even the lower end of its speedup's noise "
         "band (nvcc's p10 / the candidate's p90) is above p. Geomean speedup" + afterRoundsSuffix(rounds) +
         ": geometric mean over the correct, timed samples of each one's fastest correct attempt" +
         (rounds > 1 ? " in any round" : "") + ".";
}

constexpr std::string_view kFastAtKLegend =
    "fast_p@k: the unbiased best-of-k estimator, pass@k with c = the samples whose first attempt is correct and "
    "strictly faster than p × nvcc, averaged over the tasks: the chance that one of k samples of a task is.";

std::string afterRoundsLegend(int rounds, bool timed) {
  return fmt::format("After {0} rounds: each sample's attempts over all {0} rounds (its first attempt and the {1} "
                     "repair or optimize turn{2} after it). correct@k: pass@k with c = the samples correct in some "
                     "round; {3}. These figures measure the repair loop, not the model's first try.",
                     rounds, rounds - 1, rounds == 2 ? "" : "s",
                     timed ? "fast_p and fast_p_low: as above, with each sample's fastest correct attempt"
                           : "fast_0: the share of scored samples correct in some round");
}

/// Whether the document's executor is the CPU emulator ("emu", "isolated-emu").
bool emulated(const json &document) {
  std::optional<std::string> executor = stringOf(member(member(&document, "provenance"), "executor"));
  return executor && executor->find("emu") != std::string::npos;
}

/// One sentence on why an untimed eval has no speed figures, and what is left out.
std::string untimedSentence(const json &document) {
  std::string why = emulated(document)
                        ? "this eval ran on the CPU emulator, which checks correctness but measures no speed"
                        : "no sample of this eval has a correct, timed attempt";
  return "Nothing was timed: " + why + ", so the speed figures (speedups, fast_p for p > 0, fast_p_low, fast_p@k) "
         "and the speedup histogram are left out; fast_0 is the share of correct first attempts.";
}

/// The headline's tables: the first attempts' figures, their speed, fast_p@k, and (R > 1) those after R
/// rounds. Without timings the speed tables are left out (untimedSentence says so).
struct HeadlineSection {
  std::string title;
  Table table;
  std::string legend;
};

std::vector<HeadlineSection> headlineSections(const json *metrics, const std::vector<int> &ks) {
  int rounds = roundsOf(metrics);
  bool timed = isTrue(member(metrics, "timed"));
  std::vector<HeadlineSection> sections;
  sections.push_back({"First attempts", groupTable(metrics, ks, Section::Headline), headlineLegend(rounds)});
  if (timed) {
    sections.push_back({"First attempts: speed", groupTable(metrics, ks, Section::Speed), speedLegend(rounds)});
    sections.push_back({"fast_p@k", groupTable(metrics, ks, Section::FastAtK), std::string(kFastAtKLegend)});
  }
  if (rounds > 1)
    sections.push_back({fmt::format("After {} rounds", rounds), groupTable(metrics, ks, Section::AfterRounds),
                        afterRoundsLegend(rounds, timed)});
  sections.push_back({"Resources of correct kernels", groupTable(metrics, ks, Section::Resources),
                      resourcesLegend(rounds)});
  return sections;
}

/// A number of the document's metrics.overall, as an integer count.
std::optional<long long> overallCount(const json &document, std::string_view key) {
  std::optional<double> value = numberOf(member(member(member(&document, "metrics"), "overall"), key));
  if (!value || *value < 0 || *value > 1e15) return std::nullopt;
  return static_cast<long long>(*value);
}

/// "(error 10, unasked 2)" from a no_completion_reasons object; "" when none.
std::string reasonsText(const json *reasons) {
  std::string out;
  if (const json *object = objectOrNull(reasons))
    for (const auto &[reason, count] : object->items())
      out += fmt::format("{}{} {}", out.empty() ? "" : ", ", reason, countText(numberOf(&count)));
  return out.empty() ? out : " (" + out + ")";
}

/// One sentence on what the status means for the figures; "" for a complete eval.
std::string statusSentence(const json &document) {
  std::optional<std::string> name = stringOf(member(&document, "status"));
  if (!name) return "";
  const std::optional<store::EvalStatus> status = store::parseEvalStatus(*name);
  if (status == store::EvalStatus::Complete) return "";
  std::string missing = noCompletionSentence(document);
  std::string resume = "`ptxforge eval --resume " + text(member(&document, "eval")) + "` asks them again.";
  if (!status) return "Status " + *name + ". " + missing;
  switch (*status) {
  case store::EvalStatus::Complete: return "";
  case store::EvalStatus::Incomplete:
    return "Status incomplete: " + missing + " " + resume + " Not ranked on the leaderboard until complete.";
  case store::EvalStatus::InfraError:
    return "Status infra-error: no sample could be scored, so nothing here measures the model. " + missing + " " +
           resume;
  case store::EvalStatus::Interrupted:
    return "Status interrupted: stopped before every task ran. " + missing + " " + resume;
  case store::EvalStatus::Pending:
    return "Status pending: waiting for batch results; figures are n/a until they are in. " + missing;
  case store::EvalStatus::Running:
    return "Status running: this eval is still running, or its process ended mid-way. " + missing;
  }
  return "Status " + *name + ". " + missing;
}

/// "1/4" when the document is a shard of an eval (`eval --shard`), else none.
std::optional<std::string> shardOf(const json &document) {
  const json *shard = objectOrNull(member(member(&document, "parameters"), "shard"));
  if (shard == nullptr) return std::nullopt;
  return text(member(shard, "index")) + "/" + text(member(shard, "count"));
}

/// What the status means for the figures and, for a shard, what a shard's
/// figures are; "" for a complete eval that is not a shard.
std::string statusNote(const json &document) {
  std::string note = statusSentence(document);
  if (std::optional<std::string> shard = shardOf(document))
    note = "Shard " + *shard + " of an eval: these figures cover this shard's samples only, and it is not ranked on "
           "the leaderboard; `ptxforge eval merge` joins the shards into one eval." +
           (note.empty() ? "" : " " + note);
  return note;
}

// ---------------------------------------------------------------------------
// Markdown

std::string histogramMarkdown(const json *metrics); // beside the HTML histogram, which shares its bins

void markdownTable(std::string &out, const Table &table) {
  out += report::markdownTable(table.header, table.numeric, table.rows);
}

std::string evalMarkdownUnchecked(const json &document) {
  std::string out = "# " + markdownText(titleOf(document)) + "\n\n## Eval\n\n";
  markdownTable(out, fieldTable(evalFields(document)));
  Fields parameters = objectFields(member(&document, "parameters"));
  if (!parameters.empty()) {
    out += "## Parameters\n\n";
    markdownTable(out, fieldTable(parameters));
  }

  const json *metrics = objectOrNull(member(&document, "metrics"));
  if (metrics == nullptr) {
    out += "## Headline\n\n" + markdownText(noMetricsNote(document)) + "\n\n";
  } else {
    std::vector<int> ks = ksOf(metrics);
    out += "## Headline\n\n";
    if (std::string note = statusNote(document); !note.empty()) out += "> **Note:** " + markdownText(note) + "\n\n";
    else if (std::string missing = noCompletionSentence(document); !missing.empty())
      out += markdownText(missing) + "\n\n";
    if (!isTrue(member(metrics, "timed"))) out += markdownText(untimedSentence(document)) + "\n\n";
    for (const HeadlineSection &section : headlineSections(metrics, ks)) {
      out += "### " + markdownText(section.title) + "\n\n";
      if (section.table.rows.empty()) out += "No groups.\n\n";
      else markdownTable(out, section.table);
      out += "*" + markdownText(section.legend) + "*\n\n";
    }

    out += "## Tasks\n\n";
    Table tasks = tasksTable(metrics, ks);
    if (tasks.rows.empty()) out += "No tasks.\n\n";
    else markdownTable(out, tasks);

    const json *overall = member(metrics, "overall");
    out += "## Error taxonomy\n\n### Stages\n\nWhere each attempt of every scored sample stopped.\n\n";
    Table stages = stagesTable(overall);
    if (stages.rows.empty()) out += "No attempts.\n\n";
    else markdownTable(out, stages);
    out += "### Diagnostic codes\n\n";
    size_t omitted = 0;
    Table codes = codesTable(overall, omitted);
    if (codes.rows.empty()) {
      out += "No diagnostics from failed attempts.\n\n";
    } else {
      out += "Failed attempts each code appeared in, most frequent first.\n\n";
      markdownTable(out, codes);
      if (omitted > 0) out += fmt::format("{} more not shown.\n\n", plural(omitted, "code"));
    }

    if (isTrue(member(metrics, "timed"))) out += histogramMarkdown(metrics);

    out += "## Stability\n\n";
    Table stability = stabilityTable(metrics);
    if (stability.rows.empty()) {
      out += "No task has correct samples to measure a spread over.\n\n";
    } else {
      out += "Spread across the correct samples of each task (nearest-rank percentiles).\n\n";
      markdownTable(out, stability);
    }
  }

  out += "## Provenance\n\n";
  Fields provenance = objectFields(member(&document, "provenance"));
  if (provenance.empty()) out += "No provenance.\n";
  else markdownTable(out, fieldTable(provenance));
  return out;
}

// ---------------------------------------------------------------------------
// HTML

/// What the eval report adds to report::basePageStyle().
constexpr std::string_view kStyle = R"(
svg .na { fill: #8a93a3; }
svg .b-correct { fill: #2864c7; }
svg .b-fast { fill: #3c9d5a; }
svg .bin { fill: #2864c7; }
svg .s-no-completion, svg .s-extract, svg .s-lint, svg .s-compile, svg .s-correctness { fill: #d9534f; }
svg .s-unverified, svg .s-untimed, svg .s-other { fill: #8a93a3; }
svg .s-slower { fill: #e0a030; }
svg .s-on-par { fill: #8fb3d9; }
svg .s-faster { fill: #3c9d5a; }
)";



// Charts share one size; the funnel grows with its number of stages.
constexpr double kWidth = 640, kHeight = 280;
constexpr double kLeft = 56, kRight = 16, kTop = 40, kBottom = 48;

std::string svgOpen(double width, double height, std::string_view label) {
  return fmt::format("<svg class=\"chart\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
                     "aria-label=\"{2}\">\n",
                     width, height, htmlEscape(label));
}

std::string chartNote(std::string_view label, std::string_view note) {
  return svgOpen(kWidth, kHeight, label) +
         fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" class=\"axis\"/>\n"
                     "<text class=\"chart-note\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n</svg>\n",
                     kLeft, kTop, kWidth - kLeft - kRight, kHeight - kTop - kBottom, (kLeft + kWidth - kRight) / 2,
                     (kTop + kHeight - kBottom) / 2, htmlEscape(note));
}


/// Per level (and overall): correct@k next to fast_1, or fast_0 when nothing was timed.
std::string levelChart(const json *metrics, const std::vector<int> &ks) {
  constexpr std::string_view label = "correct and fast per level";
  if (metrics == nullptr) return chartNote(label, "no metrics");
  std::vector<const json *> groups = levelsOf(metrics);
  if (const json *overall = objectOrNull(member(metrics, "overall"))) groups.push_back(overall);
  if (groups.empty()) return chartNote(label, "no levels");

  int k = firstK(ks);
  bool timed = isTrue(member(metrics, "timed"));
  struct Series {
    std::string label, cssClass;
    std::optional<double> (*value)(const json *, int);
  };
  const std::array<Series, 2> series = {
      Series{fmt::format("correct@{}", k), "b-correct",
             [](const json *group, int atK) { return rateAtK(group, "correct_at_k", atK); }},
      timed ? Series{"fast_1 (first attempts correct and faster than nvcc)", "b-fast",
                     [](const json *group, int) { return fastP(group, 1.0); }}
            : Series{"fast_0 (first attempts correct; not timed)", "b-fast",
                     [](const json *group, int) { return fastP(group, 0.0); }}};

  double plotLeft = kLeft, plotRight = kWidth - kRight, plotTop = kTop, plotBottom = kHeight - kBottom;
  auto y = [&](double share) { return plotBottom - (plotBottom - plotTop) * std::clamp(share, 0.0, 1.0); };
  std::string svg = svgOpen(kWidth, kHeight, label);
  for (int percent = 0; percent <= 100; percent += 20) {
    double at = y(percent / 100.0);
    svg += fmt::format("<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", plotLeft,
                       at, plotRight, at);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}%</text>\n", plotLeft - 6, at + 4,
                       percent);
  }
  svg += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", plotLeft, plotTop,
                     plotBottom);
  svg += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n", plotLeft, plotBottom,
                     plotRight);

  double slot = (plotRight - plotLeft) / static_cast<double>(groups.size());
  double barWidth = std::min(slot * 0.32, 48.0);
  for (size_t i = 0; i < groups.size(); ++i) {
    std::string name = text(member(groups[i], "name"));
    double center = plotLeft + slot * (static_cast<double>(i) + 0.5);
    for (size_t s = 0; s < series.size(); ++s) {
      double x = center - barWidth + static_cast<double>(s) * barWidth;
      std::optional<double> value = series[s].value(groups[i], k);
      if (!value) {
        svg += fmt::format("<text class=\"na\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">n/a</text>\n",
                           x + barWidth / 2, plotBottom - 4);
        continue;
      }
      double top = y(*value);
      svg += fmt::format("<rect class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\">"
                         "<title>{}: {}</title></rect>\n",
                         series[s].cssClass, x + 1, top, barWidth - 2, plotBottom - top,
                         htmlEscape(name + " " + series[s].label), rateText(value));
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x + barWidth / 2,
                         top - 3, rateText(value));
    }
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", center, plotBottom + 16,
                       htmlEscape(name));
  }
  // Legend above the plot.
  double legendX = plotLeft;
  for (const Series &entry : series) {
    svg += fmt::format("<rect class=\"key {}\" x=\"{:.1f}\" y=\"8\" width=\"10\" height=\"10\"/>"
                       "<text x=\"{:.1f}\" y=\"17\">{}</text>\n",
                       entry.cssClass, legendX, legendX + 14, htmlEscape(entry.label));
    legendX += 14 + 6.5 * static_cast<double>(entry.label.size()) + 16;
  }
  return svg + "</svg>\n";
}

/// Horizontal bars of the overall stage counts, scaled to the largest.
std::string funnelChart(const json *metrics) {
  constexpr std::string_view label = "stage funnel over all attempts";
  if (metrics == nullptr) return chartNote(label, "no metrics");
  auto stages = stagesOf(member(metrics, "overall"));
  if (stages.empty()) return chartNote(label, "no attempts");

  constexpr double rowHeight = 22, top = 12, barLeft = 120, barMax = kWidth - barLeft - 130;
  double height = top * 2 + rowHeight * static_cast<double>(stages.size());
  double total = positiveSum(stages), largest = 0;
  for (const auto &[stage, count] : stages)
    if (count) largest = std::max(largest, *count);
  std::string svg = svgOpen(kWidth, height, label);
  for (size_t i = 0; i < stages.size(); ++i) {
    const auto &[stage, count] = stages[i];
    double rowTop = top + rowHeight * static_cast<double>(i);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", barLeft - 6, rowTop + 14,
                       htmlEscape(stage));
    if (!count) {
      svg += fmt::format("<text class=\"na\" x=\"{:.1f}\" y=\"{:.1f}\">n/a</text>\n", barLeft + 4, rowTop + 14);
      continue;
    }
    bool known = parseFunnelStage(stage).has_value();
    double width = largest > 0 ? barMax * std::max(0.0, *count) / largest : 0;
    std::string figures = fmt::format("{} ({})", countText(count), total > 0 ? rateText(std::max(0.0, *count) / total) : na());
    svg += fmt::format("<rect class=\"s-{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"16\">"
                       "<title>{}: {}</title></rect>\n",
                       known ? stage : std::string("other"), barLeft, rowTop + 2, width, htmlEscape(stage),
                       figures);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", barLeft + width + 6, rowTop + 14, figures);
  }
  svg += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2:.1f}\"/>\n", barLeft, top - 4,
                     height - top + 4);
  return svg + "</svg>\n";
}

/// Bins on a log2 axis: edges at multiples of `width`, so that 1.0x is an edge.
struct Histogram {
  double low = 0, width = 0.25; ///< in log2 units
  std::vector<int> counts;
};

Histogram histogramOf(const std::vector<double> &speedups) {
  double lowest = std::numeric_limits<double>::infinity(), highest = -lowest;
  for (double speedup : speedups) {
    lowest = std::min(lowest, std::log2(speedup));
    highest = std::max(highest, std::log2(speedup));
  }
  Histogram histogram;
  // Quarter octaves, doubled until there are at most 32 bins; at least one bin
  // either side of 1.0x so that the nvcc line never sits on the frame.
  double high = 0;
  for (;;) {
    double width = histogram.width;
    histogram.low = std::min(std::floor(lowest / width) * width, -width);
    high = std::max(std::floor(highest / width) * width + width, width);
    if ((high - histogram.low) / width <= 32) break;
    histogram.width *= 2;
  }
  histogram.counts.assign(static_cast<size_t>(std::lround((high - histogram.low) / histogram.width)), 0);
  for (double speedup : speedups) {
    double bin = std::floor((std::log2(speedup) - histogram.low) / histogram.width);
    size_t index = static_cast<size_t>(std::clamp(bin, 0.0, static_cast<double>(histogram.counts.size() - 1)));
    ++histogram.counts[index];
  }
  return histogram;
}

/// A bin edge: three significant digits or more ("0.84x", "1.19x", "16.0x", "512x"), never an exponent
/// in the range a speedup can reasonably have.
std::string boundLabel(double log2Value) {
  double value = std::exp2(log2Value);
  if (value >= 0.1 && value < 10) return fmt::format("{:.2f}x", value);
  if (value >= 10 && value < 100) return fmt::format("{:.1f}x", value);
  if (value >= 100 && value < 1e6) return fmt::format("{:.0f}x", value);
  return fmt::format("{:.3g}x", value);
}

/// Bin i's speedup range, half-open: "[0.84x, 1.00x)".
std::string binRange(const Histogram &histogram, size_t i) {
  double from = histogram.low + histogram.width * static_cast<double>(i);
  return "[" + boundLabel(from) + ", " + boundLabel(from + histogram.width) + ")";
}

/// What a bin's width is as a factor: "a quarter of a doubling (×1.19)".
std::string binWidthText(const Histogram &histogram) {
  std::string fraction = histogram.width == 0.25  ? "a quarter of a doubling"
                         : histogram.width == 0.5 ? "half a doubling"
                         : histogram.width == 1   ? "one doubling"
                                                  : fmt::format("{:g} doublings", histogram.width);
  return fmt::format("{} (×{:.2f})", fraction, std::exp2(histogram.width));
}

/// Distribution of the speedups of correct samples on a log2 axis: every bin
/// edge labelled under the axis, each bar's count above it.
std::string speedupHistogram(const json *metrics) {
  constexpr std::string_view label = "speedups of correct samples over nvcc";
  if (metrics == nullptr) return chartNote(label, "no metrics");
  std::vector<double> speedups = correctSpeedups(metrics);
  if (!isTrue(member(metrics, "timed")) || speedups.empty()) return chartNote(label, "no correct sample was timed");

  Histogram histogram = histogramOf(speedups);
  size_t bins = histogram.counts.size();
  double high = histogram.low + histogram.width * static_cast<double>(bins);
  int tallest = *std::max_element(histogram.counts.begin(), histogram.counts.end());
  double countStep = std::max(1.0, niceStep(tallest / 4.0));
  double countTop = std::ceil(tallest / countStep) * countStep;

  // Room under the axis for edge labels, slanted when they would not fit side by side.
  double binWidth = (kWidth - kRight - kLeft) / static_cast<double>(bins);
  bool slanted = binWidth < 40;
  double height = slanted ? 320 : 290, bottom = slanted ? 84 : 54;
  double plotLeft = kLeft, plotRight = kWidth - kRight, plotTop = kTop, plotBottom = height - bottom;
  // Label every edge, or every n-th one counted from 1.0x, so that slanted labels stay 13 px apart.
  int labelEvery = slanted ? std::max(1, static_cast<int>(std::ceil(13 / binWidth))) : 1;
  int oneEdge = static_cast<int>(std::lround(-histogram.low / histogram.width));
  auto x = [&](double log2Value) {
    return plotLeft + (plotRight - plotLeft) * (log2Value - histogram.low) / (high - histogram.low);
  };
  auto y = [&](double count) { return plotBottom - (plotBottom - plotTop) * count / countTop; };

  std::string svg = svgOpen(kWidth, height, label);
  for (double count = 0; count <= countTop + 1e-9; count += countStep) {
    double at = y(count);
    svg += fmt::format("<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", plotLeft,
                       at, plotRight, at);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", plotLeft - 6, at + 4,
                       countText(count));
  }
  // A tick at every bin edge; the labels give the edges' speedups.
  for (size_t edge = 0; edge <= bins; ++edge) {
    double at = x(histogram.low + histogram.width * static_cast<double>(edge));
    bool labelled = (static_cast<int>(edge) - oneEdge) % labelEvery == 0;
    svg += fmt::format("<line class=\"axis\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>\n", at,
                       plotBottom, plotBottom + (labelled ? 5 : 3));
    if (!labelled) continue;
    std::string edgeLabel = boundLabel(histogram.low + histogram.width * static_cast<double>(edge));
    if (slanted)
      svg += fmt::format("<text x=\"{0:.1f}\" y=\"{1:.1f}\" text-anchor=\"end\" transform=\"rotate(-45 {0:.1f} "
                         "{1:.1f})\">{2}</text>\n",
                         at + 3, plotBottom + 14, edgeLabel);
    else
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", at, plotBottom + 18,
                         edgeLabel);
  }
  svg += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", plotLeft, plotTop,
                     plotBottom);
  svg += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n", plotLeft, plotBottom,
                     plotRight);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">speedup over nvcc: bins [low, high), "
                     "each {} wide (log2 scale)</text>\n",
                     (plotLeft + plotRight) / 2, height - 8, binWidthText(histogram));
  svg += fmt::format("<text x=\"14\" y=\"{0:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {0:.1f})\">"
                     "correct samples</text>\n",
                     (plotTop + plotBottom) / 2);

  // One bar per non-empty bin, its count above it; its title gives the range and the count.
  for (size_t i = 0; i < bins; ++i) {
    if (histogram.counts[i] == 0) continue;
    double from = histogram.low + histogram.width * static_cast<double>(i), to = from + histogram.width;
    double top = y(histogram.counts[i]);
    svg += fmt::format("<rect class=\"bin\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\">"
                       "<title>{}: {}</title></rect>\n",
                       x(from) + 1, top, x(to) - x(from) - 2, plotBottom - top, binRange(histogram, i),
                       plural(static_cast<size_t>(histogram.counts[i]), "sample"));
    std::string count = std::to_string(histogram.counts[i]);
    if (binWidth >= 6.5 * static_cast<double>(count.size()) + 2)
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", (x(from) + x(to)) / 2,
                         top - 3, count);
  }
  double one = x(0);
  svg += fmt::format("<line class=\"ref\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>\n", one,
                     plotTop - 14, plotBottom);
  // Above the plot, clear of the counts over the bars.
  svg += fmt::format("<text class=\"ref-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">nvcc 1.0x</text>\n", one,
                     plotTop - 18);
  return svg + "</svg>\n";
}

/// What the histogram shows: speedup's definition and how the bins read.
std::string histogramCaption(int rounds) {
  return "speedup: nvcc's median time / the sample's median time on the task's largest timed shape, for each correct "
         "sample its fastest correct attempt" +
         (rounds > 1 ? fmt::format(" over all {} rounds", rounds) : std::string()) +
         ". Each bar counts the samples whose speedup lies in its range [low, high), the edges labelled under the "
         "axis; the dashed line is nvcc (1.0x): bars to its right are faster than nvcc.";
}

std::string histogramMarkdown(const json *metrics) {
  std::string out = "## Speedups of correct samples\n\n";
  std::vector<double> speedups = correctSpeedups(metrics);
  if (speedups.empty()) return out + "No correct sample was timed.\n\n";
  Histogram histogram = histogramOf(speedups);
  out += markdownText(histogramCaption(roundsOf(metrics))) + fmt::format(" Bins are {} wide.\n\n", binWidthText(histogram));
  Table table{{"speedup range", "correct samples"}, {false, true}, {}};
  for (size_t i = 0; i < histogram.counts.size(); ++i)
    table.rows.push_back({binRange(histogram, i), std::to_string(histogram.counts[i])});
  markdownTable(out, table);
  return out;
}

/// What the level chart's bars are.
std::string levelChartCaption(const json *metrics, const std::vector<int> &ks) {
  int k = firstK(ks);
  std::string correct = fmt::format("correct@{0}: the unbiased pass@{0} of each task's first attempts (with k = 1, the "
                                    "share of its scored samples whose first attempt is correct), averaged over the "
                                    "group's tasks. ",
                                    k);
  if (isTrue(member(metrics, "timed")))
    return correct + "fast_1: over all the group's scored samples, the share whose first attempt is correct and "
                     "strictly faster than nvcc (speedup > 1; KernelBench's fast_p at p = 1). A missing bar is n/a.";
  return correct + "fast_0: over all the group's scored samples, the share whose first attempt is correct (nothing "
                   "was timed, so fast_1 is n/a). A missing bar is n/a.";
}

constexpr std::string_view kFunnelCaption =
    "Each attempt of every scored sample, counted once under the first stage it did not pass: no-completion (the "
    "request got no answer), extract (no PTX in the answer), unverified (not checked), lint, compile, correctness "
    "(wrong, crashed, timed out or rejected); a correct attempt under untimed (not timed), slower or faster (its "
    "whole speedup noise band, nvcc's p10 / its p90 up to nvcc's p90 / its p10, below or above 1.0x) or on-par (1.0x "
    "inside the band). Each bar gives the count and its share of all attempts.";

std::string page(std::string_view title, std::string_view body) { return htmlPage(title, kStyle, body); }

void htmlTableOrNote(std::string &out, const Table &table, std::string_view note) {
  if (table.rows.empty()) out += report::htmlElement("p", note, "note") + "\n";
  else htmlTable(out, table);
}

std::string evalHtmlUnchecked(const json &document) {
  std::string title = titleOf(document);
  std::string body = report::htmlElement("h1", title) + "\n<section>\n<h2>Eval</h2>\n";
  htmlTable(body, fieldTable(evalFields(document)));
  Fields parameters = objectFields(member(&document, "parameters"));
  if (!parameters.empty()) {
    body += "<h3>Parameters</h3>\n";
    htmlTable(body, fieldTable(parameters));
  }
  body += "</section>\n";

  const json *metrics = objectOrNull(member(&document, "metrics"));
  std::vector<int> ks = ksOf(metrics);
  body += "<section>\n<h2>Headline</h2>\n";
  if (metrics == nullptr) {
    body += report::htmlElement("p", noMetricsNote(document), "note") + "\n";
  } else {
    if (std::string note = statusNote(document); !note.empty())
      body += report::htmlElement("p", note, "note status") + "\n";
    else if (std::string missing = noCompletionSentence(document); !missing.empty())
      body += report::htmlElement("p", missing, "note") + "\n";
    if (!isTrue(member(metrics, "timed")))
      body += report::htmlElement("p", untimedSentence(document), "note untimed") + "\n";
    for (const HeadlineSection &section : headlineSections(metrics, ks)) {
      body += report::htmlElement("h3", section.title) + "\n";
      htmlTableOrNote(body, section.table, "No groups.");
      body += report::htmlElement("p", section.legend, "note") + "\n";
    }
  }
  body += "<h3>Correct and fast per level</h3>\n" + levelChart(metrics, ks);
  if (metrics != nullptr) body += report::htmlElement("p", levelChartCaption(metrics, ks), "caption") + "\n";
  body += "</section>\n";

  const json *overall = member(metrics, "overall");
  body += "<section>\n<h2>Error taxonomy</h2>\n<h3>Stage funnel</h3>\n";
  body += "<p class=\"note\">Where each attempt of every scored sample stopped.</p>\n" + funnelChart(metrics);
  if (metrics != nullptr) body += report::htmlElement("p", kFunnelCaption, "caption") + "\n";
  if (metrics != nullptr) htmlTableOrNote(body, stagesTable(overall), "No attempts.");
  body += "<h3>Diagnostic codes</h3>\n";
  size_t omitted = 0;
  Table codes = codesTable(overall, omitted);
  htmlTableOrNote(body, codes, "No diagnostics from failed attempts.");
  if (omitted > 0) body += report::htmlElement("p", plural(omitted, "code") + " more not shown.", "note") + "\n";
  body += "</section>\n";

  // An untimed eval has no speedups: the headline's sentence says why, and the chart is left out.
  if (isTrue(member(metrics, "timed")))
    body += "<section>\n<h2>Speedups of correct samples</h2>\n" + speedupHistogram(metrics) +
            report::htmlElement("p", histogramCaption(roundsOf(metrics)), "caption") + "\n</section>\n";

  if (metrics != nullptr) {
    body += "<section>\n<h2>Tasks</h2>\n";
    htmlTableOrNote(body, tasksTable(metrics, ks), "No tasks.");
    body += "</section>\n<section>\n<h2>Stability</h2>\n";
    htmlTableOrNote(body, stabilityTable(metrics), "No task has correct samples to measure a spread over.");
    body += "</section>\n";
  }

  body += "<section>\n<h2>Provenance</h2>\n";
  Fields provenance = objectFields(member(&document, "provenance"));
  if (provenance.empty()) body += "<p class=\"note\">No provenance.</p>\n";
  else htmlTable(body, fieldTable(provenance));
  body += "</section>\n";
  return page(title, body);
}

// ---------------------------------------------------------------------------
// Comparison

/// Figures of A and B side by side, with B − A. Figures from every round say
/// "after R rounds" when both evals ran R, "after all rounds" when they differ.
Table comparisonTable(const json *groupA, const json *groupB, const std::vector<int> &ks, int roundsA, int roundsB) {
  Table table{{"figure", "A", "B", "B − A"}, {false, true, true, true}, {}};
  std::string label = roundsA == roundsB ? "" : " after all rounds";
  int rounds = std::max(roundsA, roundsB);
  std::vector<Figure> a = groupFigures(groupA, ks, rounds, label), b = groupFigures(groupB, ks, rounds, label);
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    table.rows.push_back({a[i].label, figureText(a[i].kind, a[i].value), figureText(b[i].kind, b[i].value),
                          differenceText(a[i].kind, a[i].value, b[i].value)});
  return table;
}

/// The first object of `groups` named `name`.
const json *named(const std::vector<const json *> &groups, std::string_view key, const std::string &name) {
  for (const json *group : groups)
    if (stringOf(member(group, key)) == name) return group;
  return nullptr;
}

/// Names (of levels or tasks) in A's order, then those only B has.
std::vector<std::string> unionOfNames(const std::vector<const json *> &a, const std::vector<const json *> &b,
                                      std::string_view key) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto *list : {&a, &b})
    for (const json *entry : *list)
      if (std::optional<std::string> name = stringOf(member(entry, key)); name && seen.insert(*name).second)
        names.push_back(*name);
  return names;
}

std::string compareMarkdownUnchecked(const json &a, const json &b) {
  std::string out = "# ptxforge eval comparison\n\n";
  std::optional<std::string> versionA = stringOf(member(&a, "suite_version")),
                             versionB = stringOf(member(&b, "suite_version"));
  std::optional<std::string> modelA = stringOf(member(&a, "model")), modelB = stringOf(member(&b, "model"));
  const json *metricsA = objectOrNull(member(&a, "metrics")), *metricsB = objectOrNull(member(&b, "metrics"));
  std::vector<std::string> notes;
  if (versionA != versionB)
    notes.push_back(fmt::format("The suite versions differ (A: {}, B: {}): the figures are not comparable task for "
                                "task, and tasks in only one of the evals are listed as such.",
                                versionA.value_or(na()), versionB.value_or(na())));
  if (modelA && modelA == modelB)
    notes.push_back(fmt::format("Both evals are of the same model ({}): the differences come from sampling, "
                                "parameters or the executor, not from the model.",
                                *modelA));
  for (const auto &[side, document] : {std::pair<std::string_view, const json *>{"A", &a}, {"B", &b}})
    if (std::string note = statusNote(*document); !note.empty()) notes.push_back(fmt::format("{}: {}", side, note));
  if (roundsOf(metricsA) != roundsOf(metricsB))
    notes.push_back(fmt::format("The evals ran a different number of rounds (A: {}, B: {}): figures \"after all "
                                "rounds\" count different repair loops.",
                                roundsOf(metricsA), roundsOf(metricsB)));
  if (metricsA == nullptr) notes.push_back("A has no metrics: " + noMetricsNote(a));
  if (metricsB == nullptr) notes.push_back("B has no metrics: " + noMetricsNote(b));
  for (const std::string &note : notes) out += "> **Note:** " + markdownText(note) + "\n\n";

  out += "## Evals\n\n";
  Table evals{{"", "A", "B"}, {false, false, false}, {}};
  auto row = [&evals](std::string label, std::string valueA, std::string valueB) {
    evals.rows.push_back({std::move(label), std::move(valueA), std::move(valueB)});
  };
  row("eval", evalIdText(a), evalIdText(b));
  for (auto [label, key] : {std::pair<std::string_view, std::string_view>{"model", "model"},
                            {"suite version", "suite_version"},
                            {"status", "status"},
                            {"created", "created_at"}})
    row(std::string(label), text(member(&a, key)), text(member(&b, key)));
  for (std::string_view key : {"samples", "rounds", "strategies", "prompt_parts", "temperature"})
    row(std::string(key), text(member(member(&a, "parameters"), key)), text(member(member(&b, "parameters"), key)));
  for (std::string_view key : {"executor", "device"})
    row(std::string(key), text(member(member(&a, "provenance"), key)), text(member(member(&b, "provenance"), key)));
  markdownTable(out, evals);

  // One set of columns for both: every k either eval reports.
  std::vector<int> ks = ksOf(metricsA), ksB = ksOf(metricsB);
  ks.insert(ks.end(), ksB.begin(), ksB.end());
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());

  out += "B − A: percentage points (pp) for rates, the ratio B / A for speedups (x1.10: B is 10% faster), the "
         "difference otherwise.\n\n## Overall\n\n";
  int roundsA = roundsOf(metricsA), roundsB = roundsOf(metricsB);
  markdownTable(out, comparisonTable(member(metricsA, "overall"), member(metricsB, "overall"), ks, roundsA, roundsB));

  std::vector<const json *> levelsA = levelsOf(metricsA), levelsB = levelsOf(metricsB);
  std::vector<std::string> levelNames = unionOfNames(levelsA, levelsB, "name");
  if (!levelNames.empty()) {
    out += "## Per level\n\n";
    for (const std::string &name : levelNames) {
      out += "### " + markdownText(name) + "\n\n";
      markdownTable(out, comparisonTable(named(levelsA, "name", name), named(levelsB, "name", name), ks, roundsA,
                                         roundsB));
    }
  }

  out += "## Tasks\n\n";
  std::vector<const json *> tasksA = tasksOf(metricsA), tasksB = tasksOf(metricsB);
  int k = firstK(ks);
  std::string correct = fmt::format("correct@{}", k);
  Table tasks{{"task", "level", correct + " A", correct + " B", "B − A", "best speedup A", "best speedup B", "B − A",
               "geomean A", "geomean B", "B − A"},
              {false, false, true, true, true, true, true, true, true, true, true},
              {}};
  std::vector<std::string> onlyA, onlyB;
  for (const std::string &name : unionOfNames(tasksA, tasksB, "task")) {
    const json *taskA = named(tasksA, "task", name), *taskB = named(tasksB, "task", name);
    if (taskB == nullptr) {
      onlyA.push_back(name);
      continue;
    }
    if (taskA == nullptr) {
      onlyB.push_back(name);
      continue;
    }
    std::vector<std::string> cells{name, levelText(taskA)};
    std::optional<double> rateA = rateAtK(taskA, "correct_at_k", k), rateB = rateAtK(taskB, "correct_at_k", k);
    cells.insert(cells.end(), {rateText(rateA), rateText(rateB), differenceText(Kind::Rate, rateA, rateB)});
    for (std::string_view key : {"best_speedup", "geomean_speedup"}) {
      std::optional<double> speedupA = numberOf(member(taskA, key)), speedupB = numberOf(member(taskB, key));
      cells.insert(cells.end(), {speedupText(speedupA), speedupText(speedupB),
                                 differenceText(Kind::Speedup, speedupA, speedupB)});
    }
    tasks.rows.push_back(std::move(cells));
  }
  if (tasks.rows.empty()) out += "No task is in both evals.\n\n";
  else markdownTable(out, tasks);
  auto listOnly = [&out](std::string_view side, const std::vector<std::string> &names) {
    if (names.empty()) return;
    out += fmt::format("Only in {} ({}): ", side, names.size());
    for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + markdownText(names[i]);
    out += ".\n\n";
  };
  listOnly("A", onlyA);
  listOnly("B", onlyB);
  return out;
}

// ---------------------------------------------------------------------------
// Leaderboard

struct Entry {
  const json *document = nullptr;
  bool complete = false;
  std::optional<double> correct, fast0, fast1, fast1Low, correctAfterRounds, geomean;
  std::optional<std::string> createdAt;
};

/// -1 when `left` ranks first, 1 when `right` does, 0 on a tie: larger first, missing last.
int compareDescending(std::optional<double> left, std::optional<double> right) {
  if (left.has_value() != right.has_value()) return left ? -1 : 1;
  if (!left || *left == *right) return 0;
  return *left > *right ? -1 : 1;
}

std::string leaderboardMarkdownUnchecked(const std::vector<json> &documents, const std::string &suiteVersion,
                                         bool all) {
  std::vector<Entry> entries;
  size_t leftOut = 0, notComplete = 0, shards = 0;
  for (const json &document : documents) {
    if (stringOf(member(&document, "suite_version")) != suiteVersion) {
      ++leftOut;
      continue;
    }
    // A shard is part of an eval: its merge (`eval merge`) is ranked, never the shard.
    bool shard = shardOf(document).has_value();
    const std::optional<std::string> statusName = stringOf(member(&document, "status"));
    bool complete = statusName && store::parseEvalStatus(*statusName) == store::EvalStatus::Complete && !shard;
    if (!complete && !all) {
      ++(shard ? shards : notComplete);
      continue;
    }
    const json *overall = member(member(&document, "metrics"), "overall");
    entries.push_back({&document, complete, rateAtK(overall, "correct_at_k", 1), fastP(overall, 0.0),
                       fastP(overall, 1.0), shareAt(member(overall, "fast_p_low"), 1.0),
                       rateAtK(afterRoundsOf(overall), "correct_at_k", 1), numberOf(member(overall, "geomean_speedup")),
                       stringOf(member(&document, "created_at"))});
  }
  // Complete evals first (only they are ranked); best first; on a full tie the
  // earlier eval (it got there first), then input order.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry &left, const Entry &right) {
    if (left.complete != right.complete) return left.complete;
    for (int order : {compareDescending(left.correct, right.correct), compareDescending(left.fast1, right.fast1),
                      compareDescending(left.geomean, right.geomean)})
      if (order != 0) return order < 0;
    if (left.createdAt.has_value() != right.createdAt.has_value()) return left.createdAt.has_value();
    return left.createdAt && *left.createdAt < *right.createdAt;
  });

  std::string out = "# Leaderboard: " + markdownText(suiteVersion.empty() ? "(no suite version)" : suiteVersion) +
                    "\n\nComplete evals only, best first by correct@1, then fast_1, then geomean speedup; ties by "
                    "date, earlier first. correct@1, fast_p and fast_1_low are of first attempts (docs/eval.md); "
                    "\"correct@1 after R rounds\" is after the eval's rounds (R, the rounds column; n/a when R = 1).";
  if (all)
    out += " Evals that are not complete follow, unranked (–): their figures leave samples out; so do the shards of "
           "sharded evals (`eval merge` makes them one eval, which is ranked).";
  out += "\n\n";
  if (entries.empty()) {
    out += "No complete evals of this suite version.\n\n";
  } else {
    Table table{{"rank", "eval", "model", "status", "date", "samples", "rounds", "strategies", "executor", "correct@1",
                 "fast_0", "fast_1", "fast_1_low", "correct@1 after R rounds", "geomean speedup"},
                {true, false, false, false, false, true, true, false, false, true, true, true, true, true, true},
                {}};
    size_t rank = 0;
    for (const Entry &entry : entries) {
      const json *parameters = member(entry.document, "parameters");
      table.rows.push_back({entry.complete ? std::to_string(++rank) : std::string("–"),
                            evalIdText(*entry.document), text(member(entry.document, "model")),
                            text(member(entry.document, "status")) +
                                (shardOf(*entry.document) ? " (shard " + *shardOf(*entry.document) + ")" : ""),
                            entry.createdAt.value_or(na()),
                            text(member(parameters, "samples")), text(member(parameters, "rounds")),
                            text(member(parameters, "strategies")),
                            text(member(member(entry.document, "provenance"), "executor")), rateText(entry.correct),
                            rateText(entry.fast0), rateText(entry.fast1), rateText(entry.fast1Low),
                            rateText(entry.correctAfterRounds), speedupText(entry.geomean)});
    }
    markdownTable(out, table);
  }
  if (notComplete == 1) out += "1 eval that is not complete left out (`--all` lists it).\n";
  else if (notComplete > 1) out += fmt::format("{} evals that are not complete left out (`--all` lists them).\n", notComplete);
  if (shards == 1) out += "1 shard of an eval left out (`eval merge` joins shards; `--all` lists it).\n";
  else if (shards > 1)
    out += fmt::format("{} shards of evals left out (`eval merge` joins shards; `--all` lists them).\n", shards);
  if (leftOut == 1) out += "1 eval of another suite version left out.\n";
  else if (leftOut > 1) out += fmt::format("{} evals of other suite versions left out.\n", leftOut);
  return out;
}

} // namespace

std::string noCompletionSentence(const json &document) {
  try {
    const json *overall = member(member(&document, "metrics"), "overall");
    std::optional<long long> missing = overallCount(document, "no_completion");
    if (!missing || *missing == 0) return "";
    long long total = *missing + overallCount(document, "samples").value_or(0);
    return fmt::format("{} of {} {} had no completion{}: left out of every figure.", *missing, total,
                       total == 1 ? "sample" : "samples", reasonsText(member(overall, "no_completion_reasons")));
  } catch (const std::exception &) {
    return "";
  }
}

// Each entry point reads the document defensively; the catch is the last line
// (an allocation failure, a bug), so that a command prints something rather
// than aborting.

std::string evalMarkdown(const json &document) {
  try {
    return evalMarkdownUnchecked(document);
  } catch (const std::exception &error) {
    return "# ptxforge eval\n\nThe report could not be built: " + markdownText(error.what()) + "\n";
  }
}

std::string evalHtml(const json &document) {
  try {
    return evalHtmlUnchecked(document);
  } catch (const std::exception &error) {
    return page("ptxforge eval", report::htmlElement("p", std::string("The report could not be built: ") + error.what()));
  }
}

std::string compareMarkdown(const json &a, const json &b) {
  try {
    return compareMarkdownUnchecked(a, b);
  } catch (const std::exception &error) {
    return "# ptxforge eval comparison\n\nThe comparison could not be built: " + markdownText(error.what()) + "\n";
  }
}

std::string leaderboardMarkdown(const std::vector<json> &documents, const std::string &suiteVersion, bool all) {
  try {
    return leaderboardMarkdownUnchecked(documents, suiteVersion, all);
  } catch (const std::exception &error) {
    return "# Leaderboard\n\nThe leaderboard could not be built: " + markdownText(error.what()) + "\n";
  }
}

} // namespace ptxforge::report
