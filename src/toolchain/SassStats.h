// SassStats: instruction statistics of a cubin's SASS, read through
// `nvdisasm -json`, for comparing a candidate with nvcc's code.
#pragma once

#include "support/Result.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ptxforge::toolchain {

/// Counts for one function (or, in SassStats itself, the whole cubin).
struct SassCounts {
  int instructions = 0;                  ///< excluding the NOP padding after the last instruction
  std::map<std::string, int> opcodes;    ///< base opcode (no modifiers) -> count, e.g. FFMA, LDG, HGMMA
  int spillLoads = 0;                    ///< LDL (local loads: spills or stack arrays)
  int spillStores = 0;                   ///< STL
  std::map<int, int> globalLoadWidths;   ///< LDG access width in bits -> count (LDG.E.128 -> 128; LDG.E -> 32)
  std::map<int, int> globalStoreWidths;  ///< STG access width in bits -> count
  int ffma = 0;                          ///< fused multiply-adds (FFMA)
  int fmul = 0;                          ///< separate FMUL
  int fadd = 0;                          ///< separate FADD
  int tensorCoreOps = 0;                 ///< HMMA, HGMMA, IMMA, IGMMA, DMMA, BMMA, QGMMA, ...
  int barriers = 0;                      ///< block barriers: BAR.* (SYNCS/mbarrier ops are in `opcodes`)
};

/// Statistics of a whole cubin plus each function in it.
struct SassStats {
  SassCounts total;
  std::map<std::string, SassCounts> functions; ///< by (mangled) function name
  std::string arch;                            ///< e.g. "sm_90", from the cubin's header
  std::string producer;                        ///< nvdisasm's version string
  /// Every function's instructions in order, one "[predicate ]opcode operands"
  /// line each (NOP padding excluded), under a "function NAME:" line. Two
  /// cubins with the same code have the same text: the solve loop's SASS
  /// fingerprint for duplicate candidates.
  std::string code;
};

/// Path of nvdisasm: $PTXFORGE_NVDISASM, PATH, <CUDA root>/bin, then the
/// pip package nvidia-cuda-nvdisasm (site-packages/nvidia/cu*/bin) of the
/// python3 on PATH. nullopt when none is found.
std::optional<std::string> findNvdisasm();

/// Disassembles `cubin` with `nvdisasm -json` and counts its instructions.
/// Cached by the cubin's SHA-256 (SassCache.h): a cubin seen before, in this
/// process or (through the user cache folder) an earlier one, does not run
/// nvdisasm again. $PTXFORGE_SASS_CACHE=0 turns that off.
/// ErrorKind::ToolMissing when nvdisasm is not available (with how to get
/// it); ErrorKind::Io/Internal when it runs but fails or prints unexpected JSON.
Result<SassStats> sassStats(const std::vector<uint8_t> &cubin);

/// The counting step alone, on nvdisasm's JSON text (exposed for tests).
Result<SassStats> sassStatsFromJson(const std::string &nvdisasmJson);

/// Base opcode of a SASS mnemonic: "LDG.E.128" -> "LDG".
std::string baseOpcode(const std::string &opcode);

/// Access width in bits of a load or store from its modifiers: .64/.128 are
/// vectors, .U8/.S8/.U16/.S16 sub-word, none of them 32 ("LDS.128" -> 128).
int accessWidthBits(const std::string &opcode);

} // namespace ptxforge::toolchain
