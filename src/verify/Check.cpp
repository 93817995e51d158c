// The verification gate. The protocol follows DESIGN.md and docs/verification.md:
// a fresh random seed per check (inputs, poison, guard bytes, drawn shapes and
// the timing schedule all derive from it); outputs pre-filled with a poison
// (a NaN with a random payload, or a random integer pattern) before every
// launch, timed ones included; guard zones of a random byte around every
// buffer and canary allocations beside them; inputs compared with what was
// generated after every checked launch; the candidate's module variables
// restored before every launch, and probed when a launch leaves them changed;
// the candidate never sees the reference's buffers; several trials of fresh
// inputs over the task's shapes plus shapes drawn at random; timing that
// interleaves candidate and baseline with the L2 flushed, a schedule drawn per
// check and the outputs of timed launches verified; results beyond the
// machine's measured ceilings rejected; on a GPU machine, the emulator's
// sanitizers as a second opinion.
#include "verify/Check.h"
#include "verify/Profile.h"
#include "verify/TensorMapArgument.h"

#include "verify/Ceilings.h"
#include "verify/DeviceGate.h"
#include "verify/Digest.h"

#include "ptx/Lint.h"
#include "ptx/Parser.h"
#include "tasks/Inputs.h"
#include "tasks/Reference.h"
#include "toolchain/Json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <type_traits>
#include <utility>

namespace ptxforge::verify {

namespace {

/// An allocator that leaves new elements uninitialized: a buffer about to be
/// overwritten by a download is not zeroed first (a pass over every output
/// byte, and on one thread the first touch of every page).
template <typename T> struct DefaultInitAllocator : std::allocator<T> {
  template <typename U> struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  using std::allocator<T>::allocator;
  template <typename U> void construct(U *p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void *>(p)) U;
  }
  template <typename U, typename... Args> void construct(U *p, Args &&...args) {
    ::new (static_cast<void *>(p)) U(std::forward<Args>(args)...);
  }
};
/// One buffer's bytes as downloaded, and every param's (empty for non-outputs).
using Bytes = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;
/// One output's data after a launch: on the host (the emulator's path), or
/// where it lies on the device (the device gate's, verify/DeviceGate.h).
struct OutputData {
  Bytes host;
  bool onDevice = false;
  exec::BufferHandle buffer; ///< the data starts at `offset`
  uint64_t offset = 0, bytes = 0;
  /// The reference's: the keyed digest of its bytes when they were made, and
  /// the buffer kept alive for the comparisons of later launches.
  uint64_t digest = 0;
  std::shared_ptr<exec::DeviceBuffer> owner;
};
using Outputs = std::vector<OutputData>;

/// Canary allocations made just before and after the candidate's buffers: a
/// write that jumps over a guard zone lands in one of them.
constexpr uint64_t kCanaryBytes = 64 * 1024;

bool isPureInput(const tasks::ParamSpec &param) { return param.isPointer && param.role == tasks::ParamRole::Input; }

using Clock = std::chrono::steady_clock;
double millisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// Everything a kernel could key on to tell a test from real use, drawn per
/// check from its seed.
struct CheckSecrets {
  uint64_t seed = 0;
  uint8_t guardByte = 0;
  uint8_t canaryByte = 0;
  uint64_t poisonSalt = 0;
  /// Bytes of guard zone on each side of every buffer: a multiple of 256 (the
  /// data stays as aligned as cuMemAlloc's own pointers, so vectorized
  /// candidates are not punished) from 512 to 2048, so that where a buffer
  /// starts within its allocation tells a kernel nothing.
  uint64_t guardBytes = 1024;
  uint64_t digestKey = 0; ///< keys the device digest of inputs (verify/Digest.h)

  explicit CheckSecrets(uint64_t checkSeed) : seed(checkSeed) {
    uint64_t state = checkSeed ^ 0x5ec2e75ull;
    // Never 0x00 or 0xff: those are what a zeroing or all-ones write leaves.
    guardByte = static_cast<uint8_t>(1 + tasks::splitmix64(state) % 254);
    canaryByte = static_cast<uint8_t>(1 + tasks::splitmix64(state) % 254);
    poisonSalt = tasks::splitmix64(state);
    guardBytes = 512 + 256 * (tasks::splitmix64(state) % 7);
    digestKey = tasks::splitmix64(state);
  }

