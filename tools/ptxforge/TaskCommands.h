// The task-suite subcommands: `ptxforge tasks` (list) and `ptxforge task show NAME`.
#pragma once

#include <CLI/CLI.hpp>

namespace ptxforge::cli {

/// Adds `tasks` and `task show` to the app; their callbacks set `exitCode`
/// (0 ok, 1 some task folders are broken, 2 usage or I/O problems, unknown task).
/// `app` and `exitCode` must outlive the parse.
void registerTaskCommands(CLI::App &app, int &exitCode);

} // namespace ptxforge::cli
