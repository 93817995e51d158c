// lint_vs_ptxas: holds the lint to ptxas's verdict on PTX that nobody here
// wrote. For every module it compares "the lint reports an error" with "ptxas
// rejects it" and lists each disagreement: a false error (ptxas accepts, the
// lint errs) or a miss (ptxas rejects, the lint passes), with the first
// message of each side. Exit 1 when there is any disagreement.
//
//   lint_vs_ptxas [--ptxas PATH] [-j N] [--verbose] [--expect accept|reject|any] PATH...
//   lint_vs_ptxas [--ptxas PATH] [--verbose] --cvt-forms|--atom-forms|--alu-forms|--memory-forms TARGET...
//
// PATH is a .ptx file or a folder (searched recursively for *.ptx). The ptxas
// target is the module's highest `.target` (`compute_XX` read as `sm_XX`), or
// sm_75, the lowest ptxas 13 knows, for older targets and modules without one;
// `-c` is added for modules that reference `.extern` functions or variables
// (separately compiled code) and declare PTX ISA 3.1 or later (ptxas refuses
// `-c` before that). `--expect` also fails when ptxas's own verdict is not the
// expected one (a folder of modules written to be rejected, say).
//
// --cvt-forms assembles every combination of cvt types (scalar and packed),
// rounding modes and saturation modifiers for each TARGET (at PTX ISA 9.0) and
// lints each one alone: the lint's cvt rules (src/ptx/ConversionRules.cpp)
// must say what ptxas says about every one of them. --atom-forms does the same
// for atom and red: every operation, type, vector width, state space and
// `.noftz`, and the memory orders and scopes over three of them; --alu-forms
// for the arithmetic and comparison instructions over 15 types with their
// modifiers (and without the ones some forms need); --memory-forms for ld and
// st in every state space with each cache operator, order and hint.
#include "ptx/Diagnostic.h"
#include "ptx/Lint.h"
#include "support/Process.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using namespace ptxforge;

struct Verdict {
  std::string path;
  std::string arch;
  bool lintErrors = false;
  std::string lintFirst; ///< the first lint error, "line:col [code] message"
  bool ptxasRejects = false;
  std::string ptxasFirst; ///< the first line of ptxas's log that says error/fatal
  bool ptxasFailedToRun = false;
};

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The SM rank of a target name for ordering: sm_90 → 900, sm_90a → 902,
/// sm_100f → 1001; 0 when it names no SM.
int targetRank(const std::string &target) {
  std::string rest;
  if (target.rfind("sm_", 0) == 0) rest = target.substr(3);
  else if (target.rfind("compute_", 0) == 0) rest = target.substr(8);
  else return 0;
  size_t digits = 0;
  while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) ++digits;
  if (digits == 0) return 0;
  int rank = std::atoi(rest.substr(0, digits).c_str()) * 10;
  std::string suffix = rest.substr(digits);
  if (suffix == "a") rank += 2;
  else if (suffix == "f") rank += 1;
  return rank;
}

/// The `-arch` for ptxas, read from the text (not through the parser under
/// test): the highest SM named by a `.target` line, at least sm_75.
std::string ptxasArch(const std::string &text) {
  std::string best = "sm_75";
  int bestRank = 750;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find_first_not_of(" \t");
    if (at == std::string::npos || line.compare(at, 7, ".target") != 0) continue;
    std::string list = line.substr(at + 7);
    size_t comment = list.find("//");
    if (comment != std::string::npos) list.resize(comment);
    std::string name;
    for (char c : list + ",") {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
        name += c;
        continue;
      }
      if (!name.empty()) {
        int rank = targetRank(name);
        if (rank > bestRank) {
          bestRank = rank;
          best = name.rfind("compute_", 0) == 0 ? "sm_" + name.substr(8) : name;
        }
      }
      name.clear();
    }
  }
  return best;
}

