// Device ceilings measured with small PTX kernels written here: a 128-bit
// grid-stride copy for bandwidth, and eight independent FMA chains per thread
// for FP32 (fma.rn.f32) and FP16 (fma.rn.f16x2) throughput.
#include "verify/Ceilings.h"

#include "support/InputReader.h"
#include "toolchain/Compiler.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

namespace ptxforge::verify {

namespace {

std::string header(const std::string &arch) {
  return ".version 8.0\n.target " + arch + "\n.address_size 64\n\n";
}

std::string copyKernel(const std::string &arch) {
  return header(arch) + R"(.visible .entry ceiling_copy(.param .u64 src, .param .u64 dst, .param .u64 count)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<5>;
	.reg .f32 	%f<5>;
	.reg .b64 	%rd<10>;
	ld.param.u64 	%rd1, [src];
	ld.param.u64 	%rd2, [dst];
	ld.param.u64 	%rd3, [count];
	cvta.to.global.u64 	%rd1, %rd1;
	cvta.to.global.u64 	%rd2, %rd2;
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %tid.x;
	mov.u32 	%r4, %nctaid.x;
	mul.wide.u32 	%rd4, %r1, %r2;
	cvt.u64.u32 	%rd5, %r3;
	add.s64 	%rd4, %rd4, %rd5;
	mul.wide.u32 	%rd6, %r4, %r2;
$L__loop:
	setp.ge.u64 	%p1, %rd4, %rd3;
	@%p1 bra 	$L__done;
	shl.b64 	%rd7, %rd4, 4;
	add.s64 	%rd8, %rd1, %rd7;
	add.s64 	%rd9, %rd2, %rd7;
	ld.global.v4.f32 	{%f1, %f2, %f3, %f4}, [%rd8];
	st.global.v4.f32 	[%rd9], {%f1, %f2, %f3, %f4};
	add.s64 	%rd4, %rd4, %rd6;
	bra.uni 	$L__loop;
$L__done:
	ret;
}
)";
}

/// Eight independent chains, unrolled eight times: 64 FMAs per loop trip.
std::string fmaKernel(const std::string &arch, bool half) {
  std::string type = half ? "f16x2" : "f32";
  std::string reg = half ? ".b32" : ".f32";
  std::ostringstream body;
  body << header(arch) << ".visible .entry ceiling_fma(.param .u64 out, .param .u32 iterations)\n{\n"
       << "\t.reg .pred \t%p<2>;\n\t.reg .b32 \t%r<6>;\n\t.reg .b64 \t%rd<5>;\n\t.reg " << reg << " \t%v<12>;\n"
       << "\tld.param.u64 \t%rd1, [out];\n\tld.param.u32 \t%r1, [iterations];\n"
       << "\tmov.u32 \t%r2, %tid.x;\n";
  // Distinct start values per chain and thread; multiplier just under 1 keeps values finite.
  for (int chain = 0; chain < 8; ++chain) {
    if (half)
      body << "\tor.b32 \t%v" << chain << ", %r2, " << (0x3C003C00 + chain) << ";\n";
    else
      body << "\tcvt.rn.f32.u32 \t%v" << chain << ", %r2;\n\tadd.f32 \t%v" << chain << ", %v" << chain << ", 0f"
           << fmt::format("{:08X}", 0x3F800000u + static_cast<unsigned>(chain) * 0x100000u) << ";\n";
  }
  if (half)
    body << "\tmov.b32 \t%v8, 0x3BFF3BFF;\n\tmov.b32 \t%v9, 0x00010001;\n";
  else
    body << "\tmov.f32 \t%v8, 0f3F7FFFFF;\n\tmov.f32 \t%v9, 0f33800000;\n";
  body << "\tmov.u32 \t%r3, 0;\n$L__loop:\n";
  for (int unroll = 0; unroll < 8; ++unroll)
    for (int chain = 0; chain < 8; ++chain)
      body << "\tfma.rn." << type << " \t%v" << chain << ", %v" << chain << ", %v8, %v9;\n";
  body << "\tadd.u32 \t%r3, %r3, 1;\n\tsetp.lt.u32 \t%p1, %r3, %r1;\n\t@%p1 bra \t$L__loop;\n";
  // Sum the chains and store, so nothing is dead code.
  for (int chain = 1; chain < 8; ++chain)
    body << (half ? "\tadd.rn.f16x2 \t%v0, %v0, %v" : "\tadd.f32 \t%v0, %v0, %v") << chain << ";\n";
  body << "\tmov.u32 \t%r4, %ctaid.x;\n\tmov.u32 \t%r5, %ntid.x;\n\tmad.lo.s32 \t%r4, %r4, %r5, %r2;\n"
       << "\tcvta.to.global.u64 \t%rd2, %rd1;\n\tmul.wide.u32 \t%rd3, %r4, 4;\n\tadd.s64 \t%rd4, %rd2, %rd3;\n"
       << (half ? "\tst.global.b32 \t[%rd4], %v0;\n" : "\tst.global.f32 \t[%rd4], %v0;\n") << "\tret;\n}\n";
  return body.str();
}

