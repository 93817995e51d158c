// Prompt strategies: computes the placeholder values of each template from the
// task, the reference's PTX and a previous attempt's check result.
#include "prompt/PromptBuilder.h"

#include "ptx/InstructionTable.h"
#include "ptx/Lint.h"
#include "ptx/Parser.h"
#include "tasks/Compare.h"
#include "tasks/Expression.h"
#include "verify/Profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace ptxforge::prompt {
namespace {

/// What each common opcode does, for the cheat sheet (the instruction table
/// knows modifiers and gates, not meanings). Operand order is PTX's: destination first.
const std::map<std::string, std::string, std::less<>> &opcodeSummaries() {
  static const std::map<std::string, std::string, std::less<>> summaries = {
      {"ld", "d, [a]: load from a state space (.param for kernel parameters, .global after cvta.to.global, .shared); "
             ".v2/.v4 load vectors `{%f1, %f2}` from addresses aligned to the vector size; .nc reads through the read-only cache"},
      {"st", "[a], b: store to a state space; .v2/.v4 store vectors from aligned addresses"},
      {"mov", "d, a: copy a register, immediate or special register (%tid.x, %ntid.x, %ctaid.x, %nctaid.x)"},
      {"cvta", "d, a: convert a state-space address to a generic one; cvta.to.global.u64 turns a kernel pointer parameter into a global address"},
      {"cvt", "d, a: convert between types; float↔int needs a rounding mode (.rn, .rzi, ...), widening ints does not (cvt.u64.u32)"},
      {"add", "d, a, b: d = a + b; floats take .rn/.rz/.rm/.rp and .ftz/.sat"},
      {"sub", "d, a, b: d = a - b"},
      {"mul", "d, a, b: integers need .lo, .hi or .wide (mul.wide.s32 gives a 64-bit product, the usual way to scale an index to a byte offset)"},
      {"mad", "d, a, b, c: d = a * b + c; integers need .lo/.hi/.wide, floats need a rounding mode (prefer fma)"},
      {"fma", "d, a, b, c: d = a * b + c with one rounding; needs a rounding mode (fma.rn.f32)"},
      {"div", "d, a, b: integers plain; f32 needs .approx, .full or a rounding mode (.rn)"},
      {"rem", "d, a, b: integer remainder"},
      {"neg", "d, a: d = -a"},
      {"abs", "d, a: |a|"},
      {"min", "d, a, b: minimum"},
      {"max", "d, a, b: maximum"},
      {"rcp", "d, a: 1/a; f32 needs .approx or a rounding mode"},
      {"sqrt", "d, a: square root; f32 needs .approx or a rounding mode"},
      {"rsqrt", "d, a: 1/sqrt(a), .approx only"},
      {"ex2", "d, a: 2^a, .approx (ex2.approx.ftz.f32); e^x is ex2 of x*log2(e)"},
      {"lg2", "d, a: log2(a), .approx"},
      {"tanh", "d, a: tanh(a), .approx.f32 (sm_75)"},
      {"setp", "p, a, b: compare into a .pred register: setp.lt.s32 %p1, %r1, %r2; floats: .lt/.ge/... or unordered .ltu/.geu"},
      {"selp", "d, a, b, p: d = p ? a : b"},
      {"bra", "L: branch to a label; guard it with a predicate (@%p1 bra L; or @!%p1 bra L;); .uni when every thread agrees"},
      {"ret", "return from the kernel"},
      {"exit", "end the thread"},
      {"bar", "bar.sync 0: CTA-wide barrier; every thread of the block must reach it (not inside divergent code)"},
      {"barrier", "barrier.sync 0: CTA-wide barrier, as bar.sync"},
      {"shl", "d, a, b: shift left (.b32/.b64)"},
      {"shr", "d, a, b: shift right (.u32 logical, .s32 arithmetic)"},
      {"and", "d, a, b: bitwise and (.b32/.b64/.pred)"},
      {"or", "d, a, b: bitwise or"},
      {"xor", "d, a, b: bitwise xor"},
      {"not", "d, a: bitwise not"},
      {"atom", "d, [a], b: atomic read-modify-write returning the old value (atom.global.add.f32)"},
      {"red", "[a], b: atomic reduction without a result (red.global.add.f32)"},
      {"shfl", "shfl.sync.MODE.b32 d|p, a, b, c, membermask: exchange registers within a warp (modes up/down/bfly/idx)"},
      {"ld.shared", "load from shared memory"},
      {"cp.async", "cp.async.ca.shared.global [dst], [src], 4|8|16: asynchronous global→shared copy; cp.async.commit_group / wait_group to wait"},
      {"ldmatrix", "ldmatrix.sync.aligned.m8n8.x4.shared.b16: load 8x8 matrix fragments from shared memory for mma"},
      {"mma", "mma.sync.aligned.SHAPE.row.col.DTYPE.ATYPE.BTYPE.CTYPE d, a, b, c: warp-level tensor-core multiply-accumulate"},
      {"wmma", "warp-level matrix load/store/mma (wmma.load, wmma.mma, wmma.store)"},
      {"popc", "d, a: population count"},
      {"clz", "d, a: count leading zeros"},
      {"brev", "d, a: bit reverse"},
      {"prmt", "d, a, b, c: byte permute"},
      {"lop3", "d, a, b, c, immLut: arbitrary 3-input logic"},
      {"membar", "memory fence (membar.gl / membar.cta)"},
      {"fence", "memory fence (fence.acq_rel.gpu)"},
      {"vote", "vote.sync.MODE.pred d, p, membermask: warp vote (all/any/uni/ballot)"},
  };
  return summaries;
}

/// Always worth showing even when the reference does not use them.
constexpr const char *kBaseForms[] = {"ld.param.u64", "cvta.to.global.u64", "mov.u32", "mad.lo.s32", "setp.ge.s32",
                                      "bra.uni", "mul.wide.s32", "add.s64", "ld.global.f32", "st.global.f32", "ret"};

void collectInstructions(const std::vector<ptx::Statement> &statements, std::vector<const ptx::Instruction *> &out) {
  for (const ptx::Statement &statement : statements) {
    if (statement.kind == ptx::Statement::Kind::Instruction) out.push_back(&statement.instruction);
    if (statement.kind == ptx::Statement::Kind::Block) collectInstructions(statement.block.statements, out);
  }
}

std::string join(const std::vector<std::string> &items, std::string_view separator) {
  return fmt::format("{}", fmt::join(items, separator));
}

std::string ptxParamType(const tasks::ParamSpec &param) {
  if (param.tensorMap) return "align 64 .b8"; // and the name takes [128]
  if (param.isPointer) return "u64";
  switch (param.type) {
  case tasks::ElementType::F32: return "f32";
  case tasks::ElementType::F64: return "f64";
  case tasks::ElementType::F16:
  case tasks::ElementType::BF16: return "b16";
  case tasks::ElementType::I8:
  case tasks::ElementType::U8: return "u8";
  case tasks::ElementType::E4M3: return "b8";
  case tasks::ElementType::I32:
  case tasks::ElementType::U32: return "u32";
  case tasks::ElementType::I64:
  case tasks::ElementType::U64: return "u64";
  }
  return "b32";
}

std::string paramTypeText(const tasks::ParamSpec &param) {
  if (param.tensorMap) return "tensormap";
  return std::string(tasks::elementTypeName(param.type)) + (param.isPointer ? "*" : "");
}

std::string paramValueText(const tasks::ParamSpec &param) {
  if (param.tensorMap) return tasks::describeTensorMapParam(param);
  if (param.floatValue) return fmt::format("{}", *param.floatValue);
  return tasks::toString(param.value);
}

std::string paramsTable(const tasks::TaskSpec &task) {
  std::string out;
  for (size_t i = 0; i < task.params.size(); ++i) {
    const tasks::ParamSpec &param = task.params[i];
    out += fmt::format("- param {} `{}`: {} {}", i, param.name, paramTypeText(param), tasks::paramRoleName(param.role));
    if (param.isPointer) out += fmt::format(", {} elements", tasks::toString(param.count));
    else out += fmt::format(", value {}", paramValueText(param));
    out += "\n";
  }
  return out;
}

std::string shapesText(const tasks::TaskSpec &task) {
  std::vector<std::string> shapes;
  for (const tasks::Shape &shape : task.shapes) shapes.push_back(tasks::shapeToString(shape));
  return join(shapes, ", ");
}

std::string launchText(const tasks::TaskSpec &task) {
  auto dims = [](const std::array<tasks::Expression, 3> &dims) {
    return fmt::format("({},{},{})", tasks::toString(dims[0]), tasks::toString(dims[1]), tasks::toString(dims[2]));
  };
  return fmt::format("// @ptxforge block={} grid={} smem={}", dims(task.launch.block), dims(task.launch.grid),
                     tasks::toString(task.launch.smem));
}

std::string toleranceText(const tasks::TaskSpec &task) {
  std::set<tasks::ElementType> types;
  for (const tasks::ParamSpec &param : task.params)
    if (param.role == tasks::ParamRole::Output || param.role == tasks::ParamRole::InOut) types.insert(param.type);
  std::vector<std::string> parts;
  for (tasks::ElementType type : types) {
    tasks::Tolerance tolerance = tasks::toleranceFor(task, type);
    if (!tasks::isFloatingType(type) && !tolerance.atolGiven) parts.push_back(fmt::format("{} outputs exact", tasks::elementTypeName(type)));
    else parts.push_back(fmt::format("{} outputs within atol {:g} + rtol {:g} * |expected|", tasks::elementTypeName(type),
                                     tolerance.atol, tolerance.rtol));
  }
  return join(parts, "; ");
}

std::string versionOf(std::string_view ptx) {
  size_t pos = ptx.find(".version");
  if (pos == std::string_view::npos) return "";
  size_t start = ptx.find_first_not_of(" \t", pos + 8);
  if (start == std::string_view::npos) return "";
  size_t end = ptx.find_first_of(" \t\r\n", start);
  return std::string(ptx.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
}

std::string ptxVersionFor(const PromptInput &input) {
  if (!input.ptxVersion.empty()) return input.ptxVersion;
  if (std::string fromReference = versionOf(input.referencePtx); !fromReference.empty()) return fromReference;
  ptx::ArchGate gate;
  gate.ptx = ptx::minPtxForTarget(input.arch);
  std::string name = ptx::gatePtxName(gate);
  return name.empty() ? "8.0" : name;
}

/// Characters of one line of the model's own module quoted back to it: a
/// 4 KB line once made every diagnostic quote it whole (a 24 MB prompt).
constexpr size_t kQuotedLineCharacters = 400;

std::string numbered(std::string_view text) {
  std::string out;
  size_t line = 1, start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view content = text.substr(start, end - start);
    if (content.size() > kQuotedLineCharacters)
      out += fmt::format("{:>4}  {} ... [{} more characters on this line]\n", line++,
                         content.substr(0, kQuotedLineCharacters), content.size() - kQuotedLineCharacters);
    else
      out += fmt::format("{:>4}  {}\n", line++, content);
    start = end + 1;
  }
  return out;
}

std::string firstMismatch(const verify::CheckResult &result) {
  for (const verify::TrialReport &trial : result.trials) {
    if (trial.passed) continue;
    for (const verify::OutputReport &output : trial.outputs) {
      bool guards = output.guardBytesBefore || output.guardBytesAfter;
      if (output.compare.passed && !guards) continue;
      std::string where = fmt::format("output `{}`, shape {}, trial {}{}, launch block=({},{},{}) grid=({},{},{})",
                                      output.param, tasks::shapeToString(trial.shape), trial.trial,
                                      trial.afterTiming ? " (re-check after timing)" : "", trial.launch.block[0],
                                      trial.launch.block[1], trial.launch.block[2], trial.launch.grid[0],
                                      trial.launch.grid[1], trial.launch.grid[2]);
      std::string out = where + ": " + tasks::describe(output.compare);
      if (output.compare.nanInGot)
        out += fmt::format("; {} elements still hold NaN (outputs start as NaN: those elements were never written)",
                           output.compare.nanInGot);
      if (guards)
        out += fmt::format("; out-of-bounds writes: {} bytes before and {} bytes after the buffer changed{}",
                           output.guardBytesBefore, output.guardBytesAfter,
                           output.guardDetail.empty() ? "" : " (" + output.guardDetail + ")");
      return out;
    }
  }
  return "";
}

bool sameDiagnostic(const ptx::Diagnostic &a, const ptx::Diagnostic &b) {
  return a.code == b.code && a.line == b.line && a.message == b.message;
}


} // namespace

