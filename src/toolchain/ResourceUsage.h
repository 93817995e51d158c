// ResourceUsage: what ptxas/nvJitLink report about each compiled function
// (registers, spills, stack, shared/local/constant memory).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ptxforge::toolchain {

/// Resources of one compiled function, as the compiler's verbose log states
/// them. ptxas omits zero-valued items (no "smem" when none is used), so
/// absent counters read as 0; only `registers` (-1) and `constantBytes` (-1)
/// distinguish "not reported": CUDA 13's ptxas no longer prints cmem[0],
/// only nvJitLink's link summary does.
struct ResourceUsage {
  std::string function;    ///< symbol name as in the PTX (mangled)
  bool isEntry = false;    ///< a kernel (.entry) rather than a .func
  int registers = -1;      ///< registers per thread; -1 = not reported
  int barriers = 0;        ///< named barriers used
  int stackFrameBytes = 0; ///< this function's stack frame
  int cumulativeStackBytes = 0; ///< including callees (CUDA 12.x+ "cumulative stack size")
  int spillStoreBytes = 0;
  int spillLoadBytes = 0;
  int sharedBytes = 0;     ///< static shared memory declared by the function
  int localBytes = 0;      ///< "lmem" (older logs and nvJitLink's summary)
  int constantBytes = -1;  ///< cmem[0] (kernel parameters + driver constants); -1 = not reported
  std::map<int, int> otherConstantBanks; ///< cmem[N] for N != 0, bank -> bytes
  bool known = false;      ///< true once any resource line named this function
};

/// Module-wide figures that are not tied to one function.
struct ModuleResources {
  int globalBytes = 0;                    ///< "N bytes gmem"
  std::map<int, int> constantBanks;       ///< module-level cmem[N] (e.g. __constant__ data in cmem[3])
};

/// Everything a verbose log says about resources, per function in log order.
struct ResourceReport {
  std::vector<ResourceUsage> functions;
  ModuleResources module;

  /// The usage for `function`, or nullptr.
  const ResourceUsage *find(const std::string &function) const;
};

} // namespace ptxforge::toolchain
