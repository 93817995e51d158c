// The emulator's compact form of a PTX module, decoded once at load: a flat
// array of instructions per module in which every operand is a register-file
// slot (immediates and special registers are slots too, filled when a warp is
// created), every branch target a program counter, every memory operand a
// (base slot, offset, state space) triple, and every instruction carries the
// function that executes it for a warp. Nothing on the execution path looks
// up a string.
#pragma once

#include "emu/Types.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace ptxforge::emu {

constexpr unsigned kWarpSize = 32;
using LaneMask = uint32_t;
constexpr uint32_t kNoSlot = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kNoPc = std::numeric_limits<uint32_t>::max();

/// Memory state spaces as the emulator addresses them.
enum class Space : uint8_t {
  Generic, ///< a generic address: the window it falls in picks the space
  Global,
  Shared,
  Local,   ///< per-thread: locals, the stack frames of .func calls
  Const,
  Param,   ///< the kernel's parameter buffer (read-only)
};
const char *spaceName(Space space);

/// Where the generic address windows start. Global buffers live at
/// kGlobalBase and above; a generic address below kGlobalBase inside one of the
/// windows is a shared, local, const or parameter address.
constexpr uint64_t kWindowSize = uint64_t(1) << 32;
constexpr uint64_t kSharedWindow = uint64_t(0x1000) << 32;
constexpr uint64_t kLocalWindow = uint64_t(0x2000) << 32;
constexpr uint64_t kConstWindow = uint64_t(0x3000) << 32;
constexpr uint64_t kParamWindow = uint64_t(0x4000) << 32;
constexpr uint64_t kGlobalBase = uint64_t(0x7000) << 32;

/// One register operand. `regBits` is the declared width of the register (8..64,
/// 1 for predicates; 0 for constant and special slots), which loads and
/// conversions into wider registers extend to.
struct Operand {
  uint32_t slot = kNoSlot;
  uint8_t regBits = 0;
  bool negate = false; ///< `!%p` on a predicate source
  uint16_t column = 0; ///< 1-based PTX column of the operand (0: unknown), for findings
};

/// Instruction classes the interpreter handles itself (control flow and
/// synchronization); everything else is Op::Exec and runs `Inst::exec`.
enum class Op : uint8_t {
  Exec,      ///< a data instruction: call exec for the active lanes
  Bra,       ///< target = pc
  Exit,      ///< exit, and ret in the entry function
  Ret,       ///< return from a .func
  Call,      ///< target = callee entry pc; see CallInfo
  Bar,       ///< bar.sync / barrier.sync / bar.arrive / bar.red (exec fills the reduction)
  WarpSync,  ///< a warp collective (shfl/vote/match/redux/bar.warp.sync): exec runs once convergence holds
  Trap,      ///< trap: the kernel aborts
  Nop,       ///< membar/fence/prefetch/pragmas: ordering only (the emulator is sequentially consistent)
  MbarrierWait, ///< mbarrier.test_wait/try_wait: exec sets the result; a failed wait lets the CTA's other warps run
  ClusterBarrier, ///< barrier.cluster.arrive (sub 0) / .wait (sub 1): every live thread of the cluster arrives
  Wgmma,     ///< wgmma.mma_async: the warp waits until the 4 warps of its warpgroup issued it, then it runs
};

struct Warp;
struct Inst;
/// Executes one instruction for the lanes in `active` (guard already applied).
using ExecFn = void (*)(Warp &warp, const Inst &inst, LaneMask active);

/// Bit flags of Inst::flags.
enum InstFlag : uint16_t {
  kFtz = 1 << 0,
  kSat = 1 << 1,
  kReadsClock = 1 << 5, ///< reads %clock/%clock64/%globaltimer: the interpreter refreshes their slots first
  kNaN = 1 << 7,        ///< .NaN on min/max
  kRelu = 1 << 8,
  kSigned = 1 << 9,     ///< family-specific meaning (e.g. mul.wide.s32)
  kHigh = 1 << 10,      ///< .hi
  kWide = 1 << 11,      ///< .wide
  kCarryIn = 1 << 12,   ///< addc/subc/madc
  kCarryOut = 1 << 13,  ///< .cc
  kTrans = 1 << 14,     ///< ldmatrix .trans
  kBarArrive = 1 << 15, ///< bar.arrive (does not wait)
};

