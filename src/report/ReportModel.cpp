// ReportModel: reads a RunData into the plain-text figures both report formats
// show. Each result is decoded once (report::decodeResult, verify's codec);
// the run summary and the SASS counts, which have no codec, go through the
// non-throwing readers of JsonRead.h. Stored JSON may be partial, from an
// older build, or hand-edited, and a report must still come out with "n/a"
// where it is odd.
#include "report/ReportModel.h"

#include "report/JsonRead.h"
#include "report/Report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace ptxforge::report::detail {

namespace {

using nlohmann::json;
using read::dumpCompact;
using read::integerOf;
using read::member;
using read::numberOf;

const std::string kNa(kNotAvailable);

std::string numberText(double value) {
  if (!std::isfinite(value)) return kNa;
  if (value == std::floor(value) && std::fabs(value) < 1e15) return fmt::format("{:.0f}", value);
  return fmt::format("{:g}", value);
}

/// A scalar as text: strings as they are, numbers plainly, containers as
/// compact JSON, null or missing as "n/a".
std::string textOf(const json *value) {
  if (value == nullptr || value->is_null()) return kNa;
  if (value->is_string()) return value->get_ref<const std::string &>();
  if (value->is_boolean()) return value->get<bool>() ? "true" : "false";
  if (value->is_number_integer()) return value->is_number_unsigned() ? std::to_string(value->get<uint64_t>())
                                                                     : std::to_string(value->get<int64_t>());
  if (value->is_number()) return numberText(value->get<double>());
  return dumpCompact(*value);
}

/// Like textOf, but only numbers count ("n/a" for a string where a count belongs).
std::string countText(const json *value) {
  if (value == nullptr || !value->is_number()) return kNa;
  return textOf(value);
}

std::string orNa(const std::string &text) { return text.empty() ? kNa : text; }

/// "key=value, key=value" of an object; "n/a" for an empty or non-object value.
std::string objectText(const json &object) {
  if (!object.is_object() || object.empty()) return kNa;
  std::string out;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (!out.empty()) out += ", ";
    out += it.key() + "=" + textOf(&it.value());
  }
  return out;
}

/// One line, at most `limit` bytes, cut on a UTF-8 character boundary.
std::string oneLine(std::string_view text, size_t limit) {
  std::string out;
  out.reserve(std::min(text.size(), limit));
  for (char c : text) out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  if (out.size() <= limit) return out;
  size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  out.resize(cut);
  return out + "…";
}

constexpr size_t kSummaryLimit = 160;

// ---------------------------------------------------------------------------
// Sections

/// The first half of the skeleton strategy: its answer is an outline that the
/// second prompt of the slot turns into PTX, so it yields no candidate of its
/// own and is no attempt of the funnel.
bool isSkeletonStep(const store::AttemptRow &attempt) {
  return attempt.prompt.kind == "skeleton" && !attempt.candidate;
}

/// An attempt with its result decoded once and its funnel stage.
struct Attempt {
  const store::AttemptRow *row = nullptr;
  std::optional<StoredResult> result;
  FunnelStage stage = FunnelStage::Unverified;

  bool correct() const { return result && result->is(verify::Verdict::Correct); }
  std::optional<double> timedSpeedup() const {
    if (!correct() || !result->record->speedup || !std::isfinite(*result->record->speedup)) return std::nullopt;
    return result->record->speedup;
  }
};

std::vector<Attempt> decodeAttempts(const store::RunData &data) {
  std::vector<Attempt> attempts;
  attempts.reserve(data.attempts.size());
  for (const store::AttemptRow &row : data.attempts) {
    Attempt attempt{&row, row.result ? std::optional(decodeResult(*row.result)) : std::nullopt};
    attempt.stage = funnelStage(row, attempt.result ? &*attempt.result : nullptr);
    attempts.push_back(std::move(attempt));
  }
  return attempts;
}

/// The best's speedup; with nothing timed, its estimate and what ranked it
/// (solve's summary.best: estimated_speedup and ranked_by), marked as an estimate.
std::string bestSpeedupText(const json *best) {
  std::optional<double> speedup = numberOf(member(best, "speedup"));
  if (speedup) return formatSpeedup(speedup);
  std::optional<double> estimate = numberOf(member(best, "estimated_speedup"));
  if (!estimate || !std::isfinite(*estimate)) return formatSpeedup(std::nullopt);
  const json *rankedBy = member(best, "ranked_by");
  const bool byEstimate = rankedBy && rankedBy->is_string() && rankedBy->get<std::string>() == "estimate";
  return fmt::format("~{:.2f}x (not timed: the emulator profile's estimate, an estimate, not a measurement{})",
                     *estimate, byEstimate ? "; ranked by it" : "");
}

