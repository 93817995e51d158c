// gate_matrix: holds the lint's target and version gates to ptxas's verdicts,
// recorded as a matrix. A probes file (tests/golden/gates/*.probes) lists small
// kernels; every probe is assembled for every target and PTX ISA version of the
// matrix, and the expected file beside it records whether ptxas 13.0 accepts it
// (`+`) or rejects it (`-`) there.
//
//   gate_matrix PROBES EXPECTED                       the lint must say what the recording says (golden)
//   gate_matrix --ptxas PATH PROBES EXPECTED          ptxas must still say what the recording says (corpus)
//   gate_matrix --ptxas PATH --write PROBES EXPECTED  record ptxas's verdicts
//
// "The lint says" means: linting the probe alone reports an error. Exit 1 on
// any disagreement, each listed with the lint's first error (or ptxas's).
#include "ptx/Diagnostic.h"
#include "ptx/InstructionTable.h"
#include "ptx/Lint.h"
#include "support/Process.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using namespace ptxforge;

struct Probe {
  std::string name;
  std::vector<std::string> directives; ///< `@entry` lines
  std::vector<std::string> body;
};

struct Column {
  std::string target;
  std::string version; ///< "8.0"
};

// Targets and versions of the matrix; a version below a target's minimum is
// left out (no ptxas accepts the module, and the lint says so elsewhere).
const std::vector<std::string> kTargets = {"sm_80", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120a"};
const std::vector<std::string> kVersions = {"7.0", "7.8", "8.0", "8.3", "8.6", "8.7", "8.8", "9.0"};

std::vector<Column> columnsOf(const std::string &target) {
  std::vector<Column> out;
  for (const std::string &version : kVersions) {
    uint32_t number = static_cast<uint32_t>(std::stoi(version.substr(0, 1)) * 10 + std::stoi(version.substr(2)));
    if (number >= ptx::minPtxForTarget(target)) out.push_back({target, version});
  }
  return out;
}

constexpr const char *kPrelude =
    "  .reg .b32 %r<20>;\n  .reg .b64 %rd<20>;\n  .reg .pred %p<4>;\n  .reg .f32 %f<70>;\n  .reg .b16 %h<8>;\n"
    "  .shared .align 128 .b8 smem[4096];\n  .shared .align 8 .b64 bar;\n"
    "  mov.u64 %rd1, smem;\n  ld.param.u64 %rd2, [p0];\n  mov.u64 %rd3, bar;\n";

/// One module holding the probes as entries probe0, probe1, ...; `ranges`
/// gets each entry's first and last line.
std::string moduleText(const Column &column, const std::vector<const Probe *> &probes,
                       std::vector<std::pair<size_t, size_t>> *ranges = nullptr) {
  std::string text = ".version " + column.version + "\n.target " + column.target + "\n.address_size 64\n";
  size_t line = 4;
  auto lines = [](const std::string &s) {
    size_t n = 0;
    for (char c : s) n += c == '\n';
    return n;
  };
  for (size_t i = 0; i < probes.size(); ++i) {
    std::string entry = ".visible .entry probe" + std::to_string(i) + "(.param .u64 p0)\n";
    for (const std::string &d : probes[i]->directives) entry += d + "\n";
    entry += "{\n" + std::string(kPrelude);
    for (const std::string &b : probes[i]->body) entry += b + "\n";
    entry += "  ret;\n}\n";
    size_t count = lines(entry);
    if (ranges) ranges->emplace_back(line, line + count - 1);
    line += count;
    text += entry;
  }
  return text;
}

bool readProbes(const fs::path &path, std::vector<Probe> &probes) {
  std::ifstream in(path);
  if (!in) return false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("probe ", 0) == 0) {
      probes.push_back(Probe{line.substr(6), {}, {}});
    } else if (probes.empty()) {
      std::cerr << path.string() << ": a line before the first probe: " << line << "\n";
      return false;
    } else if (line.rfind("@entry ", 0) == 0) {
      probes.back().directives.push_back(line.substr(7));
    } else {
      probes.back().body.push_back(line);
    }
  }
  return true;
}