const char *strategyName(Strategy strategy) {
  switch (strategy) {
  case Strategy::ZeroShot: return "zero-shot";
  case Strategy::Hints: return "hints";
  case Strategy::Spec: return "spec";
  case Strategy::FewShot: return "few-shot";
  case Strategy::Skeleton: return "skeleton";
  case Strategy::Repair: return "repair";
  case Strategy::Optimize: return "optimize";
  }
  return "?";
}

std::optional<Strategy> parseStrategy(std::string_view name) {
  for (Strategy strategy :
       {Strategy::ZeroShot, Strategy::Hints, Strategy::Spec, Strategy::FewShot, Strategy::Skeleton, Strategy::Repair,
        Strategy::Optimize})
    if (name == strategyName(strategy)) return strategy;
  return std::nullopt;
}

Result<std::vector<Strategy>> parseStrategies(std::string_view commaSeparated) {
  std::vector<Strategy> out;
  size_t start = 0;
  while (start <= commaSeparated.size()) {
    size_t end = commaSeparated.find(',', start);
    if (end == std::string_view::npos) end = commaSeparated.size();
    std::string_view word = commaSeparated.substr(start, end - start);
    while (!word.empty() && word.front() == ' ') word.remove_prefix(1);
    while (!word.empty() && word.back() == ' ') word.remove_suffix(1);
    if (!word.empty()) {
      std::optional<Strategy> strategy = parseStrategy(word);
      if (!strategy)
        return makeError(ErrorKind::InvalidInput, "unknown prompt strategy '" + std::string(word) +
                                                      "' (valid: zero-shot, hints, spec, few-shot, skeleton, repair, "
                                                      "optimize)");
      if (std::find(out.begin(), out.end(), *strategy) == out.end()) out.push_back(*strategy);
    }
    start = end + 1;
  }
  return out;
}

