// `ptxforge grammar`: the PTX grammar for servers that constrain decoding
// (GBNF for llama.cpp, Lark for llguidance, EBNF for xgrammar), optionally
// for one target and one task's kernel signature. docs/guided.md.
#pragma once

#include "support/Result.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ptxforge::ptx {
struct EntrySignature;
}
namespace ptxforge::tasks {
struct TaskSpec;
}

namespace ptxforge::cli {

/// The kernel signature a task's prompt shows (prompt::ptxSignature), read
/// back with the PTX parser so that the grammar and the prompt cannot disagree.
Result<ptx::EntrySignature> taskEntrySignature(const tasks::TaskSpec &task);

/// The grammar text for `format` ("gbnf", "lark", "ebnf"), target `arch`
/// (empty: any) and, when given, a task's signature (searched in `tasksDirs`
/// and the built-in suite). Shared by `ptxforge grammar` and `--guided`.
Result<std::string> buildGrammar(const std::string &format, const std::string &arch,
                                 const std::optional<std::string> &task, const std::vector<std::string> &tasksDirs);

/// Adds `grammar`; its callback sets `exitCode` (0, or 2 for an unknown
/// format, target or task).
void registerGrammarCommand(CLI::App &app, int &exitCode);

} // namespace ptxforge::cli
