// CorpusStats: one pass over the shards; each row's PTX parsed again for its
// opcodes (the rows carry the printed module, not the AST).
#include "corpus/CorpusStats.h"

#include "corpus/Builder.h"
#include "ptx/InstructionTable.h"
#include "ptx/Parser.h"
#include "support/InputReader.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

namespace ptxforge::corpus {

namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

Distribution distributionOf(std::vector<double> values) {
  Distribution out;
  out.count = values.size();
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  auto rank = [&](double fraction) {
    size_t index = static_cast<size_t>(fraction * static_cast<double>(values.size()));
    return values[std::min(index, values.size() - 1)];
  };
  out.min = values.front();
  out.max = values.back();
  out.p10 = rank(0.10);
  out.median = rank(0.50);
  out.p90 = rank(0.90);
  double sum = 0;
  for (double value : values) sum += value;
  out.mean = sum / static_cast<double>(values.size());
  return out;
}

OrderedJson distributionJson(const Distribution &d) {
  return {{"count", d.count}, {"min", d.min}, {"p10", d.p10}, {"median", d.median},
          {"p90", d.p90},     {"max", d.max}, {"mean", d.mean}};
}

void countOpcodes(const std::vector<ptx::Statement> &statements, CorpusStats &stats) {
  for (const ptx::Statement &statement : statements) {
    if (statement.kind == ptx::Statement::Kind::Block) {
      countOpcodes(statement.block.statements, stats);
    } else if (statement.kind == ptx::Statement::Kind::Instruction) {
      const ptx::Instruction &instruction = statement.instruction;
      if (std::optional<ptx::OpcodeMatch> match = ptx::lookupInstruction(instruction.opcode, instruction.modifiers))
        ++stats.opcodeUses[match->entry->name];
      else
        ++stats.unknownInstructions;
    }
  }
}

std::string formatNumber(double value) {
  char text[32];
  if (value == static_cast<double>(static_cast<long long>(value))) std::snprintf(text, sizeof text, "%lld", static_cast<long long>(value));
  else std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string distributionLine(const char *name, const Distribution &d) {
  if (!d.count) return std::string(name) + ": none\n";
  return std::string(name) + ": min " + formatNumber(d.min) + ", p10 " + formatNumber(d.p10) + ", median " +
         formatNumber(d.median) + ", p90 " + formatNumber(d.p90) + ", max " + formatNumber(d.max) + ", mean " +
         formatNumber(d.mean) + " (" + std::to_string(d.count) + " rows)\n";
}

} // namespace

Result<CorpusStats> corpusStats(const std::filesystem::path &corpusDir) {
  std::vector<std::filesystem::path> shards = shardFiles(corpusDir);
  if (shards.empty())
    return makeError(ErrorKind::Io, "no-corpus", corpusDir.string() + " holds no data/train-*.jsonl shards "
                                                 "(build one with `ptxforge corpus build SRC... --out DIR`)");
  CorpusStats stats;
  stats.shards = shards.size();
  stats.tableEntries = ptx::allInstructions().size();
  std::set<std::string> sources, kernels;
  std::vector<double> lines, instructions, registers, sassInstructions;
  for (const std::filesystem::path &shard : shards) {
    Result<std::string> text = readFileBounded(shard.string(), size_t{16} << 30);
    if (!text) return text.error();
    std::istringstream stream(*text);
    std::string line;
    for (size_t number = 1; std::getline(stream, line); ++number) {
      if (line.empty()) continue;
      Json row = Json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!row.is_object() || !row.contains("ptx") || !row["ptx"].is_string() || !row.contains("target"))
        return makeError(ErrorKind::InvalidInput, "bad-row",
                         shard.string() + ":" + std::to_string(number) + ": not a corpus row (a JSON object with "
                                                                          "ptx, target, ...)",
                         static_cast<uint32_t>(number));
      ++stats.rows;
      sources.insert(row.value("source_sha256", ""));
      kernels.insert(row.value("source_sha256", "") + '\0' + row.value("entry", ""));
      ++stats.byTarget[row.value("target", "")];
      ++stats.byFlags[row.value("flags", "")];
      if (row.contains("task") && row["task"].is_string() && !row["task"].get<std::string>().empty()) ++stats.withTask;
      if (row.contains("ptx_lines") && row["ptx_lines"].is_number()) lines.push_back(row["ptx_lines"].get<double>());
      if (row.contains("ptx_instructions") && row["ptx_instructions"].is_number())
        instructions.push_back(row["ptx_instructions"].get<double>());
      if (row.contains("resources") && row["resources"].is_object() && row["resources"].contains("registers") &&
          row["resources"]["registers"].is_number() && row["resources"]["registers"].get<int>() >= 0)
        registers.push_back(row["resources"]["registers"].get<double>());
      if (row.contains("sass") && row["sass"].is_object() && row.value("sass_skipped", "").empty()) {
        ++stats.withSass;
        sassInstructions.push_back(row["sass"].value("instructions", 0));
      }
      ptx::ParseResult parsed = ptx::parse(row["ptx"].get<std::string>(), ptx::DiagnosticLimits::unlimited());
      for (const ptx::TopLevel &item : parsed.module.items)
        if (item.kind == ptx::TopLevel::Kind::Function) countOpcodes(item.function.body, stats);
    }
  }
  stats.sources = sources.size();
  stats.kernels = kernels.size();
  stats.ptxLines = distributionOf(std::move(lines));
  stats.ptxInstructions = distributionOf(std::move(instructions));
  stats.registers = distributionOf(std::move(registers));
  stats.sassInstructions = distributionOf(std::move(sassInstructions));
  if (Result<std::string> manifest = readFileBounded((corpusDir / "build.json").string(), size_t{64} << 20)) {
    OrderedJson build = OrderedJson::parse(*manifest, nullptr, false);
    if (build.is_object() && build.contains("stages")) stats.stages = build["stages"];
  }
  return stats;
}

