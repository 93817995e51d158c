"""The reward functions, called exactly the way the trainers call them.

TRL's GRPOTrainer._calculate_rewards calls each reward function with
keywords: prompts, completions, completion_ids, every dataset column except
prompt/completion/completion_ids as a list (one entry per completion),
trainer_state, log_extra and log_metric, and turns None into NaN.
verl's reward managers call compute_score(data_source=, solution_str=,
ground_truth=, extra_info=) through functools.partial(_call_with_kwargs,
raw_fn, reward_kwargs), which merges the config's reward_kwargs in; the
BatchRewardManager calls compute_score(data_sources=, solution_strs=,
ground_truths=, extra_infos=, **reward_kwargs).
"""

from __future__ import annotations

import importlib
from functools import partial

import pytest

import ptxforge
from ptxforge import rewards
from conftest import FAST, fenced


def trl_calls(reward_func, inputs, prompts, completions):
    """What GRPOTrainer._calculate_rewards does with a callable reward function."""
    keys = [key for key in inputs[0] if key not in ["prompt", "completion", "completion_ids"]]
    reward_kwargs = {key: [example[key] for example in inputs] for key in keys}
    logged, metrics = {}, {}
    reward_kwargs["trainer_state"] = object()
    reward_kwargs["log_extra"] = lambda column, values: logged.setdefault(column, []).extend(values)
    reward_kwargs["log_metric"] = lambda name, value: metrics.setdefault(name, []).append(value)
    completion_ids = [[1, 2, 3] for _ in completions]
    output = reward_func(prompts=prompts, completions=completions, completion_ids=completion_ids, **reward_kwargs)
    output = [reward if reward is not None else float("nan") for reward in output]
    return output, logged, metrics


def test_trl_standard_format(engine, reference_ptx, wrong_ptx):
    reward_func = rewards.make_trl_reward(engine=engine, options=FAST)
    assert reward_func.__name__ == "ptxforge_reward"
    inputs = [
        {"prompt": "Write vector_add in PTX.", "task": "vector_add"},
        {"prompt": "Write vector_add in PTX.", "task": "vector_add"},
        {"prompt": "Write vector_add in PTX.", "task": "vector_add"},
    ]
    completions = [fenced(reference_ptx), fenced(wrong_ptx), "I don't know PTX."]
    output, logged, metrics = trl_calls(reward_func, inputs, [i["prompt"] for i in inputs], completions)
    assert output == pytest.approx([0.8, 0.2, 0.0])
    assert logged["ptxforge_reward_verdict"] == ["correct", "wrong", "no-ptx"]
    assert metrics["ptxforge_reward/correct_fraction"] == [pytest.approx(1 / 3)]


def test_trl_conversational_format(engine, reference_ptx):
    reward_func = rewards.make_trl_reward(engine=engine, options=FAST, weights={"correct": 1.0}, name="ptx_gate")
    assert reward_func.__name__ == "ptx_gate"
    prompt = [{"role": "system", "content": "You write PTX."}, {"role": "user", "content": "vector_add, please"}]
    inputs = [{"prompt": prompt, "task": "vector_add", "level": 1}] * 2
    completions = [
        [{"role": "assistant", "content": fenced(reference_ptx)}],
        [{"role": "assistant", "content": [{"type": "text", "text": fenced(reference_ptx)}]}],
    ]
    output, _, _ = trl_calls(reward_func, inputs, [prompt, prompt], completions)
    assert output == pytest.approx([1.2, 1.2])  # 0.05 + 0.05 + 0.1 + 1.0


def test_trl_missing_task_column_says_which(engine, reference_ptx):
    reward_func = rewards.make_trl_reward(engine=engine, task_column="kernel_task")
    with pytest.raises(KeyError, match="kernel_task"):
        trl_calls(reward_func, [{"prompt": "p", "task": "vector_add"}], ["p"], [fenced(reference_ptx)])


