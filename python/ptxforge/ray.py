"""The gate spread over a Ray cluster: one GateActor per GPU (num_gpus=1,
executor "gpu"), or CPU actors on the emulator, each holding a warm Engine.

    import ray, ptxforge.ray as pray
    ray.init()                                   # or ray.init(address="auto") on a cluster
    actors = pray.start_gate_actors()            # one per GPU; CPU actors on the emulator if none
    docs = pray.check_many([{"task": "vector_add", "answer": text}, ...], actors)

Every node needs this package installed (its workers and the built-in suite
come with it); see docs/scaling.md for the multi-node recipe.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Optional, Sequence

try:
    import ray
    from ray.util import ActorPool
except ImportError as missing:  # pragma: no cover - depends on the environment
    raise ImportError("ptxforge.ray needs Ray: pip install 'ray>=2.9'") from missing

from ._errors import Error


class _GateActor:
    """A warm Engine in a Ray worker. One call at a time (Ray's default for an
    actor), which is what an Engine wants."""

    def __init__(self, executor: str = "auto", device: int = 0, sanitizer: bool = True,
                 tasks_dirs: Sequence[str] = ()):
        from ._engine import Engine  # noqa: PLC0415 - imported in the worker process

        # Ray gives a num_gpus=1 actor one GPU through CUDA_VISIBLE_DEVICES:
        # within the actor it is device 0.
        self.engine = Engine(executor, device, sanitizer, tasks_dirs)

    def device(self) -> str:
        return self.engine.device

    def check_many(self, bodies: Sequence[Mapping[str, Any]]) -> list:
        """Check documents in order; a request's Error comes back as {"error": {...}, "status"}."""
        return [self._one(self.engine.check_body, body) for body in bodies]

    def reward_many(self, bodies: Sequence[Mapping[str, Any]]) -> list:
        return [self._one(self.engine.reward_body, body) for body in bodies]

    @staticmethod
    def _one(call, body):
        try:
            return call(body)
        except Error as error:
            return {**error.to_json(), "status": error.status}


GateActor = ray.remote(_GateActor)


def start_gate_actors(num_actors: Optional[int] = None, executor: str = "auto", *,
                      num_cpus_per_actor: float = 1, sanitizer: bool = True,
                      tasks_dirs: Sequence[str] = (), wait: bool = True) -> list:
    """Starts GateActors on the running Ray instance (call ray.init first).

    executor "gpu" (or "auto" on a cluster with GPUs): one actor per GPU,
    each with num_gpus=1. "emu" (or "auto" without GPUs): CPU actors on the
    emulator, one per `num_cpus_per_actor` CPUs of the cluster. num_actors
    overrides the count. wait: return once every actor has started its engine.
    """
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    if executor == "auto":
        executor = "gpu" if gpus > 0 else "emu"
    if executor == "gpu":
        if gpus == 0 and num_actors is None:
            raise Error(400, "invalid-input", "no-gpu", "start_gate_actors: the Ray cluster has no GPU")
        count = num_actors if num_actors is not None else gpus
        options = {"num_gpus": 1, "num_cpus": num_cpus_per_actor}
    else:
        count = num_actors if num_actors is not None else max(1, int(resources.get("CPU", 1) // num_cpus_per_actor))
        options = {"num_cpus": num_cpus_per_actor}
    actors = [GateActor.options(**options).remote(executor, 0, sanitizer, list(tasks_dirs)) for _ in range(count)]
    if wait:
        ray.get([actor.device.remote() for actor in actors])
    return actors


def _spread(method: str, requests: Iterable[Mapping[str, Any]], actors: Sequence[Any],
            chunk_size: Optional[int]) -> list:
    bodies = [dict(r) for r in requests]
    if not bodies:
        return []
    if not actors:
        raise ValueError("no gate actors (start_gate_actors)")
    # Small chunks keep every actor busy to the end; a few per actor is enough.
    size = chunk_size or max(1, math.ceil(len(bodies) / (4 * len(actors))))
    chunks = [bodies[i:i + size] for i in range(0, len(bodies), size)]
    pool = ActorPool(list(actors))
    results: list = []
    for chunk_result in pool.map(lambda actor, chunk: getattr(actor, method).remote(chunk), chunks):
        results.extend(chunk_result)
    return results


def check_many(requests: Iterable[Mapping[str, Any]], actors: Optional[Sequence[Any]] = None, *,
               executor: str = "auto", chunk_size: Optional[int] = None) -> list:
    """Check documents for many POST /v1/check bodies, in order, spread over
    `actors` (started with start_gate_actors(executor=...) when not given).
    A request that fails comes back as {"error": {...}, "status"}."""
    return _spread("check_many", requests, actors or start_gate_actors(executor=executor), chunk_size)


def reward_many(requests: Iterable[Mapping[str, Any]], actors: Optional[Sequence[Any]] = None, *,
                executor: str = "auto", chunk_size: Optional[int] = None) -> list:
    """Rewards (POST /v1/reward documents) for many bodies, in order."""
    return _spread("reward_many", requests, actors or start_gate_actors(executor=executor), chunk_size)


def evaluate(samples: Iterable[Mapping[str, Any]], actors: Optional[Sequence[Any]] = None, *,
             executor: str = "auto", chunk_size: Optional[int] = None) -> dict:
    """An eval shard: checks every {"task", "answer" or "ptx", options...}
    sample and sums up per task: {"samples", "correct", "pass_rate",
    "by_task": {task: {"samples", "correct", "verdicts": {verdict: n}}}, "results"}."""
    samples = [dict(s) for s in samples]
    results = check_many(samples, actors, executor=executor, chunk_size=chunk_size)
    by_task: dict = {}
    for sample, result in zip(samples, results):
        entry = by_task.setdefault(sample["task"], {"samples": 0, "correct": 0, "verdicts": {}})
        verdict = result.get("verdict", "error")
        entry["samples"] += 1
        entry["correct"] += verdict == "correct"
        entry["verdicts"][verdict] = entry["verdicts"].get(verdict, 0) + 1
    correct = sum(entry["correct"] for entry in by_task.values())
    return {"samples": len(samples), "correct": correct,
            "pass_rate": correct / len(samples) if samples else 0.0, "by_task": by_task, "results": results}
