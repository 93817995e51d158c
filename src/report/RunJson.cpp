// See RunJson.h.
#include "report/RunJson.h"

#include "report/Report.h"

#include <fmt/format.h>

namespace ptxforge::report {
namespace {

template <typename T> nlohmann::json orNull(const std::optional<T> &value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json bestOf(const store::RunRecord &run) {
  return run.summary.contains("best") ? run.summary["best"] : nlohmann::json(nullptr);
}

nlohmann::json attemptJson(const store::AttemptRow &row, bool full) {
  nlohmann::json a = {{"round", row.prompt.round},
                      {"slot", row.prompt.slot},
                      {"kind", row.prompt.kind},
                      {"strategies", row.prompt.strategies},
                      {"tendency", row.prompt.tendency},
                      {"temperature", orNull(row.prompt.temperature)},
                      {"request_hash", row.prompt.requestHash},
                      {"stage", report::funnelStage(row)}};
  if (row.completion)
    a["completion"] = {{"status", row.completion->status}, {"error", row.completion->error}, {"meta", row.completion->meta}};
  if (row.candidate)
    a["candidate"] = {{"id", row.candidate->id},
                      {"ptx_hash", row.candidate->ptxHash},
                      {"sass_hash", row.candidate->sassHash},
                      {"duplicate_of", orNull(row.candidate->duplicateOf)},
                      {"extract_error", row.candidate->extractError}};
  if (row.result)
    a["result"] = {{"verdict", row.result->verdict},
                   {"stage", row.result->stage},
                   {"summary", row.result->summary},
                   {"speedup", orNull(row.result->speedup)},
                   {"registers", orNull(row.result->registers)}};
  if (full) {
    // What the model saw and wrote, and the module taken out of it (show --full).
    a["messages"] = row.prompt.request.contains("messages") ? row.prompt.request["messages"] : nlohmann::json(nullptr);
    if (row.completion) a["completion"]["text"] = row.completion->text;
    if (row.candidate) a["candidate"]["ptx"] = row.candidate->ptx;
  }
  return a;
}

} // namespace

nlohmann::json runListJson(const std::vector<store::RunRecord> &runs) {
  nlohmann::json out = nlohmann::json::array();
  for (const store::RunRecord &run : runs)
    out.push_back({{"id", run.id},
                   {"created_at", run.createdAt},
                   {"task", run.task},
                   {"model", run.model},
                   {"strategies", run.strategies},
                   {"status", run.status},
                   {"best", bestOf(run)}});
  return out;
}

std::string runListText(const std::vector<store::RunRecord> &runs) {
  auto best = [](const store::RunRecord &run) -> std::string {
    nlohmann::json b = bestOf(run);
    if (!b.is_object()) return "-";
    if (b.contains("speedup") && b["speedup"].is_number()) return fmt::format("{:.2f}x", b["speedup"].get<double>());
    return "correct";
  };
  std::string out = fmt::format("{:>4}  {:<20}  {:<18}  {:<12}  {:<8}  {:<24}  {}\n", "run", "created", "task", "status",
                                "best", "strategies", "model");
  for (const store::RunRecord &run : runs)
    out += fmt::format("{:>4}  {:<20}  {:<18}  {:<12}  {:<8}  {:<24}  {}\n", run.id, run.createdAt, run.task, run.status,
                       best(run), run.strategies, run.model);
  return out;
}

nlohmann::json runDataJson(const store::RunData &data, bool full) {
  nlohmann::json attempts = nlohmann::json::array();
  for (const store::AttemptRow &row : data.attempts) attempts.push_back(attemptJson(row, full));
  return {{"id", data.run.id},
          {"created_at", data.run.createdAt},
          {"updated_at", data.run.updatedAt},
          {"task", data.run.task},
          {"model", data.run.model},
          {"strategies", data.run.strategies},
          {"status", data.run.status},
          {"parameters", data.run.parameters},
          {"provenance", data.run.provenance},
          {"summary", data.run.summary},
          {"attempts", std::move(attempts)}};
}

nlohmann::json runSummaryJson(const store::RunData &data, int64_t runId, const nlohmann::json &summary) {
  return {{"run", runId},
          {"task", data.run.task},
          {"model", data.run.model},
          {"status", data.run.status},
          {"strategies", data.run.strategies},
          {"parameters", data.run.parameters},
          {"provenance", data.run.provenance},
          {"summary", summary}};
}

} // namespace ptxforge::report
