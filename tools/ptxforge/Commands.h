// The ptxforge subcommands and their one option table.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace ptxforge::cli {

/// Every option of every subcommand, documented once where it is registered.
struct Options {
  std::string input = "-";
  std::string format = "text";
  std::string arch = "sm_90";
  int optLevel = 3;
  int maxRegisters = 0;
  std::string backend = "nvjitlink";
  bool noLint = false;
  bool noSass = false;
  bool noWarnings = false;
  int exitCode = 0;
};

std::string_view versionString();

/// Adds `lint`, `fmt` and `compile` to the app; their callbacks set `options.exitCode`.
void registerCommands(CLI::App &app, Options &options);

} // namespace ptxforge::cli