/// The lint's first error on the probe alone; empty when it reports none.
std::string lintFirstError(const Column &column, const Probe &probe) {
  ptx::LintOptions options;
  options.limits = ptx::DiagnosticLimits::unlimited();
  for (const ptx::Diagnostic &d : ptx::lintSource(moduleText(column, {&probe}), options))
    if (d.severity == ptx::Severity::Error)
      return std::to_string(d.line) + ":" + std::to_string(d.column) + " [" + d.code + "] " + d.message;
  return {};
}

/// ptxas's verdict on every probe for one column: probe index → its first
/// message, for the rejected ones. All probes go in one module (ptxas names the
/// line of each error); a run that fails without naming a probe's line falls
/// back to one module per probe. `failure` is set when ptxas cannot be run.
std::map<size_t, std::string> ptxasRejects(const std::string &ptxas, const Column &column,
                                           const std::vector<Probe> &probes, std::string &failure) {
  fs::path scratch = fs::temp_directory_path() / ("gate_matrix_" + std::to_string(getpid()) + ".ptx");
  auto run = [&](const std::string &text) -> std::optional<ProcessResult> {
    std::ofstream(scratch) << text;
    ProcessOptions options;
    options.timeout = std::chrono::seconds(60);
    Result<ProcessResult> result =
        runProcess({ptxas, "-arch=" + column.target, "-o", "/dev/null", scratch.string()}, options);
    if (!result || result->timedOut) {
      failure = result ? "ptxas timed out" : render(result.error());
      return std::nullopt;
    }
    return *result;
  };
  std::map<size_t, std::string> rejected;
  std::vector<size_t> alive(probes.size());
  for (size_t i = 0; i < alive.size(); ++i) alive[i] = i;
  while (!alive.empty()) {
    std::vector<const Probe *> kept;
    for (size_t i : alive) kept.push_back(&probes[i]);
    std::vector<std::pair<size_t, size_t>> ranges;
    std::optional<ProcessResult> result = run(moduleText(column, kept, &ranges));
    if (!result) break;
    if (result->exitCode == 0) break;
    std::set<size_t> now;
    std::istringstream log(result->standardError);
    for (std::string line; std::getline(log, line);) {
      size_t at = line.find(", line ");
      size_t colon = line.find("; ", at);
      // Advisories ("warning : Advisory: ...") name lines too; only errors reject.
      if (at == std::string::npos || colon == std::string::npos || line.compare(colon + 2, 5, "error") != 0) continue;
      size_t number = static_cast<size_t>(std::atol(line.c_str() + at + 7));
      for (size_t k = 0; k < ranges.size(); ++k)
        if (number >= ranges[k].first && number <= ranges[k].second && now.insert(alive[k]).second)
          rejected.emplace(alive[k], line.substr(colon + 2));
    }
    if (now.empty()) {
      // No line names a probe: judge each alone.
      for (size_t i : alive) {
        std::optional<ProcessResult> alone = run(moduleText(column, {&probes[i]}));
        if (!alone) break;
        if (alone->exitCode != 0) {
          std::istringstream lines(alone->standardError);
          std::string first, line;
          while (first.empty() && std::getline(lines, line))
            if (line.find("error") != std::string::npos || line.find("fatal") != std::string::npos) first = line;
          rejected.emplace(i, first);
        }
      }
      break;
    }
    std::vector<size_t> rest;
    for (size_t i : alive)
      if (!now.count(i)) rest.push_back(i);
    alive = std::move(rest);
  }
  fs::remove(scratch);
  return rejected;
}

/// The expected file: probe name → target → verdict string ("+-++", one
/// character per column of that target).
using Matrix = std::map<std::string, std::map<std::string, std::string>>;

bool readExpected(const fs::path &path, Matrix &matrix) {
  std::ifstream in(path);
  if (!in) return false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string name, cell;
    words >> name;
    while (words >> cell) {
      size_t colon = cell.find(':');
      if (colon == std::string::npos) return false;
      matrix[name][cell.substr(0, colon)] = cell.substr(colon + 1);
    }
  }
  return true;
}