/// Separately compiled modules reference functions and variables of other
/// translation units; ptxas needs -c for them. (`.extern .shared` is dynamic
/// shared memory, resolved at launch.)
bool needsRelocatable(const std::string &text) {
  bool externs = false;
  std::istringstream lines(text);
  double version = 0;
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find_first_not_of(" \t");
    if (at == std::string::npos) continue;
    std::string_view rest(line.c_str() + at);
    if (rest.rfind(".version", 0) == 0) version = std::atof(line.c_str() + at + 8);
    if (rest.rfind(".extern", 0) == 0 &&
        (rest.find(".func") != std::string_view::npos || rest.find(".global") != std::string_view::npos ||
         rest.find(".const") != std::string_view::npos))
      externs = true;
  }
  return externs && version >= 3.1 - 1e-9;
}

std::string firstErrorLine(const std::string &log) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find("error") != std::string::npos || line.find("fatal") != std::string::npos) return line;
  return log.substr(0, log.find('\n'));
}

Verdict judge(const fs::path &path, const std::string &ptxas) {
  Verdict v;
  v.path = path.string();
  std::string text = readFile(path);
  ptx::LintOptions options;
  options.limits = ptx::DiagnosticLimits::unlimited();
  for (const ptx::Diagnostic &d : ptx::lintSource(text, options)) {
    if (d.severity != ptx::Severity::Error) continue;
    v.lintErrors = true;
    v.lintFirst = std::to_string(d.line) + ":" + std::to_string(d.column) + " [" + d.code + "] " + d.message;
    break;
  }
  v.arch = ptxasArch(text);
  std::vector<std::string> argv = {ptxas, "-arch=" + v.arch};
  if (needsRelocatable(text)) argv.push_back("-c");
  argv.insert(argv.end(), {"-o", "/dev/null", v.path});
  ProcessOptions processOptions;
  processOptions.timeout = std::chrono::seconds(120);
  processOptions.stderrTailBytes = 1 << 16;
  processOptions.maxStdoutBytes = 1 << 16;
  Result<ProcessResult> run = runProcess(argv, processOptions);
  if (!run || run->timedOut) {
    v.ptxasFailedToRun = true;
    v.ptxasFirst = run ? "ptxas timed out" : render(run.error());
    return v;
  }
  v.ptxasRejects = run->exitCode != 0;
  if (v.ptxasRejects) v.ptxasFirst = firstErrorLine(run->standardError + run->standardOutput);
  return v;
}

void collect(const fs::path &path, std::vector<fs::path> &out) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const fs::directory_entry &e : fs::recursive_directory_iterator(path, ec))
      if (e.is_regular_file() && e.path().extension() == ".ptx") out.push_back(e.path());
  } else {
    out.push_back(path);
  }
}

// ---------------------------------------------------------------------------
// --cvt-forms: every combination of cvt types, rounding modes and saturation
// modifiers, assembled by ptxas for a target and linted one by one.

/// The register that holds a value of `type` in the generated modules.
std::string cvtRegister(const std::string &type) {
  if (type == "f32") return "%f";
  if (type == "f64") return "%fd";
  if (type == "s64" || type == "u64") return "%rd";
  if (type == "e2m1x2") return "%b";
  if (type == "s32" || type == "u32" || type == "tf32" || type == "f16x2" || type == "bf16x2" ||
      (type.size() > 2 && type.substr(type.size() - 2) == "x4" && type != "e2m1x4"))
    return "%r";
  return "%h"; // 8- and 16-bit integers, f16, bf16, the 16-bit packs, e2m1x4
}

const char *const kCvtHeader = ".address_size 64\n.visible .entry k()\n{\n.reg .b8 %b<9>;\n.reg .b16 %h<9>;\n"
                               ".reg .b32 %r<9>;\n.reg .b64 %rd<9>; .reg .b128 %q<9>;\n.reg .f32 %f<9>;\n.reg .f64 %fd<9>; .reg .pred %p<9>;\n";

std::string cvtModule(const std::string &target, const std::vector<std::string> &lines) {
  std::string text = ".version 9.0\n.target " + target + "\n" + kCvtHeader;
  for (const std::string &line : lines) text += line + "\n";
  return text + "ret;\n}\n";
}