def test_trl_unknown_task_raises_or_scores_none(engine, reference_ptx):
    inputs = [{"prompt": "p", "task": "vectr_add"}]
    with pytest.raises(ptxforge.Error):
        trl_calls(rewards.make_trl_reward(engine=engine), inputs, ["p"], [fenced(reference_ptx)])
    output, _, _ = trl_calls(rewards.make_trl_reward(engine=engine, on_error="none"), inputs, ["p"],
                             [fenced(reference_ptx)])
    assert output[0] != output[0]  # NaN: TRL leaves it out


def _call_with_kwargs(raw_fn, extra_kwargs, *args, **kwargs):
    """verl.trainer.ppo.reward._call_with_kwargs: the config's reward_kwargs win."""
    merged_kwargs = {**kwargs, **extra_kwargs}
    return raw_fn(*args, **merged_kwargs)


def verl_reward_fn(reward_kwargs):
    """What verl's get_custom_reward_fn returns for
    custom_reward_function.path=pkg://ptxforge.rewards, name=compute_score."""
    module = importlib.import_module("ptxforge.rewards")  # load_module("pkg://ptxforge.rewards")
    return partial(_call_with_kwargs, getattr(module, "compute_score"), reward_kwargs)


def test_verl_naive_reward_manager(engine, reference_ptx, wrong_ptx):
    rewards.configure(engine=engine)
    try:
        compute_score = verl_reward_fn({"options": FAST})
        rows = [
            ("ptx/vector_add", fenced(reference_ptx), "vector_add", {"index": 0}),
            ("ptx/vector_add", fenced(wrong_ptx), "unused", {"index": 1, "task": "vector_add"}),
            ("ptx/vector_add", "no kernel", {"task": "vector_add"}, {"index": 2}),
        ]
        scores = []
        for data_source, response_str, ground_truth, extra_info in rows:
            # NaiveRewardManager adds these before the call.
            extra_info["num_turns"] = None
            extra_info["rollout_reward_scores"] = {}
            score = compute_score(data_source=data_source, solution_str=response_str,
                                  ground_truth=ground_truth, extra_info=extra_info)
            assert isinstance(score, dict)
            scores.append(score)
        assert [s["score"] for s in scores] == pytest.approx([0.8, 0.2, 0.0])
        assert [s["verdict"] for s in scores] == ["correct", "wrong", "no-ptx"]
        assert [s["correct"] for s in scores] == [1.0, 0.0, 0.0]
        # verl stacks reward_extra_info per key: every sample has the same keys.
        assert len({tuple(sorted(s)) for s in scores}) == 1
        # An unknown task scores 0 (verdict "error") unless on_error="raise".
        assert compute_score(data_source="x", solution_str=fenced(reference_ptx), ground_truth="nope",
                             extra_info={})["verdict"] == "error"
        with pytest.raises(ptxforge.Error):
            verl_reward_fn({"options": FAST, "on_error": "raise"})(
                data_source="x", solution_str=fenced(reference_ptx), ground_truth="nope", extra_info={})
    finally:
        rewards.configure()


def test_verl_batch_reward_manager(engine, reference_ptx, wrong_ptx):
    rewards.configure(engine=engine, options=FAST, weights={"correct": 0.9})
    try:
        module = importlib.import_module("ptxforge.rewards")
        compute_score = partial(_call_with_kwargs, module.compute_score_batch, {})
        scores = compute_score(data_sources=["a", "b"], solution_strs=[fenced(reference_ptx), fenced(wrong_ptx)],
                               ground_truths=["vector_add", "vector_add"],
                               extra_infos=[{"rollout_reward_scores": {}}, {"rollout_reward_scores": {}}])
        assert [s["score"] for s in scores] == pytest.approx([1.1, 0.2])
    finally:
        rewards.configure()


def test_completion_text_shapes():
    assert rewards.completion_text("abc") == "abc"
    assert rewards.completion_text([{"role": "assistant", "content": "x"}]) == "x"
    conversation = [{"role": "assistant", "content": "first"}, {"role": "tool", "content": "out"},
                    {"role": "assistant", "content": "final"}]
    assert rewards.completion_text(conversation) == "final"
    with pytest.raises(TypeError):
        rewards.completion_text(42)
