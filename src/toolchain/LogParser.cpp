// LogParser: ptxas / nvJitLink log text -> Diagnostics, ResourceReport, advisories.
#include "toolchain/LogParser.h"

#include "ptx/Lexer.h"
#include "support/Text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <regex>

namespace ptxforge::toolchain {

const ResourceUsage *ResourceReport::find(const std::string &function) const {
  for (const ResourceUsage &usage : functions)
    if (usage.function == function)
      return &usage;
  return nullptr;
}

namespace {

/// Compiler log lines are short; libstdc++'s std::regex recurses per
/// character and can exhaust the stack on a pathological multi-megabyte line,
/// so longer lines are cut before matching.
constexpr size_t kMaxLineLength = 1024;

std::vector<std::string_view> splitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.size() > kMaxLineLength)
      line = line.substr(0, kMaxLineLength);
    lines.push_back(line);
    if (end == std::string_view::npos)
      break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool contains(const std::string &haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

int toInt(std::string_view digits) {
  int value = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), value);
  return value;
}

/// One "[ptxas] [FILE, line N;] LEVEL : TEXT" log line.
struct LogLine {
  std::string level; // error, warning, fatal, info
  uint32_t line = 0;
  std::string text;
  bool fromPtxas = false; // had the "ptxas" prefix (vs nvJitLink's own "info :")
};

bool startsWithWord(std::string_view text, std::string_view word) {
  return text.substr(0, word.size()) == word &&
         (text.size() == word.size() || !std::isalnum(static_cast<unsigned char>(text[word.size()])));
}

/// Splits `[ptxas] [FILE, line N;] LEVEL : MESSAGE`. The file part is the PTX
/// path for the ptxas CLI and "application ptx input" inside nvJitLink; levels
/// are padded with spaces before the colon. Written by hand rather than with
/// std::regex, whose recursive matcher overflows the stack on long lines.
std::optional<LogLine> splitLogLine(std::string_view raw) {
  LogLine out;
  std::string_view rest = trimLeft(raw);
  if (startsWithWord(rest, "ptxas")) {
    out.fromPtxas = true;
    rest = trimLeft(rest.substr(5));
  }
  // Optional location: everything up to the first ';' ends in "line N".
  if (size_t semicolon = rest.find(';'); semicolon != std::string_view::npos) {
    std::string_view location = rest.substr(0, semicolon);
    while (!location.empty() && std::isspace(static_cast<unsigned char>(location.back()))) location.remove_suffix(1);
    size_t digits = location.size();
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(location[digits - 1]))) --digits;
    std::string_view before = location.substr(0, digits);
    while (!before.empty() && std::isspace(static_cast<unsigned char>(before.back()))) before.remove_suffix(1);
    bool hasLine = digits < location.size() && before.size() >= 4 && before.substr(before.size() - 4) == "line" &&
                   digits > before.size(); // at least one space between "line" and the number
    if (hasLine) {
      std::string_view file = before.substr(0, before.size() - 4);
      while (!file.empty() && std::isspace(static_cast<unsigned char>(file.back()))) file.remove_suffix(1);
      if (!file.empty() && file.back() == ',') {
        out.line = static_cast<uint32_t>(toInt(location.substr(digits)));
        rest = trimLeft(rest.substr(semicolon + 1));
      }
    }
  }
  size_t levelEnd = 0;
  while (levelEnd < rest.size() && std::isalpha(static_cast<unsigned char>(rest[levelEnd]))) ++levelEnd;
  std::string_view level = rest.substr(0, levelEnd);
  if (level != "error" && level != "warning" && level != "fatal" && level != "info") return std::nullopt;
  std::string_view afterLevel = trimLeft(rest.substr(levelEnd));
  if (afterLevel.empty() || afterLevel.front() != ':') return std::nullopt;
  out.level = std::string(level);
  out.text = std::string(trim(afterLevel.substr(1)));
  return out;
}

bool isAdvisory(const std::string &text) {
  std::string lowered = lower(text);
  return contains(lowered, "advisory") || contains(lowered, "potential performance loss");
}

/// Trailers that only repeat that something above failed.
bool isGenericTrailer(const std::string &text) {
  return contains(lower(text), "ptx assembly aborted due to errors");
}

const char *hintFor(const std::string &code) {
  if (code == kCodeCompileSyntax)
    return "check the instruction spelling, its modifiers and the operand list against the PTX ISA";
  if (code == kCodeCompileType)
    return "make each operand's register type and size match the instruction's type suffix";
  if (code == kCodeCompileUnknownSymbol)
    return "declare the register, variable or label before use (.reg/.shared/.global, or a label in this function)";
  if (code == kCodeCompileArch)
    return "use an instruction available on the .target, or raise .target/.version (sm_90a features need "
           ".target sm_90a and -arch=sm_90a)";
  if (code == kCodeCompileResource)
    return "reduce per-thread registers, shared memory or stack usage (or tile smaller)";
  return "";
}

} // namespace

