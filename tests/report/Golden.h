// Exact-output checks of the report tests: a report compared with
// tests/report/golden/NAME, which PTXFORGE_UPDATE_GOLDEN=1 writes instead
// (`PTXFORGE_UPDATE_GOLDEN=1 ctest -R '^report\.'`; then read the diff).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ptxforge::report::golden {

inline std::filesystem::path goldenPath(const std::string &name) {
  return std::filesystem::path(PTXFORGE_REPORT_GOLDEN_DIR) / name;
}

inline std::string readGolden(const std::string &name) {
  std::ifstream in(goldenPath(name), std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// EXPECTs `actual` to be the golden file's text, or writes it when updating.
inline void expectGolden(const std::string &name, const std::string &actual) {
  if (const char *update = std::getenv("PTXFORGE_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream(goldenPath(name), std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(goldenPath(name))) << goldenPath(name) << " is missing: run with PTXFORGE_UPDATE_GOLDEN=1";
  EXPECT_EQ(readGolden(name), actual) << "differs from " << goldenPath(name)
                                      << "; regenerate with PTXFORGE_UPDATE_GOLDEN=1 and review the diff";
}

} // namespace ptxforge::report::golden