  /// The guard byte of the buffer of parameter `index`: a different one for
  /// each buffer (97 is coprime with 254), so that a kernel that runs past an
  /// input's end and copies what it reads past an output's end (a copy or an
  /// elementwise kernel without its bounds check) writes bytes the output's
  /// guard zone does not hold.
  uint8_t guardByteOf(size_t index) const {
    return static_cast<uint8_t>(1 + (guardByte - 1 + 97 * (index % 254)) % 254);
  }
};

/// One element of the poison an output of `type` holds before a launch, a new
/// one per (check, parameter, trial), of three kinds in turn so that no single
/// value tells a test from real use: a NaN with a random sign and payload for
/// floats (a random pattern for integers), which no finite reference value
/// equals; zeros, what freshly allocated memory often holds; and a random
/// finite value of magnitude 64 to 4096 (a random pattern for integers).
std::vector<uint8_t> poisonElement(tasks::ElementType type, uint64_t salt, std::string_view param, int trial) {
  uint64_t state = tasks::bufferSeed(salt, param, trial);
  uint64_t bits = tasks::splitmix64(state);
  const uint64_t exponentStep = tasks::splitmix64(state) % 6; // 2^6 .. 2^11
  std::vector<uint8_t> element(tasks::elementSize(type));
  const int kind = ((trial % 3) + 3) % 3;
  if (kind == 1) {
    bits = 0;
  } else if (kind == 0) {
    switch (type) {
    case tasks::ElementType::F64: bits = (bits & 0x800f'ffff'ffff'ffffull) | 0x7ff0'0000'0000'0001ull; break;
    case tasks::ElementType::F32: bits = (bits & 0x807f'ffffull) | 0x7f80'0001ull; break;
    case tasks::ElementType::F16: bits = (bits & 0x83ffull) | 0x7c01ull; break;
    case tasks::ElementType::BF16: bits = (bits & 0x807full) | 0x7f81ull; break;
    case tasks::ElementType::E4M3: bits = (bits & 0x80ull) | 0x7full; break; // e4m3 has one NaN per sign
    default: break;
    }
  } else {
    switch (type) {
    case tasks::ElementType::F64: bits = (bits & 0x800f'ffff'ffff'ffffull) | ((1023 + 6 + exponentStep) << 52); break;
    case tasks::ElementType::F32: bits = (bits & 0x807f'ffffull) | ((127 + 6 + exponentStep) << 23); break;
    case tasks::ElementType::F16: bits = (bits & 0x83ffull) | ((15 + 6 + exponentStep) << 10); break;
    case tasks::ElementType::BF16: bits = (bits & 0x807full) | ((127 + 6 + exponentStep) << 7); break;
    case tasks::ElementType::E4M3: bits = (bits & 0x83ull) | ((7 + 6 + exponentStep % 3) << 3); break; // 64 .. 352
    default: break;
    }
  }
  std::memcpy(element.data(), &bits, element.size());
  return element;
}

/// Fills `bytes` with repeats of `pattern` (a whole number of them), by
/// doubling copies rather than one small copy per element.
void fillPattern(uint8_t *data, uint64_t bytes, const std::vector<uint8_t> &pattern) {
  const uint64_t whole = bytes - bytes % pattern.size();
  if (whole == 0) return;
  std::memcpy(data, pattern.data(), pattern.size());
  for (uint64_t done = pattern.size(); done < whole;) {
    const uint64_t chunk = std::min(done, whole - done);
    std::memcpy(data + done, data, chunk);
    done += chunk;
  }
}

std::optional<Verdict> verdictForExecError(const Error &error) {
  switch (exec::execErrorKindOf(error)) {
  case exec::ExecErrorKind::Crashed: return Verdict::Crashed;
  case exec::ExecErrorKind::Timeout: return Verdict::Timeout;
  case exec::ExecErrorKind::LaunchError:
  case exec::ExecErrorKind::OutOfResources: return Verdict::LaunchError;
  case exec::ExecErrorKind::ModuleLoad: return Verdict::CompileError;
  default: return std::nullopt;
  }
}

/// A PTX parameter's byte size for a .param type name ("u64" → 8); 0 if unknown.
size_t ptxTypeBytes(const std::string &type) {
  if (type == "pred") return 0;
  size_t digits = type.find_first_of("0123456789");
  if (digits == std::string::npos) return 0;
  size_t bits = static_cast<size_t>(std::atoi(type.c_str() + digits));
  if (type.find('x') != std::string::npos) bits *= static_cast<size_t>(std::atoi(type.c_str() + type.find('x') + 1));
  return bits / 8;
}

/// Buffers of one side (candidate or reference) for one launch.
struct SideBuffers {
  std::vector<exec::DeviceBuffer> buffers; ///< per param; empty for scalars
  std::vector<uint64_t> dataBytes;          ///< per param
  /// Per param: the generated contents of inputs and inouts (shared with the
  /// gate's cache); null for data the device generated.
  std::vector<std::shared_ptr<const std::vector<std::byte>>> inputs;
  /// Per param: the keyed digest the data of an input generated on the device
  /// had before any launch.
  std::vector<std::optional<uint64_t>> inputDigests;
  /// Per param: a device copy of the initial data of inputs and inouts.
  std::vector<std::shared_ptr<exec::DeviceBuffer>> pristine;
  int trial = 0;
  exec::DeviceBuffer canaryBefore, canaryAfter; ///< candidate sides only
};

/// A module variable of the loaded candidate and its contents at load time.
struct ModuleVariable {
  std::string name;
  exec::GlobalVariable global;
  std::vector<uint8_t> initial;
};

/// One shape the check runs: one of the task's, or one drawn for this check.
struct ShapeEntry {
  size_t index = 0; ///< into task.shapes; past them for drawn shapes
  tasks::Shape shape;
  bool drawn = false;
};

class Gate {
public:
  Gate(const tasks::TaskSpec &task, exec::Executor &executor, const CheckOptions &options, CheckResult &result,
       const CheckSecrets &secrets)
      : task_(task), executor_(executor), options_(options), result_(result), secrets_(secrets) {}

  /// Allocates guarded buffers for every pointer param and fills them:
  /// inputs with the (seed, trial) data, outputs with the poison. `canaries`
  /// brackets them with canary allocations (the candidate's side).
  Result<SideBuffers> prepare(const tasks::Shape &shape, int trial, bool canaries = false) {
    Clock::time_point start = Clock::now();
    SideBuffers side;
    // The reference's side and the candidate's get the same buffers' contents
    // for a (shape, trial): generated and uploaded once, then copied on the
    // device from a pristine copy (the host path, not the GPU, is the cost).
    const std::string inputKey = tasks::shapeToString(shape) + "#" + std::to_string(trial);
    if (inputKey != inputKey_) {
      inputKey_ = inputKey;
      inputCache_.assign(task_.params.size(), nullptr);
      inputDigests_.assign(task_.params.size(), std::nullopt);
      pristine_.clear();
      pristine_.resize(task_.params.size());
    }
    if (canaries) {
      Result<exec::DeviceBuffer> canary = makeCanary();
      if (!canary) return canary.error();
      side.canaryBefore = std::move(*canary);
    }
    for (size_t index = 0; index < task_.params.size(); ++index) {
      const tasks::ParamSpec &param = task_.params[index];
      side.buffers.emplace_back();
      side.dataBytes.push_back(0);
      side.inputs.emplace_back();
      side.inputDigests.emplace_back();
      side.pristine.emplace_back();
      if (!param.isPointer) continue;
      Result<int64_t> count = tasks::evaluate(param.count, shape);
      if (!count) return count.error();
      uint64_t bytes = static_cast<uint64_t>(*count) * tasks::elementSize(param.type);
      Result<exec::DeviceBuffer> buffer = executor_.allocateBuffer(bytes + 2 * secrets_.guardBytes);
      if (!buffer) return buffer.error();
      // The guard zones are out of bounds for executors that check accesses.
      if (Result<void> ranged = executor_.setAccessibleRange(buffer->handle(), secrets_.guardBytes, bytes); !ranged)
        return ranged.error();
      // Inputs the device can make are made there (a GPU's device gate), the
      // rest on the host, once per (shape, trial).
      const bool onDevice =
          param.role != tasks::ParamRole::Output && deviceGate() && deviceDigest() && DeviceGate::canGenerate(param);
      if (param.role != tasks::ParamRole::Output && !onDevice) {
        if (!inputCache_[index])
          inputCache_[index] = std::make_shared<const std::vector<std::byte>>(
              tasks::generateInput(param, *count, secrets_.seed, trial));
        side.inputs.back() = inputCache_[index];
      }
      if (pristine_[index]) {
        if (Result<void> ok = executor_.memset(buffer->handle(), 0, secrets_.guardByteOf(index), secrets_.guardBytes); !ok)
          return ok.error();
        if (Result<void> ok = executor_.memset(buffer->handle(), secrets_.guardBytes + bytes, secrets_.guardByteOf(index),
                                               secrets_.guardBytes);
            !ok)
          return ok.error();
        if (bytes)
          if (Result<void> ok = executor_.copyOnDevice(buffer->handle(), secrets_.guardBytes, pristine_[index]->handle(), 0, bytes);
              !ok)
            return ok.error();
      } else {
        // Guards set on the device, the data uploaded from where it was
        // generated (outputs: the poison, replicated on the device).
        const exec::BufferHandle handle = buffer->handle();
        const uint64_t guard = secrets_.guardBytes;
        if (Result<void> ok = executor_.memset(handle, 0, secrets_.guardByteOf(index), guard); !ok) return ok.error();
        if (Result<void> ok = executor_.memset(handle, guard + bytes, secrets_.guardByteOf(index), guard); !ok)
          return ok.error();
        if (param.role == tasks::ParamRole::Output) {
          if (Result<void> ok = fillOnDevice(handle, guard, bytes,
                                             poisonElement(param.type, secrets_.poisonSalt, param.name, trial));
              !ok)
            return ok.error();
        } else if (onDevice) {
          if (Result<void> ok = deviceGate()->generate(handle, guard, param, *count, secrets_.seed, trial); !ok)
            return ok.error();
        } else {
          const uint64_t have = std::min<uint64_t>(side.inputs.back()->size(), bytes);
          if (have)
            if (Result<void> ok = executor_.copyToDevice(handle, guard, side.inputs.back()->data(), have); !ok)
              return ok.error();
          if (have < bytes)
            if (Result<void> ok = executor_.memset(handle, guard + have, secrets_.guardByteOf(index), bytes - have); !ok)
              return ok.error();
        }
        Result<exec::DeviceBuffer> copy = executor_.allocateBuffer(std::max<uint64_t>(1, bytes));
        if (!copy) return copy.error();
        if (bytes)
          if (Result<void> ok = executor_.copyOnDevice(copy->handle(), 0, buffer->handle(), secrets_.guardBytes, bytes); !ok)
            return ok.error();
        // The digest of what the device made, before any candidate ran: what
        // every later copy of it must still hold after a launch.
        if (onDevice && isPureInput(param)) {
          Result<uint64_t> digest = deviceDigest()->of(copy->handle(), 0, bytes, secrets_.digestKey);
          if (!digest) return digest.error();
          inputDigests_[index] = *digest;
        }
        pristine_[index] = std::make_shared<exec::DeviceBuffer>(std::move(*copy));
      }
      if (onDevice && isPureInput(param)) side.inputDigests.back() = inputDigests_[index];
      if (param.role != tasks::ParamRole::Output) side.pristine.back() = pristine_[index];
      side.dataBytes.back() = bytes;
      side.buffers.back() = std::move(*buffer);
    }
    if (canaries) {
      Result<exec::DeviceBuffer> canary = makeCanary();
      if (!canary) return canary.error();
      side.canaryAfter = std::move(*canary);
    }
    side.trial = trial;
    result_.times.inputs += millisSince(start);
    return side;
  }

  /// The kernel arguments for a side. Floating scalars given as literals in
  /// task.toml (saxpy's a) take the task's value on trials 0, 3, ... and
  /// -0.5x and 2x of it on the others (powers of two keep a value that is
  /// exact in f16 exact), so a kernel that hard-codes the value fails.
  Result<exec::PackedArgs> arguments(const SideBuffers &side, const tasks::Shape &shape, int trial = 0) {
    exec::KernelArgs args;
    for (size_t i = 0; i < task_.params.size(); ++i) {
      const tasks::ParamSpec &param = task_.params[i];
      if (param.isPointer) {
        args.buffer(side.buffers[i].handle(), secrets_.guardBytes);
        continue;
      }
      if (param.tensorMap) { // a TMA map over the mapped buffer's data, encoded by this executor
        Result<exec::TensorMapBytes> map = encodeTensorMapArgument(
            executor_, task_, param, shape, side.buffers[param.tensorMap->bufferIndex].handle(), secrets_.guardBytes);
        if (!map) return map.error();
        args.raw(map->data(), map->size(), exec::kTensorMapAlignment);
        continue;
      }
      tasks::ParamSpec varied = param;
      const int kind = ((trial % 3) + 3) % 3;
      if (varied.floatValue && kind != 0) *varied.floatValue *= kind == 1 ? -0.5 : 2.0;
      Result<std::vector<std::byte>> bytes = tasks::scalarArgument(varied, shape);
      if (!bytes) return bytes.error();
      args.raw(bytes->data(), bytes->size(), bytes->size());
    }
    return args.pack();
  }

  /// Downloads every buffer of `side`, checks its guard zones (and canaries),
  /// that inputs still hold what was generated, and returns the outputs' data.
  Result<Outputs> collect(const SideBuffers &side, std::vector<OutputReport> *reports) {
    Clock::time_point start = Clock::now();
    Outputs outputs(task_.params.size());
    const uint64_t guard = secrets_.guardBytes;
    for (size_t i = 0; i < task_.params.size(); ++i) {
      const tasks::ParamSpec &param = task_.params[i];
      if (!param.isPointer) continue;
      if (!reports && !param.isOutput()) continue; // the reference's side: only its outputs matter
      const uint64_t bytes = side.dataBytes[i];
      const exec::BufferHandle buffer = side.buffers[i].handle();
      const bool deviceMade = isPureInput(param) && side.inputDigests[i].has_value();
      const bool generated =
          isPureInput(param) && (deviceMade || (side.inputs[i] && side.inputs[i]->size() >= bytes));
      // An input whose digest the device can compute comes back as its guard
      // zones alone; everything else as guard, data, guard in one copy.
      const bool digestOnly = reports && generated && bytes > 0 && (deviceMade || deviceDigest());
      // Guards come back on their own; an output's data straight into its
      // vector (no buffer-sized image and second copy); an input's data only
      // when it is compared on the host.
      std::vector<uint8_t> guards(2 * guard), inputData;
      const uint8_t *before = guards.data(), *after = guards.data() + guard;
      if (reports) {
        if (Result<void> copied = executor_.copyToHost(guards.data(), buffer, 0, guard); !copied) return copied.error();
        if (Result<void> copied = executor_.copyToHost(guards.data() + guard, buffer, guard + bytes, guard); !copied)
          return copied.error();
      }
      if (param.isOutput() && !hostOutputs_ && deviceGate() && deviceDigest()) {
        // Compared where it lies (judge()).
        outputs[i].onDevice = true;
        outputs[i].buffer = buffer;
        outputs[i].offset = guard;
        outputs[i].bytes = bytes;
      } else if (param.isOutput()) {
        outputs[i].host.resize(bytes);
        if (bytes)
          if (Result<void> copied = executor_.copyToHost(outputs[i].host.data(), buffer, guard, bytes); !copied)
            return copied.error();
      } else if (!digestOnly && generated) {
        inputData.resize(bytes);
        if (bytes)
          if (Result<void> copied = executor_.copyToHost(inputData.data(), buffer, guard, bytes); !copied)
            return copied.error();
      }
      if (reports) {
        // Every buffer's guards are checked, inputs included: a write through
        // an input pointer out of bounds is as wrong as one through an output.
        OutputReport report;
        report.param = param.name;
        report.isInput = isPureInput(param);
        const uint8_t guardByte = secrets_.guardByteOf(i);
        for (uint64_t b = 0; b < guard; ++b) {
          if (before[b] != guardByte) {
            if (report.guardBytesBefore++ == 0 && report.guardDetail.empty())
              report.guardDetail = fmt::format("byte {} before the start of '{}' was overwritten (0x{:02x})",
                                               guard - b, param.name, before[b]);
          }
          if (after[b] != guardByte) {
            if (report.guardBytesAfter++ == 0 && report.guardDetail.empty())
              report.guardDetail = fmt::format("byte {} after the end of '{}' was overwritten (0x{:02x})", b,
                                               param.name, after[b]);
          }
        }
        if (generated) {
          std::vector<uint8_t> &data = inputData;
          const uint8_t *now = digestOnly ? nullptr : data.data();
          // The generated bytes: the host's copy, or (for data the device
          // made) made again on the host only when a change must be counted.
          std::vector<std::byte> remade;
          auto generatedBytes = [&]() -> const uint8_t * {
            if (side.inputs[i]) return reinterpret_cast<const uint8_t *>(side.inputs[i]->data());
            remade = tasks::generateInput(param, static_cast<int64_t>(bytes / tasks::elementSize(param.type)),
                                          secrets_.seed, side.trial);
            return reinterpret_cast<const uint8_t *>(remade.data());
          };
          if (digestOnly) {
            Result<uint64_t> device = deviceDigest()->of(buffer, guard, bytes, secrets_.digestKey);
            if (!device) return device.error();
            if (*device != (deviceMade ? *side.inputDigests[i] : inputDigest(i, side))) {
              // Changed: fetch the data for the report's byte count.
              data.resize(bytes);
              if (Result<void> copied = executor_.copyToHost(data.data(), buffer, guard, bytes); !copied)
                return copied.error();
              now = data.data();
            }
          }
          const uint8_t *want = now ? generatedBytes() : nullptr;
          if (now && std::memcmp(now, want, bytes) != 0) {
            size_t element = tasks::elementSize(param.type);
            for (uint64_t b = 0; b < bytes; ++b)
              if (now[b] != want[b]) {
                if (!report.firstChangedElement) report.firstChangedElement = b / element;
                report.inputBytesChanged++;
              }
          }
        }
        if (report.guardBytesBefore || report.guardBytesAfter || report.inputBytesChanged || param.isOutput())
          reports->push_back(std::move(report));
      }
    }
    if (reports) {
      for (const exec::DeviceBuffer *canary : {&side.canaryBefore, &side.canaryAfter}) {
        if (!*canary) continue;
        std::vector<uint8_t> image(kCanaryBytes);
        if (Result<void> copied = executor_.copyToHost(image.data(), canary->handle(), 0, image.size()); !copied)
          return copied.error();
        size_t changed = static_cast<size_t>(
            std::count_if(image.begin(), image.end(), [&](uint8_t b) { return b != secrets_.canaryByte; }));
        if (changed) {
          OutputReport report;
          report.param = canary == &side.canaryBefore ? "(allocation before the buffers)" : "(allocation after the buffers)";
          report.guardBytesAfter = changed;
          report.guardDetail = fmt::format("{} bytes of a neighbouring allocation {} the candidate's buffers changed",
                                           changed, canary == &side.canaryBefore ? "before" : "after");
          reports->push_back(std::move(report));
        }
      }
    }
    result_.times.compare += millisSince(start);
    return outputs;
  }

  /// Judges one launch's reports against the reference outputs; the first
  /// problem in words, or "" when the launch was right.
  Result<std::string> judge(const SideBuffers &side, const Outputs &got, const Outputs &want,
                            std::vector<OutputReport> &reports, int trial) {
    Clock::time_point start = Clock::now();
    std::string firstProblem;
    for (OutputReport &output : reports) {
      if (output.guardBytesBefore || output.guardBytesAfter) {
        if (firstProblem.empty())
          firstProblem = fmt::format("out-of-bounds write: {} ({} bytes before, {} after)", output.guardDetail,
                                     output.guardBytesBefore, output.guardBytesAfter);
      }
      size_t index = paramIndexOf(output.param);
      if (index >= task_.params.size()) continue;
      const tasks::ParamSpec &param = task_.params[index];
      if (output.inputBytesChanged && firstProblem.empty())
        firstProblem = fmt::format("input '{}' was modified: {} bytes changed, first at element {} (inputs must be "
                                   "left as they were; use registers or shared memory as scratch)",
                                   param.name, output.inputBytesChanged, output.firstChangedElement.value_or(0));
      if (!param.isOutput()) continue;
      size_t count = side.dataBytes[index] / tasks::elementSize(param.type);
      const tasks::Tolerance tolerance = tasks::toleranceFor(task_, param.type);
      if (got[index].onDevice && want[index].onDevice) {
        Result<DeviceComparison> device =
            deviceGate()->compare(param.type, got[index].buffer, got[index].offset, want[index].buffer,
                                  want[index].offset, count, tolerance, secrets_.digestKey);
        if (!device) return device.error();
        output.compare = device->compare;
        if (device->wantDigest != want[index].digest) {
          // Nothing but the candidate ran since the reference's output was
          // made: it wrote into memory that is not its own.
          output.compare.passed = false;
          if (firstProblem.empty())
            firstProblem = fmt::format("the gate's copy of the reference output '{}' changed while the candidate "
                                       "ran: a write outside the candidate's buffers",
                                       param.name);
          continue;
        }
        if (output.compare.passed) continue;
      }
      // On the host: the emulator's path, and the full report of a device
      // comparison that found a difference (the same numbers, with the
      // mismatch's values and the unwritten elements).
      Bytes gotCopy, wantCopy;
      if (Result<void> ok = download(got[index], gotCopy); !ok) return ok.error();
      if (Result<void> ok = download(want[index], wantCopy); !ok) return ok.error();
      const Bytes &gotBytes = got[index].onDevice ? gotCopy : got[index].host;
      const Bytes &wantBytes = want[index].onDevice ? wantCopy : want[index].host;
      output.compare = tasks::compareBuffers(param.type, gotBytes.data(), wantBytes.data(), count, tolerance);
      if (!output.compare.passed && firstProblem.empty()) {
        size_t unwritten = countPoison(param, gotBytes, trial);
        firstProblem = fmt::format("'{}' differs: {} of {} elements outside tolerance, first at index {}: got {}, "
                                   "expected {} (max abs error {:.3g}, max rel error {:.3g})",
                                   param.name, output.compare.mismatches, output.compare.count,
                                   output.compare.firstMismatch.value_or(0), output.compare.firstGotText,
                                   output.compare.firstWantText, output.compare.maxAbsError,
                                   output.compare.maxRelError);
        if (unwritten) firstProblem += fmt::format("; {} elements were never written", unwritten);
      }
    }
    result_.times.compare += millisSince(start);
    return firstProblem;
  }

  /// Copies an output that lies on the device into `into` (nothing for one on the host).
  Result<void> download(const OutputData &output, Bytes &into) {
    if (!output.onDevice) return {};
    into.resize(output.bytes);
    if (output.bytes == 0) return {};
    return executor_.copyToHost(into.data(), output.buffer, output.offset, output.bytes);
  }

  /// Elements of an output that still hold the poison the launch started with.
  size_t countPoison(const tasks::ParamSpec &param, const Bytes &got, int trial) const {
    if (param.role != tasks::ParamRole::Output) return 0;
    std::vector<uint8_t> poison = poisonElement(param.type, secrets_.poisonSalt, param.name, trial);
    size_t count = 0;
    for (size_t at = 0; at + poison.size() <= got.size(); at += poison.size())
      count += std::memcmp(got.data() + at, poison.data(), poison.size()) == 0;
    return count;
  }

  Result<exec::DeviceBuffer> makeCanary() {
    Result<exec::DeviceBuffer> canary = executor_.allocateBuffer(kCanaryBytes);
    if (!canary) return canary.error();
    if (Result<void> ok = executor_.setAccessibleRange(canary->handle(), 0, 0); !ok) return ok.error();
    std::vector<uint8_t> image(kCanaryBytes, secrets_.canaryByte);
    if (Result<void> ok = executor_.copyToDevice(canary->handle(), 0, image.data(), image.size()); !ok)
      return ok.error();
    return canary;
  }

  size_t paramIndexOf(const std::string &name) const {
    for (size_t i = 0; i < task_.params.size(); ++i)
      if (task_.params[i].name == name) return i;
    return task_.params.size();
  }

  /// The reference's outputs on (shape, trial), computed once per check.
  Result<const Outputs *> referenceOutputs(const ShapeEntry &entry, int trial,
                                                                      exec::KernelHandle reference,
                                                                      const tasks::ResolvedLaunch &launch) {
    auto key = std::make_pair(entry.index, trial);
    if (auto found = referenceCache_.find(key); found != referenceCache_.end()) return &found->second;
    Result<SideBuffers> side = prepare(entry.shape, trial);
    if (!side) return side.error();
    Result<exec::PackedArgs> args = arguments(*side, entry.shape, trial);
    if (!args) return args.error();
    Clock::time_point start = Clock::now();
    Result<void> ran = executor_.launch(reference, toConfig(launch), *args);
    (void)executor_.takeFindings(); // the reference's own sanitizer warnings are not the candidate's
    result_.times.reference += millisSince(start);
    if (!ran)
      return makeError(ErrorKind::Internal, "the reference kernel failed on " + tasks::shapeToString(entry.shape) +
                                                ": " + render(ran.error()));
    Result<Outputs> outputs = collect(*side, nullptr);
    if (!outputs) return outputs.error();
    // Outputs compared on the device stay there, in the buffers the reference
    // wrote, with the digest they had before any candidate ran.
    for (size_t i = 0; i < outputs->size(); ++i) {
      OutputData &output = (*outputs)[i];
      if (!output.onDevice) continue;
      Result<uint64_t> digest = deviceDigest()->of(output.buffer, output.offset, output.bytes, secrets_.digestKey);
      if (!digest) return digest.error();
      output.digest = *digest;
      output.owner = std::make_shared<exec::DeviceBuffer>(std::move(side->buffers[i]));
    }
    return &(referenceCache_[key] = std::move(*outputs));
  }

  /// Restores every module variable of the candidate to its load-time contents.
  Result<void> restoreModuleState() {
    for (const ModuleVariable &variable : variables_)
      if (Result<void> ok = executor_.copyToDevice(variable.global.handle, 0, variable.initial.data(),
                                                   variable.initial.size());
          !ok)
        return ok;
    return {};
  }

  /// Notes the module variables a launch left changed.
  Result<void> noteModuleState() {
    for (const ModuleVariable &variable : variables_) {
      std::vector<uint8_t> now(variable.initial.size());
      if (Result<void> ok = executor_.copyToHost(now.data(), variable.global.handle, 0, now.size()); !ok) return ok;
      if (now != variable.initial &&
          std::find(result_.stateLeft.begin(), result_.stateLeft.end(), variable.name) == result_.stateLeft.end())
        result_.stateLeft.push_back(variable.name);
    }
    return {};
  }

  /// Finds the candidate's module variables in the loaded module and keeps
  /// their initial contents. Executors without getGlobal (the emulator) keep
  /// the module loaded across launches, so state shows up as wrong results.
  Result<void> attachModuleVariables(exec::ModuleHandle module, const std::vector<std::string> &names) {
    for (const std::string &name : names) {
      Result<exec::GlobalVariable> global = executor_.getGlobal(module, name);
      if (!global) {
        if (exec::execErrorKindOf(global.error()) == exec::ExecErrorKind::Unavailable) return {};
        return global.error();
      }
      ModuleVariable variable{name, *global, std::vector<uint8_t>(global->bytes)};
      if (Result<void> ok = executor_.copyToHost(variable.initial.data(), global->handle, 0, global->bytes); !ok)
        return ok;
      variables_.push_back(std::move(variable));
    }
    return {};
  }
  const std::vector<ModuleVariable> &variables() const { return variables_; }

  /// The report of one launch of the candidate on (entry, trial), by this executor.
  TrialReport trialReport(const ShapeEntry &entry, int trial, const tasks::ResolvedLaunch &launch) const {
    TrialReport report;
    report.shapeIndex = entry.index;
    report.shape = entry.shape;
    report.drawn = entry.drawn;
    report.trial = trial;
    report.launch = launch;
    report.executor = executorTag_;
    return report;
  }

  /// Runs the candidate on (shape, trial) against the reference. `probe`:
  /// how to set the module variables first ("" restores them). Returns false
  /// when a verdict other than correct was reached.
  Result<bool> runTrial(const ShapeEntry &entry, int trial, bool afterTiming, exec::KernelHandle reference,
                        exec::KernelHandle candidate, const tasks::ResolvedLaunch &referenceLaunch,
                        const tasks::ResolvedLaunch &candidateLaunch, const std::string &probe = "",
                        int repeats = 0) {
    const tasks::Shape &shape = entry.shape;
    TrialReport report = trialReport(entry, trial, candidateLaunch);
    report.afterTiming = afterTiming;
    report.probe = probe;

    Result<const Outputs *> want = referenceOutputs(entry, trial, reference, referenceLaunch);
    if (!want) return want.error();

    Result<SideBuffers> side = prepare(shape, trial, /*canaries=*/true);
    if (!side) return side.error();
    Result<exec::PackedArgs> args = arguments(*side, shape, trial);
    if (!args) return args.error();
    if (probe.empty()) {
      if (Result<void> ok = restoreModuleState(); !ok) return ok.error();
    } else if (probe != "left") {
      // The variables a launch left changed filled with a pattern (a counter
      // some way or far along, a flag set, a pointer that is not this
      // launch's); the others as they were at load time.
      if (Result<void> ok = restoreModuleState(); !ok) return ok.error();
      for (const ModuleVariable &variable : variables_) {
        if (std::find(result_.stateLeft.begin(), result_.stateLeft.end(), variable.name) == result_.stateLeft.end())
          continue;
        std::vector<uint8_t> image(variable.global.bytes);
        uint32_t word = probe == "u32-37" ? 37u : probe == "u32-1000" ? 1000u : probe == "bytes-7f" ? 0x7f7f7f7fu : 0x01010101u;
        for (size_t at = 0; at < image.size(); ++at) image[at] = static_cast<uint8_t>(word >> (8 * (at % 4)));
        if (Result<void> ok = executor_.copyToDevice(variable.global.handle, 0, image.data(), image.size()); !ok)
          return ok.error();
      }
    }
    Clock::time_point start = Clock::now();
    Result<void> ran = executor_.launch(candidate, toConfig(candidateLaunch), *args);
    result_.times.candidate += millisSince(start);
    recordFindings();
    std::string where = fmt::format("on {}{} (trial {}{})", tasks::shapeToString(shape),
                                    entry.drawn ? ", a shape drawn for this check" : "", trial, probeText(probe));
    if (!ran) {
      if (!recordExecutorFailure(ran.error(), where)) return ran.error();
      result_.trials.push_back(std::move(report));
      return false;
    }
    if (probe.empty())
      if (Result<void> ok = noteModuleState(); !ok) return ok.error();
    Result<Outputs> got = collect(*side, &report.outputs);
    if (!got) return got.error();
    Result<std::string> judged = judge(*side, *got, **want, report.outputs, trial);
    if (!judged) return judged.error();
    std::string problem = std::move(*judged);
    // The same launch again on the same buffers, outputs poisoned afresh and
    // module state as the first launch left it (what a timed launch sees): a
    // kernel that remembers a pointer or finds its work done must still work.
    for (int repeat = 1; repeat <= repeats && problem.empty() && !fatalFinding_; ++repeat) {
      const int poisonKey = trial + 1000 * repeat;
      if (Result<void> ok = repoison(*side, poisonKey); !ok) return ok.error();
      Clock::time_point again = Clock::now();
      Result<void> rerun = executor_.launch(candidate, toConfig(candidateLaunch), *args);
      result_.times.candidate += millisSince(again);
      recordFindings();
      if (!rerun) {
        if (!recordExecutorFailure(rerun.error(), where + ", launched again on the same buffers")) return rerun.error();
        result_.trials.push_back(std::move(report));
        return false;
      }
      report.outputs.clear();
      got = collect(*side, &report.outputs);
      if (!got) return got.error();
      judged = judge(*side, *got, **want, report.outputs, poisonKey);
      if (!judged) return judged.error();
      problem = std::move(*judged);
      if (!problem.empty()) where += ", launched again on the same buffers";
    }
    report.passed = problem.empty() && !fatalFinding_;
    result_.trials.push_back(std::move(report));
    if (!problem.empty()) {
      result_.verdict = Verdict::Wrong;
      result_.summary = fmt::format("wrong {}{}: {}", where, afterTiming ? ", re-checked after timing" : "", problem);
      return false;
    }
    if (fatalFinding_) {
      result_.verdict = Verdict::Crashed;
      result_.summary = fmt::format("crashed {}: {}", where, fatalFindingText_);
      return false;
    }
    return true;
  }

  /// Outputs back to a poison (a new one, keyed by `poisonKey`), inouts back
  /// to their generated contents; inputs and guards are left as they are.
  Result<void> repoison(const SideBuffers &side, int poisonKey) {
    for (size_t i = 0; i < task_.params.size(); ++i) {
      const tasks::ParamSpec &param = task_.params[i];
      if (!param.isOutput() || side.dataBytes[i] == 0) continue;
      if (param.role == tasks::ParamRole::Output) {
        if (Result<void> ok = fillOnDevice(side.buffers[i].handle(), secrets_.guardBytes, side.dataBytes[i],
                                           poisonElement(param.type, secrets_.poisonSalt, param.name, poisonKey));
            !ok)
          return ok;
        continue;
      }
      if (!side.pristine[i])
        return makeError(ErrorKind::Internal, "no initial copy of '" + param.name + "' to restore");
      if (Result<void> ok = executor_.copyOnDevice(side.buffers[i].handle(), secrets_.guardBytes,
                                                   side.pristine[i]->handle(), 0, side.dataBytes[i]);
          !ok)
        return ok;
    }
    return {};
  }

  /// Fills [offset, offset + bytes) of `buffer` with repeats of `pattern` (a
  /// whole number of them): one block uploaded, then doubled by copies on the
  /// device, so that a large output is poisoned without a host-sized image.
  Result<void> fillOnDevice(exec::BufferHandle buffer, uint64_t offset, uint64_t bytes, const std::vector<uint8_t> &pattern) {
    const uint64_t whole = bytes - bytes % pattern.size();
    if (whole == 0) return {};
    const uint64_t blockBytes = std::min<uint64_t>(whole, (uint64_t{64} << 10) / pattern.size() * pattern.size());
    std::vector<uint8_t> block(blockBytes);
    fillPattern(block.data(), block.size(), pattern);
    if (Result<void> ok = executor_.copyToDevice(buffer, offset, block.data(), block.size()); !ok) return ok;
    for (uint64_t done = blockBytes; done < whole;) {
      const uint64_t chunk = std::min(done, whole - done);
      if (Result<void> ok = executor_.copyOnDevice(buffer, offset + done, buffer, offset, chunk); !ok) return ok;
      done += chunk;
    }
    return {};
  }

  static std::string probeText(const std::string &probe) {
    if (probe.empty()) return "";
    if (probe == "left") return ", module variables as the previous launch left them";
    return ", module variables pre-set to a non-initial pattern";
  }

  /// Times candidate and baseline on `entry`, verifying the outputs of timed
  /// launches chosen at random. Returns nullopt when a verdict was reached.
  Result<std::optional<BenchmarkReport>> benchmark(const ShapeEntry &entry, int trial, exec::KernelHandle reference,
                                                   exec::KernelHandle candidate,
                                                   const tasks::ResolvedLaunch &referenceLaunch,
                                                   const tasks::ResolvedLaunch &candidateLaunch) {
    const tasks::Shape &shape = entry.shape;
    Result<const Outputs *> want = referenceOutputs(entry, trial, reference, referenceLaunch);
    if (!want) return want.error();
    // Two sets of buffers with the same contents (a trial the correctness
    // runs did not use), each bracketed by canaries. When `swap` is on, each
    // side times half of every round's launches on each set: where a set
    // lies in memory (its DRAM pages, the L2 slices its lines hash to) then
    // weighs on both sides alike. Timed on one set each, attention_fwd's
    // reference against itself measured 0.97x in a fresh process and 1.03x
    // inside an eval's on an H200, 1.038x on an H100, in every seed.
    std::array<SideBuffers, 2> sets;
    std::array<exec::PackedArgs, 2> setArgs;
    for (size_t s = 0; s < 2; ++s) {
      Result<SideBuffers> set = prepare(shape, trial, /*canaries=*/true);
      if (!set) return set.error();
      sets[s] = std::move(*set);
      Result<exec::PackedArgs> args = arguments(sets[s], shape, trial);
      if (!args) return args.error();
      setArgs[s] = std::move(*args);
    }

    // Before every launch, timed or not: outputs (and inouts) back to their
    // poison (initial contents); for the candidate, module variables back to
    // their initial state; for the reference, inputs back to their generated
    // data, so that nothing the candidate left in a set's inputs can slow the
    // reference down (the candidate's own launches are verified for that).
    std::vector<exec::DeviceBuffer> pristine;
    auto outputOps = [&](SideBuffers &side) -> Result<std::vector<exec::MemoryOp>> {
      std::vector<exec::MemoryOp> ops;
      for (size_t i = 0; i < task_.params.size(); ++i) {
        if (!task_.params[i].isOutput()) continue;
        Result<exec::DeviceBuffer> copy = executor_.allocateBuffer(std::max<uint64_t>(1, side.dataBytes[i]));
        if (!copy) return copy.error();
        if (side.dataBytes[i])
          if (Result<void> ok = executor_.copyOnDevice(copy->handle(), 0, side.buffers[i].handle(), secrets_.guardBytes,
                                                       side.dataBytes[i]);
              !ok)
            return ok.error();
        ops.push_back({side.buffers[i].handle(), secrets_.guardBytes, copy->handle(), 0, side.dataBytes[i], 0});
        pristine.push_back(std::move(*copy));
      }
      return ops;
    };
    std::vector<exec::MemoryOp> moduleOps;
    for (const ModuleVariable &variable : variables_) {
      Result<exec::DeviceBuffer> copy = executor_.allocateBuffer(std::max<uint64_t>(1, variable.global.bytes));
      if (!copy) return copy.error();
      if (Result<void> ok = executor_.copyToDevice(copy->handle(), 0, variable.initial.data(), variable.initial.size());
          !ok)
        return ok.error();
      moduleOps.push_back({variable.global.handle, 0, copy->handle(), 0, variable.global.bytes, 0});
      pristine.push_back(std::move(*copy));
    }
    std::array<std::vector<exec::MemoryOp>, 2> candidateOps, referenceOps;
    for (size_t s = 0; s < 2; ++s) {
      Result<std::vector<exec::MemoryOp>> ops = outputOps(sets[s]);
      if (!ops) return ops.error();
      candidateOps[s] = *ops;
      candidateOps[s].insert(candidateOps[s].end(), moduleOps.begin(), moduleOps.end());
      referenceOps[s] = std::move(*ops);
      for (size_t i = 0; i < task_.params.size(); ++i)
        if (isPureInput(task_.params[i]) && sets[s].pristine[i] && sets[s].dataBytes[i])
          referenceOps[s].push_back({sets[s].buffers[i].handle(), secrets_.guardBytes, sets[s].pristine[i]->handle(), 0,
                                     sets[s].dataBytes[i], 0});
    }

    // The schedule is drawn per check, so that no launch can count its way
    // into the timed window; the outputs of about half the timed calls (at
    // least two) are verified, which ones drawn too.
    uint64_t state = secrets_.seed ^ 0x7173'6368'6564ull;
    const int rounds = std::max(1, options_.timingRounds);
    const int meanReps = std::max(1, options_.repetitionsPerRound);
    BenchmarkReport report;
    report.warmups = 1 + static_cast<int>(tasks::splitmix64(state) % 3);
    // Two rounds verified besides the last (each costs a download and a
    // compare of every buffer), which ones drawn: a kernel cannot tell a
    // verified timed launch from another.
    std::vector<bool> verifyRound(static_cast<size_t>(rounds));
    const bool swap = swapBuffers();
    report.buffersSwapped = swap;
    for (int round = 0; round < rounds; ++round) {
      int launches = std::max(1, meanReps - 2 + static_cast<int>(tasks::splitmix64(state) % 5));
      // Swapping splits a turn in two equal halves: an even count, at least 2.
      if (swap) launches = std::max(2, launches + launches % 2);
      report.launchesPerRound.push_back(launches);
    }
    for (int pick = 0; pick < 2; ++pick) verifyRound[tasks::splitmix64(state) % static_cast<uint64_t>(rounds)] = true;
    verifyRound[static_cast<size_t>(rounds - 1)] = true;

    Clock::time_point start = Clock::now();
    // Per side and buffer set.
    std::array<std::vector<double>, 2> candidateTimes, baselineTimes;
    for (int round = 0; round < rounds; ++round) {
      const int launches = report.launchesPerRound[static_cast<size_t>(round)];
      // Alternate which side goes first so drift (clocks, temperature) hits both.
      for (int turn = 0; turn < 2; ++turn) {
        const bool candidateTurn = (turn == 0) == (round % 2 == 0);
        // With `swap`, each turn is two halves, one on each set, the set
        // that goes first alternating by round; without, each side keeps its
        // own set (the candidate set 0).
        const size_t firstSet = swap ? static_cast<size_t>(round % 2) : (candidateTurn ? 0 : 1);
        const int pieces = swap ? 2 : 1;
        for (int piece = 0; piece < pieces; ++piece) {
          const size_t s = (firstSet + static_cast<size_t>(piece)) % 2;
          exec::TimingOptions timing;
          timing.warmupLaunches = round == 0 && piece == 0 ? static_cast<uint32_t>(report.warmups) : 0;
          timing.repetitions = static_cast<uint32_t>(launches / pieces);
          timing.flushL2 = true;
          timing.timeoutMs = options_.launchTimeoutMs * (timing.repetitions + timing.warmupLaunches + 1);
          timing.beforeEachLaunch = candidateTurn ? candidateOps[s] : referenceOps[s];
          Result<std::vector<float>> times =
              candidateTurn ? executor_.timeLaunch(candidate, toConfig(candidateLaunch), setArgs[s], timing)
                            : executor_.timeLaunch(reference, toConfig(referenceLaunch), setArgs[s], timing);
          if (!times) {
            if (candidateTurn && recordExecutorFailure(times.error(), "while timing on " + tasks::shapeToString(shape)))
              return std::optional<BenchmarkReport>();
            return times.error();
          }
          for (float ms : *times) (candidateTurn ? candidateTimes : baselineTimes)[s].push_back(ms);
          if (!candidateTurn || !verifyRound[static_cast<size_t>(round)]) continue;
          // The last timed launch's outputs on this set: as right as a
          // checked launch's, its inputs, guards and canaries untouched.
          TrialReport checked = trialReport(entry, trial, candidateLaunch);
          checked.timed = true;
          Result<Outputs> got = collect(sets[s], &checked.outputs);
          if (!got) return got.error();
          Result<std::string> judged = judge(sets[s], *got, **want, checked.outputs, trial);
          if (!judged) return judged.error();
          const std::string &problem = *judged;
          checked.passed = problem.empty();
          report.verifiedTimedLaunches++;
          result_.trials.push_back(std::move(checked));
          if (!problem.empty()) {
            result_.verdict = Verdict::Wrong;
            result_.summary = fmt::format("wrong in a timed launch on {} (round {} of {}): {}",
                                          tasks::shapeToString(shape), round + 1, rounds, problem);
            return std::optional<BenchmarkReport>();
          }
        }
      }
    }
    result_.times.bench += millisSince(start);
    report.shapeIndex = entry.index;
    report.shape = shape;
    auto pooled = [](const std::array<std::vector<double>, 2> &perSet) {
      std::vector<double> all = perSet[0];
      all.insert(all.end(), perSet[1].begin(), perSet[1].end());
      return spreadOf(std::move(all));
    };
    report.candidate = pooled(candidateTimes);
    report.baseline = pooled(baselineTimes);
    if (swap) {
      // Paired by set: the geometric mean of the two sets' ratios, so that a
      // set that runs every kernel faster (where it lies in memory) cancels.
      const Spread c0 = spreadOf(candidateTimes[0]), b0 = spreadOf(baselineTimes[0]);
      const Spread c1 = spreadOf(candidateTimes[1]), b1 = spreadOf(baselineTimes[1]);
      report.speedup = std::sqrt(b0.median / c0.median * (b1.median / c1.median));
      report.speedupLow = std::sqrt(b0.p10 / c0.p90 * (b1.p10 / c1.p90));
      report.speedupHigh = std::sqrt(b0.p90 / c0.p10 * (b1.p90 / c1.p10));
    } else {
      report.speedup = report.baseline.median / report.candidate.median;
      report.speedupLow = report.baseline.p10 / report.candidate.p90;
      report.speedupHigh = report.baseline.p90 / report.candidate.p10;
    }
    if (task_.cost.flops) {
      if (Result<int64_t> flops = tasks::evaluate(*task_.cost.flops, shape)) {
        report.gflops = static_cast<double>(*flops) / (report.candidate.median * 1e6);
        report.baselineGflops = static_cast<double>(*flops) / (report.baseline.median * 1e6);
      }
    }
    if (task_.cost.bytes) {
      if (Result<int64_t> bytes = tasks::evaluate(*task_.cost.bytes, shape)) {
        report.gbps = static_cast<double>(*bytes) / (report.candidate.median * 1e6);
        report.baselineGbps = static_cast<double>(*bytes) / (report.baseline.median * 1e6);
        double peak = executor_.properties().peakMemoryBandwidthGBs();
        if (peak > 0) report.bandwidthFraction = *report.gbps / peak;
      }
    }
    return std::optional<BenchmarkReport>(std::move(report));
  }

  /// What to do about a sanitizer finding, for the person or model reading it.
  static std::string findingHint(const std::string &check, const std::string &message) {
    // The asynchronous proxies' hazards (bulk copies, mbarriers, wgmma) are
    // fixed by waits and proxy fences, not by bar.sync.
    if (check == "racecheck" && message.find("the mbarrier initialized here") != std::string::npos)
      return "fence.proxy.async.shared::cta (or fence.mbarrier_init.release.cluster) after the mbarrier.init "
             "instructions, then the barrier that publishes them to the other threads";
    const bool async = message.find("bulk copy") != std::string::npos || message.find("mbarrier") != std::string::npos ||
                       message.find("fence.proxy.async") != std::string::npos ||
                       message.find("wgmma") != std::string::npos;
    if (check == "racecheck" && async)
      return "wait for the asynchronous operation before touching its memory: mbarrier.try_wait on the copy's phase "
             "before reading its destination, fence.proxy.async between generic writes and a bulk copy that reads "
             "them, cp.async.bulk.wait_group.read before overwriting a copy's source, wgmma.wait_group before "
             "reading accumulators, and before releasing (mbarrier.arrive) or refilling a stage whose wgmmas may "
             "still read it";
    if (check == "memcheck")
      return "compare the index with the element count before the access (the last block of a ragged shape is "
             "partly outside the buffer), and keep vector accesses aligned to their size";
    if (check == "racecheck")
      return "put a bar.sync between the shared-memory write and the other warps' accesses to the same address; "
             "between CTAs, publish with a fence (membar.gl) before the atomic or flag the reader waits on";
    if (check == "synccheck")
      return "every thread of the CTA (every lane of a warp collective's membermask) must reach the same barrier; "
             "move it out of the branch";
    if (check == "initcheck" && message.find("shared memory") != std::string::npos)
      return "write those shared-memory bytes (and bar.sync) before any thread of the block reads them";
    if (check == "initcheck")
      return "give the register its value on every path that reaches this use: a load or computation under a "
             "predicate leaves it unset where the predicate is false, so guard the use with the same predicate or "
             "compute the value unconditionally (a mov of a constant that only silences this would hide a wrong "
             "result)";
    return "";
  }

  /// Adds what a sanitizing executor found in the candidate's launch to the
  /// diagnostics (code = the check's name, located at the PTX line), once
  /// each; remembers the first fatal one.
  void recordFindings() {
    for (exec::LaunchFinding &finding : executor_.takeFindings()) {
      if (finding.fatal && !fatalFinding_) {
        fatalFinding_ = true;
        fatalFindingText_ = finding.message;
      }
      bool seen = std::any_of(result_.diagnostics.begin(), result_.diagnostics.end(), [&](const ptx::Diagnostic &d) {
        return d.code == finding.check && d.line == finding.line;
      });
      if (seen) continue;
      std::string message = std::move(finding.message);
      if (message.rfind(finding.check + ": ", 0) == 0) message.erase(0, finding.check.size() + 2);
      result_.diagnostics.push_back({finding.check, finding.fatal ? ptx::Severity::Error : ptx::Severity::Warning,
                                     finding.line, finding.column, message, findingHint(finding.check, message)});
    }
  }

  /// When `error` is the candidate's fault (crash, hang, refused launch), makes
  /// it the verdict and returns true; otherwise the gate itself failed.
  bool recordExecutorFailure(const Error &error, const std::string &where) {
    std::optional<Verdict> verdict = verdictForExecError(error);
    if (!verdict) return false;
    result_.verdict = *verdict;
    result_.executorError = render(error);
    result_.driverError = error.cause;
    // The verdict already says what the executor error's code says: the summary
    // gives the message alone.
    result_.summary = fmt::format("{} {}: {}", verdictName(*verdict), where, error.message);
    return true;
  }

  /// The digest kernel on this executor, loaded on first use; null where
  /// inputs are compared on the host. The GPU backends digest on the device
  /// (an input's copy back and comparison cost more than the kernels of an
  /// L1 check); the emulator compares on the host, where its buffers are.
  /// PTXFORGE_DEVICE_DIGEST=1 or 0 forces the choice (the tests run the
  /// device path on the emulator).
  DeviceDigest *deviceDigest() {
    if (digestTried_) return digest_.get();
    digestTried_ = true;
    const char *forced = std::getenv("PTXFORGE_DEVICE_DIGEST");
    // The device gate's inputs and reference outputs are confirmed by digests.
    const bool wanted = deviceGate() || (forced && *forced ? std::string(forced) != "0"
                                                           : executor_.properties().backend.find("gpu") != std::string::npos);
    if (!wanted) return nullptr;
    Result<std::unique_ptr<DeviceDigest>> loaded = DeviceDigest::load(executor_, result_.arch);
    if (loaded) {
      digest_ = std::move(*loaded);
    } else {
      result_.diagnostics.push_back({"device-digest-unavailable", ptx::Severity::Warning, 1, 1,
                                     "inputs are compared on the host: the gate's digest kernel did not load: " +
                                         render(loaded.error()),
                                     ""});
    }
    return digest_.get();
  }

  /// The gate's own kernels on this executor (inputs made and outputs compared
  /// on the device), loaded on first use; null where that happens on the host.
  /// The GPU backends use them (a check then moves counts, not buffers); the
  /// emulator keeps the host path, where its buffers are.
  /// PTXFORGE_DEVICE_GATE=1 or 0 forces the choice (the tests run the device
  /// path on the emulator, against the host path's documents).
  DeviceGate *deviceGate() {
    if (gateTried_) return gate_.get();
    gateTried_ = true;
    const char *forced = std::getenv("PTXFORGE_DEVICE_GATE");
    const bool wanted = forced && *forced ? std::string(forced) != "0"
                                          : executor_.properties().backend.find("gpu") != std::string::npos;
    if (!wanted) return nullptr;
    Result<std::unique_ptr<DeviceGate>> loaded = DeviceGate::load(executor_, result_.arch);
    if (loaded) {
      gate_ = std::move(*loaded);
    } else {
      result_.diagnostics.push_back({"device-gate-unavailable", ptx::Severity::Warning, 1, 1,
                                     "inputs are made and outputs compared on the host: the gate's kernels did not "
                                     "load: " + render(loaded.error()),
                                     ""});
    }
    return gate_.get();
  }

  /// The host digest of param `index`'s generated data in `side`.
  uint64_t inputDigest(size_t index, const SideBuffers &side) {
    const bool cached = index < inputCache_.size() && inputCache_[index] == side.inputs[index];
    if (cached && inputDigests_[index]) return *inputDigests_[index];
    const std::vector<std::byte> &data = *side.inputs[index];
    const uint64_t digest = hostDigest(data.data(), side.dataBytes[index], secrets_.digestKey);
    if (cached) inputDigests_[index] = digest;
    return digest;
  }

  exec::LaunchConfig toConfig(const tasks::ResolvedLaunch &launch) const {
    exec::LaunchConfig config;
    config.grid = {launch.grid[0], launch.grid[1], launch.grid[2]};
    config.block = {launch.block[0], launch.block[1], launch.block[2]};
    config.dynamicSharedBytes = launch.smem;
    config.timeoutMs = options_.launchTimeoutMs; // the watchdog's deadline for a hang
    return config;
  }

  /// CheckOptions::swapBuffers, unless $PTXFORGE_GATE_SWAP is "0".
  bool swapBuffers() const {
    const char *env = std::getenv("PTXFORGE_GATE_SWAP");
    return options_.swapBuffers && !(env && std::string_view(env) == "0");
  }

  void setExecutorTag(std::string tag) { executorTag_ = std::move(tag); }
  /// Outputs always come back to the host (results compared across executors
  /// or with a vendor library's).
  void setHostOutputs() { hostOutputs_ = true; }

private:
  const tasks::TaskSpec &task_;
  exec::Executor &executor_;
  const CheckOptions &options_;
  CheckResult &result_;
  const CheckSecrets &secrets_;
  std::vector<ModuleVariable> variables_;
  std::map<std::pair<size_t, int>, Outputs> referenceCache_;
  std::string inputKey_; ///< the (shape, trial) whose inputs inputCache_ holds
  std::vector<std::shared_ptr<const std::vector<std::byte>>> inputCache_;
  /// Per param: that (shape, trial)'s initial data, on the device.
  std::vector<std::shared_ptr<exec::DeviceBuffer>> pristine_;
  std::vector<std::optional<uint64_t>> inputDigests_; ///< per param: the host digest of inputCache_'s data
  std::unique_ptr<DeviceDigest> digest_;
  bool digestTried_ = false;
  std::unique_ptr<DeviceGate> gate_;
  bool gateTried_ = false;
  bool hostOutputs_ = false;
  bool fatalFinding_ = false;
  std::string fatalFindingText_;
  std::string executorTag_;
};

} // namespace

const char *verdictName(Verdict verdict) {
  switch (verdict) {
  case Verdict::Correct: return "correct";
  case Verdict::Wrong: return "wrong";
  case Verdict::CompileError: return "compile-error";
  case Verdict::LintError: return "lint-error";
  case Verdict::Crashed: return "crashed";
  case Verdict::Timeout: return "timeout";
  case Verdict::LaunchError: return "launch-error";
  case Verdict::Rejected: return "rejected";
  case Verdict::NoPtx: return "no-ptx";
  case Verdict::NotVerified: return "not-verified";
  }
  return "rejected";
}

std::optional<Verdict> parseVerdict(std::string_view name) {
  for (Verdict verdict : {Verdict::Correct, Verdict::Wrong, Verdict::CompileError, Verdict::LintError,
                          Verdict::Crashed, Verdict::Timeout, Verdict::LaunchError, Verdict::Rejected, Verdict::NoPtx,
                          Verdict::NotVerified})
    if (name == verdictName(verdict)) return verdict;
  return std::nullopt;
}

const char *stageName(Stage stage) {
  switch (stage) {
  case Stage::Extract: return "extract";
  case Stage::Lint: return "lint";
  case Stage::Compile: return "compile";
  case Stage::Execute: return "execute";
  case Stage::Benchmark: return "benchmark";
  case Stage::Done: return "done";
  }
  return "lint";
}

std::optional<Stage> parseStage(std::string_view name) {
  for (Stage stage : {Stage::Extract, Stage::Lint, Stage::Compile, Stage::Execute, Stage::Benchmark, Stage::Done})
    if (name == stageName(stage)) return stage;
  return std::nullopt;
}

Candidate Candidate::fromText(std::string text, const tasks::TaskSpec &task) {
  Candidate candidate;
  candidate.text = std::move(text);
  // Parsed once for the whole gate: the lint, the gate's checks, the
  // directives' entry and the module variables all read this tree.
  candidate.parsed = ptx::parse(candidate.text, ptx::DiagnosticLimits::unlimited());
  candidate.directives = tasks::parseLaunchDirectives(candidate.text, task.symbols);
  for (const ptx::TopLevel &item : candidate.parsed.module.items) {
    if (item.kind == ptx::TopLevel::Kind::Function && item.function.isEntry)
      candidate.entries.push_back(item.function.name);
    // Module-scope .global variables are the one place a kernel can keep
    // state from one launch to the next without the gate seeing it.
    if (item.kind == ptx::TopLevel::Kind::Variable && item.variable.space == ptx::StateSpace::Global &&
        item.variable.linkage != "extern")
      candidate.moduleVariables.push_back(item.variable.name);
  }
  return candidate;
}

std::vector<ptx::Diagnostic> gateChecks(const tasks::TaskSpec &task, std::string_view candidatePtx) {
  return gateChecks(task, ptx::parse(candidatePtx).module);
}

std::vector<ptx::Diagnostic> gateChecks(const tasks::TaskSpec &task, const ptx::Module &module) {
  std::vector<ptx::Diagnostic> diagnostics;
  const ptx::Function *kernel = nullptr;
  std::vector<std::string> entries;
  for (const ptx::TopLevel &item : module.items) {
    if (item.kind != ptx::TopLevel::Kind::Function || !item.function.isEntry) continue;
    entries.push_back(item.function.name);
    if (item.function.name == task.kernel && item.function.hasBody) kernel = &item.function;
  }
  if (!kernel) {
    std::string found;
    for (const std::string &name : entries) found += (found.empty() ? "" : ", ") + ("`" + name + "`");
    diagnostics.push_back({"missing-kernel", ptx::Severity::Error, 1, 1,
                           fmt::format("the module has no `.entry {}` with a body (task '{}'){}", task.kernel, task.name,
                                       found.empty() ? "" : "; entries found: " + found),
                           fmt::format("name the kernel `.visible .entry {}(...)`", task.kernel)});
    return diagnostics;
  }
  if (kernel->params.size() != task.params.size()) {
    diagnostics.push_back({"signature-mismatch", ptx::Severity::Error, kernel->nameLoc.line, kernel->nameLoc.column,
                           fmt::format("`{}` takes {} parameters; task '{}' passes {}", task.kernel,
                                       kernel->params.size(), task.name, task.params.size()),
                           "declare one .param per task parameter, in order (see `ptxforge task show " + task.name +
                               "`)"});
  } else {
    for (size_t i = 0; i < task.params.size(); ++i) {
      const tasks::ParamSpec &want = task.params[i];
      const ptx::VariableDecl &got = kernel->params[i];
      size_t wantBytes = tasks::paramBytes(want); // 128 for a tensor map
      size_t gotBytes = ptxTypeBytes(got.type) * (got.arrayDims.empty() ? 1 : got.arrayDims.front());
      if (got.vectorWidth) gotBytes *= got.vectorWidth;
      if (gotBytes != wantBytes)
        diagnostics.push_back(
            {"signature-mismatch", ptx::Severity::Error, got.loc.line, got.loc.column,
             fmt::format("parameter {} `{}` is {} bytes (.{}); task parameter '{}' is {}{} ({} bytes)", i + 1, got.name,
                         gotBytes, got.type, want.name, tasks::elementTypeName(want.type), want.isPointer ? "*" : "",
                         wantBytes),
             want.tensorMap   ? "a tensor map is `.param .align 64 .b8 " + want.name + "[128]`"
             : want.isPointer ? "pass pointers as `.param .u64`"
                              : fmt::format("declare it `.param .{}`", tasks::elementTypeName(want.type))});
    }
  }
  // Timers let a kernel measure, and so game, its own timing.
  std::function<void(const std::vector<ptx::Statement> &)> scan = [&](const std::vector<ptx::Statement> &body) {
    for (const ptx::Statement &statement : body) {
      if (statement.kind == ptx::Statement::Kind::Block) scan(statement.block.statements);
      if (statement.kind != ptx::Statement::Kind::Instruction) continue;
      for (const ptx::Operand &operand : statement.instruction.operands) {
        std::string base = operand.name.substr(0, operand.name.find('.'));
        // %pm0..%pm7 (and their _64 forms) are performance counters: they
        // count cycles or events as well as a clock does.
        const bool counter = base.rfind("%pm", 0) == 0 && base.size() > 3 && std::isdigit(static_cast<unsigned char>(base[3]));
        if (base == "%clock" || base == "%clock64" || base == "%clock_hi" || base == "%globaltimer" ||
            base == "%globaltimer_lo" || base == "%globaltimer_hi" || counter)
          diagnostics.push_back({"timer-read", ptx::Severity::Error, operand.loc.line, operand.loc.column,
                                 fmt::format("candidates may not read `{}`", operand.name),
                                 "remove the timer read: timing is measured by the gate"});
      }
    }
  };
  for (const ptx::TopLevel &item : module.items)
    if (item.kind == ptx::TopLevel::Kind::Function) scan(item.function.body);
  return diagnostics;
}

namespace {

/// How much more work than the largest small shape the emulator's wide drawn
/// shape may take (see selectShapes).
constexpr int64_t kEmulatedDrawWork = 2;

/// Draws a shape from the ranges the shapes of `pool` span: each symbol
/// uniformly in [min, max], kept a multiple of the greatest common divisor of
/// its values there when that is above 1; a symbol that never varies stays.
tasks::Shape drawShape(const tasks::TaskSpec &task, const std::vector<size_t> &pool, uint64_t &state, bool odd,
                       int64_t cap = INT64_MAX) {
  tasks::Shape shape;
  for (const std::string &symbol : task.symbols) {
    int64_t low = INT64_MAX, high = INT64_MIN, divisor = 0;
    for (size_t index : pool) {
      auto found = task.shapes[index].find(symbol);
      if (found == task.shapes[index].end()) continue;
      low = std::min(low, found->second);
      high = std::max(high, found->second);
      divisor = std::gcd(divisor, found->second);
    }
    if (low > high) continue;
    high = std::max(low, std::min(high, cap));
    divisor = std::max<int64_t>(1, divisor);
    int64_t steps = (high - low) / divisor;
    int64_t value = low + divisor * static_cast<int64_t>(tasks::splitmix64(state) % static_cast<uint64_t>(steps + 1));
    if (odd && steps > 0) {
      // Log-uniform: small sizes, where a dropped tail is a large share of
      // the result, come up as often as large ones.
      double unit = static_cast<double>(tasks::splitmix64(state) >> 11) * 0x1p-53;
      double logLow = std::log(static_cast<double>(std::max<int64_t>(1, low)));
      double logHigh = std::log(static_cast<double>(std::max<int64_t>(1, high)));
      int64_t drawnValue = static_cast<int64_t>(std::exp(logLow + unit * (logHigh - logLow)));
      value = low + divisor * ((std::clamp(drawnValue, low, high) - low) / divisor);
    }
    // An odd value is ragged for every power-of-two tile and vector width.
    if (odd && divisor == 1 && value % 2 == 0) value += value + 1 <= high ? 1 : -1;
    shape[symbol] = std::max(low, value);
  }
  return shape;
}

bool usesTensorCores(const ptx::Module &module) {
  bool found = false;
  std::function<void(const std::vector<ptx::Statement> &)> scan = [&](const std::vector<ptx::Statement> &body) {
    for (const ptx::Statement &statement : body) {
      if (statement.kind == ptx::Statement::Kind::Block) scan(statement.block.statements);
      if (statement.kind == ptx::Statement::Kind::Instruction) {
        const std::string &opcode = statement.instruction.opcode;
        found = found || opcode == "mma" || opcode == "wgmma" || opcode == "tcgen05" || opcode == "wmma";
      }
    }
  };
  for (const ptx::TopLevel &item : module.items)
    if (item.kind == ptx::TopLevel::Kind::Function) scan(item.function.body);
  return found;
}

uint64_t freshSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device() ^
         static_cast<uint64_t>(Clock::now().time_since_epoch().count());
}

/// One executor's part of a check: load, correctness over the shapes (and the
/// module-state probes), then, for the primary GPU executor, timing and the
/// re-check. Returns true while the candidate is correct so far; false when
/// `result` holds a verdict.
class ExecutorRun {
public:
  ExecutorRun(const tasks::TaskSpec &task, const Candidate &candidate, exec::Executor &executor,
              const CheckOptions &options, CheckResult &result, const CheckSecrets &secrets,
              const tasks::CompiledReference &reference)
      : task_(task), candidate_(candidate), executor_(executor), options_(options), result_(result),
        secrets_(secrets), reference_(reference), gate_(task, executor, options, result, secrets) {}

  ~ExecutorRun() {
    for (exec::ModuleHandle module : modules_) (void)executor_.unloadModule(module);
  }

  bool emulated() const { return executor_.moduleFormat() == exec::ModuleFormat::Ptx; }

  Result<bool> load() {
    auto bytesOf = [](std::string_view text) { return std::vector<uint8_t>(text.begin(), text.end()); };
    Result<exec::ModuleHandle> referenceModule =
        emulated() ? executor_.loadModule(bytesOf(reference_.ptx), exec::ModuleFormat::Ptx)
                   : executor_.loadModule(reference_.cubin, exec::ModuleFormat::Cubin);
    if (!referenceModule)
      return makeError(referenceModule.error().kind, "the reference does not load: " + render(referenceModule.error()));
    modules_.push_back(*referenceModule);
    Result<exec::KernelInfo> referenceKernel = executor_.getKernel(*referenceModule, task_.kernel);
    if (!referenceKernel) return referenceKernel.error();
    referenceKernel_ = referenceKernel->handle;

    Result<exec::ModuleHandle> candidateModule =
        emulated() ? executor_.loadModule(bytesOf(candidate_.text), exec::ModuleFormat::Ptx)
                   : executor_.loadModule(result_.compile->cubin, exec::ModuleFormat::Cubin);
    if (!candidateModule && exec::execErrorKindOf(candidateModule.error()) == exec::ExecErrorKind::EmuUnsupported) {
      // Not the candidate's fault: the emulator cannot run it. Located, and no verdict.
      const Error &error = candidateModule.error();
      result_.diagnostics.push_back({error.code, ptx::Severity::Error, error.line, 0, error.message, ""});
      result_.verdict = Verdict::NotVerified;
      result_.summary = "not verified: the emulator cannot run this candidate: " + render(error);
      return false;
    }
    if (!candidateModule) {
      if (std::optional<Verdict> verdict = verdictForExecError(candidateModule.error())) {
        result_.executorError = render(candidateModule.error());
        result_.driverError = candidateModule.error().cause;
        result_.verdict = *verdict;
        result_.summary = std::string(verdictName(*verdict)) + ": " + render(candidateModule.error());
        return false;
      }
      return candidateModule.error();
    }
    modules_.push_back(*candidateModule);
    Result<exec::KernelInfo> candidateKernel = executor_.getKernel(*candidateModule, task_.kernel);
    if (!candidateKernel) {
      result_.executorError = render(candidateKernel.error());
      result_.driverError = candidateKernel.error().cause;
      result_.verdict = Verdict::CompileError;
      result_.summary = "compile-error: " + render(candidateKernel.error());
      return false;
    }
    candidateKernel_ = candidateKernel->handle;
    if (!emulated() || !result_.kernel) result_.kernel = *candidateKernel;
    if (Result<void> ok = gate_.attachModuleVariables(*candidateModule, candidate_.moduleVariables); !ok)
      return ok.error();
    return true;
  }

  /// The task's shapes `indices`, then `drawn` shapes drawn from their ranges.
  void selectShapes(const std::vector<size_t> &indices, int drawn, uint64_t drawSalt,
                    const std::vector<tasks::Shape> &extra = {}) {
    for (size_t index : indices) entries_.push_back({index, task_.shapes[index], false});
    for (size_t k = 0; k < extra.size(); ++k) entries_.push_back({task_.shapes.size() + 100 + k, extra[k], false});
    // Shapes are drawn from the range of the checked shapes, leaving out the
    // largest when it is big (over 4M elements) and there are three or more:
    // it is there for timing and bandwidth and is checked anyway; a drawn
    // shape is there to be ragged, and a big one only costs host time.
    std::vector<size_t> pool = indices;
    if (pool.size() >= 3) {
      auto largest = std::max_element(pool.begin(), pool.end(), [&](size_t a, size_t b) {
        return tasks::elementsOf(task_, task_.shapes[a]) < tasks::elementsOf(task_, task_.shapes[b]);
      });
      if (tasks::elementsOf(task_, task_.shapes[*largest]) > (int64_t(1) << 22)) pool.erase(largest);
    }
    // The first drawn shape is odd and small in every dimension (at most
    // 1024): a dropped or doubled tail element is then a large share of the
    // result, beyond any tolerance that allows for rounding (a sum of 50,000
    // terms of mean 1 may be off by 5 under rtol 1e-4, so at that size a lost
    // element can pass). The third is odd anywhere in the range.
    //
    // On the emulator, which checks the task's small shapes, the third is
    // grown past them in every dimension, to about kEmulatedDrawWork times
    // the work of the largest: the small shapes may fit one tile of a blocked
    // kernel in some dimension (hgemm's M <= 128), so the code of a second
    // block row or of the later iterations of a K loop ran only on a GPU (11
    // of 20 mutants of hgemm's reference passed the emulator on the small
    // shapes; 6 of them fail on one of 133x97x71, 257x130x200, 130x250x33,
    // and one grown shape per check catches 2 of the 11 in two seeds).
    int64_t wideBudget = 0;
    if (emulated() && indices.size() < task_.shapes.size()) {
      for (size_t index : indices) wideBudget = std::max(wideBudget, workOf(task_.shapes[index]));
      wideBudget *= kEmulatedDrawWork;
    }
    uint64_t state = secrets_.seed ^ drawSalt;
    for (int k = 0; k < drawn && !pool.empty(); ++k) {
      const bool wide = k == 2 && wideBudget > 0;
      // A draw that lands on a shape already checked is drawn again (a few
      // times: a task whose range holds few shapes may have no other).
      for (int attempt = 0; attempt < 4; ++attempt) {
        tasks::Shape shape = wide ? grownShape(pool, wideBudget, state)
                                  : drawShape(task_, pool, state, /*odd=*/k % 2 == 0, k == 0 ? 1024 : INT64_MAX);
        bool known = std::any_of(entries_.begin(), entries_.end(), [&](const ShapeEntry &e) { return e.shape == shape; });
        if (known) continue;
        entries_.push_back({task_.shapes.size() + static_cast<size_t>(k), shape, true});
        break;
      }
    }
  }

  Result<bool> correctness(int trials) {
    for (const ShapeEntry &entry : entries_) {
      Result<tasks::ResolvedLaunch> referenceLaunch = tasks::resolveLaunch(tasks::LaunchConfig{}, task_, entry.shape);
      if (!referenceLaunch) return referenceLaunch.error();
      Result<tasks::ResolvedLaunch> candidateLaunch =
          tasks::resolveLaunch(candidate_.directives.config, task_, entry.shape);
      if (!candidateLaunch) {
        result_.diagnostics.push_back({"launch-directive", ptx::Severity::Error, 1, 1,
                                       "on " + tasks::shapeToString(entry.shape) + ": " +
                                           candidateLaunch.error().message,
                                       ""});
        result_.verdict = Verdict::LintError;
        result_.summary = "lint-error: the launch directive does not work for " + tasks::shapeToString(entry.shape);
        return false;
      }
      launches_[entry.index] = {*referenceLaunch, *candidateLaunch};
      // Drawn shapes get one trial: their point is the shape, not the data.
      // The first trial of every shape is launched twice on its buffers; the
      // timed shape's timed launches do that many times over, verified.
      const bool timedLater = !emulated() && options_.benchmark && &entry == timedShape();
      for (int trial = 0; trial < (entry.drawn ? 1 : trials); ++trial) {
        Result<bool> passed = gate_.runTrial(entry, trial, false, referenceKernel_, candidateKernel_,
                                             *referenceLaunch, *candidateLaunch, "",
                                             trial == 0 && !timedLater ? 1 : 0);
        if (!passed || !*passed) return passed;
      }
    }
    // A launch left module variables changed: its next launch would start
    // from that state. Launches that do must still be right.
    if (!result_.stateLeft.empty() && timedShape()) {
      // The largest checked shape: a kernel that does part of the work when
      // its state says so shows it only where there is more than one block.
      const ShapeEntry &entry = *timedShape();
      int trial = trials + 10;
      for (const char *probe : {"left", "u32-37", "u32-1000", "bytes-7f", "bytes-01"}) {
        Result<bool> passed = gate_.runTrial(entry, trial++, false, referenceKernel_, candidateKernel_,
                                             launches_[entry.index].first, launches_[entry.index].second, probe);
        if (!passed) return passed;
        if (!*passed) {
          std::string names;
          for (const std::string &name : result_.stateLeft) names += (names.empty() ? "'" : ", '") + name + "'";
          result_.summary += fmt::format(" (the kernel leaves module variable{} {} changed after a launch, and its "
                                         "results depend on that state)",
                                         result_.stateLeft.size() == 1 ? "" : "s", names);
          return false;
        }
      }
    }
    return true;
  }

  /// A launch's work for sizing drawn shapes: the task's flops when it
  /// states them and they are more than its buffers' elements, else those.
  int64_t workOf(const tasks::Shape &shape) const {
    int64_t work = tasks::elementsOf(task_, shape);
    if (task_.cost.flops)
      if (Result<int64_t> flops = tasks::evaluate(*task_.cost.flops, shape)) work = std::max(work, *flops);
    return work;
  }

  /// A shape past the small ones in every dimension: each symbol at the
  /// largest value `pool` has for it, all scaled up by one factor until the
  /// work reaches `budget`, then each moved by up to 20% at random; a
  /// multiple of what all the task's values of it are multiples of (odd when
  /// that is 1), and at most the task's largest value.
  tasks::Shape grownShape(const std::vector<size_t> &pool, int64_t budget, uint64_t &state) const {
    std::map<std::string, int64_t> start, ceiling, divisor;
    for (const tasks::Shape &taskShape : task_.shapes)
      for (const auto &[symbol, value] : taskShape) {
        divisor[symbol] = std::gcd(divisor[symbol], value);
        ceiling[symbol] = std::max(ceiling[symbol], value);
      }
    for (size_t index : pool)
      for (const auto &[symbol, value] : task_.shapes[index]) start[symbol] = std::max(start[symbol], value);
    auto scaled = [&](double factor, bool jitter) {
      tasks::Shape shape;
      for (const auto &[symbol, value] : start) {
        double wobble = jitter ? 0.8 + 0.4 * static_cast<double>(tasks::splitmix64(state) >> 11) * 0x1p-53 : 1.0;
        const int64_t step = std::max<int64_t>(1, divisor[symbol]);
        int64_t grown = static_cast<int64_t>(static_cast<double>(value) * factor * wobble) / step * step;
        if (step == 1 && grown % 2 == 0) ++grown; // ragged for every power-of-two tile
        shape[symbol] = std::clamp(grown, step, std::max(step, ceiling[symbol] / step * step));
      }
      return shape;
    };
    double low = 1.0, high = 1024.0;
    for (int i = 0; i < 40; ++i) {
      const double mid = std::sqrt(low * high);
      (workOf(scaled(mid, false)) <= budget ? low : high) = mid;
    }
    tasks::Shape shape = scaled(low, true);
    return workOf(shape) <= budget * 2 ? shape : scaled(low, false);
  }

  /// The largest of the task's checked shapes (by its buffers).
  const ShapeEntry *timedShape() const {
    const ShapeEntry *timed = nullptr;
    int64_t largest = -1;
    for (const ShapeEntry &entry : entries_) {
      if (entry.drawn) continue;
      int64_t bytes = 0;
      for (const tasks::ParamSpec &param : task_.params)
        if (param.isPointer)
          if (Result<int64_t> count = tasks::evaluate(param.count, entry.shape))
            bytes += *count * static_cast<int64_t>(tasks::elementSize(param.type));
      if (bytes > largest) {
        largest = bytes;
        timed = &entry;
      }
    }
    return timed;
  }

  Result<bool> benchmark(int trials) {
    const ShapeEntry *timed = timedShape();
    if (!timed) return true;
    const auto &launch = launches_[timed->index];
    Result<std::optional<BenchmarkReport>> bench =
        gate_.benchmark(*timed, trials + 1, referenceKernel_, candidateKernel_, launch.first, launch.second);
    if (!bench) return bench.error();
    if (!*bench) return false;
    result_.benchmarks.push_back(std::move(**bench));
    BenchmarkReport &report = result_.benchmarks.back();

    // A figure above the machine's ceiling is a measurement bug or a cheat.
    // The ceilings are measured on first use and cached (`ptxforge device`).
    std::optional<DeviceCeilings> ceilings = loadCachedCeilings(executor_.properties().name);
    const bool gpu = executor_.properties().backend.find("gpu") != std::string::npos;
    if (!ceilings && gpu) {
      if (Result<DeviceCeilings> measured = measureCeilings(executor_)) {
        (void)storeCeilings(*measured);
        ceilings = *measured;
      } else {
        result_.diagnostics.push_back({"ceilings-unmeasured", ptx::Severity::Warning, 1, 1,
                                       "the device's ceilings could not be measured: " + render(measured.error()),
                                       "run `ptxforge device --refresh`"});
      }
    }
    if (ceilings) {
      if (report.gbps && ceilings->copyGBs > 0) report.copyCeilingFraction = *report.gbps / ceilings->copyGBs;
      if (report.gflops && ceilings->fp32Gflops > 0) report.fp32CeilingFraction = *report.gflops / ceilings->fp32Gflops;
    }
    // Headroom: 10% over a measured ceiling (a candidate may stream better
    // than the simple kernel that measured it), 5% over a theoretical peak.
    auto reject = [&](std::string why) {
      result_.verdict = Verdict::Rejected;
      result_.summary = "rejected: " + why + "; implausible, so not a result";
      return false;
    };
    if (report.copyCeilingFraction && *report.copyCeilingFraction > 1.10)
      return reject(fmt::format("{:.0f} GB/s is {:.0f}% of the measured copy ceiling ({:.0f} GB/s)",
                                report.gbps.value_or(0), 100 * *report.copyCeilingFraction, ceilings->copyGBs));
    if (report.bandwidthFraction && *report.bandwidthFraction > 1.05)
      return reject(fmt::format("{:.0f} GB/s is above the device's {:.0f} GB/s DRAM peak", report.gbps.value_or(0),
                                executor_.properties().peakMemoryBandwidthGBs()));
    if (report.gflops) {
      const exec::DeviceProperties &device = executor_.properties();
      if (usesTensorCores(candidate_.parsed.module)) {
        // Dense f16/bf16 tensor throughput: 4096 FLOP per SM per clock on
        // sm_90 (mma.sync and wgmma alike); no task here has a faster type.
        double peak = 4096.0 * device.multiprocessorCount * device.clockRateKHz * 1e3 / 1e9;
        if (peak > 0 && *report.gflops > 1.05 * peak)
          return reject(fmt::format("{:.0f} GFLOP/s is above the device's {:.0f} GFLOP/s tensor-core peak",
                                    *report.gflops, peak));
      } else if (report.fp32CeilingFraction && *report.fp32CeilingFraction > 1.10) {
        return reject(fmt::format("{:.0f} GFLOP/s without tensor cores is {:.0f}% of the measured FP32 ceiling "
                                  "({:.0f} GFLOP/s)",
                                  *report.gflops, 100 * *report.fp32CeilingFraction, ceilings->fp32Gflops));
      }
    }
    // The re-check: fresh buffers, the timed shape, after everything else ran.
    return gate_.runTrial(*timed, trials, true, referenceKernel_, candidateKernel_, launch.first, launch.second);
  }

  size_t shapeCount() const { return entries_.size(); }
  size_t drawnCount() const {
    return static_cast<size_t>(std::count_if(entries_.begin(), entries_.end(), [](const ShapeEntry &e) { return e.drawn; }));
  }
  void setTag(std::string tag) { gate_.setExecutorTag(std::move(tag)); }

private:
  const tasks::TaskSpec &task_;
  const Candidate &candidate_;
  exec::Executor &executor_;
  const CheckOptions &options_;
  CheckResult &result_;
  const CheckSecrets &secrets_;
  const tasks::CompiledReference &reference_;
  Gate gate_;
  std::vector<exec::ModuleHandle> modules_;
  exec::KernelHandle referenceKernel_, candidateKernel_;
  std::vector<ShapeEntry> entries_;
  std::map<size_t, std::pair<tasks::ResolvedLaunch, tasks::ResolvedLaunch>> launches_; ///< (reference, candidate)
};

} // namespace

Result<CheckResult> check(const tasks::TaskSpec &task, std::string_view candidatePtx, exec::Executor *executor,
                          const CheckOptions &options) {
  return check(task, Candidate::fromText(std::string(candidatePtx), task), executor, options);
}

namespace {

/// Occupancy of the launch with the most blocks among the primary executor's
/// trials; nullopt before a compile or a resolved launch, or for an
/// architecture the occupancy table lacks.
std::optional<OccupancyReport> occupancyOf(const CheckResult &result, const exec::Executor *executor) {
  if (!result.compile || !result.compile->ok) return std::nullopt;
  const TrialReport *widest = nullptr;
  auto blocks = [](const tasks::ResolvedLaunch &l) {
    return static_cast<long long>(l.grid[0]) * l.grid[1] * l.grid[2];
  };
  for (const TrialReport &trial : result.trials)
    if (trial.executor.empty() && trial.probe.empty() && (!widest || blocks(trial.launch) > blocks(widest->launch)))
      widest = &trial;
  if (!widest) return std::nullopt;
  std::optional<toolchain::SmLimits> limits = toolchain::smLimitsFor(result.arch);
  if (!limits) return std::nullopt;
  if (executor && executor->moduleFormat() == exec::ModuleFormat::Cubin && executor->properties().multiprocessorCount > 0)
    limits->smCount = executor->properties().multiprocessorCount;
  OccupancyReport report;
  report.shape = widest->shape;
  report.launch = widest->launch;
  if (result.kernel && result.kernel->registerCount > 0) {
    report.registers = result.kernel->registerCount;
    report.registersFrom = "driver";
    report.staticSharedBytes = result.kernel->staticSharedBytes;
  } else {
    const toolchain::ResourceUsage &resources = result.compile->resources;
    if (resources.registers < 0) return std::nullopt;
    report.registers = resources.registers;
    report.registersFrom = "compiler";
    report.staticSharedBytes = resources.sharedBytes;
  }
  const tasks::ResolvedLaunch &launch = widest->launch;
  report.occupancy = toolchain::computeOccupancy(*limits, report.registers,
                                                 static_cast<int>(launch.block[0] * launch.block[1] * launch.block[2]),
                                                 report.staticSharedBytes, static_cast<int>(launch.smem), blocks(launch));
  return report;
}

} // namespace

Result<CheckResult> check(const tasks::TaskSpec &task, const Candidate &candidate, exec::Executor *executor,
                          const CheckOptions &options) {
  const Clock::time_point checkStart = Clock::now();
  CheckResult result;
  result.task = task.name;
  result.seed = options.seed ? *options.seed : freshSeed();
  const CheckSecrets secrets(result.seed);
  // The device's architecture unless asked for another; `.target sm_90a` PTX
  // on an sm_90 device is compiled (and its reference built) for sm_90a.
  result.arch = ptx::compileArchFor(candidate.parsed.module, !options.arch.empty() ? options.arch
                                                             : executor                ? executor->properties().arch()
                                                                                       : "sm_90");
  result.device = executor ? executor->properties().name : "";
  result.shapeIndices = options.shapeIndices;
  result.moduleVariables = candidate.moduleVariables;
  if (result.shapeIndices.empty())
    for (size_t i = 0; i < task.shapes.size(); ++i) result.shapeIndices.push_back(i);
  for (size_t index : result.shapeIndices)
    if (index >= task.shapes.size())
      return makeError(ErrorKind::InvalidInput, fmt::format("task '{}' has {} shapes; there is no shape {}", task.name,
                                                            task.shapes.size(), index));
  auto finish = [&](Verdict verdict, Stage stage, std::string summary) {
    result.verdict = verdict;
    result.stage = stage;
    if (!summary.empty()) result.summary = std::move(summary);
    result.occupancy = occupancyOf(result, executor);
    ptx::sortByLocation(result.diagnostics);
    result.times.total = millisSince(checkStart);
    return result;
  };

  // 1. Lint: the PTX itself, the launch directives, the gate's own checks.
  result.stage = Stage::Lint;
  Clock::time_point start = Clock::now();
  result.diagnostics = ptx::lintParsed(candidate.parsed);
  for (const ptx::Diagnostic &d : candidate.directives.diagnostics) result.diagnostics.push_back(d);
  for (ptx::Diagnostic &d : gateChecks(task, candidate.parsed.module)) result.diagnostics.push_back(std::move(d));
  result.times.lint = millisSince(start);
  bool timerRead = std::any_of(result.diagnostics.begin(), result.diagnostics.end(),
                               [](const ptx::Diagnostic &d) { return d.code == "timer-read"; });
  if (timerRead) return finish(Verdict::Rejected, Stage::Lint, "rejected: the candidate reads a timer register");
  if (options.lint && ptx::hasErrors(result.diagnostics)) {
    size_t errors = static_cast<size_t>(std::count_if(result.diagnostics.begin(), result.diagnostics.end(),
                                                      [](const auto &d) { return d.severity == ptx::Severity::Error; }));
    return finish(Verdict::LintError, Stage::Lint,
                  fmt::format("lint-error: {} error{}", errors, errors == 1 ? "" : "s"));
  }

  // 2. Compile (once: a caller that compiled already hands the result over).
  result.stage = Stage::Compile;
  start = Clock::now();
  const toolchain::CompileOptions::Backend backend = toolchain::gateCompilerBackend();
  if (candidate.compiled && candidate.compiled->arch == result.arch &&
      candidate.compiled->backend == toolchain::backendName(backend)) {
    result.compile = *candidate.compiled;
  } else {
    toolchain::CompileOptions compileOptions;
    compileOptions.arch = result.arch;
    compileOptions.entryName = task.kernel;
    compileOptions.backend = backend;
    Result<toolchain::CompileResult> compiled = toolchain::compilePtx(candidate.text, compileOptions);
    if (!compiled) return compiled.error();
    result.compile = std::move(*compiled);
  }
  result.times.compile = millisSince(start);
  for (const ptx::Diagnostic &d : result.compile->diagnostics) result.diagnostics.push_back(d);
  if (!result.compile->ok) return finish(Verdict::CompileError, Stage::Compile, "compile-error: the compiler rejected the PTX");

  if (!executor)
    return finish(Verdict::NotVerified, Stage::Compile,
                  "not verified: no executor (no GPU here; --executor emu runs the CPU emulator)");

  // 3. Execute and compare, on the primary executor.
  result.stage = Stage::Execute;
  Result<tasks::CompiledReference> reference = tasks::compileReference(task, result.arch);
  if (!reference) return reference.error();
  result.referenceCompiler = reference->nvrtcVersion;
  if (reference->backend == "ptxas") result.referenceCompiler += ", ptxas whole-program";
  const int trials = std::max(1, options.trials);
  ExecutorRun primary(task, candidate, *executor, options, result, secrets, *reference);
  Result<bool> ok = primary.load();
  if (ok && *ok) {
    primary.selectShapes(result.shapeIndices, options.drawnShapes, 0xd7a5, options.extraShapes);
    ok = primary.correctness(trials);
  }
  if (!ok) return ok.error();
  // A launch directive that does not work for a shape is a lint error, found
  // while resolving the shapes' launches: the stage says lint, not execute.
  if (!*ok) return finish(result.verdict, result.verdict == Verdict::LintError ? Stage::Lint : Stage::Execute, "");

  // 4. On a GPU machine, the emulator's sanitizers as a second opinion
  // (memory, races within and across CTAs, initialization, barriers).
  if (!options.sanitizer && !options.sanitizerUnavailable.empty() && !primary.emulated())
    result.diagnostics.push_back({"sanitizer-skipped", ptx::Severity::Warning, 1, 1,
                                  "the emulator's sanitizers could not start: " + options.sanitizerUnavailable, ""});
  if (options.sanitizer && !primary.emulated()) {
    start = Clock::now();
    result.sanitizer = options.sanitizer->properties().name;
    CheckResult second = result; // verdicts land here first, then are merged
    second.trials.clear();
    ExecutorRun sanitizer(task, candidate, *options.sanitizer, options, second, secrets, *reference);
    sanitizer.setTag("emu");
    Result<bool> sane = sanitizer.load();
    if (sane && *sane) {
      sanitizer.selectShapes(options.sanitizerShapeIndices.empty() ? task.smallShapes : options.sanitizerShapeIndices,
                             1, 0x5a71);
      sane = sanitizer.correctness(1);
    }
    if (!sane) return sane.error();
    result.diagnostics = std::move(second.diagnostics);
    for (TrialReport &trial : second.trials) result.trials.push_back(std::move(trial));
    result.times.sanitizer = millisSince(start);
    if (!*sane) {
      if (second.verdict == Verdict::NotVerified) {
        // The emulator lacks an instruction the candidate uses: the GPU's
        // verdict stands, and the result says what was not checked.
        result.diagnostics.push_back({"sanitizer-skipped", ptx::Severity::Warning, 1, 1,
                                      "the emulator's sanitizers did not run: " + second.summary, ""});
      } else {
        result.executorError = second.executorError;
        result.driverError = second.driverError;
        return finish(second.verdict, Stage::Execute, "on the emulator (sanitizers): " + second.summary);
      }
    }
  }

  // The emulator's profile of the correct candidate and of the reference.
  if (options.profile)
    addProfile(task, candidate, *reference, primary.emulated() ? executor : options.sanitizer, options, result);

  const size_t shapes = primary.shapeCount();
  const std::string checked = fmt::format("{} shape(s) x {} trial(s){}", shapes - primary.drawnCount(), trials,
                                          primary.drawnCount() ? fmt::format(" + {} drawn shape(s)", primary.drawnCount())
                                                               : std::string());
  const std::string sanitized =
      result.sanitizer.empty() ? "" : fmt::format("; emulator sanitizers clean");
  if (primary.emulated())
    return finish(Verdict::Correct, Stage::Execute,
                  fmt::format("correct on {} in the emulator; not timed (timing needs a GPU)", checked));
  // Nsight Compute on one launch of each, on a GPU, off the timed path.
  const bool underNcu = options.profile && !primary.emulated();
  if (!options.benchmark) {
    if (underNcu) addNcuProfile(task, candidate, *reference, result);
    return finish(Verdict::Correct, Stage::Execute, fmt::format("correct on {}{}; not timed", checked, sanitized));
  }

  // 5. Benchmark: the largest checked shape, then a re-check.
  result.stage = Stage::Benchmark;
  ok = primary.benchmark(trials);
  if (!ok) return ok.error();
  if (!*ok) return finish(result.verdict, Stage::Benchmark, "");
  const BenchmarkReport &report = result.benchmarks.back();
  if (underNcu) addNcuProfile(task, candidate, *reference, result);
  return finish(Verdict::Correct, Stage::Done,
                fmt::format("correct on {}{}; {:.2f}x the nvcc baseline on {} [{:.2f}, {:.2f}]", checked, sanitized,
                            report.speedup, tasks::shapeToString(report.shape), report.speedupLow, report.speedupHigh));
}

Result<CrossCheckResult> crossCheck(const tasks::TaskSpec &task, exec::Executor &a, exec::Executor &b,
                                    const CheckOptions &options) {
  CrossCheckResult result;
  result.task = task.name;
  result.deviceA = a.properties().name;
  result.deviceB = b.properties().name;
  std::string arch = options.arch.empty() ? "sm_90" : options.arch;
  Result<tasks::CompiledReference> reference = tasks::compileReference(task, arch);
  if (!reference) return reference.error();
  std::vector<size_t> shapes = options.shapeIndices.empty() ? task.smallShapes : options.shapeIndices;

  struct Side {
    exec::Executor &executor;
    exec::ModuleHandle module;
    exec::KernelHandle kernel;
    CheckResult scratch;
    std::optional<Gate> gate;
  };
  const CheckSecrets secrets(options.seed.value_or(1)); // both sides get the same inputs
  Side sides[2] = {{a, {}, {}, {}, {}}, {b, {}, {}, {}, {}}};
  for (Side &side : sides) {
    bool ptx = side.executor.moduleFormat() == exec::ModuleFormat::Ptx;
    Result<exec::ModuleHandle> module =
        ptx ? side.executor.loadModule(std::vector<uint8_t>(reference->ptx.begin(), reference->ptx.end()),
                                       exec::ModuleFormat::Ptx)
            : side.executor.loadModule(reference->cubin, exec::ModuleFormat::Cubin);
    if (!module) return module.error();
    Result<exec::KernelInfo> kernel = side.executor.getKernel(*module, task.kernel);
    if (!kernel) return kernel.error();
    side.module = *module;
    side.kernel = kernel->handle;
    side.gate.emplace(task, side.executor, options, side.scratch, secrets);
    side.gate->setHostOutputs();
  }
  for (size_t shapeIndex : shapes) {
    if (shapeIndex >= task.shapes.size())
      return makeError(ErrorKind::InvalidInput, fmt::format("task '{}' has no shape {}", task.name, shapeIndex));
    const tasks::Shape &shape = task.shapes[shapeIndex];
    Result<tasks::ResolvedLaunch> launch = tasks::resolveLaunch(tasks::LaunchConfig{}, task, shape);
    if (!launch) return launch.error();
    for (int trial = 0; trial < std::max(1, options.trials); ++trial) {
      Outputs outputs[2];
      for (int i = 0; i < 2; ++i) {
        Gate &gate = *sides[i].gate;
        Result<SideBuffers> buffers = gate.prepare(shape, trial);
        if (!buffers) return buffers.error();
        Result<exec::PackedArgs> args = gate.arguments(*buffers, shape, trial);
        if (!args) return args.error();
        if (Result<void> ran = sides[i].executor.launch(sides[i].kernel, gate.toConfig(*launch), *args); !ran)
          return makeError(ErrorKind::Internal, fmt::format("the reference failed on {} ({}): {}",
                                                            sides[i].executor.properties().name,
                                                            tasks::shapeToString(shape), render(ran.error())));
        (void)sides[i].executor.takeFindings();
        Result<Outputs> got = gate.collect(*buffers, nullptr);
        if (!got) return got.error();
        outputs[i] = std::move(*got);
      }
      for (size_t p = 0; p < task.params.size(); ++p) {
        const tasks::ParamSpec &param = task.params[p];
        if (!param.isOutput()) continue;
        CrossCheckRow row;
        row.shapeIndex = shapeIndex;
        row.shape = shape;
        row.trial = trial;
        row.param = param.name;
        row.type = param.type;
        size_t size = tasks::elementSize(param.type);
        const Bytes &first = outputs[0][p].host, &second = outputs[1][p].host;
        row.count = first.size() / size;
        for (size_t e = 0; e < row.count; ++e)
          row.identical += std::memcmp(first.data() + e * size, second.data() + e * size, size) == 0;
        row.compare = tasks::compareBuffers(param.type, second.data(), first.data(), row.count,
                                            tasks::toleranceFor(task, param.type));
        bool ok = tasks::isFloatingType(param.type) ? row.compare.passed : row.identical == row.count;
        result.passed = result.passed && ok;
        result.rows.push_back(std::move(row));
      }
    }
  }
  for (Side &side : sides) (void)side.executor.unloadModule(side.module);
  return result;
}

namespace {

nlohmann::json statsJson(const TimingStats &s) {
  return {{"median_ms", s.median}, {"p10_ms", s.p10}, {"p90_ms", s.p90}, {"min_ms", s.min}, {"max_ms", s.max},
          {"samples", s.samples}};
}

template <typename T> nlohmann::json optionalJson(const std::optional<T> &value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

} // namespace

const BenchmarkReport *headlineBenchmark(const CheckResult &result) {
  const BenchmarkReport *headline = nullptr;
  for (const BenchmarkReport &report : result.benchmarks)
    if (!headline || report.baseline.median > headline->baseline.median) headline = &report;
  return headline;
}

nlohmann::json toJson(const CrossCheckResult &result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const CrossCheckRow &row : result.rows)
    rows.push_back({{"shape", tasks::shapeToString(row.shape)},
                    {"shape_index", row.shapeIndex},
                    {"trial", row.trial},
                    {"param", row.param},
                    {"type", tasks::elementTypeName(row.type)},
                    {"elements", row.count},
                    {"bit_identical", row.identical},
                    {"within_tolerance", row.compare.passed},
                    {"mismatches", row.compare.mismatches},
                    {"max_abs_error", row.compare.maxAbsError},
                    {"max_rel_error", row.compare.maxRelError}});
  return {{"task", result.task}, {"a", result.deviceA}, {"b", result.deviceB}, {"passed", result.passed},
          {"rows", rows}};
}

namespace {

nlohmann::json occupancyJson(const std::optional<OccupancyReport> &report) {
  if (!report) return nullptr;
  const toolchain::Occupancy &o = report->occupancy;
  return {{"shape", report->shape},
          {"block", report->launch.block},
          {"grid", report->launch.grid},
          {"dynamic_shared_bytes", report->launch.smem},
          {"static_shared_bytes", report->staticSharedBytes},
          {"shared_bytes_per_block", o.sharedBytesPerBlock},
          {"registers", report->registers},
          {"registers_from", report->registersFrom},
          {"launchable", o.launchable},
          {"blocks_per_sm", o.blocksPerSm},
          {"warps_per_sm", o.warpsPerSm},
          {"occupancy", o.occupancy},
          {"limiter", o.limiter},
          {"blocks_by", {{"registers", o.blocksByRegisters}, {"shared_memory", o.blocksBySharedMemory},
                         {"warps", o.blocksByWarps}, {"slots", o.blocksBySlots}}},
          {"waves", o.waves},
          {"sm_count", o.smCount}};
}

} // namespace

/// toJson(CheckResult) but for the profile, which only a profiled check has.
static nlohmann::json toJsonWithoutProfile(const CheckResult &result) {
  nlohmann::json resources = nullptr;
  if (result.compile) {
    const toolchain::ResourceUsage &r = result.compile->resources;
    resources = {{"registers", r.registers}, {"spill_store_bytes", r.spillStoreBytes},
                 {"spill_load_bytes", r.spillLoadBytes}, {"stack_bytes", r.stackFrameBytes},
                 {"shared_bytes", r.sharedBytes}, {"local_bytes", r.localBytes}, {"barriers", r.barriers},
                 {"compile_ms", result.compile->compileMs}, {"known", r.known}};
  }
  // What the repair and optimize prompts show of the compile besides its
  // resources, so that a result read back from the store (checkResultFromJson)
  // gives the same prompt text.
  nlohmann::json compile = nullptr;
  if (result.compile)
    compile = {{"ok", result.compile->ok},
               {"diagnostics", toolchain::toJson(result.compile->diagnostics)},
               {"advisories", result.compile->advisories},
               {"error_log", result.compile->errorLog}};
  nlohmann::json trials = nlohmann::json::array();
  for (const TrialReport &t : result.trials) {
    nlohmann::json outputs = nlohmann::json::array();
    for (const OutputReport &o : t.outputs) {
      nlohmann::json output = {{"param", o.param},
                               {"guard_bytes_before", o.guardBytesBefore},
                               {"guard_bytes_after", o.guardBytesAfter},
                               {"max_abs_error", o.compare.maxAbsError},
                               {"max_rel_error", o.compare.maxRelError},
                               {"mismatches", o.compare.mismatches},
                               {"compared", o.compare.count},
                               {"within_tolerance", o.compare.passed},
                               {"nan_in_got", o.compare.nanInGot}};
      if (o.compare.firstMismatch)
        output["first_mismatch"] = {{"index", *o.compare.firstMismatch}, {"got", o.compare.firstGotText},
                                    {"expected", o.compare.firstWantText}};
      if (!o.guardDetail.empty()) output["guard_detail"] = o.guardDetail;
      if (o.isInput) {
        output["is_input"] = true;
        output["input_bytes_changed"] = o.inputBytesChanged;
        if (o.firstChangedElement) output["first_changed_element"] = *o.firstChangedElement;
      }
      outputs.push_back(std::move(output));
    }
    nlohmann::json trial = {{"shape_index", t.shapeIndex}, {"shape", t.shape}, {"trial", t.trial},
                            {"after_timing", t.afterTiming}, {"passed", t.passed},
                            {"grid", t.launch.grid}, {"block", t.launch.block}, {"smem", t.launch.smem},
                            {"outputs", std::move(outputs)}};
    if (t.drawn) trial["drawn"] = true;
    if (t.timed) trial["timed"] = true;
    if (!t.executor.empty()) trial["executor"] = t.executor;
    if (!t.probe.empty()) trial["probe"] = t.probe;
    trials.push_back(std::move(trial));
  }
  nlohmann::json timings = nlohmann::json::array();
  for (const BenchmarkReport &b : result.benchmarks)
    timings.push_back({{"shape_index", b.shapeIndex}, {"shape", b.shape}, {"candidate", statsJson(b.candidate)},
                       {"baseline", statsJson(b.baseline)}, {"speedup", b.speedup},
                       {"speedup_band", {b.speedupLow, b.speedupHigh}}, {"gflops", optionalJson(b.gflops)},
                       {"gbps", optionalJson(b.gbps)}, {"baseline_gflops", optionalJson(b.baselineGflops)},
                       {"baseline_gbps", optionalJson(b.baselineGbps)},
                       {"dram_bandwidth_fraction", optionalJson(b.bandwidthFraction)},
                       {"copy_ceiling_fraction", optionalJson(b.copyCeilingFraction)},
                       {"fp32_ceiling_fraction", optionalJson(b.fp32CeilingFraction)},
                       {"schedule", {{"warmups", b.warmups}, {"launches_per_round", b.launchesPerRound},
                                     {"verified_timed_launches", b.verifiedTimedLaunches},
                                     {"buffers_swapped", b.buffersSwapped}}}});
  const StageTimes &st = result.times;
  nlohmann::json times = {{"lint", st.lint},         {"compile", st.compile},     {"inputs", st.inputs},
                          {"reference", st.reference}, {"candidate", st.candidate}, {"compare", st.compare},
                          {"bench", st.bench},       {"sanitizer", st.sanitizer}, {"total", st.total}};
  return {{"verdict", verdictName(result.verdict)},
          {"stage", stageName(result.stage)},
          {"timings_ms", std::move(times)},
          {"module_state", {{"variables", result.moduleVariables}, {"left_changed", result.stateLeft}}},
          {"sanitizer", result.sanitizer},
          {"summary", result.summary},
          {"diagnostics", toolchain::toJson(result.diagnostics)},
          {"resources", std::move(resources)},
          {"compile", std::move(compile)},
          {"kernel", result.kernel ? nlohmann::json{{"registers", result.kernel->registerCount},
                                                    {"static_shared_bytes", result.kernel->staticSharedBytes},
                                                    {"local_bytes", result.kernel->localBytes},
                                                    {"max_threads_per_block", result.kernel->maxThreadsPerBlock}}
                                   : nlohmann::json(nullptr)},
          {"occupancy", occupancyJson(result.occupancy)},
          {"correctness", std::move(trials)},
          {"timing", std::move(timings)},
          {"executor_error", result.executorError},
          {"driver_error", result.driverError},
          {"provenance",
           {{"task", result.task},
            {"arch", result.arch},
            {"device", result.device},
            {"seed", result.seed},
            {"shapes", result.shapeIndices},
            {"reference_compiler", result.referenceCompiler},
            {"compiler", result.compile ? result.compile->toolVersion : std::string()}}}};
}

nlohmann::json toJson(const CheckResult &result) {
  nlohmann::json json = toJsonWithoutProfile(result);
  if (result.profile) json["profile"] = toJson(*result.profile);
  if (result.ncuProfile) json["profile"]["ncu"] = toJson(*result.ncuProfile);
  return json;
}

std::string formatText(const CheckResult &result) {
  // Summaries that already open with the verdict ("wrong on ...", "rejected: ...")
  // are not prefixed with it a second time.
  const std::string name = verdictName(result.verdict);
  const bool named = result.summary.rfind(name, 0) == 0;
  std::string out = named ? result.summary + "\n" : fmt::format("{}: {}\n", name, result.summary);
  out += fmt::format("  task {} on {} ({}), seed {}, stage reached: {}\n", result.task,
                     result.device.empty() ? "no device" : result.device, result.arch, result.seed,
                     stageName(result.stage));
  if (result.compile && result.compile->ok) {
    const toolchain::ResourceUsage &r = result.compile->resources;
    out += fmt::format("  resources: {} registers, {} B spill stores, {} B spill loads, {} B shared, {} B stack\n",
                       r.registers, r.spillStoreBytes, r.spillLoadBytes, r.sharedBytes, r.stackFrameBytes);
  }
  if (result.occupancy) {
    const OccupancyReport &o = *result.occupancy;
    out += fmt::format("  occupancy on {}: {} (block {}x{}x{}, {} registers ({}), {} B static + {} B dynamic shared)\n",
                       tasks::shapeToString(o.shape), toolchain::describe(o.occupancy), o.launch.block[0],
                       o.launch.block[1], o.launch.block[2], o.registers, o.registersFrom, o.staticSharedBytes,
                       o.launch.smem);
  }
  size_t passed = static_cast<size_t>(
      std::count_if(result.trials.begin(), result.trials.end(), [](const TrialReport &t) { return t.passed; }));
  if (!result.trials.empty()) out += fmt::format("  correctness: {}/{} trials passed\n", passed, result.trials.size());
  for (const BenchmarkReport &b : result.benchmarks) {
    out += fmt::format("  timing on {}: candidate {:.4f} ms [p10 {:.4f}, p90 {:.4f}], nvcc baseline {:.4f} ms "
                       "[{:.4f}, {:.4f}], {} samples each\n",
                       tasks::shapeToString(b.shape), b.candidate.median, b.candidate.p10, b.candidate.p90,
                       b.baseline.median, b.baseline.p10, b.baseline.p90, b.candidate.samples);
    out += fmt::format("  speedup {:.3f}x (noise band {:.3f}-{:.3f})", b.speedup, b.speedupLow, b.speedupHigh);
    if (b.gbps) out += fmt::format(", {:.0f} GB/s (baseline {:.0f})", *b.gbps, b.baselineGbps.value_or(0));
    if (b.gflops) out += fmt::format(", {:.0f} GFLOP/s (baseline {:.0f})", *b.gflops, b.baselineGflops.value_or(0));
    out += "\n";
  }
  if (result.profile) out += formatProfileText(*result.profile);
  if (result.ncuProfile) out += formatNcuText(*result.ncuProfile);
  return out;
}

// ---------------------------------------------------------------------------
// The vendor-library baseline

namespace {

exec::LibraryOp libraryOpOf(tasks::VendorOp op) {
  switch (op) {
  case tasks::VendorOp::Gemm: return exec::LibraryOp::Gemm;
  case tasks::VendorOp::GemmF16F32: return exec::LibraryOp::GemmF16F32;
  case tasks::VendorOp::GemmBatched: return exec::LibraryOp::GemmBatched;
  case tasks::VendorOp::Gemv: return exec::LibraryOp::Gemv;
  case tasks::VendorOp::GemmE4M3F32: return exec::LibraryOp::GemmE4M3F32;
  case tasks::VendorOp::GemmBf16F32: return exec::LibraryOp::GemmBf16F32;
  }
  return exec::LibraryOp::Gemm;
}

size_t paramIndex(const tasks::TaskSpec &task, const std::string &name) {
  for (size_t i = 0; i < task.params.size(); ++i)
    if (task.params[i].name == name) return i;
  return task.params.size();
}

} // namespace

Result<VendorReport> vendorBaseline(const tasks::TaskSpec &task, exec::Executor &executor,
                                    const CheckOptions &options, size_t shapeIndex) {
  if (!task.vendor)
    return makeError(ErrorKind::InvalidInput, fmt::format("task '{}' has no [vendor] operation", task.name));
  if (shapeIndex >= task.shapes.size())
    return makeError(ErrorKind::InvalidInput, fmt::format("task '{}' has no shape {}", task.name, shapeIndex));
  const tasks::VendorSpec &vendor = *task.vendor;
  const tasks::Shape &shape = task.shapes[shapeIndex];
  VendorReport report;
  report.task = task.name;
  report.library = vendor.library;
  report.op = tasks::vendorOpName(vendor.op);
  report.shapeIndex = shapeIndex;
  report.shape = shape;

  exec::LibraryCall call;
  call.op = libraryOpOf(vendor.op);
  call.timeoutMs = options.launchTimeoutMs;
  for (const auto &[name, expression] : vendor.sizes) {
    Result<int64_t> value = tasks::evaluate(expression, shape);
    if (!value) return value.error();
    report.sizes[name] = *value;
    if (name == "m") call.m = *value;
    else if (name == "n") call.n = *value;
    else if (name == "k") call.k = *value;
    else if (name == "batch") call.batch = *value;
  }
  const std::vector<std::string> operandNames = tasks::vendorOperandNames(vendor.op);
  std::vector<size_t> operandParams;
  for (const std::string &operand : operandNames) {
    size_t index = paramIndex(task, vendor.operands.at(operand));
    assert(index < task.params.size() && "loadTask validated the [vendor] operands");
    operandParams.push_back(index);
  }
  const size_t outputIndex = operandParams.back();
  const tasks::ParamSpec &outputParam = task.params[outputIndex];

  CheckResult scratch; // Gate's home for verdicts; nothing here produces one
  const CheckSecrets secrets(options.seed.value_or(1));
  Gate gate(task, executor, options, scratch, secrets);
  gate.setHostOutputs();

  // The library first, on buffers of its own holding the benchmark's inputs:
  // an executor without it (the emulator, a machine without cuBLAS) answers
  // before the reference runs at the largest shape.
  Result<SideBuffers> librarySide = gate.prepare(shape, 0);
  if (!librarySide) return librarySide.error();
  exec::LibraryOperand *operands[] = {&call.a, &call.b, &call.c};
  for (size_t i = 0; i < operandParams.size(); ++i)
    *operands[i] = {librarySide->buffers[operandParams[i]].handle(), secrets.guardBytes};
  if (Result<void> ran = executor.runLibraryCall(call); !ran) return ran.error();
  std::vector<OutputReport> guards;
  Result<Outputs> got = gate.collect(*librarySide, &guards);
  if (!got) return got.error();

  // The reference on the same inputs.
  Outputs want;
  {
    const std::string arch = options.arch.empty() ? executor.properties().arch() : options.arch;
    Result<tasks::CompiledReference> reference = tasks::compileReference(task, arch);
    if (!reference) return reference.error();
    const bool ptx = executor.moduleFormat() == exec::ModuleFormat::Ptx;
    Result<exec::ModuleHandle> module =
        ptx ? executor.loadModule(std::vector<uint8_t>(reference->ptx.begin(), reference->ptx.end()),
                                  exec::ModuleFormat::Ptx)
            : executor.loadModule(reference->cubin, exec::ModuleFormat::Cubin);
    if (!module) return makeError(module.error().kind, "the reference does not load: " + render(module.error()));
    struct Unload {
      exec::Executor &executor;
      exec::ModuleHandle module;
      ~Unload() { (void)executor.unloadModule(module); }
    } unload{executor, *module};
    Result<exec::KernelInfo> kernel = executor.getKernel(*module, task.kernel);
    if (!kernel) return kernel.error();
    Result<tasks::ResolvedLaunch> launch = tasks::resolveLaunch(tasks::LaunchConfig{}, task, shape);
    if (!launch) return launch.error();
    Result<SideBuffers> side = gate.prepare(shape, 0);
    if (!side) return side.error();
    Result<exec::PackedArgs> args = gate.arguments(*side, shape);
    if (!args) return args.error();
    Result<void> ran = executor.launch(kernel->handle, gate.toConfig(*launch), *args);
    (void)executor.takeFindings();
    if (!ran)
      return makeError(ErrorKind::Internal, "the reference kernel failed on " + tasks::shapeToString(shape) + ": " +
                                                render(ran.error()));
    Result<Outputs> outputs = gate.collect(*side, nullptr);
    if (!outputs) return outputs.error();
    want = std::move(*outputs);
  }

  // Agreement first: a mis-set size or layout must not become a fast number.
  std::string problem;
  for (OutputReport &guard : guards) {
    if ((guard.guardBytesBefore || guard.guardBytesAfter) && problem.empty())
      problem = fmt::format("wrote outside its buffers: {} ({} bytes before, {} after)", guard.guardDetail,
                            guard.guardBytesBefore, guard.guardBytesAfter);
    if (guard.param == outputParam.name) report.output = guard;
  }
  const size_t count = librarySide->dataBytes[outputIndex] / tasks::elementSize(outputParam.type);
  report.output.param = outputParam.name;
  report.output.compare = tasks::compareBuffers(outputParam.type, (*got)[outputIndex].host.data(), want[outputIndex].host.data(),
                                                count, tasks::toleranceFor(task, outputParam.type));
  if (problem.empty() && !report.output.compare.passed)
    problem = fmt::format("'{}' differs from the reference: {} of {} elements outside tolerance, first at index {}: "
                          "got {}, expected {} (max abs error {:.3g}, max rel error {:.3g})",
                          outputParam.name, report.output.compare.mismatches, report.output.compare.count,
                          report.output.compare.firstMismatch.value_or(0), report.output.compare.firstGotText,
                          report.output.compare.firstWantText, report.output.compare.maxAbsError,
                          report.output.compare.maxRelError);
  if (!problem.empty()) {
    report.summary = fmt::format("{} {} on {}: {}; not timed (check the task's [vendor] sizes and operands)",
                                 report.library, report.op, tasks::shapeToString(shape), problem);
    return report;
  }
  report.passed = true;

  // Timing, with the gate's protocol for the baseline (not interleaved).
  exec::TimingOptions timing;
  timing.warmupLaunches = 1;
  timing.repetitions = static_cast<uint32_t>(std::max(1, options.repetitionsPerRound));
  timing.flushL2 = true;
  timing.timeoutMs = options.launchTimeoutMs * (timing.repetitions + 1);
  std::vector<double> milliseconds;
  for (int round = 0; round < std::max(1, options.timingRounds); ++round) {
    Result<std::vector<float>> times = executor.timeLibraryCall(call, timing);
    if (!times) return times.error();
    for (float ms : *times) milliseconds.push_back(ms);
  }
  report.timing = spreadOf(milliseconds);
  if (task.cost.flops)
    if (Result<int64_t> flops = tasks::evaluate(*task.cost.flops, shape))
      report.gflops = static_cast<double>(*flops) / (report.timing->median * 1e6);
  if (task.cost.bytes)
    if (Result<int64_t> bytes = tasks::evaluate(*task.cost.bytes, shape))
      report.gbps = static_cast<double>(*bytes) / (report.timing->median * 1e6);
  report.summary = fmt::format("{} {} on {}: agrees with the reference (max abs error {:.3g}); {:.4f} ms [{:.4f}, "
                               "{:.4f}] over {} calls",
                               report.library, report.op, tasks::shapeToString(shape),
                               report.output.compare.maxAbsError, report.timing->median, report.timing->p10,
                               report.timing->p90, report.timing->samples);
  return report;
}

nlohmann::json toJson(const VendorReport &report) {
  nlohmann::json check = {{"passed", report.passed},
                          {"param", report.output.param},
                          {"max_abs_error", report.output.compare.maxAbsError},
                          {"max_rel_error", report.output.compare.maxRelError},
                          {"mismatches", report.output.compare.mismatches},
                          {"compared", report.output.compare.count},
                          {"guard_bytes_before", report.output.guardBytesBefore},
                          {"guard_bytes_after", report.output.guardBytesAfter}};
  if (report.output.compare.firstMismatch)
    check["first_mismatch"] = {{"index", *report.output.compare.firstMismatch},
                               {"got", report.output.compare.firstGotText},
                               {"expected", report.output.compare.firstWantText}};
  return {{"task", report.task},
          {"library", report.library},
          {"op", report.op},
          {"shape_index", report.shapeIndex},
          {"shape", report.shape},
          {"sizes", report.sizes},
          {"passed", report.passed},
          {"summary", report.summary},
          {"check", std::move(check)},
          {"timing", report.timing ? statsJson(*report.timing) : nlohmann::json(nullptr)},
          {"gflops", optionalJson(report.gflops)},
          {"gbps", optionalJson(report.gbps)}};
}

} // namespace ptxforge::verify