/// Bit flags of Inst::memorySync: how a memory instruction orders memory
/// between CTAs (for the cross-CTA racecheck).
enum MemorySync : uint8_t {
  kSyncStrong = 1 << 0,  ///< atom/red, or ld/st .volatile/.relaxed/.acquire/.release/.mmio
  kSyncRelease = 1 << 1, ///< .release or .acq_rel at gpu/sys scope: a fence comes with it
  kSyncFence = 1 << 2,   ///< membar.gl/.sys, fence.sc/.acq_rel at gpu/sys scope
};

constexpr unsigned kMaxOperands = 16;

struct Inst {
  ExecFn exec = nullptr;
  Op op = Op::Exec;
  DType type = DType::None;  ///< the instruction type (.f32 in add.f32; destination of cvt)
  DType type2 = DType::None; ///< a second type: cvt/ld source type, setp comparison...
  Rounding rounding = Rounding::None;
  uint8_t sub = 0;   ///< family-specific sub-operation (compare op, shfl mode, atomic op...)
  uint8_t sub2 = 0;  ///< family-specific (setp's boolean combine op, vector width, ...)
  uint16_t flags = 0;
  uint8_t memorySync = 0;       ///< MemorySync bits
  Space space = Space::Generic; ///< memory instructions
  uint8_t ndst = 0, nsrc = 0;   ///< ops[0..ndst) are destinations, then nsrc sources
  uint8_t accessBytes = 0;      ///< bytes per element of a memory access
  /// Memory operand `[addrSlot + offset]` (addrSlot == kNoSlot: an absolute address).
  uint32_t addrSlot = kNoSlot;
  int64_t offset = 0;
  /// A second memory operand (the global source of cp.async).
  uint32_t addrSlot2 = kNoSlot;
  int64_t offset2 = 0;
  uint32_t target = kNoPc; ///< branch target / callee entry
  uint32_t guard = kNoSlot; ///< guard predicate slot
  bool guardNegated = false;
  /// initcheck: every source is a use that matters (a store's value, a
  /// comparison); other data instructions pass a never-written value on to
  /// their destinations, and only such a use reports it. Addresses, guards
  /// and the operands of control and warp instructions always matter.
  bool initSink = false;
  /// st: the bytes written are the sources, accessBytes each (racecheck lets
  /// a store that leaves shared memory as it was race with another).
  bool storesSources = false;
  uint16_t guardColumn = 0, addrColumn = 0; ///< PTX columns of the guard and the address (0: unknown)
  uint32_t line = 0;       ///< 1-based PTX line
  uint32_t aux = 0;        ///< index into Program::calls (Call) / family-specific
  Operand ops[kMaxOperands];

  const Operand &dst(unsigned i) const { return ops[i]; }
  const Operand &src(unsigned i) const { return ops[ndst + i]; }
};

/// A call site: the argument and return-value copies into and out of the
/// callee's parameter frame (all in the calling thread's local memory).
struct CallInfo {
  struct Copy {
    uint32_t from = 0, to = 0, bytes = 0; ///< local-memory offsets
  };
  std::vector<Copy> arguments; ///< caller's call-site .param → callee's params, before the call
  std::vector<Copy> results;   ///< callee's return params → caller's call-site .param, at ret
};

/// A special register materialized per warp.
enum class Special : uint8_t {
  TidX, TidY, TidZ, NtidX, NtidY, NtidZ, CtaidX, CtaidY, CtaidZ, NctaidX, NctaidY, NctaidZ,
  LaneId, WarpId, NWarpId, SmId, NSmId, GridId, LaneMaskEq, LaneMaskLt, LaneMaskLe, LaneMaskGt, LaneMaskGe,
  DynamicSmemSize, TotalSmemSize, Clock, Clock64, GlobalTimer,
  // Clusters (filled only for programs that read them: Program::usesClusterSpecials).
  ClusterCtaidX, ClusterCtaidY, ClusterCtaidZ, ClusterNctaidX, ClusterNctaidY, ClusterNctaidZ,
  ClusterIdX, ClusterIdY, ClusterIdZ, NclusterIdX, NclusterIdY, NclusterIdZ, ClusterCtarank, ClusterNctarank,
  IsExplicitCluster,
  Count
};