std::string versionsLine() {
  std::string out = "# columns per target (PTX ISA versions):";
  for (const std::string &target : kTargets) {
    out += "\n#   " + target + ":";
    for (const Column &c : columnsOf(target)) out += " " + c.version;
  }
  return out;
}

int usage() {
  std::cerr << "usage: gate_matrix [--ptxas PATH [--write]] PROBES EXPECTED\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string ptxas;
  bool write = false;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--ptxas" && i + 1 < argc) ptxas = argv[++i];
    else if (arg == "--write") write = true;
    else if (arg.rfind("--", 0) == 0) return usage();
    else paths.push_back(arg);
  }
  if (paths.size() != 2 || (write && ptxas.empty())) return usage();
  std::vector<Probe> probes;
  if (!readProbes(paths[0], probes) || probes.empty()) {
    std::cerr << "gate_matrix: cannot read probes from " << paths[0] << "\n";
    return 2;
  }

  if (write) {
    std::map<std::string, std::map<std::string, std::string>> cells; // target → probe → verdicts
    for (const std::string &target : kTargets) {
      for (const Column &column : columnsOf(target)) {
        std::string failure;
        std::map<size_t, std::string> rejected = ptxasRejects(ptxas, column, probes, failure);
        if (!failure.empty()) {
          std::cerr << "gate_matrix: " << failure << "\n";
          return 2;
        }
        for (size_t i = 0; i < probes.size(); ++i) cells[target][probes[i].name] += rejected.count(i) ? '-' : '+';
      }
    }
    std::ofstream out(paths[1]);
    out << "# ptxas 13.0's verdict on each probe of " << fs::path(paths[0]).filename().string()
        << ": + accepts, - rejects.\n# Generated by gate_matrix --write; do not edit.\n"
        << versionsLine() << "\n";
    size_t width = 0;
    for (const Probe &p : probes) width = std::max(width, p.name.size());
    for (const Probe &p : probes) {
      out << p.name << std::string(width + 1 - p.name.size(), ' ');
      for (const std::string &target : kTargets) out << " " << target << ":" << cells[target][p.name];
      out << "\n";
    }
    return 0;
  }

  Matrix expected;
  if (!readExpected(paths[1], expected)) {
    std::cerr << "gate_matrix: cannot read " << paths[1] << "\n";
    return 2;
  }
  size_t checked = 0, disagreements = 0;
  for (const std::string &target : kTargets) {
    std::vector<Column> columns = columnsOf(target);
    for (size_t c = 0; c < columns.size(); ++c) {
      std::map<size_t, std::string> rejected;
      if (!ptxas.empty()) {
        std::string failure;
        rejected = ptxasRejects(ptxas, columns[c], probes, failure);
        if (!failure.empty()) {
          std::cerr << "gate_matrix: " << failure << "\n";
          return 2;
        }
      }
      for (size_t i = 0; i < probes.size(); ++i) {
        const std::string &recorded = expected[probes[i].name][target];
        if (recorded.size() != columns.size()) {
          std::cerr << "gate_matrix: " << paths[1] << " has no verdicts for " << probes[i].name << " on " << target
                    << " (regenerate it)\n";
          return 2;
        }
        bool expectReject = recorded[c] == '-';
        ++checked;
        std::string said;
        bool rejects;
        if (ptxas.empty()) {
          said = lintFirstError(columns[c], probes[i]);
          rejects = !said.empty();
        } else {
          rejects = rejected.count(i) > 0;
          if (rejects) said = rejected[i];
        }
        if (rejects == expectReject) continue;
        ++disagreements;
        std::cout << (ptxas.empty() ? "lint " : "ptxas ") << (rejects ? "rejects " : "accepts ") << probes[i].name
                  << " on " << target << " with .version " << columns[c].version << "; ptxas 13.0 "
                  << (expectReject ? "rejects" : "accepts") << " it\n";
        if (!said.empty()) std::cout << "  " << said << "\n";
      }
    }
  }
  std::cout << checked << " probe verdicts checked (" << probes.size() << " probes), " << disagreements
            << " disagreements\n";
  return disagreements == 0 ? 0 : 1;
}
