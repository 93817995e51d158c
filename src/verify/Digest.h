// Digest: a keyed digest of a device buffer computed on the device, so that
// the gate can confirm that a launch left an input unchanged without copying
// the input back to the host (on a GPU, that copy and its comparison were most
// of a check's time).
//
// digest(bytes, key) = sum over i of mix(key ^ (i << 32 | w_i)) mod 2^64,
// where w_i is the i-th little-endian 32-bit word of the bytes (the last one
// zero-padded) and mix is SplitMix64's finalizer, a bijection. The key is
// drawn per check and never reaches the candidate, so a kernel that changes an
// input cannot arrange for the digest to come out the same; a mismatch sends
// the gate back to the byte-by-byte comparison for its report.
#pragma once

#include "exec/Executor.h"
#include "support/Result.h"

#include <cstdint>
#include <memory>
#include <string>

namespace ptxforge::verify {

/// The digest of host bytes, computed in chunks on all cores.
uint64_t hostDigest(const void *data, uint64_t bytes, uint64_t key);

/// The PTX of the digest kernel (entry `ptxforge_gate_digest`).
const std::string &digestKernelPtx();

/// The digest kernel loaded into one executor, with its result buffer.
class DeviceDigest {
public:
  /// Loads the kernel: compiled for `arch` (once per process) on cubin
  /// executors, as PTX on the emulator.
  static Result<std::unique_ptr<DeviceDigest>> load(exec::Executor &executor, const std::string &arch);
  ~DeviceDigest();
  DeviceDigest(const DeviceDigest &) = delete;
  DeviceDigest &operator=(const DeviceDigest &) = delete;

  /// The digest of [offset, offset + bytes) of `buffer`.
  Result<uint64_t> of(exec::BufferHandle buffer, uint64_t offset, uint64_t bytes, uint64_t key);

private:
  DeviceDigest(exec::Executor &executor) : executor_(executor) {}
  exec::Executor &executor_;
  exec::ModuleHandle module_{};
  exec::KernelHandle kernel_{};
  exec::DeviceBuffer result_;
};

} // namespace ptxforge::verify