std::string classifyCompilerMessage(std::string_view message) {
  const std::string text = lower(message);
  // Resource limits first: "uses too much shared data" also mentions 'shared'.
  if (contains(text, "too much shared") || contains(text, "too much local") || contains(text, "too many resources") ||
      contains(text, "uses too much") || contains(text, "register count") || contains(text, "registers") ||
      contains(text, "maxrregcount") || contains(text, "exceeds") || contains(text, "stack size"))
    return kCodeCompileResource;
  if (contains(text, "not supported on .target") || contains(text, "requires .target") ||
      contains(text, "specified by .target is higher") ||
      contains(text, "ptx .version") || contains(text, ".version") || contains(text, "feature '") ||
      contains(text, "not supported on this target") || contains(text, "does not support .target") ||
      contains(text, "requires sm_") || contains(text, "requires ptx") || contains(text, "target sm_") ||
      contains(text, "unsupported on target") || contains(text, "not supported on target"))
    return kCodeCompileArch;
  if (contains(text, "parsing error") || contains(text, "syntax error") || contains(text, "unexpected") ||
      contains(text, "not a name of any known instruction") || contains(text, "unknown modifier") ||
      contains(text, "unknown directive") || contains(text, "invalid character"))
    return kCodeCompileSyntax;
  if (contains(text, "unknown symbol") || contains(text, "undefined") || contains(text, "undeclared") ||
      contains(text, "not declared") || contains(text, "unresolved") || contains(text, "unknown label") ||
      contains(text, "duplicate definition") || contains(text, "redefinition"))
    return kCodeCompileUnknownSymbol;
  if (contains(text, "arguments mismatch") || contains(text, "mismatch") || contains(text, "operand") ||
      contains(text, "type") || contains(text, "state space") || contains(text, "illegal vector") ||
      contains(text, "incompatible") || contains(text, "size of"))
    return kCodeCompileType;
  return kCodeCompileOther;
}

