// ptxforge_compile_worker: compiles untrusted PTX for compilePtx in a process
// of its own, so that a compiler crash, hang or memory blow-up ends this
// process and not the caller. Serves requests of CompileProtocol.h on the
// socket given as --fd=N until the parent closes it. Each compile runs under
// RLIMIT_AS (memory) and RLIMIT_FSIZE (ptxas output files), both inherited by
// ptxas; the parent owns the wall-clock deadline and kills this process group.
#include "toolchain/CompileBackend.h"
#include "toolchain/CompileProtocol.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ptxforge::toolchain {
#if PTXFORGE_SANITIZED
// Sanitizer builds: ASan intercepts malloc and needs terabytes of shadow
// address space, so there is no malloc hook and no RLIMIT_AS; a memory blow-up
// is stopped by the parent's deadline only.
volatile sig_atomic_t gAllocationFailed = 0;
constexpr bool kLimitAddressSpace = false;
#else
extern volatile sig_atomic_t gAllocationFailed; // AllocationWatch.cpp
constexpr bool kLimitAddressSpace = true;
#endif
} // namespace ptxforge::toolchain

namespace {

using namespace ptxforge;
using namespace ptxforge::toolchain;

/// Sets the soft limit of `resource` (0 = unlimited, up to the hard limit).
void setSoftLimit(int resource, uint64_t bytes) {
  rlimit limit{};
  if (::getrlimit(resource, &limit) != 0)
    return;
  rlim_t wanted = bytes == 0 ? RLIM_INFINITY : static_cast<rlim_t>(bytes);
  if (limit.rlim_max != RLIM_INFINITY && (wanted == RLIM_INFINITY || wanted > limit.rlim_max))
    wanted = limit.rlim_max;
  limit.rlim_cur = wanted;
  ::setrlimit(resource, &limit);
}

void truncateLog(std::string &log) {
  if (log.size() <= protocol::kMaxLogBytes)
    return;
  const size_t dropped = log.size() - protocol::kMaxLogBytes;
  log.resize(protocol::kMaxLogBytes);
  log += "\n[log truncated by ptxforge_compile_worker: " + std::to_string(dropped) + " more bytes]\n";
}

protocol::Response serve(const protocol::Request &request) {
  // The ptxas backend writes the PTX to a temp file itself, so the file-size
  // limit must leave room for it; it exists to stop ptxas writing a huge cubin.
  const uint64_t fileLimit =
      request.maxOutputBytes == 0 ? 0 : std::max<uint64_t>(request.maxOutputBytes, request.ptx.size() + (1u << 20));
  setSoftLimit(RLIMIT_FSIZE, fileLimit);
  if (kLimitAddressSpace)
    setSoftLimit(RLIMIT_AS, request.memoryLimitBytes);
  // A backstop for a parent that died mid-compile: the parent's deadline
  // normally fires first and kills this whole process group.
  if (request.timeoutMs > 0)
    ::alarm(request.timeoutMs / 1000 + 10);
  gAllocationFailed = 0;

  Result<RawCompile> raw = runBackend(request.ptx, request.backend);

  ::alarm(0);
  protocol::Response response;
  response.allocationFailed = gAllocationFailed != 0;
  // Answering needs memory of its own (a copy of the cubin): lift the limit.
  if (kLimitAddressSpace)
    setSoftLimit(RLIMIT_AS, 0);
  if (!raw) {
    response.isError = true;
    response.errorKind = raw.error().kind;
    response.errorMessage = raw.error().message;
    return response;
  }
  response.raw = std::move(*raw);
  truncateLog(response.raw.infoLog);
  truncateLog(response.raw.errorLog);
  if (request.maxOutputBytes != 0 && response.raw.cubin.size() > request.maxOutputBytes) {
    response.cubinBytesDropped = response.raw.cubin.size();
    response.raw.cubin.clear();
    response.raw.cubin.shrink_to_fit();
  }
  return response;
}

} // namespace

int main(int argc, char **argv) {
  int socket = -1;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--fd=", 5) == 0)
      socket = std::atoi(argv[i] + 5);
    else if (std::strncmp(argv[i], "--tmpdir=", 9) == 0)
      ::setenv("TMPDIR", argv[i] + 9, 1); // the parent's scratch folder, removed when this worker ends
  if (socket < 0) {
    std::fprintf(stderr, "usage: ptxforge_compile_worker --fd=N (started by ptxforge's compilePtx, not by hand)\n");
    return 2;
  }
  while (true) {
    // The PTX was size-checked by the parent; the cap here only guards the codec.
    Result<std::vector<uint8_t>> frame = protocol::readFrameBlocking(socket, uint64_t{1} << 32);
    if (!frame) {
      if (frame.error().message.empty())
        return 0; // the parent closed the socket: done
      std::fprintf(stderr, "ptxforge_compile_worker: %s\n", frame.error().message.c_str());
      return 3;
    }
    Result<protocol::Request> request = protocol::decodeRequest(*frame);
    if (!request) {
      std::fprintf(stderr, "ptxforge_compile_worker: %s\n", request.error().message.c_str());
      return 3;
    }
    const protocol::Response response = serve(*request);
    if (Result<void> sent = protocol::writeFrame(socket, protocol::encode(response)); !sent)
      return 0; // the parent is gone
  }
}
