// Prompt templates: text files with `{{name}}` placeholders, loaded from a
// folder a user can read and edit (prompts/ in the repository by default).
// The renderer is strict and has no logic: every placeholder must be one the
// caller provides, and an unknown one is an error that names file and line.
#pragma once

#include "support/Result.h"

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::prompt {

/// One template: its text and where it came from (for error messages).
struct Template {
  std::string name;   ///< "zero-shot", "system", ...
  std::string origin; ///< the file path, or a label for in-memory templates
  std::string text;
};

/// Values for placeholders, by name.
using TemplateValues = std::map<std::string, std::string>;

/// Replaces every `{{name}}` (spaces inside the braces allowed: `{{ name }}`)
/// with values.at(name). Names are [A-Za-z0-9_]+. Errors (InvalidInput), each
/// "ORIGIN:LINE: ...": a placeholder not in `values` (the message lists the
/// known names), an unclosed `{{`, a malformed name. Values are inserted
/// verbatim and never re-scanned, so PTX braces in them are safe.
Result<std::string> renderTemplate(const Template &tmpl, const TemplateValues &values);

/// The template files a prompt is built from, by name.
struct TemplateSet {
  std::filesystem::path folder; ///< empty for in-memory sets
  std::map<std::string, Template> templates;

  /// nullptr when the set has no template `name`.
  const Template *find(std::string_view name) const;
};

/// The names loadTemplates reads: "system", "zero-shot", "hints", "spec", "few-shot",
/// "skeleton", "skeleton-fill", "repair", "optimize", "output" — each from
/// NAME.md (or NAME.txt).
const std::vector<std::string> &templateNames();

/// Loads every template of templateNames() from `folder`. A missing file is an
/// Io error naming it; so is a folder that does not exist.
Result<TemplateSet> loadTemplates(const std::filesystem::path &folder);

/// $PTXFORGE_PROMPTS_DIR when set, else the repository's prompts/ folder
/// (compile definition PTXFORGE_SOURCE_DIR).
std::filesystem::path defaultPromptsDir();

} // namespace ptxforge::prompt