std::vector<std::string> promptParts(const std::vector<Strategy> &strategies, bool taskHasHints, bool hasReferencePtx) {
  auto wants = [&](Strategy s) { return std::find(strategies.begin(), strategies.end(), s) != strategies.end(); };
  std::vector<std::string> parts = {"description"};
  // Few-shot shows the reference's code, so the recipe in words rides along
  // with it; spec and skeleton stay without it (docs/prompts.md).
  if (taskHasHints && (wants(Strategy::Hints) || wants(Strategy::FewShot))) parts.emplace_back("hints");
  if (wants(Strategy::Spec)) {
    parts.emplace_back("ptx-rules");
    parts.emplace_back(hasReferencePtx ? "reference-instructions" : "base-instructions");
  }
  if (wants(Strategy::FewShot)) {
    parts.emplace_back("reference-source");
    parts.emplace_back("reference-ptx");
  }
  if (wants(Strategy::Skeleton)) parts.emplace_back("own-skeleton");
  if (wants(Strategy::Repair) || wants(Strategy::Optimize)) parts.emplace_back("previous-attempt");
  if (wants(Strategy::Repair)) parts.emplace_back("gate-feedback");
  if (wants(Strategy::Optimize)) parts.emplace_back("timings");
  return parts;
}

std::vector<std::string> promptParts(const PromptInput &input, const std::vector<Strategy> &strategies) {
  std::vector<std::string> parts = promptParts(strategies, !input.task.hints.empty(), !input.referencePtx.empty());
  // The skeleton's first request asks for the skeleton: there is none of the model's yet.
  if (!input.skeleton) std::erase(parts, "own-skeleton");
  return parts;
}

