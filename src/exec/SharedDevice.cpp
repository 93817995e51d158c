#include "exec/SharedDevice.h"

#include <mutex>
#include <utility>

namespace ptxforge::exec {

namespace {

class SharedDeviceExecutor final : public Executor {
public:
  SharedDeviceExecutor(std::unique_ptr<Executor> inner, std::shared_ptr<DeviceShare> share)
      : inner_(std::move(inner)), share_(std::move(share)) {}

  const DeviceProperties &properties() const override { return inner_->properties(); }
  ModuleFormat moduleFormat() const override { return inner_->moduleFormat(); }

  Result<BufferHandle> allocate(uint64_t bytes) override { return shared([&] { return inner_->allocate(bytes); }); }
  Result<void> free(BufferHandle buffer) override { return shared([&] { return inner_->free(buffer); }); }
  bool pinHostMemory(void *data, uint64_t bytes) override {
    return shared([&] { return inner_->pinHostMemory(data, bytes); });
  }
  Result<void> copyToDevice(BufferHandle dst, uint64_t dstOffset, const void *src, uint64_t bytes) override {
    return shared([&] { return inner_->copyToDevice(dst, dstOffset, src, bytes); });
  }
  Result<void> copyToHost(void *dst, BufferHandle src, uint64_t srcOffset, uint64_t bytes) override {
    return shared([&] { return inner_->copyToHost(dst, src, srcOffset, bytes); });
  }
  Result<void> memset(BufferHandle dst, uint64_t dstOffset, uint8_t value, uint64_t bytes) override {
    return shared([&] { return inner_->memset(dst, dstOffset, value, bytes); });
  }
  Result<void> copyOnDevice(BufferHandle dst, uint64_t dstOffset, BufferHandle src, uint64_t srcOffset,
                            uint64_t bytes) override {
    return shared([&] { return inner_->copyOnDevice(dst, dstOffset, src, srcOffset, bytes); });
  }
  Result<void> setAccessibleRange(BufferHandle buffer, uint64_t offset, uint64_t bytes) override {
    return shared([&] { return inner_->setAccessibleRange(buffer, offset, bytes); });
  }
  Result<ModuleHandle> loadModule(const std::vector<uint8_t> &image, ModuleFormat format) override {
    return shared([&] { return inner_->loadModule(image, format); });
  }
  Result<void> unloadModule(ModuleHandle module) override { return shared([&] { return inner_->unloadModule(module); }); }
  Result<KernelInfo> getKernel(ModuleHandle module, const std::string &name) override {
    return shared([&] { return inner_->getKernel(module, name); });
  }
  Result<GlobalVariable> getGlobal(ModuleHandle module, const std::string &name) override {
    return shared([&] { return inner_->getGlobal(module, name); });
  }
  Result<void> launch(KernelHandle kernel, const LaunchConfig &config, const PackedArgs &args) override {
    return shared([&] { return inner_->launch(kernel, config, args); });
  }
  Result<void> synchronize() override { return shared([&] { return inner_->synchronize(); }); }
  std::vector<LaunchFinding> takeFindings() override { return inner_->takeFindings(); }
  Result<void> runLibraryCall(const LibraryCall &call) override {
    return shared([&] { return inner_->runLibraryCall(call); });
  }

  Result<std::vector<float>> timeLaunch(KernelHandle kernel, const LaunchConfig &config, const PackedArgs &args,
                                        const TimingOptions &options) override {
    return exclusive([&] { return inner_->timeLaunch(kernel, config, args, options); });
  }
  Result<std::vector<float>> timeLibraryCall(const LibraryCall &call, const TimingOptions &options) override {
    return exclusive([&] { return inner_->timeLibraryCall(call, options); });
  }
  Result<void> flushL2() override {
    return exclusive([&] { return inner_->flushL2(); });
  }

private:
  template <typename Call> auto shared(Call &&call) -> decltype(call()) {
    { std::lock_guard<std::mutex> pass(share_->turnstile()); }
    std::shared_lock<std::shared_mutex> lock(share_->mutex());
    return call();
  }
  template <typename Call> auto exclusive(Call &&call) -> decltype(call()) {
    std::lock_guard<std::mutex> first(share_->turnstile());
    std::unique_lock<std::shared_mutex> lock(share_->mutex());
    share_->countTiming();
    return call();
  }

  std::unique_ptr<Executor> inner_;
  std::shared_ptr<DeviceShare> share_;
};

} // namespace

std::unique_ptr<Executor> shareDevice(std::unique_ptr<Executor> inner, std::shared_ptr<DeviceShare> share) {
  return std::make_unique<SharedDeviceExecutor>(std::move(inner), std::move(share));
}

} // namespace ptxforge::exec
