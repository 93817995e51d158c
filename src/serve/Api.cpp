// See Api.h.
#include "serve/Api.h"

#include "ptx/Lint.h"
#include "ptx/Parser.h"
#include "tasks/Expression.h"
#include "toolchain/Compiler.h"
#include "toolchain/Json.h"

#include <fmt/format.h>

namespace ptxforge::serve {

namespace {

using Json = nlohmann::ordered_json;

Json optionalExpressionJson(const std::optional<tasks::Expression> &expression) {
  if (!expression) return nullptr;
  return tasks::toString(*expression);
}

/// Reads the string member `key` of a request body.
Result<std::string> stringMember(const nlohmann::json &body, const char *key, bool required = true) {
  if (!body.is_object())
    return makeError(ErrorKind::InvalidInput, "bad-request",
                     fmt::format("the request must be a JSON object, not {}", body.type_name()));
  auto it = body.find(key);
  if (it == body.end()) {
    if (!required) return std::string();
    return makeError(ErrorKind::InvalidInput, "bad-request", fmt::format("'{}' is missing", key));
  }
  if (!it->is_string())
    return makeError(ErrorKind::InvalidInput, "bad-request",
                     fmt::format("'{}' must be a string, not {}", key, it->type_name()));
  return it->get<std::string>();
}

/// Unknown keys are errors, so that a typo is never silently ignored.
Result<void> onlyKeys(const nlohmann::json &body, std::initializer_list<const char *> known) {
  for (const auto &[key, value] : body.items()) {
    bool found = false;
    for (const char *k : known) found = found || key == k;
    if (!found) {
      std::string list;
      for (const char *k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return makeError(ErrorKind::InvalidInput, "bad-request", fmt::format("unknown key '{}' (known: {})", key, list));
    }
  }
  return {};
}

} // namespace

std::string paramTypeText(const tasks::ParamSpec &param) {
  if (param.tensorMap) return "tensormap";
  return std::string(tasks::elementTypeName(param.type)) + (param.isPointer ? "*" : "");
}

std::string scalarValueText(const tasks::ParamSpec &param) {
  if (param.tensorMap) return tasks::describeTensorMapParam(param);
  if (param.floatValue) return fmt::format("{}", *param.floatValue);
  return tasks::toString(param.value);
}

tasks::Tolerance effectiveTolerance(const tasks::TaskSpec &task) {
  for (const tasks::ParamSpec &param : task.params)
    if (param.isOutput()) return tasks::toleranceFor(task, param.type);
  return task.tolerance;
}

nlohmann::ordered_json taskJson(const tasks::TaskSpec &task) {
  Json shapes = Json::array();
  for (const tasks::Shape &shape : task.shapes) {
    Json object = Json::object();
    for (const std::string &symbol : task.symbols)
      if (auto it = shape.find(symbol); it != shape.end()) object[symbol] = it->second;
    shapes.push_back(std::move(object));
  }
  Json params = Json::array();
  for (const tasks::ParamSpec &param : task.params) {
    params.push_back({{"name", param.name},
                      {"type", paramTypeText(param)},
                      {"role", tasks::paramRoleName(param.role)},
                      {"count", param.isPointer ? Json(tasks::toString(param.count)) : Json(nullptr)},
                      {"value", param.isPointer ? Json(nullptr) : Json(scalarValueText(param))}});
  }
  auto dims = [](const std::array<tasks::Expression, 3> &expressions) {
    Json out = Json::array();
    for (const tasks::Expression &expression : expressions) out.push_back(tasks::toString(expression));
    return out;
  };
  tasks::Tolerance tolerance = effectiveTolerance(task);
  return {{"name", task.name},
          {"level", task.level},
          {"description", task.description},
          {"hints", task.hints},
          {"kernel", task.kernel},
          {"tags", task.tags},
          {"symbols", task.symbols},
          {"shapes", std::move(shapes)},
          {"small_shapes", task.smallShapes},
          {"params", std::move(params)},
          {"tolerance", {{"atol", tolerance.atol}, {"rtol", tolerance.rtol}}},
          {"cost", {{"flops", optionalExpressionJson(task.cost.flops)}, {"bytes", optionalExpressionJson(task.cost.bytes)}}},
          {"launch", {{"block", dims(task.launch.block)}, {"grid", dims(task.launch.grid)}, {"smem", tasks::toString(task.launch.smem)}}},
          {"folder", task.folder.string()}};
}

nlohmann::json tasksJson(const tasks::Suite &suite) {
  nlohmann::json list = nlohmann::json::array();
  for (const tasks::TaskSpec &task : suite.tasks)
    list.push_back({{"name", task.name},
                    {"level", task.level},
                    {"description", task.description},
                    {"kernel", task.kernel},
                    {"tags", task.tags}});
  return {{"tasks", std::move(list)}};
}

Reply errorReply(int status, std::string code, std::string message) {
  return {status, {{"error", {{"kind", "invalid-input"}, {"code", std::move(code)}, {"message", std::move(message)}}}}};
}

Reply errorReply(const Error &error) {
  int status = 400;
  if (error.code == "unknown-task") status = 404;
  else if (error.code == "client-gone") status = 499;
  else if (error.kind == ErrorKind::Internal || error.kind == ErrorKind::Io || error.kind == ErrorKind::ToolMissing)
    status = 500;
  nlohmann::json body = {{"kind", errorKindName(error.kind)}, {"code", error.code}, {"message", error.message}};
  if (error.line > 0) body["line"] = error.line;
  if (error.column > 0) body["column"] = error.column;
  return {status, {{"error", std::move(body)}}};
}

Reply lintJson(const nlohmann::json &body) {
  Result<std::string> ptx = stringMember(body, "ptx");
  if (!ptx) return errorReply(ptx.error());
  if (Result<void> keys = onlyKeys(body, {"ptx"}); !keys) return errorReply(keys.error());
  std::vector<ptx::Diagnostic> diagnostics = ptx::lintSource(*ptx);
  return {200, {{"ok", !ptx::hasErrors(diagnostics)}, {"diagnostics", toolchain::toJson(diagnostics)}}};
}

Reply compileJson(const nlohmann::json &body) {
  Result<std::string> ptx = stringMember(body, "ptx");
  if (!ptx) return errorReply(ptx.error());
  Result<std::string> arch = stringMember(body, "arch", false);
  if (!arch) return errorReply(arch.error());
  if (Result<void> keys = onlyKeys(body, {"ptx", "arch"}); !keys) return errorReply(keys.error());
  toolchain::CompileOptions options;
  // As `ptxforge compile`: `.target sm_90a` PTX is compiled for sm_90a when sm_90 is asked for.
  options.arch = ptx::compileArchFor(ptx::parse(*ptx).module, arch->empty() ? options.arch : *arch);
  Result<toolchain::CompileResult> compiled = toolchain::compilePtx(*ptx, options);
  if (!compiled) return errorReply(compiled.error());
  return {200, toolchain::toJson(*compiled)};
}

Reply extractJson(const nlohmann::json &body) {
  Result<std::string> answer = stringMember(body, "answer");
  if (!answer) return errorReply(answer.error());
  if (Result<void> keys = onlyKeys(body, {"answer"}); !keys) return errorReply(keys.error());
  Result<prompt::ExtractedPtx> extracted = prompt::extractPtx(*answer);
  if (!extracted) {
    Error error = extracted.error();
    if (error.code.empty()) error.code = "no-ptx";
    return errorReply(error);
  }
  return {200,
          {{"ptx", extracted->ptx},
           {"source", prompt::ptxSourceName(extracted->source)},
           {"first_line", extracted->firstLine},
           {"last_line", extracted->lastLine},
           {"candidate_blocks", extracted->candidateBlocks},
           {"notes", extracted->notes}}};
}

namespace {

/// The keys of a check body that belong to the service (Service::JobOptions), not to the check.
const std::vector<std::string> kServiceKeys = {"deadline_ms", "client"};

} // namespace

Reply Engine::check(const nlohmann::json &body, std::stop_token stop) {
  Result<CheckRequest> request = CheckRequest::fromJson(body, kServiceKeys);
  if (!request) return errorReply(request.error());
  Result<const tasks::TaskSpec *> task = findTask(suite_, request->task);
  if (!task) return errorReply(task.error());
  Result<AnswerCheck> checked = gate_.check(**task, *request, stop);
  if (!checked) return errorReply(checked.error());
  return {200, toJson(*checked)};
}

Reply Engine::reward(const nlohmann::json &body, std::stop_token stop) {
  nlohmann::json checkBody = body;
  nlohmann::json weightsJson = nullptr;
  if (checkBody.is_object())
    if (auto it = checkBody.find("weights"); it != checkBody.end()) {
      weightsJson = *it;
      checkBody.erase(it);
    }
  Result<RewardWeights> weights = RewardWeights::fromJson(weightsJson);
  if (!weights) return errorReply(weights.error());
  Result<CheckRequest> request = CheckRequest::fromJson(checkBody, kServiceKeys);
  if (!request) return errorReply(request.error());
  Result<const tasks::TaskSpec *> task = findTask(suite_, request->task);
  if (!task) return errorReply(task.error());
  Result<AnswerCheck> checked = gate_.check(**task, *request, stop);
  if (!checked) return errorReply(checked.error());
  nlohmann::json out = rewardJson(*checked, *weights);
  out["check"] = toJson(*checked);
  return {200, std::move(out)};
}

Reply Engine::task(const std::string &name) const {
  Result<const tasks::TaskSpec *> task = findTask(suite_, name);
  if (!task) return errorReply(task.error());
  return {200, nlohmann::json::parse(taskJson(**task).dump())};
}

} // namespace ptxforge::serve