std::string ptxSignature(const tasks::TaskSpec &task) {
  std::string out = ".visible .entry " + task.kernel + "(\n";
  for (size_t i = 0; i < task.params.size(); ++i) {
    const tasks::ParamSpec &param = task.params[i];
    out += fmt::format("    .param .{} {}_param_{}{}{}  // {}: {} {}\n", ptxParamType(param), task.kernel, i,
                       param.tensorMap ? "[128]" : "", i + 1 < task.params.size() ? "," : " ", param.name,
                       paramTypeText(param),
                       tasks::paramRoleName(param.role));
  }
  out += ")";
  return out;
}

std::vector<CheatSheetEntry> cheatSheet(std::string_view referencePtx) {
  ptx::ParseResult parsed;
  std::vector<const ptx::Instruction *> instructions;
  std::vector<ptx::Instruction> base;
  if (!referencePtx.empty()) {
    parsed = ptx::parse(referencePtx);
    for (const ptx::TopLevel &item : parsed.module.items)
      if (item.kind == ptx::TopLevel::Kind::Function) collectInstructions(item.function.body, instructions);
  }
  if (instructions.empty()) {
    for (const char *form : kBaseForms) {
      ptx::Instruction instruction;
      std::string_view text = form;
      size_t dot = text.find('.');
      instruction.opcode = std::string(text.substr(0, dot));
      while (dot != std::string_view::npos) {
        size_t next = text.find('.', dot + 1);
        instruction.modifiers.emplace_back(text.substr(dot + 1, next == std::string_view::npos ? next : next - dot - 1));
        dot = next;
      }
      base.push_back(std::move(instruction));
    }
    for (const ptx::Instruction &instruction : base) instructions.push_back(&instruction);
  }

  std::vector<CheatSheetEntry> entries;
  std::map<std::string, size_t> index;
  for (const ptx::Instruction *instruction : instructions) {
    std::optional<ptx::OpcodeMatch> match = ptx::lookupInstruction(instruction->opcode, instruction->modifiers);
    std::string name = match ? match->entry->name : instruction->opcode;
    auto [it, inserted] = index.emplace(name, entries.size());
    if (inserted) {
      CheatSheetEntry entry;
      entry.name = name;
      auto summary = opcodeSummaries().find(name);
      if (summary == opcodeSummaries().end()) summary = opcodeSummaries().find(instruction->opcode);
      if (summary != opcodeSummaries().end()) entry.summary = summary->second;
      if (match) entry.types = ptx::validModifiersInSlot(*match->entry, "type");
      entries.push_back(std::move(entry));
    }
    CheatSheetEntry &entry = entries[it->second];
    std::string form = instruction->opcode;
    for (const std::string &modifier : instruction->modifiers) form += "." + modifier;
    if (entry.forms.size() < 6 && std::find(entry.forms.begin(), entry.forms.end(), form) == entry.forms.end())
      entry.forms.push_back(form);
    if (match && entry.gate.empty()) {
      std::vector<std::string> gates;
      for (const ptx::Requirement &requirement : ptx::instructionRequirements(*match, instruction->modifiers)) {
        std::string target = ptx::gateTargetName(requirement.gate), version = ptx::gatePtxName(requirement.gate);
        std::string text = requirement.feature + " needs " + (target.empty() ? "" : target) +
                           (!target.empty() && !version.empty() ? " and " : "") +
                           (version.empty() ? "" : "PTX " + version);
        gates.push_back(text);
      }
      entry.gate = join(gates, "; ");
    }
  }
  return entries;
}

