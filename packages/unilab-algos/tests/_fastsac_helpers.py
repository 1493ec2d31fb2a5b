"""Shared builders of the FastSAC tests (module name starts with '_': not collected)."""

from __future__ import annotations

import torch
from tensordict import TensorDict

OBS = {"policy": (3,), "critic": (4,)}
ACT = 2


def small_config(**overrides):
    from unilab_algos.fastsac import FastSACConfig

    base = dict(
        batch_size=32,
        num_updates=4,
        policy_frequency=2,
        actor_hidden=(16, 16),
        critic_hidden=(16, 16),
        num_atoms=11,
        v_min=-5.0,
        v_max=5.0,
        learning_starts=1,
        transitions_per_env=16,
        capture=False,
    )
    base.update(overrides)
    return FastSACConfig(**base)


def random_batch(u: int, b: int, gen: torch.Generator, device="cpu") -> TensorDict:
    """A raw update batch [U, B] for `FastSAC.update_from_batch`."""

    def r(*shape):
        return torch.randn(*shape, generator=gen).to(device)

    return TensorDict(
        {
            "obs": {"policy": r(u, b, 3), "critic": r(u, b, 4)},
            "next_obs": {"policy": r(u, b, 3), "critic": r(u, b, 4)},
            "actions": torch.tanh(r(u, b, ACT)),
            "reward": r(u, b),
            "discount": 0.97 * (torch.rand(u, b, generator=gen) > 0.1).float().to(device),
            "noise": {"next": r(u, b, ACT), "current": r(u, b, ACT)},
        },
        batch_size=[u, b],
        device=device,
    )


def env_step(n: int, gen: torch.Generator, done_every: int = 0, t: int = 0) -> TensorDict:
    """A fake env step TensorDict [n] (random obs, rewards; optional periodic truncation)."""

    def r(*shape):
        return torch.randn(*shape, generator=gen)

    trunc = torch.zeros(n, dtype=torch.bool)
    if done_every and (t + 1) % done_every == 0:
        trunc[:] = True
    return TensorDict(
        {
            "obs": {"policy": r(n, 3), "critic": r(n, 4)},
            "final_obs": {"policy": r(n, 3), "critic": r(n, 4)},
            "reward": r(n),
            "terminated": torch.zeros(n, dtype=torch.bool),
            "truncated": trunc,
            "done": trunc.clone(),
        },
        batch_size=[n],
    )


def flat_state(learner) -> dict[str, torch.Tensor]:
    """Every parameter and buffer of the replicated modules plus optimizer states, by name."""
    out: dict[str, torch.Tensor] = {}
    for i, m in enumerate(learner.replicated_modules()):
        for k, v in m.state_dict().items():
            out[f"m{i}.{k}"] = v.detach().cpu().clone()
    for name in ("actor_optimizer", "critic_optimizer", "alpha_optimizer"):
        for pid, st in getattr(learner.state, name).state_dict()["state"].items():
            for k, v in st.items():
                out[f"{name}.{pid}.{k}"] = torch.as_tensor(v).detach().cpu().clone()
    return out
