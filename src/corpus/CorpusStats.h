// CorpusStats: `ptxforge corpus stats` — what a built corpus holds: rows per
// target and flag set, size distributions, and which PTX opcodes of the
// instruction table its kernels use.
#pragma once

#include "support/Result.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace ptxforge::corpus {

/// Nearest-rank percentiles of one figure over the rows that have it.
struct Distribution {
  size_t count = 0;
  double min = 0, p10 = 0, median = 0, p90 = 0, max = 0, mean = 0;
};

struct CorpusStats {
  size_t rows = 0;
  size_t shards = 0;
  size_t sources = 0;           ///< distinct source files (by hash)
  size_t kernels = 0;           ///< distinct (source, entry)
  size_t withTask = 0;          ///< rows matched to a task
  size_t withSass = 0;          ///< rows with SASS statistics
  std::map<std::string, size_t> byTarget, byFlags;
  Distribution ptxLines, ptxInstructions, registers, sassInstructions;
  /// Opcode coverage against ptx/InstructionTable: table entries (dotted
  /// names such as "cp.async") the rows use, with how many instructions.
  size_t tableEntries = 0;
  std::map<std::string, size_t> opcodeUses;
  size_t unknownInstructions = 0; ///< instructions the table does not know (0 for lint-clean rows)
  nlohmann::ordered_json stages;  ///< build.json's filter counts, when present

  nlohmann::ordered_json toJson() const;
  std::string toText() const;
};

/// Reads every shard of `corpusDir` (and build.json when there). A folder
/// without shards, or a line that is not a row, is an error naming the file
/// and line.
Result<CorpusStats> corpusStats(const std::filesystem::path &corpusDir);

} // namespace ptxforge::corpus
