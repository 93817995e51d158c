// Small AST helpers: state-space names and target-name decoding.
#include "ptx/Ast.h"

#include <cctype>

namespace ptxforge::ptx {

const char *stateSpaceName(StateSpace space) {
  switch (space) {
  case StateSpace::Reg: return "reg";
  case StateSpace::Sreg: return "sreg";
  case StateSpace::Const: return "const";
  case StateSpace::Global: return "global";
  case StateSpace::Local: return "local";
  case StateSpace::Param: return "param";
  case StateSpace::Shared: return "shared";
  case StateSpace::Tex: return "tex";
  case StateSpace::None: return "";
  }
  return "";
}

uint32_t targetSmNumber(const std::string &target) {
  size_t underscore = target.find('_');
  if (underscore == std::string::npos) return 0;
  std::string prefix = target.substr(0, underscore);
  if (prefix != "sm" && prefix != "compute") return 0;
  uint32_t value = 0;
  size_t i = underscore + 1;
  if (i >= target.size() || !std::isdigit(static_cast<unsigned char>(target[i]))) return 0;
  for (; i < target.size() && std::isdigit(static_cast<unsigned char>(target[i])); ++i)
    value = value * 10 + static_cast<uint32_t>(target[i] - '0');
  return value;
}

static char targetSuffix(const std::string &target) {
  if (targetSmNumber(target) == 0 || target.empty()) return 0;
  char last = target.back();
  return std::isdigit(static_cast<unsigned char>(last)) ? 0 : last;
}

bool targetIsArchSpecific(const std::string &target) { return targetSuffix(target) == 'a'; }
bool targetIsFamilySpecific(const std::string &target) { return targetSuffix(target) == 'f'; }

std::string compileArchFor(const Module &module, const std::string &arch) {
  if (targetSuffix(arch) != 0) return arch; // asked for sm_90a or sm_100f: as asked
  for (const std::string &target : module.targets)
    if (target.rfind("sm_", 0) == 0 && (targetIsArchSpecific(target) || targetIsFamilySpecific(target)) &&
        targetSmNumber(target) == targetSmNumber(arch))
      return target;
  return arch;
}

} // namespace ptxforge::ptx
