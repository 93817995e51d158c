// Builder: the corpus pipeline. Units (source × flag set × target) compile in
// parallel, each into a cache entry that holds everything the filters need;
// filtering, dedupe and writing then run on one thread in a fixed order, so
// that a cold build, a cached build and a build with any -j write the same
// rows.
#include "corpus/Builder.h"

#include "corpus/Card.h"
#include "corpus/EntrySplit.h"
#include "corpus/MinHash.h"
#include "corpus/Sources.h"
#include "ptx/Lint.h"
#include "support/InputReader.h"
#include "support/Parallel.h"
#include "support/Sha256.h"
#include "tasks/Reference.h"
#include "toolchain/Compiler.h"
#include "toolchain/SassStats.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

namespace ptxforge::corpus {

namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

/// Bumped whenever a cache entry's fields or their meaning change.
constexpr const char *kCacheFormat = "ptxforge-corpus-cache-2";

/// Everything a unit's compile depends on besides its source.
struct UnitContext {
  const CorpusConfig *config = nullptr;
  std::string nvrtcVersion;
  std::optional<std::string> nvdisasm; ///< set when SASS statistics are to be taken
  std::string sassSkipped;             ///< why not, when they are not
};

struct Unit {
  size_t source = 0;
  size_t flagSet = 0;
  size_t target = 0;
};

std::string firstLines(const std::string &text, size_t lines = 6) {
  size_t at = 0;
  for (size_t i = 0; i < lines && at != std::string::npos; ++i) {
    at = text.find('\n', at);
    if (at != std::string::npos) ++at;
  }
  std::string out = at == std::string::npos ? text : text.substr(0, at);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::vector<std::string> nvrtcExtraOptions(const SourceFile &source, const FlagSet &flags, const CorpusConfig &config,
                                           bool withIncludePaths) {
  std::vector<std::string> options = flags.nvrtcOptions;
  for (const std::string &define : config.defines) options.push_back("-D" + define);
  if (withIncludePaths) {
    options.push_back("--include-path=" + source.folder.string());
    for (const std::string &path : config.includePaths) options.push_back("--include-path=" + path);
  }
  return options;
}

std::string unitKey(const SourceFile &source, const FlagSet &flags, const std::string &target, const UnitContext &context) {
  std::string material = kCacheFormat;
  auto add = [&](const std::string &part) { material += '\0' + part; };
  add(source.contentKey);
  add(source.path); // NVRTC writes the file name into .file directives (-G, -lineinfo)
  add(flags.name);
  add(target);
  add(context.nvrtcVersion);
  for (const std::string &option : nvrtcExtraOptions(source, flags, *context.config, true)) add(option);
  add(context.nvdisasm ? "sass" : "no-sass");
  return sha256Hex(material);
}

Json resourcesJson(const toolchain::ResourceUsage &usage) {
  // -1, not null, for "not reported": a column that is null in the first
  // shard and a number in a later one does not load with `datasets`.
  return {{"registers", usage.registers},
          {"spill_store_bytes", usage.spillStoreBytes},
          {"spill_load_bytes", usage.spillLoadBytes},
          {"stack_frame_bytes", usage.stackFrameBytes},
          {"shared_bytes", usage.sharedBytes},
          {"local_bytes", usage.localBytes},
          {"constant_bytes", usage.constantBytes},
          {"barriers", usage.barriers}};
}

Json sassJson(const toolchain::SassCounts &counts) {
  Json opcodes = Json::array();
  for (const auto &[opcode, count] : counts.opcodes) opcodes.push_back({{"opcode", opcode}, {"count", count}});
  return {{"instructions", counts.instructions}, {"ffma", counts.ffma},     {"fmul", counts.fmul},
          {"fadd", counts.fadd},                 {"tensor_core_ops", counts.tensorCoreOps},
          {"barriers", counts.barriers},         {"spill_loads", counts.spillLoads},
          {"spill_stores", counts.spillStores},  {"opcodes", opcodes}};
}

/// "LINE:COL: [code] message" (the location only when the diagnostic has one).
std::string describeDiagnostic(const ptx::Diagnostic &diagnostic) {
  std::string where = diagnostic.line ? std::to_string(diagnostic.line) + ":" + std::to_string(diagnostic.column) + ": " : "";
  return where + "[" + diagnostic.code + "] " + diagnostic.message;
}

/// One kernel of a compiled unit: what the filters and the row need.
Result<Json> compileKernel(const EntryModule &kernel, const FlagSet &flags, const std::string &target,
                           const UnitContext &context) {
  Json out = {{"entry", kernel.entry}, {"parameter_count", kernel.parameterCount}, {"ptx", kernel.ptx},
              {"tokens", kernel.instructionTokens}};
  int errors = 0, warnings = 0;
  std::string firstError;
  for (const ptx::Diagnostic &diagnostic : ptx::lintSource(kernel.ptx)) {
    if (diagnostic.severity == ptx::Severity::Error) {
      if (!errors++) firstError = describeDiagnostic(diagnostic);
    } else if (diagnostic.severity == ptx::Severity::Warning) {
      ++warnings;
    }
  }
  out["lint_errors"] = errors;
  out["lint_warnings"] = warnings;
  out["lint_first_error"] = firstError;

  toolchain::CompileOptions options;
  options.arch = target;
  options.optLevel = flags.optLevel;
  options.maxRegisters = flags.maxRegisters;
  options.generateLineInfo = flags.lineInfo;
  options.entryName = kernel.entry;
  // NVRTC's output is trusted (like the tasks' references): no worker process.
  options.isolation = toolchain::CompileOptions::Isolation::InProcess;
  Result<toolchain::CompileResult> compiled = toolchain::compilePtx(kernel.ptx, options);
  if (!compiled) return compiled.error();
  out["compile_ok"] = compiled->ok;
  out["compiler"] = compiled->toolVersion;
  if (!compiled->ok) {
    std::string error;
    for (const ptx::Diagnostic &diagnostic : compiled->diagnostics)
      if (diagnostic.severity == ptx::Severity::Error) {
        error = describeDiagnostic(diagnostic);
        break;
      }
    out["compile_error"] = error.empty() ? firstLines(compiled->errorLog, 3) : error;
    return out;
  }
  out["resources"] = resourcesJson(compiled->resources);
  std::string cubin(compiled->cubin.begin(), compiled->cubin.end());
  out["cubin_sha256"] = sha256Hex(cubin);
  out["cubin_bytes"] = compiled->cubin.size();
  if (!context.nvdisasm) {
    out["sass"] = nullptr;
    out["sass_skipped"] = context.sassSkipped;
    return out;
  }
  Result<toolchain::SassStats> sass = toolchain::sassStats(compiled->cubin);
  if (sass) {
    out["sass"] = sassJson(sass->total);
    out["sass_skipped"] = nullptr;
  } else {
    out["sass"] = nullptr;
    out["sass_skipped"] = render(sass.error());
  }
  return out;
}

/// A unit: NVRTC, the split, then each kernel.
Result<Json> compileUnit(const SourceFile &source, const FlagSet &flags, const std::string &target,
                         const UnitContext &context) {
  Json out = {{"format", kCacheFormat}, {"nvrtc_error", nullptr}, {"nvrtc_log", ""}, {"kernels", Json::array()}};
  Result<tasks::NvrtcOutput> nvrtc =
      tasks::compileCudaSource(source.text, source.path, target, nvrtcExtraOptions(source, flags, *context.config, true));
  if (!nvrtc) {
    if (nvrtc.error().kind != ErrorKind::Compile && nvrtc.error().kind != ErrorKind::Internal) return nvrtc.error();
    // A rejected source, or an option NVRTC does not take: data about this unit.
    out["nvrtc_error"] = firstLines(nvrtc.error().message, 12);
    return out;
  }
  out["nvrtc_log"] = nvrtc->log;
  Result<std::vector<EntryModule>> kernels = splitEntries(nvrtc->ptx);
  if (!kernels) {
    // PTX the front end cannot read: each kernel fails the lint stage.
    for (const std::string &entry : toolchain::entryNames(nvrtc->ptx))
      out["kernels"].push_back({{"entry", entry}, {"parameter_count", 0}, {"ptx", ""}, {"tokens", Json::array()},
                                {"lint_errors", 1}, {"lint_warnings", 0},
                                {"lint_first_error", render(kernels.error())}, {"compile_ok", false},
                                {"compile_error", "not compiled: the module does not parse"}});
    return out;
  }
  for (const EntryModule &kernel : *kernels) {
    Result<Json> compiled = compileKernel(kernel, flags, target, context);
    if (!compiled) return compiled.error();
    out["kernels"].push_back(std::move(*compiled));
  }
  return out;
}

/// Whether `entry` has every field, of the right type, that the filters and
/// the rows read: a cache folder is a file system anyone may have edited.
bool isWellFormedEntry(const Json &entry) {
  if (!entry.is_object() || entry.value("format", "") != kCacheFormat || !entry.contains("kernels") ||
      !entry["kernels"].is_array() || !entry.contains("nvrtc_error") ||
      !(entry["nvrtc_error"].is_null() || entry["nvrtc_error"].is_string()))
    return false;
  auto has = [](const Json &object, const char *key, auto predicate) {
    return object.contains(key) && predicate(object[key]);
  };
  auto isString = [](const Json &value) { return value.is_string(); };
  auto isNumber = [](const Json &value) { return value.is_number_integer(); };
  for (const Json &kernel : entry["kernels"]) {
    if (!kernel.is_object() || !has(kernel, "entry", isString) || !has(kernel, "ptx", isString) ||
        !has(kernel, "parameter_count", isNumber) || !has(kernel, "lint_errors", isNumber) ||
        !has(kernel, "lint_warnings", isNumber) || !has(kernel, "compile_ok", [](const Json &v) { return v.is_boolean(); }) ||
        !has(kernel, "tokens", [](const Json &v) {
          return v.is_array() && std::all_of(v.begin(), v.end(), [](const Json &t) { return t.is_string(); });
        }))
      return false;
    if (!kernel["compile_ok"].get<bool>()) continue;
    if (!has(kernel, "resources", [](const Json &v) { return v.is_object(); }) || !has(kernel, "cubin_sha256", isString) ||
        !has(kernel, "cubin_bytes", isNumber) || !has(kernel, "compiler", isString) ||
        !has(kernel, "sass", [](const Json &v) { return v.is_null() || v.is_object(); }) ||
        !has(kernel, "sass_skipped", [](const Json &v) { return v.is_null() || v.is_string(); }))
      return false;
  }
  return true;
}

std::optional<Json> readCacheEntry(const std::filesystem::path &path) {
  Result<std::string> text = readFileBounded(path.string(), size_t{1} << 30);
  if (!text) return std::nullopt;
  Json entry = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  // Anything unexpected is a miss: the unit is compiled again and the entry replaced.
  if (!isWellFormedEntry(entry)) return std::nullopt;
  return entry;
}

size_t countLines(const std::string &text) {
  size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  return lines + (!text.empty() && text.back() != '\n');
}

int spillBytes(const Json &kernel) {
  if (!kernel.contains("resources")) return 0;
  const Json &resources = kernel["resources"];
  return resources.value("spill_store_bytes", 0) + resources.value("spill_load_bytes", 0);
}

std::string shardName(size_t index, size_t count) {
  char name[64];
  std::snprintf(name, sizeof name, "train-%05zu-of-%05zu.jsonl", index, count);
  return name;
}

Result<void> writeText(const std::filesystem::path &path, const std::string &text) {
  if (!writeFileAtomically(path, text)) return makeError(ErrorKind::Io, "cannot write " + path.string());
  return {};
}

} // namespace

OrderedJson BuildSummary::toJson() const {
  OrderedJson stageList = OrderedJson::array();
  for (const StageCount &stage : stages)
    stageList.push_back({{"stage", stage.stage},
                         {"counts", stage.counts},
                         {"enabled", stage.enabled},
                         {"in", stage.in},
                         {"dropped", stage.dropped},
                         {"kept", stage.kept()},
                         {"description", stage.description}});
  return {{"sources", sources},
          {"global_functions", globalFunctions},
          {"units", units},
          {"compiled", compiled},
          {"cached", cached},
          {"nvrtc_failed_units", nvrtcFailedUnits},
          {"kernels", kernels},
          {"stages", stageList},
          {"rows", rows},
          {"shards", shards},
          {"scored", scored},
          {"sass", sassNote.empty() ? OrderedJson("collected") : OrderedJson(sassNote)},
          {"nvrtc_version", nvrtcVersion},
          {"seconds", seconds}};
}

Row unscoredScore() {
  return {{"scored", false},     {"task", ""},        {"verdict", ""},     {"stage", ""},  {"executor", ""},
          {"speedup", 0.0},      {"median_ms", 0.0},  {"baseline_ms", 0.0}, {"summary", ""}};
}

std::vector<std::filesystem::path> shardFiles(const std::filesystem::path &corpusDir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(corpusDir / "data", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("train-", 0) == 0 && it->path().extension() == ".jsonl") out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<BuildSummary> buildCorpus(const BuildOptions &options) {
  const auto started = std::chrono::steady_clock::now();
  const CorpusConfig &config = options.config;
  BuildSummary summary;

  Result<std::vector<SourceFile>> sources = discoverSources(options.inputs, config.includePaths);
  if (!sources) return sources.error();
  summary.sources = sources->size();
  for (const SourceFile &source : *sources) summary.globalFunctions += static_cast<size_t>(source.globalFunctions);

  UnitContext context;
  context.config = &config;
  Result<std::string> version = tasks::nvrtcVersionString();
  if (!version) return version.error();
  context.nvrtcVersion = *version;
  summary.nvrtcVersion = *version;
  if (!config.sass) {
    context.sassSkipped = "disabled in the config (output.sass = false)";
  } else if (std::optional<std::string> nvdisasm = toolchain::findNvdisasm()) {
    context.nvdisasm = *nvdisasm;
  } else {
    context.sassSkipped = "nvdisasm not found ($PTXFORGE_NVDISASM, PATH, the CUDA root, or pip's "
                          "nvidia-cuda-nvdisasm; see scripts/find-nvdisasm.sh)";
  }
  summary.sassNote = context.sassSkipped;

  std::error_code ec;
  const std::filesystem::path cacheDir = options.cacheDir.empty() ? options.outDir / "cache" : options.cacheDir;
  std::filesystem::create_directories(options.outDir / "data", ec);
  if (ec) return makeError(ErrorKind::Io, "cannot create " + (options.outDir / "data").string() + ": " + ec.message());
  std::filesystem::create_directories(cacheDir, ec);
  if (ec) return makeError(ErrorKind::Io, "cannot create the cache folder " + cacheDir.string() + ": " + ec.message());

  // --- Compile every unit (parallel) ---------------------------------------
  std::vector<Unit> units;
  for (size_t s = 0; s < sources->size(); ++s)
    for (size_t f = 0; f < config.flagSets.size(); ++f)
      for (size_t t = 0; t < config.targets.size(); ++t) units.push_back({s, f, t});
  summary.units = units.size();
  std::vector<Json> results(units.size());
  // Per unit, per kernel: the MinHash signature, made on the worker threads;
  // the instruction tokens are then dropped from the in-memory entry (the
  // cache file keeps them, so that new dedupe parameters need no recompile).
  std::vector<std::vector<Signature>> signatures(units.size());
  const MinHasher hasher(config.dedupe.permutations, config.dedupe.seed);
  std::mutex mutex; // guards progress, the counters and firstError
  BuildProgress progress;
  progress.unitsTotal = units.size();
  std::optional<Error> firstError;
  forEachChunk(units.size(), options.threads, [&](size_t index) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (firstError) return;
    }
    const Unit &unit = units[index];
    const SourceFile &source = (*sources)[unit.source];
    const FlagSet &flags = config.flagSets[unit.flagSet];
    const std::string &target = config.targets[unit.target];
    const std::string key = unitKey(source, flags, target, context);
    const std::filesystem::path entryPath = cacheDir / key.substr(0, 2) / (key + ".json");
    bool cached = false;
    if (std::optional<Json> entry = readCacheEntry(entryPath)) {
      results[index] = std::move(*entry);
      cached = true;
    } else {
      Result<Json> compiled = compileUnit(source, flags, target, context);
      if (!compiled) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!firstError) {
          firstError = compiled.error();
          firstError->message = source.path + " (" + flags.name + ", " + target + "): " + firstError->message;
        }
        return;
      }
      results[index] = std::move(*compiled);
      assert(isWellFormedEntry(results[index]) && "compileUnit made an entry its own reader would refuse");
      std::error_code createError;
      std::filesystem::create_directories(entryPath.parent_path(), createError);
      // Best effort: an unwritable cache costs time on the next build, nothing else.
      if (!createError) writeFileAtomically(entryPath, results[index].dump(-1, ' ', false, Json::error_handler_t::replace));
    }
    for (Json &kernel : results[index]["kernels"]) {
      const Json &tokens = kernel["tokens"];
      kernel["instruction_count"] = tokens.size();
      signatures[index].push_back(config.dedupe.near ? hasher.signature(shingles(tokens.get<std::vector<std::string>>(),
                                                                                 config.dedupe.ngram))
                                                     : Signature{});
      kernel.erase("tokens");
    }
    std::lock_guard<std::mutex> lock(mutex);
    ++progress.unitsDone;
    ++(cached ? progress.cached : progress.compiled);
    progress.elapsedSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (options.progress) options.progress(progress);
  });
  if (firstError) return *firstError;
  summary.compiled = progress.compiled;
  summary.cached = progress.cached;

  // --- Filters, in a fixed order ----------------------------------------------
  StageCount nvrtcStage{"nvrtc", "NVRTC compiles the translation unit for the flag set and target", "units"};
  StageCount lintStage{"lint", "the kernel's PTX has no lint errors (ptxforge lint)"};
  StageCount compileStage{"compile", "the PTX compiler (nvJitLink) accepts the kernel's module for the target"};
  StageCount sizeStage{"size", "the PTX has " + std::to_string(config.filters.minPtxLines) + ".." +
                                   std::to_string(config.filters.maxPtxLines) + " lines and at most " +
                                   std::to_string(config.filters.maxPtxBytes) + " bytes"};
  StageCount spillStage{"spill", "the cubin does not spill registers (filters.no_spill)"};
  StageCount exactStage{"exact-dedupe", "no earlier row has the same normalized PTX and PTX-compiler options"};
  StageCount nearStage{"near-dedupe", ""};
  lintStage.enabled = config.filters.lintClean;
  spillStage.enabled = config.filters.noSpill;
  exactStage.enabled = config.dedupe.exact;
  nearStage.enabled = config.dedupe.near;
  {
    char text[200];
    std::snprintf(text, sizeof text,
                  "no earlier row%s has an estimated Jaccard similarity >= %.2f over instruction %d-grams "
                  "(MinHash, %d permutations)",
                  config.dedupe.scope == NearScope::Variant ? " of the same flag set and target" : "",
                  config.dedupe.threshold, config.dedupe.ngram, config.dedupe.permutations);
    nearStage.description = text;
  }

  OrderedJson rejected = OrderedJson::array();
  auto reject = [&](const SourceFile &source, const FlagSet &flags, const std::string &target, const Json *kernel,
                    const std::string &stage, const std::string &reason) {
    rejected.push_back({{"source_path", source.path},
                        {"entry", kernel ? OrderedJson((*kernel)["entry"].get<std::string>()) : OrderedJson(nullptr)},
                        {"flags", flags.name},
                        {"target", target},
                        {"stage", stage},
                        {"reason", reason}});
  };

  std::map<std::string, NearDuplicateIndex> nearIndexes; // scope key -> index
  std::map<std::string, std::vector<std::string>> nearIds; // scope key -> row id per index entry
  std::unordered_map<std::string, std::string> exactSeen; // key -> row id
  std::vector<Row> rows;

  for (size_t index = 0; index < units.size(); ++index) {
    const Unit &unit = units[index];
    const SourceFile &source = (*sources)[unit.source];
    const FlagSet &flags = config.flagSets[unit.flagSet];
    const std::string &target = config.targets[unit.target];
    const Json &result = results[index];
    ++nvrtcStage.in;
    if (!result["nvrtc_error"].is_null()) {
      ++nvrtcStage.dropped;
      ++summary.nvrtcFailedUnits;
      reject(source, flags, target, nullptr, "nvrtc", result["nvrtc_error"].get<std::string>());
      continue;
    }
    for (size_t kernelIndex = 0; kernelIndex < result["kernels"].size(); ++kernelIndex) {
      const Json &kernel = result["kernels"][kernelIndex];
      ++summary.kernels;
      const std::string entry = kernel["entry"].get<std::string>();
      const std::string ptxText = kernel["ptx"].get<std::string>();

      ++lintStage.in;
      if (config.filters.lintClean && kernel.value("lint_errors", 0) > 0) {
        ++lintStage.dropped;
        reject(source, flags, target, &kernel, "lint", kernel.value("lint_first_error", ""));
        continue;
      }
      ++compileStage.in;
      if (!kernel.value("compile_ok", false)) {
        ++compileStage.dropped;
        reject(source, flags, target, &kernel, "compile", kernel.value("compile_error", ""));
        continue;
      }
      const size_t lines = countLines(ptxText);
      ++sizeStage.in;
      if (lines < static_cast<size_t>(config.filters.minPtxLines) ||
          lines > static_cast<size_t>(config.filters.maxPtxLines) ||
          ptxText.size() > static_cast<size_t>(config.filters.maxPtxBytes)) {
        ++sizeStage.dropped;
        reject(source, flags, target, &kernel, "size",
               std::to_string(lines) + " lines, " + std::to_string(ptxText.size()) + " bytes");
        continue;
      }
      ++spillStage.in;
      if (config.filters.noSpill && spillBytes(kernel) > 0) {
        ++spillStage.dropped;
        reject(source, flags, target, &kernel, "spill", std::to_string(spillBytes(kernel)) + " bytes of spill traffic");
        continue;
      }
      const std::string ptxSha = sha256Hex(ptxText);
      const std::string id = sha256Hex(source.sha256 + '\0' + entry + '\0' + flags.name + '\0' + target).substr(0, 16);
      ++exactStage.in;
      if (config.dedupe.exact) {
        // The entry is part of the key for the whole modules of -G rows.
        auto [seen, inserted] = exactSeen.emplace(ptxSha + ' ' + flags.compilerOptionsKey() + ' ' + entry, id);
        if (!inserted) {
          ++exactStage.dropped;
          reject(source, flags, target, &kernel, "exact-dedupe", "same PTX as row " + seen->second);
          continue;
        }
      }
      ++nearStage.in;
      if (config.dedupe.near) {
        const std::string scope = config.dedupe.scope == NearScope::Variant ? flags.name + '\0' + target : "";
        auto indexIt = nearIndexes.try_emplace(scope, config.dedupe.permutations, config.dedupe.threshold).first;
        const int64_t match = indexIt->second.findOrAdd(signatures[index][kernelIndex]);
        if (match >= 0) {
          ++nearStage.dropped;
          reject(source, flags, target, &kernel, "near-dedupe",
                 "near-duplicate of row " + nearIds[scope][static_cast<size_t>(match)]);
          continue;
        }
        nearIds[scope].push_back(id);
      }

      Row row;
      row["id"] = id;
      row["source_path"] = source.path;
      row["source_sha256"] = source.sha256;
      row["cuda_source"] = source.text;
      row["entry"] = entry;
      row["kernel"] = demangledName(entry);
      row["flags"] = flags.name;
      std::vector<std::string> nvrtcOptions = tasks::nvrtcOptions(target);
      // The toolkit include path is this machine's: leave it out of the data.
      nvrtcOptions.erase(std::remove_if(nvrtcOptions.begin(), nvrtcOptions.end(),
                                        [](const std::string &o) { return o.rfind("--include-path=", 0) == 0; }),
                         nvrtcOptions.end());
      for (const std::string &option : nvrtcExtraOptions(source, flags, config, false)) nvrtcOptions.push_back(option);
      row["nvrtc_options"] = nvrtcOptions;
      row["compiler_options"] = flags.compilerOptionsKey();
      row["target"] = target;
      row["ptx"] = ptxText;
      row["ptx_sha256"] = ptxSha;
      row["ptx_lines"] = lines;
      row["ptx_bytes"] = ptxText.size();
      row["ptx_instructions"] = kernel["instruction_count"];
      row["lint_warnings"] = kernel.value("lint_warnings", 0);
      row["resources"] = kernel["resources"];
      row["cubin_sha256"] = kernel["cubin_sha256"];
      row["cubin_bytes"] = kernel["cubin_bytes"];
      // Always a struct (zeros when skipped) and a string: every row has the same types.
      row["sass"] = kernel["sass"].is_object() ? kernel["sass"] : sassJson(toolchain::SassCounts{});
      row["sass_skipped"] = kernel["sass_skipped"].is_string() ? kernel["sass_skipped"].get<std::string>() : "";
      row["nvrtc_version"] = context.nvrtcVersion;
      row["compiler"] = kernel.value("compiler", "");
      const std::string task =
          options.matchTask ? options.matchTask(entry, kernel.value("parameter_count", 0)) : std::string();
      row["task"] = task;
      row["score"] = unscoredScore();
      rows.push_back(std::move(row));
    }
  }
  summary.stages = {nvrtcStage, lintStage, compileStage, sizeStage, spillStage, exactStage, nearStage};

  // --- Scores (optional, serial: the gate is one executor) ---------------------
  if (options.scorer)
    for (Row &row : rows)
      if (!row["task"].get<std::string>().empty()) {
        Row score = options.scorer(row);
        if (score.is_object()) {
          row["score"] = std::move(score);
          ++summary.scored;
        }
      }

  // --- Output -------------------------------------------------------------------
  for (const std::filesystem::path &stale : shardFiles(options.outDir)) std::filesystem::remove(stale, ec);
  summary.rows = rows.size();
  summary.shards = rows.empty() ? 0 : (rows.size() + static_cast<size_t>(config.shardRows) - 1) / static_cast<size_t>(config.shardRows);
  for (size_t shard = 0; shard < summary.shards; ++shard) {
    std::string text;
    const size_t begin = shard * static_cast<size_t>(config.shardRows);
    const size_t end = std::min(rows.size(), begin + static_cast<size_t>(config.shardRows));
    for (size_t i = begin; i < end; ++i) text += rows[i].dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    if (Result<void> written = writeText(options.outDir / "data" / shardName(shard, summary.shards), text); !written)
      return written.error();
  }
  std::string rejectedText;
  for (const OrderedJson &line : rejected) rejectedText += line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  if (Result<void> written = writeText(options.outDir / "rejected.jsonl", rejectedText); !written) return written.error();

  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  OrderedJson manifest = summary.toJson();
  manifest.erase("seconds");  // build.json is the same for a cold and a cached build
  manifest.erase("compiled");
  manifest.erase("cached");
  manifest["config"] = configToToml(config);
  manifest["config_file"] = options.configName;
  if (Result<void> written = writeText(options.outDir / "build.json", manifest.dump(2) + "\n"); !written)
    return written.error();
  if (Result<void> written = writeText(options.outDir / "README.md", datasetCard(summary, config, options.configName));
      !written)
    return written.error();
  return summary;
}

} // namespace ptxforge::corpus
