// The corpus config: defaults, every key, located errors, and the TOML the
// card shows reading back to the same config.
#include "corpus/Config.h"

#include <gtest/gtest.h>

namespace ptxforge::corpus {
namespace {

std::vector<std::string> flagNames(const CorpusConfig &config) {
  std::vector<std::string> names;
  for (const FlagSet &set : config.flagSets) names.push_back(set.name);
  return names;
}

TEST(CorpusConfig, DefaultsAreTheIssuesMatrix) {
  CorpusConfig config = CorpusConfig::defaults();
  EXPECT_EQ(flagNames(config),
            (std::vector<std::string>{"-O3", "-G", "-lineinfo", "--use_fast_math", "-maxrregcount=32"}));
  EXPECT_EQ(config.targets, (std::vector<std::string>{"sm_80", "sm_89", "sm_90", "sm_90a"}));
  EXPECT_TRUE(config.filters.lintClean);
  EXPECT_FALSE(config.filters.noSpill);
  EXPECT_TRUE(config.dedupe.exact);
  EXPECT_TRUE(config.dedupe.near);
}

TEST(CorpusConfig, EmptyFileIsTheDefaults) {
  Result<CorpusConfig> config = parseConfig("", "empty.toml");
  ASSERT_TRUE(config) << render(config.error());
  EXPECT_EQ(flagNames(*config), flagNames(CorpusConfig::defaults()));
}

TEST(FlagSet, SplitsWhatNvrtcAndThePtxCompilerGet) {
  Result<FlagSet> set = parseFlagSet("-O2  -lineinfo -maxrregcount=40 --use_fast_math");
  ASSERT_TRUE(set) << render(set.error());
  EXPECT_EQ(set->name, "-O2 -lineinfo -maxrregcount=40 --use_fast_math");
  EXPECT_EQ(set->optLevel, 2);
  EXPECT_EQ(set->maxRegisters, 40);
  EXPECT_TRUE(set->lineInfo);
  EXPECT_FALSE(set->debug);
  // NVRTC has no -O; the register cap goes to both.
  EXPECT_EQ(set->nvrtcOptions, (std::vector<std::string>{"-lineinfo", "-maxrregcount=40", "--use_fast_math"}));
  EXPECT_EQ(set->compilerOptionsKey(), "-O2 -maxrregcount=40");
  EXPECT_TRUE(parseFlagSet("-G")->debug);
}

TEST(FlagSet, RejectsBadLevelsCapsAndEmptySets) {
  EXPECT_FALSE(parseFlagSet("-O4"));
  EXPECT_FALSE(parseFlagSet("-maxrregcount=0"));
  EXPECT_FALSE(parseFlagSet("-maxrregcount=lots"));
  EXPECT_FALSE(parseFlagSet("   "));
}

TEST(CorpusConfig, ReadsEveryKey) {
  const char *text = R"(
[matrix]
flags = ["-O3", "-G -lineinfo"]
targets = ["sm_90a", "sm_100f"]
include_paths = ["include"]
defines = ["N=4"]

[filters]
lint_clean = false
min_ptx_lines = 5
max_ptx_lines = 900
max_ptx_bytes = 65536
no_spill = true

[dedupe]
exact = false
near = true
threshold = 0.7
ngram = 3
permutations = 32
seed = 11
scope = "all"

[output]
shard_rows = 100
sass = false
)";
  Result<CorpusConfig> config = parseConfig(text, "full.toml");
  ASSERT_TRUE(config) << render(config.error());
  EXPECT_EQ(flagNames(*config), (std::vector<std::string>{"-O3", "-G -lineinfo"}));
  EXPECT_TRUE(config->flagSets[1].debug && config->flagSets[1].lineInfo);
  EXPECT_EQ(config->targets, (std::vector<std::string>{"sm_90a", "sm_100f"}));
  EXPECT_EQ(config->includePaths, std::vector<std::string>{"include"});
  EXPECT_EQ(config->defines, std::vector<std::string>{"N=4"});
  EXPECT_FALSE(config->filters.lintClean);
  EXPECT_EQ(config->filters.minPtxLines, 5);
  EXPECT_EQ(config->filters.maxPtxLines, 900);
  EXPECT_EQ(config->filters.maxPtxBytes, 65536);
  EXPECT_TRUE(config->filters.noSpill);
  EXPECT_FALSE(config->dedupe.exact);
  EXPECT_DOUBLE_EQ(config->dedupe.threshold, 0.7);
  EXPECT_EQ(config->dedupe.ngram, 3);
  EXPECT_EQ(config->dedupe.permutations, 32);
  EXPECT_EQ(config->dedupe.seed, 11u);
  EXPECT_EQ(config->dedupe.scope, NearScope::All);
  EXPECT_EQ(config->shardRows, 100);
  EXPECT_FALSE(config->sass);

  // The card's TOML reads back to the same config.
  Result<CorpusConfig> again = parseConfig(configToToml(*config), "again.toml");
  ASSERT_TRUE(again) << render(again.error());
  EXPECT_EQ(configToToml(*again), configToToml(*config));
}

TEST(CorpusConfig, ErrorsNameTheFileLineAndKey) {
  Result<CorpusConfig> config = parseConfig("[matrix]\ntargets = [\"sm_80\", \"compute_90\"]\n\n[dedupe]\nthreshhold = 0.9\n"
                                            "threshold = 1.5\n[output]\nshard_rows = 0\n",
                                            "bad.toml");
  ASSERT_FALSE(config);
  const std::string message = config.error().message;
  EXPECT_EQ(config.error().code, "bad-config");
  EXPECT_NE(message.find("bad.toml:2:"), std::string::npos) << message;
  EXPECT_NE(message.find("'compute_90' is not a real architecture"), std::string::npos) << message;
  EXPECT_NE(message.find("bad.toml:5:1: unknown key 'threshhold' in [dedupe]"), std::string::npos) << message;
  EXPECT_NE(message.find("bad.toml:6:"), std::string::npos) << message;
  EXPECT_NE(message.find("dedupe.threshold must be a number in (0, 1]"), std::string::npos) << message;
  EXPECT_NE(message.find("output.shard_rows must be an integer in [1,"), std::string::npos) << message;
}

TEST(CorpusConfig, WrongTypesAndSyntaxAreErrors) {
  EXPECT_FALSE(parseConfig("[matrix]\nflags = \"-O3\"\n", "x.toml"));
  EXPECT_FALSE(parseConfig("[filters]\nno_spill = 1\n", "x.toml"));
  EXPECT_FALSE(parseConfig("[dedupe]\nscope = \"everywhere\"\n", "x.toml"));
  EXPECT_FALSE(parseConfig("[matrix]\nflags = []\n", "x.toml"));
  EXPECT_FALSE(parseConfig("[filters]\nmin_ptx_lines = 10\nmax_ptx_lines = 5\n", "x.toml"));
  Result<CorpusConfig> broken = parseConfig("[matrix\nflags = 1", "broken.toml");
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().message.rfind("broken.toml:1:", 0), 0u) << broken.error().message;
}

} // namespace
} // namespace ptxforge::corpus
