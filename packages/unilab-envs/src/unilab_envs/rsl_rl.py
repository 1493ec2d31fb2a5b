"""Adapter from a UniLab `VecEnv` to RSL-RL 5.4.2's `rsl_rl.env.VecEnv` interface.

    from unilab_envs.rsl_rl import RslRlVecEnv
    env = RslRlVecEnv(unilab_envs.make("cartpole-balance", num_envs=64))
    runner = OnPolicyRunner(env, train_cfg, log_dir=None, device="cpu")

`get_observations()` returns the observation groups TensorDict; `step(actions)` returns
`(obs, rewards, dones, extras)` with `extras["time_outs"]` (the truncation flags) and
`extras["log"]` (means of finished episodes' statistics, "/episode/<name>"). rsl_rl must be
installed by the user; this module imports it only when the adapter is constructed.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict

from unilab_envs._core.env import VecEnv

__all__ = ["RslRlVecEnv"]


def _base_class() -> type:
    try:
        from rsl_rl.env import VecEnv as RslVecEnv
    except ImportError as e:  # pragma: no cover - depends on the user's install
        raise ImportError("RslRlVecEnv needs rsl_rl: pip install rsl-rl-lib==5.4.2") from e
    return RslVecEnv


class RslRlVecEnv:
    """Wraps a `unilab_envs.VecEnv` as an rsl_rl `VecEnv` (registered as a virtual subclass)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> RslRlVecEnv:
        _base_class().register(cls)
        return super().__new__(cls)

    def __init__(self, env: VecEnv, *, clip_actions: float | None = None) -> None:
        self.env = env
        self.num_envs = env.num_envs
        self.num_actions = env.action_dim
        self.max_episode_length = env.max_episode_steps
        self.device = env.device
        self.cfg = {"task": env.task.spec.name, "step_dt": env.step_dt}
        self.clip_actions = clip_actions
        self._obs = env.reset()["obs"]

    @property
    def episode_length_buf(self) -> torch.Tensor:
        """int64 [N] copy of the current episode lengths."""
        return self.env.episode_length.long()

    @episode_length_buf.setter
    def episode_length_buf(self, value: torch.Tensor) -> None:
        # rsl_rl's `learn(init_at_random_ep_len=True)` sets random lengths: written into the
        # env's own counters (on the current stream, after the env's last work)
        self.env.episode_length.copy_(value.to(self.env.episode_length))

    def get_observations(self) -> TensorDict:
        return self._obs

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        if self.clip_actions is not None:
            actions = actions.clamp(-self.clip_actions, self.clip_actions)
        td = self.env.step(actions)
        self._obs = td["obs"]
        done = td["done"]
        extras: dict[str, Any] = {"time_outs": td["truncated"], "log": {}}
        if bool(done.any()):
            for key, value in td["episode"].items():
                extras["log"][f"/episode/{key}"] = value[done].mean()
        return self._obs, td["reward"], done.long(), extras
