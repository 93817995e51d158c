// Implementation of `ptxforge tasks`, `ptxforge task show` and `ptxforge task audit`.
#include "TaskCommands.h"

#include "GateOptions.h"
#include "Output.h"
#include "tasks/Expression.h"
#include "tasks/TaskSpec.h"
#include "serve/Api.h"
#include "verify/Audit.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::cli {

namespace {

/// Keys in insertion order, so that "name" comes first as in task.toml.
using Json = nlohmann::ordered_json;

struct TaskOptions {
  std::vector<std::string> tasksDirs;
  int level = 0; ///< 0: every level
  std::string format = "text";
  std::string name; ///< `task show NAME`
};

/// Every broken folder on stderr, its located errors indented under it.
void reportBroken(const std::vector<tasks::TaskLoadError> &errors) {
  std::cout.flush(); // keep the listing before the errors when both go to one terminal or file
  for (const tasks::TaskLoadError &broken : errors) {
    fmt::print(stderr, "ptxforge: error: broken task {}:\n", broken.folder.string());
    std::string_view message = broken.error.message;
    while (!message.empty()) {
      size_t newline = message.find('\n');
      std::string_view line = message.substr(0, newline);
      if (!line.empty()) fmt::print(stderr, "  {}\n", line);
      if (newline == std::string_view::npos) break;
      message.remove_prefix(newline + 1);
    }
  }
  if (!errors.empty())
    fmt::print(stderr, "{} broken task folder{}\n", errors.size(), errors.size() == 1 ? "" : "s");
}

bool isSmall(const tasks::TaskSpec &task, size_t index) {
  return std::find(task.smallShapes.begin(), task.smallShapes.end(), index) != task.smallShapes.end();
}

std::string joined(const std::vector<std::string> &items, std::string_view separator) {
  return fmt::format("{}", fmt::join(items, separator));
}

const char *cTypeName(tasks::ElementType type) {
  switch (type) {
  case tasks::ElementType::F32: return "float";
  case tasks::ElementType::F64: return "double";
  case tasks::ElementType::F16: return "__half";
  case tasks::ElementType::BF16: return "__nv_bfloat16";
  case tasks::ElementType::I8: return "signed char";
  case tasks::ElementType::U8: return "unsigned char";
  case tasks::ElementType::I32: return "int";
  case tasks::ElementType::U32: return "unsigned";
  case tasks::ElementType::I64: return "long long";
  case tasks::ElementType::U64: return "unsigned long long";
  case tasks::ElementType::E4M3: return "__nv_fp8_e4m3";
  }
  return "?";
}

/// `extern "C" __global__ void saxpy(const float* x, float* y, float a, int n)`
std::string signatureLine(const tasks::TaskSpec &task) {
  std::vector<std::string> params;
  for (const tasks::ParamSpec &param : task.params) {
    if (param.tensorMap)
      params.push_back("const __grid_constant__ CUtensorMap " + param.name);
    else if (param.isPointer)
      params.push_back(fmt::format("{}{}* {}", param.role == tasks::ParamRole::Input ? "const " : "",
                                   cTypeName(param.type), param.name));
    else
      params.push_back(fmt::format("{} {}", cTypeName(param.type), param.name));
  }
  return fmt::format("extern \"C\" __global__ void {}({})", task.kernel, joined(params, ", "));
}

std::string initText(const tasks::InitSpec &init) {
  std::string name = tasks::initDistributionName(init.distribution);
  std::string text;
  switch (init.distribution) {
  case tasks::InitDistribution::Uniform: text = fmt::format("{} [{}, {})", name, init.min, init.max); break;
  case tasks::InitDistribution::Int: text = fmt::format("{} [{}, {}]", name, init.min, init.max); break;
  case tasks::InitDistribution::Normal: text = fmt::format("{} mean={} stddev={}", name, init.mean, init.stddev); break;
  case tasks::InitDistribution::Const: text = fmt::format("{} {}", name, init.value); break;
  case tasks::InitDistribution::Iota: text = name; break;
  case tasks::InitDistribution::IndexMod: text = fmt::format("{} {}", name, init.modulus); break;
  }
  return init.given ? text : text + " (default)";
}

/// Rows of cells rendered with left-aligned, space-padded columns.
std::string tableText(const std::vector<std::vector<std::string>> &rows) {
  std::vector<size_t> widths;
  for (const auto &row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  std::string out;
  for (const auto &row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back(); // an empty last cell
    out += line + "\n";
  }
  return out;
}

/// The listing fits this many columns: the tags are cut to fit.
constexpr size_t kListWidth = 100;

/// The `tasks` table: name, level, shape count, the first (timed) shape and
/// the tags, cut to kListWidth columns; `task show` and --format json have the rest.
std::string listText(const std::vector<const tasks::TaskSpec *> &selected) {
  std::vector<std::vector<std::string>> rows = {{"NAME", "LEVEL", "SHAPES", "FIRST SHAPE", "TAGS"}};
  for (const tasks::TaskSpec *task : selected)
    rows.push_back({task->name, fmt::format("L{}", task->level),
                    fmt::format("{} ({} small)", task->shapes.size(), task->smallShapes.size()),
                    task->shapes.empty() ? std::string("-") : tasks::compactShape(*task, task->shapes.front()),
                    joined(task->tags, ",")});
  std::string out;
  std::string table = tableText(rows);
  for (size_t start = 0; start < table.size();) {
    size_t end = table.find('\n', start);
    std::string line = table.substr(start, end - start);
    if (line.size() > kListWidth) line = line.substr(0, kListWidth - 3) + "...";
    out += line + "\n";
    start = end + 1;
  }
  return out + fmt::format("{} task{}\n", selected.size(), selected.size() == 1 ? "" : "s");
}

int runList(const TaskOptions &options) {
  Result<tasks::Suite> suite = loadSuite(options.tasksDirs);
  if (!suite) return fail(options.format, suite.error());
  std::vector<const tasks::TaskSpec *> selected;
  for (const tasks::TaskSpec &task : suite->tasks)
    if (options.level == 0 || task.level == options.level) selected.push_back(&task);
  if (options.format == "json") {
    Json out = Json::array();
    for (const tasks::TaskSpec *task : selected) out.push_back(serve::taskJson(*task));
    std::cout << out.dump(2) << '\n';
  } else {
    std::cout << listText(selected);
  }
  reportBroken(suite->errors);
  return suite->errors.empty() ? kExitOk : kExitErrors;
}

std::string showText(const tasks::TaskSpec &task) {
  std::string out = fmt::format("task {} (level {})\n", task.name, task.level);
  out += fmt::format("  {}\n", task.description);
  if (!task.hints.empty()) out += fmt::format("hints:     {}\n", task.hints); // how the reference does it
  out += fmt::format("folder:    {}\n", task.folder.string());
  if (!task.tags.empty()) out += fmt::format("tags:      {}\n", joined(task.tags, ", "));
  out += fmt::format("signature: {}\n", signatureLine(task));

  out += "params:\n";
  std::vector<std::vector<std::string>> rows;
  for (const tasks::ParamSpec &param : task.params) {
    std::vector<std::string> row = {"  " + param.name, serve::paramTypeText(param), tasks::paramRoleName(param.role)};
    if (param.isPointer) {
      row.push_back("count=" + tasks::toString(param.count));
      row.push_back(param.role == tasks::ParamRole::Output ? std::string() : "init=" + initText(param.init));
    } else {
      row.push_back("value=" + serve::scalarValueText(param));
      row.push_back("");
    }
    rows.push_back(std::move(row));
  }
  out += tableText(rows);

  out += fmt::format("shapes:    ({}; * small)\n", joined(task.symbols, ", "));
  for (size_t i = 0; i < task.shapes.size(); ++i)
    out += fmt::format("  [{}] {}{}\n", i, tasks::compactShape(task, task.shapes[i]), isSmall(task, i) ? " *" : "");

  out += "tolerance: |got - want| <= atol + rtol * |want|\n";
  for (const tasks::ParamSpec &param : task.params) {
    if (!param.isOutput()) continue;
    tasks::Tolerance tolerance = tasks::toleranceFor(task, param.type);
    bool exact = !tasks::isFloatingType(param.type) && !tolerance.atolGiven;
    if (exact)
      out += fmt::format("  {} ({}): exact\n", param.name, tasks::elementTypeName(param.type));
    else
      out += fmt::format("  {} ({}): atol={:g}{} rtol={:g}{}\n", param.name, tasks::elementTypeName(param.type),
                         tolerance.atol, tolerance.atolGiven ? "" : " (default)", tolerance.rtol,
                         tolerance.rtolGiven ? "" : " (default)");
  }

  out += "cost:\n";
  out += fmt::format("  flops = {}\n", task.cost.flops ? tasks::toString(*task.cost.flops) : std::string("unknown"));
  out += fmt::format("  bytes = {}\n", task.cost.bytes ? tasks::toString(*task.cost.bytes) : std::string("unknown"));

  auto dims = [](const std::array<tasks::Expression, 3> &expressions) {
    return fmt::format("({}, {}, {})", tasks::toString(expressions[0]), tasks::toString(expressions[1]),
                       tasks::toString(expressions[2]));
  };
  out += fmt::format("launch:    block={} grid={} smem={}\n", dims(task.launch.block), dims(task.launch.grid),
                     tasks::toString(task.launch.smem));

  out += fmt::format("\nreference ({}):\n", (task.folder / "reference.cu").string());
  out += task.referenceSource;
  if (!task.referenceSource.empty() && task.referenceSource.back() != '\n') out += '\n';
  return out;
}

/// The broken folders called `name`, as text on stderr or one JSON error.
int reportBrokenTask(const TaskOptions &options, const std::vector<tasks::TaskLoadError> &matching) {
  if (options.format != "json") {
    reportBroken(matching);
    return kExitErrors;
  }
  nlohmann::json broken = nlohmann::json::array();
  for (const tasks::TaskLoadError &error : matching)
    broken.push_back({{"folder", error.folder.string()}, {"error", render(error.error)}});
  return fail(options.format, makeError(ErrorKind::InvalidInput, "broken-task", "'" + options.name + "'"),
              kExitErrors, {{"broken", broken}});
}

int runShow(const TaskOptions &options) {
  Result<tasks::Suite> suite = loadSuite(options.tasksDirs);
  if (!suite) return fail(options.format, suite.error());
  // A broken folder of that name: its errors are the answer.
  std::vector<tasks::TaskLoadError> matching;
  for (const tasks::TaskLoadError &broken : suite->errors)
    if (broken.folder.filename() == options.name) matching.push_back(broken);
  Result<const tasks::TaskSpec *> found = findTask(*suite, options.name);
  if (!found && !matching.empty()) return reportBrokenTask(options, matching);
  if (!found) return fail(options.format, found.error(), kExitUsage, {{"task", options.name}});
  if (options.format == "json") {
    Json out = serve::taskJson(**found);
    out["reference"] = (*found)->referenceSource;
    std::cout << out.dump(2) << '\n';
  } else {
    std::cout << showText(**found);
  }
  return kExitOk;
}

void addTasksDir(CLI::App *command, TaskOptions &options) {
  command->add_option("--tasks-dir", options.tasksDirs,
                      "Extra task search root, searched before $PTXFORGE_TASKS_DIR and the built-in suite "
                      "(repeatable)");
}

/// `task audit`: the gate flags it takes, and its own.
struct AuditCli {
  GateFlags gate;
  std::vector<std::string> names;
  uint64_t seed = verify::AuditOptions{}.seed;
  bool noMutants = false;
};

/// The audit table: one row per task, then every finding, note and mutant
/// that was not caught, so that a failing CI log says what to fix.
std::string auditTable(const std::vector<verify::AuditReport> &reports) {
  std::vector<std::vector<std::string>> rows = {{"TASK", "SHAPES", "TRIALS", "FINDINGS", "NOTES", "MUTANTS", "RESULT"}};
  for (const verify::AuditReport &report : reports) {
    size_t caught = static_cast<size_t>(
        std::count_if(report.mutants.begin(), report.mutants.end(), [](const auto &m) { return m.caught; }));
    rows.push_back({report.task, std::to_string(report.shapes.size()), std::to_string(report.trials),
                    std::to_string(report.findingCount()), std::to_string(report.noteCount()),
                    report.mutants.empty() ? std::string("none") : fmt::format("{}/{} caught", caught, report.mutants.size()),
                    report.passed() ? "ok" : "FAIL"});
  }
  std::string out = tableText(rows);
  for (const verify::AuditReport &report : reports) {
    std::string details = verify::formatText(report);
    if (!details.empty()) out += "\n" + details;
  }
  size_t failed = static_cast<size_t>(
      std::count_if(reports.begin(), reports.end(), [](const verify::AuditReport &r) { return !r.passed(); }));
  return out + fmt::format("\n{} task{} audited, {} failed\n", reports.size(), reports.size() == 1 ? "" : "s", failed);
}

int runAudit(const AuditCli &cli) {
  const std::string &format = cli.gate.format;
  Result<tasks::Suite> suite = loadSuite(cli.gate.tasksDirs);
  if (!suite) return fail(format, suite.error());
  Result<std::vector<const tasks::TaskSpec *>> selected = selectTasks(*suite, cli.names, 0);
  if (!selected) return fail(format, selected.error());
  std::string unavailable;
  std::unique_ptr<exec::Executor> executor = createExecutor(cli.gate.executor, unavailable);
  if (!executor) return fail(format, makeError(ErrorKind::ToolMissing, "task audit needs an executor: " + unavailable));
  verify::AuditOptions options;
  options.arch = cli.gate.arch;
  options.seed = cli.seed;
  options.mutants = !cli.noMutants;
  options.launchTimeoutMs = cli.gate.launchTimeoutMs;
  std::vector<verify::AuditReport> reports;
  for (const tasks::TaskSpec *task : *selected) {
    Result<verify::AuditReport> report = verify::auditTask(*task, *executor, options);
    if (!report) return fail(format, report.error(), kExitUsage, {{"task", task->name}});
    reports.push_back(std::move(*report));
  }
  bool passed = std::all_of(reports.begin(), reports.end(), [](const verify::AuditReport &r) { return r.passed(); });
  if (format == "json") {
    nlohmann::json all = nlohmann::json::array();
    for (const verify::AuditReport &report : reports) all.push_back(verify::toJson(report));
    std::cout << nlohmann::json{{"passed", passed}, {"device", executor->properties().name}, {"tasks", all}}.dump(2)
              << '\n';
  } else {
    std::cout << auditTable(reports);
  }
  return passed ? kExitOk : kExitErrors;
}

} // namespace

void registerTaskCommands(CLI::App &app, int &exitCode) {
  // The options live as long as the callbacks that own them (the app's subcommands).
  auto options = std::make_shared<TaskOptions>();

  CLI::App *list = app.add_subcommand("tasks", "List the task suite (built-in, --tasks-dir, $PTXFORGE_TASKS_DIR)");
  addTasksDir(list, *options);
  list->add_option("--level", options->level, "Only tasks of this level (1 memory-bound, 2 reductions, 3 compute)")
      ->check(CLI::Range(1, 3));
  addFormatFlag(list, options->format);
  list->callback([options, &exitCode] { exitCode = runList(*options); });

  CLI::App *task = app.add_subcommand("task", "Inspect one task");
  task->require_subcommand(1);
  CLI::App *show = task->add_subcommand("show", "Print a task's spec and its reference kernel");
  show->add_option("name", options->name, "Task name (see `ptxforge tasks`)")->required();
  addTasksDir(show, *options);
  addFormatFlag(show, options->format);
  show->callback([options, &exitCode] { exitCode = runShow(*options); });

  auto audit = std::make_shared<AuditCli>();
  CLI::App *auditCommand = task->add_subcommand(
      "audit", "Check that tasks discriminate: reference outputs not degenerate, every mutant judged wrong");
  auditCommand->add_option("names", audit->names, "Task names (default: every task)");
  addGateFlags(auditCommand, audit->gate, kArchFlag | kTimeoutFlag | kExecutorFlag | kTasksDirFlag | kFormatFlag);
  auditCommand->add_option("--seed", audit->seed, "Input seed of the reference runs and the mutants' checks")
      ->capture_default_str();
  auditCommand->add_flag("--no-mutants", audit->noMutants, "Audit the reference's outputs only");
  auditCommand->callback([audit, &exitCode] { exitCode = runAudit(*audit); });
}

} // namespace ptxforge::cli
