// VendorLibrary: dlopen of a vendor library from its candidate names, and
// symbol resolution.
#include "exec/VendorLibrary.h"

#include "exec/Executor.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

namespace ptxforge::exec {

Result<OpenedLibrary> openVendorLibrary(const char *env, std::initializer_list<const char *> sonames,
                                        const std::string &what) {
  std::vector<std::string> candidates;
  if (const char *override = std::getenv(env); override && *override) candidates.emplace_back(override);
  else candidates.assign(sonames.begin(), sonames.end());
  std::string attempts;
  for (const std::string &candidate : candidates) {
    if (void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE))
      return OpenedLibrary{handle, candidate};
    const char *reason = dlerror();
    attempts += (attempts.empty() ? "" : "; ") + std::string(reason ? reason : candidate + ": dlopen failed");
  }
  return makeExecError(ExecErrorKind::Unavailable,
                       what + " not found: " + attempts + " (set " + env + " to the library's path)");
}

void *SymbolResolver::lookup(const char *symbol) {
  void *address = dlsym(handle_, symbol);
  if (!address) missing_ += missing_.empty() ? symbol : std::string(", ") + symbol;
  return address;
}

std::string describeStatus(const char *name, const char *text, const std::string &fallback) {
  std::string out = name ? name : fallback;
  if (text) out += std::string(" (") + text + ")";
  return out;
}

} // namespace ptxforge::exec