/// The instructions ptxas rejects among `lines` (indices → its message). ptxas
/// reports every semantic error, but a parse error ends the run: the line it
/// names is set aside and the rest assembled again.
std::map<size_t, std::string> ptxasRejects(const std::string &ptxas, const std::string &target,
                                           const std::vector<std::string> &lines, const fs::path &scratch,
                                           std::string &failure) {
  std::map<size_t, std::string> rejected;
  std::vector<size_t> alive(lines.size());
  for (size_t i = 0; i < alive.size(); ++i) alive[i] = i;
  const size_t headerLines = 11; // .version, .target and kCvtHeader
  while (true) {
    std::vector<std::string> kept;
    for (size_t i : alive) kept.push_back(lines[i]);
    std::ofstream(scratch) << cvtModule(target, kept);
    ProcessOptions options;
    options.timeout = std::chrono::seconds(120);
    Result<ProcessResult> run = runProcess({ptxas, "-arch=" + target, "-o", "/dev/null", scratch.string()}, options);
    if (!run || run->timedOut) {
      failure = run ? "ptxas timed out" : render(run.error());
      return rejected;
    }
    std::map<size_t, std::string> now;
    bool fatal = false;
    std::istringstream log(run->standardError);
    for (std::string line; std::getline(log, line);) {
      size_t at = line.find(", line ");
      if (at == std::string::npos) continue;
      size_t number = static_cast<size_t>(std::atol(line.c_str() + at + 7));
      size_t colon = line.find("; ", at);
      std::string message = colon == std::string::npos ? line : line.substr(colon + 2);
      fatal = fatal || message.rfind("fatal", 0) == 0;
      if (number > headerLines && number - headerLines - 1 < alive.size())
        now.emplace(alive[number - headerLines - 1], message);
    }
    rejected.insert(now.begin(), now.end());
    if (run->exitCode == 0 || !fatal) {
      if (run->exitCode != 0 && now.empty()) failure = "ptxas failed without naming a line: " + run->standardError;
      return rejected;
    }
    if (now.empty()) {
      failure = "ptxas stopped without naming a line: " + run->standardError;
      return rejected;
    }
    std::erase_if(alive, [&](size_t i) { return now.count(i) > 0; });
  }
}

/// A family of forms to hold the lint to ptxas on, instruction by instruction:
/// groups of lines, each group assembled as one module.
struct FormGroup {
  std::string label; ///< names the group when ptxas gives no verdict
  std::vector<std::string> lines;
};

int checkForms(const std::string &family, const std::string &ptxas, const std::vector<std::string> &targets,
               const std::vector<FormGroup> &groups, bool verbose) {
  fs::path scratch = fs::temp_directory_path() / ("lint_vs_ptxas_" + family + "_" + std::to_string(getpid()) + ".ptx");
  size_t checked = 0, disagreements = 0;
  for (const std::string &target : targets) {
    size_t targetChecked = 0, targetAccepted = 0, targetDisagreements = 0;
    for (const FormGroup &group : groups) {
      std::string failure;
      std::map<size_t, std::string> rejected = ptxasRejects(ptxas, target, group.lines, scratch, failure);
      if (!failure.empty()) {
        std::cout << "NO-VERDICT " << group.label << " on " << target << ": " << failure << "\n";
        ++disagreements;
        continue;
      }
      for (size_t i = 0; i < group.lines.size(); ++i) {
        ptx::LintOptions options;
        options.limits = ptx::DiagnosticLimits::unlimited();
        std::string lintFirst;
        for (const ptx::Diagnostic &diagnostic : ptx::lintSource(cvtModule(target, {group.lines[i]}), options))
          if (diagnostic.severity == ptx::Severity::Error) {
            lintFirst = "[" + diagnostic.code + "] " + diagnostic.message;
            break;
          }
        auto reject = rejected.find(i);
        bool ptxasRejects = reject != rejected.end();
        ++targetChecked;
        if (!ptxasRejects) ++targetAccepted;
        if (ptxasRejects == !lintFirst.empty()) {
          if (verbose) std::cout << "agree " << target << " " << group.lines[i] << "\n";
          continue;
        }
        ++targetDisagreements;
        std::cout << (ptxasRejects ? "MISS " : "FALSE-ERROR ") << target << " " << group.lines[i] << "\n";
        if (!lintFirst.empty()) std::cout << "  lint:  " << lintFirst << "\n";
        if (ptxasRejects) std::cout << "  ptxas: " << reject->second << "\n";
      }
    }
    std::cout << target << ": " << targetChecked << " " << family << " forms, ptxas accepts " << targetAccepted
              << "; " << targetDisagreements << " disagreements\n";
    checked += targetChecked;
    disagreements += targetDisagreements;
  }
  fs::remove(scratch);
  std::cout << checked << " " << family << " forms checked, " << disagreements << " disagreements\n";
  return disagreements ? 1 : 0;
}

