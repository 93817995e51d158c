"""The gate in this process: lint, compile, extract and check through
ptxforge._core on the emulator, and the errors a malformed request raises."""

from __future__ import annotations

import threading

import pytest

import ptxforge
from conftest import FAST, REPO, fenced


def test_lint_reports_errors_with_codes():
    clean = ptxforge.lint((REPO / "examples/saxpy.ptx").read_text())
    assert clean["ok"] is True
    broken = ptxforge.lint((REPO / "examples/broken.ptx").read_text())
    assert broken["ok"] is False
    codes = {d["code"] for d in broken["diagnostics"]}
    assert {"invalid-instruction-type", "undeclared-register"} <= codes


def test_compile_reports_resources(reference_ptx):
    compiled = ptxforge.compile(reference_ptx, "sm_90")
    assert compiled["ok"] is True
    assert compiled["arch"] == "sm_90"
    broken = ptxforge.compile(reference_ptx.replace("add.f32", "add.q32"), "sm_90")
    assert broken["ok"] is False


def test_extract_takes_the_fenced_block(reference_ptx):
    assert ptxforge.extract_ptx(fenced(reference_ptx)).strip() == reference_ptx.strip()
    document = ptxforge.extract(fenced(reference_ptx))
    assert document["first_line"] > 1
    with pytest.raises(ptxforge.Error) as raised:
        ptxforge.extract_ptx("I would write a kernel, but not today.")
    assert raised.value.status == 400 and raised.value.code == "no-ptx"


def test_reference_is_correct_on_the_emulator(engine, reference_ptx):
    document = engine.check("vector_add", ptx=reference_ptx, seed=7, **FAST)
    assert document["verdict"] == "correct", document["summary"]
    assert document["stage"] == "execute"
    provenance = document["provenance"]
    assert provenance["seed"] == 7 and provenance["task"] == "vector_add"
    assert "timings_ms" in document


def test_an_answer_is_extracted_then_checked(engine, reference_ptx):
    document = engine.check("vector_add", answer=fenced(reference_ptx), **FAST)
    assert document["verdict"] == "correct"
    assert "extracted" in document


def test_a_kernel_that_drops_the_tail_is_wrong(engine, wrong_ptx):
    document = engine.check("vector_add", ptx=wrong_ptx, **FAST)
    assert document["verdict"] == "wrong"
    assert "never written" in document["summary"]


def test_an_answer_without_ptx_is_a_verdict_not_an_error(engine):
    document = engine.check("vector_add", answer="Sorry, I cannot help with PTX.", **FAST)
    assert document["verdict"] == "no-ptx" and document["stage"] == "extract"


def test_module_level_check_uses_a_shared_engine(reference_ptx):
    document = ptxforge.check("vector_add", ptx=reference_ptx, executor="emu", **FAST)
    assert document["verdict"] == "correct"
    assert ptxforge.shared_engine("emu") is ptxforge.shared_engine("emu")


def test_the_reward_is_staged(engine, reference_ptx, wrong_ptx):
    good = engine.reward("vector_add", answer=fenced(reference_ptx), **FAST)
    assert good["verdict"] == "correct"
    assert good["reward"] == pytest.approx(0.8)  # extract + lint + compile + correct; no timing on the emulator
    assert good["check"]["verdict"] == "correct"
    bad = engine.reward("vector_add", ptx=wrong_ptx, weights={"correct": 1.0, "compile": 0.5}, **FAST)
    assert bad["verdict"] == "wrong"
    assert bad["reward"] == pytest.approx(0.05 + 0.05 + 0.5)
    assert bad["weights"]["compile"] == 0.5


@pytest.mark.parametrize(
    "options, status, code",
    [
        ({"trails": 3}, 400, "bad-request"),          # a typo is never ignored
        ({"trials": "three"}, 400, "bad-request"),    # nor a wrong type
        ({"shapes": "9"}, 400, None),                 # no such shape
    ],
)
def test_malformed_requests_raise(engine, reference_ptx, options, status, code):
    with pytest.raises(ptxforge.Error) as raised:
        engine.check("vector_add", ptx=reference_ptx, **options)
    assert raised.value.status == status
    if code:
        assert raised.value.code == code
    assert raised.value.message


def test_unknown_task_is_404_with_a_suggestion(engine, reference_ptx):
    with pytest.raises(ptxforge.Error) as raised:
        engine.check("vector_ad", ptx=reference_ptx)
    assert raised.value.status == 404 and raised.value.code == "unknown-task"
    assert "vector_add" in raised.value.message
    with pytest.raises(ptxforge.Error):
        engine.task("no_such_task_at_all")


def test_a_body_that_is_not_an_object_is_400(engine):
    with pytest.raises(ptxforge.Error) as raised:
        engine.check_body({"ptx": ".version 9.0"})  # no task
    assert raised.value.status == 400
    status, text = engine._native.check("[1, 2]")
    assert status == 400 and "object" in text
    status, _ = engine._native.check("{not json")
    assert status == 400


def test_tasks_list_the_suite(engine):
    names = {task["name"] for task in engine.tasks()}
    assert {"vector_add", "saxpy", "sgemm"} <= names
    assert engine.task("saxpy")["name"] == "saxpy"


def test_a_bad_tasks_dir_is_an_error():
    with pytest.raises(ptxforge.Error):
        ptxforge.Engine(executor="emu", tasks_dirs=["/nonexistent/ptxforge-tasks"])


def test_threads_share_an_engine_pool(reference_ptx, wrong_ptx):
    pool = ptxforge.EnginePool(size=2, executor="emu")
    verdicts = {}

    def run(index, ptx):
        verdicts[index] = pool.check("vector_add", ptx=ptx, **FAST)["verdict"]

    threads = [threading.Thread(target=run, args=(i, reference_ptx if i % 2 == 0 else wrong_ptx)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert verdicts == {0: "correct", 1: "wrong", 2: "correct", 3: "wrong"}


def test_error_is_picklable():
    import pickle

    error = ptxforge.Error(429, "io", "queue-full", "try later")
    again = pickle.loads(pickle.dumps(error))
    assert (again.status, again.kind, again.code, again.message) == (429, "io", "queue-full", "try later")


def test_an_installed_package_uses_its_own_workers_and_suite(monkeypatch, tmp_path):
    """What ptxforge/_paths.py does for a wheel: the workers in ptxforge/bin
    unless the variables are set, and the copied suite only in place of a
    built-in suite that is gone."""
    from ptxforge import _paths

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("ptxforge_exec_worker", "ptxforge_compile_worker"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(_paths, "INSTALLED_BIN_DIR", bin_dir)
    monkeypatch.delenv("PTXFORGE_EXEC_WORKER", raising=False)
    monkeypatch.setenv("PTXFORGE_COMPILE_WORKER", "/chosen/by/the/user")
    _paths.point_at_installed_workers()
    import os

    assert os.environ["PTXFORGE_EXEC_WORKER"] == str(bin_dir / "ptxforge_exec_worker")
    assert os.environ["PTXFORGE_COMPILE_WORKER"] == "/chosen/by/the/user"

    monkeypatch.setattr(_paths, "INSTALLED_TASKS_DIR", REPO / "tasks")
    assert _paths.installed_tasks_dirs(str(REPO / "tasks")) == []
    assert _paths.installed_tasks_dirs(str(tmp_path / "gone")) == [str(REPO / "tasks")]
