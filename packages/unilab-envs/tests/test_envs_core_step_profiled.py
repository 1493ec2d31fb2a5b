"""`VecEnv.step_profiled`: the control step in two timed parts, equal to `step`."""

from __future__ import annotations

import pytest
import torch

import unilab_envs


def _pair(device: str, n: int, **kw):
    make = lambda: unilab_envs.make(  # noqa: E731
        "cartpole-balance", num_envs=n, device=device, seed=5, max_episode_steps=4, **kw
    )
    a, b = make(), make()
    a.reset(), b.reset()
    return a, b


def _actions(n: int, steps: int, device: str) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(2)
    # large actions: some poles fall (terminations) besides the 4-step time limits
    return [(3 * torch.rand(n, 1, generator=gen) - 1.5).to(device) for _ in range(steps)]


def _assert_equal(x, y) -> None:
    assert set(x.keys(True, True)) == set(y.keys(True, True))
    for key in x.keys(include_nested=True, leaves_only=True):
        torch.testing.assert_close(x[key], y[key], rtol=0, atol=0, msg=f"output {key}")


def _run_pair(device: str, n: int, steps: int, **kw) -> tuple[list[str], int]:
    plain, profiled = _pair(device, n, **kw)
    laps: list[str] = []
    done = 0
    for action in _actions(n, steps, device):
        x = plain.step(action)
        y = profiled.step_profiled(action, laps.append)
        _assert_equal(x, y)
        done += int(x["done"].sum())
    for key, value in plain.state_dict()["arrays"].items():
        other = profiled.state_dict()["arrays"][key]
        torch.testing.assert_close(value, other, rtol=0, atol=0, msg=f"state {key}")
    return laps, done


def test_step_profiled_equals_step_and_laps_in_order():
    laps, done = _run_pair("cpu", 6, 11)
    assert done >= 12  # resets happened inside the compared steps (4-step limit, falls)
    assert laps == ["env_physics", "env_evaluate"] * 11


def test_step_profiled_mixes_with_step_and_checks_its_input():
    env, _ = _pair("cpu", 3)
    env.step_profiled(torch.zeros(3, 1), lambda name: None)
    env.step(torch.zeros(3, 1))
    with pytest.raises(ValueError, match="action shape"):
        env.step_profiled(torch.zeros(2, 1), lambda name: None)
    fresh = unilab_envs.make("cartpole-balance", num_envs=3, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        fresh.step_profiled(torch.zeros(3, 1), lambda name: None)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_step_profiled_replays_two_cuda_graphs_equal_to_step():
    # On CUDA the first profiled step runs eagerly, the next ones capture and replay the two
    # part graphs: every output equals the one-graph `step` bit for bit (cartpole: no contacts).
    plain, profiled = _pair("cuda", 256)
    laps: list[str] = []
    for action in _actions(256, 10, "cuda"):
        _assert_equal(plain.step(action), profiled.step_profiled(action, laps.append))
    assert plain._graph is not None and profiled._part_graphs is not None
    assert profiled._graph is None  # the profiled env never captured the one-graph step
    assert laps == ["env_physics", "env_evaluate"] * 10
