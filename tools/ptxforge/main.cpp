// ptxforge: the command-line driver. A thin layer over the libraries: it reads
// input, calls them, and renders their results as text or JSON (Output.h).
//
// Exit codes: 0 no errors, 1 the input has errors, 2 usage or I/O problems.
#include "Commands.h"
#include "CorpusCommand.h"
#include "EvalCommands.h"
#include "ExportCommand.h"
#include "GrammarCommand.h"
#include "Output.h"
#include "RunCommand.h"
#include "ServeCommand.h"
#include "SolveCommands.h"
#include "TaskCommands.h"

#include <CLI/CLI.hpp>

int main(int argc, char **argv) {
  // Named, so that help says "ptxforge", not the path it was started by.
  CLI::App app{"ptxforge: lint, compile and verify PTX written by language models", "ptxforge"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(ptxforge::cli::versionString()));

  int exitCode = 0;
  ptxforge::cli::registerCommands(app, exitCode);
  ptxforge::cli::registerGateCommands(app, exitCode);
  ptxforge::cli::registerTaskCommands(app, exitCode);
  ptxforge::cli::registerSolveCommands(app, exitCode);
  ptxforge::cli::registerEvalCommands(app, exitCode);
  ptxforge::cli::registerRunCommand(app, exitCode);
  ptxforge::cli::registerServeCommand(app, exitCode);
  ptxforge::cli::registerCorpusCommand(app, exitCode);
  ptxforge::cli::registerExportCommand(app, exitCode);
  ptxforge::cli::registerGrammarCommand(app, exitCode);
  ptxforge::cli::ignoreSigpipe();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    // --help and --version are "errors" with exit code 0.
    if (error.get_exit_code() != 0 && ptxforge::cli::argumentsAskForJson(argc, argv))
      return ptxforge::cli::failParse(error);
    int code = app.exit(error);
    // CLI11 returns 0 for --help/--version; every real usage error is 2.
    return code == 0 ? 0 : 2;
  }
  return exitCode;
}
