// ptxforge._core: the nanobind extension behind the Python package. It binds
// the `serve` library's JSON operations (serve/Api.h), so that Python gets the
// very documents `ptxforge serve` answers with: JSON text crosses the boundary
// in both directions and the pure-Python layer (ptxforge/) turns it into
// dicts and raises ptxforge.Error for every reply that is not a 200.
#include "serve/Api.h"
#include "serve/Gate.h"
#include "tasks/Reference.h"
#include "tasks/TaskSpec.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;
using namespace ptxforge;

namespace {

/// What every operation hands back to Python: the HTTP status the service
/// would answer with, and the body as JSON text.
using StatusAndJson = std::pair<int, std::string>;

StatusAndJson toPython(const serve::Reply &reply) { return {reply.status, reply.body.dump()}; }

/// The body of a request given as JSON text; a 400 reply when it is not a JSON object.
serve::Reply parseBody(const std::string &text, nlohmann::json &body) {
  body = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded())
    return serve::errorReply(400, "bad-json", "the request body is not valid JSON");
  if (!body.is_object())
    return serve::errorReply(400, "bad-request", "the request body must be a JSON object");
  return serve::Reply{};
}

/// An error raised as ptxforge.Error (built by the translator below) where an
/// operation cannot answer with a reply: a constructor.
struct GateFailure {
  int status;
  std::string kind, code, message;
};

GateFailure failureOf(const serve::Reply &reply) {
  const nlohmann::json &error = reply.body.value("error", nlohmann::json::object());
  return {reply.status, error.value("kind", "internal"), error.value("code", ""), error.value("message", "")};
}

/// One Engine per Python object: it owns the suite that serve::Engine refers
/// to, so the suite lives exactly as long as the engine that checks against it.
class PyEngine {
public:
  PyEngine(const std::string &executor, int device, bool sanitizer, const std::vector<std::string> &tasksDirs) {
    Result<tasks::Suite> loaded = serve::loadSuite(tasksDirs);
    if (!loaded)
      throw failureOf(serve::errorReply(loaded.error()));
    suite_ = std::make_unique<tasks::Suite>(std::move(loaded).value());
    serve::Gate::Options options;
    options.executor = executor;
    options.deviceOrdinal = device;
    options.sanitizer = sanitizer;
    {
      // Starting the executors spawns worker processes: no Python needed.
      nb::gil_scoped_release release;
      engine_ = std::make_unique<serve::Engine>(*suite_, options);
    }
  }

  StatusAndJson check(const std::string &bodyText) {
    nb::gil_scoped_release release; // a check runs for milliseconds to minutes
    nlohmann::json body;
    if (serve::Reply bad = parseBody(bodyText, body); !bad.ok())
      return toPython(bad);
    return toPython(engine_->check(body));
  }

  StatusAndJson reward(const std::string &bodyText) {
    nb::gil_scoped_release release;
    nlohmann::json body;
    if (serve::Reply bad = parseBody(bodyText, body); !bad.ok())
      return toPython(bad);
    return toPython(engine_->reward(body));
  }

  std::string tasks() const { return nlohmann::json(serve::tasksJson(*suite_)).dump(); }

  StatusAndJson task(const std::string &name) const { return toPython(engine_->task(name)); }

  /// {"task", "arch", "ptx"}: the task's trusted reference compiled by NVRTC (cached on disk).
  StatusAndJson reference(const std::string &name, const std::string &arch) const {
    Result<const tasks::TaskSpec *> task = serve::findTask(*suite_, name);
    if (!task)
      return toPython(serve::errorReply(task.error()));
    Result<tasks::CompiledReference> compiled = [&] {
      nb::gil_scoped_release release;
      return tasks::compileReference(**task, arch);
    }();
    if (!compiled)
      return toPython(serve::errorReply(compiled.error()));
    nlohmann::json body = {{"task", name}, {"arch", arch}, {"ptx", compiled->ptx}};
    return {200, body.dump()};
  }

  std::string device() const { return engine_->gate().device(); }
  bool emulated() const { return engine_->gate().emulated(); }
  bool hasExecutor() const { return engine_->gate().hasExecutor(); }

private:
  std::unique_ptr<tasks::Suite> suite_;
  std::unique_ptr<serve::Engine> engine_;
};

StatusAndJson lint(const std::string &ptx) {
  nb::gil_scoped_release release;
  return toPython(serve::lintJson({{"ptx", ptx}}));
}

StatusAndJson compile(const std::string &ptx, const std::string &arch) {
  nb::gil_scoped_release release; // a compile runs in a worker process
  nlohmann::json body = {{"ptx", ptx}};
  if (!arch.empty())
    body["arch"] = arch;
  return toPython(serve::compileJson(body));
}

StatusAndJson extractPtx(const std::string &answer) {
  nb::gil_scoped_release release;
  return toPython(serve::extractJson({{"answer", answer}}));
}

} // namespace

NB_MODULE(_core, m) {
  m.doc() = "ptxforge's verification gate (the serve library), JSON text in and out";

  // GateFailure becomes ptxforge.Error, the one exception type of the package.
  nb::register_exception_translator([](const std::exception_ptr &failure, void *) {
    try {
      std::rethrow_exception(failure);
    } catch (const GateFailure &gate) {
      nb::object errorType = nb::module_::import_("ptxforge._errors").attr("Error");
      nb::object error = errorType(gate.status, gate.kind, gate.code, gate.message);
      PyErr_SetObject(errorType.ptr(), error.ptr());
    }
  });

  m.def("lint", &lint, nb::arg("ptx"), "lint's JSON document: (status, json)");
  m.def("compile", &compile, nb::arg("ptx"), nb::arg("arch") = "", "compile's JSON document: (status, json)");
  m.def("extract_ptx", &extractPtx, nb::arg("answer"),
        "The PTX module of a model's answer: (status, json); 400 'no-ptx' when there is none");
  m.def("builtin_tasks_dir", [] { return tasks::builtinTasksDir().string(); },
        "Where the build found the built-in suite (the source tree's tasks/)");

  nb::class_<PyEngine>(m, "Engine")
      .def(nb::init<const std::string &, int, bool, const std::vector<std::string> &>(),
           nb::arg("executor") = "auto", nb::arg("device") = 0, nb::arg("sanitizer") = true,
           nb::arg("tasks_dirs") = std::vector<std::string>{})
      .def("check", &PyEngine::check, nb::arg("body_json"), "A check body -> (status, check document)")
      .def("reward", &PyEngine::reward, nb::arg("body_json"), "A check body plus weights -> (status, reward)")
      .def("tasks", &PyEngine::tasks, "{\"tasks\": [...]} as JSON")
      .def("task", &PyEngine::task, nb::arg("name"), "One task: (status, json)")
      .def("reference", &PyEngine::reference, nb::arg("name"), nb::arg("arch") = "sm_90",
           "The task's reference PTX: (status, {task, arch, ptx})")
      .def_prop_ro("device", &PyEngine::device)
      .def_prop_ro("emulated", &PyEngine::emulated)
      .def_prop_ro("has_executor", &PyEngine::hasExecutor);
}
