"""ptxforge.ray on a local Ray instance: CPU gate actors on the emulator,
batches spread over them, results in order."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray>=2.9')")

import ptxforge  # noqa: E402
from conftest import FAST, fenced  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def actors(local_ray):
    import ptxforge.ray as pray

    return pray.start_gate_actors(executor="emu")  # 2 CPUs: 2 actors


def test_actors_start_on_the_emulator(actors):
    assert len(actors) == 2
    assert ray.get([actor.device.remote() for actor in actors]) == ["ptxforge PTX emulator"] * 2


def test_check_many_keeps_order(actors, reference_ptx, wrong_ptx):
    import ptxforge.ray as pray

    requests = []
    for index in range(6):
        ptx = reference_ptx if index % 2 == 0 else wrong_ptx
        requests.append({"task": "vector_add", "answer": fenced(ptx), **FAST})
    requests.append({"task": "vectr_add", "ptx": reference_ptx})  # unknown: an error in its place
    results = pray.check_many(requests, actors, chunk_size=2)
    assert [r.get("verdict") for r in results[:6]] == ["correct", "wrong"] * 3
    assert results[6]["status"] == 404 and results[6]["error"]["code"] == "unknown-task"


def test_reward_many(actors, reference_ptx):
    import ptxforge.ray as pray

    rewards = pray.reward_many([{"task": "vector_add", "ptx": reference_ptx, **FAST}] * 3, actors)
    assert [r["reward"] for r in rewards] == pytest.approx([0.8] * 3)


def test_evaluate_sums_up_per_task(actors, reference_ptx, wrong_ptx):
    import ptxforge.ray as pray

    samples = [{"task": "vector_add", "ptx": reference_ptx, **FAST},
               {"task": "vector_add", "ptx": wrong_ptx, **FAST},
               {"task": "saxpy", "answer": "no kernel here", **FAST}]
    summary = pray.evaluate(samples, actors)
    assert summary["samples"] == 3 and summary["correct"] == 1
    assert summary["by_task"]["vector_add"] == {"samples": 2, "correct": 1, "verdicts": {"correct": 1, "wrong": 1}}
    assert summary["by_task"]["saxpy"]["verdicts"] == {"no-ptx": 1}


def test_gpu_actors_need_a_gpu(local_ray):
    import ptxforge.ray as pray

    with pytest.raises(ptxforge.Error) as raised:
        pray.start_gate_actors(executor="gpu")
    assert raised.value.code == "no-gpu"