/// One kernel (.entry) of a module.
struct KernelDesc {
  std::string name;
  uint32_t entryPc = 0;
  uint32_t paramBytes = 0; ///< size of its parameter buffer as the ABI lays it out
  struct Param {
    std::string name;
    uint32_t offset = 0, bytes = 0;
  };
  std::vector<Param> params;
  uint32_t maxThreads = 0;  ///< .maxntid / .reqntid product; 0 when absent
  uint32_t reqntid[3] = {0, 0, 0};
  uint32_t registerCount = 0; ///< declared registers (a rough stand-in for ptxas's count)
  /// Static shared memory of its CTAs: the module's and .func functions'
  /// .shared variables, then the kernel's own (other kernels' overlap them).
  uint32_t staticSharedBytes = 0;
  /// .reqnctapercluster (1,1,1 with .explicitcluster alone: the launch would
  /// give the shape, and the emulator's launches have none); 0 without either.
  uint32_t clusterDim[3] = {0, 0, 0};
  bool explicitCluster = false;
  uint32_t clusterSize() const { return clusterDim[0] ? clusterDim[0] * clusterDim[1] * clusterDim[2] : 1; }
};

/// A decoded module.
struct Program {
  std::vector<Inst> code;
  std::vector<std::string> text; ///< the instruction as written (one per pc), for reports
  std::vector<std::string> slotNames; ///< register names by slot (empty for other slots), for reports
  std::vector<CallInfo> calls;
  std::vector<KernelDesc> kernels;
  /// Operand lists longer than Inst::ops holds (wgmma's accumulators), by Inst::aux.
  std::vector<std::vector<Operand>> operandLists;

  /// Slots: [0, constSlots) hold immediates and symbol addresses (the same in
  /// every lane), [constSlots, constSlots + Special::Count) the special
  /// registers, the rest registers. constValues[i] is constant slot i's value.
  uint32_t slotCount = 0;
  uint32_t constSlots = 0;
  std::vector<uint64_t> constValues;
  uint32_t specialSlot(Special s) const { return constSlots + static_cast<uint32_t>(s); }

  /// Per-CTA shared memory: static variables first (staticSharedBytes is
  /// the largest kernel's, KernelDesc::staticSharedBytes each kernel's);
  /// dynamic shared memory (`.extern .shared`) starts at dynamicSharedOffset.
  uint32_t staticSharedBytes = 0;
  uint32_t dynamicSharedOffset = 0;
  uint32_t dynamicSharedAlign = 16;
  /// The shared bytes a CTA of `kernel` has with `dynamicBytes` of dynamic
  /// shared memory; without any, the kernel's static part (aligned as the
  /// dynamic part would start).
  uint64_t sharedBytesOf(const KernelDesc &kernel, uint64_t dynamicBytes) const {
    uint64_t own = (uint64_t(kernel.staticSharedBytes) + dynamicSharedAlign - 1) / dynamicSharedAlign * dynamicSharedAlign;
    return dynamicBytes ? std::max<uint64_t>(dynamicSharedOffset + dynamicBytes, kernel.staticSharedBytes) : own;
  }
  /// Per-thread local memory: .local variables and .func parameter frames.
  uint32_t localBytes = 0;
  /// The .const bank (module .const variables with their initializers).
  std::vector<uint8_t> constBank;
  /// Module .global variables: one buffer, initialized at load; its address is
  /// fixed by the executor (globalImageBase) before decoding finishes.
  std::vector<uint8_t> globalImage;
  uint64_t globalImageBase = 0;
  /// The program uses mbarriers or bulk copies (each CTA gets AsyncState,
  /// Async.h), and copies shared memory out in bulk (generic shared writes
  /// are stamped for the proxy-fence check).
  bool usesAsync = false;
  bool bulkReadsShared = false;
  /// The program reads %cluster_*/%clusterid/%nclusterid/%is_explicit_cluster.
  bool usesClusterSpecials = false;
  /// The program has wgmma.mma_async (warpgroups meet at it).
  bool usesWgmma = false;
  /// Module-scope .global variables: name -> (offset in globalImage, bytes).
  std::map<std::string, std::pair<uint64_t, uint64_t>> globalVariables;
};

} // namespace ptxforge::emu
