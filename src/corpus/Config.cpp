// Config: the corpus TOML (toml++) into a CorpusConfig, with every problem
// located in the file, and back to TOML for the dataset card.
#include "corpus/Config.h"

#include <toml++/toml.h>

#include <cctype>
#include <charconv>
#include <sstream>

namespace ptxforge::corpus {

namespace {

std::vector<std::string> splitWhitespace(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

std::optional<int> parseCount(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

/// sm_NN, sm_NNa or sm_NNf: a real architecture NVRTC and nvJitLink take.
bool isTargetName(std::string_view target) {
  if (target.substr(0, 3) != "sm_" || target.size() < 5) return false;
  size_t digits = 3;
  while (digits < target.size() && std::isdigit(static_cast<unsigned char>(target[digits]))) ++digits;
  if (digits - 3 < 2) return false;
  return digits == target.size() || (digits + 1 == target.size() && (target[digits] == 'a' || target[digits] == 'f'));
}

/// Collects located problems, one line each.
struct Problems {
  std::string fileName;
  std::vector<std::string> lines;
  void add(const toml::source_region &where, const std::string &message) {
    lines.push_back(fileName + ":" + std::to_string(where.begin.line) + ":" + std::to_string(where.begin.column) +
                    ": " + message);
  }
};

void checkKeys(Problems &problems, const toml::table &table, std::initializer_list<std::string_view> allowed,
               const std::string &context) {
  for (const auto &[key, node] : table) {
    bool known = false;
    for (std::string_view name : allowed) known = known || key.str() == name;
    if (!known) {
      std::string list;
      for (std::string_view name : allowed) list += (list.empty() ? "" : ", ") + std::string(name);
      problems.add(key.source(), "unknown key '" + std::string(key.str()) + "' in " + context + " (known: " + list + ")");
    }
  }
}

template <typename T> void readValue(Problems &problems, const toml::table &table, std::string_view key,
                                     const std::string &context, T &out) {
  const toml::node *node = table.get(key);
  if (!node) return;
  if constexpr (std::is_same_v<T, bool>) {
    if (auto value = node->value_exact<bool>()) out = *value;
    else problems.add(node->source(), context + "." + std::string(key) + " must be true or false");
  } else if constexpr (std::is_same_v<T, double>) {
    if (auto value = node->value<double>()) out = *value;
    else problems.add(node->source(), context + "." + std::string(key) + " must be a number");
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (auto value = node->value_exact<std::string>()) out = *value;
    else problems.add(node->source(), context + "." + std::string(key) + " must be a string");
  } else {
    if (auto value = node->value_exact<int64_t>()) out = static_cast<T>(*value);
    else problems.add(node->source(), context + "." + std::string(key) + " must be an integer");
  }
}

/// An integer key within [low, high].
template <typename T> void readBounded(Problems &problems, const toml::table &table, std::string_view key,
                                       const std::string &context, T &out, int64_t low, int64_t high) {
  const toml::node *node = table.get(key);
  if (!node) return;
  auto value = node->value_exact<int64_t>();
  if (!value || *value < low || *value > high) {
    problems.add(node->source(), context + "." + std::string(key) + " must be an integer in [" + std::to_string(low) +
                                     ", " + std::to_string(high) + "]");
    return;
  }
  out = static_cast<T>(*value);
}

std::vector<std::string> readStrings(Problems &problems, const toml::table &table, std::string_view key,
                                     const std::string &context, bool &present) {
  std::vector<std::string> out;
  const toml::node *node = table.get(key);
  present = node != nullptr;
  if (!node) return out;
  const toml::array *array = node->as_array();
  if (!array) {
    problems.add(node->source(), context + "." + std::string(key) + " must be an array of strings");
    return out;
  }
  for (const toml::node &element : *array) {
    if (auto text = element.value_exact<std::string>()) out.push_back(*text);
    else problems.add(element.source(), context + "." + std::string(key) + " holds a value that is not a string");
  }
  return out;
}

std::string quoted(const std::string &text) {
  std::ostringstream out;
  out << toml::value<std::string>(text);
  return out.str();
}

std::string quotedList(const std::vector<std::string> &items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + quoted(items[i]);
  return out + "]";
}

} // namespace

std::string FlagSet::compilerOptionsKey() const {
  std::string key = "-O" + std::to_string(optLevel);
  if (maxRegisters > 0) key += " -maxrregcount=" + std::to_string(maxRegisters);
  return key;
}

Result<FlagSet> parseFlagSet(std::string_view flags) {
  FlagSet set;
  std::vector<std::string> words = splitWhitespace(flags);
  if (words.empty()) return makeError(ErrorKind::InvalidInput, "an empty flag set (write \"-O3\" for the defaults)");
  for (const std::string &word : words) {
    set.name += (set.name.empty() ? "" : " ") + word;
    if (word.size() == 3 && word[0] == '-' && word[1] == 'O') {
      // NVRTC has no -O: nvcc's -O3 is the host compiler's, the device side is
      // the PTX compiler's level, which is where it goes.
      if (word[2] < '0' || word[2] > '3')
        return makeError(ErrorKind::InvalidInput, "'" + word + "': the optimisation level must be -O0..-O3");
      set.optLevel = word[2] - '0';
      continue;
    }
    if (word.rfind("-maxrregcount=", 0) == 0 || word.rfind("--maxrregcount=", 0) == 0) {
      std::optional<int> count = parseCount(word.substr(word.find('=') + 1));
      if (!count || *count <= 0 || *count > 255)
        return makeError(ErrorKind::InvalidInput, "'" + word + "': the register cap must be a count in [1, 255]");
      set.maxRegisters = *count;
      // NVRTC takes it too (it does not change the PTX; ptxas honours it).
      set.nvrtcOptions.push_back(word);
      continue;
    }
    if (word == "-lineinfo" || word == "--generate-line-info") set.lineInfo = true;
    if (word == "-G" || word == "--device-debug") set.debug = true;
    set.nvrtcOptions.push_back(word);
  }
  return set;
}

CorpusConfig CorpusConfig::defaults() {
  CorpusConfig config;
  for (const char *flags : {"-O3", "-G", "-lineinfo", "--use_fast_math", "-maxrregcount=32"})
    config.flagSets.push_back(*parseFlagSet(flags));
  config.targets = {"sm_80", "sm_89", "sm_90", "sm_90a"};
  return config;
}

Result<CorpusConfig> parseConfig(std::string_view tomlText, const std::string &fileName) {
  toml::table document;
  try {
    document = toml::parse(tomlText, fileName);
  } catch (const toml::parse_error &error) {
    const toml::source_region &where = error.source();
    return makeError(ErrorKind::InvalidInput, "bad-config",
                     fileName + ":" + std::to_string(where.begin.line) + ":" + std::to_string(where.begin.column) +
                         ": " + std::string(error.description()));
  }
  CorpusConfig config = CorpusConfig::defaults();
  Problems problems{fileName, {}};
  checkKeys(problems, document, {"matrix", "filters", "dedupe", "output"}, "the config");

  auto section = [&](std::string_view name) -> const toml::table * {
    const toml::node *node = document.get(name);
    if (!node) return nullptr;
    if (const toml::table *table = node->as_table()) return table;
    problems.add(node->source(), "[" + std::string(name) + "] must be a table");
    return nullptr;
  };

  if (const toml::table *matrix = section("matrix")) {
    checkKeys(problems, *matrix, {"flags", "targets", "include_paths", "defines"}, "[matrix]");
    bool present = false;
    std::vector<std::string> flags = readStrings(problems, *matrix, "flags", "matrix", present);
    if (present) {
      config.flagSets.clear();
      const toml::array *array = matrix->get("flags")->as_array();
      for (size_t i = 0; i < flags.size(); ++i) {
        Result<FlagSet> set = parseFlagSet(flags[i]);
        const toml::source_region &where = array && i < array->size() ? (*array)[i].source() : matrix->source();
        if (!set) problems.add(where, "matrix.flags: " + set.error().message);
        else config.flagSets.push_back(std::move(*set));
      }
      if (flags.empty() && array) problems.add(array->source(), "matrix.flags is empty: give at least one flag set");
    }
    std::vector<std::string> targets = readStrings(problems, *matrix, "targets", "matrix", present);
    if (present) {
      config.targets.clear();
      const toml::array *array = matrix->get("targets")->as_array();
      for (size_t i = 0; i < targets.size(); ++i) {
        if (isTargetName(targets[i])) config.targets.push_back(targets[i]);
        else if (array) problems.add((*array)[i].source(), "matrix.targets: '" + targets[i] +
                                                               "' is not a real architecture (sm_80, sm_90a, sm_100f, ...)");
      }
      if (targets.empty() && array) problems.add(array->source(), "matrix.targets is empty: give at least one target");
    }
    config.includePaths = readStrings(problems, *matrix, "include_paths", "matrix", present);
    config.defines = readStrings(problems, *matrix, "defines", "matrix", present);
  }

  if (const toml::table *filters = section("filters")) {
    checkKeys(problems, *filters, {"lint_clean", "min_ptx_lines", "max_ptx_lines", "max_ptx_bytes", "no_spill"}, "[filters]");
    readValue(problems, *filters, "lint_clean", "filters", config.filters.lintClean);
    readBounded(problems, *filters, "min_ptx_lines", "filters", config.filters.minPtxLines, 0, 1 << 30);
    readBounded(problems, *filters, "max_ptx_lines", "filters", config.filters.maxPtxLines, 1, 1 << 30);
    readBounded(problems, *filters, "max_ptx_bytes", "filters", config.filters.maxPtxBytes, 1, int64_t(1) << 40);
    readValue(problems, *filters, "no_spill", "filters", config.filters.noSpill);
    if (config.filters.minPtxLines > config.filters.maxPtxLines)
      problems.add(filters->source(), "filters.min_ptx_lines is above filters.max_ptx_lines");
  }

  if (const toml::table *dedupe = section("dedupe")) {
    checkKeys(problems, *dedupe, {"exact", "near", "threshold", "ngram", "permutations", "seed", "scope"}, "[dedupe]");
    readValue(problems, *dedupe, "exact", "dedupe", config.dedupe.exact);
    readValue(problems, *dedupe, "near", "dedupe", config.dedupe.near);
    if (const toml::node *node = dedupe->get("threshold")) {
      std::optional<double> value = node->value<double>();
      if (!value || !(*value > 0.0 && *value <= 1.0))
        problems.add(node->source(), "dedupe.threshold must be a number in (0, 1]");
      else config.dedupe.threshold = *value;
    }
    readBounded(problems, *dedupe, "ngram", "dedupe", config.dedupe.ngram, 1, 64);
    readBounded(problems, *dedupe, "permutations", "dedupe", config.dedupe.permutations, 1, 4096);
    readBounded(problems, *dedupe, "seed", "dedupe", config.dedupe.seed, 0, INT64_MAX);
    std::string scope = config.dedupe.scope == NearScope::All ? "all" : "variant";
    readValue(problems, *dedupe, "scope", "dedupe", scope);
    if (scope == "variant") config.dedupe.scope = NearScope::Variant;
    else if (scope == "all") config.dedupe.scope = NearScope::All;
    else problems.add(dedupe->get("scope")->source(), "dedupe.scope must be \"variant\" or \"all\", not '" + scope + "'");
  }

  if (const toml::table *output = section("output")) {
    checkKeys(problems, *output, {"shard_rows", "sass"}, "[output]");
    readBounded(problems, *output, "shard_rows", "output", config.shardRows, 1, 1 << 30);
    readValue(problems, *output, "sass", "output", config.sass);
  }

  if (!problems.lines.empty()) {
    std::string message;
    for (const std::string &line : problems.lines) message += (message.empty() ? "" : "\n") + line;
    return makeError(ErrorKind::InvalidInput, "bad-config", message);
  }
  return config;
}

std::string configToToml(const CorpusConfig &config) {
  std::vector<std::string> flags;
  for (const FlagSet &set : config.flagSets) flags.push_back(set.name);
  std::ostringstream out;
  out << "[matrix]\n"
      << "flags = " << quotedList(flags) << "\n"
      << "targets = " << quotedList(config.targets) << "\n"
      << "include_paths = " << quotedList(config.includePaths) << "\n"
      << "defines = " << quotedList(config.defines) << "\n\n"
      << "[filters]\n"
      << "lint_clean = " << (config.filters.lintClean ? "true" : "false") << "\n"
      << "min_ptx_lines = " << config.filters.minPtxLines << "\n"
      << "max_ptx_lines = " << config.filters.maxPtxLines << "\n"
      << "max_ptx_bytes = " << config.filters.maxPtxBytes << "\n"
      << "no_spill = " << (config.filters.noSpill ? "true" : "false") << "\n\n"
      << "[dedupe]\n"
      << "exact = " << (config.dedupe.exact ? "true" : "false") << "\n"
      << "near = " << (config.dedupe.near ? "true" : "false") << "\n"
      << "threshold = " << toml::value<double>(config.dedupe.threshold) << "\n"
      << "ngram = " << config.dedupe.ngram << "\n"
      << "permutations = " << config.dedupe.permutations << "\n"
      << "seed = " << config.dedupe.seed << "\n"
      << "scope = " << (config.dedupe.scope == NearScope::All ? "\"all\"" : "\"variant\"") << "\n\n"
      << "[output]\n"
      << "shard_rows = " << config.shardRows << "\n"
      << "sass = " << (config.sass ? "true" : "false") << "\n";
  return out.str();
}

} // namespace ptxforge::corpus
