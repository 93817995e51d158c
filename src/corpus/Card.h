// Card: the dataset card (README.md) of a built corpus — what the rows hold,
// the flag matrix, the counts per filter stage and how to load it.
#pragma once

#include "corpus/Builder.h"
#include "corpus/Config.h"

#include <string>

namespace ptxforge::corpus {

/// The card, with YAML front matter that the Hugging Face hub reads
/// (configs/data_files) and Markdown that people read.
std::string datasetCard(const BuildSummary &summary, const CorpusConfig &config, const std::string &configName);

/// The row fields: name, type (as `datasets` infers it), meaning. One table
/// for the card and docs/corpus.md.
struct FieldDoc {
  const char *name;
  const char *type;
  const char *meaning;
};
const std::vector<FieldDoc> &rowFields();

} // namespace ptxforge::corpus
