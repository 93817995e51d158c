// Opening a vendor library (cuBLAS, cuBLASLt) with dlopen and resolving its
// symbols: what the baselines' loaders (Cublas.cpp, CublasLt.cpp) share.
#pragma once

#include "support/Result.h"

#include <initializer_list>
#include <string>

namespace ptxforge::exec {

/// A library opened with RTLD_NODELETE: the CUDA libraries carry a static
/// runtime whose teardown runs at process exit, and unmapping one before
/// that would leave the teardown pointing at nothing.
struct OpenedLibrary {
  void *handle = nullptr;
  std::string name; ///< what was opened, for messages
};

/// The first of `sonames` that opens; only $`env` when it is set (an explicit
/// choice is the only one tried: a baseline must not silently come from
/// another library than the one asked for). An Unavailable error naming
/// every attempt when none opens; `what` names the library ("cuBLAS").
Result<OpenedLibrary> openVendorLibrary(const char *env, std::initializer_list<const char *> sonames,
                                        const std::string &what);

/// dlsym of each symbol into a typed function pointer; the symbols not found
/// are collected for one message.
class SymbolResolver {
public:
  explicit SymbolResolver(void *handle) : handle_(handle) {}
  template <typename Field> void operator()(Field &field, const char *symbol) {
    field = reinterpret_cast<Field>(lookup(symbol));
  }
  /// The missing symbols, comma-separated; empty when every one resolved.
  const std::string &missing() const { return missing_; }

private:
  void *lookup(const char *symbol);
  void *handle_;
  std::string missing_;
};

/// "NAME (text)" from a status's name and text (either may be null; then
/// `fallback` names it).
std::string describeStatus(const char *name, const char *text, const std::string &fallback);

} // namespace ptxforge::exec
