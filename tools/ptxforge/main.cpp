// ptxforge: the command-line driver. A thin layer over the libraries: it reads
// input, calls them, and renders their results as text or JSON.
//
// Exit codes: 0 no errors, 1 the input has errors, 2 usage or I/O problems.
#include "Commands.h"
#include "EvalCommands.h"
#include "SolveCommands.h"
#include "TaskCommands.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
  CLI::App app{"ptxforge: lint, compile and verify PTX written by language models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(ptxforge::cli::versionString()));

  ptxforge::cli::Options options;
  ptxforge::cli::registerCommands(app, options);
  ptxforge::cli::registerTaskCommands(app, options.exitCode);
  ptxforge::cli::registerSolveCommands(app, options.exitCode);
  ptxforge::cli::registerEvalCommands(app, options.exitCode);
  ptxforge::cli::ignoreSigpipe();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    int code = app.exit(error);
    // CLI11 returns 0 for --help/--version; every real usage error is 2.
    return code == 0 ? 0 : 2;
  }
  return options.exitCode;
}
