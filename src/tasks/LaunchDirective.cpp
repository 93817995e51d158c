// LaunchDirective: scanning `// @ptxforge` comments and resolving launches.
#include "tasks/LaunchDirective.h"

#include <algorithm>
#include <cctype>

namespace ptxforge::tasks {

namespace {

constexpr const char *kCode = "launch-directive";
constexpr std::string_view kMarker = "@ptxforge";

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

class DirectiveReader {
public:
  DirectiveReader(const std::vector<std::string> &symbols, LaunchDirectiveScan &scan) : symbols_(symbols), scan_(scan) {}

  /// `body` is the comment text after the marker; `bodyColumn` the 1-based
  /// column of its first character in line `line`.
  void read(std::string_view body, uint32_t line, uint32_t bodyColumn) {
    size_t at = 0;
    bool any = false;
    while (true) {
      while (at < body.size() && isSpace(body[at])) ++at;
      if (at >= body.size()) break;
      any = true;
      size_t keyStart = at;
      while (at < body.size() && (std::isalnum(static_cast<unsigned char>(body[at])) || body[at] == '_')) ++at;
      std::string_view key = body.substr(keyStart, at - keyStart);
      uint32_t keyColumn = bodyColumn + static_cast<uint32_t>(keyStart);
      while (at < body.size() && isSpace(body[at])) ++at;
      if (key.empty() || at >= body.size() || body[at] != '=') {
        size_t end = keyStart;
        while (end < body.size() && !isSpace(body[end])) ++end;
        report(line, keyColumn,
               "expected key=value, found '" + std::string(body.substr(keyStart, end - keyStart)) + "'",
               "write e.g. // @ptxforge block=(256,1,1) grid=(ceildiv(n,256),1,1) smem=0");
        return; // the rest of the line cannot be read reliably
      }
      ++at;
      while (at < body.size() && isSpace(body[at])) ++at;
      // The value runs to the first space outside parentheses, so that
      // "grid=(ceildiv(n, 64), 1, 1)" is one value.
      size_t valueStart = at;
      int depth = 0;
      while (at < body.size() && (depth > 0 || !isSpace(body[at]))) {
        if (body[at] == '(') ++depth;
        else if (body[at] == ')') --depth;
        ++at;
      }
      std::string_view value = body.substr(valueStart, at - valueStart);
      uint32_t valueColumn = bodyColumn + static_cast<uint32_t>(valueStart);
      if (depth > 0) {
        report(line, valueColumn, "unbalanced parentheses in " + std::string(key) + "=" + std::string(value),
               "close every '(' with ')'");
        continue;
      }
      if (value.empty()) {
        report(line, valueColumn, "missing value after " + std::string(key) + "=", hintFor(key));
        continue;
      }
      if (key == "block") readTuple(key, value, line, valueColumn, keyColumn, scan_.config.block, scan_.config.blockGiven);
      else if (key == "grid") readTuple(key, value, line, valueColumn, keyColumn, scan_.config.grid, scan_.config.gridGiven);
      else if (key == "smem") {
        if (scan_.config.smemGiven) {
          report(line, keyColumn, "duplicate key 'smem' (already given)", "give each key once per module");
          continue;
        }
        if (auto expression = readExpression(value, line, valueColumn, "smem")) {
          scan_.config.smem = std::move(*expression);
          scan_.config.smemGiven = true;
        }
      } else {
        report(line, keyColumn, "unknown key '" + std::string(key) + "' (valid: block, grid, smem)",
               "launch directives take block=(x,y,z), grid=(x,y,z) and smem=bytes");
      }
    }
    if (!any)
      report(line, bodyColumn > 0 ? bodyColumn - static_cast<uint32_t>(kMarker.size()) : 0,
             "empty @ptxforge directive", "write e.g. // @ptxforge block=(256,1,1) grid=(ceildiv(n,256),1,1)");
  }

private:
  const std::vector<std::string> &symbols_;
  LaunchDirectiveScan &scan_;

  static std::string hintFor(std::string_view key) {
    if (key == "smem") return "smem takes one expression in bytes, e.g. smem=0 or smem=4*256";
    return std::string(key) + " takes three expressions, e.g. " + std::string(key) +
           (key == "block" ? "=(256,1,1)" : "=(ceildiv(n,256),1,1)");
  }

