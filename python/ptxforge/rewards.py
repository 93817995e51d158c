"""Reward functions in the shapes RL trainers call.

- TRL (GRPOTrainer's ``reward_funcs``): ``make_trl_reward(...)`` returns
  ``f(prompts, completions, **kwargs) -> list[float]``. TRL calls it with
  keywords: ``prompts``, ``completions`` (strings, or conversations: lists of
  {"role", "content"} messages), ``completion_ids``, every other dataset column
  as a list with one entry per completion (the task name among them), and
  ``trainer_state``, ``log_extra``, ``log_metric``.
- verl (``custom_reward_function.path=pkg://ptxforge.rewards``,
  ``name=compute_score``): ``compute_score(data_source, solution_str,
  ground_truth, extra_info=None, **reward_kwargs)`` returns a dict whose
  "score" is the reward; ``compute_score_batch`` is the BatchRewardManager's
  form. The task is ``extra_info["task"]``, else ``ground_truth`` (a task
  name, or a dict with "task").

The reward is the gate's staged reward (POST /v1/reward, docs/serve.md):
weights for getting past extraction, lint, compile, correctness, and the
speedup over nvcc -O3 that noise cannot explain.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Mapping, Optional, Sequence

from ._errors import Error

Scorer = Any  # an Engine, EnginePool or Client: anything with reward_body(body) -> dict


def completion_text(completion: Any) -> str:
    """The text of a completion: the string itself, or in a conversation the
    last assistant message's content (text parts joined)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        completion = [completion]
    if isinstance(completion, Sequence):
        messages = [m for m in completion if isinstance(m, Mapping)]
        assistant = [m for m in messages if m.get("role", "assistant") == "assistant"]
        chosen = (assistant or messages)[-1:] if messages else []
        for message in chosen:
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, Sequence):  # [{"type": "text", "text": ...}, ...]
                return "".join(part.get("text", "") for part in content
                               if isinstance(part, Mapping) and part.get("type", "text") == "text")
        return ""
    raise TypeError(f"ptxforge.rewards: a completion must be a string or a list of messages, not {type(completion).__name__}")


def _default_scorer(executor: str = "auto", url: Optional[str] = None) -> Scorer:
    """A Client when a URL is given (argument or $PTXFORGE_URL), else this
    process's EnginePool for `executor` ($PTXFORGE_ENGINES engines, default 2)."""
    url = url or os.environ.get("PTXFORGE_URL")
    if url:
        from .client import Client  # noqa: PLC0415

        return Client(url)
    return _shared_pool(executor)


_pools: dict = {}
_pools_lock = threading.Lock()


def _shared_pool(executor: str):
    from ._engine import EnginePool  # noqa: PLC0415

    with _pools_lock:
        pool = _pools.get(executor)
        if pool is None:
            size = int(os.environ.get("PTXFORGE_ENGINES", "2"))
            pool = _pools[executor] = EnginePool(size=size, executor=executor)
        return pool


def _score_all(scorer: Scorer, bodies: list[dict], concurrency: int, on_error: str) -> list[Optional[dict]]:
    """reward_body over the bodies, `concurrency` at a time; in order. An
    Error raises (on_error="raise") or gives None (on_error="none")."""

    def one(body: dict) -> Optional[dict]:
        try:
            return scorer.reward_body(body)
        except Error:
            if on_error == "raise":
                raise
            return None

    if concurrency <= 1 or len(bodies) <= 1:
        return [one(body) for body in bodies]
    with ThreadPoolExecutor(max_workers=min(concurrency, len(bodies))) as threads:
        return list(threads.map(one, bodies))


def make_trl_reward(task_column: str = "task", engine: Optional[Scorer] = None, client: Optional[Scorer] = None,
                    weights: Optional[Mapping[str, float]] = None, executor: str = "auto",
                    options: Optional[Mapping[str, Any]] = None, concurrency: int = 4,
                    on_error: str = "raise", name: str = "ptxforge_reward") -> Callable[..., list]:
    """A GRPOTrainer reward function scoring each completion with the gate.

    task_column: the dataset column naming each row's task. engine / client:
    where to check (an Engine or EnginePool in this process, or a Client of
    a `ptxforge serve`); neither: $PTXFORGE_URL's service, else a shared
    EnginePool on `executor`. weights: the reward's stage weights
    (RewardWeights: extract, lint, compile, correct, speed, speed_cap,
    rejected). options: check options for every request (e.g. {"bench":
    False}, {"shapes": "small"}). concurrency: requests in flight at once.
    on_error: "raise" (a malformed request or an unknown task stops
    training) or "none" (that completion scores None, which TRL turns into NaN
    and leaves out).
    """
    if on_error not in ("raise", "none"):
        raise ValueError("on_error must be 'raise' or 'none'")
    if engine is not None and client is not None:
        raise ValueError("give engine or client, not both")
    fixed_scorer = engine if engine is not None else client
    check_options = dict(options or {})

    def reward_func(prompts=None, completions=None, **kwargs) -> list:
        if completions is None:
            raise TypeError(f"{name}: called without completions")
        tasks = kwargs.get(task_column)
        if tasks is None:
            columns = sorted(k for k in kwargs if k not in ("completion_ids", "trainer_state", "log_extra", "log_metric"))
            raise KeyError(f"{name}: no '{task_column}' column among the reward's keyword arguments {columns}; "
                           "add it to the dataset or pass task_column=")
        if isinstance(tasks, str):
            tasks = [tasks] * len(completions)
        if len(tasks) != len(completions):
            raise ValueError(f"{name}: {len(completions)} completions but {len(tasks)} '{task_column}' entries")
        bodies = []
        for task, completion in zip(tasks, completions):
            body = {**check_options, "task": task, "answer": completion_text(completion)}
            if weights is not None:
                body["weights"] = dict(weights)
            bodies.append(body)
        scorer = fixed_scorer if fixed_scorer is not None else _default_scorer(executor)
        results = _score_all(scorer, bodies, concurrency, on_error)
        rewards = [None if r is None else float(r["reward"]) for r in results]
        # TRL passes these two so that a reward can log beside its value.
        log_extra, log_metric = kwargs.get("log_extra"), kwargs.get("log_metric")
        if callable(log_extra):
            log_extra(f"{name}_verdict", [None if r is None else r["verdict"] for r in results])
        if callable(log_metric) and results:
            correct = sum(1 for r in results if r is not None and r["verdict"] == "correct")
            log_metric(f"{name}/correct_fraction", correct / len(results))
        return rewards

    reward_func.__name__ = name
    reward_func.__qualname__ = name
    return reward_func