Result<exec::KernelHandle> load(exec::Executor &executor, const std::string &ptx, const std::string &name) {
  toolchain::CompileOptions options;
  options.arch = executor.properties().arch();
  Result<toolchain::CompileResult> compiled = toolchain::compilePtx(ptx, options);
  if (!compiled) return compiled.error();
  if (!compiled->ok)
    return makeError(ErrorKind::Internal, "a ceiling kernel did not compile: " + compiled->errorLog);
  Result<exec::ModuleHandle> module = executor.loadModule(compiled->cubin, exec::ModuleFormat::Cubin);
  if (!module) return module.error();
  Result<exec::KernelInfo> kernel = executor.getKernel(*module, name);
  if (!kernel) return kernel.error();
  return kernel->handle;
}

Result<double> medianMs(exec::Executor &executor, exec::KernelHandle kernel, const exec::LaunchConfig &config,
                        const exec::PackedArgs &args) {
  exec::TimingOptions timing;
  timing.warmupLaunches = 2;
  timing.repetitions = 15;
  timing.flushL2 = false; // the copy streams 2 GiB; the FMA kernels touch no memory in the loop
  Result<std::vector<float>> times = executor.timeLaunch(kernel, config, args, timing);
  if (!times) return times.error();
  std::vector<float> sorted = *times;
  std::sort(sorted.begin(), sorted.end());
  return static_cast<double>(sorted[sorted.size() / 2]);
}

std::string safeName(const std::string &name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

} // namespace

std::vector<std::pair<std::string, std::string>> ceilingKernels(const std::string &arch) {
  return {{"copy", copyKernel(arch)}, {"fp32", fmaKernel(arch, false)}, {"fp16", fmaKernel(arch, true)}};
}

Result<DeviceCeilings> measureCeilings(exec::Executor &executor) {
  const exec::DeviceProperties &device = executor.properties();
  DeviceCeilings ceilings;
  ceilings.device = device.name;
  ceilings.arch = device.arch();
  uint32_t blocks = static_cast<uint32_t>(std::max(1, device.multiprocessorCount)) * 8;

  // Bandwidth: copy 1 GiB (2 GiB of traffic), well beyond any L2.
  const uint64_t bytes = 1ull << 30;
  Result<exec::DeviceBuffer> source = executor.allocateBuffer(bytes);
  if (!source) return source.error();
  Result<exec::DeviceBuffer> destination = executor.allocateBuffer(bytes);
  if (!destination) return destination.error();
  if (Result<void> zeroed = executor.memset(source->handle(), 0, 0, bytes); !zeroed) return zeroed.error();
  Result<exec::KernelHandle> copy = load(executor, copyKernel(ceilings.arch), "ceiling_copy");
  if (!copy) return copy.error();
  exec::LaunchConfig config;
  config.grid = {blocks, 1, 1};
  config.block = {256, 1, 1};
  Result<double> copyMs = medianMs(executor, *copy, config,
                                   exec::KernelArgs().buffer(source->handle()).buffer(destination->handle())
                                       .scalar<uint64_t>(bytes / 16).pack());
  if (!copyMs) return copyMs.error();
  ceilings.copyGBs = 2.0 * static_cast<double>(bytes) / (*copyMs * 1e6);

  // FMA throughput: every thread runs 64 FMAs per loop trip.
  const uint32_t iterations = 2048;
  const uint64_t threads = uint64_t(blocks) * 256;
  Result<exec::DeviceBuffer> sink = executor.allocateBuffer(threads * 4);
  if (!sink) return sink.error();
  for (bool half : {false, true}) {
    Result<exec::KernelHandle> fma = load(executor, fmaKernel(ceilings.arch, half), "ceiling_fma");
    if (!fma) return fma.error();
    Result<double> ms =
        medianMs(executor, *fma, config, exec::KernelArgs().buffer(sink->handle()).scalar<uint32_t>(iterations).pack());
    if (!ms) return ms.error();
    double flops = static_cast<double>(threads) * iterations * 64 * (half ? 4.0 : 2.0);
    (half ? ceilings.fp16Gflops : ceilings.fp32Gflops) = flops / (*ms * 1e6);
  }
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  ceilings.measuredAt = stamp;
  return ceilings;
}

std::filesystem::path ceilingsCachePath(const std::string &deviceName) {
  return cacheRoot() / ("device-" + safeName(deviceName) + ".json");
}

nlohmann::json toJson(const DeviceCeilings &c) {
  return {{"device", c.device},         {"arch", c.arch},          {"copy_gbs", c.copyGBs},
          {"fp32_gflops", c.fp32Gflops}, {"fp16_gflops", c.fp16Gflops}, {"measured_at", c.measuredAt}};
}

std::optional<DeviceCeilings> loadCachedCeilings(const std::string &deviceName) {
  std::ifstream file(ceilingsCachePath(deviceName));
  if (!file) return std::nullopt;
  nlohmann::json json = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object() || json.value("device", "") != deviceName) return std::nullopt;
  DeviceCeilings c;
  c.device = deviceName;
  c.arch = json.value("arch", "");
  c.copyGBs = json.value("copy_gbs", 0.0);
  c.fp32Gflops = json.value("fp32_gflops", 0.0);
  c.fp16Gflops = json.value("fp16_gflops", 0.0);
  c.measuredAt = json.value("measured_at", "");
  if (c.copyGBs <= 0) return std::nullopt;
  return c;
}

Result<void> storeCeilings(const DeviceCeilings &ceilings) {
  std::filesystem::path path = ceilingsCachePath(ceilings.device);
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  if (!writeFileAtomically(path, toJson(ceilings).dump(2) + "\n"))
    return makeError(ErrorKind::Io, "cannot write " + path.string());
  return {};
}

} // namespace ptxforge::verify
