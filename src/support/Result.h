// Result<T>: the project's one error model for expected failures (bad input,
// a failed compile, a missing tool). Modeled on LLVM's Expected<T> (and, like
// it, [[nodiscard]]: a dropped failure is a warning); C++20 has no
// std::expected, so this is a small variant-based stand-in. The Error itself
// takes DuckDB's ErrorData shape: kind, code, message and location as parts.
#pragma once

#include <cassert>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace ptxforge {

/// Broad category of an expected failure. Callers branch on the kind; the
/// message is for people (and models).
enum class ErrorKind {
  InvalidInput,  ///< malformed user/model input (PTX, options, files)
  Io,            ///< file or process I/O
  Compile,       ///< the compiler rejected the input
  ToolMissing,   ///< an optional external tool or library is not available
  Internal,      ///< a library call failed in a way the caller cannot fix
};

const char *errorKindName(ErrorKind kind);

/// An expected failure, kept in parts (DuckDB's ErrorData): what went wrong
/// broadly (`kind`), a stable machine-readable `code`, the raw `message` a
/// person reads, and where, when the failure is about a place in an input.
/// Code that branches reads `kind` or `code`, never the message; render()
/// builds the displayed text from the parts.
struct Error {
  ErrorKind kind = ErrorKind::Internal;
  /// Stable kebab-case name ("crashed", "timeout", "emu-unsupported",
  /// "file-not-found"); empty when the kind says all a caller needs. Shown
  /// first by render(), so a code doubles as the headline of the message.
  std::string code;
  /// What happened, naming the failing call or input and carrying the
  /// underlying library's own log where there is one. Without the code and
  /// without the location: render() adds those.
  std::string message;
  uint32_t line = 0;   ///< 1-based line in the input the error is about; 0 = none
  uint32_t column = 0; ///< 1-based column; 0 = none (or the whole line)
  /// The underlying library's own name for the failure where it has one
  /// ("CUDA_ERROR_ILLEGAL_ADDRESS"): a field to switch on, where the message
  /// is words to read. Empty when none.
  std::string cause;
};

/// An Error with no code and no location.
inline Error makeError(ErrorKind kind, std::string message) {
  Error error;
  error.kind = kind;
  error.message = std::move(message);
  return error;
}

/// An Error with a stable code (and, optionally, a location).
inline Error makeError(ErrorKind kind, std::string code, std::string message, uint32_t line = 0,
                       uint32_t column = 0) {
  Error error;
  error.kind = kind;
  error.code = std::move(code);
  error.message = std::move(message);
  error.line = line;
  error.column = column;
  return error;
}

/// The text people read: "<code>: <message> (line L[, column C])", each part
/// present only when set. The one place an Error becomes text.
std::string render(const Error &error);

/// Either a value or an Error. Check `ok()` (or `operator bool`) before `value()`.
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : storage_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : storage_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return storage_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T &value() & {
    assert(ok() && "Result::value() on an error");
    return std::get<0>(storage_);
  }
  const T &value() const & {
    assert(ok() && "Result::value() on an error");
    return std::get<0>(storage_);
  }
  T &&value() && {
    assert(ok() && "Result::value() on an error");
    return std::get<0>(std::move(storage_));
  }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }

  const Error &error() const {
    assert(!ok() && "Result::error() on a value");
    return std::get<1>(storage_);
  }

private:
  std::variant<T, Error> storage_;
};

/// Result of an operation that produces no value.
template <> class [[nodiscard]] Result<void> {
public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), failed_(true) {}
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error &error() const {
    assert(failed_ && "Result<void>::error() on success");
    return error_;
  }

private:
  Error error_;
  bool failed_ = false;
};

} // namespace ptxforge