std::vector<FormGroup> cvtForms() {
  const std::vector<std::string> scalars = {"s8", "u8", "s16", "u16", "s32", "u32", "s64",
                                            "u64", "f16", "bf16", "f32", "f64", "tf32"};
  const std::vector<std::string> packed = {"f16x2", "bf16x2", "e4m3x2", "e5m2x2", "e2m1x2", "e2m3x2", "e3m2x2",
                                           "ue8m0x2", "e4m3x4", "e5m2x4", "e2m3x4", "e3m2x4", "e2m1x4"};
  const std::vector<std::string> roundings = {"", "rn", "rz", "rm", "rp", "rna", "rs", "rni", "rzi", "rmi", "rpi"};
  const std::vector<std::string> flags = {"", "ftz", "sat", "satfinite", "relu", "relu.satfinite", "ftz.sat",
                                          "sat.satfinite"};
  // (destination, source) pairs: every scalar pair, and the packed types to
  // and from f32, f16x2, bf16x2 and each other.
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string &d : scalars)
    for (const std::string &s : scalars) pairs.emplace_back(d, s);
  std::vector<std::string> packedSides = packed;
  packedSides.push_back("f32");
  for (const std::string &d : packedSides)
    for (const std::string &s : packedSides)
      if (d != "f32" || s != "f32") pairs.emplace_back(d, s);

  std::vector<FormGroup> groups;
  for (const auto &[d, s] : pairs) {
    FormGroup group{"cvt." + d + "." + s, {}};
    for (const std::string &rounding : roundings)
      for (const std::string &flag : flags) {
        std::string name = "cvt";
        for (const std::string &part : {rounding, flag})
          if (!part.empty()) name += "." + part;
        name += "." + d + "." + s;
        // Operands as the form needs them: two f32 sources for an x2 pack,
        // a vector of four for an x4 pack, random bits for `.rs`.
        std::string sources = cvtRegister(s) + "2";
        bool pack2 = d.size() > 2 && d.substr(d.size() - 2) == "x2", pack4 = d.size() > 2 && d.substr(d.size() - 2) == "x4";
        if (s == "f32" && pack2) sources = "%f2, %f3";
        if (s == "f32" && pack4) sources = "{%f2, %f3, %f4, %f5}";
        if (rounding == "rs") sources += ", %r7";
        group.lines.push_back(name + " " + cvtRegister(d) + "1, " + sources + ";");
      }
    groups.push_back(std::move(group));
  }
  return groups;
}

/// The register that holds a value of `type` in the --alu-, --atom- and
/// --memory-forms modules: cvt's, and the bit types'.
std::string formRegister(const std::string &type) {
  if (type == "b32") return "%r";
  if (type == "b64") return "%rd";
  if (type == "b128") return "%q";
  return cvtRegister(type); // (b16 and the 8- and 16-bit integers: %h)
}

