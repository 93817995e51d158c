// Sources: the CUDA translation units of a corpus (files and folders as
// given), what each one includes from beside it, and how many `__global__`
// functions its text declares.
#pragma once

#include "support/Result.h"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::corpus {

/// One translation unit.
struct SourceFile {
  std::string path;            ///< as the user named it (a folder's files: the folder path joined with theirs)
  std::filesystem::path folder; ///< its folder, on NVRTC's include path
  std::string text;
  std::string sha256;          ///< of `text`
  /// SHA-256 over `text` and every local header it includes (`#include
  /// "x.h"`, found beside it or on `includePaths`), recursively: what the
  /// compile cache keys on, so that editing a header recompiles its users.
  std::string contentKey;
  int globalFunctions = 0;     ///< `__global__` declarations in the text (templates count once)
};

/// Every `.cu` file under the folders (recursively) and every file named
/// (whatever its extension), sorted by path, each once. A path that does not
/// exist, a folder without `.cu` files and an unreadable file are Io errors
/// naming the path; a file over the input limit is an InvalidInput error.
Result<std::vector<SourceFile>> discoverSources(const std::vector<std::string> &inputs,
                                                const std::vector<std::string> &includePaths = {});

/// The `__global__` declarations of CUDA text, outside comments, string and
/// character literals and preprocessor lines; explicit instantiations
/// (`template __global__ void k<int>(...)`) do not count again.
int countGlobalFunctions(std::string_view source);

/// The targets of `#include "..."` lines (not `<...>`), outside comments.
std::vector<std::string> localIncludes(std::string_view source);

} // namespace ptxforge::corpus
