// ReportModel: reads a RunData (records and their JSON) into the plain-text
// figures both report formats show. Every JSON access goes through the
// non-throwing helpers below: stored JSON may be partial, from an older build,
// or hand-edited, and a report must still come out with "n/a" where it is odd.
#include "report/ReportModel.h"

#include "report/Report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace ptxforge::report::detail {

namespace {

using nlohmann::json;

const std::string kNa(kNotAvailable);

// ---------------------------------------------------------------------------
// Non-throwing JSON access

const json *member(const json *object, const char *key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  auto it = object->find(key);
  return it == object->end() ? nullptr : &*it;
}

const json *member(const json &object, const char *key) { return member(&object, key); }

std::optional<double> numberOf(const json *value) {
  if (value == nullptr || !value->is_number()) return std::nullopt;
  double number = value->get<double>();
  if (!std::isfinite(number)) return std::nullopt;
  return number;
}

std::optional<int64_t> integerOf(const json *value) {
  if (value == nullptr) return std::nullopt;
  if (value->is_number_integer()) {
    // Unsigned values above INT64_MAX are not ids or counts we wrote.
    if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return value->get<int64_t>();
  }
  return std::nullopt;
}

/// Compact JSON; invalid UTF-8 in stored strings is replaced instead of throwing.
std::string dumpCompact(const json &value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

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

/// A shape as the gate writes it ({"n": 1024}) in tasks::shapeToString's form.
std::string shapeText(const json *shape) {
  if (shape != nullptr && shape->is_object()) return "{" + objectText(*shape) + "}";
  return textOf(shape);
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

bool isCorrect(const store::AttemptRow &attempt) { return attempt.result && attempt.result->verdict == "correct"; }

std::optional<double> timedSpeedup(const store::AttemptRow &attempt) {
  if (!isCorrect(attempt) || !attempt.result->speedup || !std::isfinite(*attempt.result->speedup)) return std::nullopt;
  return attempt.result->speedup;
}

std::string bestText(const json &summary) {
  const json *best = member(summary, "best");
  if (best == nullptr || !best->is_object()) return kNa;
  const json *speedup = member(best, "speedup");
  return fmt::format("candidate #{} (round {}, slot {}): {}, {}", countText(member(best, "candidate_id")),
                     countText(member(best, "round")), countText(member(best, "slot")),
                     textOf(member(best, "verdict")), formatSpeedup(numberOf(speedup)));
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

void addRounds(ReportModel &model, const store::RunData &data) {
  std::map<int, RoundRow> rounds;
  for (const store::AttemptRow &attempt : data.attempts) {
    RoundRow &row = rounds[attempt.prompt.round];
    row.round = attempt.prompt.round;
    if (isSkeletonStep(attempt)) continue;
    ++row.attempts;
    std::string stage = funnelStage(attempt);
    size_t index = stageIndex(stage);
    if (index < kStages.size()) ++row.funnel.stages[index];
    ++row.funnel.total;
    if (attempt.candidate && attempt.candidate->duplicateOf) ++row.funnel.duplicates;
    if (isCorrect(attempt)) ++row.correct;
    if (stage == "untimed") model.anyUntimed = true;
    if (std::optional<double> speedup = timedSpeedup(attempt))
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
    for (size_t i = 0; i < kStages.size(); ++i) model.funnelTotal.stages[i] += row.funnel.stages[i];
    model.funnelTotal.duplicates += row.funnel.duplicates;
    model.funnelTotal.total += row.funnel.total;
    model.rounds.push_back(row);
  }
  if (model.rounds.empty())
    model.chartNote = "no candidates";
  else if (!model.anyTiming)
    model.chartNote = model.anyUntimed ? "no timings (run on the CPU emulator)" : "no correct candidate was timed";
}

void addDiagnostics(ReportModel &model, const store::RunData &data) {
  std::map<std::string, DiagnosticRow> byCode;
  for (const store::AttemptRow &attempt : data.attempts) {
    if (!attempt.result || attempt.result->verdict == "correct") continue;
    const json *diagnostics = member(attempt.result->result, "diagnostics");
    if (diagnostics == nullptr || !diagnostics->is_array()) continue;
    std::set<std::string> seen;
    for (const json &diagnostic : *diagnostics) {
      const json *code = member(diagnostic, "code");
      if (code == nullptr || !code->is_string() || code->get_ref<const std::string &>().empty()) continue;
      const std::string &name = code->get_ref<const std::string &>();
      DiagnosticRow &row = byCode[name];
      if (row.code.empty()) {
        row.code = name;
        row.severity = textOf(member(diagnostic, "severity"));
        row.example = oneLine(textOf(member(diagnostic, "message")), kSummaryLimit);
      }
      ++row.occurrences;
      if (seen.insert(name).second) ++row.candidates;
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
  if (attempt.completion->status != "complete") return "completion " + orNa(attempt.completion->status);
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

void addAttempts(ReportModel &model, const store::RunData &data) {
  for (const store::AttemptRow &attempt : data.attempts) {
    AttemptLine line;
    line.round = std::to_string(attempt.prompt.round);
    line.slot = std::to_string(attempt.prompt.slot);
    line.kind = orNa(attempt.prompt.kind);
    line.tendency = orNa(attempt.prompt.tendency);
    line.temperature = temperatureText(attempt.prompt.temperature);
    line.candidate = candidateText(attempt);
    line.stage = isSkeletonStep(attempt) ? "skeleton" : funnelStage(attempt);
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

/// The best attempt: the one summary["best"] names, else the fastest correct
/// one (a timed one before an untimed one; the earliest on a tie, so an
/// original wins over its duplicates).
const store::AttemptRow *findBest(const store::RunData &data) {
  if (std::optional<int64_t> id = integerOf(member(member(data.run.summary, "best"), "candidate_id")))
    for (const store::AttemptRow &attempt : data.attempts)
      if (attempt.candidate && attempt.candidate->id == *id) return &attempt;
  const store::AttemptRow *best = nullptr;
  for (const store::AttemptRow &attempt : data.attempts) {
    if (!isCorrect(attempt)) continue;
    if (best == nullptr) {
      best = &attempt;
      continue;
    }
    std::optional<double> speedup = timedSpeedup(attempt), bestSpeedup = timedSpeedup(*best);
    if (speedup && (!bestSpeedup || *speedup > *bestSpeedup)) best = &attempt;
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

/// Median of one side of a timing entry: "median_ms" as the gate writes it,
/// "median" as older results did.
const json *medianOf(const json *stats) {
  const json *median = member(stats, "median_ms");
  return median != nullptr ? median : member(stats, "median");
}

std::string bandText(const json *stats) {
  const json *p10 = member(stats, "p10_ms");
  const json *p90 = member(stats, "p90_ms");
  if (p10 == nullptr) p10 = member(stats, "p10");
  if (p90 == nullptr) p90 = member(stats, "p90");
  std::optional<double> low = numberOf(p10), high = numberOf(p90);
  if (!low || !high) return kNa;
  return formatMs(*low) + "–" + formatMs(*high);
}

std::string rateText(const json *candidate, const json *baseline) {
  std::optional<double> mine = numberOf(candidate), theirs = numberOf(baseline);
  if (!mine) return kNa;
  std::string text = fmt::format("{:.1f}", *mine);
  if (theirs) text += fmt::format(" (nvcc {:.1f})", *theirs);
  return text;
}

TimingRow timingRow(const json &entry) {
  const json *candidate = member(entry, "candidate");
  const json *baseline = member(entry, "baseline");
  TimingRow row;
  row.shape = shapeText(member(entry, "shape"));
  row.candidateMedian = msText(medianOf(candidate));
  row.candidateBand = bandText(candidate);
  row.baselineMedian = msText(medianOf(baseline));
  row.baselineBand = bandText(baseline);
  row.speedup = formatSpeedup(numberOf(member(entry, "speedup")));
  row.speedupBand = kNa;
  if (const json *band = member(entry, "speedup_band"); band != nullptr && band->is_array() && band->size() == 2) {
    std::optional<double> low = numberOf(&(*band)[0]), high = numberOf(&(*band)[1]);
    if (low && high) row.speedupBand = fmt::format("{:.2f}–{:.2f}x", *low, *high);
  }
  row.gflops = rateText(member(entry, "gflops"), member(entry, "baseline_gflops"));
  row.gbps = rateText(member(entry, "gbps"), member(entry, "baseline_gbps"));
  return row;
}

/// The timing entry the recorded speedup came from (the last one when none matches).
const json *timedEntry(const json *timing, std::optional<double> speedup) {
  if (timing == nullptr || !timing->is_array() || timing->empty()) return nullptr;
  if (speedup)
    for (const json &entry : *timing)
      if (std::optional<double> value = numberOf(member(entry, "speedup"));
          value && std::fabs(*value - *speedup) <= 1e-9 * std::max(1.0, std::fabs(*speedup)))
        return &entry;
  return &timing->back();
}

void addBest(ReportModel &model, const store::RunData &data) {
  const store::AttemptRow *attempt = findBest(data);
  if (attempt == nullptr || !attempt->candidate) {
    model.noBestNote = data.attempts.empty() ? "no candidates" : "no correct candidate";
    return;
  }
  const store::CandidateRecord &candidate = *attempt->candidate;
  static const json kEmpty = json::object();
  const json &result = attempt->result ? attempt->result->result : kEmpty;
  const json *resources = member(result, "resources");
  const json *sass = member(result, "sass");
  const json *provenance = member(result, "provenance");
  const json *reference = member(data.run.summary, "reference");
  const json *referenceSass = member(reference, "sass");

  BestKernel best;
  best.title = fmt::format("candidate #{} (round {}, slot {})", candidate.id, attempt->prompt.round,
                           attempt->prompt.slot);
  std::optional<double> speedup = attempt->result ? attempt->result->speedup : std::nullopt;
  best.facts = {
      {"verdict", attempt->result ? orNa(attempt->result->verdict) : pendingVerdict(*attempt)},
      {"speedup over nvcc", formatSpeedup(speedup)},
      {"stage reached", attempt->result ? orNa(attempt->result->stage) : kNa},
      {"summary", attempt->result ? orNa(oneLine(attempt->result->summary, 4 * kSummaryLimit)) : kNa},
      {"prompt", fmt::format("{}, tendency {}, temperature {}", orNa(attempt->prompt.kind),
                             orNa(attempt->prompt.tendency), temperatureText(attempt->prompt.temperature))},
      {"device", fmt::format("{} ({})", textOf(member(provenance, "device")), textOf(member(provenance, "arch")))},
      {"compiler", textOf(member(provenance, "compiler"))},
      {"reference compiler", textOf(member(provenance, "reference_compiler"))},
      {"seed", textOf(member(provenance, "seed"))},
  };
  if (candidate.duplicateOf) best.facts.push_back({"duplicate of", fmt::format("#{}", *candidate.duplicateOf)});

  // Registers: ptxas's count, else the driver's, else the result row's column.
  std::string registers = countText(member(resources, "registers"));
  if (registers == kNa) registers = countText(member(member(result, "kernel"), "registers"));
  if (registers == kNa && attempt->result && attempt->result->registers)
    registers = std::to_string(*attempt->result->registers);

  const json *timing = member(result, "timing");
  const json *entry = timedEntry(timing, speedup);
  best.resources = {
      {"registers", registers, countText(member(reference, "registers"))},
      {"spill stores (bytes)", countText(member(resources, "spill_store_bytes")),
       countText(member(reference, "spill_store_bytes"))},
      {"spill loads (bytes)", countText(member(resources, "spill_load_bytes")),
       countText(member(reference, "spill_load_bytes"))},
      {"shared memory (bytes)", countText(member(resources, "shared_bytes")),
       countText(member(reference, "shared_bytes"))},
      {"stack frame (bytes)", countText(member(resources, "stack_bytes")), countText(member(reference, "stack_bytes"))},
      {"barriers (ptxas)", countText(member(resources, "barriers")), countText(member(reference, "barriers"))},
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
      {"median time (ms)", entry ? msText(medianOf(member(entry, "candidate"))) : kNa,
       msText(member(reference, "timing_ms"))},
  };
  if (timing != nullptr && timing->is_array())
    for (const json &timingEntry : *timing) best.timings.push_back(timingRow(timingEntry));
  best.ptx = candidate.ptx;
  model.best = std::move(best);
}

} // namespace

std::vector<std::string> funnelCells(std::string label, const FunnelCounts &counts) {
  std::vector<std::string> cells{std::move(label)};
  for (int count : counts.stages) cells.push_back(std::to_string(count));
  cells.push_back(std::to_string(counts.duplicates));
  cells.push_back(std::to_string(counts.total));
  return cells;
}

size_t stageIndex(std::string_view stage) {
  return static_cast<size_t>(std::find(kStages.begin(), kStages.end(), stage) - kStages.begin());
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
  addRounds(model, data);
  addDiagnostics(model, data);
  addAttempts(model, data);
  addBest(model, data);
  return model;
}

} // namespace ptxforge::report::detail
