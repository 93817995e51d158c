// The run store's records as the JSON and text that `solve`, `runs` and
// `show` print; the commands only print them.
#pragma once

#include "store/Store.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ptxforge::report {

/// `runs --format json`: one object per run.
nlohmann::json runListJson(const std::vector<store::RunRecord> &runs);
/// `runs`: the table, one line per run.
std::string runListText(const std::vector<store::RunRecord> &runs);
/// `show --format json`: the run and every attempt with its stage; `full`
/// adds each attempt's prompt messages, completion text and PTX (show --full).
nlohmann::json runDataJson(const store::RunData &data, bool full = false);
/// summary.json of a solve run.
nlohmann::json runSummaryJson(const store::RunData &data, int64_t runId, const nlohmann::json &summary);

} // namespace ptxforge::report
