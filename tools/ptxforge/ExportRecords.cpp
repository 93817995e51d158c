// See ExportRecords.h and docs/datasets.md.
#include "ExportRecords.h"

#include "report/JsonRead.h"
#include "report/Report.h"
#include "toolchain/Json.h"
#include "verify/Check.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

namespace ptxforge::cli {
namespace {

using nlohmann::json;

constexpr std::array<const char *, 3> kFormatNames = {"sft", "rl", "pairs"};

// No field is ever null: `datasets` infers a column's type from a file's first
// block (about 10 MB), and a column that is null there and a number further on
// fails to load. Absent values are typed sentinels instead (docs/datasets.md).
template <typename T> json orSentinel(const std::optional<T> &value, T sentinel) { return json(value ? *value : sentinel); }

json assistantMessage(std::string text) {
  return json::array({json{{"role", "assistant"}, {"content", std::move(text)}}});
}

/// `ptx` in a ```ptx fence longer than any backtick run inside it, as the
/// prompts ask the model to answer (prompts/output.md) and extractPtx reads.
std::string fencedPtx(const std::string &ptx) {
  size_t longest = 0, run = 0;
  for (char c : ptx) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<size_t>(3, longest + 1), '`');
  std::string body = ptx;
  if (!body.empty() && body.back() != '\n') body += '\n';
  return fence + "ptx\n" + body + fence + "\n";
}

/// One attempt read once: its prompt, its answer and what the gate said.
struct Decoded {
  const store::AttemptRow *row = nullptr;
  std::optional<json> messages;
  std::optional<report::StoredResult> stored; ///< when the result's document decodes
  std::optional<serve::AnswerCheck> check;
  AttemptScore score;
  json reward; ///< serve::rewardJson of the check
};

/// Why an attempt gives no rl/pairs record; empty when it gives one.
std::string decodeAttempt(const store::AttemptRow &row, const DatasetOptions &options, Decoded &out) {
  out.row = &row;
  out.messages = requestMessages(row.prompt.request);
  if (!row.completion || row.completion->completionStatus() != store::CompletionStatus::Complete)
    return "no completion (pending, failed or never asked)";
  if (!row.candidate) return row.prompt.kind == "skeleton" ? "skeleton request (no kernel asked)" : "not verified";
  if (!row.result) return "not verified";
  if (!out.messages) return "no prompt messages stored";
  out.stored = report::decodeResult(*row.result);
  if (!out.stored->check || !out.stored->verdict) return "result does not decode";
  out.check = serve::AnswerCheck{*out.stored->check, std::nullopt};
  out.reward = serve::rewardJson(*out.check, options.weights);
  out.score.correct = out.stored->is(verify::Verdict::Correct);
  out.score.speedupLow = report::read::numberOf(report::read::member(out.reward, "speedup_low"));
  out.score.speedupHigh = report::read::numberOf(report::read::member(out.reward, "speedup_high"));
  out.score.completion = row.completion->text;
  return {};
}

/// The fields every record has: where it comes from.
json runFields(const store::RunData &data, std::optional<int64_t> evalId) {
  const json *provenance = &data.run.provenance;
  return {{"schema_version", kDatasetSchemaVersion},
          {"run_id", data.run.id},
          {"eval_id", orSentinel<int64_t>(evalId, 0)},
          {"task", data.run.task},
          {"level", orSentinel<int64_t>(report::read::integerOf(report::read::member(provenance, "task_level")), 0)},
          {"model", data.run.model},
          {"arch", orSentinel<std::string>(report::read::stringOf(report::read::member(provenance, "arch")), "")}};
}

/// The fields of one attempt, with `prefix` ("" or "chosen_").
void attemptFields(json &record, const Decoded &attempt, const std::string &prefix = "") {
  const store::AttemptRow &row = *attempt.row;
  record[prefix + "attempt_id"] = row.prompt.id;
  record[prefix + "candidate_id"] = row.candidate ? row.candidate->id : 0;
  record[prefix + "round"] = row.prompt.round;
  record[prefix + "slot"] = row.prompt.slot;
  record[prefix + "kind"] = row.prompt.kind;
}

/// The gate's judgement and the reward of one attempt, with `prefix`.
void outcomeFields(json &record, const Decoded &attempt, const std::string &prefix = "") {
  // Serve's reward document has null speedups when nothing was timed; here 0.0 and `timed`.
  const json *speedup = report::read::member(attempt.reward, "speedup");
  auto number = [&](const char *key) { return report::read::numberOf(report::read::member(attempt.reward, key)).value_or(0.0); };
  record[prefix + "verdict"] = attempt.row->result->verdict;
  record[prefix + "timed"] = speedup != nullptr && speedup->is_number();
  record[prefix + "speedup"] = number("speedup");
  record[prefix + "speedup_low"] = number("speedup_low");
  record[prefix + "speedup_high"] = number("speedup_high");
  record[prefix + "reward"] = attempt.reward["reward"];
}

json rlRecord(const store::RunData &data, std::optional<int64_t> evalId, const Decoded &attempt) {
  const store::AttemptRow &row = *attempt.row;
  json record = runFields(data, evalId);
  attemptFields(record, attempt);
  record["temperature"] = orSentinel(row.prompt.temperature, -1.0);
  record["strategies"] = row.prompt.strategies;
  record["prompt"] = *attempt.messages;
  record["completion"] = assistantMessage(row.completion->text);
  record["ptx"] = row.candidate->ptx;
  record["extract_error"] = row.candidate->extractError;
  record["duplicate_of"] = orSentinel<int64_t>(row.candidate->duplicateOf, 0);
  outcomeFields(record, attempt);
  record["stage"] = row.result->stage;
  record["summary"] = row.result->summary;
  record["diagnostics"] = toolchain::toJson(attempt.check->result.diagnostics);
  record["correct"] = attempt.score.correct;
  record["reward_stages"] = attempt.reward["stages"];
  record["reward_weights"] = attempt.reward["weights"];
  return record;
}

/// The slot's first `initial` prompt with messages (the task as first posed to
/// it), else the attempt's own.
const Decoded &taskPrompt(const std::vector<Decoded> &attempts, const Decoded &best) {
  for (const Decoded &attempt : attempts)
    if (attempt.messages && attempt.row->prompt.slot == best.row->prompt.slot && attempt.row->prompt.kind == "initial")
      return attempt;
  return best;
}

} // namespace

