// See Output.h.
#include "Output.h"

#include <fmt/format.h>

#include <iostream>

namespace ptxforge::cli {

void addFormatFlag(CLI::App *command, std::string &format) {
  command->add_option("--format", format, "Output format: text or json (one JSON document, errors included)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

nlohmann::json errorJson(const Error &error, int exitCode, const nlohmann::json &extra) {
  nlohmann::json out = {{"error", render(error)}, {"kind", errorKindName(error.kind)}};
  if (!error.code.empty()) out["code"] = error.code;
  if (error.line != 0) out["line"] = error.line;
  out["exit_code"] = exitCode;
  for (const auto &[key, value] : extra.items()) out[key] = value;
  return out;
}

int fail(std::string_view format, const Error &error, int exitCode, const nlohmann::json &extra) {
  if (format == "json") {
    std::cout << errorJson(error, exitCode, extra).dump(2) << '\n';
  } else {
    std::cout.flush(); // whatever was printed stays before the error on a shared terminal
    fmt::print(stderr, "ptxforge: error: {}\n", render(error));
  }
  return exitCode;
}

int fail(std::string_view format, std::string message, int exitCode) {
  return fail(format, makeError(ErrorKind::InvalidInput, std::move(message)), exitCode);
}

bool argumentsAskForJson(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view argument = argv[i];
    if (argument == "--format=json") return true;
    if (argument == "--format" && i + 1 < argc && std::string_view(argv[i + 1]) == "json") return true;
  }
  return false;
}

int failParse(const CLI::ParseError &error) {
  return fail("json", makeError(ErrorKind::InvalidInput, "usage", error.what()), kExitUsage);
}

} // namespace ptxforge::cli
