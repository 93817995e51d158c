// The forms of the memory instructions (see MemoryRules.h).
#include "ptx/MemoryRules.h"

#include <cstdint>
#include <string_view>

namespace ptxforge::ptx {

namespace {

constexpr std::string_view kOperations[] = {"add", "inc", "dec", "min", "max", "and", "or", "xor", "exch", "cas"};
constexpr std::string_view kTypes[] = {"b16", "b32",  "b64",  "b128", "u32",   "s32",    "u64", "s64",
                                       "f32", "f64", "f16", "bf16", "f16x2", "bf16x2", "u16", "s16",
                                       "u8",  "s8",  "b8"};

bool isHalf(std::string_view t) { return t == "f16" || t == "bf16" || t == "f16x2" || t == "bf16x2"; }

/// The scalar types `operation` takes (16-bit floats with `.noftz`).
std::string_view scalarTypes(std::string_view operation) {
  if (operation == "add") return ".u32, .s32, .u64, .f32, .f64, or .f16, .bf16, .f16x2, .bf16x2 with .noftz";
  if (operation == "inc" || operation == "dec") return ".u32";
  if (operation == "min" || operation == "max") return ".u32, .s32, .u64, .s64";
  if (operation == "and" || operation == "or" || operation == "xor") return ".b32, .b64";
  if (operation == "exch") return ".b32, .b64, .b128";
  return ".b16, .b32, .b64, .b128"; // cas
}

bool scalarAllows(std::string_view operation, std::string_view type) {
  std::string_view list = scalarTypes(operation);
  std::string dotted = "." + std::string(type);
  for (size_t at = list.find(dotted); at != std::string_view::npos; at = list.find(dotted, at + 1)) {
    size_t end = at + dotted.size();
    if (end == list.size() || list[end] == ',' || list[end] == ' ') return true;
  }
  return false;
}

/// The vector forms: `.add` of f32 (.v2, .v4), and `.add`/`.min`/`.max` of
/// 16-bit floats with `.noftz` (.v2, .v4, .v8 of f16/bf16; .v2, .v4 of the pairs).
bool vectorAllows(std::string_view operation, std::string_view type, uint32_t width) {
  if (operation == "add" && type == "f32") return width == 2 || width == 4;
  if (operation != "add" && operation != "min" && operation != "max") return false;
  if (type == "f16" || type == "bf16") return width == 2 || width == 4 || width == 8;
  if (type == "f16x2" || type == "bf16x2") return width == 2 || width == 4;
  return false;
}

/// A type of the same width that `operation` takes, for the hint; empty when none.
std::string sameWidthType(std::string_view operation, std::string_view type) {
  std::string_view digits = type.substr(type.find_first_of("0123456789"));
  bool isFloat = type[0] == 'f' || type.substr(0, 2) == "bf";
  std::string found;
  for (char prefix : std::string_view(isFloat ? "f" : "usb")) {
    std::string candidate = prefix + std::string(digits);
    if (candidate != type && scalarAllows(operation, candidate))
      found += (found.empty() ? "." : " or .") + candidate;
  }
  return found;
}

/// An atom/red's modifiers, sorted into their roles.
struct Form {
  std::string name; ///< "atom.global.add.f32"
  std::string_view operation, type;
  size_t operationIndex = SIZE_MAX, typeIndex = SIZE_MAX, vectorIndex = SIZE_MAX, noftzIndex = SIZE_MAX;
  size_t sharedIndex = SIZE_MAX, semIndex = SIZE_MAX;
  uint32_t width = 1;
  std::string_view sem;
};

std::optional<Form> readForm(const std::string &op, const std::vector<std::string> &modifiers) {
  Form f;
  f.name = op;
  for (size_t i = 0; i < modifiers.size(); ++i) {
    std::string_view m = modifiers[i];
    f.name += "." + modifiers[i];
    for (std::string_view o : kOperations)
      if (m == o && f.operationIndex == SIZE_MAX) f.operation = o, f.operationIndex = i;
    for (std::string_view t : kTypes)
      if (m == t) f.type = t, f.typeIndex = i;
    if (m == "v2" || m == "v4" || m == "v8") f.width = m[1] - '0', f.vectorIndex = i;
    if (m == "noftz") f.noftzIndex = i;
    if (m == "shared" || m.rfind("shared::", 0) == 0) f.sharedIndex = i;
    if (m == "relaxed" || m == "acquire" || m == "release" || m == "acq_rel" || m == "weak" || m == "volatile" ||
        m == "mmio")
      f.sem = m, f.semIndex = i;
  }
  if (f.operationIndex == SIZE_MAX || f.typeIndex == SIZE_MAX) return std::nullopt;
  return f;
}

} // namespace

std::optional<FormProblem> checkAtomic(const std::string &op, const std::vector<std::string> &modifiers) {
  std::optional<Form> form = readForm(op, modifiers);
  if (!form) return std::nullopt;
  const Form &f = *form;
  std::string operation(f.operation), type(f.type);
  if (f.semIndex != SIZE_MAX && (f.sem == "weak" || f.sem == "volatile" || f.sem == "mmio" ||
                                 (op == "red" && (f.sem == "acquire" || f.sem == "acq_rel"))))
    return FormProblem{f.semIndex, "`" + f.name + "`: `" + op + "` takes no `." + std::string(f.sem) + "`",
                       op == "red" ? "`red` is `.relaxed` (the default) or `.release`; for an acquire use `atom`"
                                   : "`atom` is `.relaxed` (the default), `.acquire`, `.release` or `.acq_rel`"};
  if (f.width > 1) {
    if (!vectorAllows(f.operation, f.type, f.width))
      return FormProblem{f.vectorIndex,
                         "`" + f.name + "`: there is no ." + std::string(modifiers[f.vectorIndex]) + " form of `" + op +
                             "." + operation + "." + type + "`",
                         "vector " + op + " is `.add` of .f32 (.v2, .v4), or `.add`/`.min`/`.max` with `.noftz` of "
                         ".f16/.bf16 (.v2, .v4, .v8) and .f16x2/.bf16x2 (.v2, .v4); otherwise one " + op +
                             " per element"};
    if (f.sharedIndex != SIZE_MAX)
      return FormProblem{f.sharedIndex, "`" + f.name + "`: vector " + op + " works on global memory only",
                         "use `" + op + ".global` (or a generic address), or one " + op + " per element"};
  } else if (!scalarAllows(f.operation, f.type)) {
    std::string alternative = sameWidthType(f.operation, f.type);
    return FormProblem{f.typeIndex,
                       "`" + f.name + "`: `." + operation + "` has no ." + type + " form; it takes " +
                           std::string(scalarTypes(f.operation)),
                       alternative.empty() ? "use one of those types"
                                           : "write the type as " + alternative + " (same bits)"};
  }
  if (isHalf(f.type) && f.noftzIndex == SIZE_MAX) {
    std::string fixed = op;
    for (size_t i = 0; i < modifiers.size(); ++i)
      fixed += "." + modifiers[i] + (i == f.operationIndex ? ".noftz" : "");
    return FormProblem{SIZE_MAX, "`" + f.name + "` needs `.noftz`: 16-bit float " + op + " keeps subnormals",
                       "did you mean `" + fixed + "`?"};
  }
  if (!isHalf(f.type) && f.noftzIndex != SIZE_MAX)
    return FormProblem{f.noftzIndex, "`" + f.name + "`: `.noftz` is only for 16-bit float types", "remove `.noftz`"};
  return std::nullopt;
}

std::optional<FormProblem> checkLoadStore(const std::string &op, const std::vector<std::string> &modifiers) {
  if (op != "ld" && op != "st") return std::nullopt;
  bool load = op == "ld";
  std::string name = op, space;
  for (const std::string &m : modifiers) {
    name += "." + m;
    if (m == "global" || m == "local" || m == "const" || m == "shared" || m.rfind("shared::", 0) == 0 ||
        m == "param" || m.rfind("param::", 0) == 0)
      space = m.substr(0, m.find("::"));
  }
  auto problem = [&](size_t i, const std::string &what, const std::string &hint) {
    return FormProblem{i, "`" + name + "`: " + what, hint};
  };
  if (!load && space == "const")
    return problem(SIZE_MAX, "constant memory is read-only", "store to global or shared memory");
  for (size_t i = 0; i < modifiers.size(); ++i) {
    const std::string &m = modifiers[i];
    if (load && (m == "wb" || m == "wt"))
      return problem(i, "`." + m + "` is a store cache operator; loads take .ca, .cg, .cs, .lu, .cv", "remove `." + m + "`");
    if (!load && (m == "ca" || m == "lu" || m == "cv"))
      return problem(i, "`." + m + "` is a load cache operator; stores take .wb, .cg, .cs, .wt", "remove `." + m + "`");
    if (m == "nc" && !load)
      return problem(i, "`.nc` (the non-coherent read-only path) is for loads", "remove `.nc`");
    if (m == "nc" && space != "global")
      return problem(i, "`.nc` reads global memory only", "write `ld.global.nc` (or drop `.nc`)");
    bool hint = m.rfind("L1::", 0) == 0 || m.rfind("L2::", 0) == 0;
    if (hint && !load && (m == "L2::64B" || m == "L2::128B" || m == "L2::256B"))
      return problem(i, "a prefetch size is for loads", "remove `." + m + "`");
    if (hint && m != "L2::cache_hint" && !space.empty() && space != "global")
      return problem(i, "`." + m + "` applies to global memory", "remove `." + m + "`");
    bool strong = m == "volatile" || m == "relaxed" || m == "acquire" || m == "release" || m == "mmio";
    if (strong && (space == "const" || space == "local" || space == "param"))
      return problem(i, "`." + m + "` orders global and shared memory, not " + space, "remove `." + m + "`");
    if ((load && m == "release") || (!load && m == "acquire"))
      return problem(i, load ? "a load does not release" : "a store does not acquire",
                     load ? "use `ld.acquire` (or a relaxed load followed by `fence.acq_rel`)"
                          : "use `st.release` (or `fence.acq_rel` followed by a relaxed store)");
  }
  return std::nullopt;
}

} // namespace ptxforge::ptx
