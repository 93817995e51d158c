// `ptxforge serve`: the gate as an HTTP/JSON service (serve/Http.h, docs/serve.md).
#pragma once

#include <CLI/CLI.hpp>

namespace ptxforge::cli {

/// Adds `serve`; its callback sets `exitCode`.
void registerServeCommand(CLI::App &app, int &exitCode);

} // namespace ptxforge::cli