# --- verl ----------------------------------------------------------------------

_verl_settings: dict = {}


def configure(engine: Optional[Scorer] = None, client: Optional[Scorer] = None, url: Optional[str] = None,
              executor: Optional[str] = None, weights: Optional[Mapping[str, float]] = None,
              options: Optional[Mapping[str, Any]] = None) -> None:
    """Sets what compute_score uses when its call does not say (verl hands
    the function only the config's reward_kwargs: url, executor, weights, options)."""
    _verl_settings.clear()
    scorer = engine if engine is not None else client
    if scorer is not None:
        _verl_settings["scorer"] = scorer
    for key, value in (("url", url), ("executor", executor), ("weights", weights), ("options", options)):
        if value is not None:
            _verl_settings[key] = value


def _task_of(ground_truth: Any, extra_info: Optional[Mapping[str, Any]]) -> tuple[str, dict]:
    """The task name, and check options carried by the row."""
    if isinstance(extra_info, Mapping) and extra_info.get("task"):
        return str(extra_info["task"]), dict(extra_info.get("check_options") or {})
    if isinstance(ground_truth, Mapping):
        if not ground_truth.get("task"):
            raise ValueError("ptxforge.rewards: ground_truth has no 'task'")
        return str(ground_truth["task"]), dict(ground_truth.get("check_options") or {})
    if isinstance(ground_truth, str) and ground_truth:
        return ground_truth, {}
    raise ValueError("ptxforge.rewards: name the task in extra_info['task'] or ground_truth")


def _verl_score(result: Optional[dict]) -> dict:
    """The dict verl records: "score" is the reward; the rest land in
    reward_extra_info, the same keys for every sample (verl stacks them)."""
    if result is None:
        return {"score": 0.0, "verdict": "error", "correct": 0.0, "compiled": 0.0, "speedup": 0.0}
    stages = result.get("stages", {})
    return {
        "score": float(result["reward"]),
        "verdict": str(result["verdict"]),
        "correct": 1.0 if result["verdict"] == "correct" else 0.0,
        "compiled": 1.0 if stages.get("compile", 0) > 0 else 0.0,
        "speedup": float(result.get("speedup") or 0.0),
    }


def _verl_request(solution_str: str, ground_truth: Any, extra_info: Optional[Mapping[str, Any]],
                  weights: Optional[Mapping[str, float]], options: Optional[Mapping[str, Any]]) -> dict:
    task, row_options = _task_of(ground_truth, extra_info)
    body = {**dict(options or _verl_settings.get("options") or {}), **row_options,
            "task": task, "answer": solution_str}
    weights = weights if weights is not None else _verl_settings.get("weights")
    if weights is not None:
        body["weights"] = dict(weights)
    return body


def _verl_scorer(url: Optional[str], executor: Optional[str]) -> Scorer:
    if url is None and executor is None and "scorer" in _verl_settings:
        return _verl_settings["scorer"]
    return _default_scorer(executor or _verl_settings.get("executor", "auto"), url or _verl_settings.get("url"))


def compute_score(data_source: Any = None, solution_str: str = "", ground_truth: Any = None,
                  extra_info: Optional[Mapping[str, Any]] = None, *, url: Optional[str] = None,
                  executor: Optional[str] = None, weights: Optional[Mapping[str, float]] = None,
                  options: Optional[Mapping[str, Any]] = None, on_error: str = "zero", **_ignored: Any) -> dict:
    """verl's custom reward function: {"score", "verdict", "correct", "compiled", "speedup"}.

    url / executor / weights / options come from the config's reward_kwargs
    (or configure()). on_error: "zero" (an unknown task or a failed request
    scores 0 with verdict "error") or "raise". Keywords verl adds
    (reward_router_address, ...) are ignored.
    """
    body = _verl_request(solution_str, ground_truth, extra_info, weights, options)
    try:
        result = _verl_scorer(url, executor).reward_body(body)
    except Error:
        if on_error == "raise":
            raise
        result = None
    return _verl_score(result)


def compute_score_batch(data_sources: Sequence[Any] = (), solution_strs: Sequence[str] = (),
                        ground_truths: Sequence[Any] = (), extra_infos: Optional[Sequence[Any]] = None, *,
                        url: Optional[str] = None, executor: Optional[str] = None,
                        weights: Optional[Mapping[str, float]] = None, options: Optional[Mapping[str, Any]] = None,
                        concurrency: int = 4, on_error: str = "zero", **_ignored: Any) -> list:
    """verl's BatchRewardManager form: one dict per solution, in order."""
    extra_infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    bodies = [_verl_request(s, g, e, weights, options) for s, g, e in zip(solution_strs, ground_truths, extra_infos)]
    results = _score_all(_verl_scorer(url, executor), bodies, concurrency, "raise" if on_error == "raise" else "none")
    return [_verl_score(result) for result in results]
