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


def small_ppo(
    cfg,
    dims: dict[str, int],
    action_dim: int,
    num_envs: int,
    num_steps: int,
    device="cpu",
    **learner_kw,
):
    """A PPO learner built under torch seed 0, its rollout storage allocated."""
    from unilab_algos import PPO

    torch.manual_seed(0)
    ppo = PPO({k: (d,) for k, d in dims.items()}, action_dim, cfg, device=device, **learner_kw)
    ppo.init_storage(num_envs, num_steps)
    return ppo


def scripted_collect(ppo, dims: dict[str, int], num_steps: int, seed: int) -> None:
    """One rollout of `scripted_rollout(seed)` through act / process_env_step (actions drawn
    after seeding torch, and CUDA, with 100 + seed), then compute_returns; no update."""
    n = ppo.storage.num_envs
    obs, rew, dones, touts = scripted_rollout(n, num_steps, dims, seed)
    obs = {k: v.to(ppo.device) for k, v in obs.items()}
    rew, dones, touts = (x.to(ppo.device) for x in (rew, dones, touts))
    torch.manual_seed(100 + seed)
    if ppo.device.type == "cuda":
        torch.cuda.manual_seed(100 + seed)
    with torch.no_grad():
        for t in range(num_steps):
            actions = ppo.act(obs_td(obs, t))
            assert actions.shape == (n, ppo.action_dim)
            ppo.process_env_step(step_td(obs, rew, dones, touts, t))
        ppo.compute_returns(obs_td(obs, num_steps))
