"""Where an installed package finds its worker programs and the built-in suite.

The C++ code looks for its workers in $PTXFORGE_EXEC_WORKER and
$PTXFORGE_COMPILE_WORKER, then beside the running executable (python, here:
never), then where the build put them. A wheel carries them in
ptxforge/bin/; pointing the variables there (unless the user set them) makes
an installed package independent of the build folder it came from. Child
processes (a `ptxforge serve` started from Python, Ray workers) inherit them.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
INSTALLED_BIN_DIR = PACKAGE_DIR / "bin"
INSTALLED_TASKS_DIR = PACKAGE_DIR / "tasks"

_WORKERS = {
    "PTXFORGE_EXEC_WORKER": "ptxforge_exec_worker",
    "PTXFORGE_COMPILE_WORKER": "ptxforge_compile_worker",
}


# The variables point_at_installed_workers set (not those the user had set).
_set_here: dict = {}


def point_at_installed_workers() -> None:
    """Sets each worker variable that is unset to the installed worker, when there is one."""
    for variable, name in _WORKERS.items():
        worker = INSTALLED_BIN_DIR / name
        if not os.environ.get(variable) and os.access(worker, os.X_OK):
            os.environ[variable] = _set_here[variable] = str(worker)


def foreign_binary_environment() -> dict:
    """os.environ without the worker variables this package set: for starting a
    `ptxforge` binary of another build, which must use its own workers (the
    worker protocol is not stable between builds)."""
    return {key: value for key, value in os.environ.items() if _set_here.get(key) != value}


def installed_tasks_dirs(builtin_tasks_dir: str) -> list[str]:
    """[the wheel's copy of tasks/] when the source tree the build read is gone.

    Both at once would define every task twice (the loader keeps the first
    and reports the second as a duplicate), so the copy is used only in place
    of the built-in suite, never beside it.
    """
    if INSTALLED_TASKS_DIR.is_dir() and not Path(builtin_tasks_dir).is_dir():
        return [str(INSTALLED_TASKS_DIR)]
    return []