std::string formatCheatSheet(const std::vector<CheatSheetEntry> &entries) {
  std::string out;
  for (const CheatSheetEntry &entry : entries) {
    out += "- `" + entry.name + "`";
    if (!entry.summary.empty()) out += ": " + entry.summary;
    out += "\n";
    if (!entry.forms.empty()) out += "  - as nvcc writes it: " + join(entry.forms, ", ") + "\n";
    if (!entry.types.empty()) out += "  - types: " + join(entry.types, " ") + "\n";
    if (!entry.gate.empty()) out += "  - requires: " + entry.gate + "\n";
  }
  return out;
}

namespace {
// Bounds on the gate's feedback in a repair prompt (docs/limits.md, "Runs").
constexpr size_t kFeedbackDiagnostics = 40;     ///< diagnostics quoted per prompt
constexpr size_t kFeedbackRepeats = 3;          ///< of one code and message
constexpr size_t kFeedbackExcerptColumns = 160; ///< characters of a quoted line
constexpr size_t kFeedbackLogBytes = 8192;      ///< of a compiler log without diagnostics
} // namespace

std::string formatFeedback(const verify::CheckResult &result, std::string_view ptx) {
  std::string out = fmt::format("Verdict: {} (stopped at stage `{}`)\n", verify::verdictName(result.verdict),
                                verify::stageName(result.stage));
  if (!result.summary.empty()) out += "Summary: " + result.summary + "\n";
  std::vector<ptx::Diagnostic> diagnostics = result.diagnostics;
  if (result.compile)
    for (const ptx::Diagnostic &diagnostic : result.compile->diagnostics)
      if (std::none_of(diagnostics.begin(), diagnostics.end(),
                       [&](const ptx::Diagnostic &d) { return sameDiagnostic(d, diagnostic); }))
        diagnostics.push_back(diagnostic);
  ptx::sortByLocation(diagnostics);
  // What a repair prompt quotes is bounded whatever the module holds: the
  // merged list (lint + compiler) is limited again, each quoted line is a
  // window, and the compiler's log is cut.
  ptx::DiagnosticLimits promptLimits{kFeedbackDiagnostics, kFeedbackRepeats, kFeedbackExcerptColumns};
  ptx::applyDiagnosticLimits(diagnostics, promptLimits);
  if (!diagnostics.empty())
    out += "\nDiagnostics (line numbers are those of your module above):\n" +
           ptx::formatDiagnosticsText(diagnostics, "candidate.ptx", ptx, kFeedbackExcerptColumns);
  if (result.compile && !result.compile->ok && result.compile->diagnostics.empty() && !result.compile->errorLog.empty()) {
    std::string_view log = result.compile->errorLog;
    out += "\nCompiler log:\n" + std::string(log.substr(0, kFeedbackLogBytes));
    if (log.size() > kFeedbackLogBytes) out += fmt::format("\n... [{} more bytes of the log]", log.size() - kFeedbackLogBytes);
    out += "\n";
  }
  if (std::string mismatch = firstMismatch(result); !mismatch.empty()) out += "\nFirst mismatch: " + mismatch + "\n";
  if (!result.executorError.empty()) out += "\nExecutor: " + result.executorError + "\n";
  return out;
}