std::string bestText(const json &summary) {
  const json *best = member(summary, "best");
  if (best == nullptr || !best->is_object()) return kNa;
  return fmt::format("candidate #{} (round {}, slot {}): {}, {}", countText(member(best, "candidate_id")),
                     countText(member(best, "round")), countText(member(best, "slot")),
                     textOf(member(best, "verdict")), bestSpeedupText(best));
}

void addRunFields(ReportModel &model, const store::RunData &data) {
  const store::RunRecord &run = data.run;
  const json &summary = run.summary;
  size_t candidates = 0, duplicates = 0;
  for (const store::AttemptRow &attempt : data.attempts) {
    if (attempt.candidate && !attempt.candidate->ptx.empty()) ++candidates;
    if (attempt.candidate && attempt.candidate->duplicateOf) ++duplicates;
  }
  std::string tokens = kNa;
  if (const json *t = member(summary, "tokens"); t != nullptr && t->is_object())
    tokens = fmt::format("{} prompt, {} completion", countText(member(t, "prompt")),
                         countText(member(t, "completion")));
  std::optional<double> wall = numberOf(member(summary, "wall_s"));
  model.run = {
      {"run", fmt::format("#{}", run.id)},
      {"task", orNa(run.task)},
      {"model", orNa(run.model)},
      {"strategies", orNa(run.strategies)},
      {"status", orNa(run.status)},
      {"created", orNa(run.createdAt)},
      {"updated", orNa(run.updatedAt)},
      {"parameters", objectText(run.parameters)},
      {"provenance", objectText(run.provenance)},
      {"attempts", fmt::format("{} prompts, {} candidates with PTX, {} duplicate(s)", data.attempts.size(), candidates,
                               duplicates)},
      {"best", bestText(summary)},
      {"tokens", tokens},
      {"wall time", wall ? fmt::format("{:.1f} s", *wall) : kNa},
      {"stopped because", textOf(member(summary, "stopped_because"))},
  };
}

void addRounds(ReportModel &model, const store::RunData &data, const std::vector<Attempt> &attempts) {
  std::map<int, RoundRow> rounds;
  for (const Attempt &attempt : attempts) {
    RoundRow &row = rounds[attempt.row->prompt.round];
    row.round = attempt.row->prompt.round;
    if (isSkeletonStep(*attempt.row)) continue;
    ++row.attempts;
    ++row.funnel.stages[static_cast<size_t>(attempt.stage)];
    ++row.funnel.total;
    if (attempt.row->candidate && attempt.row->candidate->duplicateOf) ++row.funnel.duplicates;
    if (attempt.correct()) ++row.correct;
    if (attempt.stage == FunnelStage::Untimed) model.anyUntimed = true;
    if (std::optional<double> speedup = attempt.timedSpeedup())
      row.bestSpeedup = std::max(row.bestSpeedup.value_or(*speedup), *speedup);
  }
  // Rounds the summary knows but no attempt was recorded for (a round whose
  // requests all failed before a prompt was stored) still get a row; their
  // figure comes from the summary since there is nothing else to read.
  if (const json *summaryRounds = member(data.run.summary, "rounds");
      summaryRounds != nullptr && summaryRounds->is_array()) {
    for (const json &entry : *summaryRounds) {
      std::optional<int64_t> round = integerOf(member(entry, "round"));
      if (!round || *round < INT32_MIN || *round > INT32_MAX || rounds.count(static_cast<int>(*round)) != 0) continue;
      RoundRow &row = rounds[static_cast<int>(*round)];
      row.round = static_cast<int>(*round);
      row.bestSpeedup = numberOf(member(entry, "best_speedup"));
    }
  }
  std::optional<double> bestSoFar;
  for (auto &[round, row] : rounds) {
    if (row.bestSpeedup) {
      bestSoFar = std::max(bestSoFar.value_or(*row.bestSpeedup), *row.bestSpeedup);
      model.anyTiming = true;
    }
    row.bestSoFar = bestSoFar;
    for (size_t i = 0; i < kFunnelStageCount; ++i) model.funnelTotal.stages[i] += row.funnel.stages[i];
    model.funnelTotal.duplicates += row.funnel.duplicates;
    model.funnelTotal.total += row.funnel.total;
    model.rounds.push_back(row);
  }
  if (model.rounds.empty())
    model.chartNote = "no candidates";
  else if (!model.anyTiming)
    model.chartNote = model.anyUntimed ? "no timings (run on the CPU emulator)" : "no correct candidate was timed";
  if (!model.rounds.empty() && !model.anyTiming) {
    std::optional<std::string> executor = read::stringOf(member(data.run.provenance, "executor"));
    bool emulated = model.anyUntimed || (executor && executor->find("emu") != std::string::npos);
    model.untimedNote = std::string("Nothing was timed: ") +
                        (emulated ? "this run checked its candidates on the CPU emulator, which verifies results but "
                                    "measures no speed"
                                  : "no candidate of this run was both correct and timed") +
                        ", so the speedup chart and the speed columns are left out.";
  }
}

