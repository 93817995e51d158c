// Json: nlohmann-json encodings of CompileResult, ResourceUsage and SassStats.
#include "toolchain/Json.h"

#include <nlohmann/json.hpp>

#include <string>

namespace ptxforge::toolchain {

namespace {

/// -1 is the "not reported" marker of ResourceUsage; JSON says so with null.
nlohmann::json orNull(int value) { return value < 0 ? nlohmann::json(nullptr) : nlohmann::json(value); }

template <typename Map> nlohmann::json keyedByString(const Map &map) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto &[key, value] : map)
    object[std::to_string(key)] = value;
  return object;
}

} // namespace

nlohmann::json toJson(const ptx::Diagnostic &diagnostic) {
  return {{"code", diagnostic.code},       {"severity", ptx::severityName(diagnostic.severity)},
          {"line", diagnostic.line},       {"column", diagnostic.column},
          {"message", diagnostic.message}, {"hint", diagnostic.hint}};
}

nlohmann::json toJson(const std::vector<ptx::Diagnostic> &diagnostics) {
  nlohmann::json array = nlohmann::json::array();
  for (const ptx::Diagnostic &diagnostic : diagnostics)
    array.push_back(toJson(diagnostic));
  return array;
}

nlohmann::json toJson(const ResourceUsage &resources) {
  return {{"function", resources.function},
          {"entry", resources.isEntry},
          {"known", resources.known},
          {"registers", orNull(resources.registers)},
          {"barriers", resources.barriers},
          {"stack_frame_bytes", resources.stackFrameBytes},
          {"cumulative_stack_bytes", resources.cumulativeStackBytes},
          {"spill_store_bytes", resources.spillStoreBytes},
          {"spill_load_bytes", resources.spillLoadBytes},
          {"shared_bytes", resources.sharedBytes},
          {"local_bytes", resources.localBytes},
          {"constant_bytes", orNull(resources.constantBytes)},
          {"other_constant_banks", keyedByString(resources.otherConstantBanks)}};
}

nlohmann::json toJson(const ModuleResources &module) {
  return {{"gmem_bytes", module.globalBytes}, {"constant_banks", keyedByString(module.constantBanks)}};
}

nlohmann::json toJson(const SassCounts &counts) {
  return {{"instructions", counts.instructions},
          {"opcodes", counts.opcodes},
          {"spill_loads", counts.spillLoads},
          {"spill_stores", counts.spillStores},
          {"global_load_widths", keyedByString(counts.globalLoadWidths)},
          {"global_store_widths", keyedByString(counts.globalStoreWidths)},
          {"ffma", counts.ffma},
          {"fmul", counts.fmul},
          {"fadd", counts.fadd},
          {"tensor_core_ops", counts.tensorCoreOps},
          {"barriers", counts.barriers}};
}

nlohmann::json toJson(const SassStats &stats) {
  nlohmann::json document = toJson(stats.total);
  document["arch"] = stats.arch;
  document["producer"] = stats.producer;
  nlohmann::json functions = nlohmann::json::object();
  for (const auto &[name, counts] : stats.functions)
    functions[name] = toJson(counts);
  document["functions"] = std::move(functions);
  return document;
}

nlohmann::json toJson(const OtherBackendRegisters &other) {
  return {{"backend", other.backend},
          {"registers", orNull(other.registers)},
          {"differs", other.differs},
          {"reason", other.reason},
          {"reason_confirmed", other.reasonConfirmed}};
}

nlohmann::json toJson(const CompileResult &result) {
  nlohmann::json functions = nlohmann::json::array();
  for (const ResourceUsage &usage : result.functions)
    functions.push_back(toJson(usage));
  nlohmann::json document = {{"ok", result.ok},
          {"backend", result.backend},
          {"arch", result.arch},
          {"kernel", result.kernelName},
          {"compile_ms", result.compileMs},
          {"diagnostics", toJson(result.diagnostics)},
          {"resources", toJson(result.resources)},
          {"functions", std::move(functions)},
          {"module", toJson(result.module)},
          {"advisories", result.advisories},
          {"cubin_bytes", result.cubin.size()},
          {"tool_version", result.toolVersion},
          {"info_log", result.infoLog},
          {"error_log", result.errorLog}};
  // Only where compareWithOtherBackend ran (`compile`): other documents keep their shape.
  if (result.otherBackend) document["other_backend"] = toJson(*result.otherBackend);
  return document;
}

} // namespace ptxforge::toolchain
