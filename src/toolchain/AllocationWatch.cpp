// AllocationWatch: malloc/calloc/realloc of ptxforge_compile_worker, wrapped
// so that a failed allocation (the worker runs under RLIMIT_AS) is noticed.
// Under the limit nvJitLink answers a huge `.global` initializer with a bare
// "ERROR 3: ptxjit" or crashes outright; only this hook tells "out of memory"
// from "compiler bug". Definitions in the executable take precedence over
// glibc's for every shared library (libnvJitLink imports malloc, calloc,
// realloc and posix_memalign from libc). Linked into the worker only.
#include <csignal>
#include <cstddef>
#include <unistd.h>

extern "C" {
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *pointer, size_t size);
}

namespace ptxforge::toolchain {

/// Set once an allocation has failed since the last reset; read by the worker loop.
volatile sig_atomic_t gAllocationFailed = 0;

namespace {

const char kMarker[] = "ptxforge-compile-worker: allocation failed\n"; // protocol::kAllocationFailedMarker

void noteFailure() {
  // No allocation here (we are inside malloc) and nothing but write(2): the
  // line reaches the parent even if the worker dies right after.
  if (!gAllocationFailed) {
    gAllocationFailed = 1;
    ssize_t ignored = ::write(STDERR_FILENO, kMarker, sizeof kMarker - 1);
    (void)ignored;
  }
}

} // namespace

} // namespace ptxforge::toolchain

extern "C" {

void *malloc(size_t size) noexcept {
  void *pointer = __libc_malloc(size);
  if (!pointer && size != 0)
    ptxforge::toolchain::noteFailure();
  return pointer;
}

void *calloc(size_t count, size_t size) noexcept {
  void *pointer = __libc_calloc(count, size);
  if (!pointer && count != 0 && size != 0)
    ptxforge::toolchain::noteFailure();
  return pointer;
}

void *realloc(void *old, size_t size) noexcept {
  void *pointer = __libc_realloc(old, size);
  if (!pointer && size != 0)
    ptxforge::toolchain::noteFailure();
  return pointer;
}

} // extern "C"
