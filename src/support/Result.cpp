// Names for ErrorKind values, used in messages and JSON output, and the one
// function that turns an Error into text.
#include "support/Result.h"

namespace ptxforge {

const char *errorKindName(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::InvalidInput: return "invalid-input";
  case ErrorKind::Io: return "io";
  case ErrorKind::Compile: return "compile";
  case ErrorKind::ToolMissing: return "tool-missing";
  case ErrorKind::Internal: return "internal";
  }
  return "internal";
}

std::string render(const Error &error) {
  std::string text;
  if (!error.code.empty()) text = error.code + ": ";
  text += error.message;
  if (error.line != 0) {
    text += " (line " + std::to_string(error.line);
    if (error.column != 0) text += ", column " + std::to_string(error.column);
    text += ")";
  }
  return text;
}

} // namespace ptxforge
