// Backend::complete: the checks and bookkeeping every backend shares.
#include "llm/Backend.h"

#include "llm/RequestHash.h"

namespace ptxforge::llm {

Result<Completion> Backend::complete(const Request &request, const CallContext &context) {
  if (auto valid = validateRequest(request); !valid)
    return Error{valid.error().kind, kind() + ": " + valid.error().message};
  std::string hash = requestHash(request);
  Result<Completion> completion = completeValid(request, hash, context);
  if (completion) {
    completion->requestHash = hash;
    if (completion->backend.empty())
      completion->backend = kind();
  }
  return completion;
}

} // namespace ptxforge::llm
