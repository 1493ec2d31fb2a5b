"""`VecEnv.step`'s profiler ranges: present under `torch.profiler`, never opened without one."""

from __future__ import annotations

import pytest
import torch

import unilab_envs
from unilab_envs._core import env as env_module


def _env():
    env = unilab_envs.make("cartpole-balance", num_envs=3, device="cpu", seed=5)
    env.reset()
    return env


def _ranges(prof) -> dict[str, int]:
    return {e.key: e.count for e in prof.key_averages() if e.key.startswith("unilab/")}


def test_an_eager_step_shows_its_two_parts_inside_the_step_range():
    env = _env()
    with torch.profiler.profile() as prof:
        for _ in range(4):
            env.step(torch.zeros(3, 1))
    assert _ranges(prof) == {
        "unilab/env_step": 4,
        "unilab/env_physics": 4,
        "unilab/env_evaluate": 4,
    }
    events = {e.name: e for e in prof.events() if e.name.startswith("unilab/")}
    step, physics = events["unilab/env_step"], events["unilab/env_physics"]
    evaluate = events["unilab/env_evaluate"]
    assert step.time_range.start <= physics.time_range.start
    assert physics.time_range.end <= evaluate.time_range.start
    assert evaluate.time_range.end <= step.time_range.end


def test_no_range_is_opened_without_a_profiler(monkeypatch):
    env = _env()
    out = env.step(torch.zeros(3, 1))  # the first step (kernels loaded) before the trap

    def refuse(name):
        raise AssertionError(f"record_function({name!r}) without a profiler")

    monkeypatch.setattr(env_module, "record_function", refuse)
    again = env.step(torch.zeros(3, 1))
    assert again["reward"].shape == out["reward"].shape == (3,)
    with pytest.raises(AssertionError, match="unilab/env_step"), torch.profiler.profile():
        env.step(torch.zeros(3, 1))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_captured_step_is_one_range():
    env = unilab_envs.make("cartpole-balance", num_envs=64, device="cuda", seed=5)
    env.reset()
    for _ in range(2):  # eager step, then capture
        env.step(torch.zeros(64, 1, device="cuda"))
    assert env.uses_cuda_graph
    with torch.profiler.profile() as prof:
        for _ in range(3):
            env.step(torch.zeros(64, 1, device="cuda"))
    assert _ranges(prof) == {"unilab/env_step": 3}
