// Names for ErrorKind values, used in messages and JSON output.
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

} // namespace ptxforge
