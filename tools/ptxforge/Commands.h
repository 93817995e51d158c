// The ptxforge subcommands that read one file: lint, fmt, compile, extract;
// and what every command file shares (the version, reading the input).
#pragma once

#include "support/Result.h"

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace ptxforge::cli {

/// "ptxforge X.Y.Z", from CMake's project(VERSION).
std::string_view versionString();

/// An input file's text and the name messages use for it.
struct Input {
  std::string name; ///< the path, or "<stdin>"
  std::string text;
};

/// Reads a file or standard input ("-") under the input size limit
/// (PTXFORGE_MAX_INPUT_BYTES, docs/limits.md); a directory or a read error is
/// an error naming the path, not empty input.
Result<Input> readInput(const std::string &path);

/// Adds `lint`, `fmt`, `compile` and `extract`; their callbacks set `exitCode`.
void registerCommands(CLI::App &app, int &exitCode);

/// Adds `check`, `baseline`, `crosscheck`, `device` and `reference` (GateCommands.cpp).
void registerGateCommands(CLI::App &app, int &exitCode);

} // namespace ptxforge::cli
