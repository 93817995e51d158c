// Cublas: dlopen of libcublas and symbol resolution.
#include "exec/Cublas.h"

#include "exec/Executor.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#ifndef PTXFORGE_CUDA_ROOT
#define PTXFORGE_CUDA_ROOT "/usr/local/cuda"
#endif

namespace ptxforge::exec {

Cublas::~Cublas() {
  if (libraryHandle)
    dlclose(libraryHandle); // RTLD_NODELETE keeps it mapped: see load()
}

Result<std::shared_ptr<const Cublas>> Cublas::load() {
  std::vector<std::string> candidates;
  if (const char *override = std::getenv("PTXFORGE_LIBCUBLAS"); override && *override) {
    // An explicit choice is the only one tried: a baseline must not silently
    // come from another cuBLAS than the one asked for.
    candidates.emplace_back(override);
  } else {
    // The sonames of the CUDA 13 and 12 libraries (the symbols used here have
    // the same signatures in both), the unversioned development link, and last
    // the toolkit ptxforge was built against, for machines that do not
    // register it with the dynamic loader.
    for (const char *name :
         {"libcublas.so.13", "libcublas.so.12", "libcublas.so", PTXFORGE_CUDA_ROOT "/lib64/libcublas.so"})
      candidates.emplace_back(name);
  }

  auto library = std::make_shared<Cublas>();
  std::string attempts;
  for (const std::string &candidate : candidates) {
    // RTLD_NODELETE: cuBLAS carries a static CUDA runtime whose teardown runs
    // at process exit; unmapping the library before that would leave it
    // pointing at nothing.
    library->libraryHandle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (library->libraryHandle) {
      library->libraryName = candidate;
      break;
    }
    const char *reason = dlerror();
    attempts += (attempts.empty() ? "" : "; ") + std::string(reason ? reason : candidate + ": dlopen failed");
  }
  if (!library->libraryHandle)
    return makeExecError(ExecErrorKind::Unavailable,
                         "cuBLAS not found: " + attempts + " (set PTXFORGE_LIBCUBLAS to the library's path)");

  std::string missing;
  auto resolve = [&](auto &field, const char *symbol) {
    void *address = dlsym(library->libraryHandle, symbol);
    if (!address)
      missing += missing.empty() ? symbol : std::string(", ") + symbol;
    field = reinterpret_cast<std::remove_reference_t<decltype(field)>>(address);
  };
  resolve(library->create, "cublasCreate_v2");
  resolve(library->destroy, "cublasDestroy_v2");
  resolve(library->getVersion, "cublasGetVersion_v2");
  resolve(library->setStream, "cublasSetStream_v2");
  resolve(library->setPointerMode, "cublasSetPointerMode_v2");
  resolve(library->setMathMode, "cublasSetMathMode");
  resolve(library->getStatusName, "cublasGetStatusName");
  resolve(library->getStatusString, "cublasGetStatusString");
  resolve(library->sgemm, "cublasSgemm_v2");
  resolve(library->sgemv, "cublasSgemv_v2");
  resolve(library->sgemmStridedBatched, "cublasSgemmStridedBatched");
  resolve(library->gemmEx, "cublasGemmEx");
  if (!missing.empty())
    return makeExecError(ExecErrorKind::Unavailable,
                         "cuBLAS not usable: " + library->libraryName + " lacks " + missing + " (cuBLAS 11 or older?)");
  return std::shared_ptr<const Cublas>(std::move(library));
}

std::string Cublas::describe(cublasStatus_t status) const {
  const char *name = getStatusName ? getStatusName(status) : nullptr;
  const char *text = getStatusString ? getStatusString(status) : nullptr;
  std::string out = name ? name : "cuBLAS status " + std::to_string(static_cast<int>(status));
  if (text)
    out += std::string(" (") + text + ")";
  return out;
}

} // namespace ptxforge::exec