/// --alu-forms: the arithmetic and comparison instructions over 15 types,
/// each with the modifiers it has (alone and in the combinations compilers
/// write), `setp` with every comparison, with and without `.ftz`, and the
/// forms that need a modifier written without it.
std::vector<FormGroup> aluForms() {
  const std::vector<std::string> types = {"u16", "s16", "u32", "s32", "u64",   "s64",    "b16", "b32",
                                          "b64", "f16", "bf16", "f16x2", "bf16x2", "f32", "f64"};
  struct AluOp {
    std::string op;
    int sources; ///< a third source has the destination's width (mad.wide's addend)
    std::vector<std::string> variants;
  };
  const std::vector<AluOp> ops = {
      {"add", 2, {"", "rn", "rz", "rm", "ftz", "sat", "ftz.sat", "rn.ftz", "cc"}},
      {"sub", 2, {"", "rn", "rp", "ftz", "sat", "cc"}},
      {"mul", 2, {"", "lo", "hi", "wide", "rn", "rz", "ftz", "sat", "lo.sat", "rn.ftz.sat"}},
      {"min", 2, {"", "ftz", "NaN", "ftz.NaN", "xorsign.abs", "relu"}},
      {"max", 2, {"", "ftz", "NaN", "relu"}},
      {"div", 2, {"", "rn", "rz", "approx", "full", "approx.ftz", "full.ftz", "rn.ftz"}},
      {"rem", 2, {""}}, {"and", 2, {""}}, {"or", 2, {""}}, {"xor", 2, {""}}, {"copysign", 2, {""}},
      {"mad", 3, {"", "lo", "hi", "wide", "rn", "rm", "ftz", "sat", "rn.ftz", "rn.sat", "hi.sat", "lo.sat"}},
      {"fma", 3, {"", "rn", "rz", "rm", "rp", "rn.ftz", "rn.sat", "rn.ftz.sat", "rn.relu", "rn.oob"}},
      {"abs", 1, {"", "ftz"}}, {"neg", 1, {"", "ftz"}},
      {"sqrt", 1, {"", "rn", "rz", "approx", "approx.ftz", "rn.ftz"}},
      {"rcp", 1, {"", "rn", "rm", "approx", "approx.ftz", "rn.ftz"}},
      {"rsqrt", 1, {"", "approx", "approx.ftz"}}, {"sin", 1, {"", "approx", "approx.ftz"}}, {"cos", 1, {"approx"}},
      {"lg2", 1, {"", "approx", "approx.ftz"}}, {"ex2", 1, {"", "approx", "approx.ftz"}},
      {"tanh", 1, {"", "approx"}}, {"mov", 1, {""}}, {"not", 1, {""}}};
  std::vector<FormGroup> groups;
  for (const AluOp &a : ops) {
    FormGroup group{a.op, {}};
    for (const std::string &m : a.variants)
      for (const std::string &t : types) {
        std::string r = formRegister(t), d = r;
        if (m == "wide") d = t == "u16" || t == "s16" ? "%r" : t == "u32" || t == "s32" ? "%rd" : r;
        std::string line = a.op + (m.empty() ? "" : "." + m) + "." + t + " " + d + "1";
        for (int i = 0; i < a.sources; ++i) line += ", " + (i == 2 ? d : r) + std::to_string(i + 2);
        group.lines.push_back(line + ";");
      }
    groups.push_back(std::move(group));
  }
  FormGroup compare{"setp", {}}, select{"selp redux", {}};
  for (const std::string c : {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu",
                              "gtu", "geu", "num", "nan"})
    for (const std::string ftz : {"", ".ftz"})
      for (const std::string &t : types) {
        std::string r = formRegister(t);
        compare.lines.push_back("setp." + c + ftz + "." + t + " %p1, " + r + "2, " + r + "3;");
      }
  for (const std::string &t : types) {
    std::string r = formRegister(t);
    select.lines.push_back("selp." + t + " " + r + "1, " + r + "2, " + r + "3, %p1;");
    for (const std::string op : {"add", "min", "and"})
      select.lines.push_back("redux.sync." + op + "." + t + " " + r + "1, " + r + "2, -1;");
  }
  groups.push_back(std::move(compare));
  groups.push_back(std::move(select));
  return groups;
}

