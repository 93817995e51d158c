// `ptxforge corpus build|stats`: CUDA -> PTX training corpora (corpus/Builder.h,
// docs/corpus.md).
#pragma once

#include <CLI/CLI.hpp>

namespace ptxforge::cli {

/// Adds `corpus` with its `build` and `stats` subcommands; their callbacks set `exitCode`.
void registerCorpusCommand(CLI::App &app, int &exitCode);

} // namespace ptxforge::cli
