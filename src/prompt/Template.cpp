// The strict {{name}} renderer and the template folder loader.
#include "prompt/Template.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ptxforge::prompt {
namespace {

Error templateError(const Template &tmpl, size_t offset, const std::string &what) {
  size_t line = 1;
  for (size_t i = 0; i < offset && i < tmpl.text.size(); ++i)
    if (tmpl.text[i] == '\n') ++line;
  return makeError(ErrorKind::InvalidInput, tmpl.origin + ":" + std::to_string(line) + ": " + what);
}

std::string knownNames(const TemplateValues &values) {
  std::string out;
  for (const auto &[name, value] : values) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none" : out;
}

} // namespace

Result<std::string> renderTemplate(const Template &tmpl, const TemplateValues &values) {
  const std::string &text = tmpl.text;
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    size_t open = text.find("{{", pos);
    if (open == std::string::npos) {
      out.append(text, pos, std::string::npos);
      break;
    }
    out.append(text, pos, open - pos);
    size_t close = text.find("}}", open + 2);
    size_t newline = text.find('\n', open);
    if (close == std::string::npos || (newline != std::string::npos && newline < close))
      return templateError(tmpl, open, "unclosed `{{` (a placeholder is `{{name}}` on one line)");
    std::string name = text.substr(open + 2, close - open - 2);
    while (!name.empty() && name.front() == ' ') name.erase(name.begin());
    while (!name.empty() && name.back() == ' ') name.pop_back();
    bool wellFormed = !name.empty();
    for (char c : name) wellFormed = wellFormed && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!wellFormed)
      return templateError(tmpl, open, "malformed placeholder `{{" + text.substr(open + 2, close - open - 2) +
                                           "}}` (names are letters, digits and _; templates have no logic)");
    auto it = values.find(name);
    if (it == values.end())
      return templateError(tmpl, open, "unknown placeholder `{{" + name + "}}` in template '" + tmpl.name +
                                           "' (known here: " + knownNames(values) + ")");
    out += it->second;
    pos = close + 2;
  }
  return out;
}

const Template *TemplateSet::find(std::string_view name) const {
  auto it = templates.find(std::string(name));
  return it == templates.end() ? nullptr : &it->second;
}

const std::vector<std::string> &templateNames() {
  static const std::vector<std::string> names = {"system",   "zero-shot",     "hints",  "spec",     "few-shot",
                                                "skeleton", "skeleton-fill", "repair", "optimize", "output"};
  return names;
}

Result<TemplateSet> loadTemplates(const std::filesystem::path &folder) {
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec))
    return makeError(ErrorKind::Io, "prompt template folder " + folder.string() + " does not exist");
  TemplateSet set;
  set.folder = folder;
  for (const std::string &name : templateNames()) {
    std::filesystem::path path = folder / (name + ".md");
    if (!std::filesystem::exists(path, ec)) path = folder / (name + ".txt");
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return makeError(ErrorKind::Io, "prompt template " + (folder / (name + ".md")).string() +
                                          " is missing or unreadable (every template of " + folder.string() +
                                          " is needed: system, zero-shot, hints, spec, few-shot, skeleton, skeleton-fill, "
                                          "repair, optimize, output)");
    std::ostringstream text;
    text << in.rdbuf();
    set.templates[name] = Template{name, path.string(), text.str()};
  }
  return set;
}

std::filesystem::path defaultPromptsDir() {
  if (const char *env = std::getenv("PTXFORGE_PROMPTS_DIR"); env && *env) return env;
  return std::filesystem::path(PTXFORGE_SOURCE_DIR) / "prompts";
}

} // namespace ptxforge::prompt
