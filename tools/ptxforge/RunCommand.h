// `ptxforge run`: runs any kernel of a PTX file on buffers and scalars given on
// the command line, without a task folder, and prints or writes the buffers
// asked for, with the emulator's sanitizer findings and the guard zones'.
//
//   ptxforge run vadd.ptx --kernel vadd --grid 1 --block 4
//     --buffer a=f32:4:1,2,3,4 --buffer b=f32:4:iota --buffer c=f32:4
//     --scalar n=u32:4 --dump c
//
// Exit codes: 0 it ran cleanly; 1 the launch failed, a sanitizer found
// something or a guard zone changed; 2 bad arguments, a PTX that does not parse
// or compile, or no executor.
#pragma once

#include <CLI/CLI.hpp>

namespace ptxforge::cli {

/// Adds `run`; its callback sets `exitCode`.
void registerRunCommand(CLI::App &app, int &exitCode);

} // namespace ptxforge::cli