OrderedJson CorpusStats::toJson() const {
  OrderedJson opcodes = OrderedJson::object();
  std::vector<std::pair<std::string, size_t>> sorted(opcodeUses.begin(), opcodeUses.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
  for (const auto &[name, count] : sorted) opcodes[name] = count;
  OrderedJson uncovered = OrderedJson::array();
  for (const ptx::OpcodeEntry &entry : ptx::allInstructions())
    if (!opcodeUses.count(entry.name)) uncovered.push_back(entry.name);
  return {{"rows", rows},
          {"shards", shards},
          {"sources", sources},
          {"kernels", kernels},
          {"rows_with_task", withTask},
          {"rows_with_sass", withSass},
          {"by_target", byTarget},
          {"by_flags", byFlags},
          {"ptx_lines", distributionJson(ptxLines)},
          {"ptx_instructions", distributionJson(ptxInstructions)},
          {"registers", distributionJson(registers)},
          {"sass_instructions", distributionJson(sassInstructions)},
          {"opcode_coverage",
           {{"table_entries", tableEntries},
            {"used", opcodeUses.size()},
            {"fraction", tableEntries ? static_cast<double>(opcodeUses.size()) / static_cast<double>(tableEntries) : 0.0},
            {"unknown_instructions", unknownInstructions},
            {"uses", opcodes},
            {"unused", uncovered}}},
          {"stages", stages.is_null() ? OrderedJson::array() : stages}};
}

std::string CorpusStats::toText() const {
  std::ostringstream out;
  out << rows << " rows in " << shards << " shard" << (shards == 1 ? "" : "s") << ": " << kernels << " kernels from "
      << sources << " source file" << (sources == 1 ? "" : "s") << "; " << withTask << " rows match a task, "
      << withSass << " have SASS statistics\n";
  out << "by target:";
  for (const auto &[target, count] : byTarget) out << " " << target << " " << count;
  out << "\nby flags:";
  for (const auto &[flags, count] : byFlags) out << " [" << flags << "] " << count;
  out << "\n" << distributionLine("PTX lines", ptxLines) << distributionLine("PTX instructions", ptxInstructions)
      << distributionLine("registers", registers) << distributionLine("SASS instructions", sassInstructions);
  char fraction[32];
  std::snprintf(fraction, sizeof fraction, "%.1f%%",
                tableEntries ? 100.0 * static_cast<double>(opcodeUses.size()) / static_cast<double>(tableEntries) : 0.0);
  out << "opcode coverage: " << opcodeUses.size() << " of " << tableEntries << " instruction-table entries ("
      << fraction << ")";
  if (unknownInstructions) out << ", " << unknownInstructions << " instructions unknown to the table";
  out << "\n";
  std::vector<std::pair<std::string, size_t>> sorted(opcodeUses.begin(), opcodeUses.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
  out << "most used:";
  for (size_t i = 0; i < sorted.size() && i < 15; ++i) out << " " << sorted[i].first << " " << sorted[i].second;
  out << "\n";
  if (stages.is_array() && !stages.empty()) {
    out << "filters (build.json):\n";
    for (const auto &stage : stages)
      out << "  " << stage.value("stage", "") << ": " << stage.value("in", 0) << " in, " << stage.value("dropped", 0)
          << " dropped, " << stage.value("kept", 0) << " kept" << (stage.value("enabled", true) ? "" : " (off)")
          << "\n";
  }
  return out.str();
}

} // namespace ptxforge::corpus
