// How every ptxforge command ends: its result on stdout as text or as exactly
// one JSON document, and its errors rendered the same way (`{"error": ...}`
// on stdout under --format json, "ptxforge: error: ..." on stderr otherwise).
#pragma once

#include "support/Result.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace ptxforge::cli {

/// Exit codes: 0 no errors, 1 the input has errors, 2 usage, I/O or set-up problems.
constexpr int kExitOk = 0;
constexpr int kExitErrors = 1;
constexpr int kExitUsage = 2;

/// --format text|json.
void addFormatFlag(CLI::App *command, std::string &format);

/// The JSON document of a failed command: {"error": rendered text, "kind",
/// "code", "line" (when set), "exit_code"} plus the fields of `extra`.
nlohmann::json errorJson(const Error &error, int exitCode, const nlohmann::json &extra = nlohmann::json::object());

/// Reports `error` in `format` and returns `exitCode`: under json one document
/// on stdout, otherwise "ptxforge: error: TEXT" on stderr.
int fail(std::string_view format, const Error &error, int exitCode = kExitUsage,
         const nlohmann::json &extra = nlohmann::json::object());
/// The same for a message of the driver's own (ErrorKind::InvalidInput).
int fail(std::string_view format, std::string message, int exitCode = kExitUsage);

/// Whether argv asks for --format json: a usage error CLI11 finds before any
/// command runs is reported as JSON then too.
bool argumentsAskForJson(int argc, char **argv);

/// `--format json` usage errors: the JSON document of a CLI11 parse error.
int failParse(const CLI::ParseError &error);

} // namespace ptxforge::cli
