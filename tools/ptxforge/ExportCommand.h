// `ptxforge export runs|evals [IDS...] --format sft|rl|pairs --out FILE.jsonl`:
// training data out of the run store as JSON lines that
// `datasets.load_dataset("json", data_files=...)` and TRL's trainers load
// (the records: ExportRecords.h; every field: docs/datasets.md).
//
// Exit codes: 0 written (even with no record: the summary says why); 2 bad
// arguments, no store, an unknown run or eval, or a file that cannot be written.
#pragma once

#include <CLI/CLI.hpp>

namespace ptxforge::cli {

/// Adds `export`; its callback sets `exitCode`.
void registerExportCommand(CLI::App &app, int &exitCode);

} // namespace ptxforge::cli