void addDiagnostics(ReportModel &model, const std::vector<Attempt> &attempts) {
  std::map<std::string, DiagnosticRow> byCode;
  for (const Attempt &attempt : attempts) {
    if (!attempt.result || !attempt.result->check || attempt.correct()) continue;
    std::set<std::string> seen;
    for (const ptx::Diagnostic &diagnostic : attempt.result->check->diagnostics) {
      if (diagnostic.code.empty()) continue;
      DiagnosticRow &row = byCode[diagnostic.code];
      if (row.code.empty()) {
        row.code = diagnostic.code;
        row.severity = ptx::severityName(diagnostic.severity);
        row.example = oneLine(orNa(diagnostic.message), kSummaryLimit);
      }
      ++row.occurrences;
      if (seen.insert(diagnostic.code).second) ++row.candidates;
    }
  }
  for (auto &[code, row] : byCode) model.diagnostics.push_back(std::move(row));
  std::stable_sort(model.diagnostics.begin(), model.diagnostics.end(),
                   [](const DiagnosticRow &a, const DiagnosticRow &b) {
                     if (a.candidates != b.candidates) return a.candidates > b.candidates;
                     return a.occurrences > b.occurrences;
                   });
  if (model.diagnostics.size() > kTopDiagnostics) model.diagnostics.resize(kTopDiagnostics);
}

/// What the verdict column says of an attempt that has no result.
std::string pendingVerdict(const store::AttemptRow &attempt) {
  if (!attempt.completion) return "no completion";
  if (attempt.completion->completionStatus() != store::CompletionStatus::Complete)
    return "completion " + orNa(attempt.completion->status);
  if (isSkeletonStep(attempt)) return "skeleton";
  if (!attempt.candidate || !attempt.candidate->extractError.empty() || attempt.candidate->ptx.empty())
    return "no PTX";
  return "not verified";
}

std::string candidateText(const store::AttemptRow &attempt) {
  if (!attempt.candidate) return kNa;
  std::string text = fmt::format("#{}", attempt.candidate->id);
  if (attempt.candidate->duplicateOf) text += fmt::format(" (duplicate of #{})", *attempt.candidate->duplicateOf);
  return text;
}

std::string temperatureText(const std::optional<double> &temperature) {
  return temperature && std::isfinite(*temperature) ? fmt::format("{:g}", *temperature) : kNa;
}

void addAttempts(ReportModel &model, const std::vector<Attempt> &decoded) {
  for (const Attempt &entry : decoded) {
    const store::AttemptRow &attempt = *entry.row;
    AttemptLine line;
    line.round = std::to_string(attempt.prompt.round);
    line.slot = std::to_string(attempt.prompt.slot);
    line.kind = orNa(attempt.prompt.kind);
    line.tendency = orNa(attempt.prompt.tendency);
    line.temperature = temperatureText(attempt.prompt.temperature);
    line.candidate = candidateText(attempt);
    line.stage = isSkeletonStep(attempt) ? "skeleton" : funnelStageName(entry.stage);
    std::string summary;
    if (attempt.result) {
      line.verdict = orNa(attempt.result->verdict);
      line.speedup = formatSpeedup(attempt.result->speedup);
      line.registers = attempt.result->registers ? std::to_string(*attempt.result->registers) : kNa;
      summary = attempt.result->summary;
    } else {
      line.verdict = pendingVerdict(attempt);
      line.speedup = kNa;
      line.registers = kNa;
      if (attempt.completion && !attempt.completion->error.empty())
        summary = attempt.completion->error;
      else if (attempt.candidate)
        summary = attempt.candidate->extractError;
    }
    line.summary = summary.empty() ? kNa : oneLine(summary, kSummaryLimit);
    model.attempts.push_back(std::move(line));
  }
}

