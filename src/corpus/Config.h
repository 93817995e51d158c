// Config: what `ptxforge corpus build` compiles and keeps — the flag matrix,
// the filters, the dedupe parameters and the shard size — read from a TOML
// file (docs/corpus.md lists the keys) with located errors.
#pragma once

#include "support/Result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::corpus {

/// One column of the flag matrix: nvcc-style flags as the user wrote them,
/// split into what NVRTC takes (it makes the PTX) and what reaches the PTX
/// compiler (it makes the cubin the resources and SASS come from).
struct FlagSet {
  std::string name;                      ///< the flags as written, one space apart: "-O3", "-G -lineinfo"
  std::vector<std::string> nvrtcOptions; ///< "-G", "-lineinfo", "--use_fast_math", "-maxrregcount=32", ...
  int optLevel = 3;                      ///< -O0..-O3: the PTX compiler's level (NVRTC has no -O)
  int maxRegisters = 0;                  ///< -maxrregcount=N; 0 = none
  bool lineInfo = false;                 ///< -lineinfo
  bool debug = false;                    ///< -G (the PTX compiler then works at -O0)

  /// The flags that change the cubin but not the PTX ("-O3 -maxrregcount=32"):
  /// part of the exact-dedupe key, since two rows with one PTX text but
  /// different register caps have different resources and SASS.
  std::string compilerOptionsKey() const;
};

/// Splits "-O3 -maxrregcount=32" into a FlagSet. Unknown flags go to NVRTC
/// unchanged (NVRTC refuses what it does not know, at build time); "-O" takes
/// 0..3 and -maxrregcount a positive count, else an InvalidInput error.
Result<FlagSet> parseFlagSet(std::string_view flags);

/// Where near-duplicates are looked for.
enum class NearScope {
  Variant, ///< among rows of the same flag set and target (the default: the matrix is deliberate)
  All,     ///< across the whole corpus
};

struct FilterConfig {
  bool lintClean = true;        ///< drop PTX with lint errors
  int minPtxLines = 1;          ///< bounds on the row's PTX (the printed, per-entry module)
  int maxPtxLines = 20000;
  int64_t maxPtxBytes = 1 << 20;
  bool noSpill = false;         ///< drop kernels whose cubin spills (spill stores or loads > 0)
};

struct DedupeConfig {
  bool exact = true;            ///< drop rows whose normalized PTX (and compiler options) were seen
  bool near = true;             ///< drop MinHash near-duplicates
  double threshold = 0.85;      ///< estimated Jaccard similarity at or above which a row is a near-duplicate
  int ngram = 5;                ///< instructions per shingle
  int permutations = 128;       ///< MinHash signature length
  uint64_t seed = 0x5eed;       ///< seeds the permutations (the same seed, the same decisions)
  NearScope scope = NearScope::Variant;
};

struct CorpusConfig {
  std::vector<FlagSet> flagSets;       ///< default: -O3, -G, -lineinfo, --use_fast_math, -maxrregcount=32
  std::vector<std::string> targets;    ///< default: sm_80, sm_89, sm_90, sm_90a
  FilterConfig filters;
  DedupeConfig dedupe;
  int shardRows = 5000;                ///< rows per JSONL shard
  bool sass = true;                    ///< SASS statistics when nvdisasm is found
  std::vector<std::string> includePaths; ///< extra NVRTC include folders (the file's own folder is always one)
  std::vector<std::string> defines;    ///< -D definitions for every translation unit ("N=4")

  /// The matrix of the issue and docs/corpus.md.
  static CorpusConfig defaults();
};

/// Reads a config: every key optional (defaults() fills the rest), unknown
/// keys and wrong types are errors "<file>:LINE:COL: ..." (one line each).
Result<CorpusConfig> parseConfig(std::string_view tomlText, const std::string &fileName);

/// The config as TOML (what parseConfig reads back to an equal config): the
/// dataset card and build.json show it.
std::string configToToml(const CorpusConfig &config);

} // namespace ptxforge::corpus