std::string formatResources(const verify::CheckResult &result) {
  std::string out;
  if (result.compile && result.compile->resources.known) {
    const toolchain::ResourceUsage &r = result.compile->resources;
    out += fmt::format("- registers per thread: {}\n- spills: {} bytes stored, {} bytes loaded\n- stack frame: {} bytes\n"
                       "- static shared memory: {} bytes\n- local memory: {} bytes\n",
                       r.registers, r.spillStoreBytes, r.spillLoadBytes, r.stackFrameBytes, r.sharedBytes, r.localBytes);
  }
  if (result.kernel)
    out += fmt::format("- max threads per block at this register count: {}\n", result.kernel->maxThreadsPerBlock);
  if (result.compile)
    for (const std::string &advisory : result.compile->advisories) out += "- ptxas advisory: " + advisory + "\n";
  return out.empty() ? "- not reported\n" : out;
}

std::string formatTimings(const verify::CheckResult &result) {
  if (result.benchmarks.empty()) return "- not measured\n";
  std::string out;
  for (const verify::BenchmarkReport &b : result.benchmarks) {
    out += fmt::format("- shape {}: yours {:.4f} ms (p10 {:.4f}, p90 {:.4f}), nvcc baseline {:.4f} ms, speedup {:.2f}x "
                       "(noise band {:.2f}-{:.2f})",
                       tasks::shapeToString(b.shape), b.candidate.median, b.candidate.p10, b.candidate.p90,
                       b.baseline.median, b.speedup, b.speedupLow, b.speedupHigh);
    if (b.gbps) out += fmt::format(", {:.1f} GB/s", *b.gbps);
    if (b.baselineGbps) out += fmt::format(" (baseline {:.1f} GB/s)", *b.baselineGbps);
    if (b.gflops) out += fmt::format(", {:.1f} GFLOP/s", *b.gflops);
    if (b.baselineGflops) out += fmt::format(" (baseline {:.1f} GFLOP/s)", *b.baselineGflops);
    if (b.bandwidthFraction) out += fmt::format(", {:.0f}% of DRAM bandwidth", *b.bandwidthFraction * 100);
    if (b.fp32CeilingFraction) out += fmt::format(", {:.0f}% of the measured FP32 ceiling", *b.fp32CeilingFraction * 100);
    out += "\n";
  }
  return out;
}

std::string formatPosition(const verify::CheckResult &result) {
  std::string out;
  const verify::BenchmarkReport *timed = verify::headlineBenchmark(result);
  const std::optional<verify::ProfileReport> &profile = result.profile;
  if (!timed && profile)
    out += "- Nothing was timed (no GPU here): the figures below are the emulator's estimate, not a measurement, from " +
           profile->basis + ".\n";
  else if (!timed)
    out += "- Nothing was timed and no profile ran: no figures about speed.\n";
  if (timed) {
    std::string position;
    if (timed->bandwidthFraction) position += fmt::format("{:.0f}% of the DRAM bandwidth", *timed->bandwidthFraction * 100);
    if (timed->copyCeilingFraction)
      position += fmt::format("{}{:.0f}% of the measured copy ceiling", position.empty() ? "" : ", ", *timed->copyCeilingFraction * 100);
    if (timed->fp32CeilingFraction)
      position += fmt::format("{}{:.0f}% of the measured FP32 ceiling", position.empty() ? "" : ", ", *timed->fp32CeilingFraction * 100);
    if (!position.empty())
      out += fmt::format("- Measured on {}: {}.\n", tasks::shapeToString(timed->shape), position);
  }
  if (profile && profile->candidate.occupancy) {
    // The occupancy of the launch the profile ran, on the shape its figures are for.
    const verify::KernelProfileReport &mine = profile->candidate;
    out += fmt::format("- Occupancy on {}: {} (block {}x{}x{}, {} registers per thread from the {}, {} B static + {} B "
                       "dynamic shared memory).\n",
                       tasks::shapeToString(profile->shape), toolchain::describe(*mine.occupancy), mine.launch.block[0],
                       mine.launch.block[1], mine.launch.block[2], mine.registers, mine.registersFrom,
                       mine.staticSharedBytes, mine.launch.smem);
  } else if (result.occupancy) {
    const verify::OccupancyReport &o = *result.occupancy;
    out += fmt::format("- Occupancy on {}: {} (block {}x{}x{}, {} registers per thread from the {}, {} B static + {} B "
                       "dynamic shared memory).\n",
                       tasks::shapeToString(o.shape), toolchain::describe(o.occupancy), o.launch.block[0],
                       o.launch.block[1], o.launch.block[2], o.registers, o.registersFrom, o.staticSharedBytes,
                       o.launch.smem);
  }
  if (profile) {
    const verify::KernelProfileReport &mine = profile->candidate;
    if (!timed && mine.estimatedSeconds > 0) {
      double bandwidth = static_cast<double>(mine.globalSectors) * 32 / mine.estimatedSeconds / 1e9;
      std::string position = fmt::format("{:.0f}% of the DRAM bandwidth ({:.0f} of {:.0f} GB/s)",
                                         100 * bandwidth / profile->ceilings.dramGBs, bandwidth, profile->ceilings.dramGBs);
      if (profile->flops && *profile->flops > 0) {
        double rate = *profile->flops / mine.estimatedSeconds / 1e9;
        double ceiling = mine.tensorCores ? profile->ceilings.tensorGflops : profile->ceilings.fp32Gflops;
        position += fmt::format(", {:.0f}% of the {} rate", 100 * rate / ceiling, mine.tensorCores ? "tensor-core" : "FP32");
      }
      out += fmt::format("- Estimated position on {}: {}; bound by {}.\n", tasks::shapeToString(profile->shape),
                         position, mine.bound);
    }
    out += "- Estimate: " + verify::describeEstimate(*profile) + ".\n";
    out += fmt::format("- Your memory traffic on {} (the emulator's exact counts): {}.\n",
                       tasks::shapeToString(profile->shape), verify::describeTotals(mine));
    out += "- The reference's, for comparison: " + verify::describeTotals(profile->reference) + ".\n";
    std::vector<std::string> offenders = verify::profileOffenders(mine, 5);
    if (offenders.empty())
      out += "- No bank conflicts, no uncoalesced global accesses and no local memory in your kernel.\n";
    else {
      out += "- Lines to look at (line numbers of your module above):\n";
      for (const std::string &line : offenders) out += "  - " + line + "\n";
    }
  }
  if (result.ncuProfile) out += verify::describeNcuForPrompt(*result.ncuProfile);
  return out;
}

