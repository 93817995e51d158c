// libFuzzer target for the emulator: whatever PTX a model writes, decoding and
// running it must end in a result or a located error, never a crash, a hang
// or an access outside the emulator's own memory. Every kernel of the module
// runs on a small grid with a small step budget; each .u64 parameter gets a
// buffer, every other parameter zeros. The input is also evaluated as a
// module-variable initializer (its own small expression parser).
#include "emu/EmuExecutor.h"
#include "emu/Initializer.h"
#include "ptx/Parser.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace ptxforge;
  std::string text(reinterpret_cast<const char *>(data), size);
  if (size <= 4096) {
    for (emu::DType type : {emu::DType::S32, emu::DType::U64, emu::DType::F32, emu::DType::F64, emu::DType::F16,
                            emu::DType::BF16x2, emu::DType::Pred}) {
      std::vector<uint8_t> bytes;
      std::string error;
      (void)emu::evaluateInitializer(text, type, bytes, error);
    }
  }
  ptx::ParseResult parsed = ptx::parse(text);
  if (!parsed.diagnostics.empty()) return 0;

  emu::EmuOptions options;
  options.checks.hostThreads = 1;
  options.checks.stepBudget = 20000;
  options.checks.timeoutMs = 2000;
  std::unique_ptr<exec::Executor> executor = emu::createEmuExecutor(options);
  Result<exec::ModuleHandle> module =
      executor->loadModule(std::vector<uint8_t>(text.begin(), text.end()), exec::ModuleFormat::Ptx);
  if (!module) return 0;
  for (const ptx::TopLevel &item : parsed.module.items) {
    if (item.kind != ptx::TopLevel::Kind::Function || !item.function.isEntry) continue;
    Result<exec::KernelInfo> kernel = executor->getKernel(*module, item.function.name);
    if (!kernel) continue;
    std::vector<exec::DeviceBuffer> buffers;
    exec::KernelArgs args;
    for (const ptx::VariableDecl &param : item.function.params) {
      if (param.type == "u64" || param.type == "b64" || param.type == "s64") {
        Result<exec::DeviceBuffer> buffer = executor->allocateBuffer(4096);
        if (!buffer) return 0;
        args.buffer(buffer->handle());
        buffers.push_back(std::move(*buffer));
      } else {
        uint8_t zeros[256] = {};
        size_t bytes = param.type.size() >= 2 && param.type.substr(1) == "8" ? 1
                       : param.type.find("16") != std::string::npos      ? 2
                                                                         : 4;
        if (!param.arrayDims.empty()) bytes = std::min<size_t>(256, bytes * param.arrayDims[0]);
        args.raw(zeros, bytes, std::min<size_t>(bytes, 16));
      }
    }
    exec::LaunchConfig config;
    config.grid = {2, 1, 1};
    config.block = {64, 1, 1};
    config.dynamicSharedBytes = 256;
    (void)executor->launch(kernel->handle, config, args.pack());
    (void)executor->takeFindings();
  }
  return 0;
}
