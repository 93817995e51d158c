// Result<T>: the project's one error model for expected failures (bad input,
// a failed compile, a missing tool). Modeled on LLVM's Expected<T>; C++20 has
// no std::expected, so this is a small variant-based stand-in.
#pragma once

#include <cassert>
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

/// An expected failure: its kind and a message that names the failing call or
/// input and carries the underlying library's own log where there is one.
struct Error {
  ErrorKind kind = ErrorKind::Internal;
  std::string message;
};

inline Error makeError(ErrorKind kind, std::string message) { return Error{kind, std::move(message)}; }

/// Either a value or an Error. Check `ok()` (or `operator bool`) before `value()`.
template <typename T> class Result {
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
template <> class Result<void> {
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
