// The model-facing subcommands: `solve` (the generate → verify → repair →
// optimize loop), and `runs`, `show`, `report` over the run store.
#pragma once

#include <CLI/CLI.hpp>

namespace ptxforge::cli {

/// Adds `solve`, `runs`, `show` and `report`; their callbacks set `exitCode`
/// (0 ok / a correct kernel found, 1 no correct kernel, 2 usage, I/O or
/// backend problems). `app` and `exitCode` must outlive the parse.
void registerSolveCommands(CLI::App &app, int &exitCode);

/// Installs the process-wide signal setup the model backends need: SIGPIPE
/// ignored (a model program or server that hangs up is an error, not a death).
void ignoreSigpipe();

} // namespace ptxforge::cli
