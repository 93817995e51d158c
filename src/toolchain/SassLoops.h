// SassLoops: the loops of a cubin's SASS, found from its control flow, and
// the instruction mix of the innermost (hot) loop, where a kernel spends its
// time. Built on SassStats::code (nvdisasm -json's instructions in address
// order), so a cached SassStats needs no second nvdisasm run.
#pragma once

#include "toolchain/SassStats.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ptxforge::toolchain {

/// What a stretch of SASS does, in the figures that decide a kernel's speed.
struct SassMix {
  int instructions = 0;
  std::map<std::string, int> opcodes; ///< base opcode -> count
  int ffma = 0;                       ///< FFMA (and FFMA2 on newer GPUs)
  int tensorCoreOps = 0;              ///< HMMA, HGMMA, IMMA, ... (opcodes ending in MMA)
  int imad = 0;                       ///< IMAD (integer multiply-add: addressing, mostly)
  int ldg = 0, stg = 0;               ///< global loads / stores
  int lds = 0, sts = 0;               ///< shared loads / stores (LDS, STS)
  int ldsm = 0;                       ///< ldmatrix (LDSM)
  int ldgsts = 0;                     ///< cp.async (LDGSTS)
  int bulkCopies = 0;                 ///< TMA / bulk async copies (UTMALDG, UBLKCP, UTMASTG, ...)
  int barInstructions = 0;            ///< BAR.* instructions (the resource count of barriers is elsewhere)
  std::map<int, int> ldgWidths, stgWidths, ldsWidths, stsWidths; ///< access bits -> count
  /// FFMA + tensor-core ops per shared-memory load (LDS + LDSM); nullopt without any.
  std::optional<double> mathPerSharedLoad() const;
};

/// One natural loop of a function's SASS.
struct SassLoop {
  int header = 0;              ///< index of the header's first instruction
  int first = 0, last = 0;     ///< lowest and highest instruction index in the loop
  int depth = 1;               ///< 1: outermost
  int parent = -1;             ///< index in FunctionLoops::loops of the enclosing loop
  bool innermost = true;       ///< no (non-wait) loop inside it
  bool waitLoop = false;       ///< polls (mbarrier, flags) and does no arithmetic or data movement
  SassMix mix;                 ///< the loop's own instructions (inner loops included)
  std::vector<std::string> listing; ///< the loop's instructions in address order ("[pred ]OPCODE operands")
};

/// The loops of one function.
struct FunctionLoops {
  std::string function;
  int instructions = 0;
  int blocks = 0;              ///< basic blocks
  std::vector<SassLoop> loops; ///< ordered by header address
  std::optional<int> hot;      ///< index of the hot loop: the deepest innermost non-wait loop, the longest of equals
  std::string note;            ///< why the loops may be incomplete (an indirect branch), or empty
};

/// The loops of every function in `stats` (by its code and arch). An error
/// when the code cannot be read (an unknown instruction size: before sm_70).
Result<std::vector<FunctionLoops>> sassLoops(const SassStats &stats);

/// The two hot loops against each other: candidate minus reference.
struct HotLoopDiff {
  std::map<std::string, std::pair<int, int>> opcodes; ///< base opcode -> (candidate, reference), differing ones only
  /// An alignment of the two listings by opcode (longest common subsequence):
  /// rows of (candidate line or "", reference line or ""); runs of equal
  /// opcodes longer than a few rows are folded into one "... N alike" row.
  std::vector<std::pair<std::string, std::string>> aligned;
  int alike = 0; ///< instructions paired with the same opcode
};

/// `maxRows` bounds `aligned` (a last row says how many more were left out).
HotLoopDiff diffHotLoops(const SassLoop &candidate, const SassLoop &reference, int maxRows = 40);

/// The entry's function in `loops`: `name` when found, else the one with the most instructions.
const FunctionLoops *pickFunction(const std::vector<FunctionLoops> &loops, const std::string &name);

/// One line of the mix: "405 instructions: 32 HMMA, 0 FFMA, 12 LDSM, ..."
/// (only the figures that are not zero after the first few).
std::string describeMix(const SassMix &mix);
/// "HMMA 32, IMAD 40, ..." of the `top` most frequent opcodes.
std::string topOpcodes(const SassMix &mix, size_t top = 8);

nlohmann::json toJson(const SassMix &mix);
/// The loops of one function; with `listing`, the hot loop's instructions too.
nlohmann::json toJson(const FunctionLoops &loops, bool listing = false);
nlohmann::json toJson(const HotLoopDiff &diff);

} // namespace ptxforge::toolchain
