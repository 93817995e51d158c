// `ptxforge eval` (score a model over the suite), `eval show`, `eval compare`
// and `eval leaderboard`.
#pragma once

#include <CLI/CLI.hpp>

namespace ptxforge::cli {

/// Adds `eval` and its subcommands; their callbacks set `exitCode`: 2 for
/// usage, I/O or set-up problems; `eval` itself 0 only for a complete eval,
/// 3 incomplete, 4 infra-error, 5 pending (batch), 130 interrupted
/// (docs/eval.md). `app` and `exitCode` must outlive the parse.
void registerEvalCommands(CLI::App &app, int &exitCode);

} // namespace ptxforge::cli