  void report(uint32_t line, uint32_t column, std::string message, std::string hint) {
    ptx::Diagnostic diagnostic;
    diagnostic.code = kCode;
    diagnostic.severity = ptx::Severity::Error;
    diagnostic.line = line;
    diagnostic.column = column;
    diagnostic.message = std::move(message);
    diagnostic.hint = std::move(hint);
    scan_.diagnostics.push_back(std::move(diagnostic));
  }

  std::optional<Expression> readExpression(std::string_view text, uint32_t line, uint32_t column, const std::string &what) {
    auto parsed = parseExpressionLocated(text);
    if (auto *syntax = std::get_if<ExpressionSyntaxError>(&parsed)) {
      report(line, column + syntax->column - 1, what + " '" + std::string(text) + "': " + syntax->message,
             "expressions use integers, the task's symbols, + - * / %, parentheses and ceildiv/min/max");
      return std::nullopt;
    }
    Expression expression = std::get<Expression>(std::move(parsed));
    bool good = true;
    for (const SymbolUse &use : symbolUses(expression)) {
      if (std::find(symbols_.begin(), symbols_.end(), use.name) != symbols_.end()) continue;
      std::string known;
      for (const std::string &symbol : symbols_) known += (known.empty() ? "" : ", ") + symbol;
      report(line, column + use.column - 1,
             what + ": unknown symbol '" + use.name + "' (the task's symbols: " + (known.empty() ? "none" : known) + ")",
             "use only the task's size symbols");
      good = false;
    }
    if (!good) return std::nullopt;
    return expression;
  }