/// --memory-forms: ld and st in every state space with each cache operator,
/// memory order, L1/L2 hint and `.nc`, scalar and vector, over four types.
std::vector<FormGroup> memoryForms() {
  const std::vector<std::string> spaces = {"", ".global", ".shared", ".local", ".const", ".param"};
  const std::vector<std::string> orders = {"", ".volatile", ".relaxed.gpu", ".acquire.gpu", ".release.cta", ".weak"};
  const std::vector<std::string> after = {"",    ".ca", ".cg", ".cs", ".lu", ".cv", ".wb", ".wt", ".nc",
                                          ".L1::evict_last", ".L1::no_allocate", ".L2::128B", ".nc.L1::no_allocate"};
  std::vector<FormGroup> groups;
  for (const std::string op : {"ld", "st"})
    for (const std::string &space : spaces) {
      FormGroup group{op + space, {}};
      for (const std::string &order : orders)
        for (const std::string &modifier : after) {
          if (!order.empty() && !modifier.empty()) continue; // each alone
          for (const auto &[vector, width] : std::vector<std::pair<std::string, int>>{{"", 1}, {".v2", 2}, {".v4", 4}})
            for (const std::string type : {"u8", "u32", "f32", "b64"}) {
              std::string reg = formRegister(type);
              std::string value = width == 1 ? reg + "1" : reg + "1, " + reg + "2";
              if (width == 4) value += ", " + reg + "3, " + reg + "4";
              if (width > 1) value = "{" + value + "}";
              std::string name = op + order + space + modifier + vector + "." + type;
              group.lines.push_back(op == std::string("ld") ? name + " " + value + ", [%rd5];"
                                                            : name + " [%rd5], " + value + ";");
            }
        }
      groups.push_back(std::move(group));
    }
  return groups;
}

/// `count` registers of the class that holds `type`, from 1: "%f1" or "{%f1, %f2}".
std::string atomOperand(const std::string &type, int count) {
  std::string reg = formRegister(type);
  if (count == 1) return reg + "1";
  std::string list = "{";
  for (int i = 1; i <= count; ++i) list += (i > 1 ? ", " : "") + reg + std::to_string(i);
  return list + "}";
}

/// --atom-forms: atom and red over every operation, type, vector width, state
/// space and `.noftz`, and the memory orders and scopes over three of them.
std::vector<FormGroup> atomForms() {
  const std::vector<std::string> types = {"b16", "b32", "b64", "b128", "u32", "s32", "u64", "s64",
                                          "f32", "f64", "f16", "bf16", "f16x2", "bf16x2"};
  const std::vector<std::string> operations = {"add", "inc", "dec", "min", "max", "and", "or", "xor", "exch", "cas"};
  const std::vector<std::pair<std::string, int>> vectors = {{"", 1}, {".v2", 2}, {".v4", 4}, {".v8", 8}};
  auto form = [](const std::string &op, const std::string &modifiers, const std::string &type, int width,
                 const std::string &operation) {
    std::string line = op + modifiers + "." + type + " ";
    if (op == "atom") line += atomOperand(type, width) + ", ";
    line += "[%rd1], " + atomOperand(type, width);
    if (operation == "cas") line += ", " + atomOperand(type, width);
    return line + ";";
  };
  std::vector<FormGroup> groups;
  for (const std::string op : {"atom", "red"})
    for (const std::string space : {"", ".global", ".shared"})
      for (const std::string &operation : operations) {
        if (op == "red" && (operation == "exch" || operation == "cas")) continue;
        FormGroup group{op + space + "." + operation, {}};
        for (const std::string noftz : {"", ".noftz"})
          for (const auto &[vector, width] : vectors)
            for (const std::string &type : types)
              group.lines.push_back(form(op, space + "." + operation + noftz + vector, type, width, operation));
        groups.push_back(std::move(group));
      }
  for (const std::string op : {"atom", "red"})
    for (const std::string space : {".global", ".shared::cta", ".shared::cluster"}) {
      FormGroup group{op + space + " orders", {}};
      for (const std::string sem : {"", ".relaxed", ".acquire", ".release", ".acq_rel", ".weak", ".volatile"})
        for (const std::string scope : {"", ".cta", ".cluster", ".gpu", ".sys"})
          for (const auto &[operation, type] : std::vector<std::pair<std::string, std::string>>{
                   {"add", "f32"}, {"add", "u32"}, {"cas", "b32"}}) {
            if (op == "red" && operation == "cas") continue;
            group.lines.push_back(form(op, sem + scope + space + "." + operation, type, 1, operation));
          }
      groups.push_back(std::move(group));
    }
  return groups;
}

