// Card: Markdown for people, front matter for the hub; nothing in it depends
// on the clock, so that rebuilding the same sources gives the same card.
#include "corpus/Card.h"

#include <sstream>

namespace ptxforge::corpus {

const std::vector<FieldDoc> &rowFields() {
  static const std::vector<FieldDoc> fields = {
      {"id", "string", "16 hex digits of SHA-256 over the source hash, entry, flags and target: stable across builds"},
      {"source_path", "string", "the CUDA file, as named on the command line"},
      {"source_sha256", "string", "SHA-256 of the CUDA file"},
      {"cuda_source", "string", "the whole translation unit (the kernel with its helpers)"},
      {"entry", "string", "the kernel's `.entry` name in the PTX (mangled for C++ kernels)"},
      {"kernel", "string", "the entry demangled (`void map_kernel<float, Square>(float const*, float*, int, Square)`)"},
      {"flags", "string", "the flag set of the matrix (`-O3`, `-G`, `--use_fast_math`, ...)"},
      {"nvrtc_options", "list<string>", "the options NVRTC got (the toolkit's include path left out)"},
      {"compiler_options", "string", "what reached the PTX compiler: `-O3`, `-O0` with -G, `-maxrregcount=N`"},
      {"target", "string", "the real architecture (`sm_90a`): the PTX's `.target` and the cubin's"},
      {"ptx", "string", "the kernel's own module: the entry, the `.func`s it calls and the globals they use, "
                        "in the printer's normalized form (DWARF sections of -G left out)"},
      {"ptx_sha256", "string", "SHA-256 of `ptx`"},
      {"ptx_lines", "int64", "lines of `ptx`"},
      {"ptx_bytes", "int64", "bytes of `ptx`"},
      {"ptx_instructions", "int64", "instructions in the entry and its callees"},
      {"lint_warnings", "int64", "`ptxforge lint` warnings (rows with lint errors are filtered out)"},
      {"resources", "struct", "registers, spill_store_bytes, spill_load_bytes, stack_frame_bytes, shared_bytes, "
                              "local_bytes, constant_bytes, barriers: the PTX compiler's report for the entry "
                              "(registers and constant_bytes -1 when not reported)"},
      {"cubin_sha256", "string", "SHA-256 of the compiled cubin"},
      {"cubin_bytes", "int64", "its size"},
      {"sass", "struct", "nvdisasm statistics of the cubin: instructions, ffma, fmul, fadd, "
                         "tensor_core_ops, barriers, spill_loads, spill_stores, opcodes (list of "
                         "{opcode, count}); all zero when `sass_skipped` says why"},
      {"sass_skipped", "string", "empty, or why there are no SASS statistics (no nvdisasm, turned off)"},
      {"nvrtc_version", "string", "`NVRTC 13.0`"},
      {"compiler", "string", "the PTX compiler (`nvJitLink 13.0`)"},
      {"task", "string", "the ptxforge task whose kernel name and parameter count the entry matches, or empty"},
      {"score", "struct", "scored (bool; true with `--score` for a row with a task that runs on the gate's "
                          "device), task, verdict, stage, executor, speedup, median_ms, baseline_ms (0 when "
                          "nothing was timed, as on the emulator), summary"},
  };
  return fields;
}

std::string datasetCard(const BuildSummary &summary, const CorpusConfig &config, const std::string &configName) {
  std::ostringstream out;
  out << "---\n"
      << "configs:\n"
      << "- config_name: default\n"
      << "  data_files:\n"
      << "  - split: train\n"
      << "    path: data/train-*.jsonl\n"
      << "task_categories:\n"
      << "- text-generation\n"
      << "tags:\n"
      << "- cuda\n"
      << "- ptx\n"
      << "- code\n"
      << "---\n\n"
      << "# CUDA → PTX corpus\n\n"
      << "Built by `ptxforge corpus build` from " << summary.sources << " CUDA file"
      << (summary.sources == 1 ? "" : "s") << " (" << summary.globalFunctions
      << " `__global__` declarations) compiled with " << summary.nvrtcVersion << " under "
      << config.flagSets.size() << " flag set" << (config.flagSets.size() == 1 ? "" : "s") << " × "
      << config.targets.size() << " target" << (config.targets.size() == 1 ? "" : "s") << ": " << summary.units
      << " compiles, " << summary.kernels << " kernel variants, **" << summary.rows << " rows** in "
      << summary.shards << " shard" << (summary.shards == 1 ? "" : "s") << ".\n\n"
      << "One row is one kernel compiled one way: its CUDA translation unit, the flags and target, "
         "the PTX of that kernel alone (a module that compiles by itself), the PTX compiler's resource "
         "report and, where nvdisasm ran, SASS statistics.\n\n";

  out << "## Loading\n\n"
      << "```python\n"
      << "import datasets\n"
      << "ds = datasets.load_dataset(\"json\", data_files=\"" << "data/train-*.jsonl\", split=\"train\")\n"
      << "print(ds[0][\"kernel\"], ds[0][\"flags\"], ds[0][\"target\"])\n"
      << "```\n\n"
      << "Run it in this folder, or give the folder's path in `data_files`.\n\n";

  out << "## Flag matrix\n\n"
      << "| flag set | NVRTC gets | the PTX compiler gets |\n| --- | --- | --- |\n";
  for (const FlagSet &set : config.flagSets) {
    std::string nvrtc;
    for (const std::string &option : set.nvrtcOptions) nvrtc += (nvrtc.empty() ? "" : " ") + option;
    out << "| `" << set.name << "` | " << (nvrtc.empty() ? "(defaults)" : "`" + nvrtc + "`") << " | `"
        << set.compilerOptionsKey() << (set.debug ? "` (debug PTX: compiled at -O0)" : "`") << " |\n";
  }
  out << "\nTargets: ";
  for (size_t i = 0; i < config.targets.size(); ++i) out << (i ? ", " : "") << "`" << config.targets[i] << "`";
  out << ". Every flag set also gets `--std=c++17` and the CUDA toolkit's headers.\n\n";

  out << "## Filters\n\n"
      << "Each stage sees what the previous one kept (`nvrtc` counts compiles of a translation unit; the "
         "others count kernels). Dropped rows are listed in `rejected.jsonl` with the reason.\n\n"
      << "| stage | keeps | in | dropped | kept |\n| --- | --- | ---: | ---: | ---: |\n";
  for (const StageCount &stage : summary.stages) {
    out << "| " << stage.stage << " | " << stage.description << (stage.enabled ? "" : " (off: counts only)")
        << " | " << stage.in << " | " << stage.dropped << " | " << stage.kept() << " |\n";
  }
  out << "\n";
  if (!summary.sassNote.empty()) out << "SASS statistics were not collected: " << summary.sassNote << ".\n\n";

  out << "## Features\n\n| field | type | meaning |\n| --- | --- | --- |\n";
  for (const FieldDoc &field : rowFields())
    out << "| `" << field.name << "` | " << field.type << " | " << field.meaning << " |\n";

  out << "\n## Configuration\n\nFrom " << (configName == "defaults" ? "the built-in defaults" : "`" + configName + "`")
      << " (docs/corpus.md in ptxforge lists the keys):\n\n```toml\n"
      << configToToml(config) << "```\n\n"
      << "## Provenance and licence\n\n"
      << "The PTX and the statistics are compiler output for the sources above; the sources keep their own "
         "licence. `build.json` holds the same counts as JSON.\n";
  return out.str();
}

} // namespace ptxforge::corpus