  void readTuple(std::string_view key, std::string_view value, uint32_t line, uint32_t valueColumn, uint32_t keyColumn,
                 std::array<Expression, 3> &out, bool &given) {
    if (given) {
      report(line, keyColumn, "duplicate key '" + std::string(key) + "' (already given)", "give each key once per module");
      return;
    }
    std::vector<std::pair<std::string_view, uint32_t>> elements; // text, column
    bool isTuple = value.front() == '(';
    if (isTuple) {
      // A tuple only when the first '(' closes at the very end; "(n+1)*2" is a single expression.
      int depth = 0;
      size_t close = std::string_view::npos;
      for (size_t i = 0; i < value.size(); ++i) {
        if (value[i] == '(') ++depth;
        else if (value[i] == ')' && --depth == 0) {
          close = i;
          break;
        }
      }
      isTuple = close == value.size() - 1;
    }
    if (isTuple) {
      std::string_view inner = value.substr(1, value.size() - 2);
      size_t start = 0;
      int depth = 0;
      for (size_t i = 0; i <= inner.size(); ++i) {
        if (i < inner.size() && inner[i] == '(') ++depth;
        else if (i < inner.size() && inner[i] == ')') --depth;
        else if (i == inner.size() || (inner[i] == ',' && depth == 0)) {
          elements.emplace_back(inner.substr(start, i - start), valueColumn + 1 + static_cast<uint32_t>(start));
          start = i + 1;
        }
      }
    } else {
      elements.emplace_back(value, valueColumn);
    }
    if (elements.size() > 3) {
      report(line, valueColumn,
             std::string(key) + "=" + std::string(value) + " has " + std::to_string(elements.size()) +
                 " elements; expected at most 3 (x, y, z)",
             hintFor(key));
      return;
    }
    std::array<Expression, 3> parsed{Expression::integer(1), Expression::integer(1), Expression::integer(1)};
    bool good = true;
    static const char *axes[] = {"x", "y", "z"};
    for (size_t i = 0; i < elements.size(); ++i) {
      auto [text, column] = elements[i];
      bool blank = std::all_of(text.begin(), text.end(), [](char c) { return isSpace(c); });
      if (blank) {
        report(line, column, std::string(key) + "=" + std::string(value) + ": empty element " + std::to_string(i + 1),
               hintFor(key));
        good = false;
        continue;
      }
      if (auto expression = readExpression(text, line, column, std::string(key) + "." + axes[i])) parsed[i] = *expression;
      else good = false;
    }
    if (!good) return;
    out = std::move(parsed);
    given = true;
  }
};

} // namespace

LaunchDirectiveScan parseLaunchDirectives(std::string_view ptxText, const std::vector<std::string> &symbols) {
  LaunchDirectiveScan scan;
  DirectiveReader reader(symbols, scan);
  uint32_t line = 1;
  bool inBlockComment = false;
  size_t lineStart = 0;
  while (lineStart <= ptxText.size()) {
    size_t lineEnd = ptxText.find('\n', lineStart);
    if (lineEnd == std::string_view::npos) lineEnd = ptxText.size();
    std::string_view text = ptxText.substr(lineStart, lineEnd - lineStart);
    // Find the line comment, skipping block comments and string literals
    // (.file "a//b.cu" must not start a comment).
    bool inString = false;
    for (size_t i = 0; i < text.size(); ++i) {
      if (inBlockComment) {
        if (text.compare(i, 2, "*/") == 0) inBlockComment = false, ++i;
        continue;
      }
      if (inString) {
        if (text[i] == '\\') ++i;
        else if (text[i] == '"') inString = false;
        continue;
      }
      if (text[i] == '"') inString = true;
      else if (text.compare(i, 2, "/*") == 0) inBlockComment = true, ++i;
      else if (text.compare(i, 2, "//") == 0) {
        size_t at = i + 2;
        while (at < text.size() && isSpace(text[at])) ++at;
        if (text.compare(at, kMarker.size(), kMarker) == 0) {
          size_t bodyStart = at + kMarker.size();
          // "@ptxforgefoo" is not the marker.
          if (bodyStart == text.size() || isSpace(text[bodyStart])) {
            ++scan.directiveCount;
            reader.read(text.substr(bodyStart), line, static_cast<uint32_t>(bodyStart + 1));
          }
        }
        break;
      }
    }
    if (lineEnd == ptxText.size()) break;
    lineStart = lineEnd + 1;
    ++line;
  }
  return scan;
}

Result<ResolvedLaunch> evaluateLaunch(const std::array<Expression, 3> &block, const std::array<Expression, 3> &grid,
                                      const Expression &smem, const Shape &shape) {
  ResolvedLaunch launch;
  static const char *axes[] = {"x", "y", "z"};
  auto evaluatePart = [&](const Expression &expression, const std::string &what, int64_t low,
                          int64_t high) -> Result<uint32_t> {
    Result<int64_t> value = evaluate(expression, shape);
    if (!value) return makeError(ErrorKind::InvalidInput, what + " = " + toString(expression) + ": " + value.error().message);
    if (*value < low || *value > high)
      return makeError(ErrorKind::InvalidInput, what + " = " + toString(expression) + " is " + std::to_string(*value) +
                                                    " for " + shapeToString(shape) + " (must be in " +
                                                    std::to_string(low) + ".." + std::to_string(high) + ")");
    return static_cast<uint32_t>(*value);
  };
  for (int i = 0; i < 3; ++i) {
    int64_t blockLimit = i < 2 ? kMaxBlockDimXY : kMaxBlockDimZ;
    Result<uint32_t> b = evaluatePart(block[i], std::string("block.") + axes[i], 1, blockLimit);
    if (!b) return b.error();
    launch.block[i] = *b;
    int64_t gridLimit = i == 0 ? kMaxGridDimX : kMaxGridDimYZ;
    Result<uint32_t> g = evaluatePart(grid[i], std::string("grid.") + axes[i], 1, gridLimit);
    if (!g) return g.error();
    launch.grid[i] = *g;
  }
  int64_t threads = int64_t{launch.block[0]} * launch.block[1] * launch.block[2];
  if (threads > kMaxThreadsPerBlock)
    return makeError(ErrorKind::InvalidInput, "block (" + std::to_string(launch.block[0]) + "," +
                                                  std::to_string(launch.block[1]) + "," + std::to_string(launch.block[2]) +
                                                  ") has " + std::to_string(threads) + " threads (at most 1024 per block)");
  Result<uint32_t> s = evaluatePart(smem, "smem", 0, kMaxDynamicSharedBytes);
  if (!s) return s.error();
  launch.smem = *s;
  return launch;
}

Result<ResolvedLaunch> resolveLaunch(const LaunchConfig &directive, const TaskSpec &task, const Shape &shape) {
  return evaluateLaunch(directive.blockGiven ? directive.block : task.launch.block,
                        directive.gridGiven ? directive.grid : task.launch.grid,
                        directive.smemGiven ? directive.smem : task.launch.smem, shape);
}

} // namespace ptxforge::tasks