namespace {

/// The texts a compiler message quotes between single quotes, in order.
std::vector<std::string_view> quotedTexts(std::string_view message) {
  std::vector<std::string_view> quoted;
  size_t open = message.find('\'');
  while (open != std::string_view::npos) {
    const size_t close = message.find('\'', open + 1);
    if (close == std::string_view::npos) break;
    if (close > open + 1) quoted.push_back(message.substr(open + 1, close - open - 1));
    open = message.find('\'', close + 1);
  }
  return quoted;
}

/// The text of the 1-based line `number` of `source` (empty past its end).
std::string_view sourceLine(std::string_view source, uint32_t number) {
  size_t start = 0;
  for (uint32_t line = 1; line < number; ++line) {
    const size_t newline = source.find('\n', start);
    if (newline == std::string_view::npos) return {};
    start = newline + 1;
  }
  const size_t end = source.find('\n', start);
  return source.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

} // namespace

void locateCompilerDiagnostics(std::vector<ptx::Diagnostic> &diagnostics, std::string_view ptx) {
  if (std::none_of(diagnostics.begin(), diagnostics.end(),
                   [](const ptx::Diagnostic &d) { return d.line == 0 || d.column == 0; }))
    return;
  const std::vector<ptx::Token> tokens = ptx::tokenize(ptx);
  const ptx::Token &firstToken = tokens.front(); // End (line 1 at the least) for an empty module
  for (ptx::Diagnostic &diagnostic : diagnostics) {
    if (diagnostic.line != 0 && diagnostic.column != 0) continue;
    // The message without the log's "ptxas FILE, line N;" prefix, whose path may hold quotes.
    std::string_view text = diagnostic.message;
    if (size_t semicolon = text.find("; "); diagnostic.line != 0 && semicolon != std::string_view::npos)
      text.remove_prefix(semicolon + 2);
    const std::vector<std::string_view> quoted = quotedTexts(text);
    if (diagnostic.line == 0) {
      // A function the message quotes: point at its name after .entry / .func.
      const ptx::Token *named = nullptr;
      for (size_t i = 1; i < tokens.size() && !named; ++i)
        if ((tokens[i - 1].isDot("entry") || tokens[i - 1].isDot("func")) &&
            std::find(quoted.begin(), quoted.end(), tokens[i].text) != quoted.end())
          named = &tokens[i];
      const ptx::Token &at = named ? *named : firstToken;
      diagnostic.line = std::max<uint32_t>(at.line, 1);
      diagnostic.column = std::max<uint32_t>(at.column, 1);
      continue;
    }
    const std::string_view line = sourceLine(ptx, diagnostic.line);
    std::vector<const ptx::Token *> onLine;
    for (const ptx::Token &token : tokens)
      if (token.line == diagnostic.line && token.kind != ptx::TokenKind::End) onLine.push_back(&token);
    const ptx::Token *chosen = nullptr;
    for (std::string_view wanted : quoted) {
      for (const ptx::Token *token : onLine) {
        // Tokens split `add.s32` and `wgmma.fence`: match the quote against the line from the token on.
        const size_t offset = token->column - 1;
        if (offset < line.size() && line.substr(offset, wanted.size()) == wanted) {
          chosen = token;
          break;
        }
      }
      if (chosen) break;
    }
    if (!chosen && !onLine.empty()) chosen = onLine.front();
    diagnostic.column = chosen ? chosen->column : 1;
  }
}

std::vector<ptx::Diagnostic> parseCompilerLog(std::string_view log) {
  // nvJitLink's own result line, e.g. "ERROR 9: finish" or
  // "ERROR NVJITLINK_ERROR_PTX_COMPILE: JIT the PTX (input.ptx)".
  static const std::regex wrapperPattern(R"(^\s*ERROR\s+(\w+)\s*:\s*(.*)$)", std::regex::optimize);
  std::vector<ptx::Diagnostic> specific;
  std::vector<ptx::Diagnostic> generic;
  for (std::string_view raw : splitLines(log)) {
    std::string_view line = trim(raw);
    if (line.empty())
      continue;
    if (std::optional<LogLine> parsed = splitLogLine(line)) {
      if (parsed->level == "info" || isAdvisory(parsed->text))
        continue;
      ptx::Diagnostic diagnostic;
      diagnostic.severity = parsed->level == "warning" ? ptx::Severity::Warning : ptx::Severity::Error;
      diagnostic.line = parsed->line;
      diagnostic.message = std::string(line);
      if (isGenericTrailer(parsed->text)) {
        diagnostic.code = kCodeCompileOther;
        generic.push_back(std::move(diagnostic));
        continue;
      }
      diagnostic.code = classifyCompilerMessage(parsed->text);
      diagnostic.hint = hintFor(diagnostic.code);
      // nvJitLink compiles with -c, which ptxas refuses below PTX ISA 3.1:
      // the module is old, not the instruction.
      if (contains(lower(parsed->text), "compile only(-c)") && contains(parsed->text, ".version 3.1"))
        diagnostic.hint = "PTX older than ISA 3.1 is compiled by ptxas only: raise `.version` to 3.1 or later (and "
                          "`.target` to one this toolkit supports), or compile with `--backend ptxas`";
      // A module written for a newer GPU than the one it is compiled for.
      if (contains(lower(parsed->text), "specified by .target is higher"))
        diagnostic.hint = "the module's .target names a newer GPU than the one it is compiled for: set `.target` to "
                          "the task's architecture (e.g. sm_90, or sm_90a for wgmma and setmaxnreg)";
      specific.push_back(std::move(diagnostic));
      continue;
    }
    std::match_results<std::string_view::const_iterator> match;
    if (std::regex_match(line.begin(), line.end(), match, wrapperPattern)) {
      ptx::Diagnostic diagnostic;
      diagnostic.code = kCodeCompileOther;
      diagnostic.message = std::string(line);
      generic.push_back(std::move(diagnostic));
    }
  }
  const bool haveSpecificError = ptx::hasErrors(specific);
  if (!haveSpecificError)
    for (ptx::Diagnostic &diagnostic : generic)
      specific.push_back(std::move(diagnostic));
  ptx::sortByLocation(specific);
  return specific;
}

namespace {

/// Applies the comma-separated items of a "Used N registers, ..." line (or a
/// "N bytes stack frame, ..." continuation) to `usage`. With `summaryOnly`,
/// only items ptxas's own lines do not carry are taken (see caller).
void applyResourceItems(std::string_view items, ResourceUsage &usage, ModuleResources *module, bool summaryOnly) {
  static const std::regex itemPattern(R"(^\s*(?:used\s+)?(\d+)\s+(.*?)\s*$)", std::regex::icase | std::regex::optimize);
  static const std::regex bankPattern(R"(^bytes\s+cmem\[(\d+)\]$)", std::regex::optimize);
  while (!items.empty()) {
    size_t comma = items.find(',');
    std::string_view item = items.substr(0, comma);
    items = comma == std::string_view::npos ? std::string_view() : items.substr(comma + 1);
    std::match_results<std::string_view::const_iterator> match;
    if (!std::regex_match(item.begin(), item.end(), match, itemPattern))
      continue;
    const int value = toInt(std::string_view(&*match[1].first, match[1].length()));
    const std::string what = lower(match[2].str());
    std::smatch bank;
    if (std::regex_match(what, bank, bankPattern)) {
      const int index = toInt(bank[1].str());
      if (module)
        module->constantBanks[index] = value;
      else if (index == 0)
        usage.constantBytes = value;
      else
        usage.otherConstantBanks[index] = value;
      continue;
    }
    if (what == "bytes gmem") {
      if (module)
        module->globalBytes = value;
      continue;
    }
    if (what == "bytes lmem") {
      usage.localBytes = value;
      continue;
    }
    if (summaryOnly)
      continue;
    if (what == "registers")
      usage.registers = value;
    else if (what == "barriers")
      usage.barriers = value;
    else if (what == "bytes stack frame" || what == "stack")
      usage.stackFrameBytes = value;
    else if (what == "bytes cumulative stack size")
      usage.cumulativeStackBytes = value;
    else if (what == "bytes spill stores")
      usage.spillStoreBytes = value;
    else if (what == "bytes spill loads")
      usage.spillLoadBytes = value;
    else if (what == "bytes smem")
      usage.sharedBytes = value;
  }
}

} // namespace

ResourceReport parseResourceUsage(std::string_view log) {
  static const std::regex compilingPattern(R"(^Compiling entry function '([^']+)' for '[^']+'$)", std::regex::optimize);
  static const std::regex propertiesPattern(R"(^Function properties for '?([^':]+)'?:?$)", std::regex::optimize);
  static const std::regex usedPattern(R"(^[Uu]sed\s+\d+\s+registers.*$)", std::regex::optimize);
  static const std::regex gmemPattern(R"(^\d+\s+bytes\s+gmem.*$)", std::regex::optimize);
  // The "Function properties" continuation; nvJitLink prefixes it with "ptxas .".
  static const std::regex continuationPattern(R"(^\s*(?:ptxas\s+\.)?\s*(\d+\s+bytes\s+stack\s+frame.*)$)",
                                              std::regex::optimize);

  ResourceReport report;
  // Names which ptxas's own lines described; nvJitLink's link summary repeats
  // them with a shared-memory figure that includes the 1 KiB the driver
  // reserves on sm_80+, so for those only the summary's extra items count.
  std::vector<std::string> describedByPtxas;
  int current = -1;
  auto select = [&](const std::string &name, bool isEntry) {
    for (size_t i = 0; i < report.functions.size(); ++i)
      if (report.functions[i].function == name) {
        current = static_cast<int>(i);
        report.functions[i].isEntry = report.functions[i].isEntry || isEntry;
        return;
      }
    ResourceUsage usage;
    usage.function = name;
    usage.isEntry = isEntry;
    report.functions.push_back(std::move(usage));
    current = static_cast<int>(report.functions.size()) - 1;
  };

  for (std::string_view raw : splitLines(log)) {
    std::match_results<std::string_view::const_iterator> match;
    if (std::regex_match(raw.begin(), raw.end(), match, continuationPattern)) {
      if (current >= 0) {
        applyResourceItems(std::string_view(&*match[1].first, match[1].length()), report.functions[current], nullptr,
                           false);
        report.functions[current].known = true;
      }
      continue;
    }
    std::optional<LogLine> parsed = splitLogLine(raw);
    if (!parsed || parsed->level != "info")
      continue;
    const std::string &text = parsed->text;
    std::smatch found;
    if (std::regex_match(text, found, compilingPattern)) {
      select(found[1].str(), true);
    } else if (std::regex_match(text, found, propertiesPattern)) {
      // nvJitLink's summary lists only kernels ("Function properties for 'k':").
      const bool summary = !parsed->fromPtxas;
      select(std::string(trim(found[1].str())), summary);
    } else if (std::regex_match(text, usedPattern)) {
      if (current < 0)
        continue;
      ResourceUsage &usage = report.functions[current];
      const bool summaryOnly =
          !parsed->fromPtxas &&
          std::find(describedByPtxas.begin(), describedByPtxas.end(), usage.function) != describedByPtxas.end();
      applyResourceItems(text, usage, nullptr, summaryOnly);
      usage.known = true;
      if (parsed->fromPtxas)
        describedByPtxas.push_back(usage.function);
    } else if (std::regex_match(text, gmemPattern)) {
      ResourceUsage unused; // module-level items land in report.module
      applyResourceItems(text, unused, &report.module, false);
    }
  }
  return report;
}

std::vector<std::string> parseAdvisories(std::string_view log) {
  std::vector<std::string> advisories;
  for (std::string_view raw : splitLines(log)) {
    std::optional<LogLine> parsed = splitLogLine(raw);
    if (!parsed || !isAdvisory(parsed->text))
      continue;
    std::string entry = parsed->line ? "line " + std::to_string(parsed->line) + ": " + parsed->text : parsed->text;
    if (std::find(advisories.begin(), advisories.end(), entry) == advisories.end())
      advisories.push_back(std::move(entry));
  }
  return advisories;
}

} // namespace ptxforge::toolchain
