"""Shared fixtures: one emulator Engine for the whole run, the vector_add
reference (correct) and a planted mutant of it (wrong)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Checks that are about verdicts, not speed: the emulator's small shapes, no timing.
FAST = {"bench": False, "shapes": "small", "drawn_shapes": 1, "trials": 1}


@pytest.fixture(scope="session")
def engine():
    import ptxforge

    return ptxforge.Engine(executor="emu")


@pytest.fixture(scope="session")
def reference_ptx(engine) -> str:
    """The PTX of vector_add's trusted CUDA reference (NVRTC)."""
    return engine.reference("vector_add")


@pytest.fixture(scope="session")
def wrong_ptx() -> str:
    """vector_add that never writes the ragged tail (tasks/L1/vector_add/mutants)."""
    return (REPO / "tasks/L1/vector_add/mutants/dropped_tail.ptx").read_text()


def fenced(ptx: str) -> str:
    """A model's answer holding `ptx`."""
    return f"Here is the kernel.\n\n```ptx\n{ptx}\n```\n\nIt adds a and b.\n"