/// The cuts of --guided-stream answers, in attempt order.
void addStreamCuts(ReportModel &model, const store::RunData &data) {
  int answers = 0, requests = 0;
  for (const store::AttemptRow &attempt : data.attempts) {
    if (attempt.segments.empty()) continue;
    ++answers;
    for (const store::StreamSegmentRecord &segment : attempt.segments) {
      ++requests;
      if (!segment.cutAt) continue;
      const nlohmann::json *diagnostic = &segment.diagnostic;
      auto text = [&](const char *key) { return read::stringOf(member(diagnostic, key)).value_or(""); };
      std::optional<int64_t> line = integerOf(member(diagnostic, "line"));
      std::optional<int64_t> tokens = integerOf(member(member(segment.meta, "usage"), "completion_tokens"));
      model.streamCuts.push_back({std::to_string(attempt.prompt.round), std::to_string(attempt.prompt.slot),
                                  orNa(attempt.prompt.kind), std::to_string(segment.seq + 1),
                                  line ? std::to_string(*line) : kNa, orNa(text("code")),
                                  orNa(oneLine(text("statement"), kSummaryLimit)),
                                  orNa(oneLine(text("message"), kSummaryLimit)), tokens ? std::to_string(*tokens) : kNa});
    }
  }
  if (answers > 0)
    model.streamNote = fmt::format("{} answer{} checked while streaming (--guided-stream): {} cut{} in {} request{}",
                                   answers, answers == 1 ? "" : "s", model.streamCuts.size(),
                                   model.streamCuts.size() == 1 ? "" : "s", requests, requests == 1 ? "" : "s");
}

/// The best attempt: the one summary["best"] names, else the fastest correct
/// one (a timed one before an untimed one; the earliest on a tie, so an
/// original wins over its duplicates).
const Attempt *findBest(const store::RunData &data, const std::vector<Attempt> &attempts) {
  if (std::optional<int64_t> id = integerOf(member(member(data.run.summary, "best"), "candidate_id")))
    for (const Attempt &attempt : attempts)
      if (attempt.row->candidate && attempt.row->candidate->id == *id) return &attempt;
  const Attempt *best = nullptr;
  for (const Attempt &attempt : attempts) {
    if (!attempt.correct()) continue;
    std::optional<double> speedup = attempt.timedSpeedup();
    if (best == nullptr || (speedup && (!best->timedSpeedup() || *speedup > *best->timedSpeedup()))) best = &attempt;
  }
  return best;
}

