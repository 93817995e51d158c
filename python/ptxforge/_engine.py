"""The gate in this process: lint, compile, extract and check through the
native extension (ptxforge._core, the C++ `serve` library).

Every function answers with the JSON document that `ptxforge serve` answers
with for the same request, as a dict, and raises ptxforge.Error where the
service would answer with an error status.
"""

from __future__ import annotations

import json
import queue
import threading
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping, Optional

from ._errors import Error
from . import _paths

def _core():
    """The native extension, imported on first use, so that ptxforge.Client
    works where the extension was not built."""
    from . import _core as core  # noqa: PLC0415

    return core


def _unwrap(reply: tuple[int, str]) -> Any:
    status, text = reply
    body = json.loads(text)
    if status != 200:
        raise Error.from_reply(status, body)
    return body


def request_body(task: str, ptx: Optional[str] = None, answer: Optional[str] = None,
               options: Optional[Mapping[str, Any]] = None) -> dict:
    """The JSON body of a check: {"task", "ptx" or "answer", options...}.

    Options are passed as they are; the gate rejects an unknown key or a
    wrong type (code "bad-request"), so that a typo is never ignored.
    """
    body: dict[str, Any] = {"task": task}
    if ptx is not None:
        body["ptx"] = ptx
    if answer is not None:
        body["answer"] = answer
    for key, value in (options or {}).items():
        if value is not None:
            body[key] = value
    return body


def lint(ptx: str) -> dict:
    """`ptxforge lint --format json`: {"ok", "diagnostics": [...]}."""
    return _unwrap(_core().lint(ptx))


def compile(ptx: str, arch: Optional[str] = None) -> dict:  # noqa: A001 - the operation's name
    """`ptxforge compile --format json` (no SASS): ok, resources, diagnostics, error_log..."""
    return _unwrap(_core().compile(ptx, arch or ""))


def extract(answer: str) -> dict:
    """The PTX module of a model's answer and where it was:
    {"ptx", "source", "first_line", "last_line", "notes", ...}. Error "no-ptx" when there is none."""
    return _unwrap(_core().extract_ptx(answer))


def extract_ptx(answer: str) -> str:
    """Only the PTX text of extract()."""
    return extract(answer)["ptx"]


class Engine:
    """A loaded suite and a warm gate (its executor in a worker process).

    executor: "auto" (the GPU when there is one, else the CPU emulator),
    "gpu" or "emu"; device: the GPU ordinal; sanitizer: on a GPU, also run
    the emulator's sanitizers; tasks_dirs: task folders searched before
    $PTXFORGE_TASKS_DIR and the built-in suite.

    One check runs at a time per Engine (calls from several threads wait
    their turn; the GIL is released while a check runs). For parallel
    checks in one process, use an EnginePool.
    """

    def __init__(self, executor: str = "auto", device: int = 0, sanitizer: bool = True,
                 tasks_dirs: Iterable[str] = ()):
        core = _core()
        dirs = [str(d) for d in tasks_dirs] + _paths.installed_tasks_dirs(core.builtin_tasks_dir())
        self.executor = executor
        self._native = core.Engine(executor, int(device), bool(sanitizer), dirs)
        self._lock = threading.Lock()

    # --- checks -------------------------------------------------------------

    def check(self, task: str, ptx: Optional[str] = None, answer: Optional[str] = None,
              **options: Any) -> dict:
        """Checks bare PTX (`ptx`) or a model's whole answer (`answer`) against
        `task`; returns the check document ("verdict", "stage", "summary", ...)."""
        return self.check_body(request_body(task, ptx, answer, options))

    def check_body(self, body: Mapping[str, Any]) -> dict:
        """A check from its JSON body, exactly as POST /v1/check takes it."""
        text = json.dumps(body)
        with self._lock:
            return _unwrap(self._native.check(text))

    def reward(self, task: str, ptx: Optional[str] = None, answer: Optional[str] = None,
               weights: Optional[Mapping[str, float]] = None, **options: Any) -> dict:
        """The staged reward of a check: {"reward", "verdict", "stages", "speedup", ..., "check"}."""
        body = request_body(task, ptx, answer, options)
        if weights is not None:
            body["weights"] = dict(weights)
        return self.reward_body(body)

    def reward_body(self, body: Mapping[str, Any]) -> dict:
        """A reward from its JSON body, exactly as POST /v1/reward takes it."""
        text = json.dumps(body)
        with self._lock:
            return _unwrap(self._native.reward(text))

    # --- the suite ----------------------------------------------------------

    def tasks(self) -> list:
        """The suite's tasks, as `ptxforge tasks --format json` lists them."""
        return json.loads(self._native.tasks())["tasks"]

    def task(self, name: str) -> dict:
        """One task, as `ptxforge task show --format json` shows it."""
        return _unwrap(self._native.task(name))

    def reference(self, name: str, arch: str = "sm_90") -> str:
        """The PTX of the task's trusted CUDA reference (NVRTC, cached on disk)."""
        return _unwrap(self._native.reference(name, arch))["ptx"]

    # --- the executor -------------------------------------------------------

    @property
    def device(self) -> str:
        """What checks run on ("ptxforge PTX emulator", a GPU's name), or "none: <why>"."""
        return self._native.device

    @property
    def emulated(self) -> bool:
        return self._native.emulated

    def __repr__(self) -> str:
        return f"ptxforge.Engine(executor={self.executor!r}, device={self.device!r})"