const char *datasetFormatName(DatasetFormat format) { return kFormatNames[static_cast<size_t>(format)]; }

std::optional<DatasetFormat> parseDatasetFormat(std::string_view name) {
  for (size_t i = 0; i < kFormatNames.size(); ++i)
    if (name == kFormatNames[i]) return static_cast<DatasetFormat>(i);
  return std::nullopt;
}

int comparePreference(const AttemptScore &a, const AttemptScore &b) {
  if (a.correct != b.correct) return a.correct ? 1 : -1;
  if (!a.correct) return 0;
  if (!a.speedupLow || !a.speedupHigh || !b.speedupLow || !b.speedupHigh) return 0;
  if (*a.speedupLow > *b.speedupHigh) return 1;
  if (*b.speedupLow > *a.speedupHigh) return -1;
  return 0;
}

std::optional<size_t> bestCorrect(std::span<const AttemptScore> scores) {
  std::optional<size_t> best;
  for (size_t i = 0; i < scores.size(); ++i) {
    const AttemptScore &score = scores[i];
    if (!score.correct) continue;
    if (!best) {
      best = i;
      continue;
    }
    const std::optional<double> &low = scores[*best].speedupLow;
    // Strictly faster only: the earlier one stays on a tie.
    if (score.speedupLow && (!low || *score.speedupLow > *low)) best = i;
  }
  return best;
}

std::vector<std::pair<size_t, size_t>> preferencePairs(std::span<const AttemptScore> scores) {
  std::vector<std::pair<size_t, size_t>> pairs;
  std::set<std::pair<std::string_view, std::string_view>> taken; // the texts of the pairs so far
  for (size_t chosen = 0; chosen < scores.size(); ++chosen)
    for (size_t rejected = 0; rejected < scores.size(); ++rejected)
      if (comparePreference(scores[chosen], scores[rejected]) > 0 &&
          scores[chosen].completion != scores[rejected].completion &&
          taken.emplace(scores[chosen].completion, scores[rejected].completion).second)
        pairs.emplace_back(chosen, rejected);
  return pairs;
}