/// "128-bit: 12, 32-bit: 4" from {"128": 12, "32": 4}, widest first.
std::string widthsText(const json *widths) {
  if (widths == nullptr || !widths->is_object()) return kNa;
  if (widths->empty()) return "none";
  std::vector<std::pair<long, std::string>> entries;
  for (auto it = widths->begin(); it != widths->end(); ++it) {
    char *end = nullptr;
    long bits = std::strtol(it.key().c_str(), &end, 10);
    entries.emplace_back(end != nullptr && *end == '\0' ? bits : -1, it.key() + "-bit: " + countText(&it.value()));
  }
  std::stable_sort(entries.begin(), entries.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
  std::string out;
  for (const auto &[bits, text] : entries) out += (out.empty() ? "" : ", ") + text;
  return out;
}

std::string pairText(const json *a, const json *b) {
  if (a == nullptr && b == nullptr) return kNa;
  return countText(a) + " / " + countText(b);
}

std::string msText(const json *value) {
  std::optional<double> ms = numberOf(value);
  return ms ? formatMs(*ms) : kNa;
}

std::string bandText(const verify::TimingStats &stats) {
  if (!std::isfinite(stats.p10) || !std::isfinite(stats.p90)) return kNa;
  return formatMs(stats.p10) + "–" + formatMs(stats.p90);
}

std::string rateText(const std::optional<double> &mine, const std::optional<double> &theirs) {
  if (!mine || !std::isfinite(*mine)) return kNa;
  std::string text = fmt::format("{:.1f}", *mine);
  if (theirs && std::isfinite(*theirs)) text += fmt::format(" (nvcc {:.1f})", *theirs);
  return text;
}

TimingRow timingRow(const verify::BenchmarkReport &benchmark) {
  TimingRow row;
  row.shape = tasks::shapeToString(benchmark.shape);
  row.candidateMedian = formatMs(benchmark.candidate.median);
  row.candidateBand = bandText(benchmark.candidate);
  row.baselineMedian = formatMs(benchmark.baseline.median);
  row.baselineBand = bandText(benchmark.baseline);
  row.speedup = formatSpeedup(benchmark.speedup);
  row.speedupBand = std::isfinite(benchmark.speedupLow) && std::isfinite(benchmark.speedupHigh)
                        ? fmt::format("{:.2f}–{:.2f}x", benchmark.speedupLow, benchmark.speedupHigh)
                        : kNa;
  row.gflops = rateText(benchmark.gflops, benchmark.baselineGflops);
  row.gbps = rateText(benchmark.gbps, benchmark.baselineGbps);
  return row;
}

/// The benchmark the recorded speedup came from (the last one when none matches).
const verify::BenchmarkReport *timedBenchmark(const std::vector<verify::BenchmarkReport> &benchmarks,
                                              std::optional<double> speedup) {
  if (benchmarks.empty()) return nullptr;
  if (speedup)
    for (const verify::BenchmarkReport &benchmark : benchmarks)
      if (std::fabs(benchmark.speedup - *speedup) <= 1e-9 * std::max(1.0, std::fabs(*speedup))) return &benchmark;
  return &benchmarks.back();
}

std::string countText(std::optional<int> count) { return count ? std::to_string(*count) : kNa; }

/// Untimed: summary.best's estimate when it is this candidate, else n/a.
std::string bestEstimateText(const store::RunData &data, int64_t candidateId) {
  const json *best = member(data.run.summary, "best");
  if (integerOf(member(best, "candidate_id")) != std::optional<int64_t>(candidateId)) return formatSpeedup(std::nullopt);
  return bestSpeedupText(best);
}

void addBest(ReportModel &model, const store::RunData &data, const std::vector<Attempt> &attempts) {
  const Attempt *found = findBest(data, attempts);
  if (found == nullptr || !found->row->candidate) {
    model.noBestNote = data.attempts.empty() ? "no candidates" : "no correct candidate";
    return;
  }
  const store::AttemptRow &attempt = *found->row;
  const store::CandidateRecord &candidate = *attempt.candidate;
  const store::ResultRecord *record = found->result ? found->result->record : nullptr;
  const verify::CheckResult *check = found->result && found->result->check ? &*found->result->check : nullptr;
  static const json kEmpty = json::object();
  const json *sass = member(record ? record->result : kEmpty, "sass");
  const json *reference = member(data.run.summary, "reference");
  const json *referenceSass = member(reference, "sass");

  BestKernel best;
  best.title = fmt::format("candidate #{} (round {}, slot {})", candidate.id, attempt.prompt.round,
                           attempt.prompt.slot);
  std::optional<double> speedup = record ? record->speedup : std::nullopt;
  auto orNaText = [](const std::string &text) { return text.empty() ? kNa : text; };
  std::string compiler = check && check->compile ? check->compile->toolVersion : "";
  best.facts = {
      {"verdict", record ? orNa(record->verdict) : pendingVerdict(attempt)},
      {"speedup over nvcc", speedup ? formatSpeedup(speedup) : bestEstimateText(data, candidate.id)},
      {"stage reached", record ? orNa(record->stage) : kNa},
      {"summary", record ? orNa(oneLine(record->summary, 4 * kSummaryLimit)) : kNa},
      {"prompt", fmt::format("{}, tendency {}, temperature {}", orNa(attempt.prompt.kind),
                             orNa(attempt.prompt.tendency), temperatureText(attempt.prompt.temperature))},
      {"device", check ? fmt::format("{} ({})", orNaText(check->device), orNaText(check->arch)) : kNa},
      {"compiler", orNaText(compiler)},
      {"reference compiler", check ? orNaText(check->referenceCompiler) : kNa},
      {"seed", check ? std::to_string(check->seed) : kNa},
  };
  if (candidate.duplicateOf) best.facts.push_back({"duplicate of", fmt::format("#{}", *candidate.duplicateOf)});

  // Resources as ptxas reported them; none when it did not (known == false).
  const toolchain::ResourceUsage *resources =
      check && check->compile && check->compile->resources.known ? &check->compile->resources : nullptr;
  auto resource = [&](int toolchain::ResourceUsage::*field) {
    return resources ? countText(std::optional<int>(resources->*field)) : kNa;
  };
  // Registers: ptxas's count, else the driver's, else the result row's column.
  std::string registers = resource(&toolchain::ResourceUsage::registers);
  if (registers == kNa && check && check->kernel) registers = std::to_string(check->kernel->registerCount);
  if (registers == kNa && record && record->registers) registers = std::to_string(*record->registers);

  static const std::vector<verify::BenchmarkReport> kNoBenchmarks;
  const std::vector<verify::BenchmarkReport> &benchmarks = check ? check->benchmarks : kNoBenchmarks;
  const verify::BenchmarkReport *timed = timedBenchmark(benchmarks, speedup);
  best.resources = {
      {"registers", registers, countText(member(reference, "registers"))},
      {"spill stores (bytes)", resource(&toolchain::ResourceUsage::spillStoreBytes),
       countText(member(reference, "spill_store_bytes"))},
      {"spill loads (bytes)", resource(&toolchain::ResourceUsage::spillLoadBytes),
       countText(member(reference, "spill_load_bytes"))},
      {"shared memory (bytes)", resource(&toolchain::ResourceUsage::sharedBytes),
       countText(member(reference, "shared_bytes"))},
      {"stack frame (bytes)", resource(&toolchain::ResourceUsage::stackFrameBytes),
       countText(member(reference, "stack_bytes"))},
      {"barriers (ptxas)", resource(&toolchain::ResourceUsage::barriers), countText(member(reference, "barriers"))},
      {"SASS instructions", countText(member(sass, "instructions")), countText(member(referenceSass, "instructions"))},
      {"FFMA", countText(member(sass, "ffma")), countText(member(referenceSass, "ffma"))},
      {"tensor-core ops", countText(member(sass, "tensor_core_ops")),
       countText(member(referenceSass, "tensor_core_ops"))},
      {"LDG widths", widthsText(member(sass, "global_load_widths")),
       widthsText(member(referenceSass, "global_load_widths"))},
      {"STG widths", widthsText(member(sass, "global_store_widths")),
       widthsText(member(referenceSass, "global_store_widths"))},
      {"LDL / STL", pairText(member(sass, "spill_loads"), member(sass, "spill_stores")),
       pairText(member(referenceSass, "spill_loads"), member(referenceSass, "spill_stores"))},
      {"BAR instructions", countText(member(sass, "barriers")), countText(member(referenceSass, "barriers"))},
      {"median time (ms)", timed ? formatMs(timed->candidate.median) : kNa, msText(member(reference, "timing_ms"))},
  };
  for (const verify::BenchmarkReport &benchmark : benchmarks) best.timings.push_back(timingRow(benchmark));
  best.ptx = candidate.ptx;
  model.best = std::move(best);
}

} // namespace

