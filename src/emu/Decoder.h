// PTX module → Program. The decoder resolves names to slots, labels to program
// counters and symbols to addresses, lays out shared, local, const and param
// memory, and hands each instruction to the instruction families
// (Exec*.cpp), which pick the ExecFn. An instruction no family knows is an
// error naming it and its line: nothing is skipped silently.
#pragma once

#include "emu/Program.h"
#include "ptx/Ast.h"
#include "support/Result.h"

#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::emu {

/// The Error code of a module the emulator cannot run because it lacks a
/// feature (an instruction, a state space, recursion...): not the module's fault.
inline constexpr const char *kEmuUnsupportedCode = "emu-unsupported";

/// Decodes a parsed module. `globalBase` is the device address the module's
/// .global variables get (the executor reserves it). Errors carry the PTX line
/// in Error::line (0 when the module as a whole is at fault): code
/// kEmuUnsupportedCode for instructions or features the emulator does not
/// have, no code and a message "invalid: ..." for modules it cannot make sense
/// of (undeclared names, ...).
Result<Program> decodeModule(const ptx::Module &module, uint64_t globalBase);

/// What an instruction family sees while decoding one instruction.
class DecodeContext {
public:
  virtual ~DecodeContext() = default;

  const ptx::Instruction &in;
  Inst &out;

  // Modifiers.
  bool has(std::string_view modifier) const;
  /// The type modifiers in order (`cvt.rn.f16.f32` → {F16, F32}).
  std::vector<DType> types() const;
  Rounding rounding() const; ///< the rounding modifier, None when absent
  /// Sets out.flags from .ftz/.sat/.approx/.uni/.volatile/.NaN/.relu/.aligned.
  void commonFlags();

  // Operands. Each appends to out.ops (destinations before sources) and
  // returns false after reporting an error.
  /// A destination register (or `_`), or each element of a `{...}` vector.
  bool addDst(const ptx::Operand &operand);
  /// A source: register, predicate (`!%p` sets negate), immediate converted to
  /// `type`'s bits, special register, or a symbol's address; `{...}` vectors
  /// append every element.
  bool addSrc(const ptx::Operand &operand, DType type);
  /// `[base+offset]` for a memory instruction of `space`: sets out.addrSlot,
  /// out.offset and out.space (symbols resolve to their space's offsets).
  bool setAddress(const ptx::Operand &operand, Space space);
  /// Number of registers in an operand (`{a,b,c,d}` → 4, otherwise 1).
  static unsigned width(const ptx::Operand &operand);
  /// Resolves every element of a `{...}` vector (or one operand) into a list
  /// of its own (Program::operandLists), for lists longer than Inst::ops;
  /// returns the list's index, or -1 after reporting an error.
  virtual int addOperandList(const ptx::Operand &operand, DType type, bool destination) = 0;

  /// Reports the instruction as not emulated ("<opcode>.<modifiers>: why", code kEmuUnsupportedCode).
  bool unsupported(const std::string &why);
  /// Reports a malformed instruction.
  bool invalid(const std::string &why);
  /// The module's address size (64 unless .address_size 32).
  virtual unsigned addressBits() const = 0;

protected:
  DecodeContext(const ptx::Instruction &instruction, Inst &decoded) : in(instruction), out(decoded) {}
  virtual bool resolveOperand(const ptx::Operand &operand, DType type, bool destination) = 0;
  virtual bool resolveAddress(const ptx::Operand &operand, Space space) = 0;
  virtual bool fail(const std::string &message) = 0;
  /// Like fail(), for a feature the emulator does not have (code kEmuUnsupportedCode).
  virtual bool failUnsupported(const std::string &message) = 0;
};

/// An instruction family: returns false when the opcode is not one of its own;
/// true when it decoded it (or reported it unsupported/invalid through ctx).
using FamilyDecoder = bool (*)(DecodeContext &ctx);

bool decodeAlu(DecodeContext &ctx);     ///< ExecAlu.cpp: integer, float, half, compare, select, cvt, mov
bool decodeMemory(DecodeContext &ctx);  ///< ExecMemory.cpp: ld/st/atom/red/cvta/cp.async/fences/ldmatrix
bool decodeWarp(DecodeContext &ctx);    ///< ExecWarp.cpp: shfl/vote/match/redux/bar.warp.sync/mma
bool decodeAsync(DecodeContext &ctx);   ///< ExecAsync.cpp: mbarrier, cp.async.bulk, proxy fences, setmaxnreg
bool decodeWgmma(DecodeContext &ctx);   ///< ExecWgmma.cpp: wgmma.fence/mma_async/commit_group/wait_group
bool decodeWmma(DecodeContext &ctx);    ///< ExecWmma.cpp: wmma.load/mma/store

} // namespace ptxforge::emu
