// Json: the toolchain's results as JSON documents, the shape the CLI and the
// result store emit ({ok, diagnostics, resources, sass, compile_ms, ...}).
#pragma once

#include "ptx/Diagnostic.h"
#include "toolchain/Compiler.h"
#include "toolchain/SassStats.h"

#include <nlohmann/json_fwd.hpp>

#include <vector>

namespace ptxforge::toolchain {

/// {code, severity, line, column, message, hint}
nlohmann::json toJson(const ptx::Diagnostic &diagnostic);
/// Array of toJson(Diagnostic).
nlohmann::json toJson(const std::vector<ptx::Diagnostic> &diagnostics);
/// {function, entry, known, registers, barriers, stack_frame_bytes, ...};
/// values that were not reported (-1) are null.
nlohmann::json toJson(const ResourceUsage &resources);
/// {gmem_bytes, constant_banks: {"3": bytes}}
nlohmann::json toJson(const ModuleResources &module);
/// {instructions, opcodes, spill_loads, ..., global_load_widths: {"128": n}}
nlohmann::json toJson(const SassCounts &counts);
/// toJson(total) plus {arch, producer, functions: {name: counts}}
nlohmann::json toJson(const SassStats &stats);
/// {ok, backend, arch, kernel, compile_ms, diagnostics, resources, functions,
///  module, advisories, cubin_bytes, tool_version, info_log, error_log}
nlohmann::json toJson(const CompileResult &result);
/// {backend, registers, differs, reason, reason_confirmed}; in a CompileResult's
/// document as "other_backend" when compareWithOtherBackend filled it.
nlohmann::json toJson(const OtherBackendRegisters &other);

} // namespace ptxforge::toolchain