TableData roundsTable(const ReportModel &model) {
  TableData table;
  const bool timed = model.untimedNote.empty();
  table.header = timed ? std::vector<std::string>{"round", "best speedup", "best so far", "correct / attempts"}
                       : std::vector<std::string>{"round", "correct / attempts"};
  table.numeric.assign(table.header.size(), true);
  for (const RoundRow &row : model.rounds) {
    std::string counts = fmt::format("{} / {}", row.correct, row.attempts);
    table.rows.push_back(timed ? std::vector<std::string>{std::to_string(row.round), formatSpeedup(row.bestSpeedup),
                                                          formatSpeedup(row.bestSoFar), counts}
                               : std::vector<std::string>{std::to_string(row.round), counts});
  }
  return table;
}

TableData funnelTable(const ReportModel &model) {
  TableData table;
  table.header = {"round"};
  for (size_t i = 0; i < kFunnelStageCount; ++i) table.header.emplace_back(funnelStageName(static_cast<FunnelStage>(i)));
  table.header.emplace_back("duplicates");
  table.header.emplace_back("total");
  table.numeric.assign(table.header.size(), true);
  table.numeric[0] = false; // holds "total" too
  auto cells = [](std::string label, const FunnelCounts &counts) {
    std::vector<std::string> row{std::move(label)};
    for (int count : counts.stages) row.push_back(std::to_string(count));
    row.push_back(std::to_string(counts.duplicates));
    row.push_back(std::to_string(counts.total));
    return row;
  };
  for (const RoundRow &row : model.rounds) table.rows.push_back(cells(std::to_string(row.round), row.funnel));
  table.rows.push_back(cells("total", model.funnelTotal));
  return table;
}

