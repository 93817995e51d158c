// Shared fixtures of the tasks tests: a good task folder written to a fresh temporary directory.
#pragma once

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace ptxforge::tasks::fixtures {

/// The saxpy task of docs/tasks.md, line for line (line numbers matter to the tests).
inline const char *kSaxpyToml = R"toml(name = "saxpy"
level = 1
description = "y[i] = a * x[i] + y[i] for i < n"
kernel = "saxpy"
tags = ["elementwise", "memory-bound"]
symbols = ["n"]
shapes = [
  { n = 1048576 },
  { n = 1000003 },
  { n = 33 },
]
small_shapes = [0, 2]

[[params]]
name = "x"
type = "f32*"
role = "input"
count = "n"
init = { dist = "uniform", min = -8.0, max = 8.0 }

[[params]]
name = "y"
type = "f32*"
role = "inout"
count = "n"

[[params]]
name = "a"
type = "f32"
role = "scalar"
value = "2.5"

[[params]]
name = "n"
type = "i32"
role = "scalar"
value = "n"

[tolerance]
atol = 1e-5
rtol = 1e-5

[cost]
flops = "2 * n"
bytes = "12 * n"

[launch]
block = ["256", "1", "1"]
grid = ["ceildiv(n, 256)", "1", "1"]
smem = "0"
)toml";

inline const char *kSaxpyReference = R"cu(extern "C" __global__ void saxpy(const float *x, float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)cu";

/// A fresh directory under the system temp dir, removed with the object.
class TempDir {
public:
  TempDir() {
    std::random_device device;
    path_ = std::filesystem::temp_directory_path() /
            ("ptxforge-tasks-test-" + std::to_string(device()) + "-" + std::to_string(device()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::filesystem::path &path() const { return path_; }

private:
  std::filesystem::path path_;
};

inline void writeFile(const std::filesystem::path &path, const std::string &text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

/// Writes a task folder `root/name` with the given task.toml and reference.cu (none when empty).
inline std::filesystem::path writeTask(const std::filesystem::path &root, const std::string &name,
                                       const std::string &toml, const std::string &reference = kSaxpyReference) {
  std::filesystem::path folder = root / name;
  writeFile(folder / "task.toml", toml);
  if (!reference.empty()) writeFile(folder / "reference.cu", reference);
  return folder;
}

} // namespace ptxforge::tasks::fixtures
