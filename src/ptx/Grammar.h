// A grammar of PTX for constrained decoding, generated from the instruction
// table so that it stays in step with the lint: a server that enforces it
// (llama.cpp through GBNF, vLLM and SGLang through llguidance's Lark or
// xgrammar's EBNF) lets a model write only real opcodes with modifiers their
// table entry accepts, operand lists of the counts the lint checks,
// declarations, directives, labels and guards. docs/guided.md shows the forms.
//
// The grammar is written once, as rules over literals and character classes,
// and rendered in each format. Rules marked as tokens hold no whitespace and
// become Lark terminals (one lexeme each, which is what makes llguidance
// fast); whitespace and comments between tokens are explicit (`ws`), never
// `%ignore`d, so the three renderings accept the same texts.
#pragma once

#include "support/Result.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ptxforge::ptx {

enum class GrammarFormat {
  Gbnf, ///< llama.cpp's GBNF (`root ::= …`)
  Lark, ///< llguidance's Lark dialect (`start: …`, uppercase terminals)
  Ebnf, ///< xgrammar's EBNF (`root ::= …`; the GBNF subset both read)
};

/// "gbnf", "lark", "ebnf".
const char *grammarFormatName(GrammarFormat format);
std::optional<GrammarFormat> parseGrammarFormat(std::string_view name);

/// The kernel a task fixes: `.entry NAME(.param .TYPE NAME_param_0, …)`.
struct EntrySignature {
  std::string kernel;
  /// PTX parameter types without the dot ("u64", "f32"), in order; the
  /// parameters are named `<kernel>_param_<i>`, as nvcc and the prompts name them.
  std::vector<std::string> paramTypes;
  /// Per parameter: its `.align N` (0: none) and, for a byte array such as a
  /// TMA tensor map (`.param .align 64 .b8 name[128]`), its length (0: a scalar).
  /// Either may be shorter than paramTypes (missing entries are 0).
  std::vector<uint32_t> paramAligns;
  std::vector<uint64_t> paramArrayBytes;
};

struct GrammarOptions {
  GrammarFormat format = GrammarFormat::Gbnf;
  /// A target ("sm_90", "sm_90a"): `.target` is fixed to it and opcodes and
  /// modifiers it lacks are left out. Empty: every opcode, any target.
  std::string arch;
  /// When set, the module's one `.entry` is this one.
  std::optional<EntrySignature> entry;
};

/// The grammar text. Errors (InvalidInput): an unknown target, a kernel or
/// parameter type that is not a PTX name.
Result<std::string> generateGrammar(const GrammarOptions &options);

/// How many operands the grammar lets an opcode take (a `d|p` pair is one),
/// for the opcodes whose count it fixes; nullopt for the rest (any list).
/// These are the counts the lint's `operand-count` check holds instructions
/// to (tests/guided checks that the two agree).
std::optional<std::pair<size_t, size_t>> grammarOperandCount(std::string_view opcode);

/// Every opcode whose count grammarOperandCount fixes.
std::vector<std::string> grammarCountedOpcodes();

} // namespace ptxforge::ptx
