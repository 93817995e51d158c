// ptxforge_ncu_launch: the process Nsight Compute profiles for `check
// --profile` on a GPU (verify/NcuProfile.h). It reads a folder that
// runUnderNcu wrote — launch.json (kernel, grid, block, dynamic shared
// memory, parameters in order), module.cubin and one file per input buffer —
// loads the cubin on the GPU, uploads the buffers (outputs zero-filled),
// launches the kernel ONCE and waits for it. Nothing on stdout (ncu's CSV goes
// there); a failure is one line on stderr, "ptxforge_ncu_launch: ...", and
// exit status 1.
//
//   ptxforge_ncu_launch DIR [--device=N]
#include "exec/Executor.h"
#include "exec/GpuExecutor.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using namespace ptxforge;

/// Files larger than this are not what runUnderNcu writes.
constexpr uintmax_t kMaxFileBytes = uintmax_t{32} << 30;

int fail(const std::string &message) {
  std::fprintf(stderr, "ptxforge_ncu_launch: %s\n", message.c_str());
  return 1;
}

bool readFile(const std::filesystem::path &path, std::vector<uint8_t> &out, std::string &error) {
  std::error_code code;
  const uintmax_t size = std::filesystem::file_size(path, code);
  if (code) {
    error = path.string() + ": " + code.message();
    return false;
  }
  if (size > kMaxFileBytes) {
    error = path.string() + ": too large";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  out.resize(static_cast<size_t>(size));
  if (!in.read(reinterpret_cast<char *>(out.data()), static_cast<std::streamsize>(size))) {
    error = path.string() + ": cannot read";
    return false;
  }
  return true;
}

bool parseHex(const std::string &text, std::vector<uint8_t> &out) {
  if (text.size() % 2 != 0) return false;
  for (size_t i = 0; i < text.size(); i += 2) {
    unsigned value = 0;
    if (std::sscanf(text.c_str() + i, "%2x", &value) != 1) return false;
    out.push_back(static_cast<uint8_t>(value));
  }
  return true;
}

exec::Dim3 dim3Of(const nlohmann::json &json) {
  exec::Dim3 dim;
  dim.x = json.at(0).get<uint32_t>();
  dim.y = json.at(1).get<uint32_t>();
  dim.z = json.at(2).get<uint32_t>();
  return dim;
}

int run(const std::filesystem::path &folder, int device) {
  std::vector<uint8_t> specText;
  std::string error;
  if (!readFile(folder / "launch.json", specText, error)) return fail(error);
  nlohmann::json spec;
  try {
    spec = nlohmann::json::parse(specText.begin(), specText.end());
  } catch (const nlohmann::json::exception &e) {
    return fail(std::string("launch.json: ") + e.what());
  }

  Result<std::unique_ptr<exec::Executor>> executor = exec::createGpuExecutor(device);
  if (!executor) return fail(render(executor.error()));
  exec::Executor &gpu = **executor;

  try {
    std::vector<uint8_t> cubin;
    if (!readFile(folder / spec.at("module").get<std::string>(), cubin, error)) return fail(error);
    Result<exec::ModuleHandle> module = gpu.loadModule(cubin, exec::ModuleFormat::Cubin);
    if (!module) return fail("loading the module: " + render(module.error()));
    const std::string kernelName = spec.at("kernel").get<std::string>();
    Result<exec::KernelInfo> kernel = gpu.getKernel(*module, kernelName);
    if (!kernel) return fail("kernel '" + kernelName + "': " + render(kernel.error()));

    std::vector<exec::DeviceBuffer> buffers;
    exec::KernelArgs args;
    for (const nlohmann::json &param : spec.at("params")) {
      if (param.contains("scalar")) {
        std::vector<uint8_t> bytes;
        if (!parseHex(param.at("scalar").get<std::string>(), bytes) || bytes.empty() || bytes.size() > 8)
          return fail("a scalar parameter is not 1 to 8 bytes of hex");
        args.raw(bytes.data(), bytes.size(), bytes.size()); // aligned to its own size, as the gate packs it
        continue;
      }
      const uint64_t bytes = param.at("bytes").get<uint64_t>();
      Result<exec::DeviceBuffer> buffer = gpu.allocateBuffer(bytes);
      if (!buffer) return fail("allocating " + std::to_string(bytes) + " bytes: " + render(buffer.error()));
      if (param.contains("file")) {
        std::vector<uint8_t> data;
        if (!readFile(folder / param.at("file").get<std::string>(), data, error)) return fail(error);
        if (data.size() > bytes) return fail(param.at("file").get<std::string>() + " is larger than its buffer");
        if (Result<void> copied = gpu.copyToDevice(buffer->handle(), 0, data.data(), data.size()); !copied)
          return fail("upload: " + render(copied.error()));
      } else if (Result<void> zeroed = gpu.memset(buffer->handle(), 0, 0, bytes); !zeroed) {
        return fail("zero-fill: " + render(zeroed.error()));
      }
      args.buffer(buffer->handle());
      buffers.push_back(std::move(*buffer));
    }
    exec::LaunchConfig config;
    config.grid = dim3Of(spec.at("grid"));
    config.block = dim3Of(spec.at("block"));
    config.dynamicSharedBytes = spec.at("smem").get<uint32_t>();
    if (Result<void> launched = gpu.launch(kernel->handle, config, args.pack()); !launched)
      return fail("launch: " + render(launched.error()));
    if (Result<void> done = gpu.synchronize(); !done) return fail("synchronize: " + render(done.error()));
  } catch (const nlohmann::json::exception &e) {
    return fail(std::string("launch.json: ") + e.what());
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string folder;
  int device = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--device=", 9) == 0) {
      device = std::atoi(argv[i] + 9);
    } else if (folder.empty()) {
      folder = argv[i];
    } else {
      return fail(std::string("unexpected argument '") + argv[i] + "'");
    }
  }
  if (folder.empty()) return fail("usage: ptxforge_ncu_launch DIR [--device=N]");
  return run(folder, device);
}
