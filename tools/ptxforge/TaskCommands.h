// The task-suite subcommands: `ptxforge tasks` (list), `ptxforge task show NAME` and
// `ptxforge task audit [NAME...]` (does each task discriminate right from wrong kernels?).
#pragma once

#include <CLI/CLI.hpp>

namespace ptxforge::cli {

/// Adds `tasks`, `task show` and `task audit` to the app; their callbacks set `exitCode`
/// (0 ok, 1 some task folders are broken or an audit failed, 2 usage or I/O problems, unknown task).
/// `app` and `exitCode` must outlive the parse.
void registerTaskCommands(CLI::App &app, int &exitCode);

} // namespace ptxforge::cli
