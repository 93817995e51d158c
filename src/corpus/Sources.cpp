// Sources: folder walking, a small lexer for comments and literals, and the
// include-aware content key.
#include "corpus/Sources.h"

#include "support/InputReader.h"
#include "support/Sha256.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace ptxforge::corpus {

namespace {

/// `source` with comments and the insides of string/char literals blanked
/// (newlines kept), so that a scan for keywords sees code only.
std::string codeOnly(std::string_view source) {
  std::string out(source);
  enum { Code, Line, Block, String, Char } state = Code;
  for (size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    char next = i + 1 < out.size() ? out[i + 1] : '\0';
    switch (state) {
    case Code:
      if (c == '/' && next == '/') state = Line, out[i] = ' ';
      else if (c == '/' && next == '*') state = Block, out[i] = ' ', out[++i] = ' ';
      else if (c == '"') state = String;
      else if (c == '\'') state = Char;
      break;
    case Line:
      if (c == '\n') state = Code;
      else out[i] = ' ';
      break;
    case Block:
      if (c == '*' && next == '/') state = Code, out[i] = ' ', out[++i] = ' ';
      else if (c != '\n') out[i] = ' ';
      break;
    case String:
    case Char:
      if (c == '\\' && next != '\0') {
        out[i] = ' ';
        if (out[i + 1] != '\n') out[i + 1] = ' ';
        ++i;
      } else if ((state == String && c == '"') || (state == Char && c == '\'')) {
        state = Code;
      } else if (c != '\n') {
        out[i] = ' ';
      }
      break;
    }
  }
  return out;
}

bool isIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Hashes `file` and its local includes into `accumulated` (each file once).
void addIncludes(const std::filesystem::path &file, std::string_view text, const std::vector<std::string> &includePaths,
                 std::set<std::filesystem::path> &seen, std::string &accumulated, int depth) {
  if (depth > 32) return; // include cycles are cut by `seen`; this bounds pathological chains
  for (const std::string &name : localIncludes(text)) {
    std::vector<std::filesystem::path> candidates{file.parent_path() / name};
    for (const std::string &path : includePaths) candidates.push_back(std::filesystem::path(path) / name);
    for (const std::filesystem::path &candidate : candidates) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(candidate, ec)) continue;
      std::filesystem::path canonical = std::filesystem::weakly_canonical(candidate, ec);
      if (!seen.insert(canonical).second) break;
      Result<std::string> header = readFileBounded(candidate.string(), kDefaultMaxInputBytes);
      if (!header) break; // NVRTC will report the include it cannot read
      accumulated += '\0' + name + '\0' + sha256Hex(*header);
      addIncludes(candidate, *header, includePaths, seen, accumulated, depth + 1);
      break;
    }
  }
}

} // namespace

int countGlobalFunctions(std::string_view source) {
  const std::string code = codeOnly(source);
  const std::string_view keyword = "__global__";
  int count = 0;
  for (size_t at = code.find(keyword); at != std::string::npos; at = code.find(keyword, at + keyword.size())) {
    const bool startsWord = at == 0 || !isIdentifierChar(code[at - 1]);
    const size_t end = at + keyword.size();
    const bool endsWord = end >= code.size() || !isIdentifierChar(code[end]);
    if (!startsWord || !endsWord) continue;
    // `#define KERNEL __global__` is not a kernel: skip preprocessor lines.
    size_t lineStart = code.rfind('\n', at);
    lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
    size_t first = code.find_first_not_of(" \t", lineStart);
    if (first != std::string::npos && code[first] == '#') continue;
    // `template __global__ void k<int>(int *);` instantiates a kernel that a
    // `template <...> __global__` declaration already counted.
    size_t before = code.find_last_not_of(" \t\r\n", at == 0 ? 0 : at - 1);
    if (at > 0 && before != std::string::npos && before >= 7 && code.compare(before - 7, 8, "template") == 0 &&
        (before < 8 || !isIdentifierChar(code[before - 8])))
      continue;
    ++count;
  }
  return count;
}

std::vector<std::string> localIncludes(std::string_view source) {
  const std::string code = codeOnly(source);
  std::vector<std::string> out;
  size_t lineStart = 0;
  while (lineStart < code.size()) {
    size_t lineEnd = code.find('\n', lineStart);
    if (lineEnd == std::string::npos) lineEnd = code.size();
    std::string_view line(code.data() + lineStart, lineEnd - lineStart);
    size_t hash = line.find_first_not_of(" \t");
    if (hash != std::string_view::npos && line[hash] == '#') {
      size_t word = line.find_first_not_of(" \t", hash + 1);
      if (word != std::string_view::npos && line.substr(word, 7) == "include") {
        // codeOnly blanked the literal's inside: read the name from the original text.
        std::string_view original = source.substr(lineStart, lineEnd - lineStart);
        size_t open = original.find('"', word + 7);
        size_t close = open == std::string_view::npos ? open : original.find('"', open + 1);
        if (close != std::string_view::npos) out.emplace_back(original.substr(open + 1, close - open - 1));
      }
    }
    lineStart = lineEnd + 1;
  }
  return out;
}

Result<std::vector<SourceFile>> discoverSources(const std::vector<std::string> &inputs,
                                                const std::vector<std::string> &includePaths) {
  std::vector<std::pair<std::string, std::filesystem::path>> files; // display path, real path
  for (const std::string &input : inputs) {
    std::error_code ec;
    std::filesystem::path path(input);
    if (std::filesystem::is_directory(path, ec)) {
      std::vector<std::pair<std::string, std::filesystem::path>> found;
      for (auto it = std::filesystem::recursive_directory_iterator(
               path, std::filesystem::directory_options::skip_permission_denied, ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && it->path().extension() == ".cu")
          found.emplace_back((path / std::filesystem::relative(it->path(), path, ec)).generic_string(), it->path());
      }
      if (ec) return makeError(ErrorKind::Io, "cannot read folder " + input + ": " + ec.message());
      if (found.empty()) return makeError(ErrorKind::Io, "no-sources", input + " holds no .cu files");
      files.insert(files.end(), found.begin(), found.end());
    } else if (std::filesystem::exists(path, ec)) {
      files.emplace_back(path.generic_string(), path);
    } else {
      return makeError(ErrorKind::Io, "file-not-found", input + ": no such file or folder");
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<SourceFile> out;
  std::set<std::filesystem::path> canonicalSeen;
  for (const auto &[display, path] : files) {
    std::error_code ec;
    if (!canonicalSeen.insert(std::filesystem::weakly_canonical(path, ec)).second) continue;
    Result<std::string> text = readFileBounded(path.string(), kDefaultMaxInputBytes);
    if (!text) {
      Error error = text.error();
      error.message = display + ": " + error.message;
      return error;
    }
    SourceFile file;
    file.path = display;
    file.folder = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
    file.sha256 = sha256Hex(*text);
    std::string accumulated = file.sha256;
    std::set<std::filesystem::path> seen{std::filesystem::weakly_canonical(path, ec)};
    addIncludes(path, *text, includePaths, seen, accumulated, 0);
    file.contentKey = sha256Hex(accumulated);
    file.globalFunctions = countGlobalFunctions(*text);
    file.text = std::move(*text);
    out.push_back(std::move(file));
  }
  return out;
}

} // namespace ptxforge::corpus