TableData diagnosticsTable(const ReportModel &model) {
  TableData table{{"code", "severity", "failed candidates", "occurrences", "example"}, {false, false, true, true, false}, {}};
  for (const DiagnosticRow &row : model.diagnostics)
    table.rows.push_back({row.code, row.severity, std::to_string(row.candidates), std::to_string(row.occurrences),
                          row.example});
  return table;
}

TableData attemptsTable(const ReportModel &model) {
  TableData table{{"round", "slot", "kind", "tendency", "temperature", "candidate", "verdict", "speedup", "registers",
                   "summary"},
                  {true, true, false, false, true, false, false, true, true, false},
                  {}};
  for (const AttemptLine &a : model.attempts)
    table.rows.push_back({a.round, a.slot, a.kind, a.tendency, a.temperature, a.candidate, a.verdict, a.speedup,
                          a.registers, a.summary});
  if (!model.untimedNote.empty()) { // without timings the speedup column is n/a throughout: left out
    constexpr size_t kSpeedupColumn = 7;
    table.header.erase(table.header.begin() + kSpeedupColumn);
    table.numeric.erase(table.numeric.begin() + kSpeedupColumn);
    for (auto &row : table.rows) row.erase(row.begin() + kSpeedupColumn);
  }
  return table;
}

TableData streamCutsTable(const ReportModel &model) {
  TableData table{{"round", "slot", "kind", "request", "line", "code", "statement", "message", "tokens before the cut"},
                  {true, true, false, true, true, false, false, false, true},
                  {}};
  for (const StreamCutLine &c : model.streamCuts)
    table.rows.push_back({c.round, c.slot, c.kind, c.request, c.line, c.code, c.statement, c.message, c.tokens});
  return table;
}

TableData resourcesTable(const BestKernel &best) {
  TableData table{{"", "candidate", "nvcc"}, {false, true, true}, {}};
  for (const ComparisonRow &row : best.resources) table.rows.push_back({row.label, row.candidate, row.reference});
  return table;
}

TableData timingsTable(const BestKernel &best) {
  TableData table{{"shape", "candidate median (ms)", "candidate p10–p90", "nvcc median (ms)", "nvcc p10–p90", "speedup",
                   "speedup band", "GFLOP/s", "GB/s"},
                  {false, true, true, true, true, true, true, true, true},
                  {}};
  for (const TimingRow &t : best.timings)
    table.rows.push_back({t.shape, t.candidateMedian, t.candidateBand, t.baselineMedian, t.baselineBand, t.speedup,
                          t.speedupBand, t.gflops, t.gbps});
  return table;
}

std::string formatSpeedup(std::optional<double> speedup) {
  if (!speedup || !std::isfinite(*speedup)) return kNa;
  return fmt::format("{:.2f}x", *speedup);
}

std::string formatMs(double ms) {
  if (!std::isfinite(ms)) return kNa;
  // {:.4g} would switch to exponent notation from 10000 on.
  if (std::fabs(ms) >= 1000) return fmt::format("{:.0f}", ms);
  return fmt::format("{:.4g}", ms);
}

ReportModel buildModel(const store::RunData &data) {
  ReportModel model;
  model.title = fmt::format("ptxforge run #{}: {}", data.run.id, orNa(data.run.task));
  addRunFields(model, data);
  std::vector<Attempt> attempts = decodeAttempts(data);
  addRounds(model, data, attempts);
  addDiagnostics(model, attempts);
  addAttempts(model, attempts);
  addBest(model, data, attempts);
  addStreamCuts(model, data);
  return model;
}

} // namespace ptxforge::report::detail
