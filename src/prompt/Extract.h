// Completion parsing: takes the PTX module out of a model's answer (chatter,
// markdown fences, several drafts, thinking text) or says, in words a model can
// act on, why there is none.
#pragma once

#include "support/Result.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::prompt {

/// Where the module was found.
enum class PtxSource {
  PtxFence,   ///< a ```ptx fenced block
  OtherFence, ///< a fenced block with another or no language tag (``` / ```asm / ...)
  Unfenced,   ///< bare PTX in the answer's text
};

/// "ptx-fence", "other-fence", "unfenced".
const char *ptxSourceName(PtxSource source);

/// The module taken out of a completion.
struct ExtractedPtx {
  std::string ptx;          ///< the module text, ending with a newline
  PtxSource source = PtxSource::PtxFence;
  std::string fenceLanguage; ///< the fence's info string ("ptx", "", "asm"); empty when unfenced
  size_t firstLine = 0;     ///< 1-based line range of the module's text in the completion
  size_t lastLine = 0;
  size_t candidateBlocks = 0; ///< blocks that looked like a PTX module (the chosen one included)
  /// True when a `// @ptxforge ...` line just before the fence was moved into the module.
  bool directiveMoved = false;
  /// What a person may want to know: "2 PTX blocks; took the last", "ignored thinking text".
  std::vector<std::string> notes;
};

/// Takes the PTX module out of `completion`.
///
/// Candidates are the fenced blocks (``` or ~~~) that contain `.entry` or
/// `.version`, and when there are none, bare PTX from the first `.version` /
/// `.target` / `.entry` line to the function's closing `}`. Text inside
/// `<think>…</think>` is ignored unless nothing else holds PTX. Among the
/// candidates: closed blocks before truncated ones, blocks with an `.entry`
/// before those without, a ```ptx fence before other fences, then the last one
/// (a model that revised its answer meant the revision).
///
/// `// @ptxforge` launch directives inside the block stay where they are. A
/// directive on the line(s) just before the fence (blank lines allowed between)
/// is moved into the module as its first line, unless the block has one itself.
///
/// Errors are ErrorKind::InvalidInput with a message meant to be shown to the
/// model: an empty answer, no PTX module, or a block cut off before its end.
Result<ExtractedPtx> extractPtx(std::string_view completion);

} // namespace ptxforge::prompt
