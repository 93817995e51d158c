"""ptxforge: the verification gate for LLM-written PTX kernels, from Python.

In this process (the native extension over the C++ gate):
    ptxforge.lint(ptx), ptxforge.compile(ptx, arch), ptxforge.extract_ptx(answer),
    ptxforge.check(task, ptx=... or answer=..., executor="auto", **options),
    ptxforge.Engine(...) / ptxforge.EnginePool(...) for warm, reusable gates.
Against a `ptxforge serve` (standard library only): ptxforge.Client(url).
For trainers: ptxforge.rewards (TRL, verl); for clusters: ptxforge.ray.
Every failure is a ptxforge.Error(status, kind, code, message).
See docs/python.md.
"""

from ._errors import Error
from . import _paths

_paths.point_at_installed_workers()

from ._engine import Engine, EnginePool, check, compile, extract, extract_ptx, lint, reward, shared_engine  # noqa: E402
from .client import Client  # noqa: E402
from . import rewards  # noqa: E402  (pure Python; ptxforge.ray is imported on demand: it needs Ray)

__version__ = "0.1.0"

__all__ = [
    "Client", "Engine", "EnginePool", "Error", "check", "compile", "extract", "extract_ptx", "lint",
    "reward", "rewards", "shared_engine", "__version__",
]