std::string formatSpeedup(const verify::CheckResult &result) {
  if (const verify::BenchmarkReport *largest = verify::headlineBenchmark(result))
    return fmt::format("{:.2f}x", largest->speedup);
  if (result.profile && result.profile->estimatedSpeedup > 0)
    return fmt::format("not measured; estimated {:.2f}x the reference on {} from the emulator's profile (an estimate, "
                       "not a timing)",
                       result.profile->estimatedSpeedup, tasks::shapeToString(result.profile->shape));
  return "unknown";
}

std::string skeletonFeedback(const tasks::TaskSpec &task, std::string_view skeletonPtx) {
  std::vector<ptx::Diagnostic> diagnostics = ptx::lintSource(skeletonPtx);
  for (ptx::Diagnostic &diagnostic : verify::gateChecks(task, skeletonPtx)) diagnostics.push_back(std::move(diagnostic));
  // A skeleton has no arithmetic yet: registers declared for the body and
  // never used are expected, so only errors and warnings about structure stay.
  std::erase_if(diagnostics, [](const ptx::Diagnostic &d) { return d.severity == ptx::Severity::Note; });
  if (diagnostics.empty()) return "The lint found no problems in it.\n";
  ptx::sortByLocation(diagnostics);
  return "The lint found (line numbers are those of the skeleton):\n" +
         ptx::formatDiagnosticsText(diagnostics, "skeleton.ptx", skeletonPtx);
}

