// The dataset card: front matter the hub reads, the flag matrix, the counts
// per stage and every field; and docs/corpus.md documents the same fields.
#include "corpus/Card.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace ptxforge::corpus {
namespace {

TEST(DatasetCard, SaysHowToLoadItAndWhatWasKept) {
  CorpusConfig config = CorpusConfig::defaults();
  BuildSummary summary;
  summary.sources = 3;
  summary.globalFunctions = 5;
  summary.units = 60;
  summary.kernels = 100;
  summary.rows = 77;
  summary.shards = 1;
  summary.nvrtcVersion = "NVRTC 13.0";
  summary.stages = {{"nvrtc", "NVRTC compiles", "units", 60, 2, true},
                    {"spill", "no spills", "kernels", 80, 0, false}};
  summary.sassNote = "nvdisasm not found";
  const std::string card = datasetCard(summary, config, "defaults");
  EXPECT_EQ(card.rfind("---\nconfigs:\n", 0), 0u);
  EXPECT_NE(card.find("path: data/train-*.jsonl"), std::string::npos);
  EXPECT_NE(card.find("datasets.load_dataset(\"json\", data_files=\"data/train-*.jsonl\", split=\"train\")"),
            std::string::npos);
  EXPECT_NE(card.find("**77 rows** in 1 shard."), std::string::npos) << card;
  EXPECT_NE(card.find("| `-maxrregcount=32` | `-maxrregcount=32` | `-O3 -maxrregcount=32` |"), std::string::npos) << card;
  EXPECT_NE(card.find("| `-G` | `-G` | `-O3` (debug PTX: compiled at -O0) |"), std::string::npos) << card;
  EXPECT_NE(card.find("| `-O3` | (defaults) | `-O3` |"), std::string::npos) << card;
  EXPECT_NE(card.find("| nvrtc | NVRTC compiles | 60 | 2 | 58 |"), std::string::npos) << card;
  EXPECT_NE(card.find("| spill | no spills (off: counts only) | 80 | 0 | 80 |"), std::string::npos) << card;
  EXPECT_NE(card.find("SASS statistics were not collected: nvdisasm not found."), std::string::npos);
  for (const FieldDoc &field : rowFields())
    EXPECT_NE(card.find("| `" + std::string(field.name) + "` | "), std::string::npos) << field.name;
  EXPECT_NE(card.find("[dedupe]\nexact = true"), std::string::npos);
}

TEST(DatasetCard, DocsListEveryField) {
  std::ifstream file(PTXFORGE_SOURCE_DIR "/docs/corpus.md");
  ASSERT_TRUE(file) << "docs/corpus.md not found";
  std::stringstream text;
  text << file.rdbuf();
  for (const FieldDoc &field : rowFields())
    EXPECT_NE(text.str().find("| `" + std::string(field.name) + "` | " + field.type + " |"), std::string::npos)
        << field.name << " (" << field.type << ") is not in docs/corpus.md's table";
}

} // namespace
} // namespace ptxforge::corpus
