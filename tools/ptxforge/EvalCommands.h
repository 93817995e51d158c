// `ptxforge eval` (score a model over the suite), `eval show`, `eval compare`
// and `eval leaderboard`.
#pragma once

#include <CLI/CLI.hpp>

namespace ptxforge::cli {

/// Adds `eval` and its subcommands; their callbacks set `exitCode` (0 ok, 2
/// usage, I/O or backend problems). `app` and `exitCode` must outlive the parse.
void registerEvalCommands(CLI::App &app, int &exitCode);

} // namespace ptxforge::cli