class EnginePool:
    """Several Engines in one process, lent out one per concurrent call: N
    threads check N answers at once (each Engine has its own worker process).
    Engines start on first need, at most `size`."""

    def __init__(self, size: int = 2, **engine_options: Any):
        if size < 1:
            raise ValueError("EnginePool: size must be at least 1")
        self.size = size
        self._options = engine_options
        self._idle: "queue.LifoQueue[Engine]" = queue.LifoQueue()
        self._started = 0
        self._lock = threading.Lock()

    @contextmanager
    def engine(self) -> Iterator[Engine]:
        """Borrows an engine (starting one while fewer than `size` exist)."""
        try:
            engine = self._idle.get_nowait()
        except queue.Empty:
            with self._lock:
                start = self._started < self.size
                if start:
                    self._started += 1
            if start:
                try:
                    engine = Engine(**self._options)
                except BaseException:
                    with self._lock:
                        self._started -= 1
                    raise
            else:
                engine = self._idle.get()
        try:
            yield engine
        finally:
            self._idle.put(engine)

    def check(self, task: str, ptx: Optional[str] = None, answer: Optional[str] = None,
              **options: Any) -> dict:
        with self.engine() as engine:
            return engine.check(task, ptx, answer, **options)

    def check_body(self, body: Mapping[str, Any]) -> dict:
        with self.engine() as engine:
            return engine.check_body(body)

    def reward(self, task: str, ptx: Optional[str] = None, answer: Optional[str] = None,
               weights: Optional[Mapping[str, float]] = None, **options: Any) -> dict:
        with self.engine() as engine:
            return engine.reward(task, ptx, answer, weights, **options)

    def reward_body(self, body: Mapping[str, Any]) -> dict:
        with self.engine() as engine:
            return engine.reward_body(body)

    def tasks(self) -> list:
        with self.engine() as engine:
            return engine.tasks()

    def task(self, name: str) -> dict:
        with self.engine() as engine:
            return engine.task(name)


# One Engine per set of options for the module-level check(): starting one
# spawns a worker process, so it is kept for the life of the process.
_shared_engines: dict = {}
_shared_lock = threading.Lock()


def shared_engine(executor: str = "auto", device: int = 0, sanitizer: bool = True,
                  tasks_dirs: Iterable[str] = ()) -> Engine:
    """The process's Engine for these options, started on first use."""
    key = (executor, int(device), bool(sanitizer), tuple(str(d) for d in tasks_dirs))
    with _shared_lock:
        engine = _shared_engines.get(key)
        if engine is None:
            engine = _shared_engines[key] = Engine(executor, device, sanitizer, key[3])
        return engine


def check(task: str, ptx: Optional[str] = None, answer: Optional[str] = None,
          executor: str = "auto", **options: Any) -> dict:
    """Checks PTX or a model's answer against `task` on this machine (see Engine.check)."""
    return shared_engine(executor).check(task, ptx, answer, **options)


def reward(task: str, ptx: Optional[str] = None, answer: Optional[str] = None,
           executor: str = "auto", weights: Optional[Mapping[str, float]] = None,
           **options: Any) -> dict:
    """The staged reward of a check on this machine (see Engine.reward)."""
    return shared_engine(executor).reward(task, ptx, answer, weights, **options)