std::optional<nlohmann::json> requestMessages(const nlohmann::json &request) {
  const json *messages = report::read::member(request, "messages");
  if (messages == nullptr || !messages->is_array() || messages->empty()) return std::nullopt;
  json out = json::array();
  for (const json &message : *messages) {
    std::optional<std::string> role = report::read::stringOf(report::read::member(message, "role"));
    std::optional<std::string> content = report::read::stringOf(report::read::member(message, "content"));
    if (!role || !content) return std::nullopt;
    out.push_back({{"role", *role}, {"content", *content}});
  }
  return out;
}

std::vector<nlohmann::json> datasetRecords(const store::RunData &data, std::optional<int64_t> evalId,
                                           const DatasetOptions &options, DatasetCounts &counts) {
  counts.runs++;
  counts.attempts += data.attempts.size();
  std::vector<Decoded> attempts;
  attempts.reserve(data.attempts.size());
  std::vector<json> records;
  for (const store::AttemptRow &row : data.attempts) {
    Decoded decoded;
    std::string skipped = decodeAttempt(row, options, decoded);
    if (!skipped.empty()) {
      // sft counts runs, not attempts; an attempt's prompt may still serve it.
      if (options.format != DatasetFormat::Sft) counts.skipped[skipped]++;
      if (decoded.messages) attempts.push_back(std::move(decoded));
      continue;
    }
    attempts.push_back(std::move(decoded));
  }
  // Only the attempts with a verdict are scored; the others served as prompts.
  std::vector<const Decoded *> judged;
  for (const Decoded &attempt : attempts)
    if (attempt.check) judged.push_back(&attempt);

  switch (options.format) {
  case DatasetFormat::Rl:
    for (const Decoded *attempt : judged) records.push_back(rlRecord(data, evalId, *attempt));
    break;
  case DatasetFormat::Sft: {
    std::vector<AttemptScore> scores;
    for (const Decoded *attempt : judged) {
      AttemptScore score = attempt->score;
      // A correct verdict on an empty module cannot happen; never emit one.
      if (attempt->row->candidate->ptx.empty()) score.correct = false;
      scores.push_back(score);
    }
    std::optional<size_t> best = bestCorrect(scores);
    if (!best) {
      counts.skipped["no correct kernel"]++;
      break;
    }
    const Decoded &kernel = *judged[*best];
    const Decoded &asked = taskPrompt(attempts, kernel);
    json record = runFields(data, evalId);
    attemptFields(record, kernel);
    record["prompt_attempt_id"] = asked.row->prompt.id;
    record["prompt"] = *asked.messages;
    record["completion"] = assistantMessage(fencedPtx(kernel.row->candidate->ptx));
    record["ptx"] = kernel.row->candidate->ptx;
    outcomeFields(record, kernel);
    record["registers"] = orSentinel(kernel.row->result->registers, -1);
    records.push_back(std::move(record));
    break;
  }
  case DatasetFormat::Pairs: {
    // Groups of attempts that answered the same messages, in order of first appearance.
    std::vector<std::pair<std::string, std::vector<const Decoded *>>> groups;
    for (const Decoded *attempt : judged) {
      std::string key = report::read::dumpCompact(*attempt->messages);
      auto group = std::find_if(groups.begin(), groups.end(), [&](const auto &g) { return g.first == key; });
      if (group == groups.end()) groups.push_back({std::move(key), {attempt}});
      else group->second.push_back(attempt);
    }
    for (const auto &[key, members] : groups) {
      std::vector<AttemptScore> scores;
      for (const Decoded *attempt : members) scores.push_back(attempt->score);
      for (const auto &[chosenIndex, rejectedIndex] : preferencePairs(scores)) {
        const Decoded &chosen = *members[chosenIndex];
        const Decoded &rejected = *members[rejectedIndex];
        json record = runFields(data, evalId);
        record["prompt"] = *chosen.messages;
        record["chosen"] = assistantMessage(chosen.row->completion->text);
        record["rejected"] = assistantMessage(rejected.row->completion->text);
        attemptFields(record, chosen, "chosen_");
        outcomeFields(record, chosen, "chosen_");
        attemptFields(record, rejected, "rejected_");
        outcomeFields(record, rejected, "rejected_");
        records.push_back(std::move(record));
      }
    }
    break;
  }
  }
  counts.records += records.size();
  return records;
}

std::string datasetLine(const nlohmann::json &record) { return report::read::dumpCompact(record) + "\n"; }

} // namespace ptxforge::cli