Result<llm::Request> buildPrompt(const PromptInput &input, const std::vector<Strategy> &strategies,
                                 const TemplateSet &templates) {
  auto wants = [&](Strategy s) { return std::find(strategies.begin(), strategies.end(), s) != strategies.end(); };
  const tasks::TaskSpec &task = input.task;
  if (wants(Strategy::Repair) && wants(Strategy::Optimize))
    return makeError(ErrorKind::InvalidInput, "prompt strategies repair and optimize exclude each other: repair a "
                                              "failed attempt, optimize a correct one");
  if (wants(Strategy::Skeleton) && (wants(Strategy::Repair) || wants(Strategy::Optimize)))
    return makeError(ErrorKind::InvalidInput, "prompt strategy skeleton applies to a first attempt; it does not "
                                              "combine with repair or optimize");
  if (wants(Strategy::FewShot) && input.referencePtx.empty())
    return makeError(ErrorKind::InvalidInput, "prompt strategy few-shot needs the reference's PTX "
                                              "(tasks::compileReference) in PromptInput::referencePtx");
  for (Strategy s : {Strategy::Repair, Strategy::Optimize})
    if (wants(s) && !input.previous)
      return makeError(ErrorKind::InvalidInput,
                       std::string("prompt strategy ") + strategyName(s) + " needs a previous attempt (PromptInput::previous)");
  if (wants(Strategy::Optimize) && input.previous->result.verdict != verify::Verdict::Correct)
    return makeError(ErrorKind::InvalidInput, std::string("prompt strategy optimize needs a correct attempt; this one is ") +
                                                  verify::verdictName(input.previous->result.verdict) + " (use repair)");

  std::string ptxVersion = ptxVersionFor(input);
  TemplateValues common = {
      {"task_name", task.name},
      {"kernel", task.kernel},
      {"arch", input.arch},
      {"ptx_version", ptxVersion},
  };
  auto render = [&](const std::string &name, TemplateValues values) -> Result<std::string> {
    const Template *tmpl = templates.find(name);
    if (!tmpl)
      return makeError(ErrorKind::InvalidInput, "prompt template '" + name + "' is missing from " +
                                                    (templates.folder.empty() ? "the template set" : templates.folder.string()));
    for (const auto &[key, value] : common) values.emplace(key, value);
    Result<std::string> text = renderTemplate(*tmpl, values);
    if (!text) return text;
    std::string out = std::move(text.value());
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  };

  std::vector<std::pair<std::string, TemplateValues>> sections;
  sections.push_back({"zero-shot",
                      {{"task_description", task.description},
                       {"signature", ptxSignature(task)},
                       {"params", paramsTable(task)},
                       {"symbols", join(task.symbols, ", ")},
                       {"shapes", shapesText(task)},
                       {"default_launch", launchText(task)},
                       {"tolerance", toleranceText(task)},
                       {"tendency", input.tendency.empty() ? "" : "Aim for: " + input.tendency + "."}}});
  if ((wants(Strategy::Hints) || wants(Strategy::FewShot)) && !task.hints.empty())
    sections.push_back({"hints", {{"hints", task.hints}}});
  if (wants(Strategy::Spec)) {
    std::vector<CheatSheetEntry> entries = cheatSheet(input.referencePtx);
    sections.push_back({"spec",
                        {{"instructions", formatCheatSheet(entries)},
                         {"instruction_source", input.referencePtx.empty() ? "commonly needed"
                                                                           : "used by nvcc's PTX of the reference"}}});
  }
  if (wants(Strategy::FewShot))
    sections.push_back({"few-shot", {{"reference_ptx", input.referencePtx}, {"reference_source", task.referenceSource}}});
  bool skeletonRequest = wants(Strategy::Skeleton) && !input.skeleton;
  if (wants(Strategy::Skeleton) && input.skeleton)
    sections.push_back({"skeleton-fill",
                        {{"skeleton_ptx", input.skeleton->ptx}, {"skeleton_feedback", input.skeleton->feedback}}});
  if (wants(Strategy::Repair)) {
    const Attempt &attempt = *input.previous;
    sections.push_back({"repair",
                        {{"previous_ptx", attempt.ptx},
                         {"previous_ptx_numbered", numbered(attempt.ptx)},
                         {"verdict", verify::verdictName(attempt.result.verdict)},
                         {"stage", verify::stageName(attempt.result.stage)},
                         {"summary", attempt.result.summary},
                         {"feedback", formatFeedback(attempt.result, attempt.ptx)}}});
  }
  if (wants(Strategy::Optimize)) {
    const Attempt &attempt = *input.previous;
    sections.push_back(
        {"optimize",
         {{"previous_ptx", attempt.ptx},
          {"summary", attempt.result.summary},
          {"resources", formatResources(attempt.result)},
          {"timings", formatTimings(attempt.result)},
          {"position", formatPosition(attempt.result)},
          {"hot_loop", input.sassHotLoop.empty()
                           ? std::string()
                           : "Hot loop in SASS (the innermost loop, where the time goes), yours against nvcc's build of "
                             "the reference:\n" + input.sassHotLoop},
          {"speedup", formatSpeedup(attempt.result)},
          {"objective", input.objective.empty()
                            ? "a lower median time than nvcc's baseline on the largest shape, staying correct"
                            : input.objective}}});
  }
  if (skeletonRequest)
    sections.push_back({"skeleton", {}});
  else
    sections.push_back({"output", {{"default_launch", launchText(task)}}});

  std::string user;
  for (auto &[name, values] : sections) {
    Result<std::string> text = render(name, std::move(values));
    if (!text) return text.error();
    if (!user.empty()) user += "\n\n";
    user += text.value();
  }
  Result<std::string> system = render("system", {});
  if (!system) return system.error();

  llm::Request request;
  request.messages = {{llm::Role::System, system.value()}, {llm::Role::User, user + "\n"}};
  return request;
}

} // namespace ptxforge::prompt