int usage() {
  std::cerr << "usage: lint_vs_ptxas [--ptxas PATH] [-j N] [--verbose] [--expect accept|reject|any] PATH...\n"
               "       lint_vs_ptxas [--ptxas PATH] [--verbose] --cvt-forms|--atom-forms|--alu-forms|--memory-forms TARGET...\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
#ifdef PTXFORGE_PTXAS
  std::string ptxas = PTXFORGE_PTXAS;
#else
  std::string ptxas = "ptxas";
#endif
  if (const char *env = std::getenv("PTXFORGE_PTXAS"); env && *env) ptxas = env;
  unsigned jobs = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
  bool verbose = false;
  std::string expect = "any";
  std::vector<fs::path> files;
  std::vector<std::string> formTargets;
  std::string forms; // "cvt" or "atom" when checking forms

  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!forms.empty() && !arg.empty() && arg[0] != '-') {
      formTargets.push_back(arg);
      continue;
    }
    if (arg == "--cvt-forms") forms = "cvt";
    else if (arg == "--atom-forms") forms = "atom";
    else if (arg == "--alu-forms") forms = "alu";
    else if (arg == "--memory-forms") forms = "memory";
    else if (arg == "--ptxas" && i + 1 < argc) ptxas = argv[++i];
    else if (arg == "-j" && i + 1 < argc) jobs = static_cast<unsigned>(std::max(1, std::atoi(argv[++i])));
    else if (arg == "--verbose") verbose = true;
    else if (arg == "--expect" && i + 1 < argc) expect = argv[++i];
    else if (!arg.empty() && arg[0] == '-') return usage();
    else collect(arg, files);
  }
  if (!forms.empty() ? formTargets.empty() || !files.empty()
          : files.empty() || (expect != "any" && expect != "accept" && expect != "reject"))
    return usage();
  if (ptxas.find('/') == std::string::npos) {
    std::optional<std::string> found = findOnPath(ptxas);
    if (!found) {
      std::cerr << "lint_vs_ptxas: " << ptxas << " not found on PATH (set PTXFORGE_PTXAS)\n";
      return 2;
    }
    ptxas = *found;
  }
  if (!forms.empty())
    return checkForms(forms, ptxas, formTargets,
                      forms == "cvt"    ? cvtForms()
                      : forms == "atom" ? atomForms()
                      : forms == "alu"  ? aluForms()
                                        : memoryForms(),
                      verbose);
  std::sort(files.begin(), files.end());

  std::vector<Verdict> verdicts(files.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < jobs; ++w)
    workers.emplace_back([&] {
      for (size_t i; (i = next++) < files.size();) verdicts[i] = judge(files[i], ptxas);
    });
  for (std::thread &t : workers) t.join();

  size_t accepted = 0, rejected = 0, falseErrors = 0, misses = 0, unexpected = 0, failedRuns = 0;
  for (const Verdict &v : verdicts) {
    if (v.ptxasFailedToRun) {
      ++failedRuns;
      std::cout << "NO-VERDICT " << v.path << ": " << v.ptxasFirst << "\n";
      continue;
    }
    (v.ptxasRejects ? rejected : accepted)++;
    bool agree = v.lintErrors == v.ptxasRejects;
    if (!agree) (v.lintErrors ? falseErrors : misses)++;
    bool expected = expect == "any" || (expect == "reject") == v.ptxasRejects;
    if (!expected) ++unexpected;
    if (agree && expected && !verbose) continue;
    std::string tag = !agree ? (v.lintErrors ? "FALSE-ERROR" : "MISS") : !expected ? "PTXAS-" + expect + "-EXPECTED"
                                                                                   : "agree";
    std::cout << tag << " " << v.path << " (-arch=" << v.arch << ")\n";
    if (v.lintErrors) std::cout << "  lint:  " << v.lintFirst << "\n";
    if (v.ptxasRejects) std::cout << "  ptxas: " << v.ptxasFirst << "\n";
  }
  std::cout << verdicts.size() << " modules: ptxas accepts " << accepted << ", rejects " << rejected
            << "; disagreements: " << falseErrors << " false errors (lint errs, ptxas accepts), " << misses
            << " misses (ptxas rejects, lint passes)";
  if (expect != "any") std::cout << "; " << unexpected << " not " << (expect == "accept" ? "accepted" : "rejected") << " by ptxas";
  if (failedRuns) std::cout << "; " << failedRuns << " without a ptxas verdict";
  std::cout << "\n";
  return falseErrors + misses + unexpected + failedRuns ? 1 : 0;
}
