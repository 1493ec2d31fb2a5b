"""Shared helpers for the unilab-algos PPO tests: a scripted fake environment stream."""

from __future__ import annotations

import torch
from tensordict import TensorDict


def scripted_rollout(num_envs: int, num_steps: int, dims: dict[str, int], seed: int):
    """Pre-drawn env data from a private generator: obs [T+1], rewards, dones, time-outs [T]."""
    g = torch.Generator().manual_seed(seed)
    obs = {
        k: torch.randn(num_steps + 1, num_envs, d, generator=g) * 2 + 0.5 for k, d in dims.items()
    }
    rewards = torch.randn(num_steps, num_envs, generator=g)
    dones = torch.rand(num_steps, num_envs, generator=g) < 0.15
    time_outs = dones & (torch.rand(num_steps, num_envs, generator=g) < 0.5)
    return obs, rewards, dones, time_outs


def obs_td(obs: dict[str, torch.Tensor], t: int) -> TensorDict:
    n = next(iter(obs.values())).shape[1]
    return TensorDict({("obs", k): v[t] for k, v in obs.items()}, batch_size=[n])


def step_td(obs, rewards, dones, time_outs, t: int) -> TensorDict:
    td = obs_td(obs, t + 1)
    td["reward"] = rewards[t]
    td["done"] = dones[t]
    td["truncated"] = time_outs[t]
    td["terminated"] = dones[t] & ~time_outs[t]
    return td


class DoubleSum:
    """Fake 2-rank reduce_sum where both ranks hold the same data: returns 2 * x (exact).

    Counts its calls in `calls` (one per collective the learner would make).
    """

    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return 2 * x
